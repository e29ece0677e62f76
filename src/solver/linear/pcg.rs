//! Preconditioned conjugate gradients with a block-Jacobi preconditioner.

use glam::{DMat3, DVec3};

/// How a PCG solve ended.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct PcgOutcome {
    /// Iterations taken.
    pub iterations: u32,
    /// `‖r‖ / ‖b‖` at the end.
    pub relative_residual: f64,
}

fn dot(a: &[DVec3], b: &[DVec3]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x.dot(*y)).sum()
}

/// Solves `A x = b` for a symmetric positive semi-definite `A` given by `apply(p, y)` (`y = A p`),
/// starting from `x = 0`, preconditioned by the inverses of `A`'s diagonal blocks
/// (`inverse_diagonal`). Stops at `‖r‖ ≤ tolerance ‖b‖`, after `max_iterations`, or when the
/// curvature along a search direction is not positive (the iterate so far is kept: it is still
/// a descent direction for the Newton step).
pub(crate) fn pcg(
    mut apply: impl FnMut(&[DVec3], &mut [DVec3]),
    inverse_diagonal: &[DMat3],
    b: &[DVec3],
    x: &mut [DVec3],
    tolerance: f64,
    max_iterations: u32,
) -> PcgOutcome {
    let n = b.len();
    x.fill(DVec3::ZERO);
    let b_norm = dot(b, b).sqrt();
    if !(b_norm > 0.0) {
        return PcgOutcome::default();
    }
    let mut r = b.to_vec();
    let mut z: Vec<DVec3> = r.iter().zip(inverse_diagonal).map(|(r, m)| *m * *r).collect();
    let mut p = z.clone();
    let mut ap = vec![DVec3::ZERO; n];
    let mut rz = dot(&r, &z);
    let mut out = PcgOutcome { iterations: 0, relative_residual: 1.0 };
    while out.iterations < max_iterations {
        apply(&p, &mut ap);
        let curvature = dot(&p, &ap);
        if !(curvature > 0.0) {
            break;
        }
        let alpha = rz / curvature;
        for i in 0..n {
            x[i] += p[i] * alpha;
            r[i] -= ap[i] * alpha;
        }
        out.iterations += 1;
        out.relative_residual = dot(&r, &r).sqrt() / b_norm;
        if out.relative_residual <= tolerance {
            break;
        }
        for i in 0..n {
            z[i] = inverse_diagonal[i] * r[i];
        }
        let rz_new = dot(&r, &z);
        let beta = rz_new / rz;
        rz = rz_new;
        for i in 0..n {
            p[i] = z[i] + p[i] * beta;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::linear::BlockCsr;

    /// A 1-D chain of springs with masses (tridiagonal, SPD) converges to the direct solution.
    #[test]
    fn solves_a_spring_chain() {
        let n = 40;
        let mut m = BlockCsr::with_pattern(n, |i, row| {
            if i > 0 {
                row.push(i as u32 - 1);
            }
            if i + 1 < n {
                row.push(i as u32 + 1);
            }
        });
        for i in 0..n as u32 {
            for j in 0..n as u32 {
                if let Some(k) = m.slot(i, j) {
                    m.blocks[k as usize] =
                        if i == j { DMat3::from_diagonal(DVec3::new(2.1, 3.0, 2.5)) } else { DMat3::IDENTITY * -1.0 };
                }
            }
        }
        let x_true: Vec<DVec3> = (0..n).map(|i| DVec3::new(i as f64, (i as f64).sin(), 1.0)).collect();
        let mut b = vec![DVec3::ZERO; n];
        m.multiply(&x_true, &mut b);
        let inv: Vec<DMat3> = (0..n).map(|i| m.diagonal_block(i).inverse()).collect();
        let mut x = vec![DVec3::ZERO; n];
        let out = pcg(|p, y| m.multiply(p, y), &inv, &b, &mut x, 1e-12, 500);
        assert!(out.relative_residual <= 1e-12, "{out:?}");
        for (a, e) in x.iter().zip(&x_true) {
            assert!((*a - *e).length() < 1e-8, "{a} vs {e}");
        }
    }
}
