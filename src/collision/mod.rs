//! Collision: obstacles (analytic, and moving shapes such as rapier colliders) and the contact/friction model shared by every contact kind.
//! Body–body and self contact (vertex–triangle, edge–edge, CCD, broadphase) plug in here by
//! producing [`ContactPoint`]s for the same [`add_contact`].

pub mod bvh;
pub mod ccd;
mod closest;
mod contact;

pub mod intersection;
mod obstacle;
mod posed;
pub(crate) mod self_clearance;
pub mod surface_check;
pub mod surface_pairs;
pub(crate) mod swept;

pub use contact::{
    ContactModel, ContactParams, ContactPoint, ContactStiffness, add_contact, friction_f0, friction_f1_over_u,
    friction_f1_prime, layer_energy, layer_force_stiffness,
};
pub use obstacle::{Obstacle, ObstacleError, ObstacleShape, limit_step};
pub(crate) use obstacle::{ball_signed_distance, box_signed_distance};
#[cfg(test)]
pub(crate) use posed::test_geometry;
pub use posed::{ObstacleGeometry, PosedShape, RigidPose};
