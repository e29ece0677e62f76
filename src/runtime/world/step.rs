//! One step of the world, as named phases. Read this file to learn what a step does; each
//! phase is a call into the module that owns it (see `ARCHITECTURE.md`).
//!
//! ```text
//! World::step / step_with_hooks
//!  ├─ hooks.before_step   what moves this frame besides the soft bodies      hooks.rs, rapier/
//!  ├─ (GPU backend: the frame is recorded and submitted, in the same phases)   world/gpu/
//!  ├─ plan                iterations from the budget, deadline, solver settings
//!  ├─ per substep
//!  │   ├─ begin           pins and their targets, snapshot of x^t and v^t, the substep's obstacles
//!  │   ├─ predict         inertia targets and the initial guess              FastPath::predict
//!  │   ├─ detect          the contact set at the initial guess               FastPath::detect
//!  │   ├─ solve           a fixed number of iterations                       FastPath::solve
//!  │   ├─ (fast finish)   velocities from the solved positions               FastPath::finish
//!  │   ├─ check           the safety check, island by island                 fallback::check
//!  │   ├─ fall back       islands the check rejected, redone by the AL step  fallback::redo
//!  │   │                  (every body held: the sweeps are skipped, all islands redone)
//!  │   └─ finish          non-finite bodies put back, time, hooks.after_substep
//!  └─ finish              the planner's cost, the report; hooks.after_step
//! ```

use std::time::{Duration, Instant};

use glam::{Vec3A, Vec4};

use super::World;
use crate::body::SoftBodyHandle;
use crate::collision::{Obstacle, ObstacleShape, PosedShape};
use crate::runtime::assemble::rebuild_color_lists;
use crate::runtime::config::{Backend, FallbackPolicy};
use crate::runtime::events::PliantEvent;
use crate::runtime::fallback::{Settle, SubstepInfo, check_substep, fall_back, held_substep};
use crate::runtime::hooks::{StepHooks, SubstepContext};
use crate::runtime::kinematics::{update_pin_flags, write_targets};
use crate::runtime::report::{PhaseTimes, StepPath, StepReport};
use crate::solver::check::FallbackReason;
use crate::solver::check::energy;
use crate::solver::fast_path::{FastPath, FastResult, FastStats, Substep};
use crate::solver::vbd::VbdSettings;
use crate::solver::vbd::carrier::{compose, pose_change};
use crate::state::{SimState, VERTEX_KINEMATIC};

/// What the plan phase decides for a frame.
struct FramePlan {
    /// Substep length \[s\].
    h: f32,
    /// The fast path's settings (its iterations from the budget planner).
    settings: VbdSettings,
    /// Fallbacks stop at the end of the frame's budget with their current iterate.
    deadline: Option<Instant>,
}

impl World {
    /// Advances the world by one frame (`config.dt`, in `config.substeps` substeps).
    ///
    /// On the GPU backend the step is recorded and submitted and `step()` returns without
    /// waiting for it; see [`StepReport`] for what such a report holds and
    /// [`World::latest_positions`] for the newest finished frame.
    pub fn step(&mut self) -> StepReport {
        self.motion.clear();
        self.step_frame(None)
    }

    /// [`World::step`] with `hooks` called at its named points: before the frame (the frame's
    /// moving obstacles), after every substep and after the frame (see [`StepHooks`]; the
    /// rapier coupling is one). A hooked step runs on the CPU.
    pub fn step_with_hooks(&mut self, hooks: &mut dyn StepHooks) -> StepReport {
        self.sync();
        let mut motion = std::mem::take(&mut self.motion);
        motion.clear();
        hooks.before_step(self, &mut motion);
        self.motion = motion;
        let mut report = self.step_frame(Some(&mut *hooks));
        hooks.after_step(self, &mut report);
        report
    }

    /// One frame, with `hooks` after every substep when given.
    fn step_frame(&mut self, mut hooks: Option<&mut dyn StepHooks>) -> StepReport {
        let wall = Instant::now();
        self.sync();
        #[cfg(feature = "gpu")]
        if let Some(report) = self.try_step_gpu(wall, hooks.is_some()) {
            return report;
        }
        let plan = self.plan(wall);
        let c = &self.config;
        let s = &plan.settings;
        let mut report = StepReport {
            backend: Backend::Cpu,
            substeps: c.substeps,
            iterations: s.iterations,
            threads: s.threads,
            ..StepReport::default()
        };
        // Carried obstacles: the rest of the frame's motion, re-based after each substep on the
        // pose the substep solved.
        let mut remaining = self.carried_motion();
        let mut swept_substeps = 0;
        for substep in 0..self.config.substeps {
            let t0 = self.time;
            self.begin_substep(substep, t0, plan.h);
            // The substep's obstacles live in a buffer of the world's, taken for the substep.
            let mut obstacles = std::mem::take(&mut self.substep_obstacles);
            self.substep_obstacles_into(substep, &remaining, &mut obstacles);
            let fast_start = Instant::now();
            // Sweeps whose result every island would throw away are skipped, leaving the
            // budget to the fallback.
            let swept = !self.all_held();
            let stats =
                if swept { self.take_fast_step(&obstacles, &plan, &mut report.phases) } else { FastStats::default() };
            let fast_ms = fast_start.elapsed().as_secs_f64() * 1e3;
            self.solved_obstacles(&mut obstacles, &mut remaining);
            if swept {
                record_fast_stats(&stats, &mut report);
                swept_substeps += 1;
            }
            let info = SubstepInfo {
                h: plan.h,
                substep,
                iterations: s.iterations,
                fast_ms,
                residual: stats.residual,
                deadline: plan.deadline,
                contact: s.contact,
                swept,
            };
            // Check, then fall back: the islands the check rejects are redone from the
            // substep's start by the augmented-Lagrangian step.
            let checked = if swept {
                check_substep(self.settle(), &obstacles, &info, &mut report)
            } else {
                held_substep(self.settle(), &info)
            };
            report.phases.check += checked.ms;
            let fallback_start = Instant::now();
            fall_back(self.settle(), checked, &obstacles, &info, &mut report);
            report.phases.fallback += fallback_start.elapsed().as_secs_f64() * 1e3;
            self.report_lagging(&report, substep, t0 + plan.h as f64);
            self.finish_substep(substep, t0, plan.h, &obstacles, &mut report, hooks.as_deref_mut());
            self.substep_obstacles = obstacles;
        }
        self.finish_frame(&remaining, swept_substeps, s.iterations, wall, report)
    }

    /// An event for each island of substep `substep` whose fallback step was cut short and
    /// left it behind the world's clock, or that dropped time.
    fn report_lagging(&mut self, report: &StepReport, substep: u32, time: f64) {
        let lagging = report.islands.iter().filter(|i| {
            i.substep == substep && ((i.path == StepPath::FallbackTruncated && i.lag > 0.0) || i.time_dropped > 0.0)
        });
        for i in lagging {
            self.events.push(PliantEvent::IslandLagging {
                bodies: i.bodies.clone(),
                time,
                travelled: i.travelled,
                lag: i.lag,
                time_dropped: i.time_dropped,
            });
        }
    }

    /// Whether every body is on the fallback this substep (held, or sent there by a failure
    /// found elsewhere), so the fast path's sweeps would be thrown away. Not with
    /// moving colliders or carriers, whose poses the fast path solves.
    fn all_held(&self) -> bool {
        self.config.fallback != FallbackPolicy::Never
            && self.motion.obstacles.is_empty()
            && self.motion.carriers.is_empty()
            && self.fallback.holds_all(self.slots.iter().map(|s| s.handle), self.frame + 1)
    }

    /// The world's parts the check and fallback phases work on.
    fn settle(&mut self) -> Settle<'_> {
        Settle {
            state: &mut self.state,
            snapshot: &self.snapshot,
            fast: &self.vbd,
            targets: &self.targets,
            runtime: &mut self.fallback,
            slots: &self.slots,
            config: &self.config,
            frame: self.frame + 1,
        }
    }

    /// The plan phase: the frame's iteration count (from the budget when there is one), the
    /// fallbacks' deadline and the fast path's settings.
    fn plan(&mut self, wall: Instant) -> FramePlan {
        let c = &self.config;
        let threads = c.resolved_threads(self.state.color_vertices.len());
        let iterations = self.fallback.planner.iterations(c.budget_ms, c.substeps, c.iterations);
        FramePlan {
            h: c.substep_dt(),
            settings: c.vbd_settings(iterations, threads),
            deadline: c.budget_ms.map(|b| wall + Duration::from_secs_f64(b * 1e-3)),
        }
    }

    /// The frame's carried obstacles (colliders of dynamic rigid bodies solved with the soft
    /// ones), whose remaining motion each substep re-bases on the pose it solved.
    fn carried_motion(&self) -> Vec<Option<PosedShape>> {
        self.motion
            .obstacles
            .iter()
            .map(|o| match &o.shape {
                ObstacleShape::Posed(p) if p.carrier.is_some() => Some(p.clone()),
                _ => None,
            })
            .collect()
    }

    /// The begin phase of a substep: pins taking hold or releasing, the kinematic vertices'
    /// targets at the substep's end, the carriers at the substep's end, and the snapshot the
    /// substep can be rolled back to.
    fn begin_substep(&mut self, substep: u32, t0: f64, h: f32) {
        if update_pin_flags(&mut self.state, &mut self.bodies, &self.slots, t0, &mut self.pin_marks) {
            rebuild_color_lists(&mut self.state, &self.bodies, &self.slots);
        }
        self.targets.resize(self.state.vertex_count(), Vec4::ZERO);
        let left = self.config.substeps - substep;
        write_targets(&self.bodies, &self.slots, &self.state, t0, h as f64, left, &mut self.targets);
        let n = self.config.substeps as f32;
        self.carriers.clear();
        self.carriers.extend(self.motion.carriers.iter().map(|b| b.at((substep + 1) as f32 / n, h)));
        self.snapshot.save(&self.state);
    }

    /// The substep's obstacles into `out`: the static ones, then the frame's moving ones at this
    /// substep's share of their motion (a carried one from where the last substep solved it).
    fn substep_obstacles_into(&self, substep: u32, remaining: &[Option<PosedShape>], out: &mut Vec<Obstacle>) {
        let c = &self.config;
        out.clear();
        out.extend_from_slice(&self.obstacles);
        let n = c.substeps as f32;
        let (s0, s1) = (substep as f32 / n, (substep + 1) as f32 / n);
        let left = (c.substeps - substep) as f32;
        let moving = self.motion.obstacles.iter().zip(remaining).map(|(o, r)| match (&o.shape, r) {
            (_, Some(r)) => Obstacle { shape: ObstacleShape::Posed(r.between(0.0, 1.0 / left)), ..o.clone() },
            (ObstacleShape::Posed(p), None) if c.substeps > 1 => {
                Obstacle { shape: ObstacleShape::Posed(p.between(s0, s1)), ..o.clone() }
            }
            _ => o.clone(),
        });
        out.extend(moving);
    }

    /// The fast path's phases for one substep: predict, detect, solve, and its finish
    /// (velocities from the solved positions).
    fn take_fast_step(&mut self, obstacles: &[Obstacle], plan: &FramePlan, phases: &mut PhaseTimes) -> FastStats {
        let sub = Substep { h: plan.h, obstacles, targets: &self.targets, carriers: &self.carriers };
        let (fast, state, s) = (&mut self.vbd, &mut self.state, &plan.settings);
        let mut t = Instant::now();
        let mut lap = |total: &mut f64| {
            let now = Instant::now();
            *total += (now - t).as_secs_f64() * 1e3;
            t = now;
        };
        fast.predict(state, &sub, s);
        lap(&mut phases.predict);
        fast.detect(state, &sub, s);
        lap(&mut phases.detect);
        fast.solve(state, &sub, s);
        lap(&mut phases.solve);
        let stats = fast.finish(state, &sub, s);
        lap(&mut phases.finish);
        stats
    }

    /// The substep's obstacles with each carried one where the substep solved its body, and
    /// the remaining frame motion of the carried ones re-based on that pose.
    fn solved_obstacles(&self, obstacles: &mut Vec<Obstacle>, remaining: &mut [Option<PosedShape>]) {
        let fixed = self.obstacles.len();
        let moved = self.vbd.moved_obstacles();
        if moved.len() == obstacles.len() {
            rebase_carried(remaining, &obstacles[fixed..], &moved[fixed..]);
            obstacles.clear();
            obstacles.extend_from_slice(moved);
        } else {
            // Nothing solved a carrier: the substep went as predicted.
            let predicted = &obstacles[fixed..];
            rebase_carried(remaining, predicted, predicted);
        }
    }

    /// The finish phase of a substep: bodies left non-finite are put back at rest and named
    /// in an event, time advances, and the hooks see the substep.
    #[allow(clippy::too_many_arguments)]
    fn finish_substep(
        &mut self,
        substep: u32,
        t0: f64,
        h: f32,
        obstacles: &[Obstacle],
        report: &mut StepReport,
        hooks: Option<&mut (dyn StepHooks + '_)>,
    ) {
        self.roll_back_non_finite(t0, report);
        self.time = t0 + h as f64;
        report.pin_lag = pin_lag(&self.state, &self.targets);
        let Some(hooks) = hooks else { return };
        let contact = self.config.contact_model(h);
        // A body the fallback redid (or left where it was) in this substep holds the
        // fallback's state: the fast path's residuals and contact impulses are not its.
        let redone: Vec<SoftBodyHandle> = report
            .islands
            .iter()
            .filter(|i| i.substep == substep && i.path != StepPath::Fast)
            .flat_map(|i| i.bodies.iter().copied())
            .collect();
        // Momentum goes between soft and rigid bodies: the sweeps' own drift must not. Only
        // the sweeps': read as drift, the fast path's residual at a redone body (its inertia
        // term, its own momentum) was taken out once more, and a projectile held against a
        // wall had its velocity doubled every frame.
        self.momentum.skip.clear();
        self.momentum
            .skip
            .extend(self.slots.iter().map(|s| report.rolled_back.contains(&s.handle) || redone.contains(&s.handle)));
        crate::solver::momentum::remove_momentum_residual(
            &mut self.state,
            &mut self.vbd,
            obstacles,
            contact,
            h,
            &mut self.momentum,
        );
        hooks.after_substep(&mut SubstepContext {
            state: &mut self.state,
            fast: &mut self.vbd,
            obstacles,
            moving_start: self.obstacles.len(),
            contact,
            h,
            slots: &self.slots,
            rolled_back: &report.rolled_back,
            redone: &redone,
        });
    }

    /// Puts every body with a non-finite position or velocity back at its substep's start, at
    /// rest, and names it in an event and the report: a running simulation never hands back
    /// NaN.
    fn roll_back_non_finite(&mut self, t0: f64, report: &mut StepReport) {
        for s in &self.slots {
            if let Some((i, field)) = energy::first_non_finite(&self.state, s.range()) {
                self.snapshot.restore_at_rest(&mut self.state, s.range());
                report.nan_detected = true;
                if !report.rolled_back.contains(&s.handle) {
                    report.rolled_back.push(s.handle);
                }
                self.events.push(PliantEvent::NonFiniteState {
                    body: s.handle,
                    name: self.bodies[s.handle].name().to_owned(),
                    time: t0,
                    vertex: (i - s.vertex_start as usize) as u32,
                    field,
                });
            }
        }
    }

    /// The finish phase of a frame: the carried obstacles end where the last substep put them,
    /// the planner learns the frame's cost, and the report is completed.
    fn finish_frame(
        &mut self,
        remaining: &[Option<PosedShape>],
        swept_substeps: u32,
        iterations: u32,
        wall: Instant,
        mut report: StepReport,
    ) -> StepReport {
        for (o, r) in self.motion.obstacles.iter_mut().zip(remaining) {
            if let (ObstacleShape::Posed(p), Some(r)) = (&mut o.shape, r) {
                *p = p.with_end(r.start);
            }
        }
        if swept_substeps > 0 {
            let planner = &mut self.fallback.planner;
            planner.observe(&report.phases, swept_substeps, iterations);
            let energy = report.islands.iter().any(|i| i.reason == Some(FallbackReason::EnergyGain));
            planner.observe_energy(energy, report.energy_share, iterations, self.config.iterations);
        }
        self.frame += 1;
        report.frame = self.frame;
        report.state_frame = self.frame;
        report.time = self.time;
        if self.config.measure_state {
            self.measure(&mut report);
        }
        report.wall_ms = wall.elapsed().as_secs_f64() * 1e3;
        report.game_thread_ms = report.wall_ms;
        report
    }
}

/// The fast path's measures in the report (the last substep's stand).
fn record_fast_stats(stats: &FastStats, report: &mut StepReport) {
    report.residual = stats.residual;
    report.contact_vertices = stats.contact_vertices;
    report.contact_pairs = stats.contact_pairs;
    report.local_global = stats.local_global;
    report.min_pair_distance = stats.min_pair_distance.is_finite().then_some(stats.min_pair_distance);
}

/// Re-bases each carried obstacle's remaining frame motion (`remaining`, per moving obstacle)
/// on the end pose its substep solved (`moved`) instead of the one it predicted (`predicted`).
fn rebase_carried(remaining: &mut [Option<PosedShape>], predicted: &[Obstacle], moved: &[Obstacle]) {
    for ((r, p), m) in remaining.iter_mut().zip(predicted).zip(moved) {
        if let (Some(r), ObstacleShape::Posed(p), ObstacleShape::Posed(m)) = (r, &p.shape, &m.shape) {
            let change = pose_change(&p.end, &m.end);
            *r = r.with_poses(m.end, compose(&change, &r.end));
        }
    }
}

/// Largest distance of a kinematic vertex from its end-of-step target \[m\].
fn pin_lag(st: &SimState, targets: &[Vec4]) -> f32 {
    st.positions
        .iter()
        .zip(&st.flags)
        .zip(targets)
        .filter(|((_, f), _)| **f & VERTEX_KINEMATIC != 0)
        .map(|((x, _), t)| (Vec3A::from_vec4(*x) - Vec3A::from_vec4(*t)).length())
        .fold(0.0, f32::max)
}
