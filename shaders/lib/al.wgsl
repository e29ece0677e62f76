// What the augmented-Lagrangian step's kernels (al_pcg, al_search) share: the words of their
// `scalars`, and the active pairs' records in `element` with their terms (src/solver/al/
// constraints.rs Constraint). Not a kernel: host wrappers prepend this file after
// lib/step.wgsl, lib/mat3.wgsl and lib/friction.wgsl; it reads `element` (u32 words).

// Words of `scalars`: PCG's (r·z, ‖b‖², α, β, ‖r‖², p·Ap), the AL penalty μ [N/m] and offset
// δ [m] (set by whoever runs the outer iterations), the line search's (slope ∇·d, ‖d‖, the
// step r, the last trial's change of the Lagrangian), al_outer's weights of the first iterates
// and of the start, and from S_PARTIALS the per-workgroup partial sums (two each; al_merit's
// three).
const S_RZ: u32 = 0u;
const S_BB: u32 = 1u;
const S_ALPHA: u32 = 2u;
const S_BETA: u32 = 3u;
const S_RR: u32 = 4u;
const S_CURVATURE: u32 = 5u;
const S_MU: u32 = 6u;
const S_DELTA: u32 = 7u;
const S_SLOPE: u32 = 8u;
const S_DIRECTION_NORM: u32 = 9u;
const S_STEP: u32 = 10u;
const S_DECREASE: u32 = 11u;
// al_outer's: a kinematic vertex moves within the step (1), so iterates do not compare.
const S_PINS_MOVE: u32 = 14u;
const S_PARTIALS: u32 = 16u;

// An active pair's record (src/gpu/lib/al_pcg.rs AlPair): its moving vertices (NO_VERTEX
// where it has fewer than four), and at the safe iterate its distance's gradient per vertex
// and those vertices' positions (the linearisation), the closest-point weights and normal
// (friction's frame), the distance; λ, γ, the Coulomb coefficient and the lagged normal force;
// its kind (lib/distance.wgsl PAIR_POINT_TRIANGLE, PAIR_EDGE_EDGE, or PAIR_OBSTACLE) and, for a
// vertex–obstacle pair, the obstacle.
const PAIR_WORDS: u32 = 42u;
const PAIR_OBSTACLE: u32 = 2u;
// A slot of the vertex–obstacle table that holds no pair (all its terms are zero).
const PAIR_ABSENT: u32 = 3u;
const NO_VERTEX: u32 = 0xffffffffu;

struct AlPair {
    vertices: array<u32, 4>,
    gradient: array<vec3<f32>, 4>,
    base: array<vec3<f32>, 4>,
    weights: array<f32, 4>,
    frame: vec3<f32>,
    distance: f32,
    lambda: f32,
    gamma: f32,
    friction: f32,
    normal_force: f32,
    kind: u32,
    obstacle: u32,
}

fn word(i: u32) -> f32 {
    return bitcast<f32>(element[i]);
}

fn word3(i: u32) -> vec3<f32> {
    return vec3<f32>(word(i), word(i + 1u), word(i + 2u));
}

fn load_al_pair(base: u32) -> AlPair {
    var p: AlPair;
    for (var k = 0u; k < 4u; k++) {
        p.vertices[k] = element[base + k];
        p.gradient[k] = word3(base + 4u + 3u * k);
        p.base[k] = word3(base + 16u + 3u * k);
        p.weights[k] = word(base + 28u + k);
    }
    p.frame = word3(base + 32u);
    p.distance = word(base + 35u);
    p.lambda = word(base + 36u);
    p.gamma = word(base + 37u);
    p.friction = word(base + 38u);
    p.normal_force = word(base + 39u);
    p.kind = element[base + 40u];
    p.obstacle = element[base + 41u];
    return p;
}

// A pair's term at positions x of its vertices (the step starting from `start`).
struct PairTerm {
    // c(x̂) = d + ∇d·(x̂ − x) − δ, and the slack s = max(0, c − λ/μ).
    value: f32,
    slack: f32,
    // μγ, and the constraint's force μγ (c − λ/μ − s).
    stiffness: f32,
    force: f32,
    // The tangential slip of the step, and friction's stiffness μ_f Λ f1(‖u‖)/‖u‖.
    slip: vec3<f32>,
    k_f: f32,
}

fn al_pair_term(p: AlPair, x: array<vec3<f32>, 4>, start: array<vec3<f32>, 4>, mu: f32, delta: f32,
                static_slip: f32) -> PairTerm {
    var t: PairTerm;
    var c = p.distance - delta;
    var r = vec3<f32>(0.0);
    for (var k = 0u; k < 4u; k++) {
        if p.vertices[k] != NO_VERTEX {
            c += dot(p.gradient[k], x[k] - p.base[k]);
            r += (x[k] - start[k]) * p.weights[k];
        }
    }
    t.value = c;
    t.slack = max(c - p.lambda / mu, 0.0);
    t.stiffness = mu * p.gamma;
    t.force = mu * p.gamma * (c - p.lambda / mu - t.slack);
    t.slip = r - p.frame * dot(p.frame, r);
    if p.normal_force > 0.0 && p.friction > 0.0 {
        t.k_f = p.friction * p.normal_force * friction_f1_over_u(length(t.slip), static_slip);
    }
    return t;
}

// The pair's share of the Lagrangian [J] (constraints.rs ActiveSet::energy).
fn al_pair_energy(p: AlPair, t: PairTerm, mu: f32, static_slip: f32) -> f32 {
    let v = t.value - t.slack;
    var e = p.gamma * (0.5 * mu * v * v - p.lambda * v);
    if p.normal_force > 0.0 && p.friction > 0.0 {
        e += p.friction * p.normal_force * friction_f0(length(t.slip), static_slip);
    }
    return e;
}
