//! Exact distances between mesh primitives (docs/algorithms.md §7.1): point–triangle and edge–edge, with
//! the closest points' vertex weights, the gradient of the distance and the exact Hessian of its
//! square. Generic over [`Real`]: the solver runs f32, tests and host-side checks f64.
//!
//! Both pair kinds are one problem: minimise `‖r‖²`, `r = Σ_k w_k(θ) x_k`, over closest-point
//! parameters `θ` in a convex domain (the triangle's barycentric simplex, or the square `[0,1]²`
//! of the two edge parameters), with `w` affine in `θ` and `Σ_k w_k = 0`. The minimiser is either
//! inside the domain (one 2×2 solve) or on its boundary, and every boundary piece is a
//! point–segment problem. Taking the least of those candidates is exact for every configuration,
//! degenerate ones (zero-area triangles, parallel or zero-length edges) included, because every
//! candidate is a real pair of points and the true minimiser is always among them.

use crate::math::{Real, Vector3, lit};

/// Closest points of two primitives: P on the first, Q on the second.
#[derive(Clone, Copy, Debug)]
pub struct Closest<R: Real> {
    /// `‖P − Q‖` \[m\] (unsigned).
    pub distance: R,
    /// `(P − Q)/distance`, unit. When the distance is 0 it is still a finite unit vector taken
    /// from the geometry: the triangle normal, the edges' cross product, a direction
    /// perpendicular to a degenerate primitive, or +z when everything coincides.
    pub normal: R::V3,
    /// Per-vertex weights with `P − Q = Σ_k weights[k] x_k` \[-\]. Point–triangle
    /// `(p, t0, t1, t2)`: `[1, −β0, −β1, −β2]`, β the barycentric coordinates of Q. Edge–edge
    /// `(a0, a1, b0, b1)`: `[1 − s, s, −(1 − u), −u]`, `P = a0 + s(a1 − a0)`, `Q = b0 + u(b1 − b0)`.
    pub weights: [R; 4],
}

impl<R: Real> Closest<R> {
    /// Gradient of the distance with respect to the four vertices \[-\]:
    /// `∂d/∂x_k = weights[k]·normal`. By the envelope theorem the closest-point parameters are
    /// stationary, so only the explicit dependence of `P − Q` on `x_k` counts. Exact wherever
    /// the distance is positive and the closest points are unique.
    pub fn gradient(&self) -> [R::V3; 4] {
        self.weights.map(|w| self.normal * w)
    }
}

/// Closest points of point `p` and triangle `(t0, t1, t2)` \[m\]; exact in every Voronoi region
/// (face, three edges, three vertices) and for degenerate triangles.
pub fn point_triangle<R: Real>(p: R::V3, t0: R::V3, t1: R::V3, t2: R::V3) -> Closest<R> {
    let y = relative::<R>(&[p, t0, t1, t2]);
    let feature = triangle_feature(&y);
    finish(&y, &feature, || {
        let (e0, e1) = (y[2] - y[1], y[3] - y[1]);
        fallback_normal::<R>(e0.cross(e1), [e0, e1])
    })
}

/// Closest points of segments `(a0, a1)` and `(b0, b1)` \[m\]; exact for crossing, clamped,
/// parallel, nearly parallel and zero-length segments.
pub fn edge_edge<R: Real>(a0: R::V3, a1: R::V3, b0: R::V3, b1: R::V3) -> Closest<R> {
    let y = relative::<R>(&[a0, a1, b0, b1]);
    let feature = edges_feature(&y);
    finish(&y, &feature, || {
        let (ea, eb) = (y[1] - y[0], y[3] - y[2]);
        fallback_normal::<R>(ea.cross(eb), [ea, eb])
    })
}

/// Squared point–triangle distance `d²` \[m²\] of `x = [p, t0, t1, t2]`, its gradient (12
/// entries, vertex-major: `3k + axis`) \[m\] and its exact 12×12 Hessian \[-\] in the region the
/// closest point lies in.
#[cfg(test)]
pub fn point_triangle_distance2_derivatives<R: Real>(x: &[R::V3; 4]) -> (R, [R; 12], [[R; 12]; 12]) {
    let y = relative::<R>(x);
    distance2_derivatives(&y, &triangle_feature(&y))
}

/// Squared edge–edge distance `d²` \[m²\] of `x = [a0, a1, b0, b1]`, its gradient \[m\] and its
/// exact 12×12 Hessian \[-\], laid out as in [`point_triangle_distance2_derivatives`].
#[cfg(test)]
pub fn edge_edge_distance2_derivatives<R: Real>(x: &[R::V3; 4]) -> (R, [R; 12], [[R; 12]; 12]) {
    let y = relative::<R>(x);
    distance2_derivatives(&y, &edges_feature(&y))
}

/// The closest-point parameterisation at the minimiser: the weights there, the derivatives of
/// the weights with respect to the parameters still free (strictly inside their range), and how
/// many are free (0, 1 or 2). Clamped parameters are constants, which is what makes one
/// Hessian routine serve every region of both pair kinds.
#[derive(Clone, Copy, Debug)]
struct Feature<R: Real> {
    w: [R; 4],
    // For the exact Hessian of the squared distance, which the tests check.
    #[cfg_attr(not(test), allow(dead_code))]
    dw: [[R; 4]; 2],
    #[cfg_attr(not(test), allow(dead_code))]
    free: usize,
}

/// Below this `sin²` of the angle between the two spanning vectors (the triangle's edges, or the
/// two segments) an interior solution is also compared with the boundary: the 2×2 solve loses
/// accuracy as that angle closes, and a crude parallel fallback alone would overstate the
/// distance of two nearly parallel segments that cross (by up to half their length times the
/// angle), which CCD cannot afford.
const WELL_CONDITIONED: f64 = 1e-4;

/// Positions relative to the first vertex. Weights sum to zero, so `Σ w_k x_k` is unchanged, and
/// working near the origin avoids cancellation for primitives far from it.
fn relative<R: Real>(x: &[R::V3; 4]) -> [R::V3; 4] {
    let o = x[0];
    x.map(|v| v - o)
}

fn combine<R: Real>(w: &[R; 4], y: &[R::V3; 4]) -> R::V3 {
    y[0] * w[0] + y[1] * w[1] + y[2] * w[2] + y[3] * w[3]
}

/// Length and direction of `v`, or None for the zero vector. Scaling by the largest component
/// first keeps tiny (even subnormal) and huge vectors from under- or overflowing the square.
fn unit<R: Real>(v: R::V3) -> Option<(R, R::V3)> {
    let m = v.at(0).abs().max(v.at(1).abs()).max(v.at(2).abs());
    if m == R::ZERO {
        return None;
    }
    let s = R::V3::new(v.at(0) / m, v.at(1) / m, v.at(2) / m);
    let l = s.length();
    Some((m * l, s * (R::ONE / l)))
}

/// A unit normal for touching primitives: `n` if it is not zero, else a direction perpendicular
/// to the longer of the two edges (the primitive is a segment), else +z (everything is a point).
fn fallback_normal<R: Real>(n: R::V3, edges: [R::V3; 2]) -> R::V3 {
    let (z, o) = (R::ZERO, R::ONE);
    if let Some((_, u)) = unit::<R>(n) {
        return u;
    }
    let e = if edges[0].length_squared() >= edges[1].length_squared() { edges[0] } else { edges[1] };
    // Crossing with the axis the edge is least aligned with keeps the product well away from 0.
    let (ax, ay, az) = (e.at(0).abs(), e.at(1).abs(), e.at(2).abs());
    let axis = if ax <= ay && ax <= az {
        R::V3::new(o, z, z)
    } else if ay <= az {
        R::V3::new(z, o, z)
    } else {
        R::V3::new(z, z, o)
    };
    unit::<R>(e.cross(axis)).map_or(R::V3::new(z, z, o), |(_, u)| u)
}

fn finish<R: Real>(y: &[R::V3; 4], f: &Feature<R>, fallback: impl FnOnce() -> R::V3) -> Closest<R> {
    let r = combine(&f.w, y);
    match unit::<R>(r) {
        Some((distance, normal)) => Closest { distance, normal, weights: f.w },
        None => Closest { distance: R::ZERO, normal: fallback(), weights: f.w },
    }
}

/// Closest point of segment `(y[si], y[sj])` to vertex `y[p]`, returning `‖r‖²` and the feature.
/// `sign` is +1 when the vertex belongs to the pair's first primitive (`r` = vertex − segment
/// point) and −1 when it belongs to the second (`r` = segment point − vertex).
fn point_segment<R: Real>(y: &[R::V3; 4], p: usize, si: usize, sj: usize, sign: R) -> (R, Feature<R>) {
    let e = y[sj] - y[si];
    let q = y[p] - y[si];
    let len2 = e.length_squared();
    let along = q.dot(e);
    // A zero-length segment is its end point; the division below then only ever sees
    // 0 < along < len2 and yields t strictly inside (0, 1).
    let (t, free) = if !(len2 > R::ZERO) || !(along > R::ZERO) {
        (R::ZERO, 0)
    } else if along >= len2 {
        (R::ONE, 0)
    } else {
        (along / len2, 1)
    };
    let mut w = [R::ZERO; 4];
    w[p] = sign;
    w[si] = -sign * (R::ONE - t);
    w[sj] = -sign * t;
    let mut dw = [[R::ZERO; 4]; 2];
    dw[0][si] = sign;
    dw[0][sj] = -sign;
    ((q - e * t).length_squared(), Feature { w, dw, free })
}

/// The least of the candidates; `first` (an interior solution) wins ties.
fn least<R: Real, const N: usize>(first: Option<(R, Feature<R>)>, rest: [(R, Feature<R>); N]) -> Feature<R> {
    let mut best = first.unwrap_or(rest[0]);
    for c in rest {
        if c.0 < best.0 {
            best = c;
        }
    }
    best.1
}

/// Point–triangle minimiser for `y = [p, t0, t1, t2]` (relative positions).
fn triangle_feature<R: Real>(y: &[R::V3; 4]) -> Feature<R> {
    let (z, o) = (R::ZERO, R::ONE);
    let (e0, e1, q) = (y[2] - y[1], y[3] - y[1], y[0] - y[1]);
    let n = e0.cross(e1);
    let n2 = n.length_squared();
    let mut interior = None;
    if n2 > z {
        // Projection onto the plane: q = β1 e0 + β2 e1 + h n̂. Crossing with e1 (or e0) and
        // dotting with n isolates one coefficient; this is more accurate than the Gram system
        // for thin triangles because |n|² is not formed as a difference.
        let b1 = q.cross(e1).dot(n) / n2;
        let b2 = e0.cross(q).dot(n) / n2;
        if b1 >= z && b2 >= z && b1 + b2 <= o {
            let f = Feature { w: [o, b1 + b2 - o, -b1, -b2], dw: [[z, o, -o, z], [z, o, z, -o]], free: 2 };
            if n2 >= lit::<R>(WELL_CONDITIONED) * e0.length_squared() * e1.length_squared() {
                return f;
            }
            interior = Some((combine(&f.w, y).length_squared(), f));
        }
    }
    // Outside the face (or a thin or degenerate triangle): the minimum of a convex function over
    // the triangle lies on its boundary, i.e. on one of the three edges.
    let edge = |si, sj| point_segment(y, 0, si, sj, o);
    least(interior, [edge(1, 2), edge(2, 3), edge(3, 1)])
}

/// Edge–edge minimiser for `y = [a0, a1, b0, b1]` (relative positions).
fn edges_feature<R: Real>(y: &[R::V3; 4]) -> Feature<R> {
    let (z, o) = (R::ZERO, R::ONE);
    let (ea, eb, w0) = (y[1] - y[0], y[3] - y[2], y[2] - y[0]);
    let n = ea.cross(eb);
    let n2 = n.length_squared();
    let mut interior = None;
    if n2 > z {
        // P − Q = s ea − u eb − w0 must have no component in the plane of ea, eb: decomposing
        // w0 = s ea − u eb + h n̂ and crossing with eb (or ea) isolates s (or u).
        let s = w0.cross(eb).dot(n) / n2;
        let u = w0.cross(ea).dot(n) / n2;
        if s >= z && s <= o && u >= z && u <= o {
            let f = Feature { w: [o - s, s, u - o, -u], dw: [[-o, o, z, z], [z, z, o, -o]], free: 2 };
            if n2 >= lit::<R>(WELL_CONDITIONED) * ea.length_squared() * eb.length_squared() {
                return f;
            }
            interior = Some((combine(&f.w, y).length_squared(), f));
        }
    }
    // Otherwise (parallel, nearly parallel, zero-length or clamped) the minimum over the square
    // lies on one of its four sides: an end point of one segment against the other segment.
    least(
        interior,
        [
            point_segment(y, 0, 2, 3, o),
            point_segment(y, 1, 2, 3, o),
            point_segment(y, 2, 0, 1, -o),
            point_segment(y, 3, 0, 1, -o),
        ],
    )
}

/// `d²`, its gradient and exact Hessian for the region described by `f`.
///
/// In the region, `d²(x) = min_θ f(x, θ)` over the free parameters with `f = ‖r‖²`,
/// `r = Σ_k w_k(θ) x_k`. Envelope theorem: `∇_k d² = 2 w_k r`. Differentiating the optimality
/// condition `∂f/∂θ = 0` (implicit function theorem) gives the Schur complement
/// `H = f_xx − f_xθ f_θθ⁻¹ f_θx` with `f_{x_i x_j} = 2 w_i w_j I`, `t_a = ∂r/∂θ_a = Σ_k ∂w_k/∂θ_a x_k`,
/// `f_{x_k θ_a} = 2(∂w_k/∂θ_a r + w_k t_a)` and `f_{θ_a θ_b} = 2 t_a·t_b` (r is affine in θ).
#[cfg(test)]
fn distance2_derivatives<R: Real>(y: &[R::V3; 4], f: &Feature<R>) -> (R, [R; 12], [[R; 12]; 12]) {
    let (z, two) = (R::ZERO, lit::<R>(2.0));
    let r = combine(&f.w, y);
    let t = [combine(&f.dw[0], y), combine(&f.dw[1], y)];
    let mut grad = [z; 12];
    let mut hess = [[z; 12]; 12];
    for i in 0..4 {
        for c in 0..3 {
            grad[3 * i + c] = two * f.w[i] * r.at(c);
            for j in 0..4 {
                hess[3 * i + c][3 * j + c] = two * f.w[i] * f.w[j];
            }
        }
    }
    // (f_θθ)⁻¹. A free parameter only exists where its problem is strictly convex (a segment of
    // positive length, a non-degenerate triangle or non-parallel edges), so the guards below
    // never drop a term that belongs there.
    let mut inv = [[z; 2]; 2];
    match f.free {
        1 => {
            let tt = t[0].length_squared();
            if tt > z {
                inv[0][0] = R::ONE / (two * tt);
            }
        }
        2 => {
            let det = t[0].cross(t[1]).length_squared();
            if det > z {
                let k = R::ONE / (two * det);
                let off = -t[0].dot(t[1]) * k;
                inv = [[t[1].length_squared() * k, off], [off, t[0].length_squared() * k]];
            }
        }
        _ => {}
    }
    let cross: [[R::V3; 2]; 4] =
        core::array::from_fn(|k| core::array::from_fn(|a| (r * f.dw[a][k] + t[a] * f.w[k]) * two));
    for i in 0..4 {
        for j in 0..4 {
            for a in 0..f.free {
                for b in 0..f.free {
                    let (bi, bj) = (cross[i][a], cross[j][b]);
                    for c in 0..3 {
                        for e in 0..3 {
                            hess[3 * i + c][3 * j + e] -= inv[a][b] * bi.at(c) * bj.at(e);
                        }
                    }
                }
            }
        }
    }
    (r.length_squared(), grad, hess)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{DQuat, DVec3, Vec3A};

    use crate::test_rng::Rng;

    fn pt(x: &[DVec3; 4]) -> Closest<f64> {
        point_triangle::<f64>(x[0], x[1], x[2], x[3])
    }

    fn ee(x: &[DVec3; 4]) -> Closest<f64> {
        edge_edge::<f64>(x[0], x[1], x[2], x[3])
    }

    /// Minimum of a convex function on `[lo, hi]` by golden-section search (ends included, so a
    /// clamped minimiser is found exactly).
    fn golden(lo: f64, hi: f64, f: impl Fn(f64) -> f64) -> f64 {
        let g = (5f64.sqrt() - 1.0) / 2.0;
        let (mut a, mut b) = (lo, hi);
        let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
        let (mut fc, mut fd) = (f(c), f(d));
        for _ in 0..100 {
            if fc <= fd {
                (b, d, fd) = (d, c, fc);
                c = b - g * (b - a);
                fc = f(c);
            } else {
                (a, c, fc) = (c, d, fd);
                d = a + g * (b - a);
                fd = f(d);
            }
        }
        fc.min(fd).min(f(lo)).min(f(hi))
    }

    /// Brute-force point–triangle distance: nested golden sections over (β1, β2). Partial
    /// minimisation of a jointly convex function keeps the outer function convex.
    fn brute_pt(x: &[DVec3; 4]) -> f64 {
        let q = |b1: f64, b2: f64| x[1] * (1.0 - b1 - b2) + x[2] * b1 + x[3] * b2;
        golden(0.0, 1.0, |b1| golden(0.0, 1.0 - b1, |b2| (x[0] - q(b1, b2)).length_squared())).sqrt()
    }

    fn brute_ee(x: &[DVec3; 4]) -> f64 {
        let at = |a: DVec3, b: DVec3, s: f64| a + (b - a) * s;
        golden(0.0, 1.0, |s| golden(0.0, 1.0, |u| (at(x[0], x[1], s) - at(x[2], x[3], u)).length_squared())).sqrt()
    }

    /// Coarse grid over the domain: the exact distance may never exceed any sample.
    fn grid_min(x: &[DVec3; 4], triangle: bool) -> f64 {
        let n = 40;
        let mut best = f64::INFINITY;
        for i in 0..=n {
            for j in 0..=n {
                let (a, b) = (i as f64 / n as f64, j as f64 / n as f64);
                let r = if triangle {
                    if a + b > 1.0 {
                        continue;
                    }
                    x[0] - (x[1] * (1.0 - a - b) + x[2] * a + x[3] * b)
                } else {
                    (x[0] + (x[1] - x[0]) * a) - (x[2] + (x[3] - x[2]) * b)
                };
                best = best.min(r.length());
            }
        }
        best
    }

    fn scale(x: &[DVec3; 4]) -> f64 {
        x.iter().map(|p| (*p - x[0]).length()).fold(1.0, f64::max)
    }

    /// Checks a result against the brute-force minimum and for internal consistency: the weights
    /// form valid parameters and reproduce `P − Q = d n`, and the normal is a finite unit vector.
    fn check(x: &[DVec3; 4], triangle: bool) -> Closest<f64> {
        let c = if triangle { pt(x) } else { ee(x) };
        let (bf, tol) = (if triangle { brute_pt(x) } else { brute_ee(x) }, 1e-9 * scale(x));
        assert!((c.distance - bf).abs() <= tol, "{x:?}: distance {} vs brute force {bf}", c.distance);
        assert!(c.distance <= grid_min(x, triangle) + tol, "{x:?}: above a grid sample");
        assert!(c.normal.is_finite() && (c.normal.length() - 1.0).abs() < 1e-12, "{x:?}: normal {}", c.normal);
        let r: DVec3 = (0..4).map(|k| x[k] * c.weights[k]).sum();
        assert!((r - c.normal * c.distance).length() <= 1e-12 * scale(x), "{x:?}: weights disagree");
        let w = c.weights;
        let unit_interval = |v: f64| (0.0..=1.0).contains(&v);
        if triangle {
            assert!(w[0] == 1.0 && w[1..].iter().all(|b| unit_interval(-b)) && (w.iter().sum::<f64>()).abs() < 1e-12);
        } else {
            assert!(unit_interval(w[1]) && unit_interval(-w[3]) && (w[0] + w[1] - 1.0).abs() < 1e-15);
            assert!((w[2] + w[3] + 1.0).abs() < 1e-15);
        }
        c
    }

    /// A rigid motion, so canonical configurations stay in their region off the coordinate axes.
    fn place(x: [DVec3; 4]) -> [DVec3; 4] {
        let q = DQuat::from_axis_angle(DVec3::new(1.0, 2.0, 3.0).normalize(), 0.7);
        x.map(|p| q * p + DVec3::new(0.3, -2.0, 5.0))
    }

    fn v(x: f64, y: f64, z: f64) -> DVec3 {
        DVec3::new(x, y, z)
    }

    /// One point per Voronoi region of the triangle (0,0,0), (1,0,0), (0,1,0), with the region's
    /// free parameter count and the vertices carrying weight.
    fn triangle_regions() -> Vec<([DVec3; 4], usize, Vec<usize>)> {
        let t = [v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.0, 1.0, 0.0)];
        let with = |p: DVec3| [p, t[0], t[1], t[2]];
        vec![
            (with(v(0.2, 0.3, 0.5)), 2, vec![0, 1, 2, 3]),
            (with(v(0.5, -0.5, 0.3)), 1, vec![0, 1, 2]),
            (with(v(0.8, 0.8, 0.2)), 1, vec![0, 2, 3]),
            (with(v(-0.5, 0.4, -0.3)), 1, vec![0, 1, 3]),
            (with(v(-0.5, -0.5, 0.2)), 0, vec![0, 1]),
            (with(v(1.5, -0.2, 0.1)), 0, vec![0, 2]),
            (with(v(-0.2, 1.5, -0.4)), 0, vec![0, 3]),
        ]
    }

    /// Segment b against a = (0,0,0)–(1,0,0) for every region of the parameter square, with the
    /// expected (s, u) and free count.
    fn edge_regions() -> Vec<([DVec3; 4], (f64, f64), usize)> {
        let with = |b0: DVec3, b1: DVec3| [v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), b0, b1];
        vec![
            (with(v(0.3, -1.0, 0.5), v(0.6, 1.0, 0.5)), (0.45, 0.5), 2),
            (with(v(-1.0, -1.0, 0.5), v(-1.0, 1.0, 0.5)), (0.0, 0.5), 1),
            (with(v(2.0, -1.0, 0.5), v(2.0, 1.0, 0.5)), (1.0, 0.5), 1),
            (with(v(0.5, 1.0, 0.5), v(0.5, 2.0, 0.5)), (0.5, 0.0), 1),
            (with(v(0.5, 2.0, 0.5), v(0.5, 1.0, 0.5)), (0.5, 1.0), 1),
            (with(v(-1.0, 1.0, 0.5), v(-1.0, 2.0, 0.5)), (0.0, 0.0), 0),
            (with(v(2.0, 2.0, 0.5), v(2.0, 1.0, 0.5)), (1.0, 1.0), 0),
            (with(v(-1.0, 2.0, 0.5), v(-1.0, 1.0, 0.5)), (0.0, 1.0), 0),
            (with(v(2.0, 1.0, 0.5), v(2.0, 2.0, 0.5)), (1.0, 0.0), 0),
        ]
    }

    #[test]
    fn every_point_triangle_region() {
        for (x, free, support) in triangle_regions() {
            for x in [x, place(x)] {
                let c = check(&x, true);
                assert_eq!(triangle_feature::<f64>(&relative::<f64>(&x)).free, free, "{x:?}");
                for k in 0..4 {
                    assert_eq!(c.weights[k].abs() > 1e-12, support.contains(&k), "{x:?}: weights {:?}", c.weights);
                }
            }
        }
    }

    #[test]
    fn every_edge_edge_region() {
        for (x, (s, u), free) in edge_regions() {
            for x in [x, place(x)] {
                let c = check(&x, false);
                assert_eq!(edges_feature::<f64>(&relative::<f64>(&x)).free, free, "{x:?}");
                assert!(
                    (c.weights[1] - s).abs() < 1e-12 && (-c.weights[3] - u).abs() < 1e-12,
                    "{x:?}: {:?}",
                    c.weights
                );
            }
        }
    }

    /// Uniform random primitives, a quarter of them made degenerate on purpose.
    fn random_config(rng: &mut Rng) -> [DVec3; 4] {
        let mut x = [rng.vec(), rng.vec(), rng.vec(), rng.vec()];
        let l = rng.uniform() * 3.0 - 1.0;
        match (rng.uniform() * 16.0) as u32 {
            // Coincident triangle vertices; edges touching at an end point.
            0 => x[2] = x[1],
            // Collinear triangle.
            1 => x[3] = x[1] + (x[2] - x[1]) * l,
            // Parallel (or antiparallel) edges.
            2 => x[3] = x[2] + (x[1] - x[0]) * l,
            // Point in the triangle's plane.
            3 => x[0] = x[1] + (x[2] - x[1]) * l + (x[3] - x[1]) * rng.uniform(),
            // Zero-length edge.
            4 => x[1] = x[0],
            _ => {}
        }
        x
    }

    #[test]
    fn random_configurations_match_brute_force() {
        let mut rng = Rng(7);
        for _ in 0..1500 {
            let x = random_config(&mut rng);
            check(&x, true);
            check(&x, false);
        }
    }

    #[test]
    fn degenerate_triangles() {
        let o = v(0.0, 0.0, 0.0);
        let collinear = [o, v(1.0, 0.0, 0.0), v(2.0, 0.0, 0.0)];
        for (p, d) in [(v(0.5, 1.0, 0.0), 1.0), (v(3.0, 1.0, 0.0), 2f64.sqrt()), (v(1.5, 0.0, 0.0), 0.0)] {
            for t in [collinear, [collinear[2], collinear[0], collinear[1]]] {
                let c = check(&[p, t[0], t[1], t[2]], true);
                assert!((c.distance - d).abs() < 1e-12);
            }
        }
        let coincident = [v(0.0, 0.0, 0.0), v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0)];
        assert!(
            (check(&[v(0.5, 0.0, 2.0), coincident[0], coincident[1], coincident[2]], true).distance - 2.0).abs()
                < 1e-12
        );
        let p = v(1.0, 1.0, 1.0);
        assert_eq!(check(&[p, p, p, p], true).distance, 0.0);
        assert!((check(&[v(1.0, 3.0, 5.0), p, p, p], true).distance - 2f64.hypot(4.0)).abs() < 1e-12);
        // A sliver: the 2×2 solve is ill-conditioned, the boundary comparison keeps it exact.
        check(&[v(0.5, 0.3, 0.2), o, v(1.0, 0.0, 0.0), v(0.5, 1e-9, 0.0)], true);
    }

    #[test]
    fn points_on_the_triangle_have_zero_distance_and_a_unit_normal() {
        let t = [v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.0, 1.0, 0.0)];
        for p in [v(0.2, 0.3, 0.0), v(0.5, 0.0, 0.0), v(0.5, 0.5, 0.0), t[0], t[1], t[2]] {
            let c = check(&[p, t[0], t[1], t[2]], true);
            assert!(c.distance == 0.0 || c.distance < 1e-16);
            if c.distance == 0.0 {
                assert_eq!(c.normal.z.abs(), 1.0);
            }
        }
    }

    #[test]
    fn degenerate_edges() {
        let a = [v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0)];
        let cases = [
            ([v(0.5, 1.0, 0.0), v(1.5, 1.0, 0.0)], 1.0),         // parallel, overlapping
            ([v(1.5, 1.0, 0.0), v(0.5, 1.0, 0.0)], 1.0),         // antiparallel
            ([v(2.0, 1.0, 0.0), v(3.0, 1.0, 0.0)], 2f64.sqrt()), // parallel, disjoint
            ([v(0.5, 0.0, 0.0), v(1.5, 0.0, 0.0)], 0.0),         // collinear, overlapping
            ([v(3.0, 0.0, 0.0), v(2.0, 0.0, 0.0)], 1.0),         // collinear, disjoint
            ([v(0.5, 2.0, 0.0), v(0.5, 2.0, 0.0)], 2.0),         // zero-length b
            ([v(-1.0, -1e-7, 0.0), v(2.0, 2e-7, 0.0)], 0.0),     // nearly parallel, crossing
            ([v(-1.0, -1e-7, 1e-3), v(2.0, 2e-7, 1e-3)], 1e-3),  // nearly parallel, above
            ([v(-1.0, 1e-3, 0.0), v(2.0, 1e-3 + 1e-12, 0.0)], 1e-3), // nearly parallel, beside
        ];
        for (b, d) in cases {
            for x in [[a[0], a[1], b[0], b[1]], [b[0], b[1], a[0], a[1]]] {
                for x in [x, place(x)] {
                    let c = check(&x, false);
                    assert!((c.distance - d).abs() < 1e-9, "{x:?}: {} vs {d}", c.distance);
                }
            }
        }
        let p = v(0.3, 0.4, 0.5);
        assert!((check(&[p, p, v(1.3, 0.4, 0.5), v(1.3, 0.4, 0.5)], false).distance - 1.0).abs() < 1e-12);
        assert_eq!(check(&[p, p, p, p], false).distance, 0.0);
        assert!((check(&[p, p, v(0.3, -1.0, 1.5), v(0.3, 1.0, 1.5)], false).distance - 1.0).abs() < 1e-12);
    }

    /// Central differences of `d` against [`Closest::gradient`], and of the `d²` value and
    /// gradient against the analytic gradient and Hessian, relative error below 1e-6.
    fn check_derivatives(x: &[DVec3; 4], triangle: bool) {
        let dist = |x: &[DVec3; 4]| if triangle { pt(x) } else { ee(x) };
        let deriv = |x: &[DVec3; 4]| {
            if triangle {
                point_triangle_distance2_derivatives::<f64>(x)
            } else {
                edge_edge_distance2_derivatives::<f64>(x)
            }
        };
        let eps = 1e-6;
        let g = dist(x).gradient();
        let (value, g2, h2) = deriv(x);
        assert!((value - dist(x).distance.powi(2)).abs() < 1e-12);
        let gnorm = g.iter().map(|v| v.length_squared()).sum::<f64>().sqrt();
        let g2norm = g2.iter().map(|v| v * v).sum::<f64>().sqrt();
        let hnorm = h2.iter().flatten().map(|v| v * v).sum::<f64>().sqrt();
        for i in 0..12 {
            for j in 0..12 {
                assert!((h2[i][j] - h2[j][i]).abs() <= 1e-12 * hnorm, "Hessian not symmetric");
            }
            let (mut xp, mut xm) = (*x, *x);
            xp[i / 3][i % 3] += eps;
            xm[i / 3][i % 3] -= eps;
            let fd = (dist(&xp).distance - dist(&xm).distance) / (2.0 * eps);
            assert!((fd - g[i / 3][i % 3]).abs() <= 1e-6 * gnorm, "{x:?}: ∂d/∂x[{i}] {} vs fd {fd}", g[i / 3][i % 3]);
            let (vp, gp, _) = deriv(&xp);
            let (vm, gm, _) = deriv(&xm);
            let fd = (vp - vm) / (2.0 * eps);
            assert!((fd - g2[i]).abs() <= 1e-6 * g2norm, "{x:?}: ∂d²/∂x[{i}] {} vs fd {fd}", g2[i]);
            for j in 0..12 {
                let fd = (gp[j] - gm[j]) / (2.0 * eps);
                assert!((fd - h2[j][i]).abs() <= 1e-6 * hnorm, "{x:?}: H[{j}][{i}] {} vs fd {fd}", h2[j][i]);
            }
        }
    }

    #[test]
    fn derivatives_match_finite_differences_in_every_region() {
        let deform = |x, seed| crate::math::fd::deform(place(x), 0.05, seed);
        for (x, free, _) in triangle_regions() {
            // The jitter must not move the closest point into another region.
            let same = (0..4)
                .map(|seed| deform(x, seed))
                .filter(|x| triangle_feature::<f64>(&relative::<f64>(x)).free == free);
            assert!(same.map(|x| check_derivatives(&x, true)).count() > 0);
        }
        for (x, _, free) in edge_regions() {
            let same =
                (0..4).map(|seed| deform(x, seed)).filter(|x| edges_feature::<f64>(&relative::<f64>(x)).free == free);
            assert!(same.map(|x| check_derivatives(&x, false)).count() > 0);
        }
    }

    #[test]
    fn f32_agrees_with_f64() {
        let mut rng = Rng(11);
        let f = |v: DVec3| Vec3A::new(v.x as f32, v.y as f32, v.z as f32);
        for _ in 0..3000 {
            let x = random_config(&mut rng);
            let y = x.map(f);
            let d32 = point_triangle::<f32>(y[0], y[1], y[2], y[3]);
            let e32 = edge_edge::<f32>(y[0], y[1], y[2], y[3]);
            for (c32, c64) in [(d32, pt(&x)), (e32, ee(&x))] {
                assert!(
                    (c32.distance as f64 - c64.distance).abs() < 1e-5,
                    "{x:?}: {} vs {}",
                    c32.distance,
                    c64.distance
                );
                assert!(c32.normal.is_finite() && (c32.normal.length() - 1.0).abs() < 1e-5);
                if c64.distance > 1e-3 {
                    assert!((c32.normal.as_dvec3() - c64.normal).length() < 1e-2, "{x:?}: normals differ");
                }
            }
        }
    }
}
