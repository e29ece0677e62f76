//! Reading accessors the way glTF defines them, with every offset and count from the file
//! checked: tightly packed or strided views, any component type the geometry may use
//! (`KHR_mesh_quantization` stores positions as normalized or plain 8/16-bit integers), an
//! accessor without a buffer view (zeros) and sparse substitutions on top.
//!
//! The gltf crate's own reader reads positions only as f32 and trusts the file's offsets, so
//! a quantized or malformed asset would be misread or panic; this reader returns a message
//! saying what does not fit instead.

use glam::Vec3;
use gltf::accessor::{DataType, Dimensions};

/// The most elements an accessor without a buffer view may declare: its count is all the
/// file says about it, so it is bounded before anything is allocated.
const MAX_ZERO_ELEMENTS: usize = 1 << 22;

/// Reads accessor `a` as 3-vectors (`POSITION`, `NORMAL`): f32, or integers (normalized to
/// [−1, 1] or [0, 1] when the accessor says so, plain values otherwise).
pub(super) fn read_vec3(a: &gltf::Accessor<'_>, buffers: &[Vec<u8>]) -> Result<Vec<Vec3>, String> {
    if a.dimensions() != Dimensions::Vec3 {
        return Err(format!("accessor {} is {:?}; it must be VEC3", a.index(), a.dimensions()));
    }
    if a.data_type() == DataType::U32 {
        return Err(format!("accessor {} is VEC3 of UNSIGNED_INT, which glTF does not allow for vertices", a.index()));
    }
    let normalized = a.normalized();
    let values = read_components(a, buffers, |bytes, ty| component(bytes, ty, normalized))?;
    Ok(values.chunks_exact(3).map(|c| Vec3::new(c[0], c[1], c[2])).collect())
}

/// Reads accessor `a` as vertex indices (unsigned 8, 16 or 32-bit scalars).
pub(super) fn read_indices(a: &gltf::Accessor<'_>, buffers: &[Vec<u8>]) -> Result<Vec<u32>, String> {
    let kind_ok =
        matches!(a.data_type(), DataType::U8 | DataType::U16 | DataType::U32) && a.dimensions() == Dimensions::Scalar;
    if !kind_ok || a.normalized() {
        return Err(format!(
            "accessor {} is {:?} of {:?}{}; indices must be SCALAR of UNSIGNED_BYTE, _SHORT or _INT",
            a.index(),
            a.dimensions(),
            a.data_type(),
            if a.normalized() { ", normalized" } else { "" }
        ));
    }
    read_components(a, buffers, |bytes, ty| unsigned(bytes, ty) as f64)
        .map(|v| v.into_iter().map(|i| i as u32).collect())
}

/// One component at the start of `bytes` (little-endian), as a float.
fn component(bytes: &[u8], ty: DataType, normalized: bool) -> f32 {
    let b = |n: usize| -> [u8; 4] {
        let mut out = [0; 4];
        out[..n].copy_from_slice(&bytes[..n]);
        out
    };
    match (ty, normalized) {
        (DataType::F32, _) => f32::from_le_bytes(b(4)),
        // glTF 2.0 §3.11: signed values map to max(c / (2^(n−1) − 1), −1).
        (DataType::I8, true) => (bytes[0] as i8 as f32 / 127.0).max(-1.0),
        (DataType::I16, true) => (i16::from_le_bytes([bytes[0], bytes[1]]) as f32 / 32767.0).max(-1.0),
        (DataType::U8, true) => bytes[0] as f32 / 255.0,
        (DataType::U16, true) => u16::from_le_bytes([bytes[0], bytes[1]]) as f32 / 65535.0,
        (DataType::I8, false) => bytes[0] as i8 as f32,
        (DataType::I16, false) => i16::from_le_bytes([bytes[0], bytes[1]]) as f32,
        (DataType::U32, true) => u32::from_le_bytes(b(4)) as f32 / u32::MAX as f32,
        _ => unsigned(bytes, ty) as f32,
    }
}

/// An unsigned integer component.
fn unsigned(bytes: &[u8], ty: DataType) -> u32 {
    match ty {
        DataType::U8 | DataType::I8 => bytes[0] as u32,
        DataType::U16 | DataType::I16 => u16::from_le_bytes([bytes[0], bytes[1]]) as u32,
        _ => u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
    }
}

/// The bytes of buffer view `view` from `offset` on, checked against the buffer; `what` names
/// the reader for the message.
fn view_bytes<'b>(view: &gltf::buffer::View<'_>, buffers: &'b [Vec<u8>], what: &str) -> Result<&'b [u8], String> {
    let data = buffers.get(view.buffer().index()).map_or(&[][..], Vec::as_slice);
    match view.offset().checked_add(view.length()) {
        Some(end) if end <= data.len() => Ok(&data[view.offset()..end]),
        _ => Err(format!(
            "{what} reads buffer view {} ({} bytes at {}), beyond its buffer's {} bytes",
            view.index(),
            view.length(),
            view.offset(),
            data.len()
        )),
    }
}

/// `count` elements of `size` bytes, `stride` apart from `offset` in `bytes`, each handed to
/// `each` (checked: nothing past the end).
fn elements<'b>(
    bytes: &'b [u8],
    offset: usize,
    count: usize,
    size: usize,
    stride: usize,
    what: &str,
) -> Result<impl Iterator<Item = &'b [u8]>, String> {
    let needed = count.checked_sub(1).map_or(Some(0), |last| {
        last.checked_mul(stride).and_then(|n| n.checked_add(offset)).and_then(|n| n.checked_add(size))
    });
    if needed.is_none_or(|n| n > bytes.len()) {
        return Err(format!(
            "{what} needs {count} elements of {size} bytes, {stride} apart from offset {offset}, in {} bytes",
            bytes.len()
        ));
    }
    Ok((0..count).map(move |k| &bytes[offset + k * stride..offset + k * stride + size]))
}

/// Every component of accessor `a` in order (element by element), converted by `convert`,
/// with the sparse substitutions applied.
fn read_components<T: Copy + Default>(
    a: &gltf::Accessor<'_>,
    buffers: &[Vec<u8>],
    convert: impl Fn(&[u8], DataType) -> T,
) -> Result<Vec<T>, String> {
    let ty = a.data_type();
    let comps = a.dimensions().multiplicity();
    let csize = ty.size();
    let size = comps * csize;
    let count = a.count();
    let what = format!("accessor {}", a.index());
    if count == 0 {
        return Err(format!("{what} has no elements"));
    }
    let split = |e: &[u8], out: &mut Vec<T>| {
        for c in 0..comps {
            out.push(convert(&e[c * csize..], ty));
        }
    };
    let mut out = Vec::new();
    match a.view() {
        Some(view) => {
            let bytes = view_bytes(&view, buffers, &what)?;
            let stride = view.stride().unwrap_or(size);
            if stride < size {
                return Err(format!(
                    "buffer view {} has stride {stride}, shorter than an element of {what} ({size} bytes)",
                    view.index()
                ));
            }
            // Checked first, so the allocation is bounded by the file's size.
            let all = elements(bytes, a.offset(), count, size, stride, &what)?;
            out.reserve_exact(count * comps);
            for e in all {
                split(e, &mut out);
            }
        }
        // No buffer view: zeros, unless sparse values replace some (glTF 2.0 §3.6.2.3).
        None if count > MAX_ZERO_ELEMENTS => {
            return Err(format!("{what} has {count} elements but no data (at most {MAX_ZERO_ELEMENTS} are read so)"));
        }
        None => out.resize(count * comps, T::default()),
    }
    if let Some(sparse) = a.sparse() {
        let n = sparse.count();
        let (iv, vv) = (sparse.indices(), sparse.values());
        let index_type = match iv.index_type() {
            gltf::accessor::sparse::IndexType::U8 => DataType::U8,
            gltf::accessor::sparse::IndexType::U16 => DataType::U16,
            gltf::accessor::sparse::IndexType::U32 => DataType::U32,
        };
        let swhat = format!("{what}'s sparse indices");
        let ibytes = view_bytes(&iv.view(), buffers, &swhat)?;
        let indices: Vec<usize> = elements(ibytes, iv.offset(), n, index_type.size(), index_type.size(), &swhat)?
            .map(|b| unsigned(b, index_type) as usize)
            .collect();
        let vwhat = format!("{what}'s sparse values");
        let vbytes = view_bytes(&vv.view(), buffers, &vwhat)?;
        for (k, (i, e)) in indices.iter().zip(elements(vbytes, vv.offset(), n, size, size, &vwhat)?).enumerate() {
            if *i >= count {
                return Err(format!("{what}: sparse index {k} is {i}, but the accessor has {count} elements"));
            }
            let mut value = Vec::with_capacity(comps);
            split(e, &mut value);
            out[i * comps..(i + 1) * comps].copy_from_slice(&value);
        }
    }
    Ok(out)
}
