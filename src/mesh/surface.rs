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
