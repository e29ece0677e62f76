// Element gradients and PSD-projected Hessians of the augmented-Lagrangian step's potential at
// the targets x̂ (src/solver/al/problem.rs gradient_hessian), one invocation per element of one
// kind: tets (stable neo-Hookean: the Hessian in F projected by its analytic eigensystem; StVK: the
// stress term's positive part, PSD by construction), membrane triangles (the same with 2×2
// stress) and hinges (the Gauss–Newton term k ∇θ ∇θᵀ). Each element writes its own record, so
// nothing is accumulated across invocations: al_pcg gathers the records by vertex.
// Host wrapper: src/gpu/al/al_elements.rs; prepended: lib/step.wgsl, lib/elements.wgsl,
// lib/mat3.wgsl, lib/psd.wgsl.

const KIND_TET: u32 = 0u;
const KIND_TRIANGLE: u32 = 1u;
const KIND_HINGE: u32 = 2u;

struct Params {
    kind: u32,
    count: u32,
    // First word of this kind's records in `element`: per element its vertices (4 words; a
    // triangle's fourth is 0), the gradient (3k values, vertex after vertex) and the Hessian
    // (3k × 3k, row-major) as f32 bits, k its vertex count.
    base: u32,
    // Where the triangles and the hinges start in `records` (in vec4s).
    tris: u32,
    hinges: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> tets: array<Tet>;
// src/gpu/pack.rs pack_records (see vbd_color.wgsl).
@group(0) @binding(3) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> element: array<u32>;

// Block (a, b) of an n × n row-major matrix.
fn put_block(h: ptr<function, array<f32, 144>>, n: u32, a: u32, b: u32, m: mat3x3<f32>) {
    for (var r = 0u; r < 3u; r++) {
        for (var c = 0u; c < 3u; c++) {
            (*h)[(3u * a + r) * n + 3u * b + c] = m[c][r];
        }
    }
}

// Takes the mode q of the Hessian in F, with eigenvalue e, out of the 12×12 element Hessian h
// when e is negative: V e (q g_a)(q g_b)ᵀ from block (a, b).
fn take_out(h: ptr<function, array<f32, 144>>, q: mat3x3<f32>, e: f32, gs: array<vec3<f32>, 4>, vol: f32) {
    if !(e < 0.0) {
        return;
    }
    for (var a = 0u; a < 4u; a++) {
        for (var b = 0u; b < 4u; b++) {
            let m = outer3(q * gs[a], q * gs[b]) * (e * vol);
            for (var r = 0u; r < 3u; r++) {
                for (var c = 0u; c < 3u; c++) {
                    (*h)[(3u * a + r) * 12u + 3u * b + c] -= m[c][r];
                }
            }
        }
    }
}

// The positive part of a symmetric 3×3 matrix (src/material/stvk.rs element_hessian_psd).
fn positive_part3(s: mat3x3<f32>) -> mat3x3<f32> {
    var a: array<f32, 144>;
    for (var r = 0u; r < 3u; r++) {
        for (var c = 0u; c < 3u; c++) {
            a[3u * r + c] = s[c][r];
        }
    }
    project_psd(&a, 3u);
    return mat3x3<f32>(vec3<f32>(a[0], a[3], a[6]), vec3<f32>(a[1], a[4], a[7]), vec3<f32>(a[2], a[5], a[8]));
}

// The positive part of a symmetric 2×2 stress (s11, s12, s22) (src/material/membrane.rs
// positive_part).
fn positive_part2(s: vec3<f32>) -> vec3<f32> {
    let m = 0.5 * (s.x + s.z);
    let d = sqrt(0.25 * (s.x - s.z) * (s.x - s.z) + s.y * s.y);
    let l1 = m + d;
    let l2 = m - d;
    if l2 >= 0.0 {
        return s;
    }
    if l1 <= 0.0 {
        return vec3<f32>(0.0);
    }
    var e = vec2<f32>(s.y, s.z - l2);
    if abs(s.x - l2) >= abs(s.z - l2) {
        e = vec2<f32>(s.x - l2, s.y);
    }
    let n2 = dot(e, e);
    if !(n2 > 0.0) {
        return vec3<f32>(0.0);
    }
    let k = l1 / n2;
    return vec3<f32>(e.x * e.x * k, e.x * e.y * k, e.y * e.y * k);
}

fn tet_terms(e: u32, g: ptr<function, array<vec3<f32>, 4>>, h: ptr<function, array<f32, 144>>) -> vec4<u32> {
    let t = tets[e];
    let x0 = positions[t.vertices.x].xyz;
    let ff = mat3x3<f32>(positions[t.vertices.y].xyz - x0, positions[t.vertices.z].xyz - x0,
                         positions[t.vertices.w].xyz - x0) * t.dm_inv;
    // Shape gradients: rows of D_m⁻¹, the first vertex minus their sum.
    let rows = transpose(t.dm_inv);
    let gs = array<vec3<f32>, 4>(-(rows[0] + rows[1] + rows[2]), rows[0], rows[1], rows[2]);
    let m = records[t.material];
    let mu = m.y;
    let lambda = m.z;
    let vol = t.volume;
    if bitcast<u32>(m.x) == MODEL_STABLE_NEO_HOOKEAN {
        // src/material/stable_neo_hookean.rs element_gradient and element_hessian.
        let cof = mat3x3<f32>(cross(ff[1], ff[2]), cross(ff[2], ff[0]), cross(ff[0], ff[1]));
        let j = dot(ff[0], cof[0]);
        let s = lambda * (j - (1.0 + mu / lambda));
        let p = ff * mu + cof * s;
        var c: array<vec3<f32>, 4>;
        for (var a = 0u; a < 4u; a++) {
            (*g)[a] = (p * gs[a]) * vol;
            c[a] = cof * gs[a];
        }
        for (var a = 0u; a < 4u; a++) {
            for (var b = 0u; b < 4u; b++) {
                let blk = diag3(mu * dot(gs[a], gs[b])) + outer3(c[a], c[b]) * lambda
                    - skew3(ff * cross(gs[a], gs[b])) * s;
                put_block(h, 12u, a, b, blk * vol);
            }
        }
        // The Hessian in F projected by its analytic eigensystem (element_hessian_psd): each
        // twist, flip or scaling mode with a negative eigenvalue is taken out.
        let d = rotation_svd(ff);
        let half = 0.70710678;
        for (var k = 0u; k < 3u; k++) {
            // (k, i, j) = (0, 1, 2), (1, 0, 2), (2, 0, 1).
            let i = select(0u, 1u, k == 0u);
            let jj = select(2u, 1u, k == 2u);
            let ij = outer3(d.u[i], d.v[jj]);
            let ji = outer3(d.u[jj], d.v[i]);
            take_out(h, (ij - ji) * half, mu + s * d.sigma[k], gs, vol);
            take_out(h, (ij + ji) * half, mu - s * d.sigma[k], gs, vol);
        }
        let sg = d.sigma;
        let cc = vec3<f32>(sg.y * sg.z, sg.x * sg.z, sg.x * sg.y);
        let kk = mat3x3<f32>(vec3<f32>(0.0, sg.z, sg.y), vec3<f32>(sg.z, 0.0, sg.x), vec3<f32>(sg.y, sg.x, 0.0));
        let es = sym3_eigen(diag3(mu) + outer3(cc, cc) * lambda + kk * s);
        for (var m = 0u; m < 3u; m++) {
            let w = es.vectors[m];
            let q = outer3(d.u[0], d.v[0]) * w.x + outer3(d.u[1], d.v[1]) * w.y + outer3(d.u[2], d.v[2]) * w.z;
            take_out(h, q, es.values[m], gs, vol);
        }
        return t.vertices;
    }
    // src/material/stvk.rs element_gradient and element_hessian_psd.
    let ftf = transpose(ff) * ff;
    let tr = 0.5 * (ftf[0].x + ftf[1].y + ftf[2].z - 3.0);
    let stress = (ftf - diag3(1.0)) * mu + diag3(lambda * tr);
    let p = ff * stress;
    let s_plus = positive_part3(stress);
    let f_ft = ff * transpose(ff);
    var u: array<vec3<f32>, 4>;
    for (var a = 0u; a < 4u; a++) {
        (*g)[a] = (p * gs[a]) * vol;
        u[a] = ff * gs[a];
    }
    for (var a = 0u; a < 4u; a++) {
        for (var b = 0u; b < 4u; b++) {
            let blk = diag3(dot(gs[a], s_plus * gs[b])) + outer3(u[b], u[a]) * mu
                + f_ft * (mu * dot(gs[a], gs[b])) + outer3(u[a], u[b]) * lambda;
            put_block(h, 12u, a, b, blk * vol);
        }
    }
    return t.vertices;
}

// src/material/membrane.rs element_gradient and element_hessian_psd.
fn triangle_terms(e: u32, g: ptr<function, array<vec3<f32>, 4>>, h: ptr<function, array<f32, 144>>) -> vec4<u32> {
    let base = params.tris + 3u * e;
    let tv = bitcast<vec4<u32>>(records[base]);
    let dm = records[base + 1u];
    let rest = records[base + 2u];
    let m = records[bitcast<u32>(rest.y)];
    let mu = m.y;
    let lambda = m.z;
    let measure = rest.x;
    let x0 = positions[tv.x].xyz;
    let e1 = positions[tv.y].xyz - x0;
    let e2 = positions[tv.z].xyz - x0;
    let f0 = e1 * dm.x + e2 * dm.z;
    let f1 = e1 * dm.y + e2 * dm.w;
    let gs = array<vec2<f32>, 3>(-vec2<f32>(dm.x + dm.z, dm.y + dm.w), dm.xy, dm.zw);
    let e11 = 0.5 * (dot(f0, f0) - 1.0);
    let e12 = 0.5 * dot(f0, f1);
    let e22 = 0.5 * (dot(f1, f1) - 1.0);
    let tr = lambda * (e11 + e22);
    let s = vec3<f32>(2.0 * mu * e11 + tr, 2.0 * mu * e12, 2.0 * mu * e22 + tr);
    let sp = positive_part2(s);
    let f_ft = outer3(f0, f0) + outer3(f1, f1);
    var u: array<vec3<f32>, 3>;
    for (var a = 0u; a < 3u; a++) {
        let ga = gs[a];
        (*g)[a] = (f0 * (s.x * ga.x + s.y * ga.y) + f1 * (s.y * ga.x + s.z * ga.y)) * measure;
        u[a] = f0 * ga.x + f1 * ga.y;
    }
    for (var a = 0u; a < 3u; a++) {
        for (var b = 0u; b < 3u; b++) {
            let ga = gs[a];
            let gb = gs[b];
            let sgb = vec2<f32>(sp.x * gb.x + sp.y * gb.y, sp.y * gb.x + sp.z * gb.y);
            let blk = diag3(dot(ga, sgb)) + outer3(u[b], u[a]) * mu + f_ft * (mu * dot(ga, gb))
                + outer3(u[a], u[b]) * lambda;
            put_block(h, 9u, a, b, blk * measure);
        }
    }
    return vec4<u32>(tv.xyz, 0u);
}

// src/material/bending.rs element_gradient, and the Gauss–Newton Hessian of problem.rs.
fn hinge_terms(e: u32, g: ptr<function, array<vec3<f32>, 4>>, h: ptr<function, array<f32, 144>>) -> vec4<u32> {
    let base = params.hinges + 2u * e;
    let hv = bitcast<vec4<u32>>(records[base]);
    let hinge = records[base + 1u];
    let x0 = positions[hv.x].xyz;
    let x1 = positions[hv.y].xyz;
    let x2 = positions[hv.z].xyz;
    let x3 = positions[hv.w].xyz;
    let grads = hinge_angle_gradient(x0, x1, x2, x3);
    let k = hinge.y;
    let d = hinge_angle_offset(x0, x1, x2, x3, hinge.x);
    for (var a = 0u; a < 4u; a++) {
        (*g)[a] = grads[a] * (k * d);
        for (var b = 0u; b < 4u; b++) {
            put_block(h, 12u, a, b, outer3(grads[a], grads[b]) * k);
        }
    }
    return hv;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let e = id.x;
    if e >= params.count {
        return;
    }
    var g: array<vec3<f32>, 4>;
    var h: array<f32, 144>;
    var k = 4u;
    var vertices: vec4<u32>;
    if params.kind == KIND_TET {
        vertices = tet_terms(e, &g, &h);
    } else if params.kind == KIND_TRIANGLE {
        k = 3u;
        vertices = triangle_terms(e, &g, &h);
    } else {
        vertices = hinge_terms(e, &g, &h);
    }
    let n = 3u * k;
    let base = params.base + e * (4u + n + n * n);
    for (var a = 0u; a < 4u; a++) {
        element[base + a] = vertices[a];
    }
    for (var a = 0u; a < k; a++) {
        for (var r = 0u; r < 3u; r++) {
            element[base + 4u + 3u * a + r] = bitcast<u32>(g[a][r]);
        }
    }
    for (var i = 0u; i < n * n; i++) {
        element[base + 4u + n + i] = bitcast<u32>(h[i]);
    }
}
