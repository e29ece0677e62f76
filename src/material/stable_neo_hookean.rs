//! Stable neo-Hookean (Smith, de Goes, Kim 2018) without the log term, as used by \[VBD\]:
//!
//! `ψ(F) = μ/2 (tr FᵀF − 3) + λ/2 (J − α)² − μ²/(2λ)`, `J = det F`, `α = 1 + μ/λ`.
//!
//! The constant makes `ψ(I) = 0`; at `F = I` the stress `μI + λ(1 − α)I` vanishes. Defined for
//! inverted elements (`J ≤ 0`), which is what lets VBD recover from inversion. Small strains give
//! linear elasticity with shear modulus `μ` and Lamé `λ_L = λ − μ` (see
//! [`super::StableNeoHookean::lame`]).

use super::tet::{TetRest, cofactor, deformation_gradient, green_strain};
use crate::math::{Matrix3, Real, Vector3, outer, skew};

#[inline(always)]
fn alpha<R: Real>(mu: R, lambda: R) -> R {
    R::ONE + mu / lambda
}

/// Energy density ψ(F) \[J/m³\].
///
/// The terms of `½ (μ (I_C − 3) + λ (J − α)² − μ²/λ)` are each of order `μ` and cancel to order
/// `μ |E|²`: in f32 a stiff solid's energy near rest was round-off, about `1e-7 μ` J/m³ (joules
/// for a steel block, which the safety check's energy test read as a gain). So where `J` is near
/// 1 the same function is evaluated in the Green strain `E = ½ (H + Hᵀ + HᵀH)`, `H = F − I`,
/// with no term of first order left: with `x = det(I + 2E) − 1 = 2 tr E + 4 i₂(E) + 8 det E` and
/// `s = √(1 + x)`, `J − 1 = x/(1 + s)` and
/// `ψ = ½ λ (J − 1)² − μ (2 i₂(E) + 4 det E − x²/(2 (1 + s)²))`. `E` is invariant under a
/// rotation of the body, so this holds for a turned body as for one at rest. Where `J` is far
/// from 1 (inverted elements included, whose sign `√det(I + 2E)` would lose) the terms no longer
/// cancel and the direct form is used.
#[inline]
pub fn energy_density<R: Real>(f: &R::M3, mu: R, lambda: R) -> R {
    let j = f.determinant();
    if (j - R::ONE).abs() > R::lit(0.25) {
        let ic = f.col(0).length_squared() + f.col(1).length_squared() + f.col(2).length_squared();
        let dj = j - alpha(mu, lambda);
        return R::lit(0.5) * (mu * (ic - R::lit(3.0)) + lambda * dj * dj - mu * mu / lambda);
    }
    let e = green_strain::<R>(f);
    let tr = e.at(0, 0) + e.at(1, 1) + e.at(2, 2);
    let ee = e.col(0).length_squared() + e.col(1).length_squared() + e.col(2).length_squared();
    let i2 = R::lit(0.5) * (tr * tr - ee);
    let det = e.determinant();
    let x = R::lit(2.0) * tr + R::lit(4.0) * i2 + R::lit(8.0) * det;
    let s1 = R::ONE + (R::ONE + x).sqrt();
    let dj = x / s1;
    let g = R::lit(2.0) * i2 + R::lit(4.0) * det - x * x / (R::lit(2.0) * s1 * s1);
    R::lit(0.5) * lambda * dj * dj - mu * g
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

    /// Steel (E = 2e11 Pa, ν = 0.3) strained by 1e-6, at rest and turned by 0.5 rad: the f32
    /// energy density of an f32 `F` is its f64 one to 1e-3 (the direct form was off by about
    /// `1e-7 μ`, ten thousand times the energy itself), and in f64 the Green-strain form is the
    /// direct one.
    #[test]
    fn a_stiff_solid_s_energy_is_not_round_off_in_f32() {
        let (mu, lambda) = (7.69e10f64, 1.15e11 + 7.69e10);
        let strain = glam::DMat3::from_cols_array(&[1.0, 0.3, -0.2, 0.3, -0.5, 0.1, -0.2, 0.1, 0.7]) * 1e-6;
        for turn in [0.0, 0.5] {
            let r = glam::DMat3::from_axis_angle(DVec3::new(1.0, 2.0, 3.0).normalize(), turn);
            // The same F in both (rounded to f32), so that only the evaluation differs.
            let f = (r * (glam::DMat3::IDENTITY + strain)).as_mat3();
            let exact = energy_density::<f64>(&f.as_dmat3(), mu, lambda);
            let single = energy_density::<f32>(&glam::Mat3A::from(f), mu as f32, lambda as f32) as f64;
            assert!(exact > 0.0, "{exact}");
            assert!((single - exact).abs() < 1e-3 * exact + 1e-3, "turned {turn}: f32 {single}, f64 {exact}");
        }
        let sheared = glam::DMat3::from_cols_array(&[1.05, 0.2, -0.1, 0.15, 0.9, 0.05, -0.12, 0.3, 1.1]);
        let turned = glam::DMat3::from_axis_angle(DVec3::Y, 2.0) * sheared;
        for f in [
            glam::DMat3::from_diagonal(DVec3::new(1.1, 0.95, 1.12)),
            sheared,
            turned,
            glam::DMat3::from_diagonal(DVec3::new(1.2, 1.0, 1.03)),
        ] {
            assert!((f.determinant() - 1.0).abs() < 0.25, "the Green-strain form is the one tested");
            let direct = {
                let ic = f.x_axis.length_squared() + f.y_axis.length_squared() + f.z_axis.length_squared();
                let dj = f.determinant() - (1.0 + MU / LAMBDA);
                0.5 * (MU * (ic - 3.0) + LAMBDA * dj * dj - MU * MU / LAMBDA)
            };
            let e = energy_density::<f64>(&f, MU, LAMBDA);
            assert!((e - direct).abs() < 1e-9 * direct.abs(), "{e} vs {direct}");
        }
    }

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
