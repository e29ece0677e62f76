//! Triangle meshes (cloth).

use glam::Vec3;

use super::{MeshError, validate};

/// A validated triangle mesh: rest positions and triangles. Used for cloth; its rest shape
/// defines the membrane's rest metric and the hinges' rest angles.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TriMesh {
    positions: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
}

/// A bending hinge: the edge `(e0, e1)` shared by triangles `(e0, e1, w0)` and `(e1, e0, w1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hinge {
    /// `[e0, e1, w0, w1]`: edge vertices, then the two wing vertices.
    pub vertices: [u32; 4],
}

impl TriMesh {
    /// Builds and validates a triangle mesh (same checks as [`super::TetMesh::new`], with
    /// areas instead of volumes and edges shared by more than two triangles rejected).
    pub fn new(positions: Vec<Vec3>, triangles: Vec<[u32; 3]>) -> Result<Self, MeshError> {
        validate::check_vertices(&positions)?;
        validate::check_indices("triangle", &triangles, positions.len())?;
        validate::check_triangle_areas(&positions, &triangles)?;
        validate::check_all_used(&triangles, positions.len())?;
        validate::check_manifold_edges(&triangles)?;
        Ok(Self { positions, triangles })
    }

    /// Rest positions \[m\].
    pub fn positions(&self) -> &[Vec3] {
        &self.positions
    }

    /// Triangles as three vertex indices each.
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.positions.len()
    }

    /// Total rest area \[m²\].
    pub fn area(&self) -> f64 {
        self.triangles.iter().map(|t| validate::triangle_area(t.map(|i| self.positions[i as usize]))).sum()
    }

    /// Applies a rigid transform (rotation then translation) to the rest positions.
    pub fn transformed(mut self, rotation: glam::Quat, translation: Vec3) -> Self {
        for p in &mut self.positions {
            *p = rotation * *p + translation;
        }
        self
    }

    /// Interior edges with their two wing vertices, in a deterministic order (by first
    /// occurrence of the edge in triangle order).
    pub fn hinges(&self) -> Vec<Hinge> {
        use std::collections::HashMap;
        // edge key -> (first triangle's wing, oriented edge as seen by the first triangle)
        let mut first: HashMap<[u32; 2], (u32, [u32; 2])> = HashMap::with_capacity(self.triangles.len() * 2);
        let mut hinges = Vec::new();
        for t in &self.triangles {
            for k in 0..3 {
                let (a, b, w) = (t[k], t[(k + 1) % 3], t[(k + 2) % 3]);
                let key = [a.min(b), a.max(b)];
                match first.get(&key) {
                    None => {
                        first.insert(key, (w, [a, b]));
                    }
                    Some(&(w0, [e0, e1])) => {
                        // The first triangle runs e0 → e1; a consistently oriented neighbour
                        // runs e1 → e0. Both orders are accepted: the rest angle absorbs it.
                        hinges.push(Hinge { vertices: [e0, e1, w0, w] });
                    }
                }
            }
        }
        hinges
    }
}
