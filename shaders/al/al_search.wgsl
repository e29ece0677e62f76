// The backtracking line search of the augmented-Lagrangian step's Newton iteration
// (src/solver/al/mod.rs solve_subproblem): along the direction d that al_pcg left, the first of
// r = 1, 1/2, 1/4, … (down to 1e-8) whose change of the Lagrangian L (incremental potential
// plus the active pairs' terms) passes Armijo's test ΔL ≤ 1e-4 r ∇L·d is taken, x̂ += r d.
// The change is summed term by term as a difference (inertia in closed form, each element's and
// pair's energy after minus before), not as a difference of two totals, whose f32 rounding
// would swamp a small decrease.
//
// One shader, one phase per dispatch:
//   slope    per vertex: ∇·d and ‖d‖² (al_pcg's gradient and direction)
//   trial    per item (vertices, then tets, triangles, hinges, pairs): its ΔL at the step r
//   commit   per vertex: x̂ += r d
//   reduce   one workgroup: sums the partials of the phase before and decides: the slope (no
//            descent ends the search), then after each trial acceptance or halving. The trial
//            and commit phases read their dispatch arguments from `control`, so trials after
//            acceptance cost nothing and a failed search commits nothing (indirect dispatch).
//   start    one invocation: opens a subproblem's Newton iterations (below)
//   stop     one invocation: closes them after the last recorded one (an iteration cap reached
//            leaves them open).
// And a second entry point, `whole`: one workgroup runs the whole search, slope, trials and
// commit, its invocations striding over the items: one dispatch in place of 2 + 2 × 27 + 1
// (al_pcg's `whole` says why).
// The search also ends the Newton iterations of its subproblem, as solve_subproblem does: a
// full step, no descent, or no step means no further iteration, and the dispatch arguments
// that every phase of an iteration reads (al_elements per kind, al_pcg's setup, this slope)
// go to zero, so the iterations recorded beyond cost no work.
// Host wrapper: src/gpu/al/al_search.rs; prepended: lib/step.wgsl, lib/workgroup_sum.wgsl,
// lib/elements.wgsl, lib/element_energy.wgsl, lib/mat3.wgsl, lib/friction.wgsl, lib/al.wgsl.

const PHASE_SLOPE: u32 = 0u;
const PHASE_TRIAL: u32 = 1u;
const PHASE_COMMIT: u32 = 2u;
const PHASE_REDUCE: u32 = 3u;
const PHASE_START: u32 = 4u;
const PHASE_STOP: u32 = 5u;
// Trials a search takes at most: r = 1, 1/2, … down to 1e-8 (src/gpu/al/al_search.rs
// SEARCH_TRIALS).
const TRIALS: u32 = 27u;

// al_pcg's regions of `vectors`.
const V_DIRECTION: u32 = 0u;
const V_GRADIENT: u32 = 8u;

// Words of `control`: the trial phase's and the commit phase's dispatch arguments, how the
// search stands, and the trials taken.
const C_TRIAL_ARGS: u32 = 0u;
const C_COMMIT_ARGS: u32 = 3u;
const C_STATE: u32 = 6u;
const C_TRIALS: u32 = 7u;
// The Newton iterations' dispatch arguments: al_elements' for tets, triangles and hinges, the
// per-vertex phases', a single workgroup's; whether the iterations go on, and how many were
// taken.
const C_NEWTON_TETS: u32 = 8u;
const C_NEWTON_VERTICES: u32 = 17u;
const C_NEWTON_ONE: u32 = 20u;
const C_NEWTON_STATE: u32 = 23u;
const C_NEWTON_ITERATIONS: u32 = 24u;
const NEWTON_RUNNING: u32 = 0u;
const NEWTON_DONE: u32 = 1u;
const SEARCHING: u32 = 0u;
// A step was taken; a full one (or one below 1e-12 m) also ends the Newton iterations.
const ACCEPTED: u32 = 1u;
const FINAL: u32 = 2u;
// No descent along d, or no step above 1e-8 passed: nothing moves.
const NO_DESCENT: u32 = 3u;
const NO_STEP: u32 = 4u;

struct Params {
    phase: u32,
    // Vertices, and the workgroups of a per-vertex phase.
    vertices: u32,
    vertex_groups: u32,
    // For the reduce phase: the phase whose partials it sums.
    after: u32,
    // Items of the trial phase: vertices, tets, triangles, hinges, pairs (counts), and its
    // workgroups.
    tets: u32,
    tris: u32,
    hinges: u32,
    pairs: u32,
    item_groups: u32,
    // Where the triangles and the hinges start in `records` (in vec4s), and the pair records
    // in `element`.
    tri_records: u32,
    hinge_records: u32,
    pair_records: u32,
    static_slip: f32,
    // Workgroups of al_elements per kind.
    tet_groups: u32,
    tri_groups: u32,
    hinge_groups: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
// The targets x̂.
@group(0) @binding(1) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(3) var<storage, read> tets: array<Tet>;
// src/gpu/pack.rs pack_records (see vbd_color.wgsl).
@group(0) @binding(4) var<storage, read> records: array<vec4<f32>>;
// al_pcg's element records and pairs (only the pairs are read here).
@group(0) @binding(5) var<storage, read> element: array<u32>;
@group(0) @binding(6) var<storage, read> vectors: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> scalars: array<f32>;
@group(0) @binding(8) var<storage, read_write> control: array<u32>;

var<workgroup> state: u32;

fn direction(v: u32) -> vec3<f32> {
    return vectors[V_DIRECTION * params.vertices + v].xyz;
}

// Vertex v at the trial step: x̂ + r d (d is zero on vertices that are not solved).
fn moved(v: u32, r: f32) -> vec3<f32> {
    return positions[v].xyz + direction(v) * r;
}

// Element e's energy with its vertices at the trial step r.
fn element_energy(e: u32, r: f32) -> f32 {
    let l = ElementTables(params.tets, params.tris, params.tri_records, params.hinge_records);
    let v = element_vertices(l, e);
    return element_energy_at(l, e, array<vec3<f32>, 4>(moved(v.x, r), moved(v.y, r), moved(v.z, r), moved(v.w, r)));
}

fn pair_energy(i: u32, r: f32) -> f32 {
    let p = load_al_pair(params.pair_records + i * PAIR_WORDS);
    var x: array<vec3<f32>, 4>;
    var start: array<vec3<f32>, 4>;
    for (var k = 0u; k < 4u; k++) {
        if p.vertices[k] != NO_VERTEX {
            x[k] = moved(p.vertices[k], r);
            start[k] = steps[p.vertices[k]].start.xyz;
        }
    }
    let mu = scalars[S_MU];
    let t = al_pair_term(p, x, start, mu, scalars[S_DELTA], params.static_slip);
    return al_pair_energy(p, t, mu, params.static_slip);
}

// Item i's change of the Lagrangian at step r.
fn trial_change(i: u32, r: f32) -> f32 {
    var k = i;
    if k < params.vertices {
        // ½ m/w (‖x̂ + r d − y‖² − ‖x̂ − y‖²) = m/w r d·(x̂ − y + ½ r d).
        let s = steps[k];
        let d = direction(k);
        return s.inertia.w * r * dot(d, positions[k].xyz - s.start.xyz - s.inertia.xyz + d * (0.5 * r));
    }
    k -= params.vertices;
    if k < params.tets + params.tris + params.hinges {
        return element_energy(k, r) - element_energy(k, 0.0);
    }
    k -= params.tets + params.tris + params.hinges;
    return pair_energy(k, r) - pair_energy(k, 0.0);
}

// Sets every Newton dispatch's workgroups, or zero.
fn newton_args(on: bool) {
    let counts = array<u32, 5>(params.tet_groups, params.tri_groups, params.hinge_groups, params.vertex_groups, 1u);
    for (var k = 0u; k < 5u; k++) {
        control[C_NEWTON_TETS + 3u * k] = select(0u, counts[k], on);
        control[C_NEWTON_TETS + 3u * k + 1u] = 1u;
        control[C_NEWTON_TETS + 3u * k + 2u] = 1u;
    }
    control[C_NEWTON_STATE] = select(NEWTON_DONE, NEWTON_RUNNING, on);
}

// The reduce phase's decision after phase `after`, by one invocation, from the partials' sums
// `s`.
fn decide(after: u32, s: vec2<f32>) {
    if after == PHASE_SLOPE {
        scalars[S_SLOPE] = s.x;
        scalars[S_DIRECTION_NORM] = sqrt(s.y);
        scalars[S_STEP] = 1.0;
        control[C_TRIALS] = 0u;
        control[C_COMMIT_ARGS] = 0u;
        control[C_COMMIT_ARGS + 1u] = 1u;
        control[C_COMMIT_ARGS + 2u] = 1u;
        control[C_TRIAL_ARGS + 1u] = 1u;
        control[C_TRIAL_ARGS + 2u] = 1u;
        if s.x < 0.0 {
            control[C_STATE] = SEARCHING;
            control[C_TRIAL_ARGS] = params.item_groups;
        } else {
            control[C_STATE] = NO_DESCENT;
            control[C_TRIAL_ARGS] = 0u;
            newton_args(false);
        }
        return;
    }
    // After a trial.
    let r = scalars[S_STEP];
    control[C_TRIALS] += 1u;
    scalars[S_DECREASE] = s.x;
    if s.x <= 1e-4 * r * scalars[S_SLOPE] {
        let last = r == 1.0 || r * scalars[S_DIRECTION_NORM] < 1e-12;
        control[C_STATE] = select(ACCEPTED, FINAL, last);
        control[C_TRIAL_ARGS] = 0u;
        control[C_COMMIT_ARGS] = params.vertex_groups;
        control[C_NEWTON_ITERATIONS] += 1u;
        if last {
            newton_args(false);
        }
        return;
    }
    let next = 0.5 * r;
    if next < 1e-8 {
        control[C_STATE] = NO_STEP;
        control[C_TRIAL_ARGS] = 0u;
        newton_args(false);
        return;
    }
    scalars[S_STEP] = next;
}

// The decision after `after` on the workgroup's sum, by invocation 0; returns how the search
// stands, for every invocation.
fn decide_in_workgroup(lid: u32, after: u32, total: vec2<f32>) -> u32 {
    if lid == 0u {
        decide(after, total);
        state = control[C_STATE];
    }
    storageBarrier();
    return workgroupUniformLoad(&state);
}

// The whole search in one workgroup (the `whole` entry point). It reads `control`, so it cannot
// take its dispatch arguments from it: it runs only while the Newton iterations go on.
fn search_whole(lid: u32) {
    if lid == 0u {
        state = select(NO_DESCENT, SEARCHING, control[C_NEWTON_STATE] == NEWTON_RUNNING);
    }
    if workgroupUniformLoad(&state) != SEARCHING {
        return;
    }
    var s = vec2<f32>(0.0);
    for (var v = lid; v < params.vertices; v += 64u) {
        let d = direction(v);
        s += vec2<f32>(dot(vectors[V_GRADIENT * params.vertices + v].xyz, d), dot(d, d));
    }
    var standing = decide_in_workgroup(lid, PHASE_SLOPE, workgroup_sum(lid, s));
    let items = params.vertices + params.tets + params.tris + params.hinges + params.pairs;
    for (var t = 0u; t < TRIALS && standing == SEARCHING; t++) {
        let r = scalars[S_STEP];
        var change = 0.0;
        for (var i = lid; i < items; i += 64u) {
            change += trial_change(i, r);
        }
        standing = decide_in_workgroup(lid, PHASE_TRIAL, workgroup_sum(lid, vec2<f32>(change, 0.0)));
    }
    if standing == ACCEPTED || standing == FINAL {
        let r = scalars[S_STEP];
        for (var v = lid; v < params.vertices; v += 64u) {
            positions[v] = vec4<f32>(moved(v, r), positions[v].w);
        }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    if params.phase == PHASE_STOP {
        if lid == 0u {
            newton_args(false);
        }
        return;
    }
    if params.phase == PHASE_START {
        if lid == 0u {
            newton_args(true);
            control[C_NEWTON_ITERATIONS] = 0u;
            control[C_STATE] = NO_DESCENT;
            control[C_TRIAL_ARGS] = 0u;
            control[C_COMMIT_ARGS] = 0u;
        }
        return;
    }
    var s = vec2<f32>(0.0);
    var groups = params.vertex_groups;
    if params.phase == PHASE_REDUCE {
        // Only the slope starts a search, and only while the Newton iterations go on; a trial's
        // reduce after the search ended decides nothing.
        if lid == 0u {
            state = control[C_STATE];
            if params.after == PHASE_SLOPE {
                state = SEARCHING;
                if control[C_NEWTON_STATE] != NEWTON_RUNNING {
                    // The iterations ended: this one's commit must not repeat the last step.
                    control[C_COMMIT_ARGS] = 0u;
                    state = NO_DESCENT;
                }
            }
        }
        if workgroupUniformLoad(&state) != SEARCHING {
            return;
        }
        if params.after == PHASE_TRIAL {
            groups = params.item_groups;
        }
        for (var w = lid; w < groups; w += 64u) {
            s += vec2<f32>(scalars[S_PARTIALS + 2u * w], scalars[S_PARTIALS + 2u * w + 1u]);
        }
    } else {
        let i = wg.x * 64u + lid;
        if params.phase == PHASE_SLOPE && i < params.vertices {
            let d = direction(i);
            s = vec2<f32>(dot(vectors[V_GRADIENT * params.vertices + i].xyz, d), dot(d, d));
        } else if params.phase == PHASE_TRIAL && i < params.vertices + params.tets + params.tris + params.hinges
            + params.pairs {
            s = vec2<f32>(trial_change(i, scalars[S_STEP]), 0.0);
        } else if params.phase == PHASE_COMMIT && i < params.vertices {
            positions[i] = vec4<f32>(moved(i, scalars[S_STEP]), positions[i].w);
        }
    }
    let total = workgroup_sum(lid, s);
    if lid == 0u {
        if params.phase == PHASE_REDUCE {
            decide(params.after, total);
        } else if params.phase != PHASE_COMMIT {
            scalars[S_PARTIALS + 2u * wg.x] = total.x;
            scalars[S_PARTIALS + 2u * wg.x + 1u] = total.y;
        }
    }
}

// The whole search in one workgroup: its own entry point, so that the per-phase pipeline does not
// carry its loops.
@compute @workgroup_size(64)
fn whole(@builtin(local_invocation_index) lid: u32) {
    search_whole(lid);
}
