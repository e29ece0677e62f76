//! Exact rotation of a body's rigid spin across a step (Pliant; not in \[VBD\]).
//!
//! The integrators (`solver::integrator`) extrapolate every vertex along a straight line,
//! `x̂ = x^n + h v^n + …`, and recover the velocity from the chord `Δx`. On a turning body the
//! line leaves the vertex's circle and the chord cuts it, and the dissipative Newmark member
//! (γ = 3/2) damps the turning like an oscillation of every coordinate at `ω`: a 0.2 m soft cube
//! spun at 10 rad/s in zero gravity kept 37 % of its angular momentum after 2 s, and a soft ball
//! on an incline could not spin up to rolling speed.
//!
//! So each free volumetric body's rigid part turns exactly. From `x^n` and `v^n` the body's
//! angular velocity `ω = I⁻¹ L` about its centre of mass `c` gives the rotation `R` by `ω h`;
//! for a vertex at arm `r = x^n − c`
//!
//! ```text
//! x̂ += ρ,  ρ = (R − 1) r − h ω × r       (the predictor follows the circle, not its tangent)
//! v^{n+1} = c1 (Δx − ρ) + c0 + κ,  κ = ω' × R r − ω × r,  ω' = (R I Rᵀ)⁻¹ L
//! ```
//!
//! so a rigid spin is a fixed point of the step: the body turns by `R` unstrained, with
//! velocity `ω' × R r`, the rigid motion of the turned body with the same angular momentum `L`
//! (about a principal axis `ω' = ω`; otherwise `ω` precesses as a free rigid body's does),
//! whatever the integrator's damping does to the deformation. Both terms fold into the
//! integrator's coefficients: `ρ` into the predictor, `κ − c1 ρ` into `c0`.
//!
//! Rayleigh damping leaves the spin alone too: the tets of a turning body see `Ḟ − [ω']× F`, the
//! rate of their deformation gradient relative to the body turning at `ω'` (velocities
//! `v − ω' × x`; a constant drops out of `Ḟ`), in `vertex::elastic_terms` and `vbd_color`.
//! The stable neo-Hookean damping stress `μ Ḟ + …` is not zero for a rotation, and with it the
//! spun cube lost 1.7 % of its angular momentum in 2 s at the default k_d = 1e-6 s; it now keeps
//! it to 5e-6 (`tests/spun_bodies.rs`), as without damping. Only the body's mean turning is
//! spared: an element rotating relative to its body is damped as before, and so are bodies with
//! kinematic vertices (no spin). It costs a damped tet's vertex update three cross products
//! (drop cubes up to 10 % slower on this VM, BENCHMARKS.md). Folding `[ω']× F̂` at the
//! predicted `x̂` into each tet's per-step `G_e` instead cost nothing there, but where contact
//! holds a body away from `x̂` the subtracted rate is no rigid motion of the body, and the
//! damping turns into a force that does work: the steel block of `fallback_weight_on_sheet`
//! (E = 1e11 Pa) took its total energy from 4.3 to 5.8 J within 0.6 s, unrejected. An earlier
//! try, a damping stress on the Green strain rate alone (`μ F sym(FᵀḞ)`), spared every
//! rotation: then a stack of three soft cubes still rocked after 1.5 s (4e-4 J where
//! `tests/fallback.rs` wanted 1e-4). Sparing only each body's spin leaves that stack's jitter as
//! it was (frame to frame 1e-5 to 4e-4 J from 0.5 s on, before and after).
//!
//! The rotating frame's centrifugal and Coriolis terms are left out: a spinning body keeps its
//! shape instead of bulging by about `ρ ω² r² / E` (1e-3 for that cube). Adding the centrifugal
//! acceleration to the inertia target bulged it but drained 20 % of the momentum in 2 s.
//!
//! The GPU's `vbd_spin` kernel computes the same per-body spin (in f32) and `vbd_inertia`
//! applies it; `vbd_spin` also writes each body's `ω'` after the packed records for
//! `vbd_color`'s damping.

use glam::{DMat3, DVec3, Mat3A, Vec3A, Vec4};

/// Angular speeds below this \[rad/s\] are left to the integrator (ρ would be below rounding).
pub(crate) const MIN_SPIN: f64 = 1e-6;

/// A body's rigid spin over one step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BodySpin {
    /// Centre of mass at `x^n` \[m\].
    pub center: Vec3A,
    /// Angular velocity \[rad/s\].
    pub omega: Vec3A,
    /// Angular velocity after the step, `(R I Rᵀ)⁻¹ L` \[rad/s\].
    pub omega_after: Vec3A,
    /// Rotation by `ω h`.
    pub rotation: Mat3A,
}

/// A vertex's terms of its body's spin (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Turn {
    /// `ρ = (R − 1) r − h ω × r`, added to the predictor \[m\].
    pub shift: Vec3A,
    /// `κ = ω' × R r − ω × r`, added to the velocity \[m/s\].
    pub velocity: Vec3A,
}

impl BodySpin {
    /// The spin of the vertices `x`, `v` with masses `m`, over a step of `h` seconds; `None` for
    /// a body without rotational inertia or turning slower than `MIN_SPIN`.
    pub fn of(x: &[Vec4], v: &[Vec4], m: &[f32], h: f32) -> Option<Self> {
        let (mut mass, mut mx) = (0.0f64, DVec3::ZERO);
        for (p, &w) in x.iter().zip(m) {
            mass += w as f64;
            mx += p.truncate().as_dvec3() * w as f64;
        }
        if !(mass > 0.0) {
            return None;
        }
        let c = mx / mass;
        let (mut l, mut inertia) = (DVec3::ZERO, DMat3::ZERO);
        for ((p, q), &w) in x.iter().zip(v).zip(m) {
            let r = p.truncate().as_dvec3() - c;
            let w = w as f64;
            // Momentum about c; the mean velocity's part Σ w r × v̄ vanishes as Σ w r = 0.
            l += r.cross(q.truncate().as_dvec3()) * w;
            inertia += (DMat3::from_diagonal(DVec3::splat(r.length_squared()))
                - DMat3::from_cols(r * r.x, r * r.y, r * r.z))
                * w;
        }
        let det = inertia.determinant();
        if !(det.is_finite() && det > 0.0) {
            return None;
        }
        let omega = inertia.inverse() * l;
        let speed = omega.length();
        if !(speed.is_finite() && speed > MIN_SPIN) {
            return None;
        }
        let turn = DMat3::from_axis_angle(omega / speed, speed * h as f64);
        let omega_after = turn * (inertia.inverse() * (turn.transpose() * l));
        Some(Self {
            center: c.as_vec3().into(),
            omega: omega.as_vec3().into(),
            omega_after: omega_after.as_vec3().into(),
            rotation: Mat3A::from(turn.as_mat3()),
        })
    }

    /// The spin's terms for a vertex at `x` (`x^n`).
    #[inline]
    pub fn turn(&self, x: Vec3A, h: f32) -> Turn {
        let r = x - self.center;
        let turned = self.rotation * r;
        let wr = self.omega.cross(r);
        Turn { shift: turned - r - wr * h, velocity: self.omega_after.cross(turned) - wr }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rigid body spinning freely about no principal axis: stepping with `x^{n+1} = x̂` and the
    /// corrected velocity keeps its angular momentum and its shape to rounding.
    #[test]
    fn a_free_spin_is_a_fixed_point() {
        let h = 1.0f32 / 60.0;
        let omega = Vec3A::new(0.3, -2.0, 10.0);
        let mut x: Vec<Vec4> = (0..8)
            .map(|i| Vec4::new((i & 1) as f32 * 0.2, (i >> 1 & 1) as f32 * 0.3, (i >> 2) as f32 * 0.1, 0.0))
            .collect();
        let m = vec![1.0f32, 2.0, 1.5, 1.0, 0.5, 1.0, 2.5, 1.0];
        assert!(BodySpin::of(&x, &[Vec4::ZERO; 8], &m, h).is_none(), "a body at rest does not spin");
        let total: f32 = m.iter().sum();
        let centre = |x: &[Vec4]| x.iter().zip(&m).fold(Vec3A::ZERO, |s, (p, &w)| s + Vec3A::from_vec4(*p) * w) / total;
        let momentum = |x: &[Vec4], v: &[Vec4]| {
            let c = centre(x);
            x.iter()
                .zip(v)
                .zip(&m)
                .fold(Vec3A::ZERO, |l, ((p, q), &w)| l + (Vec3A::from_vec4(*p) - c).cross(Vec3A::from_vec4(*q)) * w)
        };
        let c0 = centre(&x);
        let mut v: Vec<Vec4> = x.iter().map(|p| omega.cross(Vec3A::from_vec4(*p) - c0).extend(0.0)).collect();
        let rest: Vec<Vec3A> = x.iter().map(|p| Vec3A::from_vec4(*p)).collect();
        let l0 = momentum(&x, &v);
        for _ in 0..120 {
            let spin = BodySpin::of(&x, &v, &m, h).unwrap();
            for i in 0..8 {
                let xi = Vec3A::from_vec4(x[i]);
                let turn = spin.turn(xi, h);
                // Backward Euler: x̂ = x + h v + ρ, v = (Δx − ρ)/h + κ.
                let dx = Vec3A::from_vec4(v[i]) * h + turn.shift;
                v[i] = ((dx - turn.shift) / h + turn.velocity).extend(0.0);
                x[i] = (xi + dx).extend(0.0);
            }
        }
        let l = momentum(&x, &v);
        assert!((l - l0).length() < 1e-4 * l0.length(), "angular momentum {l} vs {l0}");
        // Distances between vertices are kept: the step moved the body rigidly.
        for i in 0..8 {
            for j in 0..i {
                let (a, b) = (Vec3A::from_vec4(x[i]) - Vec3A::from_vec4(x[j]), rest[i] - rest[j]);
                assert!((a.length() - b.length()).abs() < 1e-4, "{i}-{j}: {} vs {}", a.length(), b.length());
            }
        }
    }
}
