// Kinematic vertices after a contact detection (src/solver/vbd/detect.rs catch_up_kinematic): each
// moves towards its end-of-step target as far as its bounds allow, so a pin never drives one
// surface through another; one held back flags the bound as met, so that the next scheduled
// detection runs and it can catch up. One invocation per vertex.
// Host wrapper: src/gpu/contact/contact_catch_up.rs; prepended: lib/step.wgsl,
// lib/distance.wgsl, lib/mat3.wgsl, lib/friction.wgsl,
// lib/contact_layout.wgsl, lib/contact.wgsl.

struct Params {
    contact: ContactLayout,
    count: u32,
    min_separation: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> flags: array<u32>;
@group(0) @binding(3) var<storage, read> targets: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> control: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read> contacts: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let v = id.x;
    if v >= params.count || (flags[v] & VERTEX_KINEMATIC) == 0u {
        return;
    }
    let target_x = targets[v].xyz;
    let within = limit_move(params.contact, params.min_separation, v, target_x);
    if any(within != target_x) {
        atomicStore(&control[CONTROL_BOUND_HIT], 1u);
    }
    positions[v] = vec4<f32>(within, 0.0);
}
