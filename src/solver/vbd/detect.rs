//! The detect phase of a VBD substep, the collision stage whose contact set the sweeps consume:
//! each body's initial advance `x^n → x^(0)` scaled back so that none of its surface spans
//! enters a box, a sphere or a collider (`spans`) and no surface path crosses another (additive CCD, or the
//! last substep's bounds where they certify the paths; `contact`), then a detection at `x^(0)`
//! (pairs, vertex → pair lists, displacement bounds) that lets pins catch up as far as the new
//! bounds allow, and the surface spans' contacts with boxes, spheres and colliders.

use std::sync::atomic::Ordering;

use glam::Vec3A;

use super::Vbd;
use super::bounds::{advance_certified, limit_move};
use super::contact::{advance_scale, detect};
use super::shared::Shared;
use crate::solver::parallel::{SpinBarrier, chunk};
use crate::state::VERTEX_KINEMATIC;

impl Vbd {
    /// The phase's work on thread `t` (see the module docs).
    pub(super) fn detect_worker(sh: &Shared<'_>, t: usize, barrier: &SpinBarrier) {
        let st = sh.st;
        let (n, threads) = (st.vertex_count(), sh.plan.threads);
        // SAFETY: the carriers are not updated in this phase.
        let obstacles = unsafe { sh.obstacles() };
        // SAFETY: `start` is read-only after the prepare phase.
        let start = unsafe { sh.start.as_slice() };
        // Scales each vertex's initial advance x^n → x^(0) by `scale(v)`, pinned vertices too
        // if `pins` (a detection then lets them catch up).
        let scale_advance = |scale: &dyn Fn(usize) -> f32, pins: bool| {
            for v in chunk(n, threads, t) {
                // SAFETY: own range only.
                unsafe {
                    let s = scale(v);
                    if s < 1.0 && (pins || sh.flags.get(v) & VERTEX_KINEMATIC == 0) {
                        let offset = Vec3A::from_vec4(sh.init_offset.get(v)) * s;
                        let x = (Vec3A::from_vec4(start[v]) + offset).extend(0.0);
                        sh.init_offset.set(v, offset.extend(0.0));
                        sh.init_position.set(v, x);
                        sh.pos.set(v, x);
                        sh.prev1.set(v, x);
                        sh.prev2.set(v, x);
                    }
                }
            }
            barrier.wait();
        };
        if sh.plan.edge_obstacles {
            // Before the surface advance, which then certifies what is left of the paths.
            if t == 0 {
                // SAFETY: thread 0 alone until the barrier; `pos` is only read.
                unsafe {
                    let edges = &mut sh.surface.get_mut().obstacle_spans;
                    let held = edges.advance(st, obstacles, start, sh.pos.as_slice(), sh.settings.contact.offset);
                    sh.raised.edge_held.store(held, Ordering::Relaxed);
                }
            }
            barrier.wait();
            if sh.raised.edge_held.load(Ordering::Relaxed) {
                // SAFETY: the scale is read-only until the next detection.
                let scale = unsafe { &sh.surface.get().obstacle_spans.body_scale };
                scale_advance(&|v| scale[st.vertex_body[v] as usize], false);
            }
        }
        if sh.plan.surface_on {
            // SAFETY: the scratch is read-only until the next detection.
            if !advance_certified(chunk(n, threads, t), unsafe { sh.surface.get() }, start, &sh.pos) {
                sh.raised.advance_needed.store(true, Ordering::Relaxed);
            }
            barrier.wait();
            if sh.raised.advance_needed.load(Ordering::Relaxed) {
                advance_scale(t, threads, barrier, &sh.contact_context(), sh.surface, start, &sh.pos);
            } else if t == 0 {
                // SAFETY: thread 0 alone until the barrier below.
                unsafe { sh.surface.get_mut() }.body_scale.fill(1.0);
            }
            barrier.wait();
            // SAFETY: the scratch is read-only until the next detection.
            let scale = unsafe { &sh.surface.get().body_scale };
            scale_advance(&|v| scale[st.vertex_body[v] as usize], true);
            Self::detect_and_catch_up(sh, t, barrier);
        }
        if sh.plan.edge_obstacles {
            if t == 0 {
                // SAFETY: thread 0 alone until the barrier; `pos` is only read.
                unsafe {
                    let offset = sh.settings.contact.offset;
                    sh.surface.get_mut().obstacle_spans.detect(st, obstacles, sh.pos.as_slice(), offset)
                }
            }
            barrier.wait();
        }
    }

    /// A detection at the current positions, then pins move towards their targets as far as
    /// the new bounds allow (also the sweeps' scheduled re-detection).
    pub(super) fn detect_and_catch_up(sh: &Shared<'_>, t: usize, barrier: &SpinBarrier) {
        let threads = sh.plan.threads;
        detect(t, threads, barrier, &sh.contact_context(), sh.surface, &sh.pos, &sh.clamp);
        catch_up_kinematic(sh, t, barrier);
    }
}

/// Moves kinematic vertices toward their end-of-step targets as far as their contact bound
/// allows (after a detection; any motion inside the bound is certified collision-free).
fn catch_up_kinematic(sh: &Shared<'_>, t: usize, barrier: &SpinBarrier) {
    for v in chunk(sh.st.vertex_count(), sh.plan.threads, t) {
        // SAFETY: own range only; flags and clamp are read only in this phase.
        unsafe {
            if sh.flags.get(v) & VERTEX_KINEMATIC != 0 {
                let target = Vec3A::from_vec4(sh.substep.targets[v]);
                let within = limit_move(v, target, sh.clamp.get(v), sh.surface.get());
                if within != target {
                    // A lagging pin: detect again so it can catch up.
                    sh.raised.bound_hit.store(true, Ordering::Relaxed);
                }
                sh.pos.set(v, within.extend(0.0));
            }
        }
    }
    barrier.wait();
}
