//! The rigid correction of the initial guess on the GPU (the twin of
//! `solver::vbd::rigid_correction`): groups through contact, coarse quadratics, one Newton solve per
//! group, the motions applied (`rigid_*`), recorded by [`program`].

pub mod program;
pub mod rigid_apply;
pub mod rigid_groups;
pub mod rigid_reduce;
pub mod rigid_solve;
pub mod rigid_stretch;
