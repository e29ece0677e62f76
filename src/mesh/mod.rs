//! Meshes: tet and triangle meshes, generators, validation, boundary surfaces, vertex→element
//! adjacency, vertex coloring, voxel tet meshes for triangle surfaces and the embedding of
//! render meshes in tet meshes. Pure data and functions; no solver code.

mod adjacency;
mod coloring;
mod embedding;
mod error;
mod generators;
mod render_mesh;
mod surface;
mod tet_mesh;
mod tri_mesh;
pub(crate) mod validate;
mod voxel;
mod voxel_conform;

#[cfg(test)]
pub(crate) use adjacency::pack_entry;
pub use adjacency::{Csr, unpack_entry, vertex_element_csr};
pub use coloring::{Coloring, greedy_coloring, vertex_graph};
pub use embedding::Embedding;
#[cfg(test)]
pub(crate) use embedding::barycentric;
pub use error::MeshError;
pub use generators::TetSplit;
pub use render_mesh::{EmbeddedMesh, RenderMesh, palette_color, smooth_normals};
pub use surface::Surface;
pub use tet_mesh::TetMesh;
pub use tri_mesh::{Hinge, TriMesh};
pub use validate::{DEGENERACY_RATIO, tet_volume, triangle_area};
