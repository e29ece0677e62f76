// The end of a contact detection, one invocation per vertex, once contact_csr has filled the
// vertex → pair lists: the vertex's list sorted by its pairs' vertices (so that it sums its
// contacts in an order that does not depend on the order the pairs were appended), the
// closest-feature rule over its own vertex–triangle pairs (src/collision/surface_pairs.rs
// keep_closest_features: only the pairs whose closest point is a local minimum of the
// distance keep their energy) and its displacement bound from the smallest distance of the
// pairs it was not stored with, b_v = γ_p (d_min − ξ) (src/solver/vbd_contact.rs detect).
// Host wrapper: src/gpu/kernels/contact_rows.rs; prepended: lib/contact_layout.wgsl,
// lib/distance.wgsl.

struct Params {
    contact: ContactLayout,
    count: u32,
    // ξ [m].
    min_separation: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> control: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> contacts: array<u32>;

// Whether the pair of entry a sorts before that of entry b: by kind, then vertices.
fn entry_before(l: ContactLayout, a: u32, b: u32) -> bool {
    let pa = l.pairs + PAIR_WORDS * (a >> 2u);
    let pb = l.pairs + PAIR_WORDS * (b >> 2u);
    let ka = contacts[pa + PAIR_KIND];
    let kb = contacts[pb + PAIR_KIND];
    if ka != kb {
        return ka < kb;
    }
    for (var i = 0u; i < 4u; i++) {
        let va = contacts[pa + i];
        let vb = contacts[pb + i];
        if va != vb {
            return va < vb;
        }
    }
    return false;
}

// Vertices of a point–triangle pair's triangle that carry its closest point (nonzero weight),
// and how many: one for a corner, two for an edge, three for the face.
struct ClosestFeature {
    v: vec3<u32>,
    n: u32,
}

fn closest_feature(l: ContactLayout, k: u32) -> ClosestFeature {
    let b = l.pairs + PAIR_WORDS * k;
    var f = ClosestFeature(vec3<u32>(0xffffffffu), 0u);
    for (var i = 1u; i < 4u; i++) {
        if bitcast<f32>(contacts[b + PAIR_WEIGHTS + i]) != 0.0 {
            f.v[f.n] = contacts[b + i];
            f.n += 1u;
        }
    }
    return f;
}

// Whether the triangle of pair k holds every vertex of feature f.
fn holds(l: ContactLayout, k: u32, f: ClosestFeature) -> bool {
    let b = l.pairs + PAIR_WORDS * k;
    for (var i = 0u; i < f.n; i++) {
        let x = f.v[i];
        if x != contacts[b + 1u] && x != contacts[b + 2u] && x != contacts[b + 3u] {
            return false;
        }
    }
    return true;
}

// The vertex's own point–triangle pairs are its row's entries in slot 0 of that kind.
fn own_point_triangle(l: ContactLayout, entry: u32) -> bool {
    return (entry & 3u) == 0u && contacts[l.pairs + PAIR_WORDS * (entry >> 2u) + PAIR_KIND] == PAIR_POINT_TRIANGLE;
}

// Pair i (at row position a) gives way when another of the vertex's pairs holds its closest
// feature, unless that pair comes later and its own closest feature is held by pair i.
fn gives_way(l: ContactLayout, first: u32, last: u32, a: u32) -> bool {
    let i = contacts[l.entries + a] >> 2u;
    let fi = closest_feature(l, i);
    if fi.n == 3u {
        return false;
    }
    for (var b = first; b < last; b++) {
        let e = contacts[l.entries + b];
        if b == a || !own_point_triangle(l, e) {
            continue;
        }
        let j = e >> 2u;
        if holds(l, j, fi) && !(b > a && holds(l, i, closest_feature(l, j))) {
            return true;
        }
    }
    return false;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let l = params.contact;
    let i = id.x;
    if i >= params.count {
        return;
    }
    let first = contacts[l.offsets + i];
    let last = contacts[l.offsets + i + 1u];
    // Insertion sort of the row (a handful of entries).
    for (var a = first + 1u; a < last; a++) {
        let e = contacts[l.entries + a];
        var b = a;
        while b > first && entry_before(l, e, contacts[l.entries + b - 1u]) {
            contacts[l.entries + b] = contacts[l.entries + b - 1u];
            b -= 1u;
        }
        contacts[l.entries + b] = e;
    }
    // The closest-feature rule over the vertex's own point–triangle pairs.
    var kept = 0u;
    var nearest = 0xffffffffu;
    var nearest_distance = 0.0;
    for (var a = first; a < last; a++) {
        let e = contacts[l.entries + a];
        if !own_point_triangle(l, e) {
            continue;
        }
        let d = bitcast<f32>(contacts[l.pairs + PAIR_WORDS * (e >> 2u) + PAIR_DISTANCE]);
        if nearest == 0xffffffffu || d < nearest_distance {
            nearest = a;
            nearest_distance = d;
        }
        if !gives_way(l, first, last, a) {
            kept += 1u;
        }
    }
    for (var a = first; a < last; a++) {
        let e = contacts[l.entries + a];
        if own_point_triangle(l, e) && !(kept == 0u && a == nearest) && gives_way(l, first, last, a) {
            // Bounds only: no energy, no friction.
            let b = l.pairs + PAIR_WORDS * (e >> 2u);
            contacts[b + PAIR_STIFFNESS] = 0u;
            contacts[b + PAIR_FRICTION_FORCE] = 0u;
        }
    }
    // Measured from ξ, so that a gap d ≥ ξ ends above (1 − 2γ_p) d + 2γ_p ξ ≥ ξ.
    let d = bitcast<f32>(contacts[l.dmin + i]);
    let bound = BOUND_FRACTION * max(d - params.min_separation, 0.0);
    let c = l.clamp + 4u * i;
    let x = positions[i].xyz;
    contacts[c] = bitcast<u32>(x.x);
    contacts[c + 1u] = bitcast<u32>(x.y);
    contacts[c + 2u] = bitcast<u32>(x.z);
    contacts[c + 3u] = bitcast<u32>(bound);
    if i == 0u {
        atomicStore(&control[CONTROL_BOUNDS_VALID], 1u);
    }
}
