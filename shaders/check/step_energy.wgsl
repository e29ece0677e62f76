// Energies of a GPU substep for the safety check's energy test (src/solver/check/energy.rs
// body_energies, src/runtime/fallback/check.rs EnergyGain): per body, kinetic + elastic and
// gravitational + obstacle-contact energy at the substep's start and at its end, and the height
// its vertices span (start, end and where the start velocities were heading). step_soft joins
// bodies into islands and applies the test. Dispatches by `phase`:
//   0  per element (tets, then membrane triangles, then hinges): its elastic energy;
//   1  at the substep's start, per body: the start's energies and span;
//   2  per element again, after vbd_finish;
//   3  per body: the end's energies, the span grown by the end positions.
// Phases 1 and 3 run one workgroup per body when every body has at most `chunk` vertices
// (`chunks` = 1). Larger bodies are cut into chunks of `chunk` vertices, one workgroup each
// (a grid of chunks × bodies; a body's chunks past its end sum nothing), which leave partial
// sums after the element words; phases 4 (start) and 5 (end) then add each body's partials,
// one workgroup per body. One workgroup summing a 175k-vertex body alone took 11 ms on an
// H200; the chunks take the GPU's width. An element's energy goes to its vertices in equal
// shares through the vertex → element lists (gather only, no float atomics), and every sum
// runs in a fixed order, so the result does not depend on scheduling. Host
// wrapper: src/gpu/check/step_energy.rs; prepended: lib/step.wgsl, lib/obstacles.wgsl,
// lib/elements.wgsl, lib/element_energy.wgsl, lib/energy_layout.wgsl, lib/layer.wgsl.


struct Params {
    phase: u32,
    // Elements (phases 0 and 2) or bodies.
    count: u32,
    bodies: u32,
    // Record offsets (vec4s) of the bodies, membrane triangles and hinges in `records`.
    body_records: u32,
    tris: u32,
    hinges: u32,
    tet_count: u32,
    tri_count: u32,
    // Vertex → element lists in `index` (entries: element << 2 | slot).
    tet_offsets: u32,
    tet_entries: u32,
    tri_offsets: u32,
    tri_entries: u32,
    hinge_offsets: u32,
    hinge_entries: u32,
    // Bit 0: the contact stiffness is per kilogram of the vertex's mass; bit 1: the contact
    // energy is the stiffening layer's (lib/layer.wgsl), not the penalty's.
    contact_flags: u32,
    // Vertices per chunk, and chunks per body (the largest body's), in phases 1 and 3; where
    // the partial sums start in `energy` (four words per chunk slot, body-major).
    chunk: u32,
    // xyz: gravity [m/s²]; w: the substep's length [s].
    gravity: vec4<f32>,
    // Obstacle contact: penalty stiffness and offset δ (src/collision/contact.rs).
    stiffness: f32,
    offset: f32,
    chunks: u32,
    partials: u32,
    obstacles: ObstacleSet,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> velocities: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> masses: array<f32>;
@group(0) @binding(4) var<storage, read> tets: array<Tet>;
@group(0) @binding(5) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> index: array<u32>;
@group(0) @binding(7) var<storage, read_write> energy: array<atomic<u32>>;

var<workgroup> kinetic: array<f32, 64>;
var<workgroup> potential: array<f32, 64>;
var<workgroup> low: array<f32, 64>;
var<workgroup> high: array<f32, 64>;

fn element_energy(e: u32) -> f32 {
    let l = ElementTables(params.tet_count, params.tri_count, params.tris, params.hinges);
    let v = element_vertices(l, e);
    let x = array<vec3<f32>, 4>(positions[v.x].xyz, positions[v.y].xyz, positions[v.z].xyz, positions[v.w].xyz);
    return element_energy_at(l, e, x);
}

fn stored(e: u32) -> f32 {
    return bitcast<f32>(atomicLoad(&energy[ENERGY_WORDS * params.bodies + e]));
}

// Vertex v's share of the energy of its elements.
fn element_share(v: u32) -> f32 {
    var sum = 0.0;
    for (var k = index[params.tet_offsets + v]; k < index[params.tet_offsets + v + 1u]; k++) {
        sum += 0.25 * stored(index[params.tet_entries + k] >> 2u);
    }
    let tris = params.tet_count;
    for (var k = index[params.tri_offsets + v]; k < index[params.tri_offsets + v + 1u]; k++) {
        sum += stored(tris + (index[params.tri_entries + k] >> 2u)) / 3.0;
    }
    let hinges = params.tet_count + params.tri_count;
    for (var k = index[params.hinge_offsets + v]; k < index[params.hinge_offsets + v + 1u]; k++) {
        sum += 0.25 * stored(hinges + (index[params.hinge_entries + k] >> 2u));
    }
    return sum;
}

// One invocation's sums over vertices first + lane, first + lane + 64, … below end: kinetic +
// elastic, potential, lowest and highest y.
fn vertex_sums(first: u32, end: u32, lane: u32, start: bool) -> vec4<f32> {
    var ke = 0.0;
    var pe = 0.0;
    var lo = 3.0e38;
    var hi = -3.0e38;
    for (var v = first + lane; v < end; v += 64u) {
        let x = positions[v].xyz;
        let u = velocities[v].xyz;
        let m = masses[v];
        ke += 0.5 * m * dot(u, u) + element_share(v);
        pe -= m * dot(params.gravity.xyz, x);
        var k_c = params.stiffness;
        if (params.contact_flags & 1u) != 0u {
            k_c *= m;
        }
        for (var o = 0u; o < params.obstacles.count; o++) {
            let distance = obstacle_distance(params.obstacles.items[o], x).d;
            if (params.contact_flags & 2u) != 0u {
                pe += layer_energy(distance, k_c, params.offset);
            } else {
                let d = params.offset - distance;
                if d > 0.0 {
                    pe += 0.5 * k_c * d * d;
                }
            }
        }
        lo = min(lo, x.y);
        hi = max(hi, x.y);
        if start {
            let heading = x.y + params.gravity.w * u.y;
            lo = min(lo, heading);
            hi = max(hi, heading);
        }
    }
    return vec4<f32>(ke, pe, lo, hi);
}

// The workgroup's sums of every invocation's `s` (all 64 call it, in uniform control flow), in
// a fixed tree order.
fn workgroup_sums(lane: u32, s: vec4<f32>) -> vec4<f32> {
    kinetic[lane] = s.x;
    potential[lane] = s.y;
    low[lane] = s.z;
    high[lane] = s.w;
    workgroupBarrier();
    for (var stride = 32u; stride > 0u; stride >>= 1u) {
        if lane < stride {
            kinetic[lane] += kinetic[lane + stride];
            potential[lane] += potential[lane + stride];
            low[lane] = min(low[lane], low[lane + stride]);
            high[lane] = max(high[lane], high[lane + stride]);
        }
        workgroupBarrier();
    }
    return vec4<f32>(kinetic[0], potential[0], low[0], high[0]);
}

// Body b's energies and span written to its block (at the start), or its end's energies and
// the span grown.
fn write_body(b: u32, total: vec4<f32>, start: bool) {
    let w = ENERGY_WORDS * b;
    if start {
        atomicStore(&energy[w + E_BEFORE], bitcast<u32>(total.x));
        atomicStore(&energy[w + P_BEFORE], bitcast<u32>(total.y));
        atomicStore(&energy[w + Y_LOW], bitcast<u32>(total.z));
        atomicStore(&energy[w + Y_HIGH], bitcast<u32>(total.w));
        return;
    }
    atomicStore(&energy[w + E_AFTER], bitcast<u32>(total.x));
    atomicStore(&energy[w + P_AFTER], bitcast<u32>(total.y));
    let was_low = bitcast<f32>(atomicLoad(&energy[w + Y_LOW]));
    let was_high = bitcast<f32>(atomicLoad(&energy[w + Y_HIGH]));
    atomicStore(&energy[w + Y_LOW], bitcast<u32>(min(was_low, total.z)));
    atomicStore(&energy[w + Y_HIGH], bitcast<u32>(max(was_high, total.w)));
}

fn partial_at(slot: u32) -> vec4<f32> {
    let w = params.partials + 4u * slot;
    return vec4<f32>(bitcast<f32>(atomicLoad(&energy[w])), bitcast<f32>(atomicLoad(&energy[w + 1u])),
                     bitcast<f32>(atomicLoad(&energy[w + 2u])), bitcast<f32>(atomicLoad(&energy[w + 3u])));
}

@compute @workgroup_size(64)
fn main(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    if params.phase == 0u || params.phase == 2u {
        let e = id.x;
        if e < params.count {
            atomicStore(&energy[ENERGY_WORDS * params.bodies + e], bitcast<u32>(element_energy(e)));
        }
        return;
    }
    let start = params.phase == 1u || params.phase == 4u;
    if params.phase >= 4u {
        // A body's partials, lane by lane, then across the workgroup.
        let b = group.x;
        if b >= params.bodies {
            return;
        }
        var s = vec4<f32>(0.0, 0.0, 3.0e38, -3.0e38);
        for (var c = lane; c < params.chunks; c += 64u) {
            let p = partial_at(b * params.chunks + c);
            s = vec4<f32>(s.x + p.x, s.y + p.y, min(s.z, p.z), max(s.w, p.w));
        }
        let total = workgroup_sums(lane, s);
        if lane == 0u {
            write_body(b, total, start);
        }
        return;
    }
    // Phases 1 and 3: chunk group.x of body group.y (the whole body when chunks = 1).
    let b = group.y;
    let record = bitcast<vec4<u32>>(records[params.body_records + 2u * b]);
    var first = record.x;
    var end = record.x + record.y;
    if params.chunks > 1u {
        first = min(record.x + group.x * params.chunk, end);
        end = min(first + params.chunk, end);
    }
    let total = workgroup_sums(lane, vertex_sums(first, end, lane, start));
    if lane != 0u {
        return;
    }
    if params.chunks > 1u {
        let w = params.partials + 4u * (b * params.chunks + group.x);
        atomicStore(&energy[w], bitcast<u32>(total.x));
        atomicStore(&energy[w + 1u], bitcast<u32>(total.y));
        atomicStore(&energy[w + 2u], bitcast<u32>(total.z));
        atomicStore(&energy[w + 3u], bitcast<u32>(total.w));
    } else {
        write_body(b, total, start);
    }
}
