//! Events the world reports to the caller.

use crate::body::SoftBodyHandle;

/// Something the caller should know about. More kinds will come (match with a `_` arm).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PliantEvent {
    /// A body's step produced NaN or infinity: the step was rolled back for that body, its
    /// velocity zeroed, and the simulation continued. The caller never sees the bad values.
    NonFiniteState {
        /// The body.
        body: SoftBodyHandle,
        /// Its name.
        name: String,
        /// Simulated time of the failed substep's start \[s\].
        time: f64,
        /// First offending vertex (body-local) and what was non-finite.
        vertex: u32,
        /// `"position"`, `"velocity"` or `"acceleration"`.
        field: &'static str,
    },
    /// A GPU contact detection found more surface pairs than the GPU's pair buffer holds. The
    /// frame stayed free of crossings (the pairs that did not fit bounded their vertices'
    /// moves) but lacked their contact forces; the buffer grew, and the frame and the ones
    /// after it were stepped again (`redone`) unless the state had been edited since.
    ContactOverflow {
        /// The frame.
        frame: u64,
        /// Pairs the detection found.
        pairs: u32,
        /// Pairs the buffer held.
        capacity: u32,
        /// The frame was stepped again.
        redone: bool,
    },
    /// The GPU's safety check found a body's step unsafe (an inverted tet, a vertex too fast
    /// for its size, a path through an obstacle): the GPU put the body back at its substep's
    /// start at rest, so no unsafe state was ever read back, and the world stepped the frame
    /// again on the CPU with the penetration-free fallback (`redone`), unless the state had
    /// been edited since. The body stays on the fallback for the hold that follows.
    UnsafeStep {
        /// The body.
        body: SoftBodyHandle,
        /// Its name.
        name: String,
        /// Start of the first frame stepped again, or of the frame read back \[s\].
        time: f64,
        /// What the check found.
        reason: crate::runtime::FallbackReason,
        /// The frame was stepped again from its start.
        redone: bool,
    },
    /// A fallback step of an island was cut short by the frame's budget or its iteration
    /// cap: the island moved on by the share `travelled` of the step only, with the velocities
    /// of the state it reached, and its clock is `lag` behind the world's; its next fallback
    /// steps are stretched to catch up. Time beyond the most an island may lag, or lag left when
    /// it returns to the fast path, is dropped (`time_dropped`): its bodies live through less
    /// time than the world.
    IslandLagging {
        /// The island's bodies.
        bodies: Vec<SoftBodyHandle>,
        /// Simulated time at the end of the substep \[s\].
        time: f64,
        /// Share of the step the island travelled.
        travelled: f64,
        /// How far its clock is behind \[s\].
        lag: f64,
        /// Simulated time given up in this step \[s\].
        time_dropped: f64,
    },
    /// Steps run on the CPU although the configuration asked for the GPU (`Backend::Auto` or
    /// `Backend::Gpu`), or run on the GPU again; reported when the reason changes.
    BackendFallback {
        /// Why the GPU is not used (`None`: it is used again).
        reason: Option<String>,
    },
}

impl std::fmt::Display for PliantEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NonFiniteState { name, time, vertex, field, .. } => write!(
                f,
                "body `{name}`: non-finite {field} at vertex {vertex} in the step starting at t = {time:.4} s; step rolled back, velocity zeroed"
            ),
            Self::ContactOverflow { frame, pairs, capacity, redone } => write!(
                f,
                "frame {frame}: {pairs} contact pairs for a GPU buffer of {capacity}; buffer grown{}",
                if *redone { ", frame stepped again" } else { "" }
            ),
            Self::UnsafeStep { name, time, reason, redone, .. } => write!(
                f,
                "body `{name}`: GPU step from t = {time:.4} s failed the safety check ({reason:?}); {}",
                if *redone { "stepped again with the fallback" } else { "put back at rest" }
            ),
            Self::IslandLagging { bodies, time, travelled, lag, time_dropped } => write!(
                f,
                "t = {time:.4} s: a fallback step of {} bod{} travelled {:.1} % of its step; {:.2} ms behind{}",
                bodies.len(),
                if bodies.len() == 1 { "y" } else { "ies" },
                100.0 * travelled,
                lag * 1e3,
                if *time_dropped > 0.0 { format!(", {:.2} ms dropped", time_dropped * 1e3) } else { String::new() }
            ),
            Self::BackendFallback { reason: Some(reason) } => write!(f, "stepping on the CPU: {reason}"),
            Self::BackendFallback { reason: None } => write!(f, "stepping on the GPU"),
        }
    }
}
