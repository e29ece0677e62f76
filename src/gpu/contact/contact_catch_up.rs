//! Host side of `shaders/contact/contact_catch_up.wgsl`: kinematic vertices move towards their targets
//! as far as their contact bounds allow, after each detection.

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::contact::layout::ContactLayout;
use crate::gpu::kernel::{Bound, ComputeKernel};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!(
    "contact/contact_catch_up",
    "step",
    "distance",
    "mat3",
    "friction",
    "contact_layout",
    "contact"
);

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    contact: ContactLayout,
    count: u32,
    min_separation: f32,
    _pad: [u32; 2],
}

/// What the kernel reads and writes.
pub struct ContactCatchUpBuffers<'a> {
    /// Positions (vec4).
    pub positions: &'a wgpu::Buffer,
    /// Vertex flags (u32).
    pub flags: &'a wgpu::Buffer,
    /// End-of-substep targets of kinematic vertices (vec4).
    pub targets: &'a wgpu::Buffer,
    /// The `control` words.
    pub control: &'a wgpu::Buffer,
    /// The `contacts` words.
    pub contacts: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct ContactCatchUp {
    kernel: ComputeKernel,
}

impl ContactCatchUp {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "contact_catch_up", SHADER) }
    }

    /// The dispatch over every vertex; `min_separation` is ξ \[m\].
    pub fn bind(
        &self,
        ctx: &GpuContext,
        layout: &ContactLayout,
        min_separation: f32,
        b: &ContactCatchUpBuffers<'_>,
    ) -> Bound {
        let params = Params { contact: *layout, count: layout.vertices, min_separation, _pad: [0; 2] };
        let buffers = [b.positions, b.flags, b.targets, b.control, b.contacts];
        self.kernel.bind_pod(ctx, &params, &buffers, layout.vertices)
    }
}

#[cfg(test)]
mod tests {
    use glam::{Vec3A, Vec4};

    use super::*;
    use crate::collision::{ContactModel, ContactStiffness};
    use crate::gpu::buffers::{read_blocking, storage};
    use crate::gpu::contact::layout::{CONTROL_BOUND_HIT, control_words};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::test_support;
    use crate::prelude::*;
    use crate::solver::SurfaceContactSettings;
    use crate::solver::vbd::bounds::limit_move;
    use crate::solver::vbd::contact::detect_once;
    use crate::state::VERTEX_KINEMATIC;
    use crate::test_rng::Rng;

    /// A box's top face pinned and driven 2 cm up into the box 3 mm above it, with random
    /// sideways motion: each pin moves as far as its bounds allow, as the CPU's catch-up moves
    /// it, and free vertices stay.
    #[test]
    fn pins_stop_at_their_bounds_as_on_the_cpu() {
        let Some(ctx) = test_support::context() else { return };
        let mut world = World::new(StepConfig::default()).expect("world");
        for y in [0.1f32, 0.303] {
            let mesh = TetMesh::box_mesh(Vec3::splat(0.2), [4, 4, 4], TetSplit::Six).expect("mesh");
            world
                .bodies
                .insert(SoftBodyBuilder::tetrahedral(mesh).translation(Vec3::new(0.0, y, 0.0)).build().expect("box"));
        }
        world.sync();
        let mut st = world.state().clone();
        let n = st.vertex_count();
        let mut rng = Rng(8);
        let mut targets = vec![Vec4::ZERO; n];
        let mut pinned = 0;
        for v in 0..n {
            if st.vertex_body[v] == 0 && st.positions[v].y > 0.199 {
                st.flags[v] |= VERTEX_KINEMATIC;
                targets[v] =
                    st.positions[v] + Vec4::new(0.0, 0.02, 0.0, 0.0) + (rng.vec() * 0.005).as_vec3().extend(0.0);
                pinned += 1;
            }
        }
        let model = ContactModel {
            stiffness: ContactStiffness::PerMass(1e5),
            offset: 1e-3,
            static_slip: 1e-6,
            stiffening: false,
        };
        let settings = SurfaceContactSettings::default();
        let (pairs, clamp) = detect_once(&st, model, settings, &mut st.positions.clone());
        let (layout, words) = ContactLayout::new(n as u32, st.bodies.len() as u32, 0, pairs.pairs.len() as u32);
        let bufs = [
            storage(&ctx, "positions", &st.positions, true),
            storage(&ctx, "flags", &st.flags, false),
            storage(&ctx, "targets", &targets, false),
            storage(&ctx, "control", &vec![0u32; control_words(st.bodies.len())], true),
            storage(&ctx, "contacts", &layout.pack_cpu(words, &pairs, &clamp), false),
        ];
        let b = ContactCatchUpBuffers {
            positions: &bufs[0],
            flags: &bufs[1],
            targets: &bufs[2],
            control: &bufs[3],
            contacts: &bufs[4],
        };
        let bound = ContactCatchUp::new(&ctx).bind(&ctx, &layout, settings.ccd.min_separation, &b);
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        record_pass(&mut encoder, "contact_catch_up", &[bound]);
        ctx.queue.submit([encoder.finish()]);
        let gpu: Vec<Vec4> = read_blocking(&ctx, &bufs[0], n).expect("positions");
        let control: Vec<u32> = read_blocking(&ctx, &bufs[3], 16).expect("control");
        let mut held = 0;
        for v in 0..n {
            let want = if st.flags[v] & VERTEX_KINEMATIC != 0 {
                let target = Vec3A::from_vec4(targets[v]);
                let within = limit_move(v, target, clamp[v], &pairs);
                held += usize::from(within != target);
                within.extend(0.0)
            } else {
                st.positions[v]
            };
            assert!((gpu[v] - want).length() < 1e-6, "vertex {v}: {} vs {want}", gpu[v]);
        }
        assert!(pinned > 20 && held > pinned / 2, "{held} of {pinned} pins held back");
        assert_eq!(control[CONTROL_BOUND_HIT], 1, "a held pin is flagged");
    }
}
