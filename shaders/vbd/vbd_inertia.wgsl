// Inertia and initial guess of a VBD step, one invocation per vertex: the GPU twin of the
// per-vertex part of the predict phase in src/solver/vbd/predict.rs (Integrator::vertex_step,
// BodySpin::turn with vbd_spin's output, and Initialization::offset).
// Host wrapper: src/gpu/vbd/vbd_inertia.rs; prepended: lib/step.wgsl.

struct Params {
    gravity: vec3<f32>,
    h: f32,
    count: u32,
    // 0 backward Euler, 1 Newmark (β = 1, γ = 3/2).
    integrator: u32,
    // 0 previous, 1 inertia, 2 inertia and gravity, 3 adaptive.
    initialization: u32,
    // 1 when `turns` holds vbd_spin's output (bodies turn their rigid spin exactly).
    spin: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    _pad3: u32,
}

// ã this close to 1 counts as free fall (src/solver/init.rs).
const FREE_FALL_SNAP: f32 = 1e-3;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> velocities: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> accelerations: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> masses: array<f32>;
@group(0) @binding(5) var<storage, read> flags: array<u32>;
@group(0) @binding(6) var<storage, read> targets: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> steps: array<VertexStep>;
// Per vertex, from vbd_spin: the predictor's shift ρ, then the velocity's κ.
@group(0) @binding(8) var<storage, read> turns: array<vec4<f32>>;

fn initial_offset(predictor: vec3<f32>, weight: f32, accel: vec3<f32>) -> vec3<f32> {
    let g = params.gravity;
    switch params.initialization {
        case 0u: { return vec3<f32>(0.0); }
        case 1u: { return predictor; }
        case 2u: { return predictor + g * weight; }
        default: {
            let g2 = dot(g, g);
            if g2 < 1e-12 {
                return predictor;
            }
            var a = clamp(dot(accel, g) / g2, 0.0, 1.0);
            if a > 1.0 - FREE_FALL_SNAP {
                a = 1.0;
            }
            return predictor + g * (weight * a);
        }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let v = id.x;
    if v >= params.count {
        return;
    }
    let h = params.h;
    let vel = velocities[v].xyz;
    let flag = flags[v];
    // Without history (first step, after a rollback or an edit) assume free flight.
    var accel = accelerations[v].xyz;
    if (flag & VERTEX_NO_HISTORY) != 0u {
        accel = params.gravity;
    }
    let weight = h * h;
    var predictor = vel * h;
    var c1 = 1.0 / h;
    var c0 = vec3<f32>(0.0);
    if params.integrator == 1u {
        predictor = vel * h - accel * (0.5 * h * h);
        c1 = 1.5 / h;
        c0 = accel * (0.25 * h) - vel * 0.5;
    }
    if params.spin != 0u && (flag & VERTEX_KINEMATIC) == 0u {
        // The body's rigid spin turns exactly (src/solver/vbd/spin.rs BodySpin::turn).
        let shift = turns[2u * v].xyz;
        predictor += shift;
        c0 += turns[2u * v + 1u].xyz - shift * c1;
    }
    var offset = initial_offset(predictor, weight, accel);
    if (flag & VERTEX_KINEMATIC) != 0u {
        offset = targets[v].xyz - positions[v].xyz;
    }
    steps[v] = VertexStep(
        positions[v],
        vec4<f32>(predictor, weight),
        vec4<f32>(predictor + params.gravity * weight, masses[v] / weight),
        vec4<f32>(c0, c1),
        vec4<f32>(offset, 0.0),
    );
}
