//! Host side of `shaders/vbd/vbd_advance.wgsl`: the initial guess advanced per body up to its first
//! obstacle contact, and the iterates started there.

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel};
use crate::gpu::obstacles::GpuObstacleSet;
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("vbd/vbd_advance", "step", "obstacles");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    phase: u32,
    count: u32,
    vertex_body: u32,
    span_toi: u32,
    obstacles: GpuObstacleSet,
}

/// What the kernel reads and writes.
pub struct VbdAdvanceBuffers<'a> {
    /// Positions (vec4): set to `x^(0)`.
    pub positions: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`]; the offset is shortened in place.
    pub steps: &'a wgpu::Buffer,
    /// `SimState::flags`.
    pub flags: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`].
    pub index: &'a wgpu::Buffer,
    /// Per body: the time of first obstacle contact, then per body the fraction its spans allow
    /// (`vbd_spans`), as f32 bits (u32 scratch).
    pub body_toi: &'a wgpu::Buffer,
    /// `x^(0)` (vec4), kept for the velocity update.
    pub initial: &'a wgpu::Buffer,
    /// Chebyshev's two previous iterates (vec4), started at `x^(0)`.
    pub previous: &'a wgpu::Buffer,
    /// See `previous`.
    pub before_previous: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct VbdAdvance {
    kernel: ComputeKernel,
}

impl VbdAdvance {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "vbd_advance", SHADER) }
    }

    /// The phases 0–2 for `vertices` vertices of `bodies` bodies (`vertex_body` is where that
    /// table starts in `index`), then the span limit's: phase 0 over its per-body fractions
    /// (`body_toi[bodies..]`) and phase 3.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        vertices: u32,
        bodies: u32,
        vertex_body: u32,
        obstacles: &GpuObstacleSet,
        b: &VbdAdvanceBuffers<'_>,
    ) -> [Bound; 5] {
        let buffers = [b.positions, b.steps, b.flags, b.index, b.body_toi, b.initial, b.previous, b.before_previous];
        [(0, 0, bodies), (1, 0, vertices), (2, 0, vertices), (0, bodies, bodies), (3, 0, vertices)].map(
            |(phase, first, count)| {
                // Phase 0 resets `count` words from `span_toi` on.
                let span_toi = if phase == 0 { first } else { bodies };
                let params = Params { phase, count, vertex_body, span_toi, obstacles: *obstacles };
                self.kernel.bind_pod(ctx, &params, &buffers, count)
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use glam::{Vec3, Vec3A, Vec4};

    use super::*;
    use crate::collision::Obstacle;
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::test_support;
    use crate::gpu::vbd::vbd_inertia::GpuVertexStep;
    use crate::solver::vbd::advanced_offset;
    use crate::state::VERTEX_KINEMATIC;
    use crate::test_rng::Rng;

    /// Four bodies of random points moving down onto the ground and a sphere (one body stays
    /// clear, one starts partly inside the sphere, one is half kinematic): GPU against the CPU's
    /// per-body earliest contact and `advanced_offset`.
    #[test]
    fn matches_the_cpu_advance() {
        let Some(ctx) = test_support::context() else { return };
        let (n, bodies) = (800usize, 4usize);
        let mut rng = Rng(3);
        let vertex_body: Vec<u32> = (0..n as u32).map(|v| v / 200).collect();
        let lift = [0.5, 0.05, 0.12, 0.08];
        let start: Vec<Vec4> = (0..n)
            .map(|v| {
                let p = rng.vec().as_vec3a() * 0.1 + Vec3A::new(0.0, lift[vertex_body[v] as usize], 0.0);
                p.extend(0.0)
            })
            .collect();
        let offsets: Vec<Vec3A> = (0..n).map(|_| Vec3A::new(0.0, -0.1, 0.0) + rng.vec().as_vec3a() * 0.02).collect();
        let flags: Vec<u32> = (0..n).map(|v| if v >= 600 && v % 2 == 0 { VERTEX_KINEMATIC } else { 0 }).collect();
        let obstacles = [Obstacle::ground(0.0, 0.5), Obstacle::sphere(Vec3::new(0.0, 0.1, 0.0), 0.05, 0.5).expect("s")];
        let steps: Vec<GpuVertexStep> = (0..n)
            .map(|v| GpuVertexStep {
                start: start[v].to_array(),
                offset: offsets[v].extend(0.0).to_array(),
                ..Default::default()
            })
            .collect();
        let mut index = vec![0u32; 7];
        index.extend_from_slice(&vertex_body);
        let bufs = [
            output::<Vec4>(&ctx, "positions", n),
            storage(&ctx, "steps", &steps, true),
            storage(&ctx, "flags", &flags, false),
            storage(&ctx, "index", &index, false),
            output::<u32>(&ctx, "body_toi", bodies),
            output::<Vec4>(&ctx, "initial", n),
            output::<Vec4>(&ctx, "previous", n),
            output::<Vec4>(&ctx, "before_previous", n),
        ];
        let b = VbdAdvanceBuffers {
            positions: &bufs[0],
            steps: &bufs[1],
            flags: &bufs[2],
            index: &bufs[3],
            body_toi: &bufs[4],
            initial: &bufs[5],
            previous: &bufs[6],
            before_previous: &bufs[7],
        };
        let set = GpuObstacleSet::pack(&obstacles).expect("obstacles");
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        record_pass(
            &mut encoder,
            "vbd_advance",
            &VbdAdvance::new(&ctx).bind(&ctx, n as u32, bodies as u32, 7, &set, &b)[..3],
        );
        ctx.queue.submit([encoder.finish()]);
        let gpu_steps: Vec<GpuVertexStep> = read_blocking(&ctx, &bufs[1], n).expect("steps");
        let toi_bits: Vec<u32> = read_blocking(&ctx, &bufs[4], bodies).expect("toi");
        let outputs: Vec<Vec<Vec4>> =
            [0, 5, 6, 7].iter().map(|&k| read_blocking(&ctx, &bufs[k], n).expect("positions")).collect();

        let mut body_toi = vec![1.0f32; bodies];
        for v in (0..n).filter(|&v| flags[v] & VERTEX_KINEMATIC == 0) {
            let x = Vec3A::from_vec4(start[v]);
            let toi = obstacles.iter().filter_map(|o| o.first_entry(x, x + offsets[v])).fold(1.0f32, f32::min);
            let b = vertex_body[v] as usize;
            body_toi[b] = body_toi[b].min(toi);
        }
        for (b, &bits) in toi_bits.iter().enumerate() {
            let got = f32::from_bits(bits);
            assert!((got - body_toi[b]).abs() <= 1e-5, "body {b}: time of contact {got} vs {}", body_toi[b]);
        }
        assert!(body_toi[0] == 1.0 && body_toi.iter().filter(|&&t| t < 0.9).count() >= 2, "{body_toi:?}");
        for v in 0..n {
            let x = Vec3A::from_vec4(start[v]);
            let offset = if flags[v] & VERTEX_KINEMATIC != 0 {
                offsets[v]
            } else {
                advanced_offset(&obstacles, vertex_body[v], x, offsets[v], body_toi[vertex_body[v] as usize])
            };
            let got = Vec3A::from_slice(&gpu_steps[v].offset[..3]);
            assert!((got - offset).length() <= 1e-6, "vertex {v}: offset {got} vs {offset}");
            for out in &outputs {
                assert!((Vec3A::from_vec4(out[v]) - (x + offset)).length() <= 1e-6, "vertex {v}");
            }
        }
    }
}
