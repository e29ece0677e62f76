// Contact detection at the current positions (src/solver/vbd_contact.rs detect, the query
// phase): every vertex–triangle and edge–edge pair within the two primitives' search radii.
// Pairs closer than the store limit become contact pairs, appended with an atomic counter and
// carrying the lagged constants of their energy (make_pair); the rest lower the smallest pair
// distance of their four vertices (integer atomicMin on the bits of a positive float: exact and
// order-independent). A pair that finds the pair buffer full is treated as one of the rest: its
// vertices are then bounded isotropically by its distance, which keeps the step free of
// crossings, and the count (which keeps counting) tells the host to grow the buffer.
// Phases (one dispatch each):
//   0  per surface vertex: its point–triangle pairs;
//   1  per surface edge: its edge–edge pairs with edges of larger index.
// Host wrapper: src/gpu/kernels/contact_detect.rs; prepended: lib/bvh.wgsl, lib/bvh_walk.wgsl,
// lib/surface.wgsl, lib/contact_layout.wgsl, lib/distance.wgsl.

struct Params {
    surface: Surface,
    contact: ContactLayout,
    tris: Tree,
    edges: Tree,
    phase: u32,
    count: u32,
    // Contact penalty: stiffness [N/m], or [N/m per kg] when stiffness_per_mass is 1; pairs
    // take pair_factor times the obstacle rule (src/solver/vbd_contact.rs PAIR_STIFFNESS_FACTOR).
    stiffness_per_mass: u32,
    stiffness: f32,
    pair_factor: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> index: array<u32>;
@group(0) @binding(3) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> masses: array<f32>;
@group(0) @binding(5) var<storage, read> bvh: array<u32>;
@group(0) @binding(6) var<storage, read_write> control: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> contacts: array<atomic<u32>>;

fn lower_dmin(l: ContactLayout, v: vec4<u32>, d: f32) {
    let bits = bitcast<u32>(d);
    atomicMin(&contacts[l.dmin + v.x], bits);
    atomicMin(&contacts[l.dmin + v.y], bits);
    atomicMin(&contacts[l.dmin + v.z], bits);
    atomicMin(&contacts[l.dmin + v.w], bits);
}

// src/solver/vbd_contact.rs make_pair (and the edge–edge fade of surface_pairs.rs
// edge_edge_energy_scale), appended to the pair buffer; false when it is full.
fn store_pair(kind: u32, v: vec4<u32>, c: Closest) -> bool {
    let l = params.contact;
    let k = atomicAdd(&control[CONTROL_PAIR_COUNT], 1u);
    if k >= l.capacity {
        return false;
    }
    let s = params.surface;
    let w = c.weights;
    let m = 0.5 * (abs(w.x) * masses[v.x] + abs(w.y) * masses[v.y] + abs(w.z) * masses[v.z]
        + abs(w.w) * masses[v.w]);
    var stiffness = params.stiffness;
    if params.stiffness_per_mass == 1u {
        stiffness *= m;
    }
    stiffness *= params.pair_factor;
    var force = stiffness * max(s.offset - c.distance, 0.0);
    if kind == PAIR_EDGE_EDGE {
        let end = min(min(w.x, w.y), min(-w.z, -w.w));
        let t = clamp(end / EDGE_END_BAND, 0.0, 1.0);
        let fade = t * t * (3.0 - 2.0 * t);
        stiffness *= fade;
        force *= fade;
    }
    let mu = 0.5 * (records[s.bodies + 2u * body_of(s, v.x)].z + records[s.bodies + 2u * body_of(s, v.w)].z);
    var words = array<u32, 16>(
        v.x, v.y, v.z, v.w,
        bitcast<u32>(c.normal.x), bitcast<u32>(c.normal.y), bitcast<u32>(c.normal.z), kind,
        bitcast<u32>(stiffness), bitcast<u32>(force), bitcast<u32>(mu), bitcast<u32>(c.distance),
        bitcast<u32>(w.x), bitcast<u32>(w.y), bitcast<u32>(w.z), bitcast<u32>(w.w),
    );
    let base = l.pairs + PAIR_WORDS * k;
    for (var i = 0u; i < PAIR_WORDS; i++) {
        atomicStore(&contacts[base + i], words[i]);
    }
    atomicMin(&control[CONTROL_MIN_DISTANCE], bitcast<u32>(c.distance));
    return true;
}

fn visit(kind: u32, v: vec4<u32>, reach: f32) {
    let s = params.surface;
    let x = array<vec3<f32>, 4>(positions[v.x].xyz, positions[v.y].xyz, positions[v.z].xyz, positions[v.w].xyz);
    let c = closest_pair(kind, x);
    if !(c.distance < reach) {
        return;
    }
    if c.distance < s.store_limit && store_pair(kind, v, c) {
        return;
    }
    lower_dmin(params.contact, v, c.distance);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let s = params.surface;
    let i = id.x;
    if i >= params.count {
        return;
    }
    if params.phase == 0u {
        let v = index[s.surface_vertices + i];
        let r = search_radius(s, v);
        let x = positions[v].xyz;
        var walk = bvh_walk(params.tris, x - r, x + r);
        loop {
            let t = bvh_next(params.tris, &walk);
            if t == BVH_NONE {
                break;
            }
            let tri = surface_triangle(s, t);
            let pv = vec4<u32>(v, tri);
            if pair_allowed(s, pv) {
                visit(PAIR_POINT_TRIANGLE, pv, r + search_radius(s, tri.z));
            }
        }
        return;
    }
    let a = surface_edge(s, i);
    let r = search_radius(s, a.x);
    let xa = positions[a.x].xyz;
    let xb = positions[a.y].xyz;
    var walk = bvh_walk(params.edges, min(xa, xb) - r, max(xa, xb) + r);
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
            visit(PAIR_EDGE_EDGE, pv, search_radius(s, a.x) + search_radius(s, pv.w));
        }
    }
}
