//! A soft body: shared immutable topology and rest data, plus per-instance settings.

use std::sync::Arc;

use glam::Vec3;

use super::Pin;
use crate::material::{ClothMaterial, SolidMaterial};
use crate::mesh::{Coloring, Hinge, TetMesh, TriMesh};

/// The fast path that solves a body's substeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "snake_case"))]
pub enum SolverChoice {
    /// Vertex Block Descent: Gauss–Seidel sweeps, one 3×3 solve per vertex. Cheap per
    /// iteration and contact-rich, but a load crosses the body one element per sweep.
    #[default]
    Vbd,
    /// Sparse-inverse local–global (ADMM): every iteration solves the whole body's linear
    /// part exactly with a prefactored sparse inverse, so stiff, slender and loaded bodies
    /// (beams, fingers, props) converge in a few iterations. The factor is built in the
    /// background when the body appears and whenever its pins, masses, step length or rest
    /// shape change; until then, and in any substep in which something is near the body, the
    /// body takes VBD's sweeps. Solid (tet) bodies only.
    LocalGlobal,
    /// Each substep, local–global when a load would need more sweeps than the substep has to
    /// cross the body (see `docs/algorithms.md` §3.4: a stiff body whose elastic waves cross
    /// many elements per substep, and at least as many elements across as sweeps), VBD
    /// otherwise. Cloth, bodies above 10,000 vertices and bodies in contact take VBD.
    Auto,
}

impl SolverChoice {
    /// The id in the packed state (`solver::local_global::SOLVER_*`).
    pub(crate) fn id(self) -> u32 {
        match self {
            Self::Vbd => 0,
            Self::LocalGlobal => 1,
            Self::Auto => 2,
        }
    }
}

/// Solid (tet) or cloth (triangles + hinges).
#[derive(Clone, Debug)]
pub enum BodyShape {
    /// A volumetric body.
    Solid {
        /// Rest mesh (world coordinates at creation).
        mesh: TetMesh,
        /// Constitutive model.
        material: SolidMaterial,
    },
    /// A cloth.
    Cloth {
        /// Rest mesh (world coordinates at creation).
        mesh: TriMesh,
        /// Membrane and bending parameters.
        material: ClothMaterial,
        /// Bending hinges (interior edges).
        hinges: Vec<Hinge>,
    },
}

/// Immutable per-topology data, shareable between instances (`Arc`).
#[derive(Debug)]
pub struct BodyShared {
    /// Geometry and material.
    pub shape: BodyShape,
    /// Density \[kg/m³\] (cloth: of the fabric; areal density = ρ·thickness).
    pub density: f64,
    /// Lumped vertex masses \[kg\].
    pub masses: Vec<f32>,
    /// Vertex coloring over all elements (tets, or triangles and hinges).
    pub coloring: Coloring,
    /// Outward surface triangles for export, rendering and contact (cloth: all triangles).
    pub surface: Vec<[u32; 3]>,
    /// Unique edges of [`BodyShared::surface`] (lower index first), for edge–edge contact.
    pub surface_edges: Vec<[u32; 2]>,
    /// Mean rest length of the surface edges \[m\]; sets how far contact detection looks.
    pub surface_edge_length: f32,
}

impl BodyShared {
    /// Assembles the shared data, deriving the surface edges and their mean rest length.
    pub(crate) fn new(
        shape: BodyShape,
        density: f64,
        masses: Vec<f32>,
        coloring: Coloring,
        surface: Vec<[u32; 3]>,
    ) -> Self {
        let mut edges: Vec<[u32; 2]> = surface
            .iter()
            .flat_map(|t| [[t[0], t[1]], [t[1], t[2]], [t[2], t[0]]])
            .map(|[a, b]| [a.min(b), a.max(b)])
            .collect();
        edges.sort_unstable();
        edges.dedup();
        let mut shared =
            Self { shape, density, masses, coloring, surface, surface_edges: edges, surface_edge_length: 0.0 };
        let p = shared.rest_positions();
        let total: f64 = shared.surface_edges.iter().map(|e| p[e[0] as usize].distance(p[e[1] as usize]) as f64).sum();
        shared.surface_edge_length = (total / shared.surface_edges.len().max(1) as f64) as f32;
        shared
    }

    /// Rest positions \[m\].
    pub fn rest_positions(&self) -> &[Vec3] {
        match &self.shape {
            BodyShape::Solid { mesh, .. } => mesh.positions(),
            BodyShape::Cloth { mesh, .. } => mesh.positions(),
        }
    }

    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.rest_positions().len()
    }

    /// Number of elements (tets, or triangles + hinges).
    pub fn element_count(&self) -> usize {
        match &self.shape {
            BodyShape::Solid { mesh, .. } => mesh.tet_count(),
            BodyShape::Cloth { mesh, hinges, .. } => mesh.triangles().len() + hinges.len(),
        }
    }

    /// Total mass \[kg\].
    pub fn mass(&self) -> f64 {
        self.masses.iter().map(|&m| m as f64).sum()
    }
}

/// A deformable body in a [`super::BodySet`]. Build one with [`super::SoftBodyBuilder`] or
/// [`super::ClothBuilder`].
#[derive(Clone, Debug)]
pub struct SoftBody {
    pub(crate) name: String,
    pub(crate) shared: Arc<BodyShared>,
    pub(crate) pins: Vec<Pin>,
    pub(crate) initial_velocities: Vec<Vec3>,
    pub(crate) friction: f32,
    pub(crate) damping: f32,
    pub(crate) linear_damping: f32,
    pub(crate) self_collision: bool,
    pub(crate) solver: SolverChoice,
    /// Bumped when pins change so the world re-derives kinematic flags.
    pub(crate) pins_version: u64,
    /// Some vertex of the body was left kinematic when its pins were last applied: a body
    /// without pins and without this needs no pass over its vertices (a pass per substep over a
    /// 175k-vertex body cost the game thread ~0.3 ms a GPU frame).
    pub(crate) kinematic_marked: bool,
}

impl SoftBody {
    /// The body's name (used in errors, events and exports).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Shared topology and rest data.
    pub fn shared(&self) -> &Arc<BodyShared> {
        &self.shared
    }

    /// Pins.
    pub fn pins(&self) -> &[Pin] {
        &self.pins
    }

    /// Adds a pin at run time (e.g. a grasp). Out-of-range vertices are rejected.
    pub fn add_pin(&mut self, pin: Pin) -> Result<usize, super::BodyError> {
        let mut pins = self.pins.clone();
        pins.push(pin);
        super::soft_body_builder::validate_pins(&self.name, &pins, self.shared.vertex_count())?;
        self.pins = pins;
        self.pins_version += 1;
        Ok(self.pins.len() - 1)
    }

    /// Puts `pin` in place of pin `index` (a released attachment's slot), validated like
    /// [`SoftBody::add_pin`].
    pub(crate) fn replace_pin(&mut self, index: usize, pin: Pin) -> Result<(), super::BodyError> {
        let mut pins = self.pins.clone();
        pins[index] = pin;
        super::soft_body_builder::validate_pins(&self.name, &pins, self.shared.vertex_count())?;
        self.pins = pins;
        self.pins_version += 1;
        Ok(())
    }

    /// Removes pin `index` (e.g. a release); its vertices keep their velocity.
    pub fn remove_pin(&mut self, index: usize) -> Option<Pin> {
        (index < self.pins.len()).then(|| {
            self.pins_version += 1;
            self.pins.remove(index)
        })
    }

    /// Coulomb friction coefficient against obstacles (combined with the obstacle's by mean).
    pub fn friction(&self) -> f32 {
        self.friction
    }

    /// Rayleigh damping coefficient `k_d` \[s\].
    pub fn damping(&self) -> f32 {
        self.damping
    }

    /// Linear damping α \[1/s\] (force `−α m v` per vertex).
    pub fn linear_damping(&self) -> f32 {
        self.linear_damping
    }

    /// Whether the body's surface collides with itself.
    pub fn self_collision(&self) -> bool {
        self.self_collision
    }

    /// The fast path the body asks for.
    pub fn solver(&self) -> SolverChoice {
        self.solver
    }
}
