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
mod sym3;

pub use atan::atan2_f32;
pub use dense::{cholesky_solve, project_psd};
pub use real::{Matrix3, Real, Vector3, lit, outer, skew};
pub use sym3::{is_positive_definite, project_abs3, project_psd3, solve_sym3, sym3_eigen};

/// f32 vector type used by the CPU solver (16-byte, SIMD).
pub type Vec3A = glam::Vec3A;
