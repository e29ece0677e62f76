// Each free volumetric body's rigid spin over a step (src/solver/vbd/spin.rs BodySpin::of): the
// centre of mass c, ω = I⁻¹ L about it, the rotation R by ω h and ω' = (R I Rᵀ)⁻¹ L, from x^n and
// v^n; then each of its vertices' terms (BodySpin::turn: the predictor's shift ρ and the
// velocity's κ) for vbd_inertia, zero for the other bodies' vertices. Sums run in a fixed tree
// order (deterministic, no float atomics); f32 where the CPU sums in f64.
// Phase 0: one workgroup per body, when every body has at most `chunk` vertices. Larger bodies
// are split into chunks of `chunk` vertices over a grid of chunks × bodies (one workgroup
// walking a 175k-vertex body took 3.1 ms on an H200): phase 1 sums each chunk's Σm x and Σm,
// phase 2 adds the body's phase-1 sums in a fixed order (every chunk gets the same centre) and
// sums its chunk's L and inertia about it, phase 3 (a workgroup per body) adds those and finds
// the spin into `spins`, phase 4 writes each chunk's vertex terms.
// Host wrapper: src/gpu/vbd/vbd_spin.rs; prepended: lib/step.wgsl, lib/rigid.wgsl.

struct Params {
    // Bodies; the first body record in `records` (vec4s).
    bodies: u32,
    records: u32,
    h: f32,
    phase: u32,
    // Vertices per chunk, chunks per body (phases 1–4).
    chunk: u32,
    chunks: u32,
    // Where the bodies' spins ω' start in `records` (phases 0 and 3 write them for vbd_color's
    // Rayleigh damping; zero for a body that does not turn).
    spin_records: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> velocities: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> masses: array<f32>;
@group(0) @binding(4) var<storage, read_write> records: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> rigid: array<u32>;
// Per vertex: ρ, then κ (w unused).
@group(0) @binding(6) var<storage, read_write> turns: array<vec4<f32>>;
// Phases 1–3: per body and chunk, four sums of phase 1 (Σm x, Σm), then nine of phase 2 (L,
// the inertia's six entries) after all bodies' phase-1 sums.
@group(0) @binding(7) var<storage, read_write> partials: array<f32>;
// Phases 3–4: per body, its spin as spin[0..3] and the rows of R (six vec4s).
@group(0) @binding(8) var<storage, read_write> spins: array<vec4<f32>>;

const SUMS: u32 = 9u;
// src/solver/vbd/spin.rs MIN_SPIN [rad/s].
const MIN_SPIN: f32 = 1e-6;
var<workgroup> partial: array<f32, 576>;
var<workgroup> working: u32;
// The body's spin, as lane 0 found it: centre (w: 1 when it spins), ω, ω', R.
var<workgroup> spin: array<vec4<f32>, 3>;
var<workgroup> turn: mat3x3<f32>;

// Tree sum of the first `width` partial sums of every invocation, into partial[0..width].
fn reduce(lane: u32, width: u32) {
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        if lane < stride {
            for (var k = 0u; k < width; k++) {
                partial[lane * SUMS + k] += partial[(lane + stride) * SUMS + k];
            }
        }
        workgroupBarrier();
    }
}

// Whether body b is free and volumetric (every invocation of the workgroup gets it).
fn body_works(b: u32, lane: u32) -> bool {
    if lane == 0u {
        let both = RIGID_ELIGIBLE | RIGID_VOLUMETRIC;
        working = u32((rigid[rigid_record(b) + RB_FLAGS] & both) == both);
        spin[0] = vec4<f32>(0.0);
    }
    return workgroupUniformLoad(&working) != 0u;
}

// Vertices first..end of body b, or of its chunk c when the bodies are chunked.
fn vertex_range(b: u32, c: u32) -> vec2<u32> {
    let record = records[params.records + 2u * b];
    let first = bitcast<u32>(record.x);
    let end = first + bitcast<u32>(record.y);
    if params.phase == 0u {
        return vec2<u32>(first, end);
    }
    let start = min(first + c * params.chunk, end);
    return vec2<u32>(start, min(start + params.chunk, end));
}

// Every invocation's Σm x and Σm over first + lane, first + lane + 64, … below end, summed
// across the workgroup into partial[0..4].
fn mass_sums(lane: u32, first: u32, end: u32) {
    var acc = vec4<f32>(0.0);
    for (var v = first + lane; v < end; v += 64u) {
        acc += vec4<f32>(positions[v].xyz * masses[v], masses[v]);
    }
    for (var k = 0u; k < 4u; k++) {
        partial[lane * SUMS + k] = acc[k];
    }
    workgroupBarrier();
    reduce(lane, 4u);
}

// L and the inertia tensor (xx, yy, zz, xy, xz, yz) about `center` over the vertices, summed
// across the workgroup into partial[0..9].
fn moment_sums(lane: u32, first: u32, end: u32, center: vec3<f32>) {
    var sums = array<f32, 9>();
    for (var v = first + lane; v < end; v += 64u) {
        let m = masses[v];
        let r = positions[v].xyz - center;
        let l = cross(r, velocities[v].xyz) * m;
        sums[0] += l.x;
        sums[1] += l.y;
        sums[2] += l.z;
        let terms = inertia_terms(r, m);
        for (var k = 0u; k < 6u; k++) {
            sums[3u + k] += terms[k];
        }
    }
    for (var k = 0u; k < SUMS; k++) {
        partial[lane * SUMS + k] = sums[k];
    }
    workgroupBarrier();
    reduce(lane, SUMS);
}

// Body b's chunk sums of `width` values starting at `at` (per chunk), added in a fixed order
// into partial[0..width] (every invocation of the workgroup calls it).
fn chunk_sums(lane: u32, b: u32, at: u32, width: u32) {
    var sums = array<f32, 9>();
    for (var c = lane; c < params.chunks; c += 64u) {
        let w = at + (b * params.chunks + c) * width;
        for (var k = 0u; k < width; k++) {
            sums[k] += partials[w + k];
        }
    }
    for (var k = 0u; k < width; k++) {
        partial[lane * SUMS + k] = sums[k];
    }
    workgroupBarrier();
    reduce(lane, width);
}

// The centre of mass from partial[0..4] (Σm x, Σm).
fn centre_of_mass() -> vec3<f32> {
    return vec3<f32>(partial[0], partial[1], partial[2]) / partial[3];
}

// Where phase 2's sums start in `partials`.
fn moments_at() -> u32 {
    return 4u * params.bodies * params.chunks;
}

// The spin from the body's mass and its L and inertia in partial[0..9] (lane 0 only), into
// `spin` and `turn` (spin[0].w stays 0 for a body without rotational inertia or turning slower
// than MIN_SPIN).
fn solve_spin(mass: f32, center: vec3<f32>) {
    let l = vec3<f32>(partial[0], partial[1], partial[2]);
    let inertia = mat3x3<f32>(
        vec3<f32>(partial[3], partial[6], partial[7]),
        vec3<f32>(partial[6], partial[4], partial[8]),
        vec3<f32>(partial[7], partial[8], partial[5]),
    );
    let det = determinant(inertia);
    if !(mass > 0.0 && det > 0.0) || non_finite(vec4<f32>(l, det)) {
        return;
    }
    let inverse = inverse3(inertia);
    let omega = inverse * l;
    let speed = length(omega);
    if !(speed > MIN_SPIN) || non_finite(vec4<f32>(omega, speed)) {
        return;
    }
    let rot = rotation_of(omega * params.h);
    spin[0] = vec4<f32>(center, 1.0);
    spin[1] = vec4<f32>(omega, 0.0);
    spin[2] = vec4<f32>(rot * (inverse * (transpose(rot) * l)), 0.0);
    turn = rot;
}

// Body b's spin ω' into its record for vbd_color, zero when it does not turn (lane 0, after
// solve_spin).
fn write_spin_record(b: u32) {
    records[params.spin_records + b] = select(vec4<f32>(0.0), vec4<f32>(spin[2].xyz, 0.0), spin[0].w != 0.0);
}

// The vertices' terms from `spin` and `turn` (all invocations, after a barrier).
fn write_turns(lane: u32, first: u32, end: u32) {
    let centre = spin[0];
    let omega = spin[1].xyz;
    let after = spin[2].xyz;
    let rot = turn;
    for (var v = first + lane; v < end; v += 64u) {
        var shift = vec3<f32>(0.0);
        var kappa = vec3<f32>(0.0);
        if centre.w != 0.0 {
            let r = positions[v].xyz - centre.xyz;
            let turned = rot * r;
            let wr = cross(omega, r);
            shift = turned - r - wr * params.h;
            kappa = cross(after, turned) - wr;
        }
        turns[2u * v] = vec4<f32>(shift, 0.0);
        turns[2u * v + 1u] = vec4<f32>(kappa, 0.0);
    }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    // Phases 1, 2 and 4: chunk group.x of body group.y; phases 0 and 3: body group.x.
    var b = group.x;
    var c = 0u;
    if params.phase == 1u || params.phase == 2u || params.phase == 4u {
        b = group.y;
        c = group.x;
    }
    let range = vertex_range(b, c);
    let works = body_works(b, lane);
    switch params.phase {
        case 0u: {
            if works {
                mass_sums(lane, range.x, range.y);
                let mass = partial[3];
                let center = centre_of_mass();
                workgroupBarrier();
                moment_sums(lane, range.x, range.y, center);
                if lane == 0u {
                    solve_spin(mass, center);
                }
            }
            workgroupBarrier();
            if lane == 0u {
                write_spin_record(b);
            }
            write_turns(lane, range.x, range.y);
        }
        case 1u: {
            if !works {
                return;
            }
            mass_sums(lane, range.x, range.y);
            if lane == 0u {
                for (var k = 0u; k < 4u; k++) {
                    partials[(b * params.chunks + c) * 4u + k] = partial[k];
                }
            }
        }
        case 2u: {
            if !works {
                return;
            }
            chunk_sums(lane, b, 0u, 4u);
            let center = centre_of_mass();
            workgroupBarrier();
            moment_sums(lane, range.x, range.y, center);
            if lane == 0u {
                for (var k = 0u; k < SUMS; k++) {
                    partials[moments_at() + (b * params.chunks + c) * SUMS + k] = partial[k];
                }
            }
        }
        case 3u: {
            if works {
                chunk_sums(lane, b, 0u, 4u);
                let mass = partial[3];
                let center = centre_of_mass();
                workgroupBarrier();
                chunk_sums(lane, b, moments_at(), SUMS);
                if lane == 0u {
                    solve_spin(mass, center);
                }
            }
            workgroupBarrier();
            if lane == 0u {
                write_spin_record(b);
                spins[6u * b] = spin[0];
                spins[6u * b + 1u] = spin[1];
                spins[6u * b + 2u] = spin[2];
                spins[6u * b + 3u] = vec4<f32>(turn[0], 0.0);
                spins[6u * b + 4u] = vec4<f32>(turn[1], 0.0);
                spins[6u * b + 5u] = vec4<f32>(turn[2], 0.0);
            }
        }
        default: {
            if lane == 0u {
                spin[0] = spins[6u * b];
                spin[1] = spins[6u * b + 1u];
                spin[2] = spins[6u * b + 2u];
                turn = mat3x3<f32>(spins[6u * b + 3u].xyz, spins[6u * b + 4u].xyz, spins[6u * b + 5u].xyz);
            }
            workgroupBarrier();
            write_turns(lane, range.x, range.y);
        }
    }
}
