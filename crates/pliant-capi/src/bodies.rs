//! Bodies: solids from a box, a sphere or the caller's tet mesh, cloth from a grid or the
//! caller's triangles; removal, velocity, and pins (fixed, or scripted targets the caller
//! moves every frame: grippers, VR hands, animated attachments).

use pliant::prelude::*;
use pliant::{SoftBody, SoftBodyHandle};

use crate::input::{self, body_size, grid_size, reference, slice, write};
use crate::registry::{self, BodyExtra, Entry, PliantBody, PliantWorld};
use crate::status::{Failure, PliantStatus, guard};
use crate::types::{PliantClothDesc, PliantSolidDesc};

/// Fills `out` with a solid's defaults (stable neo-Hookean, E = 1e5 Pa, nu = 0.3,
/// rho = 1000 kg/m^3, mu = 0.5, at the origin, at rest, VBD).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_solid_desc_default(out: *mut PliantSolidDesc) -> PliantStatus {
    guard("pliant_solid_desc_default", || unsafe { write(out, "out", PliantSolidDesc::default()) })
}

/// Fills `out` with a cloth's defaults (E = 2e6 Pa, nu = 0.3, 0.5 mm, rho = 400 kg/m^3, mu = 0.5).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_cloth_desc_default(out: *mut PliantClothDesc) -> PliantStatus {
    guard("pliant_cloth_desc_default", || unsafe { write(out, "out", PliantClothDesc::default()) })
}

fn not_in_world(body: PliantBody) -> Failure {
    Failure::new(
        PliantStatus::InvalidHandle,
        format!("body {:#x} is not in this world (removed, from another world, or never made)", body.id),
    )
}

/// The handle `body` stands for, if it is in `e`'s world.
pub(crate) fn handle_in(e: &Entry, body: PliantBody) -> Result<SoftBodyHandle, Failure> {
    body_in(e, body).map(|_| body.handle(e.id))
}

/// `body`, if it is in `e`'s world.
pub(crate) fn body_in(e: &Entry, body: PliantBody) -> Result<&SoftBody, Failure> {
    e.world.bodies.get(body.handle(e.id)).ok_or_else(|| not_in_world(body))
}

fn body_in_mut(e: &mut Entry, body: PliantBody) -> Result<&mut SoftBody, Failure> {
    e.world.bodies.get_mut(body.handle(e.id)).ok_or_else(|| not_in_world(body))
}

/// `body`'s vertex positions, packed (it is, once in the world and synced).
pub(crate) fn packed_positions(e: &Entry, body: PliantBody) -> Result<&[Vec4], Failure> {
    e.world.body_positions(body.handle(e.id)).ok_or_else(|| not_in_world(body))
}

/// Inserts a built body (packed at once, so its positions can be read before the first step).
fn insert(e: &mut Entry, body: SoftBody, tets: Option<TetMesh>) -> PliantBody {
    let h = e.world.bodies.insert(body);
    e.world.sync();
    e.bodies.insert(h, BodyExtra { tets, render: None });
    PliantBody::from_handle(e.id, h)
}

/// Builds a solid from `mesh` and `desc` in `world`, writing its id to `out_body`.
unsafe fn add_solid(
    world: PliantWorld,
    desc: *const PliantSolidDesc,
    mesh: impl FnOnce() -> Result<TetMesh, Failure>,
    out_body: *mut PliantBody,
) -> Result<(), Failure> {
    unsafe { write(out_body, "out_body", PliantBody::NONE) }?;
    let desc = unsafe { reference(desc, "desc") }?;
    let name = unsafe { input::name(desc.name, "soft_body", "desc.name") }?;
    let mesh = mesh()?;
    let body = desc.builder(mesh.clone(), name)?.build()?;
    registry::with(world, |e| {
        let id = insert(e, body, Some(mesh));
        unsafe { write(out_body, "out_body", id) }
    })
}

/// Builds a cloth from `mesh` and `desc` in `world`, writing its id to `out_body`.
unsafe fn add_cloth(
    world: PliantWorld,
    desc: *const PliantClothDesc,
    mesh: impl FnOnce() -> Result<TriMesh, Failure>,
    out_body: *mut PliantBody,
) -> Result<(), Failure> {
    unsafe { write(out_body, "out_body", PliantBody::NONE) }?;
    let desc = unsafe { reference(desc, "desc") }?;
    let name = unsafe { input::name(desc.name, "cloth", "desc.name") }?;
    let body = desc.builder(mesh()?, name)?.build()?;
    registry::with(world, |e| {
        let id = insert(e, body, None);
        unsafe { write(out_body, "out_body", id) }
    })
}

/// Adds a solid box of `size[3]` (m) centred on its origin, split into `cells[3]` cells
/// along x, y, z (six tets each).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_add_box(
    world: PliantWorld,
    desc: *const PliantSolidDesc,
    size: *const f32,
    cells: *const u32,
    out_body: *mut PliantBody,
) -> PliantStatus {
    guard("pliant_world_add_box", || unsafe {
        write(out_body, "out_body", PliantBody::NONE)?;
        let size = input::vec3(size, "size")?;
        let cells = input::elements::<3>(slice(cells, 3, "cells")?)[0];
        grid_size(&cells, 6, "cells")?;
        add_solid(world, desc, || Ok(TetMesh::box_mesh(size, cells, TetSplit::Six)?), out_body)
    })
}

/// Adds a solid ball of `radius` (m) centred on its origin, `cells` cells across.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_add_sphere(
    world: PliantWorld,
    desc: *const PliantSolidDesc,
    radius: f32,
    cells: u32,
    out_body: *mut PliantBody,
) -> PliantStatus {
    guard("pliant_world_add_sphere", || unsafe {
        write(out_body, "out_body", PliantBody::NONE)?;
        grid_size(&[cells; 3], 6, "cells")?;
        add_solid(world, desc, || Ok(TetMesh::sphere(radius, cells, TetSplit::Six)?), out_body)
    })
}

/// Adds a solid from the caller's tet mesh: `vertex_count` points (`positions`, 3 floats each,
/// (m)) and `tet_count` tets (`tets`, 4 vertex indices each, positively oriented).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_add_tet_mesh(
    world: PliantWorld,
    desc: *const PliantSolidDesc,
    positions: *const f32,
    vertex_count: usize,
    tets: *const u32,
    tet_count: usize,
    out_body: *mut PliantBody,
) -> PliantStatus {
    guard("pliant_world_add_tet_mesh", || unsafe {
        write(out_body, "out_body", PliantBody::NONE)?;
        body_size(vertex_count as u64, tet_count as u64, "vertex_count, tet_count")?;
        let points = input::points(slice(positions, vertex_count.saturating_mul(3), "positions")?, "positions")?;
        let tets = input::elements::<4>(slice(tets, tet_count.saturating_mul(4), "tets")?);
        add_solid(world, desc, || Ok(TetMesh::new(points, tets)?), out_body)
    })
}

/// Adds a square-celled cloth in its local y = 0 plane: `size[2]` (m) along x and z,
/// `cells[2]` cells along each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_add_cloth_grid(
    world: PliantWorld,
    desc: *const PliantClothDesc,
    size: *const f32,
    cells: *const u32,
    out_body: *mut PliantBody,
) -> PliantStatus {
    guard("pliant_world_add_cloth_grid", || unsafe {
        write(out_body, "out_body", PliantBody::NONE)?;
        let size = slice(size, 2, "size")?;
        let size = Vec2::new(input::finite(size[0], "size.x")?, input::finite(size[1], "size.z")?);
        let cells = input::elements::<2>(slice(cells, 2, "cells")?)[0];
        grid_size(&cells, 2, "cells")?;
        add_cloth(world, desc, || Ok(TriMesh::cloth_grid(size, cells)?), out_body)
    })
}

/// Adds a cloth from the caller's triangles: `vertex_count` points (3 floats each, (m)) and
/// `triangle_count` triangles (3 vertex indices each).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_add_cloth_mesh(
    world: PliantWorld,
    desc: *const PliantClothDesc,
    positions: *const f32,
    vertex_count: usize,
    triangles: *const u32,
    triangle_count: usize,
    out_body: *mut PliantBody,
) -> PliantStatus {
    guard("pliant_world_add_cloth_mesh", || unsafe {
        write(out_body, "out_body", PliantBody::NONE)?;
        body_size(vertex_count as u64, triangle_count as u64, "vertex_count, triangle_count")?;
        let points = input::points(slice(positions, vertex_count.saturating_mul(3), "positions")?, "positions")?;
        let triangles = input::elements::<3>(slice(triangles, triangle_count.saturating_mul(3), "triangles")?);
        add_cloth(world, desc, || Ok(TriMesh::new(points, triangles)?), out_body)
    })
}

/// Removes `body` from `world`; its id becomes invalid.
#[unsafe(no_mangle)]
pub extern "C" fn pliant_world_remove_body(world: PliantWorld, body: PliantBody) -> PliantStatus {
    guard("pliant_world_remove_body", || {
        registry::with(world, |e| {
            let h = handle_in(e, body)?;
            e.world.bodies.remove(h);
            e.bodies.remove(&h);
            Ok(())
        })
    })
}

/// Writes the number of bodies in `world` to `out_count`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_world_body_count(world: PliantWorld, out_count: *mut u32) -> PliantStatus {
    guard("pliant_world_body_count", || {
        registry::with(world, |e| unsafe { write(out_count, "out_count", e.world.bodies.len() as u32) })
    })
}

/// Sets every vertex of `body` to the velocity `velocity[3]` (m/s) (a throw, a shot).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_body_set_velocity(
    world: PliantWorld,
    body: PliantBody,
    velocity: *const f32,
) -> PliantStatus {
    guard("pliant_body_set_velocity", || {
        let v = unsafe { input::vec3(velocity, "velocity") }?;
        registry::with(world, |e| {
            let h = handle_in(e, body)?;
            Ok(e.world.set_body_velocity(h, v)?)
        })
    })
}

/// Teleports `body`'s vertices to `positions` (`vertex_count` points of 3 floats, one per
/// vertex, in the body's vertex order), keeping their velocities: a respawn or a reset. Pins
/// are anchored again where their vertices now are.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_body_set_positions(
    world: PliantWorld,
    body: PliantBody,
    positions: *const f32,
    vertex_count: usize,
) -> PliantStatus {
    guard("pliant_body_set_positions", || {
        let flat = unsafe { slice(positions, vertex_count.saturating_mul(3), "positions") }?;
        let points = input::points(flat, "positions")?;
        registry::with(world, |e| {
            let h = handle_in(e, body)?;
            Ok(e.world.set_body_positions(h, &points)?)
        })
    })
}

/// Pins `vertex_count` vertices of `body` (indices into its vertices). With `scripted` 0 they
/// stay where they are; with `scripted` 1 they follow the targets set each frame by
/// `pliant_body_set_pin_targets` (they start at their current positions). The pin's index goes
/// to `out_pin` (may be null; `UINT32_MAX` on failure). Removing a pin moves the pins after it
/// down one index.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_body_add_pin(
    world: PliantWorld,
    body: PliantBody,
    vertices: *const u32,
    vertex_count: usize,
    scripted: u32,
    out_pin: *mut u32,
) -> PliantStatus {
    guard("pliant_body_add_pin", || {
        unsafe { input::write_optional(out_pin, u32::MAX) };
        let vertices = unsafe { slice(vertices, vertex_count, "vertices") }?.to_vec();
        let scripted = input::flag(scripted, "scripted")?;
        registry::with(world, |e| {
            let pin = if scripted {
                crate::read::refresh(e);
                let x = packed_positions(e, body)?;
                let targets = vertices
                    .iter()
                    .map(|&v| {
                        x.get(v as usize).map(|p| p.truncate()).ok_or_else(|| {
                            Failure::new(
                                PliantStatus::Body,
                                format!("pin vertex {v} is out of range: the body has {} vertices", x.len()),
                            )
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Pin::scripted(vertices, targets)
            } else {
                Pin::fixed(vertices)
            };
            let index = body_in_mut(e, body)?.add_pin(pin)?;
            unsafe { input::write_optional(out_pin, index as u32) };
            Ok(())
        })
    })
}

/// Moves scripted pin `pin` of `body`: `target_count` targets (3 floats each, (m)), one per
/// vertex of the pin in the order it was made. Call it before each step.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_body_set_pin_targets(
    world: PliantWorld,
    body: PliantBody,
    pin: u32,
    targets: *const f32,
    target_count: usize,
) -> PliantStatus {
    guard("pliant_body_set_pin_targets", || {
        let targets = input::points(unsafe { slice(targets, target_count.saturating_mul(3), "targets") }?, "targets")?;
        registry::with(world, |e| {
            let h = handle_in(e, body)?;
            Ok(e.world.set_pin_targets(h, pin as usize, &targets)?)
        })
    })
}

/// Releases pin `pin` of `body` (its vertices keep their velocity); the pins after it move
/// down one index.
#[unsafe(no_mangle)]
pub extern "C" fn pliant_body_remove_pin(world: PliantWorld, body: PliantBody, pin: u32) -> PliantStatus {
    guard("pliant_body_remove_pin", || {
        registry::with(world, |e| {
            let b = body_in_mut(e, body)?;
            let name = b.name().to_string();
            b.remove_pin(pin as usize)
                .map(|_| ())
                .ok_or_else(|| pliant::PliantError::NoSuchPin { body: name, pin: pin as usize }.into())
        })
    })
}
