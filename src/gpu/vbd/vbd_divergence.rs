//! Host side of `shaders/vbd/vbd_divergence.wgsl`: Chebyshev's per-body divergence guard after a
//! sweep.

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use crate::gpu::pack::chunks;
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("vbd/vbd_divergence", "step");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    bodies: u32,
    body_records: u32,
    frozen: u32,
    phase: u32,
    chunk: u32,
    chunks: u32,
    _pad: [u32; 2],
}

/// Vertices per workgroup in a body's residual sum: larger bodies are summed in chunks of this
/// many, then the chunks' sums are added.
pub const CHUNK_VERTICES: u32 = 4096;

/// What the kernel reads and writes.
pub struct VbdDivergenceBuffers<'a> {
    /// [`crate::gpu::pack::pack_records`] (each body's vertex range).
    pub records: &'a wgpu::Buffer,
    /// Per vertex: w `‖f‖²` of its last update (vec4; see [`crate::gpu::vbd::vbd_color`]).
    pub updates: &'a wgpu::Buffer,
    /// Per body: the smallest residual sum of the step and whether one was seen (vec2, zeroed
    /// at the start of a step).
    pub smallest: &'a wgpu::Buffer,
    /// Holds the per-body `FROZEN_*` flags (u32) from word `frozen` on; `FROZEN_DIVERGED` is
    /// or-ed in.
    pub control: &'a wgpu::Buffer,
    /// See `control`.
    pub frozen: u32,
    /// Per body and chunk, the chunk's sum (f32, `bodies × chunks`).
    pub partials: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct VbdDivergence {
    kernel: ComputeKernel,
}

impl VbdDivergence {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "vbd_divergence", SHADER) }
    }

    /// The check for `bodies` bodies, the largest of `largest` vertices, summed in chunks of
    /// `chunk` vertices: one dispatch (a workgroup per body) when each body fits one chunk, else
    /// the chunks' sums, then the bodies'.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        bodies: u32,
        body_records: u32,
        (largest, chunk): (u32, u32),
        b: &VbdDivergenceBuffers<'_>,
    ) -> Vec<Bound> {
        let chunks = chunks(largest, chunk);
        let params = |phase| Params { bodies, body_records, frozen: b.frozen, phase, chunk, chunks, _pad: [0; 2] };
        let buffers = [b.records, b.updates, b.smallest, b.control, b.partials];
        if chunks == 1 {
            return vec![self.kernel.bind_pod(ctx, &params(0), &buffers, bodies * WORKGROUP)];
        }
        vec![
            self.kernel.bind_pod(ctx, &params(1), &buffers, 0).grid(chunks, bodies),
            self.kernel.bind_pod(ctx, &params(2), &buffers, bodies * WORKGROUP),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::test_support;
    use crate::state::{BodyRecord, FROZEN_CONTACT, FROZEN_DIVERGED};
    use crate::test_rng::Rng;

    /// Three sweeps over three bodies of different sizes: one contracts, one grows tenfold in
    /// norm at the third sweep, one is already frozen by contact. Flags as the CPU rule sets
    /// them, sums as the CPU sums them.
    #[test]
    fn freezes_the_bodies_whose_residual_grew() {
        let Some(ctx) = test_support::context() else { return };
        // One workgroup per body, and chunks of 128 vertices (the largest body takes eight).
        for chunk in [CHUNK_VERTICES, 128] {
            freezes_with_chunks(&ctx, chunk);
        }
    }

    fn freezes_with_chunks(ctx: &GpuContext, chunk: u32) {
        let sizes = [1000u32, 37, 300];
        let mut bodies = Vec::new();
        let mut start = 0;
        for &count in &sizes {
            bodies.push(BodyRecord { vertex_start: start, vertex_count: count, ..Default::default() });
            start += count;
        }
        let n = start as usize;
        let mut records: Vec<[f32; 4]> = vec![[0.0; 4]; 3];
        records.extend_from_slice(bytemuck::cast_slice(&bodies));
        let records = storage(ctx, "records", &records, false);
        let smallest = output::<[f32; 2]>(ctx, "smallest", 3);
        let frozen = storage(ctx, "frozen", &[0u32, 0, FROZEN_CONTACT], true);
        let partials = output::<f32>(ctx, "partials", 3 * chunks(1000, chunk) as usize);
        let kernel = VbdDivergence::new(ctx);
        let mut rng = Rng(11);
        let base: Vec<f32> = (0..n).map(|_| rng.uniform_f32()).collect();
        // Per sweep and body, the factor on the base residuals.
        let factors = [[1.0f32, 1.0, 1.0], [0.5, 0.9, 2.0], [0.3, 95.0, 150.0]];
        let mut cpu_min = [f64::INFINITY; 3];
        let mut cpu_frozen = [0u32, 0, FROZEN_CONTACT];
        for f in factors {
            let r: Vec<f32> = (0..n)
                .map(|v| {
                    base[v]
                        * f[bodies
                            .iter()
                            .position(|b| v as u32 >= b.vertex_start && (v as u32) < b.vertex_start + b.vertex_count)
                            .expect("body")]
                })
                .collect();
            let updates: Vec<[f32; 4]> = r.iter().map(|&x| [0.0, 0.0, 0.0, x]).collect();
            let updates = storage(ctx, "updates", &updates, false);
            let b = VbdDivergenceBuffers {
                records: &records,
                updates: &updates,
                smallest: &smallest,
                control: &frozen,
                frozen: 0,
                partials: &partials,
            };
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            record_pass(&mut encoder, "vbd_divergence", &kernel.bind(ctx, 3, 3, (1000, chunk), &b));
            ctx.queue.submit([encoder.finish()]);
            for (k, body) in bodies.iter().enumerate() {
                let range = body.vertex_start as usize..(body.vertex_start + body.vertex_count) as usize;
                let r2: f64 = r[range].iter().map(|&x| x as f64).sum();
                if !(r2 <= 100.0 * cpu_min[k]) {
                    cpu_frozen[k] |= FROZEN_DIVERGED;
                }
                cpu_min[k] = cpu_min[k].min(r2);
            }
            let got: Vec<[f32; 2]> = read_blocking(ctx, &smallest, 3).expect("smallest");
            for k in 0..3 {
                assert!((got[k][0] as f64 - cpu_min[k]).abs() <= 1e-5 * cpu_min[k], "body {k}: {got:?} vs {cpu_min:?}");
            }
        }
        let got: Vec<u32> = read_blocking(ctx, &frozen, 3).expect("frozen");
        assert_eq!(got, cpu_frozen.to_vec());
        assert_eq!(cpu_frozen, [0, FROZEN_DIVERGED, FROZEN_CONTACT | FROZEN_DIVERGED]);
    }
}
