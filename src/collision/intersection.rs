//! Exact intersection predicates for closed segments and triangles with f32 vertices.
//!
//! Every decision is the sign of an exact orientation determinant (Shewchuk's adaptive
//! predicates, `robust::orient3d` / `robust::orient2d`). Widening f32 to f64 is exact and those
//! predicates return the exact sign for f64 input, so no epsilon appears anywhere: touching,
//! coplanar and zero-area configurations get the answer of the exact closed point sets. The
//! magnitudes involved (cubes of f32 differences) stay far inside the f64 range, so the
//! predicates cannot overflow or underflow on finite f32 input. Non-finite input gives an
//! unspecified answer, never a panic.
//!
//! Coplanar cases are decided in 2-D after dropping one coordinate. The dropped axis is chosen by
//! an exact test (the projected triangle, or the projected configuration, keeps a non-zero
//! orientation), so the projection is a bijection on the plane in question and preserves every
//! incidence exactly; no computed normal is ever used.

use glam::{DVec3, Vec3};
use robust::{Coord, Coord3D};

/// Whether the closed segment `[p, q]` and the closed triangle `(a, b, c)` share a point. Exact.
///
/// Positions in \[m\]. Zero-length segments (`p == q`) are points and zero-area triangles
/// (collinear or coincident vertices) are the segment or point they cover; both are handled.
pub fn segment_intersects_triangle(p: Vec3, q: Vec3, a: Vec3, b: Vec3, c: Vec3) -> bool {
    segment_meets_triangle(p.as_dvec3(), q.as_dvec3(), a.as_dvec3(), b.as_dvec3(), c.as_dvec3())
}

/// Whether two closed triangles share a point. Exact.
///
/// Positions in \[m\]. Callers pass pairs that share no vertex (for neighbours sharing one vertex
/// use [`triangles_sharing_vertex_intersect`]); a shared vertex would simply count as contact.
/// Zero-area triangles are treated as the segment or point they cover. Symmetric in its arguments
/// and invariant under reordering the vertices of either triangle.
pub fn triangles_intersect(t: [Vec3; 3], u: [Vec3; 3]) -> bool {
    let t = t.map(Vec3::as_dvec3);
    let u = u.map(Vec3::as_dvec3);
    // Two closed triangles meet iff an edge of one meets the other. For non-degenerate pairs the
    // intersection is a convex set whose extreme points lie on an edge of one of them (in the
    // coplanar containment case the inner triangle's edges lie in the outer one); a zero-area
    // triangle is the union of its edges, so the same test is complete for it too.
    edges(t).into_iter().any(|(p, q)| segment_meets_triangle(p, q, u[0], u[1], u[2]))
        || edges(u).into_iter().any(|(p, q)| segment_meets_triangle(p, q, t[0], t[1], t[2]))
}

/// Whether two triangles that share one vertex also meet anywhere else. Exact.
///
/// `t[shared_t]` and `u[shared_u]` are the shared vertex `v`. The answer is whether the closed
/// triangles have a common point other than `v`: the opposite edge of either meeting the other
/// triangle, coplanar triangles overlapping in more than `v`, an edge from `v` running into the
/// other triangle (folded through it), and an edge from `v` lying along an edge of the other from
/// `v` (a common segment) all count; meeting only at `v` does not. A second shared vertex is a
/// second common point, so triangles sharing a whole edge report `true`. Zero-area triangles are
/// the segment or point they cover. If an index is out of range or the two positions differ there
/// is no shared point to ignore, and the result is [`triangles_intersect`]'s.
pub fn triangles_sharing_vertex_intersect(t: [Vec3; 3], u: [Vec3; 3], shared_t: usize, shared_u: usize) -> bool {
    if shared_t > 2 || shared_u > 2 || t[shared_t] != u[shared_u] {
        return triangles_intersect(t, u);
    }
    let t = t.map(Vec3::as_dvec3);
    let u = u.map(Vec3::as_dvec3);
    let v = t[shared_t];
    let (t1, t2) = (t[(shared_t + 1) % 3], t[(shared_t + 2) % 3]);
    let (u1, u2) = (u[(shared_u + 1) % 3], u[(shared_u + 2) % 3]);
    // Same edge argument as `triangles_intersect`: if the intersection holds a point other than v,
    // it has an extreme point other than v, and that point lies on an edge of one triangle while
    // being in the other. So it suffices to ask, per edge, for a common point other than v.
    edges([v, t1, t2]).into_iter().any(|(a, b)| meets_away_from_vertex(a, b, v, u1, u2))
        || edges([v, u1, u2]).into_iter().any(|(a, b)| meets_away_from_vertex(a, b, v, t1, t2))
}

/// The three edges of a triangle, as endpoint pairs.
fn edges(t: [DVec3; 3]) -> [(DVec3, DVec3); 3] {
    [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])]
}

/// Sign of a predicate's value: -1, 0 or +1.
fn sign(x: f64) -> i8 {
    if x > 0.0 {
        1
    } else if x < 0.0 {
        -1
    } else {
        0
    }
}

/// Whether a list of signs holds both a strictly positive and a strictly negative one.
fn mixed(signs: &[i8]) -> bool {
    signs.iter().any(|&s| s > 0) && signs.iter().any(|&s| s < 0)
}

/// Exact sign of the orientation of `d` against the plane through `a`, `b`, `c`; zero iff the
/// four points are coplanar (always zero when `a`, `b`, `c` are collinear).
fn orient3(a: DVec3, b: DVec3, c: DVec3, d: DVec3) -> i8 {
    let k = |p: DVec3| Coord3D { x: p.x, y: p.y, z: p.z };
    sign(robust::orient3d(k(a), k(b), k(c), k(d)))
}

/// The point with coordinate `axis` dropped; exact. Each caller compares signs only within one
/// projection, so which handedness each projection has does not matter.
fn drop_axis(p: DVec3, axis: usize) -> Coord<f64> {
    match axis {
        0 => Coord { x: p.y, y: p.z },
        1 => Coord { x: p.z, y: p.x },
        _ => Coord { x: p.x, y: p.y },
    }
}

/// Exact sign of the 2-D orientation of `(a, b, c)`.
fn orient2(a: Coord<f64>, b: Coord<f64>, c: Coord<f64>) -> i8 {
    sign(robust::orient2d(a, b, c))
}

/// Exact sign of the orientation of `(a, b, c)` seen along coordinate axis `axis`.
fn orient2_along(a: DVec3, b: DVec3, c: DVec3, axis: usize) -> i8 {
    orient2(drop_axis(a, axis), drop_axis(b, axis), drop_axis(c, axis))
}

/// An axis along which the triangle `(a, b, c)` projects with non-zero area, or `None` when the
/// points are collinear. The three projected orientations are the components of the (exact)
/// cross product, so all are zero exactly when the points are collinear in 3-D.
fn plane_axis(a: DVec3, b: DVec3, c: DVec3) -> Option<usize> {
    (0..3).find(|&axis| orient2_along(a, b, c, axis) != 0)
}

/// Whether `a`, `b`, `c` lie on one line (including coincident points). Exact.
fn collinear(a: DVec3, b: DVec3, c: DVec3) -> bool {
    plane_axis(a, b, c).is_none()
}

/// An axis whose projection is one-to-one on the affine hull of `points`, which the caller knows
/// to be at most a plane; `None` when all points coincide.
fn hull_axis(points: &[DVec3]) -> Option<usize> {
    let n = points.len();
    for i in 0..n {
        for j in i + 1..n {
            for k in j + 1..n {
                // A non-collinear triple spans the (coplanar) hull; an axis that keeps its area
                // keeps the whole plane one-to-one.
                if let Some(axis) = plane_axis(points[i], points[j], points[k]) {
                    return Some(axis);
                }
            }
        }
    }
    // All on one line: any coordinate in which two points differ varies along the line, so
    // dropping a different coordinate keeps the line one-to-one.
    let first = points.first()?;
    points[1..].iter().find_map(|p| (0..3).find(|&c| p[c] != first[c]).map(|c| (c + 1) % 3))
}

/// Whether `x`, known to be collinear with `a` and `b`, lies on the closed segment `[a, b]`.
fn in_box_2d(a: Coord<f64>, b: Coord<f64>, x: Coord<f64>) -> bool {
    x.x >= a.x.min(b.x) && x.x <= a.x.max(b.x) && x.y >= a.y.min(b.y) && x.y <= a.y.max(b.y)
}

/// Whether two closed 2-D segments share a point, including collinear overlap and zero-length
/// segments.
fn segments_meet_2d(p: Coord<f64>, q: Coord<f64>, r: Coord<f64>, s: Coord<f64>) -> bool {
    let d1 = orient2(r, s, p);
    let d2 = orient2(r, s, q);
    let d3 = orient2(p, q, r);
    let d4 = orient2(p, q, s);
    // Proper crossing: each segment's endpoints strictly on both sides of the other's line.
    if d1 * d2 < 0 && d3 * d4 < 0 {
        return true;
    }
    // Otherwise any common point is an endpoint of one lying on the other (this also covers
    // collinear overlap and zero-length segments, whose orientations are all zero).
    (d1 == 0 && in_box_2d(r, s, p))
        || (d2 == 0 && in_box_2d(r, s, q))
        || (d3 == 0 && in_box_2d(p, q, r))
        || (d4 == 0 && in_box_2d(p, q, s))
}

/// Whether `x` lies in the closed 2-D triangle `(a, b, c)`, which must have non-zero area.
fn point_in_triangle_2d(x: Coord<f64>, a: Coord<f64>, b: Coord<f64>, c: Coord<f64>) -> bool {
    !mixed(&[orient2(a, b, x), orient2(b, c, x), orient2(c, a, x)])
}

/// Whether two closed 3-D segments share a point. Exact.
fn segments_meet(p: DVec3, q: DVec3, r: DVec3, s: DVec3) -> bool {
    if orient3(p, q, r, s) != 0 {
        return false;
    }
    match hull_axis(&[p, q, r, s]) {
        // Four coincident points.
        None => true,
        Some(axis) => {
            let f = |x: DVec3| drop_axis(x, axis);
            segments_meet_2d(f(p), f(q), f(r), f(s))
        }
    }
}

/// Whether the closed segment `[p, q]` and the closed triangle `(a, b, c)` share a point. Exact.
fn segment_meets_triangle(p: DVec3, q: DVec3, a: DVec3, b: DVec3, c: DVec3) -> bool {
    let Some(axis) = plane_axis(a, b, c) else {
        // Zero-area triangle: the union of its edges is the segment (or point) it covers.
        return edges([a, b, c]).into_iter().any(|(r, s)| segments_meet(p, q, r, s));
    };
    let sp = orient3(a, b, c, p);
    let sq = orient3(a, b, c, q);
    if sp * sq > 0 {
        return false;
    }
    if sp == 0 && sq == 0 {
        // Coplanar: the triangle keeps its area in this projection, so the plane maps one-to-one.
        let f = |x: DVec3| drop_axis(x, axis);
        let (p, q, a, b, c) = (f(p), f(q), f(a), f(b), f(c));
        return point_in_triangle_2d(p, a, b, c)
            || point_in_triangle_2d(q, a, b, c)
            || segments_meet_2d(p, q, a, b)
            || segments_meet_2d(p, q, b, c)
            || segments_meet_2d(p, q, c, a);
    }
    // The segment meets the plane in exactly one point X (its line is not parallel to the plane).
    // The volume of (p, q, a, b) is the 2-D orientation of (X, a, b) in the plane times one common
    // factor, so X is in the closed triangle iff these three signs are not mixed.
    !mixed(&[orient3(p, q, a, b), orient3(p, q, b, c), orient3(p, q, c, a)])
}

/// Whether the closed segment `[a, b]` meets the closed triangle `(v, k1, k2)` at a point other
/// than its vertex `v`.
fn meets_away_from_vertex(a: DVec3, b: DVec3, v: DVec3, k1: DVec3, k2: DVec3) -> bool {
    let v_on_segment = collinear(a, b, v) && (0..3).all(|c| v[c] >= a[c].min(b[c]) && v[c] <= a[c].max(b[c]));
    if v_on_segment {
        // Split at v: [a, b] = [v, a] ∪ [v, b], each a segment starting at the shared vertex.
        leaves_into(v, a, k1, k2) || leaves_into(v, b, k1, k2)
    } else {
        segment_meets_triangle(a, b, v, k1, k2)
    }
}

/// Whether the segment from `v` to `x` runs into the closed triangle `(v, k1, k2)`, i.e. has a
/// point other than `v` in it. The triangle is convex and contains `v`, so this holds iff the
/// direction `x - v` is non-zero and lies in the closed cone spanned by `k1 - v` and `k2 - v`.
fn leaves_into(v: DVec3, x: DVec3, k1: DVec3, k2: DVec3) -> bool {
    if x == v {
        return false;
    }
    let Some(axis) = plane_axis(v, k1, k2) else {
        // Collinear triangle: the cone is the union of the rays from v through k1 and k2.
        return [k1, k2].into_iter().any(|k| k != v && collinear(v, k, x) && same_ray(v, k, x));
    };
    if orient3(v, k1, k2, x) != 0 {
        return false;
    }
    // In the plane the wedge at v is less than a half-turn, so x - v is in it iff x is on the
    // wedge's side of (or on) each bounding ray; a point on the backward extension of one ray is
    // strictly outside the other.
    let s = orient2_along(v, k1, k2, axis);
    let o1 = orient2_along(v, k1, x, axis);
    let o2 = orient2_along(v, x, k2, axis);
    (o1 == 0 || o1 == s) && (o2 == 0 || o2 == s)
}

/// Whether `x` lies on the open ray from `v` through `k`; the three points must be collinear and
/// `k != v`. Along a line, comparing one coordinate that varies is exact.
fn same_ray(v: DVec3, k: DVec3, x: DVec3) -> bool {
    (0..3).find(|&c| k[c] != v[c]).is_some_and(|c| x[c] != v[c] && (x[c] > v[c]) == (k[c] > v[c]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: f32, y: f32, z: f32) -> Vec3 {
        Vec3::new(x, y, z)
    }

    /// All six vertex orders of a triangle.
    fn perms(t: [Vec3; 3]) -> [[Vec3; 3]; 6] {
        let [a, b, c] = t;
        [[a, b, c], [a, c, b], [b, a, c], [b, c, a], [c, a, b], [c, b, a]]
    }

    /// `triangles_intersect` over every vertex order and both argument orders, asserting they
    /// agree.
    fn tri_all_orders(t: [Vec3; 3], u: [Vec3; 3]) -> bool {
        let want = triangles_intersect(t, u);
        for tp in perms(t) {
            for up in perms(u) {
                assert_eq!(triangles_intersect(tp, up), want, "order changed the answer: {tp:?} {up:?}");
                assert_eq!(triangles_intersect(up, tp), want, "swap changed the answer: {up:?} {tp:?}");
            }
        }
        want
    }

    /// The shared-vertex test in both argument orders and both windings, asserting agreement.
    fn shared_all_orders(t: [Vec3; 3], u: [Vec3; 3], st: usize, su: usize) -> bool {
        let want = triangles_sharing_vertex_intersect(t, u, st, su);
        let flip = |x: [Vec3; 3], s: usize| ([x[0], x[2], x[1]], [0, 2, 1][s]);
        let (tf, stf) = flip(t, st);
        let (uf, suf) = flip(u, su);
        for (a, sa) in [(t, st), (tf, stf)] {
            for (b, sb) in [(u, su), (uf, suf)] {
                assert_eq!(triangles_sharing_vertex_intersect(a, b, sa, sb), want);
                assert_eq!(triangles_sharing_vertex_intersect(b, a, sb, sa), want);
            }
        }
        want
    }

    // ---- Independent exact reference: vertex enumeration of a rational linear program. ----
    //
    // Two point sets' convex hulls meet iff some λ ≥ 0, μ ≥ 0 with Σλ = 1, Σμ = 1 satisfy
    // Σ λ_i P_i = Σ μ_j Q_j. That polytope's vertices are its basic solutions: sets of linearly
    // independent columns whose unique solution is non-negative. Enumerating every column subset
    // with exact rational Gaussian elimination lists them all; none of the predicates above is
    // used.

    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    struct Rat {
        n: i128,
        d: i128,
    }

    fn gcd(a: i128, b: i128) -> i128 {
        if b == 0 { a.abs() } else { gcd(b, a % b) }
    }

    impl Rat {
        fn new(n: i128, d: i128) -> Rat {
            assert!(d != 0);
            let g = gcd(n, d).max(1) * d.signum();
            Rat { n: n / g, d: d / g }
        }
        fn int(n: i64) -> Rat {
            Rat { n: n as i128, d: 1 }
        }
        fn sub(self, o: Rat) -> Rat {
            Rat::new(self.n * o.d - o.n * self.d, self.d * o.d)
        }
        fn mul(self, o: Rat) -> Rat {
            Rat::new(self.n * o.n, self.d * o.d)
        }
        fn div(self, o: Rat) -> Rat {
            Rat::new(self.n * o.d, self.d * o.n)
        }
        fn add(self, o: Rat) -> Rat {
            Rat::new(self.n * o.d + o.n * self.d, self.d * o.d)
        }
    }

    /// Every vertex of the common part of conv(ps) and conv(qs), possibly repeated, as exact
    /// rational points. Empty iff the hulls are disjoint.
    fn ref_common_vertices(ps: &[[i64; 3]], qs: &[[i64; 3]]) -> Vec<[Rat; 3]> {
        let mut cols: Vec<[Rat; 5]> = Vec::new();
        for p in ps {
            cols.push([Rat::int(p[0]), Rat::int(p[1]), Rat::int(p[2]), Rat::int(1), Rat::int(0)]);
        }
        for q in qs {
            cols.push([Rat::int(-q[0]), Rat::int(-q[1]), Rat::int(-q[2]), Rat::int(0), Rat::int(1)]);
        }
        let rhs = [0, 0, 0, 1, 1].map(Rat::int);
        let n = cols.len();
        let mut out = Vec::new();
        for mask in 1u32..(1 << n) {
            let chosen: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
            let k = chosen.len();
            if k > 5 {
                continue;
            }
            // Augmented 5 × (k + 1) matrix, reduced to row echelon form.
            let mut m: Vec<Vec<Rat>> =
                (0..5).map(|r| chosen.iter().map(|&c| cols[c][r]).chain([rhs[r]]).collect()).collect();
            // No row swaps past a missing pivot are needed: a dependent set is skipped, so
            // column `col` always pivots in row `col`.
            let mut independent = true;
            for col in 0..k {
                let Some(piv) = (col..5).find(|&r| m[r][col].n != 0) else {
                    independent = false;
                    break;
                };
                m.swap(col, piv);
                let pv = m[col][col];
                for e in m[col].iter_mut() {
                    *e = e.div(pv);
                }
                let pivot_row = m[col].clone();
                for (r, row) in m.iter_mut().enumerate() {
                    if r != col && row[col].n != 0 {
                        let factor = row[col];
                        for (e, p) in row.iter_mut().zip(&pivot_row) {
                            *e = e.sub(factor.mul(*p));
                        }
                    }
                }
            }
            // Dependent column sets are covered by their independent subsets.
            if !independent || (k..5).any(|r| m[r][k].n != 0) {
                continue;
            }
            let x: Vec<Rat> = (0..k).map(|r| m[r][k]).collect();
            if x.iter().any(|r| r.n < 0) {
                continue;
            }
            let mut point = [Rat::int(0); 3];
            for (i, &c) in chosen.iter().enumerate() {
                if c < ps.len() {
                    for a in 0..3 {
                        point[a] = point[a].add(x[i].mul(Rat::int(ps[c][a])));
                    }
                }
            }
            out.push(point);
        }
        out
    }

    /// Deterministic SplitMix64, so failures reproduce.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn coord(&mut self, range: i64) -> i64 {
            (self.next() % (2 * range as u64 + 1)) as i64 - range
        }
        fn point(&mut self, range: i64) -> [i64; 3] {
            [self.coord(range), self.coord(range), self.coord(range)]
        }
    }

    fn f(p: [i64; 3]) -> Vec3 {
        Vec3::new(p[0] as f32, p[1] as f32, p[2] as f32)
    }

    /// Small ranges make coplanar, collinear, touching and coincident cases common; the planar
    /// family forces coplanar pairs.
    fn random_triangle(rng: &mut Rng, case: usize) -> [[i64; 3]; 3] {
        let range = [1, 2, 4][case % 3];
        let mut t = [rng.point(range), rng.point(range), rng.point(range)];
        if case.is_multiple_of(5) {
            for p in &mut t {
                p[2] = 0;
            }
        }
        t
    }

    #[test]
    fn segment_triangle_matches_exact_reference() {
        let mut rng = Rng(1);
        let mut hits = 0;
        for case in 0..30_000 {
            let t = random_triangle(&mut rng, case);
            let range = [1, 2, 4][case % 3];
            let (p, mut q) = (rng.point(range), rng.point(range));
            if case.is_multiple_of(5) {
                q[2] = 0;
            }
            let want = !ref_common_vertices(&[p, q], &t).is_empty();
            hits += want as usize;
            let got = segment_intersects_triangle(f(p), f(q), f(t[0]), f(t[1]), f(t[2]));
            assert_eq!(got, want, "segment {p:?}-{q:?} triangle {t:?}");
            assert_eq!(segment_intersects_triangle(f(q), f(p), f(t[2]), f(t[0]), f(t[1])), want);
        }
        // Both answers must be well represented or the comparison proves little.
        assert!(hits > 3_000 && hits < 27_000, "hits {hits}");
    }

    #[test]
    fn triangles_match_exact_reference() {
        let mut rng = Rng(2);
        let mut hits = 0;
        for case in 0..30_000 {
            let t = random_triangle(&mut rng, case);
            let u = random_triangle(&mut rng, case + 1);
            let want = !ref_common_vertices(&t, &u).is_empty();
            hits += want as usize;
            let (tf, uf) = (t.map(f), u.map(f));
            let got = if case.is_multiple_of(50) { tri_all_orders(tf, uf) } else { triangles_intersect(tf, uf) };
            assert_eq!(got, want, "t {t:?} u {u:?}");
            assert_eq!(triangles_intersect(uf, tf), want);
        }
        assert!(hits > 3_000 && hits < 27_000, "hits {hits}");
    }

    #[test]
    fn shared_vertex_matches_exact_reference() {
        let mut rng = Rng(3);
        let mut hits = 0;
        for case in 0..30_000 {
            let t = random_triangle(&mut rng, case);
            let mut u = random_triangle(&mut rng, case + 2);
            let st = (rng.next() % 3) as usize;
            let su = (rng.next() % 3) as usize;
            u[su] = t[st];
            let vtx = t[st].map(Rat::int);
            // The closed triangles meet away from v iff some vertex of their intersection is not v.
            let want = ref_common_vertices(&t, &u).iter().any(|p| *p != vtx);
            hits += want as usize;
            let (tf, uf) = (t.map(f), u.map(f));
            let got = if case.is_multiple_of(50) {
                shared_all_orders(tf, uf, st, su)
            } else {
                triangles_sharing_vertex_intersect(tf, uf, st, su)
            };
            assert_eq!(got, want, "t {t:?} u {u:?} shared {st} {su}");
        }
        assert!(hits > 3_000 && hits < 27_000, "hits {hits}");
    }

    // ---- Hand cases. ----

    /// The right triangle with legs 4 on the x and y axes, in the plane z = 0.
    fn base() -> [Vec3; 3] {
        [v(0.0, 0.0, 0.0), v(4.0, 0.0, 0.0), v(0.0, 4.0, 0.0)]
    }

    #[test]
    fn separated() {
        assert!(!tri_all_orders(base(), [v(0.0, 0.0, 5.0), v(4.0, 0.0, 5.0), v(0.0, 4.0, 5.0)]));
        // Same plane height range but beside it.
        assert!(!tri_all_orders(base(), [v(3.0, 3.0, -1.0), v(5.0, 3.0, 1.0), v(3.0, 5.0, 1.0)]));
    }

    #[test]
    fn crossing_through_interior_without_vertex_contact() {
        // Only u's two long edges pierce the base's interior; no vertex of either touches the
        // other and no edge of the base meets u.
        let u = [v(1.0, 1.0, -1.0), v(2.0, 1.0, 1.0), v(0.5, 1.0, 1.0)];
        assert!(tri_all_orders(base(), u));
        assert!(!base().iter().any(|&p| segment_intersects_triangle(p, p, u[0], u[1], u[2])));
    }

    #[test]
    fn edge_through_edge() {
        // u's edge passes through (1, 0, 0) on the base's edge along the x axis and nowhere else.
        assert!(tri_all_orders(base(), [v(1.0, -1.0, -1.0), v(1.0, 1.0, 1.0), v(1.0, -3.0, 2.0)]));
        // Shifted to x = 5 it misses.
        assert!(!tri_all_orders(base(), [v(5.0, -1.0, -1.0), v(5.0, 1.0, 1.0), v(5.0, -3.0, 2.0)]));
    }

    #[test]
    fn touching_at_vertex_and_edge_on_face() {
        assert!(tri_all_orders(base(), [v(4.0, 0.0, 0.0), v(5.0, 0.0, 1.0), v(4.0, 1.0, 1.0)]));
        // Vertex of u on the base's face.
        assert!(tri_all_orders(base(), [v(1.0, 1.0, 0.0), v(1.0, 1.0, 3.0), v(2.0, 1.0, 3.0)]));
        // Edge of u lying in the base's face.
        assert!(tri_all_orders(base(), [v(1.0, 1.0, 0.0), v(2.0, 1.0, 0.0), v(1.0, 1.0, 3.0)]));
        // Edge of u lying along the base's hypotenuse, partly outside it.
        assert!(tri_all_orders(base(), [v(3.0, 1.0, 0.0), v(5.0, -1.0, 0.0), v(4.0, 0.0, 3.0)]));
    }

    #[test]
    fn coplanar_cases() {
        let overlapping = [v(2.0, 2.0, 0.0), v(-1.0, 1.0, 0.0), v(1.0, -1.0, 0.0)];
        assert!(tri_all_orders(base(), overlapping));
        let disjoint = [v(3.0, 3.0, 0.0), v(5.0, 3.0, 0.0), v(3.0, 5.0, 0.0)];
        assert!(!tri_all_orders(base(), disjoint));
        let inside = [v(0.5, 0.5, 0.0), v(1.5, 0.5, 0.0), v(0.5, 1.5, 0.0)];
        assert!(tri_all_orders(base(), inside));
        // Touching at one point: u's vertex on the hypotenuse.
        let touching = [v(2.0, 2.0, 0.0), v(4.0, 4.0, 0.0), v(5.0, 2.0, 0.0)];
        assert!(tri_all_orders(base(), touching));
        // Vertex against vertex only.
        let corner = [v(4.0, 0.0, 0.0), v(5.0, 0.0, 0.0), v(5.0, 1.0, 0.0)];
        assert!(tri_all_orders(base(), corner));
        // Coplanar in a tilted plane x + y + z = 4, one inside the other.
        let big = [v(4.0, 0.0, 0.0), v(0.0, 4.0, 0.0), v(0.0, 0.0, 4.0)];
        assert!(tri_all_orders(big, [v(1.0, 1.0, 2.0), v(2.0, 1.0, 1.0), v(1.0, 2.0, 1.0)]));
        assert!(!tri_all_orders(big, [v(3.0, 3.0, -2.0), v(4.0, 3.0, -3.0), v(3.0, 4.0, -3.0)]));
    }

    #[test]
    fn degenerate_triangles() {
        let seg = |a: Vec3, b: Vec3| [a, b, (a + b) * 0.5];
        let point = |a: Vec3| [a, a, a];
        // A zero-area triangle piercing the base, one missing it.
        assert!(tri_all_orders(base(), seg(v(1.0, 1.0, -1.0), v(1.0, 1.0, 1.0))));
        assert!(!tri_all_orders(base(), seg(v(3.0, 3.0, -1.0), v(3.0, 3.0, 1.0))));
        // A point triangle on the face, on an edge, off the face.
        assert!(tri_all_orders(base(), point(v(1.0, 1.0, 0.0))));
        assert!(tri_all_orders(base(), point(v(2.0, 2.0, 0.0))));
        assert!(!tri_all_orders(base(), point(v(2.0, 2.0, 0.5))));
        // A segment in the base's plane overlapping it, and one beside it.
        assert!(tri_all_orders(base(), seg(v(-1.0, 1.0, 0.0), v(5.0, 1.0, 0.0))));
        assert!(!tri_all_orders(base(), seg(v(-1.0, 5.0, 0.0), v(5.0, 5.0, 0.0))));
        // Degenerate against degenerate: collinear overlap, collinear gap, parallel, crossing.
        let s = seg(v(0.0, 0.0, 0.0), v(2.0, 2.0, 2.0));
        assert!(tri_all_orders(s, seg(v(1.0, 1.0, 1.0), v(3.0, 3.0, 3.0))));
        assert!(!tri_all_orders(s, seg(v(3.0, 3.0, 3.0), v(4.0, 4.0, 4.0))));
        assert!(!tri_all_orders(s, seg(v(1.0, 0.0, 0.0), v(3.0, 2.0, 2.0))));
        assert!(tri_all_orders(s, seg(v(2.0, 0.0, 0.0), v(0.0, 2.0, 2.0))));
        assert!(tri_all_orders(point(v(1.0, 2.0, 3.0)), point(v(1.0, 2.0, 3.0))));
        assert!(!tri_all_orders(point(v(1.0, 2.0, 3.0)), point(v(1.0, 2.0, 4.0))));
        // A point on a segment triangle's interior.
        assert!(tri_all_orders(s, point(v(0.5, 0.5, 0.5))));
        // Zero-length segment against a triangle.
        let [a, b, c] = base();
        assert!(segment_intersects_triangle(v(1.0, 1.0, 0.0), v(1.0, 1.0, 0.0), a, b, c));
        assert!(!segment_intersects_triangle(v(1.0, 1.0, 1.0), v(1.0, 1.0, 1.0), a, b, c));
    }

    #[test]
    fn parallel_triangles_one_ulp_apart() {
        let z1 = 1.0f32;
        let above = f32::from_bits(z1.to_bits() + 1);
        let below = f32::from_bits(z1.to_bits() - 1);
        let t = [v(0.0, 0.0, z1), v(1.0, 0.0, z1), v(0.0, 1.0, z1)];
        let u = [v(0.25, 0.25, above), v(1.25, 0.25, above), v(0.25, 1.25, above)];
        // A naive f32 test with the customary 1e-6 coplanarity tolerance (Möller's EPSILON) calls
        // u coplanar with t, and their projections overlap, so it would answer "intersect".
        let n = (t[1] - t[0]).cross(t[2] - t[0]);
        assert!(u.iter().all(|&p| n.dot(p - t[0]).abs() < 1e-6));
        assert!(!tri_all_orders(t, u));
        // Tilting u by two ulps so that one corner dips below makes it cross t's interior.
        let dipped = [v(0.25, 0.25, below), u[1], u[2]];
        assert!(tri_all_orders(t, dipped));
    }

    #[test]
    fn tilted_parallel_triangles_one_ulp_apart() {
        // A tilted triangle with awkward coordinates and its copy with every z raised by one ulp:
        // a parallel plane strictly above, so no contact; f32 plane distances are pure rounding
        // noise at this scale.
        let t = [v(0.1, 0.2, 0.3), v(700.7, 0.3, 301.7), v(0.9, 900.1, 512.9)];
        let up = t.map(|p| v(p.x, p.y, f32::from_bits(p.z.to_bits() + 1)));
        assert!(!tri_all_orders(t, up));
        // Raising two corners and lowering the third makes the copy cross t inside t's outline.
        let mut crossing = up;
        crossing[0].z = f32::from_bits(t[0].z.to_bits() - 1);
        assert!(tri_all_orders(t, crossing));
    }

    #[test]
    fn shared_vertex_cases() {
        let t = base();
        let o = v(0.0, 0.0, 0.0);
        // Flat fan neighbours meeting only at the shared vertex.
        assert!(!shared_all_orders(t, [o, v(-2.0, 0.0, 0.0), v(0.0, -2.0, 0.0)], 0, 0));
        assert!(!shared_all_orders(t, [v(-1.0, 0.0, 0.0), o, v(0.0, -2.0, 0.0)], 0, 1));
        // Coplanar overlap inside the wedge.
        assert!(shared_all_orders(t, [o, v(2.0, 1.0, 0.0), v(1.0, 2.0, 0.0)], 0, 0));
        // Coplanar, u is a thin sliver along t's edge, outside: touches only at v.
        assert!(!shared_all_orders(t, [o, v(-1.0, 0.0, 0.0), v(-1.0, -1.0, 0.0)], 0, 0));
        // Non-coplanar, only v in common.
        assert!(!shared_all_orders(t, [o, v(-1.0, -1.0, 1.0), v(1.0, -2.0, 1.0)], 0, 0));
        assert!(!shared_all_orders(t, [o, v(1.0, 1.0, 1.0), v(2.0, 0.5, 3.0)], 0, 0));
        // Folded through: u's edge from v runs through t's interior and out over the hypotenuse.
        assert!(shared_all_orders(t, [o, v(5.0, 5.0, 0.0), v(0.0, 0.0, 5.0)], 0, 0));
        // u's opposite edge pierces t.
        assert!(shared_all_orders(t, [o, v(1.0, 1.0, -1.0), v(1.0, 1.0, 1.0)], 0, 0));
        // An edge from v lying along t's edge from v: a common segment counts.
        assert!(shared_all_orders(t, [o, v(2.0, 0.0, 0.0), v(0.0, 0.0, 3.0)], 0, 0));
        // Sharing at a non-origin vertex of t.
        let w = v(4.0, 0.0, 0.0);
        assert!(!shared_all_orders(t, [v(5.0, 0.0, 1.0), w, v(5.0, 1.0, -1.0)], 1, 1));
        assert!(shared_all_orders(t, [v(1.0, 1.0, 1.0), w, v(1.0, 1.0, -1.0)], 1, 1));
        // Sharing a whole edge: the second shared vertex is a common point.
        assert!(shared_all_orders(t, [o, v(4.0, 0.0, 0.0), v(1.0, -1.0, 2.0)], 0, 0));
        // Zero-area u: coincident with v and pointing into t, pointing away, or v in its middle.
        assert!(shared_all_orders(t, [o, o, v(1.0, 1.0, 0.0)], 0, 0));
        assert!(!shared_all_orders(t, [o, o, v(-1.0, -1.0, 0.0)], 0, 0));
        assert!(shared_all_orders(t, [o, v(-1.0, -1.0, 0.0), v(1.0, 1.0, 0.0)], 0, 0));
        // Folded away: u stands in the plane x = y behind v.
        assert!(!shared_all_orders(t, [o, v(-1.0, -1.0, 0.0), v(-1.0, -1.0, 1.0)], 0, 0));
        // Point triangles at v: nothing else to share.
        assert!(!shared_all_orders([o, o, o], [o, o, o], 0, 2));
        // Positions that differ fall back to the plain test.
        let apart = [v(1.0, 1.0, 0.0), v(1.0, 1.0, 1.0), v(2.0, 1.0, 1.0)];
        assert_eq!(triangles_sharing_vertex_intersect(t, apart, 0, 0), triangles_intersect(t, apart));
        assert!(triangles_sharing_vertex_intersect(t, apart, 0, 7));
    }
}
