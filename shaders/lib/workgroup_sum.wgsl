// A workgroup's sum of two values per invocation (al_pcg, al_search), for workgroups of 64.
// Not a kernel: host wrappers prepend this file; it declares the workgroup array `partial`.

var<workgroup> partial: array<vec2<f32>, 64>;

// The sum of every invocation's `s`, for every invocation (all 64 call it, in uniform control
// flow).
fn workgroup_sum(lid: u32, s: vec2<f32>) -> vec2<f32> {
    partial[lid] = s;
    workgroupBarrier();
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        if lid < stride {
            partial[lid] += partial[lid + stride];
        }
        workgroupBarrier();
    }
    let total = partial[0];
    workgroupBarrier();
    return total;
}
