// Box queries on a BVH of shaders/lib/bvh.wgsl, for kernels that bind `bvh` read-only: an
// iterator over the primitives whose boxes overlap a query box, depth first with a private
// stack. Not a kernel: host wrappers prepend this file after lib/bvh.wgsl.
//
// The stack never overflows: the sort keys (Morton code, primitive) are distinct 64-bit
// values and each level of a Karras tree splits on a longer common prefix, so a root-to-leaf
// path has at most 64 internal nodes, and a depth-first walk holds one pending sibling per
// level plus the two children just pushed.

const BVH_STACK: u32 = 68u;

struct BvhWalk {
    stack: array<u32, BVH_STACK>,
    top: u32,
    lo: vec3<f32>,
    hi: vec3<f32>,
}

fn node_overlaps(t: Tree, k: u32, lo: vec3<f32>, hi: vec3<f32>) -> bool {
    let b = t.boxes + 6u * k;
    let nlo = decode_box_min(vec3<u32>(bvh[b], bvh[b + 1u], bvh[b + 2u]));
    let nhi = decode_box_max(vec3<u32>(bvh[b + 3u], bvh[b + 4u], bvh[b + 5u]));
    // Written so that an empty (NaN) box overlaps nothing.
    return all(nlo <= hi) && all(lo <= nhi);
}

fn bvh_walk(t: Tree, lo: vec3<f32>, hi: vec3<f32>) -> BvhWalk {
    var w: BvhWalk;
    w.top = 0u;
    w.lo = lo;
    w.hi = hi;
    if t.count > 0u {
        w.stack[0] = 0u;
        w.top = 1u;
    }
    return w;
}

// The next primitive whose leaf box overlaps the query box, or BVH_NONE when the walk is over.
fn bvh_next(t: Tree, w: ptr<function, BvhWalk>) -> u32 {
    while (*w).top > 0u {
        (*w).top -= 1u;
        let k = (*w).stack[(*w).top];
        if !node_overlaps(t, k, (*w).lo, (*w).hi) {
            continue;
        }
        let c = t.children + 2u * k;
        if bvh[c + 1u] == BVH_LEAF {
            return bvh[c];
        }
        if (*w).top + 2u > BVH_STACK {
            // Unreachable for a tree built by bvh_build; a damaged one (a cycle) ends the walk
            // here instead of hanging the device.
            (*w).top = 0u;
            return BVH_NONE;
        }
        (*w).stack[(*w).top] = bvh[c + 1u];
        (*w).stack[(*w).top + 1u] = bvh[c];
        (*w).top += 2u;
    }
    return BVH_NONE;
}
