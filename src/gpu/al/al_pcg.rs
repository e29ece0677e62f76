//! Host side of `shaders/al/al_pcg.wgsl`: block-Jacobi PCG on the augmented-Lagrangian step's
//! Newton system, matrix-free over `al_elements`' records (the GPU twin of
//! `solver::linear::pcg` as the AL step calls it). A solve is recorded with its iteration cap;
//! the GPU stops it on convergence by zeroing the dispatch arguments of the iterations left.

use crate::gpu::GpuContext;
use crate::gpu::buffers::output;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use crate::gpu::pack::IndexLayout;
use bytemuck::{Pod, Zeroable};

use crate::gpu::al::al_elements::AlElementLayout;

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("al/al_pcg", "step", "workgroup_sum", "mat3", "friction", "al");

const PHASE_SETUP: u32 = 0;
const PHASE_APPLY: u32 = 1;
const PHASE_UPDATE: u32 = 2;
const PHASE_DIRECTION: u32 = 3;
const PHASE_REDUCE: u32 = 4;
/// The shader's entry point that runs a whole solve in one workgroup.
pub const WHOLE: &str = "whole";

/// Vertices up to which a solve runs in one workgroup ([`AlPcgSetup::one_workgroup`]) where
/// the caller lets the size decide (`gpu::al::newton`, for the search too): 64 invocations
/// then stride over at most 64 vertices per phase, while the five dispatches per iteration it
/// saves cost ~35 µs even when empty (on an H200).
pub const ONE_WORKGROUP_VERTICES: usize = 4096;

/// Regions of the `vectors` buffer, each one vec4 per vertex.
pub const VECTOR_REGIONS: usize = 9;
/// Region of the solution `d` (the Newton direction).
#[cfg(test)]
pub const REGION_DIRECTION: usize = 0;
/// Region of the gradient `∇` at the targets.
#[cfg(test)]
pub const REGION_GRADIENT: usize = 8;
/// Words of `control`: dispatch arguments (3), iterations, state.
pub const CONTROL_WORDS: usize = 5;
/// `control` word of the iterations taken.
#[cfg(test)]
pub const CONTROL_ITERATIONS: usize = 3;
/// `control` word of how the solve ended.
#[cfg(test)]
pub const CONTROL_STATE: usize = 4;

/// How a GPU solve ended (the `control` state word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg(test)]
pub enum PcgEnd {
    /// Still running (more iterations were needed than recorded).
    Running,
    /// `‖r‖ ≤ tolerance ‖b‖`.
    Converged,
    /// The iteration cap.
    Capped,
    /// The curvature along a search direction was not positive.
    NotCurved,
    /// `b = 0`.
    NoRightHandSide,
}

#[cfg(test)]
impl PcgEnd {
    /// The state word's meaning (`None` for a word no kernel writes).
    #[cfg(test)]
    pub fn decode(word: u32) -> Option<Self> {
        [Self::Running, Self::Converged, Self::Capped, Self::NotCurved, Self::NoRightHandSide]
            .get(word as usize)
            .copied()
    }
}

/// `scalars` word of the AL penalty μ \[N/m\].
#[cfg(test)]
pub const SCALAR_MU: usize = 6;
/// `scalars` word of the AL offset δ \[m\].
#[cfg(test)]
pub const SCALAR_DELTA: usize = 7;

/// Bit of a vertex's `solved` word: it has unknowns (`shaders/lib/step.wgsl`).
pub const VERTEX_SOLVED: u32 = 1;
/// Bit of a vertex's `solved` word: it moves with the step (solved, or kinematic with a target).
pub const VERTEX_MOVES: u32 = 2;

/// A pair's vertex slot that holds no vertex (an obstacle pair moves one).
pub const NO_VERTEX: u32 = u32::MAX;

/// An active pair of the AL step as `al_pcg` reads it (the GPU twin of
/// `solver::al::constraints::Constraint`): its term is evaluated at the targets from the
/// linearisation at the safe iterate.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct AlPair {
    /// Moving vertices ([`NO_VERTEX`] beyond an obstacle pair's first).
    pub vertices: [u32; 4],
    /// `∂d/∂x_k` at the safe iterate.
    pub gradient: [[f32; 3]; 4],
    /// The vertices' positions at the safe iterate.
    pub base: [[f32; 3]; 4],
    /// Closest-point weights (`P − Q = Σ w_k x_k`).
    pub weights: [f32; 4],
    /// The friction frame's normal.
    pub frame: [f32; 3],
    /// Distance at the safe iterate \[m\].
    pub distance: f32,
    /// Multiplier λ \[N\].
    pub lambda: f32,
    /// Weight γ.
    pub gamma: f32,
    /// Coulomb coefficient.
    pub friction: f32,
    /// Lagged normal force Λ \[N\].
    pub normal_force: f32,
    /// [`PAIR_POINT_TRIANGLE`], [`PAIR_EDGE_EDGE`] or [`PAIR_OBSTACLE`].
    pub kind: u32,
    /// The obstacle of a vertex–obstacle pair (its index in the step's obstacle set).
    pub obstacle: u32,
}

// The shaders read a pair as 42 words (lib/al.wgsl PAIR_WORDS).
const _: () = assert!(std::mem::size_of::<AlPair>() == 168);

impl AlPair {
    /// A slot of the vertex–obstacle table that holds no pair: every term it adds is zero.
    pub const ABSENT: Self = Self {
        vertices: [NO_VERTEX; 4],
        gradient: [[0.0; 3]; 4],
        base: [[0.0; 3]; 4],
        weights: [0.0; 4],
        frame: [0.0; 3],
        distance: 0.0,
        lambda: 0.0,
        gamma: 0.0,
        friction: 0.0,
        normal_force: 0.0,
        kind: PAIR_ABSENT,
        obstacle: 0,
    };
}

/// [`AlPair::kind`] of an absent slot (`shaders/lib/al.wgsl`).
pub const PAIR_ABSENT: u32 = 3;

/// The vertex–obstacle table's adjacency: vertex `v`'s pair with obstacle `o` lives in slot
/// `v · obstacles + o` whether present or not, so the rows never change as pairs join and
/// leave on the GPU ([`pair_adjacency`]'s layout).
pub fn obstacle_table_adjacency(vertices: usize, obstacles: usize) -> (Vec<u32>, Vec<u32>) {
    let offsets = (0..=vertices).map(|v| (v * obstacles) as u32).collect();
    let entries = (0..vertices * obstacles).map(|slot| (slot as u32) << 2).collect();
    (offsets, entries)
}

/// Where the pairs and their vertex adjacency go in the `element` buffer, after the elements'
/// records (u32 words).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AlPairLayout {
    /// First word of the pair records.
    pub pairs: u32,
    /// First word of the adjacency's `vertices + 1` row offsets.
    pub offsets: u32,
    /// First word of its entries (`pair << 2 | slot`).
    pub entries: u32,
    /// Words of the `element` buffer in all.
    pub words: u32,
}

impl AlPairLayout {
    /// Room for `pairs` pairs over `vertices` vertices after `elements`.
    pub fn new(elements: &AlElementLayout, pairs: usize, vertices: usize) -> Self {
        let words = std::mem::size_of::<AlPair>() as u32 / 4;
        let at = elements.words;
        let offsets = at + pairs as u32 * words;
        let entries = offsets + vertices as u32 + 1;
        Self { pairs: at, offsets, entries, words: entries + 4 * pairs as u32 }
    }
}

/// The vertex → pair adjacency of `pairs` over `vertices` vertices: row offsets and entries
/// `pair << 2 | slot`, each row in pair order (so gathers sum in a fixed order).
#[cfg(test)]
pub fn pair_adjacency(pairs: &[AlPair], vertices: usize) -> (Vec<u32>, Vec<u32>) {
    let mut offsets = vec![0u32; vertices + 1];
    let moving = |p: &AlPair| p.vertices.into_iter().enumerate().filter(|&(_, v)| v != NO_VERTEX);
    for p in pairs {
        moving(p).for_each(|(_, v)| offsets[v as usize + 1] += 1);
    }
    for v in 0..vertices {
        offsets[v + 1] += offsets[v];
    }
    let mut fill = offsets.clone();
    let mut entries = vec![0u32; offsets[vertices] as usize];
    for (i, p) in pairs.iter().enumerate() {
        for (slot, v) in moving(p) {
            entries[fill[v as usize] as usize] = (i as u32) << 2 | slot as u32;
            fill[v as usize] += 1;
        }
    }
    (offsets, entries)
}

/// The `element` buffer's first contents: room for the element records (filled by
/// `al_elements`), then `pairs` and their adjacency `(offsets, entries)` where `layout` puts
/// them.
pub fn element_words(layout: &AlPairLayout, pairs: &[AlPair], (offsets, entries): &(Vec<u32>, Vec<u32>)) -> Vec<u32> {
    let mut words = vec![0u32; layout.words as usize];
    let tail = bytemuck::cast_slice::<AlPair, u32>(pairs).iter().chain(offsets).chain(entries);
    words[layout.pairs as usize..].iter_mut().zip(tail).for_each(|(w, t)| *w = *t);
    words
}

/// Words of the `scalars` buffer for dispatches over at most `items` invocations: sixteen
/// scalars (`lib/al.wgsl`), then room for three partials per workgroup (`al_merit` sums three
/// values, the others two).
pub fn scalar_words(items: usize) -> usize {
    16 + 3 * (items as u32).div_ceil(WORKGROUP).max(1) as usize
}

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct Params {
    phase: u32,
    count: u32,
    groups: u32,
    after: u32,
    tet_offsets: u32,
    tet_entries: u32,
    tri_offsets: u32,
    tri_entries: u32,
    hinge_offsets: u32,
    hinge_entries: u32,
    tris_base: u32,
    hinges_base: u32,
    tolerance: f32,
    max_iterations: u32,
    pairs: u32,
    pair_offsets: u32,
    pair_entries: u32,
    static_slip: f32,
    force_tolerance: f32,
    _pad: u32,
}

/// What the kernel reads and writes.
pub struct AlPcgBuffers<'a> {
    /// The targets `x̂` (vec4).
    pub positions: &'a wgpu::Buffer,
    /// Per-vertex step records (`x^n`, inertia target and `m/w`).
    pub steps: &'a wgpu::Buffer,
    /// The packed index (element adjacencies).
    pub index: &'a wgpu::Buffer,
    /// `al_elements`' records, then the pairs and their adjacency ([`AlPairLayout`]).
    pub element: &'a wgpu::Buffer,
    /// [`VERTEX_SOLVED`] and [`VERTEX_MOVES`] bits per vertex (u32).
    pub solved: &'a wgpu::Buffer,
    /// [`VECTOR_REGIONS`] × vertices vec4, written.
    pub vectors: &'a wgpu::Buffer,
    /// [`scalar_words`] f32, written.
    pub scalars: &'a wgpu::Buffer,
    /// [`CONTROL_WORDS`] u32 with `INDIRECT` usage, written.
    pub control: &'a wgpu::Buffer,
}

/// What a solve needs besides its buffers.
pub struct AlPcgSetup<'a> {
    /// Vertices.
    pub vertices: usize,
    /// Where the adjacencies are in the index.
    pub index: &'a IndexLayout,
    /// Where the element records are.
    pub elements: &'a AlElementLayout,
    /// Where the pairs are.
    pub pairs: &'a AlPairLayout,
    /// Static friction slip `ε_v h` \[m\].
    pub static_slip: f32,
    /// Relative residual at which the solve stops.
    pub tolerance: f32,
    /// A right-hand side `‖∇L‖` at or below this \[N\] is solved by `d = 0` (the subproblem
    /// is solved).
    pub force_tolerance: f32,
    /// Iterations recorded (and the cap).
    pub max_iterations: u32,
    /// The whole solve in one dispatch of one workgroup (the shader's `whole` entry point) instead of five
    /// dispatches per iteration: for small systems, where the dispatches cost more than the
    /// arithmetic of one workgroup ([`ONE_WORKGROUP_VERTICES`]).
    pub one_workgroup: bool,
}

/// One bound solve: its phases, recorded as setup then `max_iterations` iterations, or the
/// one dispatch that runs it whole.
pub enum AlPcgSolve {
    /// A dispatch per phase.
    Phases {
        /// The setup and its decision.
        setup: Box<[Bound; 2]>,
        /// An iteration's five dispatches.
        iteration: Box<[Bound; 5]>,
        /// Iterations recorded.
        iterations: u32,
    },
    /// The whole solve in one workgroup.
    Whole(Bound),
}

impl AlPcgSolve {
    /// The same solve, its setup run only when the dispatch arguments in `gate` say so: the
    /// per-vertex setup's at byte `vertices`, its one-workgroup decision's at byte `one` (a
    /// Newton iteration that is not needed skips its solve; the iterations then find the
    /// solve ended).
    pub fn gated(self, gate: &wgpu::Buffer, vertices: u64, one: u64) -> Self {
        match self {
            Self::Phases { setup, iteration, iterations } => {
                let [setup, decide] = *setup;
                Self::Phases {
                    setup: Box::new([setup.indirect(gate, vertices), decide.indirect(gate, one)]),
                    iteration,
                    iterations,
                }
            }
            Self::Whole(solve) => Self::Whole(solve.indirect(gate, one)),
        }
    }

    /// Records the solve into `pass`.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        match self {
            Self::Phases { setup, iteration, iterations } => {
                setup.iter().for_each(|b| b.record(pass));
                for _ in 0..*iterations {
                    iteration.iter().for_each(|b| b.record(pass));
                }
            }
            Self::Whole(solve) => solve.record(pass),
        }
    }
}

/// The compiled kernel: its per-phase entry point and the whole solve's.
pub struct AlPcg {
    kernel: ComputeKernel,
    whole: ComputeKernel,
}

impl AlPcg {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self {
            kernel: ComputeKernel::new(ctx, "al_pcg", SHADER),
            whole: ComputeKernel::at(ctx, "al_pcg", SHADER, WHOLE),
        }
    }

    /// Binds a solve.
    pub fn bind(&self, ctx: &GpuContext, s: &AlPcgSetup<'_>, b: &AlPcgBuffers<'_>) -> AlPcgSolve {
        let n = s.vertices as u32;
        let groups = n.div_ceil(WORKGROUP).max(1);
        let base = Params {
            phase: PHASE_SETUP,
            count: n,
            groups,
            after: PHASE_SETUP,
            tet_offsets: s.index.tet_offsets,
            tet_entries: s.index.tet_entries,
            tri_offsets: s.index.tri_offsets,
            tri_entries: s.index.tri_entries,
            hinge_offsets: s.index.hinge_offsets,
            hinge_entries: s.index.hinge_entries,
            tris_base: s.elements.tris,
            hinges_base: s.elements.hinges,
            tolerance: s.tolerance,
            max_iterations: s.max_iterations,
            pairs: s.pairs.pairs,
            pair_offsets: s.pairs.offsets,
            pair_entries: s.pairs.entries,
            static_slip: s.static_slip,
            force_tolerance: s.force_tolerance,
            _pad: 0,
        };
        // A dispatch may not read its arguments from a buffer it binds for writing, so the
        // per-vertex phases, which never touch `control`, bind a stand-in in its place.
        let stand_in = output::<u32>(ctx, "al_pcg stand-in", CONTROL_WORDS);
        let buffers = [b.positions, b.steps, b.index, b.element, b.solved, b.vectors, b.scalars, b.control];
        let mut vertex_buffers = buffers;
        vertex_buffers[7] = &stand_in;
        let vertex_phase =
            |phase: u32| self.kernel.bind_pod(ctx, &Params { phase, ..base }, &vertex_buffers, groups * WORKGROUP);
        let reduce =
            |after: u32| self.kernel.bind_pod(ctx, &Params { phase: PHASE_REDUCE, after, ..base }, &buffers, 1);
        if s.one_workgroup {
            return AlPcgSolve::Whole(self.whole.bind_pod(ctx, &base, &buffers, 1));
        }
        let indirect = |phase: u32| vertex_phase(phase).indirect(b.control, 0);
        AlPcgSolve::Phases {
            setup: Box::new([vertex_phase(PHASE_SETUP), reduce(PHASE_SETUP)]),
            iteration: Box::new([
                indirect(PHASE_APPLY),
                reduce(PHASE_APPLY),
                indirect(PHASE_UPDATE),
                reduce(PHASE_UPDATE),
                indirect(PHASE_DIRECTION),
            ]),
            iterations: s.max_iterations,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::gpu::al::fixture::GpuPairs;
    use glam::{DMat3, DVec3, Vec4};

    use super::*;
    use crate::gpu::al::fixture::{DELTA, Device, Fixture, MU, STATIC_SLIP, fixture};
    use crate::gpu::buffers::read_blocking;
    use crate::gpu::test_support;
    use crate::solver::al::constraints::ActiveSet;
    use crate::solver::al::problem::NO_DOF;
    use crate::solver::linear::pcg;

    /// What a GPU solve left: the vectors' regions per vertex and the control words.
    struct Solve {
        n: usize,
        vectors: Vec<Vec4>,
        control: Vec<u32>,
    }

    impl Solve {
        fn region(&self, r: usize, v: usize) -> DVec3 {
            self.vectors[r * self.n + v].truncate().as_dvec3()
        }
    }

    /// Runs `al_elements` and a PCG solve capped at 400 iterations, tolerance 1e-4, on the
    /// fixture with `active`'s pairs at penalty `mu` and offset `delta`, its phases dispatched
    /// one by one or in `one_workgroup`.
    fn solve_on_gpu(
        ctx: &GpuContext,
        f: &Fixture,
        solve: &[bool],
        (active, mu, delta): (&ActiveSet, f64, f64),
        one_workgroup: bool,
    ) -> Solve {
        let d = Device::new(ctx, f, solve, &active.gpu_pairs(), mu as f32, delta as f32);
        let control = Device::control(ctx, CONTROL_WORDS);
        let solver = AlPcg::new(ctx).bind(
            ctx,
            &AlPcgSetup {
                vertices: d.n,
                index: &d.index_layout,
                elements: &d.elements,
                pairs: &d.pairs,
                static_slip: STATIC_SLIP as f32,
                tolerance: 1e-4,
                force_tolerance: 0.0,
                max_iterations: 400,
                one_workgroup,
            },
            &AlPcgBuffers {
                positions: &d.positions,
                steps: &d.steps,
                index: &d.index,
                element: &d.element,
                solved: &d.solved,
                vectors: &d.vectors,
                scalars: &d.scalars,
                control: &control,
            },
        );
        Device::run(ctx, |pass| {
            d.fill.iter().flatten().for_each(|b| b.record(pass));
            solver.record(pass);
        });
        let vectors = read_blocking(ctx, &d.vectors, VECTOR_REGIONS * d.n).expect("vectors");
        let control = read_blocking(ctx, &control, CONTROL_WORDS).expect("control");
        Solve { n: d.n, vectors, control }
    }

    /// Checks a GPU solve against the CPU's f64 system: the fixture's potential plus `active`'s
    /// terms at penalty `mu` and offset `delta`. The gradient agrees per vertex; the solve ended
    /// on its own before the cap; its direction solves the CPU's system to within f32 of the
    /// tolerance and lowers the quadratic model to within 0.1 % of its minimum.
    fn check_against_cpu(f: &Fixture, solve: &[bool], active: &ActiveSet, mu: f64, delta: f64, gpu: &Solve) {
        let st = f.world.state();
        let (start, x) = f.start_and_targets();
        let mut problem = f.problem(solve);
        let m = problem.len();
        let mut grad = vec![DVec3::ZERO; m];
        problem.gradient_hessian(st, &x, &mut grad);
        let (mut diag, mut friction_scale) = (vec![DMat3::ZERO; m], Vec::new());
        active.gradient(&x, &start, &problem.dof, mu, delta, STATIC_SLIP, &mut grad, &mut diag, &mut friction_scale);
        let scale = grad.iter().map(|g| g.length()).fold(0.0, f64::max);
        for v in 0..st.vertex_count() {
            let d = problem.dof[v];
            if d == NO_DOF {
                assert_eq!(gpu.region(REGION_GRADIENT, v), DVec3::ZERO, "vertex {v} is not solved");
                assert_eq!(gpu.region(REGION_DIRECTION, v), DVec3::ZERO, "vertex {v} is not solved");
                continue;
            }
            let (g, c) = (gpu.region(REGION_GRADIENT, v), grad[d as usize]);
            assert!((g - c).length() <= 1e-4 * scale, "vertex {v}: gradient {g} vs {c} (scale {scale})");
        }
        let iterations = gpu.control[CONTROL_ITERATIONS];
        assert_eq!(
            PcgEnd::decode(gpu.control[CONTROL_STATE]),
            Some(PcgEnd::Converged),
            "after {iterations} iterations"
        );
        assert!(iterations > 5 && iterations < 400, "{iterations} iterations");

        let apply = |p: &[DVec3], y: &mut [DVec3]| {
            problem.hessian.multiply(p, y);
            active.multiply(&problem.dof, mu, &friction_scale, p, y);
        };
        let b: Vec<DVec3> = grad.iter().map(|g| -*g).collect();
        let dir: Vec<DVec3> = problem.vertices.iter().map(|&v| gpu.region(REGION_DIRECTION, v as usize)).collect();
        let norm = |a: &[DVec3]| a.iter().map(|v| v.length_squared()).sum::<f64>().sqrt();
        let dot = |a: &[DVec3], b: &[DVec3]| a.iter().zip(b).map(|(a, b)| a.dot(*b)).sum::<f64>();
        let mut ad = vec![DVec3::ZERO; m];
        apply(&dir, &mut ad);
        let residual: Vec<DVec3> = ad.iter().zip(&b).map(|(a, b)| *a - *b).collect();
        let relative = norm(&residual) / norm(&b);
        assert!(relative < 1e-3, "‖A d − b‖ / ‖b‖ = {relative:e}");
        // The quadratic model m(d) = ½ dᵀA d − bᵀd against its minimum from the CPU's exact
        // solve: m(d) − m* = ½ ‖d − d*‖²_A.
        let inverse: Vec<_> = (0..m).map(|i| (problem.hessian.diagonal_block(i) + diag[i]).inverse()).collect();
        let mut exact = vec![DVec3::ZERO; m];
        pcg(apply, &inverse, &b, &mut exact, 1e-12, 10_000);
        let model = |d: &[DVec3]| {
            let mut ad = vec![DVec3::ZERO; m];
            apply(d, &mut ad);
            0.5 * dot(d, &ad) - dot(&b, d)
        };
        let (m_gpu, m_min) = (model(&dir), model(&exact));
        assert!(m_min < 0.0 && m_gpu - m_min <= 1e-3 * m_min.abs(), "model {m_gpu:e} against its minimum {m_min:e}");
    }

    /// The GPU's Newton system without pairs against the CPU's (`solver::al::problem`) in the
    /// AL kernels' fixture (tets compressed and inverted, the cloth buckled), dispatched phase
    /// by phase and in one workgroup; both take the same iterations (to one).
    #[test]
    fn solves_the_cpu_newton_system() {
        let Some(ctx) = test_support::context() else { return };
        let f = fixture();
        let (solve, none) = (f.solve(), ActiveSet::default());
        let phases = solve_on_gpu(&ctx, &f, &solve, (&none, 0.0, 0.0), false);
        check_against_cpu(&f, &solve, &none, 0.0, 0.0, &phases);
        let whole = solve_on_gpu(&ctx, &f, &solve, (&none, 0.0, 0.0), true);
        check_against_cpu(&f, &solve, &none, 0.0, 0.0, &whole);
        // Their sums run in another order: a residual at the tolerance may take one more.
        let (w, p) = (whole.control[CONTROL_ITERATIONS], phases.control[CONTROL_ITERATIONS]);
        assert!(w.abs_diff(p) <= 1, "{w} iterations in one workgroup, {p} phase by phase");
    }

    /// With the fixture's active set (`solver::al::constraints`): obstacle, point–triangle and
    /// edge–edge pairs, with multipliers, decayed weights and lagged friction; both ways.
    #[test]
    fn solves_the_cpu_newton_system_with_pairs() {
        let Some(ctx) = test_support::context() else { return };
        let f = fixture();
        let (solve, active) = (f.solve(), f.active_set());
        for one_workgroup in [false, true] {
            let gpu = solve_on_gpu(&ctx, &f, &solve, (&active, MU, DELTA), one_workgroup);
            check_against_cpu(&f, &solve, &active, MU, DELTA, &gpu);
        }
    }
}
