//! Obstacles: analytic static ones (half-space, oriented box, sphere) and moving ones of any
//! shape ([`PosedShape`], rapier colliders). Each gives a signed distance with its outward
//! normal, and the first time a straight vertex path enters it (exact CCD for a convex static
//! shape), which is how VBD keeps vertices out of obstacles.

use glam::{Quat, Vec3, Vec3A};

use super::posed::PosedShape;

/// Shape of an obstacle.
#[derive(Clone, Debug, PartialEq)]
pub enum ObstacleShape {
    /// Half-space `{x : n·x ≤ offset}` is solid; `normal` is unit and points out of it.
    Plane {
        /// Outward unit normal.
        normal: Vec3,
        /// Plane offset along the normal \[m\].
        offset: f32,
    },
    /// Solid oriented box.
    Cuboid {
        /// Centre \[m\].
        center: Vec3,
        /// Half extents along the box's own axes \[m\].
        half_extents: Vec3,
        /// Orientation of the box's axes.
        rotation: Quat,
    },
    /// Solid sphere.
    Sphere {
        /// Centre \[m\].
        center: Vec3,
        /// Radius \[m\].
        radius: f32,
    },
    /// A shape of its own, moving rigidly during the step (a rapier collider).
    Posed(PosedShape),
}

/// An obstacle with its friction coefficient.
#[derive(Clone, Debug, PartialEq)]
pub struct Obstacle {
    /// Geometry.
    pub shape: ObstacleShape,
    /// Coulomb friction coefficient; the contact uses the mean of the body's and this.
    pub friction: f32,
}

/// An invalid obstacle parameter.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("obstacle parameter `{field}` = {value} is invalid: {reason}")]
pub struct ObstacleError {
    /// Parameter name.
    pub field: &'static str,
    /// The rejected value, printed.
    pub value: String,
    /// What it must satisfy.
    pub reason: &'static str,
}

fn finite_vec(field: &'static str, v: Vec3) -> Result<(), ObstacleError> {
    if v.is_finite() { Ok(()) } else { Err(ObstacleError { field, value: format!("{v}"), reason: "must be finite" }) }
}

impl Obstacle {
    /// Extra mass \[kg\] a touching vertex's contact stiffness is sized for (a share of the
    /// dynamic body that carries this obstacle; 0 otherwise).
    #[inline]
    pub(crate) fn load_mass(&self) -> f32 {
        match &self.shape {
            ObstacleShape::Posed(p) => p.load_mass,
            _ => 0.0,
        }
    }

    /// Whether momentum moves this obstacle (a dynamic rapier body's collider); static and
    /// kinematic obstacles have infinite mass.
    #[inline]
    pub(crate) fn movable(&self) -> bool {
        matches!(&self.shape, ObstacleShape::Posed(p) if p.movable)
    }

    /// The query margin of a moving obstacle's far-distance bound \[m\] (0 for the others).
    #[inline]
    pub(crate) fn margin(&self) -> f32 {
        match &self.shape {
            ObstacleShape::Posed(p) => p.margin(),
            _ => 0.0,
        }
    }

    /// Whether soft surface edges are tested against this obstacle (see `solver::vbd::spans`):
    /// a box, a sphere, or a shape of its own (a rapier collider) whose pose is given. A
    /// half-space needs no edge test (the distance is linear along an edge, so its ends are
    /// always its closest points), and a carrier's pose is solved with its vertices' contacts
    /// only, so its edges stay vertex-only.
    #[inline]
    pub(crate) fn tests_edges(&self) -> bool {
        match &self.shape {
            ObstacleShape::Posed(p) => p.carrier.is_none(),
            ObstacleShape::Cuboid { .. } | ObstacleShape::Sphere { .. } => true,
            ObstacleShape::Plane { .. } => false,
        }
    }

    /// Whether the obstacle is a sphere.
    #[inline]
    pub(crate) fn is_sphere(&self) -> bool {
        matches!(self.shape, ObstacleShape::Sphere { .. })
    }

    /// Whether soft surface triangles are tested against this obstacle, for a corner or a cap
    /// inside them (see [`Obstacle::triangle_closest`]): a box or a sphere.
    #[inline]
    pub(crate) fn tests_triangles(&self) -> bool {
        matches!(self.shape, ObstacleShape::Cuboid { .. } | ObstacleShape::Sphere { .. })
    }

    /// Whether the solid is convex (the analytic shapes always; a posed shape when its collider
    /// is).
    #[inline]
    pub(crate) fn is_convex(&self) -> bool {
        match &self.shape {
            ObstacleShape::Posed(s) => s.is_convex(),
            ObstacleShape::Plane { .. } | ObstacleShape::Cuboid { .. } | ObstacleShape::Sphere { .. } => true,
        }
    }

    /// Whether the obstacle moves during the step (a posed shape whose poses differ).
    #[inline]
    pub(crate) fn moves(&self) -> bool {
        matches!(&self.shape, ObstacleShape::Posed(p) if p.start != p.end)
    }

    /// Whether the box `lo..hi` widened by `r` can reach the obstacle's bounding box (always
    /// for a half-space).
    #[inline]
    pub(crate) fn box_reaches(&self, lo: Vec3A, hi: Vec3A, r: f32) -> bool {
        let (olo, ohi) = match self.shape {
            ObstacleShape::Posed(ref p) => p.world_box(),
            ObstacleShape::Sphere { center, radius } => {
                (Vec3A::from(center) - Vec3A::splat(radius), Vec3A::from(center) + Vec3A::splat(radius))
            }
            ObstacleShape::Cuboid { center, half_extents, rotation } => {
                let m = glam::Mat3::from_quat(rotation);
                let reach = Vec3A::from(m.x_axis.abs() * half_extents.x + m.y_axis.abs() * half_extents.y)
                    + Vec3A::from(m.z_axis.abs() * half_extents.z);
                (Vec3A::from(center) - reach, Vec3A::from(center) + reach)
            }
            ObstacleShape::Plane { .. } => return true,
        };
        !((hi + Vec3A::splat(r)).cmplt(olo).any() || (lo - Vec3A::splat(r)).cmpgt(ohi).any())
    }

    /// Signed distance and outward normal from the geometry itself at the end pose (at the
    /// start pose if `start`), also far from a moving obstacle's box.
    #[inline]
    pub(crate) fn signed_distance_exact(&self, p: Vec3A, start: bool) -> (f32, Vec3A) {
        match &self.shape {
            ObstacleShape::Posed(s) => s.signed_distance_exact(p, start),
            _ => self.signed_distance(p),
        }
    }

    /// A direction at the start pose turned with the obstacle to its end pose.
    #[inline]
    pub(crate) fn carried_direction(&self, n: Vec3A) -> Vec3A {
        match &self.shape {
            ObstacleShape::Posed(s) => Vec3A::from(s.end.rotation * (s.start.rotation.inverse() * Vec3::from(n))),
            _ => n,
        }
    }

    /// How far the obstacle carries the point at `x` (at its start pose) over the step \[m\]
    /// (zero for a static obstacle).
    #[inline]
    pub(crate) fn carried_displacement(&self, x: Vec3A) -> Vec3A {
        match &self.shape {
            ObstacleShape::Posed(s) => s.end.apply(s.start.invert(x)) - x,
            _ => Vec3A::ZERO,
        }
    }

    /// The ground: the half-space below `y = height`.
    pub fn ground(height: f32, friction: f32) -> Self {
        Self { shape: ObstacleShape::Plane { normal: Vec3::Y, offset: height }, friction }
    }

    /// A half-space with outward `normal` (normalised here) through the point `point`.
    pub fn plane(normal: Vec3, point: Vec3, friction: f32) -> Result<Self, ObstacleError> {
        finite_vec("normal", normal)?;
        finite_vec("point", point)?;
        let n = normal.try_normalize().ok_or(ObstacleError {
            field: "normal",
            value: format!("{normal}"),
            reason: "must be non-zero",
        })?;
        Self { shape: ObstacleShape::Plane { normal: n, offset: n.dot(point) }, friction }.validated()
    }

    /// A solid sphere.
    pub fn sphere(center: Vec3, radius: f32, friction: f32) -> Result<Self, ObstacleError> {
        Self { shape: ObstacleShape::Sphere { center, radius }, friction }.validated()
    }

    /// A solid oriented box.
    pub fn cuboid(center: Vec3, half_extents: Vec3, rotation: Quat, friction: f32) -> Result<Self, ObstacleError> {
        Self { shape: ObstacleShape::Cuboid { center, half_extents, rotation: rotation.normalize() }, friction }
            .validated()
    }

    /// Checks every parameter.
    pub fn validated(self) -> Result<Self, ObstacleError> {
        if !(self.friction.is_finite() && self.friction >= 0.0) {
            return Err(ObstacleError {
                field: "friction",
                value: self.friction.to_string(),
                reason: "must be finite and ≥ 0",
            });
        }
        match &self.shape {
            &ObstacleShape::Plane { normal, offset } => {
                finite_vec("normal", normal)?;
                if !offset.is_finite() || (normal.length() - 1.0).abs() > 1e-4 {
                    return Err(ObstacleError {
                        field: "normal",
                        value: format!("{normal}"),
                        reason: "must be a unit vector",
                    });
                }
            }
            &ObstacleShape::Sphere { center, radius } => {
                finite_vec("center", center)?;
                if !(radius.is_finite() && radius > 0.0) {
                    return Err(ObstacleError {
                        field: "radius",
                        value: radius.to_string(),
                        reason: "must be finite and > 0",
                    });
                }
            }
            &ObstacleShape::Cuboid { center, half_extents, rotation } => {
                finite_vec("center", center)?;
                if !(half_extents.is_finite() && half_extents.min_element() > 0.0) {
                    return Err(ObstacleError {
                        field: "half_extents",
                        value: format!("{half_extents}"),
                        reason: "must be finite and > 0",
                    });
                }
                if !rotation.is_finite() {
                    return Err(ObstacleError {
                        field: "rotation",
                        value: format!("{rotation}"),
                        reason: "must be finite",
                    });
                }
            }
            ObstacleShape::Posed(p) => {
                if !p.is_finite() {
                    return Err(ObstacleError {
                        field: "pose",
                        value: format!("{:?} → {:?}", p.start, p.end),
                        reason: "must be finite",
                    });
                }
            }
        }
        Ok(self)
    }

    /// Whether the obstacle acts on the packed body `body` (rapier collision groups).
    #[inline]
    pub fn applies_to(&self, body: u32) -> bool {
        match &self.shape {
            ObstacleShape::Posed(p) => p.bodies.as_ref().is_none_or(|b| b.get(body as usize).copied().unwrap_or(true)),
            _ => true,
        }
    }

    /// Signed distance of a position of the step's start (the obstacle at its start pose).
    #[inline]
    pub fn signed_distance_start(&self, p: Vec3A) -> (f32, Vec3A) {
        match &self.shape {
            ObstacleShape::Posed(s) => s.signed_distance_start(p),
            _ => self.signed_distance(p),
        }
    }

    /// How far the obstacle's surface point now at `x` moved during the step \[m\] (zero for
    /// a static obstacle): friction acts on the motion relative to it.
    #[inline]
    pub fn surface_displacement(&self, x: Vec3A) -> Vec3A {
        match &self.shape {
            ObstacleShape::Posed(s) => s.surface_displacement(x),
            _ => Vec3A::ZERO,
        }
    }

    /// Signed distance from `p` to the obstacle's surface (negative inside) \[m\] and the unit
    /// normal of the closest surface point, pointing out of the obstacle.
    #[inline]
    pub fn signed_distance(&self, p: Vec3A) -> (f32, Vec3A) {
        match self.shape {
            ObstacleShape::Posed(ref s) => s.signed_distance(p),
            ObstacleShape::Plane { normal, offset } => {
                let n = Vec3A::from(normal);
                (n.dot(p) - offset, n)
            }
            ObstacleShape::Sphere { center, radius } => ball_signed_distance(p - Vec3A::from(center), radius),
            ObstacleShape::Cuboid { center, half_extents, rotation } => {
                let local = Vec3A::from(rotation.inverse() * (Vec3::from(p) - center));
                let (dist, n_local) = box_signed_distance(local, Vec3A::from(half_extents));
                (dist, Vec3A::from(rotation * Vec3::from(n_local)))
            }
        }
    }

    /// The first `t ∈ [0, 1]` at which the segment `a + t (b − a)` touches the solid, or
    /// `None` if it never does. A start point already inside returns `None`: such a vertex is
    /// pushed out by the contact force instead of being frozen.
    pub fn first_entry(&self, a: Vec3A, b: Vec3A) -> Option<f32> {
        let d = b - a;
        match self.shape {
            ObstacleShape::Posed(ref s) => s.first_entry(a, b),
            ObstacleShape::Plane { normal, offset } => {
                let n = Vec3A::from(normal);
                let (sa, sb) = (n.dot(a) - offset, n.dot(b) - offset);
                if sa < 0.0 || sb >= 0.0 {
                    return None;
                }
                Some(sa / (sa - sb))
            }
            ObstacleShape::Sphere { center, radius } => {
                let m = a - Vec3A::from(center);
                let c = m.length_squared() - radius * radius;
                if c < 0.0 {
                    return None;
                }
                let dd = d.length_squared();
                if dd == 0.0 {
                    return None;
                }
                let bq = m.dot(d);
                let disc = bq * bq - dd * c;
                if bq >= 0.0 || disc < 0.0 {
                    return None;
                }
                let t = (-bq - disc.sqrt()) / dd;
                (t <= 1.0).then_some(t.max(0.0))
            }
            ObstacleShape::Cuboid { center, half_extents, rotation } => {
                let inv = rotation.inverse();
                let la = Vec3A::from(inv * (Vec3::from(a) - center));
                let ld = Vec3A::from(inv * Vec3::from(d));
                let h = Vec3A::from(half_extents);
                if (la.abs() - h).max_element() < 0.0 {
                    return None;
                }
                // Slab test.
                let (mut t0, mut t1) = (0.0f32, 1.0f32);
                for k in 0..3 {
                    if ld[k].abs() < 1e-20 {
                        // Moving parallel to this slab: on or beyond its face never enters.
                        if la[k].abs() >= h[k] {
                            return None;
                        }
                    } else {
                        let inv_d = 1.0 / ld[k];
                        let (mut ta, mut tb) = ((-h[k] - la[k]) * inv_d, (h[k] - la[k]) * inv_d);
                        if ta > tb {
                            std::mem::swap(&mut ta, &mut tb);
                        }
                        t0 = t0.max(ta);
                        t1 = t1.min(tb);
                        // An empty or single-point overlap is a touch, not an entry: a vertex
                        // resting exactly on a face may leave it.
                        if t0 >= t1 {
                            return None;
                        }
                    }
                }
                Some(t0)
            }
        }
    }

    /// Limits a vertex step `a → b` so the vertex ends outside the solid; returns the limited
    /// end point, or `None` if `b` is acceptable.
    ///
    /// * A step that enters the solid keeps its tangential motion: the end point goes to its
    ///   nearest surface point when that lies on the face that was entered, and otherwise loses
    ///   the inward part past the entry face's supporting plane. A vertex resting on a plane or
    ///   wrapped on a sphere can slide (stopping at the entry point would freeze it: a chord
    ///   between two surface points of a convex solid dips inside), and a step through a thin
    ///   slab or past a small sphere's centre ends on the near side, never the far one.
    /// * A vertex already inside (placed there, or left a hair under by rounding) may move but
    ///   not deeper; the contact force pushes it out.
    ///
    /// The contact energy then pushes vertices on the surface out to the contact offset.
    #[inline]
    pub fn clamp_path(&self, a: Vec3A, b: Vec3A) -> Option<Vec3A> {
        if let ObstacleShape::Posed(s) = &self.shape {
            return s.clamp_path(a, b);
        }
        let (da, _) = self.signed_distance(a);
        if da < 0.0 {
            let (db, nb) = self.signed_distance(b);
            return (db < da).then(|| b + nb * (da - db));
        }
        let Some(t) = self.first_entry(a, b) else {
            // f32 rounding in the entry test can miss a path that ends a hair inside.
            let (db, nb) = self.signed_distance(b);
            if db >= 0.0 {
                return None;
            }
            let p = b - nb * (db * 2.0);
            return Some(if self.signed_distance(p).0 >= 0.0 { p } else { a });
        };
        let entry = a + (b - a) * t;
        let (_, n) = self.signed_distance(entry);
        let (db, nb) = self.signed_distance(b);
        let mut p = if db < 0.0 && nb.dot(n) > 0.5 {
            // The nearest surface point of `b` is on the face that was entered: project there
            // (on a sphere this keeps a sliding vertex on the surface, where the tangent plane
            // would lift it off a little every step).
            b - nb * db
        } else {
            // Otherwise (far side of a thin slab, past a small sphere's centre, another face
            // near a box edge) drop the inward motion past the entry face's plane.
            b - n * (b - entry).dot(n).min(0.0)
        };
        let (dp, np) = self.signed_distance(p);
        if dp < 0.0 {
            // Rounding (or a curved surface bending under the tangent plane): push out once.
            p -= np * (dp * 2.0);
        }
        if self.signed_distance(p).0 >= 0.0 {
            return Some(p);
        }
        let stop = a + (b - a) * (t * (1.0 - 1e-4));
        Some(if self.signed_distance(stop).0 >= 0.0 { stop } else { a })
    }
}

/// Signed distance and outward unit normal at `d` (relative to the centre) of a ball of
/// radius `radius`.
#[inline]
pub(crate) fn ball_signed_distance(d: Vec3A, radius: f32) -> (f32, Vec3A) {
    let l = d.length();
    (l - radius, if l > 0.0 { d / l } else { Vec3A::Y })
}

/// Signed distance and outward unit normal at `local` (the box's own frame) of a box of half
/// extents `h`.
#[inline]
pub(crate) fn box_signed_distance(local: Vec3A, h: Vec3A) -> (f32, Vec3A) {
    let q = local.abs() - h;
    let sign = local.signum();
    let outside = q.max(Vec3A::ZERO);
    let lo = outside.length();
    if lo > 0.0 {
        return (lo, outside * sign / lo);
    }
    // Inside: the nearest face is along the axis of the largest q.
    let axis = if q.x >= q.y && q.x >= q.z {
        Vec3A::X
    } else if q.y >= q.z {
        Vec3A::Y
    } else {
        Vec3A::Z
    };
    (q.max_element(), axis * sign)
}

/// Limits a step `a → b` of a vertex of packed body `body` against every obstacle acting on
/// it (see [`Obstacle::clamp_path`]). One obstacle's correction can push the end point into
/// another (a corner between the ground and a box), so while the end point is inside an
/// obstacle the vertex started outside of, it is pushed out of it (at most four rounds; then
/// the vertex stays at `a`).
#[inline]
pub fn limit_step(obstacles: &[Obstacle], body: u32, a: Vec3A, b: Vec3A) -> Vec3A {
    let mut end = b;
    for o in obstacles.iter().filter(|o| o.applies_to(body)) {
        if let Some(p) = o.clamp_path(a, end) {
            end = p;
        }
    }
    // Obstacles the vertex started inside keep their own "not deeper" rule.
    let entered = |o: &Obstacle, p: Vec3A| {
        o.applies_to(body) && o.signed_distance(p).0 < 0.0 && o.signed_distance_start(a).0 >= 0.0
    };
    for _ in 0..4 {
        let Some(o) = obstacles.iter().find(|o| entered(o, end)) else {
            return end;
        };
        let (d, n) = o.signed_distance(end);
        end -= n * (d * 2.0);
    }
    if obstacles.iter().any(|o| entered(o, end)) { a } else { end }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obstacles() -> Vec<Obstacle> {
        vec![
            Obstacle::ground(0.0, 0.5),
            Obstacle::plane(Vec3::new(1.0, 1.0, 0.0), Vec3::new(0.0, -1.0, 0.0), 0.5).unwrap(),
            Obstacle::sphere(Vec3::new(0.2, 0.3, -0.1), 0.25, 0.3).unwrap(),
            Obstacle::cuboid(Vec3::new(-0.1, 0.2, 0.3), Vec3::new(0.3, 0.1, 0.2), Quat::from_rotation_z(0.4), 0.2)
                .unwrap(),
        ]
    }

    #[test]
    fn signed_distance_gradient_is_the_normal() {
        let pts = [Vec3A::new(0.6, 0.9, 0.1), Vec3A::new(-0.4, 0.45, 0.35), Vec3A::new(0.25, 0.3, -0.12)];
        for o in obstacles() {
            for p in pts {
                let (d, n) = o.signed_distance(p);
                let eps = 1e-3;
                let fd = Vec3A::new(
                    o.signed_distance(p + Vec3A::X * eps).0 - o.signed_distance(p - Vec3A::X * eps).0,
                    o.signed_distance(p + Vec3A::Y * eps).0 - o.signed_distance(p - Vec3A::Y * eps).0,
                    o.signed_distance(p + Vec3A::Z * eps).0 - o.signed_distance(p - Vec3A::Z * eps).0,
                ) / (2.0 * eps);
                assert!((fd - n).length() < 1e-2, "{o:?} at {p}: d {d} n {n} fd {fd}");
            }
        }
    }

    #[test]
    fn first_entry_agrees_with_dense_sampling() {
        // Brute force: march along the path and find the first sample inside.
        let mut seed = 12345u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        };
        for o in obstacles() {
            for _ in 0..400 {
                let a = Vec3A::new(rnd(), rnd(), rnd()) * 1.2;
                let b = Vec3A::new(rnd(), rnd(), rnd()) * 1.2;
                if o.signed_distance(a).0 < 0.0 {
                    assert_eq!(o.first_entry(a, b), None);
                    continue;
                }
                let n = 4000;
                let brute = (0..=n).map(|k| k as f32 / n as f32).find(|&t| o.signed_distance(a + (b - a) * t).0 < 0.0);
                match (o.first_entry(a, b), brute) {
                    (None, None) => {}
                    (Some(t), Some(tb)) => assert!((t - tb).abs() < 2e-3, "{o:?}: {t} vs {tb}"),
                    // Grazing paths can dip inside by less than one sample.
                    (Some(t), None) => assert!(o.signed_distance(a + (b - a) * t).0 > -1e-4),
                    (None, Some(tb)) => panic!("{o:?}: missed entry at {tb} on {a} → {b}"),
                }
            }
        }
    }

    #[test]
    fn limited_steps_end_outside_and_keep_tangential_motion() {
        let ground = Obstacle::ground(0.0, 0.5);
        // Sliding down into the ground: the tangential part survives.
        let p = ground.clamp_path(Vec3A::new(0.0, 0.001, 0.0), Vec3A::new(0.3, -0.2, 0.1)).unwrap();
        assert!((p - Vec3A::new(0.3, 0.0, 0.1)).length() < 1e-6, "{p}");
        // Tunnelling through a thin box stops at the entry.
        let slab = Obstacle::cuboid(Vec3::ZERO, Vec3::new(1.0, 0.01, 1.0), Quat::IDENTITY, 0.5).unwrap();
        let p = slab.clamp_path(Vec3A::new(0.0, 0.5, 0.0), Vec3A::new(0.0, -0.5, 0.0)).unwrap();
        assert!(p.y >= 0.01 && p.y < 0.011, "{p}");
        // Around a sphere: every limited end point is outside.
        let ball = Obstacle::sphere(Vec3::ZERO, 0.25, 0.3).unwrap();
        let mut seed = 7u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        };
        for _ in 0..2000 {
            let dir = Vec3A::new(rnd(), rnd(), rnd()).normalize();
            let a = dir * (0.25 + 1e-3 * (rnd() + 1.0));
            let b = a + Vec3A::new(rnd(), rnd(), rnd()) * 0.05;
            let end = ball.clamp_path(a, b).unwrap_or(b);
            assert!(ball.signed_distance(end).0 >= 0.0, "{a} → {b} ended at {end}");
        }
        // Already inside: may not go deeper.
        let p = ground.clamp_path(Vec3A::new(0.0, -0.01, 0.0), Vec3A::new(0.0, -0.02, 0.0)).unwrap();
        assert!((p.y + 0.01).abs() < 1e-6);
    }

    #[test]
    fn vertices_on_a_box_face_can_leave_and_slide() {
        let block = Obstacle::cuboid(Vec3::ZERO, Vec3::splat(0.5), Quat::IDENTITY, 0.5).unwrap();
        let on_top = Vec3A::new(0.1, 0.5, 0.0);
        assert_eq!(block.clamp_path(on_top, on_top + Vec3A::new(0.2, 0.0, 0.0)), None);
        assert_eq!(block.clamp_path(on_top, on_top + Vec3A::new(0.0, 0.1, 0.0)), None);
        let p = block.clamp_path(on_top, on_top + Vec3A::new(0.2, -0.05, 0.0)).unwrap();
        assert!((p - Vec3A::new(0.3, 0.5, 0.0)).length() < 1e-6, "{p}");
        // Coming in from the side near the top edge: stops on the side, not lifted on top.
        let p = block.clamp_path(Vec3A::new(0.6, 0.45, 0.0), Vec3A::new(0.4, 0.45, 0.0)).unwrap();
        assert!((p.x - 0.5).abs() < 1e-5 && (p.y - 0.45).abs() < 1e-6, "{p}");
    }

    #[test]
    fn corners_between_obstacles_end_outside_both() {
        let obstacles =
            [Obstacle::ground(0.0, 0.5), Obstacle::plane(Vec3::new(-1.0, 1.0, 0.0), Vec3::ZERO, 0.5).unwrap()];
        let a = Vec3A::new(0.05, 0.1, 0.0);
        for b in [Vec3A::new(0.3, -0.2, 0.0), Vec3A::new(-0.1, -0.3, 0.1), Vec3A::new(0.5, 0.2, 0.0)] {
            let end = limit_step(&obstacles, 0, a, b);
            for o in &obstacles {
                assert!(o.signed_distance(end).0 >= 0.0, "{b} ended at {end}");
            }
        }
    }

    #[test]
    fn bad_parameters_are_rejected() {
        assert_eq!(Obstacle::sphere(Vec3::ZERO, -1.0, 0.5).unwrap_err().field, "radius");
        assert_eq!(Obstacle::plane(Vec3::ZERO, Vec3::ZERO, 0.5).unwrap_err().field, "normal");
        assert_eq!(Obstacle::sphere(Vec3::ZERO, 1.0, f32::NAN).unwrap_err().field, "friction");
    }
}
