//! Host side of `shaders/rigid/rigid_stretch.wgsl`: with the affine coarse space
//! (`CoarseSpace::Affine`), each stretching body's elastic model along its stretch, added to the
//! quadratic `rigid_reduce` wrote. One workgroup per body.
//!
//! Parity with the CPU: `rigid_solve`'s `correction_matches_the_cpu` (the whole correction, with
//! the affine space as well).

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use crate::gpu::pack::{IndexLayout, RecordLayout};
use crate::gpu::rigid::rigid_groups::RigidLayout;

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("rigid/rigid_stretch", "step", "mat3", "elements", "rigid");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    rigid: RigidLayout,
    bodies: u32,
    spins: u32,
    tet_offsets: u32,
    tet_entries: u32,
}

/// What the kernel reads and writes.
pub struct RigidStretchBuffers<'a> {
    /// Positions (vec4): the initial guess.
    pub positions: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`] (`x^n`, `c0`, `c1`).
    pub steps: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`] (the tet adjacency).
    pub index: &'a wgpu::Buffer,
    /// The tets.
    pub tets: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_records`] (materials, vertex ranges, spins).
    pub records: &'a wgpu::Buffer,
    /// The correction's words.
    pub rigid: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct RigidStretch {
    kernel: ComputeKernel,
}

impl RigidStretch {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "rigid_stretch", SHADER) }
    }

    /// One workgroup per body; `index` and `records` are the packed tables' layouts.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        rigid: &RigidLayout,
        (index, records): (&IndexLayout, &RecordLayout),
        b: &RigidStretchBuffers<'_>,
    ) -> Bound {
        let params = Params {
            rigid: *rigid,
            bodies: records.bodies,
            spins: records.spins,
            tet_offsets: index.tet_offsets,
            tet_entries: index.tet_entries,
        };
        let buffers = [b.positions, b.steps, b.index, b.tets, b.records, b.rigid];
        self.kernel.bind_pod(ctx, &params, &buffers, rigid.bodies * WORKGROUP)
    }
}
