//! Host side of `shaders/rigid/rigid_solve.wgsl`: the Newton solve of each group's rigid motions
//! (one workgroup per body; each group's root solves it) and their obstacle-safe scaling.

use bytemuck::{Pod, Zeroable};

use crate::collision::ContactModel;
use crate::gpu::GpuContext;
use crate::gpu::contact::layout::ContactLayout;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use crate::gpu::obstacles::GpuObstacleSet;
use crate::gpu::rigid::rigid_groups::RigidLayout;

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!(
    "rigid/rigid_solve",
    "step",
    "obstacles",
    "distance",
    "mat3",
    "friction",
    "contact_layout",
    "contact",
    "layer",
    "rigid"
);

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    rigid: RigidLayout,
    contact: ContactLayout,
    vertex_body: u32,
    bodies: u32,
    pairs: u32,
    contact_flags: u32,
    stiffness: f32,
    offset: f32,
    static_slip: f32,
    dof: u32,
    obstacles: GpuObstacleSet,
}

/// What the kernel reads and writes.
pub struct RigidSolveBuffers<'a> {
    /// Positions (vec4): the initial guess.
    pub positions: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`].
    pub steps: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_records`].
    pub records: &'a wgpu::Buffer,
    /// `SimState::masses`.
    pub masses: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`] (`vertex_body`).
    pub index: &'a wgpu::Buffer,
    /// The `control` words (the stored pair count).
    pub control: &'a wgpu::Buffer,
    /// The `contacts` words (the last detection's pairs), or any buffer without surface contact.
    pub contacts: &'a wgpu::Buffer,
    /// The correction's words.
    pub rigid: &'a wgpu::Buffer,
}

/// Where the solve finds the state's tables and the surface pairs.
#[derive(Clone, Copy, Debug)]
pub struct RigidSolveSetup<'a> {
    /// The correction's buffer.
    pub rigid: RigidLayout,
    /// The contacts buffer, when the scene has surface contact.
    pub contact: Option<ContactLayout>,
    /// Where `vertex_body` starts in `index`.
    pub vertex_body: u32,
    /// The first body record in `records`.
    pub bodies: u32,
    /// Contact constants.
    pub model: ContactModel,
    /// The affine coarse space (12 coordinates per body) rather than the rigid one (6).
    pub affine: bool,
    /// The obstacles.
    pub obstacles: &'a GpuObstacleSet,
}

/// The compiled kernel.
pub struct RigidSolve {
    kernel: ComputeKernel,
}

impl RigidSolve {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "rigid_solve", SHADER) }
    }

    /// One workgroup per body.
    pub fn bind(&self, ctx: &GpuContext, s: &RigidSolveSetup<'_>, b: &RigidSolveBuffers<'_>) -> Bound {
        let (contact_flags, stiffness) = s.model.gpu_flags();
        let params = Params {
            rigid: s.rigid,
            contact: s.contact.unwrap_or_default(),
            vertex_body: s.vertex_body,
            bodies: s.bodies,
            pairs: u32::from(s.contact.is_some()),
            contact_flags,
            stiffness,
            offset: s.model.offset,
            static_slip: s.model.static_slip,
            dof: if s.affine { 12 } else { 6 },
            obstacles: *s.obstacles,
        };
        let buffers = [b.positions, b.steps, b.records, b.masses, b.index, b.control, b.contacts, b.rigid];
        self.kernel.bind_pod(ctx, &params, &buffers, s.rigid.bodies * WORKGROUP)
    }
}

#[cfg(test)]
mod tests {
    use glam::{Mat3A, Vec3A, Vec4};

    use super::*;
    use crate::collision::ContactStiffness;
    use crate::collision::Obstacle;
    use crate::gpu::buffers::StateBuffers;
    use crate::gpu::buffers::{read_blocking, storage};
    use crate::gpu::contact::layout::{CONTROL_PAIR_COUNT, ContactLayout, control_words};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::pack::{pack_index, pack_records};
    use crate::gpu::rigid::program::RigidState;
    use crate::gpu::test_support;
    use crate::gpu::vbd::vbd_inertia::GpuVertexStep;
    use crate::prelude::*;
    use crate::solver::parallel::{PhaseCell, SharedSlice};
    use crate::solver::vbd::contact::detect_once;
    use crate::solver::vbd::rigid_correction::correct_once;
    use crate::solver::vbd::vertex::VertexInputs;
    use crate::solver::{Initialization, Integrator, SurfaceContactSettings};
    use crate::state::VERTEX_KINEMATIC;
    use crate::test_rng::Rng;

    /// `stacked` boxes stacked 0.5 mm apart on the ground (one coupled group that turns),
    /// another beside the bottom one with a pinned vertex (a fixed partner), a cloth lying on
    /// the top box (a sheet: it does not turn), with random velocities and a random initial
    /// guess: the whole GPU correction (groups, quadratics, Newton, motions) against the CPU's.
    /// Three boxes with the penalty layer, in the rigid and the affine coarse space, and eight
    /// (the group of `stack_soft_cubes_8`) with the stiffening layer.
    #[test]
    fn correction_matches_the_cpu() {
        let Some(ctx) = test_support::context() else { return };
        // One workgroup per body, and the quadratics summed in chunks of 16 vertices.
        for chunk in [None, Some(16)] {
            correction_matches_the_cpu_with(&ctx, chunk, 3, false);
            // The affine space with two stacked boxes: with three, its group's 12-coordinate
            // solve runs out of lavapipe's loop budget (shaders/README.md).
            correction_matches_the_cpu_with(&ctx, chunk, 2, true);
        }
        correction_matches_the_cpu_with(&ctx, None, 8, false);
    }

    fn correction_matches_the_cpu_with(ctx: &crate::gpu::GpuContext, chunk: Option<u32>, stacked: usize, affine: bool) {
        let mut world = World::new(StepConfig::default()).expect("world");
        let mesh = |n: u32| TetMesh::box_mesh(Vec3::splat(0.2), [n, n, n], TetSplit::Six).expect("mesh");
        // The stack (each box 0.5 mm above the last, the third a centimetre off axis), then
        // the pinned box beside the bottom one.
        let places = (0..stacked)
            .map(|k| (if k == 2 { 0.01 } else { 0.0 }, 0.1005 + 0.2005 * k as f32))
            .chain([(0.2007, 0.1005)]);
        for (k, at) in places.enumerate() {
            let body = SoftBodyBuilder::tetrahedral(mesh(3 + k as u32 % 2))
                .friction(0.3 + 0.1 * (k % 4) as f32)
                .linear_damping(if k == 1 { 0.5 } else { 0.0 })
                .translation(Vec3::new(at.0, at.1, 0.0));
            world.bodies.insert(body.build().expect("body"));
        }
        world.bodies.insert(
            ClothBuilder::new(TriMesh::cloth_grid(glam::Vec2::splat(0.15), [6, 6]).expect("cloth"))
                .translation(Vec3::new(0.0, 0.2005 * stacked as f32 + 0.001, 0.0))
                .build()
                .expect("cloth"),
        );
        world.sync();
        let mut st = world.state().clone();
        let (fixed, cloth) = (stacked, stacked + 1);
        let pinned = st.bodies[fixed].vertex_start as usize;
        st.flags[pinned] |= VERTEX_KINEMATIC;
        let n = st.vertex_count();
        let (h, g) = (1.0f32 / 60.0, Vec3A::new(0.0, -9.81, 0.0));
        let mut rng = Rng(13);
        let start: Vec<Vec4> = st.positions.clone();
        let mut guess: Vec<Vec4> = start
            .iter()
            .map(|&p| p + (rng.vec() * 2e-4).as_vec3().extend(0.0) - Vec4::new(0.0, 1e-3, 0.0, 0.0))
            .collect();
        let steps: Vec<GpuVertexStep> = (0..n)
            .map(|v| {
                let s = Integrator::Newmark.vertex_step(h, (rng.vec() * 0.2).as_vec3a() + g * 0.1, g);
                GpuVertexStep {
                    start: start[v].to_array(),
                    predictor: s.predictor.extend(s.weight).to_array(),
                    inertia: (s.predictor + g * s.weight).extend(st.masses[v] / s.weight).to_array(),
                    velocity: s.c0.extend(s.c1).to_array(),
                    offset: (guess[v] - start[v]).to_array(),
                }
            })
            .collect();
        let model = ContactModel {
            stiffness: ContactStiffness::default_for(9.81, 1e-3),
            offset: 1e-3,
            static_slip: 1e-4 * h,
            stiffening: stacked > 3,
        };
        let obstacles = [Obstacle::ground(0.0, 0.5)];
        // The last detection, at x^n.
        let (pairs, clamp) = detect_once(&st, model, SurfaceContactSettings::default(), &mut start.clone());
        assert!(pairs.pairs.iter().filter(|p| p.has_energy()).count() > 50);

        // The CPU correction.
        let inertia: Vec<Vec4> = steps.iter().map(|s| Vec4::from_array(s.inertia)).collect();
        let velocity: Vec<Vec4> = steps.iter().map(|s| Vec4::from_array(s.velocity)).collect();
        let mut no_clamp = vec![Vec4::ZERO; n];
        let (surface, clamp_sh) = (PhaseCell::new(pairs.clone()), SharedSlice::new(&mut no_clamp));
        // Per tet: Ḟ = c1 F + G_e with G_e = (D_c0 − c1 D_x^n) D_m⁻¹ (the GPU forms Ḟ from the
        // vertices' velocity estimates).
        let rates: Vec<Mat3A> = st
            .tets
            .iter()
            .map(|t| {
                let c = t.vertices.map(|i| velocity[i as usize]);
                let xn = t.vertices.map(|i| Vec3A::from_vec4(start[i as usize]));
                let col = |k: usize| (Vec3A::from_vec4(c[k]) - Vec3A::from_vec4(c[0])) - (xn[k] - xn[0]) * c[0].w;
                Mat3A::from_cols(col(1), col(2), col(3)) * t.dm_inv()
            })
            .collect();
        let inputs = VertexInputs {
            state: &st,
            start: &start,
            inertia: &inertia,
            velocity: &velocity,
            obstacles: &obstacles,
            contact: model,
            tet_rates: &rates,
            spins: &[],
            surface: &surface,
            clamp: &clamp_sh,
        };
        let mut eligible = vec![true; st.bodies.len()];
        eligible[fixed] = false;
        let before = guess.clone();
        correct_once(&inputs, &eligible, affine, &mut guess);

        // The GPU correction.
        let (index, l) = pack_index(&st);
        let (records, r) = pack_records(&st);
        let queries = (st.surface_vertices.len() + st.surface_edges.len()) as u32;
        let (layout, words) = ContactLayout::new(n as u32, st.bodies.len() as u32, queries, pairs.pairs.len() as u32);
        let mut control = vec![0u32; control_words(st.bodies.len())];
        control[CONTROL_PAIR_COUNT] = pairs.pairs.len() as u32;
        let tets = storage(ctx, "tets", &st.tets, false);
        let [initial, previous, before_previous] =
            ["initial", "previous", "before_previous"].map(|s| storage(ctx, s, &before, true));
        let bufs = [
            storage(ctx, "positions", &before, true),
            storage(ctx, "steps", &steps, true),
            storage(ctx, "index", &index, false),
            storage(ctx, "records", &records, false),
            storage(ctx, "masses", &st.masses, false),
            storage(ctx, "flags", &st.flags, false),
            storage(ctx, "control", &control, true),
            storage(ctx, "contacts", &layout.pack_cpu(words, &pairs, &clamp), false),
        ];
        let b = StateBuffers {
            positions: &bufs[0],
            steps: &bufs[1],
            index: &bufs[2],
            records: &bufs[3],
            masses: &bufs[4],
            flags: &bufs[5],
            targets: &bufs[0],
            initial: &initial,
            previous: &previous,
            before_previous: &before_previous,
            control: &bufs[6],
            tets: &tets,
        };
        let mut state = RigidState::new(ctx, &st, l, r).expect("correctable bodies");
        if let Some(chunk) = chunk {
            state.sum_in_chunks(ctx, chunk);
        }
        let set = crate::gpu::obstacles::GpuObstacleSet::pack(&obstacles).expect("obstacles");
        let program = state.bind(ctx, (&model, affine), Initialization::Inertia, &set, &b, (&bufs[7], Some(layout)));
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        let all: Vec<Bound> = program.groups.iter().chain(&program.correct).cloned().collect();
        record_pass(&mut encoder, "rigid", &all);
        ctx.queue.submit([encoder.finish()]);
        let gpu: Vec<Vec4> = read_blocking(ctx, &bufs[0], n).expect("positions");
        let gpu_steps: Vec<GpuVertexStep> = read_blocking(ctx, &bufs[1], n).expect("steps");

        let mut moved = vec![0.0f32; st.bodies.len()];
        let mut worst = 0.0f32;
        for v in 0..n {
            let b = st.vertex_body[v] as usize;
            let shift = (guess[v] - before[v]).truncate().length();
            moved[b] = moved[b].max(shift);
            let d = (gpu[v] - guess[v]).truncate().length();
            worst = worst.max(d / shift.max(1e-4));
            // The offset took the shift.
            let offset = Vec4::from_array(gpu_steps[v].offset).truncate();
            assert!((offset - (gpu[v] - start[v]).truncate()).length() < 1e-6, "vertex {v}: offset");
        }
        eprintln!(
            "affine {affine}: largest body moves {moved:?}; largest GPU − CPU difference {worst:.2e} of the move"
        );
        assert!(worst < 1e-3, "GPU and CPU corrections differ by {worst} of the move");
        assert!((0..stacked).chain([cloth]).all(|b| moved[b] > 1e-4), "{moved:?}");
        assert_eq!(moved[fixed], 0.0, "the body with a kinematic vertex is not corrected");
    }
}
