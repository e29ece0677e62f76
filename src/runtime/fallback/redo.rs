//! The fallback phase of a substep: every island the check rejected goes back to the
//! substep's start and is redone by the augmented-Lagrangian step (`solver::al`), warm-started
//! from the fast path's result, with the hold that keeps it on the fallback for a while; an
//! island the fallback cannot step (it touches a moving collider, which the fallback does not
//! model yet) keeps the fast result, flagged, and one whose result is still not valid is put
//! back at rest.

use std::collections::HashMap;
use std::time::Instant;

use glam::{DVec3, Vec3A, Vec4};

use super::check::speed_limit;
use super::{
    CATCH_UP_SHARE, Checked, HOLD_FRAMES, History, MAX_HOLD_FRAMES, MAX_LAG_SUBSTEPS, MIN_TRAVELLED, RETRY_WINDOW,
    Settle, SubstepInfo, fallback_settings, island,
};
use crate::body::SoftBodyHandle;
use crate::collision::Obstacle;
use crate::runtime::assemble::BodySlot;
use crate::runtime::config::StepConfig;
use crate::runtime::report::{IslandReport, StepPath, StepReport};
use crate::runtime::transaction::Snapshot;
use crate::solver::al::{AlInput, AlScratch, AlSettings, AlStats, al_step, expired, impact_share};
use crate::solver::check::FallbackReason;
use crate::solver::check::energy::body_energies;
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
    let Settle { state, snapshot, targets, runtime: rt, slots, config, frame, fast: fast_path } = s;
    let (found, redo) = (&checked.islands, &checked.redo);
    // The fast path's proof of which bodies keep apart from themselves: the redo's swept
    // searches skip those bodies' own pairs while they stay two contact offsets apart, where
    // no contact constraint is needed (`SweptPairs::set_self_certificate`).
    rt.al.set_self_certificate(fast_path.self_clearance().cloned(), 2.0 * config.contact_offset);
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
        let clock = island_clock(state, snapshot, targets, &rt.history, members, &handles, slots, info.h);
        let t = Instant::now();
        let out =
            redo_island(state, snapshot, targets, &mut rt.al, obstacles, members, slots, &fast, config, info, clock.h);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let settled = Settled { members, handles, reason, ms, clock };
        record_redo(state, snapshot, &mut rt.history, settled, &out, slots, frame, info, report);
        // An island of bodies pressed together that is still faster than the check allows
        // stays held: its fast step could only fail on speed, after its sweeps and their
        // detection, which for `projectile_wall`'s ball pressing into the wall cost 114–330 ms
        // each time its hold ran out. (A lone body, which has nothing to detect, goes back to
        // the fast path when its hold ends, and to the GPU where that is the backend.)
        // Likewise an island whose pins the fallback left far behind their targets (a cut step
        // of a cloth dragged through a slot under a budget): the fast step would carry them
        // there at once, and its sweeps over that jump took 31–43 ms of a 16 ms budget in
        // `fallback_cloth_gap`'s frame 14, where the hold ended 0.26 m behind.
        let limit = speed_limit(&found[k].1, config, info.h);
        let range = || members.iter().flat_map(|&b| slots[b as usize].range());
        let fast = members.len() > 1
            && range()
                .any(|i| state.flags[i] & VERTEX_KINEMATIC == 0 && state.velocities[i].truncate().length() > limit);
        let lagging_pins = range().any(|i| {
            state.flags[i] & VERTEX_KINEMATIC != 0
                && targets.get(i).is_some_and(|t| {
                    (state.positions[i] - *t).truncate().length() > SPLIT_REACH as f32 * config.contact_offset
                })
        });
        if fast || lagging_pins {
            for &b in members {
                let hist = rt.history.entry(slots[b as usize].handle).or_default();
                hist.hold_until = hist.hold_until.max(frame + 2);
            }
        }
    }
}

/// An island's clock on the fallback (see the module docs, "Lag").
#[derive(Clone, Copy, Debug)]
struct IslandClock {
    /// The length of the island's step \[s\]: the substep, stretched while it lags.
    h: f32,
    /// Whether the island keeps its own clock: no kinematic vertex of it moves in the substep
    /// (a moving pin runs on the world's clock, and the island cannot lag behind its pins).
    free: bool,
}

/// The clock the island `members` is redone on: a substep of `h`, stretched by the least lag
/// of its bodies (so no body gets ahead of the world), at most `CATCH_UP_SHARE` of a substep.
#[allow(clippy::too_many_arguments)]
fn island_clock(
    state: &SimState,
    snapshot: &Snapshot,
    targets: &[Vec4],
    history: &HashMap<SoftBodyHandle, History>,
    members: &[u32],
    handles: &[SoftBodyHandle],
    slots: &[BodySlot],
    h: f32,
) -> IslandClock {
    let pins_move = members.iter().flat_map(|&b| slots[b as usize].range()).any(|i| {
        state.flags[i] & VERTEX_KINEMATIC != 0
            && targets.get(i).is_some_and(|t| t.truncate() != snapshot.positions()[i].truncate())
    });
    let lag = handles.iter().map(|hnd| history.get(hnd).map_or(0.0, |r| r.lag)).fold(f64::INFINITY, f64::min);
    let stretch = if pins_move || !lag.is_finite() { 0.0 } else { lag.min((CATCH_UP_SHARE * h) as f64) as f32 };
    IslandClock { h: h + stretch, free: !pins_move }
}

/// An island the fallback redid.
struct Settled<'a> {
    members: &'a [u32],
    handles: Vec<SoftBodyHandle>,
    reason: FallbackReason,
    /// Time the redo took \[ms\].
    ms: f64,
    /// The clock it was redone on.
    clock: IslandClock,
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
    let Settled { members, handles, reason, ms, clock } = island_;
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
    // In f64 from the stored positions, as the solver held them: a dented wall's flattest
    // tets, at `J ≥ j_min` in f64, read as inverted in f32 arithmetic, and the island was put
    // back at rest.
    let inverted = state.tets.iter().any(|t| {
        members.contains(&state.vertex_body[t.vertices[0] as usize]) && {
            let x = t.vertices.map(|i| state.positions[i as usize].truncate().as_dvec3());
            !(crate::material::tet::deformation_gradient::<f64>(&x, &t.dm_inv().as_dmat3()).determinant() > 0.0)
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
    // The island's clock moved on by the share of its (stretched) step it travelled; the
    // world's by the substep. A step that travelled too little to read a velocity from kept
    // the island as it was (`redo_island`): its clock stood still.
    let advanced = if out.share() >= MIN_TRAVELLED { out.share() * clock.h as f64 } else { 0.0 };
    let (mut lag, mut time_dropped) = (0.0f64, 0.0f64);
    for hnd in &handles {
        let hist = history.entry(*hnd).or_default();
        let mut behind = (hist.lag + info.h as f64 - advanced).max(0.0);
        let most = if clock.free { MAX_LAG_SUBSTEPS as f64 * info.h as f64 } else { 0.0 };
        if behind > most {
            time_dropped = time_dropped.max(behind - most);
            behind = most;
        }
        // Rounding of `h` in f32 against the sums in f64 must not hold an island forever.
        hist.lag = if behind > 1e-4 * info.h as f64 { behind } else { 0.0 };
        lag = lag.max(hist.lag);
    }
    let out_of_time = expired(info.deadline);
    let soft_hold = handles.iter().all(|h| history.get(h).is_some_and(|r| r.hold_soft));
    if reason == FallbackReason::Hold && advanced == 0.0 && clock.free && out_of_time && soft_hold {
        // A soft hold the fallback cannot serve within the budget ends: the island's clock
        // would stand still for the rest of it (module docs, "Lag"). The fast path takes the
        // next substep, and its check decides again; a failure there starts a longer hold
        // (`RETRY_WINDOW`).
        for hnd in &handles {
            history.entry(*hnd).or_default().hold_until = frame;
        }
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
            hist.hold_soft = !reason.is_hard();
        }
    }
    report.lag = report.lag.max(lag);
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
        lag,
        time_dropped,
    });
}

/// Redoes one island's substep (its vertices are at the step's start) with the
/// augmented-Lagrangian solver and writes positions, velocities and accelerations; returns how
/// it went, its `travelled` the share of the whole step. An island whose free flight over the
/// step reaches further than `PRESS_REACH` offsets (a projectile) is taken in pieces
/// (`step_pieces`): free flight up to its impact, then short pieces while it presses into what
/// it met. A slower one is taken whole, or, if it flies into something (`next_piece`), in two
/// parts split at the impact, the second warm-started from the fast path's result. Pieces for
/// slower islands too (a cloth landing on a sphere at 1 m/s) left the draped cloth's edges
/// sagging into the sphere under a 4 ms budget (41–330 edges found inside over 120 frames,
/// none before), by way of the lag their cut pieces built up and the flights that followed.
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
    h: f32,
) -> AlStats {
    let n = state.vertex_count();
    let mut solved = vec![false; n];
    let mut moves = vec![false; n];
    for &b in members {
        for i in slots[b as usize].range() {
            moves[i] = true;
            solved[i] = state.flags[i] & VERTEX_KINEMATIC == 0;
        }
    }
    let start: Vec<DVec3> = state.positions.iter().map(|p| p.truncate().as_dvec3()).collect();
    let pin_end = |i: usize| targets.get(i).map_or(start[i], |t| t.truncate().as_dvec3());
    let whole = Part {
        h,
        velocities: snapshot.velocities(),
        accelerations: snapshot.accelerations(),
        flags: snapshot.flags(),
        warm: info.swept.then_some(fast),
    };
    let lim = Limits {
        obstacles,
        members,
        solved: &solved,
        moves: &moves,
        config,
        deadline: info.deadline,
        contact: &info.contact,
        flying: false,
        piece: false,
    };
    let reach = free_reach(state, &start, &whole, &lim);
    if reach > PRESS_REACH * config.contact_offset as f64 {
        let (solved, moves) = contact_region(state, &start, &whole, &lim, slots);
        let lim = Limits { solved: &solved, moves: &moves, ..lim };
        return step_pieces(state, &start, &whole, &lim, &pin_end, al);
    }
    if pin_reach(&start, &lim, &pin_end) > SPLIT_REACH * config.contact_offset as f64 {
        // Pins that drag the island far (a cloth pulled through a slot) drag it in pieces.
        return step_pieces(state, &start, &whole, &lim, &pin_end, al);
    }
    // Slower: whole, or split once at the impact (free flight, then the rest from it).
    let (t, flying) = next_piece(state, &start, &whole, &lim, &pin_end, reach, false, al);
    let lim = Limits { flying, ..lim };
    if t >= 1.0 {
        return step_part(state, &start, &whole, &lim, &pin_end, al);
    }
    let first = Part { h: t as f32 * h, warm: None, ..whole };
    let pin_at = |i: usize| start[i] + (pin_end(i) - start[i]) * t;
    let a = step_part(state, &start, &first, &lim, &pin_at, al);
    if a.share() < 1.0 {
        return AlStats { travelled: a.travelled * t, ..a };
    }
    let (velocities, accelerations, flags) =
        (state.velocities.clone(), state.accelerations.clone(), state.flags.clone());
    let second = Part {
        h: h - first.h,
        velocities: &velocities,
        accelerations: &accelerations,
        flags: &flags,
        warm: whole.warm,
    };
    let mid: Vec<DVec3> = state.positions.iter().map(|p| p.truncate().as_dvec3()).collect();
    let b = step_part(state, &mid, &second, &lim, &pin_end, al);
    AlStats {
        iterations: a.iterations + b.iterations,
        newton_iterations: a.newton_iterations + b.newton_iterations,
        cg_iterations: a.cg_iterations + b.cg_iterations,
        travelled: t + (1.0 - t) * b.travelled,
        ..b
    }
}

/// Free flight further than this many contact offsets in a step splits a redone step
/// (`next_piece`): resting and slowly moving islands are stepped whole.
const SPLIT_REACH: f64 = 10.0;
/// Splits closer than this share to either end of a step are not worth a second solve.
const MIN_SPLIT: f64 = 0.01;
/// Free flight over a piece of an island pressing into what it met reaches at most this many
/// contact offsets (`next_piece`).
const PIECE_REACH: f64 = 5.0;
/// An island is stepped in pieces only while its free flight over what is left of the step
/// reaches further than this many contact offsets (6 m/s at 60 Hz and the default offset;
/// `redo_island`).
const PRESS_REACH: f64 = 100.0;
/// Least share of a step one piece takes: a step has at most this many pieces' worth.
const MIN_PIECE: f64 = 1.0 / 256.0;

/// How far around a flying body's path its island is solved, in sizes of that body
/// (`contact_region`).
const REGION_SIZES: f64 = 2.0;

/// The vertices of a projectile's island that its pieces solve, and those that move
/// (`solved`, `moves`): every vertex of a body whose mean free flight over the step carries it
/// further than `SPLIT_REACH` offsets (the projectile), and of the other bodies those that lie
/// within `REGION_SIZES` of the projectile's size of the box its flight sweeps; kinematic
/// vertices keep their motion, and a body most of whose vertices move by more than an offset
/// in the step is solved whole. The rest of the island stays where the step starts, its
/// velocities kept, as a step the deadline stopped early leaves an island: its clock stands
/// still for the held frames, and the fast path takes it on when the hold ends. A held ball
/// pressing into a 0.5 m wall set up, searched and limited all of the wall's 30,000 tets in
/// every piece (`first_penalty`'s Hessian alone was 23 ms a frame) for a dent a few of its
/// cells across, and at a 16 ms budget no piece ever ran: the ball stood in front of the wall
/// for good. Within a piece (`PIECE_REACH` offsets of flight, 80 µs at 60 m/s) the wall's
/// pressure wave crosses a few millimetres; over the hold the still part acts as a clamp at the
/// region's rim. Chosen by mean motion, not by vertex: the wall's vertices that the ball
/// pushes move at its speed, and their body's size made the region the whole wall.
fn contact_region(
    state: &SimState,
    start: &[DVec3],
    part: &Part<'_>,
    lim: &Limits<'_>,
    slots: &[BodySlot],
) -> (Vec<bool>, Vec<bool>) {
    let (mut solved, mut moves) = (lim.solved.to_vec(), lim.moves.to_vec());
    let offset = lim.config.contact_offset as f64;
    let flight = |i: usize| part.inertia(state, lim.config, start[i], i).1;
    // Each projectile's swept box, grown by its size times `REGION_SIZES`.
    let mut boxes: Vec<(DVec3, DVec3)> = Vec::new();
    let mut flying = vec![false; lim.members.len()];
    for (k, &b) in lim.members.iter().enumerate() {
        let free: Vec<usize> = slots[b as usize].range().filter(|&i| solved[i]).collect();
        let mean = free.iter().map(|&i| flight(i) - start[i]).sum::<DVec3>() / free.len().max(1) as f64;
        if !(mean.length() > SPLIT_REACH * offset) {
            continue;
        }
        flying[k] = true;
        let (mut lo, mut hi) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
        let (mut size_lo, mut size_hi) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
        for i in slots[b as usize].range() {
            let y = if solved[i] { flight(i) } else { start[i] };
            (lo, hi) = (lo.min(start[i]).min(y), hi.max(start[i]).max(y));
            (size_lo, size_hi) = (size_lo.min(start[i]), size_hi.max(start[i]));
        }
        let grow = DVec3::splat((size_hi - size_lo).max_element() * REGION_SIZES);
        boxes.push((lo - grow, hi + grow));
    }
    let near = |p: DVec3| boxes.iter().any(|(lo, hi)| p.cmpge(*lo).all() && p.cmple(*hi).all());
    let h = part.h as f64;
    for (k, &b) in lim.members.iter().enumerate() {
        // A body most of whose vertices move by more than an offset in the step (a cloth
        // falling past) is solved whole: kept at its start it would hang in the air for the
        // hold. Not one only its dent moves in (the wall), nor one at rest under gravity.
        let range = slots[b as usize].range();
        let free = range.clone().filter(|&i| solved[i]).count();
        let moving =
            range.clone().filter(|&i| solved[i] && part.velocities[i].truncate().length() as f64 * h > offset).count();
        if flying[k] || 2 * moving > free {
            continue;
        }
        for i in range {
            if solved[i] && !near(start[i]) {
                (solved[i], moves[i]) = (false, false);
            }
        }
    }
    (solved, moves)
}

/// What the pieces of a redone step share.
#[derive(Clone, Copy)]
struct Limits<'a> {
    obstacles: &'a [Obstacle],
    members: &'a [u32],
    solved: &'a [bool],
    moves: &'a [bool],
    config: &'a StepConfig,
    deadline: Option<Instant>,
    /// The substep's contact model (the energy of a piece cut short, `step_pieces`).
    contact: &'a crate::collision::ContactModel,
    /// The piece is free flight (`next_piece`): its first outer iteration runs even past the
    /// deadline.
    flying: bool,
    /// A piece of an impact (`step_pieces`): one the deadline stops is picked up by the next
    /// frame (`AlSettings::keep_unfinished`).
    piece: bool,
}

/// A part of a redone step: its length and the state it starts from (positions are the
/// caller's `start`).
#[derive(Clone, Copy)]
struct Part<'a> {
    /// Length \[s\].
    h: f32,
    velocities: &'a [Vec4],
    accelerations: &'a [Vec4],
    flags: &'a [u32],
    /// The fast path's result, a warm start for a part that ends where the step does.
    warm: Option<&'a [Vec4]>,
}

impl Part<'_> {
    /// Vertex `i`'s inertia target (the integrator's step exactly as the fast path took it)
    /// and `m/w`, from `start`.
    fn inertia(&self, state: &SimState, config: &StepConfig, start: DVec3, i: usize) -> (f64, DVec3) {
        let gravity = Vec3A::from(config.gravity);
        let a = if self.flags[i] & VERTEX_NO_HISTORY != 0 { gravity } else { Vec3A::from_vec4(self.accelerations[i]) };
        let s = config.integrator.vertex_step(self.h, Vec3A::from_vec4(self.velocities[i]), a);
        (state.masses[i] as f64 / s.weight as f64, start + (s.predictor + gravity * s.weight).as_dvec3())
    }
}

/// Takes `part` of an island's step (from positions `start`, pins carried to `pin_end`) in
/// pieces, each an augmented-Lagrangian solve from the state the last one reached, its
/// positions and velocities (module docs, "Impact"), until the part's end, a piece cut short
/// or the deadline. A part taken whole answers as its solve did; one in pieces travelled the
/// share of the part its finished pieces cover, plus what its last one travelled.
fn step_pieces(
    state: &mut SimState,
    start: &[DVec3],
    part: &Part<'_>,
    lim: &Limits<'_>,
    pin_end: &impl Fn(usize) -> DVec3,
    al: &mut AlScratch,
) -> AlStats {
    let mut total = AlStats { min_distance: f64::INFINITY, ..AlStats::default() };
    // What is pressed together now, by the pairs the fallback last held, needs no CCD to find
    // its impact: the near stretch's CCD of a ball in its dent was half of a 100 ms frame.
    let gap = 2.0 * lim.config.contact_offset as f64;
    let mut touching = al.touching(start, lim.obstacles, lim.solved, gap);
    let (mut done, mut all_converged) = (0.0f64, true);
    // Pins that move do work on the island: its energy may rise.
    let driven = (0..start.len()).any(|i| lim.moves[i] && !lim.solved[i] && pin_end(i) != start[i]);
    let mut from = start.to_vec();
    let (mut velocities, mut accelerations, mut flags) =
        (part.velocities.to_vec(), part.accelerations.to_vec(), part.flags.to_vec());
    loop {
        let rest = 1.0 - done;
        let remaining = Part {
            h: (rest * part.h as f64) as f32,
            velocities: &velocities,
            accelerations: &accelerations,
            flags: &flags,
            warm: None,
        };
        // Pins a share `u` of the way from where this piece starts to the part's end.
        let from_ = &from;
        let pin_at = |u: f64| move |i: usize| from_[i] + (pin_end(i) - from_[i]) * u;
        let reach = free_reach(state, &from, &remaining, lim);
        let (mut share, flying) = next_piece(state, &from, &remaining, lim, &pin_at(1.0), reach, touching, al);
        if !flying {
            // A pressing piece is at least `MIN_PIECE` of the step, and takes a remainder too
            // short to be worth its own solve. A flight keeps its impact (`next_piece`).
            share = share.max(MIN_PIECE / rest).min(1.0);
            if 1.0 - share < 0.25 * share {
                share = 1.0;
            }
        }
        if done == 0.0 && share == 1.0 {
            // Whole: the fast path's result is a warm start for it.
            return step_part(state, start, part, &Limits { flying, ..*lim }, pin_end, al);
        }
        let piece = Part { h: (share * remaining.h as f64) as f32, ..remaining };
        let out = step_part(state, &from, &piece, &Limits { flying, piece: true, ..*lim }, &pin_at(share), al);
        total.iterations += out.iterations;
        total.newton_iterations += out.newton_iterations;
        total.cg_iterations += out.cg_iterations;
        if out.iterations > 0 {
            // A piece the deadline stopped before it began leaves the last one's contact.
            (total.residual, total.pairs, total.min_distance) = (out.residual, out.pairs, out.min_distance);
        }
        all_converged &= out.converged && !out.rewound;
        let travelled = out.share();
        if travelled >= MIN_TRAVELLED {
            done += share * rest * travelled;
            // Not a flight's: whether its impact, the deadline or a rewind cut it short, its
            // iterate follows the free flight, and so does its velocity (off by gravity over
            // the part it did not fly), not an unconverged solve's.
            let answered = out.converged && !out.rewound;
            if !(flying || answered || driven) {
                let before: Vec<Vec4> = from.iter().map(|p| p.as_vec3().extend(0.0)).collect();
                cap_energy(state, (&before, &velocities), lim);
            }
        }
        if travelled < 1.0 || share == 1.0 || expired(lim.deadline) {
            break;
        }
        // A piece that flew up to an impact ends touching, whatever its active set says.
        touching = out.pairs > 0 || flying;
        from.clear();
        from.extend(state.positions.iter().map(|p| p.truncate().as_dvec3()));
        velocities.clone_from(&state.velocities);
        accelerations.clone_from(&state.accelerations);
        flags.clone_from(&state.flags);
    }
    let finished = done >= 1.0 - 1e-9;
    total.converged = finished && all_converged;
    total.travelled = if finished { 1.0 } else { done };
    total
}

/// Scales the island's velocities down, as far as its kinetic energy allows, so that a piece
/// that did not converge (cut short, or rewound to its lowest iterate) ends with no more
/// energy (kinetic, elastic, gravitational and obstacle contact; surface contact is a
/// constraint here, with no energy) than it started with at positions and velocities
/// `before`: such an iterate is only part of the way to the piece's answer, and read as a
/// state its velocity (the answer's, `step_part`) and its elastic energy together can exceed
/// what the piece had. A 60 m/s ball whose impact pieces a 100 ms budget cut gained 60 J of
/// its 193 J over three frames that way. The island's own motion only: the rest of the world
/// is left as it is.
fn cap_energy(state: &mut SimState, before: (&[Vec4], &[Vec4]), lim: &Limits<'_>) {
    let gravity = Vec3A::from(lim.config.gravity);
    let island = |e: &[(f64, f64)]| lim.members.iter().map(|&b| e[b as usize].0 + e[b as usize].1).sum::<f64>();
    let mut energies = Vec::new();
    body_energies(state, before, gravity, lim.obstacles, lim.contact, &mut energies);
    let start = island(&energies);
    body_energies(state, (&state.positions, &state.velocities), gravity, lim.obstacles, lim.contact, &mut energies);
    let gain = island(&energies) - start;
    let kinetic: f64 = (0..state.vertex_count())
        .filter(|&i| lim.solved[i])
        .map(|i| 0.5 * state.masses[i] as f64 * state.velocities[i].truncate().length_squared() as f64)
        .sum();
    if !(gain > 0.0 && kinetic > 0.0) {
        return;
    }
    let scale = ((kinetic - gain).max(0.0) / kinetic).sqrt() as f32;
    for i in (0..state.vertex_count()).filter(|&i| lim.solved[i]) {
        state.velocities[i] *= scale;
    }
}

/// How far `part`'s free flight from `start` carries the island's farthest-flying free vertex
/// \[m\].
fn free_reach(state: &SimState, start: &[DVec3], part: &Part<'_>, lim: &Limits<'_>) -> f64 {
    (0..start.len())
        .filter(|&i| lim.solved[i])
        .map(|i| (part.inertia(state, lim.config, start[i], i).1 - start[i]).length())
        .fold(0.0, f64::max)
}

/// How far the island's pins move from `start` to `pin_end` \[m\] (the farthest).
fn pin_reach(start: &[DVec3], lim: &Limits<'_>, pin_end: &impl Fn(usize) -> DVec3) -> f64 {
    (0..start.len())
        .filter(|&i| lim.moves[i] && !lim.solved[i])
        .map(|i| (pin_end(i) - start[i]).length())
        .fold(0.0, f64::max)
}

/// The share of `part` its next piece takes, and whether that piece is free flight, given its
/// free flight's `reach` (`free_reach`). An
/// island whose free flight over the part carries no vertex further than `SPLIT_REACH`
/// offsets takes it whole. One that flies, not `touching` anything, flies up to where its free
/// flight first brings two surfaces (or a surface and an obstacle) within two contact offsets
/// (additive CCD keeping a hundredth of each approach), or all the way if nothing is in its
/// path. One at its impact, or `touching`, takes a piece whose free flight reaches
/// `PIECE_REACH` offsets while it reaches further than `PRESS_REACH` over the part, and the
/// part whole once it does not.
#[allow(clippy::too_many_arguments)]
fn next_piece(
    state: &SimState,
    start: &[DVec3],
    part: &Part<'_>,
    lim: &Limits<'_>,
    pin_end: &impl Fn(usize) -> DVec3,
    reach: f64,
    touching: bool,
    al: &mut AlScratch,
) -> (f64, bool) {
    let offset = lim.config.contact_offset as f64;
    let pins = pin_reach(start, lim, pin_end);
    if !(reach.max(pins) > SPLIT_REACH * offset) {
        return (1.0, false);
    }
    // Pressing in pieces only at speed, or dragged by pins; slower, the rest is one solve, as
    // it was before pieces. Dragged whole, a cloth pulled at 2 m/s through a slot had its
    // edges over the slot's rims swung 3 cm about them in one solve, whose straight paths cut
    // the rims at once: CCD held the island for frames while its pins ran on (0.3 m behind).
    let pressing = if reach > PRESS_REACH * offset || pins > SPLIT_REACH * offset {
        PIECE_REACH * offset / reach.max(pins)
    } else {
        1.0
    };
    if touching {
        return (pressing, false);
    }
    let free: Vec<DVec3> = (0..start.len())
        .map(|i| {
            if !lim.moves[i] {
                start[i]
            } else if !lim.solved[i] {
                pin_end(i)
            } else {
                part.inertia(state, lim.config, start[i], i).1
            }
        })
        .collect();
    // First along the flight's first `SPLIT_REACH` offsets: an island already at its impact
    // (a ball pressing into a wall) meets it there, and the CCD of its whole flight, which
    // sweeps through what it presses into, costs far more (330 ms a frame for
    // `projectile_wall`'s ball in its dent, against 24 ms for the first stretch).
    let mut impact = |c: f64| {
        let end: Vec<DVec3> = (0..start.len()).map(|i| start[i] + (free[i] - start[i]) * c).collect();
        let surface = lim.config.surface_contact;
        c * impact_share(state, lim.obstacles, (start, &end), (lim.moves, lim.solved), surface, 2.0 * offset, al)
    };
    let near = SPLIT_REACH * offset / reach.max(pins);
    let t = match impact(near) {
        t if t < near => t,
        _ => impact(1.0),
    };
    if t >= 1.0 - MIN_SPLIT {
        (1.0, true)
    } else if t >= MIN_SPLIT {
        (t, true)
    } else {
        (pressing, false)
    }
}

/// One augmented-Lagrangian solve of a part of an island's step from positions `start`, with
/// the island's kinematic vertices carried to `pin_end`; writes the island's positions,
/// velocities and accelerations unless it travelled (almost) nothing.
fn step_part(
    state: &mut SimState,
    start: &[DVec3],
    part: &Part<'_>,
    lim: &Limits<'_>,
    pin_end: &impl Fn(usize) -> DVec3,
    al: &mut AlScratch,
) -> AlStats {
    let n = state.vertex_count();
    let (config, moves, solved) = (lim.config, lim.moves, lim.solved);
    let guess: Vec<DVec3> = (0..n)
        .map(|i| {
            if !moves[i] {
                start[i]
            } else if !solved[i] {
                pin_end(i)
            } else if let Some(x) = part.warm.map(|w| w[i]).filter(|x| x.is_finite()) {
                x.truncate().as_dvec3()
            } else {
                part.inertia(state, config, start[i], i).1
            }
        })
        .collect();
    let inertia = |i: usize| part.inertia(state, config, start[i], i);
    let h = part.h;
    // Without a warm start the first targets are the free flight (the integrator's inertia
    // targets), which the first outer iteration of a flying island follows up to the first
    // contact even when the budget is spent: an island whose steps all start past the deadline
    // still flies. Not a resting one: its free flight runs into what it rests on at once, and
    // leaves its vertices on an obstacle's surface with the edges between them sagging into
    // it (a cloth draped over a sphere at a 4 ms budget).
    let settings = AlSettings {
        deadline: lim.deadline,
        first_iteration_always: lim.flying && part.warm.is_none(),
        keep_unfinished: lim.piece,
        ..fallback_settings(state, config, h, lim.members, |i| solved[i])
    };
    if !settings.first_iteration_always && expired(lim.deadline) && !al.resumes(start, solved) {
        // No iteration may run: the solver's set-up (its Hessian's pattern, the first
        // penalty, the seed of its active set) would only add to an overrun frame (24 ms a
        // frame for a 4,225-vertex cloth held at an 8 ms budget). The island stays as it was.
        // A step the last frame set up and left unfinished is picked up instead: it takes an
        // iteration (`al_step`).
        return AlStats { min_distance: f64::INFINITY, ..AlStats::default() };
    }
    let mut x = Vec::new();
    let stats = {
        let input = AlInput {
            st: state,
            obstacles: lim.obstacles,
            start,
            guess: &guess,
            solved,
            moves,
            inertia: &inertia,
            surface_pairs: config.surface_contact,
        };
        al_step(&input, &settings, al, &mut x)
    };
    let share = stats.share();
    if share < MIN_TRAVELLED {
        // Nothing travelled before the deadline or the iteration cap: the island stays as it
        // was, velocities included. Its clock stands still.
        return stats;
    }
    // A truncated iterate is the start plus `travelled` of a blend of full-step targets, so
    // its displacement over `travelled · h` is the velocity of the state reached.
    let elapsed = (share * h as f64) as f32;
    for i in (0..n).filter(|&i| moves[i]) {
        let dx = (x[i] - start[i]).as_vec3a();
        state.positions[i] = x[i].as_vec3().extend(0.0);
        // The fallback's velocity is the distance travelled over the time travelled (backward
        // Euler, docs/algorithms.md §4.5), and the next step starts without history:
        // extrapolating the integrator's higher-order velocity from a redone step spiked a
        // corner of a stiff incompressible cube landing on an edge to 10 m/s, and a truncated
        // step is not the integrator's minimiser at all. Backward Euler only damps. Over the
        // whole step instead, a truncated step lost the share it did not travel: a 60 m/s
        // ball whose step stopped at the deadline flew on at 27 m/s.
        state.velocities[i] = (dx / elapsed).extend(0.0);
        state.accelerations[i] = Vec4::ZERO;
        state.flags[i] |= VERTEX_NO_HISTORY;
    }
    stats
}
