//! Benchmark: what the GPU's own fallback (`StepConfig::gpu_fallback`) costs on the GPU
//! backend, idle and running.
//!
//! ```text
//! cargo run --release --example bench_gpu_fallback [-- --json] [--adapter NAME] [--frames N] [--scene NAME]
//! ```
//!
//! Each scene is stepped with `gpu_fallback` off and on (self contact off, so the device's
//! fallback applies; a ground, dt = 1/60, one substep):
//!
//! * `cube_6` and `cube_12`: a 0.2 m jelly cube of 6³ or 12³ cells (×6 tets) dropped from 0.3 m
//!   onto the ground, 20 sweeps. The check never fails: the fallback is recorded into every
//!   substep and never runs, so the difference is its idle cost;
//! * `stiff_beam`: the clamped 1 m beam of 1e9 Pa, ν = 0.49, at 10 sweeps (`tests/fallback.rs`):
//!   its fast steps make energy, so with the fallback on the device redoes every substep (the
//!   failure, then its hold); with it off nothing catches it (`FallbackPolicy::Never` in both
//!   rows, but the device's own fallback, which needs the check, is on in the second);
//! * `cube_stack`: two 0.2 m jelly cubes of 6³ cells, one dropped on the other on the ground,
//!   self contact on: surface contact, so the fallback records its surface phases too; the check
//!   never fails (idle cost with surface pairs);
//! * `projectile_cloth`: the bundled scene `fallback_projectile_cloth` (a steel cube at 60 m/s at
//!   a pinned cloth, body–body contact). Off, the host reads the rejection, rewinds the device
//!   and steps the frames again on the CPU, where the world stays while the hold lasts
//!   (`cpu_frames`); on, the device redoes the substeps itself.
//!
//! Per row, over the frames after the third: `ms_per_step`, the median of a frame's wall time
//! (recording it, then waiting for the GPU to finish it: the wait is part of every frame, so
//! this is the frame's latency, not the pipelined rate); `record_ms`, the median time the
//! calling thread spends recording; `fallback_substeps`, substeps the device redid, and
//! `truncated_share`, the share of the fallback's reported islands whose step was cut short
//! (its outer cap, or an earlier iterate of lower merit); `max_ms`, the slowest frame;
//! `cpu_frames`, frames the world stepped on the CPU (its fallback and hold) instead;
//! accuracy: the lowest height at the end and the fastest vertex.

use std::time::Instant;

use pliant::prelude::*;
use pliant::{Backend, FallbackPolicy, StepPath};

struct Row {
    scene: &'static str,
    gpu_fallback: bool,
    vertices: usize,
    elements: usize,
    iterations: u32,
    ms: f64,
    max_ms: f64,
    cpu_frames: u32,
    record_ms: f64,
    fallback_substeps: u32,
    /// Of the fallback's islands reported, the share whose step was truncated.
    truncated_share: f64,
    lowest: f32,
    fastest: f32,
    /// Median GPU time of a frame from the device's timestamps (NaN without them).
    gpu_ms: f64,
    /// Dispatches recorded per GPU frame (mean).
    dispatches: f64,
}

fn world(scene: &str, gpu_fallback: bool, adapter: Option<String>) -> Result<(World, u32), pliant::ConfigError> {
    if scene == "projectile_cloth" {
        let json = pliant::io::bundled::bundled_scene("fallback_projectile_cloth").expect("bundled scene");
        let mut loaded = pliant::io::parse_scene(json)
            .expect("scene parses")
            .build(std::path::Path::new("examples/scenes"))
            .expect("scene builds");
        let config =
            StepConfig { backend: Backend::Gpu, gpu_adapter: adapter, gpu_fallback, ..loaded.world.config().clone() };
        let iterations = config.iterations;
        loaded.world.set_config(config)?;
        return Ok((loaded.world, iterations));
    }
    let beam = scene == "stiff_beam";
    let iterations = if beam { 10 } else { 20 };
    // The beam runs without a fallback unless the device's own one is on.
    let fallback = if beam && !gpu_fallback { FallbackPolicy::Never } else { FallbackPolicy::Auto };
    let config = StepConfig {
        backend: Backend::Gpu,
        gpu_adapter: adapter,
        fallback,
        gpu_fallback,
        iterations,
        ..StepConfig::default()
    };
    let mut w = World::new(config)?;
    w.obstacles.push(Obstacle::ground(0.0, 0.5));
    if scene == "cube_stack" {
        for y in [0.11, 0.35] {
            let mesh = TetMesh::box_mesh(Vec3::splat(0.2), [6; 3], TetSplit::Six).expect("cube");
            w.bodies
                .insert(SoftBodyBuilder::tetrahedral(mesh).translation(Vec3::new(0.0, y, 0.0)).build().expect("body"));
        }
        return Ok((w, iterations));
    }
    let body = if beam {
        let mesh = TetMesh::beam(1.0, 0.1, 0.1, [20, 2, 2], TetSplit::Six).expect("beam");
        let end = mesh.positions().iter().map(|p| p.x).fold(f32::INFINITY, f32::min);
        let clamped: Vec<u32> =
            (0..mesh.vertex_count() as u32).filter(|&i| mesh.positions()[i as usize].x <= end + 1e-6).collect();
        SoftBodyBuilder::tetrahedral(mesh)
            .material(StableNeoHookean::from_young_poisson(1e9, 0.49))
            .translation(Vec3::new(0.5, 0.5, 0.0))
            .pin(Pin::fixed(clamped))
    } else {
        let cells = if scene == "cube_6" { 6 } else { 12 };
        let mesh = TetMesh::box_mesh(Vec3::splat(0.2), [cells; 3], TetSplit::Six).expect("cube");
        SoftBodyBuilder::tetrahedral(mesh).translation(Vec3::new(0.0, 0.3, 0.0))
    };
    w.bodies.insert(body.self_collision(false).build().expect("body"));
    Ok((w, iterations))
}

fn run(scene: &'static str, gpu_fallback: bool, frames: u64, adapter: Option<String>) -> Option<Row> {
    let (mut w, iterations) = match world(scene, gpu_fallback, adapter) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("no GPU: {e}");
            return None;
        }
    };
    let (mut wall, mut record, mut fallback_substeps, mut cpu_frames) = (Vec::new(), Vec::new(), 0, 0u32);
    let (mut islands, mut truncated) = (0u32, 0u32);
    let (mut gpu, mut dispatches, mut gpu_frames) = (Vec::new(), 0u64, 0u64);
    while w.frame() < frames {
        let t = Instant::now();
        let r = w.step();
        let rec = t.elapsed().as_secs_f64() * 1e3;
        if r.gpu_busy {
            continue;
        }
        w.wait_for_gpu();
        if r.frame > 3 {
            wall.push(t.elapsed().as_secs_f64() * 1e3);
            record.push(rec);
            // The report carries the frame before (the one waited for last time).
            gpu.extend(r.gpu_ms);
            if r.backend == Backend::Gpu {
                dispatches += u64::from(r.gpu_dispatches);
                gpu_frames += 1;
            }
        }
        fallback_substeps += r.fallbacks;
        cpu_frames += u32::from(r.backend == Backend::Cpu);
        for i in r.islands.iter().filter(|i| i.path != StepPath::Fast) {
            islands += 1;
            truncated += u32::from(i.path == StepPath::FallbackTruncated);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    Some(Row {
        scene,
        gpu_fallback,
        vertices: w.vertex_count(),
        elements: w.element_count(),
        iterations,
        ms: median(&mut wall),
        max_ms: wall.iter().copied().fold(0.0, f64::max),
        cpu_frames,
        record_ms: median(&mut record),
        fallback_substeps,
        truncated_share: if islands > 0 { truncated as f64 / islands as f64 } else { 0.0 },
        lowest: w.positions().iter().map(|p| p.y).fold(f32::INFINITY, f32::min),
        fastest: w.velocities().iter().map(|v| v.truncate().length()).fold(0.0, f32::max),
        gpu_ms: median(&mut gpu),
        dispatches: dispatches as f64 / gpu_frames.max(1) as f64,
    })
}

fn main() {
    let (mut json, mut adapter, mut frames, mut only) = (false, None, 40u64, None);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = true,
            "--adapter" => adapter = it.next(),
            "--frames" => frames = it.next().and_then(|v| v.parse().ok()).unwrap_or(frames).max(8),
            "--scene" => only = it.next(),
            other => {
                eprintln!("unknown argument {other}; use --json, --adapter NAME, --frames N, --scene NAME");
                std::process::exit(2);
            }
        }
    }
    let device =
        World::new(StepConfig { backend: Backend::Gpu, gpu_adapter: adapter.clone(), ..StepConfig::default() })
            .ok()
            .and_then(|w| w.gpu_context().map(|c| c.adapter_info.name.clone()))
            .unwrap_or_else(|| "none".into());
    if !json {
        println!("GPU fallback on {device}, {frames} frames (median over frames 4..)");
        println!(
            "{:<16} {:>8} {:>6} {:>6} {:>10} {:>8} {:>6} {:>10} {:>10} {:>9} {:>10} {:>9} {:>9} {:>9}",
            "scene",
            "fallback",
            "verts",
            "tets",
            "ms/frame",
            "gpu ms",
            "disp",
            "max ms",
            "record ms",
            "redone",
            "cpu frames",
            "truncated",
            "lowest m",
            "fastest"
        );
    }
    let scenes = ["cube_6", "cube_12", "stiff_beam", "cube_stack", "projectile_cloth"];
    for scene in scenes.into_iter().filter(|s| only.as_deref().is_none_or(|o| o == *s)) {
        for gpu_fallback in [false, true] {
            let Some(r) = run(scene, gpu_fallback, frames, adapter.clone()) else { return };
            let ns = r.ms * 1e6 / (r.vertices as f64 * r.iterations as f64);
            if json {
                println!(
                    "{{\"bench\":\"gpu_fallback\",\"scene\":\"{}\",\"backend\":\"gpu\",\"device\":\"{device}\",\"threads\":1,\"vertices\":{},\"elements\":{},\"iterations\":{},\"ms_per_step\":{:.3},\"ns_per_vertex_iteration\":{:.2},\"gpu_ms\":{:.3},\"dispatches_per_frame\":{:.1},\"gpu_fallback\":{},\"max_ms\":{:.3},\"record_ms\":{:.3},\"fallback_substeps\":{},\"cpu_frames\":{},\"truncated_share\":{:.3},\"lowest_m\":{:.4},\"fastest_m_per_s\":{:.3}}}",
                    r.scene,
                    r.vertices,
                    r.elements,
                    r.iterations,
                    r.ms,
                    ns,
                    r.gpu_ms,
                    r.dispatches,
                    r.gpu_fallback,
                    r.max_ms,
                    r.record_ms,
                    r.fallback_substeps,
                    r.cpu_frames,
                    r.truncated_share,
                    r.lowest,
                    r.fastest
                );
            } else {
                println!(
                    "{:<16} {:>8} {:>6} {:>6} {:>10.2} {:>8.3} {:>6.0} {:>10.2} {:>10.2} {:>9} {:>10} {:>9.3} {:>9.4} {:>9.3}",
                    r.scene,
                    if r.gpu_fallback { "on" } else { "off" },
                    r.vertices,
                    r.elements,
                    r.ms,
                    r.gpu_ms,
                    r.dispatches,
                    r.max_ms,
                    r.record_ms,
                    r.fallback_substeps,
                    r.cpu_frames,
                    r.truncated_share,
                    r.lowest,
                    r.fastest
                );
            }
        }
    }
}
