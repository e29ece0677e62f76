// The initial guess x^(0) of a VBD step, advanced rigidly per body only up to its first
// obstacle contact: the GPU twin of the advance in src/solver/vbd.rs's prepare phase (a uniform
// advance starts an impact undeformed; clamping vertices one by one would start it crushed).
// Three dispatches of this kernel, by `phase`:
//   0  per body: the body's time of first contact starts at 1;
//   1  per vertex: the first obstacle entry along x^n → x^n + offset, min-reduced per body
//      (times in [0, 1] order as their bits, so an integer atomicMin is exact: no float
//      atomics);
//   2  per vertex: shorten the offset by the body's time, keep vertices already inside an
//      obstacle from starting deeper, and start the iterates and Chebyshev's history there;
//   3  per vertex, after vbd_spans' limit (phase 0 over its per-body fractions before it):
//      scale the offsets of the bodies it holds back, and restart their iterates there (the
//      CPU's scale_advance).
// Host wrapper: src/gpu/vbd/vbd_advance.rs; prepended: lib/step.wgsl, lib/obstacles.wgsl.

struct Params {
    phase: u32,
    count: u32,
    // Where vertex_body starts in `index`.
    vertex_body: u32,
    // Phase 0: the first word it resets in `body_toi`; phase 3: where vbd_spans' per-body
    // fractions start there (after the per-body times of phase 1).
    span_toi: u32,
    obstacles: ObstacleSet,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> steps: array<VertexStep>;
@group(0) @binding(3) var<storage, read> flags: array<u32>;
@group(0) @binding(4) var<storage, read> index: array<u32>;
@group(0) @binding(5) var<storage, read_write> body_toi: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> initial: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> previous: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> before_previous: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i >= params.count {
        return;
    }
    if params.phase == 0u {
        atomicStore(&body_toi[params.span_toi + i], bitcast<u32>(1.0));
        return;
    }
    let kinematic = (flags[i] & VERTEX_KINEMATIC) != 0u;
    let x = steps[i].start.xyz;
    var offset = steps[i].offset.xyz;
    if params.phase == 1u {
        if kinematic {
            return;
        }
        var toi = 1.0;
        for (var k = 0u; k < params.obstacles.count; k++) {
            let t = obstacle_entry(params.obstacles.items[k], x, x + offset);
            if t != NO_ENTRY {
                toi = min(toi, t);
            }
        }
        if toi < 1.0 {
            atomicMin(&body_toi[index[params.vertex_body + i]], time_bits(toi));
        }
        return;
    }
    if params.phase == 3u {
        // The spans' limit (vbd_spans): only bodies it holds back, their offsets scaled.
        let toi = bitcast<f32>(atomicLoad(&body_toi[params.span_toi + index[params.vertex_body + i]]));
        if kinematic || toi >= 1.0 {
            return;
        }
        offset *= toi;
        let x4 = vec4<f32>(x + offset, 0.0);
        steps[i].offset = vec4<f32>(offset, steps[i].offset.w);
        positions[i] = x4;
        initial[i] = x4;
        previous[i] = x4;
        before_previous[i] = x4;
        return;
    }
    var x0 = x + offset;
    if !kinematic {
        let toi = bitcast<f32>(atomicLoad(&body_toi[index[params.vertex_body + i]]));
        if toi < 1.0 {
            offset *= toi * (1.0 - 1e-4);
            x0 = x + offset;
        }
        let p = limit_step(params.obstacles, x, x0);
        if any(p != x0) {
            x0 = p;
            offset = p - x;
        }
    }
    steps[i].offset = vec4<f32>(offset, 0.0);
    let x4 = vec4<f32>(x0, 0.0);
    positions[i] = x4;
    initial[i] = x4;
    previous[i] = x4;
    before_previous[i] = x4;
}
