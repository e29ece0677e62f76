// Contact detection at the current positions (src/solver/vbd/contact.rs detect, the query
// phase): every vertex–triangle and edge–edge pair within the two primitives' search radii.
// Pairs closer than the store limit become contact pairs carrying the lagged constants of their
// energy (make_pair); the rest lower the smallest pair distance of their four vertices (integer
// atomicMin on the bits of a positive float: exact and order-independent).
//
// Queries run twice, so that the pairs land in an order that does not depend on scheduling:
// first each query (a surface vertex, then a surface edge) counts its stored pairs, a scan
// turns the counts into where each query's pairs start, then each query walks the tree again
// and writes its pairs there, sorted by their vertices: vertex by vertex, then edge by edge,
// the CPU's order exactly (which depends on the positions alone, not on either tree). A
// vertex's own point–triangle pairs are then contiguous, and the same invocation applies the
// closest-feature rule to them (src/collision/surface_pairs.rs keep_closest_features). A pair past the buffer's capacity is treated as one of the rest: its
// vertices are bounded isotropically by its distance, which keeps the step free of crossings,
// and the count (which includes it) tells the host to grow the buffer.
// Phases (one dispatch each; the scan runs between 1 and 2):
//   0  per surface vertex: count its point–triangle pairs, lower the rest's distances;
//   1  per surface edge: the same for its edge–edge pairs with edges of larger index;
//   2  per surface vertex: write its pairs, the closest-feature rule; the first writes the total;
//   3  per surface edge: write its pairs.
// Host wrapper: src/gpu/contact/contact_detect.rs; prepended: lib/bvh.wgsl, lib/bvh_walk.wgsl,
// lib/surface.wgsl, lib/contact_layout.wgsl, lib/distance.wgsl, lib/layer.wgsl.

struct Params {
    surface: Surface,
    contact: ContactLayout,
    tris: Tree,
    edges: Tree,
    phase: u32,
    count: u32,
    // Contact stiffness [N/m], or [N/m per kg] with bit 0 of contact_flags; pairs take
    // pair_factor times the obstacle rule (src/solver/vbd/contact.rs PAIR_STIFFNESS_FACTOR).
    // Bit 1: the stiffening layer (lib/layer.wgsl) rather than the penalty.
    contact_flags: u32,
    stiffness: f32,
    pair_factor: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

const PHASE_COUNT_POINTS: u32 = 0u;
const PHASE_COUNT_EDGES: u32 = 1u;
const PHASE_WRITE_POINTS: u32 = 2u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> index: array<u32>;
@group(0) @binding(3) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> masses: array<f32>;
@group(0) @binding(5) var<storage, read> bvh: array<u32>;
@group(0) @binding(6) var<storage, read_write> control: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> contacts: array<atomic<u32>>;

fn lower_dmin(v: vec4<u32>, d: f32) {
    let l = params.contact;
    let bits = bitcast<u32>(d);
    atomicMin(&contacts[l.dmin + v.x], bits);
    atomicMin(&contacts[l.dmin + v.y], bits);
    atomicMin(&contacts[l.dmin + v.z], bits);
    atomicMin(&contacts[l.dmin + v.w], bits);
}

// src/solver/vbd/contact.rs make_pair (and the edge–edge fade of surface_pairs.rs
// edge_edge_energy_scale), written as pair k.
fn write_pair(k: u32, kind: u32, v: vec4<u32>, c: Closest) {
    let l = params.contact;
    let s = params.surface;
    let w = c.weights;
    let m = 0.5 * (abs(w.x) * masses[v.x] + abs(w.y) * masses[v.y] + abs(w.z) * masses[v.z]
        + abs(w.w) * masses[v.w]);
    var stiffness = params.stiffness;
    if (params.contact_flags & 1u) == 1u {
        stiffness *= m;
    }
    stiffness *= params.pair_factor;
    // The lagged normal force: the penalty's, or the stiffening layer's (lib/layer.wgsl).
    var force = stiffness * max(s.offset - c.distance, 0.0);
    if (params.contact_flags & 2u) != 0u {
        force = layer_force_stiffness(c.distance, stiffness, s.offset).x;
    }
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
}

// One candidate of a query: whether it is stored. Counting lowers the distances of the rest;
// writing stores it as pair `at` (or, past the capacity, lowers its distance instead).
fn visit(kind: u32, v: vec4<u32>, reach: f32, writing: bool, at: u32) -> bool {
    let s = params.surface;
    let x = array<vec3<f32>, 4>(positions[v.x].xyz, positions[v.y].xyz, positions[v.z].xyz, positions[v.w].xyz);
    let c = closest_pair(kind, x);
    if !(c.distance < reach) {
        return false;
    }
    if !(c.distance < s.store_limit) {
        if !writing {
            lower_dmin(v, c.distance);
        }
        return false;
    }
    if writing {
        if at < params.contact.capacity {
            write_pair(at, kind, v, c);
        } else {
            lower_dmin(v, c.distance);
        }
    }
    return true;
}

// Where query q's pairs start (the counts were scanned inclusively).
fn first_pair(q: u32) -> u32 {
    if q == 0u {
        return 0u;
    }
    return atomicLoad(&contacts[params.contact.counts + q - 1u]);
}

// Whether pair a's vertices come before pair b's (lexicographic).
fn vertices_before(a: u32, b: u32) -> bool {
    for (var i = 0u; i < 4u; i++) {
        let va = pair_word(a, i);
        let vb = pair_word(b, i);
        if va != vb {
            return va < vb;
        }
    }
    return false;
}

// Insertion sort of pairs first..last by their vertices (a query stores a handful).
fn sort_pairs(first: u32, last: u32) {
    let base = params.contact.pairs;
    for (var a = first + 1u; a < last; a++) {
        var b = a;
        while b > first && vertices_before(b, b - 1u) {
            for (var w = 0u; w < PAIR_WORDS; w++) {
                let lo = atomicLoad(&contacts[base + PAIR_WORDS * (b - 1u) + w]);
                let hi = atomicLoad(&contacts[base + PAIR_WORDS * b + w]);
                atomicStore(&contacts[base + PAIR_WORDS * (b - 1u) + w], hi);
                atomicStore(&contacts[base + PAIR_WORDS * b + w], lo);
            }
            b -= 1u;
        }
    }
}

// Vertices of a point–triangle pair's triangle that carry its closest point (nonzero weight),
// and how many: one for a corner, two for an edge, three for the face.
struct ClosestFeature {
    v: vec3<u32>,
    n: u32,
}

fn pair_word(k: u32, w: u32) -> u32 {
    return atomicLoad(&contacts[params.contact.pairs + PAIR_WORDS * k + w]);
}

fn closest_feature(k: u32) -> ClosestFeature {
    var f = ClosestFeature(vec3<u32>(0xffffffffu), 0u);
    for (var i = 1u; i < 4u; i++) {
        if bitcast<f32>(pair_word(k, PAIR_WEIGHTS + i)) != 0.0 {
            f.v[f.n] = pair_word(k, i);
            f.n += 1u;
        }
    }
    return f;
}

// Whether the triangle of pair k holds every vertex of feature f.
fn holds(k: u32, f: ClosestFeature) -> bool {
    for (var i = 0u; i < f.n; i++) {
        let x = f.v[i];
        if x != pair_word(k, 1u) && x != pair_word(k, 2u) && x != pair_word(k, 3u) {
            return false;
        }
    }
    return true;
}

// Pair i of a vertex's pairs first..last gives way when another holds its closest feature,
// unless that other comes later and its own closest feature is held by pair i.
fn gives_way(first: u32, last: u32, i: u32) -> bool {
    let fi = closest_feature(i);
    if fi.n == 3u {
        return false;
    }
    for (var j = first; j < last; j++) {
        if j != i && holds(j, fi) && !(j > i && holds(i, closest_feature(j))) {
            return true;
        }
    }
    return false;
}

// Only the pairs whose closest point is a local minimum of the distance to the other surface
// keep their energy; the rest keep their bounds. If rounding made every pair give way, the
// nearest keeps it.
fn keep_closest_features(first: u32, last: u32) {
    var kept = 0u;
    var nearest = first;
    for (var i = first; i < last; i++) {
        if bitcast<f32>(pair_word(i, PAIR_DISTANCE)) < bitcast<f32>(pair_word(nearest, PAIR_DISTANCE)) {
            nearest = i;
        }
        if !gives_way(first, last, i) {
            kept += 1u;
        }
    }
    for (var i = first; i < last; i++) {
        if !(kept == 0u && i == nearest) && gives_way(first, last, i) {
            let b = params.contact.pairs + PAIR_WORDS * i;
            atomicStore(&contacts[b + PAIR_STIFFNESS], 0u);
            atomicStore(&contacts[b + PAIR_FRICTION_FORCE], 0u);
        }
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
    let writing = params.phase >= PHASE_WRITE_POINTS;
    let points = params.phase == PHASE_COUNT_POINTS || params.phase == PHASE_WRITE_POINTS;
    // Query index: surface vertices first, then surface edges.
    var q = i;
    if !points {
        q = s.surface_vertex_count + i;
    }
    var at = 0u;
    if writing {
        at = first_pair(q);
        if q == 0u {
            let queries = s.surface_vertex_count + s.edge_count;
            atomicStore(&control[CONTROL_PAIR_COUNT], atomicLoad(&contacts[l.counts + queries - 1u]));
        }
    }
    let first = at;
    if points {
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
            if pair_allowed(s, pv) && visit(PAIR_POINT_TRIANGLE, pv, r + search_radius(s, tri.z), writing, at) {
                at += 1u;
            }
        }
        if writing {
            sort_pairs(first, min(at, l.capacity));
            keep_closest_features(first, min(at, l.capacity));
        }
    } else {
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
            if pair_allowed(s, pv) && visit(PAIR_EDGE_EDGE, pv, r + search_radius(s, pv.w), writing, at) {
                at += 1u;
            }
        }
        if writing {
            sort_pairs(first, min(at, l.capacity));
        }
    }
    if !writing {
        atomicStore(&contacts[l.counts + q], at);
    }
}
