//! Scene files: versioned JSON describing bodies (from generators or mesh files), materials,
//! pins and kinematic paths, obstacles, time step, frames, solver settings and probes.
//! Unknown fields are errors; every error names the field (`bodies[0].generator.cells`).
//! The schema is documented in `docs/scene-format.md`.

use std::collections::BTreeMap;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::body::SolverChoice;
use crate::mesh::TetSplit;
use crate::solver::{CoarseSpace, Initialization, Integrator, LocalGlobalSettings};

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
    /// Gravity \[m/s²\].
    #[serde(default = "default_gravity")]
    pub gravity: [f32; 3],
    /// Frame time step \[s\].
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
    /// Rigid correction of the initial guess, coupled through contact (default `true`).
    /// `translation_correction` is accepted as its former name.
    #[serde(default = "default_true", alias = "translation_correction")]
    pub rigid_correction: bool,
    /// What that correction moves each body by: `rigid` (default) or `affine` (volumetric
    /// bodies also stretch and shear as a whole).
    #[serde(default)]
    pub coarse_space: CoarseSpace,
    /// `auto` (default: when the safety check rejects the fast path), `always` or `never`.
    #[serde(default)]
    pub fallback: crate::runtime::FallbackPolicy,
    /// Frame budget \[ms\]; the planner then picks the sweep count (`iterations` is the first
    /// step's). `null` (default) pins the count.
    #[serde(default)]
    pub budget_ms: Option<f64>,
    /// The fast path of bodies that do not name one: `vbd` (default) or `local_global`.
    #[serde(default)]
    pub fast_path: SolverChoice,
    /// The local–global path's settings.
    #[serde(default)]
    pub local_global: LocalGlobalSpec,
}

/// The local–global fast path's settings (see `LocalGlobalSettings`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalGlobalSpec {
    /// Iterations per substep (default 10).
    #[serde(default = "default_local_global_iterations")]
    pub iterations: u32,
    /// Build each body's factor before its first substep instead of in the background
    /// (default `false`): for replays whose result must not depend on the build's speed.
    #[serde(default)]
    pub wait_for_factor: bool,
}

fn default_local_global_iterations() -> u32 {
    LocalGlobalSettings::default().iterations
}

impl Default for LocalGlobalSpec {
    fn default() -> Self {
        let d = LocalGlobalSettings::default();
        Self { iterations: d.iterations, wait_for_factor: d.wait_for_factor }
    }
}

fn default_true() -> bool {
    true
}

impl Default for SolverSpec {
    fn default() -> Self {
        Self {
            fallback: crate::runtime::FallbackPolicy::Auto,
            budget_ms: None,
            iterations: default_iterations(),
            substeps: 1,
            chebyshev_rho: default_rho(),
            integrator: Integrator::default(),
            initialization: Initialization::default(),
            threads: 0,
            contact: ContactSpec::default(),
            rigid_correction: true,
            coarse_space: CoarseSpace::Rigid,
            fast_path: SolverChoice::Vbd,
            local_global: LocalGlobalSpec::default(),
        }
    }
}

/// Contact settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContactSpec {
    /// Penalty stiffness \[N/m\]; omitted = automatic.
    #[serde(default)]
    pub stiffness: Option<f32>,
    /// Contact offset δ \[m\].
    #[serde(default = "default_offset")]
    pub offset: f32,
    /// Static friction threshold ε_v \[m/s\].
    #[serde(default = "default_eps_v")]
    pub friction_eps_v: f32,
    /// Body–body and self contact between surfaces.
    #[serde(default = "default_true")]
    pub surface: bool,
    /// Sweeps between contact detections (0 = once per substep).
    #[serde(default = "default_detection_interval")]
    pub detection_interval: u32,
    /// A contact layer that stiffens as it is pressed (`StepConfig::contact_stiffening`).
    #[serde(default)]
    pub stiffening: bool,
}

fn default_detection_interval() -> u32 {
    crate::runtime::StepConfig::default().contact_detection_interval
}

impl Default for ContactSpec {
    fn default() -> Self {
        Self {
            stiffness: None,
            offset: default_offset(),
            friction_eps_v: default_eps_v(),
            surface: true,
            detection_interval: default_detection_interval(),
            stiffening: false,
        }
    }
}

/// Parameters of a solid material.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolidSpec {
    /// Young's modulus \[Pa\].
    #[serde(rename = "E")]
    pub young_modulus: f64,
    /// Poisson's ratio.
    pub nu: f64,
    /// Density \[kg/m³\].
    pub rho: f64,
    /// Rayleigh damping k_d \[s\].
    #[serde(default = "default_damping")]
    pub damping: f32,
    /// Linear damping α \[1/s\].
    #[serde(default)]
    pub linear_damping: f32,
}

/// Parameters of a cloth material.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClothSpec {
    /// Young's modulus \[Pa\].
    #[serde(rename = "E")]
    pub young_modulus: f64,
    /// Poisson's ratio.
    pub nu: f64,
    /// Density \[kg/m³\] (areal density = ρ × thickness).
    pub rho: f64,
    /// Thickness \[m\].
    pub thickness: f64,
    /// Bending stiffness D \[N·m\]; omitted = plate value.
    #[serde(default)]
    pub bending_stiffness: Option<f64>,
    /// Rayleigh damping k_d \[s\].
    #[serde(default = "default_damping")]
    pub damping: f32,
    /// Linear damping α \[1/s\].
    #[serde(default)]
    pub linear_damping: f32,
}

/// A material; `model` selects the kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum MaterialSpec {
    /// Stable neo-Hookean solid.
    StableNeoHookean(SolidSpec),
    /// Saint Venant–Kirchhoff solid.
    Stvk(SolidSpec),
    /// Cloth (StVK membrane + dihedral bending).
    Cloth(ClothSpec),
}

impl<'de> Deserialize<'de> for MaterialSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        tagged(d, "model", &["stable_neo_hookean", "stvk", "cloth"], |tag, v| match tag {
            "stable_neo_hookean" => payload(v).map(Self::StableNeoHookean),
            "stvk" => payload(v).map(Self::Stvk),
            _ => payload(v).map(Self::Cloth),
        })
    }
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
    /// Translation \[m\], applied after the rotation.
    #[serde(default)]
    pub translation: [f32; 3],
    /// Rotation as XYZ Euler angles \[degrees\].
    #[serde(default)]
    pub rotation_deg: [f32; 3],
    /// Initial velocity \[m/s\].
    #[serde(default)]
    pub velocity: [f32; 3],
    /// Initial angular velocity about the body's centre of mass \[rad/s\].
    #[serde(default)]
    pub angular_velocity: [f32; 3],
    /// Friction coefficient against obstacles and other bodies (pairs use the mean).
    #[serde(default = "default_friction")]
    pub friction: f32,
    /// Self contact of the body's surface.
    #[serde(default = "default_true")]
    pub self_collision: bool,
    /// The body's fast path, `vbd` or `local_global` (solid bodies); omitted: the solver's
    /// `fast_path`.
    #[serde(default)]
    pub solver: Option<SolverChoice>,
    /// Pins.
    #[serde(default)]
    pub pins: Vec<PinSpec>,
}

/// A box or beam generator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxSpec {
    /// Size \[m\] (beam: length, height, width).
    pub size: [f32; 3],
    /// Cells along x, y, z.
    pub cells: [u32; 3],
    /// `five` or `six` (default) tets per cell.
    #[serde(default)]
    pub split: TetSplit,
}

/// A sphere generator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SphereSpec {
    /// Radius \[m\].
    pub radius: f32,
    /// Cells across.
    pub cells: u32,
    /// Tets per cell.
    #[serde(default)]
    pub split: TetSplit,
}

/// An ellipsoid generator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EllipsoidSpec {
    /// Semi-axes \[m\].
    pub radii: [f32; 3],
    /// Cells across.
    pub cells: u32,
    /// Tets per cell.
    #[serde(default)]
    pub split: TetSplit,
}

/// A cloth grid generator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClothGridSpec {
    /// Size along x and z \[m\].
    pub size: [f32; 2],
    /// Quads along x and z.
    pub cells: [u32; 2],
}

/// Procedural meshes; `type` selects the kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GeneratorSpec {
    /// Box centred at the origin.
    Box(BoxSpec),
    /// Beam along +x from x = 0, centred on the x axis.
    Beam(BoxSpec),
    /// Solid sphere centred at the origin.
    Sphere(SphereSpec),
    /// Solid ellipsoid centred at the origin.
    Ellipsoid(EllipsoidSpec),
    /// Cloth in the y = 0 plane, centred.
    ClothGrid(ClothGridSpec),
}

impl<'de> Deserialize<'de> for GeneratorSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        tagged(d, "type", &["box", "beam", "sphere", "ellipsoid", "cloth_grid"], |tag, v| match tag {
            "box" => payload(v).map(Self::Box),
            "beam" => payload(v).map(Self::Beam),
            "sphere" => payload(v).map(Self::Sphere),
            "ellipsoid" => payload(v).map(Self::Ellipsoid),
            _ => payload(v).map(Self::ClothGrid),
        })
    }
}

/// A TetGen mesh file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TetgenSpec {
    /// Path to the `.node` file (the `.ele` sits beside it), relative to the scene file.
    pub path: String,
}

/// A glTF render mesh (`.gltf` or `.glb`), simulated through a tet mesh it is embedded in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GltfSpec {
    /// Path to the file, relative to the scene file.
    pub path: String,
    /// Name of the node whose meshes to take, its children's included (`#N`: the node with
    /// index N); default: every mesh of the default scene.
    #[serde(default)]
    pub node: Option<String>,
    /// Uniform scale from the file's units to metres, applied in the file's frame before the
    /// body's placement (0.01 for an asset in centimetres; default 1).
    #[serde(default = "unit_scale")]
    pub scale: f32,
    /// Voxel edge \[m\] of the generated tet mesh (exclusive with `resolution`).
    #[serde(default)]
    pub cell: Option<f32>,
    /// Voxels across the mesh's longest side (default 10; exclusive with `cell`).
    #[serde(default)]
    pub resolution: Option<u32>,
    /// `five`, `six` or `six_mirrored` (default) tets per voxel.
    #[serde(default = "default_voxel_split")]
    pub split: TetSplit,
    /// A TetGen `.node` file (relative to the scene file) to embed the render mesh in, instead
    /// of generating voxel tets.
    #[serde(default)]
    pub tetgen: Option<String>,
}

fn unit_scale() -> f32 {
    1.0
}

fn default_voxel_split() -> TetSplit {
    // No preferred diagonal: a voxel body settles straight (see `TetSplit::SixMirrored`).
    TetSplit::SixMirrored
}

/// A mesh file; `format` selects the kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "format", rename_all = "snake_case")]
pub enum MeshFileSpec {
    /// TetGen `.node` + `.ele` pair.
    Tetgen(TetgenSpec),
    /// A glTF render mesh, tetrahedralised on load and embedded.
    Gltf(GltfSpec),
}

impl<'de> Deserialize<'de> for MeshFileSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        tagged(d, "format", &["tetgen", "gltf"], |tag, v| match tag {
            "tetgen" => payload(v).map(Self::Tetgen),
            _ => payload(v).map(Self::Gltf),
        })
    }
}

/// Which vertices of a body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Selection {
    /// A face of the body's rest bounding box: `x-`, `x+`, `y-`, `y+`, `z-`, `z+`.
    Face(String),
    /// Inside an axis-aligned box (rest positions, world frame).
    Aabb {
        /// Minimum corner \[m\].
        min: [f32; 3],
        /// Maximum corner \[m\].
        max: [f32; 3],
    },
    /// Within `tolerance` of the plane `axis = value` (rest positions): "x ≈ L".
    Plane {
        /// `x`, `y` or `z`.
        axis: String,
        /// Coordinate \[m\].
        value: f32,
        /// Half-width \[m\].
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
    /// Release time \[s\].
    #[serde(default)]
    pub release_at: Option<f64>,
}

fn default_target() -> String {
    "static".into()
}

/// A half-space obstacle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlaneSpec {
    /// Outward normal (normalised on load).
    pub normal: [f32; 3],
    /// Plane offset along the normal \[m\]: the plane is `n·x = offset`.
    #[serde(default)]
    pub offset: f32,
    /// Friction coefficient.
    #[serde(default = "default_friction")]
    pub friction: f32,
}

/// A solid sphere obstacle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SphereObstacleSpec {
    /// Centre \[m\].
    pub center: [f32; 3],
    /// Radius \[m\].
    pub radius: f32,
    /// Friction coefficient.
    #[serde(default = "default_friction")]
    pub friction: f32,
}

/// A solid box obstacle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxObstacleSpec {
    /// Centre \[m\].
    pub center: [f32; 3],
    /// Half extents \[m\].
    pub half_extents: [f32; 3],
    /// XYZ Euler angles \[degrees\].
    #[serde(default)]
    pub rotation_deg: [f32; 3],
    /// Friction coefficient.
    #[serde(default = "default_friction")]
    pub friction: f32,
}

/// An analytic obstacle; `type` selects the kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ObstacleSpec {
    /// Half-space below a plane.
    Plane(PlaneSpec),
    /// Solid sphere.
    Sphere(SphereObstacleSpec),
    /// Solid box.
    Box(BoxObstacleSpec),
}

impl<'de> Deserialize<'de> for ObstacleSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        tagged(d, "type", &["plane", "sphere", "box"], |tag, v| match tag {
            "plane" => payload(v).map(Self::Plane),
            "sphere" => payload(v).map(Self::Sphere),
            _ => payload(v).map(Self::Box),
        })
    }
}

/// A rigid path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    /// Keyframes in increasing time.
    pub keyframes: Vec<KeyframeSpec>,
    /// Rotation centre \[m\]; omitted = centroid of the pinned vertices.
    #[serde(default)]
    pub pivot: Option<[f32; 3]>,
}

/// One keyframe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyframeSpec {
    /// Time \[s\].
    pub t: f64,
    /// Translation \[m\].
    #[serde(default)]
    pub translation: [f32; 3],
    /// XYZ Euler angles \[degrees\].
    #[serde(default)]
    pub rotation_deg: [f32; 3],
}

/// What a probe measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    /// Mean position of the selection \[m\] (3 values).
    MeanPosition,
    /// Mean displacement from the rest position \[m\] (3 values).
    MeanDisplacement,
    /// Mass-weighted centre of the selection \[m\] (3 values).
    Com,
    /// Largest speed in the selection \[m/s\] (1 value).
    MaxSpeed,
    /// Kinetic energy of the selection \[J\] (1 value).
    KineticEnergy,
    /// Bounding box of the selection `[min x, min y, min z, max x, max y, max z]` \[m\].
    Bbox,
    /// Angular momentum of the selection about its centre of mass \[kg·m²/s\] (3 values).
    AngularMomentum,
    /// Angular velocity of the selection \[rad/s\] (3 values): `I⁻¹ L`, with `I` the inertia
    /// tensor and `L` the angular momentum of the lumped masses about their centre of mass (the
    /// rigid part of the motion; 0 for a selection without inertia).
    AngularVelocity,
    /// How deep the body's surface reaches into the scene's obstacles \[m\] (1 value, ≥ 0): the
    /// largest depth of any point of a surface triangle in an obstacle of the scene file: a box's
    /// or a sphere's corner, edge or cap between a triangle's vertices is always found (a box's
    /// corner inside a triangle at the depth of a point found there, a lower bound), and over
    /// points sampled inside every triangle (a 28-point barycentric grid, vertices and edges
    /// included) for every obstacle. Catches an obstacle's edge or corner poking through
    /// between vertices, which no vertex probe sees.
    /// The selection is ignored (the whole surface is sampled).
    ObstacleDepth,
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

/// Separates the inner field path from the message in errors of tagged payloads, so
/// `parse_scene` can report `materials.m.E` rather than `materials.m`.
pub(crate) const PATH_MARK: char = '\u{1f}';

/// Deserialises an internally tagged enum by hand: serde's own buffering loses the field path
/// inside the variant, which the scene errors must name.
fn tagged<'de, D: Deserializer<'de>, T>(
    d: D,
    tag: &'static str,
    variants: &'static [&'static str],
    build: impl FnOnce(&str, Value) -> Result<T, String>,
) -> Result<T, D::Error> {
    let mut v = Value::deserialize(d)?;
    let obj = v.as_object_mut().ok_or_else(|| D::Error::custom("expected an object"))?;
    let name = match obj.remove(tag) {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(D::Error::custom(format!("{PATH_MARK}{tag}{PATH_MARK}expected a string, found {other}")));
        }
        None => return Err(D::Error::missing_field(tag)),
    };
    if !variants.contains(&name.as_str()) {
        return Err(D::Error::custom(format!(
            "{PATH_MARK}{tag}{PATH_MARK}unknown {tag} `{name}`, expected one of {variants:?}"
        )));
    }
    build(&name, v).map_err(D::Error::custom)
}

/// Deserialises a variant's payload, keeping the inner path for the error.
fn payload<T: DeserializeOwned>(v: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        format!("{PATH_MARK}{path}{PATH_MARK}{}", e.into_inner())
    })
}
