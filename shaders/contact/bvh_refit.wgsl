// Refits a BVH built by bvh_build to the current positions: every leaf gets its primitive's box
// (at the positions, grown by the search radius of its first vertex; or swept from x^n to the
// positions and grown by ξ, for CCD; or swept from the positions to `ends`, for the fallback's
// step size), then walks up to the root growing each ancestor's box
// with integer atomicMax on ordered bits. Max is exact and commutative, so the boxes do not
// depend on the order the walks run in, and no float atomics are needed. A walk stops at the
// first ancestor its box no longer grows: whoever grew that ancestor's words past this box's
// carries them further up. Phases (one dispatch each):
//   0  per internal node: clear its box (all-zero words are empty);
//   1  per leaf: the leaf box, then the walk up.
// Host wrapper: src/gpu/contact/bvh_refit.rs; prepended: lib/step.wgsl, lib/bvh.wgsl,
// lib/surface.wgsl.

const REFIT_RADIUS: u32 = 0u;
const REFIT_SWEPT: u32 = 1u;
const REFIT_BETWEEN: u32 = 2u;

struct Params {
    tree: Tree,
    surface: Surface,
    phase: u32,
    count: u32,
    // REFIT_*, and the growth of swept boxes [m].
    mode: u32,
    inflate: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(3) var<storage, read> index: array<u32>;
@group(0) @binding(4) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> bvh: array<atomic<u32>>;
// REFIT_BETWEEN's far ends (the positions again in the other modes).
@group(0) @binding(6) var<storage, read> ends: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let t = params.tree;
    let s = params.surface;
    let i = id.x;
    if i >= params.count {
        return;
    }
    if params.phase == 0u {
        for (var c = 0u; c < 6u; c++) {
            atomicStore(&bvh[t.boxes + 6u * i + c], 0u);
        }
        return;
    }
    let leaf = leaf_node(t, i);
    let prim = atomicLoad(&bvh[t.children + 2u * leaf]);
    var lo = vec3<f32>(3.0e38);
    var hi = vec3<f32>(-3.0e38);
    var first = 0u;
    for (var k = 0u; k < t.arity; k++) {
        let v = index[t.primitives + t.arity * prim + k];
        if k == 0u {
            first = v;
        }
        let x = positions[v].xyz;
        lo = min(lo, x);
        hi = max(hi, x);
        if params.mode == REFIT_SWEPT {
            let x0 = steps[v].start.xyz;
            lo = min(lo, x0);
            hi = max(hi, x0);
        } else if params.mode == REFIT_BETWEEN {
            let x1 = ends[v].xyz;
            lo = min(lo, x1);
            hi = max(hi, x1);
        }
    }
    var r = params.inflate;
    if params.mode == REFIT_RADIUS {
        r = search_radius(s, first);
    }
    let w_lo = encode_box_min(lo - r);
    let w_hi = encode_box_max(hi + r);
    var w = array<u32, 6>(w_lo.x, w_lo.y, w_lo.z, w_hi.x, w_hi.y, w_hi.z);
    for (var c = 0u; c < 6u; c++) {
        atomicStore(&bvh[t.boxes + 6u * leaf + c], w[c]);
    }
    var node = leaf;
    loop {
        let parent = atomicLoad(&bvh[t.parents + node]);
        if parent == BVH_NONE {
            break;
        }
        var grew = false;
        for (var c = 0u; c < 6u; c++) {
            let old = atomicMax(&bvh[t.boxes + 6u * parent + c], w[c]);
            grew = grew || old < w[c];
        }
        if !grew {
            break;
        }
        node = parent;
    }
}
