//! Host side of `shaders/contact/contact_advance.wgsl`: whether the initial paths are certified by the
//! last bounds, and the scaling of each body's initial offset to its group's time of impact.
//!
//! Parity with the CPU: `contact_ccd`'s `advance_matches_the_cpu` runs it with the CCD and
//! compares the body fractions and the rescaled guesses.

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::contact::layout::ContactLayout;
use crate::gpu::kernel::{Bound, ComputeKernel};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!(
    "contact/contact_advance",
    "step",
    "distance",
    "mat3",
    "friction",
    "contact_layout",
    "contact"
);

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    contact: ContactLayout,
    phase: u32,
    count: u32,
    vertex_body: u32,
    min_separation: f32,
}

/// What the kernel reads and writes.
pub struct ContactAdvanceBuffers<'a> {
    /// Positions (vec4): the initial guess, rescaled.
    pub positions: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`]: `x^n` and the initial offset.
    pub steps: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`].
    pub index: &'a wgpu::Buffer,
    /// The `control` words.
    pub control: &'a wgpu::Buffer,
    /// The `contacts` words.
    pub contacts: &'a wgpu::Buffer,
    /// `x^(0)` (vec4).
    pub initial: &'a wgpu::Buffer,
    /// Chebyshev's two previous iterates (vec4).
    pub previous: &'a wgpu::Buffer,
    /// See `previous`.
    pub before_previous: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct ContactAdvance {
    kernel: ComputeKernel,
}

impl ContactAdvance {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "contact_advance", SHADER) }
    }

    /// The check (phase 0) and the scaling (phase 1) over every vertex; `vertex_body` is where
    /// that table starts in `index`, `min_separation` ξ \[m\].
    pub fn bind(
        &self,
        ctx: &GpuContext,
        layout: &ContactLayout,
        vertex_body: u32,
        min_separation: f32,
        b: &ContactAdvanceBuffers<'_>,
    ) -> [Bound; 2] {
        let buffers = [b.positions, b.steps, b.index, b.control, b.contacts, b.initial, b.previous, b.before_previous];
        [0, 1].map(|phase| {
            let params = Params { contact: *layout, phase, count: layout.vertices, vertex_body, min_separation };
            self.kernel.bind_pod(ctx, &params, &buffers, layout.vertices)
        })
    }
}
