// Element energies shared by kernels (the twins of src/material/): the dihedral angle of a
// hinge and its gradient, and the energy densities of a tet and of a membrane triangle. Not a
// kernel: host wrappers prepend this file; it uses no bindings.

// src/state.rs MODEL_STABLE_NEO_HOOKEAN (a material record's model bits).
const MODEL_STABLE_NEO_HOOKEAN: u32 = 0u;

// ∂θ/∂x of a hinge's vertices (src/material/bending.rs angle_gradient); zeros when degenerate.
fn hinge_angle_gradient(x0: vec3<f32>, x1: vec3<f32>, x2: vec3<f32>, x3: vec3<f32>) -> array<vec3<f32>, 4> {
    let e = x1 - x0;
    let le2 = dot(e, e);
    let le = sqrt(le2);
    if !(le > 0.0) {
        return array<vec3<f32>, 4>();
    }
    let eh = e / le;
    let pa = x2 - x0;
    let pb = x3 - x0;
    let qa = pa - eh * dot(pa, eh);
    let qb = pb - eh * dot(pb, eh);
    let ha = dot(qa, qa);
    let hb = dot(qb, qb);
    if !(ha > 1e-12 * le2) || !(hb > 1e-12 * le2) {
        return array<vec3<f32>, 4>();
    }
    let fa = cross(eh, pa) / ha;
    let fb = cross(eh, pb) / hb;
    let sa = dot(pa, eh) / le;
    let sb = dot(pb, eh) / le;
    return array<vec3<f32>, 4>(fa * (1.0 - sa) - fb * (1.0 - sb), fa * sa - fb * sb, -fa, fb);
}

// Signed dihedral angle θ − θ̄, wrapped to (−π, π] (src/material/bending.rs).
fn hinge_angle_offset(x0: vec3<f32>, x1: vec3<f32>, x2: vec3<f32>, x3: vec3<f32>, rest: f32) -> f32 {
    let e = x1 - x0;
    let na = cross(e, x2 - x0);
    let nb = cross(x3 - x0, e);
    let theta = atan2(dot(cross(na, nb), e) / length(e), dot(na, nb));
    let pi = 3.14159265358979;
    var d = theta - rest;
    if d > pi {
        d -= 2.0 * pi;
    } else if d <= -pi {
        d += 2.0 * pi;
    }
    return d;
}

// Elastic energy density ψ(F) [J/m³] of a tet: stable neo-Hookean (src/material/
// stable_neo_hookean.rs energy_density) or StVK (src/material/stvk.rs), both in the displacement
// gradient H = F − I, whose terms do not cancel: in I_C − 3 and FᵀF − I a stiff solid's energy
// is f32 round-off.
fn tet_energy_density(stable_neo_hookean: bool, f: mat3x3<f32>, mu: f32, lambda: f32) -> f32 {
    let id = mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));
    let h = f - id;
    if stable_neo_hookean {
        let hh = dot(h[0], h[0]) + dot(h[1], h[1]) + dot(h[2], h[2]);
        let tr = h[0].x + h[1].y + h[2].z;
        let ht = transpose(h);
        let tr_h2 = dot(h[0], ht[0]) + dot(h[1], ht[1]) + dot(h[2], ht[2]);
        let i2 = 0.5 * (tr * tr - tr_h2);
        let det = determinant(h);
        let dj = tr + i2 + det;
        return 0.5 * mu * hh + 0.5 * lambda * dj * dj - mu * (i2 + det);
    }
    let e = (h + transpose(h) + transpose(h) * h) * 0.5;
    let tr = e[0].x + e[1].y + e[2].z;
    return mu * (dot(e[0], e[0]) + dot(e[1], e[1]) + dot(e[2], e[2])) + 0.5 * lambda * tr * tr;
}

// Plane-stress StVK energy density of a membrane with 3×2 F = [f0 f1] (src/material/
// membrane.rs energy_density).
fn membrane_energy_density(f0: vec3<f32>, f1: vec3<f32>, mu: f32, lambda: f32) -> f32 {
    let e11 = 0.5 * (dot(f0, f0) - 1.0);
    let e12 = 0.5 * dot(f0, f1);
    let e22 = 0.5 * (dot(f1, f1) - 1.0);
    let tr = e11 + e22;
    return mu * (e11 * e11 + 2.0 * e12 * e12 + e22 * e22) + 0.5 * lambda * tr * tr;
}
