//! The fallback phase of a substep: every island the check rejected goes back to the
//! substep's start and is redone by the augmented-Lagrangian step (`solver::al`), warm-started
//! from the fast path's result, with the hold that keeps it on the fallback for a while; an
//! island the fallback cannot step (it touches a moving collider, which the fallback does not
//! model yet) keeps the fast result, flagged, and one whose result is still not valid is put
//! back at rest.

use std::collections::HashMap;
use std::time::Instant;

use glam::{DVec3, Vec3A, Vec4};

use super::{
    Checked, HOLD_FRAMES, History, MAX_HOLD_FRAMES, RETRY_WINDOW, Settle, SubstepInfo, fallback_settings, island,
};
use crate::body::SoftBodyHandle;
use crate::collision::Obstacle;
use crate::runtime::assemble::BodySlot;
use crate::runtime::config::StepConfig;
use crate::runtime::report::{IslandReport, StepPath, StepReport};
use crate::runtime::transaction::Snapshot;
use crate::solver::al::{AlInput, AlScratch, AlSettings, AlStats, al_step};
use crate::solver::check::FallbackReason;
use crate::state::{SimState, VERTEX_KINEMATIC, VERTEX_NO_HISTORY};

/// Redoes the islands `checked` rejected, and reports them.
pub(crate) fn fall_back(
    s: Settle<'_>,
    checked: Checked,
    obstacles: &[Obstacle],
    info: &SubstepInfo,
    report: &mut StepReport,
) {
    if checked.redo.is_empty() {
        return;
    }
    let Settle { state, snapshot, targets, runtime: rt, slots, config, frame, .. } = s;
    let (found, redo) = (&checked.islands, &checked.redo);
    // Every island to redo goes back to the step's start first, so each redo sees the others
    // where they start (islands' swept boxes are apart: none can reach another's).
    let fast: Vec<Vec4> = state.positions.clone();
    let mut solvable = Vec::new();
    for &(k, reason) in redo {
        let (members, bx) = &found[k];
        let handles: Vec<SoftBodyHandle> = members.iter().map(|&b| slots[b as usize].handle).collect();
        let blocked = obstacles.iter().any(|o| o.moves() && o.box_reaches(bx.min, bx.max, 0.0));
        if blocked {
            // The fallback does not model moving colliders yet: the fast result stays (a
            // non-finite one is rolled back at rest by the world's guard), flagged.
            report.islands.push(IslandReport {
                ms: info.fast_ms + checked.ms,
                ..island(handles, info, StepPath::Fast, Some(reason))
            });
            continue;
        }
        for &b in members {
            snapshot.restore(state, slots[b as usize].range());
        }
        solvable.push((k, reason, handles));
    }
    for (k, reason, handles) in solvable {
        let members = &found[k].0;
        let t = Instant::now();
        let out = redo_island(state, snapshot, targets, &mut rt.al, obstacles, members, slots, &fast, config, info);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let settled = Settled { members, handles, reason, ms };
        record_redo(state, snapshot, &mut rt.history, settled, &out, slots, frame, info, report);
    }
}

/// An island the fallback redid.
struct Settled<'a> {
    members: &'a [u32],
    handles: Vec<SoftBodyHandle>,
    reason: FallbackReason,
    /// Time the redo took \[ms\].
    ms: f64,
}

/// Reports a redone island (a non-finite result is left to the world's guard; an inverted one
/// is put back at rest) and starts or doubles its hold.
#[allow(clippy::too_many_arguments)]
fn record_redo(
    state: &mut SimState,
    snapshot: &Snapshot,
    history: &mut HashMap<SoftBodyHandle, History>,
    island_: Settled<'_>,
    out: &AlStats,
    slots: &[BodySlot],
    frame: u64,
    info: &SubstepInfo,
    report: &mut StepReport,
) {
    let Settled { members, handles, reason, ms } = island_;
    report.fallbacks += 1;
    if reason == FallbackReason::NonFinite {
        report.nan_detected = true;
    }
    let finite = members
        .iter()
        .all(|&b| slots[b as usize].range().all(|i| state.positions[i].is_finite() && state.velocities[i].is_finite()));
    if !finite {
        // Left to the world's guard, which rolls the bodies back at rest and names them.
        report.islands.push(IslandReport { ms, ..island(handles, info, StepPath::Restored, Some(reason)) });
        return;
    }
    // A finite result the fallback could still not make valid (an inverted tet: its inputs
    // were absurd, such as a pin target at 1e38 m) is put back at rest as well.
    let inverted = state.tets.iter().any(|t| {
        members.contains(&state.vertex_body[t.vertices[0] as usize]) && {
            let x = t.vertices.map(|i| Vec3A::from_vec4(state.positions[i as usize]));
            !(crate::material::tet::deformation_gradient::<f32>(&x, &t.dm_inv()).determinant() > 0.0)
        }
    });
    if inverted {
        for &b in members {
            snapshot.restore_at_rest(state, slots[b as usize].range());
        }
        report.rolled_back.extend(handles.iter().copied());
        report.islands.push(IslandReport { ms, ..island(handles, info, StepPath::Restored, Some(reason)) });
        return;
    }
    if !matches!(reason, FallbackReason::Hold | FallbackReason::Always) {
        for hnd in &handles {
            let hist = history.entry(*hnd).or_default();
            // A fast path that failed again soon after its hold doubles the next hold.
            hist.hold = if hist.hold > 0 && frame <= hist.hold_until + RETRY_WINDOW {
                (hist.hold * 2).min(MAX_HOLD_FRAMES)
            } else {
                HOLD_FRAMES
            };
            hist.hold_until = frame + hist.hold as u64;
        }
    }
    report.islands.push(IslandReport {
        bodies: handles,
        substep: info.substep,
        path: if out.converged && !out.rewound { StepPath::Fallback } else { StepPath::FallbackTruncated },
        reason: Some(reason),
        iterations: out.iterations,
        newton_iterations: out.newton_iterations,
        cg_iterations: out.cg_iterations,
        ms,
        residual: out.residual,
        min_distance: out.min_distance.is_finite().then_some(out.min_distance),
        travelled: out.travelled,
    });
}

/// Redoes one island's substep (its vertices are at the step's start) with the
/// augmented-Lagrangian solver, warm-started from the fast path's positions `fast`, and writes
/// positions, velocities and accelerations.
#[allow(clippy::too_many_arguments)]
fn redo_island(
    state: &mut SimState,
    snapshot: &Snapshot,
    targets: &[Vec4],
    al: &mut AlScratch,
    obstacles: &[Obstacle],
    members: &[u32],
    slots: &[BodySlot],
    fast: &[Vec4],
    config: &StepConfig,
    info: &SubstepInfo,
) -> AlStats {
    let n = state.vertex_count();
    let h = info.h;
    let gravity = Vec3A::from(config.gravity);
    let mut solved = vec![false; n];
    let mut moves = vec![false; n];
    for &b in members {
        for i in slots[b as usize].range() {
            moves[i] = true;
            solved[i] = state.flags[i] & VERTEX_KINEMATIC == 0;
        }
    }
    // The integrator's step for each vertex, exactly as the fast path took it.
    let step_of = |i: usize| {
        let flags = snapshot.flags()[i];
        let a = if flags & VERTEX_NO_HISTORY != 0 { gravity } else { Vec3A::from_vec4(snapshot.accelerations()[i]) };
        config.integrator.vertex_step(h, Vec3A::from_vec4(snapshot.velocities()[i]), a)
    };
    let start: Vec<DVec3> = state.positions.iter().map(|p| p.truncate().as_dvec3()).collect();
    let target = |i: usize| {
        let s = step_of(i);
        start[i] + (s.predictor + gravity * s.weight).as_dvec3()
    };
    let guess: Vec<DVec3> = (0..n)
        .map(|i| {
            if !moves[i] {
                start[i]
            } else if !solved[i] {
                targets.get(i).map_or(start[i], |t| t.truncate().as_dvec3())
            } else if fast[i].is_finite() {
                fast[i].truncate().as_dvec3()
            } else {
                target(i)
            }
        })
        .collect();
    let inertia = |i: usize| {
        let s = step_of(i);
        (state.masses[i] as f64 / s.weight as f64, target(i))
    };
    let settings =
        AlSettings { deadline: info.deadline, ..fallback_settings(state, config, h, members, |i| solved[i]) };
    let mut x = Vec::new();
    let stats = {
        let input = AlInput {
            st: state,
            obstacles,
            start: &start,
            guess: &guess,
            solved: &solved,
            moves: &moves,
            inertia: &inertia,
            surface_pairs: config.surface_contact,
        };
        al_step(&input, &settings, al, &mut x)
    };
    for i in (0..n).filter(|&i| moves[i]) {
        let dx = (x[i] - start[i]).as_vec3a();
        state.positions[i] = x[i].as_vec3().extend(0.0);
        // The fallback's velocity is the distance travelled over the step (backward Euler,
        // docs/algorithms.md §4.5), and the next step starts without history: extrapolating the
        // integrator's higher-order velocity from a redone step spiked a corner of a stiff
        // incompressible cube landing on an edge to 10 m/s, and a truncated step is not the
        // integrator's minimiser at all. Backward Euler only damps.
        state.velocities[i] = (dx / h).extend(0.0);
        state.accelerations[i] = Vec4::ZERO;
        state.flags[i] |= VERTEX_NO_HISTORY;
    }
    stats
}
