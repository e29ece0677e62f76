//! A GPU step's frames on their way back: the copy of each submitted frame's state and
//! counters into the readback ring, and what the host decodes from it without waiting
//! (rollbacks, surface contact's counters, the GPU fallback's).

use glam::Vec4;

use crate::gpu::GpuError;
use crate::gpu::al::al_gate;
use crate::gpu::al::al_outer::OuterState;
use crate::gpu::check::step_guard::{ROLLBACK_WORDS, Rollbacks, decode};
use crate::gpu::contact::layout::{CONTROL_HEADER, ContactStats};
use crate::gpu::step::GpuStepper;
use crate::gpu::step::clock::CLOCK_BYTES;

/// A finished frame, read back without waiting.
#[derive(Clone, Debug)]
pub struct GpuFrame {
    /// Frame number (as passed to [`GpuStepper::submit_frame`]).
    pub frame: u64,
    /// Positions at the frame's end (vec4, w = 0).
    pub positions: Vec<Vec4>,
    /// Velocities at the frame's end.
    pub velocities: Vec<Vec4>,
    /// Per body: substeps rolled back since the state was uploaded, and the last one's cause.
    pub rollbacks: Vec<Rollbacks>,
}

/// The GPU fallback's counters (`al_gate`), counting up from the stepper's upload.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FallbackCounts {
    /// Substeps the fallback redid (failures and holds).
    pub runs: u32,
    /// Substeps it redid because the check failed.
    pub failures: u32,
    /// Substeps of hold left.
    pub hold: u32,
    /// The last run's outer iterations.
    pub iterations: u32,
    /// The last run converged (its first iterates weigh less than ε) and answered with its
    /// last iterate.
    pub converged: bool,
    /// Share of its step the last run travelled.
    pub travelled: f32,
}

impl FallbackCounts {
    fn decode(words: &[u32]) -> Self {
        Self {
            runs: words[al_gate::CONTROL_RUNS],
            failures: words[al_gate::CONTROL_FAILURES],
            hold: words[al_gate::CONTROL_HOLD],
            iterations: words[al_gate::CONTROL_ITERATIONS],
            converged: OuterState::decode(words[al_gate::CONTROL_END]) == Some(OuterState::Converged)
                && words[al_gate::CONTROL_REWOUND] == 0,
            travelled: f32::from_bits(words[al_gate::CONTROL_TRAVELLED]),
        }
    }
}

/// What a finished frame says besides its state.
#[derive(Clone, Debug)]
pub struct FrameTail {
    /// Per body: substeps rolled back since the state was uploaded, and the last one's cause.
    pub rollbacks: Vec<Rollbacks>,
    /// What surface contact found in the frame.
    pub contact: ContactStats,
    /// The GPU fallback's counters.
    pub fallback: FallbackCounts,
    /// The frame's time on the GPU's clock \[ms\], from its first dispatch to its last
    /// (`None` where the adapter has no timestamp queries).
    pub gpu_ms: Option<f64>,
}

/// Bytes of the gate's words in a frame read back.
const GATE_BYTES: usize = al_gate::CONTROL_WORDS * size_of::<u32>();

impl GpuStepper {
    /// Bytes of a frame read back: positions, velocities, rollback counts, the `control`
    /// header, the fallback's gate, the frame's timestamps.
    pub(super) fn frame_bytes(n: usize, bodies: usize) -> u64 {
        (2 * n * size_of::<Vec4>()
            + bodies * ROLLBACK_WORDS * size_of::<u32>()
            + CONTROL_HEADER * size_of::<u32>()
            + GATE_BYTES) as u64
            + CLOCK_BYTES
    }

    /// Where the rollback counts start in a frame read back.
    fn rollback_bytes(&self) -> std::ops::Range<usize> {
        let at = 2 * self.vertices as usize * size_of::<Vec4>();
        at..at + self.bodies as usize * ROLLBACK_WORDS * size_of::<u32>()
    }

    /// Hands the recorded frame `frame`, with the copy of its state into the readback ring, to
    /// the queue thread; returns at once. Returns `false` when the ring is full (the host is
    /// behind): the frame still runs, only its readback is skipped, and a newer one will come
    /// back.
    pub fn submit_frame(&mut self, frame: u64) -> bool {
        let b = &self.buffers;
        let mut encoder = self.pending.take().unwrap_or_else(|| {
            self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("vbd frame") })
        });
        self.pending_substeps = 0;
        self.clock.resolve(&mut encoder);
        self.submitted_dispatches = std::mem::take(&mut self.frame_dispatches);
        let n = self.vertices as u64 * size_of::<Vec4>() as u64;
        let counts = (self.bodies as usize * ROLLBACK_WORDS * size_of::<u32>()) as u64;
        let header = (CONTROL_HEADER * size_of::<u32>()) as u64;
        let parts = [
            (&b.positions, n),
            (&b.velocities, n),
            (&b.rollbacks, counts),
            (&b.control, header),
            (&b.gate, GATE_BYTES as u64),
            (self.clock.resolved(), CLOCK_BYTES),
        ];
        let ticket = self.ring.record(&mut encoder, &parts, frame);
        let recorded = ticket.is_some();
        if let Some(profiler) = &self.profiler {
            profiler.resolve(&mut encoder);
        }
        self.submitter.submit(encoder, ticket.map(|t| (self.ring.clone(), t)));
        if let Some(profiler) = self.profiler.as_mut() {
            // A diagnostic: the frame's timestamps are waited for here.
            self.submitter.fence();
            if let Err(e) = profiler.collect(&self.ctx) {
                log::warn!("pliant: GPU kernel profile lost a frame: {e}");
            }
        }
        recorded
    }

    /// The number of the newest frame that has come back, without waiting (the queue thread
    /// polls the device), its rollback counts and its contact counters: a few bytes, read in
    /// place.
    pub fn newest_frame(&self) -> Result<Option<(u64, FrameTail)>, GpuError> {
        if self.ring.newest()?.is_none() {
            return Ok(None);
        }
        let at = self.rollback_bytes().start as u64;
        let end = Self::frame_bytes(self.vertices as usize, self.bodies as usize);
        self.ring.read_newest(at..end, |b| self.decode_tail(b))
    }

    /// Rollback counts, contact counters and the fallback's counters from the bytes of a frame
    /// after its velocities.
    fn decode_tail(&self, bytes: &[u8]) -> FrameTail {
        let words: Vec<u32> = bytemuck::pod_collect_to_vec(bytes);
        let (counts, rest) = words.split_at(self.bodies as usize * ROLLBACK_WORDS);
        let (header, rest) = rest.split_at(CONTROL_HEADER);
        let (gate, clock) = rest.split_at(al_gate::CONTROL_WORDS);
        FrameTail {
            rollbacks: decode(counts),
            contact: ContactStats::decode(header, self.contact_capacity()),
            fallback: FallbackCounts::decode(gate),
            gpu_ms: self.clock.decode(clock),
        }
    }

    /// Copies the newest frame that has come back (positions and velocities) and frees its
    /// staging buffer; `None` when none has. Costs a copy of 32 bytes per vertex.
    pub fn take_frame(&self) -> Result<Option<GpuFrame>, GpuError> {
        let Some((frame, bytes)) = self.ring.take_latest::<u8>()? else { return Ok(None) };
        let n = self.vertices as usize * size_of::<Vec4>();
        let positions = bytemuck::pod_collect_to_vec(&bytes[..n]);
        let velocities = bytemuck::pod_collect_to_vec(&bytes[n..2 * n]);
        let FrameTail { rollbacks, .. } = self.decode_tail(&bytes[self.rollback_bytes().start..]);
        Ok(Some(GpuFrame { frame, positions, velocities, rollbacks }))
    }
}
