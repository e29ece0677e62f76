//! Reading what a C caller hands in: pointers that may be null, arrays with a length, numbers
//! that may be NaN, names that may not be UTF-8. Each reader names the argument it rejects.

use std::ffi::{CStr, c_char};

use pliant::prelude::{Quat, Vec3};

use crate::status::{Failure, PliantStatus};

/// The most vertices a body may have through the C ABI (generated or the caller's): a typo'd
/// resolution becomes an error instead of an allocation that aborts the process. A million
/// vertices is far beyond a real-time body.
pub(crate) const MAX_VERTICES: u64 = 1 << 20;

/// The most elements (tets or triangles) a body may have through the C ABI.
pub(crate) const MAX_ELEMENTS: u64 = 1 << 23;

/// The most entries an array argument may have (so that byte sizes never overflow).
const MAX_LEN: usize = 1 << 28;

/// `&*p`, or `PLIANT_STATUS_NULL_POINTER` naming `what`.
///
/// # Safety
/// `p` is null or points to a valid `T`.
pub(crate) unsafe fn reference<'a, T>(p: *const T, what: &str) -> Result<&'a T, Failure> {
    // SAFETY: the caller's contract.
    unsafe { p.as_ref() }.ok_or_else(|| Failure::null(what))
}

/// Writes `value` through an out-pointer.
///
/// # Safety
/// `p` is null or points to writable memory for a `T`.
pub(crate) unsafe fn write<T>(p: *mut T, what: &str, value: T) -> Result<(), Failure> {
    if p.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: non-null, and writable by the caller's contract.
    unsafe { p.write(value) };
    Ok(())
}

/// Writes `value` through an out-pointer the caller may leave null.
///
/// # Safety
/// As [`write`].
pub(crate) unsafe fn write_optional<T>(p: *mut T, value: T) {
    if !p.is_null() {
        // SAFETY: non-null, and writable by the caller's contract.
        unsafe { p.write(value) };
    }
}

/// The array `p[0..len]`; null is accepted only with `len == 0`.
///
/// # Safety
/// `p` is null or points to `len` valid `T`s.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: usize, what: &str) -> Result<&'a [T], Failure> {
    if len > MAX_LEN {
        return Err(Failure::invalid(format!("`{what}` has length {len}, more than {MAX_LEN}")));
    }
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Failure::new(PliantStatus::NullPointer, format!("`{what}` is null but its length is {len}")));
    }
    // SAFETY: non-null, `len` elements by the caller's contract, `len * size_of::<T>()` fits.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// The caller's buffer `p[0..capacity]` for `needed` elements: the needed count goes to
/// `count` (when not null) before anything else, so a caller can ask with capacity 0.
///
/// # Safety
/// `p` is null or points to `capacity` writable `T`s; `count` is null or writable.
pub(crate) unsafe fn buffer<'a, T>(
    p: *mut T,
    capacity: usize,
    needed: usize,
    count: *mut usize,
    what: &str,
) -> Result<&'a mut [T], Failure> {
    // SAFETY: the caller's contract.
    unsafe { write_optional(count, needed) };
    if capacity < needed {
        return Err(Failure::new(
            PliantStatus::BufferTooSmall,
            format!("`{what}` holds {capacity} but {needed} are needed"),
        ));
    }
    if needed == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: non-null, at least `needed` writable elements by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, needed) })
}

/// Elements of `N` indices (tets, triangles, a grid's cells) from a flat array of `N n`.
pub(crate) fn elements<const N: usize>(flat: &[u32]) -> Vec<[u32; N]> {
    flat.chunks_exact(N).map(|c| std::array::from_fn(|i| c[i])).collect()
}

/// A finite number, or `PLIANT_STATUS_INVALID_ARGUMENT` naming `what` and the value.
pub(crate) fn finite(value: f32, what: &str) -> Result<f32, Failure> {
    if value.is_finite() { Ok(value) } else { Err(Failure::invalid(format!("`{what}` is {value}, not finite"))) }
}

/// A `float[3]` argument, finite.
///
/// # Safety
/// `p` is null or points to 3 floats.
pub(crate) unsafe fn vec3(p: *const f32, what: &str) -> Result<Vec3, Failure> {
    // SAFETY: the caller's contract.
    let v = unsafe { slice(p, 3, what) }?;
    vec3_of(v, what)
}

/// `v[0..3]` as a finite vector.
pub(crate) fn vec3_of(v: &[f32], what: &str) -> Result<Vec3, Failure> {
    for (axis, &c) in ["x", "y", "z"].iter().zip(v) {
        finite(c, &format!("{what}.{axis}"))?;
    }
    Ok(Vec3::new(v[0], v[1], v[2]))
}

/// A `float[4]` quaternion `(x, y, z, w)`, finite and not zero; normalised (in f64, so that
/// neither a tiny nor a huge one over- or underflows to a zero rotation).
pub(crate) fn quat_of(q: [f32; 4], what: &str) -> Result<Quat, Failure> {
    for (axis, &c) in ["x", "y", "z", "w"].iter().zip(&q) {
        finite(c, &format!("{what}.{axis}"))?;
    }
    let d = q.map(f64::from);
    let length = d.iter().map(|c| c * c).sum::<f64>().sqrt();
    if !(length > 1e-6) {
        return Err(Failure::invalid(format!("`{what}` = {q:?} has (near) zero length: not a rotation")));
    }
    let unit = Quat::from_array(d.map(|c| (c / length) as f32));
    debug_assert!(unit.is_normalized());
    Ok(unit)
}

/// `n` points `[x, y, z]` from a flat array of `3 n` floats, each finite.
pub(crate) fn points(flat: &[f32], what: &str) -> Result<Vec<Vec3>, Failure> {
    flat.chunks_exact(3).enumerate().map(|(i, p)| vec3_of(p, &format!("{what}[{i}]"))).collect()
}

/// A name the caller may leave null (then `default`).
///
/// # Safety
/// `p` is null or points to a NUL-terminated string.
pub(crate) unsafe fn name(p: *const c_char, default: &str, what: &str) -> Result<String, Failure> {
    if p.is_null() {
        return Ok(default.to_string());
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map(str::to_string).map_err(|e| Failure::invalid(format!("`{what}` is not UTF-8: {e}")))
}

/// A C boolean (`0` or `1`); anything else is rejected so that a garbage field is noticed.
pub(crate) fn flag(value: u32, what: &str) -> Result<bool, Failure> {
    match value {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(Failure::invalid(format!("`{what}` is {v}; a flag is 0 or 1"))),
    }
}

/// Checks a grid of `cells` against [`MAX_VERTICES`] and [`MAX_ELEMENTS`]
/// (`per_cell` elements per cell), naming `what`.
pub(crate) fn grid_size(cells: &[u32], per_cell: u64, what: &str) -> Result<(), Failure> {
    let vertices = cells.iter().fold(1u64, |n, &c| n.saturating_mul(u64::from(c) + 1));
    let elements = cells.iter().fold(per_cell, |n, &c| n.saturating_mul(u64::from(c)));
    body_size(vertices, elements, what)
}

/// Checks a body's vertex and element counts against [`MAX_VERTICES`] and [`MAX_ELEMENTS`].
pub(crate) fn body_size(vertices: u64, elements: u64, what: &str) -> Result<(), Failure> {
    if vertices > MAX_VERTICES || elements > MAX_ELEMENTS {
        return Err(Failure::invalid(format!(
            "`{what}` makes {vertices} vertices and {elements} elements; a body here has at most \
             {MAX_VERTICES} and {MAX_ELEMENTS}"
        )));
    }
    Ok(())
}
