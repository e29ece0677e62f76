//! Host side of `shaders/al/al_gate.wgsl`: whether a substep is redone on the device by the
//! GPU's fallback (`gpu::al::fallback`), decided by the GPU from the safety check's bits, a hold
//! left from an earlier failure, or the `always` policy, and written as the dispatch arguments
//! of every phase of the fallback.

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("al/al_gate");

/// Bit the gate adds to the `bad` fields of a body whose unsafe substep the fallback redid on
/// the device (the host reports it and steps nothing again).
pub const REDONE: u32 = 4096;
/// Words of `control`: the fallback's per-vertex dispatch arguments (3), the substeps of hold
/// left, substeps the fallback ran, substeps it ran for a failure; of its last run: outer
/// iterations, end (`al_outer::OuterState`), share of the step travelled (f32 bits), whether
/// it answered with an earlier iterate.
pub const CONTROL_WORDS: usize = 10;
/// Byte offset in `control` of the fallback's per-vertex dispatch arguments.
pub const RUN_ARGS: u64 = 0;
/// `control` word of the substeps of hold left.
pub const CONTROL_HOLD: usize = 3;
/// `control` word of the substeps the fallback ran (counting up).
pub const CONTROL_RUNS: usize = 4;
/// `control` word of the substeps it ran because the check failed (counting up).
pub const CONTROL_FAILURES: usize = 5;
/// `control` word of the last run's outer iterations.
pub const CONTROL_ITERATIONS: usize = 6;
/// `control` word of how the last run ended (`al_outer::OuterState`).
pub const CONTROL_END: usize = 7;
/// `control` word of the share of its step the last run travelled (f32 bits).
pub const CONTROL_TRAVELLED: usize = 8;
/// `control` word: the last run answered with an earlier iterate of lower merit (1).
pub const CONTROL_REWOUND: usize = 9;

const PHASE_GATE: u32 = 0;
const PHASE_REPORT: u32 = 1;

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    phase: u32,
    bodies: u32,
    vertex_groups: u32,
    hold_substeps: u32,
    always: u32,
    comparable: u32,
    _pad: [u32; 2],
}

/// What the gate reads and writes.
pub struct AlGateBuffers<'a> {
    /// The guard's per-body words (`step_guard`), read and marked.
    pub bad: &'a wgpu::Buffer,
    /// [`CONTROL_WORDS`] u32 with `INDIRECT` usage (zeroed once; kept across substeps).
    pub control: &'a wgpu::Buffer,
    /// `al_outer`'s control words.
    pub outer: &'a wgpu::Buffer,
    /// The AL scalars.
    pub scalars: &'a wgpu::Buffer,
    /// `al_merit`'s control words.
    pub merit: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct AlGate {
    kernel: ComputeKernel,
}

impl AlGate {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "al_gate", SHADER) }
    }

    /// Binds the gate and the report over `bodies` bodies and `vertices` vertices: a failure
    /// holds the fallback for `hold_substeps` substeps; `always` runs it every substep;
    /// `comparable` when its iterates compare by merit (`al_merit` runs).
    #[allow(clippy::too_many_arguments)]
    pub fn bind(
        &self,
        ctx: &GpuContext,
        bodies: u32,
        vertices: u32,
        hold_substeps: u32,
        always: bool,
        comparable: bool,
        b: &AlGateBuffers<'_>,
    ) -> [Bound; 2] {
        let base = Params {
            phase: PHASE_GATE,
            bodies,
            vertex_groups: vertices.div_ceil(WORKGROUP).max(1),
            hold_substeps,
            always: u32::from(always),
            comparable: u32::from(comparable),
            _pad: [0; 2],
        };
        let buffers = [b.bad, b.control, b.outer, b.scalars, b.merit];
        [PHASE_GATE, PHASE_REPORT].map(|phase| self.kernel.bind_pod(ctx, &Params { phase, ..base }, &buffers, 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::al::fixture::Device;
    use crate::gpu::al::{al_merit, al_outer};
    use crate::gpu::buffers::{read_blocking, storage};
    use crate::gpu::kernel::record_pass;
    use crate::gpu::test_support;

    /// Three bodies and 200 vertices: a safe substep runs nothing; a failure (body 1's speed
    /// bit, in its words and the world's) runs the fallback, marks body 1 (not body 2, which is
    /// only non-finite) and holds for two more substeps, then nothing runs; `always` runs it
    /// anyway. After each, the report copies the fallback's last run (4 outer iterations,
    /// capped, three quarters of the step travelled, an earlier iterate kept) only where it ran.
    #[test]
    fn runs_the_fallback_on_a_failure_and_for_its_hold() {
        let Some(ctx) = test_support::context() else { return };
        let control = Device::control(&ctx, CONTROL_WORDS);
        let mut outer = vec![0u32; al_outer::CONTROL_WORDS];
        outer[al_outer::CONTROL_ITERATIONS] = 4;
        outer[al_outer::CONTROL_STATE] = 2;
        let mut scalars = vec![0.0f32; 16];
        scalars[al_outer::SCALAR_START_WEIGHT] = 0.25;
        let (outer, scalars) = (storage(&ctx, "outer", &outer, false), storage(&ctx, "scalars", &scalars, false));
        let merit = storage(&ctx, "merit", &[0u32; al_merit::CONTROL_WORDS], false);
        let gate = AlGate::new(&ctx);
        let run = |bad: &wgpu::Buffer, always: bool| -> Vec<u32> {
            let buffers = AlGateBuffers { bad, control: &control, outer: &outer, scalars: &scalars, merit: &merit };
            let b = gate.bind(&ctx, 3, 200, 2, always, true, &buffers);
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            record_pass(&mut encoder, "al_gate", &b);
            ctx.queue.submit([encoder.finish()]);
            read_blocking(&ctx, &control, CONTROL_WORDS).expect("control")
        };
        let last = [4, 2, 0.75f32.to_bits(), 1];
        let safe = bad_words(&ctx, 0);
        assert_eq!(run(&safe, false), [0, 1, 1, 0, 0, 0, 0, 0, 0, 0]);
        let failed = bad_words(&ctx, 16);
        let words = run(&failed, false);
        assert_eq!((&words[..6], &words[6..]), (&[4, 1, 1, 2, 1, 1][..], &last[..]));
        let fields: Vec<u32> = read_blocking(&ctx, &failed, 8).expect("bad");
        assert_eq!(fields, [0, 0, u32::MAX - 120, 16 | REDONE, 0, 1, 0, 16]);
        assert_eq!(run(&safe, false)[..6], [4, 1, 1, 1, 2, 1]);
        assert_eq!(run(&safe, false)[..6], [4, 1, 1, 0, 3, 1]);
        assert_eq!(run(&safe, false)[..6], [0, 1, 1, 0, 3, 1]);
        assert_eq!(run(&safe, true)[..6], [4, 1, 1, 0, 4, 1]);
    }

    /// `bad` for three bodies: body 1 with `bits` (and the world's word with them, as
    /// step_check writes it) and body 2 non-finite in position.
    fn bad_words(ctx: &GpuContext, bits: u32) -> wgpu::Buffer {
        let one = if bits != 0 { u32::MAX - 120 } else { 0 };
        storage(ctx, "bad", &[0u32, 0, one, bits, 0, 1, 0, bits], true)
    }
}
