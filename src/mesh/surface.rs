//! Boundary surfaces of tet meshes.

use std::collections::HashMap;

/// The four faces of a positively oriented tet `(a, b, c, d)`, each ordered so that its normal
/// `(p1 − p0) × (p2 − p0)` points away from the opposite vertex.
pub(crate) const TET_FACES: [[usize; 3]; 4] = [[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]];

/// A boundary surface: outward-oriented triangles indexing the parent mesh's vertices.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Surface {
    /// Triangles (parent-mesh vertex indices), normals pointing out of the solid.
    pub triangles: Vec<[u32; 3]>,
    /// The parent-mesh vertices the surface uses, sorted ascending.
    pub vertices: Vec<u32>,
}

/// Faces that belong to exactly one tet, in tet order.
pub(crate) fn extract_boundary(tets: &[[u32; 4]]) -> Surface {
    let mut count: HashMap<[u32; 3], u32> = HashMap::with_capacity(tets.len() * 2);
    for t in tets {
        for f in TET_FACES {
            let mut key = [t[f[0]], t[f[1]], t[f[2]]];
            key.sort_unstable();
            *count.entry(key).or_insert(0) += 1;
        }
    }
    let mut triangles = Vec::new();
    for t in tets {
        for f in TET_FACES {
            let tri = [t[f[0]], t[f[1]], t[f[2]]];
            let mut key = tri;
            key.sort_unstable();
            if count[&key] == 1 {
                triangles.push(tri);
            }
        }
    }
    let mut vertices: Vec<u32> = triangles.iter().flatten().copied().collect();
    vertices.sort_unstable();
    vertices.dedup();
    Surface { triangles, vertices }
}

#[cfg(test)]
mod tests {
    use crate::mesh::{TetMesh, TetSplit};
    use glam::Vec3;

    /// Divergence theorem: for an outward-oriented closed surface,
    /// `Σ p0 · (p1 − p0) × (p2 − p0) / 6` over its triangles equals the enclosed volume.
    #[test]
    fn boundary_is_closed_and_outward() {
        let meshes = [
            TetMesh::box_mesh(Vec3::new(0.3, 0.2, 0.1), [3, 4, 2], TetSplit::Six).unwrap(),
            TetMesh::box_mesh(Vec3::ONE, [3, 3, 3], TetSplit::Five).unwrap(),
            TetMesh::sphere(0.4, 6, TetSplit::Six).unwrap(),
        ];
        for m in meshes {
            let s = m.boundary_surface();
            let p = m.positions();
            let v: f64 = s
                .triangles
                .iter()
                .map(|t| {
                    let [a, b, c] = t.map(|i| p[i as usize].as_dvec3());
                    a.dot((b - a).cross(c - a)) / 6.0
                })
                .sum();
            assert!((v / m.volume() - 1.0).abs() < 1e-6, "{v} vs {}", m.volume());
            // Closed: every edge is shared by exactly two surface triangles, once each way.
            let mut edges = std::collections::HashMap::new();
            for t in &s.triangles {
                for k in 0..3 {
                    *edges.entry((t[k], t[(k + 1) % 3])).or_insert(0) += 1;
                }
            }
            for (&(a, b), &n) in &edges {
                assert_eq!(n, 1);
                assert_eq!(edges.get(&(b, a)), Some(&1), "open edge {a}-{b}");
            }
        }
    }
}
