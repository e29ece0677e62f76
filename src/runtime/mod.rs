//! The runtime: `World`, step configuration, reports and events.

mod assemble;
mod config;
mod energy;
mod events;
mod kinematics;
mod report;
mod transaction;
mod world;

pub use config::{Backend, ConfigError, StepConfig};
pub use events::PliantEvent;
pub use report::{Energies, StepReport};
pub(crate) use world::SubstepContext;
pub use world::{Intersection, World};
