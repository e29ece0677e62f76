//! Host side of `shaders/al/al_pairs.wgsl`: the augmented-Lagrangian active set's per-pair updates
//! on the GPU (the twins of `ActiveSet::linearize` and `ActiveSet::dual_update`).

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel};
use crate::gpu::obstacles::GpuObstacleSet;
use bytemuck::{Pod, Zeroable};

use crate::gpu::al::al_pcg::AlPairLayout;

/// WGSL source.
pub const SHADER: &str =
    crate::gpu::kernel::compose!("al/al_pairs", "step", "obstacles", "distance", "mat3", "friction", "al");

const PHASE_LINEARIZE: u32 = 0;
const PHASE_DUAL: u32 = 1;
const PHASE_PRUNE: u32 = 2;

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    phase: u32,
    pairs: u32,
    records: u32,
    _pad: u32,
    obstacles: GpuObstacleSet,
}

/// What the kernel reads and writes.
pub struct AlPairsBuffers<'a> {
    /// The safe iterate `x` (vec4): where pairs are linearised.
    pub safe: &'a wgpu::Buffer,
    /// The targets `x̂` (vec4): where the dual update measures the constraints.
    pub targets: &'a wgpu::Buffer,
    /// The element buffer holding the pair records ([`AlPairLayout`]), updated.
    pub element: &'a wgpu::Buffer,
    /// The AL scalars (μ and δ are read).
    pub scalars: &'a wgpu::Buffer,
}

/// The two bound phases.
pub struct AlPairsBound {
    /// Re-linearises every pair at the safe iterate.
    pub linearize: Bound,
    /// The dual update at the targets.
    pub dual: Bound,
    /// Drops pairs whose weight decayed below 0.01.
    pub prune: Bound,
}

impl AlPairsBound {
    /// Every phase with its workgroups read from byte `at` of `gate`.
    pub fn gated(self, gate: &wgpu::Buffer, at: u64) -> Self {
        Self {
            linearize: self.linearize.indirect(gate, at),
            dual: self.dual.indirect(gate, at),
            prune: self.prune.indirect(gate, at),
        }
    }
}

/// The compiled kernel.
pub struct AlPairs {
    kernel: ComputeKernel,
}

impl AlPairs {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "al_pairs", SHADER) }
    }

    /// Binds both phases over `pairs` records at `layout`, with the step's obstacles.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        layout: &AlPairLayout,
        pairs: usize,
        obstacles: &GpuObstacleSet,
        b: &AlPairsBuffers<'_>,
    ) -> AlPairsBound {
        let buffers = [b.safe, b.targets, b.element, b.scalars];
        let bind = |phase: u32| {
            let params = Params { phase, pairs: pairs as u32, records: layout.pairs, _pad: 0, obstacles: *obstacles };
            self.kernel.bind_pod(ctx, &params, &buffers, pairs as u32)
        };
        AlPairsBound { linearize: bind(PHASE_LINEARIZE), dual: bind(PHASE_DUAL), prune: bind(PHASE_PRUNE) }
    }
}

#[cfg(test)]
mod tests {
    use crate::gpu::al::fixture::GpuPairs;
    use glam::{DVec3, Vec4};

    use super::*;
    use crate::gpu::al::al_pcg::AlPair;
    use crate::gpu::al::fixture::{DELTA, Device, MU, fixture};
    use crate::gpu::buffers::{read_blocking, storage};
    use crate::gpu::test_support;

    /// Both phases against the CPU's active set on the fixture's pairs (ground, point–triangle,
    /// edge–edge): re-linearised at a safe iterate moved from the start, the records carry the
    /// CPU's distances, gradients and positions; the dual update at the targets gives the
    /// CPU's multipliers, weights and lagged normal forces.
    #[test]
    fn match_the_cpu_active_set() {
        let Some(ctx) = test_support::context() else { return };
        let f = fixture();
        let mut active = f.active_set();
        let (start, xh) = f.start_and_targets();
        let safe: Vec<DVec3> = start.iter().zip(&xh).map(|(a, b)| *a + (*b - *a) * 0.3).collect();
        let obstacles = f.obstacles();
        let d = Device::new(&ctx, &f, &f.solve(), &active.gpu_pairs(), MU as f32, DELTA as f32);
        let safe_gpu: Vec<Vec4> = safe.iter().map(|p| p.as_vec3().extend(0.0)).collect();
        let safe_buffer = storage(&ctx, "safe", &safe_gpu, false);
        let bound = AlPairs::new(&ctx).bind(
            &ctx,
            &d.pairs,
            d.pair_count,
            &GpuObstacleSet::pack(&obstacles).expect("obstacles"),
            &AlPairsBuffers { safe: &safe_buffer, targets: &d.positions, element: &d.element, scalars: &d.scalars },
        );
        Device::run(&ctx, |pass| {
            bound.linearize.record(pass);
            bound.dual.record(pass);
        });
        let words: Vec<u32> = read_blocking(&ctx, &d.element, d.pairs.words as usize).expect("records");
        let start_word = d.pairs.pairs as usize;
        let gpu: &[AlPair] = bytemuck::cast_slice(&words[start_word..start_word + 42 * d.pair_count]);
        active.linearize(&safe, &obstacles);
        active.dual_update(&xh, MU, DELTA);
        let cpu = active.gpu_pairs();
        assert_eq!(gpu.len(), cpu.len());
        let close = |a: f32, b: f32, scale: f32| (a - b).abs() <= 1e-5 * scale.max(1e-3) + 1e-6 * a.abs().max(b.abs());
        for (i, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
            assert_eq!((g.vertices, g.kind, g.obstacle), (c.vertices, c.kind, c.obstacle), "pair {i}");
            assert!(close(g.distance, c.distance, 1.0), "pair {i}: distance {} vs {}", g.distance, c.distance);
            // Slots without a vertex: zero gradient, any position.
            for k in 0..4 {
                for a in 0..3 {
                    assert!(close(g.gradient[k][a], c.gradient[k][a], 1.0), "pair {i}: gradient {g:?} vs {c:?}");
                    let moving = c.vertices[k] != crate::gpu::al::al_pcg::NO_VERTEX;
                    assert!(!moving || close(g.base[k][a], c.base[k][a], 1.0), "pair {i}: base {g:?} vs {c:?}");
                }
            }
            let scale = c.lambda.abs().max(1.0);
            assert!(close(g.lambda, c.lambda, scale), "pair {i}: λ {} vs {}", g.lambda, c.lambda);
            assert!(
                close(g.normal_force, c.normal_force, scale),
                "pair {i}: Λ {} vs {}",
                g.normal_force,
                c.normal_force
            );
            assert_eq!(g.gamma, c.gamma, "pair {i}: γ");
        }
        assert!(cpu.iter().any(|c| c.lambda > 0.0) && cpu.iter().any(|c| c.lambda == 0.0 && c.gamma < 1.0));
    }
}
