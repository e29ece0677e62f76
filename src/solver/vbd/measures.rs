//! What a finished step leaves for the safety check (`solver/check/mod.rs`): which vertices
//! ended held by their displacement bound, each body's force residual at the first and last
//! sweep, and the kinematic targets the step used.

use glam::Vec4;

use super::VbdScratch;
use crate::state::SimState;

impl VbdScratch {
    /// Whether vertex `v` ended the last step held by its displacement bound (its last sweep's
    /// Newton step was cut short by the conservative clamp).
    pub(crate) fn clamped(&self, v: usize) -> bool {
        self.in_contact.get(v).is_some_and(|&c| c & 2 != 0)
    }

    /// Per body, the last step's force residual² of its first and of its last sweep
    /// (`(‖f‖²` at the initial guess, `‖f‖²` at the end`)`) \[N²\].
    pub(crate) fn body_residuals(&self, st: &SimState, out: &mut Vec<(f64, f64)>) {
        out.clear();
        out.extend(self.body_scratch.first_residual2.iter().take(st.bodies.len()).map(|&r| (r, 0.0)));
        out.resize(st.bodies.len(), (0.0, 0.0));
        for &v in &st.color_vertices {
            if let Some(r) = self.residual2.get(v as usize) {
                out[st.vertex_body[v as usize] as usize].1 += *r as f64;
            }
        }
    }

    /// Each vertex's end-of-step target (kinematic vertices) from the last step's inputs.
    pub(crate) fn targets(&self) -> &[Vec4] {
        &self.targets
    }
}
