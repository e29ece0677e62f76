//! Host side of `shaders/contact/contact_groups.wgsl`: every body of a group joined by the CCD advance
//! takes the group's earliest time of impact.
//!
//! Parity with the CPU: `contact_ccd`'s `advance_matches_the_cpu` (three boxes joined into one
//! group take one time of impact; the two that touch nothing keep their whole step).

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::contact::layout::ContactLayout;
use crate::gpu::kernel::{Bound, ComputeKernel};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("contact/contact_groups", "contact_layout", "ccd_groups");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    contact: ContactLayout,
    phase: u32,
    _pad: [u32; 3],
}

/// The compiled kernel.
pub struct ContactGroups {
    kernel: ComputeKernel,
}

impl ContactGroups {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "contact_groups", SHADER) }
    }

    /// The two per-body dispatches.
    pub fn bind(&self, ctx: &GpuContext, layout: &ContactLayout, control: &wgpu::Buffer) -> [Bound; 2] {
        [0, 1].map(|phase| {
            let params = Params { contact: *layout, phase, _pad: [0; 3] };
            self.kernel.bind_pod(ctx, &params, &[control], layout.bodies)
        })
    }
}
