//! Render meshes: an artist's triangles (with seams, slivers and all) that are drawn, not
//! simulated, and the embedded form in which they follow a simulated tet mesh.

use glam::{Vec3, Vec4};

use super::{Embedding, MeshError, TetMesh};

/// Triangles to draw or export. Unlike [`super::TriMesh`] nothing is required of them beyond
/// valid indices: duplicate vertices along seams and degenerate slivers are normal in assets.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RenderMesh {
    /// Name (a glTF mesh or node name, or a body's).
    pub name: String,
    /// Vertex positions \[m\].
    pub positions: Vec<Vec3>,
    /// Unit vertex normals, if the asset has them (else [`smooth_normals`] makes some).
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
    let (lo, hi) =
        positions.iter().fold((Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)), |(a, b), p| (a.min(*p), b.max(*p)));
    let q = ((hi - lo).max_element() as f64 * 1e-6).max(f64::MIN_POSITIVE);
    let mut weld: std::collections::HashMap<[i64; 3], u32> = std::collections::HashMap::with_capacity(positions.len());
    let canonical: Vec<u32> = positions
        .iter()
        .enumerate()
        .map(|(k, p)| *weld.entry(p.to_array().map(|c| (c as f64 / q).round() as i64)).or_insert(k as u32))
        .collect();
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

/// A render mesh whose vertices follow a simulated tet mesh through an [`Embedding`].
#[derive(Clone, Debug, PartialEq)]
pub struct EmbeddedMesh {
    /// The render mesh at rest, in the same frame as the tet mesh it is embedded in.
    pub mesh: RenderMesh,
    /// Where each render vertex sits in the tet mesh.
    pub embedding: Embedding,
}

impl EmbeddedMesh {
    /// Embeds `mesh`'s vertices in `tets` (both at rest, in one frame).
    pub fn new(mesh: RenderMesh, tets: &TetMesh) -> Result<Self, MeshError> {
        let embedding = Embedding::new(tets, &mesh.positions)?;
        Ok(Self { mesh, embedding })
    }

    /// The render vertices for the simulated positions `x` of the body (into `out`).
    pub fn positions(&self, x: &[Vec4], out: &mut Vec<Vec3>) {
        self.embedding.apply(x, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed_volume(m: &RenderMesh) -> f32 {
        m.triangles
            .iter()
            .map(|f| {
                let [a, b, c] = f.map(|i| m.positions[i as usize]);
                a.dot(b.cross(c)) / 6.0
            })
            .sum()
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
