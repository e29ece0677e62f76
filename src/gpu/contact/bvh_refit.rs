//! Host side of `shaders/contact/bvh_refit.wgsl`: the boxes of a BVH built by
//! [`crate::gpu::contact::bvh_build`] refitted to the current positions, grown by each primitive's search
//! radius (detection), swept from `x^n` and grown by ξ (the CCD advance), or swept between two
//! sets of positions (the fallback's step size).

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::contact::bvh_build::TreeLayout;
use crate::gpu::contact::surface::GpuSurface;
use crate::gpu::kernel::{Bound, ComputeKernel};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("contact/bvh_refit", "step", "bvh", "surface");

/// What a refit's leaf boxes hold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RefitBoxes {
    /// The primitive at the positions, grown by the search radius of its first vertex.
    SearchRadius,
    /// The primitive swept from `x^n` (the steps' start) to the positions, grown by `inflate`
    /// \[m\].
    Swept {
        /// Growth \[m\] (the CCD's minimum separation).
        inflate: f32,
    },
    /// The primitive swept from the positions to [`BvhRefitBuffers::ends`], grown by `inflate`
    /// \[m\] (the fallback's step size: from its safe iterate towards its targets).
    Between {
        /// Growth \[m\].
        inflate: f32,
    },
}

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    tree: TreeLayout,
    surface: GpuSurface,
    phase: u32,
    count: u32,
    mode: u32,
    inflate: f32,
}

/// What the kernel reads and writes.
pub struct BvhRefitBuffers<'a> {
    /// Positions (vec4).
    pub positions: &'a wgpu::Buffer,
    /// Per-vertex [`crate::gpu::vbd::vbd_inertia::GpuVertexStep`] (`x^n` for swept boxes).
    pub steps: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`].
    pub index: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_records`] (the bodies' surface edge lengths).
    pub records: &'a wgpu::Buffer,
    /// The trees' words.
    pub bvh: &'a wgpu::Buffer,
    /// The far ends of [`RefitBoxes::Between`]'s sweeps (vec4); unread otherwise.
    pub ends: Option<&'a wgpu::Buffer>,
}

/// The compiled kernel.
pub struct BvhRefit {
    kernel: ComputeKernel,
}

impl BvhRefit {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "bvh_refit", SHADER) }
    }

    /// The two dispatches of a refit of `tree` (none for an empty tree).
    pub fn bind(
        &self,
        ctx: &GpuContext,
        tree: &TreeLayout,
        surface: &GpuSurface,
        boxes: RefitBoxes,
        b: &BvhRefitBuffers<'_>,
    ) -> Vec<Bound> {
        if tree.count == 0 {
            return Vec::new();
        }
        let (mode, inflate) = match boxes {
            RefitBoxes::SearchRadius => (0, 0.0),
            RefitBoxes::Swept { inflate } => (1, inflate),
            RefitBoxes::Between { inflate } => (2, inflate),
        };
        let ends = b.ends.unwrap_or(b.positions);
        let buffers = [b.positions, b.steps, b.index, b.records, b.bvh, ends];
        [(0, tree.count - 1), (1, tree.count)]
            .into_iter()
            .filter(|&(_, count)| count > 0)
            .map(|(phase, count)| {
                let params = Params { tree: *tree, surface: *surface, phase, count, mode, inflate };
                self.kernel.bind_pod(ctx, &params, &buffers, count)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use glam::{Vec3A, Vec4};

    use super::*;
    use crate::collision::bvh::Aabb;
    use crate::collision::surface_pairs::primitive_box;
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::contact::bvh_build::{BvhBuild, BvhBuildBuffers, TreeSnapshot};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::pack::{pack_index, pack_records};
    use crate::gpu::test_support;
    use crate::gpu::vbd::vbd_inertia::GpuVertexStep;
    use crate::prelude::*;
    use crate::state::SimState;
    use crate::test_rng::Rng;

    /// A world of three overlapping, jittered soft boxes: thousands of surface triangles and
    /// edges with repeated centroids along the faces.
    fn scene() -> SimState {
        let mut world = World::new(StepConfig::default()).expect("world");
        for k in 0..3 {
            let mesh =
                TetMesh::box_mesh(Vec3::splat(0.2 + 0.05 * k as f32), [6, 5 + k, 7], TetSplit::Six).expect("mesh");
            let body = SoftBodyBuilder::tetrahedral(mesh)
                .translation(Vec3::new(0.07 * k as f32, 0.3 + 0.05 * k as f32, -0.03 * k as f32))
                .build()
                .expect("body");
            world.bodies.insert(body);
        }
        world.sync();
        let mut st = world.state().clone();
        let mut rng = Rng(5);
        for p in &mut st.positions {
            *p += (rng.vec() * 0.004).as_vec3().extend(0.0);
        }
        st
    }

    /// Builds and refits both trees on the GPU; checks the structure, that every box holds its
    /// children, that leaf boxes are the primitives' boxes, and that box queries walked on the
    /// tree find exactly what a brute-force scan finds.
    #[test]
    fn built_and_refitted_trees_answer_box_queries_exactly() {
        let Some(ctx) = test_support::context() else { return };
        let st = scene();
        let (index, l) = pack_index(&st);
        let (records, r) = pack_records(&st);
        let bodies = r.bodies;
        let model = crate::collision::ContactModel {
            stiffness: crate::collision::ContactStiffness::PerMass(1e5),
            offset: 1e-3,
            static_slip: 1e-6,
            stiffening: false,
        };
        let surface = GpuSurface::new(&st, &l, bodies, &model, &Default::default());
        let ([tris, edges], end) = TreeLayout::surface(&st, &l);
        // The steps' start x^n is offset from the positions, so swept boxes differ.
        let mut rng = Rng(9);
        let steps: Vec<GpuVertexStep> = st
            .positions
            .iter()
            .map(|&p| GpuVertexStep {
                start: (p + (rng.vec() * 0.02).as_vec3().extend(0.0)).to_array(),
                ..Default::default()
            })
            .collect();
        let starts: Vec<Vec4> = steps.iter().map(|s| Vec4::from_array(s.start)).collect();
        let positions = storage(&ctx, "positions", &st.positions, false);
        let steps_buf = storage(&ctx, "steps", &steps, false);
        let index_buf = storage(&ctx, "index", &index, false);
        let records_buf = storage(&ctx, "records", &records, false);
        let bvh = output::<u32>(&ctx, "bvh", end as usize);
        let build = BvhBuild::new(&ctx);
        let refit = BvhRefit::new(&ctx);
        let bb = BvhBuildBuffers { positions: &positions, index: &index_buf, bvh: &bvh };
        // The fallback's boxes sweep from the positions to the same starts, held as vec4s.
        let ends = storage(&ctx, "ends", &starts, false);
        for (mode, boxes) in [
            ("radius", RefitBoxes::SearchRadius),
            ("swept", RefitBoxes::Swept { inflate: 1e-5 }),
            ("between", RefitBoxes::Between { inflate: 1e-5 }),
        ] {
            let rb = BvhRefitBuffers {
                ends: matches!(boxes, RefitBoxes::Between { .. }).then_some(&ends),
                positions: &positions,
                steps: &steps_buf,
                index: &index_buf,
                records: &records_buf,
                bvh: &bvh,
            };
            let mut bound = Vec::new();
            for t in [&tris, &edges] {
                bound.extend(build.bind(&ctx, t, &bb));
                bound.extend(refit.bind(&ctx, t, &surface, boxes, &rb));
            }
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            record_pass(&mut encoder, "bvh", &bound);
            ctx.queue.submit([encoder.finish()]);
            let words: Vec<u32> = read_blocking(&ctx, &bvh, end as usize).expect("bvh");
            for (t, prims) in [(&tris, st.surface_triangles.len()), (&edges, st.surface_edges.len())] {
                let tree = TreeSnapshot::read(t, &words);
                let primitive = |p: u32| -> Aabb {
                    let r = if let RefitBoxes::Swept { inflate } | RefitBoxes::Between { inflate } = boxes {
                        inflate
                    } else {
                        let first = if t.arity == 3 {
                            st.surface_triangles[p as usize][0]
                        } else {
                            st.surface_edges[p as usize][0]
                        };
                        crate::collision::surface_pairs::search_radius(
                            &st,
                            st.vertex_body[first as usize],
                            model.offset,
                        )
                    };
                    let start = (boxes != RefitBoxes::SearchRadius).then_some(&starts[..]);
                    if t.arity == 3 {
                        primitive_box(&st.positions, start, st.surface_triangles[p as usize], r)
                    } else {
                        primitive_box(&st.positions, start, st.surface_edges[p as usize], r)
                    }
                };
                // Sorted keys, each primitive once.
                assert!(tree.keys.windows(2).all(|w| w[0] < w[1]), "{mode}: keys not sorted");
                let mut seen = vec![0u32; prims];
                let mut stack = vec![0u32];
                while let Some(k) = stack.pop() {
                    let [a, b] = tree.children[k as usize];
                    let (lo, hi) = tree.boxes[k as usize];
                    if b == u32::MAX {
                        seen[a as usize] += 1;
                        let e = primitive(a);
                        assert!((lo - e.min).abs().max_element() < 1e-6, "{mode}: leaf box of {a}");
                        assert!((hi - e.max).abs().max_element() < 1e-6, "{mode}: leaf box of {a}");
                        continue;
                    }
                    for c in [a, b] {
                        assert_eq!(tree.parents[c as usize], k);
                        let (clo, chi) = tree.boxes[c as usize];
                        assert!(lo.cmple(clo).all() && chi.cmple(hi).all(), "{mode}: node {k} does not hold {c}");
                        stack.push(c);
                    }
                }
                assert!(seen.iter().all(|&s| s == 1), "{mode}: every primitive in exactly one leaf");
                assert_eq!(tree.parents[0], u32::MAX);
                // Queries against brute force.
                let mut rng = Rng(21);
                let mut hits = 0;
                for _ in 0..300 {
                    let c = Vec3A::new(0.1, 0.4, 0.0) + (rng.vec() * 0.25).as_vec3a();
                    let q = Aabb::EMPTY.grow(c).inflate(0.02 * rng.uniform_f32());
                    let mut got = tree.query(q.min, q.max);
                    got.sort_unstable();
                    let want: Vec<u32> = (0..prims as u32).filter(|&p| primitive(p).overlaps(&q)).collect();
                    assert_eq!(got, want, "{mode}: query {q:?}");
                    hits += want.len();
                }
                assert!(hits > 300, "{mode}: queries found only {hits} primitives");
            }
        }
    }
}
