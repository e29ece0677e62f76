// The safety check's soft flags on the device (docs/algorithms.md §8), beside step_check's hard tests:
// the residual rule (src/solver/check/mod.rs residual_verdict, the CPU's ResidualGrowth) and the
// energy test (src/runtime/fallback/check.rs, EnergyGain) on the energies step_energy summed.
// A body whose sweeps ended with much more force than its first sweep left (no progress), or
// whose island's energy grew with nothing doing work on it, raises a soft flag; three in the
// last five substeps, or a force past a hundred times its weight (diverged) at once, give it
// field bits in `bad`, so step_guard rolls the substep back and the host redoes the frame with
// the fallback (src/runtime/world/gpu/check.rs).
// Five dispatches by `phase`:
//   0  one workgroup per body, after the first sweep: its squared residual, kept in `soft`,
//      its flags of the substep cleared, its island label reset;
//   1  per vertex, at the end (surface contact only): a contact pair joins its bodies' islands,
//      and between bodies whose tet shear moduli differ more than `contrast` times, or whose
//      mean vertex masses differ more than `mass_contrast` times, makes growth count as a
//      stall for both (src/solver/check/mod.rs read_contacts; bodies alike never stall);
//   2  one workgroup per body: its own verdict, a clamp lock or a stalled residual (a
//      diverged one gives its bits at once);
//   3  one workgroup per island (its lowest body): the island's soft flag, as the CPU takes it
//      (src/runtime/fallback/check.rs): its lowest body's own verdict, else the energy test;
//   4  per body: the flag enters the body's window; three in five give the bits.
// Islands here are bodies joined by contact pairs (the bodies that exchange forces); the CPU
// also joins bodies whose swept boxes overlap. Sums run in a fixed tree order (deterministic, no
// float atomics). Host wrapper: src/gpu/check/step_soft.rs; prepended:
// lib/step.wgsl, lib/contact_layout.wgsl, lib/unsafe_flags.wgsl, lib/energy_layout.wgsl.

// Field bits beside step_guard's (1, 2, 4) and step_check's (8, 16, 32).
const BAD_DIVERGED: u32 = 64u;
const BAD_STALLED: u32 = 128u;
const BAD_ENERGY: u32 = 256u;
const BAD_CLAMP_LOCK: u32 = 512u;
// Per body in `soft`: its squared residual after the first sweep, its word of flags, and the
// heaviest weight among the bodies it touches through contact pairs (f32 bits, as the CPU's
// read_contacts takes it).
const SOFT_WORDS: u32 = 3u;
// In a body's second `soft` word, above its window of flags: growth counts as a stall this
// substep.
const STRICT: u32 = 0x100u;
// There too, this substep's: the body's own verdict, and its island's flag (one of three).
const OWN_LOCK: u32 = 0x400u;
const OWN_STALL: u32 = 0x800u;
const ISLAND_LOCK: u32 = 0x1000u;
const ISLAND_STALL: u32 = 0x2000u;
const ISLAND_ENERGY: u32 = 0x4000u;
const OWN: u32 = 0xc00u;
const ISLAND: u32 = 0x7000u;
const HISTORY: u32 = 0xffu;

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
    // MASS_CONTRAST, RESIDUAL_WEIGHT_SHARE, DIVERGED_WEIGHTS, STIFFNESS_CONTRAST.
    mass_contrast: f32,
    weight_share: f32,
    diverged: f32,
    contrast: f32,
    // SOFT_LIMIT flags within a window of SOFT_WINDOW substeps (as a bit mask).
    soft_limit: u32,
    window_mask: u32,
    // The energy test: on (1) or off; ENERGY_GAIN, its floor [J]; the margin around an island's
    // height [m].
    energy_test: u32,
    energy_gain: f32,
    energy_floor: f32,
    margin: f32,
    // CLAMP_LOCK_SHARE: of a body's surface vertices, the share that may end held by their
    // displacement bounds.
    clamp_share: f32,
    // The gravity a body's weight is taken under for the residual rule: |g|, at least
    // MIN_WEIGHT_GRAVITY [m/s²].
    weight_gravity: f32,
    _pad1: u32,
    _pad2: u32,
    contact: ContactLayout,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> records: array<vec4<f32>>;
// Per vertex: w the squared residual of its last update (vbd_color).
@group(0) @binding(2) var<storage, read> updates: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> index: array<u32>;
@group(0) @binding(4) var<storage, read> contacts: array<u32>;
// Per body: its mass [kg], the largest shear modulus of its tets [Pa] (0: cloth) and its
// number of surface vertices.
@group(0) @binding(5) var<storage, read> constants: array<vec4<f32>>;
// Per body: the first sweep's squared residual (f32 bits), then the window of soft flags
// (newest in bit 0) and STRICT.
@group(0) @binding(6) var<storage, read_write> soft: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> bad: array<atomic<u32>>;
// step_energy's per-body words (lib/energy_layout.wgsl): the energies at the start and end,
// the height spanned, DRIVEN (set by the host) and the island label.
@group(0) @binding(8) var<storage, read_write> energy: array<atomic<u32>>;

var<workgroup> partial: array<f32, 64>;
var<workgroup> before: array<f32, 64>;
var<workgroup> after: array<f32, 64>;
var<workgroup> scale: array<f32, 64>;
var<workgroup> mass: array<f32, 64>;
var<workgroup> low: array<f32, 64>;
var<workgroup> high: array<f32, 64>;
var<workgroup> driven: array<u32, 64>;
var<workgroup> flagged: array<u32, 64>;
var<workgroup> decided: u32;

// The body's squared residual and the number of its vertices the bound held (BOUNDED_BIT),
// summed by the whole workgroup; lane 0 reads them.
fn body_residual(first: u32, end: u32, lane: u32) -> vec2<f32> {
    var sum = 0.0;
    var held = 0u;
    for (var v = first + lane; v < end; v += 64u) {
        let w = updates[v].w;
        sum += abs(w);
        held += select(0u, 1u, (bitcast<u32>(w) & BOUNDED_BIT) != 0u);
    }
    partial[lane] = sum;
    driven[lane] = held;
    workgroupBarrier();
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        if lane < stride {
            partial[lane] += partial[lane + stride];
            driven[lane] += driven[lane + stride];
        }
        workgroupBarrier();
    }
    return vec2<f32>(partial[0], f32(driven[0]));
}

fn energy_word(b: u32, k: u32) -> f32 {
    return bitcast<f32>(atomicLoad(&energy[ENERGY_WORDS * b + k]));
}

// The island of body b: labels point to lower bodies, so the walk ends.
fn find(b: u32) -> u32 {
    var r = b;
    var up = atomicLoad(&energy[ENERGY_WORDS * r + LABEL]);
    while up != r {
        r = up;
        up = atomicLoad(&energy[ENERGY_WORDS * r + LABEL]);
    }
    return r;
}

// Joins the islands of bodies a and b (lock-free: the higher root is hung under the lower one
// only if it is still a root).
fn join(a: u32, b: u32) {
    loop {
        let ra = find(a);
        let rb = find(b);
        if ra == rb {
            return;
        }
        let lo = min(ra, rb);
        let hi = max(ra, rb);
        if atomicCompareExchangeWeak(&energy[ENERGY_WORDS * hi + LABEL], hi, lo).exchanged {
            return;
        }
    }
}

// The soft flag of the island whose root is b, given to each of its bodies: the own verdict of
// its lowest body that has one, else the energy test (src/runtime/fallback/check.rs): its kinetic,
// elastic, gravitational and contact energy grew, with no pin of it moving, by more than
// ENERGY_GAIN of its energy scale (kinetic + elastic energy + weight × height) plus the floor.
fn island_flag(b: u32, lane: u32) {
    if lane == 0u {
        decided = select(0u, 1u, find(b) == b);
    }
    if workgroupUniformLoad(&decided) == 0u {
        return;
    }
    var e0 = 0.0;
    var e1 = 0.0;
    var s = 0.0;
    var m = 0.0;
    var lo = 3.0e38;
    var hi = -3.0e38;
    var moved = 0u;
    var first = 0xffffffffu;
    for (var k = lane; k < params.bodies; k += 64u) {
        if find(k) == b {
            e0 += energy_word(k, E_BEFORE) + energy_word(k, P_BEFORE);
            e1 += energy_word(k, E_AFTER) + energy_word(k, P_AFTER);
            s += energy_word(k, E_BEFORE);
            m += constants[k].x;
            lo = min(lo, energy_word(k, Y_LOW));
            hi = max(hi, energy_word(k, Y_HIGH));
            moved = max(moved, atomicLoad(&energy[ENERGY_WORDS * k + DRIVEN]));
            if (atomicLoad(&soft[SOFT_WORDS * k + 1u]) & OWN) != 0u {
                first = min(first, k);
            }
        }
    }
    before[lane] = e0;
    after[lane] = e1;
    scale[lane] = s;
    mass[lane] = m;
    low[lane] = lo;
    high[lane] = hi;
    driven[lane] = moved;
    flagged[lane] = first;
    workgroupBarrier();
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        if lane < stride {
            before[lane] += before[lane + stride];
            after[lane] += after[lane + stride];
            scale[lane] += scale[lane + stride];
            mass[lane] += mass[lane + stride];
            low[lane] = min(low[lane], low[lane + stride]);
            high[lane] = max(high[lane], high[lane + stride]);
            driven[lane] = max(driven[lane], driven[lane + stride]);
            flagged[lane] = min(flagged[lane], flagged[lane + stride]);
        }
        workgroupBarrier();
    }
    if lane == 0u {
        var flag = 0u;
        if flagged[0] != 0xffffffffu {
            // Its lowest flagged body's kind, a clamp lock before a stalled residual.
            let own = atomicLoad(&soft[SOFT_WORDS * flagged[0] + 1u]);
            flag = select(ISLAND_STALL, ISLAND_LOCK, (own & OWN_LOCK) != 0u);
        } else if params.energy_test != 0u {
            let height = high[0] - low[0] + 2.0 * params.margin;
            let budget = params.energy_gain * (scale[0] + mass[0] * params.gravity * height) + params.energy_floor;
            if driven[0] == 0u && after[0] > before[0] + budget {
                flag = ISLAND_ENERGY;
            }
        }
        decided = flag;
    }
    let flag = workgroupUniformLoad(&decided);
    if flag == 0u {
        return;
    }
    for (var k = lane; k < params.bodies; k += 64u) {
        if find(k) == b {
            atomicOr(&soft[SOFT_WORDS * k + 1u], flag);
        }
    }
}

// Body b's window of soft flags takes its island's flag of the substep; at SOFT_LIMIT flags the
// body gets the bits of the flag's kind and the window starts again.
fn window(b: u32, first: u32) {
    let word = atomicLoad(&soft[SOFT_WORDS * b + 1u]);
    let flag = word & ISLAND;
    var history = ((word << 1u) | select(0u, 1u, flag != 0u)) & params.window_mask;
    if countOneBits(history) >= params.soft_limit {
        if (flag & ISLAND_LOCK) != 0u {
            flag_unsafe(b, first, BAD_CLAMP_LOCK);
        } else if (flag & ISLAND_STALL) != 0u {
            flag_unsafe(b, first, BAD_STALLED);
        } else {
            flag_unsafe(b, first, BAD_ENERGY);
        }
        history = 0u;
    }
    atomicStore(&soft[SOFT_WORDS * b + 1u], history);
}

fn beyond(a: f32, b: f32, ratio: f32) -> bool {
    return a > 0.0 && b > 0.0 && max(a, b) > ratio * min(a, b);
}

// Bodies' constants (mass, shear modulus, surface vertices, mean vertex mass): stiffness or
// vertex-mass contrast (src/solver/check/mod.rs contrasting).
fn contrasting(a: vec4<f32>, b: vec4<f32>) -> bool {
    return beyond(a.y, b.y, params.contrast) || beyond(a.w, b.w, params.mass_contrast);
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
            if a != b {
                join(a, b);
                // Positive floats order as their bits.
                atomicMax(&soft[SOFT_WORDS * a + 2u], bitcast<u32>(constants[b].x * params.weight_gravity));
                atomicMax(&soft[SOFT_WORDS * b + 2u], bitcast<u32>(constants[a].x * params.weight_gravity));
                if contrasting(constants[a], constants[b]) {
                    atomicOr(&soft[SOFT_WORDS * a + 1u], STRICT);
                    atomicOr(&soft[SOFT_WORDS * b + 1u], STRICT);
                }
            }
        }
        return;
    }
    let b = group.x;
    if b >= params.bodies {
        return;
    }
    if params.phase == 3u {
        island_flag(b, lane);
        return;
    }
    let record = bitcast<vec4<u32>>(records[params.body_records + 2u * b]);
    if params.phase == 4u {
        if lane == 0u {
            window(b, record.x);
        }
        return;
    }
    let sums = body_residual(record.x, record.x + record.y, lane);
    let r2 = sums.x;
    if lane != 0u {
        return;
    }
    if params.phase == 0u {
        atomicStore(&soft[SOFT_WORDS * b], bitcast<u32>(r2));
        atomicAnd(&soft[SOFT_WORDS * b + 1u], HISTORY);
        atomicStore(&soft[SOFT_WORDS * b + 2u], 0u);
        atomicStore(&energy[ENERGY_WORDS * b + LABEL], b);
        return;
    }
    let first = bitcast<f32>(atomicLoad(&soft[SOFT_WORDS * b]));
    let word = atomicLoad(&soft[SOFT_WORDS * b + 1u]);
    let c = constants[b];
    let weight = max(c.x * params.weight_gravity, 1e-3);
    // The force a stall is measured against: the heaviest weight among the body and those it
    // touches (src/solver/check/mod.rs residual_verdict's `carried`).
    let carried = max(weight, bitcast<f32>(atomicLoad(&soft[SOFT_WORDS * b + 2u])));
    // Cloth, and bodies touching a contrasting one, flag on growth; others only diverge.
    let strict = c.y == 0.0 || (word & STRICT) != 0u;
    var own = 0u;
    if sums.y > params.clamp_share * c.z {
        own = OWN_LOCK;
    }
    if r2 > first && sqrt(r2) > params.diverged * weight {
        flag_unsafe(b, record.x, BAD_DIVERGED);
    } else if strict && r2 > first && sqrt(r2) > params.weight_share * carried {
        own |= OWN_STALL;
    }
    atomicOr(&soft[SOFT_WORDS * b + 1u], own);
}
