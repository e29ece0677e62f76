//! Finite-difference checks for energies and distances (tests only): central differences of the
//! energy against the gradient and of the gradient against the Hessian, in f64, relative error
//! below 1e-4 (the bar; we see 1e-7 typically).

use glam::{DMat3, DVec3};

/// Relative tolerance for all finite-difference comparisons.
pub const FD_TOL: f64 = 1e-4;

/// A deterministic non-trivial deformation: an affine map `I + amount·M_seed` plus a small
/// per-vertex jitter, so no test sits on a symmetric configuration.
pub fn deform<const K: usize>(x: [DVec3; K], amount: f64, seed: u64) -> [DVec3; K] {
    let m = match seed % 3 {
        0 => DMat3::from_cols(DVec3::new(1.0, 0.3, 0.0), DVec3::new(0.0, 0.2, 0.5), DVec3::new(0.1, 0.0, -0.4)),
        1 => DMat3::from_cols(DVec3::new(1.0, 0.0, 0.2), DVec3::new(0.4, -0.3, 0.0), DVec3::new(0.0, 0.25, 0.6)),
        _ => DMat3::from_cols(DVec3::new(-0.2, 0.5, 0.0), DVec3::new(0.0, 1.0, 0.3), DVec3::new(0.2, 0.0, 0.1)),
    };
    let a = DMat3::IDENTITY + m * amount;
    let scale = x.iter().map(|p| (*p - x[0]).length()).fold(0.0, f64::max);
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut rnd = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((state >> 11) as f64 / (1u64 << 53) as f64) - 0.5
    };
    x.map(|p| a * p + DVec3::new(rnd(), rnd(), rnd()) * (0.05 * scale))
}

/// Asserts `|a − b| ≤ tol·max(|b|, 1e-12)`.
pub fn assert_vec_close(a: DVec3, b: DVec3, tol: f64) {
    let err = (a - b).length();
    assert!(err <= tol * b.length().max(a.length()).max(1e-12), "{a} vs {b}: error {err:e}");
}

/// Asserts two matrices agree to `tol` relative to the larger Frobenius norm.
pub fn assert_mat_close(a: &DMat3, b: &DMat3, tol: f64) {
    let diff = (0..3).map(|c| (a.col(c) - b.col(c)).length_squared()).sum::<f64>().sqrt();
    let norm = (0..3).map(|c| b.col(c).length_squared().max(a.col(c).length_squared())).sum::<f64>().sqrt();
    assert!(diff <= tol * norm.max(1e-12), "{a} vs {b}: error {diff:e} (norm {norm:e})");
}

/// Asserts a symmetric 3×3 block is positive semi-definite (up to rounding).
pub fn assert_psd(h: &DMat3) {
    let (vals, _) = crate::math::sym3_eigen::<f64>(h);
    let scale = vals.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(vals.iter().all(|&l| l >= -1e-9 * scale.max(1e-30)), "not PSD: eigenvalues {vals:?}");
}

/// Frobenius norm of a 3×3 block.
fn frobenius(m: &DMat3) -> f64 {
    (0..3).map(|c| m.col(c).length_squared()).sum::<f64>().sqrt()
}

/// Calls `visit(a, k, x⁺, x⁻, ε)` for every coordinate `x[a][k]` perturbed by ±ε, with ε
/// relative to the element's size.
fn perturbations<const K: usize>(x: &[DVec3; K], mut visit: impl FnMut(usize, usize, &[DVec3; K], &[DVec3; K], f64)) {
    let scale = x.iter().map(|p| (*p - x[0]).length()).fold(0.0, f64::max);
    let eps = 1e-6 * scale;
    for a in 0..K {
        for k in 0..3 {
            let mut xp = *x;
            let mut xm = *x;
            xp[a][k] += eps;
            xm[a][k] -= eps;
            visit(a, k, &xp, &xm, eps);
        }
    }
}

/// Checks the gradient against central differences of the energy.
fn check_gradient<const K: usize>(
    x: &[DVec3; K],
    energy: &impl Fn(&[DVec3; K]) -> f64,
    gradient: &impl Fn(&[DVec3; K]) -> [DVec3; K],
) {
    let g = gradient(x);
    let gnorm = g.iter().map(|v| v.length_squared()).sum::<f64>().sqrt();
    perturbations(x, |a, k, xp, xm, eps| {
        let fd = (energy(xp) - energy(xm)) / (2.0 * eps);
        assert!(
            (fd - g[a][k]).abs() <= FD_TOL * gnorm.max(1e-12),
            "gradient[{a}][{k}]: analytic {} vs fd {fd} (|g| {gnorm:e})",
            g[a][k]
        );
    });
}

/// Checks an element's gradient against central differences of its energy, and its full
/// Hessian against central differences of its gradient.
pub fn check_element<const K: usize>(
    x: &[DVec3; K],
    energy: impl Fn(&[DVec3; K]) -> f64,
    gradient: impl Fn(&[DVec3; K]) -> [DVec3; K],
    hessian: impl Fn(&[DVec3; K]) -> [[DMat3; K]; K],
) {
    check_gradient(x, &energy, &gradient);
    let h = hessian(x);
    let hnorm = h.iter().flatten().map(frobenius).fold(0.0, f64::max);
    perturbations(x, |a, k, xp, xm, eps| {
        let (gp, gm) = (gradient(xp), gradient(xm));
        for b in 0..K {
            // Column k of block (b, a): d(∇_b E)/d(x_a[k]).
            let fd_col = (gp[b] - gm[b]) / (2.0 * eps);
            let an = h[b][a].col(k);
            assert!(
                (fd_col - an).length() <= FD_TOL * hnorm.max(1e-12),
                "hessian[{b}][{a}] col {k}: analytic {an} vs fd {fd_col} (|H| {hnorm:e})"
            );
        }
    });
}

/// Checks a gradient against central differences of the energy, and per-vertex diagonal
/// Hessian blocks against central differences of the gradient (for energies whose solver
/// only needs the diagonal blocks).
pub fn check_gradient_and_diagonal_blocks<const K: usize>(
    x: &[DVec3; K],
    energy: impl Fn(&[DVec3; K]) -> f64,
    gradient: impl Fn(&[DVec3; K]) -> [DVec3; K],
    block: impl Fn(&[DVec3; K], usize) -> DMat3,
) {
    check_gradient(x, &energy, &gradient);
    let blocks: Vec<DMat3> = (0..K).map(|a| block(x, a)).collect();
    let hnorm = blocks.iter().map(frobenius).fold(0.0, f64::max);
    perturbations(x, |a, k, xp, xm, eps| {
        let fd_col = (gradient(xp)[a] - gradient(xm)[a]) / (2.0 * eps);
        let an = blocks[a].col(k);
        assert!(
            (fd_col - an).length() <= FD_TOL * hnorm.max(1e-12),
            "block[{a}] col {k}: analytic {an} vs fd {fd_col} (|H| {hnorm:e})"
        );
    });
}
