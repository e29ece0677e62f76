//! The GPU's fallback: an augmented-Lagrangian redo of an unsafe substep, recorded into every
//! substep after the safety check and run on the device only when the GPU decides so
//! (`al_gate`: the check failed, a hold is on, or the policy is `always`), with no round trip
//! to the host. The seed starts the AL from the substep's start with the fast path's result as
//! its first targets (`al_commit`), [`AlStepProgram`] runs the step, and the commit writes its
//! answer with the travelled velocity, as `runtime::fallback`'s `redo_island` does on the CPU.
//! The host only hears of it in the frame's readback (the bodies' rollback words, marked
//! `al_gate::REDONE`).
//!
//! The whole packed world is redone together (the guard's rollback already treats an unsafe
//! substep as the world's: a body redone alone could meet a neighbour that moved into its
//! place), against the step's obstacles and, where the scene has surface contact, its surface
//! pairs (body–body and self contact: [`crate::gpu::al::surface_pairs`], on the fast path's trees).

use glam::{DVec3, Vec4};

use crate::gpu::GpuContext;
use crate::gpu::al::al_commit::{AlCommit, AlCommitBuffers};
use crate::gpu::al::al_elements::AlElementLayout;
use crate::gpu::al::al_gate::{AlGate, AlGateBuffers, RUN_ARGS};
use crate::gpu::al::al_pcg::{
    self, AlPair, AlPairLayout, ONE_WORKGROUP_VERTICES, VECTOR_REGIONS, VERTEX_MOVES, VERTEX_SOLVED, element_words,
    obstacle_table_adjacency, scalar_words,
};
use crate::gpu::al::al_step_size::time_words;
use crate::gpu::al::newton::{AlNewtonBuffers, AlNewtonSetup};
use crate::gpu::al::step::{AlStepBuffers, AlStepProgram, AlStepSurface};
use crate::gpu::al::surface_pairs::AlSurfaceSource;
use crate::gpu::al::{al_merit, al_outer, al_search};
use crate::gpu::buffers::{control_words, output, storage};
use crate::gpu::kernel::Bound;
use crate::gpu::obstacles::GpuObstacleSet;
use crate::gpu::pack::{IndexLayout, RecordLayout};
use crate::solver::Integrator;
use crate::solver::al::AlSettings;
use crate::solver::al::first_penalty;
use crate::solver::al::problem::Problem;
use crate::state::{SimState, VERTEX_KINEMATIC};

/// Outer iterations, Newton iterations per subproblem and PCG iterations per Newton step the
/// GPU's fallback records in every substep. Every one is recorded whether it runs or not (the
/// GPU ends the step early by zeroing dispatch arguments), so the caps bound the host's cost
/// of recording a substep and the GPU's cost of its empty dispatches (`bench_gpu_fallback`
/// on an H200: 0.1 ms of recording and 1.3–1.8 ms idle a frame at 8 outer iterations where
/// each Newton solve and search runs in one workgroup, up to `al_pcg::ONE_WORKGROUP_VERTICES`;
/// before that path existed, ~1.6 ms and ~130 ms, which is what every PCG iteration as five
/// dispatches costs), not only the work of a step that runs; the CPU's caps (50, 8, 2000)
/// would record ~4·10⁶ dispatches that way. The outer cap is two above the CPU's `K_min` for
/// cloth and friction (6: the first iterates weigh 1 until then), so such a step can still
/// end converged. A step the
/// caps cut short still answers with an intersection-free iterate (every iterate is), having
/// travelled part of the way: with 40 PCG iterations the clamped 1e9 Pa beam of
/// `tests/fallback.rs` sagged 7.5 cm and swung; with 200 it holds within 0.2–0.4 mm of its
/// clamp's height (`bench_gpu_fallback`).
pub const GPU_CAPS: [u32; 3] = [8, 3, 200];

/// What the GPU's fallback is bound with besides its buffers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuFallbackSettings {
    /// The AL's settings (its caps replaced by [`GPU_CAPS`]).
    pub al: AlSettings,
    /// Substeps the fallback stays on after a failure (hysteresis).
    pub hold_substeps: u32,
    /// Every substep is redone (`FallbackPolicy::Always`).
    pub always: bool,
}

/// The step's buffers the fallback reads and writes.
pub struct GpuFallbackBuffers<'a> {
    /// `SimState::positions` (vec4): the fast path's result in, the answer out.
    pub positions: &'a wgpu::Buffer,
    /// `SimState::velocities` (vec4).
    pub velocities: &'a wgpu::Buffer,
    /// `SimState::accelerations` (vec4).
    pub accelerations: &'a wgpu::Buffer,
    /// `SimState::flags`.
    pub flags: &'a wgpu::Buffer,
    /// The substep's per-vertex steps (start, inertia).
    pub steps: &'a wgpu::Buffer,
    /// The packed index.
    pub index: &'a wgpu::Buffer,
    /// The state's tets.
    pub tets: &'a wgpu::Buffer,
    /// The packed records.
    pub records: &'a wgpu::Buffer,
    /// The guard's per-body words (`step_guard`), read and marked.
    pub bad: &'a wgpu::Buffer,
    /// `al_gate`'s control words (kept across substeps: the hold and the counters).
    pub gate: &'a wgpu::Buffer,
}

/// The packed state's layout and the substep's constants.
pub struct GpuFallbackSetup<'a> {
    /// The packed state (tables, flags, masses; positions for the first penalty).
    pub st: &'a SimState,
    /// Where the adjacencies are in the packed index.
    pub index: &'a IndexLayout,
    /// Where the bodies, triangles and hinges are in the packed records.
    pub records: &'a RecordLayout,
    /// The step's obstacles (static).
    pub obstacles: &'a GpuObstacleSet,
    /// Substep length \[s\].
    pub h: f32,
    /// The time integrator (its inertia weight sets the first penalty).
    pub integrator: Integrator,
    /// The fast path's surface and trees, where the scene has surface contact.
    pub surface: Option<AlSurfaceSource<'a>>,
}

/// The fallback, bound: its dispatches and the buffers only it uses.
pub struct GpuFallback {
    gate: Bound,
    seed: Bound,
    commit: Bound,
    report: Bound,
    step: AlStepProgram,
}

impl GpuFallback {
    /// Binds the fallback over the packed state `s.st`.
    pub fn bind(
        ctx: &GpuContext,
        s: &GpuFallbackSetup<'_>,
        settings: &GpuFallbackSettings,
        b: &GpuFallbackBuffers<'_>,
    ) -> Self {
        let st = s.st;
        let n = st.vertex_count();
        // Every vertex moves with the step; the free ones have unknowns.
        let free: Vec<bool> = (0..n).map(|v| st.flags[v] & VERTEX_KINEMATIC == 0).collect();
        let solved: Vec<u32> =
            free.iter().map(|&f| if f { VERTEX_SOLVED | VERTEX_MOVES } else { VERTEX_MOVES }).collect();
        let mu = Self::first_penalty(s, &free);
        let elements = AlElementLayout::new(st.tets.len(), st.tris.len(), st.hinges.len());
        let obstacles = s.obstacles.count();
        let surface = s.surface.map(|source| AlStepSurface { source, obstacles });
        // The vertex–obstacle table, then the surface slots.
        let slots = surface.as_ref().map_or(0, AlStepSurface::slots);
        let table = vec![AlPair::ABSENT; n * obstacles + slots];
        let pairs = AlPairLayout::new(&elements, table.len(), n);
        let element =
            storage(ctx, "al element", &element_words(&pairs, &table, &obstacle_table_adjacency(n, obstacles)), true);
        let items = n + st.tets.len() + st.tris.len() + st.hinges.len() + table.len();
        let solved = storage(ctx, "al solved", &solved, false);
        let vectors = output::<Vec4>(ctx, "al vectors", VECTOR_REGIONS * n);
        let scalars = output::<f32>(ctx, "al scalars", scalar_words(items));
        let pcg_control = control_words(ctx, "al_pcg control", al_pcg::CONTROL_WORDS);
        let search_control = control_words(ctx, "al_search control", al_search::CONTROL_WORDS);
        let outer_control = control_words(ctx, "al_outer control", al_outer::CONTROL_WORDS);
        // Until the first run, the step and its Newton iterations read as ended, so the idle
        // iterations' one-invocation phases do nothing.
        ctx.queue.write_buffer(&search_control, 0, bytemuck::cast_slice(&al_search::ended_control()));
        ctx.queue.write_buffer(&outer_control, 0, bytemuck::cast_slice(&al_outer::ended_control()));
        let merit_control = control_words(ctx, "al_merit control", al_merit::CONTROL_WORDS);
        let safe = output::<Vec4>(ctx, "al safe", n);
        let targets = output::<Vec4>(ctx, "al targets", n);
        let [outer, newton, cg] = GPU_CAPS;
        let al = AlSettings { max_iterations: outer, newton_iterations: newton, cg_iterations: cg, ..settings.al };
        let setup = AlNewtonSetup {
            vertices: n,
            index: s.index,
            records: s.records,
            elements: &elements,
            pairs: &pairs,
            pair_count: table.len(),
            static_slip: al.static_slip as f32,
            cg_tolerance: al.cg_tolerance as f32,
            cg_iterations: al.cg_iterations,
            force_tolerance: al.force_tolerance as f32,
            newton_iterations: al.newton_iterations,
            one_workgroup: n <= ONE_WORKGROUP_VERTICES,
        };
        // Iterates compare by merit where no kinematic vertex moves within the step, which the
        // GPU finds out each step (al_outer's pins phase).
        let comparable = true;
        let step = AlStepProgram::bind(
            ctx,
            &setup,
            &al,
            mu as f32,
            st.tets.len(),
            s.obstacles,
            comparable,
            surface.as_ref(),
            &AlStepBuffers {
                newton: AlNewtonBuffers {
                    positions: &targets,
                    steps: b.steps,
                    index: b.index,
                    tets: b.tets,
                    records: b.records,
                    element: &element,
                    solved: &solved,
                    vectors: &vectors,
                    scalars: &scalars,
                    pcg_control: &pcg_control,
                    control: &search_control,
                },
                safe: &safe,
                times: &output::<u32>(ctx, "al times", time_words(n)),
                outer_control: &outer_control,
                best: &output::<Vec4>(ctx, "al best", n),
                merit_control: &merit_control,
            },
        )
        .gated(b.gate, RUN_ARGS);
        let [gate, report] = AlGate::new(ctx).bind(
            ctx,
            st.bodies.len() as u32,
            n as u32,
            settings.hold_substeps,
            settings.always,
            comparable,
            &AlGateBuffers {
                bad: b.bad,
                control: b.gate,
                outer: &outer_control,
                scalars: &scalars,
                merit: &merit_control,
            },
        );
        let [seed, commit] = AlCommit::new(ctx).bind(
            ctx,
            n as u32,
            s.h,
            &AlCommitBuffers {
                safe: &safe,
                targets: &targets,
                positions: b.positions,
                velocities: b.velocities,
                accelerations: b.accelerations,
                flags: b.flags,
                steps: b.steps,
                solved: &solved,
            },
            (b.gate, RUN_ARGS),
        );
        Self { gate, seed, commit, report, step }
    }

    /// μ of the fallback's steps: the CPU's first penalty (0.1 · max diag ∇²E over the `free`
    /// vertices) at the
    /// positions the stepper was made from, computed once when the fallback is bound (the CPU
    /// computes it at each step's start; within the GPU's 8 outer iterations the stall rule can
    /// double it once where it is too small).
    fn first_penalty(s: &GpuFallbackSetup<'_>, free: &[bool]) -> f64 {
        let st = s.st;
        let weight = s.integrator.vertex_step(s.h, glam::Vec3A::ZERO, glam::Vec3A::ZERO).weight as f64;
        let x: Vec<DVec3> = st.positions.iter().map(|p| p.truncate().as_dvec3()).collect();
        let mut problem = Problem::new(st, free, |v| (st.masses[v] as f64 / weight, x[v]));
        first_penalty(&mut problem, st, &x, &mut Vec::new())
    }

    /// Records the fallback into `pass`, after the safety check has written the guard's words
    /// and before the guard's rollback: the gate, then (on the GPU's say-so) the seed, the AL
    /// step, the commit and the report of how the step went.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.gate.record(pass);
        self.seed.record(pass);
        self.step.record(pass);
        self.commit.record(pass);
        self.report.record(pass);
    }
}
