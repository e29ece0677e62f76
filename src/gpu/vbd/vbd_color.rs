//! Host side of `shaders/vbd/vbd_color.wgsl`: one VBD colour pass (tet and cloth elasticity,
//! damping, inertia, obstacle contact and friction, body–body and self contact pairs, the
//! surface displacement bound and the obstacle path clamp), positions updated in place.

use crate::collision::ContactModel;
use crate::gpu::GpuContext;
use crate::gpu::contact::layout::SurfaceBounds;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use crate::gpu::obstacles::GpuObstacleSet;
use crate::gpu::pack::{IndexLayout, RecordLayout};
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!(
    "vbd/vbd_color",
    "step",
    "obstacles",
    "spans",
    "distance",
    "mat3",
    "friction",
    "contact_layout",
    "contact",
    "layer",
    "elements"
);

/// Invocations per vertex on the adapter `info` describes (the shader's pipeline-overridable
/// `LANES`; each sums a share of the vertex's elements). 8 on a GPU, where they share the
/// latency of a vertex's dependent loads (a 6³ cube's colour pass 45 → 15 µs on an H200,
/// BENCHMARKS.md, issue 34). 1 on a CPU adapter (lavapipe), which runs a workgroup's
/// invocations as SIMD batches on one core one after another, so that the idle lanes of the
/// vertex update and the tree's barriers only cost it: its colour passes were 4.3× faster at 1
/// on a 10,201-vertex cloth and 1.5× on a 6³ cube (dev-vm-2c, `bench_gpu --profile`).
pub(crate) fn lanes_for(info: &wgpu::AdapterInfo) -> u32 {
    if info.device_type == wgpu::DeviceType::Cpu { 1 } else { 8 }
}

/// The shader's pipeline-overridable constants for `lanes` invocations per vertex (the one
/// place that names them, for [`VbdColor::with_lanes`] and for `GpuContext::compile_all`).
pub(crate) fn constants(lanes: u32) -> [(&'static str, f64); 1] {
    [("LANES", lanes as f64)]
}

/// Workgroups per dimension of a dispatch (WebGPU's default limit).
const MAX_GROUPS: u32 = 65_535;

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    first: u32,
    count: u32,
    tet_offsets: u32,
    tet_entries: u32,
    vertex_body: u32,
    bodies: u32,
    tris: u32,
    hinges: u32,
    contact_flags: u32,
    stiffness: f32,
    offset: f32,
    static_slip: f32,
    tri_offsets: u32,
    tri_entries: u32,
    hinge_offsets: u32,
    hinge_entries: u32,
    frozen: u32,
    phase: u32,
    staged: u32,
    spans: u32,
    span_base: u32,
    span_offsets: u32,
    span_entries: u32,
    surface_edges: u32,
    surface_triangles: u32,
    edge_count: u32,
    spins: u32,
    _pad: u32,
    bounds: SurfaceBounds,
    obstacles: GpuObstacleSet,
}

/// What the kernel reads and writes.
pub struct VbdColorBuffers<'a> {
    /// Positions (vec4), updated in place for the colour's vertices.
    pub positions: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`].
    pub steps: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`].
    pub index: &'a wgpu::Buffer,
    /// `SimState::tets`.
    pub tets: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_records`].
    pub records: &'a wgpu::Buffer,
    /// Per vertex (vec4): w `‖f‖²` of its last update, with the sign bit set when the
    /// displacement bound held a vertex that has one; xyz its new position while a staged pass
    /// waits for its commit.
    pub updates: &'a wgpu::Buffer,
    /// From word `frozen` on, per body: `FROZEN_CONTACT` is or-ed in when a vertex touches an
    /// obstacle or a surface pair; a met surface bound sets `CONTROL_BOUND_HIT`
    /// ([`crate::gpu::contact::layout`]).
    pub control: &'a wgpu::Buffer,
    /// See `control`.
    pub frozen: u32,
    /// The `contacts` words ([`crate::gpu::contact::layout::ContactLayout`]; unread without surface
    /// contact).
    pub contacts: &'a wgpu::Buffer,
}

/// The per-step constants of a colour pass.
#[derive(Clone, Copy, Debug)]
pub struct VbdColorSetup<'a> {
    /// Offsets of the tables in `index`.
    pub layout: IndexLayout,
    /// Offsets of the tables in `records`.
    pub records: RecordLayout,
    /// Contact constants of the step.
    pub contact: ContactModel,
    /// Surface contact (pairs and bounds), or [`SurfaceBounds::off`].
    pub bounds: SurfaceBounds,
    /// The obstacles.
    pub obstacles: &'a GpuObstacleSet,
    /// Span contacts (`gpu::vbd::vbd_spans`): the surface's edge count and where the span
    /// records start in `updates`, when a box or a sphere is among the obstacles.
    pub spans: Option<(u32, u32)>,
    /// `vbd_spin` wrote the bodies' spins into `records` this step (the rigid correction is
    /// on), so Rayleigh damping leaves each body's turning alone (`solver::vbd::spin`).
    pub spins: bool,
}

/// `Params::spins` when no kernel wrote the bodies' spins.
const NO_SPINS: u32 = u32::MAX;

/// The compiled kernel.
pub struct VbdColor {
    kernel: ComputeKernel,
    /// Invocations per vertex ([`lanes_for`]).
    lanes: u32,
}

impl VbdColor {
    /// Compiles the shader for `ctx`'s device, with the adapter's lanes per vertex.
    pub fn new(ctx: &GpuContext) -> Self {
        Self::with_lanes(ctx, lanes_for(&ctx.adapter_info))
    }

    /// Compiles the shader with `lanes` invocations per vertex (a power of two up to 64).
    pub(crate) fn with_lanes(ctx: &GpuContext, lanes: u32) -> Self {
        debug_assert!(lanes.is_power_of_two() && lanes <= WORKGROUP, "{lanes} lanes per vertex");
        let kernel = ComputeKernel::with_constants(ctx, "vbd_color", SHADER, &constants(lanes));
        Self { kernel, lanes }
    }

    /// The pass over colour vertices `first..first + count` (entries of `color_vertices`): one
    /// dispatch updating them in place, or with surface contact (whose pairs can join vertices
    /// of one colour) an update into `updates` and a commit.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        first: u32,
        count: u32,
        setup: &VbdColorSetup<'_>,
        b: &VbdColorBuffers<'_>,
    ) -> Vec<Bound> {
        let (contact_flags, stiffness) = setup.contact.gpu_flags();
        let l = &setup.layout;
        let params = Params {
            first: l.color_vertices + first,
            count,
            tet_offsets: l.tet_offsets,
            tet_entries: l.tet_entries,
            vertex_body: l.vertex_body,
            bodies: setup.records.bodies,
            tris: setup.records.tris,
            hinges: setup.records.hinges,
            contact_flags,
            stiffness,
            offset: setup.contact.offset,
            static_slip: setup.contact.static_slip,
            tri_offsets: l.tri_offsets,
            tri_entries: l.tri_entries,
            hinge_offsets: l.hinge_offsets,
            hinge_entries: l.hinge_entries,
            frozen: b.frozen,
            phase: 0,
            staged: setup.bounds.enabled,
            spans: setup.spans.is_some() as u32,
            span_base: setup.spans.map_or(0, |(_, base)| base),
            span_offsets: l.span_offsets,
            span_entries: l.span_entries,
            surface_edges: l.surface_edges,
            surface_triangles: l.surface_triangles,
            edge_count: setup.spans.map_or(0, |(edges, _)| edges),
            spins: if setup.spins { setup.records.spins } else { NO_SPINS },
            _pad: 0,
            bounds: setup.bounds,
            obstacles: *setup.obstacles,
        };
        let buffers = [b.positions, b.steps, b.index, b.tets, b.records, b.updates, b.control, b.contacts];
        let bind = |params: &Params| {
            let bound = self.kernel.bind_pod(ctx, params, &buffers, count * self.lanes);
            // Past the device's workgroups per dimension, a grid (the shader counts its rows).
            match (count * self.lanes).div_ceil(WORKGROUP) {
                groups if groups > MAX_GROUPS => bound.grid(MAX_GROUPS, groups.div_ceil(MAX_GROUPS)),
                _ => bound,
            }
        };
        let mut out = vec![bind(&params)];
        if params.staged == 1 {
            out.push(bind(&Params { phase: 1, ..params }));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use glam::{Mat3A, Quat, Vec3, Vec3A, Vec4};

    use super::*;
    use crate::collision::ContactStiffness;
    use crate::collision::Obstacle;
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::contact::layout::{CONTROL_BOUND_HIT, CONTROL_HEADER, ContactLayout, control_words};
    use crate::gpu::contact::surface::GpuSurface;
    use crate::gpu::kernel::record_pass;
    use crate::gpu::pack::span_count;
    use crate::gpu::pack::{pack_index, pack_records};
    use crate::gpu::test_support;
    use crate::gpu::vbd::vbd_inertia::GpuVertexStep;
    use crate::gpu::vbd::vbd_spans::{VbdSpans, VbdSpansBuffers, updates_len};
    use crate::prelude::*;
    use crate::solver::Integrator;
    use crate::solver::SurfaceContactSettings;
    use crate::solver::parallel::{PhaseCell, SharedSlice};
    use crate::solver::vbd::contact::detect_once;
    use crate::solver::vbd::vertex::{VertexInputs, update_vertex};
    use crate::state::FROZEN_CONTACT;
    use crate::test_rng::Rng;

    /// Every colour pass of one sweep on two damped boxes (stable neo-Hookean with linear drag,
    /// StVK) pressed into the ground, a sphere and a tilted box, a third box 3 mm over the first
    /// (surface contact pairs and bounds from a CPU detection), and a damped cloth crumpled over
    /// the ground (membranes and hinges), with sliding velocities, the surface spans near the
    /// sphere and the box in contact (`vbd_spans` on the GPU, `SpanContacts::detect` on the
    /// CPU): GPU against the CPU's `update_vertex` on the same iterate.
    #[test]
    fn colour_passes_match_the_cpu_vertex_update() {
        let Some(ctx) = test_support::context() else { return };
        let mut world = World::new(StepConfig::default()).expect("world");
        let mesh = || TetMesh::box_mesh(Vec3::splat(0.2), [4, 4, 4], TetSplit::Six).expect("mesh");
        world.bodies.insert(
            SoftBodyBuilder::tetrahedral(mesh())
                .material(StableNeoHookean::from_young_poisson(1.0e5, 0.3))
                .damping(0.01)
                .linear_damping(0.5)
                .friction(0.4)
                .translation(Vec3::new(0.0, 0.1, 0.0))
                .build()
                .expect("body"),
        );
        world.bodies.insert(
            SoftBodyBuilder::tetrahedral(mesh())
                .material(StVK::from_young_poisson(2.0e5, 0.35))
                .damping(0.02)
                .translation(Vec3::new(0.5, 0.1, 0.0))
                .build()
                .expect("body"),
        );
        world.bodies.insert(
            ClothBuilder::new(TriMesh::cloth_grid(glam::Vec2::splat(0.3), [8, 8]).expect("cloth"))
                .material(ClothMaterial::new(2.0e6, 0.3, 5e-4).with_bending_stiffness(1e-3))
                .damping(0.01)
                .translation(Vec3::new(-0.5, 0.002, 0.0))
                .build()
                .expect("cloth"),
        );
        world.bodies.insert(
            SoftBodyBuilder::tetrahedral(TetMesh::box_mesh(Vec3::splat(0.2), [5, 5, 5], TetSplit::Six).expect("mesh"))
                .friction(0.5)
                .translation(Vec3::new(0.01, 0.303, 0.0))
                .build()
                .expect("body"),
        );
        world.sync();
        let st = world.state();
        assert!(!st.tris.is_empty() && !st.hinges.is_empty());
        let n = st.vertex_count();
        let obstacles = [
            Obstacle::ground(0.003, 0.6),
            Obstacle::sphere(Vec3::new(0.0, 0.25, 0.1), 0.06, 0.3).expect("sphere"),
            Obstacle::cuboid(Vec3::new(0.6, 0.22, 0.0), Vec3::splat(0.05), Quat::from_rotation_z(0.5), 0.2)
                .expect("box"),
        ];
        let h = 1.0f32 / 60.0;
        let g = Vec3A::new(0.0, -9.81, 0.0);
        let mut rng = Rng(5);
        let start: Vec<Vec4> = st.positions.clone();
        let positions: Vec<Vec4> = start.iter().map(|&p| p + (rng.vec() * 0.004).as_vec3().extend(0.0)).collect();
        let steps: Vec<GpuVertexStep> = (0..n)
            .map(|v| {
                let s = Integrator::Newmark.vertex_step(h, (rng.vec() * 0.3).as_vec3a(), g);
                GpuVertexStep {
                    start: start[v].to_array(),
                    predictor: s.predictor.extend(s.weight).to_array(),
                    inertia: (s.predictor + g * s.weight).extend(st.masses[v] / s.weight).to_array(),
                    velocity: s.c0.extend(s.c1).to_array(),
                    offset: [0.0; 4],
                }
            })
            .collect();
        let contact = ContactModel {
            stiffness: ContactStiffness::default_for(9.81, 1e-3),
            offset: 1e-3,
            static_slip: 1e-4 * h,
            stiffening: false,
        };
        // Surface contact detected at the iterate, as a step's detection leaves it.
        let settings = SurfaceContactSettings::default();
        let (mut surface_pairs, clamp) = detect_once(st, contact, settings, &mut positions.clone());
        // Span contacts with the sphere and the tilted box, detected at the iterate.
        surface_pairs.obstacle_spans.detect(st, &obstacles, &positions, contact.offset);
        assert!(surface_pairs.obstacle_spans.contacts.iter().filter(|c| c.scale > 0.0).count() > 5);
        assert!(surface_pairs.pairs.iter().filter(|p| p.has_energy()).count() > 20);
        let (contact_layout, words) =
            ContactLayout::new(n as u32, st.bodies.len() as u32, 0, surface_pairs.pairs.len() as u32);
        let contacts = contact_layout.pack_cpu(words, &surface_pairs, &clamp);
        let (index, layout) = pack_index(st);
        let (records, record_layout) = pack_records(st);
        // Both lane counts of `lanes_for` (8 on GPUs, 1 on CPU adapters) run here, on any adapter.
        let run_gpu = |lanes: u32| {
            let bufs = [
                storage(&ctx, "positions", &positions, true),
                storage(&ctx, "steps", &steps, false),
                storage(&ctx, "index", &index, false),
                storage(&ctx, "tets", &st.tets, false),
                storage(&ctx, "records", &records, false),
                output::<Vec4>(&ctx, "updates", updates_len(n as u32, span_count(st))),
                output::<u32>(&ctx, "control", control_words(st.bodies.len())),
                storage(&ctx, "contacts", &contacts, false),
            ];
            let b = VbdColorBuffers {
                positions: &bufs[0],
                steps: &bufs[1],
                index: &bufs[2],
                tets: &bufs[3],
                records: &bufs[4],
                updates: &bufs[5],
                control: &bufs[6],
                frozen: CONTROL_HEADER as u32,
                contacts: &bufs[7],
            };
            let set = GpuObstacleSet::pack(&obstacles).expect("obstacles");
            let bounds = SurfaceBounds::new(contact_layout, settings.ccd.min_separation);
            let spans = Some((st.surface_edges.len() as u32, n as u32));
            let setup =
                VbdColorSetup { layout, records: record_layout, contact, bounds, obstacles: &set, spans, spins: false };
            let kernel = VbdColor::with_lanes(&ctx, lanes);
            let toi = storage(&ctx, "body_toi", &vec![0u32; st.bodies.len()], true);
            let span_buffers = VbdSpansBuffers {
                positions: &bufs[0],
                steps: &bufs[1],
                index: &bufs[2],
                records: &bufs[4],
                updates: &bufs[5],
                body_toi: &toi,
            };
            let surface = GpuSurface::new(st, &layout, record_layout.bodies, &contact, &Default::default());
            let [_, detect] = VbdSpans::new(&ctx).bind(&ctx, &surface, n as u32, 0, &set, &span_buffers);
            let passes: Vec<Bound> = std::iter::once(detect)
                .chain((0..st.color_count()).flat_map(|c| {
                    let (first, end) = (st.color_offsets[c], st.color_offsets[c + 1]);
                    kernel.bind(&ctx, first, end - first, &setup, &b)
                }))
                .collect();
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            record_pass(&mut encoder, "vbd_color", &passes);
            ctx.queue.submit([encoder.finish()]);
            let gpu: Vec<Vec4> = read_blocking(&ctx, &bufs[0], n).expect("positions");
            let updates: Vec<Vec4> = read_blocking(&ctx, &bufs[5], n).expect("updates");
            let residuals: Vec<f32> = updates.iter().map(|u| u.w.abs()).collect();
            // The sign bit says the bound held the vertex.
            let held: Vec<bool> = updates.iter().map(|u| u.w.is_sign_negative()).collect();
            let control: Vec<u32> = read_blocking(&ctx, &bufs[6], control_words(st.bodies.len())).expect("control");
            (gpu, residuals, held, control)
        };
        let runs = [1, 8].map(|lanes| (lanes, run_gpu(lanes)));

        // The CPU sweep, colour by colour, from the same iterate.
        let inertia: Vec<Vec4> = steps.iter().map(|s| Vec4::from_array(s.inertia)).collect();
        let velocity: Vec<Vec4> = steps.iter().map(|s| Vec4::from_array(s.velocity)).collect();
        let rates: Vec<Mat3A> = st
            .tets
            .iter()
            .map(|t| {
                let xn = t.vertices.map(|i| Vec3A::from_vec4(start[i as usize]));
                let c = t.vertices.map(|i| velocity[i as usize]);
                let col = |k: usize| (Vec3A::from_vec4(c[k]) - Vec3A::from_vec4(c[0])) - (xn[k] - xn[0]) * c[0].w;
                Mat3A::from_cols(col(1), col(2), col(3)) * t.dm_inv()
            })
            .collect();
        let surface = PhaseCell::new(surface_pairs);
        let mut clamp = clamp;
        let clamp = SharedSlice::new(&mut clamp);
        let inputs = VertexInputs {
            state: st,
            start: &start,
            inertia: &inertia,
            velocity: &velocity,
            obstacles: &obstacles,
            contact,
            tet_rates: &rates,
            spins: &[],
            surface: &surface,
            clamp: &clamp,
        };
        let mut cpu = positions.clone();
        let mut in_contact = vec![false; st.bodies.len()];
        let mut cpu_residuals = vec![0.0f32; n];
        let mut cpu_held = vec![false; n];
        let mut bounded = 0;
        for c in 0..st.color_count() {
            let updates: Vec<_> = {
                let pos = SharedSlice::new(&mut cpu);
                st.color(c).iter().map(|&v| (v, update_vertex(v as usize, &pos, &inputs))).collect()
            };
            for (v, u) in updates {
                cpu[v as usize] = u.position.extend(0.0);
                cpu_residuals[v as usize] = u.residual2;
                in_contact[st.vertex_body[v as usize] as usize] |= u.in_contact;
                bounded += usize::from(u.bounded);
                cpu_held[v as usize] = u.bounded;
            }
        }
        for (lanes, (gpu, residuals, held, control)) in &runs {
            let frozen = &control[CONTROL_HEADER..];
            let mut moved = 0;
            for v in 0..n {
                let (got, want) = (Vec3A::from_vec4(gpu[v]), Vec3A::from_vec4(cpu[v]));
                let step = (want - Vec3A::from_vec4(positions[v])).length();
                // Later colours see earlier colours' rounding: 1e-5 of the step, plus f32 noise.
                assert!(
                    (got - want).length() <= 1e-5 * step.max(1e-3) + 2e-7,
                    "{lanes} lanes, vertex {v}: GPU {got} vs CPU {want}"
                );
                let r = cpu_residuals[v];
                assert!(
                    (residuals[v] - r).abs() <= 1e-3 * r + 1e-9,
                    "{lanes} lanes, vertex {v}: residual² {} vs {r}",
                    residuals[v]
                );
                moved += usize::from(step > 1e-5);
            }
            assert!(moved > n / 2, "{moved} of {n} vertices moved");
            let differ = (0..n).filter(|&v| held[v] != cpu_held[v]).count();
            // A vertex whose step ends within rounding of its bound may fall either side of it.
            assert!(differ <= bounded / 20, "{differ} vertices held on one side only, of {bounded}");
            assert!(bounded > 20, "{bounded} vertices met their surface bound");
            assert_eq!(control[CONTROL_BOUND_HIT], 1, "a met bound is flagged");
            for (b, &touch) in in_contact.iter().enumerate() {
                assert!(touch, "body {b} should touch an obstacle");
                assert_eq!(frozen[b] & FROZEN_CONTACT != 0, touch, "{lanes} lanes, body {b}");
            }
        }
    }
}
