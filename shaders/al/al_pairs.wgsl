// The active set's per-pair updates of the augmented-Lagrangian step (src/solver/al/
// constraints.rs ActiveSet): one invocation per pair record in `element`.
//   linearize  at the safe iterate x (`safe`): the pair's distance, its gradient per vertex
//              (the closest-point weights times the unit normal; an obstacle's outward normal)
//              and the positions it was taken at (ActiveSet::linearize)
//   dual       at the targets x̂ (`targets`): the multiplier grows by −μ c while the pair is
//              violated (its weight back to 1); a pair that separated drops its multiplier and
//              its weight decays by 0.9; the lagged normal force becomes the multiplier
//              (ActiveSet::dual_update, docs/algorithms.md E9–E10)
//   prune      a pair whose weight decayed below 0.01 leaves the set (ActiveSet::prune): its
//              slot becomes absent
// Absent slots (PAIR_ABSENT) are left alone.
// Host wrapper: src/gpu/al/al_pairs.rs; prepended: lib/step.wgsl, lib/obstacles.wgsl,
// lib/distance.wgsl, lib/mat3.wgsl, lib/friction.wgsl, lib/al.wgsl.

const PHASE_LINEARIZE: u32 = 0u;
const PHASE_DUAL: u32 = 1u;
const PHASE_PRUNE: u32 = 2u;
// constraints.rs DECAY and DROP_WEIGHT.
const DECAY: f32 = 0.9;
const DROP_WEIGHT: f32 = 0.01;

struct Params {
    phase: u32,
    pairs: u32,
    // First word of the pair records in `element`.
    records: u32,
    _pad0: u32,
    obstacles: ObstacleSet,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> safe: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> targets: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> element: array<u32>;
@group(0) @binding(4) var<storage, read> scalars: array<f32>;

fn put(i: u32, v: f32) {
    element[i] = bitcast<u32>(v);
}

fn put3(i: u32, v: vec3<f32>) {
    put(i, v.x);
    put(i + 1u, v.y);
    put(i + 2u, v.z);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= params.pairs {
        return;
    }
    let base = params.records + id.x * PAIR_WORDS;
    let p = load_al_pair(base);
    if p.kind == PAIR_ABSENT {
        return;
    }
    if params.phase == PHASE_PRUNE {
        if p.gamma < DROP_WEIGHT {
            for (var k = 0u; k < PAIR_WORDS; k++) {
                element[base + k] = 0u;
            }
            for (var k = 0u; k < 4u; k++) {
                element[base + k] = NO_VERTEX;
            }
            element[base + 40u] = PAIR_ABSENT;
        }
        return;
    }
    if params.phase == PHASE_LINEARIZE {
        var x: array<vec3<f32>, 4>;
        for (var k = 0u; k < 4u; k++) {
            if p.vertices[k] != NO_VERTEX {
                x[k] = safe[p.vertices[k]].xyz;
            }
        }
        var gradient: array<vec3<f32>, 4>;
        var distance: f32;
        if p.kind == PAIR_OBSTACLE {
            let sd = obstacle_distance(params.obstacles.items[p.obstacle], x[0]);
            distance = sd.d;
            gradient[0] = sd.n;
        } else {
            let c = closest_pair(p.kind, x);
            distance = c.distance;
            for (var k = 0u; k < 4u; k++) {
                gradient[k] = c.normal * c.weights[k];
            }
        }
        put(base + 35u, distance);
        for (var k = 0u; k < 4u; k++) {
            put3(base + 4u + 3u * k, gradient[k]);
            put3(base + 16u + 3u * k, x[k]);
        }
        return;
    }
    // The dual update at the targets.
    let mu = scalars[S_MU];
    var c = p.distance - scalars[S_DELTA];
    for (var k = 0u; k < 4u; k++) {
        if p.vertices[k] != NO_VERTEX {
            c += dot(p.gradient[k], targets[p.vertices[k]].xyz - p.base[k]);
        }
    }
    var lambda = 0.0;
    var gamma = p.gamma * DECAY;
    if c - p.lambda / mu <= 0.0 {
        lambda = max(p.lambda - mu * c, 0.0);
        gamma = 1.0;
    }
    put(base + 36u, lambda);
    put(base + 37u, gamma);
    put(base + 39u, lambda);
}
