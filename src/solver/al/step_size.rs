//! `MaxStepSize` (\[ALPF\] §4, docs/algorithms.md §4.4): the largest fraction of the move from the safe
//! iterate `x` towards the solver's target `x̂` that stays intersection- and inversion-free,
//! and the pairs that limited it (the active-set update reuses them instead of running CCD
//! twice).

use glam::{DMat3, DVec3};

use crate::collision::Obstacle;
use crate::collision::ccd::{CcdParams, edge_edge_toi_from, point_triangle_toi_from};
use crate::collision::surface_pairs::PAIR_POINT_TRIANGLE;
use crate::collision::swept::{
    PAIR_OBSTACLE, PAIR_OBSTACLE_EDGE, PairKey, SweptPairs, TOUCHING_SHARE, edge_obstacle_toi, edge_path_clear,
    obstacle_toi, pair_motion,
};
use crate::material::tet::cofactor;
use crate::math::distance::{edge_edge, point_triangle};
use crate::state::SimState;

/// Minimum separation the fallback keeps between primitives \[m\]: ten times below the fast
/// path's, so a state the fast path accepted (certified to ξ = 1e-5 m in f32) is safe here too.
pub(crate) const MIN_SEPARATION: f64 = 1e-6;

/// What limits a step.
pub(crate) struct StepLimits<'a> {
    pub st: &'a SimState,
    pub obstacles: &'a [Obstacle],
    /// Vertices that move.
    pub moves: &'a [bool],
    /// Vertices solved (obstacle pairs are only tested for these: kinematic vertices follow
    /// their targets).
    pub solved: &'a [bool],
    /// Surface pairs (body–body and self contact) are constraints; off, only obstacles are.
    pub surface_pairs: bool,
    /// Surface edges against obstacles with edges or curved faces are constraints
    /// ([`PAIR_OBSTACLE_EDGE`]); off, only vertices are held out of obstacles.
    pub obstacle_edges: bool,
    /// Tets whose volume ratio `J` must stay at or above `j_min`.
    pub tets: &'a [u32],
    pub j_min: f64,
}

/// The largest `α ∈ [0, 1]` such that every point of `x + [0, α](x̂ − x)` keeps pairs apart and
/// tets above `j_min`, and every pair CCD flagged on the way, with its time of impact, in `hits`.
pub(crate) fn max_step(
    lim: &StepLimits<'_>,
    x: &[DVec3],
    xh: &[DVec3],
    swept: &mut SweptPairs,
    hits: &mut Vec<(PairKey, f64)>,
) -> f64 {
    let params = CcdParams::<f64> { min_separation: MIN_SEPARATION, ..CcdParams::default() };
    max_step_with(lim, x, xh, swept, hits, params)
}

/// [`max_step`] with the CCD's separation ξ and safety share `params` (the step keeps each
/// pair at least ξ and that share of its approach apart).
pub(crate) fn max_step_with(
    lim: &StepLimits<'_>,
    x: &[DVec3],
    xh: &[DVec3],
    swept: &mut SweptPairs,
    hits: &mut Vec<(PairKey, f64)>,
    params: CcdParams<f64>,
) -> f64 {
    hits.clear();
    let (mut obstacle_hits, mut edge_hits, mut touching) = (Vec::new(), Vec::new(), Vec::new());
    swept.visit(
        lim.st,
        lim.obstacles,
        (x, xh),
        (lim.moves, lim.surface_pairs),
        params.min_separation,
        |key| {
            let (p, dp) = pair_motion(&key, x, xh);
            let d0 = if key.kind == PAIR_POINT_TRIANGLE {
                point_triangle::<f64>(p[0], p[1], p[2], p[3]).distance
            } else {
                edge_edge::<f64>(p[0], p[1], p[2], p[3]).distance
            };
            // A pair the safe iterate holds closer than ξ (rounding of an accepted state) may
            // not come closer, but may separate.
            let params = CcdParams { min_separation: params.min_separation.min(0.5 * d0), ..params };
            let toi = if key.kind == PAIR_POINT_TRIANGLE {
                point_triangle_toi_from::<f64>(&p, &dp, d0, &params, 1.0)
            } else {
                edge_edge_toi_from::<f64>(&p, &dp, d0, &params, 1.0)
            };
            if let Some(t) = toi {
                hits.push((key, t));
            }
        },
        |v, k| {
            if !lim.solved[v as usize] {
                return;
            }
            let o = &lim.obstacles[k as usize];
            let (a, b) = (x[v as usize], xh[v as usize]);
            if let Some(t) = obstacle_toi(o, a, b, params.min_separation, params.safety) {
                obstacle_hits.push((PairKey { kind: PAIR_OBSTACLE, vertices: [v, k, u32::MAX, u32::MAX] }, t));
            }
        },
        |e, k| {
            let [a, b] = lim.st.surface_edges[e as usize];
            if !lim.obstacle_edges || !(lim.solved[a as usize] || lim.solved[b as usize]) {
                return;
            }
            let o = &lim.obstacles[k as usize];
            let (from, to) = ([x[a as usize], x[b as usize]], [xh[a as usize], xh[b as usize]]);
            // A pinned end inside the obstacle is where its pin put it: the edge could not leave
            // (its free end's share of the gradient vanishes there), and would hold the island.
            let pinned_inside =
                |v: u32, p: DVec3| !lim.solved[v as usize] && o.signed_distance(glam::Vec3A::from(p.as_vec3())).0 < 0.0;
            if [(a, 0), (b, 1)].iter().any(|&(v, i)| pinned_inside(v, from[i]) || pinned_inside(v, to[i])) {
                return;
            }
            let (toi, floor) = edge_obstacle_toi(o, from, to, params.min_separation, params.safety);
            if let Some(t) = toi {
                edge_hits.push((PairKey { kind: PAIR_OBSTACLE_EDGE, vertices: [a, b, k, u32::MAX] }, t));
            }
            if let Some(floor) = floor {
                touching.push((k, from, to, floor));
            }
        },
    );
    hits.append(&mut obstacle_hits);
    hits.append(&mut edge_hits);
    let mut alpha = hits.iter().map(|h| h.1).fold(1.0f64, f64::min);
    for &e in lim.tets {
        let t = &lim.st.tets[e as usize];
        alpha = alpha.min(tet_limit(t.vertices.map(|v| (x[v as usize], xh[v as usize])), t.dm_inv(), lim.j_min, alpha));
    }
    // A touching edge's path was sampled at its own shares only: the step taken, if shorter, is
    // sampled again, and halved until it keeps every such edge at its floor.
    let clear = |alpha: f64| {
        touching.iter().all(|&(k, from, to, floor)| edge_path_clear(&lim.obstacles[k as usize], from, to, alpha, floor))
    };
    while alpha > 0.0 && !clear(alpha) {
        alpha = if alpha > TOUCHING_SHARE { 0.5 * alpha } else { 0.0 };
    }
    alpha
}

/// Share of its volume ratio a tet that starts below `j_min` keeps in a step (`tet_limit`).
pub(crate) const START_KEPT: f64 = 0.999;

/// `det(A + αB)` as a cubic's coefficients.
fn det_cubic(a: &DMat3, b: &DMat3) -> [f64; 4] {
    let frob = |m: &DMat3, n: &DMat3| (0..3).map(|i| m.col(i).dot(n.col(i))).sum::<f64>();
    [a.determinant(), frob(&cofactor::<f64>(a), b), frob(&cofactor::<f64>(b), a), b.determinant()]
}

/// Largest `α' ≤ alpha` at which the tet's volume ratio `J = det(D_s) det(D_m⁻¹)` is still at
/// least `j_min` all along `[0, α']` (vertices `(x, x̂)` moving linearly). `J` is a cubic in α:
/// its monotone pieces (split at the roots of its derivative) are searched in order and the
/// first crossing is bracketed by bisection. A tet that starts below `j_min` (rounding leaves
/// one held at `j_min` a hair under it) keeps `START_KEPT` of its `J` in the iteration: left
/// unlimited, a dented wall's flattest tets, at 0.0079–0.00999997, inverted in the next
/// iterate; allowed half of their own `J`, tets held there halved it every iteration to 1e-9,
/// which f32 read as inverted; allowed none of it, a tet that merely stays put would stop the
/// whole island (the limits' strict comparisons). One that starts inverted does not limit.
pub(crate) fn tet_limit(v: [(DVec3, DVec3); 4], dm_inv: glam::Mat3A, j_min: f64, alpha: f64) -> f64 {
    let ds = |p: [DVec3; 4]| DMat3::from_cols(p[1] - p[0], p[2] - p[0], p[3] - p[0]);
    let a = ds(v.map(|p| p.0));
    let b = ds(v.map(|p| p.1)) - a;
    let scale = glam::Mat3::from(dm_inv).as_dmat3().determinant();
    let c = det_cubic(&a, &b).map(|k| k * scale);
    let j = |s: f64| c[0] + s * (c[1] + s * (c[2] + s * c[3]));
    let j_min = match j(0.0) {
        j0 if j0 > j_min => j_min,
        j0 if j0 > 0.0 => START_KEPT * j0,
        _ => return alpha,
    };
    // Critical points of J in (0, alpha).
    let mut cuts = vec![0.0];
    let (qa, qb, qc) = (3.0 * c[3], 2.0 * c[2], c[1]);
    let mut roots = Vec::new();
    if qa.abs() > 1e-300 {
        let disc = qb * qb - 4.0 * qa * qc;
        if disc >= 0.0 {
            let r = disc.sqrt();
            roots.extend([(-qb - r) / (2.0 * qa), (-qb + r) / (2.0 * qa)]);
        }
    } else if qb.abs() > 1e-300 {
        roots.push(-qc / qb);
    }
    roots.sort_by(f64::total_cmp);
    cuts.extend(roots.into_iter().filter(|&r| r > 0.0 && r < alpha));
    cuts.push(alpha);
    for w in cuts.windows(2) {
        let (mut lo, mut hi) = (w[0], w[1]);
        if j(hi) > j_min {
            continue;
        }
        // J is monotone on [lo, hi], above j_min at lo and not above at hi.
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if j(mid) > j_min { lo = mid } else { hi = mid }
        }
        return lo;
    }
    alpha
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tet_flattened_through_its_base_stops_above_j_min() {
        // Unit right tet; the apex moves from z = 1 to z = −1: J goes 1 → −1 linearly and
        // reaches 0.1 at α = 0.45.
        let rest = [DVec3::ZERO, DVec3::X, DVec3::Y, DVec3::Z];
        let end = [DVec3::ZERO, DVec3::X, DVec3::Y, -DVec3::Z];
        let v = std::array::from_fn(|k| (rest[k], end[k]));
        let a = tet_limit(v, glam::Mat3A::IDENTITY, 0.1, 1.0);
        assert!((a - 0.45).abs() < 1e-9 && a <= 0.45, "{a}");
        // Moving away never limits.
        let up = std::array::from_fn(|k| (rest[k], rest[k] * 2.0));
        assert_eq!(tet_limit(up, glam::Mat3A::IDENTITY, 0.1, 1.0), 1.0);
        // A half turn about x: the straight path squashes the tet flat halfway, with
        // J(α) = (1 − 2α)², which reaches 0.1 at α = (1 − √0.1)/2.
        let flip = [DVec3::ZERO, DVec3::X, -DVec3::Y, -DVec3::Z];
        let v = std::array::from_fn(|k| (rest[k], flip[k]));
        let a = tet_limit(v, glam::Mat3A::IDENTITY, 0.1, 1.0);
        assert!((a - (1.0 - 0.1f64.sqrt()) / 2.0).abs() < 1e-9, "{a}");
        // Starting below j_min (J = 0.08, apex at z = 0.08, towards z = −1): it keeps
        // START_KEPT of its J, J(α) = 0.08 − 1.08 α.
        let low = [DVec3::ZERO, DVec3::X, DVec3::Y, DVec3::Z * 0.08];
        let v = std::array::from_fn(|k| (low[k], end[k]));
        let a = tet_limit(v, glam::Mat3A::IDENTITY, 0.1, 1.0);
        let at = 0.08 * (1.0 - START_KEPT) / 1.08;
        assert!((a - at).abs() < 1e-12 && a <= at, "{a} vs {at}");
        // Standing still below j_min, it does not stop the step.
        let v = std::array::from_fn(|k| (low[k], low[k]));
        assert_eq!(tet_limit(v, glam::Mat3A::IDENTITY, 0.1, 1.0), 1.0);
    }
}
