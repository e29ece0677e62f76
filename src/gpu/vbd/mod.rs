//! The VBD fast path's kernels (twins of `solver::vbd`): the initial guess (`vbd_spin`,
//! `vbd_inertia`, `vbd_advance`), the spans' advance limit and contacts with boxes and spheres (`vbd_spans`), the colour passes (`vbd_color`), Chebyshev acceleration and its divergence
//! guard (`vbd_divergence`, `vbd_chebyshev`) and the velocity update (`vbd_finish`).

pub mod vbd_advance;
pub mod vbd_chebyshev;
pub mod vbd_color;
pub mod vbd_divergence;
pub mod vbd_finish;
pub mod vbd_inertia;
pub mod vbd_spans;
pub mod vbd_spin;
