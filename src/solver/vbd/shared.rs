//! A VBD substep's arrays as the threads of one of its parallel phases share them: the
//! state's tables read-only, everything a phase writes as a [`SharedSlice`] (each vertex, body
//! or element written by one thread per phase), and the contact set and carriers in
//! [`PhaseCell`]s that thread 0 alone rebuilds between barriers.

use std::sync::atomic::AtomicBool;

use glam::{Mat3A, Vec4};
use parking_lot::Mutex;

use super::carrier::{Carrier, CarrierSweep};
use super::contact::{ContactContext, SurfaceContactScratch};
use super::rigid_correction::{RigidBuffers, RigidMotion, RigidScratch};
use super::spin::BodySpin;
use super::vertex::VertexInputs;
use super::{Vbd, VbdSettings};
use crate::collision::Obstacle;
use crate::solver::fast_path::Substep;
use crate::solver::parallel::{PhaseCell, SharedSlice, SpinBarrier};
use crate::state::SimState;

/// What a substep decided before its first phase and every phase reads.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SubstepPlan {
    /// Threads of every phase.
    pub threads: usize,
    /// Body–body and self contact is detected (`contact::surface_contact_on`).
    pub surface_on: bool,
    /// Some obstacle tests surface spans (`spans`).
    pub edge_obstacles: bool,
    /// Some body takes the rigid correction.
    pub any_eligible: bool,
    /// Chebyshev ρ, when the substep has enough iterations for it to pay off.
    pub chebyshev: Option<f32>,
}

/// Flags the threads raise during a substep (each read only after a barrier).
#[derive(Debug, Default)]
pub(super) struct SubstepFlags {
    /// Chebyshev was switched off for some body.
    pub chebyshev_stopped: AtomicBool,
    /// Some vertex met its displacement bound since the last contact detection.
    pub bound_hit: AtomicBool,
    /// Some vertex's initial path leaves the last substep's bounds: the CCD advance must run.
    pub advance_needed: AtomicBool,
    /// Some body's initial advance is held back by one of its spans (`spans`).
    pub edge_held: AtomicBool,
}

/// A copy is a fresh set of flags (they live within one substep).
impl Clone for SubstepFlags {
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// The arrays of one phase (see the module docs). The state's dynamic arrays are taken out of
/// `st` for the phase and live in `pos`, `vel`, `acc` and `flags`.
pub(super) struct Shared<'a> {
    pub st: &'a SimState,
    pub plan: &'a SubstepPlan,
    pub raised: &'a SubstepFlags,
    pub settings: &'a VbdSettings,
    pub substep: &'a Substep<'a>,
    pub pos: SharedSlice<'a, Vec4>,
    pub vel: SharedSlice<'a, Vec4>,
    pub acc: SharedSlice<'a, Vec4>,
    pub flags: SharedSlice<'a, u32>,
    /// `x^n`.
    pub start: SharedSlice<'a, Vec4>,
    /// xyz: `y − x^n`; w: inertia stiffness `m/w`.
    pub inertia: SharedSlice<'a, Vec4>,
    /// xyz: `c0`; w: `c1` of `v = c1 Δx + c0`.
    pub velocity: SharedSlice<'a, Vec4>,
    /// xyz: the integrator's predictor; w: its weight.
    pub predictor: SharedSlice<'a, Vec4>,
    /// Positions after the last two sweeps (Chebyshev).
    pub prev1: SharedSlice<'a, Vec4>,
    pub prev2: SharedSlice<'a, Vec4>,
    /// A colour pass's staged updates, by colored-vertex index.
    pub color_new: SharedSlice<'a, Vec4>,
    /// Per vertex: bit 1 touched a contact this substep, bit 2 held by its displacement bound
    /// in the last sweep.
    pub in_contact: SharedSlice<'a, u32>,
    /// Per vertex: the squared residual of its last update (in the prepare phase: its time of
    /// first obstacle contact).
    pub residual2: SharedSlice<'a, f32>,
    /// Per tet: `G_e = (D_c0 − c1 D_s^n) D_m⁻¹` (damped tets only).
    pub tet_rates: SharedSlice<'a, Mat3A>,
    /// `x^(0)` as stored (rounded) and the exact offset `x^(0) − x^n` it was made from.
    pub init_position: SharedSlice<'a, Vec4>,
    pub init_offset: SharedSlice<'a, Vec4>,
    /// Per vertex: xyz the position at the last contact detection, w the displacement bound.
    pub clamp: SharedSlice<'a, Vec4>,
    /// Per body: earliest obstacle contact of the initial advance.
    pub body_toi: SharedSlice<'a, f32>,
    /// Per body: takes the rigid correction.
    pub eligible: &'a [bool],
    /// Per body: touched another body at the last detection.
    pub touching: &'a [bool],
    /// Per body: the rigid spin it turns by exactly.
    pub spins: &'a [Option<BodySpin>],
    /// Per body: no Chebyshev mixing (`FROZEN_*`).
    pub frozen: SharedSlice<'a, u32>,
    /// Per body: solved by local–global iterations, not by the sweeps.
    pub local_global: &'a [bool],
    /// Per body: the rigid correction's motion.
    pub motions: SharedSlice<'a, RigidMotion>,
    /// Per body: residual of the last sweep, the smallest in the substep, and the first sweep's.
    pub body_residual2: SharedSlice<'a, f64>,
    pub body_min_residual2: SharedSlice<'a, f64>,
    pub body_first_residual2: SharedSlice<'a, f64>,
    pub surface: &'a PhaseCell<SurfaceContactScratch>,
    pub carrier: &'a PhaseCell<CarrierSweep>,
    pub rigid: &'a Mutex<RigidScratch>,
}

impl Shared<'_> {
    /// The obstacles the phase works against: the substep's, or with carriers as the carriers'
    /// last update left them.
    ///
    /// # Safety
    /// Thread 0 must not be updating the carriers during the phase.
    pub unsafe fn obstacles(&self) -> &[Obstacle] {
        if self.substep.carriers.is_empty() {
            self.substep.obstacles
        } else {
            // SAFETY: the caller guarantees no update is under way.
            unsafe { self.carrier.get() }.obstacles.as_slice()
        }
    }

    /// The carriers of the substep.
    pub fn carriers(&self) -> &[Carrier] {
        self.substep.carriers
    }

    /// The vertex update's read-only inputs against `obstacles`.
    ///
    /// # Safety
    /// Only after the prepare phase, which is the last to write `start`, `inertia`, `velocity`
    /// and `tet_rates`.
    pub unsafe fn vertex_inputs<'s>(&'s self, obstacles: &'s [Obstacle]) -> VertexInputs<'s> {
        // SAFETY: the caller guarantees nothing writes these arrays any more.
        unsafe {
            VertexInputs {
                state: self.st,
                start: self.start.as_slice(),
                inertia: self.inertia.as_slice(),
                velocity: self.velocity.as_slice(),
                obstacles,
                contact: self.settings.contact,
                tet_rates: self.tet_rates.as_slice(),
                spins: self.spins,
                surface: self.surface,
                clamp: &self.clamp,
            }
        }
    }

    /// What the contact phases read.
    pub fn contact_context(&self) -> ContactContext<'_> {
        ContactContext { st: self.st, model: self.settings.contact, settings: self.settings.surface_contact }
    }

    /// The rigid correction's per-body buffers.
    pub fn rigid_buffers(&self) -> RigidBuffers<'_, '_> {
        RigidBuffers {
            motions: &self.motions,
            eligible: self.eligible,
            scratch: self.rigid,
            affine: self.settings.coarse_space == super::CoarseSpace::Affine,
        }
    }
}

impl Vbd {
    /// Runs one parallel phase of the current substep: `work(shared, thread, barrier)` on the
    /// substep's threads (the caller is thread 0), with the state and the scratch split into
    /// what they share.
    pub(super) fn run_phase<F>(&mut self, state: &mut SimState, substep: &Substep<'_>, settings: &VbdSettings, work: F)
    where
        F: Fn(&Shared<'_>, usize, &SpinBarrier) + Sync,
    {
        let Vbd {
            start,
            inertia,
            velocity,
            predictor,
            prev1,
            prev2,
            color_new,
            in_contact,
            residual2,
            rigid,
            tet_rates,
            init_position,
            init_offset,
            body_scratch,
            surface,
            clamp,
            moved_obstacles: _,
            carrier_sweep,
            plan,
            raised,
            pool,
            local_global: _,
        } = self;
        let mut positions = std::mem::take(&mut state.positions);
        let mut velocities = std::mem::take(&mut state.velocities);
        let mut accelerations = std::mem::take(&mut state.accelerations);
        let mut flags = std::mem::take(&mut state.flags);
        let surface_cell = PhaseCell::new(std::mem::take(surface));
        let carrier_cell = PhaseCell::new(std::mem::take(carrier_sweep));
        let rigid_cell = Mutex::new(std::mem::take(rigid));
        {
            let b = body_scratch;
            let shared = Shared {
                st: state,
                plan,
                raised,
                settings,
                substep,
                pos: SharedSlice::new(&mut positions),
                vel: SharedSlice::new(&mut velocities),
                acc: SharedSlice::new(&mut accelerations),
                flags: SharedSlice::new(&mut flags),
                start: SharedSlice::new(start),
                inertia: SharedSlice::new(inertia),
                velocity: SharedSlice::new(velocity),
                predictor: SharedSlice::new(predictor),
                prev1: SharedSlice::new(prev1),
                prev2: SharedSlice::new(prev2),
                color_new: SharedSlice::new(color_new),
                in_contact: SharedSlice::new(in_contact),
                residual2: SharedSlice::new(residual2),
                tet_rates: SharedSlice::new(tet_rates),
                init_position: SharedSlice::new(init_position),
                init_offset: SharedSlice::new(init_offset),
                clamp: SharedSlice::new(clamp),
                body_toi: SharedSlice::new(&mut b.toi),
                eligible: &b.eligible,
                touching: &b.touching,
                spins: &b.spins,
                frozen: SharedSlice::new(&mut b.frozen),
                local_global: &b.local_global,
                motions: SharedSlice::new(&mut b.motions),
                body_residual2: SharedSlice::new(&mut b.residual2),
                body_min_residual2: SharedSlice::new(&mut b.min_residual2),
                body_first_residual2: SharedSlice::new(&mut b.first_residual2),
                surface: &surface_cell,
                carrier: &carrier_cell,
                rigid: &rigid_cell,
            };
            pool.run(plan.threads, |t, barrier| work(&shared, t, barrier));
        }
        *rigid = rigid_cell.into_inner();
        *carrier_sweep = carrier_cell.into_inner();
        *surface = surface_cell.into_inner();
        state.positions = positions;
        state.velocities = velocities;
        state.accelerations = accelerations;
        state.flags = flags;
    }
}
