// Each body's advance fraction: the earliest time of impact in its group (src/solver/
// vbd/contact.rs advance_scale, its single-threaded part), once contact_ccd has joined the
// groups. Minimum is exact and commutative, so the result does not depend on the order the
// invocations run in. Phases (one dispatch each, per body):
//   0  lower its group root's time to its own;
//   1  take its group root's time.
// Host wrapper: src/gpu/contact/contact_groups.rs; prepended: lib/contact_layout.wgsl,
// lib/ccd_groups.wgsl.

struct Params {
    contact: ContactLayout,
    phase: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> control: array<atomic<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let l = params.contact;
    let b = id.x;
    if b >= l.bodies {
        return;
    }
    let root = control_group_toi(l, group_root(params.contact, b));
    if params.phase == 0u {
        atomicMin(&control[root], atomicLoad(&control[control_toi(l, b)]));
    } else {
        atomicStore(&control[control_toi(l, b)], atomicLoad(&control[root]));
    }
}
