//! Host side of `shaders/rigid/rigid_reduce.wgsl`: each correctable body's coarse quadratic (centre,
//! mass-like stiffness, inertia tensor, force, torque, largest arm), one workgroup per body.
//!
//! Parity with the CPU: `rigid_solve`'s `correction_matches_the_cpu` (the whole correction).

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use crate::gpu::rigid::rigid_groups::RigidLayout;

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("rigid/rigid_reduce", "step", "rigid");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    rigid: RigidLayout,
    bodies: u32,
    _pad: [u32; 3],
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

    /// One workgroup per body; `bodies` is the first body record in `records`.
    pub fn bind(&self, ctx: &GpuContext, rigid: &RigidLayout, bodies: u32, b: &RigidReduceBuffers<'_>) -> Bound {
        let params = Params { rigid: *rigid, bodies, _pad: [0; 3] };
        let buffers = [b.positions, b.steps, b.records, b.masses, b.rigid];
        self.kernel.bind_pod(ctx, &params, &buffers, rigid.bodies * WORKGROUP)
    }
}
