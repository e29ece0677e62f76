//! Host side of `shaders/vbd/vbd_spin.wgsl`: each free volumetric body's rigid spin over a step
//! (`solver::vbd::spin::BodySpin`) and its vertices' terms, for `vbd_inertia` to turn the body
//! exactly: one workgroup per body, or for bodies of more than [`CHUNK_VERTICES`] vertices four
//! dispatches over their chunks.

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use crate::gpu::pack::{RecordLayout, chunks};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("vbd/vbd_spin", "step", "rigid");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    bodies: u32,
    records: u32,
    h: f32,
    phase: u32,
    chunk: u32,
    chunks: u32,
    spin_records: u32,
    _pad: u32,
}

/// Vertices per workgroup in a large body's sums and terms.
pub const CHUNK_VERTICES: u32 = 2048;

/// f32 words of the `partials` buffer for `bodies` bodies, the largest of `largest` vertices.
pub fn partial_words(bodies: usize, largest: u32, chunk: u32) -> usize {
    13 * bodies * chunks(largest, chunk) as usize
}

/// vec4s of the `spins` buffer for `bodies` bodies.
pub fn spin_words(bodies: usize) -> usize {
    6 * bodies
}

/// What the kernel reads and writes.
pub struct VbdSpinBuffers<'a> {
    /// `x^n` (vec4).
    pub positions: &'a wgpu::Buffer,
    /// `v^n` (vec4).
    pub velocities: &'a wgpu::Buffer,
    /// `SimState::masses`.
    pub masses: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_records`]: the bodies' vertex ranges in, their spins `ω'` out.
    pub records: &'a wgpu::Buffer,
    /// The rigid correction's words: which bodies are free and volumetric.
    pub rigid: &'a wgpu::Buffer,
    /// Output per vertex: the predictor's shift ρ, then the velocity's κ (two vec4s).
    pub turns: &'a wgpu::Buffer,
    /// Chunked bodies' partial sums ([`partial_words`] f32).
    pub partials: &'a wgpu::Buffer,
    /// Chunked bodies' spins ([`spin_words`] vec4).
    pub spins: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct VbdSpin {
    kernel: ComputeKernel,
}

impl VbdSpin {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "vbd_spin", SHADER) }
    }

    /// The spins of `bodies` bodies, the largest of `largest` vertices, summed in chunks of
    /// `chunk`; `records` is the first body record in `records`, `h` the step. One dispatch (a
    /// workgroup per body) when every body fits one chunk.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        (bodies, records, h): (u32, RecordLayout, f32),
        (largest, chunk): (u32, u32),
        b: &VbdSpinBuffers<'_>,
    ) -> Vec<Bound> {
        let chunks = chunks(largest, chunk);
        let params = |phase| Params {
            bodies,
            records: records.bodies,
            h,
            phase,
            chunk,
            chunks,
            spin_records: records.spins,
            _pad: 0,
        };
        let buffers = [b.positions, b.velocities, b.masses, b.records, b.rigid, b.turns, b.partials, b.spins];
        let per_body = |phase| self.kernel.bind_pod(ctx, &params(phase), &buffers, bodies * WORKGROUP);
        if chunks == 1 {
            return vec![per_body(0)];
        }
        let grid = |phase| self.kernel.bind_pod(ctx, &params(phase), &buffers, 0).grid(chunks, bodies);
        vec![grid(1), grid(2), per_body(3), grid(4)]
    }
}

#[cfg(test)]
mod tests {
    use glam::{Vec3A, Vec4};

    use super::*;
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::rigid::rigid_groups::{RIGID_ELIGIBLE, RIGID_VOLUMETRIC};
    use crate::gpu::test_support;
    use crate::gpu::vbd::vbd_inertia::{GpuVertexStep, VbdInertia, VbdInertiaBuffers, VbdInertiaParams};
    use crate::solver::vbd::spin::BodySpin;
    use crate::solver::{Initialization, Integrator};
    use crate::test_rng::Rng;

    /// `vbd_spin` then `vbd_inertia` against `BodySpin::of` and `BodySpin::turn`: three bodies
    /// turning at up to 20 rad/s with noise on their velocities, one of them not eligible (its
    /// steps are the plain integrator's), one at rest.
    #[test]
    fn turns_as_the_cpu_does() {
        let Some(ctx) = test_support::context() else { return };
        // One workgroup per body, and chunks of 32 vertices (the largest body takes five).
        for chunk in [CHUNK_VERTICES, 32] {
            turns_in_chunks(&ctx, chunk);
        }
    }

    fn turns_in_chunks(ctx: &GpuContext, chunk: u32) {
        let (spin_kernel, inertia_kernel) = (VbdSpin::new(ctx), VbdInertia::new(ctx));
        let mut rng = Rng(7);
        let sizes = [150usize, 90, 60, 40];
        let omegas = [Vec3A::new(1.0, -3.0, 20.0), Vec3A::new(0.0, 5.0, 0.5), Vec3A::new(2.0, 0.0, 0.0), Vec3A::ZERO];
        let eligible = [true, true, false, true];
        let (mut x, mut v, mut m, mut records) = (vec![], vec![], vec![], vec![]);
        for (b, &n) in sizes.iter().enumerate() {
            let centre = (rng.vec() * 2.0).as_vec3a();
            records.push(Vec4::from_array([f32::from_bits(x.len() as u32), f32::from_bits(n as u32), 0.5, 0.0]));
            records.push(Vec4::ZERO);
            for _ in 0..n {
                let p = centre + (rng.vec() * 0.2).as_vec3a();
                let noise = if omegas[b] == Vec3A::ZERO { Vec3A::ZERO } else { (rng.vec() * 0.05).as_vec3a() };
                x.push(p.extend(0.0));
                v.push((Vec3A::new(0.3, -1.0, 0.2) + omegas[b].cross(p - centre) + noise).extend(0.0));
                m.push(0.01 + rng.uniform_f32());
            }
        }
        let n = x.len();
        let bodies = sizes.len();
        // The spins' records after the bodies', stale (NaN) until the kernel writes them.
        let layout = RecordLayout { bodies: 0, tris: 0, hinges: 0, spins: records.len() as u32 };
        records.resize(records.len() + bodies, Vec4::NAN);
        let words = crate::gpu::rigid::rigid_groups::RIGID_WORDS;
        let mut rigid = vec![0u32; bodies * words];
        for b in 0..bodies {
            rigid[b * words + 3] = if eligible[b] { RIGID_ELIGIBLE | RIGID_VOLUMETRIC } else { RIGID_VOLUMETRIC };
        }
        let h = 1.0f32 / 60.0;
        let g = Vec3A::new(0.0, -9.81, 0.0);
        let bufs = [
            storage(ctx, "positions", &x, false),
            storage(ctx, "velocities", &v, false),
            storage(ctx, "accelerations", &vec![Vec4::ZERO; n], false),
            storage(ctx, "masses", &m, false),
            storage(ctx, "flags", &vec![0u32; n], false),
            storage(ctx, "targets", &vec![Vec4::ZERO; n], false),
            storage(ctx, "records", &records, true),
            storage(ctx, "rigid", &rigid, false),
        ];
        let turns = output::<Vec4>(ctx, "turns", 2 * n);
        let steps = output::<GpuVertexStep>(ctx, "steps", n);
        let largest = *sizes.iter().max().expect("bodies") as u32;
        let partials = output::<f32>(ctx, "partials", partial_words(bodies, largest, chunk));
        let spins = output::<Vec4>(ctx, "spins", spin_words(bodies));
        let sb = VbdSpinBuffers {
            positions: &bufs[0],
            velocities: &bufs[1],
            masses: &bufs[3],
            records: &bufs[6],
            rigid: &bufs[7],
            turns: &turns,
            partials: &partials,
            spins: &spins,
        };
        let params = VbdInertiaParams::new(n, h, g, Integrator::Newmark, Initialization::Adaptive).with_spins();
        let ib = VbdInertiaBuffers {
            positions: &bufs[0],
            velocities: &bufs[1],
            accelerations: &bufs[2],
            masses: &bufs[3],
            flags: &bufs[4],
            targets: &bufs[5],
            steps: &steps,
            turns: &turns,
        };
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        let mut passes = spin_kernel.bind(ctx, (bodies as u32, layout, h), (largest, chunk), &sb);
        passes.push(inertia_kernel.bind(ctx, &params, &ib));
        record_pass(&mut encoder, "vbd_spin", &passes);
        ctx.queue.submit([encoder.finish()]);
        let gpu: Vec<GpuVertexStep> = read_blocking(ctx, &steps, n).expect("readback");
        let written: Vec<Vec4> = read_blocking(ctx, &bufs[6], records.len()).expect("readback");
        let mut first = 0;
        for (b, &count) in sizes.iter().enumerate() {
            let range = first..first + count;
            first += count;
            let spin = BodySpin::of(&x[range.clone()], &v[range.clone()], &m[range.clone()], h).filter(|_| eligible[b]);
            assert_eq!(spin.is_some(), eligible[b] && omegas[b] != Vec3A::ZERO, "body {b}");
            // The spin vbd_color's damping leaves alone: ω', zero for a body that does not turn.
            let record = Vec3A::from_vec4(written[layout.spins as usize + b]);
            let after = spin.map_or(Vec3A::ZERO, |s| s.omega_after);
            assert!((record - after).length() <= 1e-5 * (1.0 + after.length()), "body {b}: ω' {record} vs {after}");
            for i in range {
                let mut s = Integrator::Newmark.vertex_step(h, Vec3A::from_vec4(v[i]), Vec3A::ZERO);
                if let Some(spin) = spin {
                    let turn = spin.turn(Vec3A::from_vec4(x[i]), h);
                    s.predictor += turn.shift;
                    s.c0 += turn.velocity - turn.shift * s.c1;
                }
                let (p, c0) = (Vec3A::from_slice(&gpu[i].predictor[..3]), Vec3A::from_slice(&gpu[i].velocity[..3]));
                // f32 sums on the GPU, f64 on the CPU: ω agrees to ~1e-6 relative.
                assert!((p - s.predictor).length() < 1e-6, "body {b} vertex {i}: predictor {p} vs {}", s.predictor);
                assert!((c0 - s.c0).length() < 1e-4, "body {b} vertex {i}: c0 {c0} vs {}", s.c0);
            }
        }
    }
}
