//! The contact energy and friction of \[VBD\] §3.5–3.6 in Pliant's offset form
//! (`docs/algorithms.md` §2.4–2.5), written once for every contact kind: analytic obstacles,
//! vertex–triangle and edge–edge pairs, each supplying its own distance, normal and barycentric
//! weight.

use crate::math::{Matrix3, Real, Vector3, outer};

/// Contact model constants for one step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactParams<R> {
    /// Penalty stiffness `k_c` \[N/m\].
    pub stiffness: R,
    /// Contact offset `δ` \[m\]: surfaces are pushed apart to this distance.
    pub offset: R,
    /// `ε_v h` \[m\]: tangential displacement per step below which friction is static.
    pub static_slip: R,
}

/// How stiff the contact penalty is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ContactStiffness {
    /// A fixed stiffness \[N/m\] for every vertex.
    Absolute(f32),
    /// Proportional to the vertex mass \[N/m per kg\]: the vertex's own weight compresses the
    /// contact layer by the same fraction of δ whatever its mass.
    PerMass(f32),
}

impl ContactStiffness {
    /// The default: a vertex's own weight compresses the contact layer by 1 % of `offset`.
    ///
    /// A fixed 1e7 N/m (the VBD paper's value) is unusable in f32: near 2 m from the origin a
    /// position resolves 2.4e-7 m, i.e. ±2.4 N of contact-force noise per vertex, more than
    /// a vertex of a 1 kg block weighs (0.16 N), and friction (∝ λ) becomes noise. Mass-
    /// proportional stiffness keeps the noise near 2 % of each vertex's weight. Impacts do not
    /// rely on stiffness: obstacle paths are clamped exactly.
    pub fn default_for(gravity: f32, offset: f32) -> Self {
        Self::PerMass(gravity.max(9.81) / (0.01 * offset))
    }

    /// Stiffness \[N/m\] for a vertex of mass `m` \[kg\].
    #[inline(always)]
    pub fn for_mass(&self, m: f32) -> f32 {
        match *self {
            Self::Absolute(k) => k,
            Self::PerMass(k) => k * m,
        }
    }
}

/// Contact constants shared by all vertices of a step; [`ContactModel::params`] gives one
/// vertex's [`ContactParams`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactModel {
    /// Penalty stiffness rule.
    pub stiffness: ContactStiffness,
    /// Contact offset δ \[m\].
    pub offset: f32,
    /// `ε_v h` \[m\].
    pub static_slip: f32,
    /// Whether the layer stiffens as it is pressed ([`layer_force_stiffness`]) rather than
    /// being the penalty `½ k (δ − d)²` at every load. Spans' contacts always stiffen.
    pub stiffening: bool,
}

impl ContactModel {
    /// Constants for a vertex of mass `m`.
    #[inline(always)]
    pub fn params(&self, m: f32) -> ContactParams<f32> {
        ContactParams { stiffness: self.stiffness.for_mass(m), offset: self.offset, static_slip: self.static_slip }
    }

    /// The constants with which [`add_contact`] applies the layer of `p` at `distance`: the
    /// stiffening layer's there, or `p` itself (the penalty).
    #[inline(always)]
    pub fn layer_at(&self, p: ContactParams<f32>, distance: f32) -> ContactParams<f32> {
        if self.stiffening { p.stiffened_at(distance) } else { p }
    }

    /// The normal force \[N\] of a contact of stiffness `k` at `distance` (what friction is
    /// scaled by).
    #[inline(always)]
    pub fn normal_force<R: Real>(&self, k: R, distance: R) -> R {
        let offset = R::lit(self.offset as f64);
        if self.stiffening {
            layer_force_stiffness(distance, k, offset).0
        } else {
            k * (offset - distance).max(R::ZERO)
        }
    }

    /// The energy \[J\] of a contact of stiffness `k` at `distance`: the penalty's, or the
    /// stiffening layer's.
    pub fn energy(&self, k: f64, distance: f64) -> f64 {
        let offset = self.offset as f64;
        if self.stiffening {
            layer_energy(distance, k, offset)
        } else {
            let pen = (offset - distance).max(0.0);
            0.5 * k * pen * pen
        }
    }

    /// The stiffness rule and layer as the GPU kernels read them: bit 0 of the flags is set
    /// for a stiffness per kilogram, bit 1 for the stiffening layer.
    pub(crate) fn gpu_flags(&self) -> (u32, f32) {
        let (per_mass, k) = match self.stiffness {
            ContactStiffness::Absolute(k) => (0, k),
            ContactStiffness::PerMass(k) => (1, k),
        };
        (per_mass | (u32::from(self.stiffening) << 1), k)
    }
}

/// Where the contact layer stops stiffening, as a fraction of the offset `δ`: below `δ/10`
/// the layer's energy continues as the quadratic that matches it there, so its stiffness stays
/// at `100 k` and f32 sees no `1/d` blow-up at the surface.
const LAYER_FLOOR: f64 = 0.1;

/// The contact layer at signed distance `d` (Pliant; `docs/algorithms.md` §2.4): the force
/// `−E'(d) ≥ 0` and the stiffness `E''(d)` of
///
/// ```text
/// E(d) = k δ² (d/δ − 1 − ln(d/δ))      δ/10 ≤ d < δ, continued quadratically below δ/10.
/// ```
///
/// `E` agrees with the penalty `½ k (δ − d)²` to second order at `δ`, so a lightly pressed
/// contact (its own weight presses it 1 % of `δ`) is the penalty, but its force
/// `k δ (δ/d − 1)` grows as the layer is pressed: `9 k δ` at `δ/10` and `19 k δ` at the surface
/// (1,900 vertex weights by default), where a penalty holds at most `k δ`, so the bottom of a
/// stack, the ground under a loaded mattress or the few vertices a ball stands on were pressed
/// through the layer onto the path clamp, and a layer as soft at every load as 12 kPa foam let
/// an eight-cube tower tip over.
#[inline(always)]
pub fn layer_force_stiffness<R: Real>(distance: R, stiffness: R, offset: R) -> (R, R) {
    let (k, delta) = (stiffness, offset);
    if !(distance < delta) || !(k > R::ZERO) {
        return (R::ZERO, R::ZERO);
    }
    // Written as the spans' contact had it (bit for bit), which predates the option.
    let floor = R::lit(LAYER_FLOOR) * delta;
    let d = distance.max(floor);
    let ratio = delta / d;
    let at_floor = delta / floor;
    let force = k * delta * (ratio - R::ONE) + k * (at_floor * at_floor) * (floor - distance).max(R::ZERO);
    (force, k * (ratio * ratio))
}

/// The contact layer's energy `E(d)` of [`layer_force_stiffness`] \[J\] (the coarse problems'
/// line searches need it; the sweeps need only its derivatives).
pub fn layer_energy(distance: f64, stiffness: f64, offset: f64) -> f64 {
    let (k, delta) = (stiffness, offset);
    if !(distance < delta) || !(k > 0.0) {
        return 0.0;
    }
    let log = |d: f64| k * delta * delta * (d / delta - 1.0 - (d / delta).ln());
    let floor = LAYER_FLOOR * delta;
    if distance >= floor {
        log(distance)
    } else {
        let (force, stiff) = layer_force_stiffness(floor, k, delta);
        let below = floor - distance;
        log(floor) + force * below + 0.5 * stiff * below * below
    }
}

impl<R: Real> ContactParams<R> {
    /// The constants with which [`add_contact`] applies the layer of [`layer_force_stiffness`]
    /// at `distance` (its force and stiffness there) instead of the plain penalty; unchanged
    /// from the offset on.
    pub fn stiffened_at(self, distance: R) -> Self {
        let (force, stiffness) = layer_force_stiffness(distance, self.stiffness, self.offset);
        if !(stiffness > R::ZERO) {
            return self;
        }
        // add_contact applies `stiffness (offset − distance)`.
        Self { stiffness, offset: distance + force / stiffness, ..self }
    }
}

/// One contact as seen from one of its vertices.
#[derive(Clone, Copy, Debug)]
pub struct ContactPoint<R: Real> {
    /// Unsigned distance between the closest points (signed for obstacles) \[m\].
    pub distance: R,
    /// Unit normal from the other side towards this vertex.
    pub normal: R::V3,
    /// This vertex's closest-point weight (1 for a vertex against an obstacle).
    pub weight: R,
    /// Relative displacement of the contact points over the step `δx_c` \[m\].
    pub relative_displacement: R::V3,
    /// Friction coefficient μ.
    pub friction: R,
    /// Normal force `λ` that scales friction \[N\], lagged from the step's start (IPC's
    /// semi-implicit friction): with the current penetration instead, an initial guess pushed
    /// into the contact layer by gravity inflates friction and a block cannot start to slide.
    pub friction_normal_force: R,
    /// Normal of the friction frame (lagged at detection for surface pairs): slip along it is
    /// not friction.
    pub friction_normal: R::V3,
}

/// IPC's smoothed friction magnitude divided by slip, `f1(u)/u` (\[VBD\] Eq. 15–16): finite at
/// `u = 0`, `1/u` once sliding.
#[inline(always)]
pub fn friction_f1_over_u<R: Real>(u: R, static_slip: R) -> R {
    if u < static_slip {
        let inv = R::ONE / static_slip;
        R::lit(2.0) * inv - u * inv * inv
    } else {
        R::ONE / u
    }
}

/// IPC's smoothed friction potential `f0(u)` (the integral of `f1`; docs/algorithms.md §1.2), with
/// `f0(ε) = ε`: a cubic while sticking (`u < ε`), the slip itself once sliding.
#[inline(always)]
pub fn friction_f0<R: Real>(u: R, static_slip: R) -> R {
    if u < static_slip {
        let s = static_slip;
        -u * u * u / (R::lit(3.0) * s * s) + u * u / s + s / R::lit(3.0)
    } else {
        u
    }
}

/// Derivative of the smoothed friction magnitude, `f1'(u)`: `2/ε − 2u/ε²` while sticking, 0
/// once sliding.
#[inline(always)]
pub fn friction_f1_prime<R: Real>(u: R, static_slip: R) -> R {
    if u < static_slip {
        let inv = R::ONE / static_slip;
        R::lit(2.0) * inv - R::lit(2.0) * u * inv * inv
    } else {
        R::ZERO
    }
}

/// Adds one contact's penalty and friction terms to a vertex's Newton system: force `f`
/// (negative gradient) and Hessian block `h`. Returns whether the contact is active.
///
/// Penalty `E = ½ k_c d²`, `d = max(0, δ − dist)`, with the normal held fixed (Gauss–Newton
/// block `k_c w² n̂ n̂ᵀ`, PSD); the stiffening layer enters through the constants of
/// [`ContactParams::stiffened_at`]. Friction uses the lagged normal force `λ` of the contact
/// (`k_c d` for the penalty, docs/algorithms.md E3) and the
/// tangential slip of this step; its Hessian does not differentiate through `‖u‖` (\[VBD\] Eq. 16,
/// sign per E4).
#[inline(always)]
pub fn add_contact<R: Real>(f: &mut R::V3, h: &mut R::M3, c: &ContactPoint<R>, p: &ContactParams<R>) -> bool {
    let d = p.offset - c.distance;
    let n = c.normal;
    let w = c.weight;
    let nn = outer::<R>(n, n);
    let penalty = d > R::ZERO;
    if penalty {
        *f += n * (p.stiffness * d * w);
        *h += nn * (p.stiffness * w * w);
    }
    // Friction acts while the pair is in contact, scaled by the lagged normal force. (Applying
    // it for the whole step whenever the pair was in contact at its start, as strict IPC does,
    // made draped cloth with its soft contact hang on a sphere instead of sliding off.)
    let friction = penalty && c.friction > R::ZERO && c.friction_normal_force > R::ZERO;
    if friction {
        let dx = c.relative_displacement;
        let fn_ = c.friction_normal;
        let u = dx - fn_ * fn_.dot(dx);
        let ul = u.length();
        let k = c.friction * c.friction_normal_force * friction_f1_over_u(ul, p.static_slip);
        *f -= u * (k * w);
        *h += (R::M3::IDENTITY - outer::<R>(fn_, fn_)) * (k * w * w);
    }
    penalty || friction
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{DMat3, DVec3};

    /// The stiffened layer's force is `−E'(d)` and its stiffness `E''(d)` (finite differences
    /// of `E(d) = k δ² (d/δ − 1 − ln(d/δ))`, quadratic below δ/10), and it meets the penalty
    /// at δ to second order.
    #[test]
    fn the_stiffened_layer_is_the_derivative_of_its_energy() {
        let (k, delta) = (2.0e3f64, 1e-3f64);
        let floor = 0.1 * delta;
        let energy = |d: f64| layer_energy(d, k, delta);
        // The energy itself, written out: the log above δ/10, its quadratic continuation below.
        let log = |d: f64| k * delta * delta * (d / delta - 1.0 - (d / delta).ln());
        assert!((energy(5e-4) - log(5e-4)).abs() <= 1e-12 * log(5e-4));
        let (f0, f1) = (-k * delta * (delta / floor - 1.0), k * (delta / floor).powi(2));
        let below = log(floor) + f0 * (-1e-4 - floor) + 0.5 * f1 * (-1e-4 - floor).powi(2);
        assert!((energy(-1e-4) - below).abs() <= 1e-9 * below);
        assert_eq!(energy(1.2e-3), 0.0);
        let p = ContactParams { stiffness: k as f32, offset: delta as f32, static_slip: 1e-6 };
        for d in [-2e-4, 0.0, 5e-5, 1e-4, 2e-4, 5e-4, 9e-4, 9.99e-4, 1.2e-3] {
            let s = p.stiffened_at(d as f32);
            let force = (s.stiffness * (s.offset - d as f32).max(0.0)) as f64;
            let h = 1e-7;
            let fd_force = -(energy(d + h) - energy(d - h)) / (2.0 * h);
            assert!((force - fd_force).abs() <= 1e-3 * fd_force.abs() + 1e-6, "force at {d}: {force} vs {fd_force}");
            if d < delta - 1e-5 && (d - floor).abs() > 1e-6 {
                let fd_stiffness = (energy(d + h) - 2.0 * energy(d) + energy(d - h)) / (h * h);
                let got = s.stiffness as f64;
                assert!((got - fd_stiffness).abs() <= 2e-2 * fd_stiffness, "stiffness at {d}: {got} vs {fd_stiffness}");
            }
        }
        // Near the offset it is the penalty.
        let s = p.stiffened_at(0.999e-3);
        assert!((s.stiffness - p.stiffness).abs() < 1e-2 * p.stiffness);
    }

    /// A vertex pulled into the stiffening layer (1D: `E(d) + ½ m (d − y)²`, minimiser at 0.3 δ):
    /// the Newton step with the layer's curvature where it starts (0.9 δ) overshoots past the
    /// minimiser, and the step retaken with the curvature where that one ended
    /// (`vertex::update_vertex`) lands short of it with a lower energy than the start.
    #[test]
    fn the_majorised_step_into_the_layer_does_not_overshoot() {
        let (k, delta, m, y) = (1e3f64, 1e-3f64, 1e3f64, -2e-3f64);
        let total = |d: f64| layer_energy(d, k, delta) + 0.5 * m * (d - y).powi(2);
        let gradient = |d: f64| -layer_force_stiffness(d, k, delta).0 + m * (d - y);
        let curvature = |d: f64| layer_force_stiffness(d, k, delta).1 + m;
        // The minimiser, by bisection on the gradient.
        let (mut lo, mut hi) = (-delta, delta);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if gradient(mid) > 0.0 { hi = mid } else { lo = mid }
        }
        let best = 0.5 * (lo + hi);
        let d0 = 0.9 * delta;
        let newton = d0 - gradient(d0) / curvature(d0);
        // Here it ends past the surface, with more energy than it started with.
        assert!(newton < best && total(newton) > total(d0), "the plain step {newton} did not overshoot {best}");
        let extra = curvature(newton) - curvature(d0);
        let majorised = d0 - gradient(d0) / (curvature(d0) + extra);
        assert!(majorised > best && majorised < d0, "majorised step {majorised}, minimiser {best}");
        assert!(total(majorised) < total(d0));
    }

    #[test]
    fn friction_potential_derivatives_match_finite_differences() {
        let eps = 1e-3;
        for u in [1e-5, 3e-4, 7e-4, 9.9e-4, 1.5e-3, 0.02] {
            let h = 1e-8;
            let f1 = |u: f64| u * friction_f1_over_u(u, eps);
            let fd0 = (friction_f0(u + h, eps) - friction_f0(u - h, eps)) / (2.0 * h);
            assert!((fd0 - f1(u)).abs() < 1e-6, "f0' at {u}: {fd0} vs {}", f1(u));
            let fd1 = (f1(u + h) - f1(u - h)) / (2.0 * h);
            assert!(
                (fd1 - friction_f1_prime(u, eps)).abs() < 1e-3,
                "f1' at {u}: {fd1} vs {}",
                friction_f1_prime(u, eps)
            );
        }
        // Continuous at the sticking/sliding boundary.
        assert!((friction_f0(eps * (1.0 - 1e-12), eps) - eps).abs() < 1e-12);
    }

    fn params() -> ContactParams<f64> {
        ContactParams { stiffness: 1e6, offset: 1e-3, static_slip: 1e-5 }
    }

    #[test]
    fn inactive_beyond_offset_without_lagged_force() {
        let mut c = ContactPoint::<f64> {
            distance: 2e-3,
            normal: DVec3::Y,
            weight: 1.0,
            relative_displacement: DVec3::X,
            friction: 0.5,
            friction_normal_force: 0.0,
            friction_normal: DVec3::Y,
        };
        let (mut f, mut h) = (DVec3::ZERO, DMat3::ZERO);
        assert!(!add_contact(&mut f, &mut h, &c, &params()));
        assert_eq!(f, DVec3::ZERO);
        // In contact at the step's start but separated now: nothing acts either.
        c.friction_normal_force = 1.0;
        assert!(!add_contact(&mut f, &mut h, &c, &params()));
        assert_eq!(f, DVec3::ZERO);
    }

    #[test]
    fn penalty_force_is_minus_gradient() {
        // E(y) = ½ k (δ − y)² for a vertex at height y over a plane.
        let p = params();
        let energy = |y: f64| 0.5 * p.stiffness * (p.offset - y).max(0.0).powi(2);
        let y = 4e-4;
        let c = ContactPoint::<f64> {
            distance: y,
            normal: DVec3::Y,
            weight: 1.0,
            relative_displacement: DVec3::ZERO,
            friction: 0.0,
            friction_normal_force: 0.0,
            friction_normal: DVec3::Y,
        };
        let (mut f, mut h) = (DVec3::ZERO, DMat3::ZERO);
        assert!(add_contact(&mut f, &mut h, &c, &p));
        let eps = 1e-8;
        let fd = -(energy(y + eps) - energy(y - eps)) / (2.0 * eps);
        assert!((f.y - fd).abs() < 1e-4 * fd.abs());
        assert!((h.col(1).y - p.stiffness).abs() < 1e-9);
    }

    #[test]
    fn friction_is_coulomb_when_sliding_and_linear_when_sticking() {
        let p = params();
        let lambda = p.stiffness * (p.offset - 0.0);
        for (slip, expect) in [(1.0, 0.5 * lambda), (5e-6, 0.5 * lambda * (2.0 * 0.5 - 0.25))] {
            let c = ContactPoint::<f64> {
                distance: 0.0,
                normal: DVec3::Y,
                weight: 1.0,
                relative_displacement: DVec3::new(slip, 0.3, 0.0),
                friction: 0.5,
                friction_normal_force: lambda,
                friction_normal: DVec3::Y,
            };
            let (mut f, mut h) = (DVec3::ZERO, DMat3::ZERO);
            add_contact(&mut f, &mut h, &c, &p);
            assert!(f.x < 0.0, "friction opposes slip");
            assert!((-f.x - expect).abs() < 1e-6 * expect, "slip {slip}: {} vs {expect}", -f.x);
            // The normal component of the displacement does not create friction.
            assert!(f.z.abs() < 1e-12);
        }
    }
}
