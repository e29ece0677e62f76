//! `pliant`: the headless scene runner.
//!
//! ```text
//! pliant                                   run the main demo (drop_cube) and print its summary
//! pliant run <scene.json|bundled name> [--out DIR] [--frames N] [--threads K]
//!             [--export obj,gltf] [--backend cpu|gpu|auto] [--adapter NAME]
//!             [--fallback auto|always|never] [--budget-ms MS]
//! pliant render <out dir> [--frame N | --every K] [--contacts] [--width W] [--height H]
//!                                          PNG pictures of a run's exported OBJ frames
//! pliant scenes                            list the bundled scenes
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use pliant::Backend;
use pliant::debug::{RenderRunOptions, RunFrames, render_run};
use pliant::io::bundled::{BUNDLED_SCENES, bundled_scene, bundled_scene_dir};
use pliant::io::{LoadedScene, RunOptions, RunResult, SceneError, expand_sweep, run_scene};

#[derive(Parser)]
#[command(
    name = "pliant",
    version,
    about = "Run Pliant soft-body scenes headless: metrics, probes, OBJ and glTF frames, pictures."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Export {
    /// One Wavefront OBJ per exported frame: `<out>/frames/frame_NNNNN.obj` (`pliant render`
    /// draws these).
    Obj,
    /// The exported frames as one animated GLB: `<out>/run.glb`.
    Gltf,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scene file, or a bundled scene by name.
    Run {
        /// Path to a scene JSON, or a bundled scene name (`pliant scenes`).
        scene: String,
        /// Output directory for metrics.json and frames (default: out/<scene name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Number of frames (overrides the scene).
        #[arg(long)]
        frames: Option<u32>,
        /// Worker threads (overrides the scene; 0 = all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Export frames in these formats (every `output.obj_every` frames), e.g. `obj,gltf`.
        #[arg(long, value_enum, value_delimiter = ',')]
        export: Vec<Export>,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
        /// Where to step: cpu (default), gpu (fails without an adapter) or auto (GPU when there
        /// is one and the scene allows it, else CPU with the reason printed).
        #[arg(long, default_value = "cpu")]
        backend: Backend,
        /// GPU adapter to use: the first whose name contains this (e.g. llvmpipe, H100).
        #[arg(long)]
        adapter: Option<String>,
        /// When islands are redone by the augmented-Lagrangian fallback: auto (when the safety
        /// check rejects the fast step), always, or never (overrides the scene).
        #[arg(long)]
        fallback: Option<pliant::FallbackPolicy>,
        /// Frame budget in milliseconds: the planner picks the sweep count (overrides the
        /// scene).
        #[arg(long)]
        budget_ms: Option<f64>,
    },
    /// Draw PNG pictures of a run's exported OBJ frames into `<dir>/render/` (headless wgpu on
    /// any adapter, lavapipe included).
    Render {
        /// The run's output directory (`pliant run --out`), holding `frames/` and `scene.json`.
        dir: PathBuf,
        /// The frame to draw (default: the last exported).
        #[arg(long, conflicts_with = "every")]
        frame: Option<u64>,
        /// Draw every K-th exported frame (and the last), with one camera.
        #[arg(long)]
        every: Option<u64>,
        /// Mark contact points.
        #[arg(long)]
        contacts: bool,
        /// Picture width in pixels.
        #[arg(long, default_value_t = 1280)]
        width: u32,
        /// Picture height in pixels.
        #[arg(long, default_value_t = 720)]
        height: u32,
        /// GPU adapter to use: the first whose name contains this.
        #[arg(long)]
        adapter: Option<String>,
    },
    /// List the bundled scenes.
    Scenes,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => {
            println!("Pliant demo: a soft cube dropped on the ground (bundled scene `drop_cube`).");
            println!("Run `pliant --help` for the scene runner; outputs go to out/drop_cube.\n");
            run("drop_cube", &Where::default(), None, &[Export::Obj, Export::Gltf], false).map(|()| demo_picture())
        }
        Some(Command::Render { dir, frame, every, contacts, width, height, adapter }) => {
            let frames = match (frame, every) {
                (Some(n), _) => RunFrames::One(n),
                (None, Some(k)) => RunFrames::Every(k),
                (None, None) => RunFrames::Last,
            };
            let options = RenderRunOptions { frames, width, height, contacts, adapter };
            match render_run(&dir, &options) {
                Ok(files) => {
                    for f in files {
                        println!("{}", f.display());
                    }
                    Ok(())
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        Some(Command::Run { scene, out, frames, threads, export, quiet, backend, adapter, fallback, budget_ms }) => {
            run(&scene, &Where { out, threads, backend, adapter, fallback, budget_ms }, frames, &export, quiet)
        }
        Some(Command::Scenes) => {
            list_scenes();
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn list_scenes() {
    println!("{:<20} description", "scene");
    for (name, json) in BUNDLED_SCENES {
        let desc = pliant::io::parse_scene(json).map(|s| s.description).unwrap_or_else(|e| format!("(invalid: {e})"));
        let short: String = desc.split(". ").next().unwrap_or("").chars().take(96).collect();
        println!("{name:<20} {short}");
    }
}

/// Where a run writes and steps.
#[derive(Default)]
struct Where {
    out: Option<PathBuf>,
    threads: Option<usize>,
    backend: Backend,
    adapter: Option<String>,
    fallback: Option<pliant::FallbackPolicy>,
    budget_ms: Option<f64>,
}

/// The demo's picture of its last frame, where a GPU adapter (or lavapipe) exists.
fn demo_picture() {
    let dir = Path::new("out").join("drop_cube");
    match render_run(&dir, &RenderRunOptions::default()) {
        Ok(files) => {
            for f in files {
                println!("picture      {}", f.display());
            }
        }
        Err(e) => println!("picture      none ({e})"),
    }
    println!("animation    {}", dir.join("run.glb").display());
}

fn run(scene: &str, at: &Where, frames: Option<u32>, export: &[Export], quiet: bool) -> Result<(), SceneError> {
    let (out, threads) = (at.out.clone(), at.threads);
    let (json, base) = match bundled_scene(scene) {
        Some(j) if !Path::new(scene).exists() => {
            let dir = bundled_scene_dir().map_err(|e| SceneError::Output {
                path: std::env::temp_dir(),
                message: format!("cannot write the bundled assets: {e}"),
            })?;
            (j.to_owned(), dir)
        }
        _ => {
            let p = Path::new(scene);
            let j = std::fs::read_to_string(p)
                .map_err(|e| SceneError::Io { path: p.to_owned(), message: e.to_string() })?;
            (j, p.parent().map(Path::to_owned).unwrap_or_default())
        }
    };
    let variants = expand_sweep(&json)?;
    let name = variants[0].scene.name.clone();
    let out = out.unwrap_or_else(|| PathBuf::from("out").join(&name));
    let mut rows = Vec::with_capacity(variants.len());
    for (k, v) in variants.iter().enumerate() {
        let mut scene = v.scene.clone();
        if let Some(t) = threads {
            scene.solver.threads = t;
        }
        if let Some(f) = at.fallback {
            scene.solver.fallback = f;
        }
        if at.budget_ms.is_some() {
            scene.solver.budget_ms = at.budget_ms;
        }
        let mut loaded = scene.build(&base)?;
        if at.backend != Backend::Cpu {
            let config = pliant::StepConfig {
                backend: at.backend,
                gpu_adapter: at.adapter.clone(),
                ..loaded.world.config().clone()
            };
            loaded.world.set_config(config).map_err(|e| SceneError::InvalidValue {
                field: "--backend".into(),
                value: at.backend.to_string(),
                reason: e.to_string(),
            })?;
            if let Some(ctx) = loaded.world.gpu_context() {
                println!("GPU adapter: {} ({:?})", ctx.adapter_info.name, ctx.adapter_info.backend);
            }
            match loaded.world.why_not_gpu() {
                Some(reason) => println!("stepping on the CPU: {reason}"),
                None => println!("stepping on the GPU"),
            }
        }
        let dir = if variants.len() > 1 { out.join(format!("variant_{k:02}")) } else { out.clone() };
        if variants.len() > 1 {
            println!("[{}/{}] {}", k + 1, variants.len(), v.label);
        }
        let result = run_one(&mut loaded, &dir, frames, export, quiet)?;
        if variants.len() == 1 {
            print_summary(&loaded, &result, &dir);
        }
        rows.push((v.label.clone(), result));
    }
    if rows.len() > 1 {
        print_sweep(&rows, &out);
    }
    Ok(())
}

fn run_one(
    loaded: &mut LoadedScene,
    dir: &Path,
    frames: Option<u32>,
    export: &[Export],
    quiet: bool,
) -> Result<RunResult, SceneError> {
    let total = frames.unwrap_or(loaded.scene.frames) as u64;
    let bar = if quiet { ProgressBar::hidden() } else { ProgressBar::new(total) };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {bar:40} {pos}/{len} frames  {msg}  ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut on_frame = |m: &pliant::io::FrameMetrics| {
        bar.set_message(format!("{:.2} ms/step", m.step_ms));
        bar.inc(1);
    };
    let result = run_scene(
        loaded,
        RunOptions {
            frames,
            out_dir: Some(dir.to_owned()),
            export_obj: export.contains(&Export::Obj),
            export_gltf: export.contains(&Export::Gltf),
            on_frame: Some(&mut on_frame),
            check_intersections: true,
        },
    )?;
    bar.finish_and_clear();
    Ok(result)
}

fn print_summary(loaded: &LoadedScene, r: &RunResult, dir: &Path) {
    let s = &r.summary;
    println!("scene        {}", s.scene);
    for b in &loaded.bodies {
        let body = &loaded.world.bodies[b.handle];
        println!(
            "  body       {:<12} {:>7} vertices {:>8} elements",
            b.name,
            body.shared().vertex_count(),
            body.shared().element_count()
        );
    }
    let on = match s.backend {
        Backend::Gpu => "the GPU".to_owned(),
        _ => format!("{} thread(s)", s.threads),
    };
    println!(
        "frames       {} x {:.4} s, {} substep(s) x {} sweeps, {on}",
        s.frames, loaded.scene.dt, s.substeps, s.iterations
    );
    println!(
        "step time    mean {:.3} ms   p50 {:.3}   p95 {:.3}   p99 {:.3}",
        s.ms_per_step, s.step_ms_p50, s.step_ms_p95, s.step_ms_p99
    );
    println!(
        "throughput   {:.0} ns per vertex-iteration ({} vertices, {} elements)",
        s.ns_per_vertex_iteration, s.vertices, s.elements
    );
    if s.backend == Backend::Gpu {
        // Step time above waits for each frame; a game loop does not.
        println!("game thread  mean {:.3} ms per step() call, max {:.3}", s.game_thread_ms, s.game_thread_ms_max);
    }
    println!("max speed    {:.3} m/s", s.max_speed);
    match s.min_obstacle_distance {
        Some(d) => println!("obstacles    closest vertex {:+.5} m (negative = penetration)", d),
        None => println!("obstacles    none"),
    }
    println!(
        "rest         final kinetic energy {:.3e} J, largest energy gain in one frame {:.3e} J",
        s.final_kinetic_energy, s.energy_gain_max
    );
    println!("NaN          {} frame(s) rolled back", s.nan_frames);
    if let Some(k) = s.intersecting_frames {
        let closest = s.min_distance.map_or("none within the search radius".into(), |d| format!("{d:.6} m"));
        println!("surfaces     {k} intersecting frame(s); closest surface pair {closest}");
    }
    for (name, v) in &s.final_probes {
        let vals: Vec<String> = v.iter().map(|x| format!("{x:.6}")).collect();
        println!("probe        {name} = [{}]", vals.join(", "));
    }
    println!("outputs      {}", dir.join("metrics.json").display());
}

fn print_sweep(rows: &[(String, RunResult)], out: &Path) {
    println!("\n{:<72} {:>9} {:>9} {:>10} {:>5}", "variant", "ms/step", "max m/s", "min dist", "NaN");
    for (label, r) in rows {
        let s = &r.summary;
        println!(
            "{label:<72} {:>9.3} {:>9.3} {:>10.5} {:>5}",
            s.ms_per_step,
            s.max_speed,
            s.min_obstacle_distance.unwrap_or(f32::NAN),
            s.nan_frames
        );
    }
    println!("outputs under {}", out.display());
}
