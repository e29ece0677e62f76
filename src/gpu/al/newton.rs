//! The Newton iterations of one augmented-Lagrangian subproblem on the GPU (the twin of
//! `solver::al`'s `solve_subproblem`): per iteration the element records at the targets
//! (`al_elements`), the PCG solve for the direction (`al_pcg`) and the line search that moves
//! the targets (`al_search`). All iterations are recorded; the search decides on the GPU when
//! the subproblem is solved (a full step, no descent, no step) and zeroes the dispatch
//! arguments every phase of the iterations left reads, so they cost no work and the host is
//! never asked.

use crate::gpu::GpuContext;
use crate::gpu::al::al_elements::{AlElementLayout, AlElements, AlElementsBuffers};
use crate::gpu::al::al_pcg::{AlPairLayout, AlPcg, AlPcgBuffers, AlPcgSetup, AlPcgSolve};
use crate::gpu::al::al_search::{AlSearch, AlSearchBuffers, AlSearchRun, AlSearchSetup, NEWTON_ARGS};
use crate::gpu::kernel::Bound;
use crate::gpu::pack::{IndexLayout, RecordLayout};

/// What a subproblem's Newton iterations need besides their buffers.
pub struct AlNewtonSetup<'a> {
    /// Vertices.
    pub vertices: usize,
    /// Where the element adjacencies are in the index.
    pub index: &'a IndexLayout,
    /// Where triangles and hinges are in the records.
    pub records: &'a RecordLayout,
    /// Element counts and where their records go.
    pub elements: &'a AlElementLayout,
    /// Where the pairs are, and how many there are.
    pub pairs: &'a AlPairLayout,
    /// Pairs in the set.
    pub pair_count: usize,
    /// Static friction slip `ε_v h` \[m\].
    pub static_slip: f32,
    /// PCG's relative tolerance and iteration cap.
    pub cg_tolerance: f32,
    /// See `cg_tolerance`.
    pub cg_iterations: u32,
    /// `‖∇L‖` \[N\] at which the subproblem is solved.
    pub force_tolerance: f32,
    /// Newton iterations recorded (the cap).
    pub newton_iterations: u32,
    /// Each PCG solve and line search in one dispatch of one workgroup (`al_pcg`'s and
    /// `al_search`'s `whole` entry points) rather than phase by phase: for up to
    /// [`crate::gpu::al::al_pcg::ONE_WORKGROUP_VERTICES`] vertices.
    pub one_workgroup: bool,
}

/// The buffers the three kernels share.
pub struct AlNewtonBuffers<'a> {
    /// The targets `x̂` (vec4), moved by each step.
    pub positions: &'a wgpu::Buffer,
    /// Per-vertex step records.
    pub steps: &'a wgpu::Buffer,
    /// The packed index.
    pub index: &'a wgpu::Buffer,
    /// The state's tets.
    pub tets: &'a wgpu::Buffer,
    /// The packed records.
    pub records: &'a wgpu::Buffer,
    /// Element records, then pairs and their adjacency.
    pub element: &'a wgpu::Buffer,
    /// `al_pcg::VERTEX_SOLVED` and `VERTEX_MOVES` bits per vertex.
    pub solved: &'a wgpu::Buffer,
    /// PCG's vectors.
    pub vectors: &'a wgpu::Buffer,
    /// The shared scalars (μ and δ set by the caller).
    pub scalars: &'a wgpu::Buffer,
    /// PCG's control words (`INDIRECT`).
    pub pcg_control: &'a wgpu::Buffer,
    /// The search's and the Newton iterations' control words (`INDIRECT`).
    pub control: &'a wgpu::Buffer,
}

/// A subproblem's Newton iterations, bound.
pub struct AlNewton {
    elements: Vec<Bound>,
    pcg: AlPcgSolve,
    search: AlSearchRun,
    iterations: u32,
}

impl AlNewton {
    /// Binds the iterations.
    pub fn bind(ctx: &GpuContext, s: &AlNewtonSetup<'_>, b: &AlNewtonBuffers<'_>) -> Self {
        let elements = AlElements::new(ctx).bind(
            ctx,
            s.elements,
            s.records,
            &AlElementsBuffers { positions: b.positions, tets: b.tets, records: b.records, element: b.element },
        );
        let elements =
            elements.into_iter().zip(NEWTON_ARGS).filter_map(|(e, at)| e.map(|e| e.indirect(b.control, at))).collect();
        let pcg = AlPcg::new(ctx)
            .bind(
                ctx,
                &AlPcgSetup {
                    vertices: s.vertices,
                    index: s.index,
                    elements: s.elements,
                    pairs: s.pairs,
                    static_slip: s.static_slip,
                    tolerance: s.cg_tolerance,
                    force_tolerance: s.force_tolerance,
                    max_iterations: s.cg_iterations,
                    one_workgroup: s.one_workgroup,
                },
                &AlPcgBuffers {
                    positions: b.positions,
                    steps: b.steps,
                    index: b.index,
                    element: b.element,
                    solved: b.solved,
                    vectors: b.vectors,
                    scalars: b.scalars,
                    control: b.pcg_control,
                },
            )
            .gated(b.control, NEWTON_ARGS[3], NEWTON_ARGS[4]);
        let search = AlSearch::new(ctx).bind(
            ctx,
            &AlSearchSetup {
                vertices: s.vertices,
                elements: s.elements,
                records: s.records,
                pairs: s.pairs,
                pair_count: s.pair_count,
                static_slip: s.static_slip,
                one_workgroup: s.one_workgroup,
            },
            &AlSearchBuffers {
                positions: b.positions,
                steps: b.steps,
                tets: b.tets,
                records: b.records,
                element: b.element,
                vectors: b.vectors,
                scalars: b.scalars,
                control: b.control,
            },
        );
        Self { elements, pcg, search, iterations: s.newton_iterations }
    }

    /// The same iterations, opened only when the one-workgroup dispatch arguments at byte
    /// `one` of `gate` say so.
    pub fn gated(mut self, gate: &wgpu::Buffer, one: u64) -> Self {
        self.search = self.search.gated(gate, one);
        self
    }

    /// Records the subproblem's iterations into `pass`, closed after the last.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.search.record_start(pass);
        for _ in 0..self.iterations {
            self.elements.iter().for_each(|b| b.record(pass));
            self.pcg.record(pass);
            self.search.record(pass);
        }
        self.search.record_stop(pass);
    }
}

#[cfg(test)]
mod tests {
    use crate::gpu::al::fixture::GpuPairs;
    use glam::{DVec3, Vec4};

    use super::*;
    use crate::gpu::al::al_pcg;
    use crate::gpu::al::al_search::{CONTROL_NEWTON_ITERATIONS, CONTROL_STATE, CONTROL_WORDS, SearchEnd};
    use crate::gpu::al::fixture::{DELTA, Device, Fixture, MU, STATIC_SLIP, fixture};
    use crate::gpu::buffers::read_blocking;
    use crate::gpu::test_support;
    use crate::solver::al::constraints::ActiveSet;
    use crate::solver::al::{AlInput, AlScratch, AlSettings, AlStats, solve_subproblem};

    /// The GPU's Newton iterations solve the fixture's subproblem (its potential and active
    /// set) as the CPU's `solve_subproblem` does, from the fixture's targets and from targets
    /// moved three times as far from the start with a thousandth of the inertia: the CPU's f64
    /// Lagrangian at the GPU's answer is the CPU's to 1e-4 of the decrease from the start, and
    /// the GPU stopped after a full step within the cap of 8, the iterations recorded after it
    /// costing no work (had they run, the targets would have gone on down, below the CPU's:
    /// 40 J against 177 J in the first case). Both take one full Newton step here, as in every
    /// variant tried (targets moved up to ten times as far, inertia down to 1e-9 of the
    /// fixture's, PCG capped at 2 iterations): with projected Hessians the first full step
    /// passes Armijo's test.
    #[test]
    fn solves_the_cpu_subproblem() {
        let Some(ctx) = test_support::context() else { return };
        for (stretch, weight) in [(1.0, 1.0), (3.0, 1e-3)] {
            let mut f = fixture();
            let active = f.active_set();
            for (x, s) in f.targets.iter_mut().zip(&mut f.steps) {
                let start = Vec4::from_array(s.start);
                *x = start + (*x - start) * stretch;
                s.inertia[3] *= weight;
            }
            let st = f.world.state();
            let solve = f.solve();
            let settings = AlSettings { static_slip: STATIC_SLIP, ..AlSettings::default() };
            let (start, mut xh) = f.start_and_targets();
            let mut problem = f.problem(&solve);
            let inertia = |_: usize| (0.0, DVec3::ZERO);
            let guess = xh.clone();
            let input = AlInput {
                st,
                obstacles: &[],
                start: &start,
                guess: &guess,
                solved: &solve,
                moves: &solve,
                inertia: &inertia,
                surface_pairs: false,
            };
            let mut scratch = AlScratch::with_active(active.clone());
            let mut stats = AlStats::default();
            solve_subproblem(&input, &settings, &mut problem, &mut scratch, &mut xh, MU, DELTA, &mut stats);
            let lagrangian = |x: &[DVec3]| problem.energy(st, x) + active.energy(x, &start, MU, DELTA, STATIC_SLIP);
            // PCG and search phase by phase, and each in one workgroup.
            for one_workgroup in [false, true] {
                let (gpu, iterations) = newton_on_gpu(&ctx, &f, &active, one_workgroup);
                let (l0, l_cpu, l_gpu) = (lagrangian(&guess), lagrangian(&xh), lagrangian(&gpu));
                eprintln!(
                    "al_newton: stretch {stretch}, inertia ×{weight}, one workgroup {one_workgroup}: GPU {iterations} \
                     Newton iterations, CPU {}; L from {l0} to {l_cpu} (CPU), {l_gpu} (GPU)",
                    stats.newton_iterations
                );
                assert!(l_cpu < l0);
                assert!((l_gpu - l_cpu).abs() <= 1e-4 * (l0 - l_cpu), "L: CPU {l_cpu}, GPU {l_gpu}, start {l0}");
                assert!(iterations < settings.newton_iterations, "{iterations} iterations");
            }
        }
    }

    /// Binds and runs a subproblem's Newton iterations (the CPU's default settings) on the
    /// fixture `f` with `active`'s pairs; the targets after them, and the iterations taken,
    /// checked to have ended on a full step.
    fn newton_on_gpu(ctx: &GpuContext, f: &Fixture, active: &ActiveSet, one_workgroup: bool) -> (Vec<DVec3>, u32) {
        let d = Device::new(ctx, f, &f.solve(), &active.gpu_pairs(), MU as f32, DELTA as f32);
        let pcg_control = Device::control(ctx, al_pcg::CONTROL_WORDS);
        let control = Device::control(ctx, CONTROL_WORDS);
        let settings = AlSettings::default();
        let setup = AlNewtonSetup { one_workgroup, ..d.newton_setup(&settings, 400) };
        let newton = AlNewton::bind(ctx, &setup, &d.newton_buffers(&pcg_control, &control));
        Device::run(ctx, |pass| newton.record(pass));
        let words: Vec<u32> = read_blocking(ctx, &control, CONTROL_WORDS).expect("control");
        let iterations = words[CONTROL_NEWTON_ITERATIONS];
        assert_eq!(SearchEnd::decode(words[CONTROL_STATE]), Some(SearchEnd::Final), "after {iterations} iterations");
        let targets: Vec<Vec4> = read_blocking(ctx, &d.positions, d.n).expect("targets");
        (targets.iter().map(|p| p.truncate().as_dvec3()).collect(), iterations)
    }
}
