//! A body's elastic energy along its whole-body stretch: the part of the affine coarse space
//! (`rigid_correction.rs`, `CoarseSpace::Affine`) that rigid motion leaves out.
//!
//! The coarse motion of a body is `x ↦ c + R(θ) (I + S) (x − c) + t` with `S` symmetric. Elastic
//! energy does not see `R` or `t`, and an element's deformation gradient becomes
//! `R (I + S) F`, so the body's elastic energy along `S` is `Σ_e V_e ψ((I + S) F_e)`. Its
//! quadratic model about `S = 0` needs only the directional derivatives of `ψ` along `δF = S F`,
//! which both materials give in closed form:
//!
//! ```text
//! gradient:  ∂ψ/∂S = P Fᵀ  (so g_k = V P Fᵀ : E_k)
//! stable neo-Hookean, δJ = J tr S, δ²J = J ((tr S)² − tr S²):
//!   B(S₁, S₂) = V (μ tr(S₁ S₂ G) + λ J² tr S₁ tr S₂ + λ (J − α) J (tr S₁ tr S₂ − tr(S₁ S₂)))
//! StVK, δE = Fᵀ S F, δ²E = Fᵀ S² F:
//!   B(S₁, S₂) = V (2μ tr(S₁ G S₂ G) + λ tr(S₁ G) tr(S₂ G) + τ : ½ (S₁ S₂ + S₂ S₁))
//! ```
//!
//! with `G = F Fᵀ`, `τ = F S_pk2 Fᵀ` and `E_k` the six symmetric unit stretches (Voigt order xx,
//! yy, zz, yz, xz, xy; an off-diagonal `E_k` has both of its entries 1). Rayleigh damping enters
//! as the sweeps apply it (`vertex::add_damping`): the force of the stress rate of the
//! Gauss–Newton part of the stiffness, `V dP[Ḟ] Fᵀ`, and that part's form times `k_d c1`. The
//! body's 6×6 sum is projected onto the semi-definite cone: compressed elements make the
//! stress terms indefinite, and the coarse Newton solve needs a convex model.

use glam::{DMat3, DVec3};

use crate::material::MODEL_STABLE_NEO_HOOKEAN;
use crate::math::project_psd;

/// Unit stretch `E_k` (Voigt order xx, yy, zz, yz, xz, xy).
pub(super) fn unit_stretch(k: usize) -> DMat3 {
    let (i, j) = [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)][k];
    let mut m = [[0.0; 3]; 3];
    m[i][j] = 1.0;
    m[j][i] = 1.0;
    DMat3::from_cols_array_2d(&m)
}

/// The symmetric `S` of the six stretch coordinates `s`.
pub(super) fn stretch_matrix(s: &[f64]) -> DMat3 {
    (0..6).fold(DMat3::ZERO, |m, k| m + unit_stretch(k) * s[k])
}

/// `S r` for the unit stretch `k`.
#[inline]
pub(super) fn stretch_of(k: usize, r: DVec3) -> DVec3 {
    match k {
        0 => DVec3::new(r.x, 0.0, 0.0),
        1 => DVec3::new(0.0, r.y, 0.0),
        2 => DVec3::new(0.0, 0.0, r.z),
        3 => DVec3::new(0.0, r.z, r.y),
        4 => DVec3::new(r.z, 0.0, r.x),
        _ => DVec3::new(r.y, r.x, 0.0),
    }
}

/// `A : B`.
fn frobenius(a: &DMat3, b: &DMat3) -> f64 {
    a.x_axis.dot(b.x_axis) + a.y_axis.dot(b.y_axis) + a.z_axis.dot(b.z_axis)
}

fn trace(m: &DMat3) -> f64 {
    m.x_axis.x + m.y_axis.y + m.z_axis.z
}

fn cofactor(f: &DMat3) -> DMat3 {
    DMat3::from_cols(f.y_axis.cross(f.z_axis), f.z_axis.cross(f.x_axis), f.x_axis.cross(f.y_axis))
}

/// One element's material, as the sweeps read it.
#[derive(Clone, Copy, Debug)]
pub(super) struct ElementMaterial {
    pub model: u32,
    pub mu: f64,
    pub lambda: f64,
    /// Rayleigh stiffness damping `k_d` \[s\] and `c1` of `v = c1 Δx + c0` (`0` when undamped).
    pub damping: f64,
    pub c1: f64,
}

/// The quadratic model `g·s + ½ sᵀ H s` of a body's elastic energy along its stretch `s`.
///
/// Stable neo-Hookean tets enter through three sums (`Σ V μ G`, `Σ V λ J²`, `Σ V λ (J − α) J`,
/// damping folded in), from which [`StretchQuadratic::finish`] forms the 6×6 once per body;
/// StVK's `tr(S₁ G S₂ G)` does not factor that way and is summed per tet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct StretchQuadratic {
    /// After `finish`: `g` and the projected `H` (row-major 6×6).
    pub gradient: [f64; 6],
    pub hessian: [f64; 36],
    /// `Σ V P Fᵀ` (with the damping force's share).
    stress: DMat3,
    /// Stable neo-Hookean sums.
    metric: DMat3,
    volumetric: f64,
    det: f64,
}

impl Default for StretchQuadratic {
    fn default() -> Self {
        Self {
            gradient: [0.0; 6],
            hessian: [0.0; 36],
            stress: DMat3::ZERO,
            metric: DMat3::ZERO,
            volumetric: 0.0,
            det: 0.0,
        }
    }
}

/// Whether unit stretch `k` changes the volume (`tr E_k`).
const TRACES: [f64; 6] = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0];

impl StretchQuadratic {
    /// Adds one tet of volume `volume` with deformation gradient `f` and, for a damped
    /// material, rate `f_dot`.
    pub(super) fn add_tet(&mut self, m: &ElementMaterial, f: &DMat3, f_dot: Option<&DMat3>, volume: f64) {
        let g = *f * f.transpose();
        let damped = m.damping > 0.0 && f_dot.is_some();
        // The Hessian is the exact second derivative plus `k_d c1` times its Gauss–Newton
        // (semi-definite) part; the force adds the damping's `k_d dP[Ḟ] Fᵀ`.
        let gn_scale = 1.0 + if damped { m.damping * m.c1 } else { 0.0 };
        if m.model == MODEL_STABLE_NEO_HOOKEAN {
            let j = f.determinant();
            let alpha = 1.0 + m.mu / m.lambda;
            let cof = cofactor(f);
            self.stress += (*f * m.mu + cof * (m.lambda * (j - alpha))) * f.transpose() * volume;
            if let Some(fd) = f_dot.filter(|_| damped) {
                let rate = frobenius(&cof, fd);
                self.stress +=
                    (*fd * f.transpose() * m.mu + DMat3::IDENTITY * (m.lambda * rate * j)) * (m.damping * volume);
            }
            self.metric += g * (volume * m.mu * gn_scale);
            self.volumetric += volume * m.lambda * j * j * gn_scale;
            self.det += volume * m.lambda * (j - alpha) * j;
        } else {
            let pk2 = |e: &DMat3| *e * (2.0 * m.mu) + DMat3::IDENTITY * (m.lambda * trace(e));
            let e = (f.transpose() * *f - DMat3::IDENTITY) * 0.5;
            let tau = *f * pk2(&e) * f.transpose();
            self.stress += tau * volume;
            if let Some(fd) = f_dot.filter(|_| damped) {
                let ftfd = f.transpose() * *fd;
                self.stress += *f * pk2(&((ftfd + ftfd.transpose()) * 0.5)) * f.transpose() * (m.damping * volume);
            }
            let units: [DMat3; 6] = std::array::from_fn(unit_stretch);
            let ug: [DMat3; 6] = std::array::from_fn(|k| units[k] * g);
            for a in 0..6 {
                for b in a..6 {
                    let gn = 2.0 * m.mu * trace(&(ug[a] * ug[b])) + m.lambda * trace(&ug[a]) * trace(&ug[b]);
                    let stress = 0.5 * frobenius(&tau, &(units[a] * units[b] + units[b] * units[a]));
                    self.add_pair(a, b, volume * (gn * gn_scale + stress));
                }
            }
        }
    }

    /// Adds `value` at `(a, b)` and, off the diagonal, at `(b, a)`.
    fn add_pair(&mut self, a: usize, b: usize, value: f64) {
        self.hessian[6 * a + b] += value;
        if a != b {
            self.hessian[6 * b + a] += value;
        }
    }

    /// Forms `g` and the stable neo-Hookean share of `H` from the sums, and projects `H` onto
    /// the semi-definite cone.
    pub(super) fn finish(&mut self) {
        self.form();
        project_psd(&mut self.hessian, 6);
    }

    /// `g` and `H` from the sums, not projected.
    fn form(&mut self) {
        let units: [DMat3; 6] = std::array::from_fn(unit_stretch);
        for a in 0..6 {
            self.gradient[a] = frobenius(&self.stress, &units[a]);
            for b in a..6 {
                let ab = units[a] * units[b];
                let tt = TRACES[a] * TRACES[b];
                let value = trace(&(ab * self.metric)) + self.volumetric * tt + self.det * (tt - trace(&ab));
                self.add_pair(a, b, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::material::{MODEL_STVK, stable_neo_hookean, stvk};
    use crate::test_rng::Rng;

    fn material(model: u32) -> ElementMaterial {
        ElementMaterial { model, mu: 3.0e5, lambda: 1.2e6, damping: 0.0, c1: 0.0 }
    }

    /// One tet's model, formed but not projected.
    fn unprojected(m: &ElementMaterial, f: &DMat3, f_dot: Option<&DMat3>, volume: f64) -> StretchQuadratic {
        let mut q = StretchQuadratic::default();
        q.add_tet(m, f, f_dot, volume);
        q.form();
        q
    }

    fn deformed(s: &mut Rng) -> DMat3 {
        DMat3::IDENTITY + DMat3::from_cols_array(&std::array::from_fn(|_| 0.15 * s.signed()))
    }

    fn density(model: u32, f: &DMat3) -> f64 {
        let m = material(model);
        if model == MODEL_STABLE_NEO_HOOKEAN {
            stable_neo_hookean::energy_density::<f64>(f, m.mu, m.lambda)
        } else {
            stvk::energy_density::<f64>(f, m.mu, m.lambda)
        }
    }

    /// `g` and the unprojected `H` are the first and second derivatives of
    /// `V ψ((I + S) F)` in `s` (central differences).
    #[test]
    fn stretch_terms_match_finite_differences() {
        let mut s = Rng(17);
        for model in [MODEL_STABLE_NEO_HOOKEAN, MODEL_STVK] {
            for _ in 0..4 {
                let f = deformed(&mut s);
                let volume = 2e-4;
                let q = unprojected(&material(model), &f, None, volume);
                let energy = |x: &[f64; 6]| volume * density(model, &((DMat3::IDENTITY + stretch_matrix(x)) * f));
                let h = 1e-5;
                for a in 0..6 {
                    let step = |x: &mut [f64; 6], d: f64| x[a] += d;
                    let (mut p, mut n) = ([0.0; 6], [0.0; 6]);
                    step(&mut p, h);
                    step(&mut n, -h);
                    let fd = (energy(&p) - energy(&n)) / (2.0 * h);
                    let scale = q.gradient.iter().map(|g| g.abs()).fold(1.0, f64::max);
                    assert!(
                        (fd - q.gradient[a]).abs() < 1e-6 * scale,
                        "model {model}, g[{a}]: {} vs {fd}",
                        q.gradient[a]
                    );
                    for b in 0..6 {
                        let at = |da: f64, db: f64| {
                            let mut x = [0.0; 6];
                            x[a] += da;
                            x[b] += db;
                            energy(&x)
                        };
                        let fd = (at(h, h) - at(h, -h) - at(-h, h) + at(-h, -h)) / (4.0 * h * h);
                        let an = q.hessian[6 * a + b];
                        let scale = q.hessian.iter().map(|v| v.abs()).fold(1.0, f64::max);
                        assert!((fd - an).abs() < 1e-5 * scale, "model {model}, H[{a}][{b}]: {an} vs {fd}");
                    }
                }
            }
        }
    }

    /// The damping force is `k_d V dP[Ḟ] Fᵀ : E_k`: for `Ḟ = S_dot F` (the body stretching at
    /// `S_dot`) it equals `k_d` times the Gauss–Newton form applied to `S_dot`, and its Hessian
    /// share is that form times `k_d c1`.
    #[test]
    fn damping_is_the_gauss_newton_form_along_the_rate() {
        let mut s = Rng(23);
        for model in [MODEL_STABLE_NEO_HOOKEAN, MODEL_STVK] {
            let f = deformed(&mut s);
            let rate: [f64; 6] = std::array::from_fn(|_| s.signed());
            let f_dot = stretch_matrix(&rate) * f;
            let (damping, c1, volume) = (0.01, 120.0, 1e-3);
            let plain = material(model);
            let damped = ElementMaterial { damping, c1, ..plain };
            let a = unprojected(&plain, &f, None, volume);
            let b = unprojected(&damped, &f, Some(&f_dot), volume);
            // The Gauss–Newton form is the full one less its stress term: recover it from the
            // Hessian difference, then check the force against it.
            for i in 0..6 {
                let mut gn_rate = 0.0;
                for j in 0..6 {
                    let gn = (b.hessian[6 * i + j] - a.hessian[6 * i + j]) / (damping * c1);
                    gn_rate += gn * rate[j];
                }
                let force = (b.gradient[i] - a.gradient[i]) / damping;
                assert!(
                    (force - gn_rate).abs() < 1e-6 * gn_rate.abs().max(1.0),
                    "model {model}, {i}: {force} vs {gn_rate}"
                );
            }
        }
    }

    #[test]
    fn projection_leaves_a_convex_model() {
        let mut q = StretchQuadratic::default();
        // Strongly compressed stable neo-Hookean: indefinite stress terms.
        let f = DMat3::from_diagonal(DVec3::new(0.5, 0.6, 0.55));
        q.add_tet(&material(MODEL_STABLE_NEO_HOOKEAN), &f, None, 1.0);
        q.finish();
        let mut h = q.hessian;
        for i in 0..6 {
            h[7 * i] += 1e-9 * q.hessian[7 * i].abs().max(1.0);
        }
        let mut rhs = [1.0; 6];
        assert!(crate::math::cholesky_solve(&mut h, &mut rhs, 6));
    }

    #[test]
    fn unit_stretches_match_their_matrices() {
        let r = DVec3::new(0.3, -0.7, 1.1);
        for k in 0..6 {
            assert!((unit_stretch(k) * r - stretch_of(k, r)).length() < 1e-15);
        }
    }
}
