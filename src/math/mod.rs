//! Maths shared by every solver: scalar-generic vectors ([`Real`]), symmetric 3×3 solves,
//! PSD projection, small dense SPD solves, and closest points between points, triangles and
//! edges with the derivatives of their squared distance ([`distance`]), which meshes,
//! collision and the solvers share.

mod atan;
mod dense;
pub mod distance;
#[cfg(test)]
pub(crate) mod fd;
mod real;
mod rigid_fit;
mod sym3;

pub use dense::{cholesky_solve, project_psd};
pub use real::{Matrix3, Real, Vector3, lit, outer, skew};
pub(crate) use rigid_fit::{RigidFit, fit_residual, fit_rigid};
#[cfg(test)]
pub(crate) use sym3::project_abs3;
pub use sym3::{solve_sym3, sym3_eigen};
