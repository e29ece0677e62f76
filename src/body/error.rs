//! Errors raised when building a body.

use crate::material::MaterialError;
use crate::mesh::MeshError;

/// What is wrong with a body, naming the body.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BodyError {
    /// The mesh failed validation.
    #[error("body `{body}`: invalid mesh: {source}")]
    Mesh {
        /// Body name.
        body: String,
        /// The mesh problem.
        source: MeshError,
    },
    /// A material parameter is invalid.
    #[error("body `{body}`: {source}")]
    Material {
        /// Body name.
        body: String,
        /// The material problem.
        source: MaterialError,
    },
    /// A scalar body parameter is out of range.
    #[error("body `{body}`: `{field}` = {value} is invalid: {reason}")]
    Parameter {
        /// Body name.
        body: String,
        /// Field (`density`, `damping`, `friction`, `velocity`, …).
        field: &'static str,
        /// The rejected value, printed.
        value: String,
        /// What it must satisfy.
        reason: &'static str,
    },
    /// A pin names a vertex the mesh does not have.
    #[error("body `{body}`: pin {pin} refers to vertex {vertex}, but the mesh has {vertex_count} vertices")]
    PinOutOfRange {
        /// Body name.
        body: String,
        /// Pin index.
        pin: usize,
        /// Offending vertex.
        vertex: u32,
        /// Vertices in the mesh.
        vertex_count: u32,
    },
    /// A vertex appears in two pins.
    #[error("body `{body}`: vertex {vertex} is pinned twice (pins {first} and {second})")]
    PinnedTwice {
        /// Body name.
        body: String,
        /// The vertex.
        vertex: u32,
        /// First pin index.
        first: usize,
        /// Second pin index.
        second: usize,
    },
    /// A pin is malformed (empty, bad path, wrong number of scripted targets).
    #[error("body `{body}`: pin {pin}: {reason}")]
    BadPin {
        /// Body name.
        body: String,
        /// Pin index.
        pin: usize,
        /// What is wrong.
        reason: String,
    },
}
