//! glTF 2.0 in and out (feature `gltf`).
//!
//! - [`read_gltf`] / [`parse_gltf`]: the triangle meshes of a node and the nodes below it (or
//!   of the whole default scene) from a `.gltf` or `.glb`, merged in world coordinates through
//!   the nodes' transforms; float, quantized (`KHR_mesh_quantization`) and sparse positions.
//!   A scene body with `"mesh": { "format": "gltf", … }` turns it into a voxel tet mesh
//!   conformed to it ([`crate::mesh::TetMesh::voxelize`]) or takes TetGen tets, and embeds the
//!   render vertices in them ([`crate::mesh::EmbeddedMesh`]), so the artist's mesh follows the
//!   simulation; with a cloth material its own triangles, welded, are the cloth.
//! - [`AnimatedGlb`]: a run as an animated GLB that common viewers play (Blender, three.js and
//!   its online editor, Babylon's sandbox, Windows 3D Viewer): one node per recorded frame,
//!   shown at its time by a step-interpolated scale track. Morph targets would be the compact
//!   alternative, but players cap how many act at once (three.js: eight), and a run has
//!   hundreds of frames.
//! - [`static_glb`]: meshes at rest as a GLB (the bundled procedural asset is written so).
//!
//! From an asset to a body, without a scene file:
//!
//! ```no_run
//! use pliant::{EmbeddedMesh, TetMesh, TetSplit};
//! use pliant::prelude::*;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let render = pliant::io::gltf::read_gltf("jelly.glb".as_ref(), Some("torus"))?;
//! let tets = TetMesh::voxelize(&render.positions, &render.triangles, 0.03, TetSplit::SixMirrored)?;
//! let jelly = EmbeddedMesh::new(render, &tets)?; // the render mesh, riding on the tets
//! let mut world = World::new(StepConfig::default())?;
//! let handle = world.bodies.insert(SoftBodyBuilder::tetrahedral(tets).build()?);
//! world.step();
//! let mut vertices = Vec::new();
//! jelly.positions(world.body_positions(handle).unwrap_or_default(), &mut vertices);
//! # Ok(())
//! # }
//! ```

mod accessor;
mod export;
mod import;
mod nodes;

use std::path::PathBuf;

pub use export::{AnimatedGlb, StaticNode, static_glb};
pub use import::{parse_gltf, read_gltf};

/// A problem with a glTF file, naming the mesh, primitive or node.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GltfError {
    /// The file (or a buffer file it refers to) could not be read or written.
    #[error("cannot access {path}: {message}")]
    Io {
        /// File.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// Not valid glTF or GLB (JSON syntax, schema, GLB container, validation).
    #[error("{path} is not a valid glTF: {message}")]
    Parse {
        /// File.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// A buffer could not be resolved (missing GLB binary chunk, bad data URI, short file).
    #[error("{path}: buffer {buffer}: {message}")]
    Buffer {
        /// File.
        path: PathBuf,
        /// Buffer index.
        buffer: usize,
        /// What is wrong.
        message: String,
    },
    /// No node with that name, or no node with a mesh at all.
    #[error("{path}: {message}")]
    NoMesh {
        /// File.
        path: PathBuf,
        /// Which node was asked for and which nodes with meshes exist.
        message: String,
    },
    /// A mesh without primitives.
    #[error("{path}: node {node}: mesh {mesh} ({name}) has no primitives")]
    NoPrimitives {
        /// File.
        path: PathBuf,
        /// The node that uses the mesh (`` `name` `` or `#index`).
        node: String,
        /// Mesh index.
        mesh: usize,
        /// Mesh name (or `unnamed`).
        name: String,
    },
    /// A primitive that is not made of triangles (points or lines).
    #[error(
        "{path}: node {node}, mesh {mesh} ({mesh_name}), primitive {primitive} has mode {mode}; only triangles, strips and fans can be simulated"
    )]
    NotTriangles {
        /// File.
        path: PathBuf,
        /// The node that uses the mesh (`` `name` `` or `#index`).
        node: String,
        /// Mesh index.
        mesh: usize,
        /// Mesh name (or `unnamed`).
        mesh_name: String,
        /// Primitive index within the mesh.
        primitive: usize,
        /// The glTF mode (e.g. `Points`, `Lines`).
        mode: String,
    },
    /// A primitive without a `POSITION` attribute, or an accessor whose data does not fit.
    #[error("{path}: node {node}, mesh {mesh} ({mesh_name}), primitive {primitive}: {message}")]
    BadPrimitive {
        /// File.
        path: PathBuf,
        /// The node that uses the mesh (`` `name` `` or `#index`).
        node: String,
        /// Mesh index.
        mesh: usize,
        /// Mesh name (or `unnamed`).
        mesh_name: String,
        /// Primitive index within the mesh.
        primitive: usize,
        /// What is wrong (missing positions, index out of range, non-finite vertex, ...).
        message: String,
    },
    /// The file requires an extension that stores geometry in a form Pliant cannot decode.
    #[error(
        "{path} requires the glTF extension {extension}, whose compressed geometry Pliant cannot read; export the asset without mesh compression"
    )]
    Unsupported {
        /// File.
        path: PathBuf,
        /// The extension (`KHR_draco_mesh_compression`, `EXT_meshopt_compression`).
        extension: String,
    },
    /// Data that cannot be written as glTF (an empty run, mismatched frame data).
    #[error("cannot export glTF: {message}")]
    Export {
        /// What is wrong.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    /// The library route from an asset to a simulated body, as the module documents it.
    #[test]
    fn an_asset_becomes_a_body_whose_render_mesh_follows_it() {
        use crate::body::SoftBodyBuilder;
        use crate::mesh::{EmbeddedMesh, TetMesh, TetSplit};
        use crate::runtime::{StepConfig, World};

        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/assets/jelly.glb");
        let render = super::read_gltf(&path, Some("torus")).unwrap();
        let tets = TetMesh::voxelize(&render.positions, &render.triangles, 0.03, TetSplit::SixMirrored).unwrap();
        let jelly = EmbeddedMesh::new(render, &tets).unwrap();
        let mut world = World::new(StepConfig::default()).unwrap();
        let h = world.bodies.insert(SoftBodyBuilder::tetrahedral(tets).build().unwrap());
        world.step();
        let mut drawn = Vec::new();
        jelly.positions(world.body_positions(h).unwrap(), &mut drawn);
        let fell = jelly.mesh.positions[0].y - drawn[0].y;
        assert!(fell > 0.0 && fell < 0.01, "one frame of free fall moves it {fell} m");
    }
}
