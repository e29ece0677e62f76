//! Carriers: dynamic rigid bodies that live outside Pliant (rapier bodies) and move some of the
//! step's obstacles (their colliders).
//!
//! The coupling hands a carrier's contact impulses back once per frame. If the carrier's pose
//! for the step were only predicted from its velocity and gravity, that exchange would be
//! explicit: a body of mass `m` on a contact of stiffness `k` is then stable only while
//! `k h²/m` stays below about 4/3, and the penalty and sticking-friction stiffnesses are far
//! above that (a 20 kg box on a foam mattress bounced frame to frame at 60 Hz and skidded and
//! rocked at 120 Hz). So the step treats each carrier as one more rigid body of the rigid
//! correction (`rigid_correction.rs`): its motion away from the predicted pose costs
//! `½ m/h² |t|² + ½ θᵀ (I/h²) θ`, its contacts with soft vertices enter through the relative
//! motion of the two sides, and the group's Newton solve finds the carrier's response to the
//! contact forces together with the soft bodies' rigid motions (implicit in the penalty and
//! friction stiffness). The carrier's obstacles then move to the solved pose, scaled back so
//! that no vertex is entered, and the sweeps shape the soft bodies against it.

use glam::{DMat3, DVec3, Mat3, Quat, Vec3, Vec3A, Vec4};

use crate::collision::{ContactModel, Obstacle, ObstacleShape, RigidPose};
use crate::solver::vbd::rigid_correction::{RigidMotion, RigidScratch};
use crate::solver::vbd::rigid_energy::{BodyQuadratic, Candidate, Side};
use crate::state::SimState;

/// A dynamic rigid body moving some obstacles during a step (their `carrier` index).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Carrier {
    /// World centre of mass at the predicted end pose \[m\].
    pub center: DVec3,
    /// `m / h²` \[N/m\].
    pub stiff: f64,
    /// World inertia tensor over `h²` \[N·m\].
    pub inertia: DMat3,
    /// `h²` \[s²\] (so `stiff · h2` is the mass).
    pub h2: f64,
}

impl Carrier {
    /// A carrier of mass `mass` \[kg\] and world inverse inertia `inv_inertia` (zero rows for
    /// locked rotations) for a step of length `h`; `None` for a massless body.
    pub(crate) fn new(center: Vec3, mass: f32, inv_inertia: Mat3, h: f32) -> Option<Self> {
        if !(mass > 0.0 && mass.is_finite() && h > 0.0 && inv_inertia.is_finite()) {
            return None;
        }
        let inertia = inertia_of(inv_inertia);
        if !inertia.is_finite() {
            return None;
        }
        let h2 = (h as f64) * (h as f64);
        Some(Self { center: center.as_dvec3(), stiff: mass as f64 / h2, inertia: inertia * (1.0 / h2), h2 })
    }
}

/// The inertia tensor of a body with world inverse inertia `inv` (zero rows for locked
/// rotations: a tiny ridge turns them into a very large inertia, which keeps them still
/// without a special case).
pub(crate) fn inertia_of(inv: Mat3) -> DMat3 {
    let inv = inv.as_dmat3();
    let trace = inv.x_axis.x + inv.y_axis.y + inv.z_axis.z;
    let ridge = 1e-9 * trace.max(1e-12);
    (inv + DMat3::from_diagonal(DVec3::splat(ridge))).inverse()
}

/// A carrier's rigid body for a whole frame, as the coupling found it: mass, world inverse
/// inertia, and world centre of mass at the frame's start and at its predicted end.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct CarrierBody {
    pub mass: f32,
    pub inv_inertia: Mat3,
    pub center_start: Vec3,
    pub center_end: Vec3,
}

impl CarrierBody {
    /// The carrier of the substep ending at fraction `s` of the frame, of length `h`; a body
    /// that cannot be one (no mass) is a very heavy one, which moves nothing.
    pub(crate) fn at(&self, s: f32, h: f32) -> Carrier {
        let center = self.center_start.lerp(self.center_end, s);
        Carrier::new(center, self.mass, self.inv_inertia, h).unwrap_or(Carrier {
            center: center.as_dvec3(),
            stiff: 1e30,
            inertia: DMat3::from_diagonal(DVec3::splat(1e30)),
            h2: 0.0,
        })
    }
}

/// The rigid map taking pose `from` to pose `to` (`to = map ∘ from`).
pub(crate) fn pose_change(from: &RigidPose, to: &RigidPose) -> RigidPose {
    let rotation = (to.rotation * from.rotation.inverse()).normalize();
    RigidPose { rotation, translation: to.translation - rotation * from.translation }
}

/// `map ∘ pose`.
pub(crate) fn compose(map: &RigidPose, pose: &RigidPose) -> RigidPose {
    RigidPose {
        rotation: (map.rotation * pose.rotation).normalize(),
        translation: map.rotation * pose.translation + map.translation,
    }
}

/// The carrier that moves obstacle `o`, if any.
#[inline]
pub(crate) fn carrier_of(o: &Obstacle) -> Option<u32> {
    match &o.shape {
        ObstacleShape::Posed(p) => p.carrier,
        _ => None,
    }
}

/// `pose` after the rigid motion `m`.
fn moved_pose(pose: &RigidPose, m: &RigidMotion) -> RigidPose {
    let turn = Quat::from_mat3(&Mat3::from(m.linear));
    RigidPose {
        rotation: (turn * pose.rotation).normalize(),
        translation: Vec3::from(m.apply(Vec3A::from(pose.translation))),
    }
}

/// The rotation vector (axis × angle, angle in [0, π]) of a unit quaternion: `q` and `−q` are
/// the same rotation, and glam's axis–angle of the one with `w < 0` has an angle near 2π.
pub(crate) fn rotation_vector(q: Quat) -> Vec3 {
    let q = if q.w < 0.0 { -q } else { q };
    let (axis, angle) = q.to_axis_angle();
    axis * angle
}

/// How far short of a vertex a carrier's move stops \[m\]: far below the contact offset, far
/// above f32 rounding at scene coordinates (so the next probe starts clearly outside).
const STOP_GAP: f64 = 1e-5;

/// Moves the end pose of every obstacle of carrier `c` by the motion `(t, θ)` about the
/// carrier's centre, scaled back so that none of `vertices` (indices into `positions` and
/// `vertex_body`) is entered on the way: the move stops `STOP_GAP` short of the first one
/// met, and does not start towards a vertex already inside. Returns the fraction taken.
#[allow(clippy::too_many_arguments)]
pub(crate) fn move_carrier(
    obstacles: &mut [Obstacle],
    c: u32,
    center: DVec3,
    t: DVec3,
    theta: DVec3,
    positions: &[Vec4],
    vertex_body: &[u32],
    vertices: impl Iterator<Item = usize> + Clone,
) -> f32 {
    if t == DVec3::ZERO && theta == DVec3::ZERO {
        return 1.0;
    }
    let full = RigidMotion::new(center, t, theta);
    let mut toi = 1.0f64;
    for o in obstacles.iter().filter(|o| carrier_of(o) == Some(c)) {
        let ObstacleShape::Posed(shape) = &o.shape else { continue };
        let end = moved_pose(&shape.end, &full);
        let probe = shape.sweep_from_end_to(end);
        let moved = shape.with_end(end);
        for v in vertices.clone().filter(|&v| o.applies_to(vertex_body[v])) {
            let x = Vec3A::from_vec4(positions[v]);
            // How far this vertex travels relative to the carrier over the whole move.
            let travel = t.length() + theta.length() * (x.as_dvec3() - center).length();
            let hit = match probe.first_entry(x, x) {
                Some(s) => Some(s as f64),
                // Already inside (the sweeps push it out): no move that takes it deeper.
                None => {
                    let now = o.signed_distance(x).0;
                    (now <= 0.0 && moved.signed_distance(x).0 < now).then_some(0.0)
                }
            };
            if let Some(s) = hit {
                let back = if travel > 0.0 { STOP_GAP / travel } else { 0.0 };
                toi = toi.min((s - back).max(0.0));
            }
        }
    }
    let motion = if toi < 1.0 { RigidMotion::new(center, t * toi, theta * toi) } else { full };
    for o in obstacles.iter_mut().filter(|o| carrier_of(o) == Some(c)) {
        if let ObstacleShape::Posed(shape) = &mut o.shape {
            *shape = shape.with_end(moved_pose(&shape.end, &motion));
        }
    }
    toi as f32
}

/// A box around vertices `range` and where they can get within `h` (twice each one's travel
/// at its speed, plus `pad` \[m\]): `(min, max)`, empty (min > max) for no vertices.
pub(crate) fn reach_box(
    positions: &[Vec4],
    velocities: &[Vec4],
    range: std::ops::Range<usize>,
    h: f32,
    pad: f32,
) -> (Vec3A, Vec3A) {
    let (mut lo, mut hi) = (Vec3A::splat(f32::INFINITY), Vec3A::splat(f32::NEG_INFINITY));
    for i in range {
        let x = Vec3A::from_vec4(positions[i]);
        let grow = Vec3A::splat(2.0 * Vec3A::from_vec4(velocities[i]).length() * h + pad);
        (lo, hi) = (lo.min(x - grow), hi.max(x + grow));
    }
    (lo, hi)
}

/// The vertex indices of the packed bodies `bodies`.
fn body_vertices<'a>(st: &'a SimState, bodies: &'a [u32]) -> impl Iterator<Item = usize> + Clone + 'a {
    bodies.iter().flat_map(|&b| {
        let body = &st.bodies[b as usize];
        body.vertex_start as usize..(body.vertex_start + body.vertex_count) as usize
    })
}

/// One carrier's progress through a step: its centre now, and its motion away from the
/// predicted end pose so far.
#[derive(Clone, Debug, Default)]
struct CarrierState {
    center: DVec3,
    t: DVec3,
    theta: DVec3,
    /// The soft bodies that can reach the carrier during the step: the only ones its updates
    /// look at.
    near: Vec<u32>,
}

/// The carriers' part of a step (thread 0 only): the obstacles as they now stand and the
/// solver's buffers.
#[derive(Clone, Debug, Default)]
pub(crate) struct CarrierSweep {
    /// The step's obstacles, the carriers' at their current poses.
    pub obstacles: Vec<Obstacle>,
    states: Vec<CarrierState>,
    solver: RigidScratch,
    /// `(obstacle, vertex, distance)` of the vertices that may touch the carrier being updated.
    touching: Vec<(u32, u32, f32)>,
}

impl CarrierSweep {
    /// Starts a step. Each carrier advances from its start pose towards its predicted end pose
    /// only until it first touches a vertex where the vertices are now (`positions`, `x^n`),
    /// as a soft body's initial guess does against obstacles: a heavy body falling 6 cm in a
    /// frame would otherwise start the sweeps with the foam under it crushed by the path
    /// clamp, and be thrown back by it. The inertia term still pulls it towards the predicted
    /// pose, so the sweeps carry the impact.
    pub fn begin(&mut self, obstacles: &[Obstacle], carriers: &[Carrier], st: &SimState, positions: &[Vec4], h: f32) {
        let vertex_body = &st.vertex_body[..];
        self.obstacles.clear();
        self.obstacles.extend_from_slice(obstacles);
        self.states.clear();
        // Each soft body's box at x^n and where it can get in the step (and a centimetre):
        // what the carriers' boxes are tested against.
        let boxes: Vec<(Vec3A, Vec3A)> = st
            .bodies
            .iter()
            .map(|b| {
                let range = b.vertex_start as usize..(b.vertex_start + b.vertex_count) as usize;
                reach_box(positions, &st.velocities, range, h, 0.01)
            })
            .collect();
        for (c, carrier) in carriers.iter().enumerate() {
            let mut near: Vec<u32> = Vec::new();
            for o in self.obstacles.iter().filter(|o| carrier_of(o) == Some(c as u32)) {
                let ObstacleShape::Posed(p) = &o.shape else { continue };
                let (lo, hi) = p.world_box();
                for (b, (blo, bhi)) in boxes.iter().enumerate() {
                    let overlaps = !(hi.cmplt(*blo).any() || lo.cmpgt(*bhi).any());
                    if overlaps && o.applies_to(b as u32) && !near.contains(&(b as u32)) {
                        near.push(b as u32);
                    }
                }
            }
            near.sort_unstable();
            let mut state = CarrierState { center: carrier.center, near, ..CarrierState::default() };
            let poses = self.obstacles.iter().find_map(|o| match &o.shape {
                ObstacleShape::Posed(p) if p.carrier == Some(c as u32) => Some((p.start, p.end)),
                _ => None,
            });
            // A carrier nothing can reach keeps its predicted pose untouched (and so gets no
            // impulse from the step).
            if let Some((start, end)) = poses.filter(|_| !state.near.is_empty()) {
                // The rigid motion from the start pose to the predicted one, about the centre's
                // start position.
                let change = pose_change(&start, &end);
                let back = pose_change(&end, &start);
                let center_start = Vec3::from(back.apply(Vec3A::from(carrier.center.as_vec3()))).as_dvec3();
                let (t, theta) = (carrier.center - center_start, rotation_vector(change.rotation).as_dvec3());
                for o in self.obstacles.iter_mut().filter(|o| carrier_of(o) == Some(c as u32)) {
                    if let ObstacleShape::Posed(p) = &mut o.shape {
                        *p = p.with_end(p.start);
                    }
                }
                let vertices = body_vertices(st, &state.near);
                let s = move_carrier(
                    &mut self.obstacles,
                    c as u32,
                    center_start,
                    t,
                    theta,
                    positions,
                    vertex_body,
                    vertices,
                ) as f64;
                state.center = center_start + t * s;
                (state.t, state.theta) = (-t * (1.0 - s), -theta * (1.0 - s));
            }
            self.states.push(state);
        }
    }

    /// One block Gauss–Seidel update of every carrier against the soft vertices where they are
    /// now (`positions`; `start`: `x^n`): the carrier's inertia about its predicted pose, and
    /// the same penalty and lagged-friction terms the vertices feel from it
    /// (`vertex::external_terms`), minimised over its rigid motion; the motion is then
    /// scaled back so that it enters no vertex.
    pub fn update(
        &mut self,
        carriers: &[Carrier],
        st: &SimState,
        positions: &[Vec4],
        start: &[Vec4],
        contact: &ContactModel,
    ) {
        let delta = contact.offset as f64;
        for (c, carrier) in carriers.iter().enumerate() {
            let CarrierState { center, t: t_acc, theta: theta_acc, ref near } = self.states[c];
            if near.is_empty() {
                // Nothing can touch it this step: it keeps its predicted pose (set by `begin`).
                continue;
            }
            let c = c as u32;
            let vertices = || body_vertices(st, near);
            // The vertices that may touch it now: (obstacle, vertex, distance).
            self.touching.clear();
            for (k, o) in self.obstacles.iter().enumerate().filter(|(_, o)| carrier_of(o) == Some(c)) {
                let ObstacleShape::Posed(shape) = &o.shape else { continue };
                let reach = delta as f32 + shape.margin();
                for v in vertices().filter(|&v| o.applies_to(st.vertex_body[v])) {
                    let d = o.signed_distance(Vec3A::from_vec4(positions[v])).0;
                    if d < reach {
                        self.touching.push((k as u32, v as u32, d));
                    }
                }
            }
            // The vertices near the carrier share its weight: their contact is made as stiff
            // as their share asks (a vertex's own mass would let a heavy body sink through
            // the contact layer).
            let sharing = self.touching.iter().filter(|&&(k, _, d)| d < self.obstacles[k as usize].margin()).count();
            let mass = carrier.stiff * carrier.h2;
            let load = if sharing > 0 { (mass / sharing as f64) as f32 } else { 0.0 };
            for o in self.obstacles.iter_mut().filter(|o| carrier_of(o) == Some(c)) {
                if let ObstacleShape::Posed(shape) = &mut o.shape {
                    shape.load_mass = load;
                }
            }
            let pb = self.solver.problem_mut();
            pb.bodies.clear();
            pb.candidates.clear();
            pb.couplings.clear();
            (pb.delta, pb.static_slip, pb.stiffening) = (delta, contact.static_slip as f64, contact.stiffening);
            pb.bodies.push(BodyQuadratic::rigid(
                center,
                carrier.stiff,
                carrier.inertia,
                -t_acc * carrier.stiff,
                -(carrier.inertia * theta_acc),
                true,
            ));
            for &(k, v, _) in &self.touching {
                let (o, v) = (&self.obstacles[k as usize], v as usize);
                let b = st.vertex_body[v];
                let k_c = contact.stiffness.for_mass(st.masses[v] + load) as f64;
                let x_start = Vec3A::from_vec4(start[v]);
                let (d_start, n_start) = o.signed_distance_start(x_start);
                let position = Vec3A::from_vec4(positions[v]).as_dvec3();
                pb.candidates.push(Candidate {
                    sides: [Side::NONE, Side { slot: 0, coef: -1.0, arm: position - center }],
                    obstacle: k,
                    position,
                    start: x_start.as_dvec3(),
                    stiffness: k_c,
                    lambda: contact.normal_force(k_c, d_start as f64),
                    normal: n_start.as_dvec3(),
                    mu: 0.5 * (st.bodies[b as usize].friction as f64 + o.friction as f64),
                });
            }
            let Some((t, theta)) = self.solver.solve_single(&self.obstacles) else { continue };
            let s =
                move_carrier(&mut self.obstacles, c, center, t, theta, positions, &st.vertex_body, vertices()) as f64;
            let state = &mut self.states[c as usize];
            state.t += t * s;
            state.theta += theta * s;
            state.center += t * s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::PosedShape;
    use crate::collision::test_geometry::Ball;
    use std::sync::Arc;

    fn carried_ball() -> Obstacle {
        let mut shape = PosedShape::new(Arc::new(Ball(0.1)), RigidPose::IDENTITY, RigidPose::IDENTITY, 0.01);
        shape.carrier = Some(0);
        Obstacle { shape: ObstacleShape::Posed(shape), friction: 0.5 }
    }

    #[test]
    fn a_carrier_moves_its_obstacles_and_stops_short_of_a_vertex() {
        let mut obstacles = vec![carried_ball(), Obstacle::ground(-1.0, 0.5)];
        // No vertex in the way: the whole motion, about the centre.
        let none = std::iter::empty::<usize>();
        let s = move_carrier(&mut obstacles, 0, DVec3::ZERO, DVec3::new(0.0, 0.05, 0.0), DVec3::ZERO, &[], &[], none);
        assert_eq!(s, 1.0);
        let (d, _) = obstacles[0].signed_distance(Vec3A::new(0.0, 0.15, 0.0));
        assert!(d.abs() < 1e-5, "{d}");
        // A vertex 0.02 m above the moved ball: a further 0.05 m rise stops at it.
        let v = [Vec4::new(0.0, 0.17, 0.0, 0.0)];
        let s = move_carrier(&mut obstacles, 0, DVec3::ZERO, DVec3::new(0.0, 0.05, 0.0), DVec3::ZERO, &v, &[0], 0..1);
        assert!((s - 0.4).abs() < 0.01, "fraction {s}");
        let (d, _) = obstacles[0].signed_distance(Vec3A::new(0.0, 0.17, 0.0));
        assert!((0.0..1e-3).contains(&d), "the vertex is left on the surface: {d}");
        // Other obstacles never move.
        assert_eq!(obstacles[1], Obstacle::ground(-1.0, 0.5));
    }

    #[test]
    fn a_carrier_never_moves_deeper_into_a_vertex_inside_it() {
        let v = [Vec4::new(0.0, 0.09, 0.0, 0.0)];
        let mut obstacles = vec![carried_ball()];
        // Up: deeper into the ball for the vertex.
        let s = move_carrier(&mut obstacles, 0, DVec3::ZERO, DVec3::new(0.0, 0.05, 0.0), DVec3::ZERO, &v, &[0], 0..1);
        assert_eq!(s, 0.0);
        // Down: the vertex comes out.
        let s = move_carrier(&mut obstacles, 0, DVec3::ZERO, DVec3::new(0.0, -0.05, 0.0), DVec3::ZERO, &v, &[0], 0..1);
        assert_eq!(s, 1.0);
    }

    #[test]
    fn rotation_vectors_take_the_short_way() {
        let q = Quat::from_rotation_y(0.3);
        for q in [q, -q] {
            assert!((rotation_vector(q) - Vec3::new(0.0, 0.3, 0.0)).length() < 1e-6, "{q}");
        }
    }

    #[test]
    fn pose_change_composes_back() {
        let a = RigidPose { rotation: Quat::from_rotation_y(0.3), translation: Vec3::new(1.0, 2.0, 3.0) };
        let b = RigidPose { rotation: Quat::from_rotation_x(-0.7), translation: Vec3::new(-0.5, 0.1, 0.2) };
        let back = compose(&pose_change(&a, &b), &a);
        assert!(back.rotation.angle_between(b.rotation) < 1e-5);
        assert!((back.translation - b.translation).length() < 1e-5);
    }

    #[test]
    fn locked_rotations_become_a_very_large_inertia() {
        let c = Carrier::new(Vec3::ZERO, 2.0, Mat3::from_diagonal(Vec3::new(0.0, 4.0, 0.0)), 0.1).unwrap();
        assert!((c.stiff - 200.0).abs() < 1e-3, "{}", c.stiff);
        assert!((c.inertia.y_axis.y - 25.0).abs() < 1e-3, "{}", c.inertia.y_axis.y);
        assert!(c.inertia.x_axis.x > 1e9 && c.inertia.z_axis.z > 1e9);
        assert!(Carrier::new(Vec3::ZERO, 0.0, Mat3::IDENTITY, 0.1).is_none());
    }
}
