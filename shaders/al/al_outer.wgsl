// The outer iterations of the augmented-Lagrangian step on the GPU: the safe iterate follows
// its targets as far as al_step_size allows, x += α (x̂ − x) for the vertices that move, and the
// schedule (src/solver/al/schedule.rs Schedule, its twin) weighs the iterates, ends the step
// once the first iterates weigh less than ε or the iteration cap is reached, and doubles μ and
// halves δ after STALL_ITERATIONS steps below 1e-4 in a row. An ended step zeroes the dispatch
// arguments of the iterations recorded after it (indirect dispatch).
//   start     one invocation: opens a step (μ and δ from the parameters)
//   pins      per vertex, after start and the seed: whether a kinematic vertex moves within
//             the step (its target is not where the step starts), which al_merit reads: then
//             the iterates carry the pins only part of the way and their potentials do not
//             compare (al_step's `comparable`)
//   move      per vertex
//   schedule  one invocation: after move
// Host wrapper: src/gpu/al/al_outer.rs; prepended: lib/step.wgsl.

const PHASE_START: u32 = 0u;
const PHASE_MOVE: u32 = 1u;
const PHASE_SCHEDULE: u32 = 2u;
const PHASE_PINS: u32 = 3u;

// Shared scalars (lib/al.wgsl's words).
const S_MU: u32 = 6u;
const S_DELTA: u32 = 7u;
const S_FIRST_WEIGHT: u32 = 12u;
const S_START_WEIGHT: u32 = 13u;
const S_PINS_MOVE: u32 = 14u;

// Words of `control`: the dispatch arguments of an outer iteration's per-vertex phases, of a
// one-workgroup phase, of its per-pair and per-tet phases; how the step stands, iterations
// taken, consecutive small steps.
const C_MOVE_ARGS: u32 = 0u;
const C_ONE_ARGS: u32 = 3u;
const C_PAIR_ARGS: u32 = 6u;
const C_TET_ARGS: u32 = 9u;
const C_STATE: u32 = 12u;
const C_ITERATIONS: u32 = 13u;
const C_SMALL_STEPS: u32 = 14u;
const RUNNING: u32 = 0u;
const CONVERGED: u32 = 1u;
const CAPPED: u32 = 2u;
// schedule.rs SMALL_STEP.
const SMALL_STEP: f32 = 1e-4;

struct Params {
    phase: u32,
    vertices: u32,
    vertex_groups: u32,
    min_iterates: u32,
    max_iterations: u32,
    stall_iterations: u32,
    epsilon: f32,
    pair_groups: u32,
    tet_groups: u32,
    // The step's first penalty μ [N/m] and offset δ [m]: a stall changes both, so each step
    // starts from these.
    mu: f32,
    delta: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> safe: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> targets: array<vec4<f32>>;
// VERTEX_SOLVED and VERTEX_MOVES bits per vertex.
@group(0) @binding(3) var<storage, read> solved: array<u32>;
// al_step_size's times: α's bits first.
@group(0) @binding(4) var<storage, read> times: array<u32>;
@group(0) @binding(5) var<storage, read_write> scalars: array<f32>;
@group(0) @binding(6) var<storage, read_write> control: array<u32>;

fn set_args(on: bool) {
    let counts = array<u32, 4>(params.vertex_groups, 1u, params.pair_groups, params.tet_groups);
    for (var k = 0u; k < 4u; k++) {
        control[C_MOVE_ARGS + 3u * k] = select(0u, counts[k], on);
        control[C_MOVE_ARGS + 3u * k + 1u] = 1u;
        control[C_MOVE_ARGS + 3u * k + 2u] = 1u;
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if params.phase == PHASE_PINS {
        let v = id.x;
        let pinned = (solved[v] & (VERTEX_SOLVED | VERTEX_MOVES)) == VERTEX_MOVES;
        if v < params.vertices && pinned && any(targets[v].xyz != safe[v].xyz) {
            // Every such invocation writes the same value.
            scalars[S_PINS_MOVE] = 1.0;
        }
        return;
    }
    let alpha = bitcast<f32>(times[0]);
    if params.phase == PHASE_MOVE {
        let v = id.x;
        if v < params.vertices && (solved[v] & VERTEX_MOVES) != 0u {
            let x = safe[v];
            safe[v] = vec4<f32>(x.xyz + (targets[v].xyz - x.xyz) * alpha, x.w);
        }
        return;
    }
    if id.x != 0u {
        return;
    }
    if params.phase == PHASE_START {
        control[C_STATE] = RUNNING;
        control[C_ITERATIONS] = 0u;
        control[C_SMALL_STEPS] = 0u;
        scalars[S_FIRST_WEIGHT] = 1.0;
        scalars[S_START_WEIGHT] = 1.0;
        scalars[S_MU] = params.mu;
        scalars[S_DELTA] = params.delta;
        scalars[S_PINS_MOVE] = 0.0;
        set_args(true);
        return;
    }
    if control[C_STATE] != RUNNING {
        return;
    }
    // Schedule::weigh.
    let iterations = control[C_ITERATIONS] + 1u;
    control[C_ITERATIONS] = iterations;
    var first = scalars[S_FIRST_WEIGHT] * (1.0 - alpha);
    if iterations < params.min_iterates {
        first += alpha;
    }
    scalars[S_FIRST_WEIGHT] = first;
    scalars[S_START_WEIGHT] *= 1.0 - alpha;
    // Schedule::converged, and the cap.
    if first < params.epsilon {
        control[C_STATE] = CONVERGED;
        set_args(false);
        return;
    }
    // Schedule::stall (after the convergence test, as on the CPU).
    if alpha < SMALL_STEP {
        var small = control[C_SMALL_STEPS] + 1u;
        if small >= params.stall_iterations {
            scalars[S_MU] *= 2.0;
            scalars[S_DELTA] *= 0.5;
            small = 0u;
        }
        control[C_SMALL_STEPS] = small;
    } else {
        control[C_SMALL_STEPS] = 0u;
    }
    if iterations >= params.max_iterations {
        control[C_STATE] = CAPPED;
        set_args(false);
    }
}
