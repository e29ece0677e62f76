//! The solve phase of a VBD substep: a fixed number of sweeps ([VBD] Alg. 1), each a
//! Gauss–Seidel pass over the colours (vertices of one colour in parallel, each solving its
//! 3×3 Newton system and committing after the colour), then the Chebyshev mix with its
//! per-body divergence guard ([VBD] §3.8) and, with carriers, their block update. Contact is
//! detected again every `detection_interval` sweeps while anything is near.

use std::sync::atomic::Ordering;

use glam::Vec3A;

use super::Vbd;
use super::bounds::limit_move;
use super::chebyshev::{ChebyshevSchedule, mix};
use super::shared::Shared;
use super::vertex::{VertexInputs, update_vertex};
use crate::collision::limit_step;
use crate::solver::parallel::{SpinBarrier, chunk};
use crate::state::{FROZEN_CONTACT, FROZEN_DIVERGED};

/// Chebyshev stops for the rest of a step, for one body, when a sweep's squared residual of
/// that body exceeds this multiple of the smallest one seen in the step (the residual norm grew
/// tenfold): a within-step blow-up. Gauss–Seidel residuals fluctuate by far less while
/// converging.
const CHEBYSHEV_GROWTH_LIMIT: f64 = 100.0;

impl Vbd {
    /// The phase's work on thread `t` (see the module docs).
    pub(super) fn solve_worker(sh: &Shared<'_>, t: usize, barrier: &SpinBarrier) {
        let s = sh.settings;
        let iterations = s.iterations;
        let interval = s.surface_contact.detection_interval;
        let mut schedule = sh.plan.chebyshev.map(ChebyshevSchedule::new);
        for iteration in 0..iterations {
            // SAFETY: the carriers are updated only at the end of a sweep, behind a barrier,
            // and these inputs do not outlive the sweep.
            let inputs = unsafe { sh.vertex_inputs(sh.obstacles()) };
            if sh.plan.surface_on && interval > 0 && iteration > 0 && iteration % interval == 0 {
                // Re-detection refreshes the pairs' linearisation and re-centres the bounds.
                // With no pair stored and no vertex held by its bound, neither is needed: the
                // stored pairs are every pair that can come within the offset while the bounds
                // hold. (Free cloth then detects once per step instead of twice.)
                // SAFETY: the pair list changes only inside `detect`.
                let near = !unsafe { sh.surface.get() }.pairs.is_empty();
                let needed = near || sh.raised.bound_hit.load(Ordering::Relaxed);
                // Every worker has read the flag before it is cleared.
                barrier.wait();
                if needed {
                    if t == 0 {
                        sh.raised.bound_hit.store(false, Ordering::Relaxed);
                    }
                    Self::detect_and_catch_up(sh, t, barrier);
                }
            }
            let last = iteration + 1 == iterations;
            color_passes(sh, &inputs, last, t, barrier);
            if iteration == 0 {
                first_residuals(sh, t, barrier);
            }
            if schedule.is_some() {
                divergence_guard(sh, t, barrier);
            }
            // The step ends on a plain Gauss–Seidel sweep: the last over-relaxation would hand
            // amplified high-frequency error to the velocity update.
            if let Some(sch) = schedule.as_mut().filter(|_| !last) {
                chebyshev_mix(sh, &inputs, sch.next_omega(), t, barrier);
            }
            // After the last sweep the vertices would not answer a carrier's move.
            if !sh.carriers().is_empty() && !last {
                // Block Gauss–Seidel: the carriers move against the vertices' new positions.
                if t == 0 {
                    // SAFETY: thread 0 alone until the barrier; the other threads wait and
                    // hold no vertex inputs built on the carriers' obstacles.
                    unsafe {
                        sh.carrier.get_mut().update(
                            sh.carriers(),
                            sh.st,
                            sh.pos.as_slice(),
                            sh.start.as_slice(),
                            &s.contact,
                        );
                    }
                }
                barrier.wait();
            }
        }
    }
}

/// One sweep's colour passes: every vertex of a colour updates against the others (staged),
/// then commits.
fn color_passes(sh: &Shared<'_>, inputs: &VertexInputs<'_>, last: bool, t: usize, barrier: &SpinBarrier) {
    let st = sh.st;
    for c in 0..st.color_count() {
        let (c0, c1) = (st.color_offsets[c] as usize, st.color_offsets[c + 1] as usize);
        let range = chunk(c1 - c0, sh.plan.threads, t);
        let mut hit = false;
        for k in range.clone() {
            let v = st.color_vertices[c0 + k] as usize;
            if sh.local_global[st.vertex_body[v] as usize] {
                // Solved by local–global iterations after the sweeps: kept where it is.
                // SAFETY: as below.
                unsafe {
                    sh.color_new.set(c0 + k, sh.pos.get(v));
                    sh.residual2.set(v, 0.0);
                }
                continue;
            }
            let u = update_vertex(v, &sh.pos, inputs);
            hit |= u.bounded;
            // SAFETY: index c0 + k and vertex v belong to this thread's chunk of this color only.
            unsafe {
                sh.color_new.set(c0 + k, u.position.extend(0.0));
                sh.residual2.set(v, u.residual2);
                // Bit 1: touched a contact this step; bit 2: held by its displacement bound in
                // the last sweep (the safety check's clamp lock).
                let clamped = u.bounded && last;
                if u.in_contact || clamped {
                    sh.in_contact.set(v, sh.in_contact.get(v) | u32::from(u.in_contact) | (u32::from(clamped) << 1));
                }
            }
        }
        if hit {
            sh.raised.bound_hit.store(true, Ordering::Relaxed);
        }
        barrier.wait();
        for k in range {
            let v = st.color_vertices[c0 + k] as usize;
            // SAFETY: commit phase: each vertex of this color is written by exactly one thread
            // and read by none until the barrier.
            unsafe { sh.pos.set(v, sh.color_new.get(c0 + k)) };
        }
        barrier.wait();
    }
}

/// The first sweep's residual per body: the force at the initial guess, which the step must
/// reduce (the safety check's progress test).
fn first_residuals(sh: &Shared<'_>, t: usize, barrier: &SpinBarrier) {
    if t == 0 {
        // SAFETY: thread 0 alone; residuals were written in the color passes, which ended at
        // the barrier.
        unsafe {
            for b in 0..sh.body_first_residual2.len() {
                sh.body_first_residual2.set(b, 0.0);
            }
            for &v in &sh.st.color_vertices {
                let b = sh.st.vertex_body[v as usize] as usize;
                sh.body_first_residual2.set(b, sh.body_first_residual2.get(b) + sh.residual2.get(v as usize) as f64);
            }
        }
    }
    barrier.wait();
}

/// Thread 0 decides, per body, whether the Chebyshev mix may run after this sweep.
fn divergence_guard(sh: &Shared<'_>, t: usize, barrier: &SpinBarrier) {
    if t == 0 {
        let st = sh.st;
        // SAFETY: thread 0 alone in this phase; residuals and contact flags were written in
        // the color passes, which ended at the barrier.
        unsafe {
            for b in 0..sh.body_residual2.len() {
                sh.body_residual2.set(b, 0.0);
            }
            for &v in &st.color_vertices {
                let (v, b) = (v as usize, st.vertex_body[v as usize] as usize);
                sh.body_residual2.set(b, sh.body_residual2.get(b) + sh.residual2.get(v) as f64);
                // A body touching anything this step is not accelerated at all: mixing only its
                // free vertices would shear it against the ones in contact and undo the rigid
                // correction ([VBD] §3.8 skips contact vertices; acceleration is off for
                // islands in contact).
                if sh.in_contact.get(v) & 1 != 0 {
                    sh.frozen.set(b, sh.frozen.get(b).max(FROZEN_CONTACT));
                }
            }
            // Divergence guard: over-relaxation is only safe while the sweeps contract; a body
            // whose residual blew up is not accelerated for the rest of the step. Per body, in
            // a fixed order, so one body never changes another's result.
            for b in 0..sh.body_residual2.len() {
                let (r2, min) = (sh.body_residual2.get(b), sh.body_min_residual2.get(b));
                if !(r2 <= CHEBYSHEV_GROWTH_LIMIT * min) {
                    sh.frozen.set(b, FROZEN_DIVERGED);
                    sh.raised.chebyshev_stopped.store(true, Ordering::Relaxed);
                }
                sh.body_min_residual2.set(b, min.min(r2));
            }
        }
    }
    barrier.wait();
}

/// The Chebyshev mix of the sweep's result with the one before last, weight `omega`, each move
/// limited by the contact bounds and the obstacles' path clamp.
fn chebyshev_mix(sh: &Shared<'_>, inputs: &VertexInputs<'_>, omega: f32, t: usize, barrier: &SpinBarrier) {
    let st = sh.st;
    for k in chunk(st.color_vertices.len(), sh.plan.threads, t) {
        let v = st.color_vertices[k] as usize;
        // SAFETY: one writer per vertex (disjoint chunks of the free-vertex list); no thread
        // reads another vertex in this phase.
        unsafe {
            let x_bar = Vec3A::from_vec4(sh.pos.get(v));
            let x_nm2 = Vec3A::from_vec4(sh.prev2.get(v));
            let mut x = x_bar;
            // Frozen bodies stay at the Gauss–Seidel result (see above), and so do the vertices
            // of span contacts, whose limit assumes the span's other vertices hold still (`spans`).
            let edge = !sh.surface.get().obstacle_spans.row(v).is_empty();
            let b = st.vertex_body[v] as usize;
            if sh.frozen.get(b) == 0 && !edge && !sh.local_global[b] {
                let mixed = mix(omega, x_bar, x_nm2);
                // SAFETY: the pair lists change only in detection phases.
                let within = limit_move(v, mixed, sh.clamp.get(v), sh.surface.get());
                if within != mixed {
                    sh.raised.bound_hit.store(true, Ordering::Relaxed);
                }
                x = limit_step(inputs.obstacles, st.vertex_body[v], x_bar, within);
            }
            let x = x.extend(0.0);
            sh.pos.set(v, x);
            sh.prev2.set(v, sh.prev1.get(v));
            sh.prev1.set(v, x);
        }
    }
    barrier.wait();
}
