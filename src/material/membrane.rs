//! Cloth membrane: StVK on triangles in plane stress, `F = [x1−x0, x2−x0] D_m⁻¹` (3×2).
//!
//! `ψ = μ |E|² + λ/2 (tr E)²` with `E = ½(FᵀF − I₂)`; energy `A t ψ` with rest area `A` and
//! thickness `t` (the element's "volume"). For plane stress, `λ = Eν/(1 − ν²)`
//! ([`super::ClothMaterial::membrane_lame`]). Same structure as the tet StVK Hessian with
//! 2-vectors `g_a`.

use crate::math::{Matrix3, Real, Vector3, outer};

/// Rest data of one triangle: `D_m⁻¹` in the triangle's own 2-D frame and its rest area.
#[derive(Clone, Copy, Debug)]
pub struct TriRest<R: Real> {
    /// Row-major `D_m⁻¹`; its rows are `g_1` and `g_2`.
    pub dm_inv: [[R; 2]; 2],
    /// Rest area \[m²\].
    pub area: R,
}

impl<R: Real> TriRest<R> {
    /// Rest data from rest positions; `None` for a degenerate triangle.
    pub fn new(rest: [R::V3; 3]) -> Option<Self> {
        let e1 = rest[1] - rest[0];
        let e2 = rest[2] - rest[0];
        let l1 = e1.length();
        let n = e1.cross(e2).length();
        if !(l1 > R::ZERO && n > R::ZERO) {
            return None;
        }
        // D_m = [[l1, e2·ê1], [0, |ê1 × e2|]] (columns are the rest edges in 2-D).
        let (a, b, d) = (l1, e2.dot(e1) / l1, n / l1);
        let inv_det = R::ONE / (a * d);
        Some(Self { dm_inv: [[d * inv_det, -b * inv_det], [R::ZERO, a * inv_det]], area: R::lit(0.5) * n })
    }

    /// Shape-function gradients `g_a ∈ R²` (a = 0..2).
    #[inline]
    #[cfg(test)]
    pub fn shape_gradients(&self) -> [[R; 2]; 3] {
        shape_gradients(&self.dm_inv)
    }
}

/// Shape-function gradients from `D_m⁻¹`.
#[inline(always)]
pub fn shape_gradients<R: Real>(dm_inv: &[[R; 2]; 2]) -> [[R; 2]; 3] {
    let g1 = dm_inv[0];
    let g2 = dm_inv[1];
    [[-(g1[0] + g2[0]), -(g1[1] + g2[1])], g1, g2]
}

/// The two columns of `F`.
#[inline(always)]
pub fn deformation_gradient<R: Real>(x: &[R::V3; 3], dm_inv: &[[R; 2]; 2]) -> [R::V3; 2] {
    let e1 = x[1] - x[0];
    let e2 = x[2] - x[0];
    [e1 * dm_inv[0][0] + e2 * dm_inv[1][0], e1 * dm_inv[0][1] + e2 * dm_inv[1][1]]
}

/// `S = 2μE + λ tr(E) I₂` as `[s11, s12, s22]`.
#[inline(always)]
fn pk2<R: Real>(f: &[R::V3; 2], mu: R, lambda: R) -> [R; 3] {
    let half = R::lit(0.5);
    let e11 = half * (f[0].length_squared() - R::ONE);
    let e12 = half * f[0].dot(f[1]);
    let e22 = half * (f[1].length_squared() - R::ONE);
    let tr = lambda * (e11 + e22);
    let two_mu = R::lit(2.0) * mu;
    [two_mu * e11 + tr, two_mu * e12, two_mu * e22 + tr]
}

#[inline(always)]
fn apply<R: Real>(s: &[R; 3], g: [R; 2]) -> [R; 2] {
    [s[0] * g[0] + s[1] * g[1], s[1] * g[0] + s[2] * g[1]]
}

#[inline(always)]
fn mul_f<R: Real>(f: &[R::V3; 2], g: [R; 2]) -> R::V3 {
    f[0] * g[0] + f[1] * g[1]
}

/// Energy density ψ(F) \[J/m³\].
#[inline]
pub fn energy_density<R: Real>(f: &[R::V3; 2], mu: R, lambda: R) -> R {
    let half = R::lit(0.5);
    let e11 = half * (f[0].length_squared() - R::ONE);
    let e12 = half * f[0].dot(f[1]);
    let e22 = half * (f[1].length_squared() - R::ONE);
    let tr = e11 + e22;
    mu * (e11 * e11 + R::lit(2.0) * e12 * e12 + e22 * e22) + half * lambda * tr * tr
}

/// Membrane energy of one triangle \[J\]; `measure` = area × thickness \[m³\].
pub fn element_energy<R: Real>(x: &[R::V3; 3], dm_inv: &[[R; 2]; 2], measure: R, mu: R, lambda: R) -> R {
    measure * energy_density::<R>(&deformation_gradient::<R>(x, dm_inv), mu, lambda)
}

/// Gradient `∂E/∂x_a = A t F S g_a` \[N\].
pub fn element_gradient<R: Real>(x: &[R::V3; 3], dm_inv: &[[R; 2]; 2], measure: R, mu: R, lambda: R) -> [R::V3; 3] {
    let f = deformation_gradient::<R>(x, dm_inv);
    let s = pk2::<R>(&f, mu, lambda);
    shape_gradients(dm_inv).map(|g| mul_f::<R>(&f, apply(&s, g)) * measure)
}

/// Full Hessian blocks (not projected), same form as tet StVK with 2-D `g_a`.
#[cfg(test)]
pub fn element_hessian<R: Real>(x: &[R::V3; 3], dm_inv: &[[R; 2]; 2], measure: R, mu: R, lambda: R) -> [[R::M3; 3]; 3] {
    let f = deformation_gradient::<R>(x, dm_inv);
    hessian_with_stress::<R>(&f, pk2::<R>(&f, mu, lambda), dm_inv, measure, mu, lambda)
}

/// The Hessian's blocks with the stress `S` (`[s11, s12, s22]`) of its geometric term given.
fn hessian_with_stress<R: Real>(
    f: &[R::V3; 2],
    s: [R; 3],
    dm_inv: &[[R; 2]; 2],
    measure: R,
    mu: R,
    lambda: R,
) -> [[R::M3; 3]; 3] {
    let f_ft = outer::<R>(f[0], f[0]) + outer::<R>(f[1], f[1]);
    let g = shape_gradients(dm_inv);
    let u = g.map(|ga| mul_f::<R>(f, ga));
    let mut h = [[R::M3::ZERO; 3]; 3];
    for a in 0..3 {
        for b in 0..3 {
            let sgb = apply(&s, g[b]);
            let gab = g[a][0] * g[b][0] + g[a][1] * g[b][1];
            let blk = R::M3::from_diagonal_scalar(g[a][0] * sgb[0] + g[a][1] * sgb[1])
                + outer::<R>(u[b], u[a]) * mu
                + f_ft * (mu * gab)
                + outer::<R>(u[a], u[b]) * lambda;
            h[a][b] = blk * measure;
        }
    }
    h
}

/// `S` with its negative eigenvalues set to zero (`[s11, s12, s22]`).
fn positive_part<R: Real>(s: [R; 3]) -> [R; 3] {
    let half = R::lit(0.5);
    let m = half * (s[0] + s[2]);
    let d = (half * (s[0] - s[2]) * (half * (s[0] - s[2])) + s[1] * s[1]).sqrt();
    let (l1, l2) = (m + d, m - d);
    if l2 >= R::ZERO {
        return s;
    }
    if l1 <= R::ZERO {
        return [R::ZERO; 3];
    }
    // Only λ1 > 0 survives: S⁺ = λ1 v vᵀ with v its unit eigenvector.
    let (a, b) = if (s[0] - l2).abs() >= (s[2] - l2).abs() { (s[0] - l2, s[1]) } else { (s[1], s[2] - l2) };
    let n2 = a * a + b * b;
    if !(n2 > R::ZERO) {
        return [R::ZERO; 3];
    }
    let k = l1 / n2;
    [k * a * a, k * a * b, k * b * b]
}

/// Hessian blocks made positive semi-definite for Newton solves: the stress term
/// `(g_aᵀ S g_b) I` uses the positive part of `S` (its only indefinite part: the rest is
/// `δE : C : δE` with `C` positive definite). Equal to [`element_hessian`] when `S ⪰ 0`
/// (stretched cloth); a buckling-free surrogate under compression, without an eigen-solve of
/// the 9×9 matrix.
pub fn element_hessian_psd<R: Real>(
    x: &[R::V3; 3],
    dm_inv: &[[R; 2]; 2],
    measure: R,
    mu: R,
    lambda: R,
) -> [[R::M3; 3]; 3] {
    let f = deformation_gradient::<R>(x, dm_inv);
    hessian_with_stress::<R>(&f, positive_part::<R>(pk2::<R>(&f, mu, lambda)), dm_inv, measure, mu, lambda)
}

/// `(∂E/∂x_a, g_aᵀ S g_a · A t, PSD part · A t)` (see [`super::stvk`]).
#[inline(always)]
fn vertex_parts<R: Real>(f: &[R::V3; 2], g_a: [R; 2], measure: R, mu: R, lambda: R) -> (R::V3, R, R::M3) {
    let s = pk2::<R>(f, mu, lambda);
    let sg = apply(&s, g_a);
    let u = mul_f::<R>(f, g_a);
    let gg = g_a[0] * g_a[0] + g_a[1] * g_a[1];
    let f_ft = outer::<R>(f[0], f[0]) + outer::<R>(f[1], f[1]);
    let psd = outer::<R>(u, u) * (mu + lambda) + f_ft * (mu * gg);
    (mul_f::<R>(f, sg) * measure, (g_a[0] * sg[0] + g_a[1] * sg[1]) * measure, psd * measure)
}

/// VBD's per-vertex term given the element's `F`, the stress term taken by magnitude so the
/// block is positive semi-definite (see [`super::stvk::vertex_gradient_hessian_psd`]).
#[inline(always)]
pub fn vertex_gradient_hessian_psd<R: Real>(
    f: &[R::V3; 2],
    g_a: [R; 2],
    measure: R,
    mu: R,
    lambda: R,
) -> (R::V3, R::M3) {
    let (g, s, p) = vertex_parts::<R>(f, g_a, measure, mu, lambda);
    (g, R::M3::from_diagonal_scalar(s.abs()) + p)
}

/// VBD's per-vertex term with the exact (unprojected) block.
#[inline(always)]
#[cfg(test)]
pub fn vertex_gradient_hessian<R: Real>(f: &[R::V3; 2], g_a: [R; 2], measure: R, mu: R, lambda: R) -> (R::V3, R::M3) {
    let (g, s, p) = vertex_parts::<R>(f, g_a, measure, mu, lambda);
    (g, R::M3::from_diagonal_scalar(s) + p)
}

/// Rayleigh damping force term `A t F dS g_a` \[N\] with `dS = 2μ Ė + λ tr(Ė) I₂`,
/// `Ė = sym(FᵀḞ)`: zero for rigid motion, dissipative (see [`super::stvk::damping_term`]).
#[inline(always)]
pub fn damping_term<R: Real>(f: &[R::V3; 2], f_dot: &[R::V3; 2], g_a: [R; 2], measure: R, mu: R, lambda: R) -> R::V3 {
    let e11 = f[0].dot(f_dot[0]);
    let e12 = R::lit(0.5) * (f[0].dot(f_dot[1]) + f[1].dot(f_dot[0]));
    let e22 = f[1].dot(f_dot[1]);
    let tr = lambda * (e11 + e22);
    let two_mu = R::lit(2.0) * mu;
    let ds = [two_mu * e11 + tr, two_mu * e12, two_mu * e22 + tr];
    mul_f::<R>(f, apply(&ds, g_a)) * measure
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::fd;
    use glam::DVec3;

    const MU: f64 = 7.7e5 * 5e-4;
    const LAMBDA: f64 = 6.6e5 * 5e-4;

    fn rest() -> [DVec3; 3] {
        [DVec3::new(0.0, 0.0, 0.0), DVec3::new(0.02, 0.001, 0.0), DVec3::new(0.004, -0.002, 0.018)]
    }

    fn check(x: [DVec3; 3]) {
        let r = TriRest::<f64>::new(rest()).unwrap();
        let m = r.area * 5e-4;
        fd::check_element(
            &x,
            |x| element_energy::<f64>(x, &r.dm_inv, m, MU, LAMBDA),
            |x| element_gradient::<f64>(x, &r.dm_inv, m, MU, LAMBDA),
            |x| element_hessian::<f64>(x, &r.dm_inv, m, MU, LAMBDA),
        );
        let h = element_hessian::<f64>(&x, &r.dm_inv, m, MU, LAMBDA);
        let f = deformation_gradient::<f64>(&x, &r.dm_inv);
        for (a, g) in r.shape_gradients().into_iter().enumerate() {
            let (_, vh) = vertex_gradient_hessian::<f64>(&f, g, m, MU, LAMBDA);
            fd::assert_mat_close(&vh, &h[a][a], 1e-10);
            fd::assert_psd(&vertex_gradient_hessian_psd::<f64>(&f, g, m, MU, LAMBDA).1);
        }
    }

    #[test]
    fn rest_is_stress_free_and_rigid_motion_costs_nothing() {
        let r = TriRest::<f64>::new(rest()).unwrap();
        let rot = glam::DQuat::from_rotation_y(0.7) * glam::DQuat::from_rotation_x(-0.3);
        let x = rest().map(|p| rot * p + DVec3::new(1.0, 2.0, 3.0));
        assert!(element_energy::<f64>(&x, &r.dm_inv, r.area, MU, LAMBDA).abs() < 1e-12);
    }

    #[test]
    fn damping_vanishes_for_rigid_motion() {
        let r = TriRest::<f64>::new(rest()).unwrap();
        let x = fd::deform(rest(), 0.2, 1);
        let f = deformation_gradient::<f64>(&x, &r.dm_inv);
        let w = DVec3::new(0.3, -1.0, 0.5);
        let rigid = x.map(|p| DVec3::new(1.0, -2.0, 0.5) + w.cross(p));
        let fdr = deformation_gradient::<f64>(&rigid, &r.dm_inv);
        for g in r.shape_gradients() {
            assert!(damping_term::<f64>(&f, &fdr, g, r.area, MU, LAMBDA).length() < 1e-9);
        }
    }

    /// The projected Hessian equals the exact one in tension and is PSD under compression
    /// (checked through the dense 9×9 projection, which leaves PSD matrices unchanged).
    #[test]
    fn projected_hessian_is_exact_in_tension_and_psd_in_compression() {
        let r = TriRest::<f64>::new(rest()).unwrap();
        let dense = |h: &[[glam::DMat3; 3]; 3]| {
            let mut d = vec![0.0; 81];
            for a in 0..3 {
                for b in 0..3 {
                    for i in 0..3 {
                        for j in 0..3 {
                            d[(3 * a + i) * 9 + 3 * b + j] = h[a][b].col(j)[i];
                        }
                    }
                }
            }
            d
        };
        let stretch = rest().map(|p| DVec3::new(p.x * 1.2, p.y, p.z * 1.1));
        let exact = element_hessian::<f64>(&stretch, &r.dm_inv, r.area, MU, LAMBDA);
        let psd = element_hessian_psd::<f64>(&stretch, &r.dm_inv, r.area, MU, LAMBDA);
        for a in 0..3 {
            for b in 0..3 {
                fd::assert_mat_close(&psd[a][b], &exact[a][b], 1e-12);
            }
        }
        for seed in 0..20 {
            let x = fd::deform(rest(), -0.4, seed);
            let h = dense(&element_hessian_psd::<f64>(&x, &r.dm_inv, r.area, MU, LAMBDA));
            let mut projected = h.clone();
            crate::math::project_psd(&mut projected, 9);
            let scale = h.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for (p, q) in projected.iter().zip(&h) {
                assert!((p - q).abs() <= 1e-9 * scale, "seed {seed}: not PSD");
            }
        }
    }

    #[test]
    fn finite_differences_stretched() {
        check(fd::deform(rest(), 0.3, 0));
    }

    #[test]
    fn finite_differences_compressed() {
        check(fd::deform(rest(), -0.3, 2));
    }
}
