//! Host side of `shaders/contact/contact_rows.wgsl`: per vertex, its sorted pair list and its
//! displacement bound.
//!
//! Parity with the CPU: `contact_detect`'s `detection_matches_the_cpu` compares every row's order
//! and every bound with the CPU's.

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::contact::layout::ContactLayout;
use crate::gpu::kernel::{Bound, ComputeKernel};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("contact/contact_rows", "contact_layout");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    layout: ContactLayout,
    count: u32,
    min_separation: f32,
    _pad: [u32; 2],
}

/// The compiled kernel.
pub struct ContactRows {
    kernel: ComputeKernel,
}

impl ContactRows {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "contact_rows", SHADER) }
    }

    /// The dispatch over every vertex; `min_separation` is ξ \[m\].
    pub fn bind(
        &self,
        ctx: &GpuContext,
        layout: &ContactLayout,
        min_separation: f32,
        positions: &wgpu::Buffer,
        control: &wgpu::Buffer,
        contacts: &wgpu::Buffer,
    ) -> Bound {
        let params = Params { layout: *layout, count: layout.vertices, min_separation, _pad: [0; 2] };
        self.kernel.bind_pod(ctx, &params, &[positions, control, contacts], layout.vertices)
    }
}
