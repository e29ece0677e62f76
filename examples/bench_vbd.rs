//! Benchmark: CPU Vertex Block Descent.
//!
//! ```text
//! cargo run --release --example bench_vbd [-- --json] [--quick] [--frames N]
//! ```
//!
//! 1. Throughput: boxes of 343, 2,197 and 12,167 vertices (6³, 12³, 22³ cells × 6 tets;
//!    E = 5e5 Pa, ν = 0.4, ρ = 1000 kg/m³) dropped on the ground, dt = 1/60, 10 sweeps, with 1
//!    and 2 threads: ms per step and ns per vertex-iteration.
//! 2. Accuracy: the cantilever (2 m × 0.2 m × 0.2 m, E = 1.2e8 Pa, ν = 0) against the sweep
//!    count {10, 20, 50, 100}, at one step per frame and with the scene's 20 substeps: settled tip
//!    deflection against the converged static solve of the same mesh and against
//!    Euler–Bernoulli (0.0491 m).

#[path = "../tests/common/static_solve.rs"]
mod static_solve;

use std::time::Instant;

use pliant::prelude::*;

const EULER_BERNOULLI: f64 = 0.0491;

struct Args {
    json: bool,
    quick: bool,
    frames: u32,
}

fn args() -> Args {
    let mut a = Args { json: false, quick: false, frames: 120 };
    let mut it = std::env::args().skip(1);
    while let Some(s) = it.next() {
        match s.as_str() {
            "--json" => a.json = true,
            "--quick" => a.quick = true,
            "--frames" => a.frames = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.frames),
            other => {
                eprintln!("unknown argument {other}; use --json, --quick, --frames N");
                std::process::exit(2);
            }
        }
    }
    a
}

struct Row {
    scene: String,
    threads: usize,
    vertices: usize,
    elements: usize,
    iterations: u32,
    substeps: u32,
    ms_per_step: f64,
    metrics: Vec<(&'static str, f64)>,
}

impl Row {
    fn ns_per_vertex_iteration(&self) -> f64 {
        self.ms_per_step * 1e6 / (self.vertices as f64 * self.iterations as f64 * self.substeps as f64)
    }

    fn print(&self, json: bool) {
        if json {
            let mut s = format!(
                "{{\"bench\":\"bench_vbd\",\"scene\":\"{}\",\"backend\":\"cpu\",\"threads\":{},\"vertices\":{},\"elements\":{},\"iterations\":{},\"substeps\":{},\"ms_per_step\":{:.4},\"ns_per_vertex_iteration\":{:.1}",
                self.scene,
                self.threads,
                self.vertices,
                self.elements,
                self.iterations,
                self.substeps,
                self.ms_per_step,
                self.ns_per_vertex_iteration()
            );
            for (k, v) in &self.metrics {
                s += &format!(",\"{k}\":{v:.6e}");
            }
            println!("{s}}}");
        } else {
            let extra: Vec<String> = self.metrics.iter().map(|(k, v)| format!("{k}={v:.5}")).collect();
            println!(
                "{:<28} {:>3} {:>7} {:>7} {:>5} {:>4} {:>10.3} {:>8.0}  {}",
                self.scene,
                self.threads,
                self.vertices,
                self.elements,
                self.iterations,
                self.substeps,
                self.ms_per_step,
                self.ns_per_vertex_iteration(),
                extra.join(" ")
            );
        }
    }
}

fn drop_box(cells: u32, threads: usize, frames: u32) -> Row {
    let config = StepConfig { iterations: 10, threads, ..StepConfig::default() };
    let mut world = World::new(config).expect("valid config");
    let mesh = TetMesh::box_mesh(Vec3::splat(0.2), [cells; 3], TetSplit::Six).expect("box");
    let body = SoftBodyBuilder::tetrahedral(mesh)
        .name("box")
        .material(StableNeoHookean::from_young_poisson(5e5, 0.4))
        .density(1000.0)
        .translation(Vec3::new(0.0, 0.35, 0.0))
        .build()
        .expect("body");
    let h = world.bodies.insert(body);
    world.obstacles.push(Obstacle::ground(0.0, 0.5));
    world.sync();
    // One untimed step warms caches and scratch buffers.
    world.step();
    let mut total = 0.0;
    let mut min_distance = f32::INFINITY;
    let mut last = StepReport::default();
    for _ in 0..frames {
        let t = Instant::now();
        last = world.step();
        total += t.elapsed().as_secs_f64() * 1e3;
        min_distance = min_distance.min(last.min_obstacle_distance.unwrap_or(f32::INFINITY));
    }
    let shared = world.bodies[h].shared().clone();
    Row {
        scene: format!("drop_box_{cells}^3"),
        threads,
        vertices: shared.vertex_count(),
        elements: shared.element_count(),
        iterations: 10,
        substeps: 1,
        ms_per_step: total / frames as f64,
        metrics: vec![
            ("min_obstacle_distance_m", min_distance as f64),
            ("final_kinetic_energy_j", last.energy.kinetic),
        ],
    }
}

fn cantilever(res: u32, iterations: u32, substeps: u32, frames: u32, threads: usize, static_tip: f64) -> Row {
    let config = StepConfig {
        iterations,
        substeps,
        threads,
        chebyshev_rho: Some(0.95),
        initialization: Initialization::Inertia,
        ..StepConfig::default()
    };
    let mut world = World::new(config).expect("valid config");
    let mesh = TetMesh::beam(2.0, 0.2, 0.2, [20 * res, 2 * res, 2 * res], TetSplit::Six).expect("beam");
    let pins: Vec<u32> = (0..mesh.vertex_count() as u32).filter(|&i| mesh.positions()[i as usize].x < 1e-6).collect();
    let tip: Vec<usize> = (0..mesh.vertex_count()).filter(|&i| mesh.positions()[i].x > 2.0 - 1e-6).collect();
    let rest_y: f64 = tip.iter().map(|&i| mesh.positions()[i].y as f64).sum::<f64>() / tip.len() as f64;
    let body = SoftBodyBuilder::tetrahedral(mesh)
        .material(StableNeoHookean::from_young_poisson(1.2e8, 0.0))
        .density(1000.0)
        .linear_damping(20.0)
        .pinned(&pins)
        .build()
        .expect("body");
    let h = world.bodies.insert(body);
    world.sync();
    let mut total = 0.0;
    let mut samples = Vec::new();
    for f in 0..frames {
        let t = Instant::now();
        world.step();
        total += t.elapsed().as_secs_f64() * 1e3;
        if f + 60 >= frames {
            let p = world.body_positions(h).expect("body");
            samples.push(rest_y - tip.iter().map(|&i| p[i].y as f64).sum::<f64>() / tip.len() as f64);
        }
    }
    let tip_deflection = samples.iter().sum::<f64>() / samples.len() as f64;
    let shared = world.bodies[h].shared().clone();
    Row {
        scene: format!("cantilever_{}x{}x{}", 20 * res, 2 * res, 2 * res),
        threads,
        vertices: shared.vertex_count(),
        elements: shared.element_count(),
        iterations,
        substeps,
        ms_per_step: total / frames as f64,
        metrics: vec![
            ("tip_deflection_m", tip_deflection),
            ("static_tip_m", static_tip),
            ("error_vs_static", tip_deflection / static_tip - 1.0),
            ("error_vs_euler_bernoulli", tip_deflection / EULER_BERNOULLI - 1.0),
        ],
    }
}

fn main() {
    let a = args();
    if !a.json {
        println!(
            "{:<28} {:>3} {:>7} {:>7} {:>5} {:>4} {:>10} {:>8}  accuracy",
            "scene", "thr", "verts", "elems", "iters", "sub", "ms/step", "ns/v-it"
        );
    }
    let sizes: &[u32] = if a.quick { &[6] } else { &[6, 12, 22] };
    for &cells in sizes {
        for threads in [1, 2] {
            drop_box(cells, threads, a.frames).print(a.json);
        }
    }
    let res: &[u32] = if a.quick { &[1] } else { &[1, 3] };
    for &r in res {
        let static_tip = static_solve::cantilever_static_tip(r);
        for iterations in [10, 20, 50, 100] {
            cantilever(r, iterations, 1, 300, 2, static_tip).print(a.json);
        }
        for iterations in [10, 20] {
            cantilever(r, iterations, 20, 240, 2, static_tip).print(a.json);
        }
    }
}
