//! Host wrappers, one per WGSL kernel in `shaders/` and named as it.

pub mod vbd_chebyshev;
pub mod vbd_color;
pub mod vbd_finish;
pub mod vbd_inertia;
