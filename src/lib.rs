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
//! The public API is what this page lists: the world and its configuration, bodies and their
//! builders, handles and set, materials, meshes, obstacles, reports and events, the step's
//! hooks, the GPU context, and the feature modules [`io`] (scene files, glTF, OBJ, TetGen, the
//! runner), [`debug`] (pictures) and [`rapier`] (the rapier coupling). How a step works inside
//! is in `ARCHITECTURE.md`; the maths, with the papers it comes from (cited as `[VBD]` etc.), in
//! `docs/algorithms.md`.

#![warn(missing_docs)]
// `!(x > 0.0)` is deliberate throughout: unlike `x <= 0.0` it also rejects NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]
// Index loops over several small fixed-size arrays read better than zipped iterators in the maths.
#![allow(clippy::needless_range_loop)]
// Without `rapier`, the coupling's callers are gone and parts of the runtime it uses look dead;
// the default build, which CI lints with `-D warnings`, sees every caller.
#![cfg_attr(not(feature = "rapier"), allow(dead_code, unused_imports))]

pub(crate) mod body;
pub(crate) mod collision;
#[cfg(feature = "debug-render")]
pub mod debug;
pub(crate) mod error;
#[cfg(feature = "gpu")]
pub(crate) mod gpu;
#[cfg(feature = "serde")]
pub mod io;
pub(crate) mod material;
pub(crate) mod math;
pub(crate) mod mesh;
#[cfg(feature = "rapier")]
pub mod rapier;
pub(crate) mod runtime;
pub(crate) mod solver;
pub(crate) mod state;
#[cfg(test)]
pub(crate) mod test_rng;

pub use body::{
    BodyError, BodySet, BodyShape, ClothBuilder, Keyframe, KinematicPath, Pin, PinMotion, SoftBody, SoftBodyBuilder,
    SoftBodyHandle, SolverChoice,
};
pub use collision::surface_pairs::ContactPair;
pub use collision::{Obstacle, ObstacleError, ObstacleGeometry, ObstacleShape, PosedShape, RigidPose};
pub use error::PliantError;
#[cfg(feature = "gpu")]
pub use gpu::profile::KernelTime;
#[cfg(feature = "gpu")]
pub use gpu::{GpuContext, GpuError, GpuOptions};
pub use material::{ClothMaterial, MaterialError, SolidMaterial, StVK, StableNeoHookean};
pub use mesh::{EmbeddedMesh, Embedding, MeshError, RenderMesh, TetMesh, TetSplit, TriMesh};
pub use runtime::{
    Backend, ConfigError, Energies, FallbackPolicy, FallbackReason, FrameMotion, Intersection, IslandReport,
    PhaseTimes, PliantEvent, StepConfig, StepHooks, StepPath, StepReport, SubstepContext, World,
};
pub use solver::{CoarseSpace, Initialization, Integrator, LocalGlobalSettings, LocalGlobalStats};

// The README's example is compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The types most programs need: `use pliant::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Backend, BodySet, ClothBuilder, ClothMaterial, FallbackPolicy, Initialization, Integrator, Keyframe,
        KinematicPath, Obstacle, Pin, PinMotion, PliantError, PliantEvent, SoftBody, SoftBodyBuilder, SoftBodyHandle,
        SolidMaterial, SolverChoice, StVK, StableNeoHookean, StepConfig, StepPath, StepReport, TetMesh, TetSplit,
        TriMesh, World,
    };
    pub use glam::{Quat, Vec2, Vec3, Vec4};
}
