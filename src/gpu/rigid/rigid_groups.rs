//! Host side of `shaders/rigid/rigid_groups.wgsl`: the groups of the rigid correction from the last
//! detection's pairs, each body's slot and flags, and the touching bodies' initial guess. The
//! layout of the correction's buffer is [`RigidLayout`].
//!
//! Parity with the CPU: `rigid_solve`'s `correction_matches_the_cpu` (the whole correction).

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::contact::layout::ContactLayout;
use crate::gpu::kernel::{Bound, ComputeKernel};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("rigid/rigid_groups", "step", "contact_layout", "rigid");

/// u32 words per body record.
pub const RIGID_WORDS: usize = 128;
/// Record word of the flags.
pub const RB_FLAGS: usize = 3;
/// Flag: the body takes the rigid correction (no kinematic vertex).
pub const RIGID_ELIGIBLE: u32 = 1;
/// Flag: the body has tets (its coarse space may turn).
pub const RIGID_VOLUMETRIC: u32 = 2;
/// Most bodies one coupled correction solves together (as on the CPU).
pub const MAX_GROUP_BODIES: usize = 48;

/// Where the correction keeps its state in the `rigid` buffer (u32 words), as the shaders'
/// `RigidLayout`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct RigidLayout {
    /// Bodies (one record of [`RIGID_WORDS`] each, from word 0).
    pub bodies: u32,
    /// Per body: its group's matrix words at a root, scanned into where each matrix ends.
    pub sizes: u32,
    /// The scan's block sums.
    pub sums: u32,
    /// The matrices.
    pub pool: u32,
}

impl RigidLayout {
    /// The layout for `bodies` bodies of `vertices` vertices; returns it and its length in
    /// words. The pool holds the largest total any grouping can ask for: groups of at most
    /// [`MAX_GROUP_BODIES`], each with a (12G)² matrix (the affine space's; the rigid one uses
    /// (6G)² of it) and two words per vertex.
    pub fn new(bodies: u32, vertices: u32) -> (Self, usize) {
        let b = bodies as usize;
        let sizes = (RIGID_WORDS * b) as u32;
        let sums = sizes + bodies;
        let pool = sums + crate::gpu::contact::scan::levels(bodies).iter().map(|&(_, n)| n).sum::<u32>();
        let words = pool as usize + 144 * b * b.min(MAX_GROUP_BODIES) + 2 * vertices as usize;
        (Self { bodies, sizes, sums, pool }, words)
    }

    /// The buffer's initial words: every record's host flags.
    pub fn initial_words(&self, words: usize, flags: impl Iterator<Item = u32>) -> Vec<u32> {
        let mut out = vec![0u32; words];
        for (b, f) in flags.enumerate() {
            out[RIGID_WORDS * b + RB_FLAGS] = f;
        }
        out
    }
}

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    contact: ContactLayout,
    rigid: RigidLayout,
    phase: u32,
    count: u32,
    vertex_body: u32,
    bodies: u32,
}

/// What the kernel reads and writes.
pub struct RigidGroupsBuffers<'a> {
    /// [`crate::gpu::pack::pack_index`] (`vertex_body`).
    pub index: &'a wgpu::Buffer,
    /// The `control` words (the stored pair count).
    pub control: &'a wgpu::Buffer,
    /// The `contacts` words (the last detection's pairs).
    pub contacts: &'a wgpu::Buffer,
    /// The correction's words ([`RigidLayout`]).
    pub rigid: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`] (touching bodies' offsets are zeroed).
    pub steps: &'a wgpu::Buffer,
    /// Vertex flags (u32).
    pub flags: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_records`] (the bodies' vertex counts).
    pub records: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct RigidGroups {
    kernel: ComputeKernel,
}

impl RigidGroups {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "rigid_groups", SHADER) }
    }

    /// Phase `phase` over `count` items (bodies, stored pairs or vertices, as the shader lists
    /// them); `vertex_body` is where that table starts in `index`, `bodies` the first body
    /// record in `records`.
    #[allow(clippy::too_many_arguments)]
    pub fn bind(
        &self,
        ctx: &GpuContext,
        contact: &ContactLayout,
        rigid: &RigidLayout,
        phase: u32,
        count: u32,
        (vertex_body, bodies): (u32, u32),
        b: &RigidGroupsBuffers<'_>,
    ) -> Bound {
        let params = Params { contact: *contact, rigid: *rigid, phase, count, vertex_body, bodies };
        let buffers = [b.index, b.control, b.contacts, b.rigid, b.steps, b.flags, b.records];
        self.kernel.bind_pod(ctx, &params, &buffers, count)
    }
}
