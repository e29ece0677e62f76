//! Host side of `shaders/al/al_commit.wgsl`: the GPU's fallback seeds its augmented-Lagrangian
//! step from the substep's start and the fast path's result, and commits the answer as the
//! substep's result (backward-Euler velocity, no history), as `runtime::fallback`'s
//! `redo_island` does on the CPU. Both phases read their dispatch arguments from `al_gate`.

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("al/al_commit", "step");

const PHASE_SEED: u32 = 0;
const PHASE_COMMIT: u32 = 1;

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    phase: u32,
    vertices: u32,
    inverse_h: f32,
    _pad: u32,
}

/// What the kernel reads and writes.
pub struct AlCommitBuffers<'a> {
    /// The AL's safe iterate (vec4): the start, seeded; the answer, committed.
    pub safe: &'a wgpu::Buffer,
    /// The AL's targets (vec4), seeded with the first guess.
    pub targets: &'a wgpu::Buffer,
    /// `SimState::positions` (vec4): the fast path's result in, the answer out.
    pub positions: &'a wgpu::Buffer,
    /// `SimState::velocities` (vec4).
    pub velocities: &'a wgpu::Buffer,
    /// `SimState::accelerations` (vec4).
    pub accelerations: &'a wgpu::Buffer,
    /// `SimState::flags`.
    pub flags: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`] of the substep.
    pub steps: &'a wgpu::Buffer,
    /// `al_pcg::VERTEX_SOLVED` and `VERTEX_MOVES` bits per vertex.
    pub solved: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct AlCommit {
    kernel: ComputeKernel,
}

impl AlCommit {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "al_commit", SHADER) }
    }

    /// The seed and the commit over `vertices` vertices of a substep of length `h` \[s\], their
    /// workgroups read from `gate` at byte `at`.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        vertices: u32,
        h: f32,
        b: &AlCommitBuffers<'_>,
        (gate, at): (&wgpu::Buffer, u64),
    ) -> [Bound; 2] {
        let buffers = [b.safe, b.targets, b.positions, b.velocities, b.accelerations, b.flags, b.steps, b.solved];
        [PHASE_SEED, PHASE_COMMIT].map(|phase| {
            let params = Params { phase, vertices, inverse_h: 1.0 / h, _pad: 0 };
            let groups = vertices.div_ceil(WORKGROUP).max(1) * WORKGROUP;
            self.kernel.bind_pod(ctx, &params, &buffers, groups).indirect(gate, at)
        })
    }
}
