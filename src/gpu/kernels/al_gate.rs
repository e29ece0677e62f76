//! Host side of `shaders/al_gate.wgsl`: whether a substep is redone on the device by the
//! GPU's fallback (`gpu::fallback`), decided by the GPU from the safety check's bits, a hold
//! left from an earlier failure, or the `always` policy, and written as the dispatch arguments
//! of every phase of the fallback.

use super::{Bound, ComputeKernel, WORKGROUP};
use crate::gpu::GpuContext;
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = super::compose!("al_gate");

/// Bit the gate adds to the `bad` fields of a body whose unsafe substep the fallback redid on
/// the device (the host reports it and steps nothing again).
pub const REDONE: u32 = 4096;
/// Words of `control`: the fallback's per-vertex dispatch arguments (3), the substeps of hold
/// left, substeps the fallback ran, substeps it ran for a failure.
pub const CONTROL_WORDS: usize = 6;
/// Byte offset in `control` of the fallback's per-vertex dispatch arguments.
pub const RUN_ARGS: u64 = 0;
/// `control` word of the substeps of hold left.
pub const CONTROL_HOLD: usize = 3;
/// `control` word of the substeps the fallback ran (counting up).
pub const CONTROL_RUNS: usize = 4;
/// `control` word of the substeps it ran because the check failed (counting up).
pub const CONTROL_FAILURES: usize = 5;

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    bodies: u32,
    vertex_groups: u32,
    hold_substeps: u32,
    always: u32,
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

    /// Binds the gate over `bodies` bodies and `vertices` vertices: `bad` is the guard's
    /// (`step_guard`), `control` has [`CONTROL_WORDS`] u32 with `INDIRECT` usage (zeroed once);
    /// a failure holds the fallback for `hold_substeps` substeps; `always` runs it every
    /// substep.
    #[allow(clippy::too_many_arguments)]
    pub fn bind(
        &self,
        ctx: &GpuContext,
        bodies: u32,
        vertices: u32,
        hold_substeps: u32,
        always: bool,
        bad: &wgpu::Buffer,
        control: &wgpu::Buffer,
    ) -> Bound {
        let params = Params {
            bodies,
            vertex_groups: vertices.div_ceil(WORKGROUP).max(1),
            hold_substeps,
            always: u32::from(always),
        };
        self.kernel.bind_pod(ctx, &params, &[bad, control], 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::buffers::{read_blocking, storage};
    use crate::gpu::kernels::al_fixture::Device;
    use crate::gpu::kernels::record_pass;
    use crate::gpu::test_support;

    /// Three bodies and 200 vertices: a safe substep runs nothing; a failure (body 1's speed
    /// bit, in its words and the world's) runs the fallback, marks body 1 (not body 2, which is
    /// only non-finite) and holds for two more substeps, then nothing runs; `always` runs it
    /// anyway.
    #[test]
    fn runs_the_fallback_on_a_failure_and_for_its_hold() {
        let Some(ctx) = test_support::context() else { return };
        let control = Device::control(&ctx, CONTROL_WORDS);
        let gate = AlGate::new(&ctx);
        let run = |bad: &wgpu::Buffer, always: bool| -> Vec<u32> {
            let b = gate.bind(&ctx, 3, 200, 2, always, bad, &control);
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            record_pass(&mut encoder, "al_gate", &[b]);
            ctx.queue.submit([encoder.finish()]);
            read_blocking(&ctx, &control, CONTROL_WORDS).expect("control")
        };
        let safe = bad_words(&ctx, 0);
        assert_eq!(run(&safe, false), [0, 1, 1, 0, 0, 0]);
        let failed = bad_words(&ctx, 16);
        assert_eq!(run(&failed, false), [4, 1, 1, 2, 1, 1]);
        let fields: Vec<u32> = read_blocking(&ctx, &failed, 8).expect("bad");
        assert_eq!(fields, [0, 0, u32::MAX - 120, 16 | REDONE, 0, 1, 0, 16]);
        assert_eq!(run(&safe, false), [4, 1, 1, 1, 2, 1]);
        assert_eq!(run(&safe, false), [4, 1, 1, 0, 3, 1]);
        assert_eq!(run(&safe, false), [0, 1, 1, 0, 3, 1]);
        assert_eq!(run(&safe, true), [4, 1, 1, 0, 4, 1]);
    }

    /// `bad` for three bodies: body 1 with `bits` (and the world's word with them, as
    /// step_check writes it) and body 2 non-finite in position.
    fn bad_words(ctx: &GpuContext, bits: u32) -> wgpu::Buffer {
        let one = if bits != 0 { u32::MAX - 120 } else { 0 };
        storage(ctx, "bad", &[0u32, 0, one, bits, 0, 1, 0, bits], true)
    }
}
