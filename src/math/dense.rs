//! Small dense symmetric positive-definite solves (f64, row-major), for coarse corrections whose
//! systems have a few dozen unknowns.

/// Solves `A x = b` in place for a symmetric positive-definite `n × n` matrix `a` (row-major;
/// only the lower triangle is read, and it is overwritten by the Cholesky factor) and right-hand
/// side `b` (overwritten by `x`).
///
/// Returns `false`, leaving `a` and `b` partly overwritten, when a pivot is not positive or not
/// finite (the matrix is not numerically positive definite).
pub fn cholesky_solve(a: &mut [f64], b: &mut [f64], n: usize) -> bool {
    debug_assert!(a.len() >= n * n && b.len() >= n);
    // A = L Lᵀ, column by column (L overwrites the lower triangle).
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= a[j * n + k] * a[j * n + k];
        }
        if !(d > 0.0 && d.is_finite()) {
            return false;
        }
        let d = d.sqrt();
        a[j * n + j] = d;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = s / d;
        }
    }
    // L y = b, then Lᵀ x = y.
    for i in 0..n {
        let mut s = b[i];
        for k in 0..i {
            s -= a[i * n + k] * b[k];
        }
        b[i] = s / a[i * n + i];
    }
    for i in (0..n).rev() {
        let mut s = b[i];
        for k in i + 1..n {
            s -= a[k * n + i] * b[k];
        }
        b[i] = s / a[i * n + i];
    }
    b[..n].iter().all(|x| x.is_finite())
}

/// Largest matrix [`project_psd`] takes: a tet's 12 × 12.
pub const MAX_PROJECTED: usize = 12;

/// Projects a symmetric `n × n` matrix (row-major, both triangles stored) onto the positive
/// semi-definite cone in place: negative eigenvalues become zero. For element Hessians (n ≤ 12)
/// in Newton solves, which need a descent direction from every element.
///
/// A matrix that is already positive semi-definite up to rounding (the common case near rest)
/// is left as it is; otherwise cyclic Jacobi rotations diagonalise a copy (quadratic convergence;
/// at most six sweeps, rotations skipped for entries below 1e-13 of the Frobenius norm) and
/// the matrix is rebuilt from the clamped spectrum.
pub fn project_psd(a: &mut [f64], n: usize) {
    assert!(n <= MAX_PROJECTED && a.len() >= n * n, "project_psd: {n} × {n} from {} entries", a.len());
    // Element Hessians are singular (rigid motions cost nothing), so the test factors
    // `A + ε I` with ε a 1e-7 share of the mean diagonal: a matrix passing it has no eigenvalue
    // below −ε, too small to spoil a Newton direction, and is left alone. Scratch on the stack:
    // the fallback projects every element of its island at every Newton iteration.
    let shift = 1e-7 * (0..n).map(|i| a[i * n + i].abs()).sum::<f64>() / n as f64;
    let mut factor = [0.0f64; MAX_PROJECTED * MAX_PROJECTED];
    factor[..n * n].copy_from_slice(&a[..n * n]);
    for i in 0..n {
        factor[i * n + i] += shift;
    }
    let mut rhs = [0.0f64; MAX_PROJECTED];
    if shift > 0.0 && cholesky_solve(&mut factor, &mut rhs, n) {
        return;
    }
    // Eigenvectors accumulate in the columns of v.
    let mut d = [0.0f64; MAX_PROJECTED * MAX_PROJECTED];
    d[..n * n].copy_from_slice(&a[..n * n]);
    let mut v = [0.0f64; MAX_PROJECTED * MAX_PROJECTED];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    let norm2: f64 = d.iter().map(|x| x * x).sum();
    if !norm2.is_finite() {
        return;
    }
    // Six sweeps: cyclic Jacobi converges quadratically once the off-diagonal mass is small, and
    // a projection only needs the spectrum's sign right (what rounding leaves behind is an
    // eigenvalue within a hair of zero).
    let tiny = 1e-13 * norm2.sqrt();
    for _ in 0..6 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| d[i * n + j] * d[i * n + j])
            .sum();
        if off <= 1e-24 * norm2 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = d[p * n + q];
                if apq.abs() <= tiny {
                    continue;
                }
                // The rotation that zeroes d[p][q] (Golub & Van Loan, symmetric Schur).
                let theta = (d[q * n + q] - d[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (dkp, dkq) = (d[k * n + p], d[k * n + q]);
                    d[k * n + p] = c * dkp - s * dkq;
                    d[k * n + q] = s * dkp + c * dkq;
                }
                for k in 0..n {
                    let (dpk, dqk) = (d[p * n + k], d[q * n + k]);
                    d[p * n + k] = c * dpk - s * dqk;
                    d[q * n + k] = s * dpk + c * dqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    // A⁺ = V max(Λ, 0) Vᵀ.
    for i in 0..n {
        for j in 0..n {
            a[i * n + j] = (0..n).map(|k| v[i * n + k] * d[k * n + k].max(0.0) * v[j * n + k]).sum();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    #[test]
    fn solves_random_spd_systems() {
        let mut rng = Rng(7);
        for n in [1, 2, 3, 6, 12, 30] {
            // A = Bᵀ B + n I is SPD and moderately conditioned.
            let b: Vec<f64> = (0..n * n).map(|_| rng.signed()).collect();
            let mut a = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    a[i * n + j] = (0..n).map(|k| b[k * n + i] * b[k * n + j]).sum::<f64>();
                }
                a[i * n + i] += n as f64;
            }
            let x: Vec<f64> = (0..n).map(|_| rng.signed()).collect();
            let mut rhs: Vec<f64> = (0..n).map(|i| (0..n).map(|j| a[i * n + j] * x[j]).sum()).collect();
            let mut f = a.clone();
            assert!(cholesky_solve(&mut f, &mut rhs, n));
            for i in 0..n {
                assert!((rhs[i] - x[i]).abs() < 1e-10, "n = {n}, i = {i}: {} vs {}", rhs[i], x[i]);
            }
        }
    }

    /// The projection keeps a PSD matrix, and for an indefinite one gives the nearest PSD
    /// matrix: same eigenvectors, negative eigenvalues zeroed (checked on `Q diag(λ) Qᵀ` with
    /// a random orthogonal `Q` from Gram–Schmidt).
    #[test]
    fn projection_zeroes_negative_eigenvalues() {
        let mut rng = Rng(11);
        for n in [2, 3, 9, 12] {
            let mut q: Vec<Vec<f64>> = Vec::new();
            while q.len() < n {
                let mut c: Vec<f64> = (0..n).map(|_| rng.signed()).collect();
                for b in &q {
                    let dot: f64 = c.iter().zip(b).map(|(x, y)| x * y).sum();
                    c.iter_mut().zip(b).for_each(|(x, y)| *x -= dot * y);
                }
                let len = c.iter().map(|x| x * x).sum::<f64>().sqrt();
                if len > 1e-3 {
                    q.push(c.into_iter().map(|x| x / len).collect());
                }
            }
            let lambda: Vec<f64> =
                (0..n).map(|k| if k % 3 == 0 { -(k as f64) - 1.0 } else { k as f64 + 0.5 }).collect();
            let build = |l: &dyn Fn(f64) -> f64| -> Vec<f64> {
                (0..n * n).map(|ij| (0..n).map(|k| q[k][ij / n] * l(lambda[k]) * q[k][ij % n]).sum()).collect()
            };
            let mut a = build(&|x| x);
            let expected = build(&|x: f64| x.max(0.0));
            project_psd(&mut a, n);
            for (x, y) in a.iter().zip(&expected) {
                assert!((x - y).abs() < 1e-9, "n = {n}: {x} vs {y}");
            }
            let mut spd = build(&|x: f64| x.abs() + 1.0);
            let before = spd.clone();
            project_psd(&mut spd, n);
            assert_eq!(spd, before, "a positive-definite matrix is left alone");
        }
    }

    #[test]
    fn rejects_indefinite_and_singular_matrices() {
        let mut a = vec![1.0, 2.0, 2.0, 1.0];
        let mut b = vec![1.0, 1.0];
        assert!(!cholesky_solve(&mut a, &mut b, 2));
        let mut a = vec![1.0, 1.0, 1.0, 1.0];
        let mut b = vec![1.0, 1.0];
        assert!(!cholesky_solve(&mut a, &mut b, 2));
        let mut a = vec![f64::NAN];
        let mut b = vec![1.0];
        assert!(!cholesky_solve(&mut a, &mut b, 1));
    }
}
