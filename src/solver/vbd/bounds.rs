//! Displacement bounds between two contact detections (docs/algorithms.md §2.6): how far each
//! vertex may move from where a detection found it so that no surface can cross another, and
//! whether the next step's initial path stays inside them.

use glam::{Vec3A, Vec4};

use crate::collision::surface_pairs::PAIR_POINT_TRIANGLE;
use crate::mesh::unpack_entry;
use crate::solver::parallel::SharedSlice;
use crate::solver::vbd::contact::SurfaceContactScratch;

/// Fraction γ_p of the distance to the nearest primitive that a vertex may move between two
/// detections (< ½, so two approaching sides can never meet).
pub const BOUND_FRACTION: f32 = 0.45;
/// Pairs closer than this at a detection are stored as contact pairs (with energy and
/// half-space bounds) \[m\]: every pair whose gap can close to the offset `δ` before the next
/// detection (by at most `2γ_p (d − ξ)`), so `δ / (1 − 2γ_p)`.
pub(crate) fn store_limit(offset: f32) -> f32 {
    offset / (1.0 - 2.0 * BOUND_FRACTION)
}

/// Whether the straight paths `x^n → x^(0)` of the vertices in `range` stay inside the bounds
/// of the last detection, which then certify them free of crossings without CCD. Each
/// vertex's allowed region (a ball around its detection position, cut by the half-spaces of
/// its stored pairs; see [`limit_move`]) is convex, so a path whose two ends lie inside it lies
/// inside it; and the guarantee of `limit_move` holds for any positions inside the regions,
/// however they were reached (user edits and rollbacks included).
pub(crate) fn advance_certified(
    range: std::ops::Range<usize>,
    surface: &SurfaceContactScratch,
    start: &[Vec4],
    guess: &SharedSlice<'_, Vec4>,
) -> bool {
    if !surface.bounds_valid {
        return false;
    }
    range.into_iter().all(|v| {
        let bound = surface.last_bounds[v];
        let a = Vec3A::from_vec4(start[v]);
        // SAFETY: the caller's phase does not write the guesses of this range.
        let b = Vec3A::from_vec4(unsafe { guess.get(v) });
        limit_move(v, a, bound, surface) == a && limit_move(v, b, bound, surface) == b
    })
}

/// Limits the move of vertex `v` from its detection position to `target` so that no surface
/// can be crossed before the next detection; returns the allowed position.
///
/// Two kinds of bound, both relative to the detection position `x^det` (`clamp.xyz`):
/// * the isotropic bound `clamp.w` = γ_p (d − ξ) for everything not stored as a pair (pairs
///   further than the store limit, primitives beyond the search radius, other bodies);
/// * for each stored pair, a half-space: the vertex may approach the other side along the
///   pair's normal by at most γ_p (d − ξ), and move apart or sideways freely.
///
/// Why the half-spaces suffice: the closest points of two disjoint convex primitives define
/// parallel separating planes, one supporting each primitive. If every vertex of side A moves
/// at most β against the normal and every vertex of side B at most β along it, each primitive
/// (the convex hull of its vertices) stays on its side of a plane shifted by β, so the gap stays
/// at least d − 2β = (1 − 2γ_p) d + 2γ_p ξ. An isotropic bound instead froze pairs pressed
/// down to ξ in every direction, separation included (twisted rods stopped twisting).
#[inline]
pub(crate) fn limit_move(v: usize, target: Vec3A, clamp: Vec4, surface: &SurfaceContactScratch) -> Vec3A {
    let center = Vec3A::from_vec4(clamp);
    let mut d = target - center;
    let rows = surface.vertex_pairs.offsets.len() > v + 1;
    let row = if rows { surface.vertex_pairs.row(v) } else { &[] };
    // The half-spaces of the vertex's pairs: s·n̂·Δ ≥ −β, with s = +1 on side A (along the
    // normal) and −1 on side B. First project onto each violated one...
    let half_space = |entry: u32| {
        let (k, slot) = unpack_entry(entry);
        let p = &surface.pairs[k as usize];
        let side_a = if p.kind == PAIR_POINT_TRIANGLE { slot == 0 } else { slot < 2 };
        let n = Vec3A::from_array(p.frame_normal);
        let budget = BOUND_FRACTION * (p.distance - surface.min_separation).max(0.0);
        (if side_a { n } else { -n }, budget)
    };
    for &entry in row {
        let (n, budget) = half_space(entry);
        let along = n.dot(d);
        if along < -budget {
            d += n * (-budget - along);
        }
    }
    // ... then onto the ball, and scale towards x^det (inside every constraint) until all hold.
    let b = clamp.w;
    let len2 = d.length_squared();
    if len2 > b * b {
        d = if b > 0.0 { d * (b / len2.sqrt()) } else { Vec3A::ZERO };
    }
    let mut scale = 1.0f32;
    for &entry in row {
        let (n, budget) = half_space(entry);
        let along = n.dot(d);
        if along < -budget {
            scale = scale.min(budget / -along);
        }
    }
    center + d * scale
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::collision::surface_pairs::{ContactPair, PAIR_EDGE_EDGE, closest};
    use crate::solver::vbd::contact::scratch_with;
    use crate::test_rng::Rng;

    #[test]
    fn isotropic_bound_keeps_points_inside_the_ball() {
        let s = scratch_with(Vec::new(), 1, 0.0);
        let c = Vec4::new(1.0, 2.0, 3.0, 0.5);
        let p = limit_move(0, Vec3A::new(4.0, 2.0, 3.0), c, &s);
        assert!((p - Vec3A::new(1.5, 2.0, 3.0)).length() < 1e-6);
        let q = Vec3A::new(1.1, 2.1, 3.0);
        assert_eq!(limit_move(0, q, c, &s), q);
        assert_eq!(limit_move(0, q, Vec4::new(1.0, 2.0, 3.0, 0.0), &s), Vec3A::new(1.0, 2.0, 3.0));
    }

    #[test]
    fn an_initial_path_is_certified_only_inside_the_last_bounds() {
        // Two vertices, each with a ball of radius 0.5 around its detection position.
        let mut s = scratch_with(Vec::new(), 2, 0.0);
        let bounds = [Vec4::new(0.0, 0.0, 0.0, 0.5), Vec4::new(1.0, 0.0, 0.0, 0.5)];
        let start = [Vec4::new(0.1, 0.0, 0.0, 0.0), Vec4::new(1.0, 0.2, 0.0, 0.0)];
        let certified = |s: &SurfaceContactScratch, guess: [Vec4; 2]| {
            let mut g = guess;
            advance_certified(0..2, s, &start, &SharedSlice::new(&mut g))
        };
        let inside = [Vec4::new(-0.3, 0.1, 0.0, 0.0), Vec4::new(1.0, -0.4, 0.0, 0.0)];
        // Bounds from no detection (first step, topology edit) certify nothing.
        assert!(!certified(&s, inside));
        s.keep_bounds(&bounds);
        assert!(certified(&s, inside));
        // One end outside one ball: the CCD advance must run.
        assert!(!certified(&s, [inside[0], Vec4::new(1.0, -0.6, 0.0, 0.0)]));
        s.forget_pairs();
        assert!(!certified(&s, inside));
        // A start outside its ball (a vertex moved by the user) is not certified either.
        s.keep_bounds(&[bounds[0], Vec4::new(1.0, 0.0, 0.0, 0.1)]);
        assert!(!certified(&s, [inside[0], Vec4::new(1.0, 0.05, 0.0, 0.0)]));
    }

    #[test]
    fn a_pair_pressed_to_the_floor_can_still_separate_and_slide() {
        // Vertex 0 sits ξ above triangle (1, 2, 3) in the plane y = 0.
        let xi = 1e-5;
        let x = [Vec3A::new(0.2, xi, 0.2), Vec3A::ZERO, Vec3A::X, Vec3A::Z];
        let c = closest(PAIR_POINT_TRIANGLE, &x);
        let pair = ContactPair {
            vertices: [0, 1, 2, 3],
            frame_normal: c.normal.to_array(),
            kind: PAIR_POINT_TRIANGLE,
            distance: c.distance,
            weights: c.weights,
            ..Default::default()
        };
        let s = scratch_with(vec![pair], 4, xi);
        let clamp = |k: usize| x[k].extend(0.01);
        // Away from the triangle and sideways: free (within the isotropic bound).
        let up = x[0] + Vec3A::new(0.003, 0.005, 0.0);
        assert_eq!(limit_move(0, up, clamp(0), &s), up);
        // Towards it: held at the detection height.
        let down = limit_move(0, x[0] + Vec3A::new(0.004, -0.003, 0.0), clamp(0), &s);
        assert!(down.y >= xi - 1e-9 && down.x > x[0].x, "{down}");
        // The triangle may drop away from the point, not rise into it.
        let t = limit_move(2, x[2] + Vec3A::new(0.0, -0.004, 0.002), clamp(2), &s);
        assert_eq!(t, x[2] + Vec3A::new(0.0, -0.004, 0.002));
        let t = limit_move(2, x[2] + Vec3A::new(0.0, 0.004, 0.0), clamp(2), &s);
        assert!(t.y <= 1e-9, "{t}");
    }

    #[test]
    fn limited_moves_never_close_a_gap_below_the_guarantee() {
        // Random point–triangle and edge–edge pairs; every vertex moves to a random target,
        // limited by the pair's half-spaces. The exact distance afterwards stays at least
        // (1 − 2γ_p) d + 2γ_p ξ.
        let mut rng = Rng(17);
        let xi = 1e-5;
        for case in 0..4000 {
            let kind = if case % 2 == 0 { PAIR_POINT_TRIANGLE } else { PAIR_EDGE_EDGE };
            let x: [Vec3A; 4] = std::array::from_fn(|_| rng.vec().as_vec3a() * 0.01);
            let c = closest(kind, &x);
            if !(c.distance > xi) {
                continue;
            }
            let pair = ContactPair {
                vertices: [0, 1, 2, 3],
                frame_normal: c.normal.to_array(),
                kind,
                distance: c.distance,
                weights: c.weights,
                ..Default::default()
            };
            let s = scratch_with(vec![pair], 4, xi);
            let moved: [Vec3A; 4] = std::array::from_fn(|k| {
                let target = x[k] + rng.vec().as_vec3a() * 0.02;
                limit_move(k, target, x[k].extend(1.0), &s)
            });
            let after = closest(kind, &moved).distance;
            let floor = (1.0 - 2.0 * BOUND_FRACTION) * c.distance + 2.0 * BOUND_FRACTION * xi;
            assert!(after >= floor * (1.0 - 1e-3) - 1e-7, "case {case}: {after} < {floor} (d = {})", c.distance);
        }
    }
}
