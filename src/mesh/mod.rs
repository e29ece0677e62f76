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

pub use adjacency::{Csr, pack_entry, unpack_entry, vertex_element_csr};
pub use coloring::{Coloring, find_coloring_conflict, greedy_coloring, vertex_graph};
pub use embedding::{Embedding, barycentric};
pub use error::MeshError;
pub use generators::TetSplit;
pub use render_mesh::{EmbeddedMesh, RenderMesh, palette_color, smooth_normals};
pub use surface::Surface;
pub use tet_mesh::TetMesh;
pub use tri_mesh::{Hinge, TriMesh};
pub use validate::{DEGENERACY_RATIO, tet_volume, triangle_area};
pub use voxel::MAX_VOXEL_CELLS;
pub use voxel_conform::{MAX_OUTSIDE, MIN_VOLUME_RATIO};
