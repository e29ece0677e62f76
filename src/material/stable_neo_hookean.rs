//! Stable neo-Hookean (Smith, de Goes, Kim 2018) without the log term, as used by \[VBD\]:
//!
//! `ψ(F) = μ/2 (tr FᵀF − 3) + λ/2 (J − α)² − μ²/(2λ)`, `J = det F`, `α = 1 + μ/λ`.
//!
//! The constant makes `ψ(I) = 0`; at `F = I` the stress `μI + λ(1 − α)I` vanishes. Defined for
//! inverted elements (`J ≤ 0`), which is what lets VBD recover from inversion. Small strains give
//! linear elasticity with shear modulus `μ` and Lamé `λ_L = λ − μ` (see
//! [`super::StableNeoHookean::lame`]).

use super::tet::{TetRest, cofactor, deformation_gradient, green_strain};
use glam::{DMat3, DVec3};

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

/// The rotation-variant singular value decomposition `F = U Σ Vᵀ`: `U` and `V` rotations
/// (columns), `Σ = diag(σ)` with `σ₀ ≥ σ₁ ≥ |σ₂|` and `σ₂` carrying the sign of `det F`.
/// From the eigenvectors of `FᵀF`; `U`'s first two columns from `F V`, the third their cross
/// product, so a flat or inverted element still gets a rotation.
pub fn rotation_svd(f: &DMat3) -> (DMat3, DVec3, DMat3) {
    let (l, v) = crate::math::sym3_eigen::<f64>(&(f.transpose() * *f));
    let mut order = [0usize, 1, 2];
    order.sort_by(|&a, &b| l[b].total_cmp(&l[a]));
    let mut v = DMat3::from_cols(v.col(order[0]), v.col(order[1]), v.col(order[2]));
    if v.determinant() < 0.0 {
        v.z_axis = -v.z_axis;
    }
    let any_perpendicular = |a: DVec3| {
        let t = if a.x.abs() < 0.9 { DVec3::X } else { DVec3::Y };
        a.cross(t).normalize()
    };
    let f0 = *f * v.x_axis;
    let u0 = if f0.length() > 0.0 { f0.normalize() } else { DVec3::X };
    let f1 = *f * v.y_axis;
    let r1 = f1 - u0 * u0.dot(f1);
    let u1 = if r1.length() > 1e-12 * f0.length() { r1.normalize() } else { any_perpendicular(u0) };
    let u = DMat3::from_cols(u0, u1, u0.cross(u1));
    let sigma = DVec3::new(u0.dot(f0), u1.dot(f1), u.z_axis.dot(*f * v.z_axis));
    (u, sigma, v)
}

/// The element Hessian with the Hessian of `ψ` in `F` projected onto the positive
/// semi-definite cone, by its analytic eigensystem (Smith, de Goes, Kim 2019) \[N/m\]:
/// `∂²ψ/∂F² = μ I + λ g gᵀ + λ(J − α) ∂²J/∂F²` with `g = vec cof F`. In the frame of the
/// rotation-variant SVD `F = U Σ Vᵀ`, `∂²J/∂F²` has the twist `(u_i v_jᵀ − u_j v_iᵀ)/√2`
/// and flip `(u_i v_jᵀ + u_j v_iᵀ)/√2` of each pair `i < j` as eigenvectors, with eigenvalues
/// `±σ_k` (`k` the third index), and `g` lies in the span of the scalings `u_i v_iᵀ`, on which
/// the Hessian is the 3×3 `μ I + λ c cᵀ + λ(J − α) K`, `c = (σ₁σ₂, σ₀σ₂, σ₀σ₁)`, `K` with
/// `σ_k` off the diagonal. Each mode `Q` with a negative eigenvalue `e` is taken out of the
/// exact element Hessian as `V e (Q g_a)(Q g_b)ᵀ`, since `∂(Q : F)/∂x_a = Q g_a`. Projected in
/// `F` rather than over the element's 12 coordinates (one 3×3 eigen-decomposition for the
/// SVD and one for the scalings, where the 12×12 Jacobi sweeps were half of a fallback's time
/// on a dented wall), as Smith et al. do; both are PSD and agree where nothing is negative.
pub fn element_hessian_psd(x: &[DVec3; 4], rest: &TetRest<f64>, mu: f64, lambda: f64) -> [[DMat3; 4]; 4] {
    let mut h = element_hessian::<f64>(x, rest, mu, lambda);
    let f = deformation_gradient::<f64>(x, &rest.dm_inv);
    let (u, sigma, v) = rotation_svd(&f);
    let s = lambda * (f.determinant() - alpha(mu, lambda));
    let g = rest.shape_gradients();
    let mut take_out = |q: DMat3, e: f64| {
        if !(e < 0.0) {
            return;
        }
        let qg = g.map(|ga| q * ga);
        for a in 0..4 {
            for b in 0..4 {
                h[a][b] -= outer::<f64>(qg[a], qg[b]) * (e * rest.volume);
            }
        }
    };
    let outer_uv = |i: usize, j: usize| outer::<f64>(u.col(i), v.col(j));
    let half = std::f64::consts::FRAC_1_SQRT_2;
    for (k, i, j) in [(0, 1, 2), (1, 0, 2), (2, 0, 1)] {
        take_out((outer_uv(i, j) - outer_uv(j, i)) * half, mu + s * sigma[k]);
        take_out((outer_uv(i, j) + outer_uv(j, i)) * half, mu - s * sigma[k]);
    }
    let c = DVec3::new(sigma.y * sigma.z, sigma.x * sigma.z, sigma.x * sigma.y);
    let k = DMat3::from_cols(
        DVec3::new(0.0, sigma.z, sigma.y),
        DVec3::new(sigma.z, 0.0, sigma.x),
        DVec3::new(sigma.y, sigma.x, 0.0),
    );
    let scaling = DMat3::from_diagonal(DVec3::splat(mu)) + outer::<f64>(c, c) * lambda + k * s;
    let (e, w) = crate::math::sym3_eigen::<f64>(&scaling);
    for m in 0..3 {
        let q = outer_uv(0, 0) * w.col(m).x + outer_uv(1, 1) * w.col(m).y + outer_uv(2, 2) * w.col(m).z;
        take_out(q, e[m]);
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

    /// `∂²J/∂F²` as a 9×9 matrix over `vec F` (entry `F_ab` at `3a + b`):
    /// `∂²J/∂F_ab ∂F_cd = ε_ace ε_bdf F_ef`.
    fn det_hessian9(f: &DMat3) -> [f64; 81] {
        let eps = |i: usize, j: usize, k: usize| -> f64 {
            match (i, j, k) {
                (0, 1, 2) | (1, 2, 0) | (2, 0, 1) => 1.0,
                (0, 2, 1) | (2, 1, 0) | (1, 0, 2) => -1.0,
                _ => 0.0,
            }
        };
        let at = |r: usize, c: usize| f.col(c)[r];
        let mut h = [0.0; 81];
        for (a, b, c, d) in (0..81).map(|n| (n / 27, n / 9 % 3, n / 3 % 3, n % 3)) {
            let mut sum = 0.0;
            for e in 0..3 {
                for ff in 0..3 {
                    sum += eps(a, c, e) * eps(b, d, ff) * at(e, ff);
                }
            }
            h[(3 * a + b) * 9 + 3 * c + d] = sum;
        }
        h
    }

    /// The analytic projection is the one a numerical projection of the 9×9 Hessian in `F`
    /// gives (Jacobi, `math::project_psd`), pulled back to the element's vertices, for
    /// stretched, compressed, sheared, flat and inverted tets; untouched where that Hessian is
    /// already PSD; and its SVD reconstructs `F` with rotations.
    #[test]
    fn the_analytic_projection_is_the_numerical_one_in_f() {
        let (r, rest) = rest();
        let mut rng = crate::test_rng::Rng(11);
        let mut configurations = vec![
            fd::deform(r, 0.2, 1),
            fd::deform(r, -0.35, 2),
            [r[0], r[1], r[2], DVec3::new(0.03, 0.02, -0.05)],
            [r[0], r[1], r[2], DVec3::new(0.03, 0.02, 1e-5)],
            r,
        ];
        configurations.extend((0..40).map(|_| r.map(|p| p + rng.vec() * 0.05)));
        let mut projected = 0;
        for x in configurations {
            let f = deformation_gradient::<f64>(&x, &rest.dm_inv);
            let (u, sigma, v) = rotation_svd(&f);
            assert!((u.determinant() - 1.0).abs() < 1e-9 && (v.determinant() - 1.0).abs() < 1e-9);
            assert!(sigma.x >= sigma.y && sigma.y >= sigma.z.abs() - 1e-12, "{sigma}");
            fd::assert_mat_close(&(u * DMat3::from_diagonal(sigma) * v.transpose()), &f, 1e-9);
            // The 9×9 Hessian of ψ in F, projected numerically.
            let cof = cofactor::<f64>(&f);
            let g9: Vec<f64> = (0..9).map(|n| cof.col(n % 3)[n / 3]).collect();
            let hj = det_hessian9(&f);
            let s = LAMBDA * (f.determinant() - alpha(MU, LAMBDA));
            let mut h9 = [0.0; 144];
            for i in 0..9 {
                for j in 0..9 {
                    h9[i * 9 + j] = MU * f64::from(i == j) + LAMBDA * g9[i] * g9[j] + s * hj[i * 9 + j];
                }
            }
            let raw = h9;
            crate::math::project_psd(&mut h9[..81], 9);
            projected += usize::from(raw.iter().zip(&h9).any(|(a, b)| (a - b).abs() > 1e-6 * MU));
            // Pulled back: H_ab[i][j] = V Σ_kl g_a[k] g_b[l] H9[(i,k),(j,l)].
            let g = rest.shape_gradients();
            let ours = element_hessian_psd(&x, &rest, MU, LAMBDA);
            let scale = ours
                .iter()
                .flatten()
                .map(|m| m.abs().to_cols_array().into_iter().fold(0.0, f64::max))
                .fold(0.0, f64::max);
            for a in 0..4 {
                for b in 0..4 {
                    let mut m = DMat3::ZERO;
                    for (i, j, k, l) in (0..81).map(|n| (n / 27, n / 9 % 3, n / 3 % 3, n % 3)) {
                        let add = rest.volume * g[a][k] * g[b][l] * h9[(3 * i + k) * 9 + 3 * j + l];
                        let mut col = m.col(j);
                        col[i] += add;
                        *m.col_mut(j) = col;
                    }
                    let d = (ours[a][b] - m).abs().to_cols_array().into_iter().fold(0.0, f64::max);
                    // The numerical projection leaves eigenvalues above −1e-7 of the mean diagonal.
                    assert!(d <= 1e-6 * scale, "block {a}{b}: {:?} vs {m:?}", ours[a][b]);
                }
            }
        }
        assert!(projected > 5, "only {projected} configurations needed the projection");
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
