//! Vertex Block Descent, the fast path (\[VBD\]; ALGORITHMS §2.11): adaptive initialisation,
//! a fixed number of sweeps over the colors (vertices of one color in parallel), Chebyshev
//! acceleration, then the velocity update of the chosen integrator.
//!
//! ```text
//! prepare     x^n, predictor, inertia, x^(0) (path-clamped against obstacles)
//! iterate ×N  for each color: update_vertex → commit;   then Chebyshev mix
//! finish      v^{n+1} = c1 (x − x^n) + c0, a^{n+1}
//! ```

use std::sync::atomic::{AtomicBool, Ordering};

use glam::{Mat3A, Vec3A, Vec4};

use super::chebyshev::{ChebyshevSchedule, mix};
use super::init::Initialization;
use super::integrator::{Integrator, realised_acceleration};
use super::parallel::{PhaseCell, SharedSlice, chunk, run_workers};
use super::rigid_correction::{RigidBuffers, RigidMotion, RigidScratch, correct_rigid};
use super::vbd_contact::{
    ContactContext, SurfaceContactScratch, SurfaceContactSettings, advance_certified, advance_scale, begin_step,
    detect, limit_move, surface_contact_on,
};
use super::vbd_vertex::{VertexInputs, update_vertex};
use crate::collision::surface_pairs::pair_bodies;
use crate::collision::{ContactModel, Obstacle, limit_step};
use crate::state::{FROZEN_CONTACT, FROZEN_DIVERGED, SimState, VERTEX_KINEMATIC, VERTEX_NO_HISTORY};

mod impulses;
mod measures;

/// Chebyshev stops for the rest of a step, for one body, when a sweep's squared residual of
/// that body exceeds this multiple of the smallest one seen in the step (the residual norm grew
/// tenfold): a within-step blow-up. Gauss–Seidel residuals fluctuate by far less while
/// converging.
const CHEBYSHEV_GROWTH_LIMIT: f64 = 100.0;

/// Per-body scratch of one step.
#[derive(Clone, Debug, Default)]
struct BodyScratch {
    /// Earliest obstacle contact of the initial advance.
    toi: Vec<f32>,
    /// Takes the rigid correction.
    eligible: Vec<bool>,
    /// Touched another body at the last detection.
    touching: Vec<bool>,
    /// No Chebyshev mixing (`FROZEN_*`).
    frozen: Vec<u32>,
    /// Rigid correction.
    motions: Vec<RigidMotion>,
    /// Residual of the last sweep, and the smallest in the step.
    residual2: Vec<f64>,
    min_residual2: Vec<f64>,
    /// Residual of the first sweep (at the initial guess), for the safety check's progress test.
    first_residual2: Vec<f64>,
}

impl BodyScratch {
    fn resize(&mut self, bodies: usize) {
        self.toi.resize(bodies, 1.0);
        self.eligible.resize(bodies, false);
        self.touching.resize(bodies, false);
        self.frozen.resize(bodies, 0);
        self.motions.resize(bodies, RigidMotion::IDENTITY);
        self.residual2.resize(bodies, 0.0);
        self.min_residual2.resize(bodies, f64::INFINITY);
        self.first_residual2.resize(bodies, 0.0);
    }
}

/// Solver settings for one VBD step.
#[derive(Clone, Copy, Debug)]
pub struct VbdSettings {
    /// Sweeps over all colors.
    pub iterations: u32,
    /// Chebyshev spectral-radius estimate ρ; `None` disables acceleration.
    pub chebyshev_rho: Option<f32>,
    /// Initial guess.
    pub initialization: Initialization,
    /// Time integrator.
    pub integrator: Integrator,
    /// Gravity \[m/s²\].
    pub gravity: Vec3A,
    /// Contact constants.
    pub contact: ContactModel,
    /// Worker threads (1 = run on the caller).
    pub threads: usize,
    /// Rigid correction of the initial guess, coupled through contact (`solver/rigid_correction.rs`).
    pub rigid_correction: bool,
    /// Body–body and self contact.
    pub surface_contact: SurfaceContactSettings,
}

/// Scratch arrays of the CPU VBD solver; grown on demand, never per step.
#[derive(Clone, Debug, Default)]
pub struct VbdScratch {
    /// `x^n` of the current step.
    pub start: Vec<Vec4>,
    inertia: Vec<Vec4>,
    velocity: Vec<Vec4>,
    predictor: Vec<Vec4>,
    prev1: Vec<Vec4>,
    prev2: Vec<Vec4>,
    color_new: Vec<Vec4>,
    in_contact: Vec<u32>,
    residual2: Vec<f32>,
    rigid: RigidScratch,
    tet_rates: Vec<Mat3A>,
    /// `x^(0)` as stored (rounded) and the exact offset `x^(0) − x^n` it was made from.
    init_position: Vec<Vec4>,
    init_offset: Vec<Vec4>,
    body_scratch: BodyScratch,
    /// Body–body and self contact.
    surface: SurfaceContactScratch,
    /// Per vertex: xyz the position at the last contact detection, w the displacement bound.
    clamp: Vec<Vec4>,
    /// End-of-step targets of kinematic vertices, filled by the caller before [`vbd_step`].
    pub targets: Vec<Vec4>,
    /// The step's carriers (dynamic rigid bodies moving some obstacles; see `carrier.rs`), set
    /// by the caller before the step.
    pub(crate) carriers: Vec<super::carrier::Carrier>,
    /// With carriers: the step's obstacles with each carrier's at the pose the step solved
    /// (empty without carriers).
    pub(crate) moved_obstacles: Vec<Obstacle>,
    carrier_sweep: super::carrier::CarrierSweep,
}

impl VbdScratch {
    /// Surface contact pairs of the last detection.
    pub fn contact_pairs(&self) -> &[crate::collision::surface_pairs::ContactPair] {
        &self.surface.pairs
    }

    /// Surface edges against posed obstacles of the last step (`vbd_edges`).
    pub(crate) fn obstacle_edges(&self) -> &super::vbd_edges::EdgeContacts {
        &self.surface.obstacle_edges
    }

    /// Forgets everything that names vertices of the previous topology (contact pairs).
    pub fn topology_changed(&mut self) {
        self.surface.forget_pairs();
    }

    /// Sizes every array for `n` vertices, `c` colored vertices and `tets` tets.
    pub fn resize(&mut self, n: usize, colored: usize, tets: usize) {
        self.tet_rates.resize(tets, Mat3A::ZERO);
        for v in [
            &mut self.start,
            &mut self.inertia,
            &mut self.velocity,
            &mut self.predictor,
            &mut self.prev1,
            &mut self.prev2,
            &mut self.init_position,
            &mut self.init_offset,
            &mut self.targets,
            &mut self.clamp,
        ] {
            v.resize(n, Vec4::ZERO);
        }
        self.in_contact.resize(n, 0);
        self.residual2.resize(n, 0.0);
        self.color_new.resize(colored, Vec4::ZERO);
    }
}

/// What one VBD step measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VbdStats {
    /// `‖f‖` over free vertices in the last sweep, before each vertex's final update \[N\]:
    /// the force residual the step ended with.
    pub residual: f32,
    /// Vertices that touched a contact during the step.
    pub contact_vertices: u32,
    /// Chebyshev acceleration was switched off mid-step because the sweeps stopped
    /// contracting.
    pub chebyshev_stopped: bool,
    /// Surface contact pairs at the last detection.
    pub contact_pairs: u32,
    /// Smallest distance between surface primitives of different bodies or self-pairs found at
    /// the last detection \[m\] (`f32::INFINITY` when none was within the search radius).
    pub min_pair_distance: f32,
}

/// Advances the state by one step of length `h` \[s\] with VBD.
pub fn vbd_step(
    state: &mut SimState,
    scratch: &mut VbdScratch,
    obstacles: &[Obstacle],
    h: f32,
    s: &VbdSettings,
) -> VbdStats {
    let n = state.vertex_count();
    scratch.resize(n, state.color_vertices.len(), state.tets.len());
    scratch.body_scratch.resize(state.bodies.len());
    let threads = s.threads.max(1).min(n.max(1));
    let surface_on = surface_contact_on(state, &s.surface_contact);
    begin_step(&mut scratch.surface, state, threads, &s.contact, surface_on);
    // Bodies without kinematic vertices get the rigid correction.
    let eligible = &mut scratch.body_scratch.eligible;
    eligible.fill(s.rigid_correction);
    for (&f, &b) in state.flags.iter().zip(&state.vertex_body) {
        if f & VERTEX_KINEMATIC != 0 {
            eligible[b as usize] = false;
        }
    }
    // Bodies that touched another body at the last detection and take the rigid correction
    // start the adaptive initial guess from x^n (see `Initialization::Adaptive`).
    let touching = &mut scratch.body_scratch.touching;
    touching.fill(false);
    if s.initialization == Initialization::Adaptive {
        for p in scratch.surface.pairs.iter().filter(|p| p.has_energy()) {
            let (a, b) = pair_bodies(state, p.vertices);
            if a != b && eligible[a as usize] && eligible[b as usize] {
                touching[a as usize] = true;
                touching[b as usize] = true;
            }
        }
    }
    // Chebyshev needs a few sweeps to pay off ([VBD] §3.8; ALGORITHMS §2.8).
    let chebyshev = s.chebyshev_rho.filter(|_| s.iterations >= 4);
    let chebyshev_stopped = AtomicBool::new(false);
    // Some vertex met its displacement bound since the last contact detection.
    let bound_hit = AtomicBool::new(false);
    // Some vertex's initial path leaves the last step's bounds: the CCD advance must run.
    let advance_needed = AtomicBool::new(false);
    // Some body's initial advance is held back by one of its edges (`vbd_edges`).
    let edge_held = AtomicBool::new(false);

    // Split the state into what the parallel region reads and what it writes.
    let mut positions = std::mem::take(&mut state.positions);
    {
        let VbdScratch {
            start,
            inertia,
            velocity,
            predictor,
            prev1,
            prev2,
            color_new,
            in_contact,
            residual2,
            rigid: rigid_buf,
            tet_rates,
            init_position,
            init_offset,
            body_scratch,
            surface,
            clamp,
            targets,
            carriers,
            moved_obstacles,
            carrier_sweep,
        } = scratch;
        let carriers: &[super::carrier::Carrier] = carriers;
        let has_carriers = !carriers.is_empty();
        // With carriers, the prepare phase and the rigid correction see them where they first
        // touch a vertex (see `CarrierSweep::begin`).
        let advanced: Vec<Obstacle>;
        let obstacles = if has_carriers {
            carrier_sweep.begin(obstacles, carriers, state, &positions, h);
            advanced = carrier_sweep.obstacles.clone();
            &advanced[..]
        } else {
            obstacles
        };
        let carrier_cell = PhaseCell::new(std::mem::take(carrier_sweep));
        // Surface edges against posed obstacles (`vbd_edges`), detected at x^(0).
        let edge_obstacles = obstacles.iter().any(Obstacle::tests_edges);
        if !edge_obstacles {
            surface.obstacle_edges.clear(n);
        }
        let surface_cell = PhaseCell::new(std::mem::take(surface));
        let clamp_sh = SharedSlice::new(clamp);
        let pos = SharedSlice::new(&mut positions);
        let start_sh = SharedSlice::new(start);
        let inertia_sh = SharedSlice::new(inertia);
        let velocity_sh = SharedSlice::new(velocity);
        let rates_sh = SharedSlice::new(tet_rates);
        let x0_sh = SharedSlice::new(init_position);
        let offset_sh = SharedSlice::new(init_offset);
        let predictor_sh = SharedSlice::new(predictor);
        let prev1_sh = SharedSlice::new(prev1);
        let prev2_sh = SharedSlice::new(prev2);
        let new_sh = SharedSlice::new(color_new);
        let contact_sh = SharedSlice::new(in_contact);
        let res_sh = SharedSlice::new(residual2);
        let mut velocities = std::mem::take(&mut state.velocities);
        let mut accelerations = std::mem::take(&mut state.accelerations);
        let mut flags = std::mem::take(&mut state.flags);
        let vel_sh = SharedSlice::new(&mut velocities);
        let acc_sh = SharedSlice::new(&mut accelerations);
        let flags_sh = SharedSlice::new(&mut flags);
        let st: &SimState = state;
        let targets: &[Vec4] = targets;
        // Per-body scratch, reset for this step.
        let BodyScratch {
            toi: body_toi,
            eligible,
            touching,
            frozen,
            motions,
            residual2: body_r2,
            min_residual2: body_min_r2,
            first_residual2: body_first_r2,
        } = body_scratch;
        let touching: &[bool] = touching;
        body_toi.fill(1.0);
        frozen.fill(0);
        body_min_r2.fill(f64::INFINITY);
        let body_toi_sh = SharedSlice::new(body_toi);
        let eligible: &[bool] = eligible;
        let any_eligible = eligible.iter().any(|&e| e);
        let frozen_sh = SharedSlice::new(frozen);
        let body_r2_sh = SharedSlice::new(body_r2);
        let body_min_r2_sh = SharedSlice::new(body_min_r2);
        let body_first_r2_sh = SharedSlice::new(body_first_r2);
        let motions_sh = SharedSlice::new(motions);
        let rigid_scratch = parking_lot::Mutex::new(std::mem::take(rigid_buf));
        let rigid = RigidBuffers { motions: &motions_sh, eligible, scratch: &rigid_scratch };

        run_workers(threads, |t, barrier| {
            // ---- prepare: one thread per contiguous vertex range ----
            for v in chunk(n, threads, t) {
                // SAFETY: each thread touches only vertices of its own range in this phase.
                unsafe {
                    let x4 = pos.get(v);
                    let x = Vec3A::from_vec4(x4);
                    let flag = flags_sh.get(v);
                    let vel = Vec3A::from_vec4(vel_sh.get(v));
                    // Without history (first step, after a rollback or a user edit) assume
                    // free flight: exact for a released body; for one resting on an obstacle
                    // the path clamp stops it and the next step's history is real.
                    let accel = if flag & VERTEX_NO_HISTORY != 0 { s.gravity } else { Vec3A::from_vec4(acc_sh.get(v)) };
                    let step = s.integrator.vertex_step(h, vel, accel);
                    start_sh.set(v, x4);
                    predictor_sh.set(v, step.predictor.extend(step.weight));
                    let m_over_w = st.masses[v] / step.weight;
                    inertia_sh.set(v, (step.predictor + s.gravity * step.weight).extend(m_over_w));
                    velocity_sh.set(v, step.c0.extend(step.c1));
                    // Candidate x^(0) (kept in prev1 until the body's advance is known) and
                    // this vertex's time of first obstacle contact along x^n → candidate.
                    // The initial guess as an offset from x^n, kept exact (not re-derived from a
                    // rounded absolute position; see `init_offset`).
                    let (offset, toi) = if flag & VERTEX_KINEMATIC != 0 {
                        (Vec3A::from_vec4(targets[v]) - x, 1.0)
                    } else {
                        let offset = if touching[st.vertex_body[v] as usize] {
                            Vec3A::ZERO
                        } else {
                            s.initialization.offset(step.predictor, step.weight, s.gravity, accel)
                        };
                        let body = st.vertex_body[v];
                        let toi = obstacles
                            .iter()
                            .filter(|o| o.applies_to(body))
                            .filter_map(|o| o.first_entry(x, x + offset))
                            .fold(1.0f32, f32::min);
                        (offset, toi)
                    };
                    offset_sh.set(v, offset.extend(0.0));
                    res_sh.set(v, toi);
                    contact_sh.set(v, 0);
                }
            }
            barrier.wait();
            // Each body advances its initial guess rigidly only up to its first obstacle
            // contact. Clamping vertices one by one would start an impact step with the bottom
            // layers crushed flat (J ≈ 0), an elastic energy far above the fall's kinetic
            // energy that a fixed number of sweeps cannot remove; a uniform advance starts
            // undeformed and lets the sweeps build the impact deformation.
            if t == 0 {
                // SAFETY: only thread 0 runs this phase; `res_sh` is read-only here.
                unsafe {
                    for v in 0..n {
                        let b = st.vertex_body[v] as usize;
                        body_toi_sh.set(b, body_toi_sh.get(b).min(res_sh.get(v)));
                    }
                }
            }
            barrier.wait();
            for v in chunk(n, threads, t) {
                // SAFETY: own range only; `body_toi_sh` is read-only in this phase.
                unsafe {
                    let x = Vec3A::from_vec4(pos.get(v));
                    let mut offset = Vec3A::from_vec4(offset_sh.get(v));
                    if flags_sh.get(v) & VERTEX_KINEMATIC == 0 {
                        let toi = body_toi_sh.get(st.vertex_body[v] as usize);
                        offset = advanced_offset(obstacles, st.vertex_body[v], x, offset, toi);
                    }
                    let x0 = x + offset;
                    offset_sh.set(v, offset.extend(0.0));
                    let x0 = x0.extend(0.0);
                    x0_sh.set(v, x0);
                    pos.set(v, x0);
                    prev1_sh.set(v, x0);
                    prev2_sh.set(v, x0);
                    res_sh.set(v, 0.0);
                    clamp_sh.set(v, Vec4::new(0.0, 0.0, 0.0, f32::INFINITY));
                }
            }
            // Per damped tet: G_e = (D_c0 − c1 D_s^n) D_m⁻¹, so Ḟ = c1 F + G_e during the sweeps.
            for e in chunk(st.tets.len(), threads, t) {
                let tet = &st.tets[e];
                if st.materials[tet.material as usize].damping > 0.0 {
                    // SAFETY: start and velocity are read-only after the first barrier; each
                    // thread writes its own range of tets.
                    unsafe {
                        let xn = tet.vertices.map(|i| Vec3A::from_vec4(start_sh.get(i as usize)));
                        let c = tet.vertices.map(|i| velocity_sh.get(i as usize));
                        let c1 = c[0].w;
                        let col = |k: usize| (Vec3A::from_vec4(c[k]) - Vec3A::from_vec4(c[0])) - (xn[k] - xn[0]) * c1;
                        rates_sh.set(e, Mat3A::from_cols(col(1), col(2), col(3)) * tet.dm_inv());
                    }
                }
            }
            barrier.wait();

            // SAFETY: `start`, `inertia` and `velocity` are written only in the prepare phase,
            // which ended at the barrier above; from here on every thread only reads them.
            let base_inputs = unsafe {
                VertexInputs {
                    state: st,
                    start: start_sh.as_slice(),
                    inertia: inertia_sh.as_slice(),
                    velocity: velocity_sh.as_slice(),
                    obstacles,
                    contact: s.contact,
                    tet_rates: rates_sh.as_slice(),
                    surface: &surface_cell,
                    clamp: &clamp_sh,
                }
            };
            let inputs = base_inputs;
            // The obstacles of the sweeps: with carriers, as the last carrier update left them.
            // SAFETY: thread 0 changes them only between sweeps, behind a barrier, while no
            // vertex inputs built from them are alive.
            let sweep_inputs = || {
                if has_carriers {
                    VertexInputs { obstacles: unsafe { carrier_cell.get() }.obstacles.as_slice(), ..base_inputs }
                } else {
                    base_inputs
                }
            };
            let contact_ctx = ContactContext { st, model: s.contact, settings: s.surface_contact };
            // A detection at the current positions, then pins move towards their targets as far
            // as the new bounds allow.
            let detect_and_catch_up = || {
                detect(t, threads, barrier, &contact_ctx, &surface_cell, &pos, &clamp_sh);
                let (flags, clamp, surface) = (&flags_sh, &clamp_sh, &surface_cell);
                catch_up_kinematic(t, threads, barrier, n, flags, targets, &pos, clamp, surface, &bound_hit);
            };

            // The initial guess gets each free body's best rigid motion (inertia, contact,
            // friction), coupled through the last detection's pairs to the bodies it touches;
            // the sweeps then only shape it. Once per step was as accurate as before every
            // sweep on the inclines (1.592 vs 1.610 m/s² for 1.609) at a fraction of the serial
            // cost.
            if any_eligible {
                correct_rigid(t, threads, barrier, &pos, &flags_sh, &inputs, &rigid);
                for v in chunk(n, threads, t) {
                    // SAFETY: own range only.
                    unsafe {
                        let x = pos.get(v);
                        // Carry the (small) shift into the exact offset.
                        let shift = Vec3A::from_vec4(x) - Vec3A::from_vec4(x0_sh.get(v));
                        offset_sh.set(v, offset_sh.get(v) + shift.extend(0.0));
                        x0_sh.set(v, x);
                        prev1_sh.set(v, x);
                        prev2_sh.set(v, x);
                    }
                }
                barrier.wait();
            }

            // SAFETY: `start` is read-only after the prepare phase.
            let start = unsafe { start_sh.as_slice() };
            // Scales each body's initial advance x^n → x^(0) by `scale` (per body), pinned
            // vertices too if `pins` (a detection then lets them catch up).
            let scale_advance = |scale: &[f32], pins: bool| {
                for v in chunk(n, threads, t) {
                    // SAFETY: own range only.
                    unsafe {
                        let s = scale[st.vertex_body[v] as usize];
                        if s < 1.0 && (pins || flags_sh.get(v) & VERTEX_KINEMATIC == 0) {
                            let offset = Vec3A::from_vec4(offset_sh.get(v)) * s;
                            let x = (Vec3A::from_vec4(start[v]) + offset).extend(0.0);
                            offset_sh.set(v, offset.extend(0.0));
                            x0_sh.set(v, x);
                            pos.set(v, x);
                            prev1_sh.set(v, x);
                            prev2_sh.set(v, x);
                        }
                    }
                }
                barrier.wait();
            };
            if edge_obstacles {
                // Before the surface advance, which then certifies what is left of the paths.
                if t == 0 {
                    // SAFETY: thread 0 alone until the barrier; `pos` is only read.
                    unsafe {
                        let edges = &mut surface_cell.get_mut().obstacle_edges;
                        edge_held.store(edges.advance(st, obstacles, start, pos.as_slice()), Ordering::Relaxed);
                    }
                }
                barrier.wait();
                if edge_held.load(Ordering::Relaxed) {
                    // SAFETY: the scale is read-only until the next detection.
                    scale_advance(unsafe { &surface_cell.get().obstacle_edges.body_scale }, false);
                }
            }
            if surface_on {
                // SAFETY: the scratch is read-only until the next detection.
                if !advance_certified(chunk(n, threads, t), unsafe { surface_cell.get() }, start, &pos) {
                    advance_needed.store(true, Ordering::Relaxed);
                }
                barrier.wait();
                if advance_needed.load(Ordering::Relaxed) {
                    advance_scale(t, threads, barrier, &contact_ctx, &surface_cell, start, &pos);
                } else if t == 0 {
                    // SAFETY: thread 0 alone until the barrier below.
                    unsafe { surface_cell.get_mut() }.body_scale.fill(1.0);
                }
                barrier.wait();
                // SAFETY: the scratch is read-only until the next detection.
                scale_advance(unsafe { &surface_cell.get().body_scale }, true);
                detect_and_catch_up();
            }
            if edge_obstacles {
                if t == 0 {
                    // SAFETY: thread 0 alone until the barrier; `pos` is only read.
                    unsafe {
                        surface_cell.get_mut().obstacle_edges.detect(st, obstacles, pos.as_slice(), s.contact.offset)
                    }
                }
                barrier.wait();
            }
            let interval = s.surface_contact.detection_interval;

            let mut schedule = chebyshev.map(ChebyshevSchedule::new);
            let colored = st.color_vertices.len();
            for iteration in 0..s.iterations {
                let inputs = sweep_inputs();
                if surface_on && interval > 0 && iteration > 0 && iteration % interval == 0 {
                    // Re-detection refreshes the pairs' linearisation and re-centres the bounds.
                    // With no pair stored and no vertex held by its bound, neither is needed:
                    // the stored pairs are every pair that can come within the offset while the
                    // bounds hold. (Free cloth then detects once per step instead of twice.)
                    // SAFETY: the pair list changes only inside `detect`.
                    let near = !unsafe { surface_cell.get() }.pairs.is_empty();
                    let needed = near || bound_hit.load(Ordering::Relaxed);
                    // Every worker has read the flag before it is cleared.
                    barrier.wait();
                    if needed {
                        if t == 0 {
                            bound_hit.store(false, Ordering::Relaxed);
                        }
                        detect_and_catch_up();
                    }
                }
                for c in 0..st.color_count() {
                    let (c0, c1) = (st.color_offsets[c] as usize, st.color_offsets[c + 1] as usize);
                    let range = chunk(c1 - c0, threads, t);
                    let mut hit = false;
                    for k in range.clone() {
                        let v = st.color_vertices[c0 + k] as usize;
                        let u = update_vertex(v, &pos, &inputs);
                        hit |= u.bounded;
                        // SAFETY: index c0 + k and vertex v belong to this thread's chunk of
                        // this color only.
                        unsafe {
                            new_sh.set(c0 + k, u.position.extend(0.0));
                            res_sh.set(v, u.residual2);
                            // Bit 1: touched a contact this step; bit 2: held by its
                            // displacement bound in the last sweep (the safety check's clamp
                            // lock).
                            let clamped = u.bounded && iteration + 1 == s.iterations;
                            if u.in_contact || clamped {
                                contact_sh
                                    .set(v, contact_sh.get(v) | u32::from(u.in_contact) | (u32::from(clamped) << 1));
                            }
                        }
                    }
                    if hit {
                        bound_hit.store(true, Ordering::Relaxed);
                    }
                    barrier.wait();
                    for k in range {
                        let v = st.color_vertices[c0 + k] as usize;
                        // SAFETY: commit phase: each vertex of this color is written by exactly
                        // one thread and read by none until the barrier.
                        unsafe { pos.set(v, new_sh.get(c0 + k)) };
                    }
                    barrier.wait();
                }
                if iteration == 0 {
                    // The first sweep's residual per body: the force at the initial guess, which
                    // the step must reduce (the safety check's progress test).
                    if t == 0 {
                        // SAFETY: thread 0 alone; residuals were written in the color passes,
                        // which ended at the barrier.
                        unsafe {
                            for b in 0..body_first_r2_sh.len() {
                                body_first_r2_sh.set(b, 0.0);
                            }
                            for &v in &st.color_vertices {
                                let b = st.vertex_body[v as usize] as usize;
                                body_first_r2_sh.set(b, body_first_r2_sh.get(b) + res_sh.get(v as usize) as f64);
                            }
                        }
                    }
                    barrier.wait();
                }
                if schedule.is_some() {
                    // Thread 0 decides, per body, whether the mix may run after this sweep.
                    // SAFETY: thread 0 alone in this phase; residuals and contact flags were
                    // written in the color passes, which ended at the barrier.
                    if t == 0 {
                        unsafe {
                            for b in 0..body_r2_sh.len() {
                                body_r2_sh.set(b, 0.0);
                            }
                            for &v in &st.color_vertices {
                                let (v, b) = (v as usize, st.vertex_body[v as usize] as usize);
                                body_r2_sh.set(b, body_r2_sh.get(b) + res_sh.get(v) as f64);
                                // A body touching anything this step is not accelerated at all:
                                // mixing only its free vertices would shear it against the ones
                                // in contact and undo the rigid correction ([VBD]
                                // §3.8 skips contact vertices; ALGORITHMS §2.8 turns acceleration
                                // off for islands in contact).
                                if contact_sh.get(v) & 1 != 0 {
                                    frozen_sh.set(b, frozen_sh.get(b).max(FROZEN_CONTACT));
                                }
                            }
                            // Divergence guard (ALGORITHMS §2.8): over-relaxation is only safe
                            // while the sweeps contract; a body whose residual blew up is not
                            // accelerated for the rest of the step. Per body, in a fixed order,
                            // so one body never changes another's result.
                            for b in 0..body_r2_sh.len() {
                                let (r2, min) = (body_r2_sh.get(b), body_min_r2_sh.get(b));
                                if !(r2 <= CHEBYSHEV_GROWTH_LIMIT * min) {
                                    frozen_sh.set(b, FROZEN_DIVERGED);
                                    chebyshev_stopped.store(true, Ordering::Relaxed);
                                }
                                body_min_r2_sh.set(b, min.min(r2));
                            }
                        }
                    }
                    barrier.wait();
                }
                // The step ends on a plain Gauss–Seidel sweep: the last over-relaxation would
                // hand amplified high-frequency error to the velocity update.
                let last = iteration + 1 == s.iterations;
                if let Some(sch) = schedule.as_mut().filter(|_| !last) {
                    let omega = sch.next_omega();
                    for k in chunk(colored, threads, t) {
                        let v = st.color_vertices[k] as usize;
                        // SAFETY: one writer per vertex (disjoint chunks of the free-vertex
                        // list); no thread reads another vertex in this phase.
                        unsafe {
                            let x_bar = Vec3A::from_vec4(pos.get(v));
                            let x_nm2 = Vec3A::from_vec4(prev2_sh.get(v));
                            let mut x = x_bar;
                            // Frozen bodies stay at the Gauss–Seidel result (see above), and
                            // so do the vertices of edge contacts, whose limit assumes the
                            // edge's other end holds still (`vbd_edges`).
                            let edge = !surface_cell.get().obstacle_edges.row(v).is_empty();
                            if frozen_sh.get(st.vertex_body[v] as usize) == 0 && !edge {
                                let mixed = mix(omega, x_bar, x_nm2);
                                // SAFETY: the pair lists change only in detection phases.
                                let within = limit_move(v, mixed, clamp_sh.get(v), surface_cell.get());
                                if within != mixed {
                                    bound_hit.store(true, Ordering::Relaxed);
                                }
                                x = limit_step(inputs.obstacles, st.vertex_body[v], x_bar, within);
                            }
                            let x = x.extend(0.0);
                            pos.set(v, x);
                            prev2_sh.set(v, prev1_sh.get(v));
                            prev1_sh.set(v, x);
                        }
                    }
                    barrier.wait();
                }
                // After the last sweep the vertices would not answer a carrier's move.
                if has_carriers && !last {
                    // Block Gauss–Seidel: the carriers move against the vertices' new positions.
                    if t == 0 {
                        // SAFETY: thread 0 alone until the barrier; the other threads wait
                        // and hold no vertex inputs built on the carriers' obstacles.
                        unsafe {
                            carrier_cell.get_mut().update(
                                carriers,
                                st,
                                pos.as_slice(),
                                start_sh.as_slice(),
                                &s.contact,
                            );
                        }
                    }
                    barrier.wait();
                }
            }

            // ---- finish: velocities and accelerations ----
            for v in chunk(n, threads, t) {
                // SAFETY: per-vertex, own range only.
                unsafe {
                    // Δx = (x − x^(0)) + (x^(0) − x^n): the sweeps' motion (a difference of nearby
                    // floats, exact) plus the exact initial offset. Differencing x and x^n
                    // directly would add one ulp of |x| per step (2.4e-7 m at 2 m), which the
                    // velocity amplifies by γ/h: 1.5e-4 m of error in a 1 s free fall.
                    let x = Vec3A::from_vec4(pos.get(v));
                    let dx = (x - Vec3A::from_vec4(x0_sh.get(v))) + Vec3A::from_vec4(offset_sh.get(v));
                    let c = velocity_sh.get(v);
                    let v_new = dx * c.w + Vec3A::from_vec4(c);
                    let p = predictor_sh.get(v);
                    let a_new = realised_acceleration(dx, Vec3A::from_vec4(p), p.w);
                    vel_sh.set(v, v_new.extend(0.0));
                    acc_sh.set(v, a_new.extend(0.0));
                    flags_sh.set(v, flags_sh.get(v) & !VERTEX_NO_HISTORY);
                }
            }
        });
        *rigid_buf = rigid_scratch.into_inner();
        *surface = surface_cell.into_inner();
        *carrier_sweep = carrier_cell.into_inner();
        moved_obstacles.clear();
        if has_carriers {
            moved_obstacles.extend_from_slice(&carrier_sweep.obstacles);
        }
        if surface_on {
            // SAFETY: the workers are done; nothing else reads or writes the bounds.
            surface.keep_bounds(unsafe { clamp_sh.as_slice() });
        }
        // End the shared borrows before the vectors move back into the state.
        let _ = (vel_sh, acc_sh, flags_sh);
        state.velocities = velocities;
        state.accelerations = accelerations;
        state.flags = flags;
    }
    state.positions = positions;

    // Fixed-order reductions (thread-count independent).
    let residual =
        state.color_vertices.iter().map(|&v| scratch.residual2[v as usize] as f64).sum::<f64>().sqrt() as f32;
    let contact_vertices = scratch.in_contact.iter().filter(|&&c| c & 1 != 0).count() as u32;
    let pairs = &scratch.surface.pairs;
    VbdStats {
        residual,
        contact_vertices,
        chebyshev_stopped: chebyshev_stopped.into_inner(),
        contact_pairs: pairs.len() as u32,
        min_pair_distance: pairs.iter().map(|p| p.distance).fold(f32::INFINITY, f32::min),
    }
}

/// The initial offset `x^(0) − x^n` of a free vertex at `x` = x^n whose body first meets an
/// obstacle at `body_toi` along its offsets: shortened to just before that time, and never
/// deeper into an obstacle the vertex already is inside.
#[inline]
pub(crate) fn advanced_offset(obstacles: &[Obstacle], body: u32, x: Vec3A, offset: Vec3A, body_toi: f32) -> Vec3A {
    let offset = if body_toi < 1.0 { offset * (body_toi * (1.0 - 1e-4)) } else { offset };
    let x0 = x + offset;
    let p = limit_step(obstacles, body, x, x0);
    if p != x0 { p - x } else { offset }
}

/// Moves kinematic vertices toward their end-of-step targets as far as their contact bound
/// allows (after a detection; any motion inside the bound is certified collision-free).
#[allow(clippy::too_many_arguments)]
fn catch_up_kinematic(
    t: usize,
    threads: usize,
    barrier: &super::parallel::SpinBarrier,
    n: usize,
    flags: &SharedSlice<'_, u32>,
    targets: &[Vec4],
    pos: &SharedSlice<'_, Vec4>,
    clamp: &SharedSlice<'_, Vec4>,
    surface: &PhaseCell<SurfaceContactScratch>,
    bound_hit: &AtomicBool,
) {
    for v in chunk(n, threads, t) {
        // SAFETY: own range only; flags and clamp are read only in this phase.
        unsafe {
            if flags.get(v) & VERTEX_KINEMATIC != 0 {
                let target = Vec3A::from_vec4(targets[v]);
                let within = limit_move(v, target, clamp.get(v), surface.get());
                if within != target {
                    // A lagging pin: detect again so it can catch up.
                    bound_hit.store(true, Ordering::Relaxed);
                }
                pos.set(v, within.extend(0.0));
            }
        }
    }
    barrier.wait();
}
