//! Dihedral-angle bending for cloth: one hinge per interior edge,
//! `E = ½ k (θ − θ̄)²` with `k = D |ē|² / (Ā_A + Ā_B)`.
//!
//! A hinge is `[x0, x1, x2, x3]`: edge `x0 → x1` as traversed by triangle A = (x0, x1, x2),
//! triangle B = (x1, x0, x3). With `e = x1 − x0`, `p_T = w_T − x0`, the triangle normals are
//! `n_A = e × p_A` and `n_B = p_B × e` and `θ = atan2((n_A × n_B)·ê, n_A·n_B)` (0 when flat).
//!
//! Gradient (Bridson et al. 2003, in our notation): with `f(e, p) = (ê × p)/h²`, `h` the
//! distance of the wing to the edge line, `s = (p·e)/|e|²` its projection parameter and
//! `τ_A = 1, τ_B = −1`: `∂θ/∂w_T = −τ_T f_T`, `∂θ/∂x0 = Σ_T τ_T (1 − s_T) f_T`,
//! `∂θ/∂x1 = Σ_T τ_T s_T f_T`.
//! The per-vertex Hessian blocks differentiate these once more (Derived; finite-difference
//! tested below). They are indefinite, so the solver projects them.
//!
//! Stiffness scale: a `cloth_grid` bent into a cylinder of curvature κ about either grid axis
//! stores `D κ²/2` per unit area with this `k` (test `cylinder_energy_matches_plate_theory`).

#[cfg(test)]
use crate::math::project_abs3;
#[cfg(test)]
use crate::math::{Matrix3, skew};
use crate::math::{Real, Vector3, outer};

/// Per-triangle quantities of one wing, for the exact Hessian the tests check the solver's
/// against.
#[cfg(test)]
struct Wing<R: Real> {
    f: R::V3,
    s: R,
    // Derivatives of `f` and `s`.
    dfde: R::M3,
    dfdp: R::M3,
    dsde: R::V3,
    dsdp: R::V3,
}

#[cfg(test)]
fn wing<R: Real>(e: R::V3, p: R::V3) -> Option<Wing<R>> {
    let le2 = e.length_squared();
    let le = le2.sqrt();
    let eh = e * (R::ONE / le);
    let pe = p.dot(eh);
    let q = p - eh * pe;
    let h2 = q.length_squared();
    if !(h2 > R::lit(1e-12) * le2) || !(le > R::ZERO) {
        return None;
    }
    let ep = eh.cross(p);
    let inv_h2 = R::ONE / h2;
    let f = ep * inv_h2;
    let inv_h4 = inv_h2 * inv_h2;
    let dfdp = (outer::<R>(ep, q) + outer::<R>(q, ep)) * (-inv_h4);
    // dê = P⊥ de/|e|; d(ê×p) = −[p]× dê; dh² = −2 (p·ê) qᵀ de/|e|.
    let p_perp = R::M3::IDENTITY - outer::<R>(eh, eh);
    let dfde = skew::<R>(p).mul_mat(&p_perp) * (-inv_h2 / le) + outer::<R>(ep, q) * (R::lit(2.0) * pe * inv_h4 / le);
    let s = pe / le;
    Some(Wing { f, s, dfde, dfdp, dsde: (p - e * (R::lit(2.0) * s)) * (R::ONE / le2), dsdp: eh * (R::ONE / le) })
}

/// Signed dihedral angle θ \[rad\] of a hinge (0 when flat, positive when folding towards the
/// normal side of triangle A).
pub fn dihedral_angle<R: Real>(x: &[R::V3; 4]) -> R {
    let e = x[1] - x[0];
    let na = e.cross(x[2] - x[0]);
    let nb = (x[3] - x[0]).cross(e);
    let le = e.length();
    let sin = na.cross(nb).dot(e) / le;
    sin.atan2(na.dot(nb))
}

/// `θ − θ̄` wrapped to (−π, π].
#[inline(always)]
fn angle_difference<R: Real>(theta: R, rest: R) -> R {
    let pi = R::lit(std::f64::consts::PI);
    let mut d = theta - rest;
    if d > pi {
        d -= pi + pi;
    } else if d <= -pi {
        d += pi + pi;
    }
    d
}

/// Hinge stiffness `k = D |ē|²/(Ā_A + Ā_B)` \[N·m\] from rest positions and plate bending
/// stiffness `D` \[N·m\].
pub fn hinge_stiffness<R: Real>(rest: &[R::V3; 4], bending_stiffness: R) -> R {
    let e = rest[1] - rest[0];
    let area_a = R::lit(0.5) * e.cross(rest[2] - rest[0]).length();
    let area_b = R::lit(0.5) * e.cross(rest[3] - rest[0]).length();
    bending_stiffness * e.length_squared() / (area_a + area_b)
}

/// Bending energy of one hinge \[J\].
pub fn element_energy<R: Real>(x: &[R::V3; 4], rest_angle: R, k: R) -> R {
    let d = angle_difference(dihedral_angle::<R>(x), rest_angle);
    R::lit(0.5) * k * d * d
}

/// `θ` and `∂θ/∂x` for the four hinge vertices (zeros for a degenerate hinge) from one set of
/// normals. The wings' `f_T = (ê × p_T)/h_T²` are the normals scaled: `|n_A| = |e| h_A`, so
/// `f_A = |e| n_A/|n_A|²` and `f_B = −|e| n_B/|n_B|²`, and `s_T = (p_T·e)/|e|²`. Sharing the
/// normals with the angle halves the work of a hinge visit, the cloth sweep's largest cost.
#[inline(always)]
fn angle_and_gradient<R: Real>(x: &[R::V3; 4]) -> (R, [R::V3; 4]) {
    let e = x[1] - x[0];
    let (pa, pb) = (x[2] - x[0], x[3] - x[0]);
    let (na, nb) = (e.cross(pa), pb.cross(e));
    let le2 = e.length_squared();
    let le = le2.sqrt();
    let (na2, nb2) = (na.length_squared(), nb.length_squared());
    let theta = (na.cross(nb).dot(e) / le).atan2(na.dot(nb));
    // A wing closer to the edge line than a millionth of the edge (`h² ≤ 1e-12 |e|²`).
    let flat = R::lit(1e-12) * le2 * le2;
    if !(na2 > flat && nb2 > flat && le > R::ZERO) {
        return (theta, [R::V3::ZERO; 4]);
    }
    let fa = na * (le / na2);
    let fb = nb * (-le / nb2);
    let (sa, sb) = (pa.dot(e) / le2, pb.dot(e) / le2);
    (theta, [fa * (R::ONE - sa) - fb * (R::ONE - sb), fa * sa - fb * sb, -fa, fb])
}

/// `∂θ/∂x` for the four hinge vertices; zeros for a degenerate hinge.
pub fn angle_gradient<R: Real>(x: &[R::V3; 4]) -> [R::V3; 4] {
    angle_and_gradient::<R>(x).1
}

/// Gradient `k (θ − θ̄) ∂θ/∂x` \[N\].
pub fn element_gradient<R: Real>(x: &[R::V3; 4], rest_angle: R, k: R) -> [R::V3; 4] {
    let (theta, g) = angle_and_gradient::<R>(x);
    let d = angle_difference(theta, rest_angle);
    g.map(|g| g * (k * d))
}

/// Exact per-vertex term `(∂E/∂x_a, ∂²E/∂x_a²)` for hinge slot `a` (not projected).
#[cfg(test)]
pub fn vertex_gradient_hessian<R: Real>(x: &[R::V3; 4], a: usize, rest_angle: R, k: R) -> (R::V3, R::M3) {
    let e = x[1] - x[0];
    let (wa, wb) = match (wing::<R>(e, x[2] - x[0]), wing::<R>(e, x[3] - x[0])) {
        (Some(a), Some(b)) => (a, b),
        _ => return (R::V3::ZERO, R::M3::ZERO),
    };
    // Triangle B enters every term with τ_B = −1.
    let (grad, hess) = match a {
        0 => {
            let g = wa.f * (R::ONE - wa.s) - wb.f * (R::ONE - wb.s);
            let term = |w: &Wing<R>| (w.dfde + w.dfdp) * (w.s - R::ONE) + outer::<R>(w.f, w.dsde + w.dsdp);
            (g, term(&wa) - term(&wb))
        }
        1 => {
            let g = wa.f * wa.s - wb.f * wb.s;
            let term = |w: &Wing<R>| w.dfde * w.s + outer::<R>(w.f, w.dsde);
            (g, term(&wa) - term(&wb))
        }
        2 => (-wa.f, wa.dfdp * -R::ONE),
        _ => (wb.f, wb.dfdp),
    };
    let d = angle_difference(dihedral_angle::<R>(x), rest_angle);
    (grad * (k * d), (outer::<R>(grad, grad) + hess * d) * k)
}

/// [`vertex_gradient_hessian`] with the block made positive semi-definite by mirroring its
/// negative eigenvalues ([`crate::math::project_abs3`]).
#[inline]
#[cfg(test)]
pub fn vertex_gradient_hessian_psd<R: Real>(x: &[R::V3; 4], a: usize, rest_angle: R, k: R) -> (R::V3, R::M3) {
    let (g, h) = vertex_gradient_hessian::<R>(x, a, rest_angle, k);
    (g, project_abs3::<R>(&h))
}

/// What VBD needs of one hinge at one of its vertices, from one evaluation of `∂θ/∂x`.
pub struct HingeVertexTerms<R: Real> {
    /// `∂E/∂x_a` \[N\].
    pub gradient: R::V3,
    /// Gauss–Newton block `k ∂θ/∂x_a ∂θ/∂x_aᵀ` \[N/m\]: positive semi-definite without an
    /// eigen-decomposition; it drops `k (θ − θ̄) ∂²θ/∂x_a²`, which vanishes at rest and is
    /// indefinite elsewhere (mirroring it cost an eigen-decomposition per hinge visit and made
    /// cloth 3× slower).
    pub hessian: R::M3,
    /// Rayleigh damping term `k θ̇ ∂θ/∂x_a` \[N\] for vertex velocities `v` (see [`damping_term`]).
    pub damping: R::V3,
}

/// Gradient, Gauss–Newton block and damping term of hinge slot `a`.
#[inline]
pub fn vertex_terms<R: Real>(
    x: &[R::V3; 4],
    v: Option<&[R::V3; 4]>,
    a: usize,
    rest_angle: R,
    k: R,
) -> HingeVertexTerms<R> {
    let (theta, g) = angle_and_gradient::<R>(x);
    let d = angle_difference(theta, rest_angle);
    let damping = match v {
        Some(v) => g[a] * (k * (g[0].dot(v[0]) + g[1].dot(v[1]) + g[2].dot(v[2]) + g[3].dot(v[3]))),
        None => R::V3::ZERO,
    };
    HingeVertexTerms { gradient: g[a] * (k * d), hessian: outer::<R>(g[a], g[a]) * k, damping }
}

/// Rayleigh damping force term `k θ̇ ∂θ/∂x_a` \[N\] for hinge slot `a`, with
/// `θ̇ = Σ_b ∂θ/∂x_b · v_b`: the Gauss–Newton stiffness `k ∇θ ∇θᵀ` applied to the velocities.
/// Zero for rigid motion (θ does not change), dissipative.
#[inline]
#[cfg(test)]
pub fn damping_term<R: Real>(x: &[R::V3; 4], v: &[R::V3; 4], a: usize, k: R) -> R::V3 {
    let g = angle_gradient::<R>(x);
    let theta_dot = g[0].dot(v[0]) + g[1].dot(v[1]) + g[2].dot(v[2]) + g[3].dot(v[3]);
    g[a] * (k * theta_dot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::fd;
    use glam::{DVec3, Vec2};

    fn hinge() -> [DVec3; 4] {
        [
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(0.0, 0.01, 0.1),
            DVec3::new(0.08, 0.02, 0.04),
            DVec3::new(-0.07, 0.0, 0.06),
        ]
    }

    fn check(x: [DVec3; 4], rest_angle: f64) {
        let k = 2.5e-3;
        // Gradient against central differences of the energy; per-vertex blocks against
        // central differences of the gradient.
        fd::check_gradient_and_diagonal_blocks(
            &x,
            |x| element_energy::<f64>(x, rest_angle, k),
            |x| element_gradient::<f64>(x, rest_angle, k),
            |x, a| vertex_gradient_hessian::<f64>(x, a, rest_angle, k).1,
        );
        for a in 0..4 {
            let (g, _) = vertex_gradient_hessian::<f64>(&x, a, rest_angle, k);
            fd::assert_vec_close(g, element_gradient::<f64>(&x, rest_angle, k)[a], 1e-12);
            fd::assert_psd(&vertex_gradient_hessian_psd::<f64>(&x, a, rest_angle, k).1);
        }
    }

    #[test]
    fn finite_differences_folded() {
        check(hinge(), 0.0);
        check(fd::deform(hinge(), 0.2, 1), 0.3);
    }

    #[test]
    fn finite_differences_near_flat_and_sharp() {
        let mut x = hinge();
        x[3] = DVec3::new(-0.07, -0.001, 0.06);
        check(x, -0.2);
        let mut y = hinge();
        y[3] = DVec3::new(0.06, 0.05, 0.05);
        check(y, 1.0);
    }

    #[test]
    fn solver_terms_match_the_exact_ones_at_rest() {
        // At θ = θ̄ the Gauss–Newton block is the exact block.
        let x = hinge();
        let rest = dihedral_angle::<f64>(&x);
        for a in 0..4 {
            let t = vertex_terms::<f64>(&x, None, a, rest, 2.0);
            let (g, h) = vertex_gradient_hessian::<f64>(&x, a, rest, 2.0);
            fd::assert_vec_close(t.gradient, g, 1e-9);
            fd::assert_mat_close(&t.hessian, &h, 1e-9);
            fd::assert_psd(&t.hessian);
        }
        let v = [DVec3::X, DVec3::Y, DVec3::Z, DVec3::ONE];
        let t = vertex_terms::<f64>(&x, Some(&v), 2, rest, 2.0);
        fd::assert_vec_close(t.damping, damping_term::<f64>(&x, &v, 2, 2.0), 1e-12);
    }

    #[test]
    fn flat_hinge_has_zero_angle_and_translation_invariant_gradient() {
        let x = [DVec3::ZERO, DVec3::Z, DVec3::X, -DVec3::X];
        assert!(dihedral_angle::<f64>(&x).abs() < 1e-12);
        let g = angle_gradient::<f64>(&hinge());
        assert!((g[0] + g[1] + g[2] + g[3]).length() < 1e-9);
    }

    #[test]
    fn cylinder_energy_matches_plate_theory() {
        // Bend a grid into a cylinder of radius R about the z axis and about the x axis: the
        // stored energy should be D/(2R²) × area (interior hinges; boundary rows excluded by
        // using an analytic count).
        let d_plate = 1.0e-3;
        let radius = 0.5;
        let mesh = crate::mesh::TriMesh::cloth_grid(Vec2::new(0.4, 0.4), [40, 40]).unwrap();
        for axis_z in [true, false] {
            let pos: Vec<DVec3> = mesh
                .positions()
                .iter()
                .map(|p| {
                    let (u, w) = if axis_z { (p.x as f64, p.z as f64) } else { (p.z as f64, p.x as f64) };
                    let phi = u / radius;
                    let (a, h) = (radius * phi.sin(), radius * (1.0 - phi.cos()));
                    if axis_z { DVec3::new(a, h, w) } else { DVec3::new(w, h, a) }
                })
                .collect();
            let rest: Vec<DVec3> = mesh.positions().iter().map(|p| p.as_dvec3()).collect();
            let mut energy = 0.0;
            for hinge in mesh.hinges() {
                let r = hinge.vertices.map(|i| rest[i as usize]);
                let x = hinge.vertices.map(|i| pos[i as usize]);
                energy += element_energy::<f64>(&x, 0.0, hinge_stiffness::<f64>(&r, d_plate));
            }
            // Bending lines run across the whole sheet; 40 interior lines of 40 cells each span
            // (40 − 1)/40 of the width in the bending direction.
            let area = 0.4 * 0.4 * 39.0 / 40.0;
            let expected = d_plate / (2.0 * radius * radius) * area;
            assert!((energy / expected - 1.0).abs() < 0.02, "axis_z {axis_z}: {energy} vs {expected}");
        }
    }
}
