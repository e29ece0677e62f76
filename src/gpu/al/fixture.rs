//! The AL kernels' tests' scene: a deformed configuration, an active set, and the buffers of a
//! solve on the device.

use glam::{DVec3, Vec2, Vec3, Vec4};

use crate::collision::Obstacle;
use crate::collision::surface_pairs::{PAIR_EDGE_EDGE, PAIR_POINT_TRIANGLE};
use crate::collision::swept::{PAIR_OBSTACLE, PairKey};
use crate::gpu::GpuContext;
use crate::gpu::al::al_elements::{AlElementLayout, AlElements, AlElementsBuffers};
use crate::gpu::al::al_pcg::{
    AlPair, AlPairLayout, CONTROL_WORDS, ONE_WORKGROUP_VERTICES, SCALAR_DELTA, SCALAR_MU, VECTOR_REGIONS, VERTEX_MOVES,
    VERTEX_SOLVED, element_words, obstacle_table_adjacency, pair_adjacency, scalar_words,
};
use crate::gpu::al::newton::{AlNewtonBuffers, AlNewtonSetup};
use crate::gpu::buffers::{control_words, output, read_blocking, storage};
use crate::gpu::kernel::Bound;
use crate::gpu::pack::{IndexLayout, RecordLayout, pack_index, pack_records};
use crate::gpu::vbd::vbd_inertia::GpuVertexStep;
use crate::prelude::*;
use crate::solver::al::AlSettings;
use crate::solver::al::constraints::ActiveSet;
use crate::solver::al::problem::Problem;
use crate::test_rng::Rng;

/// Static friction slip of the tests' pairs \[m\].
pub const STATIC_SLIP: f64 = 1e-4 / 60.0;
/// Penalty and offset of the tests' active set.
pub const MU: f64 = 2e4;
pub const DELTA: f64 = 1e-3;

/// A stable neo-Hookean cube, a StVK cube and a stiffly bending cloth (membranes and hinges), with targets
/// moved from rest by up to 0.05 m (half a cell): tets compressed and some inverted, the cloth
/// buckled; inertia of a 60 Hz step towards a random target near the start.
pub struct Fixture {
    pub world: World,
    pub targets: Vec<Vec4>,
    pub steps: Vec<GpuVertexStep>,
}

pub fn fixture() -> Fixture {
    let mut world = World::new(StepConfig::default()).expect("world");
    let mesh = || TetMesh::box_mesh(Vec3::splat(0.2), [2, 2, 3], TetSplit::Six).expect("mesh");
    world.bodies.insert(SoftBodyBuilder::tetrahedral(mesh()).build().expect("jelly"));
    world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh())
            .material(StVK::from_young_poisson(2e5, 0.3))
            .translation(Vec3::new(0.5, 0.0, 0.0))
            .build()
            .expect("stvk"),
    );
    let cloth = TriMesh::cloth_grid(Vec2::new(0.4, 0.4), [4, 4]).expect("cloth");
    // Bending far stiffer than the default (2e-5 N·m), so the hinges weigh in the sums.
    let material = ClothMaterial::new(2e6, 0.3, 5e-4).with_bending_stiffness(0.05);
    world.bodies.insert(
        ClothBuilder::new(cloth).material(material).translation(Vec3::new(0.0, 0.5, 0.0)).build().expect("cloth"),
    );
    world.sync();
    let st = world.state();
    let mut rng = Rng(17);
    let targets: Vec<Vec4> = st.positions.iter().map(|p| *p + (rng.vec() * 0.03).as_vec3().extend(0.0)).collect();
    let h2 = (1.0f32 / 60.0).powi(2);
    let steps = (0..st.vertex_count())
        .map(|v| GpuVertexStep {
            start: st.positions[v].to_array(),
            predictor: [0.0; 4],
            inertia: (rng.vec() * 0.01).as_vec3().extend(st.masses[v] / h2).to_array(),
            velocity: [0.0; 4],
            offset: [0.0; 4],
        })
        .collect();
    Fixture { world, targets, steps }
}

impl Fixture {
    /// Every seventh vertex not solved.
    pub fn solve(&self) -> Vec<bool> {
        (0..self.world.state().vertex_count()).map(|v| v % 7 != 0).collect()
    }

    /// The start `x^t` and the targets `x̂` in f64.
    pub fn start_and_targets(&self) -> (Vec<DVec3>, Vec<DVec3>) {
        let start = self.steps.iter().map(|s| Vec4::from_array(s.start).truncate().as_dvec3()).collect();
        (start, self.targets.iter().map(|p| p.truncate().as_dvec3()).collect())
    }

    /// The CPU's potential over `solve`'s vertices, with the fixture's inertia.
    pub fn problem(&self, solve: &[bool]) -> Problem {
        Problem::new(self.world.state(), solve, |v| {
            let s = &self.steps[v];
            let y = Vec4::from_array(s.start).truncate() + Vec4::from_array(s.inertia).truncate();
            (s.inertia[3] as f64, y.as_dvec3())
        })
    }

    /// The jelly cube's vertices.
    fn jelly(&self) -> std::ops::Range<u32> {
        let b = &self.world.state().bodies[0];
        b.vertex_start..b.vertex_start + b.vertex_count
    }

    /// The jelly cube's lowest height at the start \[m\].
    pub fn bottom(&self) -> f64 {
        self.jelly().map(|v| self.world.state().positions[v as usize].y as f64).fold(f64::INFINITY, f64::min)
    }

    /// The obstacles of [`Fixture::active_set`]: a ground 2 mm below the jelly cube.
    pub fn obstacles(&self) -> Vec<Obstacle> {
        vec![Obstacle::ground((self.bottom() - 0.002) as f32, 0.6)]
    }

    /// An active set (`solver::al::constraints`): the jelly cube's bottom vertices against a
    /// ground 2 mm below them, which the targets penetrate; a cloth vertex against a triangle of
    /// the cube and an edge of the cube against one of the StVK cube. Two dual updates at
    /// ([`MU`], [`DELTA`]) give the violated pairs multipliers and lagged friction, and decay the
    /// others.
    pub fn active_set(&self) -> ActiveSet {
        let st = self.world.state();
        let (start, xh) = self.start_and_targets();
        let jelly = self.jelly();
        let bottom = self.bottom();
        let obstacles = self.obstacles();
        let mut active = ActiveSet::default();
        for v in jelly.clone().filter(|&v| start[v as usize].y < bottom + 1e-6) {
            active.add(st, &obstacles, PairKey { kind: PAIR_OBSTACLE, vertices: [v, 0, u32::MAX, u32::MAX] }, &start);
        }
        let cloth = st.bodies[2].vertex_start;
        let t = st.surface_triangles.iter().find(|t| jelly.contains(&t[0])).expect("a jelly triangle");
        active.add(st, &obstacles, PairKey { kind: PAIR_POINT_TRIANGLE, vertices: [cloth, t[0], t[1], t[2]] }, &start);
        let a = st.surface_edges.iter().find(|e| jelly.contains(&e[0])).expect("a jelly edge");
        let b = st.surface_edges.iter().find(|e| st.vertex_body[e[0] as usize] == 1).expect("a StVK edge");
        active.add(st, &obstacles, PairKey { kind: PAIR_EDGE_EDGE, vertices: [a[0], a[1], b[0], b[1]] }, &start);
        active.dual_update(&xh, MU, DELTA);
        active.dual_update(&xh, MU, DELTA);
        let pairs = active.gpu_pairs();
        assert!(pairs.len() >= 6, "{} pairs", pairs.len());
        assert!(pairs.iter().any(|p| p.lambda > 0.0 && p.normal_force > 0.0), "no pair is pressed");
        assert!(pairs.iter().any(|p| p.gamma < 1.0), "no pair decayed");
        active
    }
}

/// Everything a Newton iteration of the fixture binds on the device: the state's tables, the
/// element records with `pairs` after them, the solve's vectors, scalars (μ, δ set) and a
/// control buffer, and the dispatches that fill the element records.
pub struct Device {
    pub n: usize,
    pub elements: AlElementLayout,
    pub pairs: AlPairLayout,
    pub pair_count: usize,
    pub index_layout: IndexLayout,
    pub record_layout: RecordLayout,
    pub positions: wgpu::Buffer,
    pub steps: wgpu::Buffer,
    pub index: wgpu::Buffer,
    pub tets: wgpu::Buffer,
    pub records: wgpu::Buffer,
    pub element: wgpu::Buffer,
    pub solved: wgpu::Buffer,
    pub vectors: wgpu::Buffer,
    pub scalars: wgpu::Buffer,
    pub fill: [Option<Bound>; 3],
}

impl Device {
    pub fn new(ctx: &GpuContext, f: &Fixture, solve: &[bool], pairs: &[AlPair], mu: f32, delta: f32) -> Self {
        Self::with_adjacency(ctx, f, solve, pairs, pair_adjacency(pairs, f.world.state().vertex_count()), mu, delta)
    }

    /// With an empty vertex–obstacle table for `obstacles` obstacles as the pairs.
    pub fn with_table(ctx: &GpuContext, f: &Fixture, solve: &[bool], obstacles: usize, mu: f32, delta: f32) -> Self {
        let n = f.world.state().vertex_count();
        let table = vec![AlPair::ABSENT; n * obstacles];
        Self::with_adjacency(ctx, f, solve, &table, obstacle_table_adjacency(n, obstacles), mu, delta)
    }

    fn with_adjacency(
        ctx: &GpuContext,
        f: &Fixture,
        solve: &[bool],
        pairs: &[AlPair],
        adjacency: (Vec<u32>, Vec<u32>),
        mu: f32,
        delta: f32,
    ) -> Self {
        let st = f.world.state();
        let n = st.vertex_count();
        let elements = AlElementLayout::new(st.tets.len(), st.tris.len(), st.hinges.len());
        assert!(elements.counts.iter().all(|&c| c > 0), "{elements:?}");
        let pair_layout = AlPairLayout::new(&elements, pairs.len(), n);
        let words = element_words(&pair_layout, pairs, &adjacency);
        let items = n + st.tets.len() + st.tris.len() + st.hinges.len() + pairs.len();
        let mut scalars = vec![0.0f32; scalar_words(items)];
        scalars[SCALAR_MU] = mu;
        scalars[SCALAR_DELTA] = delta;
        let solved: Vec<u32> = solve.iter().map(|&s| if s { VERTEX_SOLVED | VERTEX_MOVES } else { 0 }).collect();
        let (index, index_layout) = pack_index(st);
        let (records, record_layout) = pack_records(st);
        let positions = storage(ctx, "positions", &f.targets, true);
        let tets = storage(ctx, "tets", &st.tets, false);
        let records = storage(ctx, "records", &records, false);
        let element = storage(ctx, "element", &words, true);
        let fill = AlElements::new(ctx).bind(
            ctx,
            &elements,
            &record_layout,
            &AlElementsBuffers { positions: &positions, tets: &tets, records: &records, element: &element },
        );
        Self {
            n,
            elements,
            pairs: pair_layout,
            pair_count: pairs.len(),
            index_layout,
            record_layout,
            positions,
            steps: storage(ctx, "steps", &f.steps, false),
            index: storage(ctx, "index", &index, false),
            tets,
            records,
            element,
            solved: storage(ctx, "solved", &solved, false),
            vectors: output::<Vec4>(ctx, "vectors", VECTOR_REGIONS * n),
            scalars: storage(ctx, "scalars", &scalars, true),
            fill,
        }
    }

    /// The Newton iterations' setup over this device's tables with `settings`' tolerances and
    /// caps, PCG capped at `cg_iterations`.
    pub fn newton_setup(&self, settings: &AlSettings, cg_iterations: u32) -> AlNewtonSetup<'_> {
        AlNewtonSetup {
            vertices: self.n,
            index: &self.index_layout,
            records: &self.record_layout,
            elements: &self.elements,
            pairs: &self.pairs,
            pair_count: self.pair_count,
            static_slip: STATIC_SLIP as f32,
            cg_tolerance: settings.cg_tolerance as f32,
            cg_iterations,
            force_tolerance: settings.force_tolerance as f32,
            newton_iterations: settings.newton_iterations,
            one_workgroup: self.n <= ONE_WORKGROUP_VERTICES,
        }
    }

    /// The Newton iterations' buffers: this device's, and the two control buffers given.
    pub fn newton_buffers<'a>(
        &'a self,
        pcg_control: &'a wgpu::Buffer,
        control: &'a wgpu::Buffer,
    ) -> AlNewtonBuffers<'a> {
        AlNewtonBuffers {
            positions: &self.positions,
            steps: &self.steps,
            index: &self.index,
            tets: &self.tets,
            records: &self.records,
            element: &self.element,
            solved: &self.solved,
            vectors: &self.vectors,
            scalars: &self.scalars,
            pcg_control,
            control,
        }
    }

    /// A control buffer of `words` u32 that dispatches may read their arguments from.
    pub fn control(ctx: &GpuContext, words: usize) -> wgpu::Buffer {
        control_words(ctx, "control", words.max(CONTROL_WORDS))
    }

    /// Records `record` into one compute pass, submits it and checks the device took it.
    pub fn run(ctx: &GpuContext, record: impl FnOnce(&mut wgpu::ComputePass<'_>)) {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            record(&mut pass);
        }
        ctx.queue.submit([encoder.finish()]);
        let _: Vec<u32> = read_blocking(ctx, &output::<u32>(ctx, "sync", 1), 1).expect("sync");
        assert_eq!(ctx.error(), None);
    }
}

/// The CPU's active set as the GPU's AL kernels read it (their tests' bridge from the oracle).
pub(crate) trait GpuPairs {
    /// Every pair as an [`AlPair`] record.
    fn gpu_pairs(&self) -> Vec<AlPair>;
}

impl GpuPairs for ActiveSet {
    fn gpu_pairs(&self) -> Vec<AlPair> {
        use crate::gpu::al::al_pcg::NO_VERTEX;
        let f3 = |v: DVec3| v.as_vec3().to_array();
        self.list
            .iter()
            .map(|c| {
                let moving = c.key.moving_vertices().len();
                AlPair {
                    vertices: std::array::from_fn(|k| if k < moving { c.key.vertices[k] } else { NO_VERTEX }),
                    gradient: c.grad.map(f3),
                    base: c.base.map(f3),
                    weights: c.weights.map(|w| w as f32),
                    frame: f3(c.frame),
                    distance: c.distance as f32,
                    lambda: c.lambda as f32,
                    gamma: c.gamma as f32,
                    friction: c.friction as f32,
                    normal_force: c.normal_force as f32,
                    // The GPU's kinds are the CPU's.
                    kind: c.key.kind,
                    obstacle: c.key.obstacle().unwrap_or(0),
                }
            })
            .collect()
    }
}
