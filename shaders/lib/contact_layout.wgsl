// Where surface contact keeps its state on the GPU (src/gpu/contact/layout.rs ContactLayout and the
// CONTROL_* words): the `contacts` buffer of u32 words (per-vertex bounds, the vertex → pair
// lists, the pairs themselves, CCD links) and the small `control` buffer of counters, flags and
// per-body words. Kernels bind them atomic or plain, as they need. Not a kernel: host wrappers
// prepend this file.

struct ContactLayout {
    // Word offsets in `contacts`: per vertex the bound (x^det, b_v as f32 bits, four words),
    // the n + 1 row offsets of the vertex → pair lists, a fill cursor and the smallest pair
    // distance (f32 bits); then `capacity` pairs' four list entries (pair << 2 | slot) and the
    // pairs (PAIR_WORDS each); the block sums of the row offsets' scan; per detection query
    // (surface vertex, then surface edge) its stored pairs, scanned into where they start; and
    // that scan's block sums.
    clamp: u32,
    offsets: u32,
    cursor: u32,
    dmin: u32,
    entries: u32,
    pairs: u32,
    scan: u32,
    capacity: u32,
    vertices: u32,
    bodies: u32,
    counts: u32,
    count_scan: u32,
}

// `control` words.
// Pairs the latest detection found (may exceed the capacity: the rest were bounds only).
const CONTROL_PAIR_COUNT: u32 = 0u;
// Some vertex met its displacement bound since the last detection.
const CONTROL_BOUND_HIT: u32 = 1u;
// Some vertex's initial path leaves the last bounds: the CCD advance runs.
const CONTROL_ADVANCE_NEEDED: u32 = 2u;
// The bounds and pair lists in `contacts` come from a detection of this topology.
const CONTROL_BOUNDS_VALID: u32 = 3u;
// The detection being recorded runs (set by the schedule).
const CONTROL_DETECTING: u32 = 4u;
// Smallest distance of a pair stored by the latest detection (f32 bits; +inf when none).
const CONTROL_MIN_DISTANCE: u32 = 5u;
// Largest pair count any detection asked for since the host last cleared it (capacity growth).
const CONTROL_PAIRS_REQUESTED: u32 = 6u;
// Detections and CCD advances run in the frame (cleared at each frame's start).
const CONTROL_DETECTIONS: u32 = 7u;
const CONTROL_ADVANCES: u32 = 8u;
// Most pairs a detection found beyond the capacity since the host last cleared it, and (id + 1)
// of the first frame whose detection did (0: none).
const CONTROL_PAIRS_DROPPED: u32 = 9u;
const CONTROL_OVERFLOW_FRAME: u32 = 10u;
// (id + 1) of the frame running, written by the host before its commands.
const CONTROL_FRAME: u32 = 11u;
// Per-body words follow the header, `bodies` each: Chebyshev's FROZEN_* flags, the CCD's
// earliest time of impact (f32 bits), its group label and group time, the body boxes (six
// ordered words each) and each body's distance to the nearest other body box (f32 bits).
// The group label is a smaller body of the same group, or the body itself for a group's root.
const CONTROL_HEADER: u32 = 16u;

fn control_toi(l: ContactLayout, b: u32) -> u32 {
    return CONTROL_HEADER + l.bodies + b;
}

fn control_label(l: ContactLayout, b: u32) -> u32 {
    return CONTROL_HEADER + 2u * l.bodies + b;
}

fn control_group_toi(l: ContactLayout, b: u32) -> u32 {
    return CONTROL_HEADER + 3u * l.bodies + b;
}

fn control_body_box(l: ContactLayout, b: u32) -> u32 {
    return CONTROL_HEADER + 4u * l.bodies + 6u * b;
}

fn control_isolation(l: ContactLayout, b: u32) -> u32 {
    return CONTROL_HEADER + 10u * l.bodies + b;
}

// A pair's words (src/collision/surface_pairs.rs ContactPair, byte for byte).
const PAIR_WORDS: u32 = 16u;
const PAIR_VERTICES: u32 = 0u;
const PAIR_NORMAL: u32 = 4u;
const PAIR_KIND: u32 = 7u;
const PAIR_STIFFNESS: u32 = 8u;
const PAIR_FRICTION_FORCE: u32 = 9u;
const PAIR_FRICTION: u32 = 10u;
const PAIR_DISTANCE: u32 = 11u;
const PAIR_WEIGHTS: u32 = 12u;

// src/solver/vbd/contact.rs BOUND_FRACTION γ_p.
const BOUND_FRACTION: f32 = 0.45;
// src/collision/surface_pairs.rs EDGE_END_BAND: an edge–edge pair's energy fades out over this
// fraction of either edge towards its end points.
const EDGE_END_BAND: f32 = 0.1;
