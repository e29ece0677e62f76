//! What a finished VBD substep leaves for the safety check (`solver::check`), the fallback and
//! the hooks: which vertices ended held by their displacement bound, each body's force residual
//! at the first and last sweep, the contact pairs, the carriers' solved obstacles, and what the
//! environment gave each vertex, read back from the substep's own vertex terms at the final
//! positions (the impulses the rapier coupling hands to colliders and attachments, and the free
//! vertices' residual the momentum correction removes).

use glam::{Vec3A, Vec4};

use super::Vbd;
use super::spans::SpanContacts;
use crate::collision::surface_pairs::ContactPair;
use crate::collision::{ContactModel, Obstacle};
use crate::solver::fast_path::FastResult;
use crate::solver::parallel::{PhaseCell, SharedSlice};
use crate::solver::vbd::vertex::{VertexInputs, residual_sum_part, unbalanced_force};
use crate::state::SimState;

impl FastResult for Vbd {
    fn contact_pairs(&self) -> &[ContactPair] {
        &self.surface.pairs
    }

    fn self_clearance(&self) -> Option<&crate::collision::self_clearance::SelfClearance> {
        Some(self.surface.clearance())
    }

    /// Whether vertex `v` ended the last substep held by its displacement bound (its last
    /// sweep's Newton step was cut short by the conservative clamp).
    fn clamped(&self, v: usize) -> bool {
        self.in_contact.get(v).is_some_and(|&c| c & 2 != 0)
    }

    fn body_residuals(&self, st: &SimState, out: &mut Vec<(f64, f64)>) {
        out.clear();
        out.extend(self.body_scratch.first_residual2.iter().take(st.bodies.len()).map(|&r| (r, 0.0)));
        out.resize(st.bodies.len(), (0.0, 0.0));
        for &v in &st.color_vertices {
            if let Some(r) = self.residual2.get(v as usize) {
                out[st.vertex_body[v as usize] as usize].1 += *r as f64;
            }
        }
    }

    fn obstacle_spans(&self) -> &SpanContacts {
        &self.surface.obstacle_spans
    }

    fn moved_obstacles(&self) -> &[Obstacle] {
        &self.moved_obstacles
    }

    /// Minus `h` times each vertex's force from everything but obstacles and pins at its final
    /// position (`vertex::unbalanced_force`): exact for a solved substep; with a fixed sweep
    /// count it carries the vertex's remaining residual.
    fn environment_impulses(
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

    /// The cost is that of the held vertices, not of the whole body (`vertex::residual_sum_part`).
    fn free_residual_impulses(
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
}

impl Vbd {
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
                spins: &self.body_scratch.spins,
                surface: &surface,
                clamp: &clamp,
            };
            f(&pos, &inputs);
        }
        self.surface = surface.into_inner();
        state.positions = positions;
    }
}
