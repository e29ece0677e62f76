//! The end of a substep's transaction (ALGORITHMS §8): the safety check on the fast path's
//! result, island by island, and the augmented-Lagrangian redo of every island it rejects,
//! with hysteresis (an island that fell back stays on the fallback for a while).

use std::collections::HashMap;
use std::time::Instant;

use glam::{DVec3, Vec3A, Vec4};

use super::assemble::BodySlot;
use super::budget::BudgetPlanner;
use super::config::{FallbackPolicy, StepConfig};
use super::islands::islands;
use super::report::{IslandReport, StepPath, StepReport};
use super::transaction::Snapshot;
use crate::body::SoftBodyHandle;
use crate::collision::Obstacle;
use crate::solver::VbdScratch;
use crate::solver::al::{AlInput, AlScratch, AlSettings, al_step};
use crate::solver::check::energy::body_energies;
use crate::solver::check::{
    BodyVerdict, CheckInput, CheckScratch, ENERGY_FLOOR, ENERGY_GAIN, FallbackReason, MAX_SPEED, SOFT_LIMIT,
    SOFT_WINDOW, check_bodies,
};
use crate::solver::union_find::UnionFind;
use crate::state::{SimState, VERTEX_KINEMATIC, VERTEX_NO_HISTORY};

/// Frames an island stays on the fallback after falling back.
pub const HOLD_FRAMES: u32 = 10;
/// A fallback within this many frames of the last hold's end doubles the hold.
const RETRY_WINDOW: u64 = 30;
/// Longest hold \[frames\].
pub const MAX_HOLD_FRAMES: u32 = 120;

/// A body's fallback history.
#[derive(Clone, Copy, Debug, Default)]
struct History {
    /// The body stays on the fallback while the frame is below this.
    hold_until: u64,
    /// Length of the last hold.
    hold: u32,
    /// Soft flags of the last substeps, newest in bit 0.
    soft: u32,
    /// A failure found elsewhere (the GPU's check): the body's next step falls back for it.
    forced: Option<FallbackReason>,
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

    /// Whether `body` is to be stepped by the fallback in frame `frame`: forced, or held.
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    pub(crate) fn holds(&self, body: SoftBodyHandle, frame: u64) -> bool {
        self.history.get(&body).is_some_and(|h| h.forced.is_some() || h.hold_until > frame)
    }
}

/// Margin around a body's swept box when islands are formed \[m\]: twice the contact offset
/// and a millimetre (bodies that close may touch within the step).
pub(crate) fn island_margin(config: &StepConfig) -> f32 {
    2.0 * config.contact_offset + 1e-3
}

/// What the settling of a substep works on (disjoint borrows of the world).
pub(crate) struct Settle<'a> {
    pub state: &'a mut SimState,
    pub snapshot: &'a Snapshot,
    pub scratch: &'a VbdScratch,
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
}

/// Checks the fast path's result and redoes the islands it rejects; returns the time the check
/// took \[ms\].
pub(crate) fn settle_substep(
    s: Settle<'_>,
    obstacles: &[Obstacle],
    info: &SubstepInfo,
    report: &mut StepReport,
) -> f64 {
    let Settle { state, snapshot, scratch, runtime, slots, config, frame } = s;
    if config.fallback == FallbackPolicy::Never {
        return 0.0;
    }
    let check_start = Instant::now();
    let rt = runtime;
    let input = CheckInput {
        st: state,
        start: snapshot.positions(),
        obstacles,
        scratch,
        gravity: config.gravity.length(),
        surface_certified: config.surface_contact,
    };
    check_bodies(&input, &mut rt.check, &mut rt.verdicts);
    let margin = island_margin(config);
    let found = islands(
        state,
        (snapshot.positions(), snapshot.velocities()),
        info.h,
        scratch.contact_pairs(),
        margin,
        &mut rt.uf,
    );
    let gravity = Vec3A::from(config.gravity);
    let contact = info.contact;
    // Energies only for islands the energy test applies to: nothing else does work on them. A
    // pinned vertex that stayed put does no work (a clamped beam is tested like a free body).
    let moved_by_others = |members: &[u32], bx: &crate::collision::bvh::Aabb| {
        members.iter().flat_map(|&b| slots[b as usize].range()).any(|i| {
            state.flags[i] & VERTEX_KINEMATIC != 0
                && (state.positions[i] - snapshot.positions()[i]).truncate().length_squared() > 1e-14
        }) || obstacles.iter().any(|o| o.moves() && o.box_reaches(bx.min, bx.max, 0.0))
    };
    let energy_tested: Vec<bool> = found.iter().map(|(m, bx)| !moved_by_others(m, bx)).collect();
    if energy_tested.iter().any(|&t| t) {
        body_energies(
            state,
            (snapshot.positions(), snapshot.velocities()),
            gravity,
            obstacles,
            &contact,
            &mut rt.energies_before,
        );
        body_energies(
            state,
            (&state.positions, &state.velocities),
            gravity,
            obstacles,
            &contact,
            &mut rt.energies_after,
        );
    }
    let h = info.h;
    let mut redo: Vec<(usize, FallbackReason)> = Vec::new();
    for (k, (members, bx)) in found.iter().enumerate() {
        let ranges = || members.iter().map(|&b| slots[b as usize].range());
        let mut reason = members.iter().find_map(|&b| rt.verdicts[b as usize].hard);
        let size = (bx.max - bx.min).length() - 2.0 * margin * 3f32.sqrt();
        let limit = MAX_SPEED.min(0.5 * size.max(0.0) / h);
        // Speed at the step's start or end: a vertex that was to travel more than half its
        // island per step can tunnel however its step ended (a clamped fast step stops it
        // dead and loses its momentum instead).
        let speed =
            |i: usize| state.velocities[i].truncate().length().max(snapshot.velocities()[i].truncate().length());
        if reason.is_none() && ranges().flatten().any(|i| speed(i) > limit) {
            reason = Some(FallbackReason::Speed);
        }
        // Soft flags: the body's own, then energy (only where no moving pin or moving
        // collider does work the check cannot account for).
        let mut soft = members.iter().find_map(|&b| rt.verdicts[b as usize].soft);
        if soft.is_none() && energy_tested[k] {
            let sum = |e: &[(f64, f64)]| {
                members.iter().map(|&b| e[b as usize]).fold((0.0, 0.0), |a, x| (a.0 + x.0, a.1 + x.1))
            };
            let (b0, b1) = (sum(&rt.energies_before), sum(&rt.energies_after));
            // The island's energy scale: what it moves and stores, plus its weight times its
            // height (the potential energy within its reach). Relative to kinetic and elastic
            // energy alone a settling cloth's few millijoules of unconverged sweeps read as a
            // blow-up; a real one grows by orders of magnitude.
            let mass: f64 = ranges().flatten().map(|i| state.masses[i] as f64).sum();
            let scale = b0.0 + mass * config.gravity.length() as f64 * (bx.max.y - bx.min.y) as f64;
            if b1.0 + b1.1 > b0.0 + b0.1 + ENERGY_GAIN * scale + ENERGY_FLOOR {
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
            held |= hist.hold_until > frame;
        }
        if held {
            reason = reason.or(Some(FallbackReason::Hold));
        }
        if config.fallback == FallbackPolicy::Always {
            reason = reason.or(Some(FallbackReason::Always));
        }
        match reason {
            Some(r) => redo.push((k, r)),
            None => {
                let handles = members.iter().map(|&b| slots[b as usize].handle).collect();
                report.islands.push(island(handles, info, StepPath::Fast, None));
            }
        }
    }
    let check_ms = check_start.elapsed().as_secs_f64() * 1e3;
    for r in report.islands.iter_mut().filter(|r| r.substep == info.substep && r.path == StepPath::Fast) {
        r.ms = info.fast_ms + check_ms;
    }
    if redo.is_empty() {
        return check_ms;
    }
    // Every island to redo goes back to the step's start first, so each redo sees the others
    // where they start (islands' swept boxes are apart: none can reach another's).
    let fast: Vec<Vec4> = state.positions.clone();
    let mut solvable = Vec::new();
    for &(k, reason) in &redo {
        let (members, bx) = &found[k];
        let handles: Vec<SoftBodyHandle> = members.iter().map(|&b| slots[b as usize].handle).collect();
        let blocked = obstacles.iter().any(|o| o.moves() && o.box_reaches(bx.min, bx.max, 0.0));
        if blocked {
            // The fallback does not model moving colliders yet: the fast result stays (a
            // non-finite one is rolled back at rest by the world's guard), flagged.
            report.islands.push(IslandReport {
                ms: info.fast_ms + check_ms,
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
        let out = redo_island(state, snapshot, scratch, &mut rt.al, obstacles, members, slots, &fast, config, info);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        report.fallbacks += 1;
        if reason == FallbackReason::NonFinite {
            report.nan_detected = true;
        }
        let finite = members.iter().all(|&b| {
            slots[b as usize].range().all(|i| state.positions[i].is_finite() && state.velocities[i].is_finite())
        });
        if !finite {
            // Left to the world's guard, which rolls the bodies back at rest and names them.
            report.islands.push(IslandReport { ms, ..island(handles, info, StepPath::Restored, Some(reason)) });
            continue;
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
            continue;
        }
        if !matches!(reason, FallbackReason::Hold | FallbackReason::Always) {
            for hnd in &handles {
                let hist = rt.history.entry(*hnd).or_default();
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
    check_ms
}

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

/// Redoes one island's substep (its vertices are at the step's start) with the
/// augmented-Lagrangian solver, warm-started from the fast path's positions `fast`, and writes
/// positions, velocities and accelerations.
#[allow(clippy::too_many_arguments)]
fn redo_island(
    state: &mut SimState,
    snapshot: &Snapshot,
    scratch: &VbdScratch,
    al: &mut AlScratch,
    obstacles: &[Obstacle],
    members: &[u32],
    slots: &[BodySlot],
    fast: &[Vec4],
    config: &StepConfig,
    info: &SubstepInfo,
) -> crate::solver::al::AlStats {
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
    let targets = scratch.targets();
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
        // ALGORITHMS §4.5), and the next step starts without history: extrapolating the
        // integrator's higher-order velocity from a redone step spiked a corner of a stiff
        // incompressible cube landing on an edge to 10 m/s, and a truncated step is not the
        // integrator's minimiser at all. Backward Euler only damps.
        state.velocities[i] = (dx / h).extend(0.0);
        state.accelerations[i] = Vec4::ZERO;
        state.flags[i] |= VERTEX_NO_HISTORY;
    }
    stats
}
