// The GPU step as a transaction (src/runtime/transaction.rs): after each substep, a body with a
// non-finite position, velocity or acceleration is rolled back to the substep's start at rest,
// so no NaN ever leaves the GPU. Three dispatches by `phase`:
//   0  per vertex: flag its body (first bad vertex, and which fields) in `bad`;
//   1  per vertex of a flagged body: x ← x^n, v = a = 0, no integrator history;
//   2  per body: count the rollback in `rollbacks` (never cleared: the host reads the counts
//      with each finished frame and reports every new one as a PliantEvent::NonFiniteState, so
//      none is lost when a frame is dropped or the state is downloaded instead).
// `bad`, per body, two words: u32::MAX − first bad vertex (0: none), and field bits
// (1 position, 2 velocity, 4 acceleration; step_check, run between phases 0 and 1, adds 8
// inverted tet, 16 speed, 32 path through an obstacle, and step_soft 64 diverged, 128 stalled,
// 256 energy gain, 512 clamp lock: those bodies are rolled back too). Its last word gathers the bits of step_check and
// step_soft: once any body is unsafe, every body goes back to the substep's start at rest,
// since the host redoes the frame from its start (src/runtime/world/gpu/check.rs) and a body
// put back alone could overlap a neighbour that moved into its place. (A non-finite body is
// not redone but rolled back alone: its unsafe bits stay out of the world word.) Where the GPU's
// fallback redoes unsafe substeps on the device (al_gate), only non-finite bodies are put back. `rollbacks`, per body,
// three words: the count, and the last rollback's two words; only flagged bodies are counted. Host wrapper: src/gpu/check/step_guard.rs; prepended:
// lib/step.wgsl.

struct Params {
    phase: u32,
    count: u32,
    // Where vertex_body starts in `index`.
    vertex_body: u32,
    // Non-zero when the GPU's fallback (al_gate, al_commit) redoes unsafe substeps on the
    // device: phase 1 then puts back only the bodies with a non-finite value.
    redone_on_gpu: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> velocities: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> accelerations: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> flags: array<u32>;
@group(0) @binding(5) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(6) var<storage, read> index: array<u32>;
@group(0) @binding(7) var<storage, read_write> bad: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read_write> rollbacks: array<atomic<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i >= params.count {
        return;
    }
    switch params.phase {
        case 0u: {
            var fields = 0u;
            if non_finite(positions[i]) {
                fields |= 1u;
            }
            if non_finite(velocities[i]) {
                fields |= 2u;
            }
            if non_finite(accelerations[i]) {
                fields |= 4u;
            }
            if fields != 0u {
                let b = index[params.vertex_body + i];
                atomicMax(&bad[2u * b], 0xffffffffu - i);
                atomicOr(&bad[2u * b + 1u], fields);
            }
        }
        case 1u: {
            let b = index[params.vertex_body + i];
            let fields = atomicLoad(&bad[2u * b + 1u]);
            var back = fields != 0u || atomicLoad(&bad[arrayLength(&bad) - 1u]) != 0u;
            if params.redone_on_gpu != 0u {
                back = (fields & 7u) != 0u;
            }
            if back {
                positions[i] = steps[i].start;
                velocities[i] = vec4<f32>(0.0);
                accelerations[i] = vec4<f32>(0.0);
                flags[i] |= VERTEX_NO_HISTORY;
            }
        }
        default: {
            let fields = atomicLoad(&bad[2u * i + 1u]);
            if fields != 0u {
                atomicAdd(&rollbacks[3u * i], 1u);
                atomicStore(&rollbacks[3u * i + 1u], atomicLoad(&bad[2u * i]));
                atomicStore(&rollbacks[3u * i + 2u], fields);
            }
        }
    }
}
