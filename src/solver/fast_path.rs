//! The fast-path interface: a solver that takes a substep at a fixed cost (a fixed number of
//! iterations) and whose result the safety check then keeps or sends to the fallback. VBD
//! ([`crate::solver::vbd::Vbd`]) is the first; the sparse-inverse local–global solver is to be
//! the second. The runtime's step calls its phases in order:
//!
//! ```text
//! predict   inertia targets and the initial guess x^(0)
//! detect    the contact set the solve consumes, at x^(0) (which it may shorten so that no
//!           path crosses a surface)
//! solve     the fixed number of iterations
//! finish    velocities and accelerations from the solved positions; what the substep measured
//! ```
//!
//! and the safety check, the fallback and the hooks then read what the substep left through
//! [`FastResult`].

use glam::{Vec3A, Vec4};

use crate::collision::surface_pairs::ContactPair;
use crate::collision::{ContactModel, Obstacle};
use crate::solver::vbd::carrier::Carrier;
use crate::solver::vbd::spans::SpanContacts;
use crate::state::SimState;

/// What a fast path is given for one substep besides the state and its settings.
#[derive(Clone, Copy)]
pub(crate) struct Substep<'a> {
    /// Substep length \[s\].
    pub h: f32,
    /// The substep's obstacles: the static ones, then the moving ones at their share of the
    /// frame's motion.
    pub obstacles: &'a [Obstacle],
    /// End-of-substep positions of kinematic vertices, one entry per vertex (others unread).
    pub targets: &'a [Vec4],
    /// Dynamic rigid bodies moving some of the obstacles, solved with the soft bodies.
    pub carriers: &'a [Carrier],
}

/// What one fast substep measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FastStats {
    /// `‖f‖` over free vertices in the last iteration, before each vertex's final update
    /// \[N\]: the force residual the substep ended with.
    pub residual: f32,
    /// Vertices that touched a contact during the substep.
    pub contact_vertices: u32,
    /// Acceleration (Chebyshev) was switched off mid-substep because the iterations stopped
    /// contracting.
    pub chebyshev_stopped: bool,
    /// Surface contact pairs at the last detection.
    pub contact_pairs: u32,
    /// Smallest distance between surface primitives of different bodies or self-pairs found at
    /// the last detection \[m\] (`f32::INFINITY` when none was within the search radius).
    pub min_pair_distance: f32,
    /// What the local–global path did for the bodies that ask for it.
    pub local_global: crate::solver::local_global::LocalGlobalStats,
}

/// A fixed-cost solver for a substep, in the step's phases (see the module docs). Each phase
/// may keep what the next one needs in `self`.
pub(crate) trait FastPath: FastResult {
    /// The solver's settings, derived once per frame from the step configuration.
    type Settings;

    /// Inertia targets and the initial guess `x^(0)`, written into the state's positions.
    fn predict(&mut self, state: &mut SimState, substep: &Substep<'_>, settings: &Self::Settings);

    /// The contact set at the initial guess; the guess may be shortened so that no vertex path
    /// crosses a surface.
    fn detect(&mut self, state: &mut SimState, substep: &Substep<'_>, settings: &Self::Settings);

    /// The substep's fixed number of iterations.
    fn solve(&mut self, state: &mut SimState, substep: &Substep<'_>, settings: &Self::Settings);

    /// Velocities and accelerations from the solved positions, and what the substep measured.
    fn finish(&mut self, state: &mut SimState, substep: &Substep<'_>, settings: &Self::Settings) -> FastStats;
}

/// What a fast substep leaves for the safety check, the fallback and the hooks.
pub(crate) trait FastResult {
    /// Surface contact pairs of the last detection.
    fn contact_pairs(&self) -> &[ContactPair];

    /// Whether vertex `v` ended the substep held by its displacement bound (its last
    /// iteration's step was cut short by the conservative clamp).
    fn clamped(&self, v: usize) -> bool;

    /// Per body, the squared force residual of its first and of its last iteration \[N²\].
    fn body_residuals(&self, st: &SimState, out: &mut Vec<(f64, f64)>);

    /// Each body's distances to itself as the last detection certified them (a proof that
    /// a body which is not folding keeps its own primitives apart; `self_clearance`), if the
    /// fast path keeps one.
    fn self_clearance(&self) -> Option<&crate::collision::self_clearance::SelfClearance>;

    /// Surface edges' contacts with posed obstacles of the last substep.
    fn obstacle_spans(&self) -> &SpanContacts;

    /// With carriers: the substep's obstacles with each carrier's at the pose the substep
    /// solved (empty without carriers).
    fn moved_obstacles(&self) -> &[Obstacle];

    /// The impulses \[N·s\] obstacles and pins gave `vertices` over the last substep of length
    /// `h`, one per vertex into `out`.
    fn environment_impulses(
        &mut self,
        state: &mut SimState,
        contact: ContactModel,
        h: f32,
        vertices: &[u32],
        out: &mut Vec<Vec3A>,
    );

    /// Per body: minus `h` times the summed unbalanced force of its vertices that `held` does
    /// not mark, added into `out`.
    fn free_residual_impulses(
        &mut self,
        state: &mut SimState,
        contact: ContactModel,
        h: f32,
        held: &[bool],
        out: &mut [Vec3A],
    );
}
