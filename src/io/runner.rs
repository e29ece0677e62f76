//! Runs a loaded scene: steps the world, records metrics and probes every frame, optionally
//! writes OBJ frames and `metrics.json`. Shared by the CLI, examples and tests, so all of them
//! run scenes the same way.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use super::SceneError;
use super::frame::{contact_points, frame_meshes};
use super::metrics::{FrameMetrics, RunSummary};
use super::obj::frame_obj;
use super::probe::evaluate;
use super::scene_build::LoadedScene;
use crate::runtime::Backend;

/// What to do while running.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Override the scene's frame count.
    pub frames: Option<u32>,
    /// Output directory for `metrics.json` and OBJ frames.
    pub out_dir: Option<PathBuf>,
    /// Write `frames/frame_NNNNN.obj` (every `output.obj_every` frames, and frame 0), with the
    /// frame's contact points; `pliant render` draws these.
    pub export_obj: bool,
    /// Write `run.glb`: the same frames as an animated GLB (feature `gltf`).
    pub export_gltf: bool,
    /// Called after every frame (progress bars).
    pub on_frame: Option<&'a mut dyn FnMut(&FrameMetrics)>,
    /// Run the exact intersection check (`World::find_intersections`) after every frame and
    /// record the count in the metrics.
    pub check_intersections: bool,
}

/// A finished run.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// Per-frame metrics.
    pub frames: Vec<FrameMetrics>,
    /// Summary.
    pub summary: RunSummary,
}

fn io_err(path: &std::path::Path, e: std::io::Error) -> SceneError {
    SceneError::Output { path: path.to_owned(), message: e.to_string() }
}

/// Runs the scene.
pub fn run_scene(loaded: &mut LoadedScene, mut opts: RunOptions<'_>) -> Result<RunResult, SceneError> {
    let frames = opts.frames.unwrap_or(loaded.scene.frames);
    let every = loaded.scene.output.obj_every.max(1) as u64;
    let frame_dir = opts.out_dir.as_ref().map(|d| d.join("frames"));
    if let Some(d) = &opts.out_dir {
        std::fs::create_dir_all(d).map_err(|e| io_err(d, e))?;
        // The scene as run (overrides applied): `pliant render` takes the obstacles from it.
        let path = d.join("scene.json");
        let json = serde_json::to_string_pretty(&loaded.scene)
            .map_err(|e| SceneError::Output { path: path.clone(), message: e.to_string() })?;
        std::fs::write(&path, json).map_err(|e| io_err(&path, e))?;
    }
    #[cfg(feature = "gltf")]
    let mut glb = opts.export_gltf.then(super::gltf::AnimatedGlb::new);
    #[cfg(not(feature = "gltf"))]
    if opts.export_gltf {
        return Err(SceneError::invalid("--export", "gltf", "this build of pliant has no `gltf` feature"));
    }
    #[cfg_attr(not(feature = "gltf"), allow(unused_mut))]
    let mut export = |loaded: &LoadedScene, frame: u64| -> Result<(), SceneError> {
        let meshes = frame_meshes(&loaded.world, &loaded.export_bodies());
        if let (true, Some(dir)) = (opts.export_obj, &frame_dir) {
            std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
            let path = dir.join(format!("frame_{frame:05}.obj"));
            let text = frame_obj(&meshes, &contact_points(&loaded.world));
            std::fs::write(&path, text).map_err(|e| io_err(&path, e))?;
        }
        #[cfg(feature = "gltf")]
        if let Some(glb) = glb.as_mut() {
            let gltf_err = |e: super::gltf::GltfError| SceneError::invalid("--export", "gltf", e.to_string());
            if glb.frame_count() == 0 {
                for m in &meshes {
                    glb.add_mesh(&m.name, m.triangles.clone()).map_err(gltf_err)?;
                }
            }
            let (positions, normals) = meshes.into_iter().map(|m| (m.positions, m.normals)).unzip();
            glb.push_frame_with_normals(loaded.world.time(), positions, normals).map_err(gltf_err)?;
        }
        Ok(())
    };
    export(loaded, 0)?;
    let mut records = Vec::with_capacity(frames as usize);
    let mut threads = None;
    for _ in 0..frames {
        let start = std::time::Instant::now();
        // On the GPU a call made while the GPU is three frames behind takes no frame.
        let mut r = loop {
            let r = loaded.world.step();
            if !r.gpu_busy {
                break r;
            }
            std::thread::yield_now();
        };
        // Metrics and probes need this frame's state: wait for the GPU (the runner is a tool,
        // not a game loop).
        loaded.world.complete_report(&mut r);
        // On the GPU, `step()` returns before the frame runs: the frame's time is until its
        // state came back.
        let step_ms = match r.backend {
            Backend::Gpu => start.elapsed().as_secs_f64() * 1e3,
            Backend::Cpu | Backend::Auto => r.wall_ms,
        };
        threads = Some(r.threads);
        let probes: BTreeMap<String, Vec<f64>> =
            loaded.probes.iter().map(|p| (p.name.clone(), evaluate(loaded, p))).collect();
        let m = FrameMetrics {
            frame: r.frame,
            time: r.time,
            step_ms,
            game_thread_ms: r.game_thread_ms,
            backend: r.backend,
            iterations: r.iterations,
            substeps: r.substeps,
            residual: r.residual,
            energy: r.energy,
            energy_total: r.energy.total(),
            max_speed: r.max_speed,
            min_obstacle_distance: r.min_obstacle_distance,
            ground_penetration_max: r.min_obstacle_distance.map_or(0.0, |d| (-d).max(0.0)),
            contact_vertices: r.contact_vertices,
            contact_pairs: r.contact_pairs,
            min_distance: r.min_pair_distance,
            pin_lag: r.pin_lag,
            intersections: opts.check_intersections.then(|| loaded.world.find_intersections().len() as u32),
            nan: r.nan_detected,
            rolled_back: r
                .rolled_back
                .iter()
                .filter_map(|h| loaded.world.bodies.get(*h).map(|b| b.name().to_owned()))
                .collect(),
            probes,
            fallbacks: r.fallbacks,
            islands: r.islands.clone(),
        };
        if r.frame.is_multiple_of(every) {
            export(loaded, r.frame)?;
        }
        if let Some(cb) = opts.on_frame.as_mut() {
            cb(&m);
        }
        records.push(m);
    }
    let st = loaded.world.state();
    let summary = RunSummary::from_frames(
        &loaded.scene.name,
        st.vertex_count(),
        st.element_count(),
        threads.unwrap_or(1),
        &records,
    );
    #[cfg(feature = "gltf")]
    if let (Some(glb), Some(d)) = (glb, &opts.out_dir) {
        let path = d.join("run.glb");
        glb.write(&path).map_err(|e| SceneError::Output { path: path.clone(), message: e.to_string() })?;
    }
    let result = RunResult { frames: records, summary };
    if let Some(d) = &opts.out_dir {
        let path = d.join("metrics.json");
        let json = serde_json::to_string_pretty(&result)
            .map_err(|e| SceneError::Output { path: path.clone(), message: e.to_string() })?;
        std::fs::write(&path, json).map_err(|e| io_err(&path, e))?;
    }
    Ok(result)
}
