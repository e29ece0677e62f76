//! The augmented-Lagrangian fallback on the GPU (the twin of `solver::al`): its kernels
//! (`al_*`), a subproblem's Newton iterations ([`newton`]), a whole step ([`step`]) with its
//! surface pairs ([`surface_pairs`]), and the fallback recorded into every substep and run
//! when the device decides ([`fallback`]).

pub mod al_commit;
pub mod al_elements;
pub mod al_gate;
pub mod al_merit;
pub mod al_outer;
pub mod al_pairs;
pub mod al_pcg;
pub mod al_search;
pub mod al_step_size;
pub mod al_surface;
pub mod al_surface_set;
pub mod fallback;
#[cfg(test)]
pub(crate) mod fixture;
pub mod newton;
pub mod step;
pub mod surface_pairs;
