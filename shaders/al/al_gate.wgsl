// Whether this substep is redone on the device by the augmented-Lagrangian step (the GPU's
// fallback, src/gpu/al/fallback.rs), decided on the GPU: after step_check and step_soft have
// written their bits to `bad`, one invocation reads the world's word (any body unsafe), the
// hold left from an earlier failure and the `always` policy, and writes the dispatch arguments
// every phase of the fallback reads (zero workgroups: the fallback costs no work). A failure
// holds the fallback for `hold_substeps` substeps (the CPU's HOLD_FRAMES, hysteresis), and
// each body whose own bits are set is marked REDONE, so the host reports its step as redone
// on the GPU instead of stepping the frame again. Two phases:
//   gate    one invocation, after the check: the decision above;
//   report  one invocation, after the fallback ran: how its step went (outer iterations, its
//           end, the share of the step travelled, whether it answered with an earlier
//           iterate), for the host to read with the frame.
// Host wrapper: src/gpu/al/al_gate.rs.

const PHASE_GATE: u32 = 0u;
const PHASE_REPORT: u32 = 1u;

// `bad` (src/gpu/al/step_guard.rs): two words per body, then the world's two; the last
// gathers step_check's and step_soft's bits. Bits 1, 2 and 4 (non-finite) stay with the
// guard, which puts such a body back at rest.
const NON_FINITE: u32 = 7u;
const REDONE: u32 = 4096u;

// Words of `control`: the per-vertex dispatch arguments, the substeps of hold left, substeps
// the fallback ran, substeps it ran for a failure.
const C_ARGS: u32 = 0u;
const C_HOLD: u32 = 3u;
const C_RUNS: u32 = 4u;
const C_FAILURES: u32 = 5u;
const C_ITERATIONS: u32 = 6u;
const C_END: u32 = 7u;
const C_TRAVELLED: u32 = 8u;
const C_REWOUND: u32 = 9u;
// al_outer's control words (state, iterations), its scalars' start weight, al_merit's
// "the last iterate is the lowest".
const OUTER_STATE: u32 = 12u;
const OUTER_ITERATIONS: u32 = 13u;
const S_START_WEIGHT: u32 = 13u;
const MERIT_LAST_IS_LOWEST: u32 = 6u;

struct Params {
    phase: u32,
    bodies: u32,
    vertex_groups: u32,
    hold_substeps: u32,
    always: u32,
    // Whether the fallback's iterates compare by merit (al_merit ran).
    comparable: u32,
    _pad: vec2<u32>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> bad: array<u32>;
@group(0) @binding(2) var<storage, read_write> control: array<u32>;
@group(0) @binding(3) var<storage, read> outer: array<u32>;
@group(0) @binding(4) var<storage, read> scalars: array<f32>;
@group(0) @binding(5) var<storage, read> merit: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x != 0u {
        return;
    }
    if params.phase == PHASE_REPORT {
        // Dispatched directly (it writes `control`, so cannot take its arguments from it).
        if control[C_ARGS] != 0u {
            control[C_ITERATIONS] = outer[OUTER_ITERATIONS];
            control[C_END] = outer[OUTER_STATE];
            control[C_TRAVELLED] = bitcast<u32>(1.0 - scalars[S_START_WEIGHT]);
            control[C_REWOUND] = select(0u, 1u, params.comparable != 0u && merit[MERIT_LAST_IS_LOWEST] == 0u);
        }
        return;
    }
    let failed = bad[arrayLength(&bad) - 1u] != 0u;
    var hold = control[C_HOLD];
    let run = failed || hold > 0u || params.always != 0u;
    if failed {
        hold = params.hold_substeps;
        control[C_FAILURES] += 1u;
        for (var b = 0u; b < params.bodies; b++) {
            if (bad[2u * b + 1u] & ~NON_FINITE) != 0u {
                bad[2u * b + 1u] |= REDONE;
            }
        }
    } else if hold > 0u {
        hold -= 1u;
    }
    control[C_HOLD] = hold;
    if run {
        control[C_RUNS] += 1u;
    }
    control[C_ARGS] = select(0u, params.vertex_groups, run);
    control[C_ARGS + 1u] = 1u;
    control[C_ARGS + 2u] = 1u;
}
