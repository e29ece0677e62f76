//! Pliant and rapier 0.36's own soft bodies on the same scenes, measured by the same code: the
//! engines, the scenes, the runs, their metrics, and the comparisons at equal cost and at equal
//! accuracy. Shared by `bench_vs_rapier` (every resolution) and `report` (the headline table).
//!
//! Every metric is computed here from the positions each engine hands back, the same way for
//! both: a vertex of Pliant and a particle of rapier are the same point of the same grid (both
//! engines mesh the same cells; Pliant splits a cell into six tets, rapier into five).
//!
//! Scenes:
//! * `cantilever`: 2 m × 0.2 m × 0.2 m, clamped at x = 0, E = 1.2e8 Pa, ν = 0, ρ = 1000, 300
//!   frames at 1/60 s. Tip: the mean −y displacement of the x = L face. Accuracy: against the
//!   converged f64 static solve of the engine's own mesh (`tests/common/static_solve.rs`) and
//!   against Euler–Bernoulli 0.0491 m; `worst_error_vs_static` is the largest |tip − static| /
//!   static over the last second, so a beam that still swings about the right mean is not
//!   counted as accurate.
//! * `drop_cube`: a 0.2 m cube, E = 3e5 Pa, ν = 0.4, ρ = 1000, dropped from 0.3 m onto a fixed
//!   rapier ground, 180 frames. Neither engine tests the cube against itself. Resting shape: the
//!   height between the mean y of the top face and of the bottom face, against the static solve
//!   of the same mesh with its bottom face held (friction holds it once landed) and against the
//!   uniaxial ρgL²/(2E); `worst_shape_error` is the largest |shortening − static| / static over
//!   the last half second. Penetration and gap are the lowest vertex (Pliant) or particle centre
//!   (rapier) against the ground, surface to surface for both: rapier's particle radius (its
//!   contact skin, half a cell by default) is set to Pliant's contact offset, 1 mm.
//! * `projectile`: a 5 cm cube at 60 m/s (1 m per frame) at a 2 cm fixed wall 1.5 m away, no
//!   gravity, 60 frames: tunnels or not.
//!
//! Sleeping is off for rapier (Pliant has none). Rapier steps inside a rayon pool of the row's
//! thread count; Pliant uses `StepConfig::threads`.

#![allow(dead_code)]

use std::time::Instant;

#[path = "../../tests/common/static_solve.rs"]
mod static_solve;

use glam::DVec3;
use pliant::prelude::*;
use pliant::rapier::RapierCoupling;
use pliant::rapier::rapier3d::prelude::{
    ColliderBuilder, ColliderSet, PhysicsWorld, RigidBodySet, SoftBodyBuilder as RapierSoftBuilder, SoftBodyCellModel,
    SoftBodyMaterial, SoftBodySolver,
};
use pliant::{LocalGlobalSettings, SolverChoice};

pub const DT: f32 = 1.0 / 60.0;
pub const EULER_BERNOULLI: f64 = 0.0491;
/// Pliant's default contact offset, which rapier's particle radius is set to.
pub const CONTACT_OFFSET: f32 = 1e-3;
pub const CANTILEVER_FRAMES: u32 = 300;
pub const DROP_FRAMES: u32 = 180;
const DROP_EDGE: f32 = 0.2;
const DROP_YOUNG: f32 = 3e5;
const DROP_POISSON: f32 = 0.4;
const DENSITY: f32 = 1000.0;

/// Which solver a row runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Solver {
    /// Pliant's Vertex Block Descent.
    Vbd,
    /// Pliant's sparse-inverse local–global path.
    LocalGlobal,
    /// rapier's `SoftBodySolver::Constraints`.
    RapierConstraints,
    /// rapier's `SoftBodySolver::Fem`.
    RapierFem,
}

impl Solver {
    pub fn name(self) -> &'static str {
        match self {
            Solver::Vbd => "vbd",
            Solver::LocalGlobal => "local_global",
            Solver::RapierConstraints => "rapier-constraints",
            Solver::RapierFem => "rapier-fem",
        }
    }

    pub fn engine(self) -> &'static str {
        if self.is_pliant() { "pliant" } else { "rapier" }
    }

    pub fn is_pliant(self) -> bool {
        matches!(self, Solver::Vbd | Solver::LocalGlobal)
    }
}

/// One engine setting: what a row changes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setting {
    pub solver: Solver,
    /// Pliant: sweeps (VBD) or iterations (local–global) per substep. rapier:
    /// `num_solver_iterations`, which is rapier's substep count.
    pub iterations: u32,
    /// Pliant's substeps per frame (rapier: always 1; its substeps are `iterations`).
    pub substeps: u32,
    /// Linear damping [1/s] (Pliant: `SoftBodyBuilder::linear_damping`; rapier: the particles').
    pub linear_damping: f32,
    /// Pliant's cantilever tuning of docs/scenes.md (Chebyshev ρ = 0.95, inertia
    /// initialisation), with which VBD settles the beam at 20 substeps × 10 sweeps.
    pub tuned: bool,
    pub threads: usize,
}

impl Setting {
    /// Pliant's `StepConfig::default()` (VBD, one substep, 20 sweeps).
    pub fn pliant_default(threads: usize) -> Self {
        let d = StepConfig::default();
        Setting {
            solver: Solver::Vbd,
            iterations: d.iterations,
            substeps: d.substeps,
            linear_damping: 0.0,
            tuned: false,
            threads,
        }
    }

    pub fn vbd(iterations: u32, threads: usize) -> Self {
        Setting { iterations, ..Self::pliant_default(threads) }
    }

    /// VBD with the beam's tuning, `substeps` × 10 sweeps and linear damping 20/s.
    pub fn vbd_tuned(substeps: u32, threads: usize) -> Self {
        Setting { iterations: 10, substeps, linear_damping: 20.0, tuned: true, ..Self::pliant_default(threads) }
    }

    pub fn local_global(iterations: u32, threads: usize) -> Self {
        Setting { solver: Solver::LocalGlobal, iterations, ..Self::pliant_default(threads) }
    }

    /// rapier at its default integration parameters (4 solver iterations), no damping.
    pub fn rapier_default(solver: Solver, threads: usize) -> Self {
        let iterations = PhysicsWorld::new().integration_parameters.num_solver_iterations as u32;
        Setting { solver, iterations, substeps: 1, linear_damping: 0.0, tuned: false, threads }
    }

    pub fn rapier(solver: Solver, iterations: u32, linear_damping: f32, threads: usize) -> Self {
        Setting { iterations, linear_damping, ..Self::rapier_default(solver, threads) }
    }

    /// The setting in words, for the table.
    pub fn describe(&self) -> String {
        let damping =
            if self.linear_damping > 0.0 { format!(", damping {}/s", self.linear_damping) } else { String::new() };
        match self.solver {
            Solver::Vbd => {
                let tuned = if self.tuned { ", beam tuning" } else { "" };
                format!("VBD {} × {} sweeps{tuned}{damping}", self.substeps, self.iterations)
            }
            Solver::LocalGlobal => format!("local–global {} iterations{damping}", self.iterations),
            Solver::RapierConstraints | Solver::RapierFem => {
                format!("{} {} iterations{damping}", self.solver.name(), self.iterations)
            }
        }
    }

    /// Iterations a frame, for ns per vertex-iteration.
    pub fn iterations_per_frame(&self) -> u32 {
        self.iterations.max(1) * self.substeps.max(1)
    }
}

/// A body of either engine, as far as the measurements need.
#[allow(clippy::large_enum_variant)]
pub enum Sim {
    Pliant {
        world: Box<World>,
        coupling: RapierCoupling,
        body: SoftBodyHandle,
        bodies: RigidBodySet,
        colliders: ColliderSet,
        fallbacks: u32,
    },
    Rapier {
        physics: Box<PhysicsWorld>,
        body: pliant::rapier::rapier3d::prelude::SoftBodyHandle,
    },
}

impl Sim {
    pub fn step(&mut self) {
        match self {
            Sim::Pliant { world, coupling, bodies, colliders, fallbacks, .. } => {
                let report = coupling.step(world, bodies, colliders, &());
                *fallbacks += report.fallbacks;
            }
            Sim::Rapier { physics, .. } => physics.step(),
        }
    }

    pub fn positions(&self) -> Vec<Vec3> {
        match self {
            Sim::Pliant { world, body, .. } => {
                world.body_positions(*body).unwrap_or(&[]).iter().map(|p| p.truncate()).collect()
            }
            Sim::Rapier { physics, body } => physics.soft_bodies[*body].particle_positions().collect(),
        }
    }

    pub fn velocities(&self) -> Vec<Vec3> {
        match self {
            Sim::Pliant { world, body, .. } => {
                world.body_velocities(*body).unwrap_or(&[]).iter().map(|p| p.truncate()).collect()
            }
            Sim::Rapier { physics, body } => physics.soft_bodies[*body].particle_velocities().collect(),
        }
    }

    /// The body's kinetic energy with the engine's own vertex masses [J].
    pub fn kinetic_energy(&self) -> f64 {
        let masses: Vec<f64> = match self {
            // One body per world here, so the world's masses are the body's.
            Sim::Pliant { world, .. } => world.vertex_masses().iter().map(|&m| m as f64).collect(),
            Sim::Rapier { physics, body } => {
                physics.soft_bodies[*body].particles().iter().map(|p| p.mass() as f64).collect()
            }
        };
        let v = self.velocities();
        v.iter().zip(&masses).map(|(v, m)| 0.5 * m * v.length_squared() as f64).sum()
    }

    /// Rest positions and tets (for the static solve of this engine's own mesh).
    pub fn mesh(&self) -> (Vec<Vec3>, Vec<[u32; 4]>) {
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

    /// Fast steps Pliant redid with its fallback (0 for rapier, which has none).
    pub fn fallbacks(&self) -> u32 {
        match self {
            Sim::Pliant { fallbacks, .. } => *fallbacks,
            Sim::Rapier { .. } => 0,
        }
    }
}

fn pliant_config(s: &Setting, gravity: Vec3) -> StepConfig {
    let mut config = StepConfig {
        dt: DT,
        gravity,
        substeps: s.substeps,
        iterations: s.iterations,
        threads: s.threads,
        // Factors built before the first step, so the timing and the result do not depend on
        // how fast a background build ran (the first step is not timed either way).
        local_global: LocalGlobalSettings { iterations: s.iterations, wait_for_factor: true },
        ..StepConfig::default()
    };
    if s.tuned {
        config.chebyshev_rho = Some(0.95);
        config.initialization = Initialization::Inertia;
    }
    config
}

fn pliant_sim(
    s: &Setting,
    gravity: Vec3,
    body: pliant::SoftBodyBuilder,
    colliders: ColliderSet,
) -> Result<Sim, Box<dyn std::error::Error>> {
    let mut world = World::new(pliant_config(s, gravity))?;
    let solver = if s.solver == Solver::LocalGlobal { SolverChoice::LocalGlobal } else { SolverChoice::Vbd };
    let body = world.bodies.insert(body.linear_damping(s.linear_damping).solver(solver).build()?);
    world.sync();
    Ok(Sim::Pliant {
        world: Box::new(world),
        coupling: RapierCoupling::default(),
        body,
        bodies: RigidBodySet::new(),
        colliders,
        fallbacks: 0,
    })
}

fn rapier_sim(
    s: &Setting,
    gravity: Vec3,
    colliders: Vec<pliant::rapier::rapier3d::prelude::Collider>,
    body: RapierSoftBuilder,
) -> Sim {
    let mut physics = Box::new(PhysicsWorld::new());
    physics.integration_parameters.dt = DT;
    physics.integration_parameters.num_solver_iterations = s.iterations.max(1) as usize;
    physics.gravity = gravity;
    for c in colliders {
        physics.colliders.insert(c);
    }
    let solver = if s.solver == Solver::RapierFem { SoftBodySolver::Fem } else { SoftBodySolver::Constraints };
    let body = physics.insert_soft_body(
        body.cell_model(SoftBodyCellModel::NeoHookean)
            .solver(solver)
            .particle_radius(CONTACT_OFFSET)
            .linear_damping(s.linear_damping)
            .can_sleep(false),
    );
    Sim::Rapier { physics, body }
}

/// rapier's particles given the lumped masses Pliant and the static solve use (ρV/4 of each
/// cell at each of its corners) instead of `mass(total)`'s equal shares: on the cantilever the
/// equal shares put more weight towards the tip than the static solve of the same mesh carries.
fn lumped_masses(mut builder: RapierSoftBuilder) -> RapierSoftBuilder {
    let mut masses = vec![0.0f32; builder.positions.len()];
    for c in &builder.cells {
        let [a, b, cc, d] = c.map(|i| builder.positions[i as usize]);
        let volume = ((b - a).dot((cc - a).cross(d - a)) / 6.0).abs();
        for &i in c {
            masses[i as usize] += DENSITY * volume / 4.0;
        }
    }
    builder.masses = masses;
    builder
}

fn rapier_material(young: f32, poisson: f32) -> SoftBodyMaterial {
    SoftBodyMaterial { young_modulus: young, poisson_ratio: poisson, ..SoftBodyMaterial::default() }
}

const GRAVITY: Vec3 = Vec3::new(0.0, -9.81, 0.0);

/// The cantilever at `cells` for either engine.
pub fn cantilever(s: &Setting, cells: [u32; 3]) -> Result<Sim, Box<dyn std::error::Error>> {
    let (young, poisson) = (1.2e8f32, 0.0f32);
    let (l, h) = (2.0f32, 0.2f32);
    if s.solver.is_pliant() {
        let mesh = TetMesh::beam(l, h, h, cells, TetSplit::Six)?;
        let clamp: Vec<u32> =
            (0..mesh.vertex_count() as u32).filter(|&i| mesh.positions()[i as usize].x < 1e-6).collect();
        let body = pliant::SoftBodyBuilder::tetrahedral(mesh)
            .material(StableNeoHookean::from_young_poisson(young as f64, poisson as f64))
            .density(DENSITY as f64)
            .pinned(&clamp);
        pliant_sim(s, GRAVITY, body, ColliderSet::new())
    } else {
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
        let builder = lumped_masses(builder.material(rapier_material(young, poisson)).pinned_particles(clamp));
        Ok(rapier_sim(s, GRAVITY, Vec::new(), builder))
    }
}

fn ground() -> pliant::rapier::rapier3d::prelude::Collider {
    ColliderBuilder::cuboid(2.0, 0.1, 2.0).translation(Vec3::new(0.0, -0.1, 0.0)).build()
}

/// The drop cube at `cells`³ for either engine.
pub fn drop_cube(s: &Setting, cells: u32) -> Result<Sim, Box<dyn std::error::Error>> {
    let centre = Vec3::new(0.0, 0.3 + DROP_EDGE / 2.0, 0.0);
    if s.solver.is_pliant() {
        let mesh = TetMesh::box_mesh(Vec3::splat(DROP_EDGE), [cells; 3], TetSplit::Six)?;
        let body = pliant::SoftBodyBuilder::tetrahedral(mesh)
            .material(StableNeoHookean::from_young_poisson(DROP_YOUNG as f64, DROP_POISSON as f64))
            .density(DENSITY as f64)
            .self_collision(false)
            .translation(centre);
        let mut colliders = ColliderSet::new();
        colliders.insert(ground());
        pliant_sim(s, GRAVITY, body, colliders)
    } else {
        let n = cells as usize + 1;
        let builder = lumped_masses(
            RapierSoftBuilder::cuboid(centre, Vec3::splat(DROP_EDGE / 2.0), n, n, n)
                .material(rapier_material(DROP_YOUNG, DROP_POISSON)),
        );
        Ok(rapier_sim(s, GRAVITY, vec![ground()], builder))
    }
}

/// The projectile for either engine; also returns the wall's far face x [m].
pub fn projectile(s: &Setting) -> Result<(Sim, f32), Box<dyn std::error::Error>> {
    let (edge, speed, wall_x) = (0.05f32, 60.0f32, 1.5f32);
    let wall = || ColliderBuilder::cuboid(0.01, 1.0, 1.0).translation(Vec3::new(wall_x, 0.0, 0.0)).build();
    if s.solver.is_pliant() {
        let mesh = TetMesh::box_mesh(Vec3::splat(edge), [4, 4, 4], TetSplit::Six)?;
        let body = pliant::SoftBodyBuilder::tetrahedral(mesh)
            .material(StableNeoHookean::from_young_poisson(1e6, 0.3))
            .density(DENSITY as f64)
            .velocity(Vec3::new(speed, 0.0, 0.0));
        let mut colliders = ColliderSet::new();
        colliders.insert(wall());
        Ok((pliant_sim(s, Vec3::ZERO, body, colliders)?, wall_x + 0.01))
    } else {
        let builder = lumped_masses(
            RapierSoftBuilder::cuboid(Vec3::ZERO, Vec3::splat(edge / 2.0), 5, 5, 5).material(rapier_material(1e6, 0.3)),
        );
        let mut sim = rapier_sim(s, Vec3::ZERO, vec![wall()], builder);
        if let Sim::Rapier { physics, body } = &mut sim {
            for i in 0..physics.soft_bodies[*body].num_particles() {
                physics.soft_bodies[*body].set_particle_velocity(i, Vec3::new(speed, 0.0, 0.0));
            }
        }
        Ok((sim, wall_x + 0.01))
    }
}

/// One measured run.
#[derive(Clone, Debug)]
pub struct Row {
    pub scene: String,
    pub setting: Setting,
    pub vertices: usize,
    pub elements: usize,
    pub frames: u32,
    pub ms_per_step: f64,
    pub metrics: Vec<(&'static str, f64)>,
    /// Why the row is in a table ("default", "equal cost to …"); empty for a plain sweep row.
    pub role: String,
    pub note: String,
}

impl Row {
    pub fn metric(&self, name: &str) -> f64 {
        self.metrics.iter().find(|(k, _)| *k == name).map_or(f64::NAN, |(_, v)| *v)
    }

    pub fn ns_per_vertex_iteration(&self) -> f64 {
        self.ms_per_step * 1e6 / (self.vertices as f64 * self.setting.iterations_per_frame() as f64)
    }

    /// Whether the run covered every frame (a run cut at its time cap has no settled metrics).
    pub fn complete(&self, frames: u32) -> bool {
        self.frames == frames
    }

    pub fn json(&self, bench: &str) -> String {
        let s = &self.setting;
        let mut line = format!(
            "{{\"bench\":\"{bench}\",\"scene\":\"{}\",\"engine\":\"{}\",\"solver\":\"{}\",\"backend\":\"cpu\",\"threads\":{},\"vertices\":{},\"elements\":{},\"iterations\":{},\"substeps\":{},\"linear_damping\":{},\"frames\":{},\"ms_per_step\":{:.4},\"ns_per_vertex_iteration\":{:.1}",
            self.scene,
            s.solver.engine(),
            s.solver.name(),
            s.threads,
            self.vertices,
            self.elements,
            s.iterations,
            s.substeps,
            s.linear_damping,
            self.frames,
            self.ms_per_step,
            self.ns_per_vertex_iteration()
        );
        for (k, v) in &self.metrics {
            line += &format!(",\"{k}\":{v:.6e}");
        }
        if !self.role.is_empty() {
            line += &format!(",\"role\":\"{}\"", self.role);
        }
        if !self.note.is_empty() {
            line += &format!(",\"note\":\"{}\"", self.note);
        }
        line + "}"
    }

    /// One line for a terminal.
    pub fn line(&self) -> String {
        let metrics: Vec<String> = self.metrics.iter().map(|(k, v)| format!("{k} {v:.4e}")).collect();
        format!(
            "{:<20} {:<44} {:>2} thr {:>6} v {:>9.3} ms/step  {}{}{}",
            self.scene,
            self.setting.describe(),
            self.setting.threads,
            self.vertices,
            self.ms_per_step,
            metrics.join(", "),
            if self.role.is_empty() { String::new() } else { format!("  [{}]", self.role) },
            if self.note.is_empty() { String::new() } else { format!("  ({})", self.note) }
        )
    }
}

/// Steps `sim` for up to `frames` frames or until `max_seconds` of wall time have passed,
/// calling `each` after every frame; returns (frames done, ms per step). The first frame is
/// stepped but not timed (it builds caches, and a local–global factor).
pub fn run(
    sim: &mut Sim,
    frames: u32,
    max_seconds: f64,
    threads: usize,
    each: impl FnMut(u32, &Sim) + Send,
) -> (u32, f64) {
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
        if f > 0 {
            stepping += s.elapsed().as_secs_f64();
        }
        done = f + 1;
        each(f, sim);
        if t0.elapsed().as_secs_f64() > max_seconds {
            break;
        }
    }
    // A run cut after its first frame timed nothing: it reads as infinitely slow, not free.
    if done < 2 { (done, f64::INFINITY) } else { (done, stepping * 1e3 / (done - 1) as f64) }
}

fn cut_note(done: u32, frames: u32) -> String {
    if done < frames { format!("stopped at the time cap after {done} of {frames} frames") } else { String::new() }
}

/// The static tip of a cantilever mesh, cached by vertex count and engine family (the two
/// engines mesh the beam differently).
pub struct StaticCache {
    entries: Vec<(String, f64)>,
}

impl StaticCache {
    pub fn new() -> Self {
        StaticCache { entries: Vec::new() }
    }

    fn get(&mut self, key: String, solve: impl FnOnce() -> f64) -> f64 {
        if let Some((_, v)) = self.entries.iter().find(|(k, _)| *k == key) {
            return *v;
        }
        let v = solve();
        self.entries.push((key, v));
        v
    }
}

impl Default for StaticCache {
    fn default() -> Self {
        Self::new()
    }
}

/// Runs the cantilever at `cells` with `s` and measures it.
pub fn measure_cantilever(
    s: &Setting,
    cells: [u32; 3],
    max_seconds: f64,
    statics: &mut StaticCache,
) -> Result<Row, Box<dyn std::error::Error>> {
    let mut sim = cantilever(s, cells)?;
    let (rest, tets) = sim.mesh();
    let key = format!("cantilever {} {} {}", s.solver.is_pliant(), rest.len(), tets.len());
    let stat = statics.get(key, || {
        let (tip, residual) =
            static_solve::cantilever_tip_of_mesh(rest.iter().map(|p| p.as_dvec3()).collect(), tets.clone());
        assert!(residual < 1e-8, "static solve did not converge: {residual}");
        tip
    });
    let rest0 = sim.positions();
    let tip: Vec<usize> = (0..rest0.len()).filter(|&i| rest0[i].x > 2.0 - 1e-4).collect();
    let frames = CANTILEVER_FRAMES;
    let mut history = Vec::new();
    let (done, ms) = run(&mut sim, frames, max_seconds, s.threads, |_, sim| {
        let p = sim.positions();
        history.push(-tip.iter().map(|&i| (p[i].y - rest0[i].y) as f64).sum::<f64>() / tip.len() as f64);
    });
    let last = &history[history.len().saturating_sub(60)..];
    let mean = last.iter().sum::<f64>() / last.len().max(1) as f64;
    let hi = last.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lo = last.iter().cloned().fold(f64::INFINITY, f64::min);
    let worst = worst_error(last, stat);
    Ok(Row {
        scene: format!("cantilever_{}x{}x{}", cells[0], cells[1], cells[2]),
        setting: *s,
        vertices: rest.len(),
        elements: tets.len(),
        frames: done,
        ms_per_step: ms,
        metrics: vec![
            ("tip_deflection_m", mean),
            ("static_tip_m", stat),
            ("error_vs_static", mean / stat - 1.0),
            ("error_vs_euler_bernoulli", mean / EULER_BERNOULLI - 1.0),
            ("tip_motion_m", hi - lo),
            ("worst_error_vs_static", worst),
            ("fallbacks", sim.fallbacks() as f64),
        ],
        role: String::new(),
        note: cut_note(done, frames),
    })
}

/// The largest |value − reference| / reference over `values`; infinite if any value is not
/// finite (`f64::max` would pass over a NaN, and a run that blew up would score best).
fn worst_error(values: &[f64], reference: f64) -> f64 {
    if values.iter().all(|v| v.is_finite()) {
        values.iter().map(|d| (d - reference).abs()).fold(0.0, f64::max) / reference
    } else {
        f64::INFINITY
    }
}

/// The static shortening of a cube mesh resting on its bottom face, held there: L minus the
/// height between the mean y of the top and bottom faces [m].
fn static_shortening(rest: &[Vec3], tets: &[[u32; 4]]) -> f64 {
    let rest: Vec<DVec3> = rest.iter().map(|p| p.as_dvec3()).collect();
    let lo = rest.iter().map(|p| p.y).fold(f64::INFINITY, f64::min);
    let problem = static_solve::StaticProblem {
        pinned: rest.iter().map(|p| p.y < lo + 1e-6).collect(),
        tets: tets.to_vec(),
        rest: rest.clone(),
        material: StableNeoHookean::from_young_poisson(DROP_YOUNG as f64, DROP_POISSON as f64).into(),
        density: DENSITY as f64,
        parts: vec![],
        gravity: GRAVITY.as_dvec3(),
        planes: vec![],
        contact_stiffness: 1e7,
        contact_offset: CONTACT_OFFSET as f64,
    };
    let sol = problem.solve(None);
    assert!(sol.relative_residual < 1e-8, "static solve did not converge: {}", sol.relative_residual);
    DROP_EDGE as f64 - Faces::of(&rest).height(|i| sol.positions[i].y)
}

/// The vertices on the rest shape's top and bottom faces, in index order.
struct Faces {
    top: Vec<usize>,
    bottom: Vec<usize>,
}

impl Faces {
    fn of(rest: &[DVec3]) -> Self {
        let lo = rest.iter().map(|p| p.y).fold(f64::INFINITY, f64::min);
        let hi = rest.iter().map(|p| p.y).fold(f64::NEG_INFINITY, f64::max);
        let pick = |keep: &dyn Fn(f64) -> bool| (0..rest.len()).filter(|&i| keep(rest[i].y)).collect();
        Faces { top: pick(&|y| y > hi - 1e-6), bottom: pick(&|y| y < lo + 1e-6) }
    }

    /// Height between the mean y (`y(i)` of vertex `i`) of the top face and the bottom face.
    fn height(&self, y: impl Fn(usize) -> f64) -> f64 {
        let mean = |face: &[usize]| face.iter().map(|&i| y(i)).sum::<f64>() / face.len() as f64;
        mean(&self.top) - mean(&self.bottom)
    }
}

/// Runs the drop cube at `cells`³ with `s` and measures it.
pub fn measure_drop_cube(
    s: &Setting,
    cells: u32,
    max_seconds: f64,
    statics: &mut StaticCache,
) -> Result<Row, Box<dyn std::error::Error>> {
    let mut sim = drop_cube(s, cells)?;
    let (rest, tets) = sim.mesh();
    let key = format!("drop_cube {} {} {}", s.solver.is_pliant(), rest.len(), tets.len());
    let stat = statics.get(key, || static_shortening(&rest, &tets));
    let faces = Faces::of(&rest.iter().map(|p| p.as_dvec3()).collect::<Vec<_>>());
    let frames = DROP_FRAMES;
    let (mut deepest, mut below, mut shortening, mut speeds) = (f64::INFINITY, 0u32, Vec::new(), Vec::new());
    let (done, ms) = run(&mut sim, frames, max_seconds, s.threads, |_, sim| {
        let p = sim.positions();
        let low = p.iter().map(|p| p.y as f64).fold(f64::INFINITY, f64::min);
        deepest = deepest.min(low);
        below += (low < 0.0) as u32;
        shortening.push(DROP_EDGE as f64 - faces.height(|i| p[i].y as f64));
        speeds.push(sim.velocities().iter().map(|v| v.length() as f64).fold(0.0, f64::max));
    });
    let last = &shortening[shortening.len().saturating_sub(30)..];
    let mean = last.iter().sum::<f64>() / last.len().max(1) as f64;
    let worst = worst_error(last, stat);
    let analytic = DENSITY as f64 * 9.81 * (DROP_EDGE as f64).powi(2) / (2.0 * DROP_YOUNG as f64);
    let gap = sim.positions().iter().map(|p| p.y as f64).fold(f64::INFINITY, f64::min);
    let end_speed = speeds[speeds.len().saturating_sub(30)..].iter().cloned().fold(0.0, f64::max);
    Ok(Row {
        scene: format!("drop_cube_{cells}^3"),
        setting: *s,
        vertices: rest.len(),
        elements: tets.len(),
        frames: done,
        ms_per_step: ms,
        metrics: vec![
            ("shortening_m", mean),
            ("static_shortening_m", stat),
            ("error_vs_static", mean / stat - 1.0),
            ("error_vs_analytic", mean / analytic - 1.0),
            ("worst_shape_error", worst),
            ("ground_penetration_m", (-deepest).max(0.0)),
            ("frames_below_ground", below as f64),
            ("rest_gap_m", gap),
            ("end_max_speed_m_s", end_speed),
            ("end_kinetic_energy_j", sim.kinetic_energy()),
            ("fallbacks", sim.fallbacks() as f64),
        ],
        role: String::new(),
        note: cut_note(done, frames),
    })
}

/// Runs the projectile with `s` and measures it.
pub fn measure_projectile(s: &Setting, max_seconds: f64) -> Result<Row, Box<dyn std::error::Error>> {
    let (mut sim, far_side) = projectile(s)?;
    let (rest, tets) = sim.mesh();
    let frames = 60;
    let mut tunnelled = false;
    let (done, ms) = run(&mut sim, frames, max_seconds, s.threads, |_, sim| {
        tunnelled |= sim.positions().iter().any(|p| p.x > far_side);
    });
    let front = sim.positions().iter().map(|p| p.x as f64).fold(f64::NEG_INFINITY, f64::max);
    Ok(Row {
        scene: "projectile_60mps".into(),
        setting: *s,
        vertices: rest.len(),
        elements: tets.len(),
        frames: done,
        ms_per_step: ms,
        metrics: vec![
            ("tunnelled", tunnelled as u32 as f64),
            ("front_x_m", front),
            ("fallbacks", sim.fallbacks() as f64),
        ],
        role: String::new(),
        note: cut_note(done, frames),
    })
}

/// rapier's constraints solver at each of `iterations` without damping and at each of `damped`
/// with linear damping 2/s, then its FEM solver at its default: the rapier settings a scene tries.
pub fn rapier_settings(iterations: &[u32], damped: &[u32], threads: usize) -> Vec<Setting> {
    let constraints = |n: u32, damping: f32| Setting::rapier(Solver::RapierConstraints, n, damping, threads);
    let mut out: Vec<Setting> = iterations.iter().map(|&n| constraints(n, 0.0)).collect();
    out.extend(damped.iter().map(|&n| constraints(n, 2.0)));
    out.push(Setting::rapier_default(Solver::RapierFem, threads));
    out
}

/// The row of `rows` that ran `setting`, given `role`.
pub fn pick(rows: &[Row], setting: &Setting, role: &str) -> Row {
    let mut r = rows.iter().find(|r| r.setting == *setting).expect("the setting was run").clone();
    r.role = role.to_string();
    r
}

/// The accuracy a scene's comparisons read (smaller is better): the cantilever's and the drop
/// cube's worst error against the static solve of the engine's own mesh over the end of the run.
pub fn accuracy(row: &Row) -> f64 {
    let a = if row.scene.starts_with("cantilever") {
        row.metric("worst_error_vs_static")
    } else {
        row.metric("worst_shape_error")
    };
    if a.is_nan() { f64::INFINITY } else { a }
}

/// A drop-cube row must also keep out of the ground where the reference does.
fn keeps_out(row: &Row, reference: &Row) -> bool {
    !row.scene.starts_with("drop_cube")
        || row.metric("ground_penetration_m")
            <= reference.metric("ground_penetration_m").max(CONTACT_OFFSET as f64 * 0.1)
}

/// The comparisons of one scene: for each reference row, the other engine's setting nearest to
/// it in cost, and its cheapest setting that is at least as accurate. `rows` holds every
/// setting tried of both engines on the same scene; rows cut at their time cap take part in
/// neither. Returns the picked rows, each with its role.
pub fn comparisons(rows: &[Row], references: &[(&Row, &str)], frames: u32) -> Vec<Row> {
    let mut out = Vec::new();
    for &(reference, name) in references {
        let others: Vec<&Row> = rows
            .iter()
            .filter(|r| r.setting.solver.is_pliant() != reference.setting.solver.is_pliant() && r.complete(frames))
            .collect();
        let other_engine = if reference.setting.solver.is_pliant() { "rapier" } else { "Pliant" };
        let nearest = others.iter().min_by(|a, b| {
            let d = |r: &Row| (r.ms_per_step / reference.ms_per_step).ln().abs();
            d(a).total_cmp(&d(b))
        });
        if let Some(r) = nearest {
            let mut r = (*r).clone();
            r.role = format!("{other_engine} at equal cost to {name}");
            out.push(r);
        }
        let target = accuracy(reference);
        let cheapest = others
            .iter()
            .filter(|r| accuracy(r) <= target && keeps_out(r, reference))
            .min_by(|a, b| a.ms_per_step.total_cmp(&b.ms_per_step));
        match cheapest {
            Some(r) => {
                let mut r = (*r).clone();
                r.role = format!("{other_engine}'s cheapest as accurate as {name}");
                out.push(r);
            }
            None => {
                let best = others.iter().min_by(|a, b| accuracy(a).total_cmp(&accuracy(b)));
                if let Some(r) = best {
                    let mut r = (*r).clone();
                    r.role = format!("{other_engine}'s most accurate tried: none as accurate as {name}");
                    out.push(r);
                }
            }
        }
    }
    out
}
