//! Host side of `shaders/contact/contact_ccd.wgsl`: the CCD of the initial advance (bodies joined into
//! groups, each body's earliest time of impact along `x^n → x^(0)`).

use bytemuck::{Pod, Zeroable};

use crate::collision::ccd::CcdParams;
use crate::gpu::GpuContext;
use crate::gpu::contact::bvh_build::TreeLayout;
use crate::gpu::contact::layout::ContactLayout;
use crate::gpu::contact::surface::GpuSurface;
use crate::gpu::kernel::{Bound, ComputeKernel};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!(
    "contact/contact_ccd",
    "step",
    "bvh",
    "bvh_walk",
    "surface",
    "contact_layout",
    "ccd_groups",
    "distance"
);

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    surface: GpuSurface,
    contact: ContactLayout,
    tris: TreeLayout,
    edges: TreeLayout,
    phase: u32,
    count: u32,
    safety: f32,
    max_iterations: u32,
}

/// What the kernel reads and writes.
pub struct ContactCcdBuffers<'a> {
    /// Positions (vec4): the initial guess `x^(0)`.
    pub positions: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`] (`x^n`).
    pub steps: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`].
    pub index: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_records`].
    pub records: &'a wgpu::Buffer,
    /// The trees, refitted to swept boxes grown by ξ.
    pub bvh: &'a wgpu::Buffer,
    /// The `control` words.
    pub control: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct ContactCcd {
    kernel: ComputeKernel,
}

impl ContactCcd {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "contact_ccd", SHADER) }
    }

    /// The reset (per body) and the two query dispatches; the reset must precede the trees'
    /// refit only in that both precede the queries.
    #[allow(clippy::too_many_arguments)]
    pub fn bind(
        &self,
        ctx: &GpuContext,
        surface: &GpuSurface,
        layout: &ContactLayout,
        tris: &TreeLayout,
        edges: &TreeLayout,
        ccd: &CcdParams<f32>,
        b: &ContactCcdBuffers<'_>,
    ) -> [Bound; 3] {
        let buffers = [b.positions, b.steps, b.index, b.records, b.bvh, b.control];
        [(0, layout.bodies), (1, surface.surface_vertex_count), (2, surface.edge_count)].map(|(phase, count)| {
            let params = Params {
                surface: *surface,
                contact: *layout,
                tris: *tris,
                edges: *edges,
                phase,
                count,
                safety: ccd.safety,
                max_iterations: ccd.max_iterations,
            };
            self.kernel.bind_pod(ctx, &params, &buffers, count)
        })
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec4;

    use super::*;
    use crate::collision::{ContactModel, ContactStiffness};
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::contact::bvh_build::{BvhBuild, BvhBuildBuffers};
    use crate::gpu::contact::bvh_refit::{BvhRefit, BvhRefitBuffers, RefitBoxes};
    use crate::gpu::contact::contact_advance::{ContactAdvance, ContactAdvanceBuffers};
    use crate::gpu::contact::contact_groups::ContactGroups;
    use crate::gpu::contact::layout::{CONTROL_ADVANCE_NEEDED, CONTROL_HEADER, control_words};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::pack::{pack_index, pack_records};
    use crate::gpu::test_support;
    use crate::gpu::vbd::vbd_inertia::GpuVertexStep;
    use crate::prelude::*;
    use crate::solver::SurfaceContactSettings;
    use crate::solver::vbd::contact::advance_once;
    use crate::test_rng::Rng;

    /// Five boxes whose initial guesses move them: one falls onto a resting one and drags the box
    /// above it into its group (their swept boxes overlap), one falls freely, one moves apart
    /// from everything. GPU body fractions and rescaled guesses against the CPU's advance.
    #[test]
    fn advance_matches_the_cpu() {
        let Some(ctx) = test_support::context() else { return };
        let mut world = World::new(StepConfig::default()).expect("world");
        let mesh = |n: u32| TetMesh::box_mesh(Vec3::splat(0.2), [n, n, n], TetSplit::Six).expect("mesh");
        let placed = [(0.0, 0.1), (0.0, 0.31), (0.6, 0.1), (0.0, 0.52), (-0.6, 0.1)];
        for (k, &(x, y)) in placed.iter().enumerate() {
            let body = SoftBodyBuilder::tetrahedral(mesh(3 + k as u32 % 3)).translation(Vec3::new(x, y, 0.0));
            world.bodies.insert(body.build().expect("body"));
        }
        world.sync();
        let st = world.state().clone();
        let offsets = [0.0f32, -0.04, -0.01, -0.02, 0.03];
        let mut rng = Rng(4);
        let start = st.positions.clone();
        let mut guess: Vec<Vec4> = start
            .iter()
            .zip(&st.vertex_body)
            .map(|(&p, &b)| {
                p + Vec4::new(0.0, offsets[b as usize], 0.0, 0.0) + (rng.vec() * 0.002).as_vec3().extend(0.0)
            })
            .collect();
        let model = ContactModel {
            stiffness: ContactStiffness::PerMass(1e5),
            offset: 1e-3,
            static_slip: 1e-6,
            stiffening: false,
        };
        let settings = SurfaceContactSettings::default();
        let cpu_scale = advance_once(&st, model, settings, &start, &mut guess);
        let (n, nb) = (st.vertex_count(), st.bodies.len());
        let (index, l) = pack_index(&st);
        let (records, r) = pack_records(&st);
        let bodies = r.bodies;
        let surface = GpuSurface::new(&st, &l, bodies, &model, &settings.ccd);
        let ([tris, edges], end) = TreeLayout::surface(&st, &l);
        let (layout, words) = ContactLayout::new(n as u32, nb as u32, 0, 16);
        let steps: Vec<GpuVertexStep> = (0..n)
            .map(|v| GpuVertexStep {
                start: start[v].to_array(),
                offset: (guess[v] - start[v]).to_array(),
                ..Default::default()
            })
            .collect();
        let positions = storage(&ctx, "positions", &guess, true);
        let steps = storage(&ctx, "steps", &steps, true);
        let index = storage(&ctx, "index", &index, false);
        let records = storage(&ctx, "records", &records, false);
        let bvh = output::<u32>(&ctx, "bvh", end as usize);
        let control = output::<u32>(&ctx, "control", control_words(nb));
        let contacts = output::<u32>(&ctx, "contacts", words);
        let [initial, previous, before_previous] =
            ["initial", "previous", "before_previous"].map(|s| output::<Vec4>(&ctx, s, n));
        let mut bound = Vec::new();
        let rb = BvhRefitBuffers {
            positions: &positions,
            steps: &steps,
            index: &index,
            records: &records,
            bvh: &bvh,
            ends: None,
        };
        let inflate = settings.ccd.min_separation;
        for t in [&tris, &edges] {
            let bb = BvhBuildBuffers { positions: &positions, index: &index, bvh: &bvh };
            bound.extend(BvhBuild::new(&ctx).bind(&ctx, t, &bb));
            bound.extend(BvhRefit::new(&ctx).bind(&ctx, t, &surface, RefitBoxes::Swept { inflate }, &rb));
        }
        let ab = ContactAdvanceBuffers {
            positions: &positions,
            steps: &steps,
            index: &index,
            control: &control,
            contacts: &contacts,
            initial: &initial,
            previous: &previous,
            before_previous: &before_previous,
        };
        let [check, apply] = ContactAdvance::new(&ctx).bind(&ctx, &layout, l.vertex_body, inflate, &ab);
        bound.push(check);
        let cb = ContactCcdBuffers {
            positions: &positions,
            steps: &steps,
            index: &index,
            records: &records,
            bvh: &bvh,
            control: &control,
        };
        bound.extend(ContactCcd::new(&ctx).bind(&ctx, &surface, &layout, &tris, &edges, &settings.ccd, &cb));
        bound.extend(ContactGroups::new(&ctx).bind(&ctx, &layout, &control));
        bound.push(apply);
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        record_pass(&mut encoder, "advance", &bound);
        ctx.queue.submit([encoder.finish()]);
        let words: Vec<u32> = read_blocking(&ctx, &control, control_words(nb)).expect("control");
        let gpu: Vec<Vec4> = read_blocking(&ctx, &positions, n).expect("positions");
        assert_eq!(words[CONTROL_ADVANCE_NEEDED], 1, "no bounds yet: the advance must run");
        let gpu_scale: Vec<f32> = (0..nb).map(|b| f32::from_bits(words[layout_toi(nb, b)])).collect();
        eprintln!("body fractions: GPU {gpu_scale:?}, CPU {cpu_scale:?}");
        for b in 0..nb {
            assert!(
                (gpu_scale[b] - cpu_scale[b]).abs() <= 1e-3 * cpu_scale[b],
                "body {b}: {gpu_scale:?} vs {cpu_scale:?}"
            );
        }
        assert!(cpu_scale[0] < 0.5 && cpu_scale[0] == cpu_scale[1] && cpu_scale[1] == cpu_scale[3], "{cpu_scale:?}");
        assert!(cpu_scale[2] == 1.0 && cpu_scale[4] == 1.0, "{cpu_scale:?}");
        for v in 0..n {
            let s = cpu_scale[st.vertex_body[v] as usize];
            let want = start[v] + (guess[v] - start[v]) * s;
            assert!((gpu[v] - want).length() < 1e-5, "vertex {v}: {} vs {want}", gpu[v]);
        }
    }

    /// Word of body `b`'s time of impact in `control` (after its frozen flags).
    fn layout_toi(bodies: usize, b: usize) -> usize {
        CONTROL_HEADER + bodies + b
    }
}
