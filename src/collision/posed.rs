//! Moving obstacles of any shape: a geometry queried in its own frame ([`ObstacleGeometry`],
//! implemented for every parry shape by the rapier bridge) and the rigid poses it has at the
//! start and at the end of a step. A vertex path `a → b` is tested in the shape's frame as
//! `start⁻¹ a → end⁻¹ b`, so a moving obstacle reduces to a static one: exact for a shape that
//! only translates, and the usual linearisation of the relative motion when it turns.

use std::fmt;
use std::sync::Arc;

use glam::{Quat, Vec3, Vec3A};

/// A rigid shape in its own frame that soft vertices may not enter (or, for a surface without
/// an inside, cross).
pub trait ObstacleGeometry: Send + Sync + fmt::Debug {
    /// Signed distance from `p` to the surface \[m\] (negative inside) and the unit normal
    /// pointing from the surface towards `p` (out of the solid when inside). A surface without
    /// an inside gives the unsigned distance.
    fn signed_distance(&self, p: Vec3) -> (f32, Vec3);
    /// The first `t ∈ [0, 1]` at which the segment `a + t (b − a)` reaches the surface, with the
    /// surface's unit normal there facing `a`; `None` if it never does.
    fn first_hit(&self, a: Vec3, b: Vec3) -> Option<(f32, Vec3)>;
    /// Local bounding box `(min, max)` \[m\].
    fn local_bounds(&self) -> (Vec3, Vec3);
    /// Whether the shape is a solid (a closed surface with an inside). Open surfaces (an
    /// unoriented triangle mesh, a polyline) keep vertices on the side they start on instead.
    fn has_inside(&self) -> bool;
    /// Whether the solid is convex: its signed distance is then convex along any line, which
    /// lets a segment query stop at its ends when both slope away from the segment's inside.
    /// `false` (always safe) unless the shape says otherwise.
    fn is_convex(&self) -> bool {
        false
    }
}

/// A rigid pose: `x ↦ rotation · x + translation`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RigidPose {
    /// Rotation.
    pub rotation: Quat,
    /// Translation \[m\].
    pub translation: Vec3,
}

impl RigidPose {
    /// The identity.
    pub const IDENTITY: Self = Self { rotation: Quat::IDENTITY, translation: Vec3::ZERO };

    /// Maps a point of the shape's frame to the world.
    #[inline]
    pub fn apply(&self, p: Vec3A) -> Vec3A {
        Vec3A::from(self.rotation * Vec3::from(p)) + Vec3A::from(self.translation)
    }

    /// Maps a world point into the shape's frame.
    #[inline]
    pub fn invert(&self, p: Vec3A) -> Vec3A {
        Vec3A::from(self.rotation.inverse() * Vec3::from(p - Vec3A::from(self.translation)))
    }

    /// The pose a fraction `s` of the way to `other` (translation lerp, rotation slerp).
    pub fn lerp(&self, other: &Self, s: f32) -> Self {
        Self {
            rotation: self.rotation.slerp(other.rotation, s).normalize(),
            translation: self.translation.lerp(other.translation, s),
        }
    }

    fn is_finite(&self) -> bool {
        self.rotation.is_finite() && self.translation.is_finite()
    }
}

/// How far above the surface a limited vertex is put \[m\]: far below any contact offset, far
/// above f32 rounding at scene coordinates, so the next query from there starts clearly on
/// its side (a vertex exactly on an open surface has no side).
const LIFT: f32 = 1e-5;

/// A geometry at its start- and end-of-step poses, with the world box it sweeps.
#[derive(Clone)]
pub struct PosedShape {
    /// The geometry in its own frame.
    pub geometry: Arc<dyn ObstacleGeometry>,
    /// Pose at the step's start.
    pub start: RigidPose,
    /// Pose at the step's end.
    pub end: RigidPose,
    /// World box over both poses, widened by `margin`.
    lo: Vec3A,
    hi: Vec3A,
    margin: f32,
    /// Per packed body: whether the obstacle acts on it (`None`: on every body).
    pub(crate) bodies: Option<Arc<[bool]>>,
    /// The step's carrier (a dynamic rigid body outside Pliant, see `solver::vbd::carrier::Carrier`) that
    /// moves this shape, whose end pose the step then solves for; `None`: the pose is given.
    pub(crate) carrier: Option<u32>,
    /// Mass \[kg\] each touching vertex carries for this shape (a carrier's share of its
    /// mass): a contact with a heavy body must be as stiff as that body's weight asks.
    pub(crate) load_mass: f32,
    /// Whether the shape belongs to a body that momentum moves (a dynamic rapier body). A soft
    /// body touching anything else (fixed or kinematic: infinite mass) hands its momentum
    /// residual to it.
    pub(crate) movable: bool,
}

impl fmt::Debug for PosedShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PosedShape")
            .field("geometry", &self.geometry)
            .field("start", &self.start)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl PartialEq for PosedShape {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.geometry, &other.geometry) && self.start == other.start && self.end == other.end
    }
}

impl PosedShape {
    /// `geometry` moving from `start` to `end` over the step. Queries farther than `margin`
    /// \[m\] from its swept box answer with a lower bound of the distance instead of asking the
    /// geometry; `margin` must exceed the contact offset.
    pub fn new(geometry: Arc<dyn ObstacleGeometry>, start: RigidPose, end: RigidPose, margin: f32) -> Self {
        let (lo, hi) = geometry.local_bounds();
        let (mut wlo, mut whi) = (Vec3A::splat(f32::INFINITY), Vec3A::splat(f32::NEG_INFINITY));
        for pose in [&start, &end] {
            for k in 0..8 {
                let c = Vec3A::new(
                    if k & 1 == 0 { lo.x } else { hi.x },
                    if k & 2 == 0 { lo.y } else { hi.y },
                    if k & 4 == 0 { lo.z } else { hi.z },
                );
                let w = pose.apply(c);
                wlo = wlo.min(w);
                whi = whi.max(w);
            }
        }
        let m = Vec3A::splat(margin);
        Self {
            geometry,
            start,
            end,
            lo: wlo - m,
            hi: whi + m,
            margin,
            bodies: None,
            carrier: None,
            load_mass: 0.0,
            movable: false,
        }
    }

    /// The same shape and start pose with the end pose `end`.
    pub(crate) fn with_end(&self, end: RigidPose) -> Self {
        self.with_poses(self.start, end)
    }

    /// The same shape (bodies, carrier) moving from `start` to `end`.
    pub(crate) fn with_poses(&self, start: RigidPose, end: RigidPose) -> Self {
        let mut out = Self::new(self.geometry.clone(), start, end, self.margin);
        out.bodies = self.bodies.clone();
        out.carrier = self.carrier;
        out.load_mass = self.load_mass;
        out.movable = self.movable;
        out
    }

    /// The shape moving from this shape's end pose to `end` (a probe for the carrier's CCD).
    pub(crate) fn sweep_from_end_to(&self, end: RigidPose) -> Self {
        Self::new(self.geometry.clone(), self.end, end, self.margin)
    }

    /// The world box over both poses, widened by the margin: `(min, max)` \[m\].
    pub(crate) fn world_box(&self) -> (Vec3A, Vec3A) {
        (self.lo, self.hi)
    }

    /// The query margin \[m\].
    pub(crate) fn margin(&self) -> f32 {
        self.margin
    }

    /// The same geometry over the part `[s0, s1]` of the step (substeps).
    pub fn between(&self, s0: f32, s1: f32) -> Self {
        // A shape at rest stays bit-for-bit at rest (interpolation would round its pose).
        if self.start == self.end {
            return self.clone();
        }
        let (start, end) = (self.start.lerp(&self.end, s0), self.start.lerp(&self.end, s1));
        self.with_poses(start, end)
    }

    /// Whether the pose data is finite.
    pub fn is_finite(&self) -> bool {
        self.start.is_finite() && self.end.is_finite()
    }

    #[inline]
    fn outside_box(&self, p: Vec3A) -> Option<(f32, Vec3A)> {
        let below = self.lo - p;
        let above = p - self.hi;
        let out = below.max(above).max(Vec3A::ZERO);
        let d = out.length();
        (d > 0.0).then(|| {
            // A lower bound of the true distance, pointing away from the box.
            let dir = (p - (self.lo + self.hi) * 0.5).normalize_or(Vec3A::Y);
            (d + self.margin, dir)
        })
    }

    #[inline]
    fn segment_misses_box(&self, a: Vec3A, b: Vec3A) -> bool {
        let (lo, hi) = (a.min(b), a.max(b));
        hi.cmplt(self.lo).any() || lo.cmpgt(self.hi).any()
    }

    /// Signed distance and outward normal at the pose `pose` (a lower bound far from the box).
    #[inline]
    fn distance_at(&self, pose: &RigidPose, p: Vec3A) -> (f32, Vec3A) {
        if let Some(bound) = self.outside_box(p) {
            return bound;
        }
        self.exact_at(pose, p)
    }

    /// Signed distance and outward normal at the pose `pose` from the geometry itself.
    #[inline]
    fn exact_at(&self, pose: &RigidPose, p: Vec3A) -> (f32, Vec3A) {
        let (d, n) = self.geometry.signed_distance(Vec3::from(pose.invert(p)));
        (d, Vec3A::from(pose.rotation * n))
    }

    /// Signed distance at the end pose (where the current iterate is measured).
    #[inline]
    pub fn signed_distance(&self, p: Vec3A) -> (f32, Vec3A) {
        self.distance_at(&self.end, p)
    }

    /// Signed distance at the end pose (the start pose if `start`) from the geometry itself,
    /// also far from the swept box (where [`Self::signed_distance`] answers a lower bound): a
    /// search along a segment needs the true slope.
    #[inline]
    pub(crate) fn signed_distance_exact(&self, p: Vec3A, start: bool) -> (f32, Vec3A) {
        self.exact_at(if start { &self.start } else { &self.end }, p)
    }

    /// Whether the geometry is a convex solid (see [`ObstacleGeometry::is_convex`]).
    #[inline]
    pub(crate) fn is_convex(&self) -> bool {
        self.geometry.has_inside() && self.geometry.is_convex()
    }

    /// Signed distance at the start pose (for positions of the step's start).
    #[inline]
    pub fn signed_distance_start(&self, p: Vec3A) -> (f32, Vec3A) {
        self.distance_at(&self.start, p)
    }

    /// How far the obstacle's surface point now at `x` moved during the step \[m\]: friction acts
    /// on the vertex's motion relative to it.
    #[inline]
    pub fn surface_displacement(&self, x: Vec3A) -> Vec3A {
        x - self.start.apply(self.end.invert(x))
    }

    /// First time the path from `a` (at the start pose) to `b` (at the end pose) reaches the
    /// surface; `None` from a start inside a solid.
    pub fn first_entry(&self, a: Vec3A, b: Vec3A) -> Option<f32> {
        if self.segment_misses_box(a, b) {
            return None;
        }
        let (la, lb) = (Vec3::from(self.start.invert(a)), Vec3::from(self.end.invert(b)));
        if self.geometry.has_inside() && self.geometry.signed_distance(la).0 <= 0.0 {
            return None;
        }
        self.geometry.first_hit(la, lb).map(|(t, _)| t)
    }

    /// Limits the path `a → b` so it neither enters the solid nor crosses the surface; see
    /// [`super::Obstacle::clamp_path`]. Works in the shape's frame and maps the result back with
    /// the end pose.
    pub fn clamp_path(&self, a: Vec3A, b: Vec3A) -> Option<Vec3A> {
        if self.segment_misses_box(a, b) {
            return None;
        }
        let (la, lb) = (Vec3::from(self.start.invert(a)), Vec3::from(self.end.invert(b)));
        clamp_local(self.geometry.as_ref(), la, lb).map(|p| self.end.apply(Vec3A::from(p)))
    }
}

/// [`PosedShape::clamp_path`] in the shape's frame, where it is static.
fn clamp_local(g: &dyn ObstacleGeometry, a: Vec3, b: Vec3) -> Option<Vec3> {
    let solid = g.has_inside();
    if solid {
        let (da, _) = g.signed_distance(a);
        if da <= 0.0 {
            // Inside (or exactly on) the solid: the vertex may move, but not deeper; the
            // contact force pushes it out.
            let (db, nb) = g.signed_distance(b);
            return (db < da).then(|| b + nb * (da - db));
        }
    }
    // A valid end: outside the solid and reached from `a` without touching the surface.
    let valid = |p: Vec3| (!solid || g.signed_distance(p).0 > 0.0) && g.first_hit(a, p).is_none();
    let Some((t, n)) = g.first_hit(a, b) else {
        if solid {
            // Rounding in the hit test can miss a path that ends a hair inside.
            let (db, nb) = g.signed_distance(b);
            if db <= 0.0 {
                let p = b + nb * (LIFT - db);
                return Some(if valid(p) { p } else { a });
            }
        }
        return None;
    };
    let entry = a + (b - a) * t;
    if solid {
        // The nearest surface point of `b`, when it is on the face that was entered, keeps a
        // vertex sliding over a curved solid on its surface.
        let (db, nb) = g.signed_distance(b);
        if db < 0.0 && nb.dot(n) > 0.5 {
            let p = b + nb * (LIFT - db);
            if valid(p) {
                return Some(p);
            }
        }
    }
    // Keep the tangential motion: drop the part of the step past the tangent plane at the
    // entry, and stay a hair on the vertex's side of it.
    let p = b - n * ((b - entry).dot(n) - LIFT);
    if valid(p) {
        return Some(p);
    }
    // A fold or a corner the tangent plane does not cover: stop short of the hit.
    let stop = a + (b - a) * (t * (1.0 - 1e-3));
    Some(if valid(stop) { stop } else { a })
}

/// Test geometries shared by the tests of moving obstacles.
#[cfg(test)]
pub(crate) mod test_geometry {
    use super::*;

    /// A solid ball of the given radius about the origin, with an exact first hit.
    #[derive(Debug)]
    pub(crate) struct Ball(pub f32);

    impl ObstacleGeometry for Ball {
        fn signed_distance(&self, p: Vec3) -> (f32, Vec3) {
            (p.length() - self.0, p.normalize_or(Vec3::Y))
        }
        fn first_hit(&self, a: Vec3, b: Vec3) -> Option<(f32, Vec3)> {
            let d = b - a;
            let (dd, bq, c) = (d.length_squared(), a.dot(d), a.length_squared() - self.0 * self.0);
            let disc = bq * bq - dd * c;
            if dd == 0.0 || disc < 0.0 || c < 0.0 {
                return None;
            }
            let t = (-bq - disc.sqrt()) / dd;
            (0.0..=1.0).contains(&t).then(|| (t, (a + d * t).normalize()))
        }
        fn local_bounds(&self) -> (Vec3, Vec3) {
            (Vec3::splat(-self.0), Vec3::splat(self.0))
        }
        fn has_inside(&self) -> bool {
            true
        }
        fn is_convex(&self) -> bool {
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_geometry::Ball;
    use super::*;

    /// An open square sheet at y = 0, two-sided.
    #[derive(Debug)]
    struct Sheet;

    impl ObstacleGeometry for Sheet {
        fn signed_distance(&self, p: Vec3) -> (f32, Vec3) {
            let q = Vec3::new(p.x.clamp(-1.0, 1.0), 0.0, p.z.clamp(-1.0, 1.0));
            let d = p - q;
            (d.length(), d.normalize_or(Vec3::Y))
        }
        fn first_hit(&self, a: Vec3, b: Vec3) -> Option<(f32, Vec3)> {
            if (a.y > 0.0) == (b.y > 0.0) && a.y != 0.0 && b.y != 0.0 {
                return None;
            }
            let t = if a.y == b.y { 0.0 } else { a.y / (a.y - b.y) };
            let p = a + (b - a) * t;
            (p.x.abs() <= 1.0 && p.z.abs() <= 1.0).then(|| (t, if a.y >= 0.0 { Vec3::Y } else { -Vec3::Y }))
        }
        fn local_bounds(&self) -> (Vec3, Vec3) {
            (Vec3::new(-1.0, 0.0, -1.0), Vec3::new(1.0, 0.0, 1.0))
        }
        fn has_inside(&self) -> bool {
            false
        }
    }

    fn rnd(seed: &mut u64) -> f32 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    #[test]
    fn limited_paths_never_enter_a_moving_ball() {
        let start = RigidPose { rotation: Quat::IDENTITY, translation: Vec3::ZERO };
        let end = RigidPose { rotation: Quat::from_rotation_z(0.3), translation: Vec3::new(0.05, 0.02, 0.0) };
        let ball = PosedShape::new(Arc::new(Ball(0.3)), start, end, 0.01);
        let mut seed = 3;
        for _ in 0..4000 {
            let dir = Vec3A::new(rnd(&mut seed), rnd(&mut seed), rnd(&mut seed)).normalize();
            let a = dir * (0.3 + 0.05 * (rnd(&mut seed) + 1.0) + 1e-4);
            let b = a + Vec3A::new(rnd(&mut seed), rnd(&mut seed), rnd(&mut seed)) * 0.2;
            let end_point = ball.clamp_path(a, b).unwrap_or(b);
            assert!(ball.signed_distance(end_point).0 >= 0.0, "{a} → {b} ended at {end_point}");
        }
    }

    #[test]
    fn open_surfaces_are_not_crossed_and_keep_tangential_motion() {
        let sheet = PosedShape::new(Arc::new(Sheet), RigidPose::IDENTITY, RigidPose::IDENTITY, 0.01);
        let p = sheet.clamp_path(Vec3A::new(0.0, 0.01, 0.0), Vec3A::new(0.3, -0.2, 0.1)).unwrap();
        assert!((p - Vec3A::new(0.3, LIFT, 0.1)).length() < 1e-6, "{p}");
        // From below it is crossed upwards neither.
        let p = sheet.clamp_path(Vec3A::new(0.0, -0.01, 0.0), Vec3A::new(0.0, 0.5, 0.0)).unwrap();
        assert!(p.y < 0.0 && p.y > -2.0 * LIFT, "{p}");
        // Past its edge nothing stops the vertex.
        assert_eq!(sheet.clamp_path(Vec3A::new(1.5, 0.01, 0.0), Vec3A::new(1.5, -0.2, 0.0)), None);
    }

    #[test]
    fn far_queries_give_a_lower_bound_of_the_distance() {
        let ball = PosedShape::new(Arc::new(Ball(0.3)), RigidPose::IDENTITY, RigidPose::IDENTITY, 0.01);
        for p in [Vec3A::new(2.0, 0.0, 0.0), Vec3A::new(1.0, 1.0, -1.0), Vec3A::new(0.0, 0.0, 0.31)] {
            let exact = p.length() - 0.3;
            let (d, _) = ball.signed_distance(p);
            assert!(d <= exact + 1e-6, "{p}: {d} > {exact}");
            assert!(d >= 0.0);
        }
    }

    #[test]
    fn surface_displacement_follows_the_pose() {
        let end = RigidPose { rotation: Quat::IDENTITY, translation: Vec3::new(0.1, 0.0, 0.0) };
        let ball = PosedShape::new(Arc::new(Ball(0.3)), RigidPose::IDENTITY, end, 0.01);
        let u = ball.surface_displacement(Vec3A::new(0.4, 0.0, 0.0));
        assert!((u - Vec3A::new(0.1, 0.0, 0.0)).length() < 1e-6);
    }
}
