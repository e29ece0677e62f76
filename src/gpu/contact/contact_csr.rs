//! Host side of `shaders/contact/contact_csr.wgsl`: the vertex → pair lists of a detection by count,
//! scan ([`crate::gpu::contact::scan`]) and fill, over the pairs the detection stored (an indirect dispatch:
//! only the GPU knows how many).
//!
//! Parity with the CPU: `contact_detect`'s `detection_matches_the_cpu` compares every vertex's
//! list with the CPU's.

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::contact::layout::ContactLayout;
use crate::gpu::kernel::{Bound, ComputeKernel};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("contact/contact_csr", "contact_layout");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    layout: ContactLayout,
    phase: u32,
    _pad: [u32; 3],
}

/// The compiled kernel.
pub struct ContactCsr {
    kernel: ComputeKernel,
}

impl ContactCsr {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "contact_csr", SHADER) }
    }

    /// The count (phase 0) or fill (phase 1) dispatch over `layout.capacity` pairs; make it
    /// indirect to cover only the stored ones.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        layout: &ContactLayout,
        phase: u32,
        control: &wgpu::Buffer,
        contacts: &wgpu::Buffer,
    ) -> Bound {
        let params = Params { layout: *layout, phase, _pad: [0; 3] };
        self.kernel.bind_pod(ctx, &params, &[control, contacts], layout.capacity)
    }
}
