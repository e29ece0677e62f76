//! The runtime: `World`, step configuration, reports and events.

mod assemble;
mod budget;
mod config;

mod events;
pub(crate) mod fallback;
mod hooks;
mod islands;
mod kinematics;
mod report;

mod transaction;
mod world;

pub use crate::solver::check::{
    CLAMP_LOCK_SHARE, DIVERGED_WEIGHTS, FallbackReason, INVERSION_J, MASS_CONTRAST, MAX_SPEED, RESIDUAL_WEIGHT_SHARE,
    STIFFNESS_CONTRAST,
};
pub use config::{Backend, ConfigError, FallbackPolicy, StepConfig};
pub use events::PliantEvent;
pub use fallback::{HOLD_FRAMES, MAX_HOLD_FRAMES};
pub use hooks::{FrameMotion, StepHooks, SubstepContext};
pub use report::{Energies, IslandReport, StepPath, StepReport};
pub use world::{Intersection, World};
