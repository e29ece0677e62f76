// Each correctable body's coarse quadratic (src/solver/vbd/rigid_correction.rs body_quadratics,
// src/solver/vbd/rigid_energy.rs BodyQuadratic::from_moments): with A_v = m/w (+ α m c1 with
// drag) and f_v the vertex's inertia (and drag) force at the initial guess, the A-weighted
// centre c, ΣA, the second moment Q = ΣA r rᵀ, F = Σf, the force moment W = Σ f rᵀ and the
// largest arm |r|, r = x − c; from them J = tr(Q) I − Q and τ = Σ r × f, and with the affine
// space (params.affine) the stretch blocks K_θs, K_ss and load σ (rigid_stretch adds the
// elasticity). A body without a pair with another body, or without tets (a sheet), does not
// turn in the coarse space: J = I, τ = 0; one that does not stretch has K_ss = I. Sums run in a fixed
// tree order (deterministic, no float atomics). Phase 0: one workgroup per body, when every
// body has at most `chunk` vertices. Larger bodies are split into chunks over a grid of chunks ×
// bodies (one workgroup walking a 175k-vertex body twice took 3.5 ms on an H200): phase 1 sums
// each chunk's ΣA x and ΣA, phase 2 adds the body's phase-1 sums in a fixed order (every chunk
// gets the same centre) and sums its chunk's Q, F, W and largest arm, phase 3 (a workgroup per
// body) adds those and writes the body's quadratic.
// Host wrapper: src/gpu/rigid/rigid_reduce.rs; prepended: lib/step.wgsl, lib/rigid.wgsl.

struct Params {
    rigid: RigidLayout,
    // First body record in `records` (vec4s).
    bodies: u32,
    phase: u32,
    // Vertices per chunk, chunks per body (phases 1–3).
    chunk: u32,
    chunks: u32,
    // 1: the affine coarse space (volumetric bodies stretch).
    affine: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(3) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> masses: array<f32>;
@group(0) @binding(5) var<storage, read_write> rigid: array<u32>;
// Phases 1–3: per body and chunk, four sums of phase 1 (ΣA x, ΣA), then nineteen of phase 2
// after all bodies' phase-1 sums.
@group(0) @binding(6) var<storage, read_write> partials: array<f32>;

const SUMS: u32 = 19u;
var<workgroup> partial: array<f32, 1216>;
var<workgroup> working: u32;

// Inertia and drag of vertex v: (A, f) of ½ A |δ|² − f·δ.
fn vertex_quadratic(v: u32, damping: f32) -> vec4<f32> {
    let s = steps[v];
    let dx = positions[v].xyz - s.start.xyz;
    var f = (s.inertia.xyz - dx) * s.inertia.w;
    var a = s.inertia.w;
    if damping > 0.0 {
        let am = damping * masses[v];
        f -= (dx * s.velocity.w + s.velocity.xyz) * am;
        a += am * s.velocity.w;
    }
    return vec4<f32>(f, a);
}

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

fn put(b: u32, w: u32, x: f32) {
    rigid[rigid_record(b) + w] = bitcast<u32>(x);
}

// Every invocation's ΣA x and ΣA over first + lane, first + lane + 64, … below end, summed
// across the workgroup into partial[0..4].
fn stiffness_sums(lane: u32, first: u32, end: u32, damping: f32) {
    var acc = vec4<f32>(0.0);
    for (var v = first + lane; v < end; v += 64u) {
        let a = vertex_quadratic(v, damping).w;
        acc += vec4<f32>(positions[v].xyz * a, a);
    }
    for (var k = 0u; k < 4u; k++) {
        partial[lane * SUMS + k] = acc[k];
    }
    workgroupBarrier();
    reduce(lane, 4u);
}

// Tree sum of the first eighteen partial sums of every invocation and the largest of the
// nineteenth, into partial[0..19].
fn reduce_with_arm(lane: u32) {
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        if lane < stride {
            for (var k = 0u; k < 18u; k++) {
                partial[lane * SUMS + k] += partial[(lane + stride) * SUMS + k];
            }
            partial[lane * SUMS + 18u] = max(partial[lane * SUMS + 18u], partial[(lane + stride) * SUMS + 18u]);
        }
        workgroupBarrier();
    }
}

// Q (xx, yy, zz, xy, xz, yz), F, W (row-major, W_ij = Σ f_i r_j) and the largest arm about
// `center` over the vertices, across the workgroup into partial[0..19].
fn moment_sums(lane: u32, first: u32, end: u32, damping: f32, center: vec3<f32>) {
    var sums = array<f32, 19>();
    for (var v = first + lane; v < end; v += 64u) {
        let q = vertex_quadratic(v, damping);
        let r = positions[v].xyz - center;
        let a = q.w;
        sums[0] += r.x * r.x * a;
        sums[1] += r.y * r.y * a;
        sums[2] += r.z * r.z * a;
        sums[3] += r.x * r.y * a;
        sums[4] += r.x * r.z * a;
        sums[5] += r.y * r.z * a;
        sums[6] += q.x;
        sums[7] += q.y;
        sums[8] += q.z;
        for (var i = 0u; i < 3u; i++) {
            for (var j = 0u; j < 3u; j++) {
                sums[9u + 3u * i + j] += q[i] * r[j];
            }
        }
        sums[18] = max(sums[18], length(r));
    }
    for (var k = 0u; k < SUMS; k++) {
        partial[lane * SUMS + k] = sums[k];
    }
    workgroupBarrier();
    reduce_with_arm(lane);
}

// Body b's chunk sums of `width` values starting at `at` (per chunk), added in a fixed order
// into partial[0..width]; with SUMS values the last is the largest arm.
fn chunk_sums(lane: u32, b: u32, at: u32, width: u32) {
    var sums = array<f32, 19>();
    for (var c = lane; c < params.chunks; c += 64u) {
        let w = at + (b * params.chunks + c) * width;
        for (var k = 0u; k < min(width, SUMS - 1u); k++) {
            sums[k] += partials[w + k];
        }
        if width == SUMS {
            sums[SUMS - 1u] = max(sums[SUMS - 1u], partials[w + SUMS - 1u]);
        }
    }
    for (var k = 0u; k < width; k++) {
        partial[lane * SUMS + k] = sums[k];
    }
    workgroupBarrier();
    if width == SUMS {
        reduce_with_arm(lane);
    } else {
        reduce(lane, width);
    }
}

// Where phase 2's sums start in `partials`.
fn moments_at() -> u32 {
    return 4u * params.rigid.bodies * params.chunks;
}

// `(X_yz − X_zy, X_zx − X_xz, X_xy − X_yx)`: Σ r × u for X = Σ r uᵀ.
fn axial(x: mat3x3<f32>) -> vec3<f32> {
    return vec3<f32>(x[2][1] - x[1][2], x[0][2] - x[2][0], x[1][0] - x[0][1]);
}

// Body b's quadratic from its stiffness and the sums in partial[0..19] (lane 0 only).
fn write_body(b: u32, stiff: f32, center: vec3<f32>) {
    let flags = rigid[rigid_record(b) + RB_FLAGS];
    let rotates = (flags & (RIGID_COUPLED | RIGID_VOLUMETRIC)) == (RIGID_COUPLED | RIGID_VOLUMETRIC);
    let stretches = params.affine != 0u && (flags & RIGID_VOLUMETRIC) != 0u;
    var q = mat3x3<f32>(vec3<f32>(partial[0], partial[3], partial[4]), vec3<f32>(partial[3], partial[1], partial[5]),
                        vec3<f32>(partial[4], partial[5], partial[2]));
    // A relative ridge keeps the blocks of a body whose vertices are coplanar or collinear
    // invertible.
    let ridge = 1e-9 * (q[0].x + q[1].y + q[2].z) + 1.0e-37;
    q += diag3(ridge);
    // W_ij at column j, row i.
    let w = transpose(mat3x3<f32>(vec3<f32>(partial[9], partial[10], partial[11]),
                                  vec3<f32>(partial[12], partial[13], partial[14]),
                                  vec3<f32>(partial[15], partial[16], partial[17])));
    var j = diag3(q[0].x + q[1].y + q[2].z) - q;
    var torque = axial(transpose(w));
    if !rotates {
        // θ = 0 is then the minimiser: no torque, unit inertia.
        j = diag3(1.0);
        torque = vec3<f32>(0.0);
    }
    put(b, RB_CENTER, center.x);
    put(b, RB_CENTER + 1u, center.y);
    put(b, RB_CENTER + 2u, center.z);
    put(b, RB_STIFF, stiff);
    let packed = array<f32, 6>(j[0].x, j[1].y, j[2].z, j[1].x, j[2].x, j[2].y);
    for (var k = 0u; k < 6u; k++) {
        put(b, RB_INERTIA + k, packed[k]);
    }
    put(b, RB_FORCE, partial[6]);
    put(b, RB_FORCE + 1u, partial[7]);
    put(b, RB_FORCE + 2u, partial[8]);
    put(b, RB_TORQUE, torque.x);
    put(b, RB_TORQUE + 1u, torque.y);
    put(b, RB_TORQUE + 2u, torque.z);
    put(b, RB_ARM, partial[18]);
    // The stretch blocks (src/solver/vbd/rigid_energy.rs from_moments): K_θs,k = axial(Q E_k),
    // K_ss,jk = tr(E_j E_k Q), σ_k = W : E_k; identity and zero for a body that does not stretch.
    for (var k = 0u; k < 6u; k++) {
        let ek = unit_stretch(k);
        var cross_k = vec3<f32>(0.0);
        if stretches && rotates {
            cross_k = axial(q * ek);
        }
        for (var r = 0u; r < 3u; r++) {
            put(b, RB_CROSS + 6u * r + k, cross_k[r]);
        }
        for (var i = 0u; i < 6u; i++) {
            var x = f32(i == k);
            if stretches {
                let m = unit_stretch(i) * ek * q;
                x = m[0].x + m[1].y + m[2].z;
            }
            put(b, RB_SS + 6u * i + k, x);
        }
        var sigma = 0.0;
        if stretches {
            sigma = dot(w[0], ek[0]) + dot(w[1], ek[1]) + dot(w[2], ek[2]);
        }
        put(b, RB_SIGMA + k, sigma);
    }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    // Phases 1 and 2: chunk group.x of body group.y; phases 0 and 3: body group.x.
    var b = group.x;
    var c = 0u;
    if params.phase == 1u || params.phase == 2u {
        b = group.y;
        c = group.x;
    }
    if lane == 0u {
        working = u32(b < params.rigid.bodies && (rigid[rigid_record(b) + RB_FLAGS] & RIGID_ELIGIBLE) != 0u);
    }
    if workgroupUniformLoad(&working) == 0u {
        return;
    }
    let record = records[params.bodies + 2u * b];
    var first = bitcast<u32>(record.x);
    var end = first + bitcast<u32>(record.y);
    if params.phase == 1u || params.phase == 2u {
        first = min(first + c * params.chunk, end);
        end = min(first + params.chunk, end);
    }
    let damping = record.w;
    let slot = b * params.chunks + c;
    switch params.phase {
        case 0u: {
            stiffness_sums(lane, first, end, damping);
            let stiff = partial[3];
            let center = vec3<f32>(partial[0], partial[1], partial[2]) / stiff;
            workgroupBarrier();
            moment_sums(lane, first, end, damping, center);
            if lane == 0u {
                write_body(b, stiff, center);
            }
        }
        case 1u: {
            stiffness_sums(lane, first, end, damping);
            if lane == 0u {
                for (var k = 0u; k < 4u; k++) {
                    partials[4u * slot + k] = partial[k];
                }
            }
        }
        case 2u: {
            chunk_sums(lane, b, 0u, 4u);
            let center = vec3<f32>(partial[0], partial[1], partial[2]) / partial[3];
            workgroupBarrier();
            moment_sums(lane, first, end, damping, center);
            if lane == 0u {
                for (var k = 0u; k < SUMS; k++) {
                    partials[moments_at() + SUMS * slot + k] = partial[k];
                }
            }
        }
        default: {
            chunk_sums(lane, b, 0u, 4u);
            let stiff = partial[3];
            let center = vec3<f32>(partial[0], partial[1], partial[2]) / stiff;
            workgroupBarrier();
            chunk_sums(lane, b, moments_at(), SUMS);
            if lane == 0u {
                write_body(b, stiff, center);
            }
        }
    }
}
