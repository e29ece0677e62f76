//! Tetrahedral meshes.

use glam::Vec3;

use super::{MeshError, validate};

/// A validated tetrahedral mesh: rest positions and tets with positive orientation
/// (`(p1 − p0)·((p2 − p0) × (p3 − p0)) > 0`).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TetMesh {
    positions: Vec<Vec3>,
    tets: Vec<[u32; 4]>,
}

impl TetMesh {
    /// Builds and validates a tet mesh.
    ///
    /// Fails with a [`MeshError`] naming the element or vertex for: no vertices or tets,
    /// NaN/inf coordinates, out-of-range or repeated indices, zero, negative or degenerate
    /// volume, unused vertices and faces shared by more than two tets.
    pub fn new(positions: Vec<Vec3>, tets: Vec<[u32; 4]>) -> Result<Self, MeshError> {
        validate::check_vertices(&positions)?;
        validate::check_indices("tet", &tets, positions.len())?;
        validate::check_tet_volumes(&positions, &tets)?;
        validate::check_all_used(&tets, positions.len())?;
        validate::check_manifold_faces(&tets)?;
        Ok(Self { positions, tets })
    }

    /// Builds a mesh, first flipping every tet whose volume is negative. For generators and
    /// file formats whose orientation convention differs from ours; degenerate tets still fail.
    pub fn new_reoriented(positions: Vec<Vec3>, mut tets: Vec<[u32; 4]>) -> Result<Self, MeshError> {
        validate::check_vertices(&positions)?;
        validate::check_indices("tet", &tets, positions.len())?;
        for t in &mut tets {
            if validate::tet_volume(t.map(|i| positions[i as usize])) < 0.0 {
                t.swap(2, 3);
            }
        }
        Self::new(positions, tets)
    }

    /// Rest positions \[m\], one per vertex.
    pub fn positions(&self) -> &[Vec3] {
        &self.positions
    }

    /// Tets as four vertex indices each.
    pub fn tets(&self) -> &[[u32; 4]] {
        &self.tets
    }

    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.positions.len()
    }

    /// Number of tets.
    pub fn tet_count(&self) -> usize {
        self.tets.len()
    }

    /// Total rest volume \[m³\].
    pub fn volume(&self) -> f64 {
        self.tets.iter().map(|t| validate::tet_volume(t.map(|i| self.positions[i as usize]))).sum()
    }

    /// Axis-aligned bounds of the rest positions `(min, max)` \[m\].
    pub fn bounds(&self) -> (Vec3, Vec3) {
        bounds(&self.positions)
    }

    /// Applies a rigid transform (rotation then translation) to the rest positions.
    pub fn transformed(mut self, rotation: glam::Quat, translation: Vec3) -> Self {
        for p in &mut self.positions {
            *p = rotation * *p + translation;
        }
        self
    }

    /// The boundary surface, outward oriented.
    pub fn boundary_surface(&self) -> super::Surface {
        super::surface::extract_boundary(&self.tets)
    }
}

pub(crate) fn bounds(p: &[Vec3]) -> (Vec3, Vec3) {
    p.iter().fold((Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)), |(lo, hi), &q| (lo.min(q), hi.max(q)))
}
