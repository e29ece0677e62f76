//! What a frame looks like from outside: each body's mesh as exported and drawn (the embedded
//! render mesh of a glTF body, else the simulated surface) and the contact points.

use glam::{Vec3, Vec3A};

use crate::body::SoftBodyHandle;
use crate::collision::surface_pairs::PAIR_POINT_TRIANGLE;
use crate::mesh::{EmbeddedMesh, RenderMesh};
use crate::runtime::World;

/// A body to export or draw.
#[derive(Clone, Copy, Debug)]
pub struct ExportBody<'a> {
    /// Name (the OBJ group, the glTF primitive's material).
    pub name: &'a str,
    /// The body.
    pub handle: SoftBodyHandle,
    /// Its render mesh, for bodies made from glTF.
    pub render: Option<&'a EmbeddedMesh>,
}

/// Each body's mesh at the world's current state: the render mesh through its embedding (with
/// its normals deformed along), or the boundary surface with only the vertices it uses
/// (renumbered; no normals: smooth ones are made where needed). Bodies whose handle is
/// not (yet) in the state are left out.
pub fn frame_meshes(world: &World, bodies: &[ExportBody<'_>]) -> Vec<RenderMesh> {
    let mut out = Vec::with_capacity(bodies.len());
    for b in bodies {
        let (Some(body), Some(x)) = (world.bodies.get(b.handle), world.body_positions(b.handle)) else { continue };
        if let Some(r) = b.render {
            let mut positions = Vec::new();
            r.positions(x, &mut positions);
            let normals = Some(r.normals(x, &positions));
            out.push(RenderMesh { name: b.name.to_owned(), positions, normals, triangles: r.mesh.triangles.clone() });
            continue;
        }
        let surface = &body.shared().surface;
        let mut local = vec![u32::MAX; x.len()];
        let mut positions = Vec::new();
        let triangles = surface
            .iter()
            .map(|t| {
                t.map(|i| {
                    if local[i as usize] == u32::MAX {
                        local[i as usize] = positions.len() as u32;
                        positions.push(x[i as usize].truncate());
                    }
                    local[i as usize]
                })
            })
            .collect();
        out.push(RenderMesh { name: b.name.to_owned(), positions, normals: None, triangles });
    }
    out
}

/// Where bodies touch things at the world's current state: vertices within 1.5 contact
/// offsets of an obstacle (static or rapier), and the midpoints of the body–body and self
/// contact pairs the last CPU step found with a contact force (the GPU backend keeps its pairs
/// on the device, so there only obstacle contacts appear).
pub fn contact_points(world: &World) -> Vec<Vec3> {
    let reach = 1.5 * world.config().contact_offset;
    let obstacles = world.all_obstacles();
    let state = world.state();
    let mut out = Vec::new();
    for p in &state.positions {
        let p = Vec3A::from(p.truncate());
        if obstacles.iter().any(|o| o.signed_distance(p).0 <= reach) {
            out.push(Vec3::from(p));
        }
    }
    for pair in world.contact_pairs().iter().filter(|p| p.has_energy() && p.distance <= reach) {
        let x = pair.vertices.map(|i| state.positions.get(i as usize).map_or(Vec3::ZERO, |v| v.truncate()));
        let w = pair.weights;
        // P − Q = Σ w_k x_k: P is the first vertex (point–triangle) or the first edge's point.
        let p = if pair.kind == PAIR_POINT_TRIANGLE { x[0] } else { x[0] * w[0] + x[1] * w[1] };
        let q = if pair.kind == PAIR_POINT_TRIANGLE {
            -(x[1] * w[1] + x[2] * w[2] + x[3] * w[3])
        } else {
            -(x[2] * w[2] + x[3] * w[3])
        };
        out.push(0.5 * (p + q));
    }
    out
}
