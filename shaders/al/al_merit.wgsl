// The augmented-Lagrangian step's iterate of lowest merit (src/solver/al/mod.rs al_step): the
// merit of a safe iterate is its incremental potential plus the price of its offset violations
// (constraints.rs ActiveSet::violation_price: twice each pressed pair's multiplier times its
// shortfall from δ, the sum capped), and the step answers with the lowest seen, the start
// included, when the last is not it. The potentials are compared term by term as differences
// between the new iterate x and the best so far b (inertia in closed form), not as two f32
// totals. Every pair in the set is priced, vertex–obstacle and surface pairs alike. Where a
// kinematic vertex moves within the step (al_outer's pins phase) every iterate counts as the
// lowest: the iterates carry the pins only part of the way, so potentials do not compare.
//   start    per vertex: b = x (the start); the last iterate is the lowest
//   compare  per item (vertices, tets, triangles, hinges, pair slots): ΔE and both prices
//   reduce   one workgroup: is x the lowest? Then the copy runs; is it within REWIND_SHARE of
//            the cap above the best? Then the final restore does not
//   copy     per vertex: b = x
//   restore  per vertex, once after the outer iterations: x = b when the last does not stand
// Host wrapper: src/gpu/al/al_merit.rs; prepended: lib/step.wgsl, lib/obstacles.wgsl,
// lib/elements.wgsl, lib/element_energy.wgsl, lib/distance.wgsl, lib/mat3.wgsl, lib/friction.wgsl,
// lib/al.wgsl.

const PHASE_START: u32 = 0u;
const PHASE_COMPARE: u32 = 1u;
const PHASE_REDUCE: u32 = 2u;
const PHASE_COPY: u32 = 3u;
const PHASE_RESTORE: u32 = 4u;

// src/solver/al/mod.rs REWIND_SHARE.
const REWIND_SHARE: f32 = 0.01;

// Words of `control`: the copy's and the restore's dispatch arguments, whether the last
// iterate stands (the lowest, or within REWIND_SHARE of the price cap above it).
const C_COPY_ARGS: u32 = 0u;
const C_RESTORE_ARGS: u32 = 3u;
const C_LAST_IS_LOWEST: u32 = 6u;

struct Params {
    phase: u32,
    vertices: u32,
    vertex_groups: u32,
    tets: u32,
    tris: u32,
    hinges: u32,
    pairs: u32,
    item_groups: u32,
    tri_records: u32,
    hinge_records: u32,
    pair_records: u32,
    // The price's cap [J] (AlSettings::violation_price_cap).
    price_cap: f32,
    obstacles: ObstacleSet,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> safe: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> best: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(4) var<storage, read> tets: array<Tet>;
@group(0) @binding(5) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> element: array<u32>;
@group(0) @binding(7) var<storage, read_write> scalars: array<f32>;
@group(0) @binding(8) var<storage, read_write> control: array<u32>;

var<workgroup> partial: array<vec3<f32>, 64>;

// Vertex v of the new iterate (which = 0) or of the best (which = 1).
fn at(v: u32, which: u32) -> vec3<f32> {
    if which == 0u {
        return safe[v].xyz;
    }
    return best[v].xyz;
}

// Element e's energy at the new iterate (which = 0) or the best.
fn element_energy(e: u32, which: u32) -> f32 {
    let l = ElementTables(params.tets, params.tris, params.tri_records, params.hinge_records);
    let v = element_vertices(l, e);
    return element_energy_at(l, e, array<vec3<f32>, 4>(at(v.x, which), at(v.y, which), at(v.z, which), at(v.w, which)));
}

// A pressed pair's price at the new iterate (which = 0) or the best.
fn price(i: u32, which: u32) -> f32 {
    let p = load_al_pair(params.pair_records + i * PAIR_WORDS);
    if p.kind == PAIR_ABSENT || !(p.lambda > 0.0) {
        return 0.0;
    }
    var d = 0.0;
    if p.kind == PAIR_OBSTACLE {
        d = obstacle_distance(params.obstacles.items[p.obstacle], at(p.vertices[0], which)).d;
    } else {
        let v = p.vertices;
        d = closest_pair(p.kind, array<vec3<f32>, 4>(at(v[0], which), at(v[1], which), at(v[2], which),
                                                      at(v[3], which))).distance;
    }
    return 2.0 * p.lambda * max(scalars[S_DELTA] - d, 0.0);
}

// Item i's (ΔE, price at x, price at b).
fn compare(i: u32) -> vec3<f32> {
    var k = i;
    if k < params.vertices {
        // ½ m/w (‖x − y‖² − ‖b − y‖²) = ½ m/w (x − b)·(x + b − 2y).
        let s = steps[k];
        let y = s.start.xyz + s.inertia.xyz;
        let x = safe[k].xyz;
        let b = best[k].xyz;
        return vec3<f32>(0.5 * s.inertia.w * dot(x - b, x + b - 2.0 * y), 0.0, 0.0);
    }
    k -= params.vertices;
    if k < params.tets + params.tris + params.hinges {
        return vec3<f32>(element_energy(k, 0u) - element_energy(k, 1u), 0.0, 0.0);
    }
    k -= params.tets + params.tris + params.hinges;
    return vec3<f32>(0.0, price(k, 0u), price(k, 1u));
}

fn set_args(slot: u32, groups: u32) {
    control[slot] = groups;
    control[slot + 1u] = 1u;
    control[slot + 2u] = 1u;
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    let i = wg.x * 64u + lid;
    if params.phase == PHASE_START {
        if i < params.vertices {
            best[i] = safe[i];
        }
        if i == 0u {
            control[C_LAST_IS_LOWEST] = 1u;
            set_args(C_COPY_ARGS, 0u);
            set_args(C_RESTORE_ARGS, 0u);
        }
        return;
    }
    if params.phase == PHASE_COPY {
        if i < params.vertices {
            best[i] = safe[i];
        }
        return;
    }
    if params.phase == PHASE_RESTORE {
        if i < params.vertices {
            safe[i] = best[i];
        }
        return;
    }
    var s = vec3<f32>(0.0);
    if params.phase == PHASE_REDUCE {
        for (var w = lid; w < params.item_groups; w += 64u) {
            let slot = S_PARTIALS + 3u * w;
            s += vec3<f32>(scalars[slot], scalars[slot + 1u], scalars[slot + 2u]);
        }
    } else if i < params.vertices + params.tets + params.tris + params.hinges + params.pairs {
        s = compare(i);
    }
    partial[lid] = s;
    workgroupBarrier();
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        if lid < stride {
            partial[lid] += partial[lid + stride];
        }
        workgroupBarrier();
    }
    if lid != 0u {
        return;
    }
    let t = partial[0];
    if params.phase == PHASE_COMPARE {
        let slot = S_PARTIALS + 3u * wg.x;
        scalars[slot] = t.x;
        scalars[slot + 1u] = t.y;
        scalars[slot + 2u] = t.z;
        return;
    }
    let cap = params.price_cap;
    // Where a pin moves within the step the iterates do not compare: the last one stands.
    let pins = scalars[S_PINS_MOVE] != 0.0;
    let lowest = pins || t.x + min(t.y, cap) <= min(t.z, cap);
    // Within REWIND_SHARE of the cap above the best, the last iterate stands (al_step): merits
    // that close differ by the price's rounding, not by energy from nowhere.
    let stands = pins || t.x + min(t.y, cap) <= min(t.z, cap) + REWIND_SHARE * cap;
    control[C_LAST_IS_LOWEST] = select(0u, 1u, stands);
    set_args(C_COPY_ARGS, select(0u, params.vertex_groups, lowest));
    set_args(C_RESTORE_ARGS, select(params.vertex_groups, 0u, stands));
}
