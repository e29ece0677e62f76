// Builds the hierarchy of a linear BVH over surface primitives (Karras 2012; docs/algorithms.md §7.3)
// from the current positions: Morton codes of the primitives' centroids, a bitonic sort of the
// (code, primitive) keys, then one invocation per internal node finds its range and split from
// the sorted keys alone. Leaf boxes are filled by bvh_refit. Phases (one dispatch each):
//   0  per word: clear the centroid bounds (all-zero words are an empty box);
//   1  per primitive: grow the centroid bounds (integer atomicMax on ordered bits);
//   2  per padded slot: the sort key (Morton code, primitive), padding keys last;
//   3  per pair: one compare-exchange step (k, j) of the bitonic network;
//   4  per internal node: children and the children's parent links;
//   5  per leaf: the leaf's primitive; the root has no parent.
// Every result is a function of the keys, which are distinct: the tree does not depend on the
// order the invocations run in. Host wrapper: src/gpu/contact/bvh_build.rs; prepended:
// lib/bvh.wgsl.

struct Params {
    tree: Tree,
    phase: u32,
    count: u32,
    // Bitonic step: size of the sorted runs being merged, and the compare distance.
    k: u32,
    j: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> index: array<u32>;
@group(0) @binding(3) var<storage, read_write> bvh: array<atomic<u32>>;

fn centroid(t: Tree, p: u32) -> vec3<f32> {
    var c = vec3<f32>(0.0);
    for (var k = 0u; k < t.arity; k++) {
        c += positions[index[t.primitives + t.arity * p + k]].xyz;
    }
    return c / f32(t.arity);
}

fn key(t: Tree, i: u32) -> vec2<u32> {
    return vec2<u32>(atomicLoad(&bvh[t.keys + 2u * i]), atomicLoad(&bvh[t.keys + 2u * i + 1u]));
}

fn key_greater(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x > b.x || (a.x == b.x && a.y > b.y);
}

// Length of the common prefix of sorted keys i and j (64-bit: code, then primitive); −1
// outside the key range.
fn delta(t: Tree, i: i32, j: i32) -> i32 {
    if j < 0 || j >= i32(t.count) {
        return -1;
    }
    let a = key(t, u32(i));
    let b = key(t, u32(j));
    if a.x != b.x {
        return i32(countLeadingZeros(a.x ^ b.x));
    }
    return 32 + i32(countLeadingZeros(a.y ^ b.y));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let t = params.tree;
    let i = id.x;
    if i >= params.count {
        return;
    }
    switch params.phase {
        case 0u: {
            atomicStore(&bvh[t.bounds + i], 0u);
        }
        case 1u: {
            let c = centroid(t, i);
            let lo = encode_box_min(c);
            let hi = encode_box_max(c);
            atomicMax(&bvh[t.bounds], lo.x);
            atomicMax(&bvh[t.bounds + 1u], lo.y);
            atomicMax(&bvh[t.bounds + 2u], lo.z);
            atomicMax(&bvh[t.bounds + 3u], hi.x);
            atomicMax(&bvh[t.bounds + 4u], hi.y);
            atomicMax(&bvh[t.bounds + 5u], hi.z);
        }
        case 2u: {
            var code = BVH_NONE;
            var prim = BVH_NONE;
            if i < t.count {
                let b = t.bounds;
                let lo = decode_box_min(vec3<u32>(atomicLoad(&bvh[b]), atomicLoad(&bvh[b + 1u]),
                                                  atomicLoad(&bvh[b + 2u])));
                let hi = decode_box_max(vec3<u32>(atomicLoad(&bvh[b + 3u]), atomicLoad(&bvh[b + 4u]),
                                                  atomicLoad(&bvh[b + 5u])));
                let extent = max(hi - lo, vec3<f32>(1e-30));
                code = morton3((centroid(t, i) - lo) / extent);
                prim = i;
            }
            atomicStore(&bvh[t.keys + 2u * i], code);
            atomicStore(&bvh[t.keys + 2u * i + 1u], prim);
        }
        case 3u: {
            let lo = 2u * params.j * (i / params.j) + i % params.j;
            let hi = lo + params.j;
            let a = key(t, lo);
            let b = key(t, hi);
            let ascending = (lo & params.k) == 0u;
            if key_greater(a, b) == ascending {
                atomicStore(&bvh[t.keys + 2u * lo], b.x);
                atomicStore(&bvh[t.keys + 2u * lo + 1u], b.y);
                atomicStore(&bvh[t.keys + 2u * hi], a.x);
                atomicStore(&bvh[t.keys + 2u * hi + 1u], a.y);
            }
        }
        case 4u: {
            let n = i32(i);
            var d = -1;
            if delta(t, n, n + 1) > delta(t, n, n - 1) {
                d = 1;
            }
            // The range of keys under node n: grow it exponentially, then binary-search its end.
            let d_min = delta(t, n, n - d);
            var l_max = 2;
            while delta(t, n, n + l_max * d) > d_min {
                l_max *= 2;
            }
            var l = 0;
            for (var s = l_max / 2; s >= 1; s /= 2) {
                if delta(t, n, n + (l + s) * d) > d_min {
                    l += s;
                }
            }
            let j = n + l * d;
            // The split: the last key sharing more than the range's common prefix with key n.
            let d_node = delta(t, n, j);
            var split = 0;
            var div = 2;
            loop {
                let s = (l + div - 1) / div;
                if delta(t, n, n + (split + s) * d) > d_node {
                    split += s;
                }
                if s <= 1 {
                    break;
                }
                div *= 2;
            }
            let gamma = n + split * d + min(d, 0);
            var left = u32(gamma);
            if min(n, j) == gamma {
                left = leaf_node(t, u32(gamma));
            }
            var right = u32(gamma + 1);
            if max(n, j) == gamma + 1 {
                right = leaf_node(t, u32(gamma + 1));
            }
            atomicStore(&bvh[t.children + 2u * i], left);
            atomicStore(&bvh[t.children + 2u * i + 1u], right);
            atomicStore(&bvh[t.parents + left], i);
            atomicStore(&bvh[t.parents + right], i);
        }
        default: {
            let leaf = leaf_node(t, i);
            atomicStore(&bvh[t.children + 2u * leaf], key(t, i).y);
            atomicStore(&bvh[t.children + 2u * leaf + 1u], BVH_LEAF);
            if i == 0u {
                atomicStore(&bvh[t.parents], BVH_NONE);
            }
        }
    }
}
