// The augmented-Lagrangian step's Newton system solved by block-Jacobi preconditioned conjugate
// gradients (src/solver/linear/pcg.rs pcg, as src/solver/al/mod.rs solve_subproblem calls it),
// matrix-free: a product gathers, vertex by vertex, its rows of the element Hessians that
// al_elements wrote and of the active pairs' terms (src/solver/al/constraints.rs ActiveSet
// gradient and multiply: the constraint μγ (c − λ/μ − s) ∇c with Hessian μγ ∇c∇cᵀ, and IPC's
// lagged friction), so no matrix is assembled and nothing is accumulated across invocations
// except through the per-workgroup partial sums of the dot products.
//
// One shader, one phase per dispatch:
//   setup      per vertex: ∇ and the diagonal block (inertia m/w I plus the element blocks),
//              its inverse (the preconditioner), r = b = −∇, z = M⁻¹ r, p = z, d = 0
//   apply      per vertex: y = A p
//   update     per vertex: d += α p, r −= α y, z = M⁻¹ r
//   direction  per vertex: p = z + β p
//   reduce     one workgroup: sums the partials of the phase before and decides: α, β, whether
//              the solve ended; the dispatch arguments of the per-vertex phases after setup go to
//              zero when it did, so the iterations a step records beyond convergence cost no work
//              and the host is never asked (indirect dispatch).
// And a second entry point, `whole`: one workgroup runs the whole solve, every phase above in
// turn, its invocations striding over the vertices, with barriers between the phases: one
// dispatch in place of five per iteration (each costs even when empty: ~7 µs on an H200), for
// systems small enough that one workgroup's arithmetic costs less.
// The solve stops, as on the CPU, at ‖r‖ ≤ tolerance ‖b‖, after max_iterations, or when the
// curvature along p is not positive (d so far is kept: still a descent direction).
// Vertices that are not solved carry zero in every vector.
// Host wrapper: src/gpu/al/al_pcg.rs; prepended: lib/step.wgsl, lib/workgroup_sum.wgsl,
// lib/mat3.wgsl, lib/friction.wgsl, lib/al.wgsl.

const PHASE_SETUP: u32 = 0u;
const PHASE_APPLY: u32 = 1u;
const PHASE_UPDATE: u32 = 2u;
const PHASE_DIRECTION: u32 = 3u;
const PHASE_REDUCE: u32 = 4u;

// Regions of `vectors`, each `count` vec4 long.
const V_DIRECTION: u32 = 0u;
const V_RESIDUAL: u32 = 1u;
const V_PRECONDITIONED: u32 = 2u;
const V_SEARCH: u32 = 3u;
const V_PRODUCT: u32 = 4u;
// Three regions: the columns of the diagonal block's inverse.
const V_INVERSE: u32 = 5u;
const V_GRADIENT: u32 = 8u;

// Words of `control`: the per-vertex phases' dispatch arguments (x, y, z), the iterations
// taken, and how the solve stands.
const C_ARGS: u32 = 0u;
const C_ITERATIONS: u32 = 3u;
const C_STATE: u32 = 4u;
const RUNNING: u32 = 0u;
const CONVERGED: u32 = 1u;
const CAPPED: u32 = 2u;
const NOT_CURVED: u32 = 3u;
const NO_RIGHT_HAND_SIDE: u32 = 4u;

struct Params {
    phase: u32,
    // Vertices, and the workgroups of a per-vertex phase.
    count: u32,
    groups: u32,
    // For the reduce phase: the per-vertex phase whose partials it sums.
    after: u32,
    // Where the element adjacencies (row offsets, entries `element << 2 | slot`) start in `index`.
    tet_offsets: u32,
    tet_entries: u32,
    tri_offsets: u32,
    tri_entries: u32,
    hinge_offsets: u32,
    hinge_entries: u32,
    // First word of the triangles' and the hinges' records in `element` (tets at 0).
    tris_base: u32,
    hinges_base: u32,
    tolerance: f32,
    max_iterations: u32,
    // Where the pair records, the vertex → pair adjacency's n + 1 row offsets and its entries
    // (`pair << 2 | slot`) start in `element`.
    pairs: u32,
    pair_offsets: u32,
    pair_entries: u32,
    // Static friction slip ε_v h [m].
    static_slip: f32,
    // ‖∇L‖ at or below this [N] is solved by d = 0.
    force_tolerance: f32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
// The targets x̂ the system is linearised at.
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(3) var<storage, read> index: array<u32>;
// al_elements' records.
@group(0) @binding(4) var<storage, read> element: array<u32>;
// VERTEX_SOLVED (lib/step.wgsl) for a vertex with unknowns.
@group(0) @binding(5) var<storage, read> solved: array<u32>;
@group(0) @binding(6) var<storage, read_write> vectors: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> scalars: array<f32>;
@group(0) @binding(8) var<storage, read_write> control: array<u32>;

var<workgroup> state: u32;

fn vec(region: u32, v: u32) -> vec3<f32> {
    return vectors[region * params.count + v].xyz;
}

fn set_vec(region: u32, v: u32, x: vec3<f32>) {
    vectors[region * params.count + v] = vec4<f32>(x, 0.0);
}

// Row block (slot, b) of the Hessian of the k-vertex element record at `base`.
fn hessian_block(base: u32, k: u32, slot: u32, b: u32) -> mat3x3<f32> {
    let n = 3u * k;
    let row = base + 4u + n + 3u * slot * n + 3u * b;
    return mat3x3<f32>(vec3<f32>(word(row), word(row + n), word(row + 2u * n)),
                       vec3<f32>(word(row + 1u), word(row + n + 1u), word(row + 2u * n + 1u)),
                       vec3<f32>(word(row + 2u), word(row + n + 2u), word(row + 2u * n + 2u)));
}

// What one element adds to vertex row `slot`: its gradient and diagonal block (setup), or its
// rows times the search direction (apply).
struct Rows {
    gradient: vec3<f32>,
    diagonal: mat3x3<f32>,
    product: vec3<f32>,
}

fn element_rows(base: u32, k: u32, slot: u32, product: bool) -> Rows {
    var out: Rows;
    if product {
        for (var b = 0u; b < k; b++) {
            out.product += hessian_block(base, k, slot, b) * vec(V_SEARCH, element[base + b]);
        }
    } else {
        let g = base + 4u + 3u * slot;
        out.gradient = vec3<f32>(word(g), word(g + 1u), word(g + 2u));
        out.diagonal = hessian_block(base, k, slot, slot);
    }
    return out;
}

// What a pair adds to its vertex row `slot` (see element_rows).
fn pair_rows(base: u32, slot: u32, product: bool) -> Rows {
    var out: Rows;
    let p = load_al_pair(base);
    var x: array<vec3<f32>, 4>;
    var start: array<vec3<f32>, 4>;
    for (var k = 0u; k < 4u; k++) {
        if p.vertices[k] != NO_VERTEX {
            x[k] = positions[p.vertices[k]].xyz;
            start[k] = steps[p.vertices[k]].start.xyz;
        }
    }
    let t = al_pair_term(p, x, start, scalars[S_MU], scalars[S_DELTA], params.static_slip);
    let g = p.gradient[slot];
    let w = p.weights[slot];
    if product {
        var along = 0.0;
        var rel = vec3<f32>(0.0);
        for (var k = 0u; k < 4u; k++) {
            if p.vertices[k] != NO_VERTEX {
                let d = vec(V_SEARCH, p.vertices[k]);
                along += dot(p.gradient[k], d);
                rel += d * p.weights[k];
            }
        }
        rel -= p.frame * dot(p.frame, rel);
        out.product = g * (t.stiffness * along) + rel * (t.k_f * w);
    } else {
        out.gradient = g * t.force + t.slip * (t.k_f * w);
        out.diagonal = outer3(g, g) * t.stiffness + (diag3(1.0) - outer3(p.frame, p.frame)) * (t.k_f * w * w);
    }
    return out;
}

// Sums vertex v's rows over the elements and pairs it belongs to.
fn gather(v: u32, product: bool) -> Rows {
    var sum: Rows;
    for (var e = index[params.tet_offsets + v]; e < index[params.tet_offsets + v + 1u]; e++) {
        let entry = index[params.tet_entries + e];
        let r = element_rows((entry >> 2u) * 160u, 4u, entry & 3u, product);
        sum.gradient += r.gradient;
        sum.diagonal += r.diagonal;
        sum.product += r.product;
    }
    for (var e = index[params.tri_offsets + v]; e < index[params.tri_offsets + v + 1u]; e++) {
        let entry = index[params.tri_entries + e];
        let r = element_rows(params.tris_base + (entry >> 2u) * 94u, 3u, entry & 3u, product);
        sum.gradient += r.gradient;
        sum.diagonal += r.diagonal;
        sum.product += r.product;
    }
    for (var e = index[params.hinge_offsets + v]; e < index[params.hinge_offsets + v + 1u]; e++) {
        let entry = index[params.hinge_entries + e];
        let r = element_rows(params.hinges_base + (entry >> 2u) * 160u, 4u, entry & 3u, product);
        sum.gradient += r.gradient;
        sum.diagonal += r.diagonal;
        sum.product += r.product;
    }
    for (var e = element[params.pair_offsets + v]; e < element[params.pair_offsets + v + 1u]; e++) {
        let entry = element[params.pair_entries + e];
        let r = pair_rows(params.pairs + (entry >> 2u) * PAIR_WORDS, entry & 3u, product);
        sum.gradient += r.gradient;
        sum.diagonal += r.diagonal;
        sum.product += r.product;
    }
    return sum;
}

// z = M⁻¹ r with the inverse's columns.
fn precondition(v: u32, r: vec3<f32>) -> vec3<f32> {
    return vec(V_INVERSE, v) * r.x + vec(V_INVERSE + 1u, v) * r.y + vec(V_INVERSE + 2u, v) * r.z;
}

// The per-vertex phases: each invocation's share of two dot products.
fn vertex_phase(phase: u32, v: u32) -> vec2<f32> {
    if phase == PHASE_SETUP {
        var g = vec3<f32>(0.0);
        var inverse = mat3x3<f32>();
        if (solved[v] & VERTEX_SOLVED) != 0u {
            let s = steps[v];
            let m_over_w = s.inertia.w;
            let rows = gather(v, false);
            g = (positions[v].xyz - s.start.xyz - s.inertia.xyz) * m_over_w + rows.gradient;
            let d = rows.diagonal + diag3(m_over_w);
            // Inverse through the adjugate; an unusable block preconditions by the identity (as
            // the CPU does with a non-finite inverse).
            let det = determinant(d);
            inverse = diag3(1.0);
            if abs(det) > 0.0 {
                let inv = transpose(mat3x3<f32>(cross(d[1], d[2]), cross(d[2], d[0]), cross(d[0], d[1]))) * (1.0 / det);
                if all(abs(inv[0]) < vec3<f32>(3.0e38)) && all(abs(inv[1]) < vec3<f32>(3.0e38))
                    && all(abs(inv[2]) < vec3<f32>(3.0e38)) {
                    inverse = inv;
                }
            }
        }
        set_vec(V_GRADIENT, v, g);
        set_vec(V_INVERSE, v, inverse[0]);
        set_vec(V_INVERSE + 1u, v, inverse[1]);
        set_vec(V_INVERSE + 2u, v, inverse[2]);
        let r = -g;
        let z = inverse * r;
        set_vec(V_DIRECTION, v, vec3<f32>(0.0));
        set_vec(V_RESIDUAL, v, r);
        set_vec(V_PRECONDITIONED, v, z);
        set_vec(V_SEARCH, v, z);
        return vec2<f32>(dot(r, z), dot(r, r));
    }
    if phase == PHASE_APPLY {
        var y = vec3<f32>(0.0);
        if (solved[v] & VERTEX_SOLVED) != 0u {
            y = gather(v, true).product + vec(V_SEARCH, v) * steps[v].inertia.w;
        }
        set_vec(V_PRODUCT, v, y);
        return vec2<f32>(dot(vec(V_SEARCH, v), y), 0.0);
    }
    if phase == PHASE_UPDATE {
        let alpha = scalars[S_ALPHA];
        set_vec(V_DIRECTION, v, vec(V_DIRECTION, v) + vec(V_SEARCH, v) * alpha);
        let r = vec(V_RESIDUAL, v) - vec(V_PRODUCT, v) * alpha;
        let z = precondition(v, r);
        set_vec(V_RESIDUAL, v, r);
        set_vec(V_PRECONDITIONED, v, z);
        return vec2<f32>(dot(r, z), dot(r, r));
    }
    // PHASE_DIRECTION
    set_vec(V_SEARCH, v, vec(V_PRECONDITIONED, v) + vec(V_SEARCH, v) * scalars[S_BETA]);
    return vec2<f32>(0.0);
}

// The reduce phase's decision after phase `after`, by one invocation, from the partials' sums
// `s`.
fn decide(after: u32, s: vec2<f32>) {
    if after == PHASE_SETUP {
        scalars[S_RZ] = s.x;
        scalars[S_BB] = s.y;
        scalars[S_RR] = s.y;
        control[C_ITERATIONS] = 0u;
        control[C_ARGS] = params.groups;
        control[C_ARGS + 1u] = 1u;
        control[C_ARGS + 2u] = 1u;
        control[C_STATE] = RUNNING;
        if !(s.y > params.force_tolerance * params.force_tolerance) {
            control[C_STATE] = NO_RIGHT_HAND_SIDE;
            control[C_ARGS] = 0u;
        }
        return;
    }
    if after == PHASE_APPLY {
        scalars[S_CURVATURE] = s.x;
        if !(s.x > 0.0) {
            control[C_STATE] = NOT_CURVED;
            control[C_ARGS] = 0u;
            return;
        }
        scalars[S_ALPHA] = scalars[S_RZ] / s.x;
        return;
    }
    // After update: the new r·z and ‖r‖².
    let iterations = control[C_ITERATIONS] + 1u;
    control[C_ITERATIONS] = iterations;
    scalars[S_RR] = s.y;
    let tol = params.tolerance;
    if s.y <= tol * tol * scalars[S_BB] {
        control[C_STATE] = CONVERGED;
        control[C_ARGS] = 0u;
        return;
    }
    if iterations >= params.max_iterations {
        control[C_STATE] = CAPPED;
        control[C_ARGS] = 0u;
        return;
    }
    scalars[S_BETA] = s.x / scalars[S_RZ];
    scalars[S_RZ] = s.x;
}

// Phase `phase` over every vertex by one workgroup, then its decision (a per-vertex phase's
// writes are seen by the whole workgroup after the barrier); returns how the solve stands.
fn whole_phase(phase: u32, lid: u32) -> u32 {
    var s = vec2<f32>(0.0);
    for (var v = lid; v < params.count; v += 64u) {
        s += vertex_phase(phase, v);
    }
    storageBarrier();
    let total = workgroup_sum(lid, s);
    if lid == 0u {
        if phase != PHASE_DIRECTION {
            decide(phase, total);
        }
        state = control[C_STATE];
    }
    storageBarrier();
    return workgroupUniformLoad(&state);
}

// The whole solve in one workgroup (the `whole` entry point).
fn solve_whole(lid: u32) {
    var running = whole_phase(PHASE_SETUP, lid) == RUNNING;
    for (var k = 0u; k < params.max_iterations && running; k++) {
        running = whole_phase(PHASE_APPLY, lid) == RUNNING;
        if running {
            running = whole_phase(PHASE_UPDATE, lid) == RUNNING;
        }
        if running {
            running = whole_phase(PHASE_DIRECTION, lid) == RUNNING;
        }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    var s = vec2<f32>(0.0);
    if params.phase == PHASE_REDUCE {
        // A solve that has ended takes no further decision (setup's reduce starts one).
        if lid == 0u {
            state = select(control[C_STATE], RUNNING, params.after == PHASE_SETUP);
        }
        if workgroupUniformLoad(&state) != RUNNING {
            return;
        }
        for (var w = lid; w < params.groups; w += 64u) {
            s += vec2<f32>(scalars[S_PARTIALS + 2u * w], scalars[S_PARTIALS + 2u * w + 1u]);
        }
    } else {
        let v = wg.x * 64u + lid;
        if v < params.count {
            s = vertex_phase(params.phase, v);
        }
    }
    let total = workgroup_sum(lid, s);
    if lid == 0u {
        if params.phase == PHASE_REDUCE {
            decide(params.after, total);
        } else {
            scalars[S_PARTIALS + 2u * wg.x] = total.x;
            scalars[S_PARTIALS + 2u * wg.x + 1u] = total.y;
        }
    }
}

// The whole solve in one workgroup: its own entry point, so that the per-phase pipeline does not
// carry its loops.
@compute @workgroup_size(64)
fn whole(@builtin(local_invocation_index) lid: u32) {
    solve_whole(lid);
}
