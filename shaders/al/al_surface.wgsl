// The surface pairs (body–body and self contact) of the augmented-Lagrangian step's step size
// on the GPU (src/solver/al/step_size.rs max_step, its surface half; al_step_size does the
// obstacles and the tets): along the straight paths from the safe iterate x to the targets x̂,
// every vertex–triangle and edge–edge pair whose swept boxes overlap (the trees refitted by
// bvh_refit's REFIT_BETWEEN) and that has a moving vertex is marched by additive CCD with
// ξ = min(MIN_SEPARATION, half the pair's distance at x), as max_step does. A hit lowers α and
// the earliest hit of each of its four vertices (`times`, shared with al_step_size: the
// earliest of all hits, obstacles included, decides which pairs join). Phases, each a
// grid-stride loop over its primitives (dispatched with al_surface_set's arguments):
//   points  per surface vertex: its point–triangle pairs' times of impact
//   edges   per surface edge: its edge–edge pairs with edges of larger index
//   add_points, add_edges  the same pairs again, after every hit is in: a pair whose time is
//           the earliest of one of its vertices (constraints.rs earliest_hits) is appended to
//           `candidates` for al_surface_set to merge into the active set
// Host wrapper: src/gpu/al/al_surface.rs; prepended: lib/step.wgsl, lib/bvh.wgsl,
// lib/bvh_walk.wgsl, lib/surface.wgsl, lib/distance.wgsl, lib/al_candidates.wgsl.

const PHASE_POINTS: u32 = 0u;
const PHASE_EDGES: u32 = 1u;
const PHASE_ADD_POINTS: u32 = 2u;
const PHASE_ADD_EDGES: u32 = 3u;

// al_step_size's `times`: α's bits, then each vertex's earliest hit.
const T_ALPHA: u32 = 0u;
const T_FIRST: u32 = 1u;
// VERTEX_MOVES of al_pcg's per-vertex bits.
const MOVES: u32 = 2u;

struct Params {
    surface: Surface,
    tris: Tree,
    edges: Tree,
    phase: u32,
    // Invocations of a dispatch (the grid-stride loops' stride) and the candidates' room.
    stride: u32,
    capacity: u32,
    // step_size.rs MIN_SEPARATION [m], and the boxes' growth [m] (as SweptPairs::visit).
    min_separation: f32,
    inflate: f32,
    // The CCD's safety share and iteration cap (CcdParams' defaults).
    safety: f32,
    max_iterations: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> safe: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> targets: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> index: array<u32>;
@group(0) @binding(4) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> bvh: array<u32>;
@group(0) @binding(6) var<storage, read> solved: array<u32>;
@group(0) @binding(7) var<storage, read_write> times: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read_write> candidates: array<atomic<u32>>;

fn test_pair(kind: u32, v: vec4<u32>, add: bool) {
    let moves = solved[v.x] | solved[v.y] | solved[v.z] | solved[v.w];
    if (moves & MOVES) == 0u || !pair_allowed(params.surface, v) {
        return;
    }
    let x = array<vec3<f32>, 4>(safe[v.x].xyz, safe[v.y].xyz, safe[v.z].xyz, safe[v.w].xyz);
    let dx = array<vec3<f32>, 4>(targets[v.x].xyz - x[0], targets[v.y].xyz - x[1], targets[v.z].xyz - x[2],
                                 targets[v.w].xyz - x[3]);
    // A pair the safe iterate holds closer than ξ may not come closer, but may separate.
    let xi = min(params.min_separation, 0.5 * closest_pair(kind, x).distance);
    let toi = pair_toi(kind, x, dx, xi, params.safety, params.max_iterations, 1.0);
    if toi == NO_TOI {
        return;
    }
    let bits = time_bits(toi);
    let vs = array<u32, 4>(v.x, v.y, v.z, v.w);
    if !add {
        atomicMin(&times[T_ALPHA], bits);
        for (var k = 0u; k < 4u; k++) {
            atomicMin(&times[T_FIRST + vs[k]], bits);
        }
        return;
    }
    var earliest = false;
    for (var k = 0u; k < 4u; k++) {
        earliest = earliest || atomicLoad(&times[T_FIRST + vs[k]]) == bits;
    }
    if !earliest {
        return;
    }
    let at = atomicAdd(&candidates[C_COUNT], 1u);
    if at >= params.capacity {
        atomicAdd(&candidates[C_DROPPED], 1u);
        return;
    }
    let base = C_FIRST + at * CANDIDATE_WORDS;
    atomicStore(&candidates[base], kind);
    for (var k = 0u; k < 4u; k++) {
        atomicStore(&candidates[base + 1u + k], vs[k]);
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let s = params.surface;
    let r = params.inflate;
    let add = params.phase >= PHASE_ADD_POINTS;
    if params.phase == PHASE_POINTS || params.phase == PHASE_ADD_POINTS {
        for (var i = id.x; i < s.surface_vertex_count; i += params.stride) {
            let v = index[s.surface_vertices + i];
            let a = safe[v].xyz;
            let b = targets[v].xyz;
            var walk = bvh_walk(params.tris, min(a, b) - r, max(a, b) + r);
            loop {
                let t = bvh_next(params.tris, &walk);
                if t == BVH_NONE {
                    break;
                }
                test_pair(PAIR_POINT_TRIANGLE, vec4<u32>(v, surface_triangle(s, t)), add);
            }
        }
        return;
    }
    for (var i = id.x; i < s.edge_count; i += params.stride) {
        let e = surface_edge(s, i);
        let lo = min(min(safe[e.x].xyz, targets[e.x].xyz), min(safe[e.y].xyz, targets[e.y].xyz));
        let hi = max(max(safe[e.x].xyz, targets[e.x].xyz), max(safe[e.y].xyz, targets[e.y].xyz));
        var walk = bvh_walk(params.edges, lo - r, hi + r);
        loop {
            let f = bvh_next(params.edges, &walk);
            if f == BVH_NONE {
                break;
            }
            if f > i {
                test_pair(PAIR_EDGE_EDGE, vec4<u32>(e, surface_edge(s, f)), add);
            }
        }
    }
}
