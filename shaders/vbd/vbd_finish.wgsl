// End of a VBD step, one invocation per vertex: the GPU twin of the finish phase in
// src/solver/vbd/finish.rs. Velocity v = c1 Δx + c0 and realised acceleration a = (Δx − (x̂ − x^n)) / w,
// with Δx = (x − x^(0)) + (x^(0) − x^n): the sweeps' motion plus the exact initial offset, so
// that no ulp of |x| enters the velocity. Host wrapper: src/gpu/vbd/vbd_finish.rs; prepended: lib/step.wgsl.

struct Params {
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}


@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> initial: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(4) var<storage, read_write> velocities: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> accelerations: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> flags: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let v = id.x;
    if v >= params.count {
        return;
    }
    let s = steps[v];
    let dx = (positions[v].xyz - initial[v].xyz) + s.offset.xyz;
    velocities[v] = vec4<f32>(dx * s.velocity.w + s.velocity.xyz, 0.0);
    accelerations[v] = vec4<f32>((dx - s.predictor.xyz) * (1.0 / s.predictor.w), 0.0);
    flags[v] = flags[v] & ~VERTEX_NO_HISTORY;
}
