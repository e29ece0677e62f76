//! Host side of `shaders/contact/contact_detect.wgsl`: the vertex–triangle and edge–edge pairs within
//! the search radii, stored (counted, scanned and written in an order independent of
//! scheduling, the closest-feature rule applied) or folded into their vertices' smallest pair
//! distance.

use bytemuck::{Pod, Zeroable};

use crate::collision::ContactModel;
use crate::gpu::GpuContext;
use crate::gpu::contact::bvh_build::TreeLayout;
use crate::gpu::contact::layout::ContactLayout;
use crate::gpu::contact::scan::Scan;
use crate::gpu::contact::surface::GpuSurface;
use crate::gpu::kernel::{Bound, ComputeKernel};
use crate::solver::vbd::contact::PAIR_STIFFNESS_FACTOR;

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!(
    "contact/contact_detect",
    "bvh",
    "bvh_walk",
    "surface",
    "contact_layout",
    "distance",
    "layer"
);

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    surface: GpuSurface,
    layout: ContactLayout,
    tris: TreeLayout,
    edges: TreeLayout,
    phase: u32,
    count: u32,
    contact_flags: u32,
    stiffness: f32,
    pair_factor: f32,
    _pad: [u32; 3],
}

/// What the kernel reads and writes.
pub struct ContactDetectBuffers<'a> {
    /// Positions (vec4).
    pub positions: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`].
    pub index: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_records`].
    pub records: &'a wgpu::Buffer,
    /// `SimState::masses`.
    pub masses: &'a wgpu::Buffer,
    /// The trees ([`TreeLayout`]), refitted to the positions with search-radius boxes.
    pub bvh: &'a wgpu::Buffer,
    /// The `control` words.
    pub control: &'a wgpu::Buffer,
    /// The `contacts` words.
    pub contacts: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct ContactDetect {
    kernel: ComputeKernel,
}

impl ContactDetect {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "contact_detect", SHADER) }
    }

    /// The dispatches in order: count the point–triangle and edge–edge pairs, scan the counts
    /// (the [`Scan`] kernel, over `contacts`), write the pairs.
    #[allow(clippy::too_many_arguments)]
    pub fn bind(
        &self,
        ctx: &GpuContext,
        scan: &Scan,
        surface: &GpuSurface,
        layout: &ContactLayout,
        tris: &TreeLayout,
        edges: &TreeLayout,
        model: &ContactModel,
        b: &ContactDetectBuffers<'_>,
    ) -> Vec<Bound> {
        let (contact_flags, stiffness) = model.gpu_flags();
        let buffers = [b.positions, b.index, b.records, b.masses, b.bvh, b.control, b.contacts];
        let dispatch = |phase: u32, count: u32| {
            let params = Params {
                surface: *surface,
                layout: *layout,
                tris: *tris,
                edges: *edges,
                phase,
                count,
                contact_flags,
                stiffness,
                pair_factor: PAIR_STIFFNESS_FACTOR,
                _pad: [0; 3],
            };
            self.kernel.bind_pod(ctx, &params, &buffers, count)
        };
        let (points, edges) = (surface.surface_vertex_count, surface.edge_count);
        let mut out = vec![dispatch(0, points), dispatch(1, edges)];
        out.extend(scan.bind(ctx, b.contacts, layout.counts, points + edges, layout.count_scan));
        out.extend([dispatch(2, points), dispatch(3, edges)]);
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;

    use glam::{Vec3A, Vec4};

    use super::*;
    use crate::collision::ContactStiffness;
    use crate::collision::surface_pairs::{ContactPair, PAIR_POINT_TRIANGLE};
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::contact::bvh_build::{BvhBuild, BvhBuildBuffers};
    use crate::gpu::contact::bvh_refit::{BvhRefit, BvhRefitBuffers, RefitBoxes};
    use crate::gpu::contact::contact_bodies::{ContactBodies, ContactBodiesBuffers};
    use crate::gpu::contact::contact_csr::ContactCsr;
    use crate::gpu::contact::contact_rows::ContactRows;
    use crate::gpu::contact::layout::{CONTROL_PAIR_COUNT, control_words};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::pack::{pack_index, pack_records};
    use crate::gpu::test_support;
    use crate::gpu::vbd::vbd_inertia::GpuVertexStep;
    use crate::mesh::unpack_entry;
    use crate::prelude::*;
    use crate::solver::SurfaceContactSettings;
    use crate::solver::vbd::contact::detect_once;
    use crate::state::SimState;
    use crate::test_rng::Rng;

    /// Bodies a few millimetres apart, one of them a crumpled self-colliding cloth over another
    /// cloth: pairs closer than the store limit, pairs between it and the search reach, self
    /// pairs, and vertices over corners and edges (so the closest-feature rule drops some).
    pub(crate) fn contact_scene() -> (SimState, ContactModel) {
        let mut world = World::new(StepConfig::default()).expect("world");
        let mesh = |n: u32| TetMesh::box_mesh(Vec3::splat(0.2), [n, n, n], TetSplit::Six).expect("mesh");
        for (k, y) in [0.1f32, 0.306, 0.512].iter().enumerate() {
            world.bodies.insert(
                SoftBodyBuilder::tetrahedral(mesh(4 + k as u32))
                    .friction(0.2 + 0.2 * k as f32)
                    .translation(Vec3::new(0.01 * k as f32, *y, 0.0))
                    .build()
                    .expect("body"),
            );
        }
        for (k, y) in [0.62f32, 0.626].iter().enumerate() {
            world.bodies.insert(
                ClothBuilder::new(TriMesh::cloth_grid(glam::Vec2::splat(0.3), [10, 10]).expect("cloth"))
                    .self_collision(k == 1)
                    .translation(Vec3::new(0.0, *y, 0.0))
                    .build()
                    .expect("cloth"),
            );
        }
        world.sync();
        let mut st = world.state().clone();
        let mut rng = Rng(11);
        let cloth = st.bodies[4].vertex_start as usize;
        for (v, p) in st.positions.iter_mut().enumerate() {
            // The self-colliding cloth folded in half: its x > 0 half lies 6 mm over the other.
            if v >= cloth && p.x > 0.0 {
                *p = Vec4::new(-p.x, p.y + 0.006, p.z, 0.0);
            }
            let amplitude = if v >= cloth { 0.004 } else { 0.002 };
            *p += (rng.vec() * amplitude).as_vec3().extend(0.0);
        }
        let model = ContactModel {
            stiffness: ContactStiffness::default_for(9.81, 1e-3),
            offset: 1e-3,
            static_slip: 1e-6,
            stiffening: false,
        };
        (st, model)
    }

    fn key(p: &ContactPair) -> (u32, [u32; 4]) {
        (p.kind, p.vertices)
    }

    /// The whole detection on the GPU (trees, bodies, queries, lists, rows) against the CPU's
    /// `detect` on the same positions: the same pairs with the same constants and closest-
    /// feature decisions, the same bounds, the same list of pairs per vertex (sorted); and
    /// the pairs in the same order when the detection runs again (nothing depends on the order
    /// the invocations run in).
    #[test]
    fn detection_matches_the_cpu() {
        let Some(ctx) = test_support::context() else { return };
        let (st, model) = contact_scene();
        let settings = SurfaceContactSettings::default();
        let mut positions = st.positions.clone();
        let (cpu, cpu_clamp) = detect_once(&st, model, settings, &mut positions);
        let n = st.vertex_count();
        let (index, l) = pack_index(&st);
        let (records, r) = pack_records(&st);
        let bodies = r.bodies;
        let surface = GpuSurface::new(&st, &l, bodies, &model, &settings.ccd);
        let ([tris, edges], end) = TreeLayout::surface(&st, &l);
        let (layout, words) = ContactLayout::new(
            n as u32,
            st.bodies.len() as u32,
            (st.surface_vertices.len() + st.surface_edges.len()) as u32,
            4 * cpu.pairs.len() as u32,
        );
        let steps = vec![GpuVertexStep::default(); n];
        let positions = storage(&ctx, "positions", &st.positions, false);
        let steps = storage(&ctx, "steps", &steps, false);
        let index = storage(&ctx, "index", &index, false);
        let records = storage(&ctx, "records", &records, false);
        let masses = storage(&ctx, "masses", &st.masses, false);
        let bvh = output::<u32>(&ctx, "bvh", end as usize);
        let control = output::<u32>(&ctx, "control", control_words(st.bodies.len()));
        let contacts = output::<u32>(&ctx, "contacts", words);
        let mut bound = Vec::new();
        let rb = BvhRefitBuffers {
            positions: &positions,
            steps: &steps,
            index: &index,
            records: &records,
            bvh: &bvh,
            ends: None,
        };
        for t in [&tris, &edges] {
            let bb = BvhBuildBuffers { positions: &positions, index: &index, bvh: &bvh };
            bound.extend(BvhBuild::new(&ctx).bind(&ctx, t, &bb));
            bound.extend(BvhRefit::new(&ctx).bind(&ctx, t, &surface, RefitBoxes::SearchRadius, &rb));
        }
        let cb = ContactBodiesBuffers {
            positions: &positions,
            index: &index,
            records: &records,
            control: &control,
            contacts: &contacts,
        };
        bound.extend(ContactBodies::new(&ctx).bind(&ctx, &surface, &layout, &cb));
        let db = ContactDetectBuffers {
            positions: &positions,
            index: &index,
            records: &records,
            masses: &masses,
            bvh: &bvh,
            control: &control,
            contacts: &contacts,
        };
        let scan = Scan::new(&ctx);
        bound.extend(ContactDetect::new(&ctx).bind(&ctx, &scan, &surface, &layout, &tris, &edges, &model, &db));
        let csr = ContactCsr::new(&ctx);
        bound.push(csr.bind(&ctx, &layout, 0, &control, &contacts));
        bound.extend(scan.bind(&ctx, &contacts, layout.offsets, n as u32 + 1, layout.scan));
        bound.push(csr.bind(&ctx, &layout, 1, &control, &contacts));
        bound.push(ContactRows::new(&ctx).bind(
            &ctx,
            &layout,
            settings.ccd.min_separation,
            &positions,
            &control,
            &contacts,
        ));
        let detect = || {
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            record_pass(&mut encoder, "detection", &bound);
            ctx.queue.submit([encoder.finish()]);
            let header: Vec<u32> = read_blocking(&ctx, &control, 16).expect("control");
            (header, read_blocking::<u32>(&ctx, &contacts, words).expect("contacts"))
        };
        let (header, w) = detect();
        // Again: every word the same (pair order, lists, bounds).
        assert!(detect().1 == w, "a second detection of the same positions differs");

        let count = header[CONTROL_PAIR_COUNT] as usize;
        assert_eq!(count, cpu.pairs.len(), "pair count");
        let gpu_pairs = layout.read_pairs(&w, count);
        // The same pairs in the same order: query by query, each query's pairs by their vertices.
        let order = |pairs: &[ContactPair]| pairs.iter().map(key).collect::<Vec<_>>();
        assert!(order(&gpu_pairs) == order(&cpu.pairs), "pair order differs from the CPU's");
        let by_key: HashMap<_, _> = cpu.pairs.iter().enumerate().map(|(k, p)| (key(p), k)).collect();
        let close = |a: f32, b: f32, rel: f32| (a - b).abs() <= rel * b.abs().max(1e-6);
        let (mut dropped, mut edge_edge, mut self_pairs) = (0, 0, 0);
        for g in &gpu_pairs {
            let c = &cpu.pairs[by_key[&key(g)]];
            assert!(close(g.distance, c.distance, 1e-4), "{g:?} vs {c:?}");
            assert!(
                close(g.stiffness, c.stiffness, 1e-4) && close(g.friction_normal_force, c.friction_normal_force, 1e-3),
                "{g:?} vs {c:?}"
            );
            assert_eq!(g.friction, c.friction);
            assert_eq!(g.has_energy(), c.has_energy(), "closest-feature rule or fade: {g:?} vs {c:?}");
            for k in 0..4 {
                assert!((g.weights[k] - c.weights[k]).abs() < 1e-4, "{g:?} vs {c:?}");
            }
            assert!((Vec3A::from_array(g.frame_normal) - Vec3A::from_array(c.frame_normal)).length() < 1e-3);
            dropped += usize::from(!c.has_energy());
            edge_edge += usize::from(c.kind != PAIR_POINT_TRIANGLE);
            self_pairs += usize::from(st.vertex_body[c.vertices[0] as usize] == st.vertex_body[c.vertices[3] as usize]);
        }
        assert!(
            count > 200 && dropped > 20 && edge_edge > 50 && self_pairs > 20,
            "{count} pairs: {dropped} dropped, {edge_edge} edge–edge, {self_pairs} self"
        );
        // Bounds and lists per vertex.
        let mut bounded = 0;
        for v in 0..n {
            let c = cpu_clamp[v];
            let g: [f32; 4] = std::array::from_fn(|k| f32::from_bits(w[layout.clamp as usize + 4 * v + k]));
            assert_eq!(&g[..3], &c.to_array()[..3], "vertex {v}: detection position");
            if c.w.is_finite() {
                assert!(close(g[3], c.w, 1e-4), "vertex {v}: bound {} vs {}", g[3], c.w);
                bounded += 1;
            } else {
                assert!(g[3] >= 1e18, "vertex {v}: bound {} vs none", g[3]);
            }
            let (o0, o1) = (w[layout.offsets as usize + v] as usize, w[layout.offsets as usize + v + 1] as usize);
            let entries = &w[layout.entries as usize + o0..layout.entries as usize + o1];
            assert!(entries.windows(2).all(|p| p[0] < p[1]), "vertex {v}: row not sorted");
            let mut row: Vec<_> = entries
                .iter()
                .map(|&e| {
                    let (k, slot) = unpack_entry(e);
                    (key(&gpu_pairs[k as usize]), slot)
                })
                .collect();
            row.sort_unstable();
            let mut want: Vec<_> = cpu
                .vertex_pairs
                .row(v)
                .iter()
                .map(|&e| {
                    let (k, slot) = unpack_entry(e);
                    (key(&cpu.pairs[k as usize]), slot)
                })
                .collect();
            want.sort_unstable();
            assert_eq!(row, want, "vertex {v}");
        }
        assert!(bounded > n / 3, "{bounded} of {n} vertices bounded");
    }
}
