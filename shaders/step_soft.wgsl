// The safety check's residual rule on the device (src/runtime/safety.rs residual_verdict,
// ALGORITHMS §8): the GPU twin of the CPU's ResidualGrowth flag, beside step_check's hard tests.
// A body whose sweeps ended with much more force than its first sweep left (no progress) raises
// a soft flag; three in the last five substeps, or a force past a hundred times its weight
// (diverged) at once, give it field bits in `bad`, so step_guard rolls it back like a NaN and
// the host redoes the frame with the fallback (src/runtime/world/gpu/check.rs).
// Three dispatches by `phase`:
//   0  one workgroup per body, after the first sweep: its squared residual, kept in `soft`,
//      and the contrast flag cleared;
//   1  per vertex, at the end (surface contact only): a contact pair between tet bodies whose
//      shear moduli differ more than `contrast` times makes any growth count for both
//      (src/runtime/safety.rs any_growth_stalls);
//   2  one workgroup per body, at the end: the rule, the body's window of soft flags, the bits.
// Sums run in a fixed tree order (deterministic, no float atomics). Host wrapper:
// src/gpu/kernels/step_soft.rs; prepended: lib/contact_layout.wgsl.

// Field bits beside step_guard's (1, 2, 4) and step_check's (8, 16, 32).
const BAD_DIVERGED: u32 = 64u;
const BAD_STALLED: u32 = 128u;
// In a body's second `soft` word, above its window of flags: any growth counts this substep.
const STRICT: u32 = 0x100u;
const HISTORY: u32 = 0xffu;
// step_guard's bits.
const NON_FINITE: u32 = 7u;

struct Params {
    phase: u32,
    bodies: u32,
    // Where the body records start in `records`, in vec4s.
    body_records: u32,
    // Where vertex_body starts in `index`.
    vertex_body: u32,
    vertices: u32,
    // |g| [m/s²].
    gravity: f32,
    // RESIDUAL_GROWTH², RESIDUAL_WEIGHT_SHARE, DIVERGED_WEIGHTS, STIFFNESS_CONTRAST.
    growth2: f32,
    weight_share: f32,
    diverged: f32,
    contrast: f32,
    // SOFT_LIMIT flags within a window of SOFT_WINDOW substeps (as a bit mask).
    soft_limit: u32,
    window_mask: u32,
    contact: ContactLayout,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> records: array<vec4<f32>>;
// Per vertex: w the squared residual of its last update (vbd_color).
@group(0) @binding(2) var<storage, read> updates: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> index: array<u32>;
@group(0) @binding(4) var<storage, read> contacts: array<u32>;
// Per body: its mass [kg] and the largest shear modulus of its tets [Pa] (0: cloth).
@group(0) @binding(5) var<storage, read> constants: array<vec2<f32>>;
// Per body: the first sweep's squared residual (f32 bits), then the window of soft flags
// (newest in bit 0) and STRICT.
@group(0) @binding(6) var<storage, read_write> soft: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> bad: array<atomic<u32>>;

var<workgroup> partial: array<f32, 64>;

// The body's squared residual, summed by the whole workgroup; lane 0 reads it.
fn body_residual(first: u32, end: u32, lane: u32) -> f32 {
    var sum = 0.0;
    for (var v = first + lane; v < end; v += 64u) {
        sum += updates[v].w;
    }
    partial[lane] = sum;
    workgroupBarrier();
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        if lane < stride {
            partial[lane] += partial[lane + stride];
        }
        workgroupBarrier();
    }
    return partial[0];
}

fn contrasting(a: f32, b: f32) -> bool {
    return a > 0.0 && b > 0.0 && max(a, b) > params.contrast * min(a, b);
}

@compute @workgroup_size(64)
fn main(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    if params.phase == 1u {
        let v = id.x;
        if v >= params.vertices {
            return;
        }
        let l = params.contact;
        for (var e = contacts[l.offsets + v]; e < contacts[l.offsets + v + 1u]; e++) {
            let pair = l.pairs + PAIR_WORDS * (contacts[l.entries + e] >> 2u);
            let a = index[params.vertex_body + contacts[pair + PAIR_VERTICES]];
            let b = index[params.vertex_body + contacts[pair + PAIR_VERTICES + 3u]];
            if a != b && contrasting(constants[a].y, constants[b].y) {
                atomicOr(&soft[2u * a + 1u], STRICT);
                atomicOr(&soft[2u * b + 1u], STRICT);
            }
        }
        return;
    }
    let b = group.x;
    if b >= params.bodies {
        return;
    }
    let record = bitcast<vec4<u32>>(records[params.body_records + 2u * b]);
    let r2 = body_residual(record.x, record.x + record.y, lane);
    if lane != 0u {
        return;
    }
    if params.phase == 0u {
        atomicStore(&soft[2u * b], bitcast<u32>(r2));
        atomicAnd(&soft[2u * b + 1u], HISTORY);
        return;
    }
    let first = bitcast<f32>(atomicLoad(&soft[2u * b]));
    let word = atomicLoad(&soft[2u * b + 1u]);
    let c = constants[b];
    let weight = max(c.x * params.gravity, 1e-3);
    // Cloth, and tet bodies touching a contrasting one, flag on any growth.
    let strict = c.y == 0.0 || (word & STRICT) != 0u;
    var bits = 0u;
    var stalled = false;
    if r2 > first && sqrt(r2) > params.diverged * weight {
        bits = BAD_DIVERGED;
    } else if r2 > select(params.growth2 * first, first, strict) && sqrt(r2) > params.weight_share * weight {
        stalled = true;
    }
    var history = ((word << 1u) | select(0u, 1u, stalled)) & params.window_mask;
    if countOneBits(history) >= params.soft_limit {
        bits |= BAD_STALLED;
        history = 0u;
    }
    atomicStore(&soft[2u * b + 1u], history);
    if bits != 0u {
        // Named by its first vertex (step_guard keeps the lowest flagged one).
        atomicMax(&bad[2u * b], 0xffffffffu - record.x);
        let before = atomicOr(&bad[2u * b + 1u], bits);
        // The world word: step_guard then puts every body back for the host's redo (see
        // there); not for a body already non-finite, which is rolled back alone.
        if (before & NON_FINITE) == 0u {
            atomicOr(&bad[arrayLength(&bad) - 1u], bits);
        }
    }
}
