// The initial advance under surface contact (src/solver/vbd/contact.rs advance_certified, and
// the scaling in src/solver/vbd/detect.rs): first whether every vertex's straight path x^n → x^(0)
// stays inside the bounds of the last detection, which certify it free of crossings (each
// vertex's allowed region is convex, so a path with both ends inside is inside); if not, after
// the CCD (contact_ccd, contact_groups), every body's initial offset is scaled to its group's
// earliest time of impact. Phases (one dispatch each):
//   0  per vertex: flag the advance as needed unless both ends of its path are within bounds
//      from a detection of this topology;
//   1  per vertex: scale the offset by the body's fraction, restart the iterates there.
// Host wrapper: src/gpu/contact/contact_advance.rs; prepended: lib/step.wgsl, lib/distance.wgsl,
// lib/mat3.wgsl, lib/friction.wgsl, lib/contact_layout.wgsl, lib/contact.wgsl.

struct Params {
    contact: ContactLayout,
    phase: u32,
    count: u32,
    // Where vertex_body starts in `index`; ξ [m].
    vertex_body: u32,
    min_separation: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> steps: array<VertexStep>;
@group(0) @binding(3) var<storage, read> index: array<u32>;
@group(0) @binding(4) var<storage, read_write> control: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read> contacts: array<u32>;
@group(0) @binding(6) var<storage, read_write> initial: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> previous: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> before_previous: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let l = params.contact;
    let v = id.x;
    if v >= params.count {
        return;
    }
    let start = steps[v].start.xyz;
    if params.phase == 0u {
        if atomicLoad(&control[CONTROL_BOUNDS_VALID]) == 0u {
            atomicStore(&control[CONTROL_ADVANCE_NEEDED], 1u);
            return;
        }
        let guess = positions[v].xyz;
        let xi = params.min_separation;
        if any(limit_move(l, xi, v, start) != start) || any(limit_move(l, xi, v, guess) != guess) {
            atomicStore(&control[CONTROL_ADVANCE_NEEDED], 1u);
        }
        return;
    }
    let s = bitcast<f32>(atomicLoad(&control[control_toi(l, index[params.vertex_body + v])]));
    if s < 1.0 {
        let offset = steps[v].offset.xyz * s;
        let x = vec4<f32>(start + offset, 0.0);
        steps[v].offset = vec4<f32>(offset, steps[v].offset.w);
        positions[v] = x;
        initial[v] = x;
        previous[v] = x;
        before_previous[v] = x;
    }
}
