//! Hooks: how a coupling (rapier, or another rigid-body engine) takes part in a step without
//! reaching into it. [`World::step_with_hooks`] calls a [`StepHooks`] at three named points,
//! as rapier's `PhysicsHooks` are called by its pipeline:
//!
//! ```text
//! before_step     the frame's moving obstacles and carriers (FrameMotion), attachments' targets
//! ┌ substep ×N    plan → predict → detect → solve → check → fall back
//! └ after_substep the impulses obstacles and pins gave the soft vertices (SubstepContext)
//! after_step      reactions to the rigid bodies, events
//! ```
//!
//! A hooked step runs on the CPU: `after_substep` reads each substep's state on the host.

use glam::Vec3A;

use super::World;
use super::assemble::BodySlot;
use super::report::StepReport;
use crate::body::SoftBodyHandle;
use crate::collision::{ContactModel, Obstacle};
use crate::solver::fast_path::FastResult;
use crate::solver::vbd::carrier::CarrierBody;
use crate::state::SimState;

/// Code run at named points of [`World::step_with_hooks`]. Every method has an empty default.
pub trait StepHooks {
    /// Before the frame's first substep, with the bodies packed: fill `motion` with what moves
    /// during the frame besides the soft bodies (colliders at their start and end poses).
    fn before_step(&mut self, world: &mut World, motion: &mut FrameMotion) {
        let _ = (world, motion);
    }

    /// After each substep, once the check and any fallback have settled it.
    fn after_substep(&mut self, substep: &mut SubstepContext<'_>) {
        let _ = substep;
    }

    /// After the frame; `world.moving_obstacles()` holds the moving obstacles where the step
    /// left them (a carried one where the step solved its body).
    fn after_step(&mut self, world: &mut World, report: &mut StepReport) {
        let _ = (world, report);
    }
}

/// What moves during a frame besides the soft bodies, as a [`StepHooks::before_step`] sets it:
/// obstacles moving from a start to an end pose over the frame, and the dynamic rigid bodies
/// the step solves together with the soft bodies (carriers).
#[derive(Clone, Debug, Default)]
pub struct FrameMotion {
    pub(crate) obstacles: Vec<Obstacle>,
    pub(crate) carriers: Vec<CarrierBody>,
}

impl FrameMotion {
    /// Adds an obstacle moving over the frame (a `PosedShape` with start and end poses, or a
    /// fixed one); it is obstacle `static count + k` in [`World::all_obstacles`].
    pub fn push_obstacle(&mut self, obstacle: Obstacle) {
        self.obstacles.push(obstacle);
    }

    /// The frame's moving obstacles.
    pub fn obstacles(&self) -> &[Obstacle] {
        &self.obstacles
    }

    /// Forgets every obstacle and carrier (keeping the allocations).
    pub fn clear(&mut self) {
        self.obstacles.clear();
        self.carriers.clear();
    }
}

/// What a hook sees after each substep: the state just stepped and what tells the impulses
/// obstacles and pins gave each vertex.
pub struct SubstepContext<'a> {
    pub(crate) state: &'a mut SimState,
    /// What the fast path left (the impulses are read back from its terms).
    pub(crate) fast: &'a mut dyn FastResult,
    /// This substep's obstacles: the static ones, then the moving ones from `moving_start`.
    pub(crate) obstacles: &'a [Obstacle],
    pub(crate) moving_start: usize,
    pub(crate) contact: ContactModel,
    /// Substep length \[s\].
    pub(crate) h: f32,
    pub(crate) slots: &'a [BodySlot],
    /// Bodies whose substep was rolled back (non-finite state) so far in this frame.
    pub(crate) rolled_back: &'a [SoftBodyHandle],
    /// Bodies the fallback redid in this substep.
    pub(crate) redone: &'a [SoftBodyHandle],
}

impl SubstepContext<'_> {
    /// Substep length \[s\].
    pub fn h(&self) -> f32 {
        self.h
    }

    /// This substep's obstacles: the static ones, then the frame's moving ones.
    pub fn obstacles(&self) -> &[Obstacle] {
        self.obstacles
    }

    /// Bodies whose substep was rolled back (non-finite state) so far in this frame.
    pub fn rolled_back(&self) -> &[SoftBodyHandle] {
        self.rolled_back
    }

    /// Bodies the fallback redid in this substep: their state is the augmented-Lagrangian
    /// step's, and the fast path's contact impulses do not belong to it.
    pub fn redone(&self) -> &[SoftBodyHandle] {
        self.redone
    }

    /// The impulses \[N·s\] obstacles and pins gave `vertices` (indices into the packed
    /// state) over this substep, into `out`.
    pub(crate) fn impulses(&mut self, vertices: &[u32], out: &mut Vec<Vec3A>) {
        self.fast.environment_impulses(self.state, self.contact, self.h, vertices, out);
    }
}
