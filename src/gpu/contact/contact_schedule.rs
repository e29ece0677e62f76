//! Host side of `shaders/contact/contact_schedule.wgsl`: one invocation that writes the workgroup
//! counts of a group of indirect dispatches from what the frame's earlier kernels found, so
//! the GPU decides whether a detection or a CCD advance runs, and how many pairs the lists
//! cover, without a round trip to the host.

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::contact::layout::ContactLayout;
use crate::gpu::kernel::{Bound, ComputeKernel};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("contact/contact_schedule", "contact_layout");

/// Most dispatches one schedule decides.
pub const MAX_ENTRIES: usize = 32;

/// What a schedule decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleMode {
    /// The CCD advance, when some initial path left the last bounds.
    Advance = 0,
    /// A detection, always.
    Detect = 1,
    /// A detection, when the last one stored pairs or a bound was met since.
    Redetect = 2,
    /// The rest of the detection that just ran (its dispatches over the stored pairs get one
    /// invocation per pair).
    Pairs = 3,
    /// Dispatches over the pairs the last detection stored.
    Stored = 4,
}

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    contact: ContactLayout,
    mode: u32,
    count: u32,
    _pad: [u32; 2],
    entries: [[u32; 4]; MAX_ENTRIES],
}

/// Where a scheduled dispatch reads its workgroup counts, and how many it runs when it runs.
#[derive(Clone, Copy, Debug)]
pub struct ScheduleEntry {
    /// Byte offset of its `(x, y, z)` in the dispatch buffer.
    pub offset: u64,
    /// Workgroups when it runs.
    pub workgroups: u32,
    /// It runs one invocation per stored pair instead (`workgroups` is ignored).
    pub per_pair: bool,
}

/// The compiled kernel.
pub struct ContactSchedule {
    kernel: ComputeKernel,
}

impl ContactSchedule {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "contact_schedule", SHADER) }
    }

    /// The one-invocation dispatch deciding `entries` (at most [`MAX_ENTRIES`]).
    pub fn bind(
        &self,
        ctx: &GpuContext,
        layout: &ContactLayout,
        mode: ScheduleMode,
        entries: &[ScheduleEntry],
        control: &wgpu::Buffer,
        dispatch: &wgpu::Buffer,
    ) -> Bound {
        assert!(entries.len() <= MAX_ENTRIES, "{} scheduled dispatches (at most {MAX_ENTRIES})", entries.len());
        let mut params = Params {
            contact: *layout,
            mode: mode as u32,
            count: entries.len() as u32,
            _pad: [0; 2],
            entries: [[0; 4]; MAX_ENTRIES],
        };
        for (slot, e) in params.entries.iter_mut().zip(entries) {
            *slot = [(e.offset / 4) as u32, e.workgroups, u32::from(e.per_pair), 0];
        }
        self.kernel.bind_pod(ctx, &params, &[control, dispatch], 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::buffers::{read_blocking, storage};
    use crate::gpu::contact::layout::{
        CONTROL_ADVANCE_NEEDED, CONTROL_ADVANCES, CONTROL_BOUND_HIT, CONTROL_DETECTING, CONTROL_DETECTIONS,
        CONTROL_FRAME, CONTROL_OVERFLOW_FRAME, CONTROL_PAIR_COUNT, CONTROL_PAIRS_DROPPED, CONTROL_PAIRS_REQUESTED,
        control_words,
    };
    use crate::gpu::kernel::record_pass;
    use crate::gpu::test_support;

    /// Each mode against what it must decide: the workgroup counts it writes and the control
    /// words it changes, for every state of the flags it reads.
    #[test]
    fn schedules_decide_from_the_control_words() {
        let Some(ctx) = test_support::context() else { return };
        let kernel = ContactSchedule::new(&ctx);
        let (layout, _) = ContactLayout::new(10, 1, 0, 1000);
        let entries = [
            ScheduleEntry { offset: 0, workgroups: 7, per_pair: false },
            ScheduleEntry { offset: 12, workgroups: 9, per_pair: true },
        ];
        let dispatch_buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("dispatch"),
            size: 24,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        // (mode, control words set before, expected workgroups, expected control words after)
        type Words = &'static [(usize, u32)];
        let cases: [(ScheduleMode, Words, [u32; 2], Words); 10] = [
            (ScheduleMode::Advance, &[], [0, 0], &[(CONTROL_ADVANCES, 0)]),
            (
                ScheduleMode::Advance,
                &[(CONTROL_ADVANCE_NEEDED, 1), (CONTROL_PAIR_COUNT, 130)],
                [7, 3],
                &[(CONTROL_ADVANCES, 1)],
            ),
            (
                ScheduleMode::Detect,
                &[(CONTROL_PAIR_COUNT, 5), (CONTROL_DETECTIONS, 2), (CONTROL_BOUND_HIT, 1)],
                [7, 0],
                &[(CONTROL_DETECTING, 1), (CONTROL_PAIR_COUNT, 0), (CONTROL_DETECTIONS, 3), (CONTROL_BOUND_HIT, 0)],
            ),
            (ScheduleMode::Redetect, &[(CONTROL_DETECTING, 1)], [0, 0], &[(CONTROL_DETECTING, 0)]),
            (
                ScheduleMode::Redetect,
                &[(CONTROL_BOUND_HIT, 1)],
                [7, 0],
                &[(CONTROL_BOUND_HIT, 0), (CONTROL_DETECTING, 1), (CONTROL_DETECTIONS, 1)],
            ),
            (ScheduleMode::Pairs, &[(CONTROL_PAIR_COUNT, 130)], [0, 0], &[(CONTROL_PAIRS_REQUESTED, 0)]),
            (
                ScheduleMode::Pairs,
                &[(CONTROL_DETECTING, 1), (CONTROL_PAIR_COUNT, 130), (CONTROL_PAIRS_REQUESTED, 40), (CONTROL_FRAME, 8)],
                [7, 3],
                &[(CONTROL_PAIRS_REQUESTED, 130), (CONTROL_PAIRS_DROPPED, 0), (CONTROL_OVERFLOW_FRAME, 0)],
            ),
            // A detection past the capacity: the dispatch covers the capacity, the frame is
            // marked and the excess counted.
            (
                ScheduleMode::Pairs,
                &[(CONTROL_DETECTING, 1), (CONTROL_PAIR_COUNT, 1500), (CONTROL_FRAME, 8)],
                [7, 16],
                &[(CONTROL_PAIRS_REQUESTED, 1500), (CONTROL_PAIRS_DROPPED, 500), (CONTROL_OVERFLOW_FRAME, 8)],
            ),
            // An overflow after an unacknowledged one keeps the first frame and the most dropped.
            (
                ScheduleMode::Pairs,
                &[
                    (CONTROL_DETECTING, 1),
                    (CONTROL_PAIR_COUNT, 1200),
                    (CONTROL_FRAME, 9),
                    (CONTROL_PAIRS_REQUESTED, 1500),
                    (CONTROL_PAIRS_DROPPED, 500),
                    (CONTROL_OVERFLOW_FRAME, 8),
                ],
                [7, 16],
                &[(CONTROL_PAIRS_REQUESTED, 1500), (CONTROL_PAIRS_DROPPED, 500), (CONTROL_OVERFLOW_FRAME, 8)],
            ),
            // More pairs stored than fit: the lists cover the capacity; only the pairs mode
            // records the overflow.
            (
                ScheduleMode::Stored,
                &[(CONTROL_PAIR_COUNT, 5000), (CONTROL_PAIRS_REQUESTED, 40), (CONTROL_FRAME, 8)],
                [7, 16],
                &[(CONTROL_PAIRS_REQUESTED, 40), (CONTROL_PAIRS_DROPPED, 0), (CONTROL_OVERFLOW_FRAME, 0)],
            ),
        ];
        for (k, (mode, before, groups, after)) in cases.iter().enumerate() {
            let mut words = vec![0u32; control_words(1)];
            for &(w, v) in *before {
                words[w] = v;
            }
            let control = storage(&ctx, "control", &words, true);
            let bound = kernel.bind(&ctx, &layout, *mode, &entries, &control, &dispatch_buffer);
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            record_pass(&mut encoder, "schedule", &[bound]);
            ctx.queue.submit([encoder.finish()]);
            let args: Vec<u32> = read_blocking(&ctx, &dispatch_buffer, 6).expect("dispatch");
            assert_eq!([args[0], args[3]], *groups, "case {k} ({mode:?}): workgroups");
            assert_eq!([args[1], args[2], args[4], args[5]], [1; 4], "case {k}: y and z");
            let got: Vec<u32> = read_blocking(&ctx, &control, words.len()).expect("control");
            for &(w, v) in *after {
                assert_eq!(got[w], v, "case {k} ({mode:?}): control word {w}");
            }
        }
    }
}
