//! Scene files: versioned JSON describing bodies (from generators or mesh files), materials,
//! pins and kinematic paths, obstacles, time step, frames, solver settings and probes.
//! Unknown fields are errors; every error names the field (`bodies[0].generator.cells`).
//! The schema is documented in `docs/scene-format.md`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::mesh::TetSplit;
use crate::solver::{Initialization, Integrator};

/// The scene-file version this build reads.
pub const SCENE_VERSION: u32 = 1;

fn default_gravity() -> [f32; 3] {
    [0.0, -9.81, 0.0]
}
fn default_dt() -> f32 {
    1.0 / 60.0
}
fn default_one() -> u32 {
    1
}
fn default_iterations() -> u32 {
    20
}
fn default_rho() -> Option<f32> {
    Some(0.9)
}
fn default_friction() -> f32 {
    0.5
}
fn default_damping() -> f32 {
    1e-6
}
fn default_offset() -> f32 {
    1e-3
}
fn default_eps_v() -> f32 {
    1e-4
}

/// A whole scene.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scene {
    /// Must equal [`SCENE_VERSION`].
    pub version: u32,
    /// Scene name (used for output file names and reports).
    pub name: String,
    /// What the scene shows and what it is checked against.
    #[serde(default)]
    pub description: String,
    /// Gravity [m/s²].
    #[serde(default = "default_gravity")]
    pub gravity: [f32; 3],
    /// Frame time step [s].
    #[serde(default = "default_dt")]
    pub dt: f32,
    /// Frames to run.
    pub frames: u32,
    /// Solver settings.
    #[serde(default)]
    pub solver: SolverSpec,
    /// Named materials.
    pub materials: BTreeMap<String, MaterialSpec>,
    /// Bodies.
    pub bodies: Vec<BodySpec>,
    /// Static analytic obstacles.
    #[serde(default)]
    pub obstacles: Vec<ObstacleSpec>,
    /// Named rigid paths for pins.
    #[serde(default)]
    pub kinematic_paths: BTreeMap<String, PathSpec>,
    /// Quantities recorded every frame.
    #[serde(default)]
    pub probes: Vec<ProbeSpec>,
    /// Output settings.
    #[serde(default)]
    pub output: OutputSpec,
    /// Parameter sweep: field path → values; the scene runs once per combination (cartesian
    /// product), e.g. `{"materials.m.E": [1e4, 1e5], "materials.m.nu": [0.3, 0.49]}`.
    /// Expanded by [`super::expand_sweep`] before the variants are built.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sweep: BTreeMap<String, Vec<serde_json::Value>>,
}

/// Solver settings (see `StepConfig` for meaning and defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolverSpec {
    /// VBD sweeps per substep.
    #[serde(default = "default_iterations")]
    pub iterations: u32,
    /// Substeps per frame.
    #[serde(default = "default_one")]
    pub substeps: u32,
    /// Chebyshev ρ, or `null` to disable.
    #[serde(default = "default_rho")]
    pub chebyshev_rho: Option<f32>,
    /// `newmark` (default) or `backward_euler`.
    #[serde(default)]
    pub integrator: Integrator,
    /// `adaptive` (default), `inertia`, `inertia_and_gravity` or `previous`.
    #[serde(default)]
    pub initialization: Initialization,
    /// Worker threads (0 = all cores).
    #[serde(default)]
    pub threads: usize,
    /// Contact settings.
    #[serde(default)]
    pub contact: ContactSpec,
    /// Per-body rigid-translation correction (default `true`).
    #[serde(default = "default_true")]
    pub translation_correction: bool,
}

fn default_true() -> bool {
    true
}

impl Default for SolverSpec {
    fn default() -> Self {
        Self {
            iterations: default_iterations(),
            substeps: 1,
            chebyshev_rho: default_rho(),
            integrator: Integrator::default(),
            initialization: Initialization::default(),
            threads: 0,
            contact: ContactSpec::default(),
            translation_correction: true,
        }
    }
}

/// Contact settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContactSpec {
    /// Penalty stiffness [N/m]; omitted = automatic.
    #[serde(default)]
    pub stiffness: Option<f32>,
    /// Contact offset δ [m].
    #[serde(default = "default_offset")]
    pub offset: f32,
    /// Static friction threshold ε_v [m/s].
    #[serde(default = "default_eps_v")]
    pub friction_eps_v: f32,
}

impl Default for ContactSpec {
    fn default() -> Self {
        Self { stiffness: None, offset: default_offset(), friction_eps_v: default_eps_v() }
    }
}

/// A material; `model` selects the kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum MaterialSpec {
    /// Stable neo-Hookean solid.
    StableNeoHookean {
        /// Young's modulus [Pa].
        #[serde(rename = "E")]
        young_modulus: f64,
        /// Poisson's ratio.
        nu: f64,
        /// Density [kg/m³].
        rho: f64,
        /// Rayleigh damping k_d [s].
        #[serde(default = "default_damping")]
        damping: f32,
        /// Linear damping α [1/s].
        #[serde(default)]
        linear_damping: f32,
    },
    /// Saint Venant–Kirchhoff solid.
    Stvk {
        /// Young's modulus [Pa].
        #[serde(rename = "E")]
        young_modulus: f64,
        /// Poisson's ratio.
        nu: f64,
        /// Density [kg/m³].
        rho: f64,
        /// Rayleigh damping k_d [s].
        #[serde(default = "default_damping")]
        damping: f32,
        /// Linear damping α [1/s].
        #[serde(default)]
        linear_damping: f32,
    },
    /// Cloth (StVK membrane + dihedral bending).
    Cloth {
        /// Young's modulus [Pa].
        #[serde(rename = "E")]
        young_modulus: f64,
        /// Poisson's ratio.
        nu: f64,
        /// Density [kg/m³] (areal density = ρ × thickness).
        rho: f64,
        /// Thickness [m].
        thickness: f64,
        /// Bending stiffness D [N·m]; omitted = plate value.
        #[serde(default)]
        bending_stiffness: Option<f64>,
        /// Rayleigh damping k_d [s].
        #[serde(default = "default_damping")]
        damping: f32,
        /// Linear damping α [1/s].
        #[serde(default)]
        linear_damping: f32,
    },
}

/// A body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodySpec {
    /// Unique name.
    pub name: String,
    /// Key into `materials`.
    pub material: String,
    /// Procedural mesh (exactly one of `generator` and `mesh`).
    #[serde(default)]
    pub generator: Option<GeneratorSpec>,
    /// Mesh file.
    #[serde(default)]
    pub mesh: Option<MeshFileSpec>,
    /// Translation [m], applied after the rotation.
    #[serde(default)]
    pub translation: [f32; 3],
    /// Rotation as XYZ Euler angles [degrees].
    #[serde(default)]
    pub rotation_deg: [f32; 3],
    /// Initial velocity [m/s].
    #[serde(default)]
    pub velocity: [f32; 3],
    /// Friction coefficient against obstacles.
    #[serde(default = "default_friction")]
    pub friction: f32,
    /// Pins.
    #[serde(default)]
    pub pins: Vec<PinSpec>,
}

/// Procedural meshes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum GeneratorSpec {
    /// Box centred at the origin.
    Box {
        /// Size [m].
        size: [f32; 3],
        /// Cells along x, y, z.
        cells: [u32; 3],
        /// `five` or `six` (default) tets per cell.
        #[serde(default)]
        split: TetSplit,
    },
    /// Beam along +x from x = 0, centred on the x axis.
    Beam {
        /// Length, height, width [m].
        size: [f32; 3],
        /// Cells along x, y, z.
        cells: [u32; 3],
        /// Tets per cell.
        #[serde(default)]
        split: TetSplit,
    },
    /// Solid sphere centred at the origin.
    Sphere {
        /// Radius [m].
        radius: f32,
        /// Cells across.
        cells: u32,
        /// Tets per cell.
        #[serde(default)]
        split: TetSplit,
    },
    /// Solid ellipsoid centred at the origin.
    Ellipsoid {
        /// Semi-axes [m].
        radii: [f32; 3],
        /// Cells across.
        cells: u32,
        /// Tets per cell.
        #[serde(default)]
        split: TetSplit,
    },
    /// Cloth in the y = 0 plane, centred.
    ClothGrid {
        /// Size along x and z [m].
        size: [f32; 2],
        /// Quads along x and z.
        cells: [u32; 2],
    },
}

/// A mesh file, relative to the scene file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "format", rename_all = "snake_case", deny_unknown_fields)]
pub enum MeshFileSpec {
    /// TetGen `.node` + `.ele` pair, given by the `.node` path (the `.ele` sits beside it).
    Tetgen {
        /// Path to the `.node` file.
        path: String,
    },
}

/// Which vertices of a body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Selection {
    /// A face of the body's rest bounding box: `x-`, `x+`, `y-`, `y+`, `z-`, `z+`.
    Face(String),
    /// Inside an axis-aligned box (rest positions, world frame).
    Aabb {
        /// Minimum corner [m].
        min: [f32; 3],
        /// Maximum corner [m].
        max: [f32; 3],
    },
    /// Within `tolerance` of the plane `axis = value` (rest positions): "x ≈ L".
    Plane {
        /// `x`, `y` or `z`.
        axis: String,
        /// Coordinate [m].
        value: f32,
        /// Half-width [m].
        tolerance: f32,
    },
    /// Explicit vertex indices.
    Indices(Vec<u32>),
    /// Every vertex.
    All,
}

/// A pin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinSpec {
    /// Pinned vertices.
    pub select: Selection,
    /// `"static"` or the name of a kinematic path.
    #[serde(default = "default_target")]
    pub target: String,
    /// Release time [s].
    #[serde(default)]
    pub release_at: Option<f64>,
}

fn default_target() -> String {
    "static".into()
}

/// An analytic obstacle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ObstacleSpec {
    /// Half-space below a plane.
    Plane {
        /// Outward normal (normalised on load).
        normal: [f32; 3],
        /// Plane offset along the normal [m]: the plane is `n·x = offset`.
        #[serde(default)]
        offset: f32,
        /// Friction coefficient.
        #[serde(default = "default_friction")]
        friction: f32,
    },
    /// Solid sphere.
    Sphere {
        /// Centre [m].
        center: [f32; 3],
        /// Radius [m].
        radius: f32,
        /// Friction coefficient.
        #[serde(default = "default_friction")]
        friction: f32,
    },
    /// Solid box.
    Box {
        /// Centre [m].
        center: [f32; 3],
        /// Half extents [m].
        half_extents: [f32; 3],
        /// XYZ Euler angles [degrees].
        #[serde(default)]
        rotation_deg: [f32; 3],
        /// Friction coefficient.
        #[serde(default = "default_friction")]
        friction: f32,
    },
}

/// A rigid path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    /// Keyframes in increasing time.
    pub keyframes: Vec<KeyframeSpec>,
    /// Rotation centre [m]; omitted = centroid of the pinned vertices.
    #[serde(default)]
    pub pivot: Option<[f32; 3]>,
}

/// One keyframe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyframeSpec {
    /// Time [s].
    pub t: f64,
    /// Translation [m].
    #[serde(default)]
    pub translation: [f32; 3],
    /// XYZ Euler angles [degrees].
    #[serde(default)]
    pub rotation_deg: [f32; 3],
}

/// What a probe measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    /// Mean position of the selection [m] (3 values).
    MeanPosition,
    /// Mean displacement from the rest position [m] (3 values).
    MeanDisplacement,
    /// Mass-weighted centre of the selection [m] (3 values).
    Com,
    /// Largest speed in the selection [m/s] (1 value).
    MaxSpeed,
    /// Kinetic energy of the selection [J] (1 value).
    KineticEnergy,
    /// Bounding box of the selection `[min x, min y, min z, max x, max y, max z]` [m].
    Bbox,
}

/// A probe: a quantity over selected vertices of one body, recorded every frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeSpec {
    /// Name in `metrics.json`.
    pub name: String,
    /// Quantity.
    pub kind: ProbeKind,
    /// Body name.
    pub body: String,
    /// Vertices (default: all).
    #[serde(default = "default_select")]
    pub select: Selection,
}

fn default_select() -> Selection {
    Selection::All
}

/// Output settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Write an OBJ every this many frames when exporting (0 = every frame).
    #[serde(default)]
    pub obj_every: u32,
}
