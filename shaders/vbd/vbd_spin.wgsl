// Each free volumetric body's rigid spin over a step (src/solver/vbd/spin.rs BodySpin::of): the
// centre of mass c, ω = I⁻¹ L about it, the rotation R by ω h and ω' = (R I Rᵀ)⁻¹ L, from x^n and
// v^n; then each of its vertices' terms (BodySpin::turn: the predictor's shift ρ and the
// velocity's κ) for vbd_inertia, zero for the other bodies' vertices. One workgroup per body,
// sums in a fixed tree order (deterministic, no float atomics); f32 where the CPU sums in f64.
// Host wrapper: src/gpu/vbd/vbd_spin.rs; prepended: lib/step.wgsl, lib/rigid.wgsl.

struct Params {
    // Bodies; the first body record in `records` (vec4s).
    bodies: u32,
    records: u32,
    h: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> velocities: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> masses: array<f32>;
@group(0) @binding(4) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> rigid: array<u32>;
// Per vertex: ρ, then κ (w unused).
@group(0) @binding(6) var<storage, read_write> turns: array<vec4<f32>>;

const SUMS: u32 = 9u;
// src/solver/vbd/spin.rs MIN_SPIN [rad/s].
const MIN_SPIN: f32 = 1e-6;
var<workgroup> partial: array<f32, 576>;
var<workgroup> working: u32;
// The body's spin, as lane 0 found it: centre (w: 1 when it spins), ω, ω', R.
var<workgroup> spin: array<vec4<f32>, 3>;
var<workgroup> turn: mat3x3<f32>;

// Tree sum of the first `width` partial sums of every invocation, into partial[0..width].
fn reduce(lane: u32, width: u32) {
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        if lane < stride {
            for (var k = 0u; k < width; k++) {
                partial[lane * SUMS + k] += partial[(lane + stride) * SUMS + k];
            }
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let b = group.x;
    let record = records[params.records + 2u * b];
    let first = bitcast<u32>(record.x);
    let end = first + bitcast<u32>(record.y);
    if lane == 0u {
        let both = RIGID_ELIGIBLE | RIGID_VOLUMETRIC;
        working = u32((rigid[rigid_record(b) + RB_FLAGS] & both) == both);
        spin[0] = vec4<f32>(0.0);
    }
    if workgroupUniformLoad(&working) != 0u {
        find_spin(lane, first, end);
    }
    workgroupBarrier();
    let centre = spin[0];
    let omega = spin[1].xyz;
    let after = spin[2].xyz;
    let rot = turn;
    for (var v = first + lane; v < end; v += 64u) {
        var shift = vec3<f32>(0.0);
        var kappa = vec3<f32>(0.0);
        if centre.w != 0.0 {
            let r = positions[v].xyz - centre.xyz;
            let turned = rot * r;
            let wr = cross(omega, r);
            shift = turned - r - wr * params.h;
            kappa = cross(after, turned) - wr;
        }
        turns[2u * v] = vec4<f32>(shift, 0.0);
        turns[2u * v + 1u] = vec4<f32>(kappa, 0.0);
    }
}

// The body's spin over its vertices first..end, into `spin` and `turn` (spin[0].w stays 0 for a
// body without rotational inertia or turning slower than MIN_SPIN).
fn find_spin(lane: u32, first: u32, end: u32) {
    // Σm and Σm x.
    var acc = vec4<f32>(0.0);
    for (var v = first + lane; v < end; v += 64u) {
        acc += vec4<f32>(positions[v].xyz * masses[v], masses[v]);
    }
    for (var k = 0u; k < 4u; k++) {
        partial[lane * SUMS + k] = acc[k];
    }
    workgroupBarrier();
    reduce(lane, 4u);
    let mass = partial[3];
    let center = vec3<f32>(partial[0], partial[1], partial[2]) / mass;
    workgroupBarrier();
    // L and the inertia tensor (xx, yy, zz, xy, xz, yz).
    var sums = array<f32, 9>();
    for (var v = first + lane; v < end; v += 64u) {
        let m = masses[v];
        let r = positions[v].xyz - center;
        let l = cross(r, velocities[v].xyz) * m;
        sums[0] += l.x;
        sums[1] += l.y;
        sums[2] += l.z;
        let terms = inertia_terms(r, m);
        for (var k = 0u; k < 6u; k++) {
            sums[3u + k] += terms[k];
        }
    }
    for (var k = 0u; k < SUMS; k++) {
        partial[lane * SUMS + k] = sums[k];
    }
    workgroupBarrier();
    reduce(lane, SUMS);
    if lane != 0u {
        return;
    }
    let l = vec3<f32>(partial[0], partial[1], partial[2]);
    let inertia = mat3x3<f32>(
        vec3<f32>(partial[3], partial[6], partial[7]),
        vec3<f32>(partial[6], partial[4], partial[8]),
        vec3<f32>(partial[7], partial[8], partial[5]),
    );
    let det = determinant(inertia);
    if !(mass > 0.0 && det > 0.0) || non_finite(vec4<f32>(l, det)) {
        return;
    }
    let inverse = inverse3(inertia);
    let omega = inverse * l;
    let speed = length(omega);
    if !(speed > MIN_SPIN) || non_finite(vec4<f32>(omega, speed)) {
        return;
    }
    let rot = rotation_of(omega * params.h);
    spin[0] = vec4<f32>(center, 1.0);
    spin[1] = vec4<f32>(omega, 0.0);
    spin[2] = vec4<f32>(rot * (inverse * (transpose(rot) * l)), 0.0);
    turn = rot;
}
