//! Host side of `shaders/rigid/rigid_reduce.wgsl`: each correctable body's coarse quadratic (centre,
//! mass-like stiffness, inertia tensor, force, torque, largest arm, and the affine space's
//! stretch blocks without elasticity): one workgroup per body, or for bodies of more than
//! [`CHUNK_VERTICES`] vertices three dispatches over their chunks.
//!
//! Parity with the CPU: `rigid_solve`'s `correction_matches_the_cpu` (the whole correction).

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use crate::gpu::pack::chunks;
use crate::gpu::rigid::rigid_groups::RigidLayout;

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("rigid/rigid_reduce", "step", "mat3", "rigid");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    rigid: RigidLayout,
    bodies: u32,
    phase: u32,
    chunk: u32,
    chunks: u32,
    affine: u32,
    _pad: [u32; 3],
}

/// Vertices per workgroup in a large body's sums.
pub const CHUNK_VERTICES: u32 = 2048;

/// f32 words of the `partials` buffer for `bodies` bodies, the largest of `largest` vertices.
pub fn partial_words(bodies: usize, largest: u32, chunk: u32) -> usize {
    23 * bodies * chunks(largest, chunk) as usize
}

/// What the kernel reads and writes.
pub struct RigidReduceBuffers<'a> {
    /// Positions (vec4): the initial guess.
    pub positions: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`].
    pub steps: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_records`] (vertex ranges, drag).
    pub records: &'a wgpu::Buffer,
    /// `SimState::masses`.
    pub masses: &'a wgpu::Buffer,
    /// The correction's words.
    pub rigid: &'a wgpu::Buffer,
    /// Chunked bodies' partial sums ([`partial_words`] f32).
    pub partials: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct RigidReduce {
    kernel: ComputeKernel,
}

impl RigidReduce {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "rigid_reduce", SHADER) }
    }

    /// The quadratics of the bodies, the largest of `largest` vertices, summed in chunks of
    /// `chunk`; `bodies` is the first body record in `records`; with `affine` volumetric bodies
    /// stretch. One dispatch (a workgroup per body) when every body fits one chunk.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        (rigid, bodies): (&RigidLayout, u32),
        (largest, chunk): (u32, u32),
        affine: bool,
        b: &RigidReduceBuffers<'_>,
    ) -> Vec<Bound> {
        let chunks = chunks(largest, chunk);
        let params =
            |phase| Params { rigid: *rigid, bodies, phase, chunk, chunks, affine: affine.into(), _pad: [0; 3] };
        let buffers = [b.positions, b.steps, b.records, b.masses, b.rigid, b.partials];
        let per_body = |phase| self.kernel.bind_pod(ctx, &params(phase), &buffers, rigid.bodies * WORKGROUP);
        if chunks == 1 {
            return vec![per_body(0)];
        }
        let grid = |phase| self.kernel.bind_pod(ctx, &params(phase), &buffers, 0).grid(chunks, rigid.bodies);
        vec![grid(1), grid(2), per_body(3)]
    }
}
