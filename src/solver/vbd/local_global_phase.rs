//! The bodies of a substep that take local–global iterations (`solver::local_global`) instead
//! of the sweeps: which ones (after detection, when the contact set is known) and their solve,
//! a parallel phase after the sweeps on the same worker threads. The sweeps leave these bodies
//! where they are; the finish phase turns their result into velocities like any other's.

use super::Vbd;
use super::VbdSettings;
use crate::collision::Obstacle;
use crate::collision::surface_pairs::pair_bodies;
use crate::solver::fast_path::Substep;
use crate::solver::local_global::{BodySolve, PlanInputs};
use crate::state::SimState;

impl Vbd {
    /// Marks the bodies that take local–global iterations this substep; true when any does.
    pub(super) fn plan_local_global(&mut self, state: &SimState, substep: &Substep<'_>, s: &VbdSettings) -> bool {
        if state.bodies.iter().all(|b| b.solver == crate::solver::local_global::SOLVER_VBD) {
            self.local_global.idle();
            self.body_scratch.local_global.fill(false);
            return false;
        }
        // Bodies with a surface pair or a span contact at the last detection.
        let mut near = vec![false; state.bodies.len()];
        for p in &self.surface.pairs {
            let (a, b) = pair_bodies(state, p.vertices);
            near[a as usize] = true;
            near[b as usize] = true;
        }
        for v in 0..state.vertex_count() {
            if !self.surface.obstacle_spans.row(v).is_empty() {
                near[state.vertex_body[v] as usize] = true;
            }
        }
        let obstacles: &[Obstacle] =
            if substep.carriers.is_empty() { substep.obstacles } else { &self.carrier_sweep.obstacles };
        let inputs = PlanInputs {
            state,
            start: &self.start,
            inertia: &self.inertia,
            velocity: &self.velocity,
            near_surface: &near,
            obstacles,
            offset: s.contact.offset,
            h: substep.h,
            sweeps: s.iterations,
        };
        let any = self.local_global.plan(&inputs, &s.local_global);
        self.body_scratch.local_global.copy_from_slice(&self.local_global.active);
        any
    }

    /// The planned bodies' local–global iterations, with their force residuals at the first
    /// and the last iterate (for the safety check's progress test, as the sweeps leave them).
    pub(super) fn solve_local_global(&mut self, state: &mut SimState, substep: &Substep<'_>, s: &VbdSettings) {
        let mut lg = std::mem::take(&mut self.local_global);
        {
            let (bodies, solver) = lg.begin_solve(state.vertex_count(), state.tets.len());
            let iterations = s.local_global.iterations.max(1);
            self.run_phase(state, substep, s, |sh, t, barrier| {
                for (b, f) in &bodies {
                    // SAFETY: the predict phase was the last to write these arrays.
                    let inputs = unsafe {
                        BodySolve {
                            state: sh.st,
                            start: sh.start.as_slice(),
                            inertia: sh.inertia.as_slice(),
                            velocity: sh.velocity.as_slice(),
                            pos: &sh.pos,
                            threads: sh.plan.threads,
                            velocities: sh.vel.as_slice(),
                            h: sh.substep.h,
                            spin: sh.spins[*b].map(|s| (s.center, s.rotation)),
                        }
                    };
                    // SAFETY: every thread solves the same bodies in the same order; the
                    // bodies' positions are written only inside the solve.
                    let residuals = unsafe { solver.solve(&inputs, *b, f, iterations, t, barrier) };
                    if t == 0 {
                        // SAFETY: thread 0 alone until the barrier; the solve has returned on
                        // every thread.
                        unsafe {
                            for (&v, g) in f.rows().iter().zip(solver.gradient()) {
                                sh.residual2.set(v as usize, g.length_squared());
                            }
                            sh.body_first_residual2.set(*b, residuals.first);
                            sh.body_residual2.set(*b, residuals.last);
                            sh.body_min_residual2.set(*b, sh.body_min_residual2.get(*b).min(residuals.last));
                        }
                    }
                    barrier.wait();
                }
            });
        }
        self.local_global = lg;
    }
}
