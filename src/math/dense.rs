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
