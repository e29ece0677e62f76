//! Barycentric embedding of points (a render mesh's vertices) in a tet mesh, so a fine render
//! mesh follows a coarse simulation: each point is a fixed affine combination of the four
//! vertices of one tet, `x = Σ w_k x_{t_k}` with `Σ w_k = 1`.

use glam::{DMat3, DVec3, IVec3, Vec3, Vec4};

use super::{MeshError, TetMesh, validate};

/// How far below zero a barycentric weight may be (relative) and still count as inside: points
/// on a shared face or edge, up to rounding.
const INSIDE_TOLERANCE: f64 = 1e-6;

/// Render points embedded in a tet mesh.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Embedding {
    vertices: Vec<[u32; 4]>,
    weights: Vec<[f32; 4]>,
    outside: usize,
    max_outside_distance: f32,
}

/// Barycentric coordinates of `p` in the tet `x` (f64; sum exactly 1 up to rounding).
pub fn barycentric(x: [Vec3; 4], p: Vec3) -> [f64; 4] {
    let x = x.map(|v| v.as_dvec3());
    let m = DMat3::from_cols(x[1] - x[0], x[2] - x[0], x[3] - x[0]);
    let w = m.inverse() * (p.as_dvec3() - x[0]);
    [1.0 - w.x - w.y - w.z, w.x, w.y, w.z]
}

impl Embedding {
    /// Embeds `points` in `mesh`. A point inside the mesh gets the tet that contains it and
    /// non-negative weights summing to 1 (voxel meshes from [`TetMesh::voxelize`] contain every
    /// vertex of the surface they were made from). A point outside (a hand-made tet mesh
    /// smaller than its render mesh) is tied to the nearest tet by centroid and extrapolated
    /// from it: some of its weights are negative; [`Embedding::outside_count`] says how many.
    pub fn new(mesh: &TetMesh, points: &[Vec3]) -> Result<Self, MeshError> {
        validate::check_vertices(points)?;
        let grid = TetGrid::new(mesh);
        let mut out = Self {
            vertices: Vec::with_capacity(points.len()),
            weights: Vec::with_capacity(points.len()),
            ..Self::default()
        };
        for &p in points {
            let (t, w, inside) = grid.locate(mesh, p);
            let tet = mesh.tets()[t];
            let w = if inside {
                // Clamp the rounding-level negatives and renormalise: weights stay a convex
                // combination and the point moves by ~1e-6 of a tet at most.
                let c = w.map(|w| w.max(0.0));
                let s: f64 = c.iter().sum();
                c.map(|w| w / s)
            } else {
                out.outside += 1;
                let c = tet.map(|i| mesh.positions()[i as usize].as_dvec3());
                let centroid = (c[0] + c[1] + c[2] + c[3]) / 4.0;
                out.max_outside_distance = out.max_outside_distance.max((p.as_dvec3() - centroid).length() as f32);
                w
            };
            out.vertices.push(tet);
            out.weights.push(w.map(|w| w as f32));
        }
        Ok(out)
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

    /// Each point's weights on [`Embedding::vertices`] (sum 1).
    pub fn weights(&self) -> &[[f32; 4]] {
        &self.weights
    }

    /// Points that lay outside every tet and are extrapolated (0 for voxel meshes).
    pub fn outside_count(&self) -> usize {
        self.outside
    }

    /// The farthest an outside point lay from its tet's centroid \[m\] (0 when none).
    pub fn max_outside_distance(&self) -> f32 {
        self.max_outside_distance
    }

    /// The embedded points for the tet-mesh vertex positions `x` (one body's positions, as
    /// [`crate::runtime::World::body_positions`] gives them), into `out`.
    pub fn apply(&self, x: &[Vec4], out: &mut Vec<Vec3>) {
        out.clear();
        out.extend(self.vertices.iter().zip(&self.weights).map(|(v, w)| {
            let mut p = DVec3::ZERO;
            for k in 0..4 {
                p += x[v[k] as usize].truncate().as_dvec3() * w[k] as f64;
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

    /// The tet for `p`: (tet, weights, inside). Inside: the candidate whose smallest weight is
    /// largest. Outside: the tet with the nearest centroid among the first ring of cells that
    /// has any, and one ring beyond (a nearer centroid may sit just across a cell boundary).
    fn locate(&self, mesh: &TetMesh, p: Vec3) -> (usize, [f64; 4], bool) {
        let x = |t: u32| mesh.tets()[t as usize].map(|i| mesh.positions()[i as usize]);
        let c = ((p - self.origin) / self.cell).floor().as_ivec3();
        let inside_grid = c.cmpge(IVec3::ZERO).all() && c.cmplt(self.dims).all();
        let mut best: Option<(u32, [f64; 4], f64)> = None;
        if inside_grid {
            for &t in self.bucket(c) {
                let w = barycentric(x(t), p);
                let m = w.iter().copied().fold(f64::MAX, f64::min);
                if best.is_none_or(|b| m > b.2) {
                    best = Some((t, w, m));
                }
            }
        }
        if let Some((t, w, m)) = best
            && m >= -INSIDE_TOLERANCE
        {
            return (t as usize, w, true);
        }
        let c = c.clamp(IVec3::ZERO, self.dims - 1);
        let mut nearest: Option<(u32, f32)> = None;
        let mut found_at = None;
        for r in 0..self.dims.max_element() {
            if found_at.is_some_and(|f| r > f + 1) {
                break;
            }
            for z in (c.z - r).max(0)..=(c.z + r).min(self.dims.z - 1) {
                for y in (c.y - r).max(0)..=(c.y + r).min(self.dims.y - 1) {
                    for xx in (c.x - r).max(0)..=(c.x + r).min(self.dims.x - 1) {
                        let q = IVec3::new(xx, y, z);
                        if (q - c).abs().max_element() != r {
                            continue; // the ring only
                        }
                        for &t in self.bucket(q) {
                            let v = x(t);
                            let d = (p - (v[0] + v[1] + v[2] + v[3]) / 4.0).length_squared();
                            if nearest.is_none_or(|n| d < n.1) {
                                nearest = Some((t, d));
                            }
                        }
                    }
                }
            }
            if nearest.is_some() && found_at.is_none() {
                found_at = Some(r);
            }
        }
        // A mesh has at least one tet, so some ring found one.
        let t = nearest.map_or(0, |n| n.0);
        (t as usize, barycentric(x(t), p), false)
    }
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
    fn points_outside_extrapolate_from_a_nearby_tet() {
        let mesh = TetMesh::box_mesh(Vec3::ONE, [2, 2, 2], TetSplit::Six).unwrap();
        let p = [Vec3::new(0.6, 0.1, 0.2), Vec3::new(-0.1, 2.0, 0.0)];
        let e = Embedding::new(&mesh, &p).unwrap();
        assert_eq!(e.outside_count(), 2);
        let x: Vec<Vec4> = mesh.positions().iter().map(|p| p.extend(0.0)).collect();
        let mut out = Vec::new();
        e.apply(&x, &mut out);
        for (a, b) in p.iter().zip(&out) {
            assert!((*a - *b).length() < 1e-5, "{a} vs {b}");
        }
        // The far point's tet is on the +y face.
        let v = e.vertices()[1].map(|i| mesh.positions()[i as usize].y);
        assert!(v.iter().any(|&y| y > 0.49), "{v:?}");
        // Deforming the mesh moves the points with it: a uniform stretch of y by 2.
        let stretched: Vec<Vec4> = mesh.positions().iter().map(|p| Vec4::new(p.x, 2.0 * p.y, p.z, 0.0)).collect();
        e.apply(&stretched, &mut out);
        assert!((out[0] - Vec3::new(0.6, 0.2, 0.2)).length() < 1e-5, "{}", out[0]);
    }
}
