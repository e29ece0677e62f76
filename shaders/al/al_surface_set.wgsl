// The augmented-Lagrangian step's surface pairs joining its active set on the GPU
// (src/solver/al/constraints.rs ActiveSet::add for the pairs al_surface found), and the vertex →
// pair adjacency al_pcg and al_search gather through, rebuilt after. The surface pairs live in
// `slots` pair records after the vertex–obstacle table; a slot whose kind is PAIR_ABSENT is
// free (al_pairs' prune frees them). Two phases:
//   args   one invocation, every outer iteration: the dispatch arguments of the surface
//          phases (bvh_refit's and al_surface's), their workgroups while al_outer's step runs
//          and zero once it has ended (its one-workgroup arguments), so an ended or unopened
//          step costs no surface work
//   merge  one workgroup (dispatched with al_outer's one-workgroup arguments):
//          1. a candidate already in the set is dropped (the adjacency row of its first
//             vertex lists every pair that holds it);
//          2. the others, ranked by their first vertex, then by key (kind, vertices), take the
//             free slots in slot order, so the set does not depend on the order the candidates
//             were appended in (unless more were found than the list holds: which ones it kept
//             then depends on that order; al_surface counts the rest);
//             each is measured at the safe iterate with λ = 0, γ = 1 and the two bodies'
//             friction averaged, as ActiveSet::add does; candidates beyond the free slots are
//             counted and left out (the step stays intersection-free: al_surface's times
//             still bound α; the pair is only not a constraint)
//          3. the adjacency: each vertex's row holds its vertex–obstacle slots, then its surface
//             pairs in slot order (entries `pair << 2 | place`), so gathers sum in a fixed
//             order
//          4. the candidates are consumed.
// Host wrapper: src/gpu/al/al_surface_set.rs; prepended: lib/step.wgsl,
// lib/distance.wgsl, lib/mat3.wgsl, lib/friction.wgsl, lib/al.wgsl, lib/al_candidates.wgsl.

const PHASE_ARGS: u32 = 0u;
const PHASE_MERGE: u32 = 1u;

// A candidate's rank word when it is in the set already.
const IN_SET: u32 = 0xffffffffu;
// al_outer's one-workgroup dispatch arguments (its control's word 3).
const OUTER_ONE_ARGS: u32 = 3u;
const WG: u32 = 64u;

struct Params {
    phase: u32,
    vertices: u32,
    // Vertex–obstacle slots per vertex, and the surface slots after the table.
    obstacles: u32,
    slots: u32,
    // Room for candidates; where their in-set marks (then ranks), the free-slot map (then the
    // buckets by first vertex) and the per-vertex cursors are in `candidates`.
    capacity: u32,
    ranks: u32,
    free: u32,
    cursors: u32,
    // First words of the pair records, the adjacency's offsets and entries in `element`.
    pairs: u32,
    offsets: u32,
    entries: u32,
    // Where the body records are in `records`, and vertex_body in `index`.
    bodies: u32,
    vertex_body: u32,
    // How many of `groups` the args phase writes.
    dispatches: u32,
    _pad0: u32,
    _pad1: u32,
    // Workgroups of each gated surface dispatch while the step runs.
    groups: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> safe: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> element: array<u32>;
@group(0) @binding(3) var<storage, read_write> candidates: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> index: array<u32>;
@group(0) @binding(6) var<storage, read> outer: array<u32>;
@group(0) @binding(7) var<storage, read_write> args: array<u32>;

var<workgroup> scan: array<u32, WG>;
var<workgroup> running: u32;
var<workgroup> shared_count: u32;

// Starts a scan over any count in chunks of WG ([running_scan]).
fn start_running(lid: u32) {
    if lid == 0u {
        running = 0u;
    }
    workgroupBarrier();
}

// The exclusive prefix sum of `value` over the workgroup, continued from the chunks scanned
// since start_running (`running`, which this chunk's total then advances).
fn running_scan(lid: u32, value: u32) -> u32 {
    scan[lid] = value;
    workgroupBarrier();
    for (var o = 1u; o < WG; o <<= 1u) {
        var add = 0u;
        if lid >= o {
            add = scan[lid - o];
        }
        workgroupBarrier();
        scan[lid] += add;
        workgroupBarrier();
    }
    let at = running + scan[lid] - value;
    workgroupBarrier();
    if lid == WG - 1u {
        running += scan[lid];
    }
    workgroupBarrier();
    return at;
}

// Lexicographic order on (kind, vertices).
fn key_less(a: Key, b: Key) -> bool {
    if a.kind != b.kind {
        return a.kind < b.kind;
    }
    for (var j = 0u; j < 4u; j++) {
        if a.v[j] != b.v[j] {
            return a.v[j] < b.v[j];
        }
    }
    return false;
}

fn in_set(k: Key) -> bool {
    let v = k.v[0];
    let end = element[params.offsets + v + 1u];
    for (var e = element[params.offsets + v]; e < end; e++) {
        let base = params.pairs + (element[params.entries + e] >> 2u) * PAIR_WORDS;
        if element[base + 40u] == k.kind && element[base] == v && element[base + 1u] == k.v[1]
            && element[base + 2u] == k.v[2] && element[base + 3u] == k.v[3] {
            return true;
        }
    }
    return false;
}

fn put(i: u32, v: f32) {
    element[i] = bitcast<u32>(v);
}

fn put3(i: u32, v: vec3<f32>) {
    put(i, v.x);
    put(i + 1u, v.y);
    put(i + 2u, v.z);
}

fn body_friction(v: u32) -> f32 {
    return records[params.bodies + 2u * index[params.vertex_body + v]].z;
}

// Pair record `slot` (of the whole table) becomes k, measured at the safe iterate.
fn write_pair(slot: u32, k: Key) {
    let base = params.pairs + slot * PAIR_WORDS;
    var x: array<vec3<f32>, 4>;
    for (var j = 0u; j < 4u; j++) {
        x[j] = safe[k.v[j]].xyz;
    }
    let c = closest_pair(k.kind, x);
    for (var i = 0u; i < PAIR_WORDS; i++) {
        element[base + i] = 0u;
    }
    for (var j = 0u; j < 4u; j++) {
        element[base + j] = k.v[j];
        put3(base + 4u + 3u * j, c.normal * c.weights[j]);
        put3(base + 16u + 3u * j, x[j]);
        put(base + 28u + j, c.weights[j]);
    }
    put3(base + 32u, c.normal);
    put(base + 35u, c.distance);
    put(base + 37u, 1.0);
    put(base + 38u, 0.5 * (body_friction(k.v[0]) + body_friction(k.v[3])));
    element[base + 40u] = k.kind;
}

fn surface_kind(s: u32) -> u32 {
    return element[params.pairs + (params.vertices * params.obstacles + s) * PAIR_WORDS + 40u];
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32) {
    if params.phase == PHASE_ARGS {
        if lid == 0u {
            let on = outer[OUTER_ONE_ARGS] != 0u;
            for (var k = 0u; k < params.dispatches; k++) {
                args[3u * k] = select(0u, params.groups[k / 4u][k % 4u], on);
                args[3u * k + 1u] = 1u;
                args[3u * k + 2u] = 1u;
            }
        }
        return;
    }
    let table = params.vertices * params.obstacles;
    if lid == 0u {
        shared_count = min(atomicLoad(&candidates[C_COUNT]), params.capacity);
    }
    let count = workgroupUniformLoad(&shared_count);

    // 1. Candidates already in the set.
    for (var i = lid; i < count; i += WG) {
        atomicStore(&candidates[params.ranks + i], select(0u, IN_SET, in_set(candidate(i))));
    }
    storageBarrier();
    // 2. The new ones' ranks, so the set does not depend on the order the candidates were
    //    appended in (it varies from run to run): by first vertex (a counting sort over the
    //    vertices: each vertex's bucket starts after those of the vertices before it), then by
    //    key among the few with the same first vertex. The buckets go after the free-slot map;
    //    the ranks replace the candidates' in-set marks.
    let n = params.vertices;
    let buckets = params.free + params.slots;
    for (var v = lid; v < n; v += WG) {
        atomicStore(&candidates[params.cursors + v], 0u);
    }
    storageBarrier();
    for (var i = lid; i < count; i += WG) {
        if atomicLoad(&candidates[params.ranks + i]) != IN_SET {
            atomicAdd(&candidates[params.cursors + candidate(i).v[0]], 1u);
        }
    }
    storageBarrier();
    start_running(lid);
    for (var base = 0u; base < n; base += WG) {
        let v = base + lid;
        var size = 0u;
        if v < n {
            size = atomicLoad(&candidates[params.cursors + v]);
        }
        let at = running_scan(lid, size);
        if v < n {
            atomicStore(&candidates[params.cursors + v], at);
        }
    }
    storageBarrier();
    for (var i = lid; i < count; i += WG) {
        if atomicLoad(&candidates[params.ranks + i]) != IN_SET {
            let at = atomicAdd(&candidates[params.cursors + candidate(i).v[0]], 1u);
            atomicStore(&candidates[buckets + at], i);
        }
    }
    storageBarrier();
    // Each cursor now ends its bucket; the bucket before it holds smaller first vertices.
    for (var i = lid; i < count; i += WG) {
        if atomicLoad(&candidates[params.ranks + i]) == IN_SET {
            continue;
        }
        let k = candidate(i);
        var j = atomicLoad(&candidates[params.cursors + k.v[0]]);
        var rank = 0u;
        loop {
            if j == 0u {
                break;
            }
            let other = candidate(atomicLoad(&candidates[buckets + j - 1u]));
            if other.v[0] != k.v[0] {
                break;
            }
            rank += u32(key_less(other, k));
            j--;
        }
        atomicStore(&candidates[params.ranks + i], j + rank);
    }
    storageBarrier();
    // The free slots in slot order.
    start_running(lid);
    for (var base = 0u; base < params.slots; base += WG) {
        let s = base + lid;
        let free = u32(s < params.slots && surface_kind(s) == PAIR_ABSENT);
        let at = running_scan(lid, free);
        if free == 1u {
            atomicStore(&candidates[params.free + at], s);
        }
    }
    // The map is read by other invocations than wrote it.
    storageBarrier();
    let free_slots = workgroupUniformLoad(&running);
    for (var i = lid; i < count; i += WG) {
        let rank = atomicLoad(&candidates[params.ranks + i]);
        if rank == IN_SET {
            continue;
        }
        if rank < free_slots {
            write_pair(table + atomicLoad(&candidates[params.free + rank]), candidate(i));
        } else {
            atomicAdd(&candidates[C_SLOTS_DROPPED], 1u);
        }
    }
    storageBarrier();

    // 3. The adjacency: surface pairs per vertex,
    for (var v = lid; v < n; v += WG) {
        atomicStore(&candidates[params.cursors + v], 0u);
    }
    storageBarrier();
    for (var s = lid; s < params.slots; s += WG) {
        let base = params.pairs + (table + s) * PAIR_WORDS;
        if element[base + 40u] == PAIR_ABSENT {
            continue;
        }
        for (var j = 0u; j < 4u; j++) {
            let v = element[base + j];
            if v != NO_VERTEX {
                atomicAdd(&candidates[params.cursors + v], 1u);
            }
        }
    }
    storageBarrier();
    // the rows' offsets (each row's obstacle slots first),
    start_running(lid);
    for (var base = 0u; base < n; base += WG) {
        let v = base + lid;
        var size = 0u;
        if v < n {
            size = params.obstacles + atomicLoad(&candidates[params.cursors + v]);
        }
        let at = running_scan(lid, size);
        if v < n {
            element[params.offsets + v] = at;
            for (var k = 0u; k < params.obstacles; k++) {
                element[params.entries + at + k] = (v * params.obstacles + k) << 2u;
            }
            atomicStore(&candidates[params.cursors + v], at + params.obstacles);
        }
    }
    if lid == 0u {
        element[params.offsets + n] = running;
    }
    storageBarrier();
    // the surface entries,
    for (var s = lid; s < params.slots; s += WG) {
        let base = params.pairs + (table + s) * PAIR_WORDS;
        if element[base + 40u] == PAIR_ABSENT {
            continue;
        }
        for (var j = 0u; j < 4u; j++) {
            let v = element[base + j];
            if v != NO_VERTEX {
                let at = atomicAdd(&candidates[params.cursors + v], 1u);
                element[params.entries + at] = ((table + s) << 2u) | j;
            }
        }
    }
    storageBarrier();
    // and each row's surface part in slot order (rows are short: insertion sort).
    for (var v = lid; v < n; v += WG) {
        let lo = element[params.offsets + v] + params.obstacles;
        let hi = element[params.offsets + v + 1u];
        for (var i = lo + 1u; i < hi; i++) {
            let e = element[params.entries + i];
            var j = i;
            while j > lo && element[params.entries + j - 1u] > e {
                element[params.entries + j] = element[params.entries + j - 1u];
                j--;
            }
            element[params.entries + j] = e;
        }
    }
    // 4. The candidates are consumed.
    if lid == 0u {
        atomicStore(&candidates[C_COUNT], 0u);
    }
}
