//! Soft surface edges and triangles against obstacles with edges, corners or curved faces
//! (boxes, spheres, rapier colliders): the spans between vertices.
//!
//! Vertex contact (`vertex::external_terms` and the path clamp `limit_step`) keeps every
//! vertex out of every obstacle, but an obstacle's edge or corner, a thin rod, or a sphere
//! under a coarse mesh can still pass between the vertices and cut through the edges and
//! triangles between them (a tablecloth over a table's edge). So each step also does this for
//! the surface spans near such an obstacle:
//!
//! ```text
//! advance  each body's initial guess x^n → x^(0) is scaled back so that none of its spans
//!          that are not yet near the obstacle reaches it (separating-plane bounds, relative
//!          to the obstacle's own motion)
//! detect   at x^(0): surface edges within the search radius of the obstacle, and
//!          triangles whose closest point lies inside them; a span whose closest point lies
//!          inside it, away from its ends or boundary (which are its vertices' and edges'),
//!          and dips below the linear interpolation of the vertices' distances (the excess) is
//!          a contact; the others (closest at or beside their boundary, or not dipping) only
//!          limit their vertices' moves
//! sweeps   each vertex of a contact gets the contact and friction of the span's point at
//!          the detected barycentric weights, by its weight; against an obstacle that holds
//!          still, every detected span limits its vertices' moves so it stays out (its other
//!          vertices hold still during the vertex's color pass), and the Chebyshev mix leaves
//!          them at their Gauss–Seidel result
//! ```
//!
//! Why edges closest at a vertex are kept: a cloth edge from a vertex resting on a table's
//! top to one beyond its rim has its closest point at the resting vertex; when the outer
//! vertex falls in the sweeps, the edge swings down across the rim. Its limit stops that (the
//! next detection finds the rim inside the edge, a contact). Measured on
//! `cloth_on_table_edge`: without it an edge dipped 1.0 mm into the table in the frame the
//! cloth landed. Against a rapier collider they are not kept: its closest-point queries are
//! costly, and a cube resting on a collider ground has all its bottom edges in reach (the
//! sweeps of `bench_vs_rapier`'s drop cube took 8–26 % longer).
//!
//! Why the excess: a span lying on a flat face has its vertices as close as any point between
//! them, and the vertices' own contacts carry it; a contact of its interior would double the
//! face's stiffness. The energy is scaled by `min(1, excess / δ)`, so it grows continuously
//! from nothing as a span comes across a ridge or a corner, and is whole once the ridge is a
//! contact offset proud of the vertices.
//!
//! Which obstacles ([`Obstacle::tests_edges`]): boxes, spheres and posed shapes (rapier
//! colliders) for edges; boxes and spheres for triangle interiors (a box's corner or a
//! sphere's cap under a triangle, [`Obstacle::triangle_closest`]); a posed shape's corner
//! inside a triangle is still caught only by the triangle's edges. A half-space needs neither
//! (its distance is linear). The GPU stepper (`gpu::vbd::vbd_spans`) does the same for the
//! analytic shapes, the only obstacles it has.

use glam::{Vec3A, Vec4};

use crate::collision::Obstacle;
use crate::collision::surface_pairs::search_radius;
use crate::mesh::{Csr, unpack_entry};
use crate::state::SimState;

/// Distance \[m\] a limited span keeps from the obstacle: far below any contact offset, far
/// above f32 rounding at scene coordinates (the vertex path clamp's lift).
pub(crate) const GAP: f32 = 1e-5;
/// Closest points nearer a vertex (for an edge) or the boundary (for a triangle) than this
/// fraction belong to the vertex's or the edge's contact.
pub(crate) const END_FRACTION: f32 = 0.02;
/// A span contact's energy scale for its excess \[m\] over offset `offset` (see the module
/// notes).
#[inline]
pub(crate) fn energy_scale(excess: f32, offset: f32) -> f32 {
    (excess / offset).clamp(0.0, 1.0)
}

/// The third vertex of an edge's contact.
pub(crate) const NO_VERTEX: u32 = u32::MAX;

/// A surface edge or triangle near an obstacle, with its closest point inside it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SpanContact {
    /// The span's vertices (packed); an edge's third is [`NO_VERTEX`].
    pub vertices: [u32; 3],
    /// Barycentric weights of the contact point (an edge's third is 0).
    pub weights: [f32; 3],
    /// Index into the step's obstacle list.
    pub obstacle: u32,
    /// Energy scale `min(1, excess / δ)`; 0 for a span whose closest point is a vertex (it
    /// only limits its vertices' moves, see the module notes).
    pub scale: f32,
    /// Signed distance at the detection \[m\] (the lagged normal force of friction).
    pub distance: f32,
}

impl SpanContact {
    /// The number of vertices: 2 for an edge, 3 for a triangle.
    #[inline]
    pub fn len(&self) -> usize {
        if self.vertices[2] == NO_VERTEX { 2 } else { 3 }
    }

    /// The contact point at positions `x`.
    #[inline]
    pub fn point(&self, x: impl Fn(u32) -> Vec3A) -> Vec3A {
        (0..self.len()).fold(Vec3A::ZERO, |p, k| p + x(self.vertices[k]) * self.weights[k])
    }
}

/// The span contacts of the current step.
#[derive(Clone, Debug, Default)]
pub(crate) struct SpanContacts {
    pub contacts: Vec<SpanContact>,
    /// Vertex → `contact << 2 | slot` (slot 0, 1 or 2: the vertex's place in the span).
    pub vertex_contacts: Csr,
    /// Per body: the fraction of its initial advance its spans allow.
    pub body_scale: Vec<f32>,
    /// Per vertex: the signed distance and normal of the obstacle being scanned, filled on
    /// first use in a scan (each surface vertex ends about six edges), and the scan
    /// (`stamp == scan`) that filled it.
    ends: Vec<(f32, Vec3A)>,
    stamp: Vec<u32>,
    scan: u32,
}

/// The per-vertex cache of a scan: signed distances and normals, stamps, the scan.
type EndCache = (Vec<(f32, Vec3A)>, Vec<u32>, u32);

/// The signed distances of vertices `v` at `x` from `o` (at its start pose if `start`),
/// through the per-vertex cache of the current scan.
fn ends_of<const K: usize>(
    cache: &mut EndCache,
    o: &Obstacle,
    x: [Vec3A; K],
    v: [u32; K],
    start: bool,
) -> [(f32, Vec3A); K] {
    let (ends, stamp, scan) = cache;
    std::array::from_fn(|k| {
        let i = v[k] as usize;
        if stamp[i] != *scan {
            stamp[i] = *scan;
            ends[i] = o.signed_distance_exact(x[k], start);
        }
        ends[i]
    })
}

/// Corners of the box around points `x`.
fn bounds<const K: usize>(x: [Vec3A; K]) -> (Vec3A, Vec3A) {
    x.iter().fold((Vec3A::splat(f32::INFINITY), Vec3A::splat(f32::NEG_INFINITY)), |(lo, hi), &p| (lo.min(p), hi.max(p)))
}

impl SpanContacts {
    /// The contact entries of vertex `v` (none before the first detection).
    #[inline]
    pub fn row(&self, v: usize) -> &[u32] {
        if self.vertex_contacts.offsets.len() > v + 1 { self.vertex_contacts.row(v) } else { &[] }
    }

    /// Forgets every contact (their vertex indices name another topology, or no obstacle with
    /// spans is left).
    pub fn clear(&mut self, n: usize) {
        self.contacts.clear();
        self.vertex_contacts.entries.clear();
        self.vertex_contacts.offsets.clear();
        self.vertex_contacts.offsets.resize(n + 1, 0);
    }

    /// The contact entries of vertex `v` whose span point is now within `reach` of its
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
            if c.scale == 0.0 {
                return None;
            }
            let p = c.point(|i| Vec3A::from_vec4(x[i as usize]));
            let (d, n) = o.signed_distance(p);
            (d < reach).then_some((c.obstacle as usize, c.weights[slot as usize], c.scale, p, d, n))
        })
    }

    /// Starts a scan over the spans against one obstacle: no vertex's end value is cached.
    fn begin_scan(&mut self, n: usize) -> EndCache {
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

    fn end_scan(&mut self, cache: EndCache) {
        (self.ends, self.stamp) = (cache.0, cache.1);
    }

    /// Finds the span contacts at positions `x` (see the module notes).
    pub fn detect(&mut self, st: &SimState, obstacles: &[Obstacle], x: &[Vec4], offset: f32) {
        self.contacts.clear();
        let at = |i: u32| Vec3A::from_vec4(x[i as usize]);
        for (k, o) in obstacles.iter().enumerate().filter(|(_, o)| o.tests_edges()) {
            let mut cache = self.begin_scan(st.vertex_count());
            for &[a, b] in &st.surface_edges {
                let body = st.vertex_body[a as usize];
                let p = [at(a), at(b)];
                let reach = search_radius(st, body, offset);
                let (lo, hi) = bounds(p);
                if !(o.applies_to(body) && o.box_reaches(lo, hi, reach)) {
                    continue;
                }
                let ends = ends_of(&mut cache, o, p, [a, b], false);
                let c = o.segment_closest_from_ends(p[0], p[1], false, ends);
                let inside = c.t > END_FRACTION && c.t < 1.0 - END_FRACTION;
                // A collider's edges keep contacts only (see the module notes).
                if c.distance < reach && (inside && c.excess() > 0.0 || o.tests_triangles()) {
                    self.contacts.push(SpanContact {
                        vertices: [a, b, NO_VERTEX],
                        weights: [1.0 - c.t, c.t, 0.0],
                        obstacle: k as u32,
                        scale: if inside { energy_scale(c.excess(), offset) } else { 0.0 },
                        distance: c.distance,
                    });
                }
            }
            for &t in st.surface_triangles.iter().filter(|_| o.tests_triangles()) {
                let body = st.vertex_body[t[0] as usize];
                let p = t.map(at);
                let reach = search_radius(st, body, offset);
                let (lo, hi) = bounds(p);
                if !(o.applies_to(body) && o.box_reaches(lo, hi, reach)) {
                    continue;
                }
                let Some(c) = o.triangle_closest(p) else { continue };
                let near_edge = c.weights.iter().any(|&w| w <= END_FRACTION);
                if c.distance >= reach {
                    continue;
                }
                // A corner beside an edge is that edge's contact; the triangle only limits its
                // vertices' moves (untouched, the sweeps took a table's corner 83 µm through a
                // triangle of `cloth_on_table_edge` 1 % of an edge inside its rim).
                let ends = ends_of(&mut cache, o, p, t, false).map(|e| e.0);
                let scale = if near_edge { 0.0 } else { energy_scale(c.excess(ends), offset) };
                if scale > 0.0 || near_edge {
                    self.contacts.push(SpanContact {
                        vertices: t,
                        weights: c.weights,
                        obstacle: k as u32,
                        scale,
                        distance: c.distance,
                    });
                }
            }
            self.end_scan(cache);
        }
        self.vertex_contacts
            .fill_vertex_elements(st.vertex_count(), self.contacts.iter().map(|c| c.vertices), |v| v != NO_VERTEX);
    }

    /// Per body, the fraction of the initial advance `start → guess` after which one of its
    /// surface spans would come within [`GAP`] of an obstacle, into `body_scale` (`offset`, the
    /// contact offset, sets the search radius); returns whether any body is held back.
    ///
    /// Per body, as the obstacle advance, so that an impact starts undeformed. Spans already
    /// near a sphere (within their body's search radius at the start) are left to their
    /// contacts and limits in the sweeps (they are detected at `x^(0)`): a sphere's separating
    /// plane is its tangent plane, which a span sliding over the sphere crosses at once, and a
    /// draped cloth's resting spans held its whole advance back every step (it was still 17 cm
    /// off the ground after 4 s, where its corners reach the ground). A box's faces are flat,
    /// and a thin collider (a rod) could be crossed between two detections, so their spans
    /// keep the limit; cutting the advance per vertex instead strained the initial guess (the
    /// energy test then sent the drape to the fallback).
    pub fn advance(
        &mut self,
        st: &SimState,
        obstacles: &[Obstacle],
        start: &[Vec4],
        guess: &[Vec4],
        offset: f32,
    ) -> bool {
        self.body_scale.clear();
        self.body_scale.resize(st.bodies.len(), 1.0);
        let mut held = false;
        let at = |x: &[Vec4], i: u32| Vec3A::from_vec4(x[i as usize]);
        for o in obstacles.iter().filter(|o| o.tests_edges()) {
            let mut cache = self.begin_scan(st.vertex_count());
            for &[a, b] in &st.surface_edges {
                let body = st.vertex_body[a as usize];
                let x = [at(start, a), at(start, b)];
                let d = [at(guess, a) - x[0], at(guess, b) - x[1]];
                if d == [Vec3A::ZERO; 2] {
                    continue;
                }
                let (lo, hi) = bounds([x[0], x[1], x[0] + d[0], x[1] + d[1]]);
                if !(o.applies_to(body) && o.box_reaches(lo, hi, GAP)) {
                    continue;
                }
                let ends = ends_of(&mut cache, o, x, [a, b], true);
                let c = o.segment_closest_from_ends(x[0], x[1], true, ends);
                let near = search_radius(st, body, offset);
                held |= hold(&mut self.body_scale[body as usize], o, near, (c.distance, c.normal), &x, &d);
            }
            self.end_scan(cache);
            for &t in st.surface_triangles.iter().filter(|_| o.tests_triangles()) {
                let body = st.vertex_body[t[0] as usize];
                let x = t.map(|i| at(start, i));
                let d = std::array::from_fn::<_, 3, _>(|k| at(guess, t[k]) - x[k]);
                if d == [Vec3A::ZERO; 3] {
                    continue;
                }
                let (lo, hi) = bounds([x[0], x[1], x[2], x[0] + d[0], x[1] + d[1], x[2] + d[2]]);
                if !(o.applies_to(body) && o.box_reaches(lo, hi, GAP)) {
                    continue;
                }
                let Some(hint) = triangle_hint(o, x) else { continue };
                let near = search_radius(st, body, offset);
                held |= hold(&mut self.body_scale[body as usize], o, near, hint, &x, &d);
            }
        }
        held
    }
}

/// Where a triangle of the step's start (vertices `x`) is closest to `o`: its inside's closest
/// point when a box's corner or a sphere's centre projects inside it; else, for a box, its
/// nearest vertex (only a starting guess for the separating plane, [`clearances`], which keeps
/// the whole triangle out either way), and for a sphere nothing: the sphere is then nearest one
/// of the triangle's edges, whose own span holds the move (a vertex's distance would overstate
/// the triangle's and miss the exemption of spans near a sphere, [`hold`]). Before, a triangle
/// over which no box corner projected at the step's start was not held at all, and the advance
/// carried it over a table's corner: on `cloth_on_table_edge` the corner came 72 µm through a
/// triangle between its edges in the frame the cloth landed (the exact test of
/// `World::find_intersections`), and the sweeps took eight frames to push it back out.
fn triangle_hint(o: &Obstacle, x: [Vec3A; 3]) -> Option<(f32, Vec3A)> {
    match o.triangle_closest(x) {
        Some(c) => Some((c.distance, c.normal)),
        None if o.is_sphere() => None,
        None => Some(
            x.map(|p| o.signed_distance_start(p))
                .into_iter()
                .fold((f32::INFINITY, Vec3A::Y), |a, b| if b.0 < a.0 { b } else { a }),
        ),
    }
}

/// Cuts a body's advance fraction `scale` to what a span of the step's start (vertices `x`,
/// moving by `moves`, its closest point at `(distance, normal)`) allows against `o`, unless the
/// span is already within `near` of a sphere (see [`SpanContacts::advance`]); returns whether it
/// cut.
fn hold<const K: usize>(
    scale: &mut f32,
    o: &Obstacle,
    near: f32,
    (distance, normal): (f32, Vec3A),
    x: &[Vec3A; K],
    moves: &[Vec3A; K],
) -> bool {
    if o.is_sphere() && distance < near {
        return false;
    }
    let s = step_fraction(o, distance, normal, x, moves);
    let cut = s < *scale;
    if cut {
        *scale = s;
    }
    cut
}

/// The largest fraction `s ∈ [0, 1]` of the moves `moves` of a span's vertices (all at once)
/// that keeps it out of a collider: no vertex may come nearer than [`GAP`] to the plane
/// `n_end · y = offset` with its clearance `clearances[i]` from it now (carried with the
/// collider where it moves), nor any nearer than it is where it already is within the gap. If
/// a vertex is behind the plane (the span is inside), nothing is held (the contact force has to
/// act).
///
/// Why that suffices: for a convex solid, a plane with the solid behind it and every vertex
/// of the span in front keeps the whole span (their convex hull) in front. Motion along the
/// plane is free, so a span can slide along a face it touches. A span inside is not held, as a
/// vertex that starts inside is not: its contact force pushes it out. Why a span within the gap
/// is held: the sweeps' limit leaves a span pressed onto a rim at the gap, less rounding, and
/// when such a span held nothing, the advance carried a cloth's edge resting 9.98 µm over a
/// table's rim 241 µm into it and the sweeps pushed it back only to 15.6 µm inside
/// (`cloth_on_table_edge`, a fast step the check sent to the fallback).
fn plane_fraction(n_end: Vec3A, moves: &[Vec3A], clearances: impl Iterator<Item = f32>) -> f32 {
    let mut s = 1.0f32;
    for (&d, clearance) in moves.iter().zip(clearances) {
        if clearance < 0.0 {
            return 1.0;
        }
        let budget = (clearance - GAP).max(0.0);
        let approach = -n_end.dot(d);
        if approach > budget {
            s = s.min(budget / approach);
        }
    }
    s
}

/// A plane with the obstacle behind it for a span with vertices `x` (at the step's start
/// for a moving obstacle), the span's closest point being at signed distance `distance` with
/// normal `normal` there: the plane's normal at the end pose and each vertex's clearance from
/// it. A box or a sphere (static) gives its best supporting plane
/// ([`Obstacle::separating_plane`]), exact whatever the accuracy of the closest point. Any
/// other shape gives the plane through the closest point, moved with the obstacle: each
/// vertex's clearance is `distance` less how far the obstacle carries it towards the plane
/// (for a non-convex collider, a trimesh, the plane separates the span from the solid's part
/// near the closest point only).
pub(crate) fn clearances<const K: usize>(
    o: &Obstacle,
    distance: f32,
    normal: Vec3A,
    x: &[Vec3A; K],
) -> (Vec3A, [f32; K]) {
    if let Some(plane) = o.separating_plane(x, normal) {
        return plane;
    }
    let n_end = o.carried_direction(normal);
    (n_end, x.map(|p| distance - n_end.dot(o.carried_displacement(p))))
}

/// [`plane_fraction`] for a span of the step's start (vertices `x`) moving by `moves` over
/// the step while the obstacle moves from its start pose to its end pose (see
/// [`clearances`]). `distance` and `normal` are the span's closest point's at the start pose.
pub(crate) fn step_fraction<const K: usize>(
    o: &Obstacle,
    distance: f32,
    normal: Vec3A,
    x: &[Vec3A; K],
    moves: &[Vec3A; K],
) -> f32 {
    let (n_end, clearance) = clearances(o, distance, normal, x);
    plane_fraction(n_end, moves, clearance.into_iter())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::collision::{ObstacleShape, PosedShape, RigidPose, test_geometry::Ball};

    /// [`step_fraction`] of the segment `a → b` moving by `da`, `db`.
    fn fraction(o: &Obstacle, a: Vec3A, b: Vec3A, da: Vec3A, db: Vec3A) -> f32 {
        let c = o.segment_closest_start(a, b);
        step_fraction(o, c.distance, c.normal, &[a, b], &[da, db])
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

    /// A vertex within the gap of the plane (where the sweeps' limit leaves a span resting on a
    /// rim) may not come nearer, but may slide along the plane or leave it; one behind the
    /// plane holds nothing.
    #[test]
    fn a_span_resting_within_the_gap_may_not_come_nearer() {
        let moves = [-Vec3A::Y * 1e-3, Vec3A::X * 1e-3];
        assert_eq!(plane_fraction(Vec3A::Y, &moves, [0.5 * GAP, 1.0].into_iter()), 0.0);
        assert_eq!(plane_fraction(Vec3A::Y, &moves, [-0.5 * GAP, 1.0].into_iter()), 1.0);
        let along = [Vec3A::X * 1e-3, Vec3A::Y * 1e-3];
        assert_eq!(plane_fraction(Vec3A::Y, &along, [0.5 * GAP, 0.5 * GAP].into_iter()), 1.0);
        let s = plane_fraction(Vec3A::Y, &moves, [GAP + 1e-4, 1.0].into_iter());
        assert!((s - 0.1).abs() < 1e-4, "s = {s}");
    }

    /// A triangle beside a box's corner (no corner projects inside it) moving over it so that
    /// the corner would come through it between its edges: `SpanContacts::advance` holds the
    /// body back (the triangle alone: the state has no surface edges), and the triangle at the
    /// held fraction is clear of the box, to the exact test.
    #[test]
    fn the_advance_holds_a_triangle_sliding_over_a_corner() {
        let o = Obstacle::cuboid(glam::Vec3::ZERO, glam::Vec3::splat(0.1), glam::Quat::IDENTITY, 0.3).expect("box");
        // A tent over the corner (0.1, 0.1, 0.1), off to one side by 3 cm and 2 mm proud.
        let apex = Vec3A::splat(0.1) + Vec3A::splat(0.002 / 3f32.sqrt());
        let side = Vec3A::new(0.03, -0.03, 0.0);
        let x = [
            apex + side + Vec3A::new(0.0, 0.02, -0.02),
            apex + side + Vec3A::new(-0.02, 0.0, 0.02),
            apex + side + Vec3A::new(0.02, -0.02, 0.0),
        ];
        assert!(o.triangle_closest(x).is_none(), "the corner projects inside at the start");
        let moves = [-side - Vec3A::splat(0.004); 3];
        let moved: [Vec3A; 3] = std::array::from_fn(|k| x[k] + moves[k]);
        assert!(o.triangle_depth(moved).is_some(), "the whole move takes the corner through");
        let st = SimState {
            masses: vec![1.0; 3],
            vertex_body: vec![0; 3],
            bodies: vec![crate::state::BodyRecord { vertex_count: 3, surface_edge_length: 0.03, ..Default::default() }],
            surface_triangles: vec![[0, 1, 2]],
            ..SimState::default()
        };
        let start = x.map(|p| p.extend(0.0));
        let guess = moved.map(|p| p.extend(0.0));
        let mut spans = SpanContacts::default();
        assert!(spans.advance(&st, std::slice::from_ref(&o), &start, &guess, 1e-3), "not held");
        let s = spans.body_scale[0];
        assert!(s > 0.0 && s < 1.0, "s = {s}");
        let held = std::array::from_fn(|k| x[k] + moves[k] * s);
        assert_eq!(o.triangle_depth(held), None);
        assert!(held.iter().all(|&p| o.signed_distance(p).0 > 0.0));
        // The same triangle beside a sphere is its edges' to hold (none here): not held.
        let ball = Obstacle::sphere(glam::Vec3::ZERO, 0.1 * 3f32.sqrt(), 0.3).expect("ball");
        assert!(ball.triangle_closest(x).is_none());
        assert!(!spans.advance(&st, std::slice::from_ref(&ball), &start, &guess, 1e-3));
    }

    #[test]
    fn a_segment_inside_is_not_held_and_one_outside_is() {
        let o = ball();
        let (a, b) = (Vec3A::new(-0.3, 0.09, 0.0), Vec3A::new(0.3, 0.09, 0.0));
        assert_eq!(fraction(&o, a, b, Vec3A::Y * 0.05, Vec3A::Y * 0.05), 1.0);
        assert_eq!(fraction(&o, a, b, -Vec3A::Y * 0.05, -Vec3A::Y * 0.05), 1.0);
        let lift = Vec3A::Y * 0.02;
        let c = o.segment_closest_start(a + lift, b + lift);
        let s = step_fraction(&o, c.distance, c.normal, &[a + lift, b + lift], &[-Vec3A::Y * 0.05; 2]);
        assert!((s - (0.01 - GAP) / 0.05).abs() < 1e-3, "s = {s}");
    }
}
