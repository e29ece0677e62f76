// Inclusive prefix sum of u32 words in place, by blocks of 256 (64 invocations × 4 words):
// the row offsets of the vertex → pair lists from their counts. A scan of more than one block
// runs as levels: each block's total goes to a level of block sums, which is scanned the same
// way, and the scanned sums are added back. Integer sums in a fixed tree: the result does not
// depend on scheduling. Phases (one dispatch per level each):
//   0  per block: scan it, write its total to the block sums;
//   1  per block but the first: add the scanned total of the blocks before it.
// Host wrapper: src/gpu/contact/scan.rs.

struct Params {
    phase: u32,
    // Word offsets of this level's data and block sums, and the data's length.
    data: u32,
    sums: u32,
    count: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> words: array<u32>;

const BLOCK: u32 = 256u;

var<workgroup> partial: array<u32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let first = wg.x * BLOCK + 4u * t;
    if params.phase == 1u {
        if wg.x == 0u {
            return;
        }
        let add = words[params.sums + wg.x - 1u];
        for (var i = 0u; i < 4u; i++) {
            if first + i < params.count {
                words[params.data + first + i] += add;
            }
        }
        return;
    }
    var v = array<u32, 4>(0u, 0u, 0u, 0u);
    var run = 0u;
    for (var i = 0u; i < 4u; i++) {
        if first + i < params.count {
            run += words[params.data + first + i];
        }
        v[i] = run;
    }
    partial[t] = run;
    workgroupBarrier();
    for (var step = 1u; step < 64u; step *= 2u) {
        var before = 0u;
        if t >= step {
            before = partial[t - step];
        }
        workgroupBarrier();
        partial[t] += before;
        workgroupBarrier();
    }
    var prefix = 0u;
    if t > 0u {
        prefix = partial[t - 1u];
    }
    for (var i = 0u; i < 4u; i++) {
        if first + i < params.count {
            words[params.data + first + i] = v[i] + prefix;
        }
    }
    if t == 63u {
        words[params.sums + wg.x] = partial[63];
    }
}
