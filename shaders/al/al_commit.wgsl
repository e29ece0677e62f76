// The GPU's fallback around its augmented-Lagrangian step (src/gpu/al/fallback.rs), run only in
// substeps al_gate sends to it (indirect dispatch):
//   seed    per vertex: the AL starts from the substep's start x^n (its safe iterate), and its
//           first targets are the fast path's result, a warm start (the inertia target where
//           that is not finite), as the CPU's redo_island does;
//   commit  per vertex that moves: the AL's answer becomes the substep's result, with the
//           velocity travelled over the step (backward Euler) and no integrator history (the
//           CPU's redo_island: a redone step is no integrator's minimiser).
// Host wrapper: src/gpu/al/al_commit.rs; prepended: lib/step.wgsl.

const PHASE_SEED: u32 = 0u;
const PHASE_COMMIT: u32 = 1u;

struct Params {
    phase: u32,
    vertices: u32,
    // 1 / h [1/s].
    inverse_h: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> safe: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> targets: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> velocities: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> accelerations: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> flags: array<u32>;
@group(0) @binding(7) var<storage, read> steps: array<VertexStep>;
// VERTEX_SOLVED and VERTEX_MOVES bits per vertex.
@group(0) @binding(8) var<storage, read> solved: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let v = id.x;
    if v >= params.vertices {
        return;
    }
    let s = steps[v];
    let moves = (solved[v] & VERTEX_MOVES) != 0u;
    if params.phase == PHASE_SEED {
        let start = vec4<f32>(s.start.xyz, 0.0);
        safe[v] = start;
        var guess = start;
        if moves {
            guess = vec4<f32>(positions[v].xyz, 0.0);
            if non_finite(guess) {
                guess = vec4<f32>(s.start.xyz + s.inertia.xyz, 0.0);
            }
        }
        targets[v] = guess;
        return;
    }
    if moves {
        let x = safe[v].xyz;
        positions[v] = vec4<f32>(x, 0.0);
        velocities[v] = vec4<f32>((x - s.start.xyz) * params.inverse_h, 0.0);
        accelerations[v] = vec4<f32>(0.0);
        flags[v] |= VERTEX_NO_HISTORY;
    }
}
