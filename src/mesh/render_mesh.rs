//! Render meshes: an artist's triangles (with seams, slivers and all) that are drawn, not
//! simulated, and the embedded form in which they follow a simulated tet mesh.

use glam::{Vec3, Vec4};

use super::{Embedding, MeshError, TetMesh, TriMesh};

/// Triangles to draw or export. Unlike [`super::TriMesh`] nothing is required of them beyond
/// valid indices: duplicate vertices along seams and degenerate slivers are normal in assets.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RenderMesh {
    /// Name (a glTF mesh or node name, or a body's).
    pub name: String,
    /// Vertex positions \[m\].
    pub positions: Vec<Vec3>,
    /// Unit vertex normals, if the asset has them (else smooth normals are made from the
    /// triangles where needed).
    pub normals: Option<Vec<Vec3>>,
    /// Counter-clockwise triangles (seen from outside).
    pub triangles: Vec<[u32; 3]>,
}

impl RenderMesh {
    /// A torus around the y axis: ring radius `major`, tube radius `minor` \[m\], `segments`
    /// around the ring and `sides` around the tube, with a seam of duplicated vertices where
    /// both angles wrap (as exporters write UV seams) and analytic normals.
    pub fn torus(major: f32, minor: f32, segments: u32, sides: u32) -> Self {
        let (segments, sides) = (segments.max(3), sides.max(3));
        let mut positions = Vec::new();
        let mut normals = Vec::new();
        for i in 0..=segments {
            let u = i as f32 / segments as f32 * std::f32::consts::TAU;
            let ring = Vec3::new(u.cos(), 0.0, -u.sin());
            for j in 0..=sides {
                let v = j as f32 / sides as f32 * std::f32::consts::TAU;
                let n = ring * v.cos() + Vec3::Y * v.sin();
                positions.push(ring * major + n * minor);
                normals.push(n);
            }
        }
        let row = sides + 1;
        let mut triangles = Vec::new();
        for i in 0..segments {
            for j in 0..sides {
                let (a, b) = (i * row + j, (i + 1) * row + j);
                triangles.push([a, b, b + 1]);
                triangles.push([a, b + 1, a + 1]);
            }
        }
        Self { name: "torus".into(), positions, normals: Some(normals), triangles }
    }

    /// A latitude–longitude sphere of `radius` \[m\] around the origin, with a seam of
    /// duplicated vertices at longitude 0 (as exporters write UV seams), single pole vertices
    /// per segment and analytic normals.
    pub fn uv_sphere(radius: f32, rings: u32, segments: u32) -> Self {
        let (rings, segments) = (rings.max(2), segments.max(3));
        let mut positions = Vec::new();
        let mut normals = Vec::new();
        for i in 0..=rings {
            let theta = std::f32::consts::PI * i as f32 / rings as f32;
            for j in 0..=segments {
                let phi = std::f32::consts::TAU * j as f32 / segments as f32;
                let n = Vec3::new(theta.sin() * phi.cos(), theta.cos(), -theta.sin() * phi.sin());
                positions.push(n * radius);
                normals.push(n);
            }
        }
        let row = segments + 1;
        let mut triangles = Vec::new();
        for i in 0..rings {
            for j in 0..segments {
                let (a, b) = (i * row + j, (i + 1) * row + j);
                if i > 0 {
                    triangles.push([a, b, a + 1]);
                }
                if i + 1 < rings {
                    triangles.push([a + 1, b, b + 1]);
                }
            }
        }
        Self { name: "sphere".into(), positions, normals: Some(normals), triangles }
    }

    /// The render mesh as a cloth's simulation mesh: vertices at the same position (to 1e-6
    /// of the mesh's size: the duplicates of UV and normal seams) welded, degenerate and
    /// repeated triangles dropped, and for each render vertex its cloth vertex. Errors name
    /// what [`TriMesh::new`] rejects (an edge of more than two triangles, ...), or a mesh with
    /// no triangle left.
    pub fn welded_cloth(&self) -> Result<(TriMesh, Vec<u32>), MeshError> {
        let canonical = weld(&self.positions);
        let mut seen = std::collections::HashSet::new();
        let triangles: Vec<[u32; 3]> = self
            .triangles
            .iter()
            .map(|t| t.map(|i| canonical[i as usize]))
            .filter(|t| {
                let p = t.map(|i| self.positions[i as usize]);
                let l = super::validate::longest_edge(p);
                let mut key = *t;
                key.sort_unstable();
                t[0] != t[1]
                    && t[1] != t[2]
                    && t[0] != t[2]
                    && super::triangle_area(p) > super::DEGENERACY_RATIO * l * l
                    && seen.insert(key)
            })
            .collect();
        if triangles.is_empty() {
            return Err(MeshError::Empty { what: "triangles (all are degenerate)" });
        }
        // Cloth vertices: the welded ones the kept triangles use, in first-use order.
        let mut cloth_index = vec![u32::MAX; self.positions.len()];
        let mut positions = Vec::new();
        let triangles: Vec<[u32; 3]> = triangles
            .iter()
            .map(|t| {
                t.map(|i| {
                    if cloth_index[i as usize] == u32::MAX {
                        cloth_index[i as usize] = positions.len() as u32;
                        positions.push(self.positions[i as usize]);
                    }
                    cloth_index[i as usize]
                })
            })
            .collect();
        // A render vertex no kept triangle uses: a sliver's apex follows a kept corner of its
        // sliver; a vertex of no triangle at all, the nearest cloth vertex.
        for t in &self.triangles {
            let c = t.map(|i| canonical[i as usize] as usize);
            if let Some(&kept) = c.iter().find(|&&v| cloth_index[v] != u32::MAX) {
                for v in c {
                    if cloth_index[v] == u32::MAX {
                        cloth_index[v] = cloth_index[kept];
                    }
                }
            }
        }
        let map = canonical
            .iter()
            .enumerate()
            .map(|(k, &c)| match cloth_index[c as usize] {
                u32::MAX => {
                    let p = self.positions[k];
                    (0..positions.len() as u32)
                        .min_by(|&a, &b| {
                            let (da, db) =
                                (positions[a as usize].distance_squared(p), positions[b as usize].distance_squared(p));
                            da.total_cmp(&db)
                        })
                        .unwrap_or(0)
                }
                i => i,
            })
            .collect();
        Ok((TriMesh::new(positions, triangles)?, map))
    }

    /// The volume the triangles enclose \[m³\] (the divergence theorem: exact for a closed,
    /// consistently oriented surface, counter-clockwise from outside; negative if it is
    /// inside out, and meaningless for an open one).
    pub fn enclosed_volume(&self) -> f64 {
        self.triangles
            .iter()
            .map(|f| {
                let [a, b, c] = f.map(|i| self.positions[i as usize].as_dvec3());
                a.dot(b.cross(c)) / 6.0
            })
            .sum()
    }

    /// The normals to draw with: the asset's, or area-weighted smooth ones.
    pub fn normals_or_smooth(&self) -> Vec<Vec3> {
        match &self.normals {
            Some(n) if n.len() == self.positions.len() => n.clone(),
            _ => smooth_normals(&self.positions, &self.triangles),
        }
    }
}

/// The colour of the `k`-th mesh (linear RGB) in exports and pictures: distinguishable
/// neighbours, repeating after six.
pub fn palette_color(k: usize) -> [f32; 3] {
    const PALETTE: [[f32; 3]; 6] = [
        [0.85, 0.35, 0.25],
        [0.25, 0.55, 0.85],
        [0.35, 0.75, 0.35],
        [0.9, 0.7, 0.2],
        [0.6, 0.4, 0.8],
        [0.3, 0.75, 0.75],
    ];
    PALETTE[k % PALETTE.len()]
}

/// Area-weighted vertex normals of counter-clockwise triangles (unit; +y for a vertex no
/// triangle with area uses). Vertices at the same position (to 1e-6 of the mesh's size) share
/// their normal, so the duplicated vertices of a UV seam do not show as a crease.
pub fn smooth_normals(positions: &[Vec3], triangles: &[[u32; 3]]) -> Vec<Vec3> {
    let canonical = weld(positions);
    let mut n = vec![Vec3::ZERO; positions.len()];
    for t in triangles {
        let [a, b, c] = t.map(|i| positions[i as usize]);
        let face = (b - a).cross(c - a); // length = twice the area: area weighting for free
        for &i in t {
            n[canonical[i as usize] as usize] += face;
        }
    }
    canonical.iter().map(|&c| n[c as usize].try_normalize().unwrap_or(Vec3::Y)).collect()
}

/// For each vertex, the first vertex at the same position (within 1e-6 of the mesh's size):
/// positions are bucketed by that quantum and the neighbouring buckets searched too, so two
/// copies a rounding apart weld even across a bucket boundary.
pub(super) fn weld(positions: &[Vec3]) -> Vec<u32> {
    let (lo, hi) = super::tet_mesh::bounds(positions);
    let q = ((hi - lo).max_element() as f64 * 1e-6).max(f64::MIN_POSITIVE);
    let mut buckets: std::collections::HashMap<[i64; 3], Vec<u32>> =
        std::collections::HashMap::with_capacity(positions.len());
    let key = |p: Vec3| p.to_array().map(|c| (c as f64 / q).floor() as i64);
    let mut out = Vec::with_capacity(positions.len());
    for (k, p) in positions.iter().enumerate() {
        let b = key(*p);
        let neighbours = (-1..=1)
            .flat_map(|dz| (-1..=1).flat_map(move |dy| (-1..=1).map(move |dx| [b[0] + dx, b[1] + dy, b[2] + dz])))
            .flat_map(|n| buckets.get(&n).into_iter().flatten().copied());
        // The first earlier copy found (in a fixed order: deterministic) gives its own first.
        let same = neighbours.into_iter().find(|&j| (positions[j as usize].as_dvec3() - p.as_dvec3()).length() <= q);
        out.push(same.map_or(k as u32, |j| out[j as usize]));
        buckets.entry(b).or_default().push(k as u32);
    }
    out
}

/// A render mesh whose vertices follow a simulated mesh through an [`Embedding`], with
/// normals that turn and shear with it.
#[derive(Clone, Debug, PartialEq)]
pub struct EmbeddedMesh {
    /// The render mesh at rest, in the same frame as the mesh it is embedded in.
    pub mesh: RenderMesh,
    /// Where each render vertex sits in the simulated mesh.
    pub embedding: Embedding,
    /// Per render vertex, its rest normal carried into its tet's edge frame (`Dm^T n`), so
    /// the deformed normal is `Ds^{-T} Dm^T n = F^{-T} n`; `None` for a mesh embedded on
    /// vertices (cloth), whose normals are recomputed from the deformed triangles.
    normal_frames: Option<Vec<Vec3>>,
}

impl EmbeddedMesh {
    /// Embeds `mesh`'s vertices in `tets` (both at rest, in one frame). The asset's normals
    /// (or smooth ones where it has none) follow the tets' deformation, so hard edges stay
    /// hard.
    pub fn new(mesh: RenderMesh, tets: &TetMesh) -> Result<Self, MeshError> {
        let embedding = Embedding::new(tets, &mesh.positions)?;
        let rest = mesh.normals_or_smooth();
        let normal_frames = embedding
            .vertices()
            .iter()
            .zip(&rest)
            .map(|(v, n)| {
                let x = v.map(|i| tets.positions()[i as usize]);
                let dm = glam::Mat3::from_cols(x[1] - x[0], x[2] - x[0], x[3] - x[0]);
                dm.transpose() * *n
            })
            .collect();
        Ok(Self { mesh, embedding, normal_frames: Some(normal_frames) })
    }

    /// A render mesh whose vertex `k` is vertex `map[k]` of the simulated mesh (a cloth made
    /// of the render mesh's own triangles, welded along its seams).
    pub fn on_vertices(mesh: RenderMesh, map: &[u32]) -> Self {
        Self { embedding: Embedding::on_vertices(map), mesh, normal_frames: None }
    }

    /// The render vertices for the simulated positions `x` of the body (into `out`).
    pub fn positions(&self, x: &[Vec4], out: &mut Vec<Vec3>) {
        self.embedding.apply(x, out);
    }

    /// Unit normals for the simulated positions `x` and the render vertices `positions` they
    /// give ([`EmbeddedMesh::positions`]): each rest normal through its tet's deformation
    /// (`F^{-T} n`, by the cofactor of the tet's edge matrix, which stays continuous through
    /// an inversion), or smooth normals of the deformed triangles for a mesh on vertices.
    pub fn normals(&self, x: &[Vec4], positions: &[Vec3]) -> Vec<Vec3> {
        let Some(frames) = &self.normal_frames else {
            return smooth_normals(positions, &self.mesh.triangles);
        };
        self.embedding
            .vertices()
            .iter()
            .zip(frames)
            .map(|(v, m)| {
                let p = v.map(|i| x[i as usize].truncate());
                let (a, b, c) = (p[1] - p[0], p[2] - p[0], p[3] - p[0]);
                // cof(Ds)·m, the columns of cof(Ds) being b×c, c×a, a×b.
                (b.cross(c) * m.x + c.cross(a) * m.y + a.cross(b) * m.z).normalize_or(Vec3::Y)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed_volume(m: &RenderMesh) -> f32 {
        m.enclosed_volume() as f32
    }

    #[test]
    fn uv_sphere_is_closed_and_outward() {
        let s = RenderMesh::uv_sphere(0.5, 16, 32);
        let exact = 4.0 / 3.0 * std::f32::consts::PI * 0.125;
        let v = signed_volume(&s);
        assert!(v > 0.0 && (v / exact - 1.0).abs() < 0.05, "{v} vs {exact}");
        for t in &s.triangles {
            let [a, b, c] = t.map(|i| s.positions[i as usize]);
            assert!((b - a).cross(c - a).length() > 0.0, "degenerate {t:?}");
        }
    }

    #[test]
    fn torus_normals_point_out_and_match_the_smooth_ones() {
        let t = RenderMesh::torus(0.3, 0.1, 24, 12);
        let analytic = t.normals.clone().unwrap();
        let smooth = smooth_normals(&t.positions, &t.triangles);
        for (k, p) in t.positions.iter().enumerate() {
            let ring = Vec3::new(p.x, 0.0, p.z).normalize() * 0.3;
            assert!((*p - ring).dot(analytic[k]) > 0.099, "vertex {k}");
            // Seam vertices are welded, so they agree with the analytic normals as well.
            assert!(analytic[k].dot(smooth[k]) > 0.98, "vertex {k}: {} vs {}", analytic[k], smooth[k]);
        }
        // Counter-clockwise from outside: the signed volume is positive.
        let v = signed_volume(&t);
        let exact = 2.0 * std::f32::consts::PI.powi(2) * 0.3 * 0.01;
        // An inscribed polyhedron of 24 × 12 facets holds about 6 % less.
        assert!(v < exact && v > 0.9 * exact, "{v} vs {exact}");
    }
}
