//! Vertex Block Descent, the first fast path (\[VBD\] Chen et al. 2024; `docs/algorithms.md`
//! §2): a fixed number of sweeps over the colours, each vertex solving its own 3×3 Newton
//! system, so that a substep has a fixed cost. [`Vbd`] takes a substep in the fast path's
//! phases ([`FastPath`]), each one parallel region on the solver's worker pool:
//!
//! ```text
//! predict   x^n, predictor, inertia targets, x^(0) advanced per body to its first obstacle
//!           contact, damping rates, the rigid correction of x^(0)               predict.rs
//! detect    x^(0) limited so no surface span enters an obstacle and no surface path crosses
//!           another; contact pairs and displacement bounds at x^(0)             detect.rs
//! solve     N × (colour passes → [Chebyshev mix] → [carriers]), with contact detected again
//!           every `detection_interval` sweeps                                     sweep.rs
//! finish    v^{n+1} = c1 (x − x^n) + c0, a^{n+1}; the substep's measures          finish.rs
//! ```
//!
//! Below those: the per-vertex update (`vertex`), the contact set and its bounds (`contact`),
//! surface edges and triangles against boxes, spheres and colliders (`spans`), the rigid
//! correction of the initial guess (`rigid_correction`, `rigid_energy`) and the dynamic rigid
//! bodies solved with the sweeps (`carrier`). Modules name only those listed before them:
//! `spans` ← `contact` ← `vertex` ←
//! `rigid_correction` ← `carrier` ← the phases.

use glam::{Mat3A, Vec3A, Vec4};

use crate::collision::surface_pairs::pair_bodies;
use crate::collision::{ContactModel, Obstacle};
use crate::solver::fast_path::{FastPath, FastStats, Substep};
use crate::solver::init::Initialization;
use crate::solver::integrator::Integrator;
use crate::solver::local_global::{LocalGlobal, LocalGlobalSettings};
use crate::solver::parallel::WorkerPool;
use crate::state::{SimState, VERTEX_KINEMATIC};
use carrier::CarrierSweep;
use contact::{SurfaceContactScratch, SurfaceContactSettings, begin_step, surface_contact_on};
use rigid_correction::{RigidMotion, RigidScratch};
use shared::{SubstepFlags, SubstepPlan};
use spin::BodySpin;

pub(crate) mod bounds;
pub(crate) mod carrier;
pub mod chebyshev;
pub(crate) mod contact;
mod detect;
mod finish;
mod local_global_phase;
mod predict;
mod result;
pub(crate) mod rigid_correction;
mod rigid_energy;
mod shared;
pub(crate) mod spans;
pub(crate) mod spin;
mod stretch;
mod sweep;
pub(crate) mod vertex;

#[cfg(all(test, feature = "gpu"))]
pub(crate) use predict::advanced_offset;

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
    /// The rigid spin each free volumetric body turns by exactly (`spin`).
    spins: Vec<Option<BodySpin>>,
    /// Residual of the last sweep, and the smallest in the step.
    residual2: Vec<f64>,
    min_residual2: Vec<f64>,
    /// Residual of the first sweep (at the initial guess), for the safety check's progress test.
    first_residual2: Vec<f64>,
    /// Solved by local–global iterations this substep instead of the sweeps.
    local_global: Vec<bool>,
}

impl BodyScratch {
    fn resize(&mut self, bodies: usize) {
        self.toi.resize(bodies, 1.0);
        self.eligible.resize(bodies, false);
        self.touching.resize(bodies, false);
        self.frozen.resize(bodies, 0);
        self.motions.resize(bodies, RigidMotion::IDENTITY);
        self.spins.resize(bodies, None);
        self.residual2.resize(bodies, 0.0);
        self.min_residual2.resize(bodies, f64::INFINITY);
        self.first_residual2.resize(bodies, 0.0);
        self.local_global.resize(bodies, false);
    }
}

/// The motions the correction of the initial guess (`rigid_correction`) gives each body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum CoarseSpace {
    /// Translation, and rotation for volumetric bodies touching another body (6 per body).
    #[default]
    Rigid,
    /// As `Rigid`, and every volumetric body's whole-body stretch and shear as well (12 per
    /// body): its elastic energy along them enters the coarse problem (`stretch`), so a load
    /// compresses a body in the correction instead of one element per sweep. On both backends
    /// (`shaders/rigid/rigid_stretch.wgsl`).
    Affine,
}

/// VBD's settings, derived once per frame from the step configuration
/// (`StepConfig::vbd_settings`) and read by both backends.
#[derive(Clone, Copy, Debug, PartialEq)]
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
    /// Worker threads of the CPU backend (1 = run on the caller).
    pub threads: usize,
    /// Rigid correction of the initial guess, coupled through contact (`rigid_correction`).
    pub rigid_correction: bool,
    /// What that correction moves each volumetric body by.
    pub coarse_space: CoarseSpace,
    /// Body–body and self contact.
    pub surface_contact: SurfaceContactSettings,
    /// The local–global path of the bodies that ask for it.
    pub local_global: LocalGlobalSettings,
}

/// The VBD fast path: its scratch arrays (grown on demand, never per step) and its worker
/// threads. One value steps one packed state, substep after substep.
#[derive(Clone, Debug, Default)]
pub struct Vbd {
    /// `x^n` of the current substep.
    start: Vec<Vec4>,
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
    /// With carriers: the substep's obstacles with each carrier's at the pose the substep
    /// solved (empty without carriers).
    moved_obstacles: Vec<Obstacle>,
    carrier_sweep: CarrierSweep,
    /// What the substep decided before its first phase.
    plan: SubstepPlan,
    /// Flags the threads raise during the substep.
    raised: SubstepFlags,
    pool: WorkerPool,
    /// The bodies solved by local–global iterations (`solver::local_global`).
    local_global: LocalGlobal,
}

impl Vbd {
    /// Forgets everything that names vertices of the previous topology (contact pairs).
    pub(crate) fn topology_changed(&mut self) {
        self.surface.forget_pairs();
        self.local_global.topology_changed();
    }

    /// Sizes every array for `n` vertices, `colored` coloured vertices and `tets` tets.
    fn resize(&mut self, n: usize, colored: usize, tets: usize) {
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
            &mut self.clamp,
        ] {
            v.resize(n, Vec4::ZERO);
        }
        self.in_contact.resize(n, 0);
        self.residual2.resize(n, 0.0);
        self.color_new.resize(colored, Vec4::ZERO);
    }

    /// What a substep decides before its first phase: the threads, whether surface contact and
    /// edge contacts are on, which bodies take the rigid correction and which start from `x^n`
    /// (touching another), each free body's spin, and the carriers' start; per-body arrays
    /// reset.
    fn plan_substep(&mut self, state: &SimState, substep: &Substep<'_>, s: &VbdSettings) {
        let n = state.vertex_count();
        self.resize(n, state.color_vertices.len(), state.tets.len());
        self.body_scratch.resize(state.bodies.len());
        let threads = s.threads.max(1).min(n.max(1));
        let surface_on = surface_contact_on(state, &s.surface_contact);
        begin_step(&mut self.surface, state, threads, &s.contact, surface_on);
        // Bodies without kinematic vertices get the rigid correction.
        let bs = &mut self.body_scratch;
        bs.eligible.fill(s.rigid_correction);
        for (&f, &b) in state.flags.iter().zip(&state.vertex_body) {
            if f & VERTEX_KINEMATIC != 0 {
                bs.eligible[b as usize] = false;
            }
        }
        // Bodies that touched another body at the last detection and take the rigid correction
        // start the adaptive initial guess from x^n (see `Initialization::Adaptive`).
        bs.touching.fill(false);
        if s.initialization == Initialization::Adaptive {
            for p in self.surface.pairs.iter().filter(|p| p.has_energy()) {
                let (a, b) = pair_bodies(state, p.vertices);
                if a != b && bs.eligible[a as usize] && bs.eligible[b as usize] {
                    bs.touching[a as usize] = true;
                    bs.touching[b as usize] = true;
                }
            }
        }
        // The free volumetric bodies' spins over the substep (`spin`), from x^n and v^n.
        for (b, body) in state.bodies.iter().enumerate() {
            let range = body.vertex_start as usize..(body.vertex_start + body.vertex_count) as usize;
            let volumetric = !range.is_empty() && !state.tet_adjacency.row(range.start).is_empty();
            bs.spins[b] = (bs.eligible[b] && volumetric)
                .then(|| {
                    BodySpin::of(
                        &state.positions[range.clone()],
                        &state.velocities[range.clone()],
                        &state.masses[range],
                        substep.h,
                    )
                })
                .flatten();
        }
        bs.toi.fill(1.0);
        bs.frozen.fill(0);
        bs.local_global.fill(false);
        bs.min_residual2.fill(f64::INFINITY);
        let any_eligible = bs.eligible.iter().any(|&e| e);
        // With carriers, the predict and detect phases and the rigid correction see them where
        // they first touch a vertex (see `CarrierSweep::begin`).
        let obstacles = if substep.carriers.is_empty() {
            substep.obstacles
        } else {
            self.carrier_sweep.begin(substep.obstacles, substep.carriers, state, &state.positions, substep.h);
            &self.carrier_sweep.obstacles[..]
        };
        // Surface edges and triangles against boxes, spheres and colliders (`spans`), detected
        // at x^(0).
        let edge_obstacles = obstacles.iter().any(Obstacle::tests_edges);
        if !edge_obstacles {
            self.surface.obstacle_spans.clear(n);
        }
        // Chebyshev needs a few sweeps to pay off ([VBD] §3.8).
        let chebyshev = s.chebyshev_rho.filter(|_| s.iterations >= 4);
        self.plan = SubstepPlan { threads, surface_on, edge_obstacles, any_eligible, chebyshev };
        self.raised = SubstepFlags::default();
    }
}

impl FastPath for Vbd {
    type Settings = VbdSettings;

    fn predict(&mut self, state: &mut SimState, substep: &Substep<'_>, settings: &VbdSettings) {
        self.plan_substep(state, substep, settings);
        self.run_phase(state, substep, settings, Self::predict_worker);
    }

    fn detect(&mut self, state: &mut SimState, substep: &Substep<'_>, settings: &VbdSettings) {
        self.run_phase(state, substep, settings, Self::detect_worker);
    }

    fn solve(&mut self, state: &mut SimState, substep: &Substep<'_>, settings: &VbdSettings) {
        let local_global = self.plan_local_global(state, substep, settings);
        self.run_phase(state, substep, settings, Self::solve_worker);
        if local_global {
            self.solve_local_global(state, substep, settings);
        }
    }

    fn finish(&mut self, state: &mut SimState, substep: &Substep<'_>, settings: &VbdSettings) -> FastStats {
        self.run_phase(state, substep, settings, Self::finish_worker);
        self.moved_obstacles.clear();
        if !substep.carriers.is_empty() {
            self.moved_obstacles.extend_from_slice(&self.carrier_sweep.obstacles);
        }
        if self.plan.surface_on {
            self.surface.keep_bounds(&self.clamp);
        }
        self.measure(state)
    }
}
