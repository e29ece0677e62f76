//! An augmented-Lagrangian step on the GPU, recorded whole (the twin of `solver::al`'s
//! `al_step`, with the active set it is given; growing the set from CCD hits and surface
//! pairs' CCD are not on the GPU yet): per outer iteration the pairs re-linearised at the safe
//! iterate (`al_pairs`), the subproblem's Newton iterations ([`AlNewton`]), the dual update,
//! the step size (`al_step_size`) and the safe iterate's move with the schedule (`al_outer`).
//! Every outer iteration up to the cap is recorded; once the step has converged (or reached its
//! cap) the dispatch arguments of the iterations after it are zero, so they cost no work and
//! the host is never asked.

use super::GpuContext;
use super::al_newton::{AlNewton, AlNewtonBuffers, AlNewtonSetup};
use super::kernels::al_outer::{AlOuter, AlOuterBuffers, AlOuterRun, ONE_ARGS, PAIR_ARGS, TET_ARGS, VERTEX_ARGS};
use super::kernels::al_pairs::{AlPairs, AlPairsBound, AlPairsBuffers};
use super::kernels::al_step_size::{AlStepSize, AlStepSizeBuffers, AlStepSizeRun, AlStepSizeSetup};
use super::obstacles::GpuObstacleSet;
use crate::solver::al::AlSettings;
use crate::solver::al::step_size::MIN_SEPARATION;

/// The buffers an AL step binds besides the Newton iterations'.
pub struct AlStepBuffers<'a> {
    /// The Newton iterations' (targets, tables, vectors, scalars, their controls).
    pub newton: AlNewtonBuffers<'a>,
    /// The safe iterate `x` (vec4): the start in, the step's answer out.
    pub safe: &'a wgpu::Buffer,
    /// `al_step_size`'s times.
    pub times: &'a wgpu::Buffer,
    /// `al_outer`'s control words (`INDIRECT`).
    pub outer_control: &'a wgpu::Buffer,
}

/// An AL step, bound.
pub struct AlStepProgram {
    outer: AlOuterRun,
    pairs: AlPairsBound,
    newton: AlNewton,
    step_size: AlStepSizeRun,
    iterations: u32,
}

impl AlStepProgram {
    /// Binds a step with the Newton setup `n`, the settings `s` (outer cap, ε, `K_min`, `j_min`)
    /// and the step's obstacles.
    pub fn bind(
        ctx: &GpuContext,
        n: &AlNewtonSetup<'_>,
        s: &AlSettings,
        tets: usize,
        obstacles: &GpuObstacleSet,
        b: &AlStepBuffers<'_>,
    ) -> Self {
        let gate = b.outer_control;
        let outer = AlOuter::new(ctx).bind(
            ctx,
            [n.vertices, n.pair_count, tets],
            s,
            &AlOuterBuffers {
                safe: b.safe,
                targets: b.newton.positions,
                solved: b.newton.solved,
                times: b.times,
                scalars: b.newton.scalars,
                control: gate,
            },
        );
        let pairs = AlPairs::new(ctx)
            .bind(
                ctx,
                n.pairs,
                n.pair_count,
                obstacles,
                &AlPairsBuffers {
                    safe: b.safe,
                    targets: b.newton.positions,
                    element: b.newton.element,
                    scalars: b.newton.scalars,
                },
            )
            .gated(gate, PAIR_ARGS);
        let newton = AlNewton::bind(ctx, n, &b.newton).gated(gate, ONE_ARGS);
        let step_size = AlStepSize::new(ctx)
            .bind(
                ctx,
                &AlStepSizeSetup {
                    vertices: n.vertices,
                    tets,
                    obstacles,
                    j_min: s.j_min as f32,
                    min_separation: MIN_SEPARATION as f32,
                },
                &AlStepSizeBuffers {
                    safe: b.safe,
                    targets: b.newton.positions,
                    tets: b.newton.tets,
                    solved: b.newton.solved,
                    times: b.times,
                },
            )
            .gated(gate, VERTEX_ARGS, TET_ARGS);
        Self { outer, pairs, newton, step_size, iterations: s.max_iterations }
    }

    /// Records the step into `pass`.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.outer.record_start(pass);
        for _ in 0..self.iterations {
            self.pairs.linearize.record(pass);
            self.newton.record(pass);
            self.pairs.dual.record(pass);
            self.step_size.record(pass);
            self.outer.record_iteration(pass);
        }
    }
}

#[cfg(test)]
mod tests {
    use glam::{DVec3, Vec4};

    use super::*;
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::kernels::al_fixture::{DELTA, Device, MU, STATIC_SLIP, fixture};
    use crate::gpu::kernels::al_outer::{CONTROL_ITERATIONS, CONTROL_STATE, CONTROL_WORDS, OuterState};
    use crate::gpu::kernels::al_search;
    use crate::gpu::kernels::al_step_size::time_words;
    use crate::gpu::kernels::{al_outer, al_pcg};
    use crate::gpu::test_support;
    use crate::solver::al::{AlInput, AlScratch, al_step};

    /// A whole AL step without contact on the GPU against the CPU's `al_step`: the fixture's
    /// bodies from their start (also the first guess) towards the fixture's inertia targets,
    /// with no obstacle and no pair. Both converge in the same outer iterations, and the answers
    /// agree to 2e-4 of the motion (3e-8 m in 5 mm on lavapipe; an outer iteration run after
    /// convergence moves them 2.6e-6 m apart) and in f64 potential to 1e-4 of its drop.
    #[test]
    fn steps_as_the_cpu_without_contact() {
        let Some(ctx) = test_support::context() else { return };
        let mut f = fixture();
        // The start as the first guess: each Newton step then lowers the potential below the
        // start's, and the CPU keeps its last iterate. From a guess away from the start (the
        // fixture's, or a tenth of the way to it), the two Newton steps a contact-free step
        // takes end above the start's potential (the stable neo-Hookean Hessian is indefinite
        // even at rest, so its projection makes Newton linear), and the CPU rewinds to the
        // start: the GPU does not track the lowest-merit iterate yet.
        for (x, s) in f.targets.iter_mut().zip(&f.steps) {
            *x = Vec4::from_array(s.start);
        }
        let st = f.world.state();
        let solve = f.solve();
        let settings =
            AlSettings { static_slip: STATIC_SLIP, max_iterations: 10, newton_iterations: 4, ..AlSettings::default() };
        let d = Device::new(&ctx, &f, &solve, &[], MU as f32, DELTA as f32);
        let safe = storage(&ctx, "safe", &st.positions, true);
        let times = output::<u32>(&ctx, "times", time_words(d.n));
        let pcg_control = Device::control(&ctx, al_pcg::CONTROL_WORDS);
        let control = Device::control(&ctx, al_search::CONTROL_WORDS);
        let outer_control = Device::control(&ctx, al_outer::CONTROL_WORDS);
        let program = AlStepProgram::bind(
            &ctx,
            &AlNewtonSetup {
                vertices: d.n,
                index: &d.index_layout,
                records: &d.record_layout,
                elements: &d.elements,
                pairs: &d.pairs,
                pair_count: 0,
                static_slip: STATIC_SLIP as f32,
                cg_tolerance: settings.cg_tolerance as f32,
                cg_iterations: 200,
                force_tolerance: settings.force_tolerance as f32,
                newton_iterations: settings.newton_iterations,
            },
            &settings,
            st.tets.len(),
            &GpuObstacleSet::pack(&[]).expect("no obstacles"),
            &AlStepBuffers {
                newton: AlNewtonBuffers {
                    positions: &d.positions,
                    steps: &d.steps,
                    index: &d.index,
                    tets: &d.tets,
                    records: &d.records,
                    element: &d.element,
                    solved: &d.solved,
                    vectors: &d.vectors,
                    scalars: &d.scalars,
                    pcg_control: &pcg_control,
                    control: &control,
                },
                safe: &safe,
                times: &times,
                outer_control: &outer_control,
            },
        );
        Device::run(&ctx, |pass| program.record(pass));
        let words: Vec<u32> = read_blocking(&ctx, &outer_control, CONTROL_WORDS).expect("control");
        let gpu: Vec<DVec3> =
            read_blocking::<Vec4>(&ctx, &safe, d.n).expect("answer").iter().map(|p| p.truncate().as_dvec3()).collect();

        let (start, guess) = f.start_and_targets();
        let inertia = |v: usize| {
            let s = &f.steps[v];
            let y = Vec4::from_array(s.start).truncate() + Vec4::from_array(s.inertia).truncate();
            (s.inertia[3] as f64, y.as_dvec3())
        };
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
        let mut cpu = Vec::new();
        let stats = al_step(&input, &settings, &mut AlScratch::default(), &mut cpu);
        let iterations = words[CONTROL_ITERATIONS];
        eprintln!("al_step: GPU {iterations} outer iterations, CPU {stats:?}");

        assert!(stats.converged && !stats.rewound, "{stats:?}");
        assert_eq!(OuterState::decode(words[CONTROL_STATE]), Some(OuterState::Converged));
        assert_eq!(iterations, stats.iterations);
        let apart = gpu.iter().zip(&cpu).map(|(g, c)| (*g - *c).length()).fold(0.0, f64::max);
        let moved = cpu.iter().zip(&start).map(|(c, s)| (*c - *s).length()).fold(0.0, f64::max);
        assert!(apart <= 2e-4 * moved, "the answers are {apart:e} m apart; the CPU's moved up to {moved:e} m");
        let problem = f.problem(&solve);
        let (e0, e_cpu, e_gpu) = (problem.energy(st, &start), problem.energy(st, &cpu), problem.energy(st, &gpu));
        assert!(
            e_cpu < e0 && (e_gpu - e_cpu).abs() <= 1e-4 * (e0 - e_cpu),
            "potential {e0} → CPU {e_cpu}, GPU {e_gpu}"
        );
    }
}
