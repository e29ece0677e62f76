//! Host side of `shaders/al_pcg.wgsl`: block-Jacobi PCG on the augmented-Lagrangian step's
//! Newton system, matrix-free over `al_elements`' records (the GPU twin of
//! `solver::linear::pcg` as the AL step calls it). A solve is recorded with its iteration cap;
//! the GPU stops it on convergence by zeroing the dispatch arguments of the iterations left.

use super::{Bound, ComputeKernel, WORKGROUP};
use crate::gpu::GpuContext;
use crate::gpu::buffers::output;
use crate::gpu::pack::IndexLayout;
use bytemuck::{Pod, Zeroable};

use super::al_elements::AlElementLayout;

/// WGSL source.
pub const SHADER: &str = super::compose!("al_pcg", "step", "mat3");

const PHASE_SETUP: u32 = 0;
const PHASE_APPLY: u32 = 1;
const PHASE_UPDATE: u32 = 2;
const PHASE_DIRECTION: u32 = 3;
const PHASE_REDUCE: u32 = 4;

/// Regions of the `vectors` buffer, each one vec4 per vertex.
pub const VECTOR_REGIONS: usize = 9;
/// Region of the solution `d` (the Newton direction).
pub const REGION_DIRECTION: usize = 0;
/// Region of the gradient `∇` at the targets.
pub const REGION_GRADIENT: usize = 8;
/// Words of `control`: dispatch arguments (3), iterations, state.
pub const CONTROL_WORDS: usize = 5;
/// `control` word of the iterations taken.
pub const CONTROL_ITERATIONS: usize = 3;
/// `control` word of how the solve ended.
pub const CONTROL_STATE: usize = 4;
/// `scalars` word of `‖b‖²`.
pub const SCALAR_BB: usize = 1;
/// `scalars` word of `‖r‖²` at the end.
pub const SCALAR_RR: usize = 4;

/// How a GPU solve ended (the `control` state word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcgEnd {
    /// Still running (more iterations were needed than recorded).
    Running,
    /// `‖r‖ ≤ tolerance ‖b‖`.
    Converged,
    /// The iteration cap.
    Capped,
    /// The curvature along a search direction was not positive.
    NotCurved,
    /// `b = 0`.
    NoRightHandSide,
}

impl PcgEnd {
    /// The state word's meaning (`None` for a word no kernel writes).
    pub fn decode(word: u32) -> Option<Self> {
        [Self::Running, Self::Converged, Self::Capped, Self::NotCurved, Self::NoRightHandSide]
            .get(word as usize)
            .copied()
    }
}

/// Words of the `scalars` buffer for `vertices`: eight scalars, then two partials per workgroup.
pub fn scalar_words(vertices: usize) -> usize {
    8 + 2 * (vertices as u32).div_ceil(WORKGROUP).max(1) as usize
}

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct Params {
    phase: u32,
    count: u32,
    groups: u32,
    after: u32,
    tet_offsets: u32,
    tet_entries: u32,
    tri_offsets: u32,
    tri_entries: u32,
    hinge_offsets: u32,
    hinge_entries: u32,
    tris_base: u32,
    hinges_base: u32,
    tolerance: f32,
    max_iterations: u32,
    _pad: [u32; 2],
}

/// What the kernel reads and writes.
pub struct AlPcgBuffers<'a> {
    /// The targets `x̂` (vec4).
    pub positions: &'a wgpu::Buffer,
    /// Per-vertex step records (`x^n`, inertia target and `m/w`).
    pub steps: &'a wgpu::Buffer,
    /// The packed index (element adjacencies).
    pub index: &'a wgpu::Buffer,
    /// `al_elements`' records.
    pub element: &'a wgpu::Buffer,
    /// 1 per vertex with unknowns (u32).
    pub solved: &'a wgpu::Buffer,
    /// [`VECTOR_REGIONS`] × vertices vec4, written.
    pub vectors: &'a wgpu::Buffer,
    /// [`scalar_words`] f32, written.
    pub scalars: &'a wgpu::Buffer,
    /// [`CONTROL_WORDS`] u32 with `INDIRECT` usage, written.
    pub control: &'a wgpu::Buffer,
}

/// What a solve needs besides its buffers.
pub struct AlPcgSetup<'a> {
    /// Vertices.
    pub vertices: usize,
    /// Where the adjacencies are in the index.
    pub index: &'a IndexLayout,
    /// Where the element records are.
    pub elements: &'a AlElementLayout,
    /// Relative residual at which the solve stops.
    pub tolerance: f32,
    /// Iterations recorded (and the cap).
    pub max_iterations: u32,
}

/// One bound solve: its phases, recorded as setup then `max_iterations` iterations.
pub struct AlPcgSolve {
    setup: [Bound; 2],
    iteration: [Bound; 5],
    iterations: u32,
}

impl AlPcgSolve {
    /// Records the solve into `pass`.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.setup.iter().for_each(|b| b.record(pass));
        for _ in 0..self.iterations {
            self.iteration.iter().for_each(|b| b.record(pass));
        }
    }
}

/// The compiled kernel.
pub struct AlPcg {
    kernel: ComputeKernel,
}

impl AlPcg {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "al_pcg", SHADER) }
    }

    /// Binds a solve.
    pub fn bind(&self, ctx: &GpuContext, s: &AlPcgSetup<'_>, b: &AlPcgBuffers<'_>) -> AlPcgSolve {
        let n = s.vertices as u32;
        let groups = n.div_ceil(WORKGROUP).max(1);
        let base = Params {
            phase: PHASE_SETUP,
            count: n,
            groups,
            after: PHASE_SETUP,
            tet_offsets: s.index.tet_offsets,
            tet_entries: s.index.tet_entries,
            tri_offsets: s.index.tri_offsets,
            tri_entries: s.index.tri_entries,
            hinge_offsets: s.index.hinge_offsets,
            hinge_entries: s.index.hinge_entries,
            tris_base: s.elements.tris,
            hinges_base: s.elements.hinges,
            tolerance: s.tolerance,
            max_iterations: s.max_iterations,
            _pad: [0; 2],
        };
        // A dispatch may not read its arguments from a buffer it binds for writing, so the
        // per-vertex phases, which never touch `control`, bind a stand-in in its place.
        let stand_in = output::<u32>(ctx, "al_pcg stand-in", CONTROL_WORDS);
        let buffers = [b.positions, b.steps, b.index, b.element, b.solved, b.vectors, b.scalars, b.control];
        let mut vertex_buffers = buffers;
        vertex_buffers[7] = &stand_in;
        let vertex_phase =
            |phase: u32| self.kernel.bind_pod(ctx, &Params { phase, ..base }, &vertex_buffers, groups * WORKGROUP);
        let reduce =
            |after: u32| self.kernel.bind_pod(ctx, &Params { phase: PHASE_REDUCE, after, ..base }, &buffers, 1);
        let indirect = |phase: u32| vertex_phase(phase).indirect(b.control, 0);
        AlPcgSolve {
            setup: [vertex_phase(PHASE_SETUP), reduce(PHASE_SETUP)],
            iteration: [
                indirect(PHASE_APPLY),
                reduce(PHASE_APPLY),
                indirect(PHASE_UPDATE),
                reduce(PHASE_UPDATE),
                indirect(PHASE_DIRECTION),
            ],
            iterations: s.max_iterations,
        }
    }
}

#[cfg(test)]
mod tests {
    use glam::{DVec3, Vec4};

    use super::*;
    use crate::gpu::buffers::{read_blocking, storage};
    use crate::gpu::kernels::al_elements::fixture::{fixture, records};
    use crate::gpu::pack::pack_index;
    use crate::gpu::test_support;
    use crate::solver::al::problem::{NO_DOF, Problem};
    use crate::solver::linear::pcg;

    /// The GPU's Newton system against the CPU's (`solver::al::problem`) in the AL kernels'
    /// fixture (tets compressed and inverted, the cloth buckled), every seventh vertex not
    /// solved: the gradient agrees; the GPU's PCG stops on its own before the recorded cap, and
    /// its direction solves the CPU's projected f64 system to within f32 of the tolerance and
    /// lowers the quadratic model as far as the CPU's exact solve, to 0.1 %.
    #[test]
    fn solves_the_cpu_newton_system() {
        let Some(ctx) = test_support::context() else { return };
        let f = fixture();
        let st = f.world.state();
        let n = st.vertex_count();
        let solve: Vec<bool> = (0..n).map(|v| v % 7 != 0).collect();
        let solved: Vec<u32> = solve.iter().map(|&s| s as u32).collect();
        let r = records(&ctx, &f);
        let (index, index_layout) = pack_index(st);
        let cap = 400;
        let steps = storage(&ctx, "steps", &f.steps, false);
        let index = storage(&ctx, "index", &index, false);
        let solved = storage(&ctx, "solved", &solved, false);
        let vectors = output::<Vec4>(&ctx, "vectors", VECTOR_REGIONS * n);
        let scalars = output::<f32>(&ctx, "scalars", scalar_words(n));
        let control = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("control"),
            size: (CONTROL_WORDS * 4) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::INDIRECT | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let solver = AlPcg::new(&ctx).bind(
            &ctx,
            &AlPcgSetup {
                vertices: n,
                index: &index_layout,
                elements: &r.layout,
                tolerance: 1e-4,
                max_iterations: cap,
            },
            &AlPcgBuffers {
                positions: &r.positions,
                steps: &steps,
                index: &index,
                element: &r.element,
                solved: &solved,
                vectors: &vectors,
                scalars: &scalars,
                control: &control,
            },
        );
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            r.dispatches.iter().for_each(|b| b.record(&mut pass));
            solver.record(&mut pass);
        }
        ctx.queue.submit([encoder.finish()]);
        let vectors: Vec<Vec4> = read_blocking(&ctx, &vectors, VECTOR_REGIONS * n).expect("vectors");
        let words: Vec<u32> = read_blocking(&ctx, &control, CONTROL_WORDS).expect("control");
        assert_eq!(ctx.error(), None);
        let region = |r: usize, v: usize| vectors[r * n + v].truncate().as_dvec3();

        // The CPU's system at the same targets, in f64.
        let x: Vec<DVec3> = f.targets.iter().map(|p| p.truncate().as_dvec3()).collect();
        let mut problem = Problem::new(st, &solve, |v| {
            let s = &f.steps[v];
            let y = Vec4::from_array(s.start).truncate() + Vec4::from_array(s.inertia).truncate();
            (s.inertia[3] as f64, y.as_dvec3())
        });
        let mut grad = vec![DVec3::ZERO; problem.len()];
        problem.gradient_hessian(st, &x, &mut grad);
        let scale = grad.iter().map(|g| g.length()).fold(0.0, f64::max);
        for v in 0..n {
            let d = problem.dof[v];
            if d == NO_DOF {
                assert_eq!(region(REGION_GRADIENT, v), DVec3::ZERO, "vertex {v} is not solved");
                assert_eq!(region(REGION_DIRECTION, v), DVec3::ZERO, "vertex {v} is not solved");
                continue;
            }
            let (gpu, cpu) = (region(REGION_GRADIENT, v), grad[d as usize]);
            assert!((gpu - cpu).length() <= 1e-4 * scale, "vertex {v}: gradient {gpu} vs {cpu} (scale {scale})");
        }
        let end = PcgEnd::decode(words[CONTROL_STATE]);
        let iterations = words[CONTROL_ITERATIONS];
        assert_eq!(end, Some(PcgEnd::Converged), "after {iterations} iterations");
        assert!(iterations > 5 && iterations < cap, "{iterations} iterations");

        let b: Vec<DVec3> = grad.iter().map(|g| -*g).collect();
        let dir: Vec<DVec3> = problem.vertices.iter().map(|&v| region(REGION_DIRECTION, v as usize)).collect();
        let norm = |a: &[DVec3]| a.iter().map(|v| v.length_squared()).sum::<f64>().sqrt();
        let dot = |a: &[DVec3], b: &[DVec3]| a.iter().zip(b).map(|(a, b)| a.dot(*b)).sum::<f64>();
        let mut ad = vec![DVec3::ZERO; dir.len()];
        problem.hessian.multiply(&dir, &mut ad);
        let residual: Vec<DVec3> = ad.iter().zip(&b).map(|(a, b)| *a - *b).collect();
        let relative = norm(&residual) / norm(&b);
        assert!(relative < 1e-3, "‖A d − b‖ / ‖b‖ = {relative:e}");
        // The quadratic model m(d) = ½ dᵀA d − bᵀd against its minimum, from the CPU's
        // exact solve: m(d) − m* = ½ ‖d − d*‖²_A.
        let inverse: Vec<_> = (0..problem.len()).map(|i| problem.hessian.diagonal_block(i).inverse()).collect();
        let mut exact = vec![DVec3::ZERO; problem.len()];
        pcg(|p, y| problem.hessian.multiply(p, y), &inverse, &b, &mut exact, 1e-12, 10_000);
        let model = |d: &[DVec3]| {
            let mut ad = vec![DVec3::ZERO; d.len()];
            problem.hessian.multiply(d, &mut ad);
            0.5 * dot(d, &ad) - dot(&b, d)
        };
        let (m_gpu, m_min) = (model(&dir), model(&exact));
        assert!(m_min < 0.0 && m_gpu - m_min <= 1e-3 * m_min.abs(), "model {m_gpu:e} against its minimum {m_min:e}");
    }
}
