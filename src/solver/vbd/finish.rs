//! The finish phase of a VBD substep: each vertex's velocity and realised acceleration from the
//! solved positions (the integrator's update), then what the substep measured.

use glam::Vec3A;

use super::Vbd;
use super::shared::Shared;
use crate::solver::fast_path::FastStats;
use crate::solver::integrator::realised_acceleration;
use crate::solver::parallel::{SpinBarrier, chunk};
use crate::state::{SimState, VERTEX_NO_HISTORY};

impl Vbd {
    /// The phase's work on thread `t` (see the module docs).
    pub(super) fn finish_worker(sh: &Shared<'_>, t: usize, _barrier: &SpinBarrier) {
        for v in chunk(sh.st.vertex_count(), sh.plan.threads, t) {
            // SAFETY: per-vertex, own range only.
            unsafe {
                // Δx = (x − x^(0)) + (x^(0) − x^n): the sweeps' motion (a difference of nearby
                // floats, exact) plus the exact initial offset. Differencing x and x^n directly
                // would add one ulp of |x| per step (2.4e-7 m at 2 m), which the velocity
                // amplifies by γ/h: 1.5e-4 m of error in a 1 s free fall.
                let x = Vec3A::from_vec4(sh.pos.get(v));
                let dx = (x - Vec3A::from_vec4(sh.init_position.get(v))) + Vec3A::from_vec4(sh.init_offset.get(v));
                let c = sh.velocity.get(v);
                let v_new = dx * c.w + Vec3A::from_vec4(c);
                let p = sh.predictor.get(v);
                let a_new = realised_acceleration(dx, Vec3A::from_vec4(p), p.w);
                sh.vel.set(v, v_new.extend(0.0));
                sh.acc.set(v, a_new.extend(0.0));
                sh.flags.set(v, sh.flags.get(v) & !VERTEX_NO_HISTORY);
            }
        }
    }

    /// What the substep measured, in a fixed order (independent of the thread count).
    pub(super) fn measure(&self, state: &SimState) -> FastStats {
        let residual =
            state.color_vertices.iter().map(|&v| self.residual2[v as usize] as f64).sum::<f64>().sqrt() as f32;
        let contact_vertices = self.in_contact.iter().filter(|&&c| c & 1 != 0).count() as u32;
        let pairs = &self.surface.pairs;
        FastStats {
            residual,
            contact_vertices,
            chebyshev_stopped: self.raised.chebyshev_stopped.load(std::sync::atomic::Ordering::Relaxed),
            contact_pairs: pairs.len() as u32,
            min_pair_distance: pairs.iter().map(|p| p.distance).fold(f32::INFINITY, f32::min),
            local_global: self.local_global.stats(),
        }
    }
}
