//! The check phase of a substep: the safety check on the fast path's result, per body
//! (`solver::check`: crossings, inversion, non-finite state, the residual rule, clamp lock),
//! then per island: the speed limit, the energy test, the window of soft flags, the hold after
//! an earlier fallback, and the policy. Islands that pass keep the fast step; the rest go to
//! the fallback phase.

use std::time::Instant;

use glam::Vec3A;

use super::{FallbackRuntime, Settle, SubstepInfo, island, island_margin};
use crate::collision::Obstacle;
use crate::collision::bvh::Aabb;
use crate::runtime::assemble::BodySlot;
use crate::runtime::config::{FallbackPolicy, StepConfig};
use crate::runtime::islands::islands;
use crate::runtime::report::{IslandReport, StepPath, StepReport};
use crate::runtime::transaction::Snapshot;
use crate::solver::check::energy::body_energies;
use crate::solver::check::{
    CheckInput, ENERGY_FLOOR, ENERGY_GAIN, FallbackReason, MAX_SPEED, SOFT_LIMIT, SOFT_WINDOW, check_bodies,
};
use crate::state::{SimState, VERTEX_KINEMATIC};

/// What the check phase found: the substep's islands (packed bodies and swept box) and those
/// the fallback is to redo, with why.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    pub islands: Vec<(Vec<u32>, Aabb)>,
    pub redo: Vec<(usize, FallbackReason)>,
    /// Time the check took \[ms\].
    pub ms: f64,
}

/// Checks the fast path's result island by island; islands kept on the fast path are reported
/// here.
pub(crate) fn check_substep(
    s: Settle<'_>,
    obstacles: &[Obstacle],
    info: &SubstepInfo,
    report: &mut StepReport,
) -> Checked {
    let Settle { state, snapshot, fast, runtime: rt, slots, config, frame, .. } = s;
    if config.fallback == FallbackPolicy::Never {
        return Checked::default();
    }
    let check_start = Instant::now();
    let input = CheckInput {
        st: state,
        start: snapshot.positions(),
        obstacles,
        fast,
        gravity: config.gravity.length(),
        surface_certified: config.surface_contact,
    };
    check_bodies(&input, &mut rt.check, &mut rt.verdicts);
    let found = substep_islands(state, snapshot, fast, config, &mut rt.uf, info.h);
    // Energies only for islands the energy test applies to: nothing else does work on them. A
    // pinned vertex that stayed put does no work (a clamped beam is tested like a free body).
    let moved_by_others = |members: &[u32], bx: &Aabb| {
        members.iter().flat_map(|&b| slots[b as usize].range()).any(|i| {
            state.flags[i] & VERTEX_KINEMATIC != 0
                && (state.positions[i] - snapshot.positions()[i]).truncate().length_squared() > 1e-14
        }) || obstacles.iter().any(|o| o.moves() && o.box_reaches(bx.min, bx.max, 0.0))
    };
    let energy_tested: Vec<bool> = found.iter().map(|(m, bx)| !moved_by_others(m, bx)).collect();
    if energy_tested.iter().any(|&t| t) {
        let (gravity, contact) = (Vec3A::from(config.gravity), &info.contact);
        let before = (snapshot.positions(), snapshot.velocities());
        body_energies(state, before, gravity, obstacles, contact, &mut rt.energies_before);
        let after = (&state.positions[..], &state.velocities[..]);
        body_energies(state, after, gravity, obstacles, contact, &mut rt.energies_after);
    }
    let mut redo = Vec::new();
    let view = IslandView { state, snapshot, slots, config, frame, h: info.h };
    for (k, (members, bx)) in found.iter().enumerate() {
        match island_reason(rt, &view, members, bx, energy_tested[k], &mut report.energy_share) {
            Some(r) => redo.push((k, r)),
            None => {
                let handles: Vec<_> = members.iter().map(|&b| slots[b as usize].handle).collect();
                // Back on the fast path, which keeps the world's clock: lag not caught up
                // during the hold is dropped (module docs, "Lag").
                let mut time_dropped = 0.0f64;
                for h in &handles {
                    if let Some(hist) = rt.history.get_mut(h) {
                        time_dropped = time_dropped.max(std::mem::take(&mut hist.lag));
                    }
                }
                report.islands.push(IslandReport { time_dropped, ..island(handles, info, StepPath::Fast, None) });
            }
        }
    }
    let ms = check_start.elapsed().as_secs_f64() * 1e3;
    for r in report.islands.iter_mut().filter(|r| r.substep == info.substep && r.path == StepPath::Fast) {
        r.ms = info.fast_ms + ms;
    }
    Checked { islands: found, redo, ms }
}

/// The substep's islands: bodies joined by the last detection's pairs or by overlapping swept
/// boxes, with their boxes.
fn substep_islands(
    state: &SimState,
    snapshot: &Snapshot,
    fast: &dyn crate::solver::fast_path::FastResult,
    config: &StepConfig,
    uf: &mut crate::solver::union_find::UnionFind,
    h: f32,
) -> Vec<(Vec<u32>, Aabb)> {
    let start = (snapshot.positions(), snapshot.velocities());
    islands(state, start, h, fast.contact_pairs(), island_margin(config), uf)
}

/// The check phase of a substep whose sweeps were skipped because every body is on the
/// fallback (held, or sent there by a failure found elsewhere): nothing to check, and
/// every island is redone, for that failure or for its hold, with the whole budget left to it.
pub(crate) fn held_substep(s: Settle<'_>, info: &SubstepInfo) -> Checked {
    let Settle { state, snapshot, fast, runtime: rt, slots, config, .. } = s;
    let found = substep_islands(state, snapshot, fast, config, &mut rt.uf, info.h);
    let redo = found
        .iter()
        .enumerate()
        .map(|(k, (members, _))| {
            let forced = members.iter().find_map(|&b| rt.history.get_mut(&slots[b as usize].handle)?.forced.take());
            (k, forced.unwrap_or(FallbackReason::Hold))
        })
        .collect();
    Checked { islands: found, redo, ms: 0.0 }
}

/// The speed above which a vertex of the island with swept box `bx` fails the check
/// (`FallbackReason::Speed`) in a substep of `h` \[m/s\]: half the island's size per step, at
/// most `MAX_SPEED`.
pub(super) fn speed_limit(bx: &Aabb, config: &StepConfig, h: f32) -> f32 {
    let size = (bx.max - bx.min).length() - 2.0 * island_margin(config) * 3f32.sqrt();
    MAX_SPEED.min(0.5 * size.max(0.0) / h)
}

/// What the per-island part of the check reads.
struct IslandView<'a> {
    state: &'a SimState,
    snapshot: &'a Snapshot,
    slots: &'a [BodySlot],
    config: &'a StepConfig,
    /// The frame being stepped.
    frame: u64,
    /// Substep length \[s\].
    h: f32,
}

/// Why the island of packed bodies `members` (swept box `bx`) is to be redone, if it is: a
/// body's hard failure, speed, enough soft flags (the bodies' own and, where `energy_tested`,
/// the energy test) within the window, a failure found elsewhere, the hold, or the policy.
fn island_reason(
    rt: &mut FallbackRuntime,
    v: &IslandView<'_>,
    members: &[u32],
    bx: &Aabb,
    energy_tested: bool,
    energy_share: &mut f64,
) -> Option<FallbackReason> {
    let (state, slots) = (v.state, v.slots);
    let ranges = || members.iter().map(|&b| slots[b as usize].range());
    let mut reason = members.iter().find_map(|&b| rt.verdicts[b as usize].hard);
    let limit = speed_limit(bx, v.config, v.h);
    // Speed at the step's start or end: a vertex that was to travel more than half its island
    // per step can tunnel however its step ended (a clamped fast step stops it dead and loses
    // its momentum instead).
    let speed = |i: usize| state.velocities[i].truncate().length().max(v.snapshot.velocities()[i].truncate().length());
    if reason.is_none() && ranges().flatten().any(|i| speed(i) > limit) {
        reason = Some(FallbackReason::Speed);
    }
    // Soft flags: the body's own, then energy (only where no moving pin or moving collider
    // does work the check cannot account for).
    let mut soft = members.iter().find_map(|&b| rt.verdicts[b as usize].soft);
    if soft.is_none() && energy_tested {
        let sum =
            |e: &[(f64, f64)]| members.iter().map(|&b| e[b as usize]).fold((0.0, 0.0), |a, x| (a.0 + x.0, a.1 + x.1));
        let (b0, b1) = (sum(&rt.energies_before), sum(&rt.energies_after));
        // The island's energy scale: what it moves and stores, plus its weight times its height
        // (the potential energy within its reach). Relative to kinetic and elastic energy alone
        // a settling cloth's few millijoules of unconverged sweeps read as a blow-up; a real one
        // grows by orders of magnitude.
        let mass: f64 = ranges().flatten().map(|i| state.masses[i] as f64).sum();
        let scale = b0.0 + mass * v.config.gravity.length() as f64 * (bx.max.y - bx.min.y) as f64;
        let share = ((b1.0 + b1.1) - (b0.0 + b0.1)) / (ENERGY_GAIN * scale + ENERGY_FLOOR);
        *energy_share = energy_share.max(share);
        if share > 1.0 {
            soft = Some(FallbackReason::EnergyGain);
        }
    }
    let mut held = false;
    for &b in members {
        let hist = rt.history.entry(slots[b as usize].handle).or_default();
        reason = reason.or(hist.forced.take());
        hist.soft = ((hist.soft << 1) | u32::from(soft.is_some())) & ((1 << SOFT_WINDOW) - 1);
        if hist.soft.count_ones() >= SOFT_LIMIT {
            reason = reason.or(soft);
            hist.soft = 0;
        }
        held |= hist.hold_until > v.frame;
    }
    if held {
        reason = reason.or(Some(FallbackReason::Hold));
    }
    if v.config.fallback == FallbackPolicy::Always {
        reason = reason.or(Some(FallbackReason::Always));
    }
    reason
}
