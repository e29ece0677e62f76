// Chebyshev's divergence guard after a sweep, one workgroup per body: the GPU twin of the
// per-body residual check in src/solver/vbd/sweep.rs. The body's squared force residuals are summed
// in a fixed tree order (deterministic, no float atomics); a body whose sum exceeds 100× the
// smallest of the step is not accelerated for the rest of the step (FROZEN_DIVERGED).
// Host wrapper: src/gpu/vbd/vbd_divergence.rs; prepended: lib/step.wgsl.

struct Params {
    bodies: u32,
    // Where the body records start in `records`, in vec4s.
    body_records: u32,
    // Where the per-body frozen flags start in `control` (src/gpu/contact/layout.rs CONTROL_HEADER).
    frozen: u32,
    _pad: u32,
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

var<workgroup> partial: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let b = group.x;
    if b >= params.bodies {
        return;
    }
    let record = bitcast<vec4<u32>>(records[params.body_records + 2u * b]);
    let first = record.x;
    let end = record.x + record.y;
    var sum = 0.0;
    for (var v = first + lane; v < end; v += 64u) {
        sum += abs(updates[v].w);
    }
    partial[lane] = sum;
    workgroupBarrier();
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        if lane < stride {
            partial[lane] += partial[lane + stride];
        }
        workgroupBarrier();
    }
    if lane == 0u {
        let r2 = partial[0];
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
}
