//! Benchmark: the VBD step on the GPU backend (wgpu).
//!
//! ```text
//! cargo run --release --example bench_gpu [-- --json] [--adapter NAME] [--max-tets N] [--frames N]
//!                                          [--only SCENE]... [--profile]
//! ```
//!
//! Boxes of about 10^3, 10^4, 10^5 and 10^6 tets (5³, 12³, 26³ and 55³ cells × 6 tets) and of
//! 60³ cells (1.3·10^6 tets, 227k vertices), cells of 1/30 m, E = 5e5 Pa, ν = 0.4,
//! ρ = 1000 kg/m³, Rayleigh damping 0.002, dropped on the ground, dt = 1/60, 10 sweeps,
//! Chebyshev on; then the 6³ and 12³ boxes (343 and 2,197 vertices) at 20 sweeps. Per size:
//!
//! * `game_thread_ms`: time the calling thread spends in a `step()` that takes a frame
//!   (recording it and handing it to the queue thread; the step itself runs on the GPU
//!   meanwhile), mean and largest. The timed loop keeps calling `step()` without waiting;
//!   calls made while the GPU is three frames behind step nothing and return at once (their
//!   largest time is `busy_call_ms_max`);
//! * `gpu_ms` (median) and `gpu_ms_max`: the frame's time on the GPU's own clock (timestamps
//!   at its first and last dispatch; NaN where the adapter has no timestamp queries);
//!   `dispatches_per_frame` and `submissions_per_frame`: what the stepper recorded;
//! * `ms_per_step`: wall time of the timed frames, from the first `step()` until the GPU has
//!   finished the last (`wait_for_gpu`), per frame: the GPU's sustained rate;
//! * accuracy: for the two smaller sizes, the largest distance between GPU and CPU positions
//!   after the same frames (`cpu_max_diff_m`); for all, the closest vertex to the ground;
//! * `unsafe_steps`: steps the GPU's safety check rejected in the timed frames (each is redone
//!   by the fallback on the CPU), and `cpu_frames`: timed frames stepped on the CPU (the redone
//!   ones and the island's hold). Both 0 when the GPU's rate is all the row measures.
//!
//! And the 100×100 cloth of `bench_contact` (10,201 vertices) dropped over a sphere without
//! self contact, then the two surface-contact scenes of `bench_contact` on the GPU:
//!
//! * `stack_soft_cubes`: four 0.2 m cubes of 8³ cells stacked 5 mm apart fall onto the ground
//!   and each other (2,916 vertices, the scene's 30 sweeps), 60 frames; accuracy: the largest
//!   GPU − CPU position difference after them (same configuration on both), the contact pairs
//!   of the last frame and the closest pair;
//! * `cloth_100x100_self`: the cloth with self contact, dropped over a sphere so it folds onto
//!   itself (10 sweeps); accuracy: pairs, closest pair, and the exact intersection check of the
//!   final state (must be 0).
//!
//! Every row steps the default configuration (rigid correction and surface contact on); the
//! boxes and the first cloth are single bodies without self contact, so surface contact has
//! nothing to look for there.

use std::time::Instant;

use pliant::Backend;
use pliant::io::bundled::bundled_scene;
use pliant::io::parse_scene;
use pliant::prelude::*;

struct Args {
    json: bool,
    adapter: Option<String>,
    max_tets: usize,
    frames: Option<u32>,
    /// Only the rows whose scene name contains one of these.
    only: Vec<String>,
}

/// `--profile`: after each row, a few more frames profiled kernel by kernel.
static PROFILE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// `--json`, for the profile's rows.
static JSON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl Args {
    fn wants(&self, scene: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| scene.contains(o.as_str()))
    }
}

fn args() -> Args {
    let mut a = Args { json: false, adapter: None, max_tets: 2_000_000, frames: None, only: Vec::new() };
    let mut it = std::env::args().skip(1);
    while let Some(s) = it.next() {
        match s.as_str() {
            "--json" => a.json = true,
            "--adapter" => a.adapter = it.next(),
            "--max-tets" => a.max_tets = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.max_tets),
            "--frames" => a.frames = it.next().and_then(|v| v.parse().ok()),
            "--only" => a.only.extend(it.next()),
            "--profile" => PROFILE.store(true, std::sync::atomic::Ordering::Relaxed),
            other => {
                eprintln!(
                    "unknown argument {other}; use --json, --adapter NAME, --max-tets N, --frames N, --only SCENE, --profile"
                );
                std::process::exit(2);
            }
        }
    }
    a
}

fn config(backend: Backend, adapter: &Option<String>, iterations: u32) -> StepConfig {
    StepConfig { iterations, backend, gpu_adapter: adapter.clone(), ..StepConfig::default() }
}

fn drop_box(world: &mut World, cells: u32) {
    let mesh = TetMesh::box_mesh(Vec3::splat(0.2 * cells as f32 / 6.0), [cells; 3], TetSplit::Six).expect("box");
    // A solid box cannot fold onto itself: without self contact a lone body has no surface
    // pairs to look for (as the builder's documentation advises), so these rows time the
    // elastic step and the rigid correction.
    let body = SoftBodyBuilder::tetrahedral(mesh)
        .name("box")
        .self_collision(false)
        .material(StableNeoHookean::from_young_poisson(5e5, 0.4))
        .damping(0.002)
        .density(1000.0)
        .translation(Vec3::new(0.0, 0.05 + 0.1 * cells as f32 / 6.0, 0.0))
        .build()
        .expect("body");
    world.bodies.insert(body);
    world.obstacles.push(Obstacle::ground(0.0, 0.5));
}

struct Row {
    scene: String,
    adapter: String,
    vertices: usize,
    elements: usize,
    frames: u32,
    ms_per_step: f64,
    game_thread_ms: f64,
    game_thread_ms_max: f64,
    /// Median and largest GPU time of the timed frames read back, from the device's
    /// timestamps (NaN without timestamp queries).
    gpu_ms: f64,
    gpu_ms_max: f64,
    /// Dispatches and submissions recorded per frame.
    dispatches: f64,
    submissions: f64,
    /// Sweeps per step.
    iterations: u32,
    metrics: Vec<(&'static str, f64)>,
}

impl Row {
    fn ns_per_vertex_iteration(&self) -> f64 {
        self.ms_per_step * 1e6 / (self.vertices as f64 * self.iterations as f64)
    }

    fn print(&self, json: bool) {
        if json {
            let mut s = format!(
                "{{\"bench\":\"bench_gpu\",\"scene\":\"{}\",\"backend\":\"gpu\",\"adapter\":\"{}\",\"threads\":1,\"vertices\":{},\"elements\":{},\"iterations\":{},\"substeps\":1,\"frames\":{},\"ms_per_step\":{:.4},\"ns_per_vertex_iteration\":{:.2},\"game_thread_ms\":{:.4},\"game_thread_ms_max\":{:.4},\"gpu_ms\":{:.4},\"gpu_ms_max\":{:.4},\"dispatches_per_frame\":{:.1},\"submissions_per_frame\":{:.2}",
                self.scene,
                self.adapter,
                self.vertices,
                self.elements,
                self.iterations,
                self.frames,
                self.ms_per_step,
                self.ns_per_vertex_iteration(),
                self.game_thread_ms,
                self.game_thread_ms_max,
                self.gpu_ms,
                self.gpu_ms_max,
                self.dispatches,
                self.submissions,
            );
            for (k, v) in &self.metrics {
                s += &format!(",\"{k}\":{v:.6e}");
            }
            println!("{s}}}");
        } else {
            let extra: Vec<String> = self.metrics.iter().map(|(k, v)| format!("{k}={v:.3e}")).collect();
            println!(
                "{:<18} {:>8} {:>8} {:>4} {:>6} {:>10.3} {:>8.3} {:>8.2} {:>6.0} {:>9.4} {:>9.4}  {}",
                self.scene,
                self.vertices,
                self.elements,
                self.iterations,
                self.frames,
                self.ms_per_step,
                self.gpu_ms,
                self.ns_per_vertex_iteration(),
                self.dispatches,
                self.game_thread_ms,
                self.game_thread_ms_max,
                extra.join(" ")
            );
        }
    }
}

fn bench_box(a: &Args, cells: u32, iterations: u32) -> Row {
    let tets = 6 * (cells as usize).pow(3);
    let frames = a.frames.unwrap_or(match tets {
        0..=20_000 => 60,
        20_001..=200_000 => 20,
        _ => 10,
    });
    let mut gpu = World::new(config(Backend::Gpu, &a.adapter, iterations)).unwrap_or_else(|e| {
        eprintln!("bench_gpu needs a GPU adapter (on Linux without one: Mesa lavapipe): {e}");
        std::process::exit(1)
    });
    drop_box(&mut gpu, cells);
    let mut row = timed(&mut gpu, &format!("drop_box_{cells}^3"), frames, Vec::new());
    if tets <= 20_000 {
        let mut cpu = World::new(config(Backend::Cpu, &None, iterations)).expect("cpu world");
        drop_box(&mut cpu, cells);
        // The GPU world stepped one untimed frame, the timed ones and one for its counters.
        for _ in 0..frames + 2 {
            cpu.step();
        }
        let d = gpu
            .positions()
            .iter()
            .zip(cpu.positions())
            .map(|(p, q)| (p.truncate() - q.truncate()).length())
            .fold(0.0f32, f32::max);
        row.metrics.push(("cpu_max_diff_m", d as f64));
    }
    row
}

/// Times `frames` frames of `world` on the GPU after one untimed frame, then steps one more
/// (untimed) to read the last timed frame's contact counters.
fn timed(world: &mut World, scene: &str, frames: u32, mut metrics: Vec<(&'static str, f64)>) -> Row {
    // Untimed: upload, pipeline compilation (all kernels, so that the warm-up thread is not
    // still compiling during the timed frames), the first submission.
    world.step();
    world.wait_for_gpu();
    if let Some(ctx) = world.gpu_context() {
        ctx.compile_all();
    }
    let adapter = world.gpu_context().map_or_else(String::new, |c| c.adapter_info.name.clone());
    // A game loop that never waits: `step()` is called until `frames` frames were taken;
    // calls made while the GPU is three frames behind step nothing (`gpu_busy`).
    let (mut game, mut game_max, mut idle_max) = (0.0, 0.0f64, 0.0f64);
    // Frames the safety check rejected (redone by the fallback on the CPU), and frames stepped
    // there (the redone ones and the island's hold).
    let (mut rejected, mut cpu_frames) = (0usize, 0usize);
    let (mut gpu_times, mut dispatches, mut submissions) = (Vec::new(), 0u64, 0u64);
    let t = Instant::now();
    let mut stepped = 0;
    while stepped < frames {
        let r = world.step();
        gpu_times.extend(r.gpu_ms);
        dispatches += u64::from(r.gpu_dispatches);
        submissions += u64::from(r.gpu_submissions);
        rejected += world.drain_events().iter().filter(|e| matches!(e, PliantEvent::UnsafeStep { .. })).count();
        if r.backend != Backend::Gpu {
            cpu_frames += 1;
            stepped += 1;
            game += r.game_thread_ms;
            game_max = game_max.max(r.game_thread_ms);
        } else if r.gpu_busy {
            idle_max = idle_max.max(r.game_thread_ms);
            // The rest of a game frame (render, input) would run here.
            std::thread::sleep(std::time::Duration::from_micros(200));
        } else {
            stepped += 1;
            game += r.game_thread_ms;
            game_max = game_max.max(r.game_thread_ms);
        }
    }
    world.wait_for_gpu();
    let ms_per_step = t.elapsed().as_secs_f64() * 1e3 / frames as f64;
    // The contact counters of the last frame come back with its readback (and its GPU time).
    let contact = world.step();
    gpu_times.extend(contact.gpu_ms);
    gpu_times.sort_by(f64::total_cmp);
    let gpu_ms = gpu_times.get(gpu_times.len() / 2).copied().unwrap_or(f64::NAN);
    let gpu_ms_max = gpu_times.last().copied().unwrap_or(f64::NAN);
    let gpu_frames = (frames as usize - cpu_frames).max(1) as f64;
    world.wait_for_gpu();
    if contact.contact_pairs > 0 {
        metrics.push(("contact_pairs", contact.contact_pairs as f64));
        metrics.push(("min_pair_distance_m", contact.min_pair_distance.unwrap_or(f32::NAN) as f64));
    }
    let mut last = StepReport { backend: Backend::Gpu, ..StepReport::default() };
    world.complete_report(&mut last);
    if PROFILE.load(std::sync::atomic::Ordering::Relaxed) {
        print_profile(world, scene);
    }
    metrics.insert(0, ("busy_call_ms_max", idle_max));
    metrics.insert(1, ("min_obstacle_distance_m", last.min_obstacle_distance.unwrap_or(f32::NAN) as f64));
    metrics.insert(2, ("unsafe_steps", rejected as f64));
    metrics.insert(3, ("cpu_frames", cpu_frames as f64));
    Row {
        scene: scene.to_owned(),
        adapter,
        vertices: world.vertex_count(),
        elements: world.element_count(),
        frames,
        ms_per_step,
        game_thread_ms: game / frames as f64,
        game_thread_ms_max: game_max,
        gpu_ms,
        gpu_ms_max,
        dispatches: dispatches as f64 / gpu_frames,
        submissions: submissions as f64 / gpu_frames,
        iterations: world.config().iterations,
        metrics,
    }
}

/// Five more frames of `world` profiled kernel by kernel (each waits for the GPU), printed per
/// kernel: dispatches and GPU time per frame, the costliest first.
fn print_profile(world: &mut World, scene: &str) {
    const FRAMES: u32 = 5;
    if !world.set_gpu_profiling(true) {
        eprintln!("{scene}: no kernel profile (the adapter has no timestamps inside passes)");
        return;
    }
    for _ in 0..FRAMES {
        world.step();
    }
    world.wait_for_gpu();
    let adapter = world.gpu_context().map_or_else(String::new, |c| c.adapter_info.name.clone());
    let Some((kernels, unprofiled)) = world.gpu_kernel_profile() else {
        eprintln!("{scene}: no kernel profile came back: {:?}", world.why_not_gpu());
        return;
    };
    world.set_gpu_profiling(false);
    let total: f64 = kernels.iter().map(|k| k.ms).sum();
    for k in &kernels {
        let (per_frame, ms) = (k.dispatches as f64 / FRAMES as f64, k.ms / FRAMES as f64);
        if JSON.load(std::sync::atomic::Ordering::Relaxed) {
            println!(
                "{{\"bench\":\"gpu_profile\",\"scene\":\"{scene}\",\"backend\":\"gpu\",\"adapter\":\"{adapter}\",\"kernel\":\"{}\",\"frames\":{FRAMES},\"dispatches_per_frame\":{per_frame:.1},\"ms_per_frame\":{ms:.4},\"us_per_dispatch\":{:.2},\"share\":{:.3}}}",
                k.kernel,
                1e3 * k.ms / k.dispatches.max(1) as f64,
                k.ms / total.max(1e-12),
            );
        } else {
            println!(
                "    {:<24} {:>7.1} dispatches/frame {:>9.4} ms/frame {:>8.2} µs each {:>5.1} %",
                k.kernel,
                per_frame,
                ms,
                1e3 * k.ms / k.dispatches.max(1) as f64,
                100.0 * k.ms / total.max(1e-12)
            );
        }
    }
    if unprofiled > 0 {
        eprintln!("{scene}: {unprofiled} dispatches found no timestamp slot");
    }
}

/// The 100×100 cloth of `bench_contact` (10,201 vertices, 20,000 triangles) dropped over a
/// sphere, without self contact. A free drape is chaotic (see `tests/gpu_scenes.rs`), so its
/// accuracy column is the closest vertex to the obstacles only.
fn bench_cloth(a: &Args) -> Row {
    let frames = a.frames.unwrap_or(30);
    let mut world = World::new(config(Backend::Gpu, &a.adapter, 10)).expect("gpu world");
    let mesh = TriMesh::cloth_grid(Vec2::splat(1.0), [100, 100]).expect("cloth");
    world.bodies.insert(
        ClothBuilder::new(mesh)
            .material(ClothMaterial::new(2.0e6, 0.3, 5e-4))
            .friction(0.3)
            .self_collision(false)
            .translation(Vec3::new(0.0, 0.55, 0.0))
            .build()
            .expect("cloth"),
    );
    world.obstacles.push(Obstacle::sphere(Vec3::new(0.0, 0.25, 0.0), 0.25, 0.3).expect("sphere"));
    world.obstacles.push(Obstacle::ground(0.0, 0.3));
    timed(&mut world, "cloth_100x100", frames, Vec::new())
}

/// A bundled or inline scene on `backend`.
fn scene_world(json: &str, backend: Backend, adapter: &Option<String>) -> World {
    let scene = parse_scene(json).expect("scene parses");
    let mut world = scene.build(std::path::Path::new("examples/scenes")).expect("scene builds").world;
    let config = StepConfig { backend, gpu_adapter: adapter.clone(), ..world.config().clone() };
    world.set_config(config).expect("config");
    world
}

/// `bench_contact`'s stack of four soft cubes, GPU against CPU after the same frames.
fn bench_stack(a: &Args) -> Row {
    let frames = a.frames.unwrap_or(60);
    let json = bundled_scene("stack_soft_cubes").expect("bundled scene");
    let mut gpu = scene_world(json, Backend::Gpu, &a.adapter);
    let mut row = timed(&mut gpu, "stack_soft_cubes", frames, Vec::new());
    row.iterations = gpu.config().iterations;
    let mut cpu = scene_world(json, Backend::Cpu, &None);
    // The GPU world stepped one untimed frame, the timed ones and one for its counters.
    for _ in 0..frames + 2 {
        cpu.step();
    }
    row.metrics.push(("cpu_max_diff_m", largest_difference(&gpu, &cpu)));
    row.metrics.push(("intersections", gpu.find_intersections().len() as f64));
    row
}

/// `bench_contact`'s 100×100 cloth with self contact, folding over a sphere.
fn bench_cloth_self(a: &Args) -> Row {
    let frames = a.frames.unwrap_or(30);
    let json = r#"{ "version": 1, "name": "cloth_100x100_self", "frames": 30,
  "solver": { "iterations": 10 },
  "materials": { "fabric": { "model": "cloth", "E": 2e6, "nu": 0.3, "rho": 400, "thickness": 0.0005 } },
  "bodies": [{ "name": "cloth", "material": "fabric",
               "generator": { "type": "cloth_grid", "size": [1, 1], "cells": [100, 100] },
               "translation": [0, 0.35, 0], "friction": 0.3 }],
  "obstacles": [{ "type": "sphere", "center": [0, 0.15, 0], "radius": 0.15, "friction": 0.3 },
                { "type": "plane", "normal": [0, 1, 0], "offset": 0, "friction": 0.3 }] }"#;
    let mut world = scene_world(json, Backend::Gpu, &a.adapter);
    let mut row = timed(&mut world, "cloth_100x100_self", frames, Vec::new());
    row.metrics.push(("intersections", world.find_intersections().len() as f64));
    row
}

fn largest_difference(a: &World, b: &World) -> f64 {
    let (p, q) = (a.positions(), b.positions());
    p.iter().zip(q).map(|(x, y)| (x.truncate() - y.truncate()).length()).fold(0.0f32, f32::max) as f64
}

fn main() {
    let a = args();
    JSON.store(a.json, std::sync::atomic::Ordering::Relaxed);
    if !a.json {
        println!(
            "{:<18} {:>8} {:>8} {:>4} {:>6} {:>10} {:>8} {:>8} {:>6} {:>9} {:>9}  accuracy",
            "scene", "verts", "elems", "its", "frames", "ms/step", "gpu ms", "ns/v-it", "disp", "game ms", "game max"
        );
    }
    // The boxes at 10 sweeps (up to 10⁶ tets, and 60³ cells: 227k vertices), then the 6³ and
    // 12³ cubes (343 and 2,197 vertices) at 20 sweeps, where the per-dispatch cost dominates.
    for (cells, iterations) in [(5u32, 10), (12, 10), (26, 10), (55, 10), (60, 10), (6, 20), (12, 20)] {
        if 6 * (cells as usize).pow(3) > a.max_tets || !a.wants(&format!("drop_box_{cells}^3")) {
            continue;
        }
        bench_box(&a, cells, iterations).print(a.json);
    }
    if a.wants("cloth_100x100") {
        bench_cloth(&a).print(a.json);
    }
    if a.wants("stack_soft_cubes") {
        bench_stack(&a).print(a.json);
    }
    if a.wants("cloth_100x100_self") {
        bench_cloth_self(&a).print(a.json);
    }
}
