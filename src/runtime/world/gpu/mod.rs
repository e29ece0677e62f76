//! `World` on the GPU backend: choosing it, falling back to the CPU with a reason, stepping
//! without waiting, and bringing finished frames into the host copy of the state.
//!
//! The host `SimState` stays the world's state of record for everything but the dynamic arrays,
//! which live on the device while the GPU steps: the host copy of positions and velocities is
//! the newest finished frame (one or two frames behind), and every operation that needs the
//! current state (inserting or removing bodies, teleporting, pins taking hold or releasing,
//! switching backend) first waits for the GPU and downloads it.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use glam::Vec4;

use crate::body::SoftBodyHandle;
use crate::gpu::step::{CarriedBody, EditedField, FrameTag, GpuStepSettings, GpuStepper, unsupported};
use crate::gpu::{GpuContext, GpuError, GpuOptions};
use crate::runtime::FallbackReason;
use crate::runtime::assemble::rebuild_color_lists;
use crate::runtime::config::{Backend, ConfigError, FallbackPolicy, StepConfig};
use crate::runtime::events::PliantEvent;
use crate::runtime::kinematics::{pin_set_changes, update_pin_flags, write_targets};
use crate::runtime::report::StepReport;
use crate::runtime::world::World;
use crate::solver::vbd::contact::surface_contact_on;
use crate::state::SimState;
use crate::state::VERTEX_KINEMATIC;

mod check;
mod frames;

/// Frames whose start time is remembered, to date the rollbacks they report.
const FRAME_TIMES: usize = 8;
/// Frames handed to the GPU and not finished beyond which `step()` adds none (and says so in
/// `StepReport::gpu_busy`): three, as a swap chain buffers frames.
const MAX_FRAMES_IN_FLIGHT: usize = 3;

/// A frame handed to the GPU: the id its readback carries, its number, and the simulated time
/// at its start.
#[derive(Clone, Copy, Debug)]
struct Submitted {
    id: u64,
    frame: u64,
    start: f64,
}

/// A stepper whose bodies changed: the surviving bodies' state is still on it (and on the
/// frames it has in flight); the next GPU step builds the new stepper from it on the device,
/// without waiting ([`GpuStepper::carry_over`]).
#[derive(Debug)]
struct Carry {
    old: GpuStepper,
    /// Every body of the old packing: handle, vertices, index.
    bodies: Vec<(SoftBodyHandle, Range<usize>, usize)>,
    /// The rollbacks already reported, per old body.
    seen: Vec<u32>,
}

/// The GPU side of a world.
#[derive(Debug, Default)]
pub(super) struct GpuRuntime {
    /// The device, when the backend asks for one and an adapter was found.
    ctx: Option<Arc<GpuContext>>,
    /// The state on the device (built on the first GPU step after each topology change).
    stepper: Option<GpuStepper>,
    /// After bodies were added or removed, until the next GPU step: the old stepper.
    carry: Option<Carry>,
    /// Times the caller's thread waited for the GPU to bring its state over (tests count them).
    downloads: u64,
    /// The host copy was edited: upload it before the next GPU step.
    dirty: bool,
    /// The frame the host copy holds.
    host_frame: u64,
    /// Recent submitted frames. A frame read back whose id is not here was superseded by a
    /// redo and is ignored.
    submitted: VecDeque<Submitted>,
    /// The id the next submitted frame gets.
    next_id: u64,
    /// The id of the newest frame whose contact counters were acted on.
    contact_seen: u64,
    /// Why steps run on the CPU although the GPU was asked for (last reported).
    fallback: Option<String>,
    /// Per body: the rollbacks already reported (the GPU counts them since the upload).
    rollbacks_seen: Vec<u32>,
    /// The substeps the GPU's fallback redid that were already reported (counted since the
    /// stepper was made).
    fallback_runs_seen: u32,
    /// Why the GPU's fallback redid bodies' substeps, read back and not yet reported in an
    /// island.
    redone_on_gpu: Vec<FallbackReason>,
    /// Per body, while a frame is recorded: a pin of it moved (kept to spare an allocation).
    driven: Vec<bool>,
    /// The newest frame read back that its safety check passed: a body the check rejects
    /// later was rejected in a frame after it, so a redo starts right after it.
    checked_frame: u64,
    /// Bodies the GPU's check rejected, read back and not yet acted on.
    unsafe_found: Vec<(SoftBodyHandle, FallbackReason)>,
    /// Frames are profiled kernel by kernel (`World::set_gpu_profiling`).
    profiling: bool,
}

impl GpuRuntime {
    /// The GPU context for `config`'s backend: none for the CPU; for the GPU a missing adapter
    /// is an error; for `Auto` it, or an adapter that is a software rasterizer picked unasked,
    /// is the fallback reason.
    pub(super) fn open(
        config: &StepConfig,
        shared: Option<Arc<GpuContext>>,
    ) -> Result<(Self, Option<String>), ConfigError> {
        if config.backend == Backend::Cpu {
            return Ok((Self::default(), None));
        }
        // An adapter the caller chose (by name, or a device of its own) is used whatever it is.
        let chosen = shared.is_some() || config.gpu_adapter.is_some();
        let ctx = match shared {
            Some(ctx) => Ok(ctx),
            None => GpuContext::shared(&GpuOptions {
                adapter_name: config.gpu_adapter.clone(),
                power_preference: wgpu::PowerPreference::HighPerformance,
            }),
        };
        match ctx {
            // wgpu ranks software rasterizers (lavapipe, WARP, SwiftShader) last, so one comes
            // back only when no hardware adapter exists; it runs the kernels on the CPU cores,
            // many times slower than the CPU path (BENCHMARKS.md), so `Auto` takes that path.
            Ok(ctx)
                if config.backend == Backend::Auto
                    && !chosen
                    && ctx.adapter_info.device_type == wgpu::DeviceType::Cpu =>
            {
                let reason = format!(
                    "the only GPU adapter is a software one ({}), slower than the CPU path; name it in `gpu_adapter` or choose Backend::Gpu to step on it",
                    ctx.adapter_info.name
                );
                Ok((Self::default(), Some(reason)))
            }
            Ok(ctx) => {
                // While the caller loads its scene: the first step should not compile.
                ctx.warm_up();
                Ok((Self { ctx: Some(ctx), ..Self::default() }, None))
            }
            Err(e) if config.backend == Backend::Gpu => Err(ConfigError {
                field: "backend",
                value: format!("gpu ({e})"),
                reason: "needs a GPU adapter; Backend::Auto falls back to the CPU",
            }),
            Err(e) => Ok((Self::default(), Some(format!("no GPU: {e}")))),
        }
    }

    pub(super) fn context(&self) -> Option<&Arc<GpuContext>> {
        self.ctx.as_ref()
    }

    pub(super) fn stepper(&self) -> Option<&GpuStepper> {
        self.stepper.as_ref()
    }
}

impl World {
    /// A world stepping on a GPU context the caller already has (to share its device with a
    /// renderer, or to pick the adapter with [`GpuOptions`]); `config.backend` should be
    /// `Gpu` or `Auto`.
    pub fn with_gpu_context(config: StepConfig, ctx: Arc<GpuContext>) -> Result<Self, ConfigError> {
        let mut world = Self::new(StepConfig { backend: Backend::Cpu, ..config.clone() })?;
        world.config = config;
        world.open_backend(Some(ctx))?;
        Ok(world)
    }

    /// (Re)opens the backend the configuration asks for.
    pub(super) fn open_backend(&mut self, shared: Option<Arc<GpuContext>>) -> Result<(), ConfigError> {
        let reuse = shared.or_else(|| self.gpu.ctx.clone()).filter(|_| self.config.backend != Backend::Cpu);
        let (mut runtime, reason) = GpuRuntime::open(&self.config, reuse)?;
        self.pull_gpu_state();
        runtime.host_frame = self.frame;
        runtime.fallback = self.gpu.fallback.take();
        self.gpu = runtime;
        self.note_fallback(reason);
        Ok(())
    }

    /// Records why the GPU is not used (an event and a log line when the reason changes).
    fn note_fallback(&mut self, reason: Option<String>) {
        if self.config.backend == Backend::Cpu || self.gpu.fallback == reason {
            return;
        }
        match &reason {
            Some(r) => log::warn!("pliant: stepping on the CPU: {r}"),
            None => log::info!("pliant: stepping on the GPU"),
        }
        self.events.push(PliantEvent::BackendFallback { reason: reason.clone() });
        self.gpu.fallback = reason;
    }

    /// Waits for the GPU and copies its state into the host copy, which becomes current (a
    /// no-op on the CPU backend). Edits of the host copy after this are uploaded before the
    /// next GPU step.
    pub(super) fn pull_gpu_state(&mut self) {
        if let Some(carry) = self.gpu.carry.take() {
            self.pull_carried_state(carry);
            return;
        }
        let Some(stepper) = &mut self.gpu.stepper else { return };
        if self.gpu.dirty {
            // The host copy is already the current state, perhaps with edits the GPU has not
            // seen: downloading again would undo them.
            return;
        }
        self.gpu.downloads += 1;
        match stepper.download_blocking(&mut self.state) {
            Ok(rollbacks) => {
                self.gpu.host_frame = self.frame;
                self.gpu.dirty = true;
                let start = self.gpu.submitted.back().map_or(self.time, |s| s.start);
                self.report_rollbacks(&rollbacks, start, &mut StepReport::default());
            }
            Err(e) => {
                // The device is gone: carry on from the newest frame that came back.
                self.lose_gpu(&e);
            }
        }
    }

    /// As [`World::pull_gpu_state`] while a repacked state waits for its stepper: the
    /// surviving bodies' state comes from the old stepper, by handle.
    fn pull_carried_state(&mut self, mut carry: Carry) {
        let mut old = SimState::default();
        self.gpu.downloads += 1;
        let rollbacks = match carry.old.download_blocking(&mut old) {
            Ok(r) => r,
            Err(e) => {
                self.lose_gpu(&e);
                return;
            }
        };
        let start = self.gpu.submitted.back().map_or(self.time, |s| s.start);
        let mut report = StepReport::default();
        for (handle, from, b) in &carry.bodies {
            let Some(slot) = self.slots.iter().find(|s| s.handle == *handle).copied() else { continue };
            let to = slot.range();
            self.state.positions[to.clone()].copy_from_slice(&old.positions[from.clone()]);
            self.state.velocities[to.clone()].copy_from_slice(&old.velocities[from.clone()]);
            self.state.accelerations[to].copy_from_slice(&old.accelerations[from.clone()]);
            if let (Some(r), Some(seen)) = (rollbacks.get(*b), carry.seen.get_mut(*b)) {
                self.report_rollback(slot.handle, slot.vertex_start, r, seen, start, &mut report);
            }
        }
        self.gpu.host_frame = self.frame;
        self.gpu.dirty = true;
    }

    /// Before the bodies are repacked: keeps the stepper for [`GpuStepper::carry_over`] when
    /// the same body set changes and the device holds the current state; otherwise brings the
    /// state over to the host copy as for any change.
    pub(super) fn detach_gpu_state(&mut self, same_set: bool) {
        if same_set && self.gpu.carry.is_some() {
            // Still pending from an earlier change: it finds its bodies by handle.
            return;
        }
        // Another set's bodies carry nothing over; a current host copy is uploaded anew.
        let Some(old) = self.gpu.stepper.take_if(|_| same_set && !self.gpu.dirty) else {
            self.drop_gpu_state();
            return;
        };
        let bodies = self.slots.iter().enumerate().map(|(b, s)| (s.handle, s.range(), b)).collect();
        self.gpu.carry = Some(Carry { old, bodies, seen: std::mem::take(&mut self.gpu.rollbacks_seen) });
        // Frames of the old packing that come back are not read; none can be redone.
        self.gpu.submitted.clear();
    }

    /// The stepper for the current packing: carried over from the old one when bodies changed,
    /// or made from the host copy.
    fn make_stepper(&mut self, ctx: &Arc<GpuContext>) -> Result<GpuStepper, GpuError> {
        let bodies = self.state.bodies.len();
        self.gpu.fallback_runs_seen = 0;
        let Some(carry) = self.gpu.carry.take() else {
            self.gpu.rollbacks_seen = vec![0; bodies];
            return GpuStepper::new(ctx.clone(), &self.state, &self.obstacles);
        };
        let mut seen = vec![0; bodies];
        let mut moves = Vec::new();
        for (handle, from, b) in &carry.bodies {
            let Some((to_body, slot)) = self.slots.iter().enumerate().find(|(_, s)| s.handle == *handle) else {
                continue;
            };
            seen[to_body] = carry.seen.get(*b).copied().unwrap_or(0);
            moves.push(CarriedBody { from: from.clone(), to: slot.range(), from_body: *b, to_body });
        }
        self.gpu.rollbacks_seen = seen;
        carry.old.carry_over(&self.state, &self.obstacles, &moves)
    }

    /// Whether an edit can go straight to the device: the device holds the current state (not
    /// the host copy, and no repacked state waits for its stepper).
    pub(super) fn gpu_takes_edits(&self) -> bool {
        self.gpu.stepper.is_some() && self.gpu.carry.is_none() && !self.gpu.dirty
    }

    /// Writes the edited `field` of vertices `range` (and their flags) from the host copy to
    /// the device, after the frames in flight ([`World::begin_edit`] said it could).
    pub(super) fn finish_edit(&mut self, range: Range<usize>, field: EditedField) {
        if let Some(stepper) = &self.gpu.stepper {
            stepper.upload_range(&self.state, range, field);
        }
    }

    /// The device failed: its state cannot be trusted, so the world carries on on the CPU
    /// from the newest frame that came back (the host copy), with the reason reported.
    fn lose_gpu(&mut self, e: &dyn std::fmt::Display) {
        self.gpu.stepper = None;
        self.gpu.carry = None;
        self.gpu.ctx = None;
        self.note_fallback(Some(format!("the GPU failed: {e}")));
    }

    /// Forgets the device copy of the state (after pulling it): the next GPU step uploads the
    /// host copy again.
    pub(super) fn drop_gpu_state(&mut self) {
        self.pull_gpu_state();
        self.gpu.stepper = None;
    }

    /// Why the next step will not run on the GPU, or `None` when it will.
    pub fn why_not_gpu(&mut self) -> Option<String> {
        self.sync();
        if self.config.backend == Backend::Cpu {
            return Some("the configured backend is the CPU".into());
        }
        if self.gpu.ctx.is_none() {
            return Some(self.gpu.fallback.clone().unwrap_or_else(|| "no GPU".into()));
        }
        self.gpu_blocker()
    }

    /// Why this world's next step cannot run on the GPU, or `None` when it can.
    fn gpu_blocker(&self) -> Option<String> {
        unsupported(&self.state, &self.all_obstacles())
    }

    /// Steps on the GPU when the configuration asks for it and the scene allows it; `None`
    /// means the caller steps on the CPU (the reason, if new, is reported).
    pub(super) fn try_step_gpu(&mut self, wall: Instant, coupled: bool) -> Option<StepReport> {
        if self.config.backend == Backend::Cpu {
            return None;
        }
        if coupled {
            // The coupling reads each substep's contact and pin impulses on the host.
            self.drop_gpu_state();
            self.note_fallback(Some("rapier coupling steps on the CPU".into()));
            return None;
        }
        let ctx = self.gpu.ctx.clone()?;
        if let Some(e) = ctx.error() {
            // The device failed: its state cannot be trusted, so carry on on the CPU from the
            // newest frame that came back.
            let _ = self.take_frame();
            self.lose_gpu(&e);
            return None;
        }
        let blocker = self.gpu_blocker();
        if blocker.is_some() {
            self.drop_gpu_state();
        }
        let held = self.held_on_cpu();
        self.note_fallback(blocker.clone().or(held.clone()));
        if blocker.is_some() || held.is_some() {
            self.move_to_cpu_for_fallback();
            return None;
        }
        match self.step_gpu(ctx, wall) {
            Ok(Some(report)) => Some(report),
            Ok(None) => {
                // The check rejected a body: the frame is stepped again on the CPU.
                self.note_fallback(self.held_on_cpu());
                self.move_to_cpu_for_fallback();
                None
            }
            Err(e) => {
                self.lose_gpu(&e);
                None
            }
        }
    }

    /// Steps on the GPU; `None` when the frame is to be stepped on the CPU instead (the check
    /// rejected a body, whose frame was rewound).
    fn step_gpu(&mut self, ctx: Arc<GpuContext>, wall: Instant) -> Result<Option<StepReport>, GpuError> {
        let c = self.config.clone();
        let h = c.substep_dt();
        // The GPU's frame takes the configured sweeps (no budget planner) on the device.
        let vbd = c.vbd_settings(c.iterations, 1);
        let settings = GpuStepSettings {
            h,
            vbd,
            surface_on: surface_contact_on(&self.state, &vbd.surface_contact),
            contact_pairs: c.gpu_contact_pairs,
            check: c.fallback != FallbackPolicy::Never,
            island_margin: crate::runtime::fallback::island_margin(&c),
            fallback: self.gpu_fallback(h),
        };
        let mut report = StepReport {
            backend: Backend::Gpu,
            substeps: c.substeps,
            iterations: c.iterations,
            threads: 1,
            ..StepReport::default()
        };
        // Frames that finished come in (a frame whose contact detection overflowed the pair
        // buffer rewinds the world to redo it); when the GPU is MAX_FRAMES_IN_FLIGHT frames
        // behind, no frame is added: the caller's thread never waits, and the latency stays
        // bounded.
        let target = self.frame + 1;
        report.frames_redone = self.receive_frame(&mut report)?;
        let redone = self.settle_unsafe(true);
        if redone > 0 || self.held_on_cpu().is_some() {
            return Ok(None);
        }
        let busy = self.gpu.stepper.as_ref().is_some_and(|s| s.frames_in_flight() >= MAX_FRAMES_IN_FLIGHT);
        if busy && report.frames_redone == 0 {
            report.gpu_busy = true;
            report.frame = self.frame;
            report.time = self.time;
            report.state_frame = self.gpu.host_frame;
            report.game_thread_ms = wall.elapsed().as_secs_f64() * 1e3;
            report.wall_ms = report.game_thread_ms;
            return Ok(Some(report));
        }
        while self.frame < target {
            report.gpu_dispatches += self.record_frame(&ctx, &settings)?;
            report.gpu_submissions += 1;
        }
        report.frame = self.frame;
        report.time = self.time;
        report.state_frame = self.gpu.host_frame;
        report.game_thread_ms = wall.elapsed().as_secs_f64() * 1e3;
        report.wall_ms = report.game_thread_ms;
        Ok(Some(report))
    }

    /// Records the next frame's substeps and hands the frame to the queue thread (one
    /// submission); returns the frame's dispatches.
    fn record_frame(&mut self, ctx: &Arc<GpuContext>, settings: &GpuStepSettings) -> Result<u32, GpuError> {
        let c = self.config.clone();
        let h = settings.h;
        let has_pins = self.bodies.iter().any(|(_, b)| !b.pins.is_empty());
        let frame_start = self.time;
        // Bodies whose pins moved in the frame: work the energy test cannot account for.
        let mut driven = std::mem::take(&mut self.gpu.driven);
        driven.clear();
        driven.resize(if has_pins { self.state.bodies.len() } else { 0 }, false);
        let id = self.gpu.next_id;
        self.gpu.next_id += 1;
        for substep in 0..c.substeps {
            let t0 = self.time;
            if has_pins && pin_set_changes(&self.state, &self.bodies, &self.slots, t0) {
                // Anchors of pins taking hold are captured from the current positions.
                self.drop_gpu_state();
            }
            if update_pin_flags(&mut self.state, &mut self.bodies, &self.slots, t0, &mut self.pin_marks) {
                rebuild_color_lists(&mut self.state, &self.bodies, &self.slots);
            }
            if self.gpu.stepper.is_none() {
                let mut stepper = self.make_stepper(ctx)?;
                stepper.set_profiling(self.gpu.profiling);
                self.gpu.stepper = Some(stepper);
                self.gpu.dirty = false;
                // The host copy the device starts from was stepped (and checked) on the CPU.
                self.gpu.checked_frame = self.frame;
            }
            let Some(stepper) = self.gpu.stepper.as_mut() else { unreachable!("made above") };
            if self.gpu.dirty {
                stepper.upload_dynamic(&self.state);
                self.gpu.dirty = false;
                self.gpu.checked_frame = self.frame;
            }
            let targets = if has_pins {
                let n = self.state.vertex_count();
                self.targets.resize(n, Vec4::ZERO);
                write_targets(
                    &self.bodies,
                    &self.slots,
                    &self.state,
                    t0,
                    h as f64,
                    c.substeps - substep,
                    &mut self.targets,
                );
                // The host copy of a pinned vertex follows its target (scripted pins move from
                // where they are).
                for (i, (x, (&f, &t))) in
                    self.state.positions.iter_mut().zip(self.state.flags.iter().zip(&self.targets)).enumerate()
                {
                    if f & VERTEX_KINEMATIC != 0 {
                        if (t - *x).truncate().length_squared() > 1e-14 {
                            driven[self.state.vertex_body[i] as usize] = true;
                        }
                        *x = t;
                    }
                }
                Some(&self.targets[..])
            } else {
                None
            };
            let tag = FrameTag { frame: self.frame + 1, id, substep };
            stepper.record_substep(tag, settings, &self.obstacles, targets, c.substeps)?;
            self.time = t0 + h as f64;
        }
        self.frame += 1;
        if self.gpu.submitted.len() == FRAME_TIMES {
            self.gpu.submitted.pop_front();
        }
        self.gpu.submitted.push_back(Submitted { id, frame: self.frame, start: frame_start });
        let Some(stepper) = self.gpu.stepper.as_mut() else { unreachable!("made above") };
        if has_pins {
            stepper.set_driven(&driven);
        }
        self.gpu.driven = driven;
        stepper.submit_frame(id);
        Ok(stepper.submitted_dispatches())
    }

    /// The newest finished frame's positions (one vec4 per vertex of the packed state, w = 0)
    /// and its frame number, without waiting: on the GPU backend the newest frame read back
    /// (one to three behind [`World::frame`]), copied into the host state (32 bytes per
    /// vertex; a renderer on the same device binds [`World::gpu_position_buffer`] instead); on
    /// the CPU the current state.
    pub fn latest_positions(&mut self) -> (u64, &[Vec4]) {
        if let Err(e) = self.take_frame() {
            self.lose_gpu(&e);
        }
        let on_gpu = self.gpu.stepper.is_some() || self.gpu.carry.is_some();
        let frame = if on_gpu { self.gpu.host_frame } else { self.frame };
        (frame, &self.state.positions)
    }

    /// Waits for every submitted GPU step and brings the host copy of the state up to date
    /// (a no-op on the CPU backend). For tools and tests; a game loop reads
    /// [`World::latest_positions`] instead.
    pub fn wait_for_gpu(&mut self) {
        if (self.gpu.stepper.is_some() || self.gpu.carry.is_some()) && !self.gpu.dirty {
            self.pull_gpu_state();
            // The two copies agree: nothing to upload.
            self.gpu.dirty = false;
        }
    }

    /// The GPU buffer of positions (vec4 per vertex of the packed state, w = 0) for a renderer
    /// on the same device ([`World::gpu_context`]): zero-copy, and it holds the newest
    /// submitted step once the queue has run it. `None` when the world steps on the CPU.
    pub fn gpu_position_buffer(&self) -> Option<&wgpu::Buffer> {
        self.gpu.stepper().map(|s| s.position_buffer())
    }

    /// Profiles the GPU's frames kernel by kernel from the next step on (`on`), or stops. A
    /// diagnostic for finding where a frame's GPU time goes: every profiled frame makes
    /// `step()` wait for the GPU. Returns whether frames will be profiled (the device needs
    /// timestamp queries inside passes); a stepper made again (bodies added or removed) starts
    /// its totals afresh.
    pub fn set_gpu_profiling(&mut self, on: bool) -> bool {
        self.gpu.profiling = on;
        match self.gpu.stepper.as_mut() {
            Some(s) => s.set_profiling(on),
            None => on && self.gpu.context().is_some_and(|c| crate::gpu::profile::Profiler::supported(c)),
        }
    }

    /// The profiled GPU frames' time per kernel, the costliest first (each dispatch's time runs
    /// from the end of the dispatch before it, so it includes the device's gap between them),
    /// and the dispatches that found no timestamp slot; `None` without profiling or before the
    /// first profiled step.
    pub fn gpu_kernel_profile(&self) -> Option<(Vec<crate::KernelTime>, u64)> {
        self.gpu.stepper().and_then(|s| s.kernel_profile())
    }

    /// The GPU context, when the backend opened one.
    pub fn gpu_context(&self) -> Option<&Arc<GpuContext>> {
        self.gpu.context()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::gpu::test_support;
    use crate::prelude::*;

    fn cube(w: &mut World, at: Vec3) -> SoftBodyHandle {
        let mesh = TetMesh::box_mesh(Vec3::splat(0.1), [3, 3, 3], TetSplit::Six).expect("mesh");
        w.bodies.insert(SoftBodyBuilder::tetrahedral(mesh).translation(at).build().expect("body"))
    }

    fn step_taking_a_frame(w: &mut World) {
        while w.step().gpu_busy {
            std::thread::yield_now();
        }
    }

    /// Velocity and position edits made while frames are in flight go to the device after
    /// them without waiting, and act from the next frame on, as on the CPU.
    #[test]
    fn edits_reach_the_device_without_waiting() {
        let Some(ctx) = test_support::context() else { return };
        let ctx = Arc::new(ctx);
        let config = StepConfig { backend: Backend::Gpu, iterations: 10, ..StepConfig::default() };
        let mut w = World::with_gpu_context(config, ctx).expect("world");
        let a = cube(&mut w, Vec3::new(0.0, 1.0, 0.0));
        let b = cube(&mut w, Vec3::new(2.0, 1.0, 0.0));
        for _ in 0..3 {
            step_taking_a_frame(&mut w);
        }
        let downloads = w.gpu.downloads;
        w.set_body_velocity(a, Vec3::new(3.0, 0.0, 0.0)).expect("velocity");
        let rest = w.body_positions(b).expect("b").to_vec();
        let moved: Vec<Vec3> = rest.iter().map(|p| p.truncate() + Vec3::new(0.0, 0.0, 5.0)).collect();
        w.set_body_positions(b, &moved).expect("teleport");
        step_taking_a_frame(&mut w);
        assert_eq!(w.gpu.downloads, downloads, "an edit waited for the GPU");
        w.wait_for_gpu();
        let mean = |p: &[Vec4]| p.iter().map(|p| p.truncate()).sum::<Vec3>() / p.len() as f32;
        let va = mean(w.body_velocities(a).expect("a"));
        let zb = mean(w.body_positions(b).expect("b")).z;
        assert!((va.x - 3.0).abs() < 0.01, "{va}");
        assert!((zb - 5.0).abs() < 0.01, "{zb}");
    }

    /// Bodies inserted and removed while frames are in flight: the next steps do not wait for
    /// the GPU (the surviving bodies' state goes over to the new packing on the device), and
    /// every body ends where it does in a world that brought the state to the host and
    /// uploaded it again at each change.
    #[test]
    fn bodies_come_and_go_without_waiting_for_the_gpu() {
        let Some(ctx) = test_support::context() else { return };
        let ctx = Arc::new(ctx);
        let run = |wait: bool| {
            let config = StepConfig { backend: Backend::Gpu, iterations: 10, ..StepConfig::default() };
            let mut w = World::with_gpu_context(config, ctx.clone()).expect("world");
            w.obstacles.push(Obstacle::ground(0.0, 0.5));
            let a = cube(&mut w, Vec3::new(0.0, 0.3, 0.0));
            let b = cube(&mut w, Vec3::new(0.5, 0.3, 0.0));
            for _ in 0..4 {
                step_taking_a_frame(&mut w);
            }
            let downloads = w.gpu.downloads;
            if wait {
                // The reference takes the other path: the host copy, current, uploaded anew.
                w.wait_for_gpu();
                w.gpu.dirty = true;
            }
            let c = cube(&mut w, Vec3::new(-0.5, 0.5, 0.0));
            step_taking_a_frame(&mut w);
            // A second change before the carried state reached its stepper, then a third after.
            let d = cube(&mut w, Vec3::new(0.0, 0.8, 0.5));
            assert!(w.bodies.remove(b).is_some());
            for _ in 0..3 {
                step_taking_a_frame(&mut w);
            }
            if wait {
                w.wait_for_gpu();
                w.gpu.dirty = true;
            }
            w.bodies.remove(a);
            for _ in 0..3 {
                step_taking_a_frame(&mut w);
            }
            let waited = w.gpu.downloads - downloads;
            w.wait_for_gpu();
            let positions = [c, d].map(|h| w.body_positions(h).expect("body").to_vec());
            (waited, positions, w.drain_events())
        };
        let (waited, carried, events) = run(false);
        assert_eq!(waited, 0, "a step after a change waited for the GPU");
        assert!(events.is_empty(), "{events:?}");
        let (_, reference, _) = run(true);
        for (got, want) in carried.iter().zip(&reference) {
            let d = got.iter().zip(want).map(|(p, q)| (p.truncate() - q.truncate()).length()).fold(0.0, f32::max);
            assert!(d < 1e-6, "{d}");
        }
    }
}
