//! The GPU's safety check on the host side. Where the GPU's own fallback applies (asked for,
//! no moving obstacle: `gpu::al::fallback`), the device redid every rejected substep
//! itself and the host only reports it. Otherwise bodies its `step_check` and `step_soft`
//! kernels rejected (every body put back at rest on the device) are sent to the fallback,
//! which runs on the CPU: the frames from the first one not known safe are rewound on the
//! device and stepped again there, and the world stays on the CPU while an island is held on
//! the fallback.

use crate::gpu::al::fallback::GpuFallbackSettings;
use crate::gpu::check::step_check::{BAD_CROSSING, BAD_INVERSION, BAD_SPEED, UNSAFE};
use crate::gpu::check::step_guard::{BAD_ACCELERATION, BAD_POSITION, BAD_VELOCITY};
use crate::gpu::check::step_soft::{BAD_CLAMP_LOCK, BAD_DIVERGED, FLAGS, RESIDUAL};
use crate::gpu::step::FallbackCounts;
use crate::runtime::FallbackReason;
use crate::runtime::config::FallbackPolicy;
use crate::runtime::events::PliantEvent;
use crate::runtime::fallback::{HOLD_FRAMES, fallback_settings};
use crate::runtime::report::{IslandReport, StepPath, StepReport};
use crate::runtime::world::World;
use crate::state::VERTEX_KINEMATIC;

/// The reason of a rollback whose `fields` say the step was finite but unsafe, or `None` (a
/// non-finite one, reported as such).
pub(super) fn unsafe_reason(fields: u32) -> Option<FallbackReason> {
    if fields & (BAD_POSITION | BAD_VELOCITY | BAD_ACCELERATION) != 0 || fields & (UNSAFE | FLAGS) == 0 {
        return None;
    }
    // Hard reasons first, then the soft ones in the CPU check's order.
    Some(match fields {
        f if f & BAD_INVERSION != 0 => FallbackReason::Inversion,
        f if f & BAD_SPEED != 0 => FallbackReason::Speed,
        f if f & BAD_CROSSING != 0 => FallbackReason::Crossing,
        f if f & BAD_DIVERGED != 0 => FallbackReason::ResidualGrowth,
        f if f & BAD_CLAMP_LOCK != 0 => FallbackReason::ClampLock,
        f if f & RESIDUAL != 0 => FallbackReason::ResidualGrowth,
        _ => FallbackReason::EnergyGain,
    })
}

impl World {
    /// Why the next frame steps on the CPU for the fallback (the augmented-Lagrangian solver
    /// runs there), or `None`.
    pub(super) fn held_on_cpu(&self) -> Option<String> {
        if self.config.fallback == FallbackPolicy::Always && !self.gpu_fallback_applies() {
            return Some(
                "`fallback: always` steps every island with the augmented-Lagrangian solver, which runs on the CPU"
                    .into(),
            );
        }
        let next = self.frame + 1;
        let held = self.slots.iter().find(|s| self.fallback.holds(s.handle, next))?;
        let name = self.bodies.get(held.handle).map_or("", |b| b.name());
        Some(format!(
            "body `{name}` is held on the penetration-free fallback (the augmented-Lagrangian solver runs on the CPU)"
        ))
    }

    /// Whether unsafe substeps are redone on the device: asked for (`StepConfig::gpu_fallback`),
    /// the check is on, and the scene has no moving obstacle (which neither fallback models
    /// yet). Surface contact (body–body and self) is on the device's fallback too.
    pub(super) fn gpu_fallback_applies(&self) -> bool {
        let c = &self.config;
        c.gpu_fallback
            && c.fallback != FallbackPolicy::Never
            && !self.obstacles.iter().chain(&self.motion.obstacles).any(|o| o.moves())
    }

    /// The GPU fallback's settings for substeps of length `h`, or `None` where it does not
    /// apply ([`World::gpu_fallback_applies`]): the CPU fallback's settings for an island of
    /// every body, and its hold.
    pub(super) fn gpu_fallback(&self, h: f32) -> Option<GpuFallbackSettings> {
        if !self.gpu_fallback_applies() {
            return None;
        }
        let st = &self.state;
        let members: Vec<u32> = (0..st.bodies.len() as u32).collect();
        let al = fallback_settings(st, &self.config, h, &members, |v| st.flags[v] & VERTEX_KINEMATIC == 0);
        Some(GpuFallbackSettings {
            al,
            hold_substeps: HOLD_FRAMES * self.config.substeps,
            always: self.config.fallback == FallbackPolicy::Always,
        })
    }

    /// Reports the substeps the GPU's fallback redid since the last report (failures and
    /// holds): counted as the report's fallbacks, and one island of every body (the device
    /// redoes the whole world) with the last run's outer iterations, share travelled and
    /// whether it converged, for the first failure read back since, or the hold.
    pub(super) fn report_gpu_fallback(&mut self, counts: &FallbackCounts, report: &mut StepReport) {
        let seen = &mut self.gpu.fallback_runs_seen;
        if counts.runs <= *seen {
            return;
        }
        report.fallbacks += counts.runs - *seen;
        *seen = counts.runs;
        let reason = self.gpu.redone_on_gpu.first().copied().unwrap_or(FallbackReason::Hold);
        self.gpu.redone_on_gpu.clear();
        report.islands.push(IslandReport {
            bodies: self.slots.iter().map(|s| s.handle).collect(),
            path: if counts.converged { StepPath::Fallback } else { StepPath::FallbackTruncated },
            reason: Some(reason),
            iterations: counts.iterations,
            travelled: counts.travelled as f64,
            ..IslandReport::default()
        });
    }

    /// Brings the state to the host for CPU steps (the stepper stays, and takes the host copy
    /// back at the next GPU step); rejections read back but not redone are reported.
    pub(super) fn move_to_cpu_for_fallback(&mut self) {
        self.pull_gpu_state();
        self.settle_unsafe(false);
    }

    /// Acts on the bodies the GPU's check rejected: each goes to the fallback (its next step,
    /// then the hold), with an event saying whether the frames from the first one not known
    /// safe were stepped again (`redo`: rewound to it on the device, for the CPU to step).
    /// Returns how many frames were rewound.
    pub(super) fn settle_unsafe(&mut self, redo: bool) -> u32 {
        if self.gpu.unsafe_found.is_empty() {
            return 0;
        }
        let from = self.gpu.checked_frame + 1;
        let first = self.gpu.submitted.iter().find(|s| s.frame == from).copied();
        let rewound = match (first, self.gpu.stepper.as_mut()) {
            (Some(f), Some(stepper)) if redo && !self.gpu.dirty && f.frame <= self.frame => {
                stepper.restore_frame(f.frame).then_some(f)
            }
            _ => None,
        };
        let redone = match rewound {
            Some(f) => {
                let n = (self.frame + 1 - f.frame) as u32;
                // Frames submitted from this one on are superseded: their readbacks are ignored.
                self.gpu.submitted.retain(|s| s.frame < f.frame);
                self.frame = f.frame - 1;
                self.time = f.start;
                self.gpu.host_frame = self.gpu.host_frame.min(self.frame);
                n
            }
            None => 0,
        };
        let time = rewound.map_or(self.time, |f| f.start);
        for (body, reason) in std::mem::take(&mut self.gpu.unsafe_found) {
            self.fallback.force(body, reason);
            let name = self.bodies.get(body).map_or_else(String::new, |b| b.name().to_owned());
            log::info!("pliant: body `{name}`: GPU step failed the safety check ({reason:?})");
            self.events.push(PliantEvent::UnsafeStep { body, name, time, reason, redone: redone > 0 });
        }
        redone
    }

    /// Frame `frame` came back: with no rejection pending, every frame up to it passed the check.
    pub(super) fn mark_checked(&mut self, frame: u64) {
        if self.gpu.unsafe_found.is_empty() {
            self.gpu.checked_frame = self.gpu.checked_frame.max(frame);
        }
    }
}
