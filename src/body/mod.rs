//! Bodies: handles, builders, the body set, pins and kinematic targets.

mod body_set;
mod error;
mod handle;
mod pin;
mod soft_body;
mod soft_body_builder;

pub use body_set::BodySet;
pub use error::BodyError;
pub use handle::SoftBodyHandle;
pub use pin::{Keyframe, KinematicPath, Pin, PinMotion};
pub use soft_body::{BodyShape, BodyShared, SoftBody, SolverChoice};
pub use soft_body_builder::{ClothBuilder, SoftBodyBuilder};
