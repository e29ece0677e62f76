//! What a step reports.

use crate::body::SoftBodyHandle;

/// Energies of the whole world at the end of a step \[J\].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Energies {
    /// `½ Σ m |v|²`.
    pub kinetic: f64,
    /// Elastic energy Ψ (membrane and bending included).
    pub elastic: f64,
    /// Gravitational potential `−Σ m g·x` (zero at the origin).
    pub gravitational: f64,
    /// Contact penalty energy.
    pub contact: f64,
}

impl Energies {
    /// Sum of all terms.
    pub fn total(&self) -> f64 {
        self.kinetic + self.elastic + self.gravitational + self.contact
    }
}

/// What happened in one `World::step`.
///
/// On the GPU backend a step returns before the GPU has run it: the fields measured from the
/// state (`residual`, `energy`, `max_speed`, `min_obstacle_distance`, `contact_vertices`,
/// `pin_lag`) are left at their defaults, and rollbacks and the surface contact counts
/// (`contact_pairs`, `min_pair_distance`, `contact_pairs_dropped`) are reported with the step
/// in which their frame came back. [`crate::runtime::World::complete_report`] waits for the GPU and
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
}
