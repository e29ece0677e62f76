//! Soft surface edges against obstacles with a shape of their own (rapier colliders).
//!
//! Vertex contact (`vertex::external_terms` and the path clamp `limit_step`) keeps every
//! vertex out of every obstacle, but a collider's edge or corner, or a thin rod, can still pass
//! between the vertices of a coarse mesh and cut through the triangles between them. So each
//! step also does this for the surface edges near a posed obstacle:
//!
//! ```text
//! advance  each body's initial guess x^n → x^(0) is scaled back so that no surface edge
//!          near a posed obstacle reaches it (separating-plane bounds, relative to the
//!          obstacle's own motion)
//! detect   at x^(0): surface edges within the search radius of a posed obstacle whose
//!          closest point lies inside the edge and dips below the straight interpolation of
//!          the two ends' distances (the excess)
//! sweeps   each vertex of such an edge gets the contact and friction of the edge's point at
//!          the detected parameter t, by its weight (1 − t or t); against a collider that
//!          holds still its move is limited so the edge stays out (the edge's other end holds
//!          still during the vertex's color pass), and the Chebyshev mix leaves it at its
//!          Gauss–Seidel result
//! ```
//!
//! Why the excess: an edge lying on a flat face has its ends as close as any point between
//! them, and the ends' own contacts carry it; a contact of its interior would double the face's
//! stiffness. The energy is scaled by `min(1, excess / δ)`, so it grows continuously from
//! nothing as an edge comes across a ridge, and is whole once the ridge is a contact offset
//! proud of the ends.
//!
//! Analytic obstacles (half-space, box, sphere) stay vertex-only: the GPU path solves them
//! too, the same way, and has no posed obstacles.

use glam::{Vec3A, Vec4};

use crate::collision::surface_pairs::search_radius;
use crate::collision::{Obstacle, SegmentClosest};
use crate::mesh::{Csr, unpack_entry};
use crate::state::SimState;

/// Distance \[m\] a limited edge keeps from the obstacle: far below any contact offset, far
/// above f32 rounding at scene coordinates (the vertex path clamp's lift).
pub(crate) const GAP: f32 = 1e-5;
/// Closest points nearer an end than this fraction of the edge belong to the end's vertex
/// contact.
const END_FRACTION: f32 = 0.02;

/// A surface edge near a posed obstacle, with its closest point inside the edge.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct EdgeContact {
    /// The edge's vertices (packed).
    pub vertices: [u32; 2],
    /// Index into the step's obstacle list.
    pub obstacle: u32,
    /// Parameter of the contact point along the edge (0 at `vertices[0]`).
    pub t: f32,
    /// Energy scale `min(1, excess / δ)`.
    pub scale: f32,
    /// Signed distance at the detection \[m\] (the lagged normal force of friction).
    pub distance: f32,
}

/// The edge contacts of the current step.
#[derive(Clone, Debug, Default)]
pub(crate) struct EdgeContacts {
    pub contacts: Vec<EdgeContact>,
    /// Vertex → `contact << 2 | slot` (slot 0 or 1: the vertex's end of the edge).
    pub vertex_contacts: Csr,
    /// Per body: the fraction of its initial advance its edges allow.
    pub body_scale: Vec<f32>,
    /// Per vertex: the signed distance and normal of the obstacle being scanned, filled on
    /// first use in a scan (each surface vertex ends about six edges), and the scan
    /// (`stamp == scan`) that filled it.
    ends: Vec<(f32, Vec3A)>,
    stamp: Vec<u32>,
    scan: u32,
}

/// The ends' signed distances of edge `[a, b]` at `x` from `o` (at its start pose if `start`),
/// through the per-vertex cache of the current scan.
fn ends_of(
    cache: &mut (Vec<(f32, Vec3A)>, Vec<u32>, u32),
    o: &Obstacle,
    x: [Vec3A; 2],
    v: [u32; 2],
    start: bool,
) -> [(f32, Vec3A); 2] {
    let (ends, stamp, scan) = cache;
    [0, 1].map(|k| {
        let i = v[k] as usize;
        if stamp[i] != *scan {
            stamp[i] = *scan;
            ends[i] = o.signed_distance_exact(x[k], start);
        }
        ends[i]
    })
}

impl EdgeContacts {
    /// The contact entries of vertex `v` (none before the first detection).
    #[inline]
    pub fn row(&self, v: usize) -> &[u32] {
        if self.vertex_contacts.offsets.len() > v + 1 { self.vertex_contacts.row(v) } else { &[] }
    }

    /// Forgets every contact (their vertex indices name another topology, or no posed
    /// obstacle is left).
    pub fn clear(&mut self, n: usize) {
        self.contacts.clear();
        self.vertex_contacts.entries.clear();
        self.vertex_contacts.offsets.clear();
        self.vertex_contacts.offsets.resize(n + 1, 0);
    }

    /// The contact entries of vertex `v` whose edge point is now within `reach` of its
    /// obstacle: `(obstacle index, the vertex's weight, energy scale, point, signed distance,
    /// normal)`.
    pub fn near<'a>(
        &'a self,
        v: usize,
        obstacles: &'a [Obstacle],
        x: &'a [Vec4],
        reach: f32,
    ) -> impl Iterator<Item = (usize, f32, f32, Vec3A, f32, Vec3A)> + 'a {
        self.row(v).iter().filter_map(move |&entry| {
            let (k, slot) = unpack_entry(entry);
            let c = &self.contacts[k as usize];
            let o = obstacles.get(c.obstacle as usize)?;
            let [a, b] = c.vertices.map(|i| Vec3A::from_vec4(x[i as usize]));
            let p = a + (b - a) * c.t;
            let (d, n) = o.signed_distance(p);
            let w = if slot == 0 { 1.0 - c.t } else { c.t };
            (d < reach).then_some((c.obstacle as usize, w, c.scale, p, d, n))
        })
    }

    /// Starts a scan over the edges against one obstacle: no vertex's end value is cached.
    fn begin_scan(&mut self, n: usize) -> (Vec<(f32, Vec3A)>, Vec<u32>, u32) {
        self.ends.resize(n, (0.0, Vec3A::ZERO));
        self.stamp.resize(n, 0);
        self.scan = self.scan.wrapping_add(1);
        if self.scan == 0 {
            // After a wrap, stale stamps could match: start over.
            self.stamp.fill(0);
            self.scan = 1;
        }
        (std::mem::take(&mut self.ends), std::mem::take(&mut self.stamp), self.scan)
    }

    fn end_scan(&mut self, cache: (Vec<(f32, Vec3A)>, Vec<u32>, u32)) {
        (self.ends, self.stamp) = (cache.0, cache.1);
    }

    /// Finds the edge contacts at positions `x` (see the module notes).
    pub fn detect(&mut self, st: &SimState, obstacles: &[Obstacle], x: &[Vec4], offset: f32) {
        self.contacts.clear();
        for (k, o) in obstacles.iter().enumerate().filter(|(_, o)| o.tests_edges()) {
            let mut cache = self.begin_scan(st.vertex_count());
            for &[a, b] in &st.surface_edges {
                let body = st.vertex_body[a as usize];
                let (xa, xb) = (Vec3A::from_vec4(x[a as usize]), Vec3A::from_vec4(x[b as usize]));
                let reach = search_radius(st, body, offset);
                if !(o.applies_to(body) && o.box_reaches(xa.min(xb), xa.max(xb), reach)) {
                    continue;
                }
                let ends = ends_of(&mut cache, o, [xa, xb], [a, b], false);
                let c = o.segment_closest_from_ends(xa, xb, false, ends);
                let inside = c.t > END_FRACTION && c.t < 1.0 - END_FRACTION;
                let excess = c.excess();
                if c.distance < reach && inside && excess > 0.0 {
                    self.contacts.push(EdgeContact {
                        vertices: [a, b],
                        obstacle: k as u32,
                        t: c.t,
                        scale: (excess / offset).min(1.0),
                        distance: c.distance,
                    });
                }
            }
            self.end_scan(cache);
        }
        self.vertex_contacts
            .fill_vertex_elements(st.vertex_count(), self.contacts.iter().map(|c| c.vertices), |_| true);
    }

    /// Per body, the fraction of the initial advance `start → guess` after which one of its
    /// surface edges near a posed obstacle would come within [`GAP`] of it, into
    /// `body_scale`; returns whether any body is held back.
    pub fn advance(&mut self, st: &SimState, obstacles: &[Obstacle], start: &[Vec4], guess: &[Vec4]) -> bool {
        self.body_scale.clear();
        self.body_scale.resize(st.bodies.len(), 1.0);
        let mut held = false;
        for o in obstacles.iter().filter(|o| o.tests_edges()) {
            let mut cache = self.begin_scan(st.vertex_count());
            for &[a, b] in &st.surface_edges {
                let body = st.vertex_body[a as usize] as usize;
                let (xa, xb) = (Vec3A::from_vec4(start[a as usize]), Vec3A::from_vec4(start[b as usize]));
                let (da, db) = (Vec3A::from_vec4(guess[a as usize]) - xa, Vec3A::from_vec4(guess[b as usize]) - xb);
                if da == Vec3A::ZERO && db == Vec3A::ZERO {
                    continue;
                }
                let lo = xa.min(xb).min(xa + da).min(xb + db);
                let hi = xa.max(xb).max(xa + da).max(xb + db);
                if !(o.applies_to(body as u32) && o.box_reaches(lo, hi, GAP)) {
                    continue;
                }
                let ends = ends_of(&mut cache, o, [xa, xb], [a, b], true);
                let c = o.segment_closest_from_ends(xa, xb, true, ends);
                let s = step_fraction(o, &c, [xa, xb], [da, db]);
                if s < self.body_scale[body] {
                    self.body_scale[body] = s;
                    held = true;
                }
            }
            self.end_scan(cache);
        }
        held
    }
}

/// The largest fraction `s ∈ [0, 1]` of the moves `moves` of a segment's two ends (both at
/// once) that keeps it out of a collider, given the segment's closest point `c`: neither end
/// may approach the collider along the normal there by more than the distance less [`GAP`].
/// The collider may move too: the plane's normal ends as `n_end`, and the collider carries
/// the points at the two ends by `carried`; the ends' distances to the plane change linearly
/// over the step, so its end is where they are checked. If the collider alone already takes
/// the plane past an end, nothing is held (the contact force has to act).
///
/// Why that suffices: for a convex solid, the closest points of the segment and the solid
/// define a separating plane; with both ends on the segment's side of the plane shifted by
/// `d − GAP`, the whole segment (their convex hull) is, and the solid is behind it. Motion
/// along the plane is free, so an edge can slide along a face it touches. For a non-convex
/// collider (a trimesh) the plane separates the segment from the solid's part near the
/// closest point only. A segment already within the gap is not held, as a vertex that starts
/// inside is not: its contact force pushes it out.
fn plane_fraction(c: &SegmentClosest, n_end: Vec3A, moves: [Vec3A; 2], carried: [Vec3A; 2]) -> f32 {
    let mut s = 1.0f32;
    for (d, carried) in moves.into_iter().zip(carried) {
        let budget = c.distance - GAP - n_end.dot(carried);
        if budget <= 0.0 {
            return 1.0;
        }
        let approach = -n_end.dot(d);
        if approach > budget {
            s = s.min(budget / approach);
        }
    }
    s
}

/// [`plane_fraction`] for a segment of the step's start moving by `da`, `db` over the step
/// while the obstacle moves from its start pose to its end pose: the separating plane at the
/// start, carried (turned and moved) with the obstacle.
/// `c` is the segment's closest point at the start pose.
pub(crate) fn step_fraction(o: &Obstacle, c: &SegmentClosest, x: [Vec3A; 2], moves: [Vec3A; 2]) -> f32 {
    plane_fraction(c, o.carried_direction(c.normal), moves, x.map(|p| o.carried_displacement(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::collision::{ObstacleShape, PosedShape, RigidPose, test_geometry::Ball};

    /// [`step_fraction`] of the segment `a → b` moving by `da`, `db`.
    fn fraction(o: &Obstacle, a: Vec3A, b: Vec3A, da: Vec3A, db: Vec3A) -> f32 {
        step_fraction(o, &o.segment_closest_start(a, b), [a, b], [da, db])
    }

    /// A posed ball of radius 0.1 at the origin, at rest.
    fn ball() -> Obstacle {
        let pose = RigidPose::IDENTITY;
        let shape = PosedShape::new(std::sync::Arc::new(Ball(0.1)), pose, pose, 0.01);
        Obstacle { shape: ObstacleShape::Posed(shape), friction: 0.5 }
    }

    #[test]
    fn closest_points_of_segments_match_the_geometry() {
        let o = ball();
        // A chord-free segment above the ball, crossing over its top.
        let c = o.segment_closest(Vec3A::new(-0.3, 0.12, 0.0), Vec3A::new(0.1, 0.12, 0.0));
        assert!((c.t - 0.75).abs() < 1e-3, "t {}", c.t);
        assert!((c.distance - 0.02).abs() < 1e-5, "distance {}", c.distance);
        assert!((c.normal - Vec3A::Y).length() < 1e-3);
        let ends = [(0.3f32 * 0.3 + 0.12 * 0.12).sqrt() - 0.1, (0.1f32 * 0.1 + 0.12 * 0.12).sqrt() - 0.1];
        assert!((c.ends[0] - ends[0]).abs() < 1e-6 && (c.ends[1] - ends[1]).abs() < 1e-6);
        assert!((c.excess() - (0.25 * ends[0] + 0.75 * ends[1] - 0.02)).abs() < 1e-5);
        // Pointing away: the near end is closest and nothing is in excess.
        let c = o.segment_closest(Vec3A::new(0.0, 0.15, 0.0), Vec3A::new(0.0, 0.4, 0.0));
        assert_eq!(c.t, 0.0);
        assert_eq!(c.excess(), 0.0);
    }

    #[test]
    fn advancement_stops_a_segment_sweeping_over_a_ball_before_it() {
        let o = ball();
        let mut rng = crate::test_rng::Rng(7);
        let mut stopped = 0;
        for _ in 0..200 {
            let a = Vec3A::new(-0.3, 0.15 + 0.1 * rng.uniform_f32(), 0.1 * (rng.uniform_f32() - 0.5));
            let b = Vec3A::new(0.3, 0.15 + 0.1 * rng.uniform_f32(), 0.1 * (rng.uniform_f32() - 0.5));
            let da = Vec3A::new(
                0.05 * (rng.uniform_f32() - 0.5),
                -0.3 * rng.uniform_f32(),
                0.05 * (rng.uniform_f32() - 0.5),
            );
            let db = Vec3A::new(
                0.05 * (rng.uniform_f32() - 0.5),
                -0.3 * rng.uniform_f32(),
                0.05 * (rng.uniform_f32() - 0.5),
            );
            let s = fraction(&o, a, b, da, db);
            stopped += (s < 1.0) as u32;
            // Dense sampling of the limited sweep: never closer than the gap (less rounding).
            for k in 0..=64 {
                let u = s * k as f32 / 64.0;
                let d = o.segment_closest(a + da * u, b + db * u).distance;
                assert!(d > GAP * 0.5, "segment reached the ball: d = {d} at {u} of {s}");
            }
        }
        assert!(stopped > 50, "only {stopped} of 200 sweeps were limited");
    }

    #[test]
    fn a_rising_collider_shortens_the_advance_by_its_own_motion() {
        let lift = RigidPose { translation: glam::Vec3::Y * 0.005, ..RigidPose::IDENTITY };
        let shape = PosedShape::new(std::sync::Arc::new(Ball(0.1)), RigidPose::IDENTITY, lift, 0.01);
        let o = Obstacle { shape: ObstacleShape::Posed(shape), friction: 0.5 };
        let (a, b) = (Vec3A::new(-0.05, 0.12, 0.0), Vec3A::new(0.05, 0.12, 0.0));
        let fall = -Vec3A::Y * 0.05;
        let s = fraction(&o, a, b, fall, fall);
        // The ball's top rises to 0.105 while the edge falls from 0.12: it may fall 0.015 − GAP.
        assert!((s - (0.015 - GAP) / 0.05).abs() < 1e-3, "s = {s}");
        let end = o.segment_closest(a + fall * s, b + fall * s).distance;
        assert!((0.0..1e-4).contains(&end), "end distance {end}");
    }

    #[test]
    fn an_edge_on_a_face_slides_along_it_freely() {
        let o = ball();
        // Touching the top of the ball, moving sideways and up: not held.
        let (a, b) = (Vec3A::new(-0.05, 0.1 + 2.0 * GAP, 0.0), Vec3A::new(0.05, 0.1 + 2.0 * GAP, 0.0));
        assert_eq!(fraction(&o, a, b, Vec3A::Z * 0.01, Vec3A::Z * 0.01), 1.0);
        assert_eq!(fraction(&o, a, b, Vec3A::Y * 0.01, Vec3A::Y * 0.01), 1.0);
        // Pressed down, held almost at once.
        assert!(fraction(&o, a, b, -Vec3A::Y * 0.01, -Vec3A::Y * 0.01) < 0.01);
    }

    #[test]
    fn a_segment_inside_is_not_held_and_one_outside_is() {
        let o = ball();
        let (a, b) = (Vec3A::new(-0.3, 0.09, 0.0), Vec3A::new(0.3, 0.09, 0.0));
        assert_eq!(fraction(&o, a, b, Vec3A::Y * 0.05, Vec3A::Y * 0.05), 1.0);
        assert_eq!(fraction(&o, a, b, -Vec3A::Y * 0.05, -Vec3A::Y * 0.05), 1.0);
        let lift = Vec3A::Y * 0.02;
        let s = step_fraction(
            &o,
            &o.segment_closest_start(a + lift, b + lift),
            [a + lift, b + lift],
            [-Vec3A::Y * 0.05; 2],
        );
        assert!((s - (0.01 - GAP) / 0.05).abs() < 1e-3, "s = {s}");
    }
}
