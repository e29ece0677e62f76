//! Where surface contact keeps its state on the GPU: the `contacts` buffer ([`ContactLayout`]:
//! per-vertex bounds, the vertex → pair lists, the pairs) and the small
//! `control` buffer (counters and flags the kernels share, per-body words), the twins of
//! `shaders/lib/contact_layout.wgsl`. The CPU path keeps the same data in its contact scratch
//! (`solver/vbd/contact.rs`); `ContactLayout::pack_cpu` writes that into this layout, which is
//! how the kernels that read contacts are tested against the CPU.

use bytemuck::{Pod, Zeroable};

#[cfg(test)]
use crate::collision::surface_pairs::ContactPair;

/// Pairs the latest detection found (may exceed the capacity).
pub const CONTROL_PAIR_COUNT: usize = 0;
/// Some vertex met its displacement bound since the last detection.
#[cfg(test)]
pub const CONTROL_BOUND_HIT: usize = 1;
/// The CCD advance must run this step.
pub const CONTROL_ADVANCE_NEEDED: usize = 2;
/// The bounds and pair lists come from a detection of this topology.
pub const CONTROL_BOUNDS_VALID: usize = 3;
/// The detection being recorded runs.
#[cfg(test)]
pub const CONTROL_DETECTING: usize = 4;
/// Smallest distance of a pair stored by the latest detection (f32 bits).
pub const CONTROL_MIN_DISTANCE: usize = 5;
/// Largest pair count a detection asked for since the host last cleared it.
pub const CONTROL_PAIRS_REQUESTED: usize = 6;
/// Detections run in the frame.
pub const CONTROL_DETECTIONS: usize = 7;
/// CCD advances run in the frame.
pub const CONTROL_ADVANCES: usize = 8;
/// Most pairs a detection found beyond the capacity since the host last cleared it.
pub const CONTROL_PAIRS_DROPPED: usize = 9;
/// `id + 1` of the first frame whose detection dropped pairs since the host last cleared it.
pub const CONTROL_OVERFLOW_FRAME: usize = 10;
/// `id + 1` of the frame running (written by the host).
pub const CONTROL_FRAME: usize = 11;
/// Words before the per-body words.
pub const CONTROL_HEADER: usize = 16;
/// Per-body words of `control`: frozen flags, time of impact, group label, group time, box (6),
/// isolation.
pub const CONTROL_WORDS_PER_BODY: usize = 11;
/// Words of a [`crate::collision::surface_pairs::ContactPair`].
pub const PAIR_WORDS: usize = 16;

/// Words of the `control` buffer for `bodies` bodies.
pub fn control_words(bodies: usize) -> usize {
    CONTROL_HEADER + CONTROL_WORDS_PER_BODY * bodies
}

/// Word offsets in the `contacts` buffer, as the shaders' `ContactLayout`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct ContactLayout {
    /// Per vertex: `x^det` and the bound `b_v` (four f32).
    pub clamp: u32,
    /// The `n + 1` row offsets of the vertex → pair lists.
    pub offsets: u32,
    /// Per vertex: fill cursor.
    pub cursor: u32,
    /// Per vertex: smallest distance of an unstored pair (f32 bits).
    pub dmin: u32,
    /// `4 capacity` list entries (`pair << 2 | slot`).
    pub entries: u32,
    /// `capacity` pairs of [`PAIR_WORDS`].
    pub pairs: u32,
    /// The block sums of the scan of the row offsets.
    pub scan: u32,
    /// Pairs that fit.
    pub capacity: u32,
    /// Vertices.
    pub vertices: u32,
    /// Bodies.
    pub bodies: u32,
    /// Per detection query (surface vertex, then surface edge): its stored pairs, scanned into
    /// where its pairs start.
    pub counts: u32,
    /// The block sums of the scan of `counts`.
    pub count_scan: u32,
}

impl ContactLayout {
    /// The layout for `vertices` vertices, `bodies` bodies, `queries` detection queries
    /// (surface vertices and edges) and room for `capacity` pairs; returns it and its length in
    /// words.
    pub fn new(vertices: u32, bodies: u32, queries: u32, capacity: u32) -> (Self, usize) {
        let sums = |count: u32| -> u32 { crate::gpu::contact::scan::levels(count).iter().map(|&(_, b)| b).sum() };
        let n = vertices;
        let clamp = 0;
        let offsets = clamp + 4 * n;
        let cursor = offsets + n + 1;
        let dmin = cursor + n;
        let entries = dmin + n;
        let pairs = entries + 4 * capacity;
        let scan = pairs + PAIR_WORDS as u32 * capacity;
        let counts = scan + sums(n + 1);
        let count_scan = counts + queries;
        let end = count_scan + sums(queries);
        let layout =
            Self { clamp, offsets, cursor, dmin, entries, pairs, scan, capacity, vertices, bodies, counts, count_scan };
        (layout, end as usize)
    }

    /// The words of `contacts` that hold what a CPU detection left in `scratch` (pairs, lists,
    /// and the bounds in `clamp`); the rest is zero.
    #[cfg(test)]
    pub(crate) fn pack_cpu(
        &self,
        words: usize,
        scratch: &crate::solver::vbd::contact::SurfaceContactScratch,
        clamp: &[glam::Vec4],
    ) -> Vec<u32> {
        let mut out = vec![0u32; words];
        for (v, c) in clamp.iter().enumerate() {
            let c = c.to_array().map(|x| if x.is_finite() { x } else { 3.0e38 });
            out[self.clamp as usize + 4 * v..][..4].copy_from_slice(&c.map(f32::to_bits));
        }
        let csr = &scratch.vertex_pairs;
        let rows = if csr.offsets.is_empty() { vec![0; self.vertices as usize + 1] } else { csr.offsets.clone() };
        out[self.offsets as usize..][..rows.len()].copy_from_slice(&rows);
        out[self.entries as usize..][..csr.entries.len()].copy_from_slice(&csr.entries);
        let pairs: &[u32] = bytemuck::cast_slice(&scratch.pairs);
        out[self.pairs as usize..][..pairs.len()].copy_from_slice(pairs);
        out
    }

    /// The pairs held in `words` (the whole `contacts` buffer), `count` of them.
    #[cfg(test)]
    pub fn read_pairs(&self, words: &[u32], count: usize) -> Vec<ContactPair> {
        let at = self.pairs as usize;
        bytemuck::pod_collect_to_vec(&words[at..at + PAIR_WORDS * count.min(self.capacity as usize)])
    }
}

/// Whether a kernel applies the surface-contact displacement bounds (`limit_move`), and what
/// they need: the shaders' `SurfaceBounds`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SurfaceBounds {
    /// 1 when the scene has surface contact.
    pub enabled: u32,
    /// ξ \[m\].
    pub min_separation: f32,
    _pad: [u32; 2],
    /// Where the bounds, lists and pairs are.
    pub contact: ContactLayout,
}

impl SurfaceBounds {
    /// Bounds from `contact` with minimum separation `min_separation` \[m\].
    pub fn new(contact: ContactLayout, min_separation: f32) -> Self {
        Self { enabled: 1, min_separation, _pad: [0; 2], contact }
    }

    /// No surface contact: moves are never limited.
    pub fn off() -> Self {
        Self::default()
    }
}

/// What the contact kernels of a frame reported (the `control` header, read back with it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactStats {
    /// Pairs the latest detection stored.
    pub pairs: u32,
    /// Smallest distance of those pairs \[m\] (`f32::INFINITY` when none).
    pub min_distance: f32,
    /// Largest pair count a detection asked for since the host last acted on an overflow.
    pub requested: u32,
    /// Most pairs a detection found beyond the buffer's capacity since then (they were kept as
    /// bounds only), and the id of the first frame whose detection did.
    pub dropped: u32,
    /// See `dropped`.
    pub overflow_frame: Option<u64>,
    /// Detections run in the frame.
    pub detections: u32,
    /// CCD advances run in the frame.
    pub advances: u32,
}

impl ContactStats {
    /// Decodes the `control` header for a buffer of `capacity` pairs.
    pub fn decode(header: &[u32], capacity: u32) -> Self {
        Self {
            pairs: header[CONTROL_PAIR_COUNT].min(capacity),
            min_distance: f32::from_bits(header[CONTROL_MIN_DISTANCE]),
            requested: header[CONTROL_PAIRS_REQUESTED],
            dropped: header[CONTROL_PAIRS_DROPPED],
            overflow_frame: header[CONTROL_OVERFLOW_FRAME].checked_sub(1).map(u64::from),
            detections: header[CONTROL_DETECTIONS],
            advances: header[CONTROL_ADVANCES],
        }
    }
}
