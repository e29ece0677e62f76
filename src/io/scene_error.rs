//! Scene-file errors, each naming the field.

use std::path::PathBuf;

/// A problem with a scene file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SceneError {
    /// The file could not be read.
    #[error("cannot read scene {path}: {message}")]
    Io {
        /// File.
        path: PathBuf,
        /// OS message.
        message: String,
    },
    /// JSON syntax or a field of the wrong type, an unknown field, or a missing one.
    #[error("scene field `{field}`: {message}")]
    Parse {
        /// Path to the field, e.g. `bodies[0].generator.cells`.
        field: String,
        /// What serde said.
        message: String,
    },
    /// A file the scene refers to does not exist or cannot be read.
    #[error("scene field `{field}`: cannot read {path}: {message}")]
    MissingFile {
        /// Path to the field, e.g. `bodies[0].mesh.path`.
        field: String,
        /// The file as resolved.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// A value of the right type but out of range, or inconsistent.
    #[error("scene field `{field}` = {value}: {reason}")]
    InvalidValue {
        /// Path to the field.
        field: String,
        /// The value, printed.
        value: String,
        /// What it must satisfy.
        reason: String,
    },
    /// Writing outputs failed.
    #[error("cannot write {path}: {message}")]
    Output {
        /// File.
        path: PathBuf,
        /// OS message.
        message: String,
    },
}

impl SceneError {
    pub(crate) fn invalid(field: impl Into<String>, value: impl std::fmt::Display, reason: impl Into<String>) -> Self {
        Self::InvalidValue { field: field.into(), value: value.to_string(), reason: reason.into() }
    }
}
