//! File formats and the scene runner: scene files (serde JSON), TetGen import, glTF import and
//! animated export, per-frame OBJ export, metrics.

pub mod bundled;
mod frame;
#[cfg(feature = "gltf")]
pub mod gltf;
mod metrics;
mod obj;
mod probe;
mod runner;
pub mod scene;
mod scene_build;
mod scene_error;
mod scene_gltf;
mod sweep;
pub mod tetgen;

pub use frame::{ExportBody, contact_points, frame_meshes};
pub use metrics::{FrameMetrics, RunSummary};
pub use obj::{CONTACTS_GROUP, frame_obj, parse_obj_frame};
pub use probe::evaluate as evaluate_probe;
pub use runner::{RunOptions, RunResult, run_scene};
pub use scene::{SCENE_VERSION, Scene};
pub use scene_build::{LoadedScene, ResolvedProbe, SceneBody, load_scene_file, parse_scene};
pub use scene_error::SceneError;
pub use sweep::{SweepVariant, expand_sweep};
