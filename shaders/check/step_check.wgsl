// The safety check of a GPU substep (src/solver/check/mod.rs, docs/algorithms.md §8), on the device:
// after step_guard's non-finite test and before its rollback, a body whose step is finite but
// unsafe gets more field bits in `bad`, so the guard rolls it back at rest like a NaN and
// counts it, and the host redoes the frame with the fallback (src/runtime/world/gpu/).
// Three dispatches by `phase`:
//   0  per tet: volume ratio J = det F at or below INVERSION_J (an inverted or crushed tet);
//   1  per vertex: end speed above min(MAX_SPEED, half the body's rest size per substep) (it
//      would tunnel next substep), or a path x^n → x through an obstacle;
//   2  per surface edge: the edge at the step's end reaching deeper than the tolerance into an
//      obstacle between its two ends (over a box's rim or a sphere's cap, where no vertex is
//      inside: Obstacle::edge_depth on the CPU). Flagged as a crossing of its first vertex.
// The limits are the CPU check's (src/solver/check/mod.rs); the CPU's island size is at least
// the body's, so this test flags at least what the CPU's does. Host wrapper:
// src/gpu/check/step_check.rs; prepended: lib/step.wgsl, lib/obstacles.wgsl,
// lib/unsafe_flags.wgsl.

const INVERSION_J: f32 = 0.05;
const MAX_SPEED: f32 = 50.0;
// The CPU check's tolerance on a path through an obstacle [m].
const CROSSING_TOLERANCE: f32 = 1e-5;
// Field bits beside step_guard's non-finite ones (1, 2, 4).
const BAD_INVERSION: u32 = 8u;
const BAD_SPEED: u32 = 16u;
const BAD_CROSSING: u32 = 32u;

struct Params {
    phase: u32,
    count: u32,
    // Where vertex_body starts in `index`.
    vertex_body: u32,
    // Substep length [s].
    h: f32,
    // Where the surface edges (two u32 each) start in `index` (phase 2).
    edges: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    obstacles: ObstacleSet,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> velocities: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> steps: array<VertexStep>;
@group(0) @binding(4) var<storage, read> tets: array<Tet>;
@group(0) @binding(5) var<storage, read> index: array<u32>;
// Per body: the diagonal of its rest bounding box [m].
@group(0) @binding(6) var<storage, read> sizes: array<f32>;
@group(0) @binding(7) var<storage, read_write> bad: array<atomic<u32>>;

fn flag(v: u32, bits: u32) {
    flag_unsafe(index[params.vertex_body + v], v, bits);
}

// Ternary-search steps for a chord's deepest point (collision::swept::CHORD_SEARCH_STEPS).
const CHORD_SEARCH_STEPS: u32 = 32u;

// Depth of the deepest point of a + t (b - a), t in [t0, t1], in a convex solid (every GPU
// obstacle is): depth is concave along a line through one, so a ternary search finds it.
fn chord_depth(o: Obstacle, a: vec3<f32>, b: vec3<f32>, first: f32, last: f32) -> f32 {
    var t0 = first;
    var t1 = last;
    for (var k = 0u; k < CHORD_SEARCH_STEPS; k++) {
        let m0 = t0 + (t1 - t0) / 3.0;
        let m1 = t1 - (t1 - t0) / 3.0;
        if obstacle_distance(o, a + (b - a) * m0).d > obstacle_distance(o, a + (b - a) * m1).d {
            t0 = m0;
        } else {
            t1 = m1;
        }
    }
    return -obstacle_distance(o, a + (b - a) * (0.5 * (t0 + t1))).d;
}

// Whether the straight path a → b ends inside the obstacle or passes through it (entering and
// leaving again, with its deepest point deeper than the tolerance: a vertex sliding on a curved
// surface moves along a chord inside it that dips by a hair): the twin of
// collision::swept::obstacle_crossed.
fn obstacle_crossed(o: Obstacle, a: vec3<f32>, b: vec3<f32>) -> bool {
    if obstacle_distance(o, b).d < -CROSSING_TOLERANCE {
        return true;
    }
    let enter = obstacle_entry(o, a, b);
    let exit_back = obstacle_entry(o, b, a);
    if enter == NO_ENTRY || exit_back == NO_ENTRY {
        return false;
    }
    return chord_depth(o, a, b, enter, 1.0 - exit_back) > CROSSING_TOLERANCE;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i >= params.count {
        return;
    }
    if params.phase == 0u {
        let t = tets[i];
        let x0 = positions[t.vertices.x].xyz;
        let f = mat3x3<f32>(positions[t.vertices.y].xyz - x0, positions[t.vertices.z].xyz - x0,
                            positions[t.vertices.w].xyz - x0) * t.dm_inv;
        // Written so that a NaN determinant flags too.
        if !(determinant(f) > INVERSION_J) {
            flag(t.vertices.x, BAD_INVERSION);
        }
        return;
    }
    if params.phase == 2u {
        let va = index[params.edges + 2u * i];
        let vb = index[params.edges + 2u * i + 1u];
        let xa = positions[va].xyz;
        let xb = positions[vb].xyz;
        for (var k = 0u; k < params.obstacles.count; k++) {
            // The segment as a path: a plane's never dips between two ends outside it, and an
            // end inside is its vertex's (phase 1) crossing.
            if obstacle_crossed(params.obstacles.items[k], xa, xb) {
                flag(va, BAD_CROSSING);
                break;
            }
        }
        return;
    }
    let x = positions[i].xyz;
    let b = index[params.vertex_body + i];
    let limit = min(MAX_SPEED, 0.5 * sizes[b] / params.h);
    if length(velocities[i].xyz) > limit {
        flag(i, BAD_SPEED);
    }
    let a = steps[i].start.xyz;
    for (var k = 0u; k < params.obstacles.count; k++) {
        if obstacle_crossed(params.obstacles.items[k], a, x) {
            flag(i, BAD_CROSSING);
            break;
        }
    }
}
