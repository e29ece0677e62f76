//! Benchmark: the frame-budgeted runtime with its fallback (issue 9).
//!
//! ```text
//! cargo run --release --example bench_budget [-- --json] [--frames N] [--scene NAME] [--budgets 4,16]
//! ```
//!
//! Each scene runs with a 4 ms and a 16 ms budget (`StepConfig::budget_ms`): the planner picks
//! each step's sweep count from the measured cost per sweep, the safety check sends unsafe
//! islands to the augmented-Lagrangian fallback, which stops at the budget's end with its
//! current (intersection-free) iterate. Per scene and budget: median and 99th-percentile step
//! time, the share of steps over budget, the share of frames in which an island fell back, the
//! planned sweep count, and intersections found by the exact check after every frame (must be
//! 0).
//!
//! Scenes: two calm ones (`drop_cube`, `cloth_drape_sphere`) and the four adversarial
//! `fallback_*` scenes of `tests/fallback.rs`. Frames are capped by `--frames` (default 120).

use pliant::io::bundled::bundled_scene;
use pliant::io::parse_scene;

const SCENES: &[&str] = &[
    "drop_cube",
    "cloth_drape_sphere",
    "fallback_projectile_cloth",
    "fallback_stiff_on_soft",
    "fallback_weight_on_sheet",
    "fallback_cloth_gap",
];

struct Row {
    scene: String,
    budget_ms: f64,
    threads: usize,
    vertices: usize,
    elements: usize,
    frames: usize,
    iterations: f64,
    ms_per_step: f64,
    p50_ms: f64,
    p99_ms: f64,
    over_budget_share: f64,
    fallback_share: f64,
    truncated_share: f64,
    intersections: usize,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn run(name: &str, budget_ms: f64, frames_cap: u32) -> Row {
    let json = bundled_scene(name).unwrap_or_else(|| panic!("no bundled scene {name}"));
    let mut scene = parse_scene(json).expect("scene parses");
    scene.solver.budget_ms = Some(budget_ms);
    let frames = scene.frames.min(frames_cap) as usize;
    let mut loaded = scene.build(std::path::Path::new("examples/scenes")).expect("scene builds");
    let world = &mut loaded.world;
    world.sync();
    let (vertices, elements) = (world.vertex_count(), world.element_count());
    let (mut ms, mut sweeps, mut fell, mut truncated, mut intersections, mut threads) = (Vec::new(), 0u64, 0, 0, 0, 1);
    for _ in 0..frames {
        let r = world.step();
        ms.push(r.wall_ms);
        sweeps += r.iterations as u64 * r.substeps as u64;
        threads = r.threads;
        fell += usize::from(r.fallbacks > 0);
        truncated += usize::from(r.islands.iter().any(|i| i.path == pliant::StepPath::FallbackTruncated));
        intersections += world.find_intersections().len();
    }
    let mean = ms.iter().sum::<f64>() / frames as f64;
    let over = ms.iter().filter(|&&m| m > budget_ms).count();
    ms.sort_by(f64::total_cmp);
    Row {
        scene: name.to_owned(),
        budget_ms,
        threads,
        vertices,
        elements,
        frames,
        iterations: sweeps as f64 / frames as f64,
        ms_per_step: mean,
        p50_ms: percentile(&ms, 0.5),
        p99_ms: percentile(&ms, 0.99),
        over_budget_share: over as f64 / frames as f64,
        fallback_share: fell as f64 / frames as f64,
        truncated_share: truncated as f64 / frames as f64,
        intersections,
    }
}

fn main() {
    let (mut json, mut frames, mut only, mut budgets) = (false, 120u32, None::<String>, vec![4.0, 16.0]);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = true,
            "--frames" => frames = it.next().and_then(|v| v.parse().ok()).unwrap_or(frames),
            "--scene" => only = it.next(),
            "--budgets" => {
                budgets = it.next().map(|v| v.split(',').filter_map(|b| b.parse().ok()).collect()).unwrap_or(budgets)
            }
            other => {
                eprintln!("unknown argument {other}; use --json, --frames N, --scene NAME, --budgets A,B");
                std::process::exit(2);
            }
        }
    }
    if !json {
        println!(
            "{:<26} {:>6} {:>8} {:>8} {:>6} {:>8} {:>8} {:>8} {:>7} {:>9} {:>9} {:>13}",
            "scene",
            "budget",
            "vertices",
            "elements",
            "sweeps",
            "ms mean",
            "p50 ms",
            "p99 ms",
            "over",
            "fell back",
            "truncated",
            "intersections"
        );
    }
    for name in SCENES.iter().filter(|n| only.as_deref().is_none_or(|o| o == **n)) {
        for &b in &budgets {
            let r = run(name, b, frames);
            let ns = r.ms_per_step * 1e6 / (r.vertices as f64 * r.iterations.max(1.0));
            if json {
                println!(
                    "{{\"bench\":\"budget\",\"scene\":\"{}\",\"backend\":\"cpu\",\"threads\":{},\"vertices\":{},\"elements\":{},\"frames\":{},\"iterations\":{:.1},\"ms_per_step\":{:.3},\"ns_per_vertex_iteration\":{:.2},\"budget_ms\":{},\"p50_ms\":{:.3},\"p99_ms\":{:.3},\"over_budget_share\":{:.3},\"fallback_share\":{:.3},\"truncated_share\":{:.3},\"intersections\":{}}}",
                    r.scene,
                    r.threads,
                    r.vertices,
                    r.elements,
                    r.frames,
                    r.iterations,
                    r.ms_per_step,
                    ns,
                    r.budget_ms,
                    r.p50_ms,
                    r.p99_ms,
                    r.over_budget_share,
                    r.fallback_share,
                    r.truncated_share,
                    r.intersections
                );
            } else {
                println!(
                    "{:<26} {:>6} {:>8} {:>8} {:>6.1} {:>8.2} {:>8.2} {:>8.2} {:>6.0}% {:>8.0}% {:>8.0}% {:>13}",
                    r.scene,
                    r.budget_ms,
                    r.vertices,
                    r.elements,
                    r.iterations,
                    r.ms_per_step,
                    r.p50_ms,
                    r.p99_ms,
                    100.0 * r.over_budget_share,
                    100.0 * r.fallback_share,
                    100.0 * r.truncated_share,
                    r.intersections
                );
            }
        }
    }
}
