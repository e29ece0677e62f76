//! Scene bodies from glTF render meshes: the render mesh is read, a tet mesh made for it (voxel
//! tets, or TetGen files when given) and the render vertices embedded in the tets.

use std::path::Path;

use super::SceneError;
use super::scene::GltfSpec;
use crate::mesh::{RenderMesh, TetMesh};

/// Voxels across the longest side when the scene gives neither `cell` nor `resolution`.
pub const DEFAULT_VOXEL_RESOLUTION: u32 = 10;

/// The tet mesh to simulate and the render mesh to embed in it, both in the glTF's world
/// frame. `field` is the spec's path in the scene (`bodies[2].mesh`).
pub(crate) fn gltf_geometry(field: &str, spec: &GltfSpec, base: &Path) -> Result<(TetMesh, RenderMesh), SceneError> {
    #[cfg(feature = "gltf")]
    {
        use super::gltf::GltfError;
        let path = base.join(&spec.path);
        let render = super::gltf::read_gltf(&path, spec.node.as_deref()).map_err(|e| match e {
            GltfError::Io { path, message } => {
                SceneError::MissingFile { field: format!("{field}.path"), path, message }
            }
            GltfError::NoMesh { .. } if spec.node.is_some() => {
                SceneError::invalid(format!("{field}.node"), spec.node.as_deref().unwrap_or(""), e.to_string())
            }
            other => SceneError::invalid(format!("{field}.path"), path.display(), other.to_string()),
        })?;
        let tets = match &spec.tetgen {
            Some(node) => {
                let node = base.join(node);
                super::tetgen::read_tetgen(&node).map_err(|e| match e {
                    crate::mesh::MeshError::Io { path, message } => {
                        SceneError::MissingFile { field: format!("{field}.tetgen"), path, message }
                    }
                    other => SceneError::invalid(format!("{field}.tetgen"), node.display(), other.to_string()),
                })?
            }
            None => {
                let cell = voxel_cell(field, spec, &render)?;
                TetMesh::voxelize(&render.positions, &render.triangles, cell, spec.split).map_err(|e| match e {
                    // The lattice is too fine: name what the user set.
                    crate::mesh::MeshError::InvalidGenerator { field: "cell", .. } => match spec.cell {
                        Some(c) => SceneError::invalid(format!("{field}.cell"), c, e.to_string()),
                        None => SceneError::invalid(
                            format!("{field}.resolution"),
                            spec.resolution.unwrap_or(DEFAULT_VOXEL_RESOLUTION),
                            e.to_string(),
                        ),
                    },
                    other => SceneError::invalid(format!("{field}.path"), path.display(), other.to_string()),
                })?
            }
        };
        Ok((tets, render))
    }
    #[cfg(not(feature = "gltf"))]
    {
        let _ = (spec, base);
        Err(SceneError::invalid(format!("{field}.format"), "gltf", "this build of pliant has no `gltf` feature"))
    }
}

/// The most voxels across the longest side: 128³ cells fit [`crate::mesh::MAX_VOXEL_CELLS`].
pub const MAX_VOXEL_RESOLUTION: u32 = 128;

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
