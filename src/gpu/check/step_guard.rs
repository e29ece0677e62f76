//! Host side of `shaders/check/step_guard.wgsl`: bodies whose substep produced a non-finite value are
//! rolled back to the substep's start at rest, on the GPU, and flagged for the host; once the
//! safety check (`step_check`, `step_soft`) finds a body unsafe, every body is rolled back.

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel};
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("check/step_guard", "step");

/// Field bits of a flagged body, as the shader sets them.
pub const BAD_POSITION: u32 = 1;
/// See [`BAD_POSITION`].
pub const BAD_VELOCITY: u32 = 2;
/// See [`BAD_POSITION`].
pub const BAD_ACCELERATION: u32 = 4;

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    phase: u32,
    count: u32,
    vertex_body: u32,
    redone_on_gpu: u32,
}

/// Words per body in the `rollbacks` buffer.
pub const ROLLBACK_WORDS: usize = 3;

/// A body's rollbacks since its state was uploaded, decoded from the `rollbacks` buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rollbacks {
    /// Substeps rolled back so far.
    pub count: u32,
    /// First offending vertex of the last one (global index).
    pub vertex: u32,
    /// `BAD_*` bits of the last one.
    pub fields: u32,
}

/// Decodes the per-body words of `rollbacks`.
pub fn decode(words: &[u32]) -> Vec<Rollbacks> {
    words
        .chunks_exact(ROLLBACK_WORDS)
        .map(|w| Rollbacks { count: w[0], vertex: u32::MAX - w[1], fields: w[2] })
        .collect()
}

/// What the kernel reads and writes.
pub struct StepGuardBuffers<'a> {
    /// `SimState::positions` (vec4).
    pub positions: &'a wgpu::Buffer,
    /// `SimState::velocities` (vec4).
    pub velocities: &'a wgpu::Buffer,
    /// `SimState::accelerations` (vec4).
    pub accelerations: &'a wgpu::Buffer,
    /// `SimState::flags`.
    pub flags: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`] (its `start` is restored).
    pub steps: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`].
    pub index: &'a wgpu::Buffer,
    /// Two u32 per body for this substep, then two for the world (the last gathers
    /// `step_check`'s and `step_soft`'s bits: any of them puts every body back); zeroed before
    /// it.
    pub bad: &'a wgpu::Buffer,
    /// [`ROLLBACK_WORDS`] u32 per body, counting up (zeroed once, at upload).
    pub rollbacks: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct StepGuard {
    kernel: ComputeKernel,
}

impl StepGuard {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "step_guard", SHADER) }
    }

    /// The check, the rollback and the count, in order; `bad` must be
    /// zeroed before them (`encoder.clear_buffer`, outside the pass). `redone_on_gpu`: unsafe
    /// substeps are redone on the device (`al_gate`), so the rollback puts back only bodies
    /// with a non-finite value.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        vertices: u32,
        bodies: u32,
        vertex_body: u32,
        redone_on_gpu: bool,
        b: &StepGuardBuffers<'_>,
    ) -> [Bound; 3] {
        let buffers = [b.positions, b.velocities, b.accelerations, b.flags, b.steps, b.index, b.bad, b.rollbacks];
        [(0, vertices), (1, vertices), (2, bodies)].map(|(phase, count)| {
            let params = Params { phase, count, vertex_body, redone_on_gpu: u32::from(redone_on_gpu) };
            self.kernel.bind_pod(ctx, &params, &buffers, count)
        })
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec4;

    use super::*;
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::test_support;
    use crate::gpu::vbd::vbd_inertia::GpuVertexStep;
    use crate::state::{VERTEX_KINEMATIC, VERTEX_NO_HISTORY};

    /// Body 1 of three gets a NaN velocity and an infinite position: only its vertices return to
    /// the substep's start at rest, and the flags name its first bad vertex and both fields.
    /// Then a body the check found unsafe: all return, only it is counted.
    #[test]
    fn rolls_back_the_body_with_a_non_finite_value_and_all_for_an_unsafe_one() {
        let Some(ctx) = test_support::context() else { return };
        let n = 300;
        let vertex_body: Vec<u32> = (0..n as u32).map(|v| v / 100).collect();
        let start: Vec<Vec4> = (0..n).map(|v| Vec4::new(v as f32, 1.0, 2.0, 0.0)).collect();
        let mut positions: Vec<Vec4> = start.iter().map(|p| *p + Vec4::new(0.0, 0.5, 0.0, 0.0)).collect();
        let mut velocities = vec![Vec4::new(0.0, -1.0, 0.0, 0.0); n];
        velocities[170].y = f32::NAN;
        positions[130].x = f32::INFINITY;
        let accelerations = vec![Vec4::new(0.0, -9.81, 0.0, 0.0); n];
        let flags: Vec<u32> = (0..n as u32).map(|v| if v % 50 == 0 { VERTEX_KINEMATIC } else { 0 }).collect();
        let steps: Vec<GpuVertexStep> =
            start.iter().map(|s| GpuVertexStep { start: s.to_array(), ..Default::default() }).collect();
        let bufs = [
            storage(&ctx, "positions", &positions, true),
            storage(&ctx, "velocities", &velocities, true),
            storage(&ctx, "accelerations", &accelerations, true),
            storage(&ctx, "flags", &flags, true),
            storage(&ctx, "steps", &steps, false),
            storage(&ctx, "index", &vertex_body, false),
            output::<u32>(&ctx, "bad", 8),
            output::<u32>(&ctx, "rollbacks", 9),
        ];
        let b = StepGuardBuffers {
            positions: &bufs[0],
            velocities: &bufs[1],
            accelerations: &bufs[2],
            flags: &bufs[3],
            steps: &bufs[4],
            index: &bufs[5],
            bad: &bufs[6],
            rollbacks: &bufs[7],
        };
        // Twice (the second rollback starts from the restored, finite state: nothing to do),
        // then once more with body 1 bad again.
        let kernel = StepGuard::new(&ctx);
        let guard = || {
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            encoder.clear_buffer(&bufs[6], 0, None);
            record_pass(&mut encoder, "step_guard", &kernel.bind(&ctx, n as u32, 3, 0, false, &b));
            ctx.queue.submit([encoder.finish()]);
        };
        guard();
        guard();
        let x: Vec<Vec4> = read_blocking(&ctx, &bufs[0], n).expect("positions");
        let v: Vec<Vec4> = read_blocking(&ctx, &bufs[1], n).expect("velocities");
        let a: Vec<Vec4> = read_blocking(&ctx, &bufs[2], n).expect("accelerations");
        let f: Vec<u32> = read_blocking(&ctx, &bufs[3], n).expect("flags");
        let counts: Vec<u32> = read_blocking(&ctx, &bufs[7], 9).expect("rollbacks");
        for k in 0..n {
            if vertex_body[k] == 1 {
                assert_eq!((x[k], v[k], a[k]), (start[k], Vec4::ZERO, Vec4::ZERO), "vertex {k}");
                assert_eq!(f[k], flags[k] | VERTEX_NO_HISTORY);
            } else {
                assert_eq!((x[k], v[k], a[k], f[k]), (positions[k], velocities[k], accelerations[k], flags[k]));
            }
        }
        let once = Rollbacks { count: 1, vertex: 130, fields: BAD_POSITION | BAD_VELOCITY };
        assert_eq!(decode(&counts)[1], once);
        assert_eq!(decode(&counts)[0].count + decode(&counts)[2].count, 0);
        ctx.queue.write_buffer(&bufs[2], 171 * 16, bytemuck::bytes_of(&Vec4::splat(f32::NAN)));
        guard();
        let counts: Vec<u32> = read_blocking(&ctx, &bufs[7], 9).expect("rollbacks");
        assert_eq!(decode(&counts)[1], Rollbacks { count: 2, vertex: 171, fields: BAD_ACCELERATION });
        // Body 2 found unsafe by the check (finite, speed bit 16, in its words and the world's):
        // every body goes back to the substep's start at rest, only body 2 is counted.
        ctx.queue.write_buffer(&bufs[0], 0, bytemuck::cast_slice(&positions));
        ctx.queue.write_buffer(&bufs[0], 130 * 16, bytemuck::bytes_of(&(start[130] + Vec4::Y)));
        ctx.queue.write_buffer(&bufs[1], 0, bytemuck::cast_slice(&vec![Vec4::new(0.0, -1.0, 0.0, 0.0); n]));
        ctx.queue.write_buffer(&bufs[2], 0, bytemuck::cast_slice(&accelerations));
        ctx.queue.write_buffer(&bufs[3], 0, bytemuck::cast_slice(&flags));
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        encoder.clear_buffer(&bufs[6], 0, None);
        ctx.queue.submit([encoder.finish()]);
        ctx.queue.write_buffer(&bufs[6], 0, bytemuck::cast_slice(&[0u32, 0, 0, 0, u32::MAX - 250, 16, 0, 16]));
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        record_pass(&mut encoder, "step_guard", &kernel.bind(&ctx, n as u32, 3, 0, false, &b));
        ctx.queue.submit([encoder.finish()]);
        let x: Vec<Vec4> = read_blocking(&ctx, &bufs[0], n).expect("positions");
        let v: Vec<Vec4> = read_blocking(&ctx, &bufs[1], n).expect("velocities");
        for k in 0..n {
            assert_eq!((x[k], v[k]), (start[k], Vec4::ZERO), "vertex {k}");
        }
        let counts = decode(&read_blocking::<u32>(&ctx, &bufs[7], 9).expect("rollbacks"));
        assert_eq!(counts[2], Rollbacks { count: 1, vertex: 250, fields: 16 });
        assert_eq!((counts[0].count, counts[1].count), (0, 2));
        // The same, with unsafe substeps redone on the device: nobody is put back (the fallback
        // wrote the answer), body 2 is counted; body 1, non-finite, still goes back alone.
        ctx.queue.write_buffer(&bufs[0], 0, bytemuck::cast_slice(&positions));
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        encoder.clear_buffer(&bufs[6], 0, None);
        ctx.queue.submit([encoder.finish()]);
        ctx.queue.write_buffer(&bufs[6], 0, bytemuck::cast_slice(&[0u32, 0, 0, 0, u32::MAX - 250, 16, 0, 16]));
        ctx.queue.write_buffer(&bufs[1], 150 * 16, bytemuck::bytes_of(&Vec4::splat(f32::NAN)));
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        record_pass(&mut encoder, "step_guard", &kernel.bind(&ctx, n as u32, 3, 0, true, &b));
        ctx.queue.submit([encoder.finish()]);
        let x: Vec<Vec4> = read_blocking(&ctx, &bufs[0], n).expect("positions");
        for k in 0..n {
            let expected = if vertex_body[k] == 1 { start[k] } else { positions[k] };
            assert_eq!(x[k], expected, "vertex {k}");
        }
        let counts = decode(&read_blocking::<u32>(&ctx, &bufs[7], 9).expect("rollbacks"));
        assert_eq!((counts[0].count, counts[1].count, counts[2].count), (0, 3, 2));
    }
}
