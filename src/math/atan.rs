//! A branch-light single-precision `atan2`, accurate to about one f32 ulp.
//!
//! The cloth sweeps evaluate every hinge's dihedral angle once per adjacent vertex update; with
//! the C library's `atan2f` that was 12 % of a 100×100 cloth step. Range reduction to
//! `[0, tan(π/8)]` and an odd degree-9 minimax polynomial (Cephes' `atanf` coefficients) give
//! results within 2.7e-7 rad of the exact angle (under two f32 ulp at π) in a few multiply-adds.
//! f64 keeps the library `atan2`.

use std::f32::consts::{FRAC_PI_2, FRAC_PI_4, PI};

/// `atan(t)` for `t` in `[0, 1]`.
#[inline(always)]
fn atan_unit(t: f32) -> f32 {
    // tan(π/8): above it, atan t = π/4 + atan((t − 1)/(t + 1)) with the argument in [−0.18, 0].
    const TAN_PI_8: f32 = 0.414_213_57;
    let (base, u) = if t > TAN_PI_8 { (FRAC_PI_4, (t - 1.0) / (t + 1.0)) } else { (0.0, t) };
    let z = u * u;
    let p = ((8.053_744_5e-2 * z - 1.387_768_6e-1) * z + 1.997_771_1e-1) * z - 3.333_295e-1;
    base + (p * z * u + u)
}

/// Four-quadrant arctangent of `y / x` \[rad\] in `(−π, π]`, with the sign conventions of
/// [`f32::atan2`] for zeros and NaN propagation.
#[inline(always)]
pub fn atan2_f32(y: f32, x: f32) -> f32 {
    let (ax, ay) = (x.abs(), y.abs());
    let (num, den) = if ay > ax { (ax, ay) } else { (ay, ax) };
    if den == 0.0 {
        // Both zero: ±0 or ±π by the signs, as the library does.
        return if x.is_sign_negative() { PI.copysign(y) } else { y };
    }
    let mut a = atan_unit(num / den);
    if ay > ax {
        a = FRAC_PI_2 - a;
    }
    if x < 0.0 {
        a = PI - a;
    }
    a.copysign(y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    #[test]
    fn matches_the_library_to_a_few_ulp() {
        let mut rng = Rng(3);
        let mut next = || rng.signed();
        let mut worst = 0.0f64;
        for k in 0..200_000 {
            // Mixed scales, including tiny and huge ratios.
            let scale = 10f64.powi(k % 13 - 6);
            let (y, x) = ((next() * scale) as f32, next() as f32);
            let exact = (y as f64).atan2(x as f64);
            worst = worst.max((atan2_f32(y, x) as f64 - exact).abs());
        }
        // Below two f32 ulp at π (2.4e-7 each), rounding of the result included.
        assert!(worst < 4e-7, "worst error {worst}");
    }

    #[test]
    fn axes_zeros_and_nan_follow_the_library() {
        for (y, x) in [
            (0.0f32, 1.0f32),
            (1.0, 0.0),
            (0.0, -1.0),
            (-1.0, 0.0),
            (-0.0, 1.0),
            (0.0, 0.0),
            (-0.0, 0.0),
            (0.0, -0.0),
            (-0.0, -0.0),
            (1.0, 1.0),
            (-1.0, -1.0),
            (f32::INFINITY, 1.0),
        ] {
            let (a, b) = (atan2_f32(y, x), y.atan2(x));
            assert!(
                (a - b).abs() <= 2.5e-7 && a.is_sign_negative() == b.is_sign_negative(),
                "atan2({y}, {x}) = {a}, library {b}"
            );
        }
        assert!(atan2_f32(f32::NAN, 1.0).is_nan() && atan2_f32(1.0, f32::NAN).is_nan());
    }
}
