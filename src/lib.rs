//! # Pliant
//!
//! Real-time deformable bodies for games, VR and soft-robot teleoperation: tetrahedral solids
//! and cloth simulated with Vertex Block Descent at a fixed cost per step, against analytic
//! obstacles, with typed errors on bad input and no NaN ever handed back.
//!
//! ```
//! use pliant::prelude::*;
//! let mut world = World::new(StepConfig::default()).unwrap();
//! let mesh = TetMesh::box_mesh(Vec3::splat(0.2), [4, 4, 4], TetSplit::Six).unwrap();
//! world.bodies.insert(
//!     SoftBodyBuilder::tetrahedral(mesh)
//!         .material(StableNeoHookean::from_young_poisson(1.0e5, 0.3)) // [Pa], [-]
//!         .density(1000.0)                                            // [kg/m³]
//!         .translation(Vec3::new(0.0, 0.5, 0.0))
//!         .build()
//!         .unwrap(),
//! );
//! world.obstacles.push(Obstacle::ground(0.0, 0.5));
//! for _ in 0..10 {
//!     let report = world.step();
//!     assert!(!report.nan_detected);
//! }
//! ```
//!
//! Papers behind the maths are cited as `[VBD]` etc.; see `ALGORITHMS.md` in the design docs.

#![warn(missing_docs)]
// `!(x > 0.0)` is deliberate throughout: unlike `x <= 0.0` it also rejects NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]
// Index loops over several small fixed-size arrays read better than zipped iterators in the maths.
#![allow(clippy::needless_range_loop)]
// Without `rapier`, the coupling's callers are gone and parts of the runtime it uses look dead;
// the default build, which CI lints with `-D warnings`, sees every caller.
#![cfg_attr(not(feature = "rapier"), allow(dead_code, unused_imports))]

pub mod body;
pub mod collision;
#[cfg(feature = "debug-render")]
pub mod debug;
pub mod error;
#[cfg(feature = "gpu")]
pub mod gpu;
#[cfg(feature = "serde")]
pub mod io;
pub mod material;
pub mod math;
pub mod mesh;
#[cfg(feature = "rapier")]
pub mod rapier;
pub mod runtime;
pub mod solver;
pub mod state;
#[cfg(test)]
pub(crate) mod test_rng;

pub use error::PliantError;

// The README's example is compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The types most programs need.
pub mod prelude {
    pub use crate::body::{
        BodySet, ClothBuilder, Keyframe, KinematicPath, Pin, PinMotion, SoftBody, SoftBodyBuilder, SoftBodyHandle,
    };
    pub use crate::collision::Obstacle;
    pub use crate::error::PliantError;
    pub use crate::material::{ClothMaterial, SolidMaterial, StVK, StableNeoHookean};
    pub use crate::mesh::{TetMesh, TetSplit, TriMesh};
    pub use crate::runtime::{PliantEvent, StepConfig, StepReport, World};
    pub use crate::solver::{Initialization, Integrator};
    pub use glam::{Quat, Vec2, Vec3, Vec4};
}
