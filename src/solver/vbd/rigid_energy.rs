//! The coarse energy `E(q)` of the rigid correction (see `rigid_correction.rs`): inertia and
//! drag per body, obstacle contacts and surface contact pairs as functions of each body's rigid
//! motion `q_b = (t_b, θ_b)`, with the gradient and the dense Hessian Newton needs.

use glam::{DMat3, DVec3, Vec3A};

use crate::collision::{
    Obstacle, friction_f0, friction_f1_over_u, friction_f1_prime, layer_energy, layer_force_stiffness,
};

/// A body that takes no part in the current group solve.
pub(super) const FIXED: u32 = u32::MAX;

/// One side of a contact point: its body's group slot (or `FIXED`), the sum of its weights and
/// its arm from the body's centre. The point moves by `coef · (t + θ × arm)`.
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

/// Inertia and drag of one body in the coarse space.
#[derive(Clone, Copy, Debug)]
pub(super) struct BodyQuadratic {
    /// `A`-weighted centroid of the free vertices.
    pub(super) center: DVec3,
    /// `ΣA` and `J = ΣA (|r|² I − r rᵀ)`.
    pub(super) stiff: f64,
    pub(super) inertia: DMat3,
    /// `F = Σf` and `τ = Σ r × f`.
    pub(super) force: DVec3,
    pub(super) torque: DVec3,
    /// Whether the body's coarse space includes rotation (volumetric bodies).
    pub(super) rotates: bool,
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

/// A point's arm from its body's centre, or zero for a body that does not rotate.
pub(super) fn arm(rotates: bool, r: DVec3) -> DVec3 {
    if rotates { r } else { DVec3::ZERO }
}

/// `[r]×`: the matrix with `[r]× v = r × v`.
pub(super) fn skew(r: DVec3) -> DMat3 {
    DMat3::from_cols(DVec3::new(0.0, r.z, -r.y), DVec3::new(-r.z, 0.0, r.x), DVec3::new(r.y, -r.x, 0.0))
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

/// Adds `scale · m` to the 3×3 block at `(row, col)` of a `dim × dim` row-major matrix.
pub(super) fn add_block(hess: &mut [f64], dim: usize, row: usize, col: usize, m: &DMat3, scale: f64) {
    for r in 0..3 {
        for c in 0..3 {
            hess[(row + r) * dim + col + c] += scale * m.col(c)[r];
        }
    }
}

/// Adds a term of a point that moves by `Σ_sides coef (t + θ × arm)`, with gradient `g` and
/// Hessian `h` with respect to that motion: `J_iᵀ g` and `J_iᵀ h J_j`, `J_i = coef_i [I, −[arm_i]×]`.
pub(super) fn add_point_term(grad: &mut [f64], hess: &mut [f64], sides: &[Side], g: DVec3, h: &DMat3) {
    let dim = grad.len();
    for si in sides.iter().filter(|s| s.slot != FIXED) {
        let i = 6 * si.slot as usize;
        let (gt, gr) = (g * si.coef, si.arm.cross(g) * si.coef);
        for r in 0..3 {
            grad[i + r] += gt[r];
            grad[i + 3 + r] += gr[r];
        }
        let ski = skew(si.arm);
        for sj in sides.iter().filter(|s| s.slot != FIXED) {
            let j = 6 * sj.slot as usize;
            let skj = skew(sj.arm);
            let c = si.coef * sj.coef;
            add_block(hess, dim, i, j, h, c);
            add_block(hess, dim, i, j + 3, &(*h * skj), -c);
            add_block(hess, dim, i + 3, j, &(ski * *h), c);
            add_block(hess, dim, i + 3, j + 3, &(ski * *h * skj), -c);
        }
    }
}

impl Problem {
    /// `E(q)`; with `derivatives`, also fills its gradient and dense row-major Hessian.
    pub(super) fn energy(
        &self,
        q: &[f64],
        obstacles: &[Obstacle],
        derivatives: Option<(&mut Vec<f64>, &mut Vec<f64>)>,
    ) -> f64 {
        let dim = q.len();
        let motion = |slot: u32| {
            let i = 6 * slot as usize;
            (DVec3::new(q[i], q[i + 1], q[i + 2]), DVec3::new(q[i + 3], q[i + 4], q[i + 5]))
        };
        let displacement = |s: &Side| {
            if s.slot == FIXED {
                DVec3::ZERO
            } else {
                let (t, theta) = motion(s.slot);
                (t + theta.cross(s.arm)) * s.coef
            }
        };
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
            let (t, theta) = motion(slot as u32);
            let j_theta = b.inertia * theta;
            e += 0.5 * b.stiff * t.length_squared() + 0.5 * theta.dot(j_theta) - b.force.dot(t) - b.torque.dot(theta);
            if let Some((g, h)) = out.as_mut() {
                let i = 6 * slot;
                let (gt, gr) = (t * b.stiff - b.force, j_theta - b.torque);
                for r in 0..3 {
                    g[i + r] += gt[r];
                    g[i + 3 + r] += gr[r];
                }
                add_block(h, dim, i, i, &DMat3::IDENTITY, b.stiff);
                add_block(h, dim, i + 3, i + 3, &b.inertia, 1.0);
            }
        }
        for cand in &self.candidates {
            let p = cand.position + displacement(&cand.sides[0]) + displacement(&cand.sides[1]);
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
                add_point_term(g, h, &cand.sides, term.gradient, &term.hessian);
            }
        }
        for cp in &self.couplings {
            let s = displacement(&cp.sides[0]) + displacement(&cp.sides[1]);
            let mu_lambda = cp.mu * cp.lambda;
            let gap = cp.gap + cp.normal.dot(s);
            let term = contact_term(gap, cp.normal, cp.stiffness, cp.normal, cp.slip + s, mu_lambda, layer, slip, want);
            e += term.energy;
            if let Some((g, h)) = out.as_mut() {
                add_point_term(g, h, &cp.sides, term.gradient, &term.hessian);
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
        for _ in 0..2 {
            let a = vec(&mut s, 1.0);
            let inertia = outer(a, a) * 50.0 + DMat3::from_diagonal(DVec3::new(30.0, 40.0, 35.0));
            bodies.push(BodyQuadratic {
                center: vec(&mut s, 0.5),
                stiff: 900.0,
                inertia,
                force: vec(&mut s, 2.0),
                torque: vec(&mut s, 0.5),
                rotates: true,
            });
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
        let dim = 12;
        let mut s = Rng(5);
        // Small motions: rotations of ~1e-5 rad, translations of ~1e-6 m.
        let q: Vec<f64> = (0..dim).map(|i| s.signed() * if i % 6 < 3 { 1e-6 } else { 1e-5 }).collect();
        let (mut g, mut h) = (Vec::new(), Vec::new());
        pb.energy(&q, &obstacles, Some((&mut g, &mut h)));
        for i in 0..dim {
            let step = if i % 6 < 3 { 1e-8 } else { 1e-7 };
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

    #[test]
    fn hessian_is_symmetric_positive_definite() {
        let (pb, obstacles) = problem();
        let q = vec![0.0; 12];
        let (mut g, mut h) = (Vec::new(), Vec::new());
        pb.energy(&q, &obstacles, Some((&mut g, &mut h)));
        for r in 0..12 {
            for c in 0..12 {
                assert!((h[r * 12 + c] - h[c * 12 + r]).abs() <= 1e-9 * h[r * 12 + r].abs().max(1.0));
            }
        }
        let mut rhs = g.clone();
        assert!(cholesky_solve(&mut h, &mut rhs, 12));
    }
}
