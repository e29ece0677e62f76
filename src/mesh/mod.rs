//! Meshes: tet and triangle meshes, generators, validation, boundary surfaces, vertex→element
//! adjacency and vertex coloring. Pure data and functions; no solver code.

mod adjacency;
mod coloring;
mod error;
mod generators;
mod surface;
mod tet_mesh;
mod tri_mesh;
pub(crate) mod validate;

pub use adjacency::{Csr, pack_entry, unpack_entry, vertex_element_csr};
pub use coloring::{Coloring, find_coloring_conflict, greedy_coloring, vertex_graph};
pub use error::MeshError;
pub use generators::TetSplit;
pub use surface::Surface;
pub use tet_mesh::TetMesh;
pub use tri_mesh::{Hinge, TriMesh};
pub use validate::{DEGENERACY_RATIO, tet_volume, triangle_area};
