//! What a step reports.

use crate::body::SoftBodyHandle;
pub use crate::solver::check::FallbackReason;
pub use crate::solver::check::energy::Energies;

/// Which solver produced an island's step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(rename_all = "snake_case"))]
pub enum StepPath {
    /// The fast path (VBD) with the planned iteration count; its result passed the safety check.
    #[default]
    Fast,
    /// Rolled back and redone by the augmented-Lagrangian fallback, converged. On the GPU
    /// backend with `StepConfig::gpu_fallback` the device redoes the whole world's substep
    /// itself (one island of every body, its Newton and PCG counts not read back).
    Fallback,
    /// Rolled back and redone by the fallback, which ran out of time or iterations, or whose
    /// last iterate had a higher merit (incremental potential plus the capped price of its
    /// contact-offset violations) than an earlier one, and returned its last (or that lower)
    /// iterate: intersection-free, less converged (see `IslandReport::travelled`).
    FallbackTruncated,
    /// Rolled back to the step's start with zero velocity: the fast path failed and the
    /// fallback could not take the step (it produced non-finite values, or the island touches a
    /// moving collider, which the fallback does not model yet).
    Restored,
}

/// One island's step: bodies connected through contact or whose motions over the step
/// overlap.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct IslandReport {
    /// The island's bodies.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub bodies: Vec<SoftBodyHandle>,
    /// Substep (0-based) the island was stepped in; every substep reports its islands.
    pub substep: u32,
    /// The solver that produced the step.
    pub path: StepPath,
    /// Why the fast path's result was not kept (`None` on the fast path).
    pub reason: Option<FallbackReason>,
    /// Iterations: VBD sweeps on the fast path, outer augmented-Lagrangian iterations on the
    /// fallback.
    pub iterations: u32,
    /// Newton iterations of the fallback (0 on the fast path).
    pub newton_iterations: u32,
    /// Conjugate-gradient iterations of the fallback's Newton solves (0 on the fast path).
    pub cg_iterations: u32,
    /// Time the island's step took \[ms\]: on the fast path the whole world's sweeps and the
    /// safety check (islands share them); on the fallback its own solve.
    pub ms: f64,
    /// Force residual at the end \[N\]: the sweeps' on the fast path, `‖∇L‖` on the fallback.
    pub residual: f64,
    /// Smallest distance of a contact pair the fallback held at the end \[m\] (`None` on the
    /// fast path, or without pairs).
    pub min_distance: Option<f64>,
    /// Fraction of the step the fallback travelled (1 on the fast path and when converged).
    /// A truncated step moves the island's clock on by this share only: its velocities are
    /// those of the state it reached, and the rest of the step is the island's lag.
    pub travelled: f64,
    /// How far the island's clock is behind the world's after the step \[s\] (the largest of
    /// its bodies'; 0 on the fast path). Truncated fallback steps add to it; the fallback's
    /// next steps of the island are stretched by up to half a substep until it is caught up
    /// (`runtime::fallback`, "Lag").
    pub lag: f64,
    /// Simulated time given up by this step \[s\]: lag beyond `MAX_LAG_SUBSTEPS` substeps, or
    /// the lag of an island that cannot catch up (moving pins set its clock). Its bodies then
    /// simply live through less time than the world; nothing else is lost.
    pub time_dropped: f64,
}

/// Where a step's time went, per phase, summed over its substeps \[ms\] (CPU backend; 0 on the
/// GPU, whose phases run on the device).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PhaseTimes {
    /// Inertia targets, the initial guess and the coarse correction.
    pub predict: f64,
    /// Contact detection at the initial guess.
    pub detect: f64,
    /// The fast path's sweeps.
    pub solve: f64,
    /// The fast path's velocities and measures.
    pub finish: f64,
    /// The safety check (crossings, inversion, energy, islands).
    pub check: f64,
    /// Rollback and the augmented-Lagrangian redo of the islands the check rejected.
    pub fallback: f64,
}

/// What happened in one `World::step`.
///
/// On the GPU backend a step returns before the GPU has run it: the fields measured from the
/// state (`residual`, `energy`, `max_speed`, `min_obstacle_distance`, `contact_vertices`,
/// `pin_lag`) are left at their defaults, and rollbacks and the surface contact counts
/// (`contact_pairs`, `min_pair_distance`, `contact_pairs_dropped`) are reported with the step
/// in which their frame came back. [`crate::World::complete_report`] waits for the GPU and
/// fills the state measures in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepReport {
    /// Where the step ran.
    pub backend: crate::runtime::Backend,
    /// Time the caller's thread spent in `step()` \[ms\]: the whole step on the CPU; recording
    /// and submitting it on the GPU.
    pub game_thread_ms: f64,
    /// GPU backend: the GPU was three frames behind, so this call stepped nothing (frame and
    /// time did not advance; the caller's thread did not wait either). Step again later.
    pub gpu_busy: bool,
    /// The frame whose state the host copy holds after this step (the newest finished GPU
    /// frame; equal to `frame` on the CPU).
    pub state_frame: u64,
    /// Frame number after the step (1 for the first step).
    pub frame: u64,
    /// Simulated time after the step \[s\].
    pub time: f64,
    /// Substeps taken.
    pub substeps: u32,
    /// VBD sweeps per substep.
    pub iterations: u32,
    /// Worker threads used.
    pub threads: usize,
    /// Wall-clock time of the step \[ms\].
    pub wall_ms: f64,
    /// Force residual `‖f‖` of the last sweep of the last substep \[N\].
    pub residual: f32,
    /// Energies after the step.
    pub energy: Energies,
    /// Largest vertex speed \[m/s\].
    pub max_speed: f32,
    /// Smallest signed distance of any vertex to any obstacle \[m\] (`None` without obstacles).
    pub min_obstacle_distance: Option<f32>,
    /// Vertices that touched an obstacle or another surface in the last substep.
    pub contact_vertices: u32,
    /// Surface contact pairs (vertex–triangle and edge–edge, body–body and self) at the last
    /// detection of the last substep.
    pub contact_pairs: u32,
    /// Smallest distance between any two surface primitives that could touch (different
    /// bodies, or non-adjacent primitives of a self-colliding body) at the last detection
    /// \[m\]; `None` when none was within the contact search radius.
    pub min_pair_distance: Option<f32>,
    /// GPU backend: surface contact pairs a detection of the frame read back found beyond the
    /// pair buffer's capacity (0 on the CPU, which has no such limit). Those pairs bounded their
    /// vertices' moves (the frame stayed free of crossings) but exerted no contact force; the
    /// buffer grows, and the frame and the ones after it are stepped again.
    pub contact_pairs_dropped: u32,
    /// GPU backend: compute dispatches this call recorded (every frame it stepped, redone ones
    /// included). Each costs the driver and the GPU's front end a few µs whatever it computes,
    /// so on small scenes this count, not the arithmetic, sets the frame's GPU time.
    pub gpu_dispatches: u32,
    /// GPU backend: queue submissions this call handed over (one per frame stepped).
    pub gpu_submissions: u32,
    /// GPU backend: the GPU time of the newest frame read back in this call \[ms\], from the
    /// device's timestamps at its first and last dispatch (`None` when no frame came back, or
    /// the adapter has no timestamp queries). The frame is `state_frame`'s, one to three
    /// frames behind `frame`.
    pub gpu_ms: Option<f64>,
    /// GPU backend: frames this call stepped again because a detection overflowed the pair
    /// buffer (see `contact_pairs_dropped` and `PliantEvent::ContactOverflow`).
    pub frames_redone: u32,
    /// Largest distance of a kinematic (pinned or path-driven) vertex from its target at the end
    /// of the step \[m\]: pins lag when a contact bound holds them back (0 without pins).
    pub pin_lag: f32,
    /// A non-finite value appeared and was rolled back.
    pub nan_detected: bool,
    /// Bodies whose substep was rolled back (their velocity zeroed); see the world's events.
    pub rolled_back: Vec<SoftBodyHandle>,
    /// Every island of every substep (CPU backend): path, iterations, time, residual, and why
    /// it fell back.
    pub islands: Vec<IslandReport>,
    /// Islands (over all substeps) that fell back to the augmented-Lagrangian step.
    pub fallbacks: u32,
    /// Time each phase took \[ms\].
    pub phases: PhaseTimes,
    /// Largest share of the energy test's allowance that an island's fast step used, over the
    /// substeps (CPU backend; 0 when no tested island gained energy): its gain of total energy
    /// (kinetic, elastic, gravitational and contact) divided by 5 % of its energy scale plus a
    /// millijoule. Above 1 the test raised a soft flag (three in five steps send the island to
    /// the fallback).
    pub energy_share: f64,
    /// Largest lag of an island's clock behind the world's after the step \[s\] (see
    /// `IslandReport::lag`; 0 when no fallback step was cut short).
    pub lag: f64,
    /// The last substep's local–global path: bodies it solved, bodies that took VBD instead
    /// (near a contact, or waiting for their factor), and the factors' build time and memory.
    pub local_global: crate::solver::LocalGlobalStats,
}
