//! Host side of `shaders/al/al_merit.wgsl`: the augmented-Lagrangian step's iterate of lowest merit
//! on the GPU (the twin of `al_step`'s, for vertex–obstacle pairs), which the step answers with
//! when its last iterate is not it.

use crate::gpu::GpuContext;
use crate::gpu::al::al_elements::AlElementLayout;
use crate::gpu::al::al_pcg::AlPairLayout;
use crate::gpu::buffers::output;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use crate::gpu::obstacles::GpuObstacleSet;
use crate::gpu::pack::RecordLayout;
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!(
    "al/al_merit",
    "step",
    "obstacles",
    "elements",
    "element_energy",
    "distance",
    "mat3",
    "friction",
    "al"
);

const PHASE_START: u32 = 0;
const PHASE_COMPARE: u32 = 1;
const PHASE_REDUCE: u32 = 2;
const PHASE_COPY: u32 = 3;
const PHASE_RESTORE: u32 = 4;

/// Words of `control`: the copy's and the restore's dispatch arguments, and (word 6) 1 when
/// the last iterate stands (the lowest, or within `solver::al::REWIND_SHARE` of the price cap
/// above it).
pub const CONTROL_WORDS: usize = 7;

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    phase: u32,
    vertices: u32,
    vertex_groups: u32,
    tets: u32,
    tris: u32,
    hinges: u32,
    pairs: u32,
    item_groups: u32,
    tri_records: u32,
    hinge_records: u32,
    pair_records: u32,
    price_cap: f32,
    obstacles: GpuObstacleSet,
}

/// What the kernel reads and writes.
pub struct AlMeritBuffers<'a> {
    /// The safe iterate `x` (vec4); the best is restored into it.
    pub safe: &'a wgpu::Buffer,
    /// The best iterate so far (vec4), written.
    pub best: &'a wgpu::Buffer,
    /// Per-vertex step records (inertia).
    pub steps: &'a wgpu::Buffer,
    /// The state's tets.
    pub tets: &'a wgpu::Buffer,
    /// The packed records.
    pub records: &'a wgpu::Buffer,
    /// The element buffer (the pairs' table is read).
    pub element: &'a wgpu::Buffer,
    /// The AL scalars (δ; partials written).
    pub scalars: &'a wgpu::Buffer,
    /// [`CONTROL_WORDS`] u32 with `INDIRECT` usage, written.
    pub control: &'a wgpu::Buffer,
}

/// What the comparison needs besides its buffers.
pub struct AlMeritSetup<'a> {
    /// Vertices.
    pub vertices: usize,
    /// Element counts.
    pub elements: &'a AlElementLayout,
    /// Where triangles and hinges are in `records`.
    pub records: &'a RecordLayout,
    /// Where the pairs are, and how many slots.
    pub pairs: &'a AlPairLayout,
    /// See `pairs`.
    pub pair_count: usize,
    /// The step's obstacles.
    pub obstacles: &'a GpuObstacleSet,
    /// `AlSettings::violation_price_cap` \[J\].
    pub price_cap: f32,
}

/// The bound phases.
pub struct AlMeritRun {
    start: Bound,
    compare: [Bound; 3],
    restore: Bound,
}

impl AlMeritRun {
    /// The comparison's decision runs only when the one-workgroup dispatch arguments at byte
    /// `one` of `gate` say so (none after the step ended).
    pub fn gated(mut self, gate: &wgpu::Buffer, one: u64) -> Self {
        let [compare, reduce, copy] = self.compare;
        self.compare = [compare, reduce.indirect(gate, one), copy];
        self
    }

    /// Records the start (the best is the start) into `pass`.
    pub fn record_start(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.start.record(pass);
    }

    /// Records an outer iteration's comparison (after the move) into `pass`.
    pub fn record_compare(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.compare.iter().for_each(|b| b.record(pass));
    }

    /// Records the final restore (after the outer iterations) into `pass`.
    pub fn record_restore(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.restore.record(pass);
    }
}

/// The compiled kernel.
pub struct AlMerit {
    kernel: ComputeKernel,
}

impl AlMerit {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "al_merit", SHADER) }
    }

    /// Binds the phases.
    pub fn bind(&self, ctx: &GpuContext, s: &AlMeritSetup<'_>, b: &AlMeritBuffers<'_>) -> AlMeritRun {
        let groups = |n: usize| (n as u32).div_ceil(WORKGROUP).max(1);
        let [tets, tris, hinges] = s.elements.counts;
        let items = s.vertices + (tets + tris + hinges) as usize + s.pair_count;
        let base = Params {
            phase: PHASE_START,
            vertices: s.vertices as u32,
            vertex_groups: groups(s.vertices),
            tets,
            tris,
            hinges,
            pairs: s.pair_count as u32,
            item_groups: groups(items),
            tri_records: s.records.tris,
            hinge_records: s.records.hinges,
            pair_records: s.pairs.pairs,
            price_cap: s.price_cap,
            obstacles: *s.obstacles,
        };
        // The copy and the restore read their arguments from `control`: a stand-in in its place.
        let stand_in = output::<u32>(ctx, "al_merit stand-in", CONTROL_WORDS);
        let buffers = [b.safe, b.best, b.steps, b.tets, b.records, b.element, b.scalars, b.control];
        let mut vertex_buffers = buffers;
        vertex_buffers[7] = &stand_in;
        let bind = |phase: u32, buffers: &[&wgpu::Buffer], n: u32| {
            self.kernel.bind_pod(ctx, &Params { phase, ..base }, buffers, n * WORKGROUP)
        };
        AlMeritRun {
            start: bind(PHASE_START, &buffers, base.vertex_groups),
            compare: [
                bind(PHASE_COMPARE, &vertex_buffers, base.item_groups),
                bind(PHASE_REDUCE, &buffers, 1),
                bind(PHASE_COPY, &vertex_buffers, base.vertex_groups).indirect(b.control, 0),
            ],
            restore: bind(PHASE_RESTORE, &vertex_buffers, base.vertex_groups).indirect(b.control, 12),
        }
    }
}
