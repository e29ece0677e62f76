//! Host side of `shaders/al/al_surface_set.wgsl`: the surface pairs `al_surface` found joining the
//! augmented-Lagrangian step's active set on the GPU (the twin of `ActiveSet::add` for them),
//! the vertex → pair adjacency rebuilt after, and the dispatch arguments of the surface
//! phases.

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::al::al_pcg::AlPairLayout;
use crate::gpu::al::al_surface::CandidateLayout;
use crate::gpu::kernel::{Bound, ComputeKernel};

/// WGSL source.
pub const SHADER: &str =
    crate::gpu::kernel::compose!("al/al_surface_set", "step", "distance", "mat3", "friction", "al", "al_candidates");

const PHASE_ARGS: u32 = 0;
const PHASE_MERGE: u32 = 1;

/// Gated surface dispatches the args phase can write arguments for.
pub const MAX_DISPATCHES: usize = 8;

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    phase: u32,
    vertices: u32,
    obstacles: u32,
    slots: u32,
    capacity: u32,
    ranks: u32,
    free: u32,
    cursors: u32,
    pairs: u32,
    offsets: u32,
    entries: u32,
    bodies: u32,
    vertex_body: u32,
    dispatches: u32,
    _pad: [u32; 2],
    groups: [u32; MAX_DISPATCHES],
}

/// What the kernel reads and writes.
pub struct AlSurfaceSetBuffers<'a> {
    /// The safe iterate `x` (vec4): where new pairs are measured.
    pub safe: &'a wgpu::Buffer,
    /// The element buffer: pair records and adjacency, written.
    pub element: &'a wgpu::Buffer,
    /// [`CandidateLayout`] words: consumed.
    pub candidates: &'a wgpu::Buffer,
    /// The packed records (body friction).
    pub records: &'a wgpu::Buffer,
    /// The packed index (`vertex_body`).
    pub index: &'a wgpu::Buffer,
    /// `al_outer`'s control words (whether its step runs).
    pub outer: &'a wgpu::Buffer,
    /// The surface dispatches' arguments (`INDIRECT`), written.
    pub args: &'a wgpu::Buffer,
}

/// What the kernel is bound with besides its buffers.
pub struct AlSurfaceSetSetup<'a> {
    /// Vertices, and vertex–obstacle slots per vertex (the table before the surface slots).
    pub vertices: usize,
    /// See `vertices`.
    pub obstacles: usize,
    /// The candidates' layout (and the surface slots).
    pub candidates: &'a CandidateLayout,
    /// Where the pair records and the adjacency are in `element`.
    pub pairs: &'a AlPairLayout,
    /// Where the body records are in `records`, and `vertex_body` in `index`.
    pub bodies: u32,
    /// See `bodies`.
    pub vertex_body: u32,
    /// Workgroups of each gated surface dispatch while the step runs (at most
    /// [`MAX_DISPATCHES`]); dispatch `k` reads its arguments at byte `12 k` of `args`.
    pub groups: &'a [u32],
}

/// The compiled kernel.
pub struct AlSurfaceSet {
    kernel: ComputeKernel,
}

impl AlSurfaceSet {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "al_surface_set", SHADER) }
    }

    /// Binds the args phase (one invocation) and the merge (one workgroup).
    pub fn bind(&self, ctx: &GpuContext, s: &AlSurfaceSetSetup<'_>, b: &AlSurfaceSetBuffers<'_>) -> [Bound; 2] {
        assert!(s.groups.len() <= MAX_DISPATCHES, "{} surface dispatches", s.groups.len());
        let mut groups = [0; MAX_DISPATCHES];
        groups[..s.groups.len()].copy_from_slice(s.groups);
        let c = s.candidates;
        let base = Params {
            phase: PHASE_ARGS,
            vertices: s.vertices as u32,
            obstacles: s.obstacles as u32,
            slots: c.slots,
            capacity: c.capacity,
            ranks: c.ranks,
            free: c.free,
            cursors: c.cursors,
            pairs: s.pairs.pairs,
            offsets: s.pairs.offsets,
            entries: s.pairs.entries,
            bodies: s.bodies,
            vertex_body: s.vertex_body,
            dispatches: s.groups.len() as u32,
            _pad: [0; 2],
            groups,
        };
        let buffers = [b.safe, b.element, b.candidates, b.records, b.index, b.outer, b.args];
        let merge = Params { phase: PHASE_MERGE, ..base };
        [self.kernel.bind_pod(ctx, &base, &buffers, 1), self.kernel.bind_pod(ctx, &merge, &buffers, 1)]
    }
}
