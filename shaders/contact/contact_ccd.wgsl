// The CCD of the initial advance (src/solver/vbd/contact.rs advance_scale, its query phase):
// along the straight paths x^n → x^(0), every vertex–triangle and edge–edge pair whose swept
// boxes overlap joins its two bodies into one group (they must share one advance), and its
// additive-CCD time of impact lowers the earliest time of the first vertex's body (integer
// atomicMin on the bits of a time in [0, 1]). Groups are a union–find forest over the bodies'
// labels, joined lock-free: a root is hooked under the smaller root only by a compare-exchange
// that finds it still a root, so no join is lost and every label stays a smaller body of the
// same group. Phases (one dispatch each):
//   0  per body: time 1, its own group;
//   1  per surface vertex: its point–triangle candidates;
//   2  per surface edge: its edge–edge candidates with edges of larger index.
// Host wrapper: src/gpu/contact/contact_ccd.rs; prepended: lib/step.wgsl, lib/bvh.wgsl,
// lib/bvh_walk.wgsl, lib/surface.wgsl, lib/contact_layout.wgsl, lib/ccd_groups.wgsl,
// lib/distance.wgsl.

struct Params {
    surface: Surface,
    contact: ContactLayout,
    tris: Tree,
    edges: Tree,
    phase: u32,
    count: u32,
    // Additive CCD: safety fraction s and iteration cap (ξ is the surface's min_separation).
    safety: f32,
    max_iterations: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(3) var<storage, read> index: array<u32>;
@group(0) @binding(4) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> bvh: array<u32>;
@group(0) @binding(6) var<storage, read_write> control: array<atomic<u32>>;

// The last two bodies this invocation joined: its candidates mostly come from one other body.
var<private> last_join: vec2<u32> = vec2<u32>(0xffffffffu);

fn join(a: u32, b: u32) {
    let pair = vec2<u32>(min(a, b), max(a, b));
    if all(pair == last_join) {
        return;
    }
    last_join = pair;
    let l = params.contact;
    loop {
        let ra = group_root(params.contact, a);
        let rb = group_root(params.contact, b);
        if ra == rb {
            return;
        }
        let lo = min(ra, rb);
        let hi = max(ra, rb);
        if atomicCompareExchangeWeak(&control[control_label(l, hi)], hi, lo).exchanged {
            return;
        }
    }
}

fn test_pair(kind: u32, v: vec4<u32>) {
    let s = params.surface;
    let a = body_of(s, v.x);
    let b = body_of(s, v.w);
    if a != b {
        join(a, b);
    }
    let x = array<vec3<f32>, 4>(steps[v.x].start.xyz, steps[v.y].start.xyz, steps[v.z].start.xyz,
                                steps[v.w].start.xyz);
    let dx = array<vec3<f32>, 4>(positions[v.x].xyz - x[0], positions[v.y].xyz - x[1],
                                 positions[v.z].xyz - x[2], positions[v.w].xyz - x[3]);
    let toi = pair_toi(kind, x, dx, s.min_separation, params.safety, params.max_iterations, 1.0);
    if toi != NO_TOI {
        atomicMin(&control[control_toi(params.contact, a)], time_bits(toi));
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let s = params.surface;
    let l = params.contact;
    let i = id.x;
    if i >= params.count {
        return;
    }
    if params.phase == 0u {
        atomicStore(&control[control_toi(l, i)], bitcast<u32>(1.0));
        atomicStore(&control[control_label(l, i)], i);
        atomicStore(&control[control_group_toi(l, i)], bitcast<u32>(1.0));
        return;
    }
    let xi = s.min_separation;
    if params.phase == 1u {
        let v = index[s.surface_vertices + i];
        let x0 = steps[v].start.xyz;
        let x1 = positions[v].xyz;
        var walk = bvh_walk(params.tris, min(x0, x1) - xi, max(x0, x1) + xi);
        loop {
            let t = bvh_next(params.tris, &walk);
            if t == BVH_NONE {
                break;
            }
            let pv = vec4<u32>(v, surface_triangle(s, t));
            if pair_allowed(s, pv) {
                test_pair(PAIR_POINT_TRIANGLE, pv);
            }
        }
        return;
    }
    let a = surface_edge(s, i);
    let lo = min(min(steps[a.x].start.xyz, positions[a.x].xyz), min(steps[a.y].start.xyz, positions[a.y].xyz));
    let hi = max(max(steps[a.x].start.xyz, positions[a.x].xyz), max(steps[a.y].start.xyz, positions[a.y].xyz));
    var walk = bvh_walk(params.edges, lo - xi, hi + xi);
    loop {
        let e = bvh_next(params.edges, &walk);
        if e == BVH_NONE {
            break;
        }
        if e <= i {
            continue;
        }
        let pv = vec4<u32>(a, surface_edge(s, e));
        if pair_allowed(s, pv) {
            test_pair(PAIR_EDGE_EDGE, pv);
        }
    }
}
