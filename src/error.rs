//! `PliantError`: every module's typed error, in one enum for callers who do not care which.

use crate::body::{BodyError, SoftBodyHandle};
use crate::collision::ObstacleError;
use crate::material::MaterialError;
use crate::mesh::MeshError;
use crate::runtime::ConfigError;

/// Any Pliant error. Each variant says what is wrong and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PliantError {
    /// A mesh problem.
    #[error(transparent)]
    Mesh(#[from] MeshError),
    /// A material parameter.
    #[error(transparent)]
    Material(#[from] MaterialError),
    /// A body problem (names the body).
    #[error(transparent)]
    Body(#[from] BodyError),
    /// An obstacle parameter.
    #[error(transparent)]
    Obstacle(#[from] ObstacleError),
    /// A step configuration value.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A scene file problem (names the field).
    #[cfg(feature = "serde")]
    #[error(transparent)]
    Scene(#[from] crate::io::SceneError),
    /// The handle does not refer to a body in this world.
    #[error("invalid soft body handle {0:?}")]
    InvalidHandle(SoftBodyHandle),
    /// A per-vertex input has the wrong length.
    #[error("body `{body}`: expected {expected} values, got {got}")]
    LengthMismatch {
        /// Body name.
        body: String,
        /// Expected count.
        expected: usize,
        /// Given count.
        got: usize,
    },
    /// A user-supplied value is NaN or infinite.
    #[error("body `{body}`: non-finite {field} at index {index}")]
    NonFiniteInput {
        /// Body name.
        body: String,
        /// What was set.
        field: &'static str,
        /// Index of the first bad value.
        index: usize,
    },
    /// The body has no pin with that index, or it is not scripted.
    #[error("body `{body}` has no scripted pin {pin}")]
    NoSuchPin {
        /// Body name.
        body: String,
        /// Pin index.
        pin: usize,
    },
    /// A vertex index past the body's vertex count.
    #[error("body `{body}`: vertex {vertex} does not exist (the body has {count} vertices)")]
    NoSuchVertex {
        /// Body name.
        body: String,
        /// The index given.
        vertex: u32,
        /// The body's vertex count.
        count: u32,
    },
    /// An attachment handle that was detached, or belongs to a removed body.
    #[error("attachment {0} does not exist (detached, or its body was removed)")]
    NoSuchAttachment(String),
    /// A rapier rigid body handle that names no body of the set given.
    #[error("rapier rigid body {0} does not exist in the rigid body set given")]
    NoSuchRigidBody(String),
}
