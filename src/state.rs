//! The one simulation state: structure-of-arrays, `#[repr(C)]` + bytemuck `Pod`, shared by
//! every solver and laid out so the GPU backend can upload it as-is (16-byte vectors and
//! padded records, matching WGSL's `vec3<f32>`/`mat3x3<f32>` alignment).
//!
//! Solvers keep only scratch; everything that survives a step lives here.

use bytemuck::{Pod, Zeroable};
use glam::{Mat3A, Vec3A, Vec4};

use crate::mesh::Csr;

/// Vertex flag: position prescribed (pinned or kinematic); not solved.
pub const VERTEX_KINEMATIC: u32 = 1;
/// Vertex flag: no valid acceleration history (first step, after a rollback or a user edit);
/// the next step assumes free flight (`a = g`).
pub const VERTEX_NO_HISTORY: u32 = 2;

/// Per-body step flag: the body touched a contact this step (Chebyshev leaves it alone).
pub const FROZEN_CONTACT: u32 = 1;
/// Per-body step flag: the body's sweeps stopped contracting (Chebyshev off for the step).
pub const FROZEN_DIVERGED: u32 = 2;

/// Per-element material constants, as the energies use them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct MaterialRecord {
    /// `material::MODEL_*`.
    pub model: u32,
    /// μ \[Pa\].
    pub mu: f32,
    /// λ \[Pa\] (for stable neo-Hookean the energy's λ, i.e. `λ_L + μ`).
    pub lambda: f32,
    /// Rayleigh stiffness-damping coefficient `k_d` \[s\] (\[VBD\] §3.3).
    pub damping: f32,
}

/// A tet element with its rest data.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct TetElement {
    /// Global vertex indices, positively oriented at rest.
    pub vertices: [u32; 4],
    /// Columns of `D_m⁻¹`, each padded to 16 bytes (WGSL `mat3x3<f32>` layout).
    pub dm_inv: [[f32; 4]; 3],
    /// Rest volume \[m³\].
    pub volume: f32,
    /// Index into [`SimState::materials`].
    pub material: u32,
    /// Padding to a 16-byte multiple.
    pub _pad: [u32; 2],
}

impl TetElement {
    /// `D_m⁻¹` as a SIMD matrix.
    #[inline(always)]
    pub fn dm_inv(&self) -> Mat3A {
        let c = |i: usize| Vec3A::new(self.dm_inv[i][0], self.dm_inv[i][1], self.dm_inv[i][2]);
        Mat3A::from_cols(c(0), c(1), c(2))
    }
}

/// A cloth membrane triangle with its rest data.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct TriElement {
    /// Global vertex indices; the fourth is unused (`u32::MAX`).
    pub vertices: [u32; 4],
    /// Row-major 2×2 `D_m⁻¹` in the triangle's rest frame.
    pub dm_inv: [f32; 4],
    /// Rest area × thickness \[m³\].
    pub measure: f32,
    /// Index into [`SimState::materials`].
    pub material: u32,
    /// Padding to a 16-byte multiple.
    pub _pad: [u32; 2],
}

/// A bending hinge: edge `(v0, v1)`, wings `v2` (triangle A) and `v3` (triangle B).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct HingeElement {
    /// Global vertex indices `[e0, e1, w0, w1]`.
    pub vertices: [u32; 4],
    /// Rest dihedral angle θ̄ \[rad\].
    pub rest_angle: f32,
    /// Hinge stiffness `k = D |ē|²/(Ā_A + Ā_B)` \[N·m\].
    pub stiffness: f32,
    /// Rayleigh damping `k_d` \[s\].
    pub damping: f32,
    /// Padding to a 16-byte multiple.
    pub _pad: u32,
}

/// Per-body constants the solver needs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct BodyRecord {
    /// First vertex in the state arrays.
    pub vertex_start: u32,
    /// Number of vertices.
    pub vertex_count: u32,
    /// Coulomb friction coefficient against obstacles (combined with the obstacle's).
    pub friction: f32,
    /// Linear (mass-proportional) damping α \[1/s\]: force `−α m v` on every vertex.
    pub linear_damping: f32,
    /// Mean rest length of the body's surface edges \[m\] (sets the contact search radius).
    pub surface_edge_length: f32,
    /// 1 when the body's surface collides with itself.
    pub self_collision: u32,
    /// The fast path the body asks for (`solver::local_global::SOLVER_*`).
    pub solver: u32,
    /// Padding to a 16-byte multiple.
    pub _pad: u32,
}

/// The simulation state of every body in a world.
#[derive(Clone, Debug, Default)]
pub struct SimState {
    /// Positions `x` \[m\]; `w` is 0.
    pub positions: Vec<Vec4>,
    /// Velocities `v` \[m/s\]; `w` is 0.
    pub velocities: Vec<Vec4>,
    /// Accelerations the last step realised `a^n` \[m/s²\] (Newmark history, adaptive
    /// initialisation).
    pub accelerations: Vec<Vec4>,
    /// Lumped masses \[kg\].
    pub masses: Vec<f32>,
    /// `VERTEX_*` flags.
    pub flags: Vec<u32>,
    /// Owning body (index into [`SimState::bodies`]) per vertex.
    pub vertex_body: Vec<u32>,
    /// Tet elements.
    pub tets: Vec<TetElement>,
    /// Membrane triangles.
    pub tris: Vec<TriElement>,
    /// Bending hinges.
    pub hinges: Vec<HingeElement>,
    /// Materials referenced by elements.
    pub materials: Vec<MaterialRecord>,
    /// Vertex → (tet, slot).
    pub tet_adjacency: Csr,
    /// Vertex → (triangle, slot).
    pub tri_adjacency: Csr,
    /// Vertex → (hinge, slot).
    pub hinge_adjacency: Csr,
    /// Start of each color in [`SimState::color_vertices`]; `color_count + 1` entries.
    pub color_offsets: Vec<u32>,
    /// Free (non-kinematic) vertices grouped by color.
    pub color_vertices: Vec<u32>,
    /// Per-body constants.
    pub bodies: Vec<BodyRecord>,
    /// Collision surface triangles (global vertex indices): tet boundaries, every cloth
    /// triangle.
    pub surface_triangles: Vec<[u32; 3]>,
    /// Unique edges of the surface triangles (lower index first).
    pub surface_edges: Vec<[u32; 2]>,
    /// Vertices of the surface triangles, ascending.
    pub surface_vertices: Vec<u32>,
}

impl SimState {
    /// Number of vertices (counted on the topology, which solvers never move out).
    pub fn vertex_count(&self) -> usize {
        self.masses.len()
    }

    /// Number of colors.
    pub fn color_count(&self) -> usize {
        self.color_offsets.len().saturating_sub(1)
    }

    /// Vertices of color `c`.
    #[cfg(test)]
    pub fn color(&self, c: usize) -> &[u32] {
        &self.color_vertices[self.color_offsets[c] as usize..self.color_offsets[c + 1] as usize]
    }

    /// Number of elements of all kinds.
    pub fn element_count(&self) -> usize {
        self.tets.len() + self.tris.len() + self.hinges.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_16_byte_multiples_for_wgsl() {
        assert_eq!(std::mem::size_of::<TetElement>(), 80);
        assert_eq!(std::mem::size_of::<TriElement>(), 48);
        assert_eq!(std::mem::size_of::<HingeElement>(), 32);
        assert_eq!(std::mem::size_of::<MaterialRecord>(), 16);
        assert_eq!(std::mem::size_of::<BodyRecord>(), 32);
        assert_eq!(std::mem::offset_of!(TetElement, dm_inv), 16);
        let s = SimState { positions: vec![Vec4::ONE; 3], masses: vec![1.0; 3], ..Default::default() };
        assert_eq!(s.vertex_count(), 3);
        assert_eq!(bytemuck::cast_slice::<Vec4, u8>(&s.positions).len(), 48);
    }
}
