//! Host side of `shaders/rigid/rigid_apply.wgsl`: every vertex of a corrected body moves with its
//! body's coarse motion; the initial guess and the iterates restart there.
//!
//! Parity with the CPU: `rigid_solve`'s `correction_matches_the_cpu` compares the corrected
//! positions (groups, quadratics, solve and this motion together) with the CPU's.

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel};
use crate::gpu::obstacles::GpuObstacleSet;
use crate::gpu::rigid::rigid_groups::RigidLayout;

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("rigid/rigid_apply", "step", "obstacles", "mat3", "rigid");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    rigid: RigidLayout,
    count: u32,
    vertex_body: u32,
    _pad: [u32; 2],
    obstacles: GpuObstacleSet,
}

/// What the kernel reads and writes.
pub struct RigidApplyBuffers<'a> {
    /// Positions (vec4).
    pub positions: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`] (the offset takes the shift).
    pub steps: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`] (`vertex_body`).
    pub index: &'a wgpu::Buffer,
    /// The correction's words.
    pub rigid: &'a wgpu::Buffer,
    /// `x^(0)` (vec4).
    pub initial: &'a wgpu::Buffer,
    /// Chebyshev's two previous iterates (vec4).
    pub previous: &'a wgpu::Buffer,
    /// See `previous`.
    pub before_previous: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct RigidApply {
    kernel: ComputeKernel,
}

impl RigidApply {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "rigid_apply", SHADER) }
    }

    /// The dispatch over `count` vertices; `vertex_body` is where that table starts in `index`.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        rigid: &RigidLayout,
        count: u32,
        vertex_body: u32,
        obstacles: &GpuObstacleSet,
        b: &RigidApplyBuffers<'_>,
    ) -> Bound {
        let params = Params { rigid: *rigid, count, vertex_body, _pad: [0; 2], obstacles: *obstacles };
        let buffers = [b.positions, b.steps, b.index, b.rigid, b.initial, b.previous, b.before_previous];
        self.kernel.bind_pod(ctx, &params, &buffers, count)
    }
}
