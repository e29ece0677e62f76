//! Host side of `shaders/vbd_color.wgsl`: one VBD colour pass over tet vertices (stable
//! neo-Hookean elasticity and inertia), positions updated in place.

use super::ComputeKernel;
use crate::gpu::GpuContext;
use crate::mesh::Csr;
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = include_str!("../../../shaders/vbd_color.wgsl");

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct Params {
    first: u32,
    count: u32,
    entries: u32,
    _pad: u32,
}

/// A vertex → (element, slot) adjacency in one buffer, as the kernel reads it: the `n + 1` row
/// offsets, then the entries (a WebGPU stage has only 8 storage buffers).
pub fn pack_adjacency(csr: &Csr) -> Vec<u32> {
    let mut packed = Vec::with_capacity(csr.offsets.len() + csr.entries.len());
    packed.extend_from_slice(&csr.offsets);
    packed.extend_from_slice(&csr.entries);
    packed
}

/// What the kernel reads and writes.
pub struct VbdColorBuffers<'a> {
    /// Positions (vec4), updated in place for the colour's vertices.
    pub positions: &'a wgpu::Buffer,
    /// `x^n` (vec4).
    pub start: &'a wgpu::Buffer,
    /// Per-vertex [`super::vbd_inertia::GpuVertexStep`].
    pub steps: &'a wgpu::Buffer,
    /// `SimState::color_vertices`.
    pub color_vertices: &'a wgpu::Buffer,
    /// [`pack_adjacency`] of `SimState::tet_adjacency`.
    pub adjacency: &'a wgpu::Buffer,
    /// `SimState::tets`.
    pub tets: &'a wgpu::Buffer,
    /// `SimState::materials`.
    pub materials: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct VbdColor {
    kernel: ComputeKernel,
}

impl VbdColor {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "vbd_color", SHADER) }
    }

    /// Records the pass over colour vertices `first..first + count` into `encoder`;
    /// `vertex_count` is the number of vertices (where the packed adjacency's entries start,
    /// minus one).
    pub fn encode(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        first: u32,
        count: u32,
        vertex_count: usize,
        b: &VbdColorBuffers<'_>,
    ) {
        let params = Params { first, count, entries: vertex_count as u32 + 1, _pad: 0 };
        let buffers = [b.positions, b.start, b.steps, b.color_vertices, b.adjacency, b.tets, b.materials];
        self.kernel.encode(ctx, encoder, bytemuck::bytes_of(&params), &buffers, count);
    }
}

#[cfg(test)]
mod tests {
    use glam::{Vec3, Vec3A, Vec4};

    use super::*;
    use crate::gpu::buffers::{read_blocking, storage};
    use crate::gpu::kernels::vbd_inertia::GpuVertexStep;
    use crate::gpu::test_support;
    use crate::material::{stable_neo_hookean, tet};
    use crate::math::solve_sym3;
    use crate::mesh::{TetMesh, TetSplit, unpack_entry};
    use crate::prelude::*;
    use crate::test_rng::Rng;

    /// One colour pass on a deformed box: GPU against the same update assembled from the CPU's
    /// material functions (inertia, stable neo-Hookean vertex terms, 3×3 solve).
    #[test]
    fn a_colour_pass_matches_the_cpu_update() {
        let Some(ctx) = test_support::context() else { return };
        let mut world = World::new(StepConfig::default()).expect("world");
        let mesh = TetMesh::box_mesh(Vec3::splat(0.2), [4, 4, 4], TetSplit::Six).expect("mesh");
        world.bodies.insert(
            SoftBodyBuilder::tetrahedral(mesh)
                .material(StableNeoHookean::from_young_poisson(1.0e5, 0.3))
                .density(1000.0)
                .build()
                .expect("body"),
        );
        world.step();
        let st = world.state();
        let n = st.vertex_count();
        let h = 1.0f32 / 60.0;
        let mut rng = Rng(5);
        let start: Vec<Vec4> = st.positions.clone();
        // A deformed iterate (±4 mm on 5 cm cells) and random inertia targets.
        let positions: Vec<Vec4> = start.iter().map(|&p| p + (rng.vec() * 0.004).as_vec3().extend(0.0)).collect();
        let steps: Vec<GpuVertexStep> = (0..n)
            .map(|v| GpuVertexStep {
                predictor: [0.0, 0.0, 0.0, h * h],
                inertia: (rng.vec() * 0.003).as_vec3().extend(st.masses[v] / (h * h)).to_array(),
                velocity: [0.0; 4],
                offset: [0.0; 4],
            })
            .collect();
        let bufs = [
            storage(&ctx, "positions", &positions, true),
            storage(&ctx, "start", &start, false),
            storage(&ctx, "steps", &steps, false),
            storage(&ctx, "color_vertices", &st.color_vertices, false),
            storage(&ctx, "adjacency", &pack_adjacency(&st.tet_adjacency), false),
            storage(&ctx, "tets", &st.tets, false),
            storage(&ctx, "materials", &st.materials, false),
        ];
        let b = VbdColorBuffers {
            positions: &bufs[0],
            start: &bufs[1],
            steps: &bufs[2],
            color_vertices: &bufs[3],
            adjacency: &bufs[4],
            tets: &bufs[5],
            materials: &bufs[6],
        };
        let kernel = VbdColor::new(&ctx);
        let (first, end) = (st.color_offsets[0], st.color_offsets[1]);
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        kernel.encode(&ctx, &mut encoder, first, end - first, n, &b);
        ctx.queue.submit([encoder.finish()]);
        let gpu: Vec<Vec4> = read_blocking(&ctx, &bufs[0], n).expect("positions");
        let colour: Vec<u32> = st.color_vertices[first as usize..end as usize].to_vec();
        let x = |i: u32| Vec3A::from_vec4(positions[i as usize]);
        let mut moved = 0;
        for v in 0..n as u32 {
            let expected = if colour.contains(&v) {
                let s = &steps[v as usize];
                let dx = x(v) - Vec3A::from_vec4(start[v as usize]);
                let inertia = Vec4::from_array(s.inertia);
                let mut f = (Vec3A::from_vec4(inertia) - dx) * inertia.w;
                let mut hm = glam::Mat3A::from_diagonal(Vec3::splat(inertia.w));
                for &entry in st.tet_adjacency.row(v as usize) {
                    let (e, slot) = unpack_entry(entry);
                    let t = &st.tets[e as usize];
                    let xs = t.vertices.map(x);
                    let fd = tet::deformation_gradient::<f32>(&xs, &t.dm_inv());
                    let g = tet::shape_gradient::<f32>(&t.dm_inv(), slot as usize);
                    let m = &st.materials[t.material as usize];
                    let (grad, hb, _) = stable_neo_hookean::vertex_terms::<f32>(&fd, None, g, t.volume, m.mu, m.lambda);
                    f -= grad;
                    hm += hb;
                }
                moved += 1;
                x(v) + solve_sym3::<f32>(&hm, f).expect("solvable")
            } else {
                x(v)
            };
            let got = Vec3A::from_vec4(gpu[v as usize]);
            let tolerance = 1e-5 * (expected - x(v)).length().max(1e-4) + 1e-7;
            assert!((got - expected).length() <= tolerance, "vertex {v}: GPU {got} vs CPU {expected}");
        }
        assert!(moved > 10, "colour 0 has {moved} vertices");
    }
}
