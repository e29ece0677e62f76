//! Solvers. Today: Vertex Block Descent on the CPU (the reference the GPU path will be tested
//! against), its integrators, initialisation and Chebyshev acceleration.

pub mod al;
pub(crate) mod carrier;
pub mod chebyshev;
pub(crate) mod check;
pub mod init;
pub mod integrator;
pub(crate) mod linear;
pub(crate) mod momentum;
pub(crate) mod parallel;
pub(crate) mod rigid_correction;
mod rigid_energy;
pub(crate) mod union_find;
pub mod vbd;
pub(crate) mod vbd_contact;
pub(crate) mod vbd_edges;
pub(crate) mod vbd_vertex;

pub use init::Initialization;
pub use integrator::Integrator;
pub use vbd::{VbdScratch, VbdSettings, VbdStats, vbd_step};
pub use vbd_contact::{BOUND_FRACTION, SurfaceContactSettings};
