// The vertex → pair lists of a contact detection (src/solver/vbd/contact.rs
// build_vertex_pairs) by count, scan and fill, one invocation per stored pair, dispatched
// indirectly over the pair count the detection left on the GPU. Phases (one dispatch each;
// between them the scan kernel turns the counts into row offsets):
//   0  count the pair in its four vertices' rows (at offsets[v + 1]);
//   1  write its four entries, pair << 2 | slot, at each row's fill cursor.
// The order within a row depends on the order the invocations run; contact_rows sorts it.
// Host wrapper: src/gpu/contact/contact_csr.rs; prepended: lib/contact_layout.wgsl.

struct Params {
    contact: ContactLayout,
    phase: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> control: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> contacts: array<atomic<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let l = params.contact;
    let k = id.x;
    // The dispatch covers the stored pairs; the count may exceed the capacity.
    if k >= min(atomicLoad(&control[CONTROL_PAIR_COUNT]), l.capacity) {
        return;
    }
    for (var slot = 0u; slot < 4u; slot++) {
        let v = atomicLoad(&contacts[l.pairs + PAIR_WORDS * k + PAIR_VERTICES + slot]);
        if params.phase == 0u {
            atomicAdd(&contacts[l.offsets + v + 1u], 1u);
        } else {
            let at = atomicLoad(&contacts[l.offsets + v]) + atomicAdd(&contacts[l.cursor + v], 1u);
            atomicStore(&contacts[l.entries + at], (k << 2u) | slot);
        }
    }
}
