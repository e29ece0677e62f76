//! Moving the dynamic state in and out of a stepper: uploads of the host copy and of single
//! edits, the blocking download, the snapshots of recent frame starts for a redo, and the
//! carry-over of the surviving bodies' state to the stepper of a repacked state.

use glam::Vec4;

use crate::collision::Obstacle;
use crate::gpu::buffers::{output, read_blocking};
use crate::gpu::check::step_energy::{DRIVEN, ENERGY_WORDS};
use crate::gpu::check::step_guard::{ROLLBACK_WORDS, Rollbacks, decode};
use crate::gpu::check::step_soft::SOFT_WORDS;
use crate::gpu::contact::layout::{CONTROL_BOUNDS_VALID, CONTROL_PAIR_COUNT};
use crate::gpu::step::GpuStepper;
use crate::gpu::{GpuContext, GpuError};
use crate::state::SimState;

/// Frames whose starting state is kept on the device for a redo: a frame's contact counters
/// come back while at most three newer frames are in flight (`World`'s limit).
pub(super) const SNAPSHOTS: usize = 4;

/// A body whose state a repacked stepper takes over ([`GpuStepper::carry_over`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CarriedBody {
    /// Its vertices in the old and the new packing.
    pub from: std::ops::Range<usize>,
    /// See `from`.
    pub to: std::ops::Range<usize>,
    /// Its index among the bodies, old and new.
    pub from_body: usize,
    /// See `from_body`.
    pub to_body: usize,
}

/// What an edit of a body's state changed ([`GpuStepper::upload_range`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditedField {
    /// Positions (a teleport).
    Positions,
    /// Velocities.
    Velocities,
}

/// Copies of the dynamic state (positions, velocities, accelerations, flags) at the start of
/// the last [`SNAPSHOTS`] frames, slot `frame % SNAPSHOTS`.
pub(super) struct Snapshots {
    pub(super) slots: Vec<[wgpu::Buffer; 4]>,
    pub(super) frames: [u64; SNAPSHOTS],
}

impl Snapshots {
    pub(super) fn new(ctx: &GpuContext, n: usize) -> Self {
        let slot = || {
            [
                output::<Vec4>(ctx, "snapshot positions", n),
                output::<Vec4>(ctx, "snapshot velocities", n),
                output::<Vec4>(ctx, "snapshot accelerations", n),
                output::<u32>(ctx, "snapshot flags", n),
            ]
        };
        Self { slots: (0..SNAPSHOTS).map(|_| slot()).collect(), frames: [u64::MAX; SNAPSHOTS] }
    }
}

impl GpuStepper {
    /// Submits a partly recorded frame, if any (before reading or replacing the state).
    fn flush_pending(&mut self) {
        if let Some(encoder) = self.pending.take() {
            self.submitter.submit(encoder, None);
            self.pending_substeps = 0;
        }
    }

    /// The stepper of a repacked state (bodies added or removed) that continues from this one
    /// without waiting for it: `st` supplies the new layout and the new bodies' state; each
    /// surviving body's dynamic state and rollback counters are copied on the device from this
    /// stepper's buffers (`moves`: old and new vertex range, old and new body index), after the
    /// frames this stepper has in flight, through the same queue thread.
    pub fn carry_over(
        mut self,
        st: &SimState,
        obstacles: &[Obstacle],
        moves: &[CarriedBody],
    ) -> Result<GpuStepper, GpuError> {
        self.flush_pending();
        let next = Self::build(self.ctx.clone(), st, obstacles, Some(self.submitter.clone()))?;
        let mut encoder =
            self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("carry over") });
        let (old, new) = (&self.buffers, &next.buffers);
        let vertex = size_of::<Vec4>() as u64;
        let counters = (ROLLBACK_WORDS * size_of::<u32>()) as u64;
        for m in moves {
            debug_assert_eq!(m.from.len(), m.to.len());
            let bytes = m.from.len() as u64 * vertex;
            for (a, b) in [
                (&old.positions, &new.positions),
                (&old.velocities, &new.velocities),
                (&old.accelerations, &new.accelerations),
            ] {
                encoder.copy_buffer_to_buffer(a, m.from.start as u64 * vertex, b, m.to.start as u64 * vertex, bytes);
            }
            encoder.copy_buffer_to_buffer(
                &old.rollbacks,
                m.from_body as u64 * counters,
                &new.rollbacks,
                m.to_body as u64 * counters,
                counters,
            );
        }
        next.submitter.submit(encoder, None);
        Ok(next)
    }

    /// The contact history (the last detection's pairs and bounds) no longer describes the
    /// state: the next step detects afresh.
    pub(super) fn forget_contacts(&self) {
        let control = &self.buffers.control;
        for word in [CONTROL_PAIR_COUNT, CONTROL_BOUNDS_VALID] {
            self.submitter.write(control, (word * size_of::<u32>()) as u64, &0u32.to_ne_bytes());
        }
    }

    /// The residual rule's windows of soft flags describe steps that are being replaced (a
    /// rewind, or state from the host): they start empty.
    fn forget_soft_flags(&self) {
        let zeros = vec![0u8; self.bodies as usize * SOFT_WORDS * size_of::<u32>()];
        self.submitter.write(&self.buffers.soft, 0, &zeros);
    }

    /// Marks the bodies whose pins move in the frame being recorded (`driven`, one per body):
    /// the energy test skips their islands (the pins do work it cannot account for). Lands
    /// before the frame's commands, after the frames in flight.
    pub fn set_driven(&mut self, driven: &[bool]) {
        let words = &mut self.driven_words;
        words.clear();
        words.resize(ENERGY_WORDS * self.bodies as usize, 0);
        for (block, &d) in words.chunks_mut(ENERGY_WORDS).zip(driven) {
            block[DRIVEN] = u32::from(d);
        }
        self.submitter.write(&self.buffers.energy, 0, bytemuck::cast_slice(words));
    }

    /// Puts the dynamic state back to what it was at the start of frame `frame`, on the
    /// device, if that frame's snapshot is still kept; the contact history is forgotten (as
    /// after an upload). Frames already submitted still run first; the caller records `frame`
    /// and the ones after it again.
    pub fn restore_frame(&mut self, frame: u64) -> bool {
        let Some(snapshots) = &self.snapshots else { return false };
        let slot = (frame % SNAPSHOTS as u64) as usize;
        if snapshots.frames[slot] != frame || self.pending.is_some() {
            return false;
        }
        let b = &self.buffers;
        let mut encoder =
            self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("restore frame") });
        for (from, to) in snapshots.slots[slot].iter().zip([&b.positions, &b.velocities, &b.accelerations, &b.flags]) {
            encoder.copy_buffer_to_buffer(from, 0, to, 0, None);
        }
        self.forget_contacts();
        self.forget_soft_flags();
        self.submitter.submit(encoder, None);
        true
    }

    /// Overwrites the dynamic state (positions, velocities, accelerations, flags) from `st`
    /// (the host copy, edited after a download).
    pub fn upload_dynamic(&self, st: &SimState) {
        let (q, b) = (&self.submitter, &self.buffers);
        q.write(&b.positions, 0, bytemuck::cast_slice(&st.positions));
        q.write(&b.velocities, 0, bytemuck::cast_slice(&st.velocities));
        q.write(&b.accelerations, 0, bytemuck::cast_slice(&st.accelerations));
        q.write(&b.flags, 0, bytemuck::cast_slice(&st.flags));
        self.forget_soft_flags();
    }

    /// Writes `field` and the flags of vertices `range` from `st` to the device, after the
    /// frames in flight (an edit of one body; the other vertices keep the device's state).
    pub fn upload_range(&self, st: &SimState, range: std::ops::Range<usize>, field: EditedField) {
        let (q, b) = (&self.submitter, &self.buffers);
        let at = range.start as u64 * size_of::<Vec4>() as u64;
        let (buffer, values) = match field {
            EditedField::Positions => (&b.positions, &st.positions[range.clone()]),
            EditedField::Velocities => (&b.velocities, &st.velocities[range.clone()]),
        };
        q.write(buffer, at, bytemuck::cast_slice(values));
        let at = range.start as u64 * size_of::<u32>() as u64;
        q.write(&b.flags, at, bytemuck::cast_slice(&st.flags[range]));
    }

    /// Waits for the GPU (submitting a partly recorded frame first) and copies its dynamic
    /// state into `st` (same topology); returns the rollback counts with it.
    pub fn download_blocking(&mut self, st: &mut SimState) -> Result<Vec<Rollbacks>, GpuError> {
        self.flush_pending();
        // Everything handed to the queue thread is on the queue before this thread reads.
        self.submitter.fence();
        let n = self.vertices as usize;
        let b = &self.buffers;
        st.positions = read_blocking(&self.ctx, &b.positions, n)?;
        st.velocities = read_blocking(&self.ctx, &b.velocities, n)?;
        st.accelerations = read_blocking(&self.ctx, &b.accelerations, n)?;
        st.flags = read_blocking(&self.ctx, &b.flags, n)?;
        let words: Vec<u32> = read_blocking(&self.ctx, &b.rollbacks, self.bodies as usize * ROLLBACK_WORDS)?;
        Ok(decode(&words))
    }
}
