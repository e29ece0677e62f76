//! What a finished VBD substep leaves for the safety check (`solver::check`), the fallback and
//! the hooks: which vertices ended held by their displacement bound, each body's force residual
//! at the first and last sweep, the contact pairs, the carriers' solved obstacles, and the
//! impulses the environment gave the vertices (`impulses`).

use glam::Vec3A;

use super::Vbd;
use super::edges::EdgeContacts;
use crate::collision::surface_pairs::ContactPair;
use crate::collision::{ContactModel, Obstacle};
use crate::solver::fast_path::FastResult;
use crate::state::SimState;

impl FastResult for Vbd {
    fn contact_pairs(&self) -> &[ContactPair] {
        &self.surface.pairs
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

    fn obstacle_edges(&self) -> &EdgeContacts {
        &self.surface.obstacle_edges
    }

    fn moved_obstacles(&self) -> &[Obstacle] {
        &self.moved_obstacles
    }

    fn environment_impulses(
        &mut self,
        state: &mut SimState,
        contact: ContactModel,
        h: f32,
        vertices: &[u32],
        out: &mut Vec<Vec3A>,
    ) {
        self.impulses_on(state, contact, h, vertices, out);
    }

    fn free_residual_impulses(
        &mut self,
        state: &mut SimState,
        contact: ContactModel,
        h: f32,
        held: &[bool],
        out: &mut [Vec3A],
    ) {
        self.residual_impulses(state, contact, h, held, out);
    }
}
