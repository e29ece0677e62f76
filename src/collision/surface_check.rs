//! The intersection check: every pair of surface triangles that cross, found with the exact
//! predicates of [`super::intersection`] on broadphase candidates. Tests use it on every frame;
//! it is also the first building block of the runtime safety check.

use glam::Vec4;

use super::bvh::{Aabb, Bvh};
use super::intersection::{triangles_intersect, triangles_sharing_vertex_intersect};
use super::surface_pairs::primitive_box;

/// Whether triangles `a` and `b` (vertex indices into `x`) cross. Triangles sharing an edge are
/// neighbours on a manifold and never count; triangles sharing one vertex count only where
/// they cross away from it.
pub fn triangle_pair_intersects(x: &[Vec4], a: [u32; 3], b: [u32; 3]) -> bool {
    let mut shared = None;
    let mut count = 0;
    for (i, va) in a.iter().enumerate() {
        if let Some(j) = b.iter().position(|vb| vb == va) {
            shared = Some((i, j));
            count += 1;
        }
    }
    let p = |t: [u32; 3]| t.map(|i| x[i as usize].truncate());
    match (count, shared) {
        (0, _) => triangles_intersect(p(a), p(b)),
        (1, Some((i, j))) => triangles_sharing_vertex_intersect(p(a), p(b), i, j),
        _ => false,
    }
}

/// All pairs `(i, j)`, `i < j`, of `triangles` (indices into `x`) that intersect, in
/// increasing order.
pub fn find_triangle_intersections(x: &[Vec4], triangles: &[[u32; 3]]) -> Vec<(u32, u32)> {
    let boxes: Vec<Aabb> = triangles.iter().map(|&t| primitive_box(x, None, t, 0.0)).collect();
    let mut bvh = Bvh::default();
    bvh.build(&boxes);
    let mut out = Vec::new();
    for (i, &ta) in triangles.iter().enumerate() {
        let i = i as u32;
        let start = out.len();
        bvh.query(&boxes[i as usize], &boxes, |j| {
            if j > i && triangle_pair_intersects(x, ta, triangles[j as usize]) {
                out.push((i, j));
            }
        });
        out[start..].sort_unstable();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;

    fn soup(n: usize, seed: u64, size: f32) -> (Vec<Vec4>, Vec<[u32; 3]>) {
        let mut rng = crate::test_rng::Rng(seed);
        let mut next = move || rng.uniform_f32();
        let mut x = Vec::new();
        let mut tris = Vec::new();
        for k in 0..n {
            let c = Vec3::new(next(), next(), next()) * 4.0;
            for _ in 0..3 {
                x.push((c + Vec3::new(next() - 0.5, next() - 0.5, next() - 0.5) * size).extend(0.0));
            }
            let b = 3 * k as u32;
            tris.push([b, b + 1, b + 2]);
        }
        // A few triangles that reuse vertices of others (shared-vertex and shared-edge cases).
        for k in 0..n / 10 {
            let b = 3 * k as u32;
            tris.push([b, b + 1, (3 * ((k + 7) % n)) as u32]);
            tris.push([b, (3 * ((k + 3) % n) + 1) as u32, (3 * ((k + 5) % n) + 2) as u32]);
        }
        (x, tris)
    }

    #[test]
    fn broadphase_finds_exactly_the_brute_force_pairs() {
        for (seed, size) in [(1, 0.8), (2, 1.5), (3, 0.3)] {
            let (x, tris) = soup(400, seed, size);
            let got = find_triangle_intersections(&x, &tris);
            let mut brute = Vec::new();
            for i in 0..tris.len() {
                for j in i + 1..tris.len() {
                    if triangle_pair_intersects(&x, tris[i], tris[j]) {
                        brute.push((i as u32, j as u32));
                    }
                }
            }
            assert!(!brute.is_empty(), "the soup must contain crossings to test anything");
            assert_eq!(got, brute, "seed {seed}");
        }
    }

    #[test]
    fn a_closed_surface_has_no_self_intersection_until_folded() {
        // Two triangles of a bent strip sharing an edge: never counted.
        let x: Vec<Vec4> = [
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(1.0, 1.0, 0.0),
            // A third triangle sharing vertex 0 that pierces triangle 0 away from the vertex.
            Vec3::new(0.3, 0.3, -0.5),
            Vec3::new(0.3, 0.3, 0.5),
        ]
        .iter()
        .map(|p| p.extend(0.0))
        .collect();
        let tris = [[0, 1, 2], [1, 3, 2]];
        assert!(find_triangle_intersections(&x, &tris).is_empty());
        let tris = [[0, 1, 2], [1, 3, 2], [0, 4, 5]];
        let got = find_triangle_intersections(&x, &tris);
        assert!(got.contains(&(0, 2)), "{got:?}");
    }
}
