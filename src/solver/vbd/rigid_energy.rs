//! The coarse energy `E(q)` of the rigid correction (see `rigid_correction.rs`): inertia and
//! drag per body, its elastic energy along its stretch (with `CoarseSpace::Affine`), obstacle
//! contacts and surface contact pairs as functions of each body's coarse motion
//! `q_b = (t_b, θ_b, s_b)`, with the gradient and the dense Hessian Newton needs.

use glam::{DMat3, DVec3, Vec3A};

use super::stretch::{StretchQuadratic, stretch_of, unit_stretch};
use crate::collision::{
    Obstacle, friction_f0, friction_f1_over_u, friction_f1_prime, layer_energy, layer_force_stiffness,
};

/// A body that takes no part in the current group solve.
pub(super) const FIXED: u32 = u32::MAX;

/// Coarse coordinates per body: translation `t`, rotation vector `θ` (linearised in the solve)
/// and the six stretches `s` of a symmetric `S` (Voigt order, `stretch::unit_stretch`). A point
/// with arm `r` from its body's centre moves by `t + θ × r + S r`. Bodies whose coarse space
/// leaves out rotation or stretch keep those coordinates at zero, and a group in which no body
/// stretches is solved in the first [`RIGID_DOF`] coordinates only (a sixth of the dense
/// factorisation's cost).
pub(super) const DOF: usize = 12;
/// Coordinates per body of a group in which no body stretches: `(t, θ)`.
pub(super) const RIGID_DOF: usize = 6;
/// Coordinates past the translation: `(θ, s)`.
const INNER: usize = DOF - 3;

/// One side of a contact point: its body's group slot (or `FIXED`), the sum of its weights and
/// its arm from the body's centre. The point moves by `coef · (t + θ × arm + S arm)`, the terms
/// its body's coarse space holds.
#[derive(Clone, Copy, Debug)]
pub(super) struct Side {
    pub(super) slot: u32,
    pub(super) coef: f64,
    pub(super) arm: DVec3,
}

impl Side {
    pub(super) const NONE: Self = Self { slot: FIXED, coef: 0.0, arm: DVec3::ZERO };
}

/// A vertex–obstacle pair that may touch during the correction. The vertex's body is the
/// first side (coefficient 1); an obstacle moved by a carrier of the group is the second
/// (coefficient −1: moving the obstacle by `δ` is moving the vertex by `−δ` relative to it).
#[derive(Clone, Copy, Debug)]
pub(super) struct Candidate {
    pub(super) sides: [Side; 2],
    pub(super) obstacle: u32,
    /// Current position and `x^n` of the vertex.
    pub(super) position: DVec3,
    pub(super) start: DVec3,
    /// Stiffness `k` of this vertex's contact layer \[N/m\].
    pub(super) stiffness: f64,
    /// Lagged normal force: the layer's force at `x^n` \[N\].
    pub(super) lambda: f64,
    /// Lagged normal (defines the tangent plane of friction).
    pub(super) normal: DVec3,
    /// Friction coefficient.
    pub(super) mu: f64,
}

/// A surface contact pair between a body of the group and another body (of the group, or
/// fixed).
#[derive(Clone, Copy, Debug)]
pub(super) struct Coupling {
    pub(super) sides: [Side; 2],
    /// Linearised gap and slip at the current positions.
    pub(super) gap: f64,
    pub(super) slip: DVec3,
    /// Lagged normal: direction of the gap and normal of the friction plane.
    pub(super) normal: DVec3,
    pub(super) stiffness: f64,
    pub(super) lambda: f64,
    pub(super) mu: f64,
}

/// Inertia, drag and (for a stretching body) elasticity of one body in the coarse space:
/// `½ ΣA |t|² − F·t + ½ ψᵀ K ψ − wᵀ ψ` with `ψ = (θ, s)`.
#[derive(Clone, Copy, Debug)]
pub(super) struct BodyQuadratic {
    /// `A`-weighted centroid of the free vertices.
    pub(super) center: DVec3,
    /// `ΣA` and `F = Σf`.
    pub(super) stiff: f64,
    pub(super) force: DVec3,
    /// `K` (row-major 9×9) and `w`.
    pub(super) inner: [f64; INNER * INNER],
    pub(super) load: [f64; INNER],
    /// Whether the body's coarse space includes rotation and stretch.
    pub(super) rotates: bool,
    pub(super) stretches: bool,
}

/// `m[row][col]`.
fn at(m: &DMat3, row: usize, col: usize) -> f64 {
    m.col(col)[row]
}

/// `(X_yz − X_zy, X_zx − X_xz, X_xy − X_yx)`: `Σ r × u` for `X = Σ r uᵀ`.
fn axial(x: &DMat3) -> DVec3 {
    DVec3::new(at(x, 1, 2) - at(x, 2, 1), at(x, 2, 0) - at(x, 0, 2), at(x, 0, 1) - at(x, 1, 0))
}

impl BodyQuadratic {
    /// A body with only a rigid coarse space: `J = ΣA (|r|² I − r rᵀ)` and `τ = Σ r × f`. A body
    /// that does not rotate gets a unit inertia and no torque, so that `θ = 0` is its minimiser.
    pub(super) fn rigid(center: DVec3, stiff: f64, inertia: DMat3, force: DVec3, torque: DVec3, rotates: bool) -> Self {
        let mut inner = [0.0; INNER * INNER];
        let (inertia, torque) = if rotates { (inertia, torque) } else { (DMat3::IDENTITY, DVec3::ZERO) };
        for r in 0..3 {
            for c in 0..3 {
                inner[r * INNER + c] = at(&inertia, r, c);
            }
        }
        for k in 3..INNER {
            inner[k * INNER + k] = 1.0;
        }
        let mut load = [0.0; INNER];
        load[..3].copy_from_slice(&torque.to_array());
        Self { center, stiff, force, inner, load, rotates, stretches: false }
    }

    /// A body from its vertices' sums about its centre: the second moment `Q = ΣA r rᵀ`, the
    /// force moment `W = Σ f rᵀ` and, for a stretching body, its elastic model along `s`.
    ///
    /// With `δ = t + θ × r + S r`, `½ ΣA |θ × r + S r|²` has the blocks `K_θθ = tr(Q) I − Q`,
    /// `K_θs,k = axial(Q E_k)` and `K_ss,jk = tr(E_j E_k Q)`, and `Σ f·δ` the loads
    /// `τ = axial(Wᵀ)` and `σ_k = W : E_k`: every term is linear in `Q` or `W`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn from_moments(
        center: DVec3,
        stiff: f64,
        force: DVec3,
        second_moment: DMat3,
        force_moment: DMat3,
        rotates: bool,
        elastic: Option<&StretchQuadratic>,
    ) -> Self {
        let q = second_moment;
        let inertia = DMat3::from_diagonal(DVec3::splat(q.x_axis.x + q.y_axis.y + q.z_axis.z)) - q;
        let mut b = Self::rigid(center, stiff, inertia, force, axial(&force_moment.transpose()), rotates);
        let Some(elastic) = elastic else { return b };
        b.stretches = true;
        let units: [DMat3; 6] = std::array::from_fn(unit_stretch);
        for j in 0..6 {
            let (row, qe) = (3 + j, q * units[j]);
            if rotates {
                let c = axial(&qe);
                for r in 0..3 {
                    b.inner[r * INNER + row] = c[r];
                    b.inner[row * INNER + r] = c[r];
                }
            }
            for k in 0..6 {
                let e = units[j] * units[k] * q;
                b.inner[row * INNER + 3 + k] = e.x_axis.x + e.y_axis.y + e.z_axis.z + elastic.hessian[6 * j + k];
            }
            let w = force_moment;
            let ej = units[j];
            b.load[row] =
                w.x_axis.dot(ej.x_axis) + w.y_axis.dot(ej.y_axis) + w.z_axis.dot(ej.z_axis) - elastic.gradient[j];
        }
        b
    }

    /// The minimiser of the body's quadratic alone (free flight), or `None` where `K` is
    /// singular.
    pub(super) fn free_motion(&self) -> Option<[f64; DOF]> {
        let t = self.force / self.stiff;
        let (mut k, mut psi) = (self.inner, self.load);
        if !crate::math::cholesky_solve(&mut k, &mut psi, INNER) {
            return None;
        }
        let mut q = [0.0; DOF];
        q[..3].copy_from_slice(&t.to_array());
        q[3..].copy_from_slice(&psi);
        Some(q)
    }

    /// How far coordinate `k` moves a point with arm `arm`, per unit (`J`'s column `k`).
    #[inline]
    fn column(&self, k: usize, arm: DVec3) -> DVec3 {
        match k {
            0..3 => DVec3::AXES[k],
            3..6 if self.rotates => DVec3::AXES[k - 3].cross(arm),
            6.. if self.stretches => stretch_of(k - 6, arm),
            _ => DVec3::ZERO,
        }
    }

    /// `J`'s columns for a point with arm `arm`.
    fn jacobian(&self, arm: DVec3) -> [DVec3; DOF] {
        std::array::from_fn(|k| self.column(k, arm))
    }
}

/// The energy `E(q)` of one group.
#[derive(Clone, Debug, Default)]
pub(super) struct Problem {
    pub(super) bodies: Vec<BodyQuadratic>,
    pub(super) candidates: Vec<Candidate>,
    pub(super) couplings: Vec<Coupling>,
    /// Contact offset δ and static slip of friction \[m\].
    pub(super) delta: f64,
    pub(super) static_slip: f64,
    /// Whether contacts are the stiffening layer rather than the penalty (`ContactModel`).
    pub(super) stiffening: bool,
}

pub(super) fn outer(a: DVec3, b: DVec3) -> DMat3 {
    DMat3::from_cols(a * b.x, a * b.y, a * b.z)
}

/// Energy, gradient and Hessian (with respect to the contact point's displacement) of a
/// contact layer (the penalty, or with `stiffening` `collision::layer_force_stiffness`) with gap
/// `gap` along `normal`, and a lagged friction term with slip `slip`.
pub(super) struct ContactTerm {
    pub(super) energy: f64,
    pub(super) gradient: DVec3,
    pub(super) hessian: DMat3,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn contact_term(
    gap: f64,
    normal: DVec3,
    stiffness: f64,
    friction_normal: DVec3,
    slip: DVec3,
    mu_lambda: f64,
    (delta, stiffening): (f64, bool),
    static_slip: f64,
    derivatives: bool,
) -> ContactTerm {
    let mut c = ContactTerm { energy: 0.0, gradient: DVec3::ZERO, hessian: DMat3::ZERO };
    if gap < delta {
        // The layer the sweeps apply (`collision::contact`). With the plain penalty here when
        // the sweeps stiffen, the coarse problem saw every loaded interface of a stack as soft
        // as the unloaded layer, and an eight-cube tower's coarse rotations tipped it over.
        let (energy, force, layer_stiffness) = if stiffening {
            let (force, k) = layer_force_stiffness(gap, stiffness, delta);
            (layer_energy(gap, stiffness, delta), force, k)
        } else {
            let pen = delta - gap;
            (0.5 * stiffness * pen * pen, stiffness * pen, stiffness)
        };
        c.energy += energy;
        if derivatives {
            c.gradient -= normal * force;
            c.hessian += outer(normal, normal) * layer_stiffness;
        }
    }
    if mu_lambda > 0.0 {
        let n0 = friction_normal;
        let u = slip - n0 * n0.dot(slip);
        let ul = u.length();
        c.energy += mu_lambda * friction_f0(ul, static_slip);
        if derivatives {
            let tangent = DMat3::IDENTITY - outer(n0, n0);
            // f1(u)/u, finite at u = 0: the isotropic sticking stiffness.
            let f1_over_u = friction_f1_over_u(ul, static_slip);
            if ul > 0.0 {
                let uh = u / ul;
                let along = outer(uh, uh);
                c.gradient += u * (mu_lambda * f1_over_u);
                c.hessian += (tangent - along) * (mu_lambda * f1_over_u)
                    + along * (mu_lambda * friction_f1_prime(ul, static_slip));
            } else {
                c.hessian += tangent * (mu_lambda * f1_over_u);
            }
        }
    }
    c
}

impl Problem {
    /// A side's displacement at `q`.
    fn displacement(&self, q: &[f64], s: &Side, dof: usize) -> DVec3 {
        if s.slot == FIXED {
            return DVec3::ZERO;
        }
        let (body, i) = (&self.bodies[s.slot as usize], dof * s.slot as usize);
        (0..dof).filter(|&k| q[i + k] != 0.0).map(|k| body.column(k, s.arm) * q[i + k]).sum::<DVec3>() * s.coef
    }

    /// Coordinates per body: [`DOF`] when some body of the group stretches, else [`RIGID_DOF`].
    pub(super) fn dof(&self) -> usize {
        if self.bodies.iter().any(|b| b.stretches) { DOF } else { RIGID_DOF }
    }

    /// Adds a term of a point that moves by `Σ_sides coef J(arm) q`, with gradient `g` and
    /// Hessian `h` with respect to that motion: `J_iᵀ g` and `J_iᵀ h J_j`.
    #[allow(clippy::too_many_arguments)]
    fn add_point_term(&self, grad: &mut [f64], hess: &mut [f64], sides: &[Side], g: DVec3, h: &DMat3, dof: usize) {
        let dim = grad.len();
        let jacobians: [Option<(usize, [DVec3; DOF])>; 2] = std::array::from_fn(|k| {
            let s = sides.get(k).filter(|s| s.slot != FIXED)?;
            let body = &self.bodies[s.slot as usize];
            Some((dof * s.slot as usize, body.jacobian(s.arm).map(|c| c * s.coef)))
        });
        for (i, ji) in jacobians.iter().flatten() {
            let ji = &ji[..dof];
            // `h J_i`'s columns, then `J_jᵀ (h J_i)`.
            let hj: [DVec3; DOF] = std::array::from_fn(|a| if a < dof { *h * ji[a] } else { DVec3::ZERO });
            for (a, c) in ji.iter().enumerate() {
                grad[i + a] += c.dot(g);
            }
            for (j, jj) in jacobians.iter().flatten() {
                for (b, cb) in jj[..dof].iter().enumerate() {
                    if *cb == DVec3::ZERO {
                        continue;
                    }
                    let row = &mut hess[(j + b) * dim + i..(j + b) * dim + i + dof];
                    for (entry, hc) in row.iter_mut().zip(&hj) {
                        *entry += cb.dot(*hc);
                    }
                }
            }
        }
    }

    /// `E(q)`; with `derivatives`, also fills its gradient and dense row-major Hessian.
    pub(super) fn energy(
        &self,
        q: &[f64],
        obstacles: &[Obstacle],
        derivatives: Option<(&mut Vec<f64>, &mut Vec<f64>)>,
    ) -> f64 {
        let dim = q.len();
        let dof = self.dof();
        let inner = dof - 3;
        let mut out = derivatives.map(|(g, h)| {
            g.clear();
            g.resize(dim, 0.0);
            h.clear();
            h.resize(dim * dim, 0.0);
            (g, h)
        });
        let want = out.is_some();
        let (layer, slip) = ((self.delta, self.stiffening), self.static_slip);
        let mut e = 0.0;
        for (slot, b) in self.bodies.iter().enumerate() {
            let i = dof * slot;
            let t = DVec3::from_slice(&q[i..i + 3]);
            let psi = &q[i + 3..i + dof];
            // K ψ − w.
            let k_psi: [f64; INNER] = std::array::from_fn(|r| {
                if r < inner { (0..inner).map(|c| b.inner[r * INNER + c] * psi[c]).sum::<f64>() } else { 0.0 }
            });
            e += 0.5 * b.stiff * t.length_squared() - b.force.dot(t);
            e += (0..inner).map(|r| psi[r] * (0.5 * k_psi[r] - b.load[r])).sum::<f64>();
            if let Some((g, h)) = out.as_mut() {
                let gt = t * b.stiff - b.force;
                for r in 0..3 {
                    g[i + r] += gt[r];
                    h[(i + r) * dim + i + r] += b.stiff;
                }
                for r in 0..inner {
                    g[i + 3 + r] += k_psi[r] - b.load[r];
                    for c in 0..inner {
                        h[(i + 3 + r) * dim + i + 3 + c] += b.inner[r * INNER + c];
                    }
                }
            }
        }
        for cand in &self.candidates {
            let p =
                cand.position + self.displacement(q, &cand.sides[0], dof) + self.displacement(q, &cand.sides[1], dof);
            let obstacle = &obstacles[cand.obstacle as usize];
            let (d, n) = obstacle.signed_distance(Vec3A::from(p.as_vec3()));
            // Slip relative to the obstacle's surface (zero motion for a static one).
            let carried = obstacle.surface_displacement(Vec3A::from(p.as_vec3())).as_dvec3();
            let mu_lambda = cand.mu * cand.lambda;
            let term = contact_term(
                d as f64,
                n.as_dvec3(),
                cand.stiffness,
                cand.normal,
                p - cand.start - carried,
                mu_lambda,
                layer,
                slip,
                want,
            );
            e += term.energy;
            if let Some((g, h)) = out.as_mut() {
                self.add_point_term(g, h, &cand.sides, term.gradient, &term.hessian, dof);
            }
        }
        for cp in &self.couplings {
            let s = self.displacement(q, &cp.sides[0], dof) + self.displacement(q, &cp.sides[1], dof);
            let mu_lambda = cp.mu * cp.lambda;
            let gap = cp.gap + cp.normal.dot(s);
            let term = contact_term(gap, cp.normal, cp.stiffness, cp.normal, cp.slip + s, mu_lambda, layer, slip, want);
            e += term.energy;
            if let Some((g, h)) = out.as_mut() {
                self.add_point_term(g, h, &cp.sides, term.gradient, &term.hessian, dof);
            }
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::Obstacle;
    use crate::math::cholesky_solve;
    use crate::test_rng::Rng;

    fn vec(s: &mut Rng, scale: f64) -> DVec3 {
        DVec3::new(s.signed(), s.signed(), s.signed()) * scale
    }

    /// Two rotating bodies, one fixed partner, a ground contact, and pairs in the penalty,
    /// sliding and sticking regimes.
    fn problem() -> (Problem, Vec<Obstacle>) {
        let mut s = Rng(11);
        let mut bodies = Vec::new();
        for k in 0..2 {
            let a = vec(&mut s, 0.1);
            let second_moment = outer(a, a) * 50.0 + DMat3::from_diagonal(DVec3::new(3.0, 4.0, 3.5));
            let force_moment = DMat3::from_cols(vec(&mut s, 0.5), vec(&mut s, 0.5), vec(&mut s, 0.5));
            // Body 0 stretches (a random convex elastic model), body 1 is rigid.
            let mut elastic = StretchQuadratic::default();
            for r in 0..6 {
                let c: [f64; 6] = std::array::from_fn(|_| s.signed());
                for i in 0..6 {
                    elastic.gradient[i] += 0.1 * c[i];
                    for j in 0..6 {
                        elastic.hessian[6 * i + j] += 40.0 * c[i] * c[j] + if i == j && r == 0 { 20.0 } else { 0.0 };
                    }
                }
            }
            bodies.push(BodyQuadratic::from_moments(
                vec(&mut s, 0.5),
                900.0,
                vec(&mut s, 2.0),
                second_moment,
                force_moment,
                true,
                (k == 0).then_some(&elastic),
            ));
        }
        let (delta, static_slip) = (1e-3, 1e-5);
        let side = |slot: u32, coef: f64, s: &mut Rng| Side { slot, coef, arm: vec(s, 0.1) };
        let mut couplings = Vec::new();
        for (k, slots) in [[0, 1], [1, 0], [0, FIXED], [1, 1], [FIXED, 1]].into_iter().enumerate() {
            let sides = [side(slots[0], 1.0, &mut s), side(slots[1], -1.0, &mut s)];
            let normal = vec(&mut s, 1.0).normalize();
            // Slips from sticking (below 1e-5) to sliding; the test motions move contact points
            // by about 1e-6 m, away from the regime boundary and from zero slip.
            let slip = vec(&mut s, 1.0).normalize() * [3e-6, 6e-6, 1e-3, 3e-4, 2e-3][k];
            couplings.push(Coupling {
                sides,
                gap: 0.4e-3 + 0.1e-3 * k as f64,
                slip,
                normal,
                stiffness: 2e4,
                lambda: 5.0,
                mu: 0.4,
            });
        }
        let candidates = vec![Candidate {
            // The ground carried by body 1 (a carrier's obstacle).
            sides: [
                Side { slot: 0, coef: 1.0, arm: DVec3::new(0.05, -0.08, 0.02) },
                Side { slot: 1, coef: -1.0, arm: DVec3::new(-0.1, 0.03, 0.04) },
            ],
            obstacle: 0,
            position: DVec3::new(0.25, 0.5e-3, -0.125),
            start: DVec3::new(0.25 - 2e-4, 0.6e-3, -0.125),
            // Soft, so that the f32 obstacle distance adds no noise to the differences.
            stiffness: 1e2,
            lambda: 3.0,
            normal: DVec3::Y,
            mu: 0.5,
        }];
        let ground = Obstacle::ground(0.0, 0.5);
        (Problem { bodies, candidates, couplings, delta, static_slip, stiffening: false }, vec![ground])
    }

    #[test]
    fn energy_gradient_and_hessian_match_finite_differences() {
        let (pb, obstacles) = problem();
        let dim = 2 * DOF;
        let mut s = Rng(5);
        // Small motions: rotations and stretches of ~1e-5, translations of ~1e-6 m.
        let q: Vec<f64> = (0..dim).map(|i| s.signed() * if i % DOF < 3 { 1e-6 } else { 1e-5 }).collect();
        let (mut g, mut h) = (Vec::new(), Vec::new());
        pb.energy(&q, &obstacles, Some((&mut g, &mut h)));
        for i in 0..dim {
            let step = if i % DOF < 3 { 1e-8 } else { 1e-7 };
            let shifted = |d: f64| {
                let mut p = q.clone();
                p[i] += d;
                p
            };
            let (qp, qm) = (shifted(step), shifted(-step));
            let fd = (pb.energy(&qp, &obstacles, None) - pb.energy(&qm, &obstacles, None)) / (2.0 * step);
            assert!((fd - g[i]).abs() <= 1e-4 * g[i].abs().max(1.0), "gradient {i}: {} vs fd {fd}", g[i]);
            let (mut gp, mut gm, mut hp) = (Vec::new(), Vec::new(), Vec::new());
            pb.energy(&qp, &obstacles, Some((&mut gp, &mut hp)));
            pb.energy(&qm, &obstacles, Some((&mut gm, &mut hp)));
            for r in 0..dim {
                let fd = (gp[r] - gm[r]) / (2.0 * step);
                let an = h[r * dim + i];
                let scale = h[r * dim + r].abs().max(h[i * dim + i].abs()).sqrt().max(1.0);
                assert!(
                    (fd - an).abs() <= 1e-3 * scale * scale.max(an.abs().sqrt()),
                    "hessian ({r}, {i}): {an} vs fd {fd}"
                );
            }
        }
    }

    /// The moment form of a body's inertia and drag equals the sum over its vertices,
    /// `Σ ½ A |t + θ × r + S r|² − f·(t + θ × r + S r)`, for any coarse motion.
    #[test]
    fn moments_give_the_vertex_sum() {
        let mut s = Rng(29);
        let points: Vec<(f64, DVec3, DVec3)> =
            (0..9).map(|_| (1.0 + s.signed().abs() * 50.0, vec(&mut s, 0.3), vec(&mut s, 2.0))).collect();
        let stiff: f64 = points.iter().map(|p| p.0).sum();
        let center = points.iter().map(|p| p.1 * p.0).sum::<DVec3>() / stiff;
        let (mut second_moment, mut force_moment, mut force) = (DMat3::ZERO, DMat3::ZERO, DVec3::ZERO);
        for &(a, x, f) in &points {
            let r = x - center;
            second_moment += outer(r, r) * a;
            force_moment += outer(f, r);
            force += f;
        }
        let elastic = StretchQuadratic::default();
        let body = BodyQuadratic::from_moments(center, stiff, force, second_moment, force_moment, true, Some(&elastic));
        let pb = Problem { bodies: vec![body], ..Problem::default() };
        for _ in 0..4 {
            let q: Vec<f64> = (0..DOF).map(|_| 0.1 * s.signed()).collect();
            let (t, theta) = (DVec3::from_slice(&q[..3]), DVec3::from_slice(&q[3..6]));
            let stretch = crate::solver::vbd::stretch::stretch_matrix(&q[6..]);
            let direct: f64 = points
                .iter()
                .map(|&(a, x, f)| {
                    let r = x - center;
                    let d = t + theta.cross(r) + stretch * r;
                    0.5 * a * d.length_squared() - f.dot(d)
                })
                .sum();
            let e = pb.energy(&q, &[], None);
            assert!((e - direct).abs() < 1e-9 * direct.abs().max(1.0), "{e} vs {direct}");
        }
    }

    #[test]
    fn hessian_is_symmetric_positive_definite() {
        let (pb, obstacles) = problem();
        let dim = 2 * DOF;
        let q = vec![0.0; dim];
        let (mut g, mut h) = (Vec::new(), Vec::new());
        pb.energy(&q, &obstacles, Some((&mut g, &mut h)));
        for r in 0..dim {
            for c in 0..dim {
                assert!((h[r * dim + c] - h[c * dim + r]).abs() <= 1e-9 * h[r * dim + r].abs().max(1.0));
            }
        }
        let mut rhs = g.clone();
        assert!(cholesky_solve(&mut h, &mut rhs, dim));
    }
}
