// Data shared by the VBD step kernels, laid out as src/state.rs and src/gpu/lib/vbd_inertia.rs
// store it. Not a kernel: host wrappers prepend this file (src/gpu/lib/mod.rs compose).

const VERTEX_KINEMATIC: u32 = 1u;
const VERTEX_NO_HISTORY: u32 = 2u;

// Bits of the augmented-Lagrangian step's per-vertex `solved` words (src/gpu/lib/al_pcg.rs):
// the vertex has unknowns; it moves with the step (solved, or kinematic with a target).
const VERTEX_SOLVED: u32 = 1u;
const VERTEX_MOVES: u32 = 2u;

// Per vertex, written by vbd_inertia: x^n; x̂ − x^n and the weight w; the inertia target offset
// x̂ − x^n + w g and m / w; the velocity update v = c1 Δx + c0 as (c0, c1); the initial guess
// x^(0) − x^n (w: the vertex's first obstacle contact along it, while vbd_advance runs).
struct VertexStep {
    start: vec4<f32>,
    predictor: vec4<f32>,
    inertia: vec4<f32>,
    velocity: vec4<f32>,
    offset: vec4<f32>,
}

// src/state.rs TetElement: 80 bytes.
struct Tet {
    vertices: vec4<u32>,
    dm_inv: mat3x3<f32>,
    volume: f32,
    material: u32,
    _pad: vec2<u32>,
}

// Sign bit of a vertex's `updates` w (its squared residual): the colour pass's displacement
// bound held the vertex (vbd_color); readers of the residual take its absolute value.
const BOUNDED_BIT: u32 = 0x80000000u;

// Body flags of a step (src/state.rs FROZEN_*): not accelerated by Chebyshev.
const FROZEN_CONTACT: u32 = 1u;
const FROZEN_DIVERGED: u32 = 2u;

// A time of impact in [0, 1] as bits ordered like the times, for integer atomicMin: −0 (which
// 0 · a negative number and max(0, −0) can give) becomes +0, whose bits are the smallest,
// where −0's are larger than any time's and the hit would be lost.
fn time_bits(t: f32) -> u32 {
    return bitcast<u32>(select(t, 0.0, t <= 0.0));
}

// Infinity or NaN, by bits: comparisons with NaN may be folded away by a shader compiler.
fn non_finite(x: vec4<f32>) -> bool {
    let e = vec4<u32>(0x7f800000u);
    return any((bitcast<vec4<u32>>(x) & e) == e);
}
