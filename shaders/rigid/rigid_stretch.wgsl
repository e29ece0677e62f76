// The affine coarse space's elasticity (src/solver/vbd/stretch.rs, src/solver/vbd/rigid_correction.rs
// body_stretch): each stretching body's quadratic model of its elastic energy (and its elements'
// Rayleigh damping) along its stretch S at the initial guess, projected to be convex and added
// to the quadratic rigid_reduce wrote: K_ss += H, σ −= g. Every tet once, through the vertex it
// lists first. Stable neo-Hookean tets enter through the sums Σ V P Fᵀ, Σ V μ F Fᵀ, Σ V λ J² and
// Σ V λ (J − α) J (damping folded in), StVK tets through their 6 × 6 forms. Ḟ comes from the
// vertices' velocity estimates, relative to the body's spin, as vbd_color has it. Sums run in a
// fixed tree order. One workgroup per body (large bodies are walked by one workgroup).
// Host wrapper: src/gpu/rigid/rigid_stretch.rs; prepended: lib/step.wgsl, lib/mat3.wgsl,
// lib/elements.wgsl, lib/rigid.wgsl.

struct Params {
    rigid: RigidLayout,
    // First body record and first spin record in `records` (vec4s).
    bodies: u32,
    spins: u32,
    tet_offsets: u32,
    tet_entries: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(3) var<storage, read> index: array<u32>;
@group(0) @binding(4) var<storage, read> tets: array<Tet>;
@group(0) @binding(5) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> rigid: array<u32>;

// Σ V P Fᵀ (9, column-major), Σ V μ G (9), Σ V λ J², Σ V λ (J − α) J, StVK's H (21, upper
// triangle row by row).
const SUMS: u32 = 41u;
const STRESS: u32 = 0u;
const METRIC: u32 = 9u;
const VOLUMETRIC: u32 = 18u;
const DET: u32 = 19u;
const STVK: u32 = 20u;
var<workgroup> partial: array<f32, 2624>;
var<workgroup> working: u32;

fn velocity_estimate(i: u32) -> vec3<f32> {
    let s = steps[i];
    return (positions[i].xyz - s.start.xyz) * s.velocity.w + s.velocity.xyz;
}

fn trace3(m: mat3x3<f32>) -> f32 {
    return m[0].x + m[1].y + m[2].z;
}

fn frobenius(a: mat3x3<f32>, b: mat3x3<f32>) -> f32 {
    return dot(a[0], b[0]) + dot(a[1], b[1]) + dot(a[2], b[2]);
}

fn add_matrix(sums: ptr<function, array<f32, 41>>, at: u32, m: mat3x3<f32>) {
    for (var c = 0u; c < 3u; c++) {
        for (var r = 0u; r < 3u; r++) {
            (*sums)[at + 3u * c + r] += m[c][r];
        }
    }
}

fn matrix_at(at: u32) -> mat3x3<f32> {
    return mat3x3<f32>(vec3<f32>(partial[at], partial[at + 1u], partial[at + 2u]),
                       vec3<f32>(partial[at + 3u], partial[at + 4u], partial[at + 5u]),
                       vec3<f32>(partial[at + 6u], partial[at + 7u], partial[at + 8u]));
}

// Index of (a, b), a ≤ b, in the upper triangle of a 6 × 6 listed row by row.
fn upper(a: u32, b: u32) -> u32 {
    return a * 6u - a * (a + 1u) / 2u + b;
}

// One tet's terms into `sums` (src/solver/vbd/stretch.rs StretchQuadratic::add_tet).
fn add_tet(sums: ptr<function, array<f32, 41>>, t: Tet, spin: vec3<f32>, c1: f32) {
    let x0 = positions[t.vertices.x].xyz;
    let f = mat3x3<f32>(positions[t.vertices.y].xyz - x0, positions[t.vertices.z].xyz - x0,
                        positions[t.vertices.w].xyz - x0) * t.dm_inv;
    let m = records[t.material];
    let mu = m.y;
    let lambda = m.z;
    let damping = m.w;
    let volume = t.volume;
    let g = f * transpose(f);
    var f_dot = mat3x3<f32>();
    if damping > 0.0 {
        let v0 = velocity_estimate(t.vertices.x);
        f_dot = mat3x3<f32>(velocity_estimate(t.vertices.y) - v0, velocity_estimate(t.vertices.z) - v0,
                            velocity_estimate(t.vertices.w) - v0) * t.dm_inv
            - mat3x3<f32>(cross(spin, f[0]), cross(spin, f[1]), cross(spin, f[2]));
    }
    var gn_scale = 1.0;
    if damping > 0.0 {
        gn_scale += damping * c1;
    }
    if bitcast<u32>(m.x) == MODEL_STABLE_NEO_HOOKEAN {
        let j = determinant(f);
        let alpha = 1.0 + mu / lambda;
        let cof = mat3x3<f32>(cross(f[1], f[2]), cross(f[2], f[0]), cross(f[0], f[1]));
        var stress = (f * mu + cof * (lambda * (j - alpha))) * transpose(f) * volume;
        if damping > 0.0 {
            let rate = frobenius(cof, f_dot);
            stress += (f_dot * transpose(f) * mu + diag3(lambda * rate * j)) * (damping * volume);
        }
        add_matrix(sums, STRESS, stress);
        add_matrix(sums, METRIC, g * (volume * mu * gn_scale));
        (*sums)[VOLUMETRIC] += volume * lambda * j * j * gn_scale;
        (*sums)[DET] += volume * lambda * (j - alpha) * j;
    } else {
        let e = (transpose(f) * f - diag3(1.0)) * 0.5;
        let tau = f * (e * (2.0 * mu) + diag3(lambda * trace3(e))) * transpose(f);
        var stress = tau * volume;
        if damping > 0.0 {
            let ftfd = transpose(f) * f_dot;
            let ed = (ftfd + transpose(ftfd)) * 0.5;
            stress += f * (ed * (2.0 * mu) + diag3(lambda * trace3(ed))) * transpose(f) * (damping * volume);
        }
        add_matrix(sums, STRESS, stress);
        for (var a = 0u; a < 6u; a++) {
            let ea = unit_stretch(a);
            let uga = ea * g;
            for (var b = a; b < 6u; b++) {
                let eb = unit_stretch(b);
                let ugb = eb * g;
                let gn = 2.0 * mu * trace3(uga * ugb) + lambda * trace3(uga) * trace3(ugb);
                let st = 0.5 * frobenius(tau, ea * eb + eb * ea);
                (*sums)[STVK + upper(a, b)] += volume * (gn * gn_scale + st);
            }
        }
    }
}

// Tree sum of every invocation's SUMS values into partial[0..SUMS].
fn reduce(lane: u32) {
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        if lane < stride {
            for (var k = 0u; k < SUMS; k++) {
                partial[lane * SUMS + k] += partial[(lane + stride) * SUMS + k];
            }
        }
        workgroupBarrier();
    }
}

// src/math/dense.rs project_psd for the 6 × 6 `a` (row-major): left alone when `a + εI` has a
// Cholesky factor, else rebuilt from its clamped spectrum (cyclic Jacobi, six sweeps).
fn project_psd6(a: ptr<function, array<f32, 36>>) {
    var shift = 0.0;
    for (var i = 0u; i < 6u; i++) {
        shift += abs((*a)[7u * i]);
    }
    shift *= 1e-7 / 6.0;
    var l = *a;
    var definite = shift > 0.0;
    for (var j = 0u; j < 6u; j++) {
        var d = l[7u * j] + shift;
        for (var k = 0u; k < j; k++) {
            d -= l[6u * j + k] * l[6u * j + k];
        }
        if !(d > 0.0) {
            definite = false;
            break;
        }
        let s = sqrt(d);
        l[7u * j] = s;
        for (var i = j + 1u; i < 6u; i++) {
            var x = l[6u * i + j];
            for (var k = 0u; k < j; k++) {
                x -= l[6u * i + k] * l[6u * j + k];
            }
            l[6u * i + j] = x / s;
        }
    }
    if definite {
        return;
    }
    var d = *a;
    var v = array<f32, 36>();
    var norm2 = 0.0;
    for (var i = 0u; i < 36u; i++) {
        norm2 += d[i] * d[i];
    }
    for (var i = 0u; i < 6u; i++) {
        v[7u * i] = 1.0;
    }
    let tiny = 1e-13 * sqrt(norm2);
    for (var sweep = 0u; sweep < 6u; sweep++) {
        for (var p = 0u; p < 6u; p++) {
            for (var q = p + 1u; q < 6u; q++) {
                let apq = d[6u * p + q];
                if abs(apq) <= tiny {
                    continue;
                }
                let theta = (d[7u * q] - d[7u * p]) / (2.0 * apq);
                var t = sign(theta) / (abs(theta) + sqrt(theta * theta + 1.0));
                if theta == 0.0 {
                    t = 1.0;
                }
                let c = 1.0 / sqrt(t * t + 1.0);
                let s = t * c;
                for (var k = 0u; k < 6u; k++) {
                    let dkp = d[6u * k + p];
                    let dkq = d[6u * k + q];
                    d[6u * k + p] = c * dkp - s * dkq;
                    d[6u * k + q] = s * dkp + c * dkq;
                }
                for (var k = 0u; k < 6u; k++) {
                    let dpk = d[6u * p + k];
                    let dqk = d[6u * q + k];
                    d[6u * p + k] = c * dpk - s * dqk;
                    d[6u * q + k] = s * dpk + c * dqk;
                }
                for (var k = 0u; k < 6u; k++) {
                    let vkp = v[6u * k + p];
                    let vkq = v[6u * k + q];
                    v[6u * k + p] = c * vkp - s * vkq;
                    v[6u * k + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    for (var r = 0u; r < 6u; r++) {
        for (var c = 0u; c < 6u; c++) {
            var x = 0.0;
            for (var k = 0u; k < 6u; k++) {
                x += v[6u * r + k] * max(d[7u * k], 0.0) * v[6u * c + k];
            }
            (*a)[6u * r + c] = x;
        }
    }
}

fn word(b: u32, w: u32) -> f32 {
    return bitcast<f32>(rigid[rigid_record(b) + w]);
}

fn put(b: u32, w: u32, x: f32) {
    rigid[rigid_record(b) + w] = bitcast<u32>(x);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let b = group.x;
    if lane == 0u {
        let both = RIGID_ELIGIBLE | RIGID_VOLUMETRIC;
        working = u32(b < params.rigid.bodies && (rigid[rigid_record(b) + RB_FLAGS] & both) == both);
    }
    if workgroupUniformLoad(&working) == 0u {
        return;
    }
    let record = records[params.bodies + 2u * b];
    let first = bitcast<u32>(record.x);
    let end = first + bitcast<u32>(record.y);
    let spin = records[params.spins + b].xyz;
    var sums = array<f32, 41>();
    for (var v = first + lane; v < end; v += 64u) {
        let c1 = steps[v].velocity.w;
        for (var e = index[params.tet_offsets + v]; e < index[params.tet_offsets + v + 1u]; e++) {
            let entry = index[params.tet_entries + e];
            if (entry & 3u) == 0u {
                add_tet(&sums, tets[entry >> 2u], spin, c1);
            }
        }
    }
    for (var k = 0u; k < SUMS; k++) {
        partial[lane * SUMS + k] = sums[k];
    }
    workgroupBarrier();
    reduce(lane);
    if lane == 0u {
        // src/solver/vbd/stretch.rs StretchQuadratic::form and finish.
        let stress = matrix_at(STRESS);
        let metric = matrix_at(METRIC);
        let traces = array<f32, 6>(1.0, 1.0, 1.0, 0.0, 0.0, 0.0);
        var h = array<f32, 36>();
        for (var a = 0u; a < 6u; a++) {
            for (var c = a; c < 6u; c++) {
                let ab = unit_stretch(a) * unit_stretch(c);
                let tt = traces[a] * traces[c];
                let x = trace3(ab * metric) + partial[VOLUMETRIC] * tt + partial[DET] * (tt - trace3(ab))
                    + partial[STVK + upper(a, c)];
                h[6u * a + c] = x;
                h[6u * c + a] = x;
            }
        }
        project_psd6(&h);
        for (var k = 0u; k < 36u; k++) {
            put(b, RB_SS + k, word(b, RB_SS + k) + h[k]);
        }
        for (var k = 0u; k < 6u; k++) {
            put(b, RB_SIGMA + k, word(b, RB_SIGMA + k) - frobenius(stress, unit_stretch(k)));
        }
    }
}
