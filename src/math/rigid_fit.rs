//! The rigid motion that best maps one point set onto another (Horn's closed form with unit
//! quaternions), and how far the points stray from it: what collision uses to carry a body's
//! distances to itself from one configuration to the next (`collision::self_clearance`).
//!
//! For centred points `x_i → y_i`, the rotation maximising `Σ y_i · R x_i` is the unit
//! quaternion that maximises `qᵀ N q`, with `N` the symmetric 4×4 built from the cross
//! covariance `S = Σ x_i y_iᵀ`. Its top eigenvector is found here by power iteration, shifted by
//! `Σ |x_i| |y_i|` (which bounds every Rayleigh quotient of `N`) so that the iteration
//! converges to the largest eigenvalue, by repeated squaring, and applied to the caller's last
//! answer (which picks the same rotation where two fit equally well). An answer
//! that is not quite optimal is still a rigid motion: callers measure the points' residual from
//! the motion they got, so nothing depends on the iteration having converged.

use glam::{DQuat, DVec3, Quat, Vec3A};

/// Squarings of the shifted matrix: its 256th power separates eigenvalues whose ratio is as
/// close as 0.9 by a factor of 1e-12.
const SQUARINGS: usize = 8;

/// `y ≈ rotation (x − from) + to`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RigidFit {
    pub rotation: Quat,
    pub from: Vec3A,
    pub to: Vec3A,
}

impl RigidFit {
    /// The fitted motion applied to a point of the first set.
    #[inline]
    pub fn apply(&self, x: Vec3A) -> Vec3A {
        self.to + self.rotation * (x - self.from)
    }

    /// The rotation's angle \[rad\], in `[0, π]`.
    pub fn angle(&self) -> f32 {
        2.0 * self.rotation.normalize().w.abs().min(1.0).acos()
    }
}

/// The rigid motion that best maps `x[i]` onto `y(i)` (equal weights), starting the iteration
/// from `guess`. Fewer than two points give the translation alone.
pub fn fit_rigid(x: &[Vec3A], y: impl Fn(usize) -> Vec3A, guess: Quat) -> RigidFit {
    let n = x.len();
    if n == 0 {
        return RigidFit { rotation: Quat::IDENTITY, from: Vec3A::ZERO, to: Vec3A::ZERO };
    }
    let d = |p: Vec3A| DVec3::new(p.x as f64, p.y as f64, p.z as f64);
    let (mut cx, mut cy) = (DVec3::ZERO, DVec3::ZERO);
    for (i, &p) in x.iter().enumerate() {
        cx += d(p);
        cy += d(y(i));
    }
    cx /= n as f64;
    cy /= n as f64;
    let mut s = [[0.0f64; 3]; 3];
    let mut bound = 0.0;
    for (i, &p) in x.iter().enumerate() {
        let (a, b) = (d(p) - cx, d(y(i)) - cy);
        for (r, row) in s.iter_mut().enumerate() {
            for (c, v) in row.iter_mut().enumerate() {
                *v += a[r] * b[c];
            }
        }
        bound += a.length() * b.length();
    }
    let [[sxx, sxy, sxz], [syx, syy, syz], [szx, szy, szz]] = s;
    // Rows of N for q = (w, x, y, z), shifted by `bound`.
    let m = [
        [sxx + syy + szz + bound, syz - szy, szx - sxz, sxy - syx],
        [syz - szy, sxx - syy - szz + bound, sxy + syx, szx + sxz],
        [szx - sxz, sxy + syx, -sxx + syy - szz + bound, syz + szy],
        [sxy - syx, szx + sxz, syz + szy, -sxx - syy + szz + bound],
    ];
    // M^(2^SQUARINGS), normalised at each squaring, is v vᵀ for the top eigenvector v up to a
    // factor (λ₂/λ₁)^(2^SQUARINGS); applied to the start it gives v unless the start is
    // orthogonal to it, and then its largest column does.
    let mut p = m;
    for _ in 0..SQUARINGS {
        let sq: [[f64; 4]; 4] =
            std::array::from_fn(|r| std::array::from_fn(|c| (0..4).map(|k| p[r][k] * p[k][c]).sum()));
        let scale = sq.iter().flatten().fold(0.0f64, |a, v| a.max(v.abs()));
        if !(scale > 1e-300) {
            break;
        }
        p = sq.map(|row| row.map(|v| v / scale));
    }
    let g = guess.normalize();
    let start = [g.w as f64, g.x as f64, g.y as f64, g.z as f64];
    let norm = |v: &[f64; 4]| v.iter().map(|a| a * a).sum::<f64>().sqrt();
    let applied: [f64; 4] = std::array::from_fn(|r| (0..4).map(|c| p[r][c] * start[c]).sum());
    let column = |c: usize| -> [f64; 4] { std::array::from_fn(|r| p[r][c]) };
    let widest = (0..4).map(column).fold([0.0; 4], |a, b| if norm(&b) > norm(&a) { b } else { a });
    let q = if norm(&applied) > 1e-6 * norm(&widest) { applied } else { widest };
    let q = if norm(&q) > 0.0 { q } else { start };
    let rotation = DQuat::from_xyzw(q[1], q[2], q[3], q[0]).normalize();
    RigidFit {
        rotation: rotation.as_quat(),
        from: Vec3A::new(cx.x as f32, cx.y as f32, cx.z as f32),
        to: Vec3A::new(cy.x as f32, cy.y as f32, cy.z as f32),
    }
}

/// The largest distance of `y(i)` from the fitted image of `x[i]` \[m\]; infinite if a point
/// or the fit is not finite (`f32::max` would drop a NaN and report a perfect fit).
pub fn fit_residual(fit: &RigidFit, x: &[Vec3A], y: impl Fn(usize) -> Vec3A) -> f32 {
    let largest = x
        .iter()
        .enumerate()
        .map(|(i, &p)| (y(i) - fit.apply(p)).length())
        .fold(0.0f32, |a, d| if d.is_nan() { f32::INFINITY } else { a.max(d) });
    if fit.rotation.is_finite() && fit.from.is_finite() && fit.to.is_finite() { largest } else { f32::INFINITY }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    fn cloud(rng: &mut Rng, n: usize, flat: bool) -> Vec<Vec3A> {
        (0..n)
            .map(|_| {
                let z = if flat { 0.0 } else { rng.uniform_f32() - 0.5 };
                Vec3A::new(rng.uniform_f32() - 0.5, 0.3 * (rng.uniform_f32() - 0.5), z)
            })
            .collect()
    }

    #[test]
    fn recovers_a_rigid_motion_from_any_start() {
        let mut rng = Rng(11);
        for flat in [false, true] {
            let x = cloud(&mut rng, 40, flat);
            for k in 0..6 {
                let axis = Vec3A::new(rng.uniform_f32() - 0.5, rng.uniform_f32() - 0.5, 0.7).normalize();
                let rotation = Quat::from_axis_angle(axis.into(), 0.5 * k as f32);
                let shift = Vec3A::new(1.0, -2.0, 0.5 * k as f32);
                let y = |i: usize| rotation * x[i] + shift;
                // From the identity and from a start far off the answer.
                for guess in [Quat::IDENTITY, Quat::from_rotation_y(2.5)] {
                    let fit = fit_rigid(&x, y, guess);
                    let residual = fit_residual(&fit, &x, y);
                    assert!(residual < 1e-5, "flat {flat}, turn {k}: residual {residual}");
                }
            }
        }
    }

    #[test]
    fn the_residual_bounds_a_deformation() {
        let mut rng = Rng(5);
        let x = cloud(&mut rng, 30, false);
        let rotation = Quat::from_rotation_x(0.4);
        let y = |i: usize| rotation * (x[i] * Vec3A::new(1.02, 1.0, 1.0)) + Vec3A::X;
        let fit = fit_rigid(&x, y, Quat::IDENTITY);
        let residual = fit_residual(&fit, &x, y);
        // A 2 % stretch of points within ±0.5 m along x strays at most 1 cm from some rigid
        // motion; the least-squares fit strays at most about as far and finds it nonzero.
        assert!(residual > 1e-4 && residual <= 0.02, "residual {residual}");
        assert!((fit.angle() - 0.4).abs() < 0.01, "angle {}", fit.angle());
    }

    #[test]
    fn a_point_that_is_not_finite_fits_nothing() {
        let x = cloud(&mut Rng(2), 10, false);
        for bad in [f32::NAN, f32::INFINITY] {
            let y = |i: usize| if i == 3 { Vec3A::splat(bad) } else { x[i] };
            let fit = fit_rigid(&x, y, Quat::IDENTITY);
            assert_eq!(fit_residual(&fit, &x, y), f32::INFINITY, "{bad}");
        }
    }
}
