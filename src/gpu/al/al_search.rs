//! Host side of `shaders/al/al_search.wgsl`: the backtracking line search that ends each Newton
//! iteration of the augmented-Lagrangian step on the GPU (the twin of the search in
//! `solver::al`'s `solve_subproblem`), recorded with all its trials; the GPU skips those after
//! acceptance and commits the step, or nothing, without asking the host.

use crate::gpu::GpuContext;
use crate::gpu::al::al_elements::AlElementLayout;
use crate::gpu::al::al_pcg::AlPairLayout;
use crate::gpu::buffers::output;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use crate::gpu::pack::RecordLayout;
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!(
    "al/al_search",
    "step",
    "workgroup_sum",
    "elements",
    "element_energy",
    "mat3",
    "friction",
    "al"
);

const PHASE_SLOPE: u32 = 0;
const PHASE_TRIAL: u32 = 1;
const PHASE_COMMIT: u32 = 2;
const PHASE_REDUCE: u32 = 3;
const PHASE_START: u32 = 4;
const PHASE_STOP: u32 = 5;
/// The shader's entry point that runs a whole search in one workgroup.
pub const WHOLE: &str = "whole";

/// Trials recorded: steps 1, 1/2, …, 2⁻²⁶, the last above the CPU's floor of 1e-8.
pub const SEARCH_TRIALS: u32 = 27;
/// Words of `control`: trial and commit dispatch arguments (3 each), state, trials taken; the
/// Newton iterations' dispatch arguments (five triplets from [`NEWTON_ARGS`]), whether they go
/// on, and how many were taken.
pub const CONTROL_WORDS: usize = 25;
/// Byte offsets in `control` of the Newton iterations' dispatch arguments: `al_elements` for
/// tets, triangles and hinges, a per-vertex phase, a one-workgroup phase. Zero workgroups once
/// the subproblem is solved.
pub const NEWTON_ARGS: [u64; 5] = [32, 44, 56, 68, 80];
/// `control` word of the Newton iterations taken.
#[cfg(test)]
pub const CONTROL_NEWTON_ITERATIONS: usize = 24;
/// `control` word of whether the Newton iterations go on (0) or ended (1).
pub const CONTROL_NEWTON_STATE: usize = 23;

/// The control words of Newton iterations that have ended (no dispatch arguments): what a
/// caller's buffer holds before its first subproblem, where zeroed words would read as
/// iterations going on (the one-workgroup search would then run on zero vectors).
pub fn ended_control() -> [u32; CONTROL_WORDS] {
    let mut words = [0; CONTROL_WORDS];
    // The trial's and the commit's arguments, then the Newton iterations' (x = 0 workgroups).
    for at in [0, 3].into_iter().chain(NEWTON_ARGS.map(|bytes| bytes as usize / 4)) {
        words[at + 1] = 1;
        words[at + 2] = 1;
    }
    words[CONTROL_NEWTON_STATE] = 1;
    words
}
/// `control` word of how the search ended.
#[cfg(test)]
pub const CONTROL_STATE: usize = 6;
/// `control` word of the trials taken.
#[cfg(test)]
pub const CONTROL_TRIALS: usize = 7;
/// `scalars` word of the step taken (or last tried).
#[cfg(test)]
pub const SCALAR_STEP: usize = 10;
/// `scalars` word of the last trial's change of the Lagrangian \[J\].
#[cfg(test)]
pub const SCALAR_CHANGE: usize = 11;

/// How a search ended (the `control` state word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg(test)]
pub enum SearchEnd {
    /// Still halving (more trials were needed than recorded).
    Searching,
    /// A step below the full one was taken.
    Accepted,
    /// The full step (or one below 1e-12 m) was taken: the Newton iterations are done.
    Final,
    /// The direction does not descend: nothing moved.
    NoDescent,
    /// No step above 1e-8 passed: nothing moved.
    NoStep,
}

#[cfg(test)]
impl SearchEnd {
    /// The state word's meaning (`None` for a word no kernel writes).
    #[cfg(test)]
    pub fn decode(word: u32) -> Option<Self> {
        [Self::Searching, Self::Accepted, Self::Final, Self::NoDescent, Self::NoStep].get(word as usize).copied()
    }
}

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct Params {
    phase: u32,
    vertices: u32,
    vertex_groups: u32,
    after: u32,
    tets: u32,
    tris: u32,
    hinges: u32,
    pairs: u32,
    item_groups: u32,
    tri_records: u32,
    hinge_records: u32,
    pair_records: u32,
    static_slip: f32,
    element_groups: [u32; 3],
}

/// What the kernel reads and writes.
pub struct AlSearchBuffers<'a> {
    /// The targets `x̂` (vec4), moved by the step taken.
    pub positions: &'a wgpu::Buffer,
    /// Per-vertex step records.
    pub steps: &'a wgpu::Buffer,
    /// The state's tets.
    pub tets: &'a wgpu::Buffer,
    /// The packed records.
    pub records: &'a wgpu::Buffer,
    /// `al_pcg`'s element buffer (the pairs are read).
    pub element: &'a wgpu::Buffer,
    /// `al_pcg`'s vectors (gradient and direction are read).
    pub vectors: &'a wgpu::Buffer,
    /// `al_pcg`'s scalars (μ, δ; the search's own words are written).
    pub scalars: &'a wgpu::Buffer,
    /// [`CONTROL_WORDS`] u32 with `INDIRECT` usage, written.
    pub control: &'a wgpu::Buffer,
}

/// What a search needs besides its buffers.
pub struct AlSearchSetup<'a> {
    /// Vertices.
    pub vertices: usize,
    /// Element counts and record layout.
    pub elements: &'a AlElementLayout,
    /// Where triangles and hinges are in `records`.
    pub records: &'a RecordLayout,
    /// Where the pairs are, and how many.
    pub pairs: &'a AlPairLayout,
    /// Pairs in the set.
    pub pair_count: usize,
    /// Static friction slip `ε_v h` \[m\].
    pub static_slip: f32,
    /// The whole search in one dispatch of one workgroup (the shader's `whole` entry point) instead of
    /// 2 + 2 × [`SEARCH_TRIALS`] + 1 dispatches (see `al_pcg::ONE_WORKGROUP_VERTICES`).
    pub one_workgroup: bool,
}

impl AlSearchSetup<'_> {
    /// Invocations of the trial phase: vertices, elements and pairs.
    pub fn items(&self) -> usize {
        self.vertices + self.elements.counts.iter().map(|&c| c as usize).sum::<usize>() + self.pair_count
    }
}

/// One bound search.
pub struct AlSearchRun {
    start: Bound,
    stop: Bound,
    slope: [Bound; 2],
    trial: [Bound; 2],
    commit: Bound,
    /// The whole search in one workgroup, recorded in place of the phases.
    whole: Option<Bound>,
}

impl AlSearchRun {
    /// Records the opening of a subproblem's Newton iterations (every one of their dispatches
    /// enabled) into `pass`.
    pub fn record_start(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.start.record(pass);
    }

    /// Records the closing of a subproblem's Newton iterations into `pass` (after the last).
    pub fn record_stop(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.stop.record(pass);
    }

    /// The same search, its subproblem opened only when the one-workgroup dispatch arguments
    /// at byte `one` of `gate` say so (an outer iteration after the step ended opens none).
    pub fn gated(mut self, gate: &wgpu::Buffer, one: u64) -> Self {
        self.start = self.start.indirect(gate, one);
        self
    }

    /// Records the search into `pass`: the slope, [`SEARCH_TRIALS`] trials, the commit.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        if let Some(whole) = &self.whole {
            whole.record(pass);
            return;
        }
        self.slope.iter().for_each(|b| b.record(pass));
        for _ in 0..SEARCH_TRIALS {
            self.trial.iter().for_each(|b| b.record(pass));
        }
        self.commit.record(pass);
    }
}

/// The compiled kernel: its per-phase entry point and the whole search's.
pub struct AlSearch {
    kernel: ComputeKernel,
    whole: ComputeKernel,
}

impl AlSearch {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self {
            kernel: ComputeKernel::new(ctx, "al_search", SHADER),
            whole: ComputeKernel::at(ctx, "al_search", SHADER, WHOLE),
        }
    }

    /// Binds a search.
    pub fn bind(&self, ctx: &GpuContext, s: &AlSearchSetup<'_>, b: &AlSearchBuffers<'_>) -> AlSearchRun {
        let groups = |n: usize| (n as u32).div_ceil(WORKGROUP).max(1);
        let [tets, tris, hinges] = s.elements.counts;
        let base = Params {
            phase: PHASE_SLOPE,
            vertices: s.vertices as u32,
            vertex_groups: groups(s.vertices),
            after: PHASE_SLOPE,
            tets,
            tris,
            hinges,
            pairs: s.pair_count as u32,
            item_groups: groups(s.items()),
            tri_records: s.records.tris,
            hinge_records: s.records.hinges,
            pair_records: s.pairs.pairs,
            static_slip: s.static_slip,
            element_groups: s.elements.counts.map(|c| (c as usize).div_ceil(WORKGROUP as usize) as u32),
        };
        // The dispatches that read their arguments from `control` may not bind it for writing;
        // only the reduce phase writes it.
        let stand_in = output::<u32>(ctx, "al_search stand-in", CONTROL_WORDS);
        let buffers = [b.positions, b.steps, b.tets, b.records, b.element, b.vectors, b.scalars, b.control];
        let mut item_buffers = buffers;
        item_buffers[7] = &stand_in;
        let phase = |phase: u32, groups: u32| {
            self.kernel.bind_pod(ctx, &Params { phase, ..base }, &item_buffers, groups * WORKGROUP)
        };
        let reduce =
            |after: u32| self.kernel.bind_pod(ctx, &Params { phase: PHASE_REDUCE, after, ..base }, &buffers, 1);
        AlSearchRun {
            start: self.kernel.bind_pod(ctx, &Params { phase: PHASE_START, ..base }, &buffers, 1),
            stop: self.kernel.bind_pod(ctx, &Params { phase: PHASE_STOP, ..base }, &buffers, 1),
            slope: [phase(PHASE_SLOPE, base.vertex_groups).indirect(b.control, NEWTON_ARGS[3]), reduce(PHASE_SLOPE)],
            trial: [phase(PHASE_TRIAL, base.item_groups).indirect(b.control, 0), reduce(PHASE_TRIAL)],
            commit: phase(PHASE_COMMIT, base.vertex_groups).indirect(b.control, 12),
            whole: s.one_workgroup.then(|| self.whole.bind_pod(ctx, &base, &buffers, 1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::gpu::al::fixture::GpuPairs;
    use glam::{DMat3, DVec3, Vec4};

    use super::*;
    use crate::gpu::al::al_pcg::{
        self, AlPcg, AlPcgBuffers, AlPcgSetup, REGION_DIRECTION, REGION_GRADIENT, VECTOR_REGIONS,
    };
    use crate::gpu::al::fixture::{DELTA, Device, Fixture, MU, STATIC_SLIP, fixture};
    use crate::gpu::buffers::{read_blocking, storage};
    use crate::gpu::test_support;
    use crate::solver::al::constraints::ActiveSet;

    /// The search's outcome: the targets after it, its control words, its step.
    struct Searched {
        positions: Vec<Vec4>,
        end: Option<SearchEnd>,
        trials: u32,
        step: f32,
        /// The last trial's change of the Lagrangian.
        change: f32,
        direction: Vec<DVec3>,
    }

    fn bind_search(ctx: &GpuContext, d: &Device, control: &wgpu::Buffer, one_workgroup: bool) -> AlSearchRun {
        AlSearch::new(ctx).bind(
            ctx,
            &AlSearchSetup {
                vertices: d.n,
                elements: &d.elements,
                records: &d.record_layout,
                pairs: &d.pairs,
                pair_count: d.pair_count,
                static_slip: STATIC_SLIP as f32,
                one_workgroup,
            },
            &AlSearchBuffers {
                positions: &d.positions,
                steps: &d.steps,
                tets: &d.tets,
                records: &d.records,
                element: &d.element,
                vectors: &d.vectors,
                scalars: &d.scalars,
                control,
            },
        )
    }

    fn read(ctx: &GpuContext, d: &Device, control: &wgpu::Buffer) -> Searched {
        let words: Vec<u32> = read_blocking(ctx, control, CONTROL_WORDS).expect("control");
        let scalars: Vec<f32> = read_blocking(ctx, &d.scalars, SCALAR_CHANGE + 1).expect("scalars");
        let vectors: Vec<Vec4> = read_blocking(ctx, &d.vectors, VECTOR_REGIONS * d.n).expect("vectors");
        Searched {
            positions: read_blocking(ctx, &d.positions, d.n).expect("positions"),
            end: SearchEnd::decode(words[CONTROL_STATE]),
            trials: words[CONTROL_TRIALS],
            step: scalars[SCALAR_STEP],
            change: scalars[SCALAR_CHANGE],
            direction: (0..d.n).map(|v| vectors[REGION_DIRECTION * d.n + v].truncate().as_dvec3()).collect(),
        }
    }

    /// One Newton iteration on the GPU: element records, PCG, search.
    fn newton_on_gpu(ctx: &GpuContext, f: &Fixture, active: &ActiveSet) -> Searched {
        let d = Device::new(ctx, f, &f.solve(), &active.gpu_pairs(), MU as f32, DELTA as f32);
        let pcg_control = Device::control(ctx, al_pcg::CONTROL_WORDS);
        let control = Device::control(ctx, CONTROL_WORDS);
        let pcg = AlPcg::new(ctx).bind(
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
                one_workgroup: false,
            },
            &AlPcgBuffers {
                positions: &d.positions,
                steps: &d.steps,
                index: &d.index,
                element: &d.element,
                solved: &d.solved,
                vectors: &d.vectors,
                scalars: &d.scalars,
                control: &pcg_control,
            },
        );
        let search = bind_search(ctx, &d, &control, false);
        Device::run(ctx, |pass| {
            search.record_start(pass);
            d.fill.iter().flatten().for_each(|b| b.record(pass));
            pcg.record(pass);
            search.record(pass);
        });
        read(ctx, &d, &control)
    }

    /// A search alone along `direction`, with the CPU's gradient at the targets in place of
    /// PCG's vectors, dispatched phase by phase; the same search in one workgroup ends the same
    /// way, after the same trials, with the same targets.
    fn search_on_gpu(ctx: &GpuContext, f: &Fixture, active: &ActiveSet, mu: f64, direction: &[DVec3]) -> Searched {
        let phases = search_once(ctx, f, active, mu, direction, false);
        let whole = search_once(ctx, f, active, mu, direction, true);
        assert_eq!((whole.end, whole.trials, whole.step), (phases.end, phases.trials, phases.step));
        assert_eq!(whole.positions, phases.positions);
        phases
    }

    fn search_once(
        ctx: &GpuContext,
        f: &Fixture,
        active: &ActiveSet,
        mu: f64,
        direction: &[DVec3],
        one_workgroup: bool,
    ) -> Searched {
        let mut d = Device::new(ctx, f, &f.solve(), &active.gpu_pairs(), mu as f32, DELTA as f32);
        let gradient = cpu_gradient(f, active, mu);
        let mut vectors = vec![Vec4::ZERO; VECTOR_REGIONS * d.n];
        for v in 0..d.n {
            vectors[REGION_DIRECTION * d.n + v] = direction[v].as_vec3().extend(0.0);
            vectors[REGION_GRADIENT * d.n + v] = gradient[v].as_vec3().extend(0.0);
        }
        d.vectors = storage(ctx, "vectors", &vectors, true);
        let control = Device::control(ctx, CONTROL_WORDS);
        let search = bind_search(ctx, &d, &control, one_workgroup);
        Device::run(ctx, |pass| {
            search.record_start(pass);
            search.record(pass);
        });
        read(ctx, &d, &control)
    }

    /// The CPU's Lagrangian (potential plus the pairs' terms at penalty `mu`) at `x`, in f64.
    fn lagrangian(f: &Fixture, active: &ActiveSet, mu: f64, x: &[DVec3]) -> f64 {
        let (start, _) = f.start_and_targets();
        f.problem(&f.solve()).energy(f.world.state(), x) + active.energy(x, &start, mu, DELTA, STATIC_SLIP)
    }

    /// ∇L at the targets per vertex (zero where not solved), in f64.
    fn cpu_gradient(f: &Fixture, active: &ActiveSet, mu: f64) -> Vec<DVec3> {
        let (start, x) = f.start_and_targets();
        let mut problem = f.problem(&f.solve());
        let mut grad = vec![DVec3::ZERO; problem.len()];
        problem.gradient_hessian(f.world.state(), &x, &mut grad);
        let (mut diag, mut scale) = (vec![DMat3::ZERO; problem.len()], Vec::new());
        active.gradient(&x, &start, &problem.dof, mu, DELTA, STATIC_SLIP, &mut grad, &mut diag, &mut scale);
        (0..x.len())
            .map(|v| problem.dof.get(v).and_then(|&d| grad.get(d as usize)).copied().unwrap_or(DVec3::ZERO))
            .collect()
    }

    /// The CPU's search along `direction` from the targets (solve_subproblem's, in f64): the
    /// first step of 1, 1/2, … passing Armijo's test, or `None`.
    fn cpu_step(f: &Fixture, active: &ActiveSet, mu: f64, direction: &[DVec3]) -> Option<f64> {
        let (_, x) = f.start_and_targets();
        let grad = cpu_gradient(f, active, mu);
        let slope: f64 = grad.iter().zip(direction).map(|(g, d)| g.dot(*d)).sum();
        let l0 = lagrangian(f, active, mu, &x);
        let mut r = 1.0;
        while r >= 1e-8 {
            let trial: Vec<DVec3> = x.iter().zip(direction).map(|(x, d)| *x + *d * r).collect();
            if lagrangian(f, active, mu, &trial) <= l0 + 1e-4 * r * slope {
                return Some(r);
            }
            r *= 0.5;
        }
        None
    }

    /// Checks that the GPU moved the targets by `step` along its direction, exactly as far as
    /// f32 allows.
    fn assert_moved(f: &Fixture, gpu: &Searched, step: f64) {
        let (_, x) = f.start_and_targets();
        for (v, p) in gpu.positions.iter().enumerate() {
            let want = x[v] + gpu.direction[v] * step;
            let got = p.truncate().as_dvec3();
            assert!((got - want).length() <= 1e-6 * (1.0 + want.length()), "vertex {v}: {got} vs {want}");
        }
    }

    /// A Newton iteration on the GPU (the fixture's records, its pairs, PCG, then the search)
    /// takes the step the CPU's search takes along the same direction, and the CPU's f64
    /// Lagrangian agrees that it went down.
    #[test]
    fn a_newton_iteration_descends_the_cpu_lagrangian() {
        let Some(ctx) = test_support::context() else { return };
        let f = fixture();
        let active = f.active_set();
        let gpu = newton_on_gpu(&ctx, &f, &active);
        let step = cpu_step(&f, &active, MU, &gpu.direction).expect("the CPU finds a step");
        assert_eq!(gpu.step as f64, step, "{:?} after {} trials", gpu.end, gpu.trials);
        let want = if step == 1.0 { SearchEnd::Final } else { SearchEnd::Accepted };
        assert_eq!(gpu.end, Some(want));
        assert_moved(&f, &gpu, step);
        let (_, x) = f.start_and_targets();
        let after: Vec<DVec3> = gpu.positions.iter().map(|p| p.truncate().as_dvec3()).collect();
        let (l0, l1) = (lagrangian(&f, &active, MU, &x), lagrangian(&f, &active, MU, &after));
        assert!(l1 < l0, "the Lagrangian went from {l0} to {l1}");
    }

    /// Along a steepest-descent direction far too long (its full step would throw a vertex a
    /// metre), the GPU takes the step the CPU takes, and its last trial's change of the
    /// Lagrangian is the CPU's f64 change at that step: with the fixture's penalty the elastic
    /// energy sends the search through several halvings; with a penalty 1e3 times stiffer the
    /// full step pulls the pairs out of violation and the pairs' terms make most of the change;
    /// moving the cloth alone, its membranes and hinges do.
    #[test]
    fn steps_along_a_long_direction_as_the_cpu_does() {
        let Some(ctx) = test_support::context() else { return };
        let f = fixture();
        let active = f.active_set();
        let (_, x) = f.start_and_targets();
        let cloth = f.world.state().bodies[2].vertex_start as usize;
        let mut steps = Vec::new();
        for (mu, first) in [(MU, 0), (1e3 * MU, 0), (MU, cloth)] {
            let grad = cpu_gradient(&f, &active, mu);
            let longest = grad[first..].iter().map(|g| g.length()).fold(0.0, f64::max);
            let direction: Vec<DVec3> = grad
                .iter()
                .enumerate()
                .map(|(v, g)| if v < first { DVec3::ZERO } else { *g * (-1.0 / longest) })
                .collect();
            let gpu = search_on_gpu(&ctx, &f, &active, mu, &direction);
            let step = cpu_step(&f, &active, mu, &gpu.direction).expect("the CPU finds a step");
            assert_eq!(gpu.step as f64, step, "μ = {mu}: {:?} after {} trials", gpu.end, gpu.trials);
            assert_eq!(gpu.trials, 1 + (1.0 / step).log2().round() as u32);
            assert_moved(&f, &gpu, step);
            let trial: Vec<DVec3> = x.iter().zip(&gpu.direction).map(|(x, d)| *x + *d * step).collect();
            let change = lagrangian(&f, &active, mu, &trial) - lagrangian(&f, &active, mu, &x);
            assert!(
                (gpu.change as f64 - change).abs() <= 1e-4 * change.abs(),
                "μ = {mu}: the Lagrangian changed by {} against {change}",
                gpu.change
            );
            steps.push((step, change));
        }
        assert!(steps[0].0 < 0.1 && steps[2].0 < 0.1, "a full step passed: {steps:?}");
        assert_eq!(steps[1].0, 1.0, "{steps:?}");
    }

    /// Along a direction that climbs, nothing moves and no trial runs.
    #[test]
    fn a_climbing_direction_moves_nothing() {
        let Some(ctx) = test_support::context() else { return };
        let f = fixture();
        let active = f.active_set();
        let direction: Vec<DVec3> = cpu_gradient(&f, &active, MU).iter().map(|g| *g * 1e-6).collect();
        let gpu = search_on_gpu(&ctx, &f, &active, MU, &direction);
        assert_eq!(gpu.end, Some(SearchEnd::NoDescent));
        assert_eq!(gpu.trials, 0);
        assert_moved(&f, &gpu, 0.0);
    }
}
