//! Small symmetric 3×3 helpers: the per-vertex Newton solve of VBD and PSD projection of
//! Hessian blocks.

#[cfg(test)]
use super::real::outer;
use super::real::{Matrix3, Real, Vector3, lit};

/// Solves `H Δ = f` for a symmetric 3×3 `H` by the adjugate formula.
///
/// Returns `None` when `|det H| ≤ 1e-6 (tr H / 3)³` (docs/algorithms.md §2.1: a relative test, so the
/// skip does not depend on units), or when the result is not finite; VBD then leaves the
/// vertex where it is for this sweep.
#[inline]
pub fn solve_sym3<R: Real>(h: &R::M3, f: R::V3) -> Option<R::V3> {
    let c0 = h.col(0);
    let c1 = h.col(1);
    let c2 = h.col(2);
    // Columns of the adjugate are cross products of the columns (H symmetric).
    let a0 = c1.cross(c2);
    let a1 = c2.cross(c0);
    let a2 = c0.cross(c1);
    let det = c0.dot(a0);
    let tr = (c0.at(0) + c1.at(1) + c2.at(2)) * lit::<R>(1.0 / 3.0);
    if !(det.abs() > lit::<R>(1e-6) * (tr * tr * tr).abs()) {
        return None;
    }
    // H⁻¹ = adj(H)/det and adj(H) = [a0 a1 a2]ᵀ; for symmetric H it is symmetric as well.
    let inv_det = R::ONE / det;
    let d = R::V3::new(a0.dot(f), a1.dot(f), a2.dot(f)) * inv_det;
    if d.is_finite() { Some(d) } else { None }
}

/// True if the symmetric matrix is positive definite (all Cholesky pivots positive).
#[inline]
#[cfg(test)]
pub fn is_positive_definite<R: Real>(h: &R::M3) -> bool {
    let a00 = h.at(0, 0);
    if !(a00 > R::ZERO) {
        return false;
    }
    let a10 = h.at(1, 0);
    let a11 = h.at(1, 1);
    let m1 = a00 * a11 - a10 * a10;
    if !(m1 > R::ZERO) {
        return false;
    }
    h.determinant() > R::ZERO
}

/// Eigen-decomposition of a symmetric 3×3 matrix by cyclic Jacobi rotations.
///
/// Returns `(eigenvalues, eigenvectors as columns)`. Jacobi is slower than the closed form but
/// accurate in f32 for nearly repeated eigenvalues, which is where the closed form fails.
pub fn sym3_eigen<R: Real>(h: &R::M3) -> ([R; 3], R::M3) {
    let mut a = [[R::ZERO; 3]; 3];
    for (r, row) in a.iter_mut().enumerate() {
        for (c, v) in row.iter_mut().enumerate() {
            *v = h.at(r, c);
        }
    }
    let mut v = [[R::ZERO; 3]; 3];
    for (i, row) in v.iter_mut().enumerate() {
        row[i] = R::ONE;
    }
    for _sweep in 0..12 {
        let off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
        let diag = a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2];
        if !(off > lit::<R>(1e-30) * diag) {
            break;
        }
        for (p, q) in [(0usize, 1usize), (0, 2), (1, 2)] {
            let apq = a[p][q];
            if apq == R::ZERO {
                continue;
            }
            // Classic Jacobi rotation zeroing a[p][q].
            let theta = (a[q][q] - a[p][p]) / (lit::<R>(2.0) * apq);
            let t = {
                let sign = if theta >= R::ZERO { R::ONE } else { -R::ONE };
                sign / (theta.abs() + (theta * theta + R::ONE).sqrt())
            };
            let c = R::ONE / (t * t + R::ONE).sqrt();
            let s = t * c;
            for k in 0..3 {
                let akp = a[k][p];
                let akq = a[k][q];
                a[k][p] = c * akp - s * akq;
                a[k][q] = s * akp + c * akq;
            }
            for k in 0..3 {
                let apk = a[p][k];
                let aqk = a[q][k];
                a[p][k] = c * apk - s * aqk;
                a[q][k] = s * apk + c * aqk;
            }
            for row in v.iter_mut() {
                let vkp = row[p];
                let vkq = row[q];
                row[p] = c * vkp - s * vkq;
                row[q] = s * vkp + c * vkq;
            }
        }
    }
    let vecs = R::M3::from_cols(
        R::V3::new(v[0][0], v[1][0], v[2][0]),
        R::V3::new(v[0][1], v[1][1], v[2][1]),
        R::V3::new(v[0][2], v[1][2], v[2][2]),
    );
    ([a[0][0], a[1][1], a[2][2]], vecs)
}

/// Projects a symmetric 3×3 matrix onto the positive semi-definite cone (clamps negative
/// eigenvalues to zero). Positive-definite input is returned unchanged without a decomposition.
#[inline]
#[cfg(test)]
pub fn project_psd3<R: Real>(h: &R::M3) -> R::M3 {
    if is_positive_definite::<R>(h) {
        return *h;
    }
    let (vals, vecs) = sym3_eigen::<R>(h);
    let mut out = R::M3::ZERO;
    for (i, &l) in vals.iter().enumerate() {
        if l > R::ZERO {
            let e = vecs.col(i);
            out += outer::<R>(e, e) * l;
        }
    }
    out
}

/// Mirrors negative eigenvalues of a symmetric 3×3 matrix (`Σ |λ_i| e_i e_iᵀ`).
///
/// Clamping to zero (the classic projection) can leave a compressed StVK or membrane block with
/// almost no stiffness while its force stays large, so the local Newton step turns into an
/// explicit kick; the absolute value keeps the curvature's magnitude and the step bounded
/// (absolute-eigenvalue projection, as advocated for Newton on nonconvex elasticity by Chen et
/// al. 2024). Positive-definite input is returned unchanged without a decomposition.
#[inline]
#[cfg(test)]
pub fn project_abs3<R: Real>(h: &R::M3) -> R::M3 {
    if is_positive_definite::<R>(h) {
        return *h;
    }
    let (vals, vecs) = sym3_eigen::<R>(h);
    let mut out = R::M3::ZERO;
    for (i, &l) in vals.iter().enumerate() {
        let e = vecs.col(i);
        out += outer::<R>(e, e) * l.abs();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{DMat3, DVec3};

    fn sym(a: [f64; 6]) -> DMat3 {
        DMat3::from_cols(DVec3::new(a[0], a[1], a[2]), DVec3::new(a[1], a[3], a[4]), DVec3::new(a[2], a[4], a[5]))
    }

    #[test]
    fn solve_matches_inverse() {
        let h = sym([4.0, 1.0, 0.5, 3.0, -0.2, 2.0]);
        let f = DVec3::new(1.0, -2.0, 0.5);
        let d = solve_sym3::<f64>(&h, f).unwrap();
        assert!((h * d - f).length() < 1e-12);
    }

    #[test]
    fn singular_is_skipped() {
        let h = sym([1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
        assert!(solve_sym3::<f64>(&h, DVec3::X).is_none());
    }

    #[test]
    fn eigen_reconstructs_and_projection_clamps() {
        let h = sym([1.0, 2.0, 0.3, -1.0, 0.7, 0.5]);
        let (vals, vecs) = sym3_eigen::<f64>(&h);
        let mut rec = DMat3::ZERO;
        for i in 0..3 {
            rec += outer::<f64>(vecs.col(i), vecs.col(i)) * vals[i];
        }
        for c in 0..3 {
            assert!((rec.col(c) - h.col(c)).length() < 1e-10);
        }
        let p = project_psd3::<f64>(&h);
        let (pv, _) = sym3_eigen::<f64>(&p);
        assert!(pv.iter().all(|&l| l > -1e-10));
        // The positive part is kept exactly.
        let pos: f64 = vals.iter().filter(|&&l| l > 0.0).sum();
        assert!((p.col(0).x + p.col(1).y + p.col(2).z - pos).abs() < 1e-10);
        // Mirroring keeps every magnitude.
        let a = project_abs3::<f64>(&h);
        let (av, _) = sym3_eigen::<f64>(&a);
        let mut got: Vec<f64> = av.to_vec();
        let mut want: Vec<f64> = vals.iter().map(|l| l.abs()).collect();
        got.sort_by(f64::total_cmp);
        want.sort_by(f64::total_cmp);
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-10);
        }
    }
}
