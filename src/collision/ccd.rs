//! Additive continuous collision detection (ACCD, Li et al. 2021; docs/algorithms.md §7.2): a
//! conservative time of impact for a point–triangle or edge–edge pair under linear vertex
//! motion, built only from the exact distance of [`crate::math::distance`].
//!
//! Why it is conservative: after removing the common translation (which cannot change a
//! distance), the closest points of the pair approach each other at most at speed
//! `l_p = max_A ‖p_k‖ + max_B ‖p_k‖`, the largest vertex speed on each side, because every
//! point of a primitive moves with a convex combination of its vertices' velocities. So from a
//! time where the gap `d − ξ` is `G`, advancing by `0.9 G / l_p` keeps the gap above `0.1 G` over
//! the whole advance. Repeating that walks forward until the gap falls below the fraction `s` of
//! the initial one; the time reached before that last step is returned.

use crate::math::distance::{edge_edge, point_triangle};
use crate::math::{Real, Vector3, lit};

/// Settings of additive CCD.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CcdParams<R> {
    /// Minimum separation ξ \[m\]: the returned time keeps the primitives at least this far apart.
    pub min_separation: R,
    /// Fraction `s` of the initial gap `d0 − ξ` that the returned time keeps \[-\] (0.1 in the
    /// paper): the march stops once the gap falls below it and returns the time before.
    pub safety: R,
    /// Iteration cap; on exhaustion the current (still safe) time is returned.
    pub max_iterations: u32,
}

impl Default for CcdParams<f32> {
    /// ξ = 1e-5 m: far above f32 rounding of positions within a few metres of the origin
    /// (~2.4e-7 m at 2 m), so rounding cannot turn a certified gap into a crossing. `s = 0.1`
    /// and 64 iterations as in the paper and docs/algorithms.md §7.2.
    fn default() -> Self {
        Self { min_separation: 1e-5, safety: 0.1, max_iterations: 64 }
    }
}

impl Default for CcdParams<f64> {
    /// The same values as the f32 default, so host-side checks agree with the solver.
    fn default() -> Self {
        Self { min_separation: 1e-5, safety: 0.1, max_iterations: 64 }
    }
}

/// Earliest time `t ∈ [0, t_max]` \[-\] (fraction of the step) at which point `x[0]` may come
/// within ξ of the triangle `(x[1], x[2], x[3])` \[m\], each vertex moving as `x_k + t dx_k`
/// (`dx` \[m\] per unit time). Some(0) if they already are that close; None if the motion over
/// `[0, t_max]` is certified to stay farther apart than ξ. Some(t) is conservative, not a proof
/// of contact: the march also stops once the gap `d − ξ` falls below `s` of its initial value, or
/// when the iteration cap is reached, and the pair is farther than ξ apart over all of `[0, t]`.
pub fn point_triangle_toi<R: Real>(x: &[R::V3; 4], dx: &[R::V3; 4], params: &CcdParams<R>, t_max: R) -> Option<R> {
    let distance = |y: &[R::V3; 4]| point_triangle::<R>(y[0], y[1], y[2], y[3]).distance;
    additive(x, dx, params, t_max, 1, distance(x), distance)
}

/// [`point_triangle_toi`] for a pair whose distance at `x` the caller has computed, `d0`.
pub fn point_triangle_toi_from<R: Real>(
    x: &[R::V3; 4],
    dx: &[R::V3; 4],
    d0: R,
    params: &CcdParams<R>,
    t_max: R,
) -> Option<R> {
    additive(x, dx, params, t_max, 1, d0, |y| point_triangle::<R>(y[0], y[1], y[2], y[3]).distance)
}

/// Earliest time `t ∈ [0, t_max]` \[-\] at which edge `(x[0], x[1])` may come within ξ of edge
/// `(x[2], x[3])` \[m\] under the linear motion `x_k + t dx_k`; Some(0) if already that close,
/// None if the motion over `[0, t_max]` is certified separated by more than ξ. Some(t) is
/// conservative in the same way as [`point_triangle_toi`].
pub fn edge_edge_toi<R: Real>(x: &[R::V3; 4], dx: &[R::V3; 4], params: &CcdParams<R>, t_max: R) -> Option<R> {
    let distance = |y: &[R::V3; 4]| edge_edge::<R>(y[0], y[1], y[2], y[3]).distance;
    additive(x, dx, params, t_max, 2, distance(x), distance)
}

/// [`edge_edge_toi`] for a pair whose distance at `x` the caller has computed, `d0`.
pub fn edge_edge_toi_from<R: Real>(
    x: &[R::V3; 4],
    dx: &[R::V3; 4],
    d0: R,
    params: &CcdParams<R>,
    t_max: R,
) -> Option<R> {
    additive(x, dx, params, t_max, 2, d0, |y| edge_edge::<R>(y[0], y[1], y[2], y[3]).distance)
}

/// The ACCD march from distance `d0` at `x`. Vertices `0..split` form the first primitive,
/// `split..4` the second.
fn additive<R: Real>(
    x: &[R::V3; 4],
    dx: &[R::V3; 4],
    params: &CcdParams<R>,
    t_max: R,
    split: usize,
    d0: R,
    distance: impl Fn(&[R::V3; 4]) -> R,
) -> Option<R> {
    let (zero, xi, s) = (R::ZERO, params.min_separation, params.safety);
    // `!(d > ξ)` also catches a NaN distance: report contact now rather than certify garbage.
    let gap0 = d0 - xi;
    if !(gap0 > zero) {
        return Some(zero);
    }
    let mean = (dx[0] + dx[1] + dx[2] + dx[3]) * lit::<R>(0.25);
    let p = dx.map(|v| v - mean);
    let speed = |range: core::ops::Range<usize>| range.map(|k| p[k].length()).fold(zero, R::max);
    let lp = speed(0..split) + speed(split..4);
    if !lp.is_finite() {
        return Some(zero);
    }
    if lp == zero {
        // A common translation (or no motion at all) keeps every distance.
        return None;
    }
    let stop = s * gap0;
    let mut t = zero;
    // The first advance may use up (1 − s) of the initial gap: it cannot end below the stop
    // level, so it never needs a check.
    let mut advance = (R::ONE - s) * gap0 / lp;
    if advance > t_max {
        // The whole motion fits in the first advance: certified without a check. Most pairs
        // a sweep visits end here (a stiff ball's own pairs as it flies).
        return None;
    }
    for _ in 0..params.max_iterations {
        let ahead = t + advance;
        let y: [R::V3; 4] = core::array::from_fn(|k| x[k] + p[k] * ahead);
        let gap = distance(&y) - xi;
        // `t` is certified; `ahead` is too (the advance keeps 10 % of the gap), but once the gap
        // there is below the stop level the pair is about to touch and `t` is returned. A gap
        // that is not positive (rounding on a tiny gap, or NaN) also stops the march at `t`.
        if !(gap > zero) || (t > zero && gap < stop) {
            return Some(t);
        }
        t = ahead;
        if t > t_max {
            return None;
        }
        // Leave 10 % of the current gap: advancing by the full gap could reach it exactly.
        advance = lit::<R>(0.9) * gap / lp;
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::distance;
    use glam::{DQuat, DVec3, Vec3A};

    use crate::test_rng::Rng;

    #[derive(Clone, Copy, Debug)]
    enum Kind {
        PointTriangle,
        EdgeEdge,
    }

    impl Kind {
        fn distance(self, x: &[DVec3; 4]) -> f64 {
            match self {
                Kind::PointTriangle => distance::point_triangle::<f64>(x[0], x[1], x[2], x[3]).distance,
                Kind::EdgeEdge => distance::edge_edge::<f64>(x[0], x[1], x[2], x[3]).distance,
            }
        }
        fn toi<R: Real>(self, x: &[R::V3; 4], dx: &[R::V3; 4], params: &CcdParams<R>, t_max: R) -> Option<R> {
            match self {
                Kind::PointTriangle => point_triangle_toi(x, dx, params, t_max),
                Kind::EdgeEdge => edge_edge_toi(x, dx, params, t_max),
            }
        }
    }

    const SUBSTEPS: usize = 10_000;
    /// An iteration cap the tests never reach, to see the march's own stopping rule.
    const UNCAPPED: u32 = 10_000_000;

    fn at(x: &[DVec3; 4], dx: &[DVec3; 4], t: f64) -> [DVec3; 4] {
        core::array::from_fn(|k| x[k] + dx[k] * t)
    }

    /// Distances at `SUBSTEPS + 1` evenly spaced times of `[0, t_max]`.
    fn sweep(kind: Kind, x: &[DVec3; 4], dx: &[DVec3; 4], t_max: f64) -> Vec<(f64, f64)> {
        (0..=SUBSTEPS)
            .map(|i| {
                let t = t_max * i as f64 / SUBSTEPS as f64;
                (t, kind.distance(&at(x, dx, t)))
            })
            .collect()
    }

    /// Checks one answer against the sampled motion: (1) no sample up to it comes within
    /// `floor·ξ`; (2) it is no later than the first sample within ξ.
    fn check(kind: Kind, samples: &[(f64, f64)], x: &[DVec3; 4], toi: Option<f64>, xi: f64, floor: f64) {
        if samples[0].1 <= xi {
            assert_eq!(toi, Some(0.0), "{kind:?} {x:?}: already within ξ");
            return;
        }
        let reach = toi.unwrap_or(samples[samples.len() - 1].0);
        for &(t, d) in samples.iter().filter(|s| s.0 <= reach) {
            assert!(d > floor * xi, "{kind:?} {x:?}: distance {d:e} at t = {t} before the answer {toi:?}");
        }
        if let Some(&(tc, _)) = samples.iter().find(|s| s.1 <= xi) {
            assert!(toi.is_some_and(|t| t <= tc), "{kind:?} {x:?}: contact at {tc}, answer {toi:?}");
        }
    }

    /// Runs the capped (default) and the uncapped march in f64 and checks both against the
    /// sampled motion; for the uncapped one also (3): the gap at its answer lies between
    /// `s·(d0 − ξ)` and `d0 − ξ`, neither unsafe nor needlessly early. Returns the uncapped answer.
    fn run(kind: Kind, x: &[DVec3; 4], dx: &[DVec3; 4], xi: f64, t_max: f64) -> Option<f64> {
        let samples = sweep(kind, x, dx, t_max);
        let capped = CcdParams { min_separation: xi, ..CcdParams::<f64>::default() };
        let uncapped = CcdParams { max_iterations: UNCAPPED, ..capped };
        let toi = kind.toi::<f64>(x, dx, &capped, t_max);
        check(kind, &samples, x, toi, xi, 1.0 - 1e-9);
        let toi = kind.toi::<f64>(x, dx, &uncapped, t_max);
        check(kind, &samples, x, toi, xi, 1.0 - 1e-9);
        if let Some(t) = toi.filter(|&t| t > 0.0) {
            let (d0, d) = (kind.distance(x), kind.distance(&at(x, dx, t)));
            let gap0 = d0 - xi;
            assert!(d - xi < gap0 * (1.0 + 1e-9), "{kind:?} {x:?}: gap {:e} at {t} not below {gap0:e}", d - xi);
            assert!(d - xi >= 0.1 * gap0 * (1.0 - 1e-6), "{kind:?} {x:?}: gap {:e} at {t} below s·{gap0:e}", d - xi);
        }
        toi
    }

    /// Random motions; half are aimed so that the pair meets exactly at a random time.
    fn random_motion(kind: Kind, rng: &mut Rng) -> ([DVec3; 4], [DVec3; 4]) {
        let x = [rng.vec(), rng.vec(), rng.vec(), rng.vec()];
        let mut dx = [rng.vec() * 2.0, rng.vec() * 2.0, rng.vec() * 2.0, rng.vec() * 2.0];
        if rng.uniform() < 0.5 {
            let hit = 0.05 + 0.9 * rng.uniform();
            let (a, b) = (0.1 + 0.8 * rng.uniform(), 0.1 + 0.8 * rng.uniform());
            let y = at(&x, &dx, hit);
            match kind {
                Kind::PointTriangle => {
                    // The point passes through the triangle's point with barycentrics (1 − a − b, a, b) at time `hit`.
                    let (a, b) = (a * 0.5, b * 0.5);
                    let q = y[1] * (1.0 - a - b) + y[2] * a + y[3] * b;
                    dx[0] = (q - x[0]) / hit;
                }
                Kind::EdgeEdge => {
                    // b1 moves so that b(u = b) meets a(s = a) at time `hit`.
                    let p = y[0] * (1.0 - a) + y[1] * a;
                    let b1 = (p - y[2] * (1.0 - b)) / b;
                    dx[3] = (b1 - x[3]) / hit;
                }
            }
        }
        (x, dx)
    }

    #[test]
    fn random_motions_against_brute_force() {
        let mut rng = Rng(3);
        let mut hits = 0;
        for i in 0..1200 {
            for kind in [Kind::PointTriangle, Kind::EdgeEdge] {
                let (x, dx) = random_motion(kind, &mut rng);
                let xi = [1e-5, 1e-3, 3e-2][i % 3];
                hits += run(kind, &x, &dx, xi, 1.0).is_some() as u32;
            }
        }
        // The aimed half must actually exercise the contact branch.
        assert!(hits > 1200, "only {hits} contacts");
    }

    #[test]
    fn f32_answers_are_conservative_against_f64() {
        let mut rng = Rng(5);
        let params = CcdParams::<f32>::default();
        let f = |v: DVec3| Vec3A::new(v.x as f32, v.y as f32, v.z as f32);
        for _ in 0..400 {
            for kind in [Kind::PointTriangle, Kind::EdgeEdge] {
                let (x, dx) = random_motion(kind, &mut rng);
                // Run the f64 reference on exactly the positions the f32 march saw.
                let (x32, dx32) = (x.map(f), dx.map(f));
                let (x, dx) = (x32.map(|v| v.as_dvec3()), dx32.map(|v| v.as_dvec3()));
                let toi = kind.toi::<f32>(&x32, &dx32, &params, 1.0).map(f64::from);
                check(kind, &sweep(kind, &x, &dx, 1.0), &x, toi, 1e-5, 0.5);
            }
        }
    }

    fn v(x: f64, y: f64, z: f64) -> DVec3 {
        DVec3::new(x, y, z)
    }

    const XI: f64 = 1e-5;
    const TRIANGLE: [DVec3; 3] = [DVec3::new(0.0, 0.0, 0.0), DVec3::new(1.0, 0.0, 0.0), DVec3::new(0.0, 1.0, 0.0)];

    fn point_and_triangle(p: DVec3) -> [DVec3; 4] {
        [p, TRIANGLE[0], TRIANGLE[1], TRIANGLE[2]]
    }

    /// An answer in `(lo·t_c, t_c]`: safe and not far before the true contact at `t_c`. Head-on
    /// approaches close at the bound speed `l_p` and stop within the last 10 % of the gap; oblique
    /// ones close slower than `l_p` and stop earlier.
    fn assert_near(toi: Option<f64>, tc: f64, lo: f64) {
        assert!(toi.is_some_and(|t| t <= tc && t > lo * tc), "answer {toi:?}, contact at {tc}");
    }

    #[test]
    fn head_on_point_into_the_triangle() {
        let (x, dx) =
            (point_and_triangle(v(0.2, 0.2, 1.0)), [v(0.0, 0.0, -2.0), DVec3::ZERO, DVec3::ZERO, DVec3::ZERO]);
        assert_near(run(Kind::PointTriangle, &x, &dx, XI, 1.0), (1.0 - XI) / 2.0, 0.8);
        // Contact after t_max: certified free up to t_max.
        assert_eq!(run(Kind::PointTriangle, &x, &dx, XI, 0.3), None);
    }

    #[test]
    fn parallel_edges_approach() {
        let x = [v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.0, 1.0, 0.0), v(1.0, 1.0, 0.0)];
        let dx = [DVec3::ZERO, DVec3::ZERO, v(0.0, -2.0, 0.0), v(0.0, -2.0, 0.0)];
        assert_near(run(Kind::EdgeEdge, &x, &dx, XI, 1.0), (1.0 - XI) / 2.0, 0.8);
        // Shifted along their line, overlapping only partly.
        let x = [x[0], x[1], x[2] + v(0.7, 0.0, 0.0), x[3] + v(0.7, 0.0, 0.0)];
        assert_near(run(Kind::EdgeEdge, &x, &dx, XI, 1.0), (1.0 - XI) / 2.0, 0.8);
    }

    #[test]
    fn edge_crosses_edge_at_half_time() {
        let x = [v(-1.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.0, -1.0, 1.0), v(0.0, 1.0, 1.0)];
        let dx = [DVec3::ZERO, DVec3::ZERO, v(0.0, 0.0, -2.0), v(0.0, 0.0, -2.0)];
        assert_near(run(Kind::EdgeEdge, &x, &dx, XI, 1.0), (1.0 - XI) / 2.0, 0.8);
    }

    #[test]
    fn coplanar_point_runs_into_an_edge() {
        // In the triangle's plane, reaching the hypotenuse x + y = 1 at t = 0.6, at 45°.
        let (x, dx) =
            (point_and_triangle(v(2.0, 0.2, 0.0)), [v(-2.0, 0.0, 0.0), DVec3::ZERO, DVec3::ZERO, DVec3::ZERO]);
        assert_near(run(Kind::PointTriangle, &x, &dx, XI, 1.0), 0.6 - XI / 2f64.sqrt(), 0.7);
    }

    #[test]
    fn sliding_past_without_contact() {
        // Gliding 1 mm above the face, and in the plane 0.1 m beside an edge: never within ξ,
        // and the gap never drops below s of its start either (which would stop the march: ACCD
        // answers "may touch" once most of the initial gap is gone). The uncapped march
        // certifies the whole step; the capped one may stop early, safely.
        for (p, dp) in [(v(0.1, 0.2, 1e-3), v(0.5, 0.0, 0.0)), (v(-0.5, -0.1, 0.0), v(2.0, 0.0, 0.0))] {
            let dx = [dp, DVec3::ZERO, DVec3::ZERO, DVec3::ZERO];
            assert_eq!(run(Kind::PointTriangle, &point_and_triangle(p), &dx, XI, 1.0), None);
        }
        // Edges sliding along each other 1 mm apart.
        let x = [v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(-1.0, 1e-3, 0.0), v(0.0, 1e-3, 0.0)];
        let dx = [DVec3::ZERO, DVec3::ZERO, v(2.0, 0.0, 0.0), v(2.0, 0.0, 0.0)];
        assert_eq!(run(Kind::EdgeEdge, &x, &dx, XI, 1.0), None);
    }

    #[test]
    fn touching_at_the_start() {
        let still = [DVec3::ZERO; 4];
        let away = [v(0.0, 0.0, 1.0), DVec3::ZERO, DVec3::ZERO, DVec3::ZERO];
        for dx in [still, away] {
            assert_eq!(run(Kind::PointTriangle, &point_and_triangle(v(0.2, 0.2, 0.0)), &dx, XI, 1.0), Some(0.0));
            assert_eq!(run(Kind::PointTriangle, &point_and_triangle(v(0.2, 0.2, 0.5 * XI)), &dx, XI, 1.0), Some(0.0));
        }
        let x = [v(-1.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.0, -1.0, 0.0), v(0.0, 1.0, 0.0)];
        assert_eq!(run(Kind::EdgeEdge, &x, &[v(0.0, 0.0, 1.0); 4], XI, 1.0), Some(0.0));
    }

    #[test]
    fn zero_motion_and_common_translation() {
        let x = point_and_triangle(v(0.2, 0.2, 0.5));
        for dx in [[DVec3::ZERO; 4], [v(0.3, -4.0, 7.0); 4]] {
            assert_eq!(run(Kind::PointTriangle, &x, &dx, XI, 1.0), None);
            let y = [v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), v(0.5, -1.0, 0.5), v(0.5, 1.0, 0.5)];
            assert_eq!(run(Kind::EdgeEdge, &y, &dx, XI, 1.0), None);
        }
    }

    #[test]
    fn rotations_approximated_by_linear_vertex_motion() {
        for (i, angle) in [0.3f64, 1.0, 2.0, 3.0].into_iter().enumerate() {
            let q = DQuat::from_axis_angle(v(0.2, 0.3, 1.0).normalize(), angle);
            // The triangle spins about its corner, sweeping over a point above its plane.
            let c = v(0.0, 0.0, 0.0);
            let x = point_and_triangle(v(0.6, 0.6, 0.05 * i as f64));
            let dx = core::array::from_fn(|k| if k == 0 { DVec3::ZERO } else { q * (x[k] - c) + c - x[k] });
            run(Kind::PointTriangle, &x, &dx, XI, 1.0);
            // Edge b spins about its midpoint above edge a.
            let (m, h) = (v(0.5, 0.0, 0.02 * i as f64), v(0.0, 0.0, 0.0));
            let x = [v(0.0, 0.0, 0.0), v(1.0, 0.0, 0.0), m + v(-0.5, 0.5, 0.0), m + v(0.5, 0.5, 0.0)];
            let dx = core::array::from_fn(|k| if k < 2 { h } else { q * (x[k] - m) + m - x[k] });
            run(Kind::EdgeEdge, &x, &dx, XI, 1.0);
        }
    }

    #[test]
    fn iteration_cap_returns_a_safe_time() {
        // Gliding 1 mm above the face needs about 1100 advances; with 64 the march stops early
        // and the time it returns must still be safe.
        let (x, dx) =
            (point_and_triangle(v(0.1, 0.2, 1e-3)), [v(0.5, 0.0, 0.0), DVec3::ZERO, DVec3::ZERO, DVec3::ZERO]);
        let toi = point_triangle_toi::<f64>(&x, &dx, &CcdParams::default(), 1.0);
        assert!(toi.is_some_and(|t| t > 0.0 && t < 1.0), "{toi:?}");
        check(Kind::PointTriangle, &sweep(Kind::PointTriangle, &x, &dx, 1.0), &x, toi, XI, 1.0 - 1e-9);
    }
}
