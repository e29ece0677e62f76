//! Reading a body back into the caller's buffers: vertex positions and velocities, surface
//! triangles, and the render mesh embedded in a solid (positions and normals). On the GPU
//! backend every read first takes the frames the GPU has finished, without waiting for the
//! ones in flight.

use pliant::prelude::*;
use pliant::{EmbeddedMesh, RenderMesh};

use crate::bodies::{body_in, handle_in, packed_positions};
use crate::input::{self, buffer, slice, write};
use crate::registry::{self, Entry, PliantBody, PliantWorld};
use crate::status::{Failure, PliantStatus, guard};

/// Takes the frames the GPU has finished into the host copy (a no-op on the CPU).
pub(crate) fn refresh(e: &mut Entry) {
    #[cfg(feature = "gpu")]
    let _ = e.world.latest_positions();
    #[cfg(not(feature = "gpu"))]
    let _ = e;
}

/// `body`'s positions, after [`refresh`].
fn positions(e: &mut Entry, body: PliantBody) -> Result<&[Vec4], Failure> {
    handle_in(e, body)?;
    refresh(e);
    e.world.sync();
    packed_positions(e, body)
}

/// Copies `vectors` into the caller's buffer of `capacity` points (3 floats each); the count
/// goes to `out_count` (may be null), also when the buffer is too small.
unsafe fn copy_xyz(
    vectors: impl ExactSizeIterator<Item = Vec3>,
    out: *mut f32,
    capacity: usize,
    out_count: *mut usize,
) -> Result<(), Failure> {
    // `[f32; 3]` has `float`'s alignment: the caller's floats, three at a time.
    let dst = unsafe { buffer(out.cast::<[f32; 3]>(), capacity, vectors.len(), out_count, "out (points)") }?;
    for (d, v) in dst.iter_mut().zip(vectors) {
        *d = v.to_array();
    }
    Ok(())
}

/// Writes `body`'s vertex count to `out_count`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_body_vertex_count(
    world: PliantWorld,
    body: PliantBody,
    out_count: *mut usize,
) -> PliantStatus {
    guard("pliant_body_vertex_count", || {
        registry::with(world, |e| {
            let n = positions(e, body)?.len();
            unsafe { write(out_count, "out_count", n) }
        })
    })
}

/// Copies `body`'s vertex positions (m) into `out` (`capacity` points of 3 floats). The
/// vertex count goes to `out_count` (may be null), also when the buffer is too small.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_body_read_positions(
    world: PliantWorld,
    body: PliantBody,
    out: *mut f32,
    capacity: usize,
    out_count: *mut usize,
) -> PliantStatus {
    guard("pliant_body_read_positions", || {
        registry::with(world, |e| {
            let x = positions(e, body)?;
            unsafe { copy_xyz(x.iter().map(|p| p.truncate()), out, capacity, out_count) }
        })
    })
}

/// Copies `body`'s vertex velocities (m/s) into `out`, as `pliant_body_read_positions`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_body_read_velocities(
    world: PliantWorld,
    body: PliantBody,
    out: *mut f32,
    capacity: usize,
    out_count: *mut usize,
) -> PliantStatus {
    guard("pliant_body_read_velocities", || {
        registry::with(world, |e| {
            let h = handle_in(e, body)?;
            positions(e, body)?;
            let v = e.world.body_velocities(h).unwrap_or_default();
            unsafe { copy_xyz(v.iter().map(|p| p.truncate()), out, capacity, out_count) }
        })
    })
}

/// Copies `body`'s surface triangles (3 vertex indices each, counter-clockwise seen from
/// outside; a cloth's triangles once, so draw them double-sided) into `out` (`capacity` triangles); the count goes to
/// `out_count` (may be null), also when the buffer is too small.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_body_read_surface(
    world: PliantWorld,
    body: PliantBody,
    out: *mut u32,
    capacity: usize,
    out_count: *mut usize,
) -> PliantStatus {
    guard("pliant_body_read_surface", || {
        registry::with(world, |e| {
            let surface = &body_in(e, body)?.shared().surface;
            let dst = unsafe { buffer(out.cast::<[u32; 3]>(), capacity, surface.len(), out_count, "out (triangles)") }?;
            dst.copy_from_slice(surface);
            Ok(())
        })
    })
}

/// Embeds a render mesh in solid `body`: `vertex_count` points (3 floats each) and
/// `triangle_count` triangles, in the coordinates of the mesh the body was made from (before
/// the description's rotation and translation). Its vertices then follow the tets they lie in;
/// read them with `pliant_body_read_render_positions` and `..._normals`. Replaces an earlier one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_body_set_render_mesh(
    world: PliantWorld,
    body: PliantBody,
    positions: *const f32,
    vertex_count: usize,
    triangles: *const u32,
    triangle_count: usize,
) -> PliantStatus {
    guard("pliant_body_set_render_mesh", || {
        input::body_size(vertex_count as u64, triangle_count as u64, "vertex_count, triangle_count")?;
        let points =
            input::points(unsafe { slice(positions, vertex_count.saturating_mul(3), "positions") }?, "positions")?;
        let flat = unsafe { slice(triangles, triangle_count.saturating_mul(3), "triangles") }?;
        if let Some((i, &v)) = flat.iter().enumerate().find(|&(_, &v)| v as usize >= points.len()) {
            return Err(Failure::invalid(format!(
                "`triangles[{}]` uses vertex {v} but the render mesh has {} vertices",
                i / 3,
                points.len()
            )));
        }
        let triangles = input::elements::<3>(flat);
        registry::with(world, |e| {
            let name = body_in(e, body)?.name().to_string();
            let extra = e.bodies.entry(body.handle(e.id)).or_default();
            let tets = extra.tets.as_ref().ok_or_else(|| {
                Failure::invalid(format!(
                    "body `{name}` is a cloth: draw its own vertices (pliant_body_read_positions, \
                     pliant_body_read_surface)"
                ))
            })?;
            // A render mesh far outside the tets (world coordinates, or centimetres against
            // metres) would embed slowly and draw wrongly: say so instead.
            let (lo, hi) = tets.bounds();
            let slack = 0.1 * (hi - lo).length();
            let outside = |p: &Vec3| p.cmplt(lo - slack).any() || p.cmpgt(hi + slack).any();
            if let Some((i, p)) = points.iter().enumerate().find(|(_, p)| outside(p)) {
                return Err(Failure::invalid(format!(
                    "render vertex {i} at {p} is outside the body's mesh ({lo} to {hi}): give the render mesh \
                     in the coordinates of the mesh the body was made from"
                )));
            }
            let mesh = RenderMesh { name, positions: points, normals: None, triangles };
            extra.render = Some(EmbeddedMesh::new(mesh, tets)?);
            Ok(())
        })
    })
}

/// The render mesh of `body`, where the body is now: its vertex positions and, if asked for,
/// its unit normals.
fn render(e: &mut Entry, body: PliantBody, normals: bool) -> Result<Vec<Vec3>, Failure> {
    positions(e, body)?;
    let mesh = e.bodies.get(&body.handle(e.id)).and_then(|b| b.render.as_ref()).ok_or_else(|| {
        Failure::invalid(format!("body {:#x} has no render mesh: set one with pliant_body_set_render_mesh", body.id))
    })?;
    let x = packed_positions(e, body)?;
    let mut p = Vec::new();
    mesh.positions(x, &mut p);
    Ok(if normals { mesh.normals(x, &p) } else { p })
}

/// Copies the render mesh's current vertex positions (m) into `out` (`capacity` points); the
/// count goes to `out_count` (may be null), also when the buffer is too small.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_body_read_render_positions(
    world: PliantWorld,
    body: PliantBody,
    out: *mut f32,
    capacity: usize,
    out_count: *mut usize,
) -> PliantStatus {
    guard("pliant_body_read_render_positions", || {
        registry::with(world, |e| {
            let p = render(e, body, false)?;
            unsafe { copy_xyz(p.into_iter(), out, capacity, out_count) }
        })
    })
}

/// Copies the render mesh's current unit vertex normals into `out`, as
/// `pliant_body_read_render_positions`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pliant_body_read_render_normals(
    world: PliantWorld,
    body: PliantBody,
    out: *mut f32,
    capacity: usize,
    out_count: *mut usize,
) -> PliantStatus {
    guard("pliant_body_read_render_normals", || {
        registry::with(world, |e| {
            let n = render(e, body, true)?;
            unsafe { copy_xyz(n.into_iter(), out, capacity, out_count) }
        })
    })
}
