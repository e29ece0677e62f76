// Decides on the GPU what the contact stages of a step run, without a round trip to the host:
// one invocation writes the workgroup counts of a group of indirect dispatches, the full count
// or zero, from the `control` words the earlier kernels of the frame left. Modes:
//   0  advance: the CCD advance runs when some initial path left the last bounds;
//   1  detect: a detection runs (the one after the advance, every step);
//   2  re-detect: a detection runs when the last one stored pairs or a bound was met since
//      (src/solver/vbd/sweep.rs: otherwise the stored pairs are every pair that can come within the
//      offset while the bounds hold);
//   3  pairs: the rest of the detection that just ran (none when it did not run), the
//      dispatches over its stored pairs with one invocation per pair;
//   4  stored: dispatches over the pairs the last detection stored (the rigid correction's).
// A detection that runs starts with no pairs and no bound met; the pairs mode records its count,
// and how many pairs did not fit and in which frame (for the host to grow the buffer and redo).
// Host wrapper: src/gpu/contact/contact_schedule.rs; prepended: lib/contact_layout.wgsl.

const MODE_ADVANCE: u32 = 0u;
const MODE_DETECT: u32 = 1u;
const MODE_REDETECT: u32 = 2u;
const MODE_PAIRS: u32 = 3u;
const MODE_STORED: u32 = 4u;
const MAX_ENTRIES: u32 = 32u;

struct Params {
    contact: ContactLayout,
    mode: u32,
    count: u32,
    _pad0: u32,
    _pad1: u32,
    // Per dispatch: word offset of its (x, y, z) in `dispatch`, its workgroups when it runs,
    // and 1 when it runs over the stored pairs instead (one invocation of 64 per pair).
    entries: array<vec4<u32>, MAX_ENTRIES>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> control: array<u32>;
@group(0) @binding(2) var<storage, read_write> dispatch: array<u32>;

fn start_detection() {
    // Bounds met from here on call for the next re-detection (src/solver/vbd/sweep.rs clears its flag
    // at the start of a step and at each re-detection).
    control[CONTROL_BOUND_HIT] = 0u;
    control[CONTROL_DETECTING] = 1u;
    control[CONTROL_PAIR_COUNT] = 0u;
    control[CONTROL_MIN_DISTANCE] = 0x7f800000u;
    control[CONTROL_DETECTIONS] += 1u;
}

@compute @workgroup_size(1)
fn main() {
    var run = true;
    switch params.mode {
        case MODE_ADVANCE: {
            run = control[CONTROL_ADVANCE_NEEDED] != 0u;
            if run {
                control[CONTROL_ADVANCES] += 1u;
            }
        }
        case MODE_DETECT: {
            start_detection();
        }
        case MODE_REDETECT: {
            run = control[CONTROL_PAIR_COUNT] != 0u || control[CONTROL_BOUND_HIT] != 0u;
            if run {
                start_detection();
            } else {
                control[CONTROL_DETECTING] = 0u;
            }
        }
        case MODE_STORED: {
            run = true;
        }
        default: {
            run = control[CONTROL_DETECTING] != 0u;
            if run {
                // Sticky until the host acts on them, so that a frame read back later still
                // tells of an overflow in an earlier one.
                let count = control[CONTROL_PAIR_COUNT];
                let capacity = params.contact.capacity;
                control[CONTROL_PAIRS_REQUESTED] = max(control[CONTROL_PAIRS_REQUESTED], count);
                if count > capacity {
                    control[CONTROL_PAIRS_DROPPED] = max(control[CONTROL_PAIRS_DROPPED], count - capacity);
                    if control[CONTROL_OVERFLOW_FRAME] == 0u {
                        control[CONTROL_OVERFLOW_FRAME] = control[CONTROL_FRAME];
                    }
                }
            }
        }
    }
    let pairs = min(control[CONTROL_PAIR_COUNT], params.contact.capacity);
    for (var k = 0u; k < params.count; k++) {
        let e = params.entries[k];
        var groups = e.y;
        if e.z == 1u {
            groups = (pairs + 63u) / 64u;
        }
        if !run {
            groups = 0u;
        }
        dispatch[e.x] = groups;
        dispatch[e.x + 1u] = 1u;
        dispatch[e.x + 2u] = 1u;
    }
}
