//! Builders for soft bodies (rapier style: required data first, setters by value, `build()`
//! validates and returns a typed error naming the body).

use std::sync::Arc;

use glam::{Quat, Vec3};

use super::{BodyError, BodyShape, BodyShared, Pin, PinMotion, SoftBody, SolverChoice};
use crate::material::{ClothMaterial, SolidMaterial, StableNeoHookean};
use crate::mesh::{TetMesh, TriMesh, greedy_coloring, tet_volume, triangle_area, vertex_graph};

/// Settings shared by both builders.
#[derive(Clone, Debug)]
struct Common {
    name: String,
    density: f64,
    damping: f32,
    linear_damping: f32,
    friction: f32,
    translation: Vec3,
    rotation: Quat,
    velocity: Vec3,
    angular_velocity: Vec3,
    pins: Vec<Pin>,
    self_collision: bool,
    solver: SolverChoice,
}

impl Common {
    fn new(name: &str, density: f64) -> Self {
        Self {
            name: name.to_owned(),
            density,
            damping: 1e-6,
            linear_damping: 0.0,
            friction: 0.5,
            translation: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
            pins: Vec::new(),
            self_collision: true,
            solver: SolverChoice::Vbd,
        }
    }

    fn validate(&self, vertex_count: usize) -> Result<(), BodyError> {
        let param = |field: &'static str, value: String, reason: &'static str| BodyError::Parameter {
            body: self.name.clone(),
            field,
            value,
            reason,
        };
        if !(self.density.is_finite() && self.density > 0.0) {
            return Err(param("density", self.density.to_string(), "must be finite and > 0 kg/m³"));
        }
        if !(self.damping.is_finite() && self.damping >= 0.0) {
            return Err(param("damping", self.damping.to_string(), "must be finite and ≥ 0 s"));
        }
        if !(self.linear_damping.is_finite() && self.linear_damping >= 0.0) {
            return Err(param("linear_damping", self.linear_damping.to_string(), "must be finite and ≥ 0 1/s"));
        }
        if !(self.friction.is_finite() && self.friction >= 0.0) {
            return Err(param("friction", self.friction.to_string(), "must be finite and ≥ 0"));
        }
        if !self.velocity.is_finite() {
            return Err(param("velocity", format!("{}", self.velocity), "must be finite"));
        }
        if !self.angular_velocity.is_finite() {
            return Err(param("angular_velocity", format!("{}", self.angular_velocity), "must be finite"));
        }
        if !(self.translation.is_finite() && self.rotation.is_finite()) {
            return Err(param("translation", format!("{} / {}", self.translation, self.rotation), "must be finite"));
        }
        validate_pins(&self.name, &self.pins, vertex_count)
    }

    fn finish(self, shared: BodyShared) -> SoftBody {
        let initial_velocities = self.initial_velocities(&shared);
        SoftBody {
            name: self.name,
            shared: Arc::new(shared),
            pins: self.pins,
            initial_velocities,
            friction: self.friction,
            damping: self.damping,
            linear_damping: self.linear_damping,
            self_collision: self.self_collision,
            solver: self.solver,
            pins_version: 0,
            kinematic_marked: false,
        }
    }
}

impl Common {
    /// `v + ω × (x − c)` per vertex, with `c` the body's centre of mass: the velocity field of
    /// a rigid motion, so a spun body starts without strain rate.
    fn initial_velocities(&self, shared: &BodyShared) -> Vec<Vec3> {
        let x = shared.rest_positions();
        if self.angular_velocity == Vec3::ZERO {
            return vec![self.velocity; x.len()];
        }
        let (mut m, mut mx) = (0.0f64, glam::DVec3::ZERO);
        for (p, &w) in x.iter().zip(&shared.masses) {
            m += w as f64;
            mx += p.as_dvec3() * w as f64;
        }
        let c = (mx / m.max(f64::MIN_POSITIVE)).as_vec3();
        x.iter().map(|&p| self.velocity + self.angular_velocity.cross(p - c)).collect()
    }
}

pub(crate) fn validate_pins(body: &str, pins: &[Pin], vertex_count: usize) -> Result<(), BodyError> {
    let mut owner = vec![usize::MAX; vertex_count];
    for (p, pin) in pins.iter().enumerate() {
        let bad = |reason: String| BodyError::BadPin { body: body.to_owned(), pin: p, reason };
        if pin.vertices.is_empty() {
            return Err(bad("pin has no vertices".into()));
        }
        for &v in &pin.vertices {
            if v as usize >= vertex_count {
                return Err(BodyError::PinOutOfRange {
                    body: body.to_owned(),
                    pin: p,
                    vertex: v,
                    vertex_count: vertex_count as u32,
                });
            }
            if owner[v as usize] != usize::MAX {
                return Err(BodyError::PinnedTwice {
                    body: body.to_owned(),
                    vertex: v,
                    first: owner[v as usize],
                    second: p,
                });
            }
            owner[v as usize] = p;
        }
        match &pin.motion {
            PinMotion::Fixed => {}
            PinMotion::Path(path) => {
                if path.keyframes.is_empty() {
                    return Err(bad("kinematic path has no keyframes".into()));
                }
                for (k, w) in path.keyframes.windows(2).enumerate() {
                    if !(w[1].time > w[0].time) {
                        return Err(bad(format!("keyframe {} time {} is not after {}", k + 1, w[1].time, w[0].time)));
                    }
                }
                for (k, f) in path.keyframes.iter().enumerate() {
                    if !(f.time.is_finite() && f.translation.is_finite() && f.rotation.is_finite()) {
                        return Err(bad(format!("keyframe {k} is not finite")));
                    }
                }
            }
            PinMotion::Scripted(targets) => {
                if targets.len() != pin.vertices.len() {
                    return Err(bad(format!("{} scripted targets for {} vertices", targets.len(), pin.vertices.len())));
                }
                if let Some(i) = targets.iter().position(|t| !t.is_finite()) {
                    return Err(bad(format!("scripted target {i} is not finite")));
                }
            }
        }
        if let Some(t) = pin.release_at
            && !t.is_finite()
        {
            return Err(bad(format!("release time {t} is not finite")));
        }
    }
    Ok(())
}

macro_rules! common_setters {
    () => {
        /// Name used in errors, events and exports.
        pub fn name(mut self, name: &str) -> Self {
            self.common.name = name.to_owned();
            self
        }
        /// Density \[kg/m³\].
        pub fn density(mut self, density: f64) -> Self {
            self.common.density = density;
            self
        }
        /// Rayleigh stiffness-damping coefficient `k_d` \[s\] (\[VBD\] §3.3); default 1e-6 s.
        pub fn damping(mut self, damping: f32) -> Self {
            self.common.damping = damping;
            self
        }
        /// Linear (mass-proportional) damping α \[1/s\], as rapier's `linear_damping`: a drag
        /// `−α m v` on every vertex. Default 0. Damps slow whole-body modes (a swinging beam)
        /// that stiffness damping barely touches; it also slows free fall, so keep it 0 for
        /// bodies in flight.
        pub fn linear_damping(mut self, alpha: f32) -> Self {
            self.common.linear_damping = alpha;
            self
        }
        /// Coulomb friction coefficient against obstacles; default 0.5.
        pub fn friction(mut self, friction: f32) -> Self {
            self.common.friction = friction;
            self
        }
        /// Moves the mesh by this translation \[m\] (after the rotation).
        pub fn translation(mut self, translation: Vec3) -> Self {
            self.common.translation = translation;
            self
        }
        /// Rotates the mesh about the origin.
        pub fn rotation(mut self, rotation: Quat) -> Self {
            self.common.rotation = rotation;
            self
        }
        /// Initial velocity of every vertex \[m/s\].
        pub fn velocity(mut self, velocity: Vec3) -> Self {
            self.common.velocity = velocity;
            self
        }
        /// Initial angular velocity \[rad/s\] about the body's centre of mass (after the
        /// rotation and translation), added to [`Self::velocity`]: every vertex starts with
        /// `v + ω × (x − c)`.
        pub fn angular_velocity(mut self, omega: Vec3) -> Self {
            self.common.angular_velocity = omega;
            self
        }
        /// Pins these vertices at their initial positions.
        pub fn pinned(mut self, vertices: &[u32]) -> Self {
            self.common.pins.push(Pin::fixed(vertices.to_vec()));
            self
        }
        /// Adds a pin (fixed, on a kinematic path, or scripted).
        pub fn pin(mut self, pin: Pin) -> Self {
            self.common.pins.push(pin);
            self
        }
        /// Whether the body's surface collides with itself (default on). Body–body contact is
        /// always on; turn this off only for bodies that cannot fold onto themselves, to save
        /// the self-pair checks.
        pub fn self_collision(mut self, enabled: bool) -> Self {
            self.common.self_collision = enabled;
            self
        }
        /// Adds several pins.
        pub fn pins(mut self, pins: impl IntoIterator<Item = Pin>) -> Self {
            self.common.pins.extend(pins);
            self
        }
    };
}

/// Builds a volumetric soft body from a tet mesh.
///
/// ```
/// use pliant::prelude::*;
/// let mesh = TetMesh::box_mesh(Vec3::splat(0.2), [4, 4, 4], TetSplit::Six).unwrap();
/// let body = SoftBodyBuilder::tetrahedral(mesh)
///     .material(StableNeoHookean::from_young_poisson(2.0e5, 0.45)) // [Pa], [-]
///     .density(1100.0)                                             // [kg/m³]
///     .translation(Vec3::new(0.0, 0.5, 0.0))
///     .build()
///     .unwrap();
/// assert_eq!(body.shared().vertex_count(), 125);
/// ```
#[derive(Clone, Debug)]
pub struct SoftBodyBuilder {
    mesh: TetMesh,
    material: SolidMaterial,
    common: Common,
}

impl SoftBodyBuilder {
    /// Starts from a tet mesh; defaults: stable neo-Hookean E = 1e5 Pa, ν = 0.3, ρ = 1000
    /// kg/m³, k_d = 1e-6 s, μ = 0.5.
    pub fn tetrahedral(mesh: TetMesh) -> Self {
        Self {
            mesh,
            material: StableNeoHookean::from_young_poisson(1e5, 0.3).into(),
            common: Common::new("soft_body", 1000.0),
        }
    }

    /// Constitutive model.
    pub fn material(mut self, material: impl Into<SolidMaterial>) -> Self {
        self.material = material.into();
        self
    }

    common_setters!();
    /// The fast path that solves the body (default [`SolverChoice::Vbd`]); see
    /// [`SolverChoice::LocalGlobal`] for stiff and slender bodies.
    pub fn solver(mut self, solver: SolverChoice) -> Self {
        self.common.solver = solver;
        self
    }

    /// Validates and builds.
    pub fn build(self) -> Result<SoftBody, BodyError> {
        let Self { mesh, material, common } = self;
        material.validate().map_err(|source| BodyError::Material { body: common.name.clone(), source })?;
        common.validate(mesh.vertex_count())?;
        let mesh = mesh.transformed(common.rotation, common.translation);
        let mut masses = vec![0.0f64; mesh.vertex_count()];
        for t in mesh.tets() {
            let m = common.density * tet_volume(t.map(|i| mesh.positions()[i as usize])) / 4.0;
            for &i in t {
                masses[i as usize] += m;
            }
        }
        let cliques: Vec<&[u32]> = mesh.tets().iter().map(|t| &t[..]).collect();
        let coloring = greedy_coloring(&vertex_graph(mesh.vertex_count(), &cliques));
        let surface = mesh.boundary_surface().triangles;
        let shared = BodyShared::new(
            BodyShape::Solid { mesh, material },
            common.density,
            masses.into_iter().map(|m| m as f32).collect(),
            coloring,
            surface,
        );
        Ok(common.finish(shared))
    }
}

/// Builds a cloth from a triangle mesh.
#[derive(Clone, Debug)]
pub struct ClothBuilder {
    mesh: TriMesh,
    material: ClothMaterial,
    common: Common,
}

impl ClothBuilder {
    /// Starts from a triangle mesh; defaults: E = 2e6 Pa, ν = 0.3, thickness 0.5 mm, plate
    /// bending stiffness, ρ = 400 kg/m³ (0.2 kg/m²), k_d = 1e-6 s, μ = 0.5.
    pub fn new(mesh: TriMesh) -> Self {
        Self { mesh, material: ClothMaterial::new(2e6, 0.3, 5e-4), common: Common::new("cloth", 400.0) }
    }

    /// Membrane and bending parameters.
    pub fn material(mut self, material: ClothMaterial) -> Self {
        self.material = material;
        self
    }

    common_setters!();

    /// Validates and builds.
    pub fn build(self) -> Result<SoftBody, BodyError> {
        let Self { mesh, material, common } = self;
        material.validate().map_err(|source| BodyError::Material { body: common.name.clone(), source })?;
        common.validate(mesh.vertex_count())?;
        let mesh = mesh.transformed(common.rotation, common.translation);
        let mut masses = vec![0.0f64; mesh.vertex_count()];
        for t in mesh.triangles() {
            let m = common.density * material.thickness * triangle_area(t.map(|i| mesh.positions()[i as usize])) / 3.0;
            for &i in t {
                masses[i as usize] += m;
            }
        }
        let hinges = mesh.hinges();
        let mut cliques: Vec<&[u32]> = mesh.triangles().iter().map(|t| &t[..]).collect();
        cliques.extend(hinges.iter().map(|h| &h.vertices[..]));
        let coloring = greedy_coloring(&vertex_graph(mesh.vertex_count(), &cliques));
        let surface = mesh.triangles().to_vec();
        let shared = BodyShared::new(
            BodyShape::Cloth { mesh, material, hinges },
            common.density,
            masses.into_iter().map(|m| m as f32).collect(),
            coloring,
            surface,
        );
        Ok(common.finish(shared))
    }
}
