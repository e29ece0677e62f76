//! Solvers: the fast path (Vertex Block Descent, [`vbd`]), the safety check on its result
//! ([`check`]) and the augmented-Lagrangian fallback ([`al`]), with what they share: time
//! integration, the initial guess, sparse linear algebra and the worker threads.

pub mod al;
pub(crate) mod check;
pub(crate) mod fast_path;
pub mod init;
pub mod integrator;
pub(crate) mod linear;
pub(crate) mod local_global;
pub(crate) mod momentum;
pub(crate) mod parallel;
pub(crate) mod union_find;
pub mod vbd;

pub use init::Initialization;
pub use integrator::Integrator;
pub use local_global::{LocalGlobalSettings, LocalGlobalStats};
pub use vbd::contact::SurfaceContactSettings;
pub use vbd::{CoarseSpace, Vbd, VbdSettings};
