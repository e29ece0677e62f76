//! The runtime: `World`, step configuration, reports and events.

mod assemble;
mod budget;
mod config;
pub(crate) mod energy;
mod events;
pub(crate) mod fallback;
mod islands;
mod kinematics;
mod report;
pub(crate) mod safety;
mod transaction;
mod world;

pub use config::{Backend, ConfigError, FallbackPolicy, StepConfig};
pub use events::PliantEvent;
pub use fallback::{HOLD_FRAMES, MAX_HOLD_FRAMES};
pub use report::{Energies, IslandReport, StepPath, StepReport};
pub use safety::{
    CLAMP_LOCK_SHARE, DIVERGED_WEIGHTS, FallbackReason, INVERSION_J, MASS_CONTRAST, MAX_SPEED, RESIDUAL_WEIGHT_SHARE,
    STIFFNESS_CONTRAST,
};
pub(crate) use world::SubstepContext;
pub use world::{Intersection, World};
