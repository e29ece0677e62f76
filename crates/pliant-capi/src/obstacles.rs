//! Analytic obstacles: the ground, half-spaces, boxes and spheres that soft bodies rest on and
//! slide along. They are numbered in the order they were added; removing one renumbers those
//! after it.

use pliant::prelude::*;

use crate::input::{quat_of, vec3, write, write_optional};
use crate::registry::{self, PliantWorld};
use crate::status::{Failure, PliantStatus, guard};

/// Validates `obstacle`, adds it to `world` and writes its index to `out_index` (may be null).
unsafe fn add(world: PliantWorld, obstacle: Result<Obstacle, Failure>, out_index: *mut u32) -> Result<(), Failure> {
    let obstacle = obstacle?.validated()?;
    registry::with(world, |e| {
        e.world.obstacles.push(obstacle);
        unsafe { write_optional(out_index, (e.world.obstacles.len() - 1) as u32) };
        Ok(())
    })
}

/// Adds the ground: everything below `y = height` (m) is solid, with friction coefficient
/// `friction`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_add_ground(
    world: PliantWorld,
    height: f32,
    friction: f32,
    out_index: *mut u32,
) -> PliantStatus {
    guard("pliant_world_add_ground", || unsafe { add(world, Ok(Obstacle::ground(height, friction)), out_index) })
}

/// Adds a solid half-space: its boundary passes through `point[3]` and `normal[3]` (any
/// non-zero length) points out of it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_add_plane(
    world: PliantWorld,
    normal: *const f32,
    point: *const f32,
    friction: f32,
    out_index: *mut u32,
) -> PliantStatus {
    guard("pliant_world_add_plane", || unsafe {
        let o = Obstacle::plane(vec3(normal, "normal")?, vec3(point, "point")?, friction).map_err(Failure::from);
        add(world, o, out_index)
    })
}

/// Adds a solid box: centre `center[3]`, half its size along each axis `half_extents[3]`,
/// orientation `rotation[4]` as a quaternion `(x, y, z, w)` (null: axis-aligned).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_add_box_obstacle(
    world: PliantWorld,
    center: *const f32,
    half_extents: *const f32,
    rotation: *const f32,
    friction: f32,
    out_index: *mut u32,
) -> PliantStatus {
    guard("pliant_world_add_box_obstacle", || unsafe {
        let rotation = match rotation.is_null() {
            true => Quat::IDENTITY,
            false => quat_of(*rotation.cast::<[f32; 4]>(), "rotation")?,
        };
        let o = Obstacle::cuboid(vec3(center, "center")?, vec3(half_extents, "half_extents")?, rotation, friction);
        add(world, o.map_err(Failure::from), out_index)
    })
}

/// Adds a solid sphere of `radius` (m) centred at `center[3]`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_add_sphere_obstacle(
    world: PliantWorld,
    center: *const f32,
    radius: f32,
    friction: f32,
    out_index: *mut u32,
) -> PliantStatus {
    guard("pliant_world_add_sphere_obstacle", || unsafe {
        let o = Obstacle::sphere(vec3(center, "center")?, radius, friction).map_err(Failure::from);
        add(world, o, out_index)
    })
}

/// Writes the number of obstacles in `world` to `out_count`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_obstacle_count(world: PliantWorld, out_count: *mut u32) -> PliantStatus {
    guard("pliant_world_obstacle_count", || {
        registry::with(world, |e| unsafe { write(out_count, "out_count", e.world.obstacles.len() as u32) })
    })
}

/// Removes obstacle `index`; the obstacles after it move down one index.
#[unsafe(no_mangle)]
pub extern "C" fn pliant_world_remove_obstacle(world: PliantWorld, index: u32) -> PliantStatus {
    guard("pliant_world_remove_obstacle", || {
        registry::with(world, |e| {
            let n = e.world.obstacles.len();
            if index as usize >= n {
                return Err(Failure::invalid(format!("obstacle {index} does not exist: the world has {n}")));
            }
            e.world.obstacles.remove(index as usize);
            Ok(())
        })
    })
}
