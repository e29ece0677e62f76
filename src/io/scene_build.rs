//! Scene → world: parses, validates with field paths, builds bodies, pins, obstacles, probes.

use std::path::Path;

use glam::{EulerRot, Quat, Vec2, Vec3};

use super::scene::PATH_MARK;
use super::scene::*;
use super::scene_gltf::{GltfGeometry, gltf_geometry};
use super::{SceneError, tetgen};
use crate::body::{ClothBuilder, Keyframe, KinematicPath, Pin, SoftBodyBuilder, SoftBodyHandle};
use crate::collision::Obstacle;
use crate::material::{ClothMaterial, MaterialError, SolidMaterial, StVK, StableNeoHookean};
use crate::mesh::{EmbeddedMesh, MeshError, TetMesh, TriMesh};
use crate::runtime::{ConfigError, StepConfig, World};

/// A body of a loaded scene.
#[derive(Clone, Debug)]
pub struct SceneBody {
    /// Name from the scene.
    pub name: String,
    /// Handle in the world.
    pub handle: SoftBodyHandle,
    /// Rest (initial) positions \[m\].
    pub rest: Vec<Vec3>,
    /// The render mesh that follows the body (bodies from glTF), at rest in the world frame.
    pub render: Option<EmbeddedMesh>,
}

/// A probe with its body and vertices resolved.
#[derive(Clone, Debug)]
pub struct ResolvedProbe {
    /// Name.
    pub name: String,
    /// Quantity.
    pub kind: ProbeKind,
    /// Index into [`LoadedScene::bodies`].
    pub body: usize,
    /// Body-local vertices.
    pub vertices: Vec<u32>,
}

/// A scene turned into a world, ready to run.
#[derive(Debug)]
pub struct LoadedScene {
    /// The parsed scene.
    pub scene: Scene,
    /// The world.
    pub world: World,
    /// Bodies in scene order.
    pub bodies: Vec<SceneBody>,
    /// Probes.
    pub probes: Vec<ResolvedProbe>,
}

impl LoadedScene {
    /// The bodies as exported and drawn (render meshes for glTF bodies).
    pub fn export_bodies(&self) -> Vec<super::frame::ExportBody<'_>> {
        self.bodies
            .iter()
            .map(|b| super::frame::ExportBody { name: &b.name, handle: b.handle, render: b.render.as_ref() })
            .collect()
    }
}

/// Parses scene JSON; errors name the field (`bodies[0].generator.cells`).
pub fn parse_scene(json: &str) -> Result<Scene, SceneError> {
    let de = &mut serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let mut field = if path == "." { "(top level)".to_owned() } else { path };
        let mut message = e.into_inner().to_string();
        // Tagged payloads carry their inner path: `\u{1f}E\u{1f}invalid type …`.
        if let Some((inner, msg)) = message.strip_prefix(PATH_MARK).and_then(|rest| rest.split_once(PATH_MARK)) {
            if inner != "." {
                field = format!("{field}.{inner}");
            }
            message = msg.to_owned();
        }
        SceneError::Parse { field, message }
    })
}

/// Reads, parses, validates and builds a scene file. Mesh files resolve relative to it.
pub fn load_scene_file(path: &Path) -> Result<LoadedScene, SceneError> {
    let json =
        std::fs::read_to_string(path).map_err(|e| SceneError::Io { path: path.to_owned(), message: e.to_string() })?;
    let scene = parse_scene(&json)?;
    let base = path.parent().unwrap_or(Path::new("."));
    scene.build(base)
}

fn euler(deg: [f32; 3]) -> Quat {
    Quat::from_euler(EulerRot::XYZ, deg[0].to_radians(), deg[1].to_radians(), deg[2].to_radians())
}

fn finite3(field: String, v: [f32; 3]) -> Result<Vec3, SceneError> {
    let v = Vec3::from(v);
    if v.is_finite() { Ok(v) } else { Err(SceneError::invalid(field, format!("{v}"), "must be finite")) }
}

/// Scene names for `StepConfig` fields.
fn config_field(f: &str) -> String {
    match f {
        "dt" | "gravity" => f.to_owned(),
        "contact_stiffness" => "solver.contact.stiffness".into(),
        "contact_offset" => "solver.contact.offset".into(),
        "contact_stiffening" => "solver.contact.stiffening".into(),
        "friction_eps_v" => "solver.contact.friction_eps_v".into(),
        other => format!("solver.{other}"),
    }
}

fn material_field(name: &str, e: &MaterialError) -> String {
    let key = match e.parameter {
        "young_modulus" => "E",
        "poisson_ratio" => "nu",
        other => other,
    };
    format!("materials.{name}.{key}")
}

fn mesh_error(field: &str, e: MeshError) -> SceneError {
    match e {
        MeshError::InvalidGenerator { field: f, value, reason } => {
            SceneError::invalid(format!("{field}.{f}"), value, reason)
        }
        other => SceneError::invalid(field, "(mesh)", other.to_string()),
    }
}

impl Scene {
    /// The step configuration this scene asks for.
    pub fn step_config(&self) -> StepConfig {
        StepConfig {
            dt: self.dt,
            substeps: self.solver.substeps,
            iterations: self.solver.iterations,
            gravity: Vec3::from(self.gravity),
            integrator: self.solver.integrator,
            initialization: self.solver.initialization,
            chebyshev_rho: self.solver.chebyshev_rho,
            threads: self.solver.threads,
            contact_stiffness: self.solver.contact.stiffness,
            contact_offset: self.solver.contact.offset,
            contact_stiffening: self.solver.contact.stiffening,
            friction_eps_v: self.solver.contact.friction_eps_v,
            rigid_correction: self.solver.rigid_correction,
            coarse_space: self.solver.coarse_space,
            surface_contact: self.solver.contact.surface,
            contact_detection_interval: self.solver.contact.detection_interval,
            fallback: self.solver.fallback,
            budget_ms: self.solver.budget_ms,
            local_global: crate::solver::LocalGlobalSettings {
                iterations: self.solver.local_global.iterations,
                wait_for_factor: self.solver.local_global.wait_for_factor,
            },
            // Where to run is the caller's choice (`pliant run --backend`), not the scene's.
            ..StepConfig::default()
        }
    }

    /// The obstacles of `obstacles`, validated (without building the bodies).
    pub fn build_obstacles(&self) -> Result<Vec<Obstacle>, SceneError> {
        self.obstacles.iter().enumerate().map(|(i, o)| obstacle_from_spec(i, o)).collect()
    }

    /// Validates and builds the world. `base` is the directory mesh paths are relative to.
    pub fn build(&self, base: &Path) -> Result<LoadedScene, SceneError> {
        if self.version != SCENE_VERSION {
            return Err(SceneError::invalid(
                "version",
                self.version,
                format!("this build reads version {SCENE_VERSION}"),
            ));
        }
        if self.name.trim().is_empty() {
            return Err(SceneError::invalid("name", "\"\"", "must not be empty"));
        }
        if self.frames == 0 {
            return Err(SceneError::invalid("frames", 0, "must be ≥ 1"));
        }
        let config = self.step_config();
        let mut world = World::new(config)
            .map_err(|e: ConfigError| SceneError::invalid(config_field(e.field), e.value, e.reason))?;
        for (name, m) in &self.materials {
            self.check_material(name, m)?;
        }
        for (name, p) in &self.kinematic_paths {
            path_from_spec(name, p)?;
        }
        let mut bodies = Vec::with_capacity(self.bodies.len());
        for (i, b) in self.bodies.iter().enumerate() {
            if self.bodies[..i].iter().any(|o| o.name == b.name) {
                return Err(SceneError::invalid(format!("bodies[{i}].name"), &b.name, "duplicate body name"));
            }
            let (body, rest, render) = self.build_body(i, b, base)?;
            let handle = world.bodies.insert(body);
            bodies.push(SceneBody { name: b.name.clone(), handle, rest, render });
        }
        for (i, o) in self.obstacles.iter().enumerate() {
            world.obstacles.push(obstacle_from_spec(i, o)?);
        }
        let mut probes = Vec::with_capacity(self.probes.len());
        for (i, p) in self.probes.iter().enumerate() {
            let field = format!("probes[{i}]");
            if self.probes[..i].iter().any(|o| o.name == p.name) {
                return Err(SceneError::invalid(format!("{field}.name"), &p.name, "duplicate probe name"));
            }
            let body = bodies
                .iter()
                .position(|b| b.name == p.body)
                .ok_or_else(|| SceneError::invalid(format!("{field}.body"), &p.body, "no body with this name"))?;
            let vertices = select(&format!("{field}.select"), &p.select, &bodies[body].rest)?;
            probes.push(ResolvedProbe { name: p.name.clone(), kind: p.kind, body, vertices });
        }
        world.sync();
        Ok(LoadedScene { scene: self.clone(), world, bodies, probes })
    }

    fn check_material(&self, name: &str, m: &MaterialSpec) -> Result<(), SceneError> {
        let field = |k: &str| format!("materials.{name}.{k}");
        let (rho, damping, linear) = match m {
            MaterialSpec::StableNeoHookean(p) | MaterialSpec::Stvk(p) => {
                solid_material(m, p).validate().map_err(|e| mat_err(name, e))?;
                (p.rho, p.damping, p.linear_damping)
            }
            MaterialSpec::Cloth(p) => {
                cloth_material(p).validate().map_err(|e| mat_err(name, e))?;
                (p.rho, p.damping, p.linear_damping)
            }
        };
        if !(rho.is_finite() && rho > 0.0) {
            return Err(SceneError::invalid(field("rho"), rho, "must be finite and > 0 kg/m³"));
        }
        if !(damping.is_finite() && damping >= 0.0) {
            return Err(SceneError::invalid(field("damping"), damping, "must be finite and ≥ 0 s"));
        }
        if !(linear.is_finite() && linear >= 0.0) {
            return Err(SceneError::invalid(field("linear_damping"), linear, "must be finite and ≥ 0 1/s"));
        }
        Ok(())
    }

    /// Body `b`'s pins (`field` names it in errors), selected on its world-frame rest
    /// positions `rest`.
    fn body_pins(&self, field: &str, b: &BodySpec, rest: &[Vec3]) -> Result<Vec<Pin>, SceneError> {
        let mut pins = Vec::with_capacity(b.pins.len());
        for (k, p) in b.pins.iter().enumerate() {
            let pf = format!("{field}.pins[{k}]");
            let vertices = select(&format!("{pf}.select"), &p.select, rest)?;
            let mut pin = if p.target == "static" {
                Pin::fixed(vertices)
            } else {
                let spec = self.kinematic_paths.get(&p.target).ok_or_else(|| {
                    SceneError::invalid(
                        format!("{pf}.target"),
                        &p.target,
                        "neither \"static\" nor a kinematic path name",
                    )
                })?;
                Pin::path(vertices, path_from_spec(&p.target, spec)?)
            };
            if let Some(t) = p.release_at {
                if !t.is_finite() {
                    return Err(SceneError::invalid(format!("{pf}.release_at"), t, "must be finite"));
                }
                pin = pin.released_at(t);
            }
            pins.push(pin);
        }
        Ok(pins)
    }

    fn build_body(
        &self,
        i: usize,
        b: &BodySpec,
        base: &Path,
    ) -> Result<(crate::body::SoftBody, Vec<Vec3>, Option<EmbeddedMesh>), SceneError> {
        let field = format!("bodies[{i}]");
        let material = self.materials.get(&b.material).ok_or_else(|| {
            SceneError::invalid(format!("{field}.material"), &b.material, "no material with this name")
        })?;
        let translation = finite3(format!("{field}.translation"), b.translation)?;
        let rotation = euler(b.rotation_deg);
        if !rotation.is_finite() {
            return Err(SceneError::invalid(
                format!("{field}.rotation_deg"),
                format!("{:?}", b.rotation_deg),
                "must be finite",
            ));
        }
        let velocity = finite3(format!("{field}.velocity"), b.velocity)?;
        let angular_velocity = finite3(format!("{field}.angular_velocity"), b.angular_velocity)?;
        let (geometry, mut render) = body_geometry(&field, b, base, material)?;
        if let Some(e) = render.as_mut() {
            let e: &mut EmbeddedMesh = e;
            for p in &mut e.mesh.positions {
                *p = rotation * *p + translation;
            }
            if let Some(n) = &mut e.mesh.normals {
                n.iter_mut().for_each(|n| *n = rotation * *n);
            }
        }
        let rest_local: Vec<Vec3> = match &geometry {
            Geometry::Solid(m) => m.positions().to_vec(),
            Geometry::Cloth(m) => m.positions().to_vec(),
        };
        // Selections refer to rest positions in the world frame.
        let rest: Vec<Vec3> = rest_local.iter().map(|p| rotation * *p + translation).collect();
        let pins = self.body_pins(&field, b, &rest)?;
        let body_err = |e: crate::body::BodyError| SceneError::invalid(&field, &b.name, e.to_string());
        // The settings both builders share.
        macro_rules! configured {
            ($builder:expr, $p:expr) => {
                $builder
                    .name(&b.name)
                    .density($p.rho)
                    .damping($p.damping)
                    .linear_damping($p.linear_damping)
                    .friction(b.friction)
                    .self_collision(b.self_collision)
                    .rotation(rotation)
                    .translation(translation)
                    .velocity(velocity)
                    .angular_velocity(angular_velocity)
                    .pins(pins)
                    .build()
                    .map_err(body_err)?
            };
        }
        let solver = b.solver.unwrap_or(self.solver.fast_path);
        let body = match (geometry, material) {
            (Geometry::Solid(mesh), MaterialSpec::StableNeoHookean(p) | MaterialSpec::Stvk(p)) => {
                configured!(SoftBodyBuilder::tetrahedral(mesh).material(solid_material(material, p)).solver(solver), p)
            }
            (Geometry::Cloth(_), MaterialSpec::Cloth(_))
                if b.solver == Some(crate::body::SolverChoice::LocalGlobal) =>
            {
                return Err(SceneError::invalid(
                    format!("{field}.solver"),
                    "local_global",
                    "the local–global path solves solid (tet) bodies; cloth takes `vbd`",
                ));
            }
            (Geometry::Cloth(mesh), MaterialSpec::Cloth(p)) => {
                configured!(ClothBuilder::new(mesh).material(cloth_material(p)), p)
            }
            (Geometry::Cloth(_), _) => {
                return Err(SceneError::invalid(
                    format!("{field}.material"),
                    &b.material,
                    "a cloth mesh needs a `cloth` material",
                ));
            }
            (Geometry::Solid(_), MaterialSpec::Cloth(_)) => {
                return Err(SceneError::invalid(
                    format!("{field}.material"),
                    &b.material,
                    "a tet mesh needs a solid material",
                ));
            }
        };
        Ok((body, rest, render))
    }
}

/// A body's solid or cloth geometry from its generator or mesh file (`field` names it in
/// errors), and the render mesh embedded in it for a glTF body.
fn body_geometry(
    field: &str,
    b: &BodySpec,
    base: &Path,
    material: &MaterialSpec,
) -> Result<(Geometry, Option<EmbeddedMesh>), SceneError> {
    let mut render = None;
    let geometry = match (&b.generator, &b.mesh) {
        (Some(g), None) => {
            let gf = format!("{field}.generator");
            let v3 = |a: [f32; 3]| Vec3::from(a);
            match g {
                GeneratorSpec::Box(p) => {
                    Geometry::Solid(TetMesh::box_mesh(v3(p.size), p.cells, p.split).map_err(|e| mesh_error(&gf, e))?)
                }
                GeneratorSpec::Beam(p) => Geometry::Solid(
                    TetMesh::beam(p.size[0], p.size[1], p.size[2], p.cells, p.split).map_err(|e| mesh_error(&gf, e))?,
                ),
                GeneratorSpec::Sphere(p) => {
                    Geometry::Solid(TetMesh::sphere(p.radius, p.cells, p.split).map_err(|e| mesh_error(&gf, e))?)
                }
                GeneratorSpec::Ellipsoid(p) => {
                    Geometry::Solid(TetMesh::ellipsoid(v3(p.radii), p.cells, p.split).map_err(|e| mesh_error(&gf, e))?)
                }
                GeneratorSpec::ClothGrid(p) => {
                    Geometry::Cloth(TriMesh::cloth_grid(Vec2::from(p.size), p.cells).map_err(|e| mesh_error(&gf, e))?)
                }
            }
        }
        (None, Some(MeshFileSpec::Tetgen(spec))) => {
            let node = base.join(&spec.path);
            Geometry::Solid(tetgen::read_tetgen(&node).map_err(|e| match e {
                MeshError::Io { path, message } => {
                    SceneError::MissingFile { field: format!("{field}.mesh.path"), path, message }
                }
                other => SceneError::invalid(format!("{field}.mesh.path"), node.display(), other.to_string()),
            })?)
        }
        (None, Some(MeshFileSpec::Gltf(spec))) => {
            // Embedded at rest in the file's frame; the embedding survives the body's rigid
            // placement, which the render mesh then takes too.
            let cloth = matches!(material, MaterialSpec::Cloth(_));
            match gltf_geometry(&format!("{field}.mesh"), spec, base, cloth)? {
                GltfGeometry::Solid(tets, embedded) => {
                    render = Some(embedded);
                    Geometry::Solid(tets)
                }
                GltfGeometry::Cloth(mesh, embedded) => {
                    render = Some(embedded);
                    Geometry::Cloth(mesh)
                }
            }
        }
        (Some(_), Some(_)) => {
            return Err(SceneError::invalid(field, "generator and mesh", "give exactly one of `generator` and `mesh`"));
        }
        (None, None) => return Err(SceneError::invalid(field, "(none)", "give one of `generator` and `mesh`")),
    };
    Ok((geometry, render))
}

/// A body's geometry before it is given a material.
enum Geometry {
    Solid(TetMesh),
    Cloth(TriMesh),
}

fn solid_material(m: &MaterialSpec, p: &SolidSpec) -> SolidMaterial {
    match m {
        MaterialSpec::Stvk(_) => StVK::from_young_poisson(p.young_modulus, p.nu).into(),
        _ => StableNeoHookean::from_young_poisson(p.young_modulus, p.nu).into(),
    }
}

fn cloth_material(p: &ClothSpec) -> ClothMaterial {
    ClothMaterial {
        young_modulus: p.young_modulus,
        poisson_ratio: p.nu,
        thickness: p.thickness,
        bending_stiffness: p.bending_stiffness,
    }
}

fn mat_err(name: &str, e: MaterialError) -> SceneError {
    SceneError::invalid(material_field(name, &e), e.value, e.reason)
}

fn path_from_spec(name: &str, p: &PathSpec) -> Result<KinematicPath, SceneError> {
    let field = format!("kinematic_paths.{name}");
    if p.keyframes.is_empty() {
        return Err(SceneError::invalid(format!("{field}.keyframes"), "[]", "needs at least one keyframe"));
    }
    let mut keyframes = Vec::with_capacity(p.keyframes.len());
    for (k, f) in p.keyframes.iter().enumerate() {
        let kf = format!("{field}.keyframes[{k}]");
        if !f.t.is_finite() || (k > 0 && f.t <= p.keyframes[k - 1].t) {
            return Err(SceneError::invalid(format!("{kf}.t"), f.t, "times must be finite and increasing"));
        }
        keyframes.push(Keyframe {
            time: f.t,
            translation: finite3(format!("{kf}.translation"), f.translation)?,
            rotation: euler(f.rotation_deg),
        });
    }
    let pivot = match p.pivot {
        Some(v) => Some(finite3(format!("{field}.pivot"), v)?),
        None => None,
    };
    Ok(KinematicPath { keyframes, pivot })
}

fn obstacle_from_spec(i: usize, o: &ObstacleSpec) -> Result<Obstacle, SceneError> {
    let field = format!("obstacles[{i}]");
    let err =
        |e: crate::collision::ObstacleError| SceneError::invalid(format!("{field}.{}", e.field), e.value, e.reason);
    match o {
        ObstacleSpec::Plane(p) => {
            let n = Vec3::from(p.normal);
            let unit = n.try_normalize().ok_or_else(|| {
                SceneError::invalid(format!("{field}.normal"), format!("{n}"), "must be non-zero and finite")
            })?;
            Obstacle::plane(unit, unit * p.offset, p.friction).map_err(err)
        }
        ObstacleSpec::Sphere(p) => Obstacle::sphere(Vec3::from(p.center), p.radius, p.friction).map_err(err),
        ObstacleSpec::Box(p) => {
            Obstacle::cuboid(Vec3::from(p.center), Vec3::from(p.half_extents), euler(p.rotation_deg), p.friction)
                .map_err(err)
        }
    }
}

/// Resolves a selection against rest positions; an empty result is an error.
pub(crate) fn select(field: &str, s: &Selection, rest: &[Vec3]) -> Result<Vec<u32>, SceneError> {
    let (lo, hi) = rest
        .iter()
        .fold((Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)), |(a, b), &p| (a.min(p), b.max(p)));
    let tol = 1e-5 * (hi - lo).max_element().max(1e-6);
    let axis = |name: &str, f: &str| match name {
        "x" => Ok(0usize),
        "y" => Ok(1),
        "z" => Ok(2),
        _ => Err(SceneError::invalid(f.to_owned(), name, "must be \"x\", \"y\" or \"z\"")),
    };
    let picked: Vec<u32> = match s {
        Selection::All => (0..rest.len() as u32).collect(),
        Selection::Face(face) => {
            let f = format!("{field}.face");
            let (name, side) = face.split_at(face.len().saturating_sub(1));
            let a =
                axis(name, &f).map_err(|_| SceneError::invalid(&f, face, "must be one of x-, x+, y-, y+, z-, z+"))?;
            let target = match side {
                "-" => lo[a],
                "+" => hi[a],
                _ => return Err(SceneError::invalid(&f, face, "must be one of x-, x+, y-, y+, z-, z+")),
            };
            (0..rest.len() as u32).filter(|&i| (rest[i as usize][a] - target).abs() <= tol).collect()
        }
        Selection::Plane { axis: name, value, tolerance } => {
            let a = axis(name, &format!("{field}.plane.axis"))?;
            if !(tolerance.is_finite() && *tolerance >= 0.0 && value.is_finite()) {
                return Err(SceneError::invalid(
                    format!("{field}.plane.tolerance"),
                    tolerance,
                    "must be finite and ≥ 0",
                ));
            }
            (0..rest.len() as u32).filter(|&i| (rest[i as usize][a] - value).abs() <= *tolerance).collect()
        }
        Selection::Aabb { min, max } => {
            let (mn, mx) = (Vec3::from(*min), Vec3::from(*max));
            if !(mn.is_finite() && mx.is_finite() && mn.cmple(mx).all()) {
                return Err(SceneError::invalid(
                    format!("{field}.aabb"),
                    format!("{mn} .. {mx}"),
                    "min must be ≤ max and finite",
                ));
            }
            (0..rest.len() as u32)
                .filter(|&i| rest[i as usize].cmpge(mn).all() && rest[i as usize].cmple(mx).all())
                .collect()
        }
        Selection::Indices(ix) => {
            if let Some(&bad) = ix.iter().find(|&&i| i as usize >= rest.len()) {
                return Err(SceneError::invalid(
                    format!("{field}.indices"),
                    bad,
                    format!("the body has {} vertices", rest.len()),
                ));
            }
            ix.clone()
        }
    };
    if picked.is_empty() {
        return Err(SceneError::invalid(field, format!("{s:?}"), "selects no vertices"));
    }
    Ok(picked)
}
