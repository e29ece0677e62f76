//! The structs and constants a C caller fills in and reads back, and their conversions to and
//! from Pliant's own types. Enums the caller passes in are plain `uint32_t` constants, checked
//! on the way in: an out-of-range value is an error, never undefined behaviour.

use std::ffi::c_char;

use pliant::prelude::*;
use pliant::{Backend, FallbackReason, IslandReport, StepPath};

use crate::input::{flag, quat_of};
use crate::registry::{PliantBody, PliantWorld};
use crate::status::Failure;

/// Step on the CPU (crossbeam threads).
pub const PLIANT_BACKEND_CPU: u32 = 0;
/// Step on the GPU (wgpu); creating the world fails without an adapter.
pub const PLIANT_BACKEND_GPU: u32 = 1;
/// The GPU where a hardware adapter exists, else the CPU (with a `PLIANT_EVENT_BACKEND_FALLBACK` event).
pub const PLIANT_BACKEND_AUTO: u32 = 2;

/// Unsafe fast steps are redone by the penetration-free fallback (the default).
pub const PLIANT_FALLBACK_AUTO: u32 = 0;
/// Every step goes through the fallback (slow; for reference runs).
pub const PLIANT_FALLBACK_ALWAYS: u32 = 1;
/// Never fall back: unsafe steps are kept (only non-finite states are rolled back).
pub const PLIANT_FALLBACK_NEVER: u32 = 2;

/// Stable neo-Hookean (the default solid material).
pub const PLIANT_MATERIAL_STABLE_NEO_HOOKEAN: u32 = 0;
/// St. Venant-Kirchhoff.
pub const PLIANT_MATERIAL_STVK: u32 = 1;

/// Vertex Block Descent (the default fast path).
pub const PLIANT_SOLVER_VBD: u32 = 0;
/// Sparse-inverse local-global (stiff and slender bodies away from contact).
pub const PLIANT_SOLVER_LOCAL_GLOBAL: u32 = 1;
/// The planner picks per island.
pub const PLIANT_SOLVER_AUTO: u32 = 2;

/// How a step configuration is filled: `pliant_step_config_default` gives Pliant's defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PliantStepConfig {
    /// Frame time step (s) (default 1/60).
    pub dt: f32,
    /// Substeps per step (default 1).
    pub substeps: u32,
    /// Fast-path sweeps per substep (default 20); the planner's cap under a budget.
    pub iterations: u32,
    /// Gravity (m/s^2) (default (0, -9.81, 0)).
    pub gravity: [f32; 3],
    /// Worker threads on the CPU; 0 picks from the machine and the scene.
    pub threads: u32,
    /// Distance surfaces keep from each other and from obstacles (m) (default 1e-3).
    pub contact_offset: f32,
    /// Frame budget (ms): the planner fits every step into it. 0 means none (the sweep count
    /// is then exactly `iterations`).
    pub budget_ms: f64,
    /// `PLIANT_BACKEND_*`.
    pub backend: u32,
    /// `PLIANT_FALLBACK_*`.
    pub fallback: u32,
    /// Iterations of the local-global fast path per substep (default 10).
    pub local_global_iterations: u32,
}

impl PliantStepConfig {
    pub(crate) fn from_config(c: &StepConfig) -> Self {
        Self {
            dt: c.dt,
            substeps: c.substeps,
            iterations: c.iterations,
            gravity: c.gravity.to_array(),
            threads: c.threads.min(u32::MAX as usize) as u32,
            contact_offset: c.contact_offset,
            budget_ms: c.budget_ms.unwrap_or(0.0),
            backend: backend_code(c.backend),
            fallback: match c.fallback {
                FallbackPolicy::Always => PLIANT_FALLBACK_ALWAYS,
                FallbackPolicy::Never => PLIANT_FALLBACK_NEVER,
                _ => PLIANT_FALLBACK_AUTO,
            },
            local_global_iterations: c.local_global.iterations,
        }
    }

    /// `base` with the fields this struct carries replaced (validated when the world takes it).
    pub(crate) fn applied_to(self, base: StepConfig) -> Result<StepConfig, Failure> {
        let mut c = StepConfig {
            dt: self.dt,
            substeps: self.substeps,
            iterations: self.iterations,
            gravity: Vec3::from_array(self.gravity),
            threads: self.threads as usize,
            contact_offset: self.contact_offset,
            // 0 is "no budget"; anything else goes to the validation (NaN and negatives fail).
            budget_ms: (self.budget_ms != 0.0).then_some(self.budget_ms),
            backend: match self.backend {
                PLIANT_BACKEND_CPU => Backend::Cpu,
                PLIANT_BACKEND_GPU => Backend::Gpu,
                PLIANT_BACKEND_AUTO => Backend::Auto,
                v => return Err(Failure::invalid(format!("config `backend` is {v}; use a PLIANT_BACKEND_* constant"))),
            },
            fallback: match self.fallback {
                PLIANT_FALLBACK_AUTO => FallbackPolicy::Auto,
                PLIANT_FALLBACK_ALWAYS => FallbackPolicy::Always,
                PLIANT_FALLBACK_NEVER => FallbackPolicy::Never,
                v => {
                    return Err(Failure::invalid(format!(
                        "config `fallback` is {v}; use a PLIANT_FALLBACK_* constant"
                    )));
                }
            },
            ..base
        };
        c.local_global.iterations = self.local_global_iterations;
        Ok(c)
    }
}

/// A solid body's material and placement: `pliant_solid_desc_default` gives the builder's
/// defaults (stable neo-Hookean, E = 1e5 Pa, nu = 0.3, rho = 1000 kg/m^3, mu = 0.5).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PliantSolidDesc {
    /// NUL-terminated UTF-8 name (in errors and events), or null for "soft_body".
    pub name: *const c_char,
    /// `PLIANT_MATERIAL_*`.
    pub material: u32,
    /// Young's modulus (Pa), positive.
    pub young_modulus: f64,
    /// Poisson ratio, in [0, 0.5).
    pub poisson_ratio: f64,
    /// Density (kg/m^3), positive.
    pub density: f64,
    /// Rayleigh stiffness damping (s), >= 0.
    pub damping: f32,
    /// Friction coefficient against obstacles and other bodies, >= 0.
    pub friction: f32,
    /// Where the mesh's origin goes (m).
    pub translation: [f32; 3],
    /// Rotation about the mesh's origin, quaternion `(x, y, z, w)`, applied before translation.
    pub rotation: [f32; 4],
    /// Initial velocity (m/s).
    pub velocity: [f32; 3],
    /// Initial angular velocity about the centre of mass (rad/s).
    pub angular_velocity: [f32; 3],
    /// `PLIANT_SOLVER_*`.
    pub solver: u32,
    /// 1: the body's surface collides with itself (default); 0: it does not.
    pub self_collision: u32,
}

/// A cloth's material and placement: `pliant_cloth_desc_default` gives the builder's defaults
/// (E = 2e6 Pa, nu = 0.3, 0.5 mm thick, rho = 400 kg/m^3).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PliantClothDesc {
    /// NUL-terminated UTF-8 name, or null for "cloth".
    pub name: *const c_char,
    /// Membrane Young's modulus (Pa), positive.
    pub young_modulus: f64,
    /// Poisson ratio, in [0, 0.5).
    pub poisson_ratio: f64,
    /// Thickness (m), positive.
    pub thickness: f64,
    /// Bending stiffness (N m), >= 0; negative means "from E, nu and the thickness".
    pub bending_stiffness: f64,
    /// Density (kg/m^3), positive.
    pub density: f64,
    /// Rayleigh stiffness damping (s), >= 0.
    pub damping: f32,
    /// Friction coefficient, >= 0.
    pub friction: f32,
    /// Where the mesh's origin goes (m).
    pub translation: [f32; 3],
    /// Rotation about the mesh's origin, quaternion `(x, y, z, w)`.
    pub rotation: [f32; 4],
    /// Initial velocity (m/s).
    pub velocity: [f32; 3],
    /// 1: the cloth collides with itself; 0: it does not (default 1).
    pub self_collision: u32,
}

/// Default placement fields: identity rotation, at rest at the origin.
const IDENTITY: [f32; 4] = [0.0, 0.0, 0.0, 1.0];

impl Default for PliantSolidDesc {
    fn default() -> Self {
        let m = StableNeoHookean::from_young_poisson(1.0e5, 0.3);
        Self {
            name: std::ptr::null(),
            material: PLIANT_MATERIAL_STABLE_NEO_HOOKEAN,
            young_modulus: m.young_modulus,
            poisson_ratio: m.poisson_ratio,
            density: 1000.0,
            damping: 1.0e-6,
            friction: 0.5,
            translation: [0.0; 3],
            rotation: IDENTITY,
            velocity: [0.0; 3],
            angular_velocity: [0.0; 3],
            solver: PLIANT_SOLVER_VBD,
            self_collision: 1,
        }
    }
}

impl Default for PliantClothDesc {
    fn default() -> Self {
        let m = ClothMaterial::new(2.0e6, 0.3, 5.0e-4);
        Self {
            name: std::ptr::null(),
            young_modulus: m.young_modulus,
            poisson_ratio: m.poisson_ratio,
            thickness: m.thickness,
            bending_stiffness: -1.0,
            density: 400.0,
            damping: 1.0e-6,
            friction: 0.5,
            translation: [0.0; 3],
            rotation: IDENTITY,
            velocity: [0.0; 3],
            self_collision: 1,
        }
    }
}

/// The shared part of a body's placement: what both builders take.
pub(crate) struct Placement {
    pub translation: Vec3,
    pub rotation: Quat,
    pub velocity: Vec3,
}

impl Placement {
    pub(crate) fn read(translation: [f32; 3], rotation: [f32; 4], velocity: [f32; 3]) -> Result<Self, Failure> {
        Ok(Self {
            translation: crate::input::vec3_of(&translation, "desc.translation")?,
            rotation: quat_of(rotation, "desc.rotation")?,
            velocity: crate::input::vec3_of(&velocity, "desc.velocity")?,
        })
    }
}

impl PliantSolidDesc {
    /// The builder for `mesh` with this description (validated by `build`).
    pub(crate) fn builder(&self, mesh: TetMesh, name: String) -> Result<SoftBodyBuilder, Failure> {
        let material: SolidMaterial = match self.material {
            PLIANT_MATERIAL_STABLE_NEO_HOOKEAN => {
                StableNeoHookean::from_young_poisson(self.young_modulus, self.poisson_ratio).into()
            }
            PLIANT_MATERIAL_STVK => StVK::from_young_poisson(self.young_modulus, self.poisson_ratio).into(),
            v => return Err(Failure::invalid(format!("desc `material` is {v}; use a PLIANT_MATERIAL_* constant"))),
        };
        let solver = match self.solver {
            PLIANT_SOLVER_VBD => SolverChoice::Vbd,
            PLIANT_SOLVER_LOCAL_GLOBAL => SolverChoice::LocalGlobal,
            PLIANT_SOLVER_AUTO => SolverChoice::Auto,
            v => return Err(Failure::invalid(format!("desc `solver` is {v}; use a PLIANT_SOLVER_* constant"))),
        };
        let at = Placement::read(self.translation, self.rotation, self.velocity)?;
        let spin = crate::input::vec3_of(&self.angular_velocity, "desc.angular_velocity")?;
        Ok(SoftBodyBuilder::tetrahedral(mesh)
            .name(&name)
            .material(material)
            .solver(solver)
            .density(self.density)
            .damping(self.damping)
            .friction(self.friction)
            .rotation(at.rotation)
            .translation(at.translation)
            .velocity(at.velocity)
            .angular_velocity(spin)
            .self_collision(flag(self.self_collision, "desc.self_collision")?))
    }
}

impl PliantClothDesc {
    /// The builder for `mesh` with this description (validated by `build`).
    pub(crate) fn builder(&self, mesh: TriMesh, name: String) -> Result<ClothBuilder, Failure> {
        let mut material = ClothMaterial::new(self.young_modulus, self.poisson_ratio, self.thickness);
        if !(self.bending_stiffness < 0.0) {
            material = material.with_bending_stiffness(self.bending_stiffness);
        }
        let at = Placement::read(self.translation, self.rotation, self.velocity)?;
        Ok(ClothBuilder::new(mesh)
            .name(&name)
            .material(material)
            .density(self.density)
            .damping(self.damping)
            .friction(self.friction)
            .rotation(at.rotation)
            .translation(at.translation)
            .velocity(at.velocity)
            .self_collision(flag(self.self_collision, "desc.self_collision")?))
    }
}

/// The fast path kept the step.
pub const PLIANT_PATH_FAST: u32 = 0;
/// The step was unsafe and the fallback redid it.
pub const PLIANT_PATH_FALLBACK: u32 = 1;
/// The fallback ran out of budget: the island moved only part of the step (`travelled` < 1).
pub const PLIANT_PATH_FALLBACK_TRUNCATED: u32 = 2;
/// The step went non-finite and was rolled back.
pub const PLIANT_PATH_RESTORED: u32 = 3;
/// A path this version of the C ABI does not name.
pub const PLIANT_PATH_OTHER: u32 = 255;

/// No fallback reason (the fast path was safe).
pub const PLIANT_REASON_NONE: u32 = 0;
/// A non-finite value.
pub const PLIANT_REASON_NON_FINITE: u32 = 1;
/// A surface crossed another or an obstacle.
pub const PLIANT_REASON_CROSSING: u32 = 2;
/// An element inverted.
pub const PLIANT_REASON_INVERSION: u32 = 3;
/// A vertex moved too fast for the contact detection.
pub const PLIANT_REASON_SPEED: u32 = 4;
/// The step made energy.
pub const PLIANT_REASON_ENERGY_GAIN: u32 = 5;
/// The sweeps' residual grew.
pub const PLIANT_REASON_RESIDUAL_GROWTH: u32 = 6;
/// The displacement bounds locked the contact.
pub const PLIANT_REASON_CLAMP_LOCK: u32 = 7;
/// Held on the fallback from an earlier step.
pub const PLIANT_REASON_HOLD: u32 = 8;
/// `PLIANT_FALLBACK_ALWAYS`.
pub const PLIANT_REASON_ALWAYS: u32 = 9;
/// A reason this version of the C ABI does not name.
pub const PLIANT_REASON_OTHER: u32 = 255;

pub(crate) fn reason_code(r: Option<FallbackReason>) -> u32 {
    match r {
        None => PLIANT_REASON_NONE,
        Some(FallbackReason::NonFinite) => PLIANT_REASON_NON_FINITE,
        Some(FallbackReason::Crossing) => PLIANT_REASON_CROSSING,
        Some(FallbackReason::Inversion) => PLIANT_REASON_INVERSION,
        Some(FallbackReason::Speed) => PLIANT_REASON_SPEED,
        Some(FallbackReason::EnergyGain) => PLIANT_REASON_ENERGY_GAIN,
        Some(FallbackReason::ResidualGrowth) => PLIANT_REASON_RESIDUAL_GROWTH,
        Some(FallbackReason::ClampLock) => PLIANT_REASON_CLAMP_LOCK,
        Some(FallbackReason::Hold) => PLIANT_REASON_HOLD,
        Some(FallbackReason::Always) => PLIANT_REASON_ALWAYS,
        #[allow(unreachable_patterns)]
        Some(_) => PLIANT_REASON_OTHER,
    }
}

fn backend_code(b: Backend) -> u32 {
    match b {
        Backend::Gpu => PLIANT_BACKEND_GPU,
        Backend::Auto => PLIANT_BACKEND_AUTO,
        _ => PLIANT_BACKEND_CPU,
    }
}

fn or_nan(v: Option<f32>) -> f32 {
    v.unwrap_or(f32::NAN)
}

/// What a step did (`pliant_world_step` fills it). Times in ms, energies in J.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PliantStepReport {
    /// Frames taken so far.
    pub frame: u64,
    /// Simulated time (s).
    pub time: f64,
    /// `PLIANT_BACKEND_CPU` or `PLIANT_BACKEND_GPU`: where the step ran.
    pub backend: u32,
    /// 1 when the GPU was three frames behind and this call took no frame.
    pub gpu_busy: u32,
    /// Substeps the step used.
    pub substeps: u32,
    /// Sweeps per substep (the planner's pick under a budget).
    pub iterations: u32,
    /// Worker threads used.
    pub threads: u32,
    /// Islands stepped (read each with `pliant_world_island`).
    pub islands: u32,
    /// Islands the fallback redid.
    pub fallbacks: u32,
    /// Bodies rolled back from a non-finite state.
    pub rolled_back: u32,
    /// 1 when a non-finite state was detected (and rolled back).
    pub nan_detected: u32,
    /// Vertices touching an obstacle.
    pub contact_vertices: u32,
    /// Surface pairs in contact.
    pub contact_pairs: u32,
    /// Fastest vertex (m/s).
    pub max_speed: f32,
    /// Closest approach of a surface to an obstacle (m); NaN when none is near.
    pub min_obstacle_distance: f32,
    /// Closest approach of two surfaces (m); NaN when none is near.
    pub min_pair_distance: f32,
    /// Wall time of the step on the calling thread.
    pub wall_ms: f64,
    /// Phase times: prediction, contact detection, fast-path solve, finish, safety check,
    /// fallback.
    pub predict_ms: f64,
    /// See `predict_ms`.
    pub detect_ms: f64,
    /// See `predict_ms`.
    pub solve_ms: f64,
    /// See `predict_ms`.
    pub finish_ms: f64,
    /// See `predict_ms`.
    pub check_ms: f64,
    /// See `predict_ms`.
    pub fallback_ms: f64,
    /// Energies at the end of the step.
    pub kinetic_energy: f64,
    /// See `kinetic_energy`.
    pub elastic_energy: f64,
    /// See `kinetic_energy`.
    pub gravitational_energy: f64,
    /// See `kinetic_energy`.
    pub contact_energy: f64,
    /// Largest lag of an island's clock behind the world's (s) (0 unless a fallback step was
    /// cut short by the budget).
    pub lag: f64,
}

impl PliantStepReport {
    pub(crate) fn from_report(r: &StepReport) -> Self {
        let count = |n: usize| n.min(u32::MAX as usize) as u32;
        Self {
            frame: r.frame,
            time: r.time,
            backend: backend_code(r.backend),
            gpu_busy: u32::from(r.gpu_busy),
            substeps: r.substeps,
            iterations: r.iterations,
            threads: count(r.threads),
            islands: count(r.islands.len()),
            fallbacks: r.fallbacks,
            rolled_back: count(r.rolled_back.len()),
            nan_detected: u32::from(r.nan_detected),
            contact_vertices: r.contact_vertices,
            contact_pairs: r.contact_pairs,
            max_speed: r.max_speed,
            min_obstacle_distance: or_nan(r.min_obstacle_distance),
            min_pair_distance: or_nan(r.min_pair_distance),
            wall_ms: r.wall_ms,
            predict_ms: r.phases.predict,
            detect_ms: r.phases.detect,
            solve_ms: r.phases.solve,
            finish_ms: r.phases.finish,
            check_ms: r.phases.check,
            fallback_ms: r.phases.fallback,
            kinetic_energy: r.energy.kinetic,
            elastic_energy: r.energy.elastic,
            gravitational_energy: r.energy.gravitational,
            contact_energy: r.energy.contact,
            lag: r.lag,
        }
    }
}

/// One island of the last step (`pliant_world_island`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PliantIslandReport {
    /// Bodies in the island (read them with `pliant_world_island_bodies`).
    pub bodies: u32,
    /// Substep of the step this report is for.
    pub substep: u32,
    /// `PLIANT_PATH_*`.
    pub path: u32,
    /// `PLIANT_REASON_*`: why the fast step was unsafe.
    pub reason: u32,
    /// Fast-path sweeps, or the fallback's outer iterations.
    pub iterations: u32,
    /// Wall time of the island's step (ms).
    pub ms: f64,
    /// Share of the step travelled (1 unless the fallback was cut short).
    pub travelled: f64,
    /// The island's clock behind the world's (s).
    pub lag: f64,
}

impl PliantIslandReport {
    pub(crate) fn from_report(r: &IslandReport) -> Self {
        Self {
            bodies: r.bodies.len().min(u32::MAX as usize) as u32,
            substep: r.substep,
            path: match r.path {
                StepPath::Fast => PLIANT_PATH_FAST,
                StepPath::Fallback => PLIANT_PATH_FALLBACK,
                StepPath::FallbackTruncated => PLIANT_PATH_FALLBACK_TRUNCATED,
                StepPath::Restored => PLIANT_PATH_RESTORED,
                #[allow(unreachable_patterns)]
                _ => PLIANT_PATH_OTHER,
            },
            reason: reason_code(r.reason),
            iterations: r.iterations,
            ms: r.ms,
            travelled: r.travelled,
            lag: r.lag,
        }
    }
}

/// A vertex went non-finite; the body was rolled back (`body`, `vertex`, `time`).
pub const PLIANT_EVENT_NON_FINITE_STATE: u32 = 1;
/// The GPU's contact-pair buffer overflowed (`frame`; `redone` 1 when the frame was redone).
pub const PLIANT_EVENT_CONTACT_OVERFLOW: u32 = 2;
/// A fast step was unsafe (`body`, `reason`, `redone` 1 when the fallback redid it).
pub const PLIANT_EVENT_UNSAFE_STEP: u32 = 3;
/// An island's clock runs behind the world's (`body` is its first body; `travelled`, `lag`).
pub const PLIANT_EVENT_ISLAND_LAGGING: u32 = 4;
/// The world left the GPU for the CPU (the message says why).
pub const PLIANT_EVENT_BACKEND_FALLBACK: u32 = 5;
/// An event this version of the C ABI does not name (the message says what).
pub const PLIANT_EVENT_OTHER: u32 = 255;

/// Characters kept of an event's message, NUL included.
pub const PLIANT_EVENT_MESSAGE_LEN: usize = 256;

/// One event (`pliant_world_poll_event`). Fields an event kind does not use are 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PliantEvent {
    /// `PLIANT_EVENT_*`.
    pub kind: u32,
    /// `PLIANT_REASON_*` for `UNSAFE_STEP`.
    pub reason: u32,
    /// The body it is about (`{0}` for none).
    pub body: PliantBody,
    /// Simulated time (s).
    pub time: f64,
    /// Frame, for `CONTACT_OVERFLOW`.
    pub frame: u64,
    /// Vertex, for `NON_FINITE_STATE`.
    pub vertex: u32,
    /// 1 when the step was redone.
    pub redone: u32,
    /// Share travelled, for `ISLAND_LAGGING`.
    pub travelled: f64,
    /// Lag (s), for `ISLAND_LAGGING`.
    pub lag: f64,
    /// The event in words, NUL-terminated UTF-8 (cut at `PLIANT_EVENT_MESSAGE_LEN - 1` bytes).
    pub message: [c_char; PLIANT_EVENT_MESSAGE_LEN],
}

impl PliantEvent {
    pub(crate) fn from_event(world: PliantWorld, e: &PliantEvent_) -> Self {
        let mut out = Self {
            kind: PLIANT_EVENT_OTHER,
            reason: PLIANT_REASON_NONE,
            body: PliantBody::NONE,
            time: 0.0,
            frame: 0,
            vertex: 0,
            redone: 0,
            travelled: 0.0,
            lag: 0.0,
            message: [0; PLIANT_EVENT_MESSAGE_LEN],
        };
        match e {
            PliantEvent_::NonFiniteState { body, time, vertex, .. } => {
                (out.kind, out.body, out.time, out.vertex) =
                    (PLIANT_EVENT_NON_FINITE_STATE, PliantBody::from_handle(world, *body), *time, *vertex);
            }
            PliantEvent_::ContactOverflow { frame, redone, .. } => {
                (out.kind, out.frame, out.redone) = (PLIANT_EVENT_CONTACT_OVERFLOW, *frame, u32::from(*redone));
            }
            PliantEvent_::UnsafeStep { body, time, reason, redone, .. } => {
                (out.kind, out.body, out.time, out.reason, out.redone) = (
                    PLIANT_EVENT_UNSAFE_STEP,
                    PliantBody::from_handle(world, *body),
                    *time,
                    reason_code(Some(*reason)),
                    u32::from(*redone),
                );
            }
            PliantEvent_::IslandLagging { bodies, time, travelled, lag, .. } => {
                out.kind = PLIANT_EVENT_ISLAND_LAGGING;
                out.body = bodies.first().map_or(PliantBody::NONE, |h| PliantBody::from_handle(world, *h));
                (out.time, out.travelled, out.lag) = (*time, *travelled, *lag);
            }
            PliantEvent_::BackendFallback { .. } => out.kind = PLIANT_EVENT_BACKEND_FALLBACK,
            _ => {}
        }
        // The message, cut at a character boundary so that it stays valid UTF-8.
        let text = e.to_string();
        let mut end = text.len().min(PLIANT_EVENT_MESSAGE_LEN - 1);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        for (dst, &b) in out.message.iter_mut().zip(&text.as_bytes()[..end]) {
            *dst = b as c_char;
        }
        out
    }
}

/// Pliant's own event type, renamed so that the C struct can take its name.
pub(crate) use pliant::PliantEvent as PliantEvent_;
