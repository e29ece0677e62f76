//! Saint Venant–Kirchhoff: `ψ(F) = μ |E|² + λ/2 (tr E)²`, `E = ½(FᵀF − I)`.
//!
//! Linear elasticity in Green strain: exact small-strain Lamé parameters, but it softens and
//! can invert under strong compression, so its Hessian blocks need PSD projection and the
//! runtime treats inversion as unsafe. The same formulas serve the cloth membrane with 3×2 `F`
//! ([`super::membrane`]).

use super::tet::{TetRest, deformation_gradient, green_strain};
use crate::math::{Matrix3, Real, Vector3, outer};

/// Second Piola–Kirchhoff stress `S = 2μE + λ tr(E) I`.
#[inline(always)]
fn pk2<R: Real>(e: &R::M3, mu: R, lambda: R) -> R::M3 {
    let tr = e.at(0, 0) + e.at(1, 1) + e.at(2, 2);
    *e * (R::lit(2.0) * mu) + R::M3::from_diagonal_scalar(lambda * tr)
}

/// First Piola–Kirchhoff stress `P = F S` \[Pa\].
#[inline]
pub fn pk1<R: Real>(f: &R::M3, mu: R, lambda: R) -> R::M3 {
    f.mul_mat(&pk2::<R>(&green_strain::<R>(f), mu, lambda))
}

/// Energy density ψ(F) \[J/m³\].
///
/// The strain is formed from `H = F − I` (`tet::green_strain`): `½ (FᵀF − I)`
/// leaves a stiff solid's small strain, and with it its energy, to f32 round-off.
#[inline]
pub fn energy_density<R: Real>(f: &R::M3, mu: R, lambda: R) -> R {
    let e = green_strain::<R>(f);
    let tr = e.at(0, 0) + e.at(1, 1) + e.at(2, 2);
    let ee = e.col(0).length_squared() + e.col(1).length_squared() + e.col(2).length_squared();
    mu * ee + R::lit(0.5) * lambda * tr * tr
}

/// Elastic energy of one tet \[J\].
pub fn element_energy<R: Real>(x: &[R::V3; 4], rest: &TetRest<R>, mu: R, lambda: R) -> R {
    rest.volume * energy_density::<R>(&deformation_gradient::<R>(x, &rest.dm_inv), mu, lambda)
}

/// Gradient `∂E/∂x_a = V F S g_a` \[N\].
pub fn element_gradient<R: Real>(x: &[R::V3; 4], rest: &TetRest<R>, mu: R, lambda: R) -> [R::V3; 4] {
    let f = deformation_gradient::<R>(x, &rest.dm_inv);
    let p = f.mul_mat(&pk2::<R>(&green_strain::<R>(&f), mu, lambda));
    rest.shape_gradients().map(|g| p.mul_vec(g) * rest.volume)
}

/// Full Hessian blocks, not projected:
/// `H_ab = V ((g_aᵀ S g_b) I + μ u_b u_aᵀ + μ (g_a·g_b) F Fᵀ + λ u_a u_bᵀ)`, `u_a = F g_a`.
pub fn element_hessian<R: Real>(x: &[R::V3; 4], rest: &TetRest<R>, mu: R, lambda: R) -> [[R::M3; 4]; 4] {
    let f = deformation_gradient::<R>(x, &rest.dm_inv);
    hessian_with_stress::<R>(&f, &pk2::<R>(&green_strain::<R>(&f), mu, lambda), rest, mu, lambda)
}

/// Hessian blocks made positive semi-definite for Newton solves: the stress term
/// `(g_aᵀ S g_b) I` uses the positive part of `S` (its only indefinite part; the rest is
/// `δE : C : δE` with `C` positive definite). Equal to [`element_hessian`] when `S ⪰ 0`; a
/// surrogate under compression (and past inversion) without an eigen-solve of the 12×12 matrix.
pub fn element_hessian_psd<R: Real>(x: &[R::V3; 4], rest: &TetRest<R>, mu: R, lambda: R) -> [[R::M3; 4]; 4] {
    let f = deformation_gradient::<R>(x, &rest.dm_inv);
    let (l, v) = crate::math::sym3_eigen::<R>(&pk2::<R>(&green_strain::<R>(&f), mu, lambda));
    let s = (0..3).fold(R::M3::ZERO, |acc, k| acc + outer::<R>(v.col(k), v.col(k)) * l[k].max(R::ZERO));
    hessian_with_stress::<R>(&f, &s, rest, mu, lambda)
}

/// The Hessian's blocks with the stress `S` of its geometric term given.
fn hessian_with_stress<R: Real>(f: &R::M3, s: &R::M3, rest: &TetRest<R>, mu: R, lambda: R) -> [[R::M3; 4]; 4] {
    let f_ft = f.mul_mat(&f.transpose());
    let g = rest.shape_gradients();
    let u = g.map(|ga| f.mul_vec(ga));
    let mut h = [[R::M3::ZERO; 4]; 4];
    for a in 0..4 {
        for b in 0..4 {
            let blk = R::M3::from_diagonal_scalar(g[a].dot(s.mul_vec(g[b])))
                + outer::<R>(u[b], u[a]) * mu
                + f_ft * (mu * g[a].dot(g[b]))
                + outer::<R>(u[a], u[b]) * lambda;
            h[a][b] = blk * rest.volume;
        }
    }
    h
}

/// The vertex block splits into a stress term `(g_aᵀ S g_a) I`, negative under compression, and
/// a positive semi-definite rest `(μ+λ) u uᵀ + μ |g_a|² F Fᵀ`; returns
/// `(∂E/∂x_a, g_aᵀ S g_a · V, PSD part · V)`.
#[inline(always)]
fn vertex_parts<R: Real>(f: &R::M3, g_a: R::V3, volume: R, mu: R, lambda: R) -> (R::V3, R, R::M3) {
    let s = pk2::<R>(&green_strain::<R>(f), mu, lambda);
    let u = f.mul_vec(g_a);
    let sg = s.mul_vec(g_a);
    let psd = outer::<R>(u, u) * (mu + lambda) + f.mul_mat(&f.transpose()) * (mu * g_a.length_squared());
    (f.mul_vec(sg) * volume, g_a.dot(sg) * volume, psd * volume)
}

/// VBD's per-vertex term: `(∂E/∂x_a, ∂²E/∂x_a²)`, the block exact (not projected).
#[inline(always)]
#[cfg(test)]
pub fn vertex_gradient_hessian<R: Real>(f: &R::M3, g_a: R::V3, volume: R, mu: R, lambda: R) -> (R::V3, R::M3) {
    let (g, s, p) = vertex_parts::<R>(f, g_a, volume, mu, lambda);
    (g, R::M3::from_diagonal_scalar(s) + p)
}

/// As [`vertex_gradient_hessian`], made positive semi-definite by taking the magnitude of the
/// stress term, `|g_aᵀ S g_a| I`: the same curvature scale as mirroring the block's negative
/// eigenvalues ([`crate::math::project_abs3`]), without an eigen-decomposition on the hot path.
/// Clamping instead left compressed elements without stiffness and VBD's local step exploded.
#[inline(always)]
pub fn vertex_gradient_hessian_psd<R: Real>(f: &R::M3, g_a: R::V3, volume: R, mu: R, lambda: R) -> (R::V3, R::M3) {
    let (g, s, p) = vertex_parts::<R>(f, g_a, volume, mu, lambda);
    (g, R::M3::from_diagonal_scalar(s.abs()) + p)
}

/// Rayleigh damping force term `V F dS g_a` \[N\] with `dS = 2μ Ė + λ tr(Ė) I`,
/// `Ė = sym(FᵀḞ)`: the Green-strain-rate part of the stiffness (positive semi-definite), zero for
/// any rigid motion. Its `v_a` block equals the vertex Hessian without the `(g_aᵀ S g_a) I` stress
/// term.
#[inline(always)]
pub fn damping_term<R: Real>(f: &R::M3, f_dot: &R::M3, g_a: R::V3, volume: R, mu: R, lambda: R) -> R::V3 {
    let ftfd = f.transpose().mul_mat(f_dot);
    let e_dot = (ftfd + ftfd.transpose()) * R::lit(0.5);
    f.mul_vec(pk2::<R>(&e_dot, mu, lambda).mul_vec(g_a)) * volume
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::fd;
    use glam::DVec3;

    const MU: f64 = 2.0e5;
    const LAMBDA: f64 = 5.0e5;

    /// `P = F S` is the derivative of ψ with respect to `F` (central differences).
    #[test]
    fn pk1_is_the_energy_density_gradient() {
        let f = glam::DMat3::from_cols(
            DVec3::new(1.1, 0.05, -0.02),
            DVec3::new(0.03, 0.92, 0.1),
            DVec3::new(-0.04, 0.07, 1.05),
        );
        let p = pk1::<f64>(&f, MU, LAMBDA);
        let eps = 1e-6;
        for c in 0..3 {
            for r in 0..3 {
                let mut plus = f;
                let mut minus = f;
                plus.col_mut(c)[r] += eps;
                minus.col_mut(c)[r] -= eps;
                let fd = (energy_density::<f64>(&plus, MU, LAMBDA) - energy_density::<f64>(&minus, MU, LAMBDA))
                    / (2.0 * eps);
                assert!(
                    (fd - p.col(c)[r]).abs() <= 1e-6 * p.to_cols_array().iter().fold(1.0f64, |a, b| a.max(b.abs())),
                    "P[{r}][{c}] {} vs {fd}",
                    p.col(c)[r]
                );
            }
        }
    }

    /// The projected Hessian equals the exact one in tension and is PSD under compression and
    /// past inversion (checked through the dense 12×12 projection, which leaves PSD matrices
    /// unchanged).
    #[test]
    fn projected_hessian_is_exact_in_tension_and_psd_otherwise() {
        let (x0, r) = rest();
        let dense = |h: &[[glam::DMat3; 4]; 4]| {
            let mut d = vec![0.0; 144];
            for a in 0..4 {
                for b in 0..4 {
                    for i in 0..3 {
                        for j in 0..3 {
                            d[(3 * a + i) * 12 + 3 * b + j] = h[a][b].col(j)[i];
                        }
                    }
                }
            }
            d
        };
        let stretch = x0.map(|p| DVec3::new(p.x * 1.2, p.y * 1.1, p.z * 1.05));
        let exact = element_hessian::<f64>(&stretch, &r, MU, LAMBDA);
        let psd = element_hessian_psd::<f64>(&stretch, &r, MU, LAMBDA);
        for a in 0..4 {
            for b in 0..4 {
                fd::assert_mat_close(&psd[a][b], &exact[a][b], 1e-9 * MU);
            }
        }
        for seed in 0..20 {
            let x =
                if seed % 2 == 0 { fd::deform(x0, -0.5, seed) } else { x0.map(|p| DVec3::new(p.x, -p.y * 0.5, p.z)) };
            let h = dense(&element_hessian_psd::<f64>(&x, &r, MU, LAMBDA));
            let mut projected = h.clone();
            crate::math::project_psd(&mut projected, 12);
            let scale = h.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for (p, q) in projected.iter().zip(&h) {
                assert!((p - q).abs() <= 1e-6 * scale, "seed {seed}: not PSD");
            }
        }
    }

    fn rest() -> ([DVec3; 4], TetRest<f64>) {
        let r = [DVec3::ZERO, DVec3::new(0.1, 0.0, 0.01), DVec3::new(0.02, 0.12, 0.0), DVec3::new(-0.01, 0.03, 0.09)];
        (r, TetRest::new(r).unwrap())
    }

    fn check(x: [DVec3; 4]) {
        let (_, rest) = rest();
        fd::check_element(
            &x,
            |x| element_energy::<f64>(x, &rest, MU, LAMBDA),
            |x| element_gradient::<f64>(x, &rest, MU, LAMBDA),
            |x| element_hessian::<f64>(x, &rest, MU, LAMBDA),
        );
        let h = element_hessian::<f64>(&x, &rest, MU, LAMBDA);
        let f = deformation_gradient::<f64>(&x, &rest.dm_inv);
        for (a, g) in rest.shape_gradients().into_iter().enumerate() {
            let (_, vh) = vertex_gradient_hessian::<f64>(&f, g, rest.volume, MU, LAMBDA);
            fd::assert_mat_close(&vh, &h[a][a], 1e-10);
            let (_, ph) = vertex_gradient_hessian_psd::<f64>(&f, g, rest.volume, MU, LAMBDA);
            fd::assert_psd(&ph);
        }
    }

    #[test]
    fn damping_vanishes_for_rigid_motion_and_dissipates() {
        let (r, rest) = rest();
        let x = fd::deform(r, 0.2, 0);
        let f = deformation_gradient::<f64>(&x, &rest.dm_inv);
        let g = rest.shape_gradients();
        let w = DVec3::new(0.3, -1.0, 0.5);
        let rigid = x.map(|p| DVec3::new(1.0, -2.0, 0.5) + w.cross(p));
        let fd_rigid = deformation_gradient::<f64>(&rigid, &rest.dm_inv);
        for ga in g {
            assert!(damping_term::<f64>(&f, &fd_rigid, ga, rest.volume, MU, LAMBDA).length() < 1e-6);
        }
        let v = [DVec3::new(0.3, -0.1, 0.2), DVec3::new(-0.2, 0.4, 0.1), DVec3::new(0.05, 0.0, -0.3), DVec3::ZERO];
        let fdot = deformation_gradient::<f64>(&v, &rest.dm_inv);
        let power: f64 = (0..4).map(|a| v[a].dot(damping_term::<f64>(&f, &fdot, g[a], rest.volume, MU, LAMBDA))).sum();
        assert!(power > 0.0);
    }

    #[test]
    fn finite_differences_stretched() {
        check(fd::deform(rest().0, 0.25, 0));
    }

    #[test]
    fn finite_differences_compressed() {
        check(fd::deform(rest().0, -0.4, 1));
    }

    #[test]
    fn small_strain_matches_linear_elasticity() {
        // Uniaxial strain ε along x: ψ ≈ (μ + λ/2) ε².
        let (r, rest) = rest();
        let eps = 1e-4;
        let x = r.map(|p| DVec3::new(p.x * (1.0 + eps), p.y, p.z));
        let e = element_energy::<f64>(&x, &rest, MU, LAMBDA) / rest.volume;
        let lin = (MU + 0.5 * LAMBDA) * eps * eps;
        assert!((e / lin - 1.0).abs() < 1e-3, "{e} vs {lin}");
    }
}
