//! Host side of `shaders/al/al_step_size.wgsl`: how far the augmented-Lagrangian step's safe
//! iterate may follow its targets (the GPU twin of `solver::al`'s `max_step` for obstacles and
//! the tets' volume floor; the surface pairs' half is `al_surface`).

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel};
use crate::gpu::obstacles::GpuObstacleSet;
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("al/al_step_size", "step", "obstacles");

const PHASE_RESET: u32 = 0;
const PHASE_OBSTACLES: u32 = 1;
const PHASE_TETS: u32 = 2;
const PHASE_ADD: u32 = 3;

/// Words of `times` for `vertices`: α, then each vertex's earliest obstacle hit.
pub fn time_words(vertices: usize) -> usize {
    1 + vertices
}

/// A vertex's word in `times` that no hit reached (the largest finite f32's bits).
#[cfg(test)]
pub const NO_HIT: u32 = 0x7f7f_ffff;

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    phase: u32,
    vertices: u32,
    tets: u32,
    j_min: f32,
    min_separation: f32,
    safety: f32,
    table: u32,
    bodies: u32,
    vertex_body: u32,
    _pad: [u32; 3],
    obstacles: GpuObstacleSet,
}

/// What the kernel reads and writes.
pub struct AlStepSizeBuffers<'a> {
    /// The safe iterate `x` (vec4).
    pub safe: &'a wgpu::Buffer,
    /// The targets `x̂` (vec4).
    pub targets: &'a wgpu::Buffer,
    /// The state's tets.
    pub tets: &'a wgpu::Buffer,
    /// `al_pcg::VERTEX_SOLVED` bit per vertex (u32).
    pub solved: &'a wgpu::Buffer,
    /// [`time_words`] u32, written.
    pub times: &'a wgpu::Buffer,
    /// The element buffer, whose vertex–obstacle table new pairs join.
    pub element: &'a wgpu::Buffer,
    /// The packed records (body friction).
    pub records: &'a wgpu::Buffer,
    /// The packed index (`vertex_body`).
    pub index: &'a wgpu::Buffer,
}

/// What a step-size search needs besides its buffers.
pub struct AlStepSizeSetup<'a> {
    /// Vertices and tets.
    pub vertices: usize,
    /// See `vertices`.
    pub tets: usize,
    /// The step's obstacles.
    pub obstacles: &'a GpuObstacleSet,
    /// Smallest volume ratio a tet may reach.
    pub j_min: f32,
    /// Separation a hit keeps \[m\] (`step_size::MIN_SEPARATION`).
    pub min_separation: f32,
    /// First word of the vertex–obstacle table (`vertices × obstacles` pair slots) in `element`.
    pub table: u32,
    /// Where the body records are in `records`, and `vertex_body` in `index`.
    pub bodies: u32,
    /// See `bodies`.
    pub vertex_body: u32,
}

/// The bound phases, recorded in order.
pub struct AlStepSizeRun {
    phases: [Bound; 4],
}

impl AlStepSizeRun {
    /// The same search, its per-vertex phases' workgroups read from byte `vertices` of `gate`
    /// and its per-tet phase's from byte `tets`.
    pub fn gated(self, gate: &wgpu::Buffer, vertices: u64, tets: u64) -> Self {
        let [reset, obstacles, per_tet, add] = self.phases;
        Self {
            phases: [
                reset.indirect(gate, vertices),
                obstacles.indirect(gate, vertices),
                per_tet.indirect(gate, tets),
                add.indirect(gate, vertices),
            ],
        }
    }

    /// Records the search into `pass`.
    #[cfg(test)]
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.record_hits(pass);
        self.record_add(pass);
    }

    /// Records the times of impact and the tets' limits (the surface's hits go after these).
    pub fn record_hits(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.phases[..3].iter().for_each(|b| b.record(pass));
    }

    /// Records the add phase: each vertex's earliest obstacle hit joins the set (after every
    /// hit, the surface's included, is in).
    pub fn record_add(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.phases[3].record(pass);
    }
}

/// The compiled kernel.
pub struct AlStepSize {
    kernel: ComputeKernel,
}

impl AlStepSize {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "al_step_size", SHADER) }
    }

    /// Binds the search.
    pub fn bind(&self, ctx: &GpuContext, s: &AlStepSizeSetup<'_>, b: &AlStepSizeBuffers<'_>) -> AlStepSizeRun {
        let base = Params {
            phase: PHASE_RESET,
            vertices: s.vertices as u32,
            tets: s.tets as u32,
            j_min: s.j_min,
            min_separation: s.min_separation,
            // swept.rs obstacle_toi's share, as max_step passes it.
            safety: 0.1,
            table: s.table,
            bodies: s.bodies,
            vertex_body: s.vertex_body,
            _pad: [0; 3],
            obstacles: *s.obstacles,
        };
        let buffers = [b.safe, b.targets, b.tets, b.solved, b.times, b.element, b.records, b.index];
        let bind =
            |phase: u32, n: usize| self.kernel.bind_pod(ctx, &Params { phase, ..base }, &buffers, n.max(1) as u32);
        AlStepSizeRun {
            phases: [
                bind(PHASE_RESET, s.vertices),
                bind(PHASE_OBSTACLES, s.vertices),
                bind(PHASE_TETS, s.tets),
                bind(PHASE_ADD, s.vertices),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::gpu::al::fixture::GpuPairs;
    use glam::Vec4;

    use super::*;
    use crate::collision::Obstacle;
    use crate::collision::swept::SweptPairs;
    use crate::gpu::al::al_pcg::{AlPair, PAIR_ABSENT};
    use crate::gpu::al::fixture::{Device, fixture};
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::test_support;
    use crate::solver::al::constraints::{ActiveSet, earliest_hits};
    use crate::solver::al::step_size::{MIN_SEPARATION, StepLimits, max_step};

    /// Against the CPU's `max_step` (obstacles and tets, no surface pairs) on the fixture, from
    /// the start towards its targets: with its ground 2 mm below the jelly cube, an obstacle hit
    /// decides; with the targets moved six times as far and no ground, a tet's volume floor
    /// does; with the ground 1.5 µm below the cube (within 2ξ, where a vertex's time is its
    /// exact entry's, less a tenth), the entry decides, to the 1 % that f32 positions at 0.1 m
    /// resolve of a 1.5 µm gap; with the cube's bottom vertices on a box's top face to the bit,
    /// those the targets move in stop it at once (α = 0). α agrees, and so does each vertex's
    /// earliest obstacle hit; the pairs that join the vertex–obstacle table are those the CPU
    /// adds, as it adds them.
    #[test]
    fn matches_the_cpu_step_limit() {
        let Some(ctx) = test_support::context() else { return };
        let mut decided = Vec::new();
        // (stretch, ground's gap below the jelly cube, relative tolerance on times).
        // A gap of −1: a box whose top face holds the jelly cube's bottom vertices exactly.
        let cases =
            [(1.0f32, Some(0.002), 1e-4), (6.0, None, 1e-4), (1.0, Some(1.5e-6), 1e-2), (1.0, Some(-1.0), 1e-4)];
        for (stretch, gap, tolerance) in cases {
            let mut f = fixture();
            for (x, s) in f.targets.iter_mut().zip(&f.steps) {
                let start = Vec4::from_array(s.start);
                *x = start + (*x - start) * stretch;
            }
            let st = f.world.state();
            let solve = f.solve();
            let obstacles = match gap {
                Some(gap) if gap < 0.0 => {
                    // Centred twice as low as the bottom, half as tall: the face is the bottom's
                    // height to the bit (doubling is exact).
                    let bottom = f.bottom() as f32;
                    assert!(bottom < 0.0);
                    let (center, half) = (glam::Vec3::new(0.0, 2.0 * bottom, 0.0), glam::Vec3::new(1.0, -bottom, 1.0));
                    vec![Obstacle::cuboid(center, half, glam::Quat::IDENTITY, 0.6).expect("box")]
                }
                Some(gap) => vec![Obstacle::ground(f.bottom() as f32 - gap, 0.6)],
                None => Vec::new(),
            };
            let (start, xh) = f.start_and_targets();
            let d = Device::with_table(&ctx, &f, &solve, obstacles.len(), 0.0, 0.0);
            let safe = storage(&ctx, "safe", &st.positions, false);
            let times = output::<u32>(&ctx, "times", time_words(d.n));
            let set = GpuObstacleSet::pack(&obstacles).expect("obstacles");
            let run = AlStepSize::new(&ctx).bind(
                &ctx,
                &AlStepSizeSetup {
                    vertices: d.n,
                    tets: st.tets.len(),
                    obstacles: &set,
                    j_min: 0.01,
                    min_separation: MIN_SEPARATION as f32,
                    table: d.pairs.pairs,
                    bodies: d.record_layout.bodies,
                    vertex_body: d.index_layout.vertex_body,
                },
                &AlStepSizeBuffers {
                    safe: &safe,
                    targets: &d.positions,
                    tets: &d.tets,
                    solved: &d.solved,
                    times: &times,
                    element: &d.element,
                    records: &d.records,
                    index: &d.index,
                },
            );
            Device::run(&ctx, |pass| run.record(pass));
            let words: Vec<u32> = read_blocking(&ctx, &times, time_words(d.n)).expect("times");
            let alpha = f32::from_bits(words[0]) as f64;

            let all_tets: Vec<u32> = (0..st.tets.len() as u32).collect();
            let lim = StepLimits {
                st,
                obstacles: &obstacles,
                moves: &solve,
                solved: &solve,
                surface_pairs: false,
                // The GPU's step limit holds vertices only (its fallback has no edge pairs).
                obstacle_edges: false,
                tets: &all_tets,
                j_min: 0.01,
            };
            let mut hits = Vec::new();
            let cpu = max_step(&lim, &start, &xh, &mut SweptPairs::default(), &mut hits);
            assert!(
                (alpha - cpu).abs() <= tolerance * cpu + 1e-6,
                "stretch {stretch}: α {alpha} against the CPU's {cpu}"
            );
            let mut first = vec![f64::INFINITY; d.n];
            for (key, t) in &hits {
                let v = key.vertices[0] as usize;
                first[v] = first[v].min(*t);
            }
            for v in 0..d.n {
                let gpu = if words[1 + v] == NO_HIT { f64::INFINITY } else { f32::from_bits(words[1 + v]) as f64 };
                assert!(
                    gpu == first[v] || (gpu - first[v]).abs() <= tolerance * first[v] + 1e-6,
                    "stretch {stretch}: vertex {v}'s first hit {gpu} against the CPU's {}",
                    first[v]
                );
            }
            // The pairs that joined: the CPU's earliest hits, added at the start.
            let mut joined = ActiveSet::default();
            for key in earliest_hits(&hits, d.n, &mut Vec::new()) {
                joined.add(st, &obstacles, key, &start);
            }
            let words: Vec<u32> = read_blocking(&ctx, &d.element, d.pairs.words as usize).expect("table");
            let table: &[AlPair] = bytemuck::cast_slice(&words[d.pairs.pairs as usize..d.pairs.offsets as usize]);
            let present: Vec<&AlPair> = table.iter().filter(|p| p.kind != PAIR_ABSENT).collect();
            let mut cpu_pairs = joined.gpu_pairs();
            cpu_pairs.sort_by_key(|p| (p.vertices[0], p.obstacle));
            assert_eq!(present.len(), cpu_pairs.len(), "stretch {stretch}: pairs joined");
            for (g, c) in present.iter().zip(&cpu_pairs) {
                let near = |a: f32, b: f32| (a - b).abs() <= 1e-5;
                assert_eq!(
                    (g.vertices, g.kind, g.obstacle, g.lambda, g.gamma),
                    (c.vertices, c.kind, c.obstacle, 0.0, 1.0)
                );
                assert!(near(g.distance, c.distance) && near(g.friction, c.friction), "{g:?} vs {c:?}");
                assert!((0..3).all(|a| near(g.gradient[0][a], c.gradient[0][a]) && near(g.frame[a], c.frame[a])));
                assert!((0..3).all(|a| near(g.base[0][a], c.base[0][a])), "{g:?} vs {c:?}");
            }
            let by_obstacle = hits.iter().any(|(_, t)| *t == cpu);
            decided.push((stretch, cpu, by_obstacle));
        }
        // Decided by the ground, by a tet's volume floor, by the ground's entry test, and by the
        // box's entry test at once (a vertex on its face moving in). The box's time is 0 from
        // its slab test as −0 on lavapipe, whose bits lost every atomicMin until times went in
        // as time_bits: the GPU's fallback then let a cloth on two boxes sink 1–2 mm into them.
        assert!(decided[0].2 && !decided[1].2 && decided[1].1 < 1.0 && decided[2].2, "{decided:?}");
        assert!(decided[2].1 < 1e-3, "{decided:?}");
        assert!(decided[3].2 && decided[3].1 == 0.0, "{decided:?}");
    }
}
