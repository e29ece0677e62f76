//! Linear momentum through a step that stops after a fixed number of sweeps. Gauss–Seidel
//! leaves each vertex with a residual force once its neighbours have moved on, and the
//! residuals of a strongly deforming body do not sum to zero: a squashed cube springing back
//! in free flight changed its momentum by 2.4% in one frame. Where a step exchanges momentum
//! with rigid bodies (the rapier coupling) that drift would break the exchange's balance, so
//! the residual impulse of every vertex no obstacle or pin holds is taken out again, as one
//! velocity shift per body (velocities only: moving positions here could cross a surface).

use glam::Vec3A;

use crate::collision::{ContactModel, Obstacle};
use crate::solver::fast_path::FastResult;
use crate::state::{SimState, VERTEX_KINEMATIC};

/// Reusable buffers of [`remove_momentum_residual`].
#[derive(Debug, Default)]
pub(crate) struct MomentumScratch {
    /// Per vertex: an obstacle or a pin holds it.
    held: Vec<bool>,
    /// Per body: residual impulse of its free vertices.
    residuals: Vec<Vec3A>,
    /// Per body: the mass the residual is spread over.
    masses: Vec<f32>,
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
    fast: &mut dyn FastResult,
    obstacles: &[Obstacle],
    contact: ContactModel,
    h: f32,
    buf: &mut MomentumScratch,
) {
    let reach = 1.5 * contact.offset;
    buf.masses.clear();
    buf.masses.resize(state.bodies.len(), 0.0);
    buf.skip.resize(state.bodies.len(), false);
    buf.held.clear();
    for (i, (&flag, &b)) in state.flags.iter().zip(&state.vertex_body).enumerate() {
        if flag & VERTEX_KINEMATIC != 0 {
            buf.skip[b as usize] = true;
            buf.held.push(true);
            continue;
        }
        buf.masses[b as usize] += state.masses[i];
        let x = Vec3A::from_vec4(state.positions[i]);
        let by_edge = fast.obstacle_spans().near(i, obstacles, &state.positions, reach).next().is_some();
        buf.held.push(by_edge || obstacles.iter().any(|o| o.applies_to(b) && o.signed_distance(x).0 < reach));
    }
    buf.residuals.clear();
    buf.residuals.resize(state.bodies.len(), Vec3A::ZERO);
    fast.free_residual_impulses(state, contact, h, &buf.held, &mut buf.residuals);
    for (i, (&flag, &b)) in state.flags.iter().zip(&state.vertex_body).enumerate() {
        let (residual, mass) = (buf.residuals[b as usize], buf.masses[b as usize]);
        if flag & VERTEX_KINEMATIC == 0 && !buf.skip[b as usize] && mass > 0.0 {
            let shift = residual / mass;
            state.velocities[i] -= shift.extend(0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prelude::*;
    use crate::solver::fast_path::FastResult;

    /// The cheap per-body sum (element forces of the held vertices, inertia and pairs of the
    /// free ones) equals the direct sum of the free vertices' unbalanced forces.
    #[test]
    fn free_residual_sum_equals_the_direct_sum() {
        // Few sweeps leave real residuals; one cube lands on the ground, another on it.
        let config = StepConfig { iterations: 3, dt: 1.0 / 30.0, ..StepConfig::default() };
        let mut world = World::new(config).unwrap();
        world.obstacles.push(Obstacle::ground(0.0, 0.5));
        for (y, v) in [(0.052, -2.0), (0.16, -3.0)] {
            let mesh = TetMesh::box_mesh(Vec3::splat(0.1), [3, 3, 3], TetSplit::Six).unwrap();
            let material = StableNeoHookean::from_young_poisson(2e4, 0.4);
            world.bodies.insert(
                SoftBodyBuilder::tetrahedral(mesh)
                    .material(material)
                    .translation(Vec3::new(0.01 * y, y, 0.0))
                    .velocity(Vec3::new(0.3, v, 0.0))
                    .build()
                    .unwrap(),
            );
        }
        for _ in 0..4 {
            world.step();
        }
        let obstacles = world.obstacles.clone();
        let h = world.config().dt;
        let contact = world.config().contact_model(h);
        let (state, vbd) = world.state_and_fast_path();
        let held: Vec<bool> = state
            .positions
            .iter()
            .map(|p| obstacles.iter().any(|o| o.signed_distance(Vec3A::from_vec4(*p)).0 < 1.5e-3))
            .collect();
        assert!(held.iter().any(|&h| h) && !held.iter().all(|&h| h), "the scene must hold some vertices");
        let free: Vec<u32> = (0..held.len() as u32).filter(|&v| !held[v as usize]).collect();
        let mut impulses = Vec::new();
        vbd.environment_impulses(state, contact, h, &free, &mut impulses);
        let mut direct = vec![Vec3A::ZERO; state.bodies.len()];
        for (&v, j) in free.iter().zip(&impulses) {
            direct[state.vertex_body[v as usize] as usize] += *j;
        }
        let mut fast = vec![Vec3A::ZERO; state.bodies.len()];
        vbd.free_residual_impulses(state, contact, h, &held, &mut fast);
        // Scale: the largest single impulse; the sums cancel most of it.
        let scale = impulses.iter().map(|j| j.length()).fold(0.0f32, f32::max);
        assert!(direct.iter().any(|d| d.length() > 1e-3 * scale), "residuals too small to test: {direct:?}");
        for (d, f) in direct.iter().zip(&fast) {
            assert!((*d - *f).length() <= 1e-4 * scale, "direct {d} vs fast {f} (scale {scale})");
        }
    }
}
