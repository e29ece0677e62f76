//! Pictures of what happened (feature `debug-render`): a frame's bodies, obstacles (plane
//! obstacles with a grid), and optionally its contact points, drawn by a headless wgpu render
//! pass on whatever adapter exists (Mesa lavapipe in CI) and written as PNG. `pliant render`
//! draws the OBJ frames of a run; [`DrawScene::from_world`] draws a live world.
//!
//! Host wrapper `render_frame` ↔ `shaders/render/render_frame.wgsl` (registered with the kernels,
//! `gpu::kernel::RENDER`).

mod geometry;
pub(crate) mod render_frame;
mod run;

use std::path::{Path, PathBuf};

use glam::{Mat4, Vec3, Vec3A};

pub use render_frame::Renderer;
pub use run::{RenderRunOptions, RunFrames, exported_frames, render_run};

use crate::collision::{Obstacle, ObstacleShape};
use crate::io::{ExportBody, contact_points, frame_meshes};
use crate::mesh::RenderMesh;
use crate::runtime::World;

/// A problem making a picture.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RenderError {
    /// No GPU adapter or device.
    #[error("no GPU for rendering: {0}")]
    NoGpu(String),
    /// A size of zero or beyond the device's texture limit.
    #[error("picture size {width}x{height} is invalid: {reason}")]
    Size {
        /// Width \[px\].
        width: u32,
        /// Height \[px\].
        height: u32,
        /// The limit.
        reason: String,
    },
    /// Nothing to frame (no mesh, no bounded obstacle).
    #[error("nothing to draw: the frame has no meshes")]
    Empty,
    /// The GPU failed (validation, readback).
    #[error("rendering failed: {0}")]
    Gpu(String),
    /// A run's files are missing or unreadable (no OBJ frames, a frame not exported).
    #[error("{path}: {message}")]
    Input {
        /// File or directory.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Writing the PNG failed.
    #[error("cannot write {path}: {message}")]
    Output {
        /// File.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// What to draw: meshes (bodies), obstacles, contact points.
#[derive(Clone, Debug, Default)]
pub struct DrawScene {
    /// Body meshes, each drawn in its own colour.
    pub meshes: Vec<RenderMesh>,
    /// Obstacles: planes get a grid, spheres and boxes are drawn grey.
    pub obstacles: Vec<Obstacle>,
    /// Contact points, drawn as small red markers when asked for.
    pub contacts: Vec<Vec3>,
    /// The region the picture is framed on, which sizes the ground, the grid and the depth
    /// range (default: [`DrawScene::view_bounds`]). A sequence sets one region for all its
    /// frames, so the ground does not change between them.
    pub frame_bounds: Option<(Vec3, Vec3)>,
}

impl DrawScene {
    /// The world's current state: `bodies` as [`crate::io::frame_meshes`] gives them, every
    /// obstacle (rapier colliders at the last frame's poses included) and the contact points.
    pub fn from_world(world: &World, bodies: &[ExportBody<'_>]) -> Self {
        Self {
            meshes: frame_meshes(world, bodies),
            obstacles: world.all_obstacles().into_owned(),
            contacts: contact_points(world),
            frame_bounds: None,
        }
    }

    /// Bounds of the meshes and the bounded obstacles (spheres, boxes), or `None` if empty.
    pub fn bounds(&self) -> Option<(Vec3, Vec3)> {
        let mut lo = Vec3::splat(f32::MAX);
        let mut hi = Vec3::splat(f32::MIN);
        for p in self.meshes.iter().flat_map(|m| &m.positions) {
            lo = lo.min(*p);
            hi = hi.max(*p);
        }
        for o in &self.obstacles {
            match o.shape {
                ObstacleShape::Sphere { center, radius } => {
                    lo = lo.min(center - radius);
                    hi = hi.max(center + radius);
                }
                ObstacleShape::Cuboid { center, half_extents, rotation } => {
                    let r = glam::Mat3::from_quat(rotation);
                    let e = r.x_axis.abs() * half_extents.x
                        + r.y_axis.abs() * half_extents.y
                        + r.z_axis.abs() * half_extents.z;
                    lo = lo.min(center - e);
                    hi = hi.max(center + e);
                }
                _ => {}
            }
        }
        (lo.cmple(hi).all()).then_some((lo, hi))
    }

    /// [`DrawScene::bounds`] grown to include their footprint on the floor (the plane obstacle
    /// facing most nearly up), so a picture shows how high things are.
    pub fn view_bounds(&self) -> Option<(Vec3, Vec3)> {
        let (mut lo, mut hi) = self.bounds()?;
        let floor = self
            .obstacles
            .iter()
            .filter_map(|o| match o.shape {
                ObstacleShape::Plane { normal, offset } if normal.y > 0.7 => Some((normal, offset)),
                _ => None,
            })
            .max_by(|a, b| a.0.y.total_cmp(&b.0.y));
        if let Some((n, offset)) = floor {
            for k in 0..8 {
                let c = Vec3::new(
                    if k & 1 == 0 { lo.x } else { hi.x },
                    if k & 2 == 0 { lo.y } else { hi.y },
                    if k & 4 == 0 { lo.z } else { hi.z },
                );
                let p = c - (n.dot(c) - offset) * n;
                lo = lo.min(p);
                hi = hi.max(p);
            }
        }
        Some((lo, hi))
    }

    /// Whether a point is inside an obstacle (used to keep the camera out of walls).
    fn inside_obstacle(&self, p: Vec3) -> bool {
        self.obstacles.iter().any(|o| o.signed_distance(Vec3A::from(p)).0 < 0.0)
    }
}

/// A perspective camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Position \[m\].
    pub eye: Vec3,
    /// Point looked at \[m\].
    pub target: Vec3,
    /// Up direction.
    pub up: Vec3,
    /// Vertical field of view \[degrees\].
    pub fov_y_deg: f32,
}

impl Camera {
    /// A three-quarter view from above and in front (+z, +x) that fits the box `lo..hi` in a
    /// picture of aspect ratio `aspect` (width / height).
    pub fn framing(lo: Vec3, hi: Vec3, aspect: f32) -> Self {
        let fov_y_deg = 35.0f32;
        let center = 0.5 * (lo + hi);
        let radius = (0.5 * (hi - lo).length()).max(1e-3);
        let half = 0.5 * fov_y_deg.to_radians();
        // Fit the bounding sphere in the narrower of the two fields of view.
        let half_min = half.min((half.tan() * aspect).atan());
        let distance = 1.1 * radius / half_min.sin();
        let dir = Vec3::new(0.55, 0.5, 1.0).normalize();
        Self { eye: center + dir * distance, target: center, up: Vec3::Y, fov_y_deg }
    }

    /// The camera moved along its line of sight until it is outside every obstacle of `scene`
    /// (a wall behind the framing point would otherwise hide everything).
    pub fn outside_obstacles(mut self, scene: &DrawScene) -> Self {
        let mut k = 0;
        while scene.inside_obstacle(self.eye) && k < 20 {
            self.eye = self.target + (self.eye - self.target) * 0.8;
            k += 1;
        }
        self
    }

    /// View–projection matrix (wgpu clip space, depth 0..1).
    pub fn view_proj(&self, aspect: f32, near: f32, far: f32) -> Mat4 {
        use glam::camera::rh::{proj::directx, view};
        directx::perspective(self.fov_y_deg.to_radians(), aspect, near, far)
            * view::look_at_mat4(self.eye, self.target, self.up)
    }
}

/// An RGBA8 picture (sRGB, rows top to bottom).
#[derive(Clone, Debug, PartialEq)]
pub struct Picture {
    /// Width \[px\].
    pub width: u32,
    /// Height \[px\].
    pub height: u32,
    /// `4 · width · height` bytes.
    pub rgba: Vec<u8>,
}

impl Picture {
    /// PNG bytes.
    pub fn to_png(&self) -> Result<Vec<u8>, RenderError> {
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, self.width, self.height);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
        let err =
            |e: png::EncodingError| RenderError::Output { path: PathBuf::from("(memory)"), message: e.to_string() };
        let mut w = enc.write_header().map_err(err)?;
        w.write_image_data(&self.rgba).map_err(err)?;
        w.finish().map_err(err)?;
        Ok(out)
    }

    /// Writes the PNG to `path` (creating its directory).
    pub fn write_png(&self, path: &Path) -> Result<(), RenderError> {
        let out = |e: std::io::Error| RenderError::Output { path: path.to_owned(), message: e.to_string() };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(out)?;
        }
        std::fs::write(path, self.to_png()?).map_err(out)
    }

    /// The share of pixels that differ from the top-left pixel (the background) by more than
    /// a few levels: how much of the picture shows something.
    pub fn coverage(&self) -> f64 {
        let bg = &self.rgba[..4.min(self.rgba.len())];
        let differ =
            self.rgba.chunks_exact(4).filter(|p| p.iter().zip(bg).take(3).any(|(a, b)| a.abs_diff(*b) > 8)).count();
        differ as f64 / (self.width as f64 * self.height as f64).max(1.0)
    }

    /// The share of pixels that differ by more than a few levels from `other`'s (same size).
    pub fn difference(&self, other: &Picture) -> f64 {
        let differ = self
            .rgba
            .chunks_exact(4)
            .zip(other.rgba.chunks_exact(4))
            .filter(|(a, b)| a.iter().zip(b.iter()).take(3).any(|(x, y)| x.abs_diff(*y) > 8))
            .count();
        differ as f64 / (self.width as f64 * self.height as f64).max(1.0)
    }
}
