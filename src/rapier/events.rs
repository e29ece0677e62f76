//! Contact events between soft bodies and rapier colliders, delivered the way rapier delivers
//! its own: through a handler passed to the step ([`SoftEventHandler`], with a channel
//! collector), and only for colliders whose `ActiveEvents` ask for them.

use std::sync::mpsc::Sender;

use glam::Vec3;
use rapier3d::geometry::ColliderHandle;

use crate::body::SoftBodyHandle;

/// A soft body started or stopped touching a collider (for a sensor: entering it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SoftCollisionEvent {
    /// Contact began this frame.
    Started {
        /// The soft body.
        body: SoftBodyHandle,
        /// The collider.
        collider: ColliderHandle,
        /// The collider is a sensor (no forces; the body entered it).
        sensor: bool,
    },
    /// Contact ended this frame.
    Stopped {
        /// The soft body.
        body: SoftBodyHandle,
        /// The collider.
        collider: ColliderHandle,
        /// The collider is a sensor.
        sensor: bool,
        /// It ended because the body or the collider was removed.
        removed: bool,
    },
}

impl SoftCollisionEvent {
    /// The soft body.
    pub fn body(&self) -> SoftBodyHandle {
        match *self {
            Self::Started { body, .. } | Self::Stopped { body, .. } => body,
        }
    }

    /// The collider.
    pub fn collider(&self) -> ColliderHandle {
        match *self {
            Self::Started { collider, .. } | Self::Stopped { collider, .. } => collider,
        }
    }

    /// Whether this is a `Started` event.
    pub fn started(&self) -> bool {
        matches!(self, Self::Started { .. })
    }
}

/// The contact impulse between a soft body and a collider over one frame, sent when its mean
/// force exceeds the collider's `contact_force_event_threshold` (and the collider has
/// `ActiveEvents::CONTACT_FORCE_EVENTS`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoftContactForceEvent {
    /// The soft body.
    pub body: SoftBodyHandle,
    /// The collider.
    pub collider: ColliderHandle,
    /// Impulse the soft body gave the collider over the frame \[N·s\].
    pub total_impulse: Vec3,
    /// Mean force over the frame, `|total_impulse| / dt` \[N\].
    pub total_force_magnitude: f32,
    /// Largest single-vertex impulse of the frame \[N·s\].
    pub max_vertex_impulse: f32,
    /// Soft vertices in contact at the frame's end.
    pub vertices: u32,
}

/// Receives soft-body contact events during a coupled step (rapier's `EventHandler`, for soft
/// bodies).
pub trait SoftEventHandler {
    /// A soft body started or stopped touching a collider.
    fn handle_soft_collision_event(&self, event: SoftCollisionEvent);
    /// The contact force between a soft body and a collider exceeded the collider's threshold.
    fn handle_soft_contact_force_event(&self, dt: f32, event: SoftContactForceEvent);
}

/// Ignores every event.
impl SoftEventHandler for () {
    fn handle_soft_collision_event(&self, _: SoftCollisionEvent) {}
    fn handle_soft_contact_force_event(&self, _: f32, _: SoftContactForceEvent) {}
}

/// Sends events into channels, like rapier's `ChannelEventCollector`.
#[derive(Clone, Debug)]
pub struct SoftChannelEventCollector {
    collision: Sender<SoftCollisionEvent>,
    force: Sender<SoftContactForceEvent>,
}

impl SoftChannelEventCollector {
    /// A collector sending into these channels.
    pub fn new(collision: Sender<SoftCollisionEvent>, force: Sender<SoftContactForceEvent>) -> Self {
        Self { collision, force }
    }
}

impl SoftEventHandler for SoftChannelEventCollector {
    fn handle_soft_collision_event(&self, event: SoftCollisionEvent) {
        // A dropped receiver means nobody listens any more; that is not an error of the step.
        let _ = self.collision.send(event);
    }

    fn handle_soft_contact_force_event(&self, _: f32, event: SoftContactForceEvent) {
        let _ = self.force.send(event);
    }
}
