//! Kinematics of a linear tet: rest shape matrix, shape-function gradients, deformation
//! gradient.

use crate::math::{Matrix3, Real, Vector3};

/// Rest data of one tet: `D_m⁻¹` and the rest volume.
#[derive(Clone, Copy, Debug)]
pub struct TetRest<R: Real> {
    /// Inverse rest shape matrix `D_m⁻¹`, `D_m = [X1−X0, X2−X0, X3−X0]`.
    pub dm_inv: R::M3,
    /// Rest volume \[m³\] (positive for positively oriented tets).
    pub volume: R,
}

impl<R: Real> TetRest<R> {
    /// Rest data from rest positions; `None` for a degenerate tet.
    pub fn new(rest: [R::V3; 4]) -> Option<Self> {
        let dm = R::M3::from_cols(rest[1] - rest[0], rest[2] - rest[0], rest[3] - rest[0]);
        let det = dm.determinant();
        if !(det.abs() > R::ZERO) || !det.is_finite() {
            return None;
        }
        Some(Self { dm_inv: dm.inverse(), volume: det / R::lit(6.0) })
    }

    /// Shape-function gradients `g_a` (a = 0..3) with `∂F/∂x_a · w = w g_aᵀ`: rows of `D_m⁻¹`
    /// for a = 1..3, and `g_0 = −g_1 − g_2 − g_3`.
    #[inline]
    pub fn shape_gradients(&self) -> [R::V3; 4] {
        shape_gradients::<R>(&self.dm_inv)
    }
}

/// Shape-function gradients from `D_m⁻¹` (see [`TetRest::shape_gradients`]).
#[inline(always)]
pub fn shape_gradients<R: Real>(dm_inv: &R::M3) -> [R::V3; 4] {
    let t = dm_inv.transpose();
    let (g1, g2, g3) = (t.col(0), t.col(1), t.col(2));
    [-(g1 + g2 + g3), g1, g2, g3]
}

/// One shape-function gradient `g_a` (cheaper than [`shape_gradients`] when one slot is needed).
#[inline(always)]
pub fn shape_gradient<R: Real>(dm_inv: &R::M3, a: usize) -> R::V3 {
    let row = |i: usize| R::V3::new(dm_inv.at(i, 0), dm_inv.at(i, 1), dm_inv.at(i, 2));
    match a {
        0 => -(row(0) + row(1) + row(2)),
        _ => row(a - 1),
    }
}

/// Deformation gradient `F = [x1−x0, x2−x0, x3−x0] D_m⁻¹`.
#[inline(always)]
pub fn deformation_gradient<R: Real>(x: &[R::V3; 4], dm_inv: &R::M3) -> R::M3 {
    R::M3::from_cols(x[1] - x[0], x[2] - x[0], x[3] - x[0]).mul_mat(dm_inv)
}

/// Green strain `½ (FᵀF − I)` formed from `H = F − I` as `½ (H + Hᵀ + HᵀH)`, so that a small
/// strain is not the difference of two numbers near 1.
#[inline]
pub fn green_strain<R: Real>(f: &R::M3) -> R::M3 {
    let h = *f - R::M3::IDENTITY;
    (h + h.transpose() + h.transpose().mul_mat(&h)) * R::lit(0.5)
}

/// Cofactor matrix `cof(F) = [f2×f3, f3×f1, f1×f2] = ∂det F/∂F`.
#[inline(always)]
pub fn cofactor<R: Real>(f: &R::M3) -> R::M3 {
    let (f1, f2, f3) = (f.col(0), f.col(1), f.col(2));
    R::M3::from_cols(f2.cross(f3), f3.cross(f1), f1.cross(f2))
}
