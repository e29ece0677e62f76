//! The safety check on the GPU (the twin of `solver::check`): hard tests (`step_check`), the
//! energy test (`step_energy`), the residual rule, island and clamp-lock flags (`step_soft`) and
//! the rollback of non-finite or unsafe substeps (`step_guard`).

pub mod step_check;
pub mod step_energy;
pub mod step_guard;
pub mod step_soft;
