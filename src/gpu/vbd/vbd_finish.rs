//! Host side of `shaders/vbd/vbd_finish.wgsl`: the end-of-step velocity and realised acceleration
//! of every vertex.

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel};
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("vbd/vbd_finish", "step");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct Params {
    count: u32,
    _pad: [u32; 3],
}

/// What the kernel reads and writes.
pub struct VbdFinishBuffers<'a> {
    /// Positions after the sweeps (vec4).
    pub positions: &'a wgpu::Buffer,
    /// The initial guess `x^(0)` (vec4).
    pub initial: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`] (predictor, velocity coefficients,
    /// initial offset).
    pub steps: &'a wgpu::Buffer,
    /// Velocities (vec4), written.
    pub velocities: &'a wgpu::Buffer,
    /// Accelerations (vec4), written.
    pub accelerations: &'a wgpu::Buffer,
    /// Vertex flags (u32); `VERTEX_NO_HISTORY` is cleared.
    pub flags: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct VbdFinish {
    kernel: ComputeKernel,
}

impl VbdFinish {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "vbd_finish", SHADER) }
    }

    /// The dispatch over `count` vertices.
    pub fn bind(&self, ctx: &GpuContext, count: usize, b: &VbdFinishBuffers<'_>) -> Bound {
        let params = Params { count: count as u32, _pad: [0; 3] };
        let buffers = [b.positions, b.initial, b.steps, b.velocities, b.accelerations, b.flags];
        self.kernel.bind_pod(ctx, &params, &buffers, count as u32)
    }
}

#[cfg(test)]
mod tests {
    use glam::{Vec3A, Vec4};

    use super::*;
    use crate::gpu::buffers::{read_blocking, storage};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::test_support;
    use crate::gpu::vbd::vbd_inertia::GpuVertexStep;
    use crate::solver::Integrator;
    use crate::solver::integrator::realised_acceleration;
    use crate::state::{VERTEX_KINEMATIC, VERTEX_NO_HISTORY};
    use crate::test_rng::Rng;

    /// GPU against the CPU finish phase on random steps of both integrators.
    #[test]
    fn matches_the_cpu_finish_phase() {
        let Some(ctx) = test_support::context() else { return };
        let kernel = VbdFinish::new(&ctx);
        let n = 1000;
        let h = 1.0 / 60.0;
        let mut rng = Rng(9);
        let mut v4 = |s: f64| (rng.vec() * s).as_vec3().extend(0.0);
        let initial: Vec<Vec4> = (0..n).map(|_| v4(2.0)).collect();
        let positions: Vec<Vec4> = initial.iter().map(|&p| p + v4(0.01)).collect();
        let steps: Vec<GpuVertexStep> = (0..n)
            .map(|k| {
                let integrator = if k % 2 == 0 { Integrator::Newmark } else { Integrator::BackwardEuler };
                let s = integrator.vertex_step(h, Vec3A::from_vec4(v4(3.0)), Vec3A::from_vec4(v4(10.0)));
                GpuVertexStep {
                    start: [0.0; 4],
                    predictor: s.predictor.extend(s.weight).to_array(),
                    inertia: [0.0; 4],
                    velocity: s.c0.extend(s.c1).to_array(),
                    offset: v4(0.05).to_array(),
                }
            })
            .collect();
        let flags: Vec<u32> = (0..n as u32).map(|k| k % 4).collect();
        let zeros = vec![Vec4::ZERO; n];
        let bufs = [
            storage(&ctx, "positions", &positions, false),
            storage(&ctx, "initial", &initial, false),
            storage(&ctx, "steps", &steps, false),
            storage(&ctx, "velocities", &zeros, true),
            storage(&ctx, "accelerations", &zeros, true),
            storage(&ctx, "flags", &flags, true),
        ];
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        let b = VbdFinishBuffers {
            positions: &bufs[0],
            initial: &bufs[1],
            steps: &bufs[2],
            velocities: &bufs[3],
            accelerations: &bufs[4],
            flags: &bufs[5],
        };
        record_pass(&mut encoder, "vbd_finish", &[kernel.bind(&ctx, n, &b)]);
        ctx.queue.submit([encoder.finish()]);
        let vel: Vec<Vec4> = read_blocking(&ctx, &bufs[3], n).expect("velocities");
        let acc: Vec<Vec4> = read_blocking(&ctx, &bufs[4], n).expect("accelerations");
        let fl: Vec<u32> = read_blocking(&ctx, &bufs[5], n).expect("flags");
        let close = |a: Vec3A, b: Vec3A| (a - b).length() <= 1e-5 * b.length().max(1e-3);
        for v in 0..n {
            let s = &steps[v];
            let dx = (Vec3A::from_vec4(positions[v]) - Vec3A::from_vec4(initial[v]))
                + Vec3A::from_array([s.offset[0], s.offset[1], s.offset[2]]);
            let c = Vec4::from_array(s.velocity);
            let p = Vec4::from_array(s.predictor);
            let v_cpu = dx * c.w + Vec3A::from_vec4(c);
            let a_cpu = realised_acceleration(dx, Vec3A::from_vec4(p), p.w);
            assert!(close(Vec3A::from_vec4(vel[v]), v_cpu), "vertex {v}: velocity {} vs {v_cpu}", vel[v]);
            assert!(close(Vec3A::from_vec4(acc[v]), a_cpu), "vertex {v}: acceleration {} vs {a_cpu}", acc[v]);
            assert_eq!(fl[v], flags[v] & !VERTEX_NO_HISTORY, "vertex {v}");
            assert_eq!(fl[v] & VERTEX_KINEMATIC, flags[v] & VERTEX_KINEMATIC);
        }
    }
}
