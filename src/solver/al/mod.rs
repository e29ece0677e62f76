//! Augmented-Lagrangian penetration-free stepping (\[ALPF\]; docs/algorithms.md §4): the fallback that
//! redoes an island's step when the fast path's result is unsafe.
//!
//! Two sequences: the solver's targets `x̂` (Newton–PCG on the augmented Lagrangian, allowed
//! to penetrate) and the iterates `x` that follow them only as far as continuous collision
//! detection and the tets' volume allow, so every `x` is intersection- and inversion-free.
//! Out of time, the step returns the current `x`: less converged, never intersecting
//! (docs/algorithms.md §4.5).

pub(crate) mod constraints;
pub(crate) mod problem;
pub(crate) mod schedule;
pub(crate) mod step_size;

use std::time::Instant;

use glam::{DMat3, DVec3};

use crate::collision::Obstacle;
use crate::collision::swept::SweptPairs;
use crate::solver::linear::pcg;
use crate::state::SimState;

use constraints::{ActiveSet, earliest_hits};
use problem::{Problem, ProblemCache};
use schedule::Schedule;
use step_size::{StepLimits, max_step};

/// Consecutive outer iterations with a step below 1e-4 after which the penalty doubles and the
/// offset halves (\[ALPF\] §4.2). The paper waits 50 and never needed it; under Pliant's cap of
/// 50 iterations a step never got there, and a cloth dragged by its pins into a slot, with
/// vertices the fast path had left on the boxes' faces, stayed at α = 0 for every iteration of
/// every step: the island froze while its pins ran 0.4 m ahead.
pub(crate) const STALL_ITERATIONS: u32 = 5;

/// An answer whose merit is within this share of `AlSettings::violation_price_cap` above the
/// lowest iterate's is kept rather than rewound: at that scale merits differ by the rounding of
/// the multipliers' price, not by energy from nowhere. A settling stack of two boxes (price cap
/// 0.6 J) converged 2e-4 J above its start, was rewound to it, and stood still for the step.
pub(crate) const REWIND_SHARE: f64 = 0.01;

/// Settings of one augmented-Lagrangian step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlSettings {
    /// Contact offset δ \[m\]: the distance every pair is driven to.
    pub offset: f64,
    /// Termination tolerance ε on the weight of the first iterates (\[ALPF\] Eq. 7–9: 1e-3).
    pub epsilon: f64,
    /// `K_min`: iterates that must be left behind (2; 6 with friction or cloth).
    pub min_iterates: u32,
    /// Cap on outer iterations (default 50: the paper's scenes converge within a few dozen; a
    /// step that needs more is held back by inversion or contact it cannot resolve, and is
    /// returned truncated, intersection-free, rather than stalled at a high cost).
    pub max_iterations: u32,
    /// Cap on Newton iterations per subproblem.
    pub newton_iterations: u32,
    /// Relative PCG tolerance (\[ALPF\]: 1e-4).
    pub cg_tolerance: f64,
    /// Cap on PCG iterations per Newton step.
    pub cg_iterations: u32,
    /// Smallest volume ratio any tet may reach.
    pub j_min: f64,
    /// Static friction slip `ε_v h` \[m\].
    pub static_slip: f64,
    /// A subproblem whose gradient norm is below this is solved \[N\] (the caller sets a
    /// small share of the island's weight).
    pub force_tolerance: f64,
    /// Most that the offset violations of an iterate may be priced at when iterates are
    /// compared (\[J\]; see `al_step`): the multipliers that price them are only force
    /// estimates, wild in an unconverged step (1e7 N under a 78 N steel block), so the caller
    /// bounds the price by lifting its island's weight a few offsets. 0 compares potentials
    /// alone.
    pub violation_price_cap: f64,
    /// Return the current iterate once this time has passed.
    pub deadline: Option<Instant>,
    /// Take the first outer iteration even when the deadline has passed before it: without
    /// time for a Newton step it moves the safe iterate towards the first targets as far as
    /// CCD allows, for the price of one CCD. Where the first targets are the island's free
    /// flight, so that an island whose steps start past the deadline still moves.
    pub first_iteration_always: bool,
    /// Keep the step for the next call if the deadline stops it (`Unfinished`).
    pub keep_unfinished: bool,
}

impl Default for AlSettings {
    fn default() -> Self {
        Self {
            offset: 1e-3,
            epsilon: 1e-3,
            min_iterates: 2,
            max_iterations: 50,
            newton_iterations: 8,
            cg_tolerance: 1e-4,
            cg_iterations: 2000,
            j_min: 0.01,
            static_slip: 1e-4 / 60.0,
            force_tolerance: 1e-9,
            violation_price_cap: 0.0,
            deadline: None,
            first_iteration_always: false,
            keep_unfinished: false,
        }
    }
}

/// How an augmented-Lagrangian step went.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AlStats {
    /// Outer iterations (dual updates).
    pub iterations: u32,
    /// Newton iterations, all subproblems together.
    pub newton_iterations: u32,
    /// PCG iterations, all Newton steps together.
    pub cg_iterations: u32,
    /// Fraction of the step travelled, `1 − β_0` (1 when converged).
    pub travelled: f64,
    /// The termination criterion held (otherwise time or the iteration cap ran out).
    pub converged: bool,
    /// The last iterate's merit (incremental potential plus the capped price of its offset
    /// violations) was above an earlier one's by more than `REWIND_SHARE` of the price cap,
    /// and that one was returned instead: an inexact solve went uphill, and the step answers
    /// with its feasible iterate of lowest merit.
    pub rewound: bool,
    /// `‖∇L‖` at the last Newton iterate \[N\].
    pub residual: f64,
    /// Pairs in the active set at the end.
    pub pairs: usize,
    /// Smallest distance of an active pair at the returned iterate \[m\] (+∞ without pairs).
    pub min_distance: f64,
}

impl AlStats {
    /// The share of the step the answer stands for in time (docs/algorithms.md §4.5): what a
    /// step cut short by the deadline or the iteration cap travelled; 1 for a converged step
    /// (its start weighs less than ε) and for a rewound one. A rewound step went uphill: its
    /// lowest iterate is the answer to the whole step, a damped one, not a state part of the
    /// way along it. Read as a share, a cube caught on a cloth that the solver rewound to
    /// 1 % of its step kept its speed and was rewound again every frame: frozen in mid-air.
    pub fn share(&self) -> f64 {
        if self.converged || self.rewound { 1.0 } else { self.travelled }
    }
}

/// What an augmented-Lagrangian step solves.
pub(crate) struct AlInput<'a> {
    pub st: &'a SimState,
    pub obstacles: &'a [Obstacle],
    /// Start positions `x^[0]` of every vertex: intersection-free.
    pub start: &'a [DVec3],
    /// First target `x̂^0` of every vertex (the fast path's result: a warm start, penetration
    /// allowed); kinematic vertices at their targets, vertices not in the step at `start`.
    pub guess: &'a [DVec3],
    /// Vertices solved (the island's free vertices).
    pub solved: &'a [bool],
    /// Vertices that move (solved, and the island's kinematic vertices).
    pub moves: &'a [bool],
    /// Inertia `(m/w, y)` of a solved vertex.
    pub inertia: &'a dyn Fn(usize) -> (f64, DVec3),
    /// Body–body and self contact between surfaces (`StepConfig::surface_contact`).
    pub surface_pairs: bool,
}

/// Scratch and the active set, kept between steps so an island that stays on the fallback
/// starts from its last multipliers.
#[derive(Debug, Default)]
pub(crate) struct AlScratch {
    swept: SweptPairs,
    active: ActiveSet,
    hits: Vec<(crate::collision::swept::PairKey, f64)>,
    first: Vec<f64>,
    grad: Vec<DVec3>,
    diag: Vec<DMat3>,
    inverse: Vec<DMat3>,
    direction: Vec<DVec3>,
    rhs: Vec<DVec3>,
    friction_scale: Vec<f64>,
    trial: Vec<DVec3>,
    /// The iterate of lowest merit so far.
    best: Vec<DVec3>,
    /// The last step's problem structure.
    problem: ProblemCache,
    /// The last step, if the deadline stopped it (`al_step`).
    unfinished: Option<Unfinished>,
}

/// A step the deadline stopped, kept for the next call: one with the same start, first
/// targets, inertia and vertex masks picks it up where it stopped (its iterate, targets,
/// schedule and lowest iterate; the active set and multipliers stay in the scratch), instead
/// of setting up the same step again. A fallback step that travelled too little to read a
/// velocity from leaves its island as it was, so the next frame asks for the same step:
/// started afresh each frame, `projectile_wall`'s ball pressing into the wall redid one
/// Newton step of the same piece frame after frame (its set-up alone was over a 16 ms budget)
/// and never moved again. Any other step in between (another island's) forgets it. Only where
/// the caller asks (`AlSettings::keep_unfinished`: the fallback's impact pieces): a stalled
/// whole step picked up goes on stalling with its doubled penalty, and each of its iterations
/// costs more (a 1e9 Pa block on a sheet: 80–105 ms an iteration, against 20–45 ms afresh).
#[derive(Debug)]
struct Unfinished {
    start: Vec<DVec3>,
    guess: Vec<DVec3>,
    solved: Vec<bool>,
    moves: Vec<bool>,
    /// How many obstacles there were.
    obstacles: usize,
    /// The problem's inertia weights and targets.
    inertia: Vec<f64>,
    target: Vec<DVec3>,
    x: Vec<DVec3>,
    xh: Vec<DVec3>,
    sched: Schedule,
    /// Residual of the last Newton step.
    residual: f64,
    lowest: Option<(f64, f64)>,
    last_is_close: bool,
}

impl AlScratch {
    /// The fast path's self-contact certificate for the next steps' swept searches (see
    /// `SweptPairs::set_self_certificate`).
    pub fn set_self_certificate(
        &mut self,
        certificate: Option<crate::collision::self_clearance::SelfClearance>,
        floor: f32,
    ) {
        self.swept.set_self_certificate(certificate, floor);
    }

    /// Forgets the active set, the kept problem structure and any unfinished step (the state
    /// was repacked).
    pub fn clear(&mut self) {
        self.active = ActiveSet::default();
        self.problem = ProblemCache::default();
        self.unfinished = None;
    }

    /// Whether the next step from positions `start` over the vertices `solved` may pick up
    /// the last one, which the deadline stopped (`Unfinished`; its targets must match too).
    pub fn resumes(&self, start: &[DVec3], solved: &[bool]) -> bool {
        self.unfinished.as_ref().is_some_and(|u| u.start == start && u.solved == solved)
    }

    /// Whether a pair of the active set (the pairs the fallback last held) that moves a vertex
    /// `solved` says is solved is within `gap` at positions `x` (every vertex): an island that
    /// stayed on the fallback still presses into what it met. The distances are measured
    /// anew, so a set left from an earlier step of a body now flying says nothing.
    pub fn touching(&mut self, x: &[DVec3], obstacles: &[Obstacle], solved: &[bool], gap: f64) -> bool {
        let n = x.len();
        self.active.retain_vertices(|v| (v as usize) < n);
        let ours = |c: &constraints::Constraint| c.key.moving_vertices().iter().any(|&v| solved[v as usize]);
        if !self.active.list.iter().any(ours) {
            return false;
        }
        self.active.linearize(x, obstacles);
        self.active.list.iter().any(|c| c.distance < gap && ours(c))
    }

    /// Scratch holding the active set `active` (the GPU kernels' tests' oracle).
    #[cfg(all(test, feature = "gpu"))]
    pub(crate) fn with_active(active: ActiveSet) -> Self {
        Self { active, ..Self::default() }
    }
}

/// Whether `deadline` has passed (never without one).
pub(crate) fn expired(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// The step's first penalty μ = 0.1 · max diag ∇²E at `x` (\[ALPF\] Eq. 20) \[N/m\]; `grad`
/// is scratch.
pub(crate) fn first_penalty(problem: &mut Problem, st: &SimState, x: &[DVec3], grad: &mut Vec<DVec3>) -> f64 {
    grad.resize(problem.len(), DVec3::ZERO);
    problem.gradient_hessian(st, x, grad);
    (0.1 * problem.max_diagonal()).max(1e-9)
}

/// The share of its step an island can travel along the straight path `start → free` (its
/// free flight) before two of its surfaces, or a surface and an obstacle, come within `gap`
/// (additive CCD keeping a hundredth of each approach; 1 if none do). The fallback splits a
/// fast island's step there (`runtime::fallback`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn impact_share(
    st: &SimState,
    obstacles: &[Obstacle],
    (start, free): (&[DVec3], &[DVec3]),
    (moves, solved): (&[bool], &[bool]),
    surface_pairs: bool,
    gap: f64,
    scratch: &mut AlScratch,
) -> f64 {
    let lim = StepLimits { st, obstacles, moves, solved, surface_pairs, obstacle_edges: true, tets: &[], j_min: 0.0 };
    let params = crate::collision::ccd::CcdParams::<f64> { min_separation: gap, safety: 0.01, max_iterations: 64 };
    step_size::max_step_with(&lim, start, free, &mut scratch.swept, &mut scratch.hits, params)
}

/// One augmented-Lagrangian step; the returned iterate goes to `x_out` (every vertex).
pub(crate) fn al_step(input: &AlInput<'_>, s: &AlSettings, scratch: &mut AlScratch, x_out: &mut Vec<DVec3>) -> AlStats {
    let st = input.st;
    let n = st.vertex_count();
    let mut problem = scratch.problem.take(st, input.solved, input.inertia);
    let mut stats = AlStats { min_distance: f64::INFINITY, ..AlStats::default() };
    let solved = input.solved;
    let tets = problem.tets().to_vec();
    let lim = StepLimits {
        st,
        obstacles: input.obstacles,
        moves: input.moves,
        solved,
        surface_pairs: input.surface_pairs,
        obstacle_edges: true,
        tets: &tets,
        j_min: s.j_min,
    };
    // Every iterate x^[k] is feasible (intersection-free, no tet below j_min), and the step's
    // answer is the feasible point of lowest merit: incremental potential plus the price of
    // its offset violations (`ActiveSet::violation_price`, at most
    // `AlSettings::violation_price_cap`). The start x^[0] is one (staying
    // put). The iterates are meant to descend, but inexact subproblems on badly conditioned
    // islands (a 1e11 Pa block on a 30 g cloth) can leave the last one far above the start,
    // flinging vertices metres in a step with energy from nowhere; the lowest one seen is
    // returned. The price matters at rest: a stack the fast path left closer than the offset
    // gains potential on its way out, and by potential alone staying put won every step of a
    // hold, freezing the island. Only where no kinematic vertex moves: a pin's target is part
    // of the step's answer, and the iterates carry the pins only part of the way, so their
    // potentials do not compare.
    // (potential, travelled) of the lowest iterate so far (in `scratch.best`), and whether the
    // last iterate stands: its merit is within `REWIND_SHARE` of the price cap above the
    // lowest's.
    let resumed = scratch.unfinished.take().filter(|u| {
        u.start == input.start
            && u.guess == input.guess
            && u.solved == input.solved
            && u.moves == input.moves
            && u.obstacles == input.obstacles.len()
            && u.inertia == problem.inertia
            && u.target == problem.target
    });
    // A step picked up has its set-up paid for: its first iteration runs even past the
    // deadline, so an island whose frames are all spent before their steps get far moves on
    // by at least an iteration every other frame.
    let owed = resumed.is_some();
    let (mut x, mut xh, mut sched, mut lowest, mut last_is_close);
    if let Some(u) = resumed {
        (x, xh, sched, lowest, last_is_close) = (u.x, u.xh, u.sched, u.lowest, u.last_is_close);
        stats.residual = u.residual;
    } else {
        x = input.start.to_vec();
        xh = input.guess.to_vec();
        sched = Schedule::new(first_penalty(&mut problem, st, &x, &mut scratch.grad), s.offset);
        scratch.active.retain_vertices(|v| (v as usize) < n);
        scratch.active.list.retain(|c| c.key.moving_vertices().iter().any(|&v| solved[v as usize]));
        scratch.active.prune();
        // Seed the set with what the fast path's motion runs into (docs/algorithms.md §4.5).
        max_step(&lim, &x, &xh, &mut scratch.swept, &mut scratch.hits);
        for key in earliest_hits(&scratch.hits, n, &mut scratch.first) {
            scratch.active.add(st, input.obstacles, key, &x);
        }
        let comparable = (0..n).all(|v| !input.moves[v] || input.solved[v] || input.start[v] == input.guess[v]);
        lowest = comparable.then(|| (problem.energy(st, &x), 0.0));
        last_is_close = true;
        if lowest.is_some() {
            scratch.best.clone_from(&x);
        }
    }
    let before = sched.iterations;
    let mut stopped = false;
    while sched.iterations < s.max_iterations {
        if (sched.iterations > before || !(s.first_iteration_always || owed)) && expired(s.deadline) {
            stopped = true;
            break;
        }
        let (mu, delta) = (sched.mu, sched.delta);
        scratch.active.linearize(&x, input.obstacles);
        solve_subproblem(input, s, &mut problem, scratch, &mut xh, mu, delta, &mut stats);
        scratch.active.dual_update(&xh, mu, delta);
        let alpha = max_step(&lim, &x, &xh, &mut scratch.swept, &mut scratch.hits);
        for key in earliest_hits(&scratch.hits, n, &mut scratch.first) {
            scratch.active.add(st, input.obstacles, key, &x);
        }
        scratch.active.prune();
        for v in (0..n).filter(|&v| input.moves[v]) {
            let d = (xh[v] - x[v]) * alpha;
            x[v] += d;
        }
        sched.weigh(alpha, s);
        stats.iterations = sched.iterations - before;
        if let Some((energy, travelled)) = &mut lowest {
            // Both priced by the current multipliers and offset.
            let last = problem.energy(st, &x);
            let price =
                |y: &[DVec3]| scratch.active.violation_price(y, input.obstacles, delta).min(s.violation_price_cap);
            let (mine, theirs) = (last + price(&x), *energy + price(&scratch.best));
            let last_is_lowest = mine <= theirs;
            last_is_close = mine <= theirs + REWIND_SHARE * s.violation_price_cap;
            if last_is_lowest {
                (*energy, *travelled) = (last, 1.0 - sched.start_weight);
                scratch.best.clone_from(&x);
            }
        }
        if sched.converged(s) {
            stats.converged = true;
            break;
        }
        sched.stall(alpha);
    }
    stats.travelled = 1.0 - sched.start_weight;
    let mut answer = None;
    if let Some((_, travelled)) = lowest
        && !last_is_close
    {
        stats.rewound = true;
        stats.travelled = travelled;
        answer = Some(&scratch.best);
    }
    x_out.clear();
    x_out.extend_from_slice(answer.unwrap_or(&x));
    scratch.active.linearize(x_out, input.obstacles);
    stats.pairs = scratch.active.list.len();
    stats.min_distance = scratch.active.min_distance();
    if stopped && s.keep_unfinished {
        scratch.unfinished = Some(Unfinished {
            start: input.start.to_vec(),
            guess: input.guess.to_vec(),
            solved: solved.to_vec(),
            moves: input.moves.to_vec(),
            obstacles: input.obstacles.len(),
            inertia: problem.inertia.clone(),
            target: problem.target.clone(),
            x,
            xh,
            sched,
            residual: stats.residual,
            lowest,
            last_is_close,
        });
    }
    scratch.problem.keep(problem);
    stats
}

/// Minimises the augmented Lagrangian over the solved vertices' targets by Newton–PCG with a
/// backtracking line search; stops once a full Newton step is taken (\[ALPF\] Alg. 2).
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_subproblem(
    input: &AlInput<'_>,
    s: &AlSettings,
    problem: &mut Problem,
    scratch: &mut AlScratch,
    xh: &mut [DVec3],
    mu: f64,
    delta: f64,
    stats: &mut AlStats,
) {
    let st = input.st;
    let m = problem.len();
    let start = input.start;
    let lagrangian = |problem: &Problem, active: &ActiveSet, y: &[DVec3]| {
        problem.energy(st, y) + active.energy(y, start, mu, delta, s.static_slip)
    };
    for _ in 0..s.newton_iterations {
        if expired(s.deadline) {
            return;
        }
        let AlScratch { active, grad, diag, inverse, direction, rhs, friction_scale, trial, .. } = scratch;
        grad.resize(m, DVec3::ZERO);
        problem.gradient_hessian(st, xh, grad);
        diag.clear();
        diag.resize(m, DMat3::ZERO);
        active.gradient(xh, start, &problem.dof, mu, delta, s.static_slip, grad, diag, friction_scale);
        inverse.clear();
        inverse.extend((0..m).map(|i| {
            let b = problem.hessian.diagonal_block(i) + diag[i];
            let inv = b.inverse();
            if inv.is_finite() { inv } else { DMat3::IDENTITY }
        }));
        rhs.clear();
        rhs.extend(grad.iter().map(|g| -*g));
        stats.residual = grad.iter().map(|g| g.length_squared()).sum::<f64>().sqrt();
        if stats.residual <= s.force_tolerance {
            return;
        }
        direction.resize(m, DVec3::ZERO);
        let hessian = &problem.hessian;
        let dof = &problem.dof;
        let out = pcg(
            |p, y| {
                hessian.multiply(p, y);
                active.multiply(dof, mu, friction_scale, p, y);
            },
            inverse,
            rhs,
            direction,
            s.cg_tolerance,
            s.cg_iterations,
        );
        stats.cg_iterations += out.iterations;
        stats.newton_iterations += 1;
        // Backtracking on the Lagrangian itself.
        let l0 = lagrangian(problem, active, xh);
        let slope: f64 = grad.iter().zip(direction.iter()).map(|(g, d)| g.dot(*d)).sum();
        if !(slope < 0.0) {
            return;
        }
        let mut r = 1.0f64;
        let accepted = loop {
            trial.clear();
            trial.extend_from_slice(xh);
            for (k, &v) in problem.vertices.iter().enumerate() {
                trial[v as usize] += direction[k] * r;
            }
            let l1 = lagrangian(problem, active, trial);
            if l1 <= l0 + 1e-4 * r * slope {
                break true;
            }
            r *= 0.5;
            if r < 1e-8 {
                break false;
            }
        };
        if !accepted {
            return;
        }
        xh.copy_from_slice(trial);
        let step: f64 = direction.iter().map(|d| d.length_squared()).sum::<f64>().sqrt() * r;
        if r == 1.0 || step < 1e-12 {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use glam::{DVec3, Vec3};

    use super::*;
    use crate::prelude::*;
    use crate::test_rng::Rng;

    const H: f64 = 1.0 / 60.0;
    const G: DVec3 = DVec3::new(0.0, -9.81, 0.0);

    /// A 0.1 m stable neo-Hookean cube (E = 1e5 Pa, default density) whose lowest face is at `y`,
    /// at rest.
    fn cube_at(y: f32) -> SimState {
        let mut w = World::new(StepConfig::default()).expect("world");
        let mesh = TetMesh::box_mesh(Vec3::splat(0.1), [2, 2, 2], TetSplit::Six).expect("mesh");
        let material = crate::material::StableNeoHookean::from_young_poisson(1e5, 0.3);
        let body = SoftBodyBuilder::tetrahedral(mesh).material(material).translation(Vec3::new(0.0, y + 0.05, 0.0));
        w.bodies.insert(body.build().expect("body"));
        w.sync();
        w.state().clone()
    }

    /// Runs a backward-Euler step from rest with first target `guess`; returns the result,
    /// its stats, and the incremental potentials at the start and at the result.
    fn step(st: &SimState, obstacles: &[Obstacle], guess: &[DVec3]) -> (Vec<DVec3>, AlStats, f64, f64) {
        let start: Vec<DVec3> = st.positions.iter().map(|p| p.truncate().as_dvec3()).collect();
        let n = start.len();
        let (solved, moves) = (vec![true; n], vec![true; n]);
        let inertia = |i: usize| (st.masses[i] as f64 / (H * H), start[i] + G * H * H);
        let input = AlInput {
            st,
            obstacles,
            start: &start,
            guess,
            solved: &solved,
            moves: &moves,
            inertia: &inertia,
            surface_pairs: false,
        };
        // Lifting the cube's weight (9.8 N) by two offsets.
        let settings = AlSettings { offset: 1e-3, violation_price_cap: 0.02, ..AlSettings::default() };
        let mut x = Vec::new();
        let stats = al_step(&input, &settings, &mut AlScratch::default(), &mut x);
        let problem = Problem::new(st, &solved, inertia);
        let (e0, e1) = (problem.energy(st, &start), problem.energy(st, &x));
        (x, stats, e0, e1)
    }

    /// With nothing in the way, the step is the inertia target: every vertex falls h²g.
    #[test]
    fn free_fall_converges_to_the_predictor() {
        let st = cube_at(1.0);
        let start: Vec<DVec3> = st.positions.iter().map(|p| p.truncate().as_dvec3()).collect();
        let (x, stats, e0, e1) = step(&st, &[], &start);
        assert!(stats.converged && !stats.rewound, "{stats:?}");
        assert!((stats.travelled - 1.0).abs() < 1e-3, "{stats:?}");
        for (a, b) in x.iter().zip(&start) {
            assert!((*a - (*b + G * H * H)).length() < 1e-6, "{a} vs {b}");
        }
        assert!(e1 < e0);
    }

    /// A cube resting closer to the ground than the offset (as a fast path leaves a stack):
    /// the iterates that push it towards the offset gain potential energy, which the pairs'
    /// multipliers pay for, so the step is not rewound towards staying put (by potential alone
    /// it was, 13 % of the way, and a hold of such a stack froze it).
    #[test]
    fn a_body_inside_the_offset_is_not_rewound_to_its_start() {
        let st = cube_at(0.0004);
        let ground = [Obstacle::ground(0.0, 0.5)];
        let start: Vec<DVec3> = st.positions.iter().map(|p| p.truncate().as_dvec3()).collect();
        let (x, stats, _, _) = step(&st, &ground, &start);
        assert!(!stats.rewound && stats.travelled > 0.99, "{stats:?}");
        let lowest = x.iter().map(|p| p.y).fold(f64::INFINITY, f64::min);
        assert!(lowest > 0.0, "lowest vertex at {lowest} m: {stats:?}");
    }

    /// A first target scrambled by up to 0.3 m per vertex (tets inverted, vertices deep in the
    /// ground): the result is feasible (above the ground, no tet below j_min) and its
    /// incremental potential is no higher than staying put.
    #[test]
    fn a_wild_guess_gives_a_feasible_result_no_worse_than_the_start() {
        let st = cube_at(0.002);
        let ground = [Obstacle::ground(0.0, 0.0)];
        let mut rng = Rng(7);
        let guess: Vec<DVec3> = st.positions.iter().map(|p| p.truncate().as_dvec3() + rng.vec() * 0.3).collect();
        let (x, stats, e0, e1) = step(&st, &ground, &guess);
        assert!(x.iter().all(|p| p.y > -1e-9), "{stats:?}");
        for t in &st.tets {
            let xs = t.vertices.map(|i| x[i as usize].as_vec3a());
            let j = crate::material::tet::deformation_gradient::<f32>(&xs, &t.dm_inv()).determinant();
            assert!(j > 0.0099, "J = {j}");
        }
        assert!(e1 <= e0 + 1e-12, "{e1} > {e0}: {stats:?}");
    }
    /// A problem whose structure was kept from the last step has the unknowns, potential,
    /// gradient and Hessian a new build gives, with the new step's inertia; another mask of
    /// solved vertices builds anew.
    #[test]
    fn a_kept_problem_structure_is_the_one_a_new_build_gives() {
        let st = cube_at(0.0);
        let n = st.vertex_count();
        let mut rng = Rng(3);
        let x: Vec<DVec3> = st.positions.iter().map(|p| p.truncate().as_dvec3() + rng.vec() * 1e-3).collect();
        let solved = vec![true; n];
        let first = |i: usize| (1.0 + i as f64, x[i] + G);
        let second = |i: usize| (2.0 + i as f64, x[i] - G);
        let mut cache = ProblemCache::default();
        let mut kept = cache.take(&st, &solved, first);
        let mut grad = vec![DVec3::ZERO; kept.len()];
        kept.gradient_hessian(&st, &x, &mut grad);
        cache.keep(kept);
        let mut reused = cache.take(&st, &solved, second);
        let mut fresh = Problem::new(&st, &solved, second);
        assert_eq!(reused.vertices, fresh.vertices);
        assert_eq!(reused.energy(&st, &x), fresh.energy(&st, &x));
        let (mut g1, mut g2) = (vec![DVec3::ZERO; fresh.len()], vec![DVec3::ZERO; fresh.len()]);
        reused.gradient_hessian(&st, &x, &mut g1);
        fresh.gradient_hessian(&st, &x, &mut g2);
        assert_eq!(g1, g2);
        assert_eq!(reused.hessian.blocks, fresh.hessian.blocks);
        cache.keep(reused);
        let mut fewer = solved.clone();
        fewer[0] = false;
        assert_eq!(cache.take(&st, &fewer, second).len(), n - 1);
    }
}
