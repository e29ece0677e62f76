//! A ring of staging buffers that brings finished frames back to the host without ever making
//! the caller wait for the GPU: [`ReadbackRing::enqueue`] records a copy and starts mapping it,
//! [`ReadbackRing::latest`] polls once and hands over the newest frame that has arrived.

use std::sync::Arc;

use bytemuck::Pod;
use parking_lot::Mutex;

use crate::gpu::{GpuContext, GpuError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    Free,
    /// Copy submitted, map requested; the callback moves it on.
    InFlight {
        frame: u64,
    },
    Mapped {
        frame: u64,
    },
    Failed {
        frame: u64,
    },
}

struct Slot {
    buffer: wgpu::Buffer,
    state: Arc<Mutex<SlotState>>,
}

/// A frame recorded into a caller's encoder, to be mapped once that encoder is submitted.
#[derive(Debug)]
#[must_use = "call ReadbackRing::submitted after submitting the encoder, or the slot stays busy"]
pub struct ReadbackTicket {
    index: usize,
    frame: u64,
}

/// Staging buffers for one source buffer's frames (2–3 are enough: one being written by the
/// GPU, one mapped, one spare).
pub struct ReadbackRing {
    slots: Vec<Slot>,
    size: u64,
    label: String,
    /// Unmapping is left to [`ReadbackRing::recycle`] on another thread (see
    /// [`ReadbackRing::with_deferred_unmap`]).
    deferred: bool,
    /// Deferred mode: frames up to this one were read and may be unmapped.
    consumed: std::sync::atomic::AtomicU64,
}

impl ReadbackRing {
    /// A ring of `slots` staging buffers of `size` bytes each.
    pub fn new(ctx: &GpuContext, label: &str, size: u64, slots: usize) -> Self {
        let slots = (0..slots.max(1))
            .map(|k| Slot {
                buffer: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("{label} readback {k}")),
                    size: size.max(4),
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }),
                state: Arc::new(Mutex::new(SlotState::Free)),
            })
            .collect();
        Self { slots, size, label: label.to_string(), deferred: false, consumed: Default::default() }
    }

    /// As [`ReadbackRing::new`], but reading a frame never unmaps a staging buffer: unmapping
    /// takes wgpu locks that a running submission holds (lavapipe runs a whole submission
    /// inside `vkQueueSubmit`), so the thread that submits and polls calls
    /// [`ReadbackRing::recycle`] instead, and the reader never waits.
    pub fn with_deferred_unmap(ctx: &GpuContext, label: &str, size: u64, slots: usize) -> Self {
        Self { deferred: true, ..Self::new(ctx, label, size, slots) }
    }

    /// Deferred mode: unmaps and frees every arrived frame that was read or is older than the
    /// newest arrived one. A slot being read is locked by its reader, so it is never unmapped
    /// under it.
    pub fn recycle(&self) {
        let consumed = self.consumed.load(std::sync::atomic::Ordering::Acquire);
        let newest = self
            .slots
            .iter()
            .filter_map(|s| match *s.state.lock() {
                SlotState::Mapped { frame } => Some(frame),
                _ => None,
            })
            .max();
        for slot in &self.slots {
            let mut state = slot.state.lock();
            if let SlotState::Mapped { frame } = *state
                && (frame <= consumed || newest.is_some_and(|n| frame < n))
            {
                slot.buffer.unmap();
                *state = SlotState::Free;
            }
        }
    }

    /// Copies `source` (its first `size` bytes) into a free slot as frame `frame` and starts
    /// mapping it; returns at once. Returns `false`, and drops the frame, when every slot is
    /// still in flight or unread: the host is behind, and a newer frame will follow.
    #[cfg(test)]
    pub fn enqueue(&self, ctx: &GpuContext, source: &wgpu::Buffer, frame: u64) -> bool {
        self.enqueue_parts(ctx, &[(source, self.size)], frame)
    }

    /// As [`ReadbackRing::enqueue`], for a frame made of several buffers: the first `bytes` of
    /// each, one after the other (their total must be the ring's size).
    #[cfg(test)]
    pub fn enqueue_parts(&self, ctx: &GpuContext, parts: &[(&wgpu::Buffer, u64)], frame: u64) -> bool {
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("readback copy") });
        let Some(ticket) = self.record(&mut encoder, parts, frame) else { return false };
        ctx.queue.submit([encoder.finish()]);
        self.submitted(ticket);
        true
    }

    /// Records the copies of frame `frame` into `encoder` (the caller's own work, so that a
    /// frame is one submission: some drivers, lavapipe among them, make a submission wait for
    /// the previous one); call [`ReadbackRing::submitted`] with the ticket once the encoder is
    /// submitted. `None`, and nothing recorded, when every slot is busy.
    pub fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        parts: &[(&wgpu::Buffer, u64)],
        frame: u64,
    ) -> Option<ReadbackTicket> {
        debug_assert_eq!(parts.iter().map(|p| p.1).sum::<u64>(), self.size);
        let index = self.slots.iter().position(|s| *s.state.lock() == SlotState::Free)?;
        let slot = &self.slots[index];
        let mut at = 0;
        for &(source, bytes) in parts {
            encoder.copy_buffer_to_buffer(source, 0, &slot.buffer, at, bytes);
            at += bytes;
        }
        *slot.state.lock() = SlotState::InFlight { frame };
        Some(ReadbackTicket { index, frame })
    }

    /// Starts mapping a recorded frame whose encoder has been submitted; returns at once.
    pub fn submitted(&self, ticket: ReadbackTicket) {
        let slot = &self.slots[ticket.index];
        let state = slot.state.clone();
        let frame = ticket.frame;
        slot.buffer.slice(..self.size).map_async(wgpu::MapMode::Read, move |r| {
            *state.lock() = if r.is_ok() { SlotState::Mapped { frame } } else { SlotState::Failed { frame } };
        });
    }

    /// Polls the device once (without waiting) and returns the newest frame that has arrived
    /// since the last call, with its frame number; older arrived frames are discarded.
    #[cfg(test)]
    pub fn latest<T: Pod>(&self, ctx: &GpuContext) -> Result<Option<(u64, Vec<T>)>, GpuError> {
        ctx.device
            .poll(wgpu::PollType::Poll)
            .map_err(|e| GpuError::Readback { buffer: self.label.clone(), reason: e.to_string() })?;
        self.take_latest()
    }

    /// As [`ReadbackRing::latest`] without polling: for when another thread polls the device
    /// (a poll waits for a submission in progress on some drivers).
    pub fn take_latest<T: Pod>(&self) -> Result<Option<(u64, Vec<T>)>, GpuError> {
        let Some(frame) = self.newest()? else { return Ok(None) };
        let data = self.read_newest(0..self.size, bytemuck::pod_collect_to_vec::<u8, T>)?;
        self.release(frame);
        Ok(data)
    }

    /// The newest arrived frame's number, releasing every older arrived slot (their frames are
    /// superseded); the newest stays mapped until [`ReadbackRing::release`].
    pub fn newest(&self) -> Result<Option<u64>, GpuError> {
        let mut newest: Option<u64> = None;
        for slot in &self.slots {
            match *slot.state.lock() {
                SlotState::Mapped { frame } if newest.is_none_or(|f| frame > f) => newest = Some(frame),
                SlotState::Failed { frame } => {
                    return Err(GpuError::Readback {
                        buffer: self.label.clone(),
                        reason: format!("mapping frame {frame} failed"),
                    });
                }
                _ => {}
            }
        }
        if let Some(frame) = newest {
            self.release_where(|f| f < frame);
        }
        Ok(newest)
    }

    /// Reads bytes `range` of the newest arrived frame through `f`, without copying the rest
    /// and without releasing it; `None` when no frame has arrived.
    pub fn read_newest<R>(
        &self,
        range: std::ops::Range<u64>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<(u64, R)>, GpuError> {
        let newest = self
            .slots
            .iter()
            .filter_map(|s| match *s.state.lock() {
                SlotState::Mapped { frame } => Some((frame, s)),
                _ => None,
            })
            .max_by_key(|(frame, _)| *frame);
        let Some((frame, slot)) = newest else { return Ok(None) };
        // Held while reading: `recycle` on another thread cannot unmap the slot meanwhile.
        let state = slot.state.lock();
        if *state != (SlotState::Mapped { frame }) {
            return Ok(None);
        }
        let view = slot
            .buffer
            .slice(range)
            .get_mapped_range()
            .map_err(|e| GpuError::Readback { buffer: self.label.clone(), reason: e.to_string() })?;
        let out = f(&view);
        drop(view);
        drop(state);
        Ok(Some((frame, out)))
    }

    /// Unmaps and frees the slots of frames up to `frame` (in deferred mode: marks them read,
    /// for [`ReadbackRing::recycle`]).
    pub fn release(&self, frame: u64) {
        self.release_where(|f| f <= frame);
        if self.deferred {
            self.consumed.fetch_max(frame, std::sync::atomic::Ordering::AcqRel);
        }
    }

    fn release_where(&self, done: impl Fn(u64) -> bool) {
        if self.deferred {
            return;
        }
        for slot in &self.slots {
            let mut state = slot.state.lock();
            if let SlotState::Mapped { frame } = *state
                && done(frame)
            {
                slot.buffer.unmap();
                *state = SlotState::Free;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::buffers::output;
    use crate::gpu::test_support;

    #[test]
    fn frames_arrive_in_order_without_blocking_and_never_mixed() {
        let Some(ctx) = test_support::context() else { return };
        let n = 4096;
        let source = output::<u32>(&ctx, "frames", n);
        let ring = ReadbackRing::new(&ctx, "frames", (n * 4) as u64, 3);
        let (mut last_seen, mut last_enqueued) = (None, None);
        let mut dropped = 0;
        for frame in 0..40u64 {
            // Every element of frame f holds f, so a torn frame would show.
            let data = vec![frame as u32; n];
            ctx.queue.write_buffer(&source, 0, bytemuck::cast_slice(&data));
            if ring.enqueue(&ctx, &source, frame) {
                last_enqueued = Some(frame);
            } else {
                dropped += 1;
            }
            if let Some((f, values)) = ring.latest::<u32>(&ctx).expect("readback") {
                assert!(values.iter().all(|&x| x as u64 == f), "frame {f} mixed with another");
                assert!(last_seen.is_none_or(|l| f > l), "frame {f} after {last_seen:?}");
                last_seen = Some(f);
            }
        }
        // Drain: the last enqueued frame arrives once the GPU is done.
        let mut tries = 0;
        while last_seen != last_enqueued {
            ctx.device.poll(wgpu::PollType::wait_indefinitely()).expect("poll");
            if let Some((f, values)) = ring.latest::<u32>(&ctx).expect("readback") {
                assert!(values.iter().all(|&x| x as u64 == f));
                last_seen = Some(f);
            }
            tries += 1;
            assert!(tries < 100, "last frame never arrived (last seen {last_seen:?}, {dropped} dropped)");
        }
    }
}
