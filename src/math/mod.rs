//! Maths shared by every solver: scalar-generic vectors ([`Real`]), symmetric 3×3 solves,
//! PSD projection and small dense SPD solves.

mod atan;
mod dense;
mod real;
mod sym3;

pub use atan::atan2_f32;
pub use dense::{cholesky_solve, project_psd};
pub use real::{Matrix3, Real, Vector3, lit, outer, skew};
pub use sym3::{is_positive_definite, project_abs3, project_psd3, solve_sym3, sym3_eigen};

/// f32 vector type used by the CPU solver (16-byte, SIMD).
pub type Vec3A = glam::Vec3A;
