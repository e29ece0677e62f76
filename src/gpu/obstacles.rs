//! Analytic obstacles packed for the kernels' uniforms (`shaders/lib/obstacles.wgsl`).

use bytemuck::{Pod, Zeroable};

use crate::collision::{Obstacle, ObstacleShape};
use crate::gpu::GpuError;

/// Obstacles a GPU step takes: they ride in each kernel's uniform, so no storage binding is
/// spent on them (WebGPU allows 8 per stage).
pub const MAX_OBSTACLES: usize = 8;

/// One obstacle as `shaders/lib/obstacles.wgsl` reads it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuObstacle {
    kind: u32,
    friction: f32,
    _pad: [u32; 2],
    a: [f32; 4],
    b: [f32; 4],
    q: [f32; 4],
}

/// The `ObstacleSet` uniform block.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct GpuObstacleSet {
    count: u32,
    _pad: [u32; 3],
    items: [GpuObstacle; MAX_OBSTACLES],
}

impl GpuObstacleSet {
    /// Obstacles in the set.
    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// Whether a box or a sphere is in the set: surface spans are tested against them
    /// (`gpu::vbd::vbd_spans`).
    pub fn has_spans(&self) -> bool {
        self.items[..self.count()].iter().any(|o| o.kind == 1 || o.kind == 2)
    }

    /// Packs `obstacles`; more than [`MAX_OBSTACLES`] is an error naming the count.
    pub fn pack(obstacles: &[Obstacle]) -> Result<Self, GpuError> {
        if obstacles.len() > MAX_OBSTACLES {
            return Err(GpuError::Unsupported {
                feature: format!("{} obstacles (a GPU step takes at most {MAX_OBSTACLES})", obstacles.len()),
            });
        }
        let mut set = Self::zeroed();
        set.count = obstacles.len() as u32;
        for (slot, o) in set.items.iter_mut().zip(obstacles) {
            *slot = match o.shape {
                ObstacleShape::Posed(_) => {
                    return Err(GpuError::Unsupported {
                        feature: "moving obstacles of general shape (rapier colliders)".into(),
                    });
                }
                ObstacleShape::Plane { normal, offset } => {
                    GpuObstacle { kind: 0, a: normal.extend(offset).to_array(), ..Default::default() }
                }
                ObstacleShape::Sphere { center, radius } => {
                    GpuObstacle { kind: 1, a: center.extend(radius).to_array(), ..Default::default() }
                }
                ObstacleShape::Cuboid { center, half_extents, rotation } => GpuObstacle {
                    kind: 2,
                    a: center.extend(0.0).to_array(),
                    b: half_extents.extend(0.0).to_array(),
                    q: rotation.to_array(),
                    ..Default::default()
                },
            };
            slot.friction = o.friction;
        }
        Ok(set)
    }
}
