// The start of a contact detection (src/solver/vbd/contact.rs detect, its single-threaded
// part): each body's box and its distance to the nearest other body's box, then every vertex's
// smallest-pair-distance seed and cleared pair lists. A pair the broadphase will not report is
// further apart than the two search radii, so a surface vertex starts at r_v + r_min; a vertex
// of a body that does not collide with itself only meets other bodies, at least its body box's
// distance away; a vertex off the surface has no bound. Phases (one dispatch each):
//   0  per body: clear its box (all-zero words are empty);
//   1  per vertex: grow its body's box (integer atomicMax on ordered bits);
//   2  per body: the distance to the nearest other body box;
//   3  per vertex: no bound yet, empty pair-list counters;
//   4  per surface vertex: the seed above.
// Host wrapper: src/gpu/contact/contact_bodies.rs; prepended: lib/bvh.wgsl, lib/surface.wgsl,
// lib/contact_layout.wgsl.

struct Params {
    surface: Surface,
    contact: ContactLayout,
    phase: u32,
    count: u32,
    _pad0: u32,
    _pad1: u32,
}

// Seed of vertices off the surface: no bound (lib/contact.wgsl UNBOUNDED after γ_p).
const NO_PAIR: f32 = 3.0e38;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> index: array<u32>;
@group(0) @binding(3) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> control: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> contacts: array<atomic<u32>>;

fn body_box_lo(l: ContactLayout, b: u32) -> vec3<f32> {
    let w = control_body_box(l, b);
    return decode_box_min(vec3<u32>(atomicLoad(&control[w]), atomicLoad(&control[w + 1u]),
                                    atomicLoad(&control[w + 2u])));
}

fn body_box_hi(l: ContactLayout, b: u32) -> vec3<f32> {
    let w = control_body_box(l, b);
    return decode_box_max(vec3<u32>(atomicLoad(&control[w + 3u]), atomicLoad(&control[w + 4u]),
                                    atomicLoad(&control[w + 5u])));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let s = params.surface;
    let l = params.contact;
    let i = id.x;
    if i >= params.count {
        return;
    }
    switch params.phase {
        case 0u: {
            for (var c = 0u; c < 6u; c++) {
                atomicStore(&control[control_body_box(l, i) + c], 0u);
            }
        }
        case 1u: {
            let x = positions[i].xyz;
            let w = control_body_box(l, body_of(s, i));
            let lo = encode_box_min(x);
            let hi = encode_box_max(x);
            atomicMax(&control[w], lo.x);
            atomicMax(&control[w + 1u], lo.y);
            atomicMax(&control[w + 2u], lo.z);
            atomicMax(&control[w + 3u], hi.x);
            atomicMax(&control[w + 4u], hi.y);
            atomicMax(&control[w + 5u], hi.z);
        }
        case 2u: {
            let lo = body_box_lo(l, i);
            let hi = body_box_hi(l, i);
            var nearest = NO_PAIR;
            for (var b = 0u; b < l.bodies; b++) {
                if b != i {
                    let gap = max(max(lo - body_box_hi(l, b), body_box_lo(l, b) - hi), vec3<f32>(0.0));
                    nearest = min(nearest, length(gap));
                }
            }
            atomicStore(&control[control_isolation(l, i)], bitcast<u32>(nearest));
        }
        case 3u: {
            atomicStore(&contacts[l.dmin + i], bitcast<u32>(NO_PAIR));
            atomicStore(&contacts[l.offsets + i + 1u], 0u);
            atomicStore(&contacts[l.cursor + i], 0u);
            if i == 0u {
                atomicStore(&contacts[l.offsets], 0u);
            }
        }
        default: {
            let v = index[s.surface_vertices + i];
            let b = body_of(s, v);
            var seed = search_radius(s, v) + s.radius_min;
            if !self_colliding(s, b) {
                seed = max(seed, bitcast<f32>(atomicLoad(&control[control_isolation(l, b)])));
            }
            atomicStore(&contacts[l.dmin + v], bitcast<u32>(seed));
        }
    }
}
