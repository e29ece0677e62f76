//! Pliant beside rapier 0.36's own soft bodies, on the same scenes, in one process.
//!
//! ```text
//! cargo run --release --example bench_vs_rapier [-- --json] [--quick] [--max-seconds S]
//! ```
//!
//! Engines: `pliant` (VBD on the CPU), `rapier-constraints` and `rapier-fem` (rapier's
//! `SoftBodySolver::Constraints` and `::Fem`, neo-Hookean cells, rapier's default integration
//! parameters). Every row says its thread count: Pliant's `StepConfig::threads`, and for rapier
//! (built with its `parallel` feature) the size of the rayon pool the run is installed in.
//!
//! Cases:
//! * `cantilever`: 2 m × 0.2 m × 0.2 m, clamped at x = 0, E = 1.2e8 Pa, ν = 0, ρ = 1000, 600
//!   frames at 1/60 s, at 8×2×2, 26×3×3 and 54×6×6 cells (81 / 432 / 2,695 particles: the
//!   issue's 81 / 425 / 2,673 with cells as near to cubes as those counts allow. Linear tets
//!   lose bending accuracy in elongated cells: the 32×8×8 grid's 2.5:1 cells leave the static
//!   solve of that mesh 14 % stiff, 54×6×6 at the same count 8 %). Both engines get the same
//!   grid; Pliant splits each cell into six tets with mirrored neighbours
//!   (`TetSplit::SixMirrored`, no preferred diagonal). Tip
//!   deflection (mean over the x = L face, last 60 frames) against Euler–Bernoulli 0.0491 m and
//!   against a converged static solve of that engine's own mesh (Pliant's f64 Newton oracle,
//!   `tests/common/static_solve.rs`, on the engine's rest positions and tets); `tip_motion` is
//!   how far the tip still moved over the last 60 frames.
//! * `drop_cube`: a 0.2 m cube, E = 3e5 Pa, ν = 0.4, ρ = 1000, dropped from 0.3 m onto a fixed
//!   rapier ground (Pliant: the same collider through the rapier bridge), 150 frames, at 6³, 11³
//!   and 21³ cells (1,296 / 7,986 / 55,566 tets). Deepest ground penetration over the run and
//!   the visible gap between the lowest vertex and the ground at the end. Neither engine tests
//!   the cube against itself (rapier's soft bodies have self contact off by default; Pliant's
//!   `self_collision(false)`).
//! * `projectile`: a 5 cm cube at 60 m/s (1 m per frame) at a 2 cm thick fixed wall 1.5 m away:
//!   tunnels or not.
//!
//! Pliant runs with `StepConfig::measure_state` off: rapier measures nothing per step either,
//! and this bench takes its metrics from the positions itself.
//!
//! A run that passes `--max-seconds` (default 120) of wall time stops early and says after how
//! many frames. `--quick` runs the two coarser resolutions only; `--only cantilever|drop_cube|
//! projectile` one case. The drop cube runs Pliant at 20, 10, 5, 3, 2 and 1 sweeps on one thread and
//! at 5 and 3 on two, and rapier-constraints on one and two; the ratio table compares each
//! Pliant row with rapier's fastest row at the same thread count and says whether Pliant's
//! penetration and gap are no worse.

#[path = "../tests/common/static_solve.rs"]
mod static_solve;

use std::time::Instant;

use pliant::prelude::*;
use pliant::rapier::RapierCoupling;
use pliant::rapier::rapier3d::prelude::{
    ColliderBuilder, ColliderSet, PhysicsWorld, RigidBodySet, SoftBodyBuilder as RapierSoftBuilder, SoftBodyCellModel,
    SoftBodyMaterial, SoftBodySolver,
};

const DT: f32 = 1.0 / 60.0;
const EULER_BERNOULLI: f64 = 0.0491;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Engine {
    Pliant,
    RapierConstraints,
    RapierFem,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Pliant => "pliant",
            Engine::RapierConstraints => "rapier-constraints",
            Engine::RapierFem => "rapier-fem",
        }
    }
}

const ENGINES: [Engine; 3] = [Engine::Pliant, Engine::RapierConstraints, Engine::RapierFem];

/// One row of the table.
struct Row {
    scene: String,
    engine: Engine,
    threads: usize,
    vertices: usize,
    elements: usize,
    iterations: u32,
    frames: u32,
    ms_per_step: f64,
    metrics: Vec<(&'static str, f64)>,
    note: String,
}

/// A body of either engine, as far as the bench needs. (Two values per run: their size
/// difference does not matter.)
#[allow(clippy::large_enum_variant)]
enum Sim {
    Pliant {
        world: Box<World>,
        coupling: RapierCoupling,
        body: SoftBodyHandle,
        bodies: RigidBodySet,
        colliders: ColliderSet,
    },
    Rapier {
        physics: Box<PhysicsWorld>,
        body: pliant::rapier::rapier3d::prelude::SoftBodyHandle,
    },
}

impl Sim {
    fn step(&mut self) {
        match self {
            Sim::Pliant { world, coupling, bodies, colliders, .. } => {
                coupling.step(world, bodies, colliders, &());
            }
            Sim::Rapier { physics, .. } => physics.step(),
        }
    }

    fn velocities(&self) -> Vec<Vec3> {
        match self {
            Sim::Pliant { world, body, .. } => {
                world.body_velocities(*body).unwrap_or(&[]).iter().map(|p| p.truncate()).collect()
            }
            Sim::Rapier { physics, body } => physics.soft_bodies[*body].particle_velocities().collect(),
        }
    }

    fn positions(&self) -> Vec<Vec3> {
        match self {
            Sim::Pliant { world, body, .. } => {
                world.body_positions(*body).unwrap_or(&[]).iter().map(|p| p.truncate()).collect()
            }
            Sim::Rapier { physics, body } => physics.soft_bodies[*body].particle_positions().collect(),
        }
    }

    /// Rest positions and tets (for the static solve of this engine's own mesh).
    fn mesh(&self) -> (Vec<Vec3>, Vec<[u32; 4]>) {
        match self {
            Sim::Pliant { world, body, .. } => {
                let shared = world.bodies[*body].shared();
                let tets = match &shared.shape {
                    pliant::BodyShape::Solid { mesh, .. } => mesh.tets().to_vec(),
                    pliant::BodyShape::Cloth { .. } => Vec::new(),
                };
                (shared.rest_positions().to_vec(), tets)
            }
            Sim::Rapier { physics, body } => {
                let sb = &physics.soft_bodies[*body];
                let com = sb.center_of_mass();
                let rest = sb.particles().iter().map(|p| p.initial_rest_position() + com).collect();
                (rest, sb.cells().iter().map(|c| c.vertices).collect())
            }
        }
    }
}

fn rapier_material(young: f32, poisson: f32) -> SoftBodyMaterial {
    SoftBodyMaterial { young_modulus: young, poisson_ratio: poisson, ..SoftBodyMaterial::default() }
}

fn rapier_solver(engine: Engine) -> SoftBodySolver {
    if engine == Engine::RapierFem { SoftBodySolver::Fem } else { SoftBodySolver::Constraints }
}

/// Pliant's cantilever configuration (docs/scenes.md 1–3): 20 substeps × 10 sweeps with the inertia
/// initialisation and linear damping 20/s, the count VBD needs on this slender stiff beam.
fn cantilever(engine: Engine, cells: [u32; 3]) -> Result<(Sim, u32), Box<dyn std::error::Error>> {
    let (young, poisson, density) = (1.2e8f32, 0.0f32, 1000.0f32);
    let (l, h) = (2.0f32, 0.2f32);
    match engine {
        Engine::Pliant => {
            let config = StepConfig {
                dt: DT,
                substeps: 20,
                iterations: 10,
                chebyshev_rho: Some(0.95),
                initialization: Initialization::Inertia,
                threads: 1,
                measure_state: false,
                ..StepConfig::default()
            };
            let mut world = World::new(config)?;
            let mesh = TetMesh::beam(l, h, h, cells, TetSplit::SixMirrored)?;
            let clamp: Vec<u32> =
                (0..mesh.vertex_count() as u32).filter(|&i| mesh.positions()[i as usize].x < 1e-6).collect();
            let body = world.bodies.insert(
                pliant::SoftBodyBuilder::tetrahedral(mesh)
                    .material(StableNeoHookean::from_young_poisson(young as f64, poisson as f64))
                    .density(density as f64)
                    .damping(1e-6)
                    .linear_damping(20.0)
                    .pinned(&clamp)
                    .build()?,
            );
            world.sync();
            Ok((
                Sim::Pliant {
                    world: Box::new(world),
                    coupling: RapierCoupling::default(),
                    body,
                    bodies: RigidBodySet::new(),
                    colliders: ColliderSet::new(),
                },
                200,
            ))
        }
        _ => {
            let mut physics = Box::new(PhysicsWorld::new());
            physics.integration_parameters.dt = DT;
            let n = [cells[0] as usize + 1, cells[1] as usize + 1, cells[2] as usize + 1];
            let builder = RapierSoftBuilder::cuboid(
                Vec3::new(l / 2.0, 0.0, 0.0),
                Vec3::new(l / 2.0, h / 2.0, h / 2.0),
                n[0],
                n[1],
                n[2],
            );
            let clamp: Vec<u32> = builder
                .particle_positions()
                .iter()
                .enumerate()
                .filter(|(_, p)| p.x < 1e-6)
                .map(|(i, _)| i as u32)
                .collect();
            let builder = builder
                .material(rapier_material(young, poisson))
                .cell_model(SoftBodyCellModel::NeoHookean)
                .solver(rapier_solver(engine))
                .mass(density * l * h * h)
                .pinned_particles(clamp);
            let body = physics.insert_soft_body(builder);
            let iterations = physics.integration_parameters.num_solver_iterations as u32;
            Ok((Sim::Rapier { physics, body }, iterations))
        }
    }
}

fn drop_cube(
    engine: Engine,
    cells: u32,
    sweeps: u32,
    threads: usize,
) -> Result<(Sim, u32), Box<dyn std::error::Error>> {
    let (young, poisson, density, edge) = (3e5f32, 0.4f32, 1000.0f32, 0.2f32);
    let ground = ColliderBuilder::cuboid(2.0, 0.1, 2.0).translation(Vec3::new(0.0, -0.1, 0.0)).build();
    let centre = Vec3::new(0.0, 0.3 + edge / 2.0, 0.0);
    match engine {
        Engine::Pliant => {
            let config =
                StepConfig { dt: DT, threads, iterations: sweeps, measure_state: false, ..StepConfig::default() };
            let mut world = World::new(config)?;
            let mesh = TetMesh::box_mesh(Vec3::splat(edge), [cells; 3], TetSplit::Six)?;
            let body = world.bodies.insert(
                pliant::SoftBodyBuilder::tetrahedral(mesh)
                    .material(StableNeoHookean::from_young_poisson(young as f64, poisson as f64))
                    .density(density as f64)
                    .self_collision(false)
                    .translation(centre)
                    .build()?,
            );
            let mut colliders = ColliderSet::new();
            colliders.insert(ground);
            let iterations = world.config().iterations;
            world.sync();
            Ok((
                Sim::Pliant {
                    world: Box::new(world),
                    coupling: RapierCoupling::default(),
                    body,
                    bodies: RigidBodySet::new(),
                    colliders,
                },
                iterations,
            ))
        }
        _ => {
            let mut physics = Box::new(PhysicsWorld::new());
            physics.integration_parameters.dt = DT;
            physics.colliders.insert(ground);
            let n = cells as usize + 1;
            let builder = RapierSoftBuilder::cuboid(centre, Vec3::splat(edge / 2.0), n, n, n)
                .material(rapier_material(young, poisson))
                .cell_model(SoftBodyCellModel::NeoHookean)
                .solver(rapier_solver(engine))
                .mass(density * edge * edge * edge);
            let body = physics.insert_soft_body(builder);
            let iterations = physics.integration_parameters.num_solver_iterations as u32;
            Ok((Sim::Rapier { physics, body }, iterations))
        }
    }
}

fn projectile(engine: Engine) -> Result<(Sim, u32, f32), Box<dyn std::error::Error>> {
    let (edge, speed, wall_x) = (0.05f32, 60.0f32, 1.5f32);
    let wall = ColliderBuilder::cuboid(0.01, 1.0, 1.0).translation(Vec3::new(wall_x, 0.0, 0.0)).build();
    match engine {
        Engine::Pliant => {
            let config =
                StepConfig { dt: DT, gravity: Vec3::ZERO, threads: 1, measure_state: false, ..StepConfig::default() };
            let mut world = World::new(config)?;
            let mesh = TetMesh::box_mesh(Vec3::splat(edge), [4, 4, 4], TetSplit::Six)?;
            let body = world.bodies.insert(
                pliant::SoftBodyBuilder::tetrahedral(mesh)
                    .material(StableNeoHookean::from_young_poisson(1e6, 0.3))
                    .density(1000.0)
                    .velocity(Vec3::new(speed, 0.0, 0.0))
                    .build()?,
            );
            let mut colliders = ColliderSet::new();
            colliders.insert(wall);
            let iterations = world.config().iterations;
            world.sync();
            Ok((
                Sim::Pliant {
                    world: Box::new(world),
                    coupling: RapierCoupling::default(),
                    body,
                    bodies: RigidBodySet::new(),
                    colliders,
                },
                iterations,
                wall_x + 0.01,
            ))
        }
        _ => {
            let mut physics = Box::new(PhysicsWorld::new());
            physics.integration_parameters.dt = DT;
            physics.gravity = Vec3::ZERO;
            physics.colliders.insert(wall);
            let builder = RapierSoftBuilder::cuboid(Vec3::ZERO, Vec3::splat(edge / 2.0), 5, 5, 5)
                .material(rapier_material(1e6, 0.3))
                .cell_model(SoftBodyCellModel::NeoHookean)
                .solver(rapier_solver(engine))
                .mass(1000.0 * edge * edge * edge);
            let body = physics.insert_soft_body(builder);
            let n = physics.soft_bodies[body].num_particles();
            for i in 0..n {
                physics.soft_bodies[body].set_particle_velocity(i, Vec3::new(speed, 0.0, 0.0));
            }
            let iterations = physics.integration_parameters.num_solver_iterations as u32;
            Ok((Sim::Rapier { physics, body }, iterations, wall_x + 0.01))
        }
    }
}

/// Steps `sim` for up to `frames` frames or `max_seconds`, calling `each` after every frame;
/// returns (frames done, ms per step).
/// Rapier steps inside a rayon pool of `threads` threads (Pliant's count is in its config).
fn run(sim: &mut Sim, frames: u32, max_seconds: f64, threads: usize, each: impl FnMut(u32, &Sim) + Send) -> (u32, f64) {
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool.install(|| run_frames(sim, frames, max_seconds, each)),
        Err(e) => {
            eprintln!("no rayon pool of {threads} threads ({e}); rapier uses the global one");
            run_frames(sim, frames, max_seconds, each)
        }
    }
}

fn run_frames(sim: &mut Sim, frames: u32, max_seconds: f64, mut each: impl FnMut(u32, &Sim)) -> (u32, f64) {
    let t0 = Instant::now();
    let mut stepping = 0.0;
    let mut done = 0;
    for f in 0..frames {
        let s = Instant::now();
        sim.step();
        stepping += s.elapsed().as_secs_f64();
        done = f + 1;
        each(f, sim);
        if t0.elapsed().as_secs_f64() > max_seconds {
            break;
        }
    }
    (done, stepping * 1e3 / done.max(1) as f64)
}

/// The converged static tip of this mesh (Pliant's f64 oracle on the engine's own rest shape).
fn static_tip(rest: &[Vec3], tets: &[[u32; 4]]) -> f64 {
    let rest = rest.iter().map(|p| p.as_dvec3()).collect();
    static_solve::cantilever_tip_of_mesh(rest, tets.to_vec()).0
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut json = false;
    let mut quick = false;
    let mut only = String::new();
    let mut max_seconds = 120.0;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = true,
            "--quick" => quick = true,
            "--only" => only = it.next().ok_or("--only needs cantilever, drop_cube or projectile")?,
            "--max-seconds" => {
                max_seconds = it.next().and_then(|s| s.parse().ok()).ok_or("--max-seconds needs a number")?
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let mut rows = Vec::new();
    let grids: &[[u32; 3]] = &[[8, 2, 2], [26, 3, 3], [54, 6, 6]];
    let grids = if quick { &grids[..2] } else { grids };

    for &cells in grids {
        if !only.is_empty() && !"cantilever".starts_with(only.as_str()) {
            break;
        }
        for engine in ENGINES {
            let (mut sim, iterations) = cantilever(engine, cells)?;
            let (rest, tets) = sim.mesh();
            let rest0 = sim.positions();
            let tip: Vec<usize> = (0..rest0.len()).filter(|&i| rest0[i].x > 2.0 - 1e-4).collect();
            let frames = 600;
            let mut history = Vec::new();
            let (done, ms) = run(&mut sim, frames, max_seconds, 1, |_, s| {
                let p = s.positions();
                let d = -tip.iter().map(|&i| (p[i].y - rest0[i].y) as f64).sum::<f64>() / tip.len() as f64;
                history.push(d);
            });
            let last = &history[history.len().saturating_sub(60)..];
            let deflection = last.iter().sum::<f64>() / last.len().max(1) as f64;
            let motion = last.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
                - last.iter().cloned().fold(f64::INFINITY, f64::min);
            let stat = static_tip(&rest, &tets);
            rows.push(Row {
                scene: format!("cantilever_{}x{}x{}", cells[0], cells[1], cells[2]),
                engine,
                threads: 1,
                vertices: rest.len(),
                elements: tets.len(),
                iterations,
                frames: done,
                ms_per_step: ms,
                metrics: vec![
                    ("tip_deflection_m", deflection),
                    ("static_tip_m", stat),
                    ("rel_err_analytic", deflection / EULER_BERNOULLI - 1.0),
                    ("rel_err_static", deflection / stat - 1.0),
                    ("tip_motion_m", motion),
                ],
                note: if done < frames { format!("stopped after {done} of {frames} frames") } else { String::new() },
            });
            report(rows.last().unwrap(), json);
        }
    }

    // Pliant at its default 20 sweeps and at fewer, to find the cost of rapier's accuracy;
    // (engine, sweeps, threads).
    let drop_runs = [
        (Engine::Pliant, 20, 1),
        (Engine::Pliant, 10, 1),
        (Engine::Pliant, 5, 1),
        (Engine::Pliant, 3, 1),
        (Engine::Pliant, 2, 1),
        (Engine::Pliant, 1, 1),
        (Engine::Pliant, 5, 2),
        (Engine::Pliant, 3, 2),
        (Engine::RapierConstraints, 0, 1),
        (Engine::RapierConstraints, 0, 2),
        (Engine::RapierFem, 0, 1),
    ];
    for &cells in if quick { &[6u32, 11][..] } else { &[6u32, 11, 21][..] } {
        if !only.is_empty() && !"drop_cube".starts_with(only.as_str()) {
            break;
        }
        for (engine, sweeps, threads) in drop_runs {
            let (mut sim, iterations) = drop_cube(engine, cells, sweeps, threads)?;
            let (rest, tets) = sim.mesh();
            let frames = 150;
            let mut deepest = f64::INFINITY;
            let (done, ms) = run(&mut sim, frames, max_seconds, threads, |_, s| {
                let low = s.positions().iter().map(|p| p.y as f64).fold(f64::INFINITY, f64::min);
                deepest = deepest.min(low);
            });
            let gap = sim.positions().iter().map(|p| p.y as f64).fold(f64::INFINITY, f64::min);
            let speed = sim.velocities().iter().map(|v| v.length() as f64).fold(0.0, f64::max);
            rows.push(Row {
                scene: format!("drop_cube_{cells}^3"),
                engine,
                threads,
                vertices: rest.len(),
                elements: tets.len(),
                iterations,
                frames: done,
                ms_per_step: ms,
                metrics: vec![
                    ("ground_penetration_m", (-deepest).max(0.0)),
                    ("rest_gap_m", gap),
                    ("max_speed_end", speed),
                ],
                note: if done < frames { format!("stopped after {done} of {frames} frames") } else { String::new() },
            });
            report(rows.last().unwrap(), json);
        }
    }

    for engine in ENGINES {
        if !only.is_empty() && !"projectile".starts_with(only.as_str()) {
            break;
        }
        let (mut sim, iterations, far_side) = projectile(engine)?;
        let (rest, tets) = sim.mesh();
        let frames = 60;
        let mut tunnelled = false;
        let (done, ms) = run(&mut sim, frames, max_seconds, 1, |_, s| {
            tunnelled |= s.positions().iter().any(|p| p.x > far_side);
        });
        let front = sim.positions().iter().map(|p| p.x as f64).fold(f64::NEG_INFINITY, f64::max);
        rows.push(Row {
            scene: "projectile_60mps".into(),
            engine,
            threads: 1,
            vertices: rest.len(),
            elements: tets.len(),
            iterations,
            frames: done,
            ms_per_step: ms,
            metrics: vec![("tunnelled", tunnelled as u32 as f64), ("front_x_m", front)],
            note: String::new(),
        });
        report(rows.last().unwrap(), json);
    }

    if !json {
        ratio_table(&rows);
    }
    Ok(())
}

/// Each Pliant row against rapier's fastest row of the same scene and thread count: the speed
/// ratio, and whether Pliant is at least as accurate (drop cube: penetration and gap no larger;
/// cantilever: error against the static solve of its own mesh no larger; projectile: no
/// tunnelling where rapier does not tunnel).
fn ratio_table(rows: &[Row]) {
    println!("\nratios: rapier's fastest ms/step ÷ Pliant's at the same thread count (> 1: Pliant is faster)");
    let metric = |r: &Row, k: &str| r.metrics.iter().find(|(n, _)| *n == k).map(|(_, v)| *v).unwrap_or(f64::NAN);
    for p in rows.iter().filter(|r| r.engine == Engine::Pliant) {
        let fastest = rows
            .iter()
            .filter(|r| r.engine != Engine::Pliant && r.scene == p.scene && r.threads == p.threads)
            .min_by(|a, b| a.ms_per_step.total_cmp(&b.ms_per_step));
        let Some(f) = fastest else { continue };
        let at_least_as_accurate = if p.scene.starts_with("drop_cube") {
            // A negative gap is a resting penetration: the distance from the ground counts.
            let no_worse = |k: &str| metric(p, k).abs() <= metric(f, k).abs();
            no_worse("ground_penetration_m") && no_worse("rest_gap_m")
        } else if p.scene.starts_with("cantilever") {
            metric(p, "rel_err_static").abs() <= metric(f, "rel_err_static").abs()
        } else {
            metric(p, "tunnelled") <= metric(f, "tunnelled")
        };
        println!(
            "{:<22} {:>2} sweeps {} thread{}  vs {:<19} {:>7.2}×  {}",
            p.scene,
            p.iterations,
            p.threads,
            if p.threads == 1 { " " } else { "s" },
            f.engine.name(),
            f.ms_per_step / p.ms_per_step,
            if at_least_as_accurate { "as accurate or better" } else { "LESS accurate" }
        );
    }
}

fn report(r: &Row, json: bool) {
    let threads = r.threads;
    let ns = r.ms_per_step * 1e6 / (r.vertices as f64 * r.iterations.max(1) as f64);
    if json {
        let mut s = format!(
            "{{\"bench\":\"bench_vs_rapier\",\"scene\":\"{}\",\"engine\":\"{}\",\"backend\":\"cpu\",\"threads\":{threads},\"vertices\":{},\"elements\":{},\"iterations\":{},\"frames\":{},\"ms_per_step\":{:.4},\"ns_per_vertex_iteration\":{:.2}",
            r.scene,
            r.engine.name(),
            r.vertices,
            r.elements,
            r.iterations,
            r.frames,
            r.ms_per_step,
            ns
        );
        for (k, v) in &r.metrics {
            s += &format!(",\"{k}\":{v:.6e}");
        }
        s += "}";
        println!("{s}");
    } else {
        let metrics: Vec<String> = r.metrics.iter().map(|(k, v)| format!("{k} {v:.4e}")).collect();
        println!(
            "{:<22} {:<19} {:>2} thr {:>6} v {:>6} tets {:>4} it {:>9.3} ms/step  {}{}",
            r.scene,
            r.engine.name(),
            r.threads,
            r.vertices,
            r.elements,
            r.iterations,
            r.ms_per_step,
            metrics.join(", "),
            if r.note.is_empty() { String::new() } else { format!("  ({})", r.note) }
        );
    }
}
