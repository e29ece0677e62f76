//! What the environment gave each vertex over the last step, read back from the step's own
//! vertex terms at the final positions: the impulses the rapier coupling hands to colliders
//! and attachments, and the free vertices' residual the momentum correction removes.

use glam::{Vec3A, Vec4};

use super::Vbd;
use crate::collision::ContactModel;
use crate::solver::parallel::{PhaseCell, SharedSlice};
use crate::solver::vbd::vertex::{VertexInputs, residual_sum_part, unbalanced_force};
use crate::state::SimState;

impl Vbd {
    /// The impulses \[N·s\] that obstacles and pins gave `vertices` over the last step of
    /// length `h`, one per vertex into `out`: minus `h` times the vertex's force from
    /// everything else at its final position (see `vbd_vertex::unbalanced_force`). Exact for a
    /// solved step; with a fixed sweep count it carries the vertex's remaining residual.
    pub(super) fn impulses_on(
        &mut self,
        state: &mut SimState,
        contact: ContactModel,
        h: f32,
        vertices: &[u32],
        out: &mut Vec<Vec3A>,
    ) {
        out.clear();
        if vertices.is_empty() {
            return;
        }
        self.with_vertex_inputs(state, contact, |pos, inputs| {
            out.extend(vertices.iter().map(|&v| -unbalanced_force(v as usize, pos, inputs) * h));
        });
    }

    /// Per body: minus `h` times the summed unbalanced force of its vertices that `held` (per
    /// vertex) does not mark, added into `out` (see `vbd_vertex::residual_sum_part`; the cost
    /// is that of the held vertices, not of the whole body).
    pub(super) fn residual_impulses(
        &mut self,
        state: &mut SimState,
        contact: ContactModel,
        h: f32,
        held: &[bool],
        out: &mut [Vec3A],
    ) {
        self.with_vertex_inputs(state, contact, |pos, inputs| {
            for (v, (&held, &b)) in held.iter().zip(&inputs.state.vertex_body).enumerate() {
                out[b as usize] -= residual_sum_part(v, held, pos, inputs) * h;
            }
        });
    }

    /// Runs `f` with the vertex-update inputs of the last step at the current positions, and
    /// no obstacles.
    fn with_vertex_inputs(
        &mut self,
        state: &mut SimState,
        contact: ContactModel,
        f: impl FnOnce(&SharedSlice<'_, Vec4>, &VertexInputs<'_>),
    ) {
        let mut positions = std::mem::take(&mut state.positions);
        let surface = PhaseCell::new(std::mem::take(&mut self.surface));
        {
            let pos = SharedSlice::new(&mut positions);
            let clamp = SharedSlice::new(&mut self.clamp);
            let inputs = VertexInputs {
                state,
                start: &self.start,
                inertia: &self.inertia,
                velocity: &self.velocity,
                obstacles: &[],
                contact,
                tet_rates: &self.tet_rates,
                surface: &surface,
                clamp: &clamp,
            };
            f(&pos, &inputs);
        }
        self.surface = surface.into_inner();
        state.positions = positions;
    }
}
