// Chebyshev's divergence guard after a sweep: the GPU twin of the per-body residual check in
// src/solver/vbd/sweep.rs. The body's squared force residuals are summed in a fixed tree order
// (deterministic, no float atomics); a body whose sum exceeds 100× the smallest of the step is
// not accelerated for the rest of the step (FROZEN_DIVERGED). Phase 0: one workgroup per body,
// when every body has at most `chunk` vertices. Otherwise phase 1 sums chunks of `chunk`
// vertices, one workgroup each (a grid of chunks × bodies), into `partials`, and phase 2 adds
// each body's partials (one workgroup per body) and applies the rule: one workgroup summing a
// 175k-vertex body took 1 ms a sweep on an H200.
// Host wrapper: src/gpu/vbd/vbd_divergence.rs; prepended: lib/step.wgsl.

struct Params {
    bodies: u32,
    // Where the body records start in `records`, in vec4s.
    body_records: u32,
    // Where the per-body frozen flags start in `control` (src/gpu/contact/layout.rs CONTROL_HEADER).
    frozen: u32,
    phase: u32,
    // Vertices per chunk and chunks per body (phases 1 and 2).
    chunk: u32,
    chunks: u32,
    _pad0: u32,
    _pad1: u32,
}

// Growth of the squared residual that stops acceleration (CHEBYSHEV_GROWTH_LIMIT).
const GROWTH_LIMIT: f32 = 100.0;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> records: array<vec4<f32>>;
// Per vertex: w the squared residual of its last update (vbd_color; its sign marks a held
// vertex, so the sum takes the absolute value).
@group(0) @binding(2) var<storage, read> updates: array<vec4<f32>>;
// Per body: the smallest sum of the step, and 1 once one was seen.
@group(0) @binding(3) var<storage, read_write> smallest: array<vec2<f32>>;
@group(0) @binding(4) var<storage, read_write> control: array<atomic<u32>>;
// Per body and chunk (body-major): the chunk's sum (phases 1 and 2).
@group(0) @binding(5) var<storage, read_write> partials: array<f32>;

var<workgroup> partial: array<f32, 64>;

// The workgroup's sum of every invocation's `s` (all 64 call it, in uniform control flow).
fn workgroup_total(lane: u32, s: f32) -> f32 {
    partial[lane] = s;
    workgroupBarrier();
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        if lane < stride {
            partial[lane] += partial[lane + stride];
        }
        workgroupBarrier();
    }
    return partial[0];
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    var b = group.x;
    if params.phase == 1u {
        b = group.y;
    }
    if b >= params.bodies {
        return;
    }
    var sum = 0.0;
    if params.phase == 2u {
        for (var c = lane; c < params.chunks; c += 64u) {
            sum += partials[b * params.chunks + c];
        }
    } else {
        let record = bitcast<vec4<u32>>(records[params.body_records + 2u * b]);
        var first = record.x;
        var end = record.x + record.y;
        if params.phase == 1u {
            first = min(record.x + group.x * params.chunk, end);
            end = min(first + params.chunk, end);
        }
        for (var v = first + lane; v < end; v += 64u) {
            sum += abs(updates[v].w);
        }
    }
    let r2 = workgroup_total(lane, sum);
    if lane != 0u {
        return;
    }
    if params.phase == 1u {
        partials[b * params.chunks + group.x] = r2;
        return;
    }
    let s = smallest[b];
    if s.y > 0.0 && !(r2 <= GROWTH_LIMIT * s.x) {
        atomicOr(&control[params.frozen + b], FROZEN_DIVERGED);
    }
    var m = r2;
    if s.y > 0.0 {
        m = min(s.x, r2);
    }
    smallest[b] = vec2<f32>(m, 1.0);
}
