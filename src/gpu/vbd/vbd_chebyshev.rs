//! Host side of `shaders/vbd/vbd_chebyshev.wgsl`: the Chebyshev mix after a sweep and the shift of
//! the two previous iterates.

use crate::gpu::GpuContext;
use crate::gpu::contact::layout::SurfaceBounds;
use crate::gpu::kernel::{Bound, ComputeKernel};
use crate::gpu::obstacles::GpuObstacleSet;
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!(
    "vbd/vbd_chebyshev",
    "obstacles",
    "spans",
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
    omega: f32,
    count: u32,
    vertex_body: u32,
    frozen: u32,
    spans: u32,
    span_base: u32,
    span_offsets: u32,
    span_entries: u32,
    bounds: SurfaceBounds,
    obstacles: GpuObstacleSet,
}

/// Where the span records and the vertex → span adjacency are (`gpu::vbd::vbd_spans`).
#[derive(Clone, Copy, Debug)]
pub struct SpanRows {
    /// First span record in `updates` (vec4s).
    pub base: u32,
    /// The adjacency's row offsets in `index`.
    pub offsets: u32,
    /// Its entries in `index`.
    pub entries: u32,
}

/// What the kernel reads and writes.
pub struct VbdChebyshevBuffers<'a> {
    /// Positions after the sweep (vec4), mixed in place.
    pub positions: &'a wgpu::Buffer,
    /// The previous iterate `x_{n−1}` (vec4), shifted.
    pub previous: &'a wgpu::Buffer,
    /// The iterate before it, `x_{n−2}` (vec4), shifted.
    pub before_previous: &'a wgpu::Buffer,
    /// The packed `index` ([`crate::gpu::pack::pack_index`]): the free vertices first.
    pub index: &'a wgpu::Buffer,
    /// From word `frozen` on, per body: nonzero when it is not accelerated this step; a met
    /// surface bound sets `CONTROL_BOUND_HIT` ([`crate::gpu::contact::layout`]).
    pub control: &'a wgpu::Buffer,
    /// See `control`.
    pub frozen: u32,
    /// The `contacts` words ([`crate::gpu::contact::layout::ContactLayout`]; unread without surface
    /// contact).
    pub contacts: &'a wgpu::Buffer,
    /// The span records after the per-vertex entries (vec4; unread without `spans`).
    pub updates: &'a wgpu::Buffer,
    /// The spans, when a box or a sphere is among the obstacles: their vertices keep their
    /// Gauss–Seidel result.
    pub spans: Option<SpanRows>,
}

/// The compiled kernel.
pub struct VbdChebyshev {
    kernel: ComputeKernel,
}

impl VbdChebyshev {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "vbd_chebyshev", SHADER) }
    }

    /// The mix with relaxation `omega` over the first `count` free vertices; `vertex_body` is
    /// where that table starts in `index`.
    #[allow(clippy::too_many_arguments)]
    pub fn bind(
        &self,
        ctx: &GpuContext,
        omega: f32,
        count: u32,
        vertex_body: u32,
        bounds: &SurfaceBounds,
        obstacles: &GpuObstacleSet,
        b: &VbdChebyshevBuffers<'_>,
    ) -> Bound {
        let rows = b.spans.unwrap_or(SpanRows { base: 0, offsets: 0, entries: 0 });
        let params = Params {
            omega,
            count,
            vertex_body,
            frozen: b.frozen,
            spans: b.spans.is_some() as u32,
            span_base: rows.base,
            span_offsets: rows.offsets,
            span_entries: rows.entries,
            bounds: *bounds,
            obstacles: *obstacles,
        };
        let buffers = [b.positions, b.previous, b.before_previous, b.index, b.control, b.contacts, b.updates];
        self.kernel.bind_pod(ctx, &params, &buffers, count)
    }
}

#[cfg(test)]
mod tests {
    use glam::{Vec3A, Vec4};

    use super::*;
    use crate::collision::{Obstacle, limit_step};
    use crate::gpu::buffers::{read_blocking, storage};
    use crate::gpu::contact::layout::{CONTROL_BOUND_HIT, CONTROL_HEADER, ContactLayout, control_words};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::test_support;
    use crate::solver::vbd::bounds::limit_move;
    use crate::solver::vbd::chebyshev::mix;
    use crate::solver::vbd::contact::SurfaceContactScratch;
    use crate::test_rng::Rng;

    /// GPU against the CPU mix, surface-contact bound and obstacle clamp, with one of three
    /// bodies frozen and a vertex left out of the free list (a pinned one, which keeps its
    /// position and history).
    #[test]
    fn matches_the_cpu_mix_and_history_shift() {
        let Some(ctx) = test_support::context() else { return };
        let n = 900;
        let mut rng = Rng(17);
        let mut v4 = || (rng.vec() * 2.0).as_vec3().extend(0.0);
        let x: Vec<Vec4> = (0..n).map(|_| v4()).collect();
        let p1: Vec<Vec4> = (0..n).map(|_| v4()).collect();
        let p2: Vec<Vec4> = (0..n).map(|_| v4()).collect();
        let free: Vec<u32> = (0..n as u32).filter(|v| v % 10 != 3).collect();
        let body: Vec<u32> = (0..n as u32).map(|v| v / 300).collect();
        let mut control = vec![0u32; control_words(3)];
        control[CONTROL_HEADER + 1] = 1;
        let frozen = &control[CONTROL_HEADER..CONTROL_HEADER + 3];
        let index: Vec<u32> = free.iter().chain(&body).copied().collect();
        // Every vertex bounded to a random ball around a random detection position (no pairs).
        let clamp: Vec<Vec4> = (0..n).map(|_| (rng.vec() * 2.0).as_vec3().extend(rng.uniform_f32() * 1.5)).collect();
        let (layout, words) = ContactLayout::new(n as u32, 3, 0, 0);
        let mut scratch = SurfaceContactScratch::default();
        scratch.vertex_pairs.offsets = vec![0; n + 1];
        let contacts = layout.pack_cpu(words, &scratch, &clamp);
        // The ground and a sphere inside the cloud of points: some mixes end inside.
        let obstacles =
            [Obstacle::ground(-0.5, 0.5), Obstacle::sphere(glam::Vec3::new(0.3, 0.0, 0.2), 0.8, 0.2).expect("sphere")];
        let bufs = [
            storage(&ctx, "positions", &x, true),
            storage(&ctx, "previous", &p1, true),
            storage(&ctx, "before_previous", &p2, true),
            storage(&ctx, "index", &index, false),
            storage(&ctx, "control", &control, true),
            storage(&ctx, "contacts", &contacts, false),
        ];
        let b = VbdChebyshevBuffers {
            positions: &bufs[0],
            previous: &bufs[1],
            before_previous: &bufs[2],
            index: &bufs[3],
            control: &bufs[4],
            frozen: CONTROL_HEADER as u32,
            contacts: &bufs[5],
            updates: &bufs[5],
            spans: None,
        };
        let bounds = SurfaceBounds::new(layout, 1e-5);
        let omega = 1.7;
        let set = GpuObstacleSet::pack(&obstacles).expect("obstacles");
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        let bound = VbdChebyshev::new(&ctx).bind(&ctx, omega, free.len() as u32, free.len() as u32, &bounds, &set, &b);
        record_pass(&mut encoder, "vbd_chebyshev", &[bound]);
        ctx.queue.submit([encoder.finish()]);
        let gx: Vec<Vec4> = read_blocking(&ctx, &bufs[0], n).expect("positions");
        let g1: Vec<Vec4> = read_blocking(&ctx, &bufs[1], n).expect("previous");
        let g2: Vec<Vec4> = read_blocking(&ctx, &bufs[2], n).expect("before_previous");
        let hit: Vec<u32> = read_blocking(&ctx, &bufs[4], control.len()).expect("control");
        let (mut clamped, mut bounded) = (0, 0);
        for v in 0..n {
            let (ex, e1, e2) = if free.contains(&(v as u32)) {
                let xb = Vec3A::from_vec4(x[v]);
                let m = if frozen[body[v] as usize] == 0 {
                    let mixed = mix(omega, xb, Vec3A::from_vec4(p2[v]));
                    let within = limit_move(v, mixed, clamp[v], &scratch);
                    bounded += usize::from(within != mixed);
                    let limited = limit_step(&obstacles, 0, xb, within);
                    clamped += usize::from(limited != within);
                    limited
                } else {
                    xb
                };
                (m.extend(0.0), m.extend(0.0), p1[v])
            } else {
                (x[v], p1[v], p2[v])
            };
            let close = |a: Vec4, b: Vec4| (a - b).length() <= 2e-6 * b.length().max(1.0);
            assert!(close(gx[v], ex) && close(g1[v], e1) && close(g2[v], e2), "vertex {v}");
        }
        assert!(clamped > 20, "only {clamped} mixes met an obstacle");
        assert!(bounded > 100, "only {bounded} mixes met their bound");
        assert_eq!(hit[CONTROL_BOUND_HIT], 1, "a met bound is flagged");
    }
}
