//! Step configuration: time step, iteration count and solver settings, with units and the
//! reason for each default.

use glam::{Vec3, Vec3A};

use crate::collision::{ContactModel, ContactStiffness};
use crate::solver::{CoarseSpace, Initialization, Integrator, LocalGlobalSettings, VbdSettings};

/// An invalid configuration value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("step config `{field}` = {value} is invalid: {reason}")]
pub struct ConfigError {
    /// Field name.
    pub field: &'static str,
    /// The rejected value, printed.
    pub value: String,
    /// What it must satisfy.
    pub reason: &'static str,
}

/// Where a world's steps run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "lowercase"))]
pub enum Backend {
    /// The GPU when a hardware adapter exists (or the one named by `gpu_adapter`, software or
    /// not) and the scene is one the GPU step takes; otherwise the CPU, with the reason logged
    /// and reported as [`crate::runtime::PliantEvent::BackendFallback`]. A software rasterizer
    /// (lavapipe, WARP) is not picked unasked: it is slower than the CPU path.
    Auto,
    /// The CPU (default): every feature, the oracle the GPU path is tested against.
    #[default]
    Cpu,
    /// The GPU (wgpu). A world cannot be made without an adapter; a scene the GPU step does
    /// not take yet runs on the CPU with the reason reported, as for `Auto`.
    Gpu,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Cpu => "cpu",
            Self::Gpu => "gpu",
        })
    }
}

impl std::str::FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "gpu" => Ok(Self::Gpu),
            other => Err(format!("unknown backend {other:?}: use auto, cpu or gpu")),
        }
    }
}

/// When an island's step is redone by the augmented-Lagrangian fallback.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "lowercase"))]
pub enum FallbackPolicy {
    /// When the safety check rejects the fast path's result (default).
    #[default]
    Auto,
    /// Every step of every island (the fast path still runs first and warm-starts it).
    Always,
    /// Never: the fast path's result is kept; a non-finite one is rolled back with zero
    /// velocity.
    Never,
}

impl std::str::FromStr for FallbackPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "always" => Ok(Self::Always),
            "never" => Ok(Self::Never),
            other => Err(format!("unknown fallback policy {other:?}: use auto, always or never")),
        }
    }
}

/// How a step is taken.
#[derive(Clone, Debug, PartialEq)]
pub struct StepConfig {
    /// Frame time step \[s\]. Default 1/60 (one display frame).
    pub dt: f32,
    /// Substeps per frame; each solves with `dt / substeps`. Default 1. For stiff or slender
    /// bodies, more substeps converge better than more iterations (\[VBD\] §4).
    pub substeps: u32,
    /// VBD sweeps per substep (fixed, so a step has a fixed cost). Default 20.
    pub iterations: u32,
    /// Gravity \[m/s²\]. Default (0, −9.81, 0): y up.
    pub gravity: Vec3,
    /// Time integrator. Default Newmark β = 1, γ = 3/2 (exact free flight, dissipative like
    /// backward Euler; see `solver/integrator.rs`).
    pub integrator: Integrator,
    /// Initial guess. Default adaptive (\[VBD\] §3.7).
    pub initialization: Initialization,
    /// Chebyshev spectral-radius estimate ρ; `None` turns acceleration off. Default 0.9
    /// (docs/algorithms.md §2.8: the paper uses 0.75–0.95). At most 0.98: on a stiff 2,600-vertex beam
    /// 0.99 diverged step after step, 0.98 still converged.
    pub chebyshev_rho: Option<f32>,
    /// Worker threads; 0 (default) = automatic: one per 1,000 free vertices, at most one per
    /// core (below that, cache traffic between cores costs more than the second core gives).
    /// Results are bit-identical for every thread count, so the choice never changes a run.
    pub threads: usize,
    /// Contact penalty stiffness \[N/m\] for every vertex; `None` (default) = mass-proportional,
    /// so a vertex's own weight compresses the contact layer by 1 % of the offset (see
    /// `ContactStiffness::default_for` for why a fixed 1e7 N/m fails in f32).
    pub contact_stiffness: Option<f32>,
    /// Contact offset δ \[m\]: bodies rest this far from obstacles. Default 1 mm.
    pub contact_offset: f32,
    /// A contact layer that stiffens as it is pressed (default off): `E(d) = k δ² (d/δ − 1 −
    /// ln(d/δ))` over `δ/10 ≤ d < δ`, the penalty `½ k (δ − d)²` to second order at `δ` but
    /// holding `19 k δ` at the surface (1,900 vertex weights by default), where the penalty
    /// holds at most `k δ` and is as soft under load as unloaded. Turn it on for
    /// towers and heavy loads: a stack of eight soft cubes tips over without it (see
    /// `docs/algorithms.md` §2.4 for what it changes and why it is not yet the default).
    pub contact_stiffening: bool,
    /// Static-friction velocity threshold ε_v \[m/s\]; slip below `ε_v h` per step is static.
    /// Default 1e-4 m/s (creep ≤ 0.1 mm per second of sticking).
    pub friction_eps_v: f32,
    /// Correct each unpinned body's rigid motion in the initial guess, coupled through contact
    /// (default on): VBD alone moves whole bodies, and bodies resting on each other, only
    /// slowly (see `solver/vbd/rigid_correction.rs`).
    pub rigid_correction: bool,
    /// The motions that correction gives each body (default [`CoarseSpace::Rigid`]);
    /// [`CoarseSpace::Affine`] adds each volumetric body's whole-body stretch and shear, with
    /// its elastic energy.
    pub coarse_space: CoarseSpace,
    /// Body–body and self contact between surfaces (default on). Off, bodies pass through
    /// each other and only obstacles collide.
    pub surface_contact: bool,
    /// Sweeps between contact detections within a substep; 0 = once per substep (default 5:
    /// each detection lets every vertex move up to 0.45× its distance to the nearest
    /// primitive, so detecting again frees motion in dense contact).
    pub contact_detection_interval: u32,
    /// Where steps run (default [`Backend::Cpu`]).
    pub backend: Backend,
    /// With the GPU backend: use the first adapter whose name contains this (case-insensitive,
    /// e.g. `"llvmpipe"`, `"H100"`); `None` (default) picks the high-performance adapter.
    pub gpu_adapter: Option<String>,
    /// With the GPU backend: surface contact pairs the GPU's pair buffer holds at first; 0
    /// (default) = 16 per surface vertex. A detection that finds more keeps the rest as
    /// displacement bounds only (no crossing, but no contact force from them in that frame),
    /// reports them in `StepReport::contact_pairs_dropped`, and the buffer grows to fit before
    /// the next frame; set this for scenes known to need more from their first frame.
    pub gpu_contact_pairs: u32,
    /// Measure each CPU step's state into its report: energies, the largest speed and the
    /// nearest obstacle distance (`StepReport::energy`, `max_speed`, `min_obstacle_distance`).
    /// Default on. The solver and its safety checks do not read them, so a game loop that
    /// does not either can switch the pass off (a few per cent of a small body's step) and
    /// measure on demand with [`crate::World::complete_report`].
    pub measure_state: bool,
    /// When the safety check sends an island to the augmented-Lagrangian fallback. Default
    /// [`FallbackPolicy::Auto`].
    pub fallback: FallbackPolicy,
    /// With the GPU backend: redo unsafe substeps on the device (`gpu::al::fallback`: the
    /// augmented-Lagrangian step recorded into every substep and run only when the GPU's check
    /// fails or a hold is on, so no frame goes back to the host), obstacles and surface contact
    /// (body–body and self) included; with a moving obstacle the CPU's fallback redoes the
    /// frame.
    /// Default off: every substep records the fallback's dispatches whether they run or not.
    /// Idle they cost 1.6–1.8 ms a frame on an H200 (200–250 dispatches at 8 outer iterations;
    /// 7–9 ms for the whole fast step), 2.6 ms with surface contact, and 23–71 ms on lavapipe;
    /// running, the device's step is slower than the CPU's fallback so far (a median 190 ms
    /// against 35 ms a frame for `fallback_projectile_cloth` on an H200), for up to 4,096 vertices,
    /// whose Newton solves and line searches run in one workgroup each (`bench_gpu_fallback`,
    /// BENCHMARKS.md). Above that each PCG iteration is five dispatches, ~19,000 a substep
    /// idle: ~130 ms a frame on an H200 before the one-workgroup path existed (not measured
    /// above 4,096 vertices).
    pub gpu_fallback: bool,
    /// Frame budget \[ms\]: with a budget the planner picks each step's sweep count from the
    /// measured cost per sweep (70 % of the budget; the rest is kept for fallbacks, which stop
    /// at the budget's end with their current, intersection-free iterate). `None` (default)
    /// pins the count to `iterations`, for deterministic replays.
    pub budget_ms: Option<f64>,
    /// The local–global fast path of bodies built with [`crate::SolverChoice::LocalGlobal`]:
    /// its iterations per substep, and whether its factors are built before the first substep
    /// instead of in the background.
    pub local_global: LocalGlobalSettings,
}

impl Default for StepConfig {
    fn default() -> Self {
        Self {
            dt: 1.0 / 60.0,
            substeps: 1,
            iterations: 20,
            gravity: Vec3::new(0.0, -9.81, 0.0),
            integrator: Integrator::default(),
            initialization: Initialization::default(),
            chebyshev_rho: Some(0.9),
            threads: 0,
            contact_stiffness: None,
            contact_offset: 1e-3,
            contact_stiffening: false,
            friction_eps_v: 1e-4,
            rigid_correction: true,
            coarse_space: CoarseSpace::Rigid,
            surface_contact: true,
            contact_detection_interval: 5,
            backend: Backend::Cpu,
            gpu_adapter: None,
            gpu_contact_pairs: 0,
            measure_state: true,
            fallback: FallbackPolicy::Auto,
            gpu_fallback: false,
            budget_ms: None,
            local_global: LocalGlobalSettings::default(),
        }
    }
}

impl StepConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: &'static str, value: String, reason: &'static str| Err(ConfigError { field, value, reason });
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return err("dt", self.dt.to_string(), "must be finite and > 0 s");
        }
        if self.substeps == 0 || self.substeps > 1000 {
            return err("substeps", self.substeps.to_string(), "must be in 1..=1000");
        }
        if self.iterations == 0 || self.iterations > 100_000 {
            return err("iterations", self.iterations.to_string(), "must be in 1..=100000");
        }
        if self.gpu_contact_pairs > 1 << 26 {
            return err(
                "gpu_contact_pairs",
                self.gpu_contact_pairs.to_string(),
                "must be at most 2^26 (0 = automatic)",
            );
        }
        if self.threads > 1024 {
            return err("threads", self.threads.to_string(), "must be at most 1024 (0 = automatic)");
        }
        if !self.gravity.is_finite() {
            return err("gravity", format!("{}", self.gravity), "must be finite");
        }
        if let Some(rho) = self.chebyshev_rho
            && !(rho.is_finite() && rho > 0.0 && rho <= 0.98)
        {
            return err(
                "chebyshev_rho",
                rho.to_string(),
                "must be in (0, 0.98]; larger values make VBD diverge on stiff bodies",
            );
        }
        if let Some(k) = self.contact_stiffness
            && !(k.is_finite() && k > 0.0)
        {
            return err("contact_stiffness", k.to_string(), "must be finite and > 0 N/m");
        }
        if !(self.contact_offset.is_finite() && self.contact_offset > 0.0) {
            return err("contact_offset", self.contact_offset.to_string(), "must be finite and > 0 m");
        }
        if let Some(b) = self.budget_ms
            && !(b.is_finite() && b > 0.0)
        {
            return err("budget_ms", b.to_string(), "must be finite and > 0 ms");
        }
        if self.local_global.iterations == 0 || self.local_global.iterations > 10_000 {
            return err("local_global.iterations", self.local_global.iterations.to_string(), "must be in 1..=10000");
        }
        if !(self.friction_eps_v.is_finite() && self.friction_eps_v > 0.0) {
            return err("friction_eps_v", self.friction_eps_v.to_string(), "must be finite and > 0 m/s");
        }
        Ok(())
    }

    /// Substep length `h = dt / substeps` \[s\].
    pub fn substep_dt(&self) -> f32 {
        self.dt / self.substeps as f32
    }

    /// The contact model of a substep of length `h`.
    pub(crate) fn contact_model(&self, h: f32) -> ContactModel {
        ContactModel {
            stiffness: self.contact_stiffness.map_or_else(
                || ContactStiffness::default_for(self.gravity.length(), self.contact_offset),
                ContactStiffness::Absolute,
            ),
            offset: self.contact_offset,
            static_slip: self.friction_eps_v * h,
            stiffening: self.contact_stiffening,
        }
    }

    /// The fast path's settings, with `iterations` sweeps per substep (the frame's plan) on
    /// `threads` workers: derived once per frame, read by both backends.
    pub(crate) fn vbd_settings(&self, iterations: u32, threads: usize) -> VbdSettings {
        VbdSettings {
            iterations,
            chebyshev_rho: self.chebyshev_rho,
            initialization: self.initialization,
            integrator: self.integrator,
            gravity: Vec3A::from(self.gravity),
            contact: self.contact_model(self.substep_dt()),
            threads,
            rigid_correction: self.rigid_correction,
            coarse_space: self.coarse_space,
            surface_contact: self.surface_settings(),
            local_global: self.local_global,
        }
    }

    /// The solver's surface-contact settings for this configuration.
    pub(crate) fn surface_settings(&self) -> crate::solver::SurfaceContactSettings {
        crate::solver::SurfaceContactSettings {
            enabled: self.surface_contact,
            detection_interval: self.contact_detection_interval,
            ..Default::default()
        }
    }

    /// The thread count used for `free_vertices` solved vertices.
    pub fn resolved_threads(&self, free_vertices: usize) -> usize {
        if self.threads == 0 {
            // Read once: the standard library asks the OS (cgroup files on Linux) on every call,
            // which cost 2 % of a small scene's step.
            static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
            let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            (free_vertices / 1000).clamp(1, cores)
        } else {
            self.threads
        }
    }
}
