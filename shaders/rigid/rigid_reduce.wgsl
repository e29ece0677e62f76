// Each correctable body's coarse quadratic (src/solver/vbd/rigid_correction.rs solve_group, its
// per-body part): with A_v = m/w (+ α m c1 with drag) and f_v the vertex's inertia (and drag)
// force at the initial guess, the A-weighted centre c, ΣA, J = ΣA(|r|² I − r rᵀ), F = Σf,
// τ = Σ r × f and the largest arm |r|, r = x − c. A body without a pair with another body, or
// without tets (a sheet), does not turn in the coarse space: J = I, τ = 0. Sums run in a fixed
// tree order (deterministic, no float atomics). Phase 0: one workgroup per body, when every
// body has at most `chunk` vertices. Larger bodies are split into chunks over a grid of chunks ×
// bodies (one workgroup walking a 175k-vertex body twice took 3.5 ms on an H200): phase 1 sums
// each chunk's ΣA x and ΣA, phase 2 adds the body's phase-1 sums in a fixed order (every chunk
// gets the same centre) and sums its chunk's J, F, τ and largest arm, phase 3 (a workgroup per
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
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(3) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> masses: array<f32>;
@group(0) @binding(5) var<storage, read_write> rigid: array<u32>;
// Phases 1–3: per body and chunk, four sums of phase 1 (ΣA x, ΣA), then thirteen of phase 2
// after all bodies' phase-1 sums.
@group(0) @binding(6) var<storage, read_write> partials: array<f32>;

const SUMS: u32 = 13u;
var<workgroup> partial: array<f32, 832>;
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

// Tree sum of the first twelve partial sums of every invocation and the largest of the
// thirteenth, into partial[0..13].
fn reduce_with_arm(lane: u32) {
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        if lane < stride {
            for (var k = 0u; k < 12u; k++) {
                partial[lane * SUMS + k] += partial[(lane + stride) * SUMS + k];
            }
            partial[lane * SUMS + 12u] = max(partial[lane * SUMS + 12u], partial[(lane + stride) * SUMS + 12u]);
        }
        workgroupBarrier();
    }
}

// J (six entries), F, τ and the largest arm about `center` over the vertices, across the
// workgroup into partial[0..13].
fn moment_sums(lane: u32, first: u32, end: u32, damping: f32, center: vec3<f32>) {
    var sums = array<f32, 13>();
    for (var v = first + lane; v < end; v += 64u) {
        let q = vertex_quadratic(v, damping);
        let r = positions[v].xyz - center;
        let terms = inertia_terms(r, q.w);
        for (var k = 0u; k < 6u; k++) {
            sums[k] += terms[k];
        }
        let tq = cross(r, q.xyz);
        sums[6] += q.x;
        sums[7] += q.y;
        sums[8] += q.z;
        sums[9] += tq.x;
        sums[10] += tq.y;
        sums[11] += tq.z;
        sums[12] = max(sums[12], length(r));
    }
    for (var k = 0u; k < SUMS; k++) {
        partial[lane * SUMS + k] = sums[k];
    }
    workgroupBarrier();
    reduce_with_arm(lane);
}

// Body b's chunk sums of `width` values starting at `at` (per chunk), added in a fixed order
// into partial[0..width]; with 13 values the last is the largest arm.
fn chunk_sums(lane: u32, b: u32, at: u32, width: u32) {
    var sums = array<f32, 13>();
    for (var c = lane; c < params.chunks; c += 64u) {
        let w = at + (b * params.chunks + c) * width;
        for (var k = 0u; k < min(width, 12u); k++) {
            sums[k] += partials[w + k];
        }
        if width == SUMS {
            sums[12] = max(sums[12], partials[w + 12u]);
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

// Body b's quadratic from its stiffness and the sums in partial[0..13] (lane 0 only).
fn write_body(b: u32, stiff: f32, center: vec3<f32>) {
    let rotates = (rigid[rigid_record(b) + RB_FLAGS] & (RIGID_COUPLED | RIGID_VOLUMETRIC))
        == (RIGID_COUPLED | RIGID_VOLUMETRIC);
    var j = array<f32, 6>(partial[0], partial[1], partial[2], partial[3], partial[4], partial[5]);
    var torque = vec3<f32>(partial[9], partial[10], partial[11]);
    var arm = partial[12];
    if !rotates {
        // θ = 0 is then the minimiser: no torque, no arms, unit inertia.
        j = array<f32, 6>(1.0, 1.0, 1.0, 0.0, 0.0, 0.0);
        torque = vec3<f32>(0.0);
        arm = 0.0;
    }
    // A relative ridge keeps the block of a body whose vertices are collinear invertible.
    let ridge = 1e-9 * (j[0] + j[1] + j[2]) + 1.0e-37;
    put(b, RB_CENTER, center.x);
    put(b, RB_CENTER + 1u, center.y);
    put(b, RB_CENTER + 2u, center.z);
    put(b, RB_STIFF, stiff);
    for (var k = 0u; k < 6u; k++) {
        var x = j[k];
        if k < 3u {
            x += ridge;
        }
        put(b, RB_INERTIA + k, x);
    }
    put(b, RB_FORCE, partial[6]);
    put(b, RB_FORCE + 1u, partial[7]);
    put(b, RB_FORCE + 2u, partial[8]);
    put(b, RB_TORQUE, torque.x);
    put(b, RB_TORQUE + 1u, torque.y);
    put(b, RB_TORQUE + 2u, torque.z);
    put(b, RB_ARM, arm);
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
