//! Where a GPU frame's time goes, kernel by kernel: with profiling on, a timestamp is written
//! after every dispatch (and at the start of every pass), so the time between two consecutive
//! timestamps is one dispatch's, from the end of the one before it to its own end: its work
//! plus what the device spends between dispatches (the barrier, the launch). A diagnostic: it
//! needs `TIMESTAMP_QUERY_INSIDE_PASSES`, and each profiled frame makes the calling thread wait
//! for its timestamps.

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::gpu::{GpuContext, GpuError};

/// Timestamps one frame holds at most (a query set's limit); dispatches beyond them go unprofiled
/// (and say so).
const CAPACITY: u32 = 4096;

/// One kernel's share of the profiled frames.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelTime {
    /// The kernel (its shader's name).
    pub kernel: &'static str,
    /// Its dispatches over the profiled frames.
    pub dispatches: u64,
    /// Their time \[ms\] over the profiled frames.
    pub ms: f64,
}

/// A frame's timestamps as they are recorded: the labels of the slots written so far.
struct Recording {
    queries: wgpu::QuerySet,
    labels: Vec<&'static str>,
    /// Dispatches that found no slot left.
    dropped: u64,
}

thread_local! {
    /// The frame being profiled on this thread, while its passes are recorded.
    static RECORDING: RefCell<Option<Recording>> = const { RefCell::new(None) };
}

/// Marks a slot after a dispatch of `kernel` (or, for `PASS_START`, a pass's start) when a
/// profiled frame is being recorded on this thread.
pub(crate) fn mark(pass: &mut wgpu::ComputePass<'_>, kernel: &'static str) {
    RECORDING.with(|r| {
        if let Some(r) = r.borrow_mut().as_mut() {
            if (r.labels.len() as u32) < CAPACITY {
                pass.write_timestamp(&r.queries, r.labels.len() as u32);
                r.labels.push(kernel);
            } else {
                r.dropped += 1;
            }
        }
    });
}

/// The label of a pass's first timestamp (no dispatch ends there).
pub(crate) const PASS_START: &str = "(pass start)";

/// The profiler of a stepper: its query set, and the totals of the frames profiled so far.
pub(crate) struct Profiler {
    queries: wgpu::QuerySet,
    resolved: wgpu::Buffer,
    staging: wgpu::Buffer,
    period: f64,
    /// The frame's labels between its passes.
    labels: Vec<&'static str>,
    totals: BTreeMap<&'static str, (u64, f64)>,
    /// Dispatches of profiled frames beyond the capacity.
    unprofiled: u64,
}

impl Profiler {
    /// Whether `ctx`'s device can be profiled: it writes timestamps inside passes.
    pub fn supported(ctx: &GpuContext) -> bool {
        let needed = wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
        ctx.timestamp_period.is_some() && ctx.device.features().contains(needed)
    }

    /// A profiler on `ctx`'s device; `None` where it is not [`Profiler::supported`].
    pub fn new(ctx: &GpuContext) -> Option<Self> {
        let period = ctx.timestamp_period.filter(|_| Self::supported(ctx))?;
        let queries = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("kernel profile"),
            ty: wgpu::QueryType::Timestamp,
            count: CAPACITY,
        });
        let bytes = u64::from(CAPACITY) * 8;
        let buffer = |usage| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("kernel profile"),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        };
        Some(Self {
            queries,
            resolved: buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
            staging: buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
            period: f64::from(period),
            labels: Vec::new(),
            totals: BTreeMap::new(),
            unprofiled: 0,
        })
    }

    /// Runs `record` (which records one pass) with this frame's timestamps marked in it.
    pub fn around<R>(
        &mut self,
        pass: &mut wgpu::ComputePass<'_>,
        record: impl FnOnce(&mut wgpu::ComputePass<'_>) -> R,
    ) -> R {
        let labels = std::mem::take(&mut self.labels);
        RECORDING.with(|r| *r.borrow_mut() = Some(Recording { queries: self.queries.clone(), labels, dropped: 0 }));
        mark(pass, PASS_START);
        let out = record(pass);
        let Recording { labels, dropped, .. } =
            RECORDING.with(|r| r.borrow_mut().take()).unwrap_or_else(|| unreachable!("set above"));
        self.unprofiled += dropped;
        self.labels = labels;
        out
    }

    /// Records the copy of the frame's timestamps (before its submission).
    pub fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        let n = self.labels.len() as u32;
        if n > 0 {
            encoder.resolve_query_set(&self.queries, 0..n, &self.resolved, 0);
            encoder.copy_buffer_to_buffer(&self.resolved, 0, &self.staging, 0, u64::from(n) * 8);
        }
    }

    /// Waits for the submitted frame's timestamps and adds them to the totals.
    pub fn collect(&mut self, ctx: &GpuContext) -> Result<(), GpuError> {
        let labels = std::mem::take(&mut self.labels);
        if labels.is_empty() {
            return Ok(());
        }
        let bytes = labels.len() as u64 * 8;
        let slice = self.staging.slice(..bytes);
        slice.map_async(wgpu::MapMode::Read, |_| {});
        let failed = |e: String| GpuError::Readback { buffer: "kernel profile".into(), reason: e };
        ctx.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| failed(e.to_string()))?;
        let ticks: Vec<u64> =
            bytemuck::pod_collect_to_vec(&slice.get_mapped_range().map_err(|e| failed(e.to_string()))?);
        self.staging.unmap();
        for (k, label) in labels.iter().enumerate().skip(1) {
            if *label == PASS_START {
                continue;
            }
            let ms = ticks[k].saturating_sub(ticks[k - 1]) as f64 * self.period * 1e-6;
            let total = self.totals.entry(label).or_default();
            total.0 += 1;
            total.1 += ms;
        }
        Ok(())
    }

    /// Per kernel, the dispatches and time of the frames profiled so far, the costliest first;
    /// and the dispatches that found no slot.
    pub fn report(&self) -> (Vec<KernelTime>, u64) {
        let mut out: Vec<KernelTime> =
            self.totals.iter().map(|(&kernel, &(dispatches, ms))| KernelTime { kernel, dispatches, ms }).collect();
        out.sort_by(|a, b| b.ms.total_cmp(&a.ms));
        (out, self.unprofiled)
    }
}
