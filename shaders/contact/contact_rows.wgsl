// The end of a contact detection, one invocation per vertex, once contact_csr has filled the
// vertex → pair lists: the vertex's list sorted (by pair, then slot: the detection wrote the
// pairs in an order that does not depend on scheduling, so the vertex sums its contacts in a
// fixed order), and its displacement bound from the smallest distance of the pairs it was not
// stored with, b_v = γ_p (d_min − ξ) (src/solver/vbd/contact.rs detect).
// Host wrapper: src/gpu/contact/contact_rows.rs; prepended: lib/contact_layout.wgsl.

struct Params {
    contact: ContactLayout,
    count: u32,
    // ξ [m].
    min_separation: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> control: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> contacts: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let l = params.contact;
    let i = id.x;
    if i >= params.count {
        return;
    }
    // Insertion sort of the row (a few dozen entries at most).
    let first = l.entries + contacts[l.offsets + i];
    let last = l.entries + contacts[l.offsets + i + 1u];
    for (var a = first + 1u; a < last; a++) {
        let e = contacts[a];
        var b = a;
        while b > first && e < contacts[b - 1u] {
            contacts[b] = contacts[b - 1u];
            b -= 1u;
        }
        contacts[b] = e;
    }
    // Measured from ξ, so that a gap d ≥ ξ ends above (1 − 2γ_p) d + 2γ_p ξ ≥ ξ.
    let d = bitcast<f32>(contacts[l.dmin + i]);
    let bound = BOUND_FRACTION * max(d - params.min_separation, 0.0);
    let c = l.clamp + 4u * i;
    let x = positions[i].xyz;
    contacts[c] = bitcast<u32>(x.x);
    contacts[c + 1u] = bitcast<u32>(x.y);
    contacts[c + 2u] = bitcast<u32>(x.z);
    contacts[c + 3u] = bitcast<u32>(bound);
    if i == 0u {
        atomicStore(&control[CONTROL_BOUNDS_VALID], 1u);
    }
}
