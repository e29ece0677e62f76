//! Host side of `shaders/check/step_energy.wgsl`: per body, the energies of a GPU substep's start and
//! end and the height it spans, for the safety check's energy test (applied per island by
//! `step_soft`; the CPU's is in `runtime/fallback/check.rs`).

use crate::collision::ContactModel;
use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use crate::gpu::obstacles::GpuObstacleSet;
use crate::gpu::pack::{IndexLayout, RecordLayout, chunks};
use bytemuck::{Pod, Zeroable};
use glam::Vec3A;

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!(
    "check/step_energy",
    "step",
    "obstacles",
    "elements",
    "element_energy",
    "energy_layout",
    "layer"
);

/// u32 words per body at the start of the `energy` buffer (then one per element, then the
/// chunks' partial sums).
pub const ENERGY_WORDS: usize = 8;
/// Vertices per workgroup in a body's sums: larger bodies are summed in chunks of this many
/// (one workgroup each), then the chunks' partials are added.
pub const CHUNK_VERTICES: u32 = 1024;
/// The word of a body's block the host sets to 1 when a pin of the body moved in the frame
/// (work the test cannot account for: the body's island is not tested).
pub const DRIVEN: usize = 6;

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    phase: u32,
    count: u32,
    bodies: u32,
    body_records: u32,
    tris: u32,
    hinges: u32,
    tet_count: u32,
    tri_count: u32,
    tet_offsets: u32,
    tet_entries: u32,
    tri_offsets: u32,
    tri_entries: u32,
    hinge_offsets: u32,
    hinge_entries: u32,
    contact_flags: u32,
    chunk: u32,
    gravity: [f32; 4],
    stiffness: f32,
    offset: f32,
    chunks: u32,
    partials: u32,
    obstacles: GpuObstacleSet,
}

/// What the kernel reads and writes.
pub struct StepEnergyBuffers<'a> {
    /// Positions (vec4).
    pub positions: &'a wgpu::Buffer,
    /// Velocities (vec4).
    pub velocities: &'a wgpu::Buffer,
    /// Vertex masses (f32).
    pub masses: &'a wgpu::Buffer,
    /// `SimState::tets`.
    pub tets: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_records`].
    pub records: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`].
    pub index: &'a wgpu::Buffer,
    /// [`energy_words`] u32: [`ENERGY_WORDS`] per body, then one per element, then the chunks'
    /// partial sums.
    pub energy: &'a wgpu::Buffer,
}

/// The state's tables and the step's constants.
#[derive(Clone, Copy, Debug)]
pub struct StepEnergySetup<'a> {
    /// Bodies in the state.
    pub bodies: u32,
    /// Tets, membrane triangles and hinges in the state.
    pub elements: [u32; 3],
    /// Vertices of the largest body.
    pub largest_body: u32,
    /// Vertices per chunk of a body's sums ([`CHUNK_VERTICES`]).
    pub chunk: u32,
    /// Where the tables sit in `index` and `records`.
    pub layout: &'a IndexLayout,
    /// See `layout`.
    pub records: &'a RecordLayout,
    /// Gravity \[m/s²\].
    pub gravity: Vec3A,
    /// Substep length \[s\].
    pub h: f32,
    /// Obstacle contact's constants.
    pub contact: &'a ContactModel,
    /// The obstacles.
    pub obstacles: &'a GpuObstacleSet,
}

/// The compiled kernel.
pub struct StepEnergy {
    kernel: ComputeKernel,
}

/// Words of the `energy` buffer for `bodies` bodies, `elements` elements and a largest body of
/// `largest` vertices summed in chunks of `chunk`.
pub fn energy_words(bodies: usize, elements: usize, largest: u32, chunk: u32) -> usize {
    let chunks = chunks(largest, chunk) as usize;
    ENERGY_WORDS * bodies + elements + if chunks > 1 { 4 * bodies * chunks } else { 0 }
}

impl StepEnergy {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "step_energy", SHADER) }
    }

    /// The dispatches at the substep's start and those after `vbd_finish`.
    pub fn bind(&self, ctx: &GpuContext, s: &StepEnergySetup<'_>, b: &StepEnergyBuffers<'_>) -> [Vec<Bound>; 2] {
        let (contact_flags, stiffness) = s.contact.gpu_flags();
        let [tets, tris, hinges] = s.elements;
        let elements = tets + tris + hinges;
        let l = s.layout;
        let chunks = chunks(s.largest_body, s.chunk);
        let params = |phase: u32, count: u32| Params {
            phase,
            count,
            bodies: s.bodies,
            body_records: s.records.bodies,
            tris: s.records.tris,
            hinges: s.records.hinges,
            tet_count: tets,
            tri_count: tris,
            tet_offsets: l.tet_offsets,
            tet_entries: l.tet_entries,
            tri_offsets: l.tri_offsets,
            tri_entries: l.tri_entries,
            hinge_offsets: l.hinge_offsets,
            hinge_entries: l.hinge_entries,
            contact_flags,
            chunk: s.chunk,
            gravity: [s.gravity.x, s.gravity.y, s.gravity.z, s.h],
            stiffness,
            offset: s.contact.offset,
            chunks,
            partials: ENERGY_WORDS as u32 * s.bodies + elements,
            obstacles: *s.obstacles,
        };
        let buffers = [b.positions, b.velocities, b.masses, b.tets, b.records, b.index, b.energy];
        let per_body = s.bodies * WORKGROUP;
        [(0, 1, 4), (2, 3, 5)].map(|(elements_phase, body_phase, combine_phase)| {
            let mut out = Vec::new();
            if elements > 0 {
                out.push(self.kernel.bind_pod(ctx, &params(elements_phase, elements), &buffers, elements));
            }
            // A grid of chunks × bodies, then (with more than one chunk) the bodies' totals.
            out.push(self.kernel.bind_pod(ctx, &params(body_phase, s.bodies), &buffers, 0).grid(chunks, s.bodies));
            if chunks > 1 {
                out.push(self.kernel.bind_pod(ctx, &params(combine_phase, s.bodies), &buffers, per_body));
            }
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use glam::{Vec3, Vec4};

    use super::*;
    use crate::collision::{ContactStiffness, Obstacle};
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::pack::{pack_index, pack_records};
    use crate::gpu::test_support;
    use crate::prelude::*;
    use crate::solver::check::energy::body_energies;
    use crate::state::SimState;
    use crate::test_rng::Rng;

    /// A stable neo-Hookean cube, a StVK cube and a bending cloth, deformed and moving at
    /// random, two of them pressed into the ground's contact layer: each body's energies at
    /// the start and at the end, as the CPU's check sums them, and the height spanned: with one
    /// workgroup per body, and with the bodies cut into chunks.
    #[test]
    fn sums_each_bodys_energies_as_the_cpu_does() {
        let Some(ctx) = test_support::context() else { return };
        let mut w = World::new(StepConfig::default()).expect("world");
        let mesh = TetMesh::box_mesh(Vec3::splat(0.1), [5, 5, 5], TetSplit::Six).expect("mesh");
        let snh = crate::material::StableNeoHookean::from_young_poisson(1e5, 0.3);
        w.bodies.insert(
            SoftBodyBuilder::tetrahedral(mesh.clone()).material(snh).translation(Vec3::Y * 0.05).build().expect("a"),
        );
        let stvk = crate::material::StVK::from_young_poisson(3e5, 0.4);
        w.bodies.insert(
            SoftBodyBuilder::tetrahedral(mesh).material(stvk).translation(Vec3::new(0.3, 0.3, 0.0)).build().expect("b"),
        );
        let grid = TriMesh::cloth_grid(glam::Vec2::splat(0.3), [6, 6]).expect("grid");
        let cloth = ClothMaterial::new(1e6, 0.3, 5e-4).with_bending_stiffness(1e-3);
        w.bodies.insert(
            ClothBuilder::new(grid).material(cloth).translation(Vec3::new(-0.4, 0.0005, 0.0)).build().expect("c"),
        );
        w.sync();
        let mut st = w.state().clone();
        let mut rng = Rng(3);
        for (x, v) in st.positions.iter_mut().zip(st.velocities.iter_mut()) {
            *x += (rng.vec() * 0.01).as_vec3().extend(0.0);
            *v = (rng.vec() * 2.0).as_vec3().extend(0.0);
        }
        assert!([st.tets.len(), st.tris.len(), st.hinges.len()].iter().all(|&n| n > 0));
        let largest = crate::gpu::pack::largest_body(&st);
        // One workgroup per body, and chunks of 64 vertices (the cubes take several).
        for chunk in [CHUNK_VERTICES, 64] {
            assert!(chunk >= largest || largest > 2 * chunk, "{largest} vertices in chunks of {chunk}");
            check_energies(&ctx, &st, chunk, largest, &mut rng);
        }
    }

    fn check_energies(ctx: &GpuContext, st: &SimState, chunk: u32, largest: u32, rng: &mut Rng) {
        let obstacles = [Obstacle::ground(0.0, 0.5)];
        let contact = ContactModel {
            stiffness: ContactStiffness::PerMass(5e4),
            offset: 2e-3,
            static_slip: 1e-5,
            stiffening: false,
        };
        let gravity = Vec3A::new(0.0, -9.81, 0.0);
        let h = 1.0 / 60.0;
        let (index, layout) = pack_index(st);
        let (records, record_layout) = pack_records(st);
        let bodies = st.bodies.len();
        let elements = [st.tets.len(), st.tris.len(), st.hinges.len()];
        let words = energy_words(bodies, elements.iter().sum(), largest, chunk);
        let start = st.positions.clone();
        // The end: every vertex moved again.
        let end: Vec<Vec4> = start.iter().map(|x| *x + (rng.vec() * 0.005).as_vec3().extend(0.0)).collect();
        let bufs = [
            storage(ctx, "positions", &start, true),
            storage(ctx, "velocities", &st.velocities, true),
            storage(ctx, "masses", &st.masses, false),
            storage(ctx, "tets", &st.tets, false),
            storage(ctx, "records", &records, false),
            storage(ctx, "index", &index, false),
            output::<u32>(ctx, "energy", words),
        ];
        let b = StepEnergyBuffers {
            positions: &bufs[0],
            velocities: &bufs[1],
            masses: &bufs[2],
            tets: &bufs[3],
            records: &bufs[4],
            index: &bufs[5],
            energy: &bufs[6],
        };
        let packed = GpuObstacleSet::pack(&obstacles).expect("obstacles");
        let setup = StepEnergySetup {
            bodies: bodies as u32,
            elements: elements.map(|n| n as u32),
            largest_body: largest,
            chunk,
            layout: &layout,
            records: &record_layout,
            gravity,
            h,
            contact: &contact,
            obstacles: &packed,
        };
        let kernel = StepEnergy::new(ctx);
        let [before, after] = kernel.bind(ctx, &setup, &b);
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        record_pass(&mut encoder, "step_energy before", &before);
        ctx.queue.submit([encoder.finish()]);
        ctx.queue.write_buffer(&bufs[0], 0, bytemuck::cast_slice(&end));
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        record_pass(&mut encoder, "step_energy after", &after);
        ctx.queue.submit([encoder.finish()]);
        let got: Vec<u32> = read_blocking(ctx, &bufs[6], words).expect("energy");
        let word = |b: usize, k: usize| f32::from_bits(got[ENERGY_WORDS * b + k]) as f64;
        let (mut e0, mut e1) = (Vec::new(), Vec::new());
        body_energies(st, (&start, &st.velocities), gravity, &obstacles, &contact, &mut e0);
        body_energies(st, (&end, &st.velocities), gravity, &obstacles, &contact, &mut e1);
        let close = |a: f64, b: f64, what: &str| {
            assert!((a - b).abs() <= 1e-4 * b.abs().max(1e-3), "{what}: GPU {a}, CPU {b}");
        };
        for b in 0..bodies {
            close(word(b, 0), e0[b].0, &format!("body {b} kinetic + elastic at the start"));
            close(word(b, 1), e0[b].1, &format!("body {b} gravitational + contact at the start"));
            close(word(b, 2), e1[b].0, &format!("body {b} kinetic + elastic at the end"));
            close(word(b, 3), e1[b].1, &format!("body {b} gravitational + contact at the end"));
            let range =
                st.bodies[b].vertex_start as usize..(st.bodies[b].vertex_start + st.bodies[b].vertex_count) as usize;
            let ys = range.flat_map(|i| [start[i].y, end[i].y, start[i].y + h * st.velocities[i].y]);
            let (lo, hi) = ys.fold((f32::INFINITY, f32::NEG_INFINITY), |(l, u), y| (l.min(y), u.max(y)));
            assert_eq!((word(b, 4) as f32, word(b, 5) as f32), (lo, hi), "body {b}: height spanned");
        }
        // The cubes' elastic energy and the ground layer make a real part of the sums.
        assert!(e0[2].1 > 0.0 && e0[0].0 > 0.1, "{e0:?}");
    }
}
