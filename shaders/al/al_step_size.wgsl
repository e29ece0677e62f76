// How far the augmented-Lagrangian step's safe iterate may follow its targets, x → x + α (x̂ − x)
// (src/solver/al/step_size.rs max_step, without surface pairs yet): the least of each solved
// vertex's time of impact with each obstacle (swept.rs obstacle_toi: a conservative march on
// the 1-Lipschitz signed distance that keeps a share of the gap, the exact entry for a vertex
// already on the surface) and each tet's first time at the volume floor j_min (tet_limit: the
// volume ratio is a cubic in the step, bisected between the roots of its derivative). Times
// meet by atomicMin on their bits (non-negative f32 order as their bits do), so the order the
// invocations run in does not matter; each vertex also keeps its earliest obstacle hit, which
// decides the pairs that join the active set ([ALPF] Alg. 3's filter).
//   reset      per vertex: no hit yet (and α = 1)
//   obstacles  per vertex
//   tets       per tet
//   add        per vertex: each obstacle hit that is its vertex's earliest joins the active set
//              (constraints.rs earliest_hits, ActiveSet::add) in the vertex–obstacle table's
//              slot (vertex, obstacle), unless a pair is there: measured at the safe iterate,
//              λ = 0, γ = 1, the friction of the body and the obstacle averaged
// Host wrapper: src/gpu/al/al_step_size.rs; prepended: lib/step.wgsl, lib/obstacles.wgsl.

const PHASE_RESET: u32 = 0u;
const PHASE_OBSTACLES: u32 = 1u;
const PHASE_TETS: u32 = 2u;
const PHASE_ADD: u32 = 3u;

// lib/al.wgsl's pair records (this kernel writes whole records, it reads none).
const PAIR_WORDS: u32 = 42u;
const PAIR_OBSTACLE: u32 = 2u;
const PAIR_ABSENT: u32 = 3u;
const NO_VERTEX: u32 = 0xffffffffu;

// Words of `times`: α's bits, then each vertex's earliest obstacle hit (bits; NO_HIT for none).
const T_ALPHA: u32 = 0u;
const T_FIRST: u32 = 1u;
const NO_HIT: u32 = 0x7f7fffffu;

struct Params {
    phase: u32,
    vertices: u32,
    tets: u32,
    // Smallest volume ratio any tet may reach; ξ [m], the separation a hit keeps; the share of
    // the starting gap a time of impact leaves.
    j_min: f32,
    min_separation: f32,
    safety: f32,
    // First word of the vertex–obstacle table in `element`; where the body records start in
    // `records` and vertex_body in `index`.
    table: u32,
    bodies: u32,
    vertex_body: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    obstacles: ObstacleSet,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> safe: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> targets: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> tets: array<Tet>;
// VERTEX_SOLVED (lib/step.wgsl) for a vertex with unknowns.
@group(0) @binding(4) var<storage, read> solved: array<u32>;
@group(0) @binding(5) var<storage, read_write> times: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> element: array<u32>;
// src/gpu/pack.rs pack_records (body records: friction) and pack_index (vertex_body).
@group(0) @binding(7) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read> index: array<u32>;

fn put(i: u32, v: f32) {
    element[i] = bitcast<u32>(v);
}

fn put3(i: u32, v: vec3<f32>) {
    put(i, v.x);
    put(i + 1u, v.y);
    put(i + 2u, v.z);
}

// Writes vertex v's new pair with obstacle k (constraints.rs ActiveSet::add).
fn add_pair(v: u32, k: u32) {
    let base = params.table + (v * params.obstacles.count + k) * PAIR_WORDS;
    if element[base + 40u] != PAIR_ABSENT {
        return;
    }
    let o = params.obstacles.items[k];
    let x = safe[v].xyz;
    let sd = obstacle_distance(o, x);
    let body = records[params.bodies + 2u * index[params.vertex_body + v]];
    for (var i = 0u; i < PAIR_WORDS; i++) {
        element[base + i] = 0u;
    }
    element[base] = v;
    element[base + 1u] = NO_VERTEX;
    element[base + 2u] = NO_VERTEX;
    element[base + 3u] = NO_VERTEX;
    put3(base + 4u, sd.n);
    put3(base + 16u, x);
    put(base + 28u, 1.0);
    put3(base + 32u, sd.n);
    put(base + 35u, sd.d);
    put(base + 37u, 1.0);
    put(base + 38u, 0.5 * (body.z + o.friction));
    element[base + 40u] = PAIR_OBSTACLE;
    element[base + 41u] = k;
}

// swept.rs obstacle_toi; a negative result is no hit.
fn obstacle_toi(o: Obstacle, a: vec3<f32>, b: vec3<f32>) -> f32 {
    let xi = params.min_separation;
    let d0 = obstacle_distance(o, a).d;
    if !(d0 > 2.0 * xi) {
        if !(d0 >= 0.0) {
            // Already inside: it may not go deeper.
            return select(-1.0, 0.0, !(obstacle_distance(o, b).d >= d0));
        }
        let t = obstacle_entry(o, a, b);
        if t == NO_ENTRY {
            // A start on the face can read as inside to the entry test's f32 arithmetic, which
            // then finds no entry: a path that ends inside entered, at once for all we know.
            return select(-1.0, 0.0, obstacle_distance(o, b).d < 0.0);
        }
        return min(0.9 * t, 1.0);
    }
    let gap0 = d0 - xi;
    let len = length(b - a);
    if len == 0.0 {
        return -1.0;
    }
    var t = 0.0;
    var advance = (1.0 - params.safety) * gap0 / len;
    for (var k = 0u; k < 64u; k++) {
        let ahead = t + advance;
        if ahead > 1.0 {
            return select(-1.0, t, obstacle_distance(o, b).d - xi < params.safety * gap0);
        }
        let gap = obstacle_distance(o, a + (b - a) * ahead).d - xi;
        if !(gap > 0.0) {
            return t;
        }
        if gap < params.safety * gap0 {
            // A path straight at the surface: the first advance is taken (swept.rs obstacle_toi).
            return select(t, ahead, t == 0.0 && gap > 0.5 * params.safety * gap0);
        }
        t = ahead;
        advance = 0.9 * gap / len;
    }
    return t;
}

// The volume ratio along the step as a cubic's coefficients: det(A + s B) det(D_m⁻¹).
fn cofactor3(m: mat3x3<f32>) -> mat3x3<f32> {
    return mat3x3<f32>(cross(m[1], m[2]), cross(m[2], m[0]), cross(m[0], m[1]));
}

fn frobenius(m: mat3x3<f32>, n: mat3x3<f32>) -> f32 {
    return dot(m[0], n[0]) + dot(m[1], n[1]) + dot(m[2], n[2]);
}

fn cubic(c: vec4<f32>, s: f32) -> f32 {
    return c.x + s * (c.y + s * (c.z + s * c.w));
}

// step_size.rs START_KEPT: the share of its volume ratio a tet below the floor keeps.
const START_KEPT: f32 = 0.999;

// step_size.rs tet_limit over [0, 1]: the first s at which the volume ratio falls to j_min (for a tet
// below it, START_KEPT of its start), or 1.
fn tet_limit(e: u32) -> f32 {
    let t = tets[e];
    let a0 = safe[t.vertices.x].xyz;
    let b0 = targets[t.vertices.x].xyz;
    let a = mat3x3<f32>(safe[t.vertices.y].xyz - a0, safe[t.vertices.z].xyz - a0, safe[t.vertices.w].xyz - a0);
    let b = mat3x3<f32>(targets[t.vertices.y].xyz - b0, targets[t.vertices.z].xyz - b0,
                        targets[t.vertices.w].xyz - b0) - a;
    let scale = determinant(t.dm_inv);
    let c = vec4<f32>(determinant(a), frobenius(cofactor3(a), b), frobenius(cofactor3(b), a), determinant(b)) * scale;
    // A tet that starts below the floor (rounding of one held at it) keeps START_KEPT of its
    // ratio in the iteration; one that starts inverted does not limit.
    let j0 = cubic(c, 0.0);
    if !(j0 > 0.0) {
        return 1.0;
    }
    let j_min = select(START_KEPT * j0, params.j_min, j0 > params.j_min);
    // Windows between 0, the derivative's roots in (0, 1), and 1: the ratio is monotone in each.
    var cuts = array<f32, 4>(0.0, 1.0, 1.0, 1.0);
    var count = 1u;
    let qa = 3.0 * c.w;
    let qb = 2.0 * c.z;
    let qc = c.y;
    var r0 = 2.0;
    var r1 = 2.0;
    if abs(qa) > 1e-30 {
        let disc = qb * qb - 4.0 * qa * qc;
        if disc >= 0.0 {
            let q = sqrt(disc);
            r0 = (-qb - q) / (2.0 * qa);
            r1 = (-qb + q) / (2.0 * qa);
            if r0 > r1 {
                let swap = r0;
                r0 = r1;
                r1 = swap;
            }
        }
    } else if abs(qb) > 1e-30 {
        r0 = -qc / qb;
    }
    if r0 > 0.0 && r0 < 1.0 {
        cuts[count] = r0;
        count += 1u;
    }
    if r1 > 0.0 && r1 < 1.0 {
        cuts[count] = r1;
        count += 1u;
    }
    cuts[count] = 1.0;
    for (var w = 0u; w < count; w++) {
        var lo = cuts[w];
        var hi = cuts[w + 1u];
        if cubic(c, hi) > j_min {
            continue;
        }
        for (var k = 0u; k < 40u; k++) {
            let mid = 0.5 * (lo + hi);
            if cubic(c, mid) > j_min {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        return lo;
    }
    return 1.0;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if params.phase == PHASE_RESET {
        if i < params.vertices {
            atomicStore(&times[T_FIRST + i], NO_HIT);
        }
        if i == 0u {
            atomicStore(&times[T_ALPHA], bitcast<u32>(1.0));
        }
        return;
    }
    if params.phase == PHASE_OBSTACLES || params.phase == PHASE_ADD {
        if i >= params.vertices || (solved[i] & VERTEX_SOLVED) == 0u {
            return;
        }
        let a = safe[i].xyz;
        let b = targets[i].xyz;
        let first = atomicLoad(&times[T_FIRST + i]);
        for (var k = 0u; k < params.obstacles.count; k++) {
            let t = obstacle_toi(params.obstacles.items[k], a, b);
            if !(t >= 0.0) {
                continue;
            }
            if params.phase == PHASE_OBSTACLES {
                atomicMin(&times[T_FIRST + i], time_bits(t));
                atomicMin(&times[T_ALPHA], time_bits(t));
            } else if time_bits(t) == first {
                add_pair(i, k);
            }
        }
        return;
    }
    if i < params.tets {
        atomicMin(&times[T_ALPHA], time_bits(tet_limit(i)));
    }
}
