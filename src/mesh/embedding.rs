//! Embedding of points (a render mesh's vertices) in a tet mesh, so a fine render mesh
//! follows a coarse simulation.
//!
//! Each point is tied to one tet: to the closest point of that tet, a convex combination
//! `Σ w_k x_{t_k}` (`w_k ≥ 0`, `Σ w_k = 1`), plus the rest-frame offset from there to the
//! point, which deforms with the tet (`F·d`, `F` the tet's deformation gradient). A point
//! inside the mesh has no offset. One outside it (a render mesh a little larger than the tets
//! conformed to it, or a hand-made tet mesh) keeps its distance and direction relative to its
//! closest tet, so at rest every point is reproduced exactly and under deformation it moves
//! with the tet's affine map.

use glam::{DMat3, DVec3, IVec3, Vec3, Vec4};

use super::{MeshError, TetMesh, validate};
use crate::math::distance::point_triangle;

/// How far below zero a barycentric weight may be (relative) and still count as inside: points
/// on a shared face or edge, up to rounding.
const INSIDE_TOLERANCE: f64 = 1e-6;

/// Render points embedded in a tet mesh.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Embedding {
    vertices: Vec<[u32; 4]>,
    weights: Vec<[f32; 4]>,
    offsets: Vec<[f32; 3]>,
    outside: usize,
    max_outside_distance: f32,
}

/// Barycentric coordinates of `p` in the tet `x` (f64; sum exactly 1 up to rounding).
#[cfg(test)]
pub fn barycentric(x: [Vec3; 4], p: Vec3) -> [f64; 4] {
    barycentric_f64(x.map(|v| v.as_dvec3()), p.as_dvec3())
}

fn barycentric_f64(x: [DVec3; 4], p: DVec3) -> [f64; 4] {
    let m = DMat3::from_cols(x[1] - x[0], x[2] - x[0], x[3] - x[0]);
    let w = m.inverse() * (p - x[0]);
    [1.0 - w.x - w.y - w.z, w.x, w.y, w.z]
}

/// The closest point of tet `x` to `p`: its barycentric weights (convex) and the distance.
pub(super) fn closest_in_tet(x: [DVec3; 4], p: DVec3) -> ([f64; 4], f64) {
    let w = barycentric_f64(x, p);
    if w.iter().all(|&w| w >= -INSIDE_TOLERANCE) {
        // Inside, up to rounding: clamp and renormalise so the weights stay convex (the point
        // moves by ~1e-6 of a tet at most).
        let c = w.map(|w| w.max(0.0));
        let s: f64 = c.iter().sum();
        return (c.map(|w| w / s), 0.0);
    }
    // Outside: the closest point lies on one of the four faces.
    let mut best = ([0.0; 4], f64::MAX);
    for (a, b, c) in [(1, 2, 3), (0, 2, 3), (0, 1, 3), (0, 1, 2)] {
        let close = point_triangle::<f64>(p, x[a], x[b], x[c]);
        if close.distance < best.1 {
            let mut w = [0.0; 4];
            // Weights of Q on the face: [1, −β0, −β1, −β2] ⇒ β = −weights[1..].
            w[a] = -close.weights[1];
            w[b] = -close.weights[2];
            w[c] = -close.weights[3];
            let s: f64 = w.iter().map(|w| w.max(0.0)).sum();
            best = (w.map(|w| w.max(0.0) / s), close.distance);
        }
    }
    best
}

impl Embedding {
    /// Embeds `points` in `mesh`. Each point gets the tet closest to it (one that contains
    /// it, if any) with the convex weights of the tet's closest point, and the offset from
    /// there to the point in the tet's rest edge frame (zero inside). So at rest
    /// [`Embedding::apply`] reproduces every point, and weights are never negative.
    pub fn new(mesh: &TetMesh, points: &[Vec3]) -> Result<Self, MeshError> {
        validate::check_vertices(points)?;
        let grid = TetGrid::new(mesh);
        let mut out = Self {
            vertices: Vec::with_capacity(points.len()),
            weights: Vec::with_capacity(points.len()),
            offsets: Vec::with_capacity(points.len()),
            ..Self::default()
        };
        for &p in points {
            let (t, w, distance) = grid.locate(mesh, p);
            let tet = mesh.tets()[t];
            let mut offset = [0.0; 3];
            if distance > 0.0 {
                out.outside += 1;
                out.max_outside_distance = out.max_outside_distance.max(distance as f32);
                // The offset d = p − q in the tet's edge basis: d = Dm c.
                let x = tet.map(|i| mesh.positions()[i as usize].as_dvec3());
                let q = x[0] * w[0] + x[1] * w[1] + x[2] * w[2] + x[3] * w[3];
                let dm = DMat3::from_cols(x[1] - x[0], x[2] - x[0], x[3] - x[0]);
                offset = (dm.inverse() * (p.as_dvec3() - q)).as_vec3().to_array();
            }
            out.vertices.push(tet);
            out.weights.push(w.map(|w| w as f32));
            out.offsets.push(offset);
        }
        Ok(out)
    }

    /// Points that are vertices of a simulated mesh themselves (a cloth's welded vertices):
    /// point `k` follows vertex `map[k]` exactly.
    pub fn on_vertices(map: &[u32]) -> Self {
        Self {
            vertices: map.iter().map(|&i| [i; 4]).collect(),
            weights: vec![[1.0, 0.0, 0.0, 0.0]; map.len()],
            offsets: vec![[0.0; 3]; map.len()],
            ..Self::default()
        }
    }

    /// Number of embedded points.
    pub fn len(&self) -> usize {
        self.vertices.len()
    }

    /// Whether no point is embedded.
    pub fn is_empty(&self) -> bool {
        self.vertices.is_empty()
    }

    /// The four tet-mesh vertices each point depends on.
    pub fn vertices(&self) -> &[[u32; 4]] {
        &self.vertices
    }

    /// Each point's weights on [`Embedding::vertices`]: the closest point of its tet, a convex
    /// combination (non-negative, sum 1).
    pub fn weights(&self) -> &[[f32; 4]] {
        &self.weights
    }

    /// Each point's offset from its tet's closest point, in the tet's edge frame: the point is
    /// `Σ w_k x_k + Σ_{k=1..3} c_k (x_k − x_0)`, so the offset deforms with the tet. Zero for
    /// points inside the mesh.
    pub fn offsets(&self) -> &[[f32; 3]] {
        &self.offsets
    }

    /// Points that lay outside every tet and ride on their closest tet's offset.
    pub fn outside_count(&self) -> usize {
        self.outside
    }

    /// The farthest an outside point lay from the tet mesh \[m\] (0 when none).
    pub fn max_outside_distance(&self) -> f32 {
        self.max_outside_distance
    }

    /// The embedded points for the tet-mesh vertex positions `x` (one body's positions, as
    /// [`crate::World::body_positions`] gives them), into `out`.
    pub fn apply(&self, x: &[Vec4], out: &mut Vec<Vec3>) {
        out.clear();
        out.extend(self.vertices.iter().zip(&self.weights).zip(&self.offsets).map(|((v, w), c)| {
            // Relative to the first vertex, so the result keeps its precision far from the
            // origin (the weights' rounding scales with the tet, not with |x|).
            let x0 = x[v[0] as usize].truncate().as_dvec3();
            let mut p = x0;
            for k in 1..4 {
                let s = w[k] as f64 + c[k - 1] as f64;
                if s != 0.0 {
                    p += (x[v[k] as usize].truncate().as_dvec3() - x0) * s;
                }
            }
            p.as_vec3()
        }));
    }
}

/// Tets bucketed by bounding box on a uniform grid, for point location.
struct TetGrid {
    origin: Vec3,
    cell: f32,
    dims: IVec3,
    start: Vec<u32>,
    tets: Vec<u32>,
}

impl TetGrid {
    /// The grid over the mesh's bounding box (points outside it are located from the nearest
    /// cell).
    fn new(mesh: &TetMesh) -> Self {
        let (lo, hi) = mesh.bounds();
        // About one tet per cell per axis: cell = the mean tet's edge scale.
        let mean_volume = (mesh.volume() / mesh.tet_count().max(1) as f64).max(1e-30);
        let cell = (2.0 * mean_volume.cbrt()) as f32;
        let cell = cell.max((hi - lo).max_element() / 256.0).max(f32::MIN_POSITIVE);
        let dims = (((hi - lo) / cell).floor().as_ivec3() + 1).max(IVec3::ONE);
        let n = (dims.x * dims.y * dims.z) as usize;
        let cell_of = |p: Vec3| ((p - lo) / cell).floor().as_ivec3().clamp(IVec3::ZERO, dims - 1);
        let flat = |c: IVec3| (c.x + dims.x * (c.y + dims.y * c.z)) as usize;
        let ranges: Vec<(IVec3, IVec3)> = mesh
            .tets()
            .iter()
            .map(|t| {
                let x = t.map(|i| mesh.positions()[i as usize]);
                (cell_of(x[0].min(x[1]).min(x[2]).min(x[3])), cell_of(x[0].max(x[1]).max(x[2]).max(x[3])))
            })
            .collect();
        let mut count = vec![0u32; n + 1];
        let visit = |(a, b): (IVec3, IVec3), f: &mut dyn FnMut(usize)| {
            for z in a.z..=b.z {
                for y in a.y..=b.y {
                    for x in a.x..=b.x {
                        f(flat(IVec3::new(x, y, z)));
                    }
                }
            }
        };
        for r in &ranges {
            visit(*r, &mut |c| count[c + 1] += 1);
        }
        for k in 0..n {
            count[k + 1] += count[k];
        }
        let mut fill = count.clone();
        let mut tets = vec![0u32; count[n] as usize];
        for (t, r) in ranges.iter().enumerate() {
            visit(*r, &mut |c| {
                tets[fill[c] as usize] = t as u32;
                fill[c] += 1;
            });
        }
        Self { origin: lo, cell, dims, start: count, tets }
    }

    fn bucket(&self, c: IVec3) -> &[u32] {
        let k = (c.x + self.dims.x * (c.y + self.dims.y * c.z)) as usize;
        &self.tets[self.start[k] as usize..self.start[k + 1] as usize]
    }

    /// The tet closest to `p` (one that contains it, if any): (tet, convex weights of its
    /// closest point, distance). Rings of cells around `p`'s cell (the nearest cell, for a point
    /// outside the grid) are searched outwards until no unseen tet can be nearer than the best
    /// so far: a tet first met in ring `r` lies at least `r − 1` cells away, inside the grid or
    /// out.
    fn locate(&self, mesh: &TetMesh, p: Vec3) -> (usize, [f64; 4], f64) {
        let x = |t: u32| mesh.tets()[t as usize].map(|i| mesh.positions()[i as usize].as_dvec3());
        let c = ((p - self.origin) / self.cell).floor().as_ivec3().clamp(IVec3::ZERO, self.dims - 1);
        let pd = p.as_dvec3();
        let mut best: Option<(u32, [f64; 4], f64)> = None;
        let consider = |t: u32, best: &mut Option<(u32, [f64; 4], f64)>| {
            let (w, d) = closest_in_tet(x(t), pd);
            let better = match *best {
                None => true,
                // Among containing tets (d = 0), the one the point is deepest in.
                Some((_, bw, bd)) => d < bd || (d == 0.0 && bd == 0.0 && min4(w) > min4(bw)),
            };
            if better {
                *best = Some((t, w, d));
            }
        };
        for r in 0..=self.dims.max_element() {
            if best.is_some_and(|b| b.2 <= (r as f64 - 1.0).max(0.0) * self.cell as f64) {
                break;
            }
            // The shell of cells at Chebyshev distance r, each cell once.
            let (lo, hi) = ((c - r).max(IVec3::ZERO), (c + r).min(self.dims - 1));
            for z in lo.z..=hi.z {
                for y in lo.y..=hi.y {
                    // On a face of the shell every x; inside it only its two x ends.
                    let face = (z - c.z).abs() == r || (y - c.y).abs() == r;
                    let ends = [c.x - r, c.x + r];
                    let xs: Box<dyn Iterator<Item = i32>> = if face {
                        Box::new(lo.x..=hi.x)
                    } else {
                        Box::new(ends.into_iter().filter(|x| (lo.x..=hi.x).contains(x)))
                    };
                    for xx in xs {
                        for &t in self.bucket(IVec3::new(xx, y, z)) {
                            consider(t, &mut best);
                        }
                    }
                }
            }
        }
        // A mesh has at least one tet, and the grid covers it: some ring found one.
        let (t, w, d) = best.unwrap_or((0, [1.0, 0.0, 0.0, 0.0], 0.0));
        (t as usize, w, d)
    }
}

fn min4(w: [f64; 4]) -> f64 {
    w.iter().copied().fold(f64::MAX, f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::TetSplit;
    use crate::test_rng::Rng;

    #[test]
    fn points_inside_get_convex_weights_that_reproduce_them() {
        let mesh = TetMesh::sphere(0.5, 5, TetSplit::Five).unwrap();
        let mut rng = Rng(7);
        let points: Vec<Vec3> =
            (0..2000).map(|_| (rng.vec() * 0.3).as_vec3()).chain(mesh.positions().iter().copied()).collect();
        let e = Embedding::new(&mesh, &points).unwrap();
        assert_eq!(e.outside_count(), 0);
        let x: Vec<Vec4> = mesh.positions().iter().map(|p| p.extend(0.0)).collect();
        let mut out = Vec::new();
        e.apply(&x, &mut out);
        for (k, (p, q)) in points.iter().zip(&out).enumerate() {
            let w = e.weights()[k];
            assert!(w.iter().all(|&w| w >= 0.0), "point {k}: {w:?}");
            assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-6, "point {k}: {w:?}");
            assert!((*p - *q).length() < 1e-6, "point {k}: {p} vs {q}");
        }
    }

    #[test]
    fn points_outside_ride_on_their_closest_tet_with_convex_weights() {
        let mesh = TetMesh::box_mesh(Vec3::ONE, [2, 2, 2], TetSplit::Six).unwrap();
        let p = [Vec3::new(0.6, 0.1, 0.2), Vec3::new(-0.1, 2.0, 0.0), Vec3::new(0.7, 0.7, 0.7)];
        let e = Embedding::new(&mesh, &p).unwrap();
        assert_eq!(e.outside_count(), 3);
        // The true distance to the mesh (the box's face, or its corner for the last point).
        let corner = (Vec3::splat(0.7) - Vec3::splat(0.5)).length();
        assert!((e.max_outside_distance() - 1.5).abs() < 1e-6, "{}", e.max_outside_distance());
        for (k, w) in e.weights().iter().enumerate() {
            assert!(w.iter().all(|&w| w >= 0.0) && (w.iter().sum::<f32>() - 1.0).abs() < 1e-6, "point {k}: {w:?}");
        }
        let x: Vec<Vec4> = mesh.positions().iter().map(|p| p.extend(0.0)).collect();
        let mut out = Vec::new();
        e.apply(&x, &mut out);
        for (a, b) in p.iter().zip(&out) {
            assert!((*a - *b).length() < 1e-6, "{a} vs {b}");
        }
        // Each closest point is where the point projects onto the box.
        let closest = |k: usize| {
            let v = e.vertices()[k].map(|i| mesh.positions()[i as usize]);
            let w = e.weights()[k];
            v[0] * w[0] + v[1] * w[1] + v[2] * w[2] + v[3] * w[3]
        };
        assert!((closest(0) - Vec3::new(0.5, 0.1, 0.2)).length() < 1e-6, "{}", closest(0));
        assert!((closest(1) - Vec3::new(-0.1, 0.5, 0.0)).length() < 1e-6, "{}", closest(1));
        assert!((closest(2) - Vec3::splat(0.5)).length() < 1e-6, "{}", closest(2));
        assert!(((p[2] - closest(2)).length() - corner).abs() < 1e-6);
        // Deforming the mesh moves the points with it: a uniform stretch of y by 2.
        let stretched: Vec<Vec4> = mesh.positions().iter().map(|p| Vec4::new(p.x, 2.0 * p.y, p.z, 0.0)).collect();
        e.apply(&stretched, &mut out);
        assert!((out[0] - Vec3::new(0.6, 0.2, 0.2)).length() < 1e-6, "{}", out[0]);
        assert!((out[1] - Vec3::new(-0.1, 4.0, 0.0)).length() < 1e-5, "{}", out[1]);
    }
}
