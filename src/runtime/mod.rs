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

pub use crate::solver::check::FallbackReason;
pub use config::{Backend, ConfigError, FallbackPolicy, StepConfig};
pub use events::PliantEvent;
pub use hooks::{FrameMotion, StepHooks, SubstepContext};
pub use report::{Energies, IslandReport, PhaseTimes, StepPath, StepReport};
pub use world::{Intersection, World};
