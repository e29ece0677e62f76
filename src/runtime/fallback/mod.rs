//! The end of a substep's transaction: the safety check on the fast path's result, island by
//! island ([`check`]), and the augmented-Lagrangian redo of every island it rejects
//! ([`redo`]), with hysteresis (an island that fell back stays on the fallback for a while).
//! On the GPU backend the device checks each substep itself, and either redoes it there
//! (`gpu::al::fallback`) or has the host redo it here (`runtime/world/gpu/check.rs`). The
//! fallback's solver is `solver::al`.
//!
//! # Lag
//!
//! A fallback step that runs out of time answers with its last safe iterate, which stands for
//! only a share `s` of the step (`AlStats::share`). The island's clock then moves on by `s h`
//! instead of `h`: its velocities are those of the state it reached (its displacement over
//! `s h`), so no momentum goes with the part of the step it did not take, and the rest,
//! `(1 − s) h`, is the island's lag behind the world. A step that travelled less than
//! `MIN_TRAVELLED` leaves the island exactly as it was, velocities included: its clock stood
//! still.
//!
//! A lagging island's fallback steps are stretched by the least lag of its bodies, at most
//! `CATCH_UP_SHARE` of a substep: a step truncated at share `s` is caught up within
//! `⌈(1 − s)/CATCH_UP_SHARE⌉` (at most two) untruncated steps of the hold that follows every
//! fallback. While steps keep being truncated the lag grows by their shortfall, up to
//! `MAX_LAG_SUBSTEPS` substeps; time beyond that is dropped (the island lives through less time
//! than the world) and reported, and so is lag left when the hold ends and the island returns to
//! the fast path, which keeps the world's clock. Lag does not extend the hold: an island whose
//! fallback cannot keep up with the budget would otherwise never leave it (a cloth draped over a
//! sphere, truncated at a 16 ms budget, stayed on the fallback for 86 % of its frames, whose
//! vertex-only obstacle contact let edges sag into the sphere). An island with a moving pin
//! keeps no lag: the pin runs on the world's clock, so what its step did not travel is dropped
//! at once.
//!
//! A hold that began for a soft reason (an energy gain or clamp lock: the fast step was valid,
//! only suspect) ends early when the fallback cannot serve it: a held step that the deadline
//! stopped before it travelled anything hands the island back to the fast path from the next
//! substep, whose check decides again. Held on, a 4,225-vertex cloth at an 8 ms budget stood
//! frozen in the air for nine frames of 24 ms each. A hold for a hard failure (a crossing,
//! speed, inversion, diverged or stalled sweeps) is kept: the fast path would only fail again,
//! at its own cost on top of the fallback's. A redo that would start past the deadline, for
//! an island that is not flying, does not set the solver up at all and leaves the island as it
//! was.
//!
//! # Impact
//!
//! An island whose free flight over its step carries a vertex further than a hundred contact
//! offsets (a projectile) is redone in pieces (`redo::step_pieces`), each an
//! augmented-Lagrangian solve from the state the last one reached, its positions and
//! backward-Euler velocities: free flight up to where that flight first brings two surfaces
//! within two offsets, then, while it presses into what it met, pieces whose free flight
//! reaches five offsets (at least 1/256 of the step). A slower island that flies (further than
//! ten offsets) into something is redone in two parts split at its impact; others whole. Solved
//! whole from the ball's arrival, `projectile_wall`'s impact went uphill and was rewound to its
//! start: the ball stopped dead on the wall's face. In pieces it dents the wall and is thrown
//! back. A budget stops the pieces where it runs out: the island's clock stands at the last
//! piece's end (its lag, above), so under a budget smaller than a piece the impact plays out in
//! slow motion. A piece that did not converge is not the piece's answer: its velocities are
//! scaled down, as far as its kinetic energy allows, so the island ends it with no more energy
//! than it began with (unless a pin moves, which may do work); read as they were, a 60 m/s ball
//! whose pieces a 100 ms budget cut
//! gained 60 J of its 193 J in three frames. An island still within two offsets of a pair the
//! fallback last held (measured anew at the step's start) starts pressing at once, without
//! the CCD that would look for its impact: for the ball in its dent that CCD was half of a
//! 100 ms frame.
//!
//! The pieces solve only the island's contact region (`redo::contact_region`): the bodies
//! that fly, and the vertices of the others within twice a flying body's size of the box its
//! flight sweeps; the rest of the island stays where the step starts, as a truncated step's
//! island does. A piece the deadline stopped before it travelled far enough to write is kept
//! and picked up in the next frame, which asks for the same piece (`solver::al`'s
//! `Unfinished`): a picked-up piece takes at least one iteration, so a projectile at its impact
//! moves on every other frame at least, however small the budget. Set up afresh in every
//! frame over the whole 0.5 m wall, `projectile_wall`'s ball stood 7 mm in front of the wall
//! for good under a 16 ms budget. An island still faster than the check's speed limit after
//! its redo stays held: its fast step could only fail on speed, after sweeps and a detection
//! that cost the ball in its dent 114–330 ms.

mod check;
mod redo;

use std::collections::HashMap;
use std::time::Instant;

use glam::Vec4;

pub(crate) use check::{Checked, check_substep, held_substep};
pub(crate) use redo::fall_back;

use crate::body::SoftBodyHandle;
use crate::runtime::assemble::BodySlot;
use crate::runtime::budget::BudgetPlanner;
use crate::runtime::config::StepConfig;
use crate::runtime::report::{IslandReport, StepPath};
use crate::runtime::transaction::Snapshot;
use crate::solver::al::{AlScratch, AlSettings};
use crate::solver::check::{BodyVerdict, CheckScratch, FallbackReason};
use crate::solver::fast_path::FastResult;
use crate::solver::union_find::UnionFind;
use crate::state::SimState;

/// Frames an island stays on the fallback after falling back.
pub const HOLD_FRAMES: u32 = 10;
/// A fallback within this many frames of the last hold's end doubles the hold.
const RETRY_WINDOW: u64 = 30;
/// Longest hold \[frames\].
pub const MAX_HOLD_FRAMES: u32 = 120;
/// Most a lagging island's fallback step is stretched by, as a share of the substep.
const CATCH_UP_SHARE: f32 = 0.5;
/// Least share of a step a truncated fallback step's velocity is read from: below it the
/// iterate's displacement is mostly rounding, divided by almost nothing.
const MIN_TRAVELLED: f64 = 1e-3;
/// Most an island may lag behind the world \[substeps\]; time beyond it is dropped.
pub const MAX_LAG_SUBSTEPS: f32 = 4.0;

/// A body's fallback history.
#[derive(Clone, Copy, Debug, Default)]
struct History {
    /// The body stays on the fallback while the frame is below this.
    hold_until: u64,
    /// Length of the last hold.
    hold: u32,
    /// The last hold began for a soft reason (an energy gain or clamp lock): it may end early
    /// (module docs, "Lag").
    hold_soft: bool,
    /// Soft flags of the last substeps, newest in bit 0.
    soft: u32,
    /// A failure found elsewhere (the GPU's check): the body's next step falls back for it.
    forced: Option<FallbackReason>,
    /// How far the body's clock is behind the world's \[s\] (module docs, "Lag").
    lag: f64,
}

/// The fallback's state that lives across steps.
#[derive(Debug, Default)]
pub(crate) struct FallbackRuntime {
    history: HashMap<SoftBodyHandle, History>,
    pub al: AlScratch,
    check: CheckScratch,
    verdicts: Vec<BodyVerdict>,
    uf: UnionFind,
    energies_before: Vec<(f64, f64)>,
    energies_after: Vec<(f64, f64)>,
    pub planner: BudgetPlanner,
}

impl FallbackRuntime {
    /// Sends `body`'s island to the fallback in the next step, for `reason` (a failure the
    /// GPU's check found in a step now being redone), with the hold that follows.
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    pub(crate) fn force(&mut self, body: SoftBodyHandle, reason: FallbackReason) {
        self.history.entry(body).or_default().forced = Some(reason);
    }

    /// Whether every one of `bodies` (at least one) is to be stepped by the fallback in frame
    /// `frame`: the fast path's sweeps would then be thrown away.
    pub(crate) fn holds_all(&self, bodies: impl Iterator<Item = SoftBodyHandle>, frame: u64) -> bool {
        let mut bodies = bodies.peekable();
        bodies.peek().is_some() && bodies.all(|b| self.holds(b, frame))
    }

    /// Whether `body` is to be stepped by the fallback in frame `frame`: forced, or held.
    pub(crate) fn holds(&self, body: SoftBodyHandle, frame: u64) -> bool {
        self.history.get(&body).is_some_and(|h| h.forced.is_some() || h.hold_until > frame)
    }
}

/// Margin around a body's swept box when islands are formed \[m\]: twice the contact offset
/// and a millimetre (bodies that close may touch within the step).
pub(crate) fn island_margin(config: &StepConfig) -> f32 {
    2.0 * config.contact_offset + 1e-3
}

/// What the check and the fallback of a substep work on (disjoint borrows of the world).
pub(crate) struct Settle<'a> {
    pub state: &'a mut SimState,
    pub snapshot: &'a Snapshot,
    /// What the fast path left: contact pairs, clamped vertices, residuals.
    pub fast: &'a dyn FastResult,
    /// End-of-substep targets of kinematic vertices.
    pub targets: &'a [Vec4],
    pub runtime: &'a mut FallbackRuntime,
    pub slots: &'a [BodySlot],
    pub config: &'a StepConfig,
    /// The frame being stepped (1 for the first).
    pub frame: u64,
}

/// What the substep did so far.
pub(crate) struct SubstepInfo {
    pub h: f32,
    pub substep: u32,
    pub iterations: u32,
    pub fast_ms: f64,
    pub residual: f32,
    pub deadline: Option<Instant>,
    pub contact: crate::collision::ContactModel,
    /// The fast path ran (otherwise every body was held on the fallback and its sweeps were
    /// skipped: the state is still at the substep's start).
    pub swept: bool,
}

/// An island's report with the fast path's counts when it kept the fast step (a restored one
/// travelled nothing).
fn island(
    bodies: Vec<SoftBodyHandle>,
    info: &SubstepInfo,
    path: StepPath,
    reason: Option<FallbackReason>,
) -> IslandReport {
    // A kept fast step reports its sweeps; a restored one travelled nothing.
    let fast = path == StepPath::Fast;
    IslandReport {
        bodies,
        substep: info.substep,
        path,
        reason,
        iterations: if fast { info.iterations } else { 0 },
        residual: if fast { info.residual as f64 } else { 0.0 },
        travelled: if fast { 1.0 } else { 0.0 },
        ..IslandReport::default()
    }
}

/// The augmented-Lagrangian settings of a substep of length `h` redoing the bodies `members`,
/// whose vertices `solved` says have unknowns (both backends' fallback).
pub(crate) fn fallback_settings(
    state: &SimState,
    config: &StepConfig,
    h: f32,
    members: &[u32],
    solved: impl Fn(usize) -> bool,
) -> AlSettings {
    let gravity = config.gravity.length() as f64;
    let mass: f64 = (0..state.vertex_count()).filter(|&i| solved(i)).map(|i| state.masses[i] as f64).sum();
    let mut member = vec![false; state.bodies.len()];
    members.iter().for_each(|&b| member[b as usize] = true);
    let cloth_or_friction = members.iter().any(|&b| state.bodies[b as usize].friction > 0.0)
        || state.tris.iter().any(|t| member[state.vertex_body[t.vertices[0] as usize] as usize]);
    AlSettings {
        offset: config.contact_offset as f64,
        min_iterates: if cloth_or_friction { 6 } else { 2 },
        static_slip: (config.friction_eps_v * h) as f64,
        // A millionth of the island's weight (at least a micronewton).
        force_tolerance: 1e-6 * (mass * gravity).max(1.0),
        // Pushing a stack out to the offset lifts each of its bodies by at most the offset per
        // interface below it: twice the island's weight times the offset per member bounds it
        // (a weight of at least 1 N, as for the force tolerance, so contact pressed by pins or
        // elastic preload without gravity is priced too).
        violation_price_cap: 2.0 * config.contact_offset as f64 * members.len() as f64 * (mass * gravity).max(1.0),
        ..AlSettings::default()
    }
}
