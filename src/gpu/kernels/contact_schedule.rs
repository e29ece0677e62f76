//! Host side of `shaders/contact_schedule.wgsl`: one invocation that writes the workgroup
//! counts of a group of indirect dispatches from what the frame's earlier kernels found, so
//! the GPU decides whether a detection or a CCD advance runs, and how many pairs the lists
//! cover, without a round trip to the host.

use bytemuck::{Pod, Zeroable};

use super::{Bound, ComputeKernel};
use crate::gpu::GpuContext;
use crate::gpu::contact::ContactLayout;

/// WGSL source.
pub const SHADER: &str = super::compose!("contact_schedule", "contact_layout");

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
