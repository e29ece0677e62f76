//! The point of a soft surface edge or triangle closest to an obstacle: where an obstacle's
//! edge, corner or curved face comes closer to the surface between its vertices than to any
//! vertex (`solver::vbd::spans` turns these into contacts).

use glam::{DVec3, Quat, Vec3, Vec3A};

use super::intersection::segment_intersects_triangle;
use super::obstacle::{Obstacle, ObstacleShape};
use crate::math::distance::edge_edge;

/// The closest point of a segment to an obstacle (see [`Obstacle::segment_closest`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SegmentClosest {
    /// Parameter along the segment, 0 at its start.
    pub t: f32,
    /// Signed distance there \[m\].
    pub distance: f32,
    /// The obstacle's outward unit normal there.
    pub normal: Vec3A,
    /// Signed distances of the two ends \[m\].
    pub ends: [f32; 2],
}

impl SegmentClosest {
    /// How far the segment dips below the straight interpolation of its ends' distances \[m\]
    /// (0 when an end is closest, or the segment lies along a flat face): what a contact of
    /// the segment's interior adds to its ends' contacts.
    #[inline]
    pub fn excess(&self) -> f32 {
        ((1.0 - self.t) * self.ends[0] + self.t * self.ends[1] - self.distance).max(0.0)
    }
}

/// The point inside a triangle closest to an obstacle (see [`Obstacle::triangle_closest`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TriangleClosest {
    /// Barycentric weights of the point (each ≥ 0, summing to 1).
    pub weights: [f32; 3],
    /// Signed distance there \[m\].
    pub distance: f32,
    /// The obstacle's outward unit normal there.
    pub normal: Vec3A,
}

impl TriangleClosest {
    /// How far the triangle dips below the linear interpolation of its vertices' distances
    /// `ends` \[m\] (0 when it lies on a flat face).
    #[inline]
    pub fn excess(&self, ends: [f32; 3]) -> f32 {
        let [wa, wb, wc] = self.weights;
        (wa * ends[0] + wb * ends[1] + wc * ends[2] - self.distance).max(0.0)
    }
}

impl Obstacle {
    /// The point of the segment `a → b` closest to the obstacle (at its end pose): parameter,
    /// signed distance and the obstacle's outward normal there, and the signed distances of the
    /// two ends.
    ///
    /// A sphere's is the point nearest its centre. For other shapes: a signed distance is
    /// convex along a line for a convex solid, so a golden-section search finds the minimum;
    /// nine samples first pick the bracket, which also finds the deepest dip of a non-convex
    /// shape (a trimesh) unless two are closer than an eighth of the segment.
    pub(crate) fn segment_closest(&self, a: Vec3A, b: Vec3A) -> SegmentClosest {
        self.segment_closest_at(a, b, false, None)
    }

    /// How deep the edge `a → b` reaches into the obstacle between its two ends, when both
    /// ends are outside (an end inside is that vertex's intersection) \[m\]: `None` unless the
    /// edge's box reaches the obstacle and its closest point is inside. What
    /// `World::find_intersections` reports as an edge inside an obstacle and the fast path's
    /// check rejects past a tolerance.
    pub(crate) fn edge_depth(&self, a: Vec3A, b: Vec3A) -> Option<f32> {
        if !self.box_reaches(a.min(b), a.max(b), 0.0) {
            return None;
        }
        let c = self.segment_closest(a, b);
        (c.distance < 0.0 && c.ends[0] >= 0.0 && c.ends[1] >= 0.0).then_some(-c.distance)
    }

    /// How deep a box or a sphere reaches into the triangle `x` whose vertices are all outside
    /// it, over its edges and its inside \[m\]: a box's corner or edge poking through a cloth
    /// between its vertices, or a sphere's cap. `None` when nothing does, when a vertex is
    /// inside (that vertex is the intersection), and for a half-space (its distance is linear
    /// over the triangle) or a rapier collider (not tested inside a triangle).
    pub(crate) fn triangle_depth(&self, x: [Vec3A; 3]) -> Option<f32> {
        let (edges, inside) = self.triangle_depths(x)?;
        let depth = edges.max(inside);
        (depth > 0.0).then_some(depth)
    }

    /// [`Self::triangle_depth`] in two parts: the deepest of the triangle's edges
    /// ([`Self::edge_depth`], 0 when all are outside) and the depth reached through its inside
    /// (0 when nothing is). `None` where `triangle_depth` has no answer: another shape, a
    /// triangle out of reach, or a vertex inside.
    ///
    /// A box meets the inside of such a triangle exactly when one of its twelve edges pierces
    /// it (the section of the box in the triangle's plane lies inside the triangle, and its
    /// corners lie on the box's edges), decided with the exact predicate of
    /// `World::find_intersections`. The inside depth is then the deepest among points of the
    /// triangle inside the box (the corners' projections that fall inside the triangle, and the
    /// centre of the piercing points): never more than the true depth, and within the section's
    /// size of it. A sphere's is exact: the projection of its centre.
    pub(crate) fn triangle_depths(&self, x: [Vec3A; 3]) -> Option<(f32, f32)> {
        if !matches!(self.shape, ObstacleShape::Sphere { .. } | ObstacleShape::Cuboid { .. })
            || !self.box_reaches(x[0].min(x[1]).min(x[2]), x[0].max(x[1]).max(x[2]), 0.0)
            || x.iter().any(|&p| self.signed_distance(p).0 < 0.0)
        {
            return None;
        }
        let edges = (0..3).filter_map(|k| self.edge_depth(x[k], x[(k + 1) % 3])).fold(0.0f32, f32::max);
        let mut inside = self.triangle_closest(x).map_or(0.0, |c| (-c.distance).max(0.0));
        let [ad, bd, cd] = x.map(|p| p.as_dvec3());
        let n = (bd - ad).cross(cd - ad);
        let nn = n.length_squared();
        if let ObstacleShape::Cuboid { center, half_extents, rotation } = self.shape
            && nn > 0.0
        {
            let [a, b, c] = x.map(Vec3::from);
            let (mut sum, mut count) = (DVec3::ZERO, 0);
            for (k, bit) in box_edges() {
                let (c0, c1) =
                    (corner(center, half_extents, rotation, k), corner(center, half_extents, rotation, k | 1 << bit));
                if !segment_intersects_triangle(c0.into(), c1.into(), a, b, c) {
                    continue;
                }
                let (p0, d) = (c0.as_dvec3(), (c1 - c0).as_dvec3());
                let across = n.dot(d);
                // An edge in the triangle's plane meets it along a segment whose ends are not
                // at hand: it gives no point (the other edges do).
                if across == 0.0 {
                    continue;
                }
                let q = p0 + d * (n.dot(ad - p0) / across).clamp(0.0, 1.0);
                // The point is on the box; keep it only if it is on the triangle as well, so
                // that the centre of the kept points lies in both (each is convex) and the
                // depth found never exceeds the true one, even for a sliver.
                let w = [(bd - q).cross(cd - q), (cd - q).cross(ad - q), (ad - q).cross(bd - q)].map(|m| n.dot(m) / nn);
                if w.iter().all(|&w| w >= -1e-9) {
                    sum += q;
                    count += 1;
                }
            }
            if count > 0 {
                inside = inside.max(-self.signed_distance((sum / count as f64).as_vec3a()).0);
            }
        }
        Some((edges, inside))
    }

    /// [`Self::segment_closest`] with the obstacle at its start pose (for a segment of the
    /// step's start).
    #[cfg(test)]
    pub(crate) fn segment_closest_start(&self, a: Vec3A, b: Vec3A) -> SegmentClosest {
        self.segment_closest_at(a, b, true, None)
    }

    /// [`Self::segment_closest`] (at the start pose if `start`) given the two ends' signed
    /// distances and normals, which a scan over a mesh's edges measures once per vertex.
    pub(crate) fn segment_closest_from_ends(
        &self,
        a: Vec3A,
        b: Vec3A,
        start: bool,
        ends: [(f32, Vec3A); 2],
    ) -> SegmentClosest {
        self.segment_closest_at(a, b, start, Some(ends))
    }

    /// The largest `n · y` over the solid's points `y` (its support function), for a sphere or a
    /// box; `None` for a half-space (unbounded but along its normal) and a posed shape.
    pub(crate) fn support(&self, n: Vec3A) -> Option<f32> {
        match self.shape {
            ObstacleShape::Sphere { center, radius } => Some(n.dot(Vec3A::from(center)) + radius * n.length()),
            ObstacleShape::Cuboid { center, half_extents, rotation } => {
                let local = Vec3A::from(rotation.inverse() * Vec3::from(n));
                Some(n.dot(Vec3A::from(center)) + local.abs().dot(Vec3A::from(half_extents)))
            }
            ObstacleShape::Plane { .. } | ObstacleShape::Posed(_) => None,
        }
    }

    /// For a box or a sphere, the plane `n · y = support(n)` with the solid behind it that
    /// keeps the span with vertices `x` (an edge or a triangle) furthest in front: its normal
    /// and the clearance of each vertex from it. `None` for other shapes.
    ///
    /// Candidates are the separating axes of a box and a convex polygon (the box's axes, the
    /// span's edges crossed with them, a triangle's normal), both ways, and `normal`, the
    /// obstacle's normal at the span's closest point. The closest point's normal alone is no
    /// certificate: within a few µm of a box's edge it turns by tens of degrees when the
    /// closest point moves by a µm, so a search's closest point has a plane that can pass
    /// behind one of the span's vertices (measured: 0.5 mm behind, on a cloth draped over a
    /// table's edge).
    pub(crate) fn separating_plane<const K: usize>(&self, x: &[Vec3A; K], normal: Vec3A) -> Option<(Vec3A, [f32; K])> {
        let mut best: Option<(Vec3A, [f32; K])> = None;
        let mut consider = |n: Vec3A| {
            let Some(n) = n.try_normalize() else { return };
            for n in [n, -n] {
                let Some(h) = self.support(n) else { return };
                let clearance = x.map(|p| n.dot(p) - h);
                let low = clearance.iter().copied().fold(f32::INFINITY, f32::min);
                if best.is_none_or(|(_, c)| low > c.iter().copied().fold(f32::INFINITY, f32::min)) {
                    best = Some((n, clearance));
                }
            }
        };
        consider(normal);
        match self.shape {
            ObstacleShape::Sphere { .. } => {}
            ObstacleShape::Cuboid { rotation, .. } => {
                let axes = [Vec3::X, Vec3::Y, Vec3::Z].map(|a| Vec3A::from(rotation * a));
                for a in axes {
                    consider(a);
                    for k in 0..K {
                        consider((x[(k + 1) % K] - x[k]).cross(a));
                    }
                }
                if K == 3 {
                    consider((x[1] - x[0]).cross(x[2] - x[0]));
                }
            }
            ObstacleShape::Plane { .. } | ObstacleShape::Posed(_) => return None,
        }
        best
    }

    /// The point inside the triangle `x` closest to a sphere or a box, when that point is not
    /// on the triangle's boundary (there the edges' and vertices' own tests answer); `None`
    /// for a half-space (a triangle's closest point to it is always a vertex) and for a posed
    /// shape (not tested).
    ///
    /// A sphere's is the projection of its centre onto the triangle's plane. A box's is the
    /// projection of one of its corners: the distance between a plane and a convex polytope on
    /// one side of it is reached at a vertex of the polytope, so the deepest of the eight
    /// corners' projections that fall inside the triangle is it.
    pub(crate) fn triangle_closest(&self, x: [Vec3A; 3]) -> Option<TriangleClosest> {
        let [a, b, c] = x;
        let n = (b - a).cross(c - a);
        let area2 = n.length_squared();
        if !(area2 > 0.0 && area2.is_finite()) {
            return None;
        }
        let mut best: Option<TriangleClosest> = None;
        let mut consider = |q: Vec3A| {
            let p = q - n * (n.dot(q - a) / area2);
            let weights = [(b - p).cross(c - p), (c - p).cross(a - p), (a - p).cross(b - p)].map(|m| n.dot(m) / area2);
            if weights.iter().all(|&w| w >= 0.0) {
                let (distance, normal) = self.signed_distance(p);
                if best.is_none_or(|k| distance < k.distance) {
                    best = Some(TriangleClosest { weights, distance, normal });
                }
            }
        };
        match self.shape {
            ObstacleShape::Sphere { center, .. } => consider(Vec3A::from(center)),
            ObstacleShape::Cuboid { center, half_extents, rotation } => {
                for k in 0..8 {
                    consider(corner(center, half_extents, rotation, k));
                }
            }
            ObstacleShape::Plane { .. } | ObstacleShape::Posed(_) => return None,
        }
        best
    }

    fn segment_closest_at(&self, a: Vec3A, b: Vec3A, start: bool, ends: Option<[(f32, Vec3A); 2]>) -> SegmentClosest {
        const SAMPLES: usize = 9;
        let exact = |p: Vec3A| self.signed_distance_exact(p, start);
        // A convex solid's distance is convex along the segment: if it rises from both ends
        // into the segment, the nearer end is the closest point (the common case of an edge
        // lying on or above a face), and two queries answer.
        if self.is_convex() {
            let [(da, na), (db, nb)] = ends.unwrap_or_else(|| [exact(a), exact(b)]);
            // The distance's slope into the segment at each end (the normal is its gradient):
            // a convex function rising from one end has its minimum there.
            if na.dot(b - a) >= 0.0 {
                return SegmentClosest { t: 0.0, distance: da, normal: na, ends: [da, db] };
            }
            if nb.dot(a - b) >= 0.0 {
                return SegmentClosest { t: 1.0, distance: db, normal: nb, ends: [da, db] };
            }
        }
        if let ObstacleShape::Cuboid { center, half_extents, rotation } = self.shape
            && let Some(c) = cuboid_segment_closest(a, b, (center, half_extents, rotation), ends, exact)
        {
            return c;
        }
        if let ObstacleShape::Sphere { center, .. } = self.shape {
            // The point nearest the centre is the closest.
            let (ab, ac) = (b - a, Vec3A::from(center) - a);
            let t = (ac.dot(ab) / ab.length_squared()).clamp(0.0, 1.0);
            if t.is_finite() {
                let [(da, _), (db, _)] = ends.unwrap_or_else(|| [exact(a), exact(b)]);
                let (distance, normal) = exact(a + ab * t);
                return SegmentClosest { t, distance, normal, ends: [da, db] };
            }
        }
        let at = |t: f32| exact(a + (b - a) * t).0;
        let mut d = [0.0f32; SAMPLES];
        for (k, dk) in d.iter_mut().enumerate() {
            *dk = at(k as f32 / (SAMPLES - 1) as f32);
        }
        let best = (0..SAMPLES).min_by(|&i, &j| d[i].total_cmp(&d[j])).unwrap_or(0);
        let step = 1.0 / (SAMPLES - 1) as f32;
        let (mut lo, mut hi) =
            ((best as f32 - 1.0).max(0.0) * step, (best as f32 + 1.0).min((SAMPLES - 1) as f32) * step);
        // Golden section: 16 rounds shrink the bracket (a quarter of the segment) to 5e-5 of it.
        const INV_PHI: f32 = 0.618_034;
        let (mut t1, mut t2) = (hi - INV_PHI * (hi - lo), lo + INV_PHI * (hi - lo));
        let (mut f1, mut f2) = (at(t1), at(t2));
        for _ in 0..16 {
            if f1 <= f2 {
                hi = t2;
                (t2, f2) = (t1, f1);
                t1 = hi - INV_PHI * (hi - lo);
                f1 = at(t1);
            } else {
                lo = t1;
                (t1, f1) = (t2, f2);
                t2 = lo + INV_PHI * (hi - lo);
                f2 = at(t2);
            }
        }
        let (t, found) = if f1 <= f2 { (t1, f1) } else { (t2, f2) };
        // An end (or a sample) may still be the closest point.
        let t = if d[best] < found { best as f32 * step } else { t };
        let (distance, normal) = exact(a + (b - a) * t);
        SegmentClosest { t, distance, normal, ends: [d[0], d[SAMPLES - 1]] }
    }
}

/// The closest point of a segment `a → b` outside a box, exactly: a segment's closest point to
/// a box is an end, or the point of the segment closest to one of the box's twelve edges (a
/// closest pair on a face's interior has the segment parallel to the face, and then an end or
/// the segment's crossing over an edge of that face is as close). `None` when the segment
/// meets the box (its deepest point is then the search's).
///
/// Why not the search: its bracket ends 1e-4 of the segment wide, a micrometre on a cloth's
/// edge, and within a micrometre of a box's rim the obstacle's normal turns by tens of degrees
/// along the segment. An edge the fallback held 0.25 µm from a rim got a gradient that pointed
/// along the rim, and its island stopped dead (`fallback_cloth_gap`).
fn cuboid_segment_closest(
    a: Vec3A,
    b: Vec3A,
    (center, half_extents, rotation): (Vec3, Vec3, Quat),
    ends: Option<[(f32, Vec3A); 2]>,
    exact: impl Fn(Vec3A) -> (f32, Vec3A),
) -> Option<SegmentClosest> {
    if segment_meets_box(a, b, (center, half_extents, rotation)) {
        // Through a face with both ends and every edge's closest point outside (a plate
        // pierced in its middle) as much as anything else.
        return None;
    }
    let [(da, na), (db, nb)] = ends.unwrap_or_else(|| [exact(a), exact(b)]);
    let (mut t, mut best) = if da <= db { (0.0, (da, na)) } else { (1.0, (db, nb)) };
    let (a64, b64) = (a.as_dvec3(), b.as_dvec3());
    // The segment's bounds in the box's frame: an edge of the box farther from them than the
    // best distance so far cannot hold a closer point (the closest pair on that edge would be
    // at least that far apart), so only the one or two edges near a short segment are solved.
    let inv = rotation.inverse().as_dquat();
    let (la, lb) = (inv * (a64 - center.as_dvec3()), inv * (b64 - center.as_dvec3()));
    let (lo, hi) = (la.min(lb), la.max(lb));
    let h = half_extents.as_dvec3();
    for (k, bit) in box_edges() {
        // The edge runs along axis `bit`; on the other two it sits at the corner's ±h.
        let apart = (0..3)
            .filter(|&j| j != bit)
            .map(|j| {
                let c = if k >> j & 1 == 1 { h[j as usize] } else { -h[j as usize] };
                (lo[j as usize] - c).max(c - hi[j as usize]).max(0.0).powi(2)
            })
            .sum::<f64>()
            .sqrt();
        if best.0 > 0.0 && apart > best.0 as f64 + 1e-6 {
            continue;
        }
        let (c0, c1) =
            (corner(center, half_extents, rotation, k), corner(center, half_extents, rotation, k | 1 << bit));
        let s = edge_edge::<f64>(a64, b64, c0.as_dvec3(), c1.as_dvec3()).weights[1];
        if !(s > 0.0 && s < 1.0) {
            continue;
        }
        let found = exact(a + (b - a) * s as f32);
        if found.0 < best.0 {
            (t, best) = (s as f32, found);
        }
    }
    (best.0 > 0.0).then_some(SegmentClosest { t, distance: best.0, normal: best.1, ends: [da, db] })
}

/// Whether the segment `a → b` meets the box (slab clipping in the box's frame, in f64).
fn segment_meets_box(a: Vec3A, b: Vec3A, (center, half_extents, rotation): (Vec3, Vec3, Quat)) -> bool {
    let inv = rotation.inverse().as_dquat();
    let local = |p: Vec3A| inv * (p.as_dvec3() - center.as_dvec3());
    let (p, d) = (local(a), local(b) - local(a));
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for axis in 0..3 {
        let h = half_extents[axis] as f64;
        if d[axis] == 0.0 {
            if p[axis].abs() > h {
                return false;
            }
            continue;
        }
        let (u, v) = ((-h - p[axis]) / d[axis], (h - p[axis]) / d[axis]);
        t0 = t0.max(u.min(v));
        t1 = t1.min(u.max(v));
        if t0 > t1 {
            return false;
        }
    }
    true
}

/// The twelve edges of a box as `(k, bit)`: from corner `k` (see [`corner`]) to corner
/// `k | 1 << bit`, along box axis `bit`.
fn box_edges() -> impl Iterator<Item = (u32, u32)> {
    (0..8u32).flat_map(|k| (0..3u32).filter(move |bit| k >> bit & 1 == 0).map(move |bit| (k, bit)))
}

/// Corner `k` (bits 0–2: the sign along each box axis) of a box.
#[inline]
fn corner(center: Vec3, half_extents: Vec3, rotation: Quat, k: u32) -> Vec3A {
    let sign = |bit: u32| if k >> bit & 1 == 1 { 1.0 } else { -1.0 };
    Vec3A::from(center + rotation * (half_extents * Vec3::new(sign(0), sign(1), sign(2))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    fn table() -> Obstacle {
        Obstacle::cuboid(Vec3::new(0.1, 0.2, -0.1), Vec3::new(0.4, 0.2, 0.3), Quat::from_rotation_y(0.4), 0.3)
            .expect("box")
    }

    fn ball() -> Obstacle {
        Obstacle::sphere(Vec3::new(0.0, 0.25, 0.0), 0.25, 0.3).expect("sphere")
    }

    /// The smallest signed distance over a dense barycentric grid of the triangle `x`, and
    /// whether that grid point is off the triangle's boundary by a twentieth of it.
    fn sampled_min(o: &Obstacle, x: [Vec3A; 3]) -> (f32, bool) {
        sampled_min_on(o, x, 60)
    }

    /// [`sampled_min`] on a grid of `n` steps along each edge.
    fn sampled_min_on(o: &Obstacle, x: [Vec3A; 3], n: u32) -> (f32, bool) {
        let (mut low, mut interior) = (f32::INFINITY, false);
        for i in 0..=n {
            for j in 0..=n - i {
                let (u, v) = (i as f32 / n as f32, j as f32 / n as f32);
                let d = o.signed_distance(x[0] + (x[1] - x[0]) * u + (x[2] - x[0]) * v).0;
                if d < low {
                    (low, interior) = (d, u.min(v).min(1.0 - u - v) > 0.05);
                }
            }
        }
        (low, interior)
    }

    /// A random triangle of about `size` near point `at`.
    fn triangle_near(rng: &mut Rng, at: Vec3A, size: f32) -> [Vec3A; 3] {
        [0; 3].map(|_| at + rng.vec().as_vec3a() * size)
    }

    /// Triangles laid across a tilted box's corners and edges and a sphere's cap, a few
    /// millimetres either side: `triangle_depth` finds every one that a dense grid finds in the
    /// solid while its vertices are outside (at least 50 of each kind with their edges outside
    /// too, where only the inside test can find them), never one the grid finds clear, and
    /// never deeper than the grid's deepest point (give or take its spacing); a sphere's depth is
    /// the deepest.
    #[test]
    fn a_box_corner_or_a_sphere_cap_through_a_triangle_is_found() {
        let mut rng = Rng(11);
        // A small ball: a cap pokes through a cloth-sized triangle only a few mm deep.
        let (b, s) = (table(), Obstacle::sphere(Vec3::new(0.0, 0.25, 0.0), 0.06, 0.3).expect("sphere"));
        let ObstacleShape::Cuboid { center, half_extents, rotation } = b.shape else { unreachable!() };
        let (mut poked, mut clear) = ([0; 2], 0);
        for k in 0..1200u32 {
            let (o, at, outward) = match k % 3 {
                0 => {
                    let c = corner(center, half_extents, rotation, k / 3 % 8);
                    (&b, c, (c - Vec3A::from(center)).normalize())
                }
                1 => {
                    // The middle of one of the corner's edges.
                    let (c0, c1) = (
                        corner(center, half_extents, rotation, k / 3 % 8),
                        corner(center, half_extents, rotation, (k / 3 % 8) ^ 1 << (k / 24 % 3)),
                    );
                    let m = (c0 + c1) * 0.5;
                    (&b, m, (m - Vec3A::from(center)).normalize())
                }
                _ => {
                    let n = (rng.vec().as_vec3a() * 0.5 + Vec3A::Y).normalize();
                    (&s, Vec3A::new(0.0, 0.25, 0.0) + n * 0.06, n)
                }
            };
            // A sphere's cap stays inside a triangle's edges only a millimetre or two deep.
            let (reach, wobble) = if k % 3 == 2 { (0.002, 0.1) } else { (0.006, 0.4) };
            let tilt = (outward + rng.vec().as_vec3a() * wobble).normalize();
            let (u, w) = tilt.any_orthonormal_pair();
            let middle = at + tilt * (rng.signed() as f32 * reach);
            let x = [0.0f32, 2.1, 4.2].map(|angle: f32| {
                let angle = angle + rng.signed() as f32 * 0.4;
                middle + (u * angle.cos() + w * angle.sin()) * (0.02 + 0.02 * rng.uniform_f32())
            });
            if x.iter().any(|&p| o.signed_distance(p).0 < 0.0) {
                assert_eq!(o.triangle_depth(x), None, "its vertex is the intersection");
                continue;
            }
            let edges_out = (0..3).all(|j| o.edge_depth(x[j], x[(j + 1) % 3]).is_none());
            let grid = 240;
            let (low, _) = sampled_min_on(o, x, grid);
            // Every point of the triangle is within a grid step of a grid point, and the signed
            // distance changes by no more than the step over it.
            let step = (0..3).map(|j| (x[j] - x[(j + 1) % 3]).length()).fold(0.0, f32::max) / grid as f32;
            match o.triangle_depth(x) {
                Some(depth) => {
                    poked[usize::from(k % 3 == 2)] += usize::from(edges_out);
                    // Never deeper than the solid reaches.
                    assert!(
                        depth > 0.0 && depth <= -low + step + 1e-6,
                        "depth {depth} where the grid's deepest is {} (step {step})",
                        -low
                    );
                    if k % 3 == 2 {
                        assert!(depth >= -low - 1e-5, "depth {depth} short of the grid's {}", -low);
                    }
                }
                None => {
                    clear += 1;
                    assert!(low >= -1e-6, "a point {} m inside was not found ({k})", -low);
                }
            }
        }
        assert!(poked[0] > 50 && poked[1] > 50 && clear > 100, "box {}, sphere {}, clear {clear}", poked[0], poked[1]);
    }

    #[test]
    fn the_support_function_is_the_farthest_corner_or_the_sphere_rim() {
        let mut rng = Rng(2);
        let (b, s) = (table(), ball());
        let ObstacleShape::Cuboid { center, half_extents, rotation } = b.shape else { unreachable!() };
        for _ in 0..100 {
            let n = rng.vec().as_vec3a().normalize();
            let corners = (0..8).map(|k| n.dot(corner(center, half_extents, rotation, k))).fold(f32::MIN, f32::max);
            assert!((b.support(n).expect("box") - corners).abs() < 1e-5);
            assert!((s.support(n).expect("sphere") - (n.dot(Vec3A::new(0.0, 0.25, 0.0)) + 0.25)).abs() < 1e-6);
        }
        assert!(Obstacle::ground(0.0, 0.5).support(Vec3A::Y).is_none());
    }

    #[test]
    fn a_triangle_s_closest_point_to_a_corner_or_a_cap_is_its_deepest() {
        let mut rng = Rng(9);
        let (b, s) = (table(), ball());
        let ObstacleShape::Cuboid { center, half_extents, rotation } = b.shape else { unreachable!() };
        let (mut inside, mut checked) = (0, 0);
        for k in 0..400 {
            let (o, at) = if k % 2 == 0 {
                (&b, corner(center, half_extents, rotation, k as u32 % 8))
            } else {
                (&s, Vec3A::new(0.0, 0.25, 0.0) + rng.vec().as_vec3a().normalize() * 0.25)
            };
            let x = triangle_near(&mut rng, at, 0.05);
            let (low, interior) = sampled_min(o, x);
            if low < 1e-4 {
                // Through the solid: not the case the projections answer.
                continue;
            }
            checked += 1;
            let found = o.triangle_closest(x);
            if let Some(c) = found {
                assert!(c.weights.iter().all(|&w| w >= -1e-5) && (c.weights.iter().sum::<f32>() - 1.0).abs() < 1e-4);
                let p = x[0] * c.weights[0] + x[1] * c.weights[1] + x[2] * c.weights[2];
                assert!((o.signed_distance(p).0 - c.distance).abs() < 1e-5);
                // A point of the triangle: never nearer than the grid's best, less the grid's
                // spacing's reach.
                assert!(c.distance > low - 2e-4, "{} vs sampled {low}", c.distance);
            }
            if interior {
                // The closest point is inside: it is found, and it is the closest.
                inside += 1;
                let c = found.unwrap_or_else(|| panic!("closest point inside, not found (sampled {low})"));
                assert!(c.distance <= low + 1e-5, "{} vs sampled {low}", c.distance);
            }
        }
        assert!(checked > 100 && inside > 5, "{inside} of {checked}");
    }

    #[test]
    fn a_span_clear_of_a_box_or_a_sphere_has_a_separating_plane() {
        let mut rng = Rng(4);
        let (b, s) = (table(), ball());
        let ObstacleShape::Cuboid { center, half_extents, rotation } = b.shape else { unreachable!() };
        let mut checked = 0;
        for k in 0..600 {
            let (o, at) = if k % 2 == 0 {
                (&b, corner(center, half_extents, rotation, k as u32 % 8))
            } else {
                (&s, Vec3A::new(0.0, 0.25, 0.0) + rng.vec().as_vec3a().normalize() * 0.25)
            };
            let x = triangle_near(&mut rng, at, 0.04);
            let (low, _) = sampled_min(o, x);
            if low < 2e-4 {
                continue;
            }
            // A box's plane is one of its separating axes whatever the normal given; a sphere's
            // is the normal at the span's closest point (where a triangle's is inside it, as
            // the limits use it).
            let c = o.segment_closest(x[0], x[1]);
            let normal = match (k % 2, o.triangle_closest(x)) {
                (0, _) => c.normal,
                (_, Some(t)) => t.normal,
                (_, None) => continue,
            };
            checked += 1;
            let (n, clearance) = o.separating_plane(&x, normal).expect("plane");
            assert!((n.length() - 1.0).abs() < 1e-5);
            let worst = clearance.into_iter().fold(f32::INFINITY, f32::min);
            assert!(worst > 0.0, "triangle {low} m clear, plane leaves a vertex {worst} m behind");
            // The solid is behind the plane: its support is the plane's offset.
            assert!(clearance.iter().zip(&x).all(|(&c, &p)| (n.dot(p) - o.support(n).unwrap() - c).abs() < 1e-6));
            let edge = [x[0], x[1]];
            let (_, clearance) = o.separating_plane(&edge, c.normal).expect("plane");
            assert!(clearance.into_iter().fold(f32::INFINITY, f32::min) > 0.0);
        }
        assert!(checked > 60, "{checked}");
    }

    /// A box's closest point of a segment outside it is the segment's deepest sample's, to
    /// the grid's resolution, and its distance is the box's there; its normal is the box's at
    /// that point, even for a segment micrometres from an edge (where the search's bracket,
    /// 1e-4 of the segment, let the normal turn along the edge).
    #[test]
    fn a_segment_s_closest_point_to_a_box_is_exact() {
        let mut rng = Rng(11);
        let b = table();
        let ObstacleShape::Cuboid { center, half_extents, rotation } = b.shape else { unreachable!() };
        let mut interior = 0;
        for k in 0..400 {
            let at = corner(center, half_extents, rotation, k % 8);
            let (p, q) = (at + rng.vec().as_vec3a() * 0.05, at + rng.vec().as_vec3a() * 0.05);
            let n = 2000;
            let low =
                (0..=n).map(|i| b.signed_distance(p + (q - p) * (i as f32 / n as f32)).0).fold(f32::INFINITY, f32::min);
            if low < 1e-4 {
                continue;
            }
            let c = b.segment_closest(p, q);
            assert!(c.distance <= low + 1e-6 && c.distance > low - 1e-4 * (q - p).length(), "{} vs {low}", c.distance);
            let at_t = p + (q - p) * c.t;
            assert!((b.signed_distance(at_t).0 - c.distance).abs() < 1e-6);
            interior += usize::from(c.t > 0.0 && c.t < 1.0);
        }
        assert!(interior > 50, "{interior}");
        // A plate pierced in the middle of a face: every candidate is outside, the segment is
        // not.
        let plate = Obstacle::cuboid(Vec3::ZERO, Vec3::new(1.0, 0.01, 1.0), Quat::IDENTITY, 0.5).expect("plate");
        let c = plate.segment_closest(Vec3A::new(-0.1, 0.05, -0.05), Vec3A::new(0.1, -0.05, 0.05));
        assert!((c.distance + 0.01).abs() < 1e-4, "{}", c.distance);
        // An edge 0.25 µm off a box's rim, across it at a slant: the closest point is over the
        // rim, and the normal is the rim's (in the plane across it), not turned along the edge.
        let ground = Obstacle::cuboid(Vec3::ZERO, Vec3::splat(0.1), Quat::IDENTITY, 0.5).expect("box");
        let rim = Vec3A::new(0.1, 0.1, 0.0);
        let along = Vec3A::new(1.0, -1.0, 0.8).normalize();
        let off = Vec3A::new(1.0, 1.0, 0.0).normalize() * 2.5e-7;
        let (p, q) = (rim + off - along * 0.006, rim + off + along * 0.0107);
        let c = ground.segment_closest(p, q);
        assert!((c.distance - 2.5e-7).abs() < 3e-8, "{}", c.distance);
        assert!(c.normal.z.abs() < 1e-3 && (c.normal.x - c.normal.y).abs() < 0.02, "{:?}", c.normal);
    }
}
