//! Host side of `shaders/vbd/vbd_inertia.wgsl`: inertia targets, velocity-update coefficients and
//! the initial guess of a VBD step, one invocation per vertex.

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel};
use crate::solver::{Initialization, Integrator};
use bytemuck::{Pod, Zeroable};
use glam::Vec3A;

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("vbd/vbd_inertia", "step");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct VbdInertiaParams {
    /// Gravity \[m/s²\].
    pub gravity: [f32; 3],
    /// Step size \[s\].
    pub h: f32,
    /// Vertices.
    pub count: u32,
    /// 0 backward Euler, 1 Newmark.
    pub integrator: u32,
    /// 0 previous, 1 inertia, 2 inertia and gravity, 3 adaptive.
    pub initialization: u32,
    /// 1 when `turns` holds `vbd_spin`'s output.
    pub spin: u32,
    _pad: [u32; 4],
}

impl VbdInertiaParams {
    /// Parameters for `count` vertices.
    pub fn new(count: usize, h: f32, gravity: Vec3A, integrator: Integrator, initialization: Initialization) -> Self {
        Self {
            gravity: gravity.to_array(),
            h,
            count: count as u32,
            integrator: match integrator {
                Integrator::BackwardEuler => 0,
                Integrator::Newmark => 1,
            },
            initialization: match initialization {
                Initialization::Previous => 0,
                Initialization::Inertia => 1,
                Initialization::InertiaAndGravity => 2,
                Initialization::Adaptive => 3,
            },
            spin: 0,
            _pad: [0; 4],
        }
    }

    /// The same, turning each body's rigid spin exactly with `vbd_spin`'s output
    /// (`solver::vbd::spin`).
    pub fn with_spins(self) -> Self {
        Self { spin: 1, ..self }
    }
}

/// The shader's per-vertex output `VertexStep`, laid out as the CPU prepare phase stores it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuVertexStep {
    /// `x^n` (w as stored).
    pub start: [f32; 4],
    /// `x̂ − x^n` and the weight `w`.
    pub predictor: [f32; 4],
    /// `x̂ − x^n + w g` and `m / w`.
    pub inertia: [f32; 4],
    /// `c0` and `c1` of the velocity update `v = c1 Δx + c0`.
    pub velocity: [f32; 4],
    /// The initial guess `x^(0) − x^n` (w: scratch of `vbd_advance`).
    pub offset: [f32; 4],
}

/// The state arrays the kernel reads (packed straight from [`crate::state::SimState`]) and the
/// buffer it writes.
pub struct VbdInertiaBuffers<'a> {
    /// `positions` (vec4).
    pub positions: &'a wgpu::Buffer,
    /// `velocities` (vec4).
    pub velocities: &'a wgpu::Buffer,
    /// `accelerations` (vec4).
    pub accelerations: &'a wgpu::Buffer,
    /// `masses` (f32).
    pub masses: &'a wgpu::Buffer,
    /// `flags` (u32).
    pub flags: &'a wgpu::Buffer,
    /// Kinematic targets (vec4).
    pub targets: &'a wgpu::Buffer,
    /// Output, one [`GpuVertexStep`] per vertex.
    pub steps: &'a wgpu::Buffer,
    /// `vbd_spin`'s per-vertex output (read with spins only).
    pub turns: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct VbdInertia {
    kernel: ComputeKernel,
}

impl VbdInertia {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "vbd_inertia", SHADER) }
    }

    /// The dispatch over `params.count` vertices.
    pub fn bind(&self, ctx: &GpuContext, params: &VbdInertiaParams, b: &VbdInertiaBuffers<'_>) -> Bound {
        let buffers = [b.positions, b.velocities, b.accelerations, b.masses, b.flags, b.targets, b.steps, b.turns];
        self.kernel.bind_pod(ctx, params, &buffers, params.count)
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec4;

    use super::*;
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::test_support;
    use crate::state::{VERTEX_KINEMATIC, VERTEX_NO_HISTORY};
    use crate::test_rng::Rng;

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() <= 1e-5 * a.abs().max(b.abs()).max(1e-3)
    }

    /// GPU against the CPU's per-vertex prepare code on random vertices, for both integrators
    /// and every initialisation, with kinematic and history-less vertices mixed in.
    #[test]
    fn matches_the_cpu_prepare_phase() {
        let Some(ctx) = test_support::context() else { return };
        let kernel = VbdInertia::new(&ctx);
        let n = 1000;
        let mut rng = Rng(42);
        let v4 = |rng: &mut Rng, s: f64| (rng.vec() * s).as_vec3().extend(0.0);
        let positions: Vec<Vec4> = (0..n).map(|_| v4(&mut rng, 2.0)).collect();
        let velocities: Vec<Vec4> = (0..n).map(|_| v4(&mut rng, 3.0)).collect();
        // Accelerations around gravity, so the adaptive fraction spans 0…1 and the snap.
        let g = Vec3A::new(0.0, -9.81, 0.0);
        let accelerations: Vec<Vec4> =
            (0..n).map(|k| if k % 7 == 0 { Vec4::from((g, 0.0)) } else { v4(&mut rng, 12.0) }).collect();
        let masses: Vec<f32> = (0..n).map(|_| 0.01 + rng.uniform_f32()).collect();
        let flags: Vec<u32> = (0..n)
            .map(|_| {
                let r = rng.uniform();
                if r < 0.1 {
                    VERTEX_KINEMATIC
                } else if r < 0.2 {
                    VERTEX_NO_HISTORY
                } else {
                    0
                }
            })
            .collect();
        let targets: Vec<Vec4> = (0..n).map(|_| v4(&mut rng, 2.0)).collect();
        let bufs = [
            storage(&ctx, "positions", &positions, false),
            storage(&ctx, "velocities", &velocities, false),
            storage(&ctx, "accelerations", &accelerations, false),
            storage(&ctx, "masses", &masses, false),
            storage(&ctx, "flags", &flags, false),
            storage(&ctx, "targets", &targets, false),
        ];
        let steps = output::<GpuVertexStep>(&ctx, "steps", n);
        let unused = output::<Vec4>(&ctx, "unused", 1);
        let h = 1.0 / 60.0;
        for integrator in [Integrator::BackwardEuler, Integrator::Newmark] {
            for init in [
                Initialization::Previous,
                Initialization::Inertia,
                Initialization::InertiaAndGravity,
                Initialization::Adaptive,
            ] {
                let params = VbdInertiaParams::new(n, h, g, integrator, init);
                let mut encoder = ctx.device.create_command_encoder(&Default::default());
                let b = VbdInertiaBuffers {
                    positions: &bufs[0],
                    velocities: &bufs[1],
                    accelerations: &bufs[2],
                    masses: &bufs[3],
                    flags: &bufs[4],
                    targets: &bufs[5],
                    steps: &steps,
                    turns: &unused,
                };
                record_pass(&mut encoder, "vbd_inertia", &[kernel.bind(&ctx, &params, &b)]);
                ctx.queue.submit([encoder.finish()]);
                let gpu: Vec<GpuVertexStep> = read_blocking(&ctx, &steps, n).expect("readback");
                for v in 0..n {
                    let vel = Vec3A::from_vec4(velocities[v]);
                    let accel = if flags[v] & VERTEX_NO_HISTORY != 0 { g } else { Vec3A::from_vec4(accelerations[v]) };
                    let s = integrator.vertex_step(h, vel, accel);
                    let offset = if flags[v] & VERTEX_KINEMATIC != 0 {
                        Vec3A::from_vec4(targets[v]) - Vec3A::from_vec4(positions[v])
                    } else {
                        init.offset(s.predictor, s.weight, g, accel)
                    };
                    let cpu = GpuVertexStep {
                        start: positions[v].to_array(),
                        predictor: s.predictor.extend(s.weight).to_array(),
                        inertia: (s.predictor + g * s.weight).extend(masses[v] / s.weight).to_array(),
                        velocity: s.c0.extend(s.c1).to_array(),
                        offset: offset.extend(0.0).to_array(),
                    };
                    let pairs = [
                        (gpu[v].start, cpu.start),
                        (gpu[v].predictor, cpu.predictor),
                        (gpu[v].inertia, cpu.inertia),
                        (gpu[v].velocity, cpu.velocity),
                        (gpu[v].offset, cpu.offset),
                    ];
                    for (a, b) in pairs {
                        assert!(
                            a.iter().zip(&b).all(|(&x, &y)| close(x, y)),
                            "{integrator:?} {init:?} vertex {v}: GPU {a:?} vs CPU {b:?}"
                        );
                    }
                }
            }
        }
    }
}
