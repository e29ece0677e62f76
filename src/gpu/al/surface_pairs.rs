//! The surface pairs (body–body and self contact) of an augmented-Lagrangian step on the GPU:
//! every step-size search refits the surface trees between the safe iterate and the targets
//! (`bvh_refit`'s `Between` boxes), marches every overlapping pair with a moving vertex
//! (`al_surface`: α and each vertex's earliest hit), hands the pairs whose hit is the earliest
//! of a vertex to the active set and rebuilds the vertex → pair adjacency (`al_surface_set`),
//! as `solver::al`'s `max_step`, `earliest_hits` and `ActiveSet::add` do on the CPU. The
//! pairs then take part in the Newton iterations, the dual update, pruning and the merit like
//! the vertex–obstacle pairs, from slots after the vertex–obstacle table.
//!
//! The trees are the fast path's ([`crate::gpu::contact::program`]): every use there refits them
//! first, so the step reusing their boxes costs the fast path nothing. The surface phases run
//! only while the step does (`al_surface_set`'s args phase writes their arguments each outer
//! iteration from `al_outer`'s).

use crate::gpu::GpuContext;
use crate::gpu::al::al_outer::ONE_ARGS;
use crate::gpu::al::al_pcg::AlPairLayout;
use crate::gpu::al::al_surface::{AlSurface, AlSurfaceBuffers, AlSurfaceRun, AlSurfaceSetup, CandidateLayout};
use crate::gpu::al::al_surface_set::{AlSurfaceSet, AlSurfaceSetBuffers, AlSurfaceSetSetup, MAX_DISPATCHES};
use crate::gpu::buffers::control_words;
use crate::gpu::contact::bvh_build::TreeLayout;
use crate::gpu::contact::bvh_refit::{BvhRefit, BvhRefitBuffers, RefitBoxes};
use crate::gpu::contact::surface::GpuSurface;
use crate::gpu::kernel::Bound;
use crate::solver::al::step_size::MIN_SEPARATION;

/// Surface pair slots for a surface of `surface_vertices` vertices: two per vertex, at least
/// 256 and at most 32,768 (a pair record is 168 bytes). A pair that finds no free slot is not a
/// constraint, but still bounds the step (counted in `al_surface::SLOTS_DROPPED`).
pub fn surface_slots(surface_vertices: usize) -> usize {
    (2 * surface_vertices).clamp(256, 32_768)
}

/// The fast path's surface and trees, which the step refits and walks.
#[derive(Clone, Copy)]
pub struct AlSurfaceSource<'a> {
    /// The surface's tables.
    pub surface: GpuSurface,
    /// The triangle tree.
    pub tris: TreeLayout,
    /// The edge tree.
    pub edges: TreeLayout,
    /// Both trees' words.
    pub bvh: &'a wgpu::Buffer,
}

/// What the surface pairs are bound with besides their buffers.
pub struct AlSurfacePairsSetup<'a> {
    /// The trees and surface.
    pub source: AlSurfaceSource<'a>,
    /// Vertices, and vertex–obstacle slots per vertex (the table before the surface slots).
    pub vertices: usize,
    /// See `vertices`.
    pub obstacles: usize,
    /// Surface slots after the table ([`surface_slots`]).
    pub slots: usize,
    /// Where the pair records and the adjacency are in `element`.
    pub pairs: &'a AlPairLayout,
    /// Where the body records are in `records`, and `vertex_body` in `index`.
    pub bodies: u32,
    /// See `bodies`.
    pub vertex_body: u32,
}

/// The buffers the surface pairs bind (the step's).
pub struct AlSurfacePairsBuffers<'a> {
    /// The safe iterate `x` (vec4).
    pub safe: &'a wgpu::Buffer,
    /// The targets `x̂` (vec4).
    pub targets: &'a wgpu::Buffer,
    /// The substep's per-vertex steps (bound by the refit, unread by its `Between` boxes).
    pub steps: &'a wgpu::Buffer,
    /// The packed index.
    pub index: &'a wgpu::Buffer,
    /// The packed records.
    pub records: &'a wgpu::Buffer,
    /// `al_pcg`'s per-vertex bits.
    pub solved: &'a wgpu::Buffer,
    /// `al_step_size`'s times.
    pub times: &'a wgpu::Buffer,
    /// The element buffer (pair records and adjacency).
    pub element: &'a wgpu::Buffer,
    /// `al_outer`'s control words.
    pub outer: &'a wgpu::Buffer,
}

/// The surface pairs, bound.
pub struct AlSurfacePairs {
    args: Bound,
    refit: Vec<Bound>,
    run: AlSurfaceRun,
    merge: Bound,
}

impl AlSurfacePairs {
    /// Binds the refits, the CCD and the merge.
    pub fn bind(ctx: &GpuContext, s: &AlSurfacePairsSetup<'_>, b: &AlSurfacePairsBuffers<'_>) -> Self {
        let src = &s.source;
        let layout = CandidateLayout::new(s.slots as u32, s.slots as u32, s.vertices as u32);
        let candidates = control_words(ctx, "al surface candidates", layout.words as usize);
        let args = control_words(ctx, "al surface args", 3 * MAX_DISPATCHES);
        // The boxes grow as SweptPairs::visit's queries.
        let inflate = MIN_SEPARATION as f32 + 1e-5;
        let refit_kernel = BvhRefit::new(ctx);
        let rb = BvhRefitBuffers {
            positions: b.safe,
            steps: b.steps,
            index: b.index,
            records: b.records,
            bvh: src.bvh,
            ends: Some(b.targets),
        };
        let refit: Vec<Bound> = [&src.tris, &src.edges]
            .into_iter()
            .flat_map(|t| refit_kernel.bind(ctx, t, &src.surface, RefitBoxes::Between { inflate }, &rb))
            .collect();
        let run = AlSurface::new(ctx).bind(
            ctx,
            &AlSurfaceSetup {
                surface: &src.surface,
                tris: &src.tris,
                edges: &src.edges,
                layout: &layout,
                min_separation: MIN_SEPARATION as f32,
                inflate,
            },
            &AlSurfaceBuffers {
                safe: b.safe,
                targets: b.targets,
                index: b.index,
                records: b.records,
                bvh: src.bvh,
                solved: b.solved,
                times: b.times,
                candidates: &candidates,
            },
        );
        let gated: Vec<&Bound> = refit.iter().chain(&run.hits).chain(&run.add).collect();
        let groups: Vec<u32> = gated.iter().map(|g| g.workgroups()).collect();
        let [args_phase, merge] = AlSurfaceSet::new(ctx).bind(
            ctx,
            &AlSurfaceSetSetup {
                vertices: s.vertices,
                obstacles: s.obstacles,
                candidates: &layout,
                pairs: s.pairs,
                bodies: s.bodies,
                vertex_body: s.vertex_body,
                groups: &groups,
            },
            &AlSurfaceSetBuffers {
                safe: b.safe,
                element: b.element,
                candidates: &candidates,
                records: b.records,
                index: b.index,
                outer: b.outer,
                args: &args,
            },
        );
        let at = |k: usize| 12 * k as u64;
        let refit_count = refit.len();
        let refit = refit.into_iter().enumerate().map(|(k, r)| r.indirect(&args, at(k))).collect();
        let [points, edges] = run.hits;
        let [add_points, add_edges] = run.add;
        let run = AlSurfaceRun {
            hits: [points.indirect(&args, at(refit_count)), edges.indirect(&args, at(refit_count + 1))],
            add: [add_points.indirect(&args, at(refit_count + 2)), add_edges.indirect(&args, at(refit_count + 3))],
        };
        Self { args: args_phase, refit, run, merge: merge.indirect(b.outer, ONE_ARGS) }
    }

    /// Records the surface half of a step-size search's times of impact (after `al_step_size`'s
    /// reset, before its add phase).
    pub fn record_hits(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.args.record(pass);
        self.refit.iter().for_each(|b| b.record(pass));
        self.run.hits.iter().for_each(|b| b.record(pass));
    }

    /// Records the candidates and their merge into the set (after every hit is in).
    pub fn record_add(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.run.add.iter().for_each(|b| b.record(pass));
        self.merge.record(pass);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use glam::{DVec3, Vec4};

    use super::*;
    use crate::collision::swept::SweptPairs;
    use crate::gpu::al::al_elements::AlElementLayout;
    use crate::gpu::al::al_outer;
    use crate::gpu::al::al_pcg::{
        AlPair, PAIR_ABSENT, VERTEX_MOVES, VERTEX_SOLVED, element_words, obstacle_table_adjacency, pair_adjacency,
    };
    use crate::gpu::al::al_step_size::NO_HIT;
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::contact::bvh_build::{BvhBuild, BvhBuildBuffers};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::pack::{pack_index, pack_records};
    use crate::gpu::test_support;
    use crate::gpu::vbd::vbd_inertia::GpuVertexStep;
    use crate::prelude::*;
    use crate::solver::al::constraints::earliest_hits;
    use crate::solver::al::step_size::{StepLimits, max_step};
    use crate::state::SimState;
    use crate::test_rng::Rng;

    /// Two 10 cm soft boxes, the upper 1 cm above the lower, and targets that move the upper
    /// one 3 cm down (through the gap) with every vertex jittered by up to 1 mm.
    fn scene() -> (SimState, Vec<Vec4>) {
        let mut world = World::new(StepConfig::default()).expect("world");
        for (k, y) in [0.05f32, 0.16].into_iter().enumerate() {
            let mesh = TetMesh::box_mesh(Vec3::splat(0.1), [3, 3, 3], TetSplit::Six).expect("mesh");
            let body = SoftBodyBuilder::tetrahedral(mesh)
                .translation(Vec3::new(0.01 * k as f32, y, 0.0))
                .build()
                .expect("body");
            world.bodies.insert(body);
        }
        world.sync();
        let st = world.state().clone();
        let mut rng = Rng(3);
        let upper = st.vertex_body.iter().map(|&b| b == 1);
        let targets = st
            .positions
            .iter()
            .zip(upper)
            .map(|(p, up)| {
                let down = if up { Vec4::new(0.0, -0.03, 0.0, 0.0) } else { Vec4::ZERO };
                *p + down + (rng.vec() * 0.001).as_vec3().extend(0.0)
            })
            .collect();
        (st, targets)
    }

    /// The GPU's α, its pair records and its `element` words after `passes` step-size searches
    /// (each: refit, hits, candidates, merge) from `st`'s positions towards `targets`.
    fn run(st: &SimState, targets: &[Vec4], passes: usize) -> Option<(f32, Vec<AlPair>, Vec<u32>, AlPairLayout)> {
        let ctx = test_support::context()?;
        let n = st.vertex_count();
        let (index, l) = pack_index(st);
        let (records, r) = pack_records(st);
        let model = crate::collision::ContactModel {
            stiffness: crate::collision::ContactStiffness::PerMass(1e5),
            offset: 1e-3,
            static_slip: 1e-6,
            stiffening: false,
        };
        let surface = GpuSurface::new(st, &l, r.bodies, &model, &Default::default());
        let ([tris, edges], end) = TreeLayout::surface(st, &l);
        let slots = surface_slots(st.surface_vertices.len());
        let pairs = AlPairLayout::new(&AlElementLayout::new(0, 0, 0), slots, n);
        let words = element_words(&pairs, &vec![AlPair::ABSENT; slots], &obstacle_table_adjacency(n, 0));
        let safe = storage(&ctx, "safe", &st.positions, false);
        let targets = storage(&ctx, "targets", targets, false);
        let steps = storage(&ctx, "steps", &vec![GpuVertexStep::default(); n], false);
        let index = storage(&ctx, "index", &index, false);
        let records = storage(&ctx, "records", &records, false);
        let bvh = output::<u32>(&ctx, "bvh", end as usize);
        let solved = storage(&ctx, "solved", &vec![VERTEX_SOLVED | VERTEX_MOVES; n], false);
        let mut time_words = vec![NO_HIT; 1 + n];
        time_words[0] = 1f32.to_bits();
        let times = storage(&ctx, "times", &time_words, true);
        let element = storage(&ctx, "element", &words, true);
        // al_outer's control with its one-workgroup arguments on: the step runs.
        let mut control = [0u32; al_outer::CONTROL_WORDS];
        let one = al_outer::ONE_ARGS as usize / 4;
        control[one..one + 3].copy_from_slice(&[1, 1, 1]);
        let outer = control_words(&ctx, "outer", control.len());
        ctx.queue.write_buffer(&outer, 0, bytemuck::cast_slice(&control));
        let source = AlSurfaceSource { surface, tris, edges, bvh: &bvh };
        let program = AlSurfacePairs::bind(
            &ctx,
            &AlSurfacePairsSetup {
                source,
                vertices: n,
                obstacles: 0,
                slots,
                pairs: &pairs,
                bodies: r.bodies,
                vertex_body: l.vertex_body,
            },
            &AlSurfacePairsBuffers {
                safe: &safe,
                targets: &targets,
                steps: &steps,
                index: &index,
                records: &records,
                solved: &solved,
                times: &times,
                element: &element,
                outer: &outer,
            },
        );
        let build = BvhBuild::new(&ctx);
        let bb = BvhBuildBuffers { positions: &safe, index: &index, bvh: &bvh };
        let trees: Vec<_> = [&tris, &edges].into_iter().flat_map(|t| build.bind(&ctx, t, &bb)).collect();
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        record_pass(&mut encoder, "trees", &trees);
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            for _ in 0..passes {
                program.record_hits(&mut pass);
                program.record_add(&mut pass);
            }
        }
        ctx.queue.submit([encoder.finish()]);
        let alpha = f32::from_bits(read_blocking::<u32>(&ctx, &times, 1).expect("times")[0]);
        let words: Vec<u32> = read_blocking(&ctx, &element, pairs.words as usize).expect("element");
        let set: &[AlPair] = bytemuck::cast_slice(&words[pairs.pairs as usize..pairs.offsets as usize]);
        Some((alpha, set.to_vec(), words, pairs))
    }

    /// The surface half of the step size against the CPU's `max_step` and `earliest_hits`
    /// (f64): α agrees, every pair the GPU adds is one the CPU's CCD hit, and the two sets
    /// nearly agree (f32 and f64 marches can order near-equal hits of a vertex differently).
    /// The merge is independent of the order the candidates were appended in (two runs give the
    /// same words), adds no pair twice (a second search over the same motion changes nothing),
    /// and leaves the adjacency the host would build for the records.
    #[test]
    fn surface_hits_join_the_set_as_on_the_cpu() {
        let (st, targets) = scene();
        let Some((alpha, set, words, layout)) = run(&st, &targets, 1) else { return };
        let n = st.vertex_count();
        let x: Vec<DVec3> = st.positions.iter().map(|p| p.truncate().as_dvec3()).collect();
        let xh: Vec<DVec3> = targets.iter().map(|p| p.truncate().as_dvec3()).collect();
        let all = vec![true; n];
        let lim = StepLimits {
            st: &st,
            obstacles: &[],
            moves: &all,
            solved: &all,
            surface_pairs: true,
            obstacle_edges: true,
            tets: &[],
            j_min: 0.0,
        };
        let mut hits = Vec::new();
        let cpu_alpha = max_step(&lim, &x, &xh, &mut SweptPairs::default(), &mut hits);
        assert!(cpu_alpha < 0.6, "the scene's motion must cross the gap: α = {cpu_alpha}");
        assert!((alpha as f64 - cpu_alpha).abs() < 0.01, "α: GPU {alpha}, CPU {cpu_alpha}");
        let hit: BTreeSet<(u32, [u32; 4])> = hits.iter().map(|(k, _)| (k.kind, k.vertices)).collect();
        let cpu: BTreeSet<(u32, [u32; 4])> =
            earliest_hits(&hits, n, &mut Vec::new()).iter().map(|k| (k.kind, k.vertices)).collect();
        let gpu: BTreeSet<(u32, [u32; 4])> =
            set.iter().filter(|p| p.kind != PAIR_ABSENT).map(|p| (p.kind, p.vertices)).collect();
        assert!(!gpu.is_empty());
        assert!(gpu.is_subset(&hit), "pairs the CPU's CCD did not hit: {:?}", gpu.difference(&hit).collect::<Vec<_>>());
        let differ = gpu.symmetric_difference(&cpu).count();
        assert!(differ * 10 <= cpu.len(), "{differ} of {} pairs differ", cpu.len());
        // Each pair is measured at the safe iterate, with λ = 0 and γ = 1.
        for p in set.iter().filter(|p| p.kind != PAIR_ABSENT) {
            assert!(p.distance > 0.0 && p.gamma == 1.0 && p.lambda == 0.0, "{p:?}");
            assert_eq!(p.base[0], st.positions[p.vertices[0] as usize].truncate().to_array());
        }
        // The adjacency is the host's for these records.
        let (offsets, entries) = pair_adjacency(&set, n);
        let o = layout.offsets as usize;
        assert_eq!(&words[o..o + n + 1], &offsets[..]);
        let e = layout.entries as usize;
        assert_eq!(&words[e..e + entries.len()], &entries[..]);
        // Deterministic, and no pair twice.
        let (_, _, again, _) = run(&st, &targets, 1).expect("second run");
        assert!(again == words, "two runs merged differently");
        let (_, _, twice, _) = run(&st, &targets, 2).expect("two searches");
        assert!(twice == words, "a second search over the same motion changed the set");
    }
}
