//! Sparse-inverse local–global, the second fast path for a body (\[SILG\]; `docs/algorithms.md`
//! §3): a fixed number of iterations, each solving the whole body's linear part exactly, so
//! load crosses a stiff or slender body in one iteration where VBD's sweeps carry it one element
//! per sweep.
//!
//! The substep minimises the same incremental potential as VBD (same inertia targets, drag,
//! spin and initial guess, written by VBD's predict phase). The constant local–global matrix
//!
//! ```text
//! Ã = D + Σ_e 2 μ_e V_e G_eᵀ G_e        (D: each free vertex's inertia and drag stiffness)
//! ```
//!
//! depends on the step length, masses, drag, pins, rest shapes and shear moduli only, so it is
//! factored once into its exact sparse inverse ([`sparse_inverse`]), on a background thread, and
//! kept until one of those changes (its fingerprint); positions, velocities, contacts, gravity
//! and obstacles never rebuild it. The iterations ([`quasi_newton`]) are L-BFGS with `Ã⁻¹` as
//! the initial Hessian: with no curvature history a step is exactly a projective-dynamics
//! local–global step, and the history adds the curvature `Ã` lacks. `docs/algorithms.md` §3.2
//! records why this replaced ADMM iterations (measured on the cantilever).
//!
//! Scope of this first version (§3.3): a body takes the path in a substep only with tets alone
//! (no cloth), its factor ready, and nothing near it (no surface pair, no span contact, every
//! vertex farther from every obstacle than the offset plus twice the body's largest initial
//! move). Otherwise it takes VBD's sweeps for that substep, as the design routes an island with
//! too many contact rows. Contacts through multipliers (\[SILG\] §5) are not here yet, nor is
//! Rayleigh damping (its stress rate is not part of a potential). The result goes through the
//! same safety check as VBD's, and an unsafe body falls back the same way.

mod quasi_newton;
pub(crate) mod sparse_inverse;

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use glam::{Vec3A, Vec4};

use crate::collision::Obstacle;
use crate::material::tet::shape_gradients;
use crate::material::{MODEL_STABLE_NEO_HOOKEAN, MODEL_STVK};
use crate::solver::parallel::SharedSlice;
use crate::state::{SimState, VERTEX_KINEMATIC};
pub(crate) use quasi_newton::SharedQuasiNewton;
use quasi_newton::{History, QuasiNewton};
use sparse_inverse::{FactorError, SparseInverse};

/// `BodyRecord::solver` of a body that takes VBD's sweeps.
pub(crate) const SOLVER_VBD: u32 = 0;
/// `BodyRecord::solver` of a body that takes local–global iterations when it can.
pub(crate) const SOLVER_LOCAL_GLOBAL: u32 = 1;
/// `BodyRecord::solver` of a body whose path [`auto_prefers_local_global`] picks.
pub(crate) const SOLVER_AUTO: u32 = 2;

/// `auto` leaves bodies with more free vertices than this to VBD: the exact inverse's memory
/// grows faster than the vertex count (18 MB at 2,695 vertices, 82 MB at 6,561 for the beams of
/// `bench_fast_paths`).
const AUTO_MAX_VERTICES: u32 = 10_000;

/// No row: a pinned vertex.
const NO_ROW: u32 = u32::MAX;

/// The local–global path's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalGlobalSettings {
    /// Local–global iterations per substep (fixed: the path's cost).
    pub iterations: u32,
    /// Build a body's factor on the stepping thread before its first substep instead of in the
    /// background (the body then takes VBD until it is ready). For replays and tests whose
    /// result must not depend on how fast the build ran.
    pub wait_for_factor: bool,
}

impl Default for LocalGlobalSettings {
    fn default() -> Self {
        Self { iterations: 10, wait_for_factor: false }
    }
}

/// What the local–global path did in a substep, and what its factors cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LocalGlobalStats {
    /// Bodies solved by local–global iterations in the substep.
    pub bodies_solved: u32,
    /// Bodies that asked for the path but took VBD because something was near them.
    pub bodies_near_contact: u32,
    /// Bodies that asked for the path but took VBD while their factor was being built.
    pub bodies_waiting: u32,
    /// Factors held.
    pub factors: u32,
    /// Bytes the held factors take.
    pub factor_bytes: u64,
    /// Wall time of the most recent factor build \[ms\] (0 when none was built yet).
    pub last_build_ms: f64,
    /// Factor builds finished since the world was made (each change of a listed input is one).
    pub builds: u32,
    /// Bodies whose factor could not be built (they take VBD; the reason is logged), for
    /// example an `L⁻¹` past 2³² entries.
    pub failed: u32,
    /// Bodies with `SolverChoice::Auto` that it sent to the local–global path, and to VBD.
    pub auto_local_global: u32,
    /// See `auto_local_global`.
    pub auto_vbd: u32,
}

/// A body's factored system and the maps between its vertices and the system's rows.
#[derive(Debug)]
pub(crate) struct Built {
    inverse: SparseInverse,
    /// Row → vertex (state index).
    rows: Vec<u32>,
    /// The body's tets.
    tets: std::ops::Range<usize>,
    build_ms: f64,
}

impl Built {
    /// Row → vertex (state index).
    pub(crate) fn rows(&self) -> &[u32] {
        &self.rows
    }
}

/// A body's factor: being built, ready, or failed, for the inputs hashed in `key`.
#[derive(Debug)]
pub(crate) enum BodyFactor {
    Building { key: u64, job: JoinHandle<Result<Built, FactorError>> },
    Ready { key: u64, built: Arc<Built> },
    Failed { key: u64, error: FactorError },
}

impl BodyFactor {
    fn key(&self) -> u64 {
        match self {
            Self::Building { key, .. } | Self::Ready { key, .. } | Self::Failed { key, .. } => *key,
        }
    }
}

/// The local–global path's state between substeps: per body its factor and whether its duals
/// are warm, per tet the ADMM scratch, per row the global step's vectors.
#[derive(Debug, Default)]
pub(crate) struct LocalGlobal {
    factors: Vec<Option<BodyFactor>>,
    /// Per body: solved by this path in the current substep.
    pub(crate) active: Vec<bool>,
    /// Per body: its curvature pairs (cleared when it leaves the path or its factor changes).
    histories: Vec<History>,
    solver: QuasiNewton,
    stats: LocalGlobalStats,
}

/// What planning a substep reads: VBD's predict and detect phases have written the inertia
/// targets, the drag coefficients and the initial guess.
pub(crate) struct PlanInputs<'a> {
    pub state: &'a SimState,
    /// `x^n`.
    pub start: &'a [Vec4],
    /// xyz `y − x^n`, w `m/w`.
    pub inertia: &'a [Vec4],
    /// xyz `c0`, w `c1` of `v = c1 Δx + c0`.
    pub velocity: &'a [Vec4],
    /// Bodies with a surface pair, or a span contact, at the last detection.
    pub near_surface: &'a [bool],
    pub obstacles: &'a [Obstacle],
    /// The contact offset \[m\].
    pub offset: f32,
    /// Substep length \[s\] and VBD sweeps in it (what `auto` weighs).
    pub h: f32,
    pub sweeps: u32,
}

/// A copy starts without factors (a build thread cannot be shared): it builds its own.
impl Clone for LocalGlobal {
    fn clone(&self) -> Self {
        Self { stats: self.stats, ..Self::default() }
    }
}

impl LocalGlobal {
    /// Forgets everything that names elements or vertices of the previous topology.
    pub(crate) fn topology_changed(&mut self) {
        self.factors.clear();
        self.histories.clear();
        self.active.clear();
    }

    /// A substep in which no body asks for the path: nothing active, nothing to report but the
    /// builds so far.
    pub(crate) fn idle(&mut self) {
        self.active.clear();
        self.stats = LocalGlobalStats {
            last_build_ms: self.stats.last_build_ms,
            builds: self.stats.builds,
            ..Default::default()
        };
    }

    /// What the path did in the last substep.
    pub(crate) fn stats(&self) -> LocalGlobalStats {
        self.stats
    }

    /// Decides which bodies take the path this substep (`active`), starting or collecting
    /// factor builds; true when any does.
    pub(crate) fn plan(&mut self, inp: &PlanInputs<'_>, settings: &LocalGlobalSettings) -> bool {
        let st = inp.state;
        let bodies = st.bodies.len();
        self.factors.resize_with(bodies, || None);
        self.histories.resize_with(bodies, History::default);
        // A body that was not on the path last substep, or whose factor changes, starts
        // without curvature pairs.
        for (h, &was) in self.histories.iter_mut().zip(&self.active) {
            if !was {
                h.clear();
            }
        }
        self.active.clear();
        self.active.resize(bodies, false);
        let mut stats = LocalGlobalStats {
            last_build_ms: self.stats.last_build_ms,
            builds: self.stats.builds,
            ..Default::default()
        };
        for b in 0..bodies {
            let wants = match st.bodies[b].solver {
                SOLVER_LOCAL_GLOBAL => true,
                SOLVER_AUTO => {
                    let yes = auto_prefers_local_global(inp, b);
                    if yes {
                        stats.auto_local_global += 1;
                    } else {
                        stats.auto_vbd += 1;
                    }
                    yes
                }
                _ => false,
            };
            if !wants {
                // A factor is kept while `auto` may come back to it; it is rebuilt only if its
                // inputs change meanwhile.
                if st.bodies[b].solver != SOLVER_AUTO {
                    self.factors[b] = None;
                }
                continue;
            }
            let Some((key, tets)) = fingerprint(inp, b) else {
                self.factors[b] = None;
                continue;
            };
            if matches!(&self.factors[b], Some(BodyFactor::Building { job, .. }) if job.is_finished()) {
                let Some(BodyFactor::Building { key, job }) = self.factors[b].take() else { unreachable!() };
                stats.builds += 1;
                self.factors[b] = Some(match job.join() {
                    Ok(Ok(built)) => {
                        stats.last_build_ms = built.build_ms;
                        BodyFactor::Ready { key, built: Arc::new(built) }
                    }
                    Ok(Err(error)) => BodyFactor::Failed { key, error },
                    Err(_) => BodyFactor::Failed { key, error: FactorError::Faer("the build thread panicked".into()) },
                });
                if let Some(BodyFactor::Failed { error, .. }) = &self.factors[b] {
                    log::warn!("body {b}: the local–global factor could not be built ({error}); it takes VBD");
                }
            }
            // A build still running for older inputs is left to finish (it is replaced once
            // collected): a thread per change would pile up while the inputs keep changing.
            let building = matches!(&self.factors[b], Some(BodyFactor::Building { .. }));
            if !building && self.factors[b].as_ref().is_none_or(|f| f.key() != key) {
                let job = system_inputs(inp, b, tets);
                self.histories[b].clear();
                self.factors[b] = Some(if settings.wait_for_factor {
                    match build(job) {
                        Ok(built) => BodyFactor::Ready { key, built: Arc::new(built) },
                        Err(error) => {
                            log::warn!("body {b}: the local–global factor could not be built ({error}); it takes VBD");
                            BodyFactor::Failed { key, error }
                        }
                    }
                } else {
                    BodyFactor::Building { key, job: std::thread::spawn(move || build(job)) }
                });
                if settings.wait_for_factor {
                    stats.builds += 1;
                    if let Some(BodyFactor::Ready { built, .. }) = &self.factors[b] {
                        stats.last_build_ms = built.build_ms;
                    }
                }
            }
            match &self.factors[b] {
                Some(BodyFactor::Ready { built, .. }) => {
                    stats.factors += 1;
                    stats.factor_bytes += built.inverse.bytes() as u64;
                    if clear_of_contact(inp, b) {
                        self.active[b] = true;
                        stats.bodies_solved += 1;
                    } else {
                        stats.bodies_near_contact += 1;
                    }
                }
                Some(BodyFactor::Building { .. }) => stats.bodies_waiting += 1,
                Some(BodyFactor::Failed { .. }) => stats.failed += 1,
                None => {}
            }
        }
        self.stats = stats;
        stats.bodies_solved > 0
    }

    /// The ready factors of the active bodies among `bodies`.
    fn ready(&self, bodies: std::ops::Range<usize>) -> impl Iterator<Item = (usize, &Arc<Built>)> {
        bodies.filter(|&b| self.active[b]).filter_map(|b| match &self.factors[b] {
            Some(BodyFactor::Ready { built, .. }) => Some((b, built)),
            _ => None,
        })
    }

    /// The planned bodies' factors, and the scratch their solve phase shares.
    pub(crate) fn begin_solve(
        &mut self,
        vertices: usize,
        tets: usize,
    ) -> (Vec<(usize, Arc<Built>)>, SharedQuasiNewton<'_>) {
        let list: Vec<_> = self.ready(0..self.active.len()).map(|(b, f)| (b, Arc::clone(f))).collect();
        let rows = list.iter().map(|(_, f)| f.rows.len()).max().unwrap_or(0);
        self.solver.resize(vertices, tets, rows);
        (list, self.solver.share(&mut self.histories))
    }
}

/// The inputs of one body's factor: row count and the upper triangle of `Ã`, and the maps.
struct SystemInputs {
    n: usize,
    upper: Vec<(u32, u32, f64)>,
    rows: Vec<u32>,
    tets: std::ops::Range<usize>,
}

/// The body's contiguous tet range, or `None` when it has no tets or has cloth or hinges.
fn body_tets(st: &SimState, b: usize) -> Option<std::ops::Range<usize>> {
    let owned = |vertices: &[u32]| st.vertex_body[vertices[0] as usize] as usize == b;
    if st.tris.iter().any(|t| owned(&t.vertices)) || st.hinges.iter().any(|h| owned(&h.vertices)) {
        return None;
    }
    let first = st.tets.iter().position(|t| owned(&t.vertices))?;
    let len = st.tets[first..].iter().take_while(|t| owned(&t.vertices)).count();
    let range = first..first + len;
    // The packed state keeps a body's elements together; the iterations rely on it.
    if st.tets[range.end..].iter().any(|t| owned(&t.vertices)) {
        return None;
    }
    // Every element's material must have a singular-value form.
    range
        .clone()
        .all(|e| matches!(st.materials[st.tets[e].material as usize].model, MODEL_STABLE_NEO_HOOKEAN | MODEL_STVK))
        .then_some(range)
}

/// Vertex `v`'s inertia and drag as the quadratic `½ d |δ|² − e·δ` in `δ = x − x^n`: the
/// diagonal `d` (in the matrix) and the constant force `e` (`vertex::external_terms`), from the
/// inertia targets (`inertia`) and the velocity coefficients (`velocity`).
pub(crate) fn inertia_and_drag(st: &SimState, inertia: &[Vec4], velocity: &[Vec4], v: usize) -> (f32, Vec3A) {
    let drag = st.bodies[st.vertex_body[v] as usize].linear_damping * st.masses[v];
    let (i, vel) = (inertia[v], velocity[v]);
    (i.w + drag * vel.w, Vec3A::from_vec4(i) * i.w - Vec3A::from_vec4(vel) * drag)
}

/// The diagonal of vertex `v`'s inertia and drag.
fn vertex_diagonal(inp: &PlanInputs<'_>, v: usize) -> f32 {
    inertia_and_drag(inp.state, inp.inertia, inp.velocity, v).0
}

/// A hash of everything the body's matrix depends on (pins, inertia and drag diagonals, rest
/// shapes, stiffness), with the body's tet range; `None` for a body the path cannot take.
fn fingerprint(inp: &PlanInputs<'_>, b: usize) -> Option<(u64, std::ops::Range<usize>)> {
    let st = inp.state;
    let tets = body_tets(st, b)?;
    let r = &st.bodies[b];
    let range = r.vertex_start as usize..(r.vertex_start + r.vertex_count) as usize;
    // Every vertex pinned: nothing to solve.
    if range.clone().all(|v| st.flags[v] & VERTEX_KINEMATIC != 0) {
        return None;
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (r.vertex_start, r.vertex_count, tets.start, tets.end).hash(&mut h);
    for v in r.vertex_start as usize..(r.vertex_start + r.vertex_count) as usize {
        let pinned = st.flags[v] & VERTEX_KINEMATIC != 0;
        pinned.hash(&mut h);
        if !pinned {
            vertex_diagonal(inp, v).to_bits().hash(&mut h);
        }
    }
    for t in &st.tets[tets.clone()] {
        bytemuck::bytes_of(t).hash(&mut h);
        st.materials[t.material as usize].mu.to_bits().hash(&mut h);
    }
    Some((h.finish(), tets))
}

/// Assembles the body's system (see the module docs).
fn system_inputs(inp: &PlanInputs<'_>, b: usize, tets: std::ops::Range<usize>) -> SystemInputs {
    let st = inp.state;
    let r = &st.bodies[b];
    let first = r.vertex_start as usize;
    let mut row_of = vec![NO_ROW; r.vertex_count as usize];
    let mut rows = Vec::new();
    let mut upper = Vec::new();
    for v in first..first + r.vertex_count as usize {
        if st.flags[v] & VERTEX_KINEMATIC == 0 {
            row_of[v - first] = rows.len() as u32;
            upper.push((rows.len() as u32, rows.len() as u32, vertex_diagonal(inp, v) as f64));
            rows.push(v as u32);
        }
    }
    for t in &st.tets[tets.clone()] {
        let w = 2.0 * st.materials[t.material as usize].mu as f64 * t.volume as f64;
        let g = shape_gradients::<f64>(&t.dm_inv().as_dmat3());
        for a in 0..4 {
            for c in 0..4 {
                let (ra, rc) = (row_of[t.vertices[a] as usize - first], row_of[t.vertices[c] as usize - first]);
                if ra != NO_ROW && rc != NO_ROW && ra <= rc {
                    upper.push((ra, rc, w * g[a].dot(g[c])));
                }
            }
        }
    }
    SystemInputs { n: rows.len(), upper, rows, tets }
}

/// Factors a body's system (on a build thread, or the stepping thread when asked to wait).
fn build(job: SystemInputs) -> Result<Built, FactorError> {
    let t0 = Instant::now();
    let inverse = SparseInverse::build(job.n, &job.upper)?;
    Ok(Built { inverse, rows: job.rows, tets: job.tets, build_ms: t0.elapsed().as_secs_f64() * 1e3 })
}

/// `auto`'s choice for body `b` (`docs/algorithms.md` §3.4). VBD's sweeps carry a load one
/// element per sweep, so a substep of `S` sweeps lags wherever a load must cross more than `S`
/// elements within the substep: where the body is at least `S` elements across (`N = L/ℓ`,
/// its largest extent over its mean surface edge) and stiff enough that its pressure waves
/// cross `S` elements in a substep (`W = c h/ℓ`, `c = √((λ + 2μ)/ρ)`). Then `min(W, N) > S`
/// picks local–global. The 2 m cantilever at 1/60 s and 20 sweeps: W ≈ 150, N ≈ 50; a 0.2 m
/// cube of 1e6 Pa foam in 6 cells: W ≈ 18, N = 6.
pub(crate) fn auto_prefers_local_global(inp: &PlanInputs<'_>, b: usize) -> bool {
    let st = inp.state;
    let r = &st.bodies[b];
    let Some(tets) = body_tets(st, b) else { return false };
    let range = r.vertex_start as usize..(r.vertex_start + r.vertex_count) as usize;
    let free = range.clone().filter(|&v| st.flags[v] & VERTEX_KINEMATIC == 0).count();
    if free as u32 > AUTO_MAX_VERTICES || !(r.surface_edge_length > 0.0) {
        return false;
    }
    let mass: f64 = st.masses[range.clone()].iter().map(|&m| m as f64).sum();
    let volume: f64 = st.tets[tets.clone()].iter().map(|t| t.volume as f64).sum();
    // The stiffest material's P-wave modulus λ_L + 2μ (the stable neo-Hookean record keeps
    // λ_L + μ).
    let modulus = st.tets[tets]
        .iter()
        .map(|t| {
            let m = &st.materials[t.material as usize];
            let lame = if m.model == MODEL_STABLE_NEO_HOOKEAN { m.lambda - m.mu } else { m.lambda };
            (lame + 2.0 * m.mu) as f64
        })
        .fold(0.0, f64::max);
    if !(mass > 0.0 && volume > 0.0) {
        return false;
    }
    let speed = (modulus * volume / mass).sqrt();
    let (lo, hi) = range.fold((Vec3A::splat(f32::INFINITY), Vec3A::splat(f32::NEG_INFINITY)), |(lo, hi), v| {
        let x = Vec3A::from_vec4(st.positions[v]);
        (lo.min(x), hi.max(x))
    });
    let edge = r.surface_edge_length as f64;
    let waves = speed * inp.h as f64 / edge;
    let across = (hi - lo).max_element() as f64 / edge;
    waves.min(across) > inp.sweeps as f64
}

/// Whether nothing can touch body `b` during the substep (see the module docs). The reach is a
/// heuristic, not a bound: the iterations may move a body further than its initial guess did,
/// and the safety check after the substep is what guarantees that no surface was crossed.
fn clear_of_contact(inp: &PlanInputs<'_>, b: usize) -> bool {
    if inp.near_surface[b] {
        return false;
    }
    let st = inp.state;
    let r = &st.bodies[b];
    let range = r.vertex_start as usize..(r.vertex_start + r.vertex_count) as usize;
    let obstacles: Vec<&Obstacle> = inp.obstacles.iter().filter(|o| o.applies_to(b as u32)).collect();
    if obstacles.is_empty() {
        return true;
    }
    // The largest move of the initial guess (x^(0) was written over the positions).
    let reach = range.clone().map(|v| (st.positions[v] - inp.start[v]).truncate().length()).fold(0.0f32, f32::max);
    let clearance = inp.offset + 2.0 * reach;
    range.into_iter().all(|v| {
        let (x, s) = (Vec3A::from_vec4(st.positions[v]), Vec3A::from_vec4(inp.start[v]));
        obstacles.iter().all(|o| o.signed_distance(x).0 > clearance && o.signed_distance(s).0 > clearance)
    })
}

/// What a body's solve reads besides its factor.
pub(crate) struct BodySolve<'a> {
    pub state: &'a SimState,
    /// `x^n`.
    pub start: &'a [Vec4],
    /// xyz `y − x^n`, w `m/w`.
    pub inertia: &'a [Vec4],
    /// xyz `c0`, w `c1`.
    pub velocity: &'a [Vec4],
    /// The iterate, which the global step overwrites.
    pub pos: &'a SharedSlice<'a, Vec4>,
    /// Threads of the phase.
    pub threads: usize,
    /// `v^n` and the substep's length \[s\].
    pub velocities: &'a [Vec4],
    pub h: f32,
    /// The body's exact spin over the substep, for a free body: its centre of mass at `x^n` and
    /// the rotation by `ω h` (`vbd::spin::BodySpin`).
    pub spin: Option<(Vec3A, glam::Mat3A)>,
}
