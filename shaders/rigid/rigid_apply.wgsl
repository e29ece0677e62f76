// Applies the rigid correction (src/solver/vbd/rigid_correction.rs correct_rigid, its last part):
// every vertex of a corrected body moves with its body's exact coarse motion (x ↦ c + R(θ)(I + S)
// (x − c) + t: a rotation that strains nothing, and with the affine space a stretch S), clamped
// against the obstacles to catch rounding; the initial
// offset x^(0) − x^n takes the shift, and the iterates restart there. One invocation per vertex.
// Host wrapper: src/gpu/rigid/rigid_apply.rs; prepended: lib/step.wgsl, lib/obstacles.wgsl,
// lib/mat3.wgsl, lib/rigid.wgsl.

struct Params {
    rigid: RigidLayout,
    count: u32,
    // Where vertex_body starts in `index`.
    vertex_body: u32,
    _pad0: u32,
    _pad1: u32,
    obstacles: ObstacleSet,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> steps: array<VertexStep>;
@group(0) @binding(3) var<storage, read> index: array<u32>;
@group(0) @binding(4) var<storage, read> rigid: array<u32>;
@group(0) @binding(5) var<storage, read_write> initial: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> previous: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> before_previous: array<vec4<f32>>;

fn vec_at(r: u32) -> vec3<f32> {
    return vec3<f32>(bitcast<f32>(rigid[r]), bitcast<f32>(rigid[r + 1u]), bitcast<f32>(rigid[r + 2u]));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let v = id.x;
    if v >= params.count {
        return;
    }
    let r = rigid_record(index[params.vertex_body + v]);
    if rigid[r + RB_MOVES] == 0u {
        return;
    }
    let x = positions[v].xyz;
    let c = vec_at(r + RB_CENTER);
    var stretch = array<f32, 6>();
    for (var k = 0u; k < 6u; k++) {
        stretch[k] = bitcast<f32>(rigid[r + RB_STRETCH + k]);
    }
    let linear = rotation_of(vec_at(r + RB_ROTATION)) * (diag3(1.0) + stretch_matrix(stretch));
    let moved = c + linear * (x - c) + vec_at(r + RB_TRANSLATION);
    // The motion was scaled to the earliest obstacle contact; this catches rounding.
    let p = limit_step(params.obstacles, x, moved);
    steps[v].offset = vec4<f32>(steps[v].offset.xyz + (p - initial[v].xyz), steps[v].offset.w);
    let p4 = vec4<f32>(p, 0.0);
    positions[v] = p4;
    initial[v] = p4;
    previous[v] = p4;
    before_previous[v] = p4;
}
