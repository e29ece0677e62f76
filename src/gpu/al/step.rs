//! An augmented-Lagrangian step on the GPU, recorded whole (the twin of `solver::al`'s
//! `al_step`): per outer iteration the pairs re-linearised at the safe iterate (`al_pairs`),
//! the subproblem's Newton iterations ([`AlNewton`]), the dual update, the step size
//! (`al_step_size`, and with surface pairs [`AlSurfacePairs`]) with the pairs it hit joining
//! the set, and the safe iterate's move with the schedule (`al_outer`).
//! Every outer iteration up to the cap is recorded; once the step has converged (or reached its
//! cap) the dispatch arguments of the iterations after it are zero, so they cost no work and
//! the host is never asked.

use crate::gpu::GpuContext;
use crate::gpu::al::al_merit::{AlMerit, AlMeritBuffers, AlMeritRun, AlMeritSetup};
use crate::gpu::al::al_outer::{AlOuter, AlOuterBuffers, AlOuterRun, ONE_ARGS, PAIR_ARGS, TET_ARGS, VERTEX_ARGS};
use crate::gpu::al::al_pairs::{AlPairs, AlPairsBound, AlPairsBuffers};
use crate::gpu::al::al_step_size::{AlStepSize, AlStepSizeBuffers, AlStepSizeRun, AlStepSizeSetup};
use crate::gpu::al::newton::{AlNewton, AlNewtonBuffers, AlNewtonSetup};
use crate::gpu::al::surface_pairs::{
    AlSurfacePairs, AlSurfacePairsBuffers, AlSurfacePairsSetup, AlSurfaceSource, surface_slots,
};
use crate::gpu::obstacles::GpuObstacleSet;
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
    /// The iterate of lowest merit so far (vec4).
    pub best: &'a wgpu::Buffer,
    /// `al_merit`'s control words (`INDIRECT`).
    pub merit_control: &'a wgpu::Buffer,
}

/// An AL step, bound.
pub struct AlStepProgram {
    outer: AlOuterRun,
    /// `None` when iterates do not compare (a kinematic vertex moves: its target is part of the
    /// answer, and the iterates carry it only part of the way).
    merit: Option<AlMeritRun>,
    pairs: AlPairsBound,
    newton: AlNewton,
    step_size: AlStepSizeRun,
    surface: Option<AlSurfacePairs>,
    iterations: u32,
}

/// Surface pairs in an AL step: the fast path's trees and surface, and where the body records
/// and `vertex_body` are. Their slots follow the vertex–obstacle table
/// ([`AlStepSurface::slots`] of them in `AlNewtonSetup::pair_count`).
#[derive(Clone, Copy)]
pub struct AlStepSurface<'a> {
    /// The trees and surface.
    pub source: AlSurfaceSource<'a>,
    /// Vertex–obstacle slots per vertex before the surface slots.
    pub obstacles: usize,
}

impl AlStepSurface<'_> {
    /// Surface slots the step holds.
    pub fn slots(&self) -> usize {
        surface_slots(self.source.surface.surface_vertex_count as usize)
    }
}

impl AlStepProgram {
    /// Binds a step with the Newton setup `n`, the settings `s` (outer cap, ε, `K_min`, `j_min`,
    /// the price cap, the offset), the first penalty `mu` \[N/m\] and the step's obstacles;
    /// `comparable`: the step answers with its iterate of lowest merit (the GPU finds each
    /// step whether a kinematic vertex moves within it, and then compares none); `false`
    /// records no comparison at all.
    #[allow(clippy::too_many_arguments)]
    pub fn bind(
        ctx: &GpuContext,
        n: &AlNewtonSetup<'_>,
        s: &AlSettings,
        mu: f32,
        tets: usize,
        obstacles: &GpuObstacleSet,
        comparable: bool,
        surface: Option<&AlStepSurface<'_>>,
        b: &AlStepBuffers<'_>,
    ) -> Self {
        let gate = b.outer_control;
        let outer = AlOuter::new(ctx).bind(
            ctx,
            [n.vertices, n.pair_count, tets],
            s,
            mu,
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
                    table: n.pairs.pairs,
                    bodies: n.records.bodies,
                    vertex_body: n.index.vertex_body,
                },
                &AlStepSizeBuffers {
                    safe: b.safe,
                    targets: b.newton.positions,
                    tets: b.newton.tets,
                    solved: b.newton.solved,
                    times: b.times,
                    element: b.newton.element,
                    records: b.newton.records,
                    index: b.newton.index,
                },
            )
            .gated(gate, VERTEX_ARGS, TET_ARGS);
        let surface = surface.map(|su| {
            AlSurfacePairs::bind(
                ctx,
                &AlSurfacePairsSetup {
                    source: su.source,
                    vertices: n.vertices,
                    obstacles: su.obstacles,
                    slots: su.slots(),
                    pairs: n.pairs,
                    bodies: n.records.bodies,
                    vertex_body: n.index.vertex_body,
                },
                &AlSurfacePairsBuffers {
                    safe: b.safe,
                    targets: b.newton.positions,
                    steps: b.newton.steps,
                    index: b.newton.index,
                    records: b.newton.records,
                    solved: b.newton.solved,
                    times: b.times,
                    element: b.newton.element,
                    outer: gate,
                },
            )
        });
        let merit = comparable.then(|| {
            AlMerit::new(ctx)
                .bind(
                    ctx,
                    &AlMeritSetup {
                        vertices: n.vertices,
                        elements: n.elements,
                        records: n.records,
                        pairs: n.pairs,
                        pair_count: n.pair_count,
                        obstacles,
                        price_cap: s.violation_price_cap as f32,
                    },
                    &AlMeritBuffers {
                        safe: b.safe,
                        best: b.best,
                        steps: b.newton.steps,
                        tets: b.newton.tets,
                        records: b.newton.records,
                        element: b.newton.element,
                        scalars: b.newton.scalars,
                        control: b.merit_control,
                    },
                )
                .gated(gate, ONE_ARGS)
        });
        Self { outer, merit, pairs, newton, step_size, surface, iterations: s.max_iterations }
    }

    /// The same step, opened only when the dispatch arguments at byte `at` of `gate` say so
    /// (the GPU's fallback: `al_gate`); an unopened step does no work.
    pub fn gated(mut self, gate: &wgpu::Buffer, at: u64) -> Self {
        self.outer = self.outer.gate_start(gate, at);
        self
    }

    /// Records the step into `pass`: the active set seeded with what the motion from the start
    /// towards the first guess runs into, then the outer iterations.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.outer.record_start(pass);
        self.outer.record_pins(pass);
        if let Some(m) = &self.merit {
            m.record_start(pass);
        }
        self.record_step_size(pass);
        for _ in 0..self.iterations {
            self.pairs.linearize.record(pass);
            self.newton.record(pass);
            self.pairs.dual.record(pass);
            self.record_step_size(pass);
            self.pairs.prune.record(pass);
            self.outer.record_move(pass);
            // Priced with the multipliers and offset of this iteration, before a stall's change.
            if let Some(m) = &self.merit {
                m.record_compare(pass);
            }
            self.outer.record_schedule(pass);
        }
        if let Some(m) = &self.merit {
            m.record_restore(pass);
        }
    }

    /// The step size with its hits joining the set: every hit (obstacles, tets, surface) is in
    /// before either add phase reads each vertex's earliest.
    fn record_step_size(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.step_size.record_hits(pass);
        if let Some(su) = &self.surface {
            su.record_hits(pass);
        }
        self.step_size.record_add(pass);
        if let Some(su) = &self.surface {
            su.record_add(pass);
        }
    }
}

#[cfg(test)]
mod tests {
    use glam::{DVec3, Vec4};

    use super::*;
    use crate::collision::Obstacle;
    use crate::gpu::al::al_outer::{CONTROL_ITERATIONS, CONTROL_STATE, CONTROL_WORDS, OuterState};
    use crate::gpu::al::al_pcg::{AlPair, PAIR_ABSENT};
    use crate::gpu::al::al_search;
    use crate::gpu::al::al_step_size::time_words;
    use crate::gpu::al::fixture::{Device, Fixture, MU, STATIC_SLIP, fixture};
    use crate::gpu::al::{al_merit, al_outer, al_pcg};
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::test_support;
    use crate::solver::al::{AlInput, AlScratch, AlStats, al_step};

    /// The GPU's answer, outer iterations, state and pairs in the set at the end.
    type GpuStep = (Vec<DVec3>, u32, Option<OuterState>, usize);

    /// Runs a whole AL step on the GPU and the CPU's `al_step` from the fixture's start, with
    /// `guess_share` of the way to its targets as the first guess, and `obstacles`; returns the GPU's answer and outer iterations
    /// and state, and the CPU's answer and stats.
    fn both(
        mut f: Fixture,
        guess_share: f32,
        obstacles: &[Obstacle],
        one_workgroup: bool,
    ) -> Option<(GpuStep, (Vec<DVec3>, AlStats))> {
        let ctx = test_support::context()?;
        for (x, s) in f.targets.iter_mut().zip(&f.steps) {
            let start = Vec4::from_array(s.start);
            *x = start + (*x - start) * guess_share;
        }
        let st = f.world.state();
        let solve = f.solve();
        let settings =
            AlSettings { static_slip: STATIC_SLIP, max_iterations: 10, newton_iterations: 4, ..AlSettings::default() };
        let (start, guess) = f.start_and_targets();
        // μ as the CPU's step sets it: a tenth of the largest diagonal entry of ∇²E at the start.
        let mut problem = f.problem(&solve);
        problem.gradient_hessian(st, &start, &mut vec![DVec3::ZERO; problem.len()]);
        let mu = (0.1 * problem.max_diagonal()).max(1e-9);
        let d = Device::with_table(&ctx, &f, &solve, obstacles.len(), mu as f32, settings.offset as f32);
        let safe = storage(&ctx, "safe", &st.positions, true);
        let times = output::<u32>(&ctx, "times", time_words(d.n));
        let pcg_control = Device::control(&ctx, al_pcg::CONTROL_WORDS);
        let control = Device::control(&ctx, al_search::CONTROL_WORDS);
        let outer_control = Device::control(&ctx, al_outer::CONTROL_WORDS);
        let program = AlStepProgram::bind(
            &ctx,
            &AlNewtonSetup { one_workgroup, ..d.newton_setup(&settings, 200) },
            &settings,
            mu as f32,
            st.tets.len(),
            &GpuObstacleSet::pack(obstacles).expect("obstacles"),
            true,
            None,
            &AlStepBuffers {
                newton: d.newton_buffers(&pcg_control, &control),
                safe: &safe,
                times: &times,
                outer_control: &outer_control,
                best: &output::<Vec4>(&ctx, "best", d.n),
                merit_control: &Device::control(&ctx, al_merit::CONTROL_WORDS),
            },
        );
        Device::run(&ctx, |pass| program.record(pass));
        let words: Vec<u32> = read_blocking(&ctx, &outer_control, CONTROL_WORDS).expect("control");
        let gpu: Vec<DVec3> =
            read_blocking::<Vec4>(&ctx, &safe, d.n).expect("answer").iter().map(|p| p.truncate().as_dvec3()).collect();
        let table: Vec<u32> = read_blocking(&ctx, &d.element, d.pairs.offsets as usize).expect("table");
        let table: &[AlPair] = bytemuck::cast_slice(&table[d.pairs.pairs as usize..]);
        let pairs = table.iter().filter(|p| p.kind != PAIR_ABSENT).count();
        let inertia = |v: usize| {
            let s = &f.steps[v];
            let y = Vec4::from_array(s.start).truncate() + Vec4::from_array(s.inertia).truncate();
            (s.inertia[3] as f64, y.as_dvec3())
        };
        let input = AlInput {
            st,
            obstacles,
            start: &start,
            guess: &guess,
            solved: &solve,
            moves: &solve,
            inertia: &inertia,
            surface_pairs: false,
        };
        let mut cpu = Vec::new();
        let stats = al_step(&input, &settings, &mut AlScratch::default(), &mut cpu);
        Some(((gpu, words[CONTROL_ITERATIONS], OuterState::decode(words[CONTROL_STATE]), pairs), (cpu, stats)))
    }

    /// A whole AL step without contact on the GPU against the CPU's `al_step`: the fixture's
    /// bodies from their start (also the first guess) towards the fixture's inertia targets,
    /// with no obstacle and no pair; PCG and searches phase by phase, and each in one
    /// workgroup (the ground's test below runs that way only). Both converge in the same outer iterations, and the answers
    /// agree to 2e-4 of the motion (3e-8 m in 5 mm on lavapipe; an outer iteration run after
    /// convergence moves them 2.6e-6 m apart). The start is the first guess because from a
    /// guess away from it (the fixture's, or a tenth of the way to it) the two Newton steps a
    /// contact-free step takes end above the start's potential (the stable neo-Hookean Hessian
    /// is indefinite even at rest, so its projection makes Newton linear) and the CPU rewinds
    /// to the start: the GPU does not track the lowest-merit iterate yet.
    #[test]
    fn steps_as_the_cpu_without_contact() {
        for one_workgroup in [false, true] {
            let Some(((gpu, iterations, state, _), (cpu, stats))) = both(fixture(), 0.0, &[], one_workgroup) else {
                return;
            };
            assert!(stats.converged && !stats.rewound, "{stats:?}");
            assert_eq!(state, Some(OuterState::Converged));
            assert_eq!(iterations, stats.iterations);
            assert_close(&gpu, &cpu);
        }
    }

    /// Against a ground 0.2 mm below the jelly cube, which the inertia targets push its bottom
    /// vertices through: the GPU grows vertex–obstacle pairs as the CPU does (11 here), takes
    /// the CPU's outer iterations, rewinds as the CPU does to its iterate of lowest merit (the
    /// second of three), answers what the CPU answers, and no vertex ends closer to the ground
    /// than the CPU's closest pair less 1 µm.
    #[test]
    fn steps_as_the_cpu_against_the_ground() {
        let f = fixture();
        let obstacles = vec![Obstacle::ground(f.bottom() as f32 - 2e-4, 0.6)];
        let height = |p: &DVec3| obstacles[0].signed_distance(p.as_vec3().into()).0 as f64;
        let Some(((gpu, iterations, state, pairs), (cpu, stats))) = both(f, 0.0, &obstacles, true) else { return };
        assert!(stats.pairs > 0 && stats.converged, "{stats:?}");
        assert_eq!(pairs, stats.pairs, "pairs in the set at the end");
        assert_eq!(iterations, stats.iterations);
        assert_eq!(state, Some(OuterState::Converged));
        assert!(stats.rewound, "{stats:?}");
        assert_close(&gpu, &cpu);
        let lowest = |x: &[DVec3]| x.iter().map(height).fold(f64::INFINITY, f64::min);
        let (gpu_low, cpu_low) = (lowest(&gpu), lowest(&cpu));
        assert!(gpu_low > 0.0 && gpu_low >= stats.min_distance.min(cpu_low) - 1e-6, "GPU {gpu_low}, CPU {cpu_low}");
    }

    /// A step its gate does not open (the GPU's fallback in a safe substep) does nothing:
    /// with the step's and the Newton iterations' control words as `ended_control` makes them,
    /// every word, the safe iterate and the targets are as before. From zeroed words (a step
    /// "running") the idle outer iterations would count.
    #[test]
    fn an_unopened_step_does_nothing() {
        let Some(ctx) = test_support::context() else { return };
        let f = fixture();
        let solve = f.solve();
        let settings = AlSettings { max_iterations: 4, newton_iterations: 2, ..AlSettings::default() };
        let d = Device::with_table(&ctx, &f, &solve, 1, MU as f32, settings.offset as f32);
        let st = f.world.state();
        let obstacles = GpuObstacleSet::pack(&f.obstacles()).expect("obstacles");
        let gate = Device::control(&ctx, 3);
        let idle = |ended: bool| -> (Vec<u32>, Vec<u32>, Vec<Vec4>, Vec<Vec4>) {
            let safe = storage(&ctx, "safe", &st.positions, true);
            let pcg_control = Device::control(&ctx, al_pcg::CONTROL_WORDS);
            let control = Device::control(&ctx, al_search::CONTROL_WORDS);
            let outer_control = Device::control(&ctx, al_outer::CONTROL_WORDS);
            if ended {
                ctx.queue.write_buffer(&control, 0, bytemuck::cast_slice(&al_search::ended_control()));
                ctx.queue.write_buffer(&outer_control, 0, bytemuck::cast_slice(&al_outer::ended_control()));
            }
            let program = AlStepProgram::bind(
                &ctx,
                &AlNewtonSetup { one_workgroup: true, ..d.newton_setup(&settings, 20) },
                &settings,
                MU as f32,
                st.tets.len(),
                &obstacles,
                true,
                None,
                &AlStepBuffers {
                    newton: d.newton_buffers(&pcg_control, &control),
                    safe: &safe,
                    times: &output::<u32>(&ctx, "times", time_words(d.n)),
                    outer_control: &outer_control,
                    best: &output::<Vec4>(&ctx, "best", d.n),
                    merit_control: &Device::control(&ctx, al_merit::CONTROL_WORDS),
                },
            )
            .gated(&gate, 0);
            Device::run(&ctx, |pass| program.record(pass));
            (
                read_blocking(&ctx, &outer_control, CONTROL_WORDS).expect("outer"),
                read_blocking(&ctx, &control, al_search::CONTROL_WORDS).expect("search"),
                read_blocking(&ctx, &safe, d.n).expect("safe"),
                read_blocking(&ctx, &d.positions, d.n).expect("targets"),
            )
        };
        let (outer, search, safe, targets) = idle(true);
        assert_eq!(outer, al_outer::ended_control());
        assert_eq!(search, al_search::ended_control());
        assert_eq!((safe, targets), (st.positions.clone(), f.targets.clone()));
        let (outer, ..) = idle(false);
        assert!(outer[CONTROL_ITERATIONS] > 0, "{outer:?}");
    }

    /// The answers agree to 2e-4 of the CPU's motion from the start.
    fn assert_close(gpu: &[DVec3], cpu: &[DVec3]) {
        let f = fixture();
        let (start, _) = f.start_and_targets();
        let apart = gpu.iter().zip(cpu).map(|(g, c)| (*g - *c).length()).fold(0.0, f64::max);
        let moved = cpu.iter().zip(&start).map(|(c, s)| (*c - *s).length()).fold(0.0, f64::max);
        assert!(
            moved > 0.0 && apart <= 2e-4 * moved,
            "the answers are {apart:e} m apart; the CPU's moved up to {moved:e} m"
        );
    }
}
