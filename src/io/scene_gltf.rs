//! Scene bodies from glTF render meshes: the render mesh is read and scaled to metres, then
//! either a tet mesh is made for it (voxel tets conformed to it, or TetGen files when given)
//! and the render vertices embedded in the tets, or, for a cloth material, its own triangles
//! (welded along their seams) are the cloth.

use std::path::Path;

use super::SceneError;
use super::scene::GltfSpec;
use crate::mesh::{EmbeddedMesh, MeshError, RenderMesh, TetMesh, TriMesh};

/// Voxels across the longest side when the scene gives neither `cell` nor `resolution`.
pub const DEFAULT_VOXEL_RESOLUTION: u32 = 10;

/// The most voxels across the longest side: 128³ cells fit the voxelizer's cell limit (`mesh::voxel::MAX_VOXEL_CELLS`).
pub const MAX_VOXEL_RESOLUTION: u32 = 128;

/// What a glTF body simulates, with its render mesh riding on it (both in the glTF's world
/// frame, scaled to metres).
pub(crate) enum GltfGeometry {
    /// A solid: tets with the render mesh embedded.
    Solid(TetMesh, EmbeddedMesh),
    /// A cloth made of the render mesh's triangles.
    Cloth(TriMesh, EmbeddedMesh),
}

/// Reads the body's glTF mesh and makes what it simulates: `cloth` for a cloth material.
/// `field` is the spec's path in the scene (`bodies[2].mesh`); errors name the field under it
/// that is at fault.
pub(crate) fn gltf_geometry(
    field: &str,
    spec: &GltfSpec,
    base: &Path,
    cloth: bool,
) -> Result<GltfGeometry, SceneError> {
    #[cfg(feature = "gltf")]
    {
        use super::gltf::GltfError;
        let path = base.join(&spec.path);
        if !(spec.scale.is_finite() && spec.scale > 0.0) {
            return Err(SceneError::invalid(format!("{field}.scale"), spec.scale, "must be finite and > 0"));
        }
        let mut render = super::gltf::read_gltf(&path, spec.node.as_deref()).map_err(|e| match e {
            GltfError::Io { path, message } => {
                SceneError::MissingFile { field: format!("{field}.path"), path, message }
            }
            GltfError::NoMesh { .. } if spec.node.is_some() => {
                SceneError::invalid(format!("{field}.node"), spec.node.as_deref().unwrap_or(""), e.to_string())
            }
            other => SceneError::invalid(format!("{field}.path"), path.display(), other.to_string()),
        })?;
        render.positions.iter_mut().for_each(|p| *p *= spec.scale);
        let at_path = |e: MeshError| SceneError::invalid(format!("{field}.path"), path.display(), e.to_string());
        if cloth {
            if spec.tetgen.is_some() || spec.cell.is_some() || spec.resolution.is_some() {
                return Err(SceneError::invalid(
                    field,
                    "tetgen, cell or resolution",
                    "a cloth is made of the mesh's own triangles: give none of them",
                ));
            }
            let (mesh, map) = render.welded_cloth().map_err(at_path)?;
            let embedded = EmbeddedMesh::on_vertices(render, &map);
            return Ok(GltfGeometry::Cloth(mesh, embedded));
        }
        let tets = match &spec.tetgen {
            Some(node) => {
                let node = base.join(node);
                let tets = super::tetgen::read_tetgen(&node).map_err(|e| match e {
                    MeshError::Io { path, message } => {
                        SceneError::MissingFile { field: format!("{field}.tetgen"), path, message }
                    }
                    other => SceneError::invalid(format!("{field}.tetgen"), node.display(), other.to_string()),
                })?;
                // The .node file is in the glTF's frame and units: it scales with the mesh.
                let scaled = tets.positions().iter().map(|p| *p * spec.scale).collect();
                TetMesh::new(scaled, tets.tets().to_vec())
                    .map_err(|e| SceneError::invalid(format!("{field}.tetgen"), node.display(), e.to_string()))?
            }
            None => {
                let cell = voxel_cell(field, spec, &render)?;
                TetMesh::voxelize(&render.positions, &render.triangles, cell, spec.split).map_err(|e| match e {
                    // The lattice is too fine: name what the user set.
                    MeshError::TooManyCells { .. } => match spec.cell {
                        Some(c) => SceneError::invalid(format!("{field}.cell"), c, e.to_string()),
                        None => SceneError::invalid(
                            format!("{field}.resolution"),
                            spec.resolution.unwrap_or(DEFAULT_VOXEL_RESOLUTION),
                            e.to_string(),
                        ),
                    },
                    other => at_path(other),
                })?
            }
        };
        let embedded = EmbeddedMesh::new(render, &tets).map_err(at_path)?;
        Ok(GltfGeometry::Solid(tets, embedded))
    }
    #[cfg(not(feature = "gltf"))]
    {
        let _ = (spec, base, cloth);
        Err(SceneError::invalid(format!("{field}.format"), "gltf", "this build of pliant has no `gltf` feature"))
    }
}

/// The voxel edge: `cell`, or the longest side over `resolution` (default 10).
#[cfg_attr(not(feature = "gltf"), allow(dead_code))]
fn voxel_cell(field: &str, spec: &GltfSpec, render: &RenderMesh) -> Result<f32, SceneError> {
    let (lo, hi) = render
        .positions
        .iter()
        .fold((glam::Vec3::splat(f32::MAX), glam::Vec3::splat(f32::MIN)), |(a, b), p| (a.min(*p), b.max(*p)));
    match (spec.cell, spec.resolution) {
        (Some(_), Some(_)) => Err(SceneError::invalid(field, "cell and resolution", "give at most one of them")),
        (Some(c), None) if !(c.is_finite() && c > 0.0) => {
            Err(SceneError::invalid(format!("{field}.cell"), c, "must be finite and > 0"))
        }
        (Some(c), None) => Ok(c),
        (None, r) => {
            let r = r.unwrap_or(DEFAULT_VOXEL_RESOLUTION);
            if !(1..=MAX_VOXEL_RESOLUTION).contains(&r) {
                return Err(SceneError::invalid(
                    format!("{field}.resolution"),
                    r,
                    format!("must be in 1..={MAX_VOXEL_RESOLUTION}"),
                ));
            }
            let longest = (hi - lo).max_element();
            if longest <= 0.0 {
                return Err(SceneError::invalid(format!("{field}.path"), &spec.path, "the mesh has no extent"));
            }
            Ok(longest / r as f32)
        }
    }
}
