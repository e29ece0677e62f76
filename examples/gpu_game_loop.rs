//! A game loop on the GPU backend: what a game or VR frame sees of Pliant.
//!
//! ```text
//! cargo run --release --example gpu_game_loop [-- --backend gpu|auto] [--adapter NAME] [--frames N]
//! ```
//!
//! Two soft cubes fall onto the ground and onto each other; a third is spawned at 1 s (bodies
//! come and go at run time). The loop runs at a paced 60 Hz, like a vsynced game: every game
//! frame calls `step()` once, which records the next simulation frame and hands it to the GPU
//! without waiting, then "renders" the newest finished frame from `latest_positions()`. When the
//! GPU is three frames behind, `step()` takes no frame and says so (`gpu_busy`), so the game
//! frame is never held up; the simulation then runs behind real time instead.
//!
//! Printed: every half second, the game frame, the newest simulation frame submitted and the one
//! finished (the latency in frames), the caller's time in `step()`, and the lowest vertex of the
//! finished frame; at the end, the caller's time per `step()` (mean, largest), how many calls
//! took no frame, the time of the call after the spawn (it builds the buffers of the new
//! packing; the other bodies' state is copied on the device), the events (fallbacks, rollbacks,
//! overflows), and the final state's exact intersection check.
//!
//! On a machine with only a software Vulkan adapter (Mesa lavapipe) `--backend auto` steps on
//! the CPU and says why; the default `--backend gpu` uses it anyway.

use std::time::{Duration, Instant};

use pliant::Backend;
use pliant::prelude::*;

struct Args {
    backend: Backend,
    adapter: Option<String>,
    frames: u32,
}

fn args() -> Args {
    let mut a = Args { backend: Backend::Gpu, adapter: None, frames: 180 };
    let mut it = std::env::args().skip(1);
    while let Some(s) = it.next() {
        match s.as_str() {
            "--backend" => match it.next().map(|v| v.parse::<Backend>()) {
                Some(Ok(b)) => a.backend = b,
                other => {
                    eprintln!("--backend takes cpu, gpu or auto (got {other:?})");
                    std::process::exit(2)
                }
            },
            "--adapter" => a.adapter = it.next(),
            "--frames" => a.frames = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.frames),
            other => {
                eprintln!("unknown argument {other}; use --backend cpu|gpu|auto, --adapter NAME, --frames N");
                std::process::exit(2)
            }
        }
    }
    a
}

fn cube(world: &mut World, name: &str, at: Vec3) {
    let mesh = TetMesh::box_mesh(Vec3::splat(0.2), [6, 6, 6], TetSplit::Six).expect("mesh");
    let body = SoftBodyBuilder::tetrahedral(mesh).name(name).friction(0.4).translation(at).build().expect("body");
    world.bodies.insert(body);
}

fn main() {
    let a = args();
    let config = StepConfig { backend: a.backend, gpu_adapter: a.adapter.clone(), ..StepConfig::default() };
    let mut world = World::new(config).unwrap_or_else(|e| {
        eprintln!("cannot open the {} backend: {e}", a.backend);
        std::process::exit(1)
    });
    match world.gpu_context() {
        Some(ctx) => {
            // The loading screen: every kernel compiled before the first frame (opening the
            // GPU started compiling them on a thread; this waits for the rest).
            let t = Instant::now();
            ctx.compile_all();
            println!(
                "GPU adapter: {} ({:?}); kernels compiled in {:.0} ms of loading",
                ctx.adapter_info.name,
                ctx.adapter_info.backend,
                t.elapsed().as_secs_f64() * 1e3
            );
        }
        None => println!("no GPU in use: {}", world.why_not_gpu().unwrap_or_default()),
    }
    cube(&mut world, "bottom", Vec3::new(0.0, 0.15, 0.0));
    cube(&mut world, "top", Vec3::new(0.05, 0.45, 0.02));
    world.obstacles.push(Obstacle::ground(0.0, 0.5));

    let period = Duration::from_secs_f64(1.0 / 60.0);
    let (mut game_ms, mut game_max, mut taken, mut busy) = (0.0f64, 0.0f64, 0u32, 0u32);
    let mut spawn_ms = None;
    let mut events = Vec::new();
    println!(
        "{:>10} {:>10} {:>10} {:>10} {:>12} {:>14}",
        "game frame", "submitted", "finished", "latency", "step() ms", "lowest y [m]"
    );
    let start = Instant::now();
    for game_frame in 1..=a.frames {
        let spawn = game_frame == 60;
        if spawn {
            // A body spawned mid-game: the next step builds buffers for the new packing and
            // copies the other bodies' state into them on the device, after the frames in
            // flight, without waiting for them; the kernels are not compiled again. (A software
            // adapter such as lavapipe runs each submission inside the submit call, and
            // creating buffers waits for the one it is running.)
            cube(&mut world, "spawned", Vec3::new(-0.03, 0.8, 0.0));
        }
        let report = world.step();
        if spawn {
            spawn_ms = Some(report.game_thread_ms);
        } else if report.gpu_busy {
            busy += 1;
        } else {
            taken += 1;
            game_ms += report.game_thread_ms;
            game_max = game_max.max(report.game_thread_ms);
        }
        events.extend(world.drain_events());
        let submitted = world.frame();
        // "Render" the newest finished frame.
        let (finished, positions) = world.latest_positions();
        let lowest = positions.iter().map(|p| p.y).fold(f32::INFINITY, f32::min);
        if game_frame % 30 == 0 {
            println!(
                "{game_frame:>10} {submitted:>10} {finished:>10} {:>10} {:>12.3} {lowest:>14.5}",
                submitted - finished,
                report.game_thread_ms
            );
        }
        // Pace to 60 Hz, as a vsynced game would.
        let next = start + period * game_frame;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    world.wait_for_gpu();
    events.extend(world.drain_events());
    let wall = start.elapsed().as_secs_f64();
    println!();
    println!(
        "{} game frames in {wall:.2} s; {} simulation frames ({:.2} s simulated); {busy} step() calls took no frame",
        a.frames,
        world.frame(),
        world.time()
    );
    if taken > 0 {
        println!(
            "caller's time per step() that took a frame: mean {:.3} ms, largest {:.3} ms",
            game_ms / taken as f64,
            game_max
        );
    }
    if let Some(ms) = spawn_ms {
        println!("the step() after spawning a body: {ms:.3} ms (it builds the new packing's buffers)");
    }
    for e in &events {
        println!("event: {e}");
    }
    let lowest = world.positions().iter().map(|p| p.y).fold(f32::INFINITY, f32::min);
    let crossings = world.find_intersections();
    println!("final state: lowest vertex {lowest:+.5} m, {} surface intersections", crossings.len());
    if !crossings.is_empty() {
        std::process::exit(1);
    }
}
