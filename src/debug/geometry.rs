//! Triangles the picture is drawn from, built on the CPU: bodies (smooth normals), obstacles,
//! contact markers, and the grid quads of plane obstacles.

use bytemuck::{Pod, Zeroable};
use glam::{Quat, Vec3};

use super::DrawScene;
use crate::collision::ObstacleShape;
use crate::mesh::palette_color;

/// A shaded vertex (`vs_mesh`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub(crate) struct MeshVertex {
    pub position: [f32; 3],
    pub normal: [f32; 3],
    pub color: [f32; 3],
}

/// A grid vertex (`vs_ground`): position and in-plane coordinates \[m\].
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub(crate) struct GroundVertex {
    pub position: [f32; 3],
    pub uv: [f32; 2],
}

const OBSTACLE_COLOR: [f32; 3] = [0.62, 0.62, 0.64];
const CONTACT_COLOR: [f32; 3] = [0.9, 0.1, 0.1];

fn push_triangle(out: &mut Vec<MeshVertex>, p: [Vec3; 3], n: [Vec3; 3], color: [f32; 3]) {
    for k in 0..3 {
        out.push(MeshVertex { position: p[k].to_array(), normal: n[k].to_array(), color });
    }
}

/// A unit sphere's triangles (latitude–longitude), positions = normals.
fn unit_sphere(rings: u32, segments: u32) -> Vec<[Vec3; 3]> {
    let at = |i: u32, j: u32| {
        let theta = std::f32::consts::PI * i as f32 / rings as f32;
        let phi = std::f32::consts::TAU * j as f32 / segments as f32;
        Vec3::new(theta.sin() * phi.cos(), theta.cos(), theta.sin() * phi.sin())
    };
    let mut out = Vec::new();
    for i in 0..rings {
        for j in 0..segments {
            let (a, b, c, d) = (at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1));
            out.push([a, c, b]);
            out.push([a, d, c]);
        }
    }
    out
}

/// The shaded triangles: bodies in palette colours, spheres and boxes in grey, and an
/// octahedron of radius `marker` at every contact point when `contacts` is set.
pub(crate) fn mesh_vertices(scene: &DrawScene, contacts: bool, marker: f32) -> Vec<MeshVertex> {
    let mut out = Vec::new();
    for (k, m) in scene.meshes.iter().enumerate() {
        let color = palette_color(k);
        let n = m.normals_or_smooth();
        for t in &m.triangles {
            push_triangle(&mut out, t.map(|i| m.positions[i as usize]), t.map(|i| n[i as usize]), color);
        }
    }
    for o in &scene.obstacles {
        match o.shape {
            ObstacleShape::Sphere { center, radius } => {
                for t in unit_sphere(24, 48) {
                    push_triangle(&mut out, t.map(|p| center + p * radius), t, OBSTACLE_COLOR);
                }
            }
            ObstacleShape::Cuboid { center, half_extents, rotation } => {
                push_box(&mut out, center, half_extents, rotation, OBSTACLE_COLOR);
            }
            _ => {}
        }
    }
    if contacts {
        for &p in &scene.contacts {
            let axes = [Vec3::X, Vec3::Y, Vec3::Z];
            for sx in [-1.0f32, 1.0] {
                for sy in [-1.0f32, 1.0] {
                    for sz in [-1.0f32, 1.0] {
                        let c = [axes[0] * sx, axes[1] * sy, axes[2] * sz];
                        let n = Vec3::new(sx, sy, sz).normalize();
                        // Counter-clockwise seen from outside in every octant.
                        let t = if sx * sy * sz > 0.0 { [c[0], c[1], c[2]] } else { [c[0], c[2], c[1]] };
                        push_triangle(&mut out, t.map(|d| p + d * marker), [n; 3], CONTACT_COLOR);
                    }
                }
            }
        }
    }
    out
}

fn push_box(out: &mut Vec<MeshVertex>, center: Vec3, half: Vec3, rotation: Quat, color: [f32; 3]) {
    for axis in 0..3 {
        for sign in [-1.0f32, 1.0] {
            let mut n = Vec3::ZERO;
            n[axis] = sign;
            let (u, v) = (
                Vec3::from_array({
                    let mut a = [0.0; 3];
                    a[(axis + 1) % 3] = 1.0;
                    a
                }),
                Vec3::from_array({
                    let mut a = [0.0; 3];
                    a[(axis + 2) % 3] = 1.0;
                    a
                }),
            );
            let corner = |a: f32, b: f32| center + rotation * ((n + u * a + v * b) * half);
            let (p00, p10, p11, p01) = (corner(-1.0, -1.0), corner(1.0, -1.0), corner(1.0, 1.0), corner(-1.0, 1.0));
            let wn = rotation * n;
            // u × v = n for sign +1: keep counter-clockwise from outside on both sides.
            if sign > 0.0 {
                push_triangle(out, [p00, p10, p11], [wn; 3], color);
                push_triangle(out, [p00, p11, p01], [wn; 3], color);
            } else {
                push_triangle(out, [p00, p11, p10], [wn; 3], color);
                push_triangle(out, [p00, p01, p11], [wn; 3], color);
            }
        }
    }
}

/// Quads of half-size `extent` around the point nearest `center` on every plane obstacle; if
/// the scene has no plane, one under the drawn bounds (`floor`), so there is always a ground
/// to read heights against.
pub(crate) fn ground_vertices(scene: &DrawScene, center: Vec3, extent: f32, floor: f32) -> Vec<GroundVertex> {
    let mut planes: Vec<(Vec3, f32)> = scene
        .obstacles
        .iter()
        .filter_map(|o| match o.shape {
            ObstacleShape::Plane { normal, offset } => Some((normal, offset)),
            _ => None,
        })
        .collect();
    if planes.is_empty() {
        planes.push((Vec3::Y, floor));
    }
    let mut out = Vec::new();
    for (n, offset) in planes {
        let origin = center - (n.dot(center) - offset) * n;
        let u = n.any_orthonormal_vector();
        // Prefer world x as the first grid axis where the plane allows it (a floor's grid then
        // lines up with the axes).
        let u = (Vec3::X - n * n.x).try_normalize().filter(|_| n.x.abs() < 0.9).unwrap_or(u);
        let v = n.cross(u);
        let corner = |a: f32, b: f32| {
            let p = origin + (u * a + v * b) * extent;
            GroundVertex { position: p.to_array(), uv: [p.dot(u), p.dot(v)] }
        };
        let (c00, c10, c11, c01) = (corner(-1.0, -1.0), corner(1.0, -1.0), corner(1.0, 1.0), corner(-1.0, 1.0));
        out.extend([c00, c10, c11, c00, c11, c01]);
    }
    out
}

/// A grid spacing for a scene of this radius: a power of ten, about a tenth of the radius.
pub(crate) fn grid_spacing(radius: f32) -> f32 {
    10f32.powf((radius.max(1e-3) * 0.25).log10().round())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_and_box_triangles_face_outwards() {
        let scene = DrawScene {
            contacts: vec![Vec3::new(1.0, 2.0, 3.0)],
            obstacles: vec![
                crate::collision::Obstacle::cuboid(
                    Vec3::ZERO,
                    Vec3::new(0.5, 1.0, 2.0),
                    Quat::from_rotation_y(0.3),
                    0.5,
                )
                .unwrap(),
            ],
            ..DrawScene::default()
        };
        let v = mesh_vertices(&scene, true, 0.1);
        assert_eq!(v.len(), 3 * (12 + 8));
        for t in v.chunks_exact(3) {
            let p: Vec<Vec3> = t.iter().map(|x| Vec3::from(x.position)).collect();
            let face = (p[1] - p[0]).cross(p[2] - p[0]);
            assert!(face.dot(Vec3::from(t[0].normal)) > 0.0, "{p:?}");
        }
        assert_eq!(grid_spacing(1.0), 0.1);
        assert_eq!(grid_spacing(20.0), 10.0);
    }
}
