//! Host side of `shaders/contact/contact_bodies.wgsl`: the start of a contact detection (body boxes,
//! each body's distance to the nearest other body, every vertex's smallest-pair-distance seed,
//! cleared pair lists).
//!
//! Parity with the CPU: `contact_detect`'s `detection_matches_the_cpu`, whose pairs and bounds
//! depend on the body boxes and the seeds written here.

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::contact::layout::ContactLayout;
use crate::gpu::contact::surface::GpuSurface;
use crate::gpu::kernel::{Bound, ComputeKernel};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("contact/contact_bodies", "bvh", "surface", "contact_layout");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    surface: GpuSurface,
    layout: ContactLayout,
    phase: u32,
    count: u32,
    _pad: [u32; 2],
}

/// What the kernel reads and writes.
pub struct ContactBodiesBuffers<'a> {
    /// Positions (vec4).
    pub positions: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`].
    pub index: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_records`].
    pub records: &'a wgpu::Buffer,
    /// The `control` words ([`crate::gpu::contact::layout`]).
    pub control: &'a wgpu::Buffer,
    /// The `contacts` words ([`ContactLayout`]).
    pub contacts: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct ContactBodies {
    kernel: ComputeKernel,
}

impl ContactBodies {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "contact_bodies", SHADER) }
    }

    /// The five dispatches, in order.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        surface: &GpuSurface,
        layout: &ContactLayout,
        b: &ContactBodiesBuffers<'_>,
    ) -> Vec<Bound> {
        let buffers = [b.positions, b.index, b.records, b.control, b.contacts];
        let (n, bodies) = (layout.vertices, layout.bodies);
        [(0, bodies), (1, n), (2, bodies), (3, n), (4, surface.surface_vertex_count)]
            .into_iter()
            .map(|(phase, count)| {
                let params = Params { surface: *surface, layout: *layout, phase, count, _pad: [0; 2] };
                self.kernel.bind_pod(ctx, &params, &buffers, count)
            })
            .collect()
    }
}
