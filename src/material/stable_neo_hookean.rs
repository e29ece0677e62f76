//! Stable neo-Hookean (Smith, de Goes, Kim 2018) without the log term, as used by \[VBD\]:
//!
//! `ψ(F) = μ/2 (tr FᵀF − 3) + λ/2 (J − α)² − μ²/(2λ)`, `J = det F`, `α = 1 + μ/λ`.
//!
//! The constant makes `ψ(I) = 0`; at `F = I` the stress `μI + λ(1 − α)I` vanishes. Defined for
//! inverted elements (`J ≤ 0`), which is what lets VBD recover from inversion. Small strains give
//! linear elasticity with shear modulus `μ` and Lamé `λ_L = λ − μ` (see
//! [`super::StableNeoHookean::lame`]).

use super::tet::{TetRest, cofactor, deformation_gradient};
use crate::math::{Matrix3, Real, Vector3, outer, skew};

#[inline(always)]
fn alpha<R: Real>(mu: R, lambda: R) -> R {
    R::ONE + mu / lambda
}

/// Energy density ψ(F) \[J/m³\].
///
/// Written in the displacement gradient `H = F − I` as
/// `ψ = ½ μ |H|² + ½ λ (J − 1)² − μ (i₂(H) + det H)`, with `J − 1 = tr H + i₂(H) + det H` and
/// `i₂ = ½ ((tr H)² − tr H²)`: the same function as `½ (μ (I_C − 3) + λ (J − α)² − μ²/λ)`, whose
/// terms are each of order `μ` and cancel to order `μ |H|²`, so that in f32 a stiff solid's
/// energy was round-off (about `1e-7 μ` per m³: joules for a steel block at rest).
#[inline]
pub fn energy_density<R: Real>(f: &R::M3, mu: R, lambda: R) -> R {
    let h = *f - R::M3::IDENTITY;
    let hh = h.col(0).length_squared() + h.col(1).length_squared() + h.col(2).length_squared();
    let tr = h.at(0, 0) + h.at(1, 1) + h.at(2, 2);
    let mut tr_h2 = R::ZERO;
    for r in 0..3 {
        for c in 0..3 {
            tr_h2 += h.at(r, c) * h.at(c, r);
        }
    }
    let i2 = R::lit(0.5) * (tr * tr - tr_h2);
    let det = h.determinant();
    let dj = tr + i2 + det;
    R::lit(0.5) * mu * hh + R::lit(0.5) * lambda * dj * dj - mu * (i2 + det)
}

/// First Piola–Kirchhoff stress `P = μF + λ(J − α) cof(F)` \[Pa\].
#[inline]
pub fn pk1<R: Real>(f: &R::M3, mu: R, lambda: R) -> R::M3 {
    *f * mu + cofactor::<R>(f) * (lambda * (f.determinant() - alpha(mu, lambda)))
}

/// Elastic energy of one tet \[J\].
pub fn element_energy<R: Real>(x: &[R::V3; 4], rest: &TetRest<R>, mu: R, lambda: R) -> R {
    rest.volume * energy_density::<R>(&deformation_gradient::<R>(x, &rest.dm_inv), mu, lambda)
}

/// Gradient `∂E/∂x_a = V P g_a` for the four vertices \[N\].
pub fn element_gradient<R: Real>(x: &[R::V3; 4], rest: &TetRest<R>, mu: R, lambda: R) -> [R::V3; 4] {
    let p = pk1::<R>(&deformation_gradient::<R>(x, &rest.dm_inv), mu, lambda);
    rest.shape_gradients().map(|g| p.mul_vec(g) * rest.volume)
}

/// Full 12×12 Hessian as 4×4 blocks `H[a][b] = ∂²E/∂x_a∂x_b` \[N/m\], not projected.
///
/// `H_ab = V (μ (g_a·g_b) I + λ c_a c_bᵀ − λ(J−α) [F(g_a × g_b)]×)` with `c_a = cof(F) g_a`;
/// the last term is `λ(J−α)` times the second derivative of `det`, which is trilinear in the
/// columns of `F`.
pub fn element_hessian<R: Real>(x: &[R::V3; 4], rest: &TetRest<R>, mu: R, lambda: R) -> [[R::M3; 4]; 4] {
    let f = deformation_gradient::<R>(x, &rest.dm_inv);
    let cof = cofactor::<R>(&f);
    let g = rest.shape_gradients();
    let c = g.map(|ga| cof.mul_vec(ga));
    let s = lambda * (f.determinant() - alpha(mu, lambda));
    let mut h = [[R::M3::ZERO; 4]; 4];
    for a in 0..4 {
        for b in 0..4 {
            let blk = R::M3::from_diagonal_scalar(mu * g[a].dot(g[b])) + outer::<R>(c[a], c[b]) * lambda
                - skew::<R>(f.mul_vec(g[a].cross(g[b]))) * s;
            h[a][b] = blk * rest.volume;
        }
    }
    h
}

/// VBD's per-vertex term for local vertex with shape gradient `g_a`, given the element's `F`:
/// returns `(∂E/∂x_a, ∂²E/∂x_a²)`.
///
/// The diagonal block `V (μ |g_a|² I + λ c_a c_aᵀ)` is exact (det is affine along the rank-one
/// perturbation `w g_aᵀ`, so its second-derivative term vanishes) and positive semi-definite by
/// construction: no eigen-decomposition and no projection on the hot path (docs/algorithms.md §2.1).
#[inline(always)]
#[cfg(test)]
pub fn vertex_gradient_hessian<R: Real>(f: &R::M3, g_a: R::V3, volume: R, mu: R, lambda: R) -> (R::V3, R::M3) {
    let (f1, f2, f3) = (f.col(0), f.col(1), f.col(2));
    let f23 = f2.cross(f3);
    let j = f1.dot(f23);
    // c_a = cof(F) g_a without forming cof(F).
    let c = f23 * g_a.at(0) + f3.cross(f1) * g_a.at(1) + f1.cross(f2) * g_a.at(2);
    let fg = f.mul_vec(g_a);
    let s = lambda * (j - alpha(mu, lambda));
    let grad = (fg * mu + c * s) * volume;
    let hess = (R::M3::from_diagonal_scalar(mu * g_a.length_squared()) + outer::<R>(c, c) * lambda) * volume;
    (grad, hess)
}

/// [`vertex_gradient_hessian`] and, given `Ḟ`, [`damping_term`], sharing `cof F`: the VBD hot
/// path. Returns `(∂E/∂x_a, vertex block, damping term or 0)`.
#[inline(always)]
pub fn vertex_terms<R: Real>(
    f: &R::M3,
    f_dot: Option<&R::M3>,
    g_a: R::V3,
    volume: R,
    mu: R,
    lambda: R,
) -> (R::V3, R::M3, R::V3) {
    let (f1, f2, f3) = (f.col(0), f.col(1), f.col(2));
    let (c1, c2, c3) = (f2.cross(f3), f3.cross(f1), f1.cross(f2));
    let j = f1.dot(c1);
    let c = c1 * g_a.at(0) + c2 * g_a.at(1) + c3 * g_a.at(2);
    let s = lambda * (j - alpha(mu, lambda));
    let grad = (f.mul_vec(g_a) * mu + c * s) * volume;
    let hess = (R::M3::from_diagonal_scalar(mu * g_a.length_squared()) + outer::<R>(c, c) * lambda) * volume;
    let damping = match f_dot {
        Some(fd) => {
            let rate = c1.dot(fd.col(0)) + c2.dot(fd.col(1)) + c3.dot(fd.col(2));
            (fd.mul_vec(g_a) * mu + c * (lambda * rate)) * volume
        }
        None => R::V3::ZERO,
    };
    (grad, hess, damping)
}

/// Rayleigh damping force term `V dP[Ḟ] g_a` \[N\] for vertex slot with shape gradient `g_a`,
/// where `dP[Ḟ] = μḞ + λ (cof F : Ḟ) cof F` is the stress rate of the positive semi-definite
/// (Gauss–Newton) part of the stiffness. Summed over elements this is `Σ_b K_ab v_b`: zero for a
/// rigid translation, dissipative for every velocity, and its `v_a` block is exactly the vertex
/// Hessian of [`vertex_gradient_hessian`].
#[inline(always)]
#[cfg(test)]
pub fn damping_term<R: Real>(f: &R::M3, f_dot: &R::M3, g_a: R::V3, volume: R, mu: R, lambda: R) -> R::V3 {
    let cof = cofactor::<R>(f);
    let rate = cof.col(0).dot(f_dot.col(0)) + cof.col(1).dot(f_dot.col(1)) + cof.col(2).dot(f_dot.col(2));
    (f_dot.mul_vec(g_a) * mu + cof.mul_vec(g_a) * (lambda * rate)) * volume
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::fd;
    use glam::DVec3;

    const MU: f64 = 3.0e5;
    const LAMBDA: f64 = 1.2e6;

    fn rest() -> ([DVec3; 4], TetRest<f64>) {
        let r = [DVec3::ZERO, DVec3::new(0.1, 0.0, 0.01), DVec3::new(0.02, 0.12, 0.0), DVec3::new(-0.01, 0.03, 0.09)];
        (r, TetRest::new(r).unwrap())
    }

    fn check_configuration(x: [DVec3; 4]) {
        let (_, rest) = rest();
        fd::check_element(
            &x,
            |x| element_energy::<f64>(x, &rest, MU, LAMBDA),
            |x| element_gradient::<f64>(x, &rest, MU, LAMBDA),
            |x| element_hessian::<f64>(x, &rest, MU, LAMBDA),
        );
        // The VBD block equals the diagonal block of the full Hessian, and is PSD.
        let h = element_hessian::<f64>(&x, &rest, MU, LAMBDA);
        let gr = element_gradient::<f64>(&x, &rest, MU, LAMBDA);
        let f = deformation_gradient::<f64>(&x, &rest.dm_inv);
        for (a, g) in rest.shape_gradients().into_iter().enumerate() {
            let (va, vh) = vertex_gradient_hessian::<f64>(&f, g, rest.volume, MU, LAMBDA);
            fd::assert_vec_close(va, gr[a], 1e-10);
            fd::assert_mat_close(&vh, &h[a][a], 1e-10);
            fd::assert_psd(&vh);
        }
    }

    #[test]
    fn damping_is_the_psd_stiffness_applied_to_velocities() {
        let (r, rest) = rest();
        let x = fd::deform(r, 0.2, 1);
        let f = deformation_gradient::<f64>(&x, &rest.dm_inv);
        let g = rest.shape_gradients();
        let v = [
            DVec3::new(0.3, -0.1, 0.2),
            DVec3::new(-0.2, 0.4, 0.1),
            DVec3::new(0.05, 0.0, -0.3),
            DVec3::new(0.1, 0.2, 0.0),
        ];
        let fdot = |v: &[DVec3; 4]| deformation_gradient::<f64>(v, &rest.dm_inv);
        // Rigid translation is not damped.
        let tr = [DVec3::new(1.0, 2.0, 3.0); 4];
        for a in 0..4 {
            assert!(damping_term::<f64>(&f, &fdot(&tr), g[a], rest.volume, MU, LAMBDA).length() < 1e-6);
        }
        // Moving one vertex alone, its damping term is its (PSD) vertex block times its velocity.
        for a in 0..4 {
            let mut only = [DVec3::ZERO; 4];
            only[a] = v[a];
            let d = damping_term::<f64>(&f, &fdot(&only), g[a], rest.volume, MU, LAMBDA);
            let (_, k) = vertex_gradient_hessian::<f64>(&f, g[a], rest.volume, MU, LAMBDA);
            fd::assert_vec_close(d, k * v[a], 1e-10);
        }
        // The fused hot-path version agrees with the separate functions.
        for a in 0..4 {
            let fdv = fdot(&v);
            let (gr, hs, dm) = vertex_terms::<f64>(&f, Some(&fdv), g[a], rest.volume, MU, LAMBDA);
            let (gr2, hs2) = vertex_gradient_hessian::<f64>(&f, g[a], rest.volume, MU, LAMBDA);
            fd::assert_vec_close(gr, gr2, 1e-12);
            fd::assert_mat_close(&hs, &hs2, 1e-12);
            fd::assert_vec_close(dm, damping_term::<f64>(&f, &fdv, g[a], rest.volume, MU, LAMBDA), 1e-12);
        }
        // Dissipative: the power Σ_a v_a · term_a is non-negative.
        let power: f64 =
            (0..4).map(|a| v[a].dot(damping_term::<f64>(&f, &fdot(&v), g[a], rest.volume, MU, LAMBDA))).sum();
        assert!(power >= 0.0);
    }

    #[test]
    fn rest_state_is_stress_free() {
        let (r, rest) = rest();
        assert!(element_energy::<f64>(&r, &rest, MU, LAMBDA).abs() < 1e-9);
        for g in element_gradient::<f64>(&r, &rest, MU, LAMBDA) {
            assert!(g.length() < 1e-6);
        }
    }

    #[test]
    fn finite_differences_stretched() {
        let (r, _) = rest();
        check_configuration(fd::deform(r, 0.2, 1));
    }

    #[test]
    fn finite_differences_compressed_and_sheared() {
        let (r, _) = rest();
        check_configuration(fd::deform(r, -0.35, 2));
    }

    #[test]
    fn finite_differences_inverted() {
        let (mut r, _) = rest();
        // Push vertex 3 through the opposite face: J < 0.
        r[3] = DVec3::new(0.03, 0.02, -0.05);
        let (r0, rest) = rest();
        let f = deformation_gradient::<f64>(&r, &rest.dm_inv);
        assert!(f.determinant() < 0.0);
        let _ = r0;
        check_configuration(r);
    }
}
