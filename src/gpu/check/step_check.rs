//! Host side of `shaders/check/step_check.wgsl`: the safety check of a GPU substep (inverted tets,
//! speeds that would tunnel, paths through obstacles, surface edges over an obstacle's rim),
//! flagging bodies for `step_guard`'s rollback beside its non-finite test.

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel};
use crate::gpu::obstacles::GpuObstacleSet;
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("check/step_check", "step", "obstacles", "unsafe_flags");

/// Field bit of a body flagged for an inverted tet (beside the `step_guard::BAD_*` bits).
pub const BAD_INVERSION: u32 = 8;
/// Field bit of a body flagged for a vertex too fast for its size.
pub const BAD_SPEED: u32 = 16;
/// Field bit of a body flagged for a vertex path through an obstacle, or a surface edge inside
/// one between its ends.
pub const BAD_CROSSING: u32 = 32;
/// Every bit the check sets.
pub const UNSAFE: u32 = BAD_INVERSION | BAD_SPEED | BAD_CROSSING;

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    phase: u32,
    count: u32,
    vertex_body: u32,
    h: f32,
    edges: u32,
    _pad: [u32; 3],
    obstacles: GpuObstacleSet,
}

/// What the kernel reads and writes.
pub struct StepCheckBuffers<'a> {
    /// Positions at the substep's end (vec4).
    pub positions: &'a wgpu::Buffer,
    /// Velocities at the substep's end (vec4).
    pub velocities: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`] (its `start` begins each path).
    pub steps: &'a wgpu::Buffer,
    /// `SimState::tets`.
    pub tets: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`].
    pub index: &'a wgpu::Buffer,
    /// Per body: its rest bounding-box diagonal (f32).
    pub sizes: &'a wgpu::Buffer,
    /// `step_guard`'s two u32 per body (zeroed before the substep).
    pub bad: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct StepCheck {
    kernel: ComputeKernel,
}

impl StepCheck {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "step_check", SHADER) }
    }

    /// The tet, vertex and surface-edge phases for substeps of length `h`; recorded between
    /// `step_guard`'s first phase and its rollback. `edges` is the surface edge table's word
    /// offset in `index` and its length; a phase with nothing to test is left out (the edge
    /// phase too where no obstacle could hold an edge between its ends: planes only).
    #[allow(clippy::too_many_arguments)]
    pub fn bind(
        &self,
        ctx: &GpuContext,
        (vertices, tets): (u32, u32),
        (edges, edge_count): (u32, u32),
        vertex_body: u32,
        h: f32,
        obstacles: &GpuObstacleSet,
        b: &StepCheckBuffers<'_>,
    ) -> Vec<Bound> {
        let buffers = [b.positions, b.velocities, b.steps, b.tets, b.index, b.sizes, b.bad];
        let edge_count = if obstacles.has_spans() { edge_count } else { 0 };
        [(0, tets), (1, vertices), (2, edge_count)]
            .into_iter()
            .filter(|&(_, count)| count > 0)
            .map(|(phase, count)| {
                let params = Params { phase, count, vertex_body, h, edges, _pad: [0; 3], obstacles: *obstacles };
                self.kernel.bind_pod(ctx, &params, &buffers, count)
            })
            .collect()
    }
}

/// Per body (`vertex_body` names each vertex's): the diagonal of its bounding box at
/// `positions` (the check's speed limit is half of it per substep).
pub fn body_sizes(positions: &[glam::Vec4], vertex_body: &[u32], bodies: usize) -> Vec<f32> {
    let mut lo = vec![glam::Vec3A::splat(f32::INFINITY); bodies];
    let mut hi = vec![glam::Vec3A::splat(f32::NEG_INFINITY); bodies];
    for (p, &b) in positions.iter().zip(vertex_body) {
        let p = glam::Vec3A::from_vec4(*p);
        lo[b as usize] = lo[b as usize].min(p);
        hi[b as usize] = hi[b as usize].max(p);
    }
    lo.iter().zip(&hi).map(|(l, h)| if l.x <= h.x { (*h - *l).length() } else { 0.0 }).collect()
}

#[cfg(test)]
mod tests {
    use glam::{Vec3, Vec4};

    use super::*;
    use crate::collision::Obstacle;
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::test_support;
    use crate::gpu::vbd::vbd_inertia::GpuVertexStep;
    use crate::state::TetElement;

    /// Runs the check at 60 Hz on one-tet bodies (vertices `4b..4b + 4` are body `b`'s) that
    /// moved from `start` to `end` and end with `velocities`; returns `bad` (two words per body,
    /// then the world's two).
    fn run_check(ctx: &GpuContext, motion: [&[Vec4]; 3], tets: &[TetElement], obstacles: &[Obstacle]) -> Vec<u32> {
        run_check_edges(ctx, motion, tets, &[], tets.len() as u32, obstacles)
    }

    /// [`run_check`] for `bodies` bodies of four vertices each, with surface edges `edges`.
    fn run_check_edges(
        ctx: &GpuContext,
        [start, end, velocities]: [&[Vec4]; 3],
        tets: &[TetElement],
        edges: &[[u32; 2]],
        bodies: u32,
        obstacles: &[Obstacle],
    ) -> Vec<u32> {
        let vertex_body: Vec<u32> = (0..start.len() as u32).map(|v| v / 4).collect();
        let mut index = vertex_body.clone();
        index.extend(edges.iter().flatten());
        // A storage buffer may not be empty.
        let tets = if tets.is_empty() { &[TetElement::zeroed()][..] } else { tets };
        let tet_count = if edges.is_empty() { tets.len() as u32 } else { 0 };
        let steps: Vec<GpuVertexStep> =
            start.iter().map(|s| GpuVertexStep { start: s.to_array(), ..Default::default() }).collect();
        let words = 2 * bodies as usize + 2;
        let bufs = [
            storage(ctx, "positions", end, false),
            storage(ctx, "velocities", velocities, false),
            storage(ctx, "steps", &steps, false),
            storage(ctx, "tets", tets, false),
            storage(ctx, "index", &index, false),
            storage(ctx, "sizes", &body_sizes(start, &vertex_body, bodies as usize), false),
            output::<u32>(ctx, "bad", words),
        ];
        let b = StepCheckBuffers {
            positions: &bufs[0],
            velocities: &bufs[1],
            steps: &bufs[2],
            tets: &bufs[3],
            index: &bufs[4],
            sizes: &bufs[5],
            bad: &bufs[6],
        };
        let obstacles = GpuObstacleSet::pack(obstacles).expect("obstacles");
        let kernel = StepCheck::new(ctx);
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        let edge_table = (start.len() as u32, edges.len() as u32);
        let bound = kernel.bind(ctx, (start.len() as u32, tet_count), edge_table, 0, 1.0 / 60.0, &obstacles, &b);
        record_pass(&mut encoder, "step_check", &bound);
        ctx.queue.submit([encoder.finish()]);
        read_blocking(ctx, &bufs[6], words).expect("bad")
    }

    /// Four one-tet bodies: one fine, one crushed flat, one with a vertex too fast, one with a
    /// vertex whose path went through the ground; only the last three are flagged, each with its
    /// bit and its offending vertex.
    #[test]
    fn flags_inverted_fast_and_tunnelling_bodies_only() {
        let Some(ctx) = test_support::context() else { return };
        let rest = [Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::Z].map(|p| p * 0.1 + Vec3::Y);
        let mut start = Vec::new();
        let mut tets = Vec::new();
        for b in 0..4u32 {
            let at = Vec3::new(b as f32, 0.0, 0.0);
            let x: [Vec3; 4] = rest.map(|p| p + at);
            // Axis-aligned legs of 0.1 m: D_m = 0.1 I.
            let dm_inv = [[10.0, 0.0, 0.0, 0.0], [0.0, 10.0, 0.0, 0.0], [0.0, 0.0, 10.0, 0.0]];
            let vertices = [4 * b, 4 * b + 1, 4 * b + 2, 4 * b + 3];
            tets.push(TetElement { vertices, dm_inv, volume: 1e-3 / 6.0, material: 0, _pad: [0; 2] });
            start.extend(x.map(|p| p.extend(0.0)));
        }
        let mut end = start.clone();
        let mut velocities = vec![Vec4::new(0.0, -1.0, 0.0, 0.0); 16];
        // Body 1: its apex pushed through its base (J = -0.5).
        end[7] = Vec4::new(1.0, 1.0, -0.05, 0.0);
        // Body 2: 9 m/s, for a body of 0.17 m at 1/60 s (limit 5.2 m/s).
        velocities[9] = Vec4::new(0.0, 0.0, 9.0, 0.0);
        // Body 3: moved whole through the ground, undeformed.
        for x in &mut end[12..16] {
            x.y -= 1.6;
        }
        let sizes = body_sizes(&start, &(0..16).map(|v| v / 4).collect::<Vec<u32>>(), 4);
        assert!((sizes[0] - 0.1 * 3f32.sqrt()).abs() < 1e-6, "{sizes:?}");
        let bad = run_check(&ctx, [&start, &end, &velocities], &tets, &[Obstacle::ground(0.0, 0.5)]);
        assert_eq!(bad[9], BAD_INVERSION | BAD_SPEED | BAD_CROSSING, "the world's word");
        let flagged: Vec<(u32, u32)> = bad[..8].chunks(2).map(|w| (u32::MAX - w[0], w[1])).collect();
        assert_eq!(flagged[0], (u32::MAX, 0), "{flagged:?}");
        assert_eq!(flagged[1], (4, BAD_INVERSION), "{flagged:?}");
        assert_eq!(flagged[2], (9, BAD_SPEED), "{flagged:?}");
        assert_eq!(flagged[3], (12, BAD_CROSSING), "{flagged:?}");
    }

    /// A vertex sliding 21 µm on a sphere's top at zero clearance moves along a chord that lies in
    /// the solid but dips by 4e-10 m: no crossing (by the chord's length it was one, as on the
    /// CPU). A vertex whose path runs through the sphere's middle is flagged.
    #[test]
    fn a_vertex_sliding_on_a_sphere_is_not_a_crossing() {
        let Some(ctx) = test_support::context() else { return };
        let r = 0.15f32;
        let legs = [Vec3::ZERO, Vec3::X * 0.1, Vec3::Y * 0.1, Vec3::Z * 0.1];
        let dm_inv = [[10.0, 0.0, 0.0, 0.0], [0.0, 10.0, 0.0, 0.0], [0.0, 0.0, 10.0, 0.0]];
        let corners = [Vec3::new(-1.05e-5, r, 0.0), Vec3::new(-0.3, 0.0, 0.0)];
        let start: Vec<Vec4> = corners.iter().flat_map(|c| legs.map(|l| (*c + l).extend(0.0))).collect();
        let mut end = start.clone();
        end[0] = Vec4::new(1.05e-5, r, 0.0, 0.0);
        end[4] = Vec4::new(0.3, 0.0, 0.0, 0.0);
        let tets: Vec<TetElement> = (0..2u32)
            .map(|b| TetElement {
                vertices: [4 * b, 4 * b + 1, 4 * b + 2, 4 * b + 3],
                dm_inv,
                volume: 1e-3 / 6.0,
                material: 0,
                _pad: [0; 2],
            })
            .collect();
        let sphere = Obstacle::sphere(Vec3::ZERO, r, 0.3).expect("sphere");
        let bad = run_check(&ctx, [&start, &end, &[Vec4::ZERO; 8]], &tets, &[sphere]);
        assert_eq!((bad[0], bad[1]), (0, 0), "the sliding vertex: {bad:?}");
        assert_eq!(u32::MAX - bad[2], 4, "{bad:?}");
        assert!(bad[3] & BAD_CROSSING != 0, "{bad:?}");
    }

    /// Surface edges at a step's end near a tilted box's rim and corner and a sphere's cap (both
    /// ends outside): the GPU flags exactly the edges the CPU check rejects
    /// (`Obstacle::edge_depth` past `EDGE_CROSSING_DEPTH`), but for edges within f32 rounding
    /// of that tolerance; an edge on a plane (whose distance is linear) is never flagged.
    #[test]
    fn flags_the_edges_the_cpu_check_rejects() {
        use crate::solver::check::EDGE_CROSSING_DEPTH;
        use crate::test_rng::Rng;
        let Some(ctx) = test_support::context() else { return };
        let tilted = glam::Quat::from_euler(glam::EulerRot::XYZ, 0.3, -0.5, 0.2);
        let obstacles = [
            Obstacle::cuboid(Vec3::new(0.0, 0.2, 0.0), Vec3::new(0.3, 0.2, 0.25), tilted, 0.3).expect("box"),
            Obstacle::sphere(Vec3::new(1.0, 0.3, 0.0), 0.2, 0.3).expect("sphere"),
            Obstacle::ground(0.0, 0.3),
        ];
        let mut rng = Rng(7);
        let (box_centre, half) = (Vec3::new(0.0, 0.2, 0.0), Vec3::new(0.3, 0.2, 0.25));
        let (mut start, mut edges, mut expected) = (Vec::new(), Vec::new(), Vec::new());
        let mut near = 0;
        while edges.len() < 600 {
            // Around one of the box's edges, the sphere's cap, or lying on the ground.
            let which = edges.len() % 3;
            let centre = match which {
                0 => {
                    // Two coordinates on the box's faces, the third anywhere along that edge.
                    let free = (rng.uniform() * 3.0) as usize % 3;
                    let mut local = Vec3::ZERO;
                    for k in 0..3 {
                        let s = if rng.uniform() < 0.5 { -1.0 } else { 1.0 };
                        local[k] = if k == free { rng.signed() as f32 } else { s } * half[k];
                    }
                    box_centre + tilted * local
                }
                1 => {
                    Vec3::new(1.0, 0.3, 0.0)
                        + (rng.vec().as_vec3() * Vec3::new(1.0, 0.0, 1.0) + Vec3::Y).normalize() * 0.2
                }
                _ => Vec3::new(rng.signed() as f32 * 0.5, 0.0, rng.signed() as f32 * 0.5),
            };
            let dir = rng.vec().as_vec3().normalize();
            let along = 0.005 + 0.025 * rng.uniform_f32();
            let lift = -0.004 + 0.006 * rng.uniform_f32();
            let normal = match which {
                0 => (centre - box_centre).normalize(),
                1 => (centre - Vec3::new(1.0, 0.3, 0.0)).normalize(),
                _ => Vec3::Y,
            };
            let (a, b) = (centre + dir * along + normal * lift, centre - dir * along + normal * lift);
            let (a, b) = if which == 2 { (Vec3::new(a.x, 0.0, a.z), Vec3::new(b.x, 0.0, b.z)) } else { (a, b) };
            if obstacles.iter().any(|o| o.signed_distance(a.into()).0 < 0.0 || o.signed_distance(b.into()).0 < 0.0) {
                continue;
            }
            let depth = obstacles.iter().filter_map(|o| o.edge_depth(a.into(), b.into())).fold(0.0f32, f32::max);
            if (depth - EDGE_CROSSING_DEPTH).abs() < 0.5 * EDGE_CROSSING_DEPTH {
                continue;
            }
            near += usize::from(depth > EDGE_CROSSING_DEPTH);
            let v = 4 * edges.len() as u32;
            start.extend([a, b, a, b].map(|p| p.extend(0.0)));
            edges.push([v, v + 1]);
            expected.push(depth > EDGE_CROSSING_DEPTH);
        }
        assert!(near > 100 && near < 500, "{near} of 600 edges inside: the test needs both kinds");
        let bodies = edges.len() as u32;
        let bad =
            run_check_edges(&ctx, [&start, &start, &vec![Vec4::ZERO; start.len()]], &[], &edges, bodies, &obstacles);
        for (e, want) in expected.iter().enumerate() {
            let (vertex, bits) = (u32::MAX - bad[2 * e], bad[2 * e + 1]);
            if *want {
                assert_eq!((vertex, bits), (edges[e][0], BAD_CROSSING), "edge {e} over an obstacle: not flagged");
            } else {
                assert_eq!(bits, 0, "edge {e} ({:?}) flagged", &start[edges[e][0] as usize..][..2]);
            }
        }
    }
}
