//! The GPU world's finished frames on the host: what each readback says (rollbacks, the GPU
//! fallback's counters, surface contact's counters) reported in the step's report and as
//! events, and the newest frame copied into the host state when asked for.

use crate::body::SoftBodyHandle;
use crate::gpu::GpuError;
use crate::gpu::al::al_gate::REDONE;
use crate::gpu::check::step_guard::{BAD_POSITION, BAD_VELOCITY, Rollbacks};
use crate::gpu::contact::layout::ContactStats;
use crate::runtime::events::PliantEvent;
use crate::runtime::report::StepReport;
use crate::runtime::world::World;
use crate::runtime::world::gpu::{Submitted, check};

impl World {
    /// The number and start time of the submitted frame `id`, or `None` when a redo superseded
    /// it (or it is too old to be remembered).
    pub(super) fn submitted(&self, id: u64) -> Option<Submitted> {
        self.gpu.submitted.iter().find(|s| s.id == id).copied()
    }

    /// Reports the rollbacks and contact counters of the newest finished frame, if one arrived,
    /// in `report` and as events; the frame's positions stay in the ring until asked for (a step
    /// does not copy the state). Returns how many frames a redo rewound.
    pub(super) fn receive_frame(&mut self, report: &mut StepReport) -> Result<u32, GpuError> {
        let Some(stepper) = &self.gpu.stepper else { return Ok(0) };
        let Some((id, tail)) = stepper.newest_frame()? else { return Ok(0) };
        let Some(frame) = self.submitted(id) else { return Ok(0) };
        report.gpu_ms = tail.gpu_ms;
        self.report_rollbacks(&tail.rollbacks, frame.start, report);
        self.report_gpu_fallback(&tail.fallback, report);
        self.mark_checked(frame.frame);
        if id < self.gpu.contact_seen {
            return Ok(0);
        }
        self.gpu.contact_seen = id + 1;
        Ok(self.report_contact(&tail.contact, report))
    }

    /// Reports what surface contact found in a finished frame. When a detection found more
    /// pairs than the GPU's pair buffer holds, that frame stayed free of crossings (the pairs
    /// that did not fit bounded their vertices) but lacked their contact forces: the buffer
    /// grows and, unless the host copy was edited since, the world goes back to the start of
    /// the first such frame (kept on the device) so that it and the frames after it are stepped
    /// again. Returns how many frames are to be stepped again.
    pub(super) fn report_contact(&mut self, contact: &ContactStats, report: &mut StepReport) -> u32 {
        report.contact_pairs = contact.pairs;
        report.min_pair_distance =
            (contact.detections > 0 && contact.min_distance.is_finite()).then_some(contact.min_distance);
        if contact.dropped == 0 {
            return 0;
        }
        // The overflow counters are sticky until acted on: the first overflowing frame may have
        // come back together with newer ones, or not at all (a full readback ring).
        let overflowed = contact
            .overflow_frame
            .and_then(|low| self.gpu.submitted.iter().find(|s| s.id as u32 == low as u32).copied());
        let Some(stepper) = self.gpu.stepper.as_mut() else { return 0 };
        let capacity = stepper.contact_capacity();
        stepper.acknowledge_overflow();
        let Some(frame) = overflowed else {
            // Superseded by a redo already, or too old to step again: grow only.
            stepper.grow_contacts(contact.requested);
            return 0;
        };
        report.contact_pairs_dropped = contact.dropped;
        stepper.grow_contacts(contact.requested);
        let redo = !self.gpu.dirty && stepper.restore_frame(frame.frame);
        log::warn!(
            "pliant: a GPU contact detection of frame {} found {} more pairs than its buffer holds: grown{}",
            frame.frame,
            contact.dropped,
            if redo { ", frame stepped again" } else { "" }
        );
        let redone = if redo { (self.frame + 1 - frame.frame) as u32 } else { 0 };
        self.events.push(PliantEvent::ContactOverflow {
            frame: frame.frame,
            pairs: contact.requested,
            capacity,
            redone: redone > 0,
        });
        if redo {
            // Frames submitted from this one on are superseded: their readbacks are ignored.
            self.gpu.submitted.retain(|s| s.frame < frame.frame);
            self.frame = frame.frame - 1;
            self.time = frame.start;
            self.gpu.host_frame = self.gpu.host_frame.min(self.frame);
        }
        redone
    }

    /// Copies the newest finished frame into the host copy when it is newer (an edited or
    /// downloaded host copy is newer than any frame in the ring).
    pub(super) fn take_frame(&mut self) -> Result<(), GpuError> {
        let Some(stepper) = &self.gpu.stepper else { return Ok(()) };
        let Some(read) = stepper.take_frame()? else { return Ok(()) };
        let Some(frame) = self.submitted(read.frame) else { return Ok(()) };
        self.report_rollbacks(&read.rollbacks, frame.start, &mut StepReport::default());
        self.mark_checked(frame.frame);
        if !self.gpu.dirty && frame.frame > self.gpu.host_frame {
            self.state.positions = read.positions;
            self.state.velocities = read.velocities;
            self.gpu.host_frame = frame.frame;
        }
        Ok(())
    }

    /// Reports the rollbacks counted since the last report: in `report`, and as one event per
    /// body (several substeps rolled back between two readbacks make one event, with the last
    /// one's cause) dated `time`, the start of the frame read back.
    pub(super) fn report_rollbacks(&mut self, counts: &[Rollbacks], time: f64, report: &mut StepReport) {
        let mut seen = std::mem::take(&mut self.gpu.rollbacks_seen);
        for (b, r) in counts.iter().enumerate() {
            let (Some(seen), Some(slot)) = (seen.get_mut(b), self.slots.get(b).copied()) else { continue };
            self.report_rollback(slot.handle, slot.vertex_start, r, seen, time, report);
        }
        self.gpu.rollbacks_seen = seen;
    }

    /// Reports body `handle`'s rollbacks beyond the `seen` ones (its vertices start at
    /// `vertex_start` in the packing the counts come from).
    pub(super) fn report_rollback(
        &mut self,
        handle: SoftBodyHandle,
        vertex_start: u32,
        r: &Rollbacks,
        seen: &mut u32,
        time: f64,
        report: &mut StepReport,
    ) {
        if r.count <= *seen {
            return;
        }
        *seen = r.count;
        if let Some(reason) = check::unsafe_reason(r.fields) {
            if r.fields & REDONE != 0 {
                // Redone on the device by the GPU's fallback: reported (the island with the
                // fallback's counters, `report_gpu_fallback`); nothing is stepped again.
                let name = self.bodies.get(handle).map_or_else(String::new, |b| b.name().to_owned());
                log::info!("pliant: body `{name}`: GPU step failed the safety check ({reason:?}), redone on the GPU");
                self.gpu.redone_on_gpu.push(reason);
                self.events.push(PliantEvent::UnsafeStep { body: handle, name, time, reason, redone: true });
                return;
            }
            // Finite but unsafe: acted on by the step (a redo, or the fallback from now on).
            if !self.gpu.unsafe_found.iter().any(|(b, _)| *b == handle) {
                self.gpu.unsafe_found.push((handle, reason));
            }
            return;
        }
        report.nan_detected = true;
        report.rolled_back.push(handle);
        let field = match r.fields {
            f if f & BAD_POSITION != 0 => "position",
            f if f & BAD_VELOCITY != 0 => "velocity",
            _ => "acceleration",
        };
        self.events.push(PliantEvent::NonFiniteState {
            body: handle,
            name: self.bodies.get(handle).map_or_else(String::new, |b| b.name().to_owned()),
            time,
            vertex: r.vertex.saturating_sub(vertex_start),
            field,
        });
    }
}
