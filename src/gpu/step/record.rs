//! Recording a GPU substep: the frame's snapshot and pin targets, the control words, then the
//! substep's dispatches in the step's phases, in one compute pass.

use glam::Vec4;

use super::program::Program;
use super::transfer::{SNAPSHOTS, Snapshots};
use super::{FrameTag, GpuStepSettings, GpuStepper};
use crate::collision::Obstacle;
use crate::gpu::GpuError;
use crate::gpu::buffers::output;
use crate::gpu::contact::layout::{CONTROL_ADVANCE_NEEDED, CONTROL_DETECTIONS, CONTROL_FRAME, CONTROL_HEADER};
use crate::gpu::contact::program::REBUILD_INTERVAL;
use crate::gpu::kernel::{Bound, dispatches_recorded};
use crate::gpu::obstacles::GpuObstacleSet;

impl GpuStepper {
    /// Records one substep of a frame (nothing is submitted yet). `targets` (end-of-substep
    /// positions of kinematic vertices, one per vertex) is needed when the scene has pins;
    /// `substeps` is the frame's substep count.
    pub fn record_substep(
        &mut self,
        tag: FrameTag,
        settings: &GpuStepSettings,
        obstacles: &[Obstacle],
        targets: Option<&[Vec4]>,
        substeps: u32,
    ) -> Result<(), GpuError> {
        let packed = GpuObstacleSet::pack(obstacles)?;
        self.program(settings, &packed);
        if (settings.surface_contact().is_some() || settings.check) && self.snapshots.is_none() {
            self.snapshots = Some(Snapshots::new(&self.ctx, self.vertices as usize));
        }
        let n_bytes = self.vertices as u64 * size_of::<Vec4>() as u64;
        if targets.is_some() && self.frame_targets.as_ref().is_none_or(|(_, cap)| *cap < substeps) {
            let buffer = output::<Vec4>(&self.ctx, "frame targets", self.vertices as usize * substeps as usize);
            self.frame_targets = Some((buffer, substeps));
        }
        let Self {
            ctx,
            buffers: b,
            program,
            pending,
            pending_substeps,
            frame_targets,
            submitter,
            kinematic,
            bodies,
            since_build,
            snapshots,
            clock,
            frame_dispatches,
            profiler,
            ..
        } = self;
        let p = program.as_ref().unwrap_or_else(|| unreachable!("bound above"));
        let encoder = pending.get_or_insert_with(|| {
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("vbd frame") })
        });
        if let Some(snap) = snapshots.as_mut().filter(|_| *pending_substeps == 0) {
            // Only a frame's start can be restored; a stepper made mid-frame keeps none of it.
            let slot = (tag.frame % SNAPSHOTS as u64) as usize;
            snap.frames[slot] = u64::MAX;
            if tag.substep == 0 {
                for (from, to) in
                    [&b.positions, &b.velocities, &b.accelerations, &b.flags].into_iter().zip(&snap.slots[slot])
                {
                    encoder.copy_buffer_to_buffer(from, 0, to, 0, None);
                }
                snap.frames[slot] = tag.frame;
            }
        }
        if let (Some(t), Some((all, _))) = (targets, frame_targets.as_ref())
            && kinematic.end > kinematic.start
        {
            let vec4 = size_of::<Vec4>() as u64;
            let (first, bytes) = (kinematic.start as u64 * vec4, kinematic.len() as u64 * vec4);
            let at = *pending_substeps as u64 * n_bytes + first;
            submitter.write(all, at, bytemuck::cast_slice(&t[kinematic.clone()]));
            encoder.copy_buffer_to_buffer(all, at, &b.targets, first, bytes);
        }
        let word = |w: usize| (w * size_of::<u32>()) as u64;
        if *pending_substeps == 0 {
            // The frame's counters (detections, advances), and which frame runs.
            encoder.clear_buffer(&b.control, word(CONTROL_DETECTIONS), Some(word(2)));
            let id = (tag.id as u32).wrapping_add(1);
            submitter.write(&b.control, word(CONTROL_FRAME), &id.to_ne_bytes());
        }
        encoder.clear_buffer(&b.control, word(CONTROL_ADVANCE_NEEDED), Some(word(1)));
        encoder.clear_buffer(&b.control, word(CONTROL_HEADER), Some(word(*bodies as usize)));
        encoder.clear_buffer(&b.smallest, 0, None);
        encoder.clear_buffer(&b.bad, 0, None);
        let rebuild = *since_build == 0;
        *since_build = (*since_build + 1) % REBUILD_INTERVAL;
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("vbd substep"),
                timestamp_writes: clock.pass_writes(*pending_substeps == 0),
            });
            let before = dispatches_recorded();
            let record = |pass: &mut wgpu::ComputePass<'_>| record_phases(p, pass, settings.vbd.iterations, rebuild);
            match profiler.as_mut() {
                Some(profiler) => profiler.around(&mut pass, record),
                None => record(&mut pass),
            }
            *frame_dispatches += (dispatches_recorded() - before) as u32;
        }
        *pending_substeps += 1;
        Ok(())
    }
}

/// Records the substep's dispatches in the step's phases (`rebuild`: the contact trees are
/// built again this substep).
fn record_phases(p: &Program, pass: &mut wgpu::ComputePass<'_>, iterations: u32, rebuild: bool) {
    // Consecutive dispatches of one pipeline skip setting it again (the colour passes share
    // one).
    let mut recorder = Recorder { pass, last: None };
    // Check: the start's energies, before anything moves.
    recorder.all(&p.check_start);
    // Predict: inertia targets, the initial guess and its rigid correction.
    recorder.all(&p.predict);
    // Detect: the trees (now and then), the spans' limit on the advance, the CCD-limited
    // advance, a detection, the span contacts.
    let (detect, redetect, interval): (Vec<&Bound>, Vec<&Bound>, u32) = match &p.contact {
        Some((c, interval)) => {
            let rebuild = c.rebuild.iter().filter(|_| rebuild);
            let detect = rebuild.chain(&c.advance).chain([&c.detect]).chain(&c.detection).collect();
            (detect, [&c.redetect].into_iter().chain(&c.detection).collect(), *interval)
        }
        None => (Vec::new(), Vec::new(), 0),
    };
    // The spans' limit goes first, as on the CPU: surface contact's advance then certifies
    // what is left of the paths.
    if let Some((limit, _)) = &p.spans {
        recorder.all(limit);
    }
    recorder.all(detect);
    if let Some((_, spans)) = &p.spans {
        recorder.all([spans]);
    }
    // Solve: per sweep a scheduled re-detection, the colours, (after the first, the check's
    // residual sum), the divergence guard and the Chebyshev mix.
    for sweep in 0..iterations as usize {
        if interval > 0 && sweep > 0 && (sweep as u32).is_multiple_of(interval) {
            recorder.all(redetect.iter().copied());
        }
        recorder.all(&p.colors);
        recorder.all(p.first_sweep.as_ref().filter(|_| sweep == 0));
        recorder.all(&p.divergence);
        recorder.all(p.chebyshev.get(sweep));
    }
    // The fast path's finish (velocities), then the check: non-finite state, energies, soft
    // flags, hard tests.
    recorder.all([&p.finish]);
    recorder.all(&p.check);
    let pass = recorder.pass;
    // Fall back: the device's redo of an unsafe substep, run only when its gate opens; a
    // non-finite answer (absurd input) is put back at rest by the guard.
    if let Some((fallback, flag)) = &p.fallback {
        fallback.record(pass);
        flag.record(pass);
    }
    // Finish: unsafe or non-finite bodies back at the substep's start, and the count.
    p.settle.iter().for_each(|d| d.record(pass));
}

/// Records dispatches into a pass, skipping the pipeline change between dispatches of one
/// pipeline.
struct Recorder<'r, 'p, 'b> {
    pass: &'r mut wgpu::ComputePass<'p>,
    last: Option<&'b Bound>,
}

impl<'b> Recorder<'_, '_, 'b> {
    fn all(&mut self, dispatches: impl IntoIterator<Item = &'b Bound>) {
        for d in dispatches {
            if self.last.is_some_and(|l| l.same_pipeline(d)) {
                d.record_same_pipeline(self.pass);
            } else {
                d.record(self.pass);
            }
            self.last = Some(d);
        }
    }
}
