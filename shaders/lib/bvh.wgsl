// Linear BVH over surface primitives (Karras 2012; docs/algorithms.md §7.3), laid out in one `bvh`
// buffer of u32 words by src/gpu/lib/bvh_build.rs TreeLayout: the data every BVH kernel
// shares, without touching the buffer (kernels bind it atomic or plain). Not a kernel: host
// wrappers prepend this file.
//
// Nodes 0 ..= count − 2 are internal (0 is the root), count − 1 ..= 2 count − 2 the leaves in
// Morton order; a one-primitive tree is its leaf at node 0. Boxes are 6 words per node in an
// order-preserving integer encoding, the minimum complemented, so that an all-zero box is empty
// and integer atomicMax grows a box exactly whatever the order of the updates (no float
// atomics).

struct Tree {
    // Word offsets into `bvh`: boxes (6 per node), children (2 per node: left and right, or a
    // leaf's primitive and BVH_LEAF), parents (1 per node), sort keys (2 per padded slot:
    // Morton code, primitive), centroid bounds (6).
    boxes: u32,
    children: u32,
    parents: u32,
    keys: u32,
    bounds: u32,
    // Primitives (leaves), and the power of two the sort pads them to.
    count: u32,
    padded: u32,
    // Word offset of the primitive table in `index`, and vertices per primitive (3 or 2).
    primitives: u32,
    arity: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

const BVH_NONE: u32 = 0xffffffffu;
// children[2k + 1] of a leaf.
const BVH_LEAF: u32 = 0xffffffffu;

// Order-preserving map of f32 to u32: larger floats give larger integers.
fn ordered_bits(f: f32) -> u32 {
    let b = bitcast<u32>(f);
    if (b & 0x80000000u) != 0u {
        return ~b;
    }
    return b | 0x80000000u;
}

fn from_ordered_bits(u: u32) -> f32 {
    if (u & 0x80000000u) != 0u {
        return bitcast<f32>(u & 0x7fffffffu);
    }
    return bitcast<f32>(~u);
}

// A box's six words: complemented ordered minimum, then ordered maximum.
fn encode_box_min(lo: vec3<f32>) -> vec3<u32> {
    return vec3<u32>(~ordered_bits(lo.x), ~ordered_bits(lo.y), ~ordered_bits(lo.z));
}

fn encode_box_max(hi: vec3<f32>) -> vec3<u32> {
    return vec3<u32>(ordered_bits(hi.x), ordered_bits(hi.y), ordered_bits(hi.z));
}

fn decode_box_min(w: vec3<u32>) -> vec3<f32> {
    return vec3<f32>(from_ordered_bits(~w.x), from_ordered_bits(~w.y), from_ordered_bits(~w.z));
}

fn decode_box_max(w: vec3<u32>) -> vec3<f32> {
    return vec3<f32>(from_ordered_bits(w.x), from_ordered_bits(w.y), from_ordered_bits(w.z));
}

// The node index of leaf `i` (in Morton order).
fn leaf_node(t: Tree, i: u32) -> u32 {
    return t.count - 1u + i;
}

// 10 bits spread to every third bit.
fn spread_bits(v: u32) -> u32 {
    var x = v & 0x3ffu;
    x = (x | (x << 16u)) & 0x030000ffu;
    x = (x | (x << 8u)) & 0x0300f00fu;
    x = (x | (x << 4u)) & 0x030c30c3u;
    x = (x | (x << 2u)) & 0x09249249u;
    return x;
}

// 30-bit Morton code of a point in [0, 1]³.
fn morton3(p: vec3<f32>) -> u32 {
    let q = vec3<u32>(clamp(p * 1024.0, vec3<f32>(0.0), vec3<f32>(1023.0)));
    return (spread_bits(q.x) << 2u) | (spread_bits(q.y) << 1u) | spread_bits(q.z);
}
