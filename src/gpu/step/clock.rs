//! A frame's GPU time from the device's own clock: a timestamp at the start of the frame's
//! first compute pass and one at the end of its last, resolved into the frame's readback.
//! Adapters without timestamp queries read back zeros, and the frame's time is `None`.

use crate::gpu::GpuContext;

/// Bytes the frame's two resolved timestamps take in a frame read back.
pub(super) const CLOCK_BYTES: u64 = 2 * size_of::<u64>() as u64;

/// The two timestamps of the frame being recorded.
pub(super) struct FrameClock {
    queries: Option<wgpu::QuerySet>,
    /// Where the queries resolve to; never written without them, so it reads zero.
    resolved: wgpu::Buffer,
    /// Nanoseconds per tick.
    period: f32,
}

impl FrameClock {
    pub fn new(ctx: &GpuContext) -> Self {
        let queries = ctx.timestamp_period.map(|_| {
            ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("frame clock"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            })
        });
        let resolved = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("frame clock"),
            size: CLOCK_BYTES,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Self { queries, resolved, period: ctx.timestamp_period.unwrap_or(0.0) }
    }

    /// The timestamps a substep's pass writes: the frame's start at the beginning of its first
    /// pass, the frame's end at the end of every pass (the last one's stays).
    pub fn pass_writes(&self, first_of_frame: bool) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        self.queries.as_ref().map(|query_set| wgpu::ComputePassTimestampWrites {
            query_set,
            beginning_of_pass_write_index: first_of_frame.then_some(0),
            end_of_pass_write_index: Some(1),
        })
    }

    /// Records the resolve of the frame's timestamps (before the frame's readback copy).
    pub fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        if let Some(queries) = &self.queries {
            encoder.resolve_query_set(queries, 0..2, &self.resolved, 0);
        }
    }

    /// The buffer the readback copies the resolved timestamps from.
    pub fn resolved(&self) -> &wgpu::Buffer {
        &self.resolved
    }

    /// The frame's GPU time \[ms\] from its resolved timestamps; `None` without timestamps (or
    /// when the clock did not advance).
    pub fn decode(&self, words: &[u32]) -> Option<f64> {
        let tick = |k: usize| u64::from(words[2 * k]) | (u64::from(words[2 * k + 1]) << 32);
        let (start, end) = (tick(0), tick(1));
        (self.queries.is_some() && end > start).then(|| (end - start) as f64 * f64::from(self.period) * 1e-6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_ticks_with_the_period_and_refuses_a_clock_that_did_not_advance() {
        let Some(ctx) = crate::gpu::test_support::context() else { return };
        let clock = FrameClock::new(&ctx);
        let (start, end) = (5_000_000_000u64, 5_002_500_000u64);
        let words = [start as u32, (start >> 32) as u32, end as u32, (end >> 32) as u32];
        match ctx.timestamp_period {
            Some(period) => {
                let ms = clock.decode(&words).expect("timestamps");
                assert!((ms - 2.5 * f64::from(period)).abs() < 1e-9, "{ms} ms at {period} ns per tick");
                assert_eq!(clock.decode(&[words[2], words[3], words[0], words[1]]), None);
            }
            None => assert_eq!(clock.decode(&words), None),
        }
        assert_eq!(clock.decode(&[0; 4]), None);
    }
}
