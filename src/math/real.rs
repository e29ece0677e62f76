//! Scalar-generic vector maths: every energy is written once over [`Real`] and instantiated in
//! f32 (the solver, the layout the GPU shares) and f64 (finite-difference tests, the static
//! Newton oracle, host-side precomputation).
//!
//! The traits only forward to glam's inherent methods; with monomorphisation they cost nothing.

use core::fmt::Debug;
use core::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// A floating-point scalar with its 3-vector and 3×3 matrix types.
pub trait Real:
    Copy
    + PartialOrd
    + Debug
    + Default
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
{
    /// The 3-vector type (`Vec3A` for f32, `DVec3` for f64).
    type V3: Vector3<Self>;
    /// The 3×3 matrix type (`Mat3A` for f32, `DMat3` for f64).
    type M3: Matrix3<Self, V = Self::V3>;
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// Converts a literal or host value.
    fn lit(v: f64) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// Larger of two values.
    fn max(self, o: Self) -> Self;
    /// Four-quadrant arctangent of `self / x`.
    fn atan2(self, x: Self) -> Self;
    /// Neither NaN nor infinite.
    fn is_finite(self) -> bool;
}

/// A 3-vector over a [`Real`].
pub trait Vector3<R>:
    Copy
    + Debug
    + Send
    + Sync
    + PartialEq
    + Add<Output = Self>
    + Sub<Output = Self>
    + Neg<Output = Self>
    + Mul<R, Output = Self>
    + AddAssign
    + SubAssign
{
    /// (0, 0, 0).
    const ZERO: Self;
    /// Builds a vector.
    fn new(x: R, y: R, z: R) -> Self;
    /// Dot product.
    fn dot(self, o: Self) -> R;
    /// Cross product.
    fn cross(self, o: Self) -> Self;
    /// Euclidean length.
    fn length(self) -> R;
    /// Squared Euclidean length.
    fn length_squared(self) -> R;
    /// Component `i` (0, 1 or 2).
    fn at(self, i: usize) -> R;
    /// All components finite.
    fn is_finite(self) -> bool;
}

/// A 3×3 matrix over a [`Real`], column-major like glam.
pub trait Matrix3<R>:
    Copy + Debug + Send + Sync + Add<Output = Self> + Sub<Output = Self> + Mul<R, Output = Self> + AddAssign
{
    /// The matching vector type.
    type V: Vector3<R>;
    /// All zeros.
    const ZERO: Self;
    /// Identity.
    const IDENTITY: Self;
    /// Builds from three columns.
    fn from_cols(a: Self::V, b: Self::V, c: Self::V) -> Self;
    /// Column `i`.
    fn col(&self, i: usize) -> Self::V;
    /// Entry at row `r`, column `c`.
    fn at(&self, r: usize, c: usize) -> R {
        self.col(c).at(r)
    }
    /// Transpose.
    fn transpose(&self) -> Self;
    /// Matrix × vector.
    fn mul_vec(&self, v: Self::V) -> Self::V;
    /// Matrix × matrix.
    fn mul_mat(&self, o: &Self) -> Self;
    /// Determinant.
    fn determinant(&self) -> R;
    /// Inverse (garbage for singular matrices; callers check the determinant first).
    fn inverse(&self) -> Self;
    /// `s·I`.
    fn from_diagonal_scalar(s: R) -> Self;
}

/// Outer product `a bᵀ`.
#[inline(always)]
pub fn outer<R: Real>(a: R::V3, b: R::V3) -> R::M3 {
    R::M3::from_cols(a * b.at(0), a * b.at(1), a * b.at(2))
}

/// Skew matrix `[v]×`, so that `[v]× w = v × w`.
#[inline(always)]
pub fn skew<R: Real>(v: R::V3) -> R::M3 {
    let z = R::ZERO;
    R::M3::from_cols(
        R::V3::new(z, v.at(2), -v.at(1)),
        R::V3::new(-v.at(2), z, v.at(0)),
        R::V3::new(v.at(1), -v.at(0), z),
    )
}

macro_rules! impl_real {
    ($r:ty, $v:ty, $m:ty, $atan2:expr) => {
        impl Real for $r {
            type V3 = $v;
            type M3 = $m;
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn lit(v: f64) -> Self {
                v as $r
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$r>::sqrt(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$r>::abs(self)
            }
            #[inline(always)]
            fn max(self, o: Self) -> Self {
                <$r>::max(self, o)
            }
            #[inline(always)]
            fn atan2(self, x: Self) -> Self {
                $atan2(self, x)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$r>::is_finite(self)
            }
        }

        impl Vector3<$r> for $v {
            const ZERO: Self = <$v>::ZERO;
            #[inline(always)]
            fn new(x: $r, y: $r, z: $r) -> Self {
                <$v>::new(x, y, z)
            }
            #[inline(always)]
            fn dot(self, o: Self) -> $r {
                <$v>::dot(self, o)
            }
            #[inline(always)]
            fn cross(self, o: Self) -> Self {
                <$v>::cross(self, o)
            }
            #[inline(always)]
            fn length(self) -> $r {
                <$v>::length(self)
            }
            #[inline(always)]
            fn length_squared(self) -> $r {
                <$v>::length_squared(self)
            }
            #[inline(always)]
            fn at(self, i: usize) -> $r {
                self[i]
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$v>::is_finite(self)
            }
        }

        impl Matrix3<$r> for $m {
            type V = $v;
            const ZERO: Self = <$m>::ZERO;
            const IDENTITY: Self = <$m>::IDENTITY;
            #[inline(always)]
            fn from_cols(a: $v, b: $v, c: $v) -> Self {
                <$m>::from_cols(a, b, c)
            }
            #[inline(always)]
            fn col(&self, i: usize) -> $v {
                <$m>::col(self, i)
            }
            #[inline(always)]
            fn transpose(&self) -> Self {
                <$m>::transpose(self)
            }
            #[inline(always)]
            fn mul_vec(&self, v: $v) -> $v {
                *self * v
            }
            #[inline(always)]
            fn mul_mat(&self, o: &Self) -> Self {
                *self * *o
            }
            #[inline(always)]
            fn determinant(&self) -> $r {
                <$m>::determinant(self)
            }
            #[inline(always)]
            fn inverse(&self) -> Self {
                <$m>::inverse(self)
            }
            #[inline(always)]
            fn from_diagonal_scalar(s: $r) -> Self {
                <$m>::from_diagonal(<$v>::splat(s).into())
            }
        }
    };
}

impl_real!(f32, glam::Vec3A, glam::Mat3A, super::atan::atan2_f32);
impl_real!(f64, glam::DVec3, glam::DMat3, f64::atan2);

/// Shorthand for `R::lit(v)`.
#[inline(always)]
pub fn lit<R: Real>(v: f64) -> R {
    R::lit(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skew_matches_cross<R: Real>() {
        let v = R::V3::new(lit(0.3), lit(-1.2), lit(2.0));
        let w = R::V3::new(lit(1.5), lit(0.25), lit(-0.7));
        let a = skew::<R>(v).mul_vec(w);
        let b = v.cross(w);
        for i in 0..3 {
            assert!((a.at(i) - b.at(i)).abs() < lit(1e-6));
        }
    }

    #[test]
    fn skew_is_cross_product() {
        skew_matches_cross::<f32>();
        skew_matches_cross::<f64>();
    }
}
