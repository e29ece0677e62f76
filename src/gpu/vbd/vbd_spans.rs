//! Host side of `shaders/vbd/vbd_spans.wgsl`: the surface spans' (edges', triangles') advance
//! limit and their contacts with the analytic boxes and spheres, the twin of
//! `solver::vbd::spans` (records in `updates`, after its per-vertex entries).

use crate::gpu::GpuContext;
use crate::gpu::contact::surface::GpuSurface;
use crate::gpu::kernel::{Bound, ComputeKernel};
use crate::gpu::obstacles::{GpuObstacleSet, MAX_OBSTACLES};
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("vbd/vbd_spans", "step", "obstacles", "spans", "surface");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    phase: u32,
    span_base: u32,
    span_toi: u32,
    _pad: u32,
    surface: GpuSurface,
    obstacles: GpuObstacleSet,
}

/// The vec4 records of span contacts that `updates` holds after its `vertices` per-vertex
/// entries, for a surface of `spans` edges and triangles.
pub fn updates_len(vertices: u32, spans: u32) -> usize {
    vertices as usize + spans as usize * MAX_OBSTACLES
}

/// What the kernel reads and writes.
pub struct VbdSpansBuffers<'a> {
    /// Positions (vec4): `x^(0)`.
    pub positions: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`] (`x^n`).
    pub steps: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`].
    pub index: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_records`].
    pub records: &'a wgpu::Buffer,
    /// Per vertex, then per span and obstacle (vec4, [`updates_len`]): the span records.
    pub updates: &'a wgpu::Buffer,
    /// Per body from word `span_toi` on: the fraction of its advance its spans allow, as f32
    /// bits (vbd_advance's buffer).
    pub body_toi: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct VbdSpans {
    kernel: ComputeKernel,
}

impl VbdSpans {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "vbd_spans", SHADER) }
    }

    /// The advance (phase 0) and detection (phase 1) dispatches over `surface`'s spans, whose
    /// records start at vec4 `span_base` of `updates` (the vertex count) and whose per-body
    /// advance fractions start at word `span_toi` of `body_toi` (the body count).
    #[allow(clippy::too_many_arguments)]
    pub fn bind(
        &self,
        ctx: &GpuContext,
        surface: &GpuSurface,
        span_base: u32,
        span_toi: u32,
        obstacles: &GpuObstacleSet,
        b: &VbdSpansBuffers<'_>,
    ) -> [Bound; 2] {
        let buffers = [b.positions, b.steps, b.index, b.records, b.updates, b.body_toi];
        let count = surface.edge_count + surface.triangle_count;
        [0, 1].map(|phase| {
            let params = Params { phase, span_base, span_toi, _pad: 0, surface: *surface, obstacles: *obstacles };
            self.kernel.bind_pod(ctx, &params, &buffers, count)
        })
    }
}

#[cfg(test)]
mod tests {
    use glam::{Quat, Vec2, Vec3, Vec3A, Vec4};

    use super::*;
    use crate::collision::{ContactModel, ContactStiffness, Obstacle};
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::pack::{pack_index, pack_records, span_count};
    use crate::gpu::test_support;
    use crate::gpu::vbd::vbd_inertia::GpuVertexStep;
    use crate::prelude::*;
    use crate::solver::vbd::spans::SpanContacts;
    use crate::test_rng::Rng;

    /// A crumpled cloth and a soft box over a tilted box's edge and a sphere (and the ground,
    /// which has no spans), falling: the GPU's span records at x^(0) against the CPU's
    /// `SpanContacts::detect`, and each body's advance limit against `SpanContacts::advance`.
    #[test]
    fn matches_the_cpu_span_detection_and_advance_limit() {
        let Some(ctx) = test_support::context() else { return };
        let mut world = World::new(StepConfig::default()).expect("world");
        world.bodies.insert(
            ClothBuilder::new(TriMesh::cloth_grid(Vec2::splat(0.4), [16, 16]).expect("cloth"))
                .translation(Vec3::new(0.05, 0.203, 0.0))
                .build()
                .expect("cloth"),
        );
        world.bodies.insert(
            SoftBodyBuilder::tetrahedral(TetMesh::box_mesh(Vec3::splat(0.1), [3, 3, 3], TetSplit::Six).expect("box"))
                .translation(Vec3::new(-0.3, 0.08, 0.0))
                .build()
                .expect("body"),
        );
        world.sync();
        let st = world.state();
        let n = st.vertex_count();
        let obstacles = [
            Obstacle::cuboid(Vec3::new(0.0, 0.1, 0.0), Vec3::new(0.1, 0.1, 0.3), Quat::from_rotation_x(0.2), 0.3)
                .expect("table"),
            Obstacle::ground(0.0, 0.5),
            Obstacle::sphere(Vec3::new(-0.3, 0.0, 0.0), 0.05, 0.3).expect("sphere"),
        ];
        let mut rng = Rng(11);
        let start: Vec<Vec4> = st.positions.iter().map(|&p| p + (rng.vec() * 0.003).as_vec3().extend(0.0)).collect();
        let guess: Vec<Vec4> = start
            .iter()
            .map(|&p| p + (Vec3A::new(0.0, -0.01, 0.0) + rng.vec().as_vec3a() * 0.004).extend(0.0))
            .collect();
        let steps: Vec<GpuVertexStep> = start
            .iter()
            .zip(&guess)
            .map(|(s, g)| GpuVertexStep { start: s.to_array(), offset: (*g - *s).to_array(), ..Default::default() })
            .collect();
        let contact = ContactModel {
            stiffness: ContactStiffness::default_for(9.81, 1e-3),
            offset: 1e-3,
            static_slip: 1e-6,
            stiffening: false,
        };
        let (index, layout) = pack_index(st);
        let (records, record_layout) = pack_records(st);
        let spans = span_count(st);
        let bufs = [
            storage(&ctx, "positions", &guess, false),
            storage(&ctx, "steps", &steps, false),
            storage(&ctx, "index", &index, false),
            storage(&ctx, "records", &records, false),
            output::<Vec4>(&ctx, "updates", updates_len(n as u32, spans)),
            storage(&ctx, "body_toi", &vec![1.0f32.to_bits(); st.bodies.len()], true),
        ];
        let b = VbdSpansBuffers {
            positions: &bufs[0],
            steps: &bufs[1],
            index: &bufs[2],
            records: &bufs[3],
            updates: &bufs[4],
            body_toi: &bufs[5],
        };
        let surface = GpuSurface::new(st, &layout, record_layout.bodies, &contact, &Default::default());
        let set = GpuObstacleSet::pack(&obstacles).expect("obstacles");
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        record_pass(&mut encoder, "vbd_spans", &VbdSpans::new(&ctx).bind(&ctx, &surface, n as u32, 0, &set, &b));
        ctx.queue.submit([encoder.finish()]);
        let updates: Vec<Vec4> = read_blocking(&ctx, &bufs[4], updates_len(n as u32, spans)).expect("updates");
        let toi: Vec<u32> = read_blocking(&ctx, &bufs[5], st.bodies.len()).expect("toi");

        let mut cpu = SpanContacts::default();
        let held = cpu.advance(st, &obstacles, &start, &guess, contact.offset);
        assert!(held, "no body was held back");
        for (b, (&bits, &want)) in toi.iter().zip(&cpu.body_scale).enumerate() {
            let got = f32::from_bits(bits);
            assert!((got - want).abs() <= 1e-4 * want + 1e-6, "body {b}: advance {got} vs {want}");
        }
        cpu.detect(st, &obstacles, &guess, contact.offset);
        let edges = st.surface_edges.len();
        let mut found = vec![false; updates.len()];
        let (mut with_energy, mut triangles) = (0, 0);
        for c in &cpu.contacts {
            let span = if c.len() == 2 {
                st.surface_edges.iter().position(|e| e[..] == c.vertices[..2]).expect("edge")
            } else {
                edges + st.surface_triangles.iter().position(|t| *t == c.vertices).expect("triangle")
            };
            let slot = n + span * MAX_OBSTACLES + c.obstacle as usize;
            let r = updates[slot];
            found[slot] = true;
            assert!(r.z >= 0.0, "span {span} against {}: no GPU record", c.obstacle);
            assert!(
                (r.x - c.weights[0]).abs() < 1e-3 && (r.y - c.weights[1]).abs() < 1e-3,
                "span {span}: {r} vs {c:?}"
            );
            assert!((r.z - c.scale).abs() < 2e-2, "span {span}: scale {} vs {}", r.z, c.scale);
            assert!((r.w - c.distance).abs() < 1e-6, "span {span}: distance {} vs {}", r.w, c.distance);
            with_energy += usize::from(c.scale > 0.0);
            triangles += usize::from(c.len() == 3);
        }
        // Slots past the obstacles' count are never read.
        let read = |s: usize| (s - n) % MAX_OBSTACLES < obstacles.len();
        let extra = (n..updates.len()).filter(|&s| read(s) && !found[s] && updates[s].z >= 0.0).count();
        assert_eq!(extra, 0, "GPU records the CPU did not detect");
        assert!(with_energy > 10 && triangles > 0, "{with_energy} contacts, {triangles} on triangles");
    }
}
