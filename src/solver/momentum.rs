//! Linear momentum through a step that stops after a fixed number of sweeps. Gauss–Seidel
//! leaves each vertex with a residual force once its neighbours have moved on, and the
//! residuals of a strongly deforming body do not sum to zero: a squashed cube springing back
//! in free flight changed its momentum by 2.4% in one frame. Where a step exchanges momentum
//! with rigid bodies (the rapier coupling) that drift would break the exchange's balance, so
//! the residual impulse of every vertex no obstacle or pin holds is taken out again, as one
//! velocity shift per body (velocities only: moving positions here could cross a surface).

use glam::Vec3A;

use super::VbdScratch;
use crate::collision::{ContactModel, Obstacle};
use crate::state::{SimState, VERTEX_KINEMATIC};

/// Reusable buffers of [`remove_momentum_residual`].
#[derive(Debug, Default)]
pub(crate) struct MomentumScratch {
    vertices: Vec<u32>,
    impulses: Vec<Vec3A>,
    /// Per body: residual impulse and the mass it is spread over.
    bodies: Vec<(Vec3A, f32)>,
    /// Per body: left alone this substep. The caller marks bodies whose substep was rolled
    /// back (their state is the restored start, at rest); pinned bodies are added here (the
    /// pins take the momentum).
    pub skip: Vec<bool>,
}

/// Removes, per body without pins, the summed residual impulse of its vertices that touch no
/// obstacle (within `reach` of none), spreading it over all its vertices by mass. Obstacle
/// contacts keep their impulse: that is the momentum the environment really exchanged.
pub(crate) fn remove_momentum_residual(
    state: &mut SimState,
    scratch: &mut VbdScratch,
    obstacles: &[Obstacle],
    contact: ContactModel,
    h: f32,
    buf: &mut MomentumScratch,
) {
    let reach = 1.5 * contact.offset;
    buf.bodies.clear();
    buf.bodies.resize(state.bodies.len(), (Vec3A::ZERO, 0.0));
    buf.skip.resize(state.bodies.len(), false);
    buf.vertices.clear();
    for (i, (&flag, &b)) in state.flags.iter().zip(&state.vertex_body).enumerate() {
        if flag & VERTEX_KINEMATIC != 0 {
            buf.skip[b as usize] = true;
            continue;
        }
        buf.bodies[b as usize].1 += state.masses[i];
        let x = Vec3A::from_vec4(state.positions[i]);
        if !obstacles.iter().any(|o| o.applies_to(b) && o.signed_distance(x).0 < reach) {
            buf.vertices.push(i as u32);
        }
    }
    scratch.environment_impulses(state, contact, h, &buf.vertices, &mut buf.impulses);
    for (&v, &j) in buf.vertices.iter().zip(&buf.impulses) {
        buf.bodies[state.vertex_body[v as usize] as usize].0 += j;
    }
    for (i, (&flag, &b)) in state.flags.iter().zip(&state.vertex_body).enumerate() {
        let (residual, mass) = buf.bodies[b as usize];
        if flag & VERTEX_KINEMATIC == 0 && !buf.skip[b as usize] && mass > 0.0 {
            let shift = residual / mass;
            state.velocities[i] -= shift.extend(0.0);
        }
    }
}
