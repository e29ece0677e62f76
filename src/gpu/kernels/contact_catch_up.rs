//! Host side of `shaders/contact_catch_up.wgsl`: kinematic vertices move towards their targets
//! as far as their contact bounds allow, after each detection.

use bytemuck::{Pod, Zeroable};

use super::{Bound, ComputeKernel};
use crate::gpu::GpuContext;
use crate::gpu::contact::ContactLayout;

/// WGSL source.
pub const SHADER: &str = super::compose!("contact_catch_up", "step", "distance", "contact_layout", "contact");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    contact: ContactLayout,
    count: u32,
    min_separation: f32,
    _pad: [u32; 2],
}

/// What the kernel reads and writes.
pub struct ContactCatchUpBuffers<'a> {
    /// Positions (vec4).
    pub positions: &'a wgpu::Buffer,
    /// Vertex flags (u32).
    pub flags: &'a wgpu::Buffer,
    /// End-of-substep targets of kinematic vertices (vec4).
    pub targets: &'a wgpu::Buffer,
    /// The `control` words.
    pub control: &'a wgpu::Buffer,
    /// The `contacts` words.
    pub contacts: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct ContactCatchUp {
    kernel: ComputeKernel,
}

impl ContactCatchUp {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "contact_catch_up", SHADER) }
    }

    /// The dispatch over every vertex; `min_separation` is ξ \[m\].
    pub fn bind(
        &self,
        ctx: &GpuContext,
        layout: &ContactLayout,
        min_separation: f32,
        b: &ContactCatchUpBuffers<'_>,
    ) -> Bound {
        let params = Params { contact: *layout, count: layout.vertices, min_separation, _pad: [0; 2] };
        let buffers = [b.positions, b.flags, b.targets, b.control, b.contacts];
        self.kernel.bind_pod(ctx, &params, &buffers, layout.vertices)
    }
}
