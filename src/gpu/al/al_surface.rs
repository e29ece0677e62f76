//! Host side of `shaders/al/al_surface.wgsl`: the surface pairs (body–body and self contact) of
//! the augmented-Lagrangian step's step size on the GPU (the surface half of `solver::al`'s
//! `max_step`), and the layout of the candidates it hands `al_surface_set`.

use bytemuck::{Pod, Zeroable};

use crate::collision::ccd::CcdParams;
use crate::gpu::GpuContext;
use crate::gpu::contact::bvh_build::TreeLayout;
use crate::gpu::contact::surface::GpuSurface;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};

/// WGSL source.
pub const SHADER: &str =
    crate::gpu::kernel::compose!("al/al_surface", "step", "bvh", "bvh_walk", "surface", "distance", "al_candidates");

const PHASE_POINTS: u32 = 0;
const PHASE_EDGES: u32 = 1;
const PHASE_ADD_POINTS: u32 = 2;
const PHASE_ADD_EDGES: u32 = 3;

/// Where the candidate pairs and `al_surface_set`'s scratch are in the `candidates` buffer
/// (u32 words): a header (candidates appended, candidates that did not fit, candidates left
/// out for want of a free slot), `capacity` candidates of five words (kind, four vertices),
/// then the merge's in-set marks and ranks (`capacity`), free-slot map (`slots`), buckets by
/// first vertex (`capacity`) and per-vertex cursors (`vertices`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CandidateLayout {
    /// Candidates an add pass can hand over.
    pub capacity: u32,
    /// Surface pair slots in the active set.
    pub slots: u32,
    /// First word of the in-set marks (then ranks).
    pub ranks: u32,
    /// First word of the free-slot map (the buckets follow it).
    pub free: u32,
    /// First word of the per-vertex cursors.
    pub cursors: u32,
    /// Words in all.
    pub words: u32,
}

impl CandidateLayout {
    /// Room for `capacity` candidates per pass into `slots` surface slots over `vertices`.
    pub fn new(capacity: u32, slots: u32, vertices: u32) -> Self {
        let ranks = 4 + 5 * capacity;
        let free = ranks + capacity;
        let cursors = free + slots + capacity;
        Self { capacity, slots, ranks, free, cursors, words: cursors + vertices }
    }
}

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    surface: GpuSurface,
    tris: TreeLayout,
    edges: TreeLayout,
    phase: u32,
    stride: u32,
    capacity: u32,
    min_separation: f32,
    inflate: f32,
    safety: f32,
    max_iterations: u32,
    _pad: u32,
}

/// What the kernel reads and writes.
pub struct AlSurfaceBuffers<'a> {
    /// The safe iterate `x` (vec4).
    pub safe: &'a wgpu::Buffer,
    /// The targets `x̂` (vec4).
    pub targets: &'a wgpu::Buffer,
    /// The packed index (the surface's tables).
    pub index: &'a wgpu::Buffer,
    /// The packed records (self-collision flags).
    pub records: &'a wgpu::Buffer,
    /// Both trees, refitted between `safe` and `targets`.
    pub bvh: &'a wgpu::Buffer,
    /// `al_pcg`'s per-vertex bits (`VERTEX_MOVES`).
    pub solved: &'a wgpu::Buffer,
    /// `al_step_size`'s times (α, each vertex's earliest hit), lowered.
    pub times: &'a wgpu::Buffer,
    /// [`CandidateLayout`] words, appended to.
    pub candidates: &'a wgpu::Buffer,
}

/// What the kernel is bound with besides its buffers.
pub struct AlSurfaceSetup<'a> {
    /// The surface's tables.
    pub surface: &'a GpuSurface,
    /// The triangle and edge trees.
    pub tris: &'a TreeLayout,
    /// See `tris`.
    pub edges: &'a TreeLayout,
    /// The candidates' layout.
    pub layout: &'a CandidateLayout,
    /// Separation a hit keeps \[m\] (`step_size::MIN_SEPARATION`).
    pub min_separation: f32,
    /// Growth of the query boxes \[m\].
    pub inflate: f32,
}

/// The bound phases: the times of impact, then the candidates.
pub struct AlSurfaceRun {
    /// Point–triangle and edge–edge times of impact.
    pub hits: [Bound; 2],
    /// The same pairs' candidates, after every hit is in.
    pub add: [Bound; 2],
}

/// The compiled kernel.
pub struct AlSurface {
    kernel: ComputeKernel,
}

impl AlSurface {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "al_surface", SHADER) }
    }

    /// Binds the four phases, each over as many invocations as the larger of the surface's
    /// vertices and edges.
    pub fn bind(&self, ctx: &GpuContext, s: &AlSurfaceSetup<'_>, b: &AlSurfaceBuffers<'_>) -> AlSurfaceRun {
        let items = s.surface.surface_vertex_count.max(s.surface.edge_count).max(1);
        let stride = items.div_ceil(WORKGROUP) * WORKGROUP;
        let ccd = CcdParams::<f32>::default();
        let base = Params {
            surface: *s.surface,
            tris: *s.tris,
            edges: *s.edges,
            phase: PHASE_POINTS,
            stride,
            capacity: s.layout.capacity,
            min_separation: s.min_separation,
            inflate: s.inflate,
            safety: ccd.safety,
            max_iterations: ccd.max_iterations,
            _pad: 0,
        };
        let buffers = [b.safe, b.targets, b.index, b.records, b.bvh, b.solved, b.times, b.candidates];
        let bind = |phase: u32| self.kernel.bind_pod(ctx, &Params { phase, ..base }, &buffers, stride);
        AlSurfaceRun {
            hits: [bind(PHASE_POINTS), bind(PHASE_EDGES)],
            add: [bind(PHASE_ADD_POINTS), bind(PHASE_ADD_EDGES)],
        }
    }
}
