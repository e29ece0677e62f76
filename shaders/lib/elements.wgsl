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
// stable_neo_hookean.rs energy_density, whose doc derives the Green-strain form used near J = 1:
// the direct form's terms cancel, and a stiff solid's energy was f32 round-off) or StVK
// (src/material/stvk.rs). The strain is formed from H = F − I (src/material/tet.rs green_strain).
fn tet_energy_density(stable_neo_hookean: bool, f: mat3x3<f32>, mu: f32, lambda: f32) -> f32 {
    let h = f - mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));
    let e = (h + transpose(h) + transpose(h) * h) * 0.5;
    let tr = e[0].x + e[1].y + e[2].z;
    let ee = dot(e[0], e[0]) + dot(e[1], e[1]) + dot(e[2], e[2]);
    if !stable_neo_hookean {
        return mu * ee + 0.5 * lambda * tr * tr;
    }
    let j = determinant(f);
    if abs(j - 1.0) > 0.25 {
        let ic = dot(f[0], f[0]) + dot(f[1], f[1]) + dot(f[2], f[2]);
        let dj = j - (1.0 + mu / lambda);
        return 0.5 * (mu * (ic - 3.0) + lambda * dj * dj - mu * mu / lambda);
    }
    let i2 = 0.5 * (tr * tr - ee);
    let det = determinant(e);
    let x = 2.0 * tr + 4.0 * i2 + 8.0 * det;
    let s1 = 1.0 + sqrt(1.0 + x);
    let dj = x / s1;
    let g = 2.0 * i2 + 4.0 * det - x * x / (2.0 * s1 * s1);
    return 0.5 * lambda * dj * dj - mu * g;
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
