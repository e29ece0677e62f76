// The CCD advance's body groups as a union–find forest over the `control` labels (each a
// smaller body of the same group, or the body itself for the group's root), for kernels that
// bind `control` atomic. Not a kernel: host wrappers prepend this file after
// lib/contact_layout.wgsl.

// The root of body b's group: follow the labels down (they only ever decrease).
fn group_root(l: ContactLayout, b: u32) -> u32 {
    var r = b;
    var up = atomicLoad(&control[control_label(l, r)]);
    while up != r {
        r = up;
        up = atomicLoad(&control[control_label(l, r)]);
    }
    return r;
}
