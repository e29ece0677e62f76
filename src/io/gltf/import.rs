//! Reading one node's triangle mesh from glTF 2.0 (`.gltf` with external or data-URI buffers,
//! or `.glb`).

use std::path::{Path, PathBuf};

use base64::Engine;
use glam::{Mat3, Mat4, Vec3};
use gltf::mesh::Mode;

use super::GltfError;
use crate::mesh::RenderMesh;

/// Reads the triangle mesh of the node named `node` (or of the first node with a mesh, in the
/// default scene's order) from a `.gltf` or `.glb` file. Buffers in other files are resolved
/// next to it.
pub fn read_gltf(path: &Path, node: Option<&str>) -> Result<RenderMesh, GltfError> {
    let bytes = std::fs::read(path).map_err(|e| GltfError::Io { path: path.to_owned(), message: e.to_string() })?;
    parse_gltf(&bytes, path, node)
}

/// As [`read_gltf`], from the file's bytes; `path` labels errors and locates external buffers.
///
/// All triangle primitives of the node's mesh are merged into one render mesh (strips and fans
/// are split into triangles), in world coordinates: the transforms of the node and its
/// ancestors are applied, normals by the inverse transpose, and a mirroring transform flips
/// the triangles so they stay counter-clockwise from outside.
pub fn parse_gltf(bytes: &[u8], path: &Path, node: Option<&str>) -> Result<RenderMesh, GltfError> {
    precheck(bytes, path)?;
    let gltf::Gltf { document, blob } = gltf::Gltf::from_slice(bytes)
        .map_err(|e| GltfError::Parse { path: path.to_owned(), message: e.to_string() })?;
    let buffers = load_buffers(&document, blob, path)?;
    let (target, world) = find_node(&document, node, path)?;
    let Some(mesh) = target.mesh() else {
        return Err(GltfError::NoMesh {
            path: path.to_owned(),
            message: format!("node `{}` has no mesh", target.name().unwrap_or("unnamed")),
        });
    };
    if mesh.primitives().len() == 0 {
        return Err(GltfError::NoPrimitives {
            path: path.to_owned(),
            mesh: mesh.index(),
            name: mesh.name().unwrap_or("unnamed").to_owned(),
        });
    }
    let linear = Mat3::from_mat4(world);
    let normal_matrix = linear.inverse().transpose();
    let mirrored = linear.determinant() < 0.0;
    let mut out =
        RenderMesh { name: target.name().or(mesh.name()).unwrap_or("mesh").to_owned(), ..RenderMesh::default() };
    let mut normals = Some(Vec::new());
    for prim in mesh.primitives() {
        let bad = |message: String| GltfError::BadPrimitive {
            path: path.to_owned(),
            mesh: mesh.index(),
            primitive: prim.index(),
            message,
        };
        let mode = prim.mode();
        if !matches!(mode, Mode::Triangles | Mode::TriangleStrip | Mode::TriangleFan) {
            return Err(GltfError::NotTriangles {
                path: path.to_owned(),
                mesh: mesh.index(),
                primitive: prim.index(),
                mode: format!("{mode:?}"),
            });
        }
        // Only the attributes read below are checked; others (UVs, colours) are ignored.
        for (semantic, name) in [(gltf::Semantic::Positions, "POSITION"), (gltf::Semantic::Normals, "NORMAL")] {
            if let Some(a) = prim.get(&semantic) {
                check_accessor(&a, Role::Vec3, &buffers).map_err(|m| bad(format!("{name}: {m}")))?;
            }
        }
        if let Some(a) = prim.indices() {
            check_accessor(&a, Role::Index, &buffers).map_err(|m| bad(format!("indices: {m}")))?;
        }
        let reader = prim.reader(|b| buffers.get(b.index()).map(Vec::as_slice));
        let Some(read) = reader.read_positions() else {
            return Err(bad("it has no POSITION attribute".into()));
        };
        let local: Vec<Vec3> = read.map(Vec3::from).collect();
        let base = out.positions.len() as u32;
        for (k, p) in local.iter().enumerate() {
            if !p.is_finite() {
                return Err(bad(format!("vertex {k} is not finite: {p}")));
            }
            out.positions.push(world.transform_point3(*p));
        }
        match (reader.read_normals(), normals.as_mut()) {
            (Some(n), Some(all)) => all.extend(n.map(|n| (normal_matrix * Vec3::from(n)).normalize_or(Vec3::Y))),
            _ => normals = None,
        }
        let indices: Vec<u32> = match (reader.read_indices(), prim.indices()) {
            (Some(i), _) => i.into_u32().collect(),
            (None, None) => (0..local.len() as u32).collect(),
            (None, Some(_)) => return Err(bad("its indices cannot be read".into())),
        };
        if let Some((k, &i)) = indices.iter().enumerate().find(|(_, i)| **i as usize >= local.len()) {
            return Err(bad(format!("index {k} is {i}, but the primitive has {} vertices", local.len())));
        }
        let tris = triangles(mode, &indices);
        if tris.is_empty() {
            return Err(bad(format!("{} indices make no triangle", indices.len())));
        }
        for t in tris {
            let t = t.map(|i| base + i);
            out.triangles.push(if mirrored { [t[0], t[2], t[1]] } else { t });
        }
    }
    out.normals = normals.filter(|n| n.len() == out.positions.len());
    Ok(out)
}

/// Checks on the unvalidated document that the gltf crate's validation and reader rely on
/// without checking (they index accessors directly), reported as the most specific error: a
/// GLB header whose length does not fit, a mesh without primitives, a primitive without
/// positions, or one that names an accessor the file does not have.
fn precheck(bytes: &[u8], path: &Path) -> Result<(), GltfError> {
    let parse = |message: String| GltfError::Parse { path: path.to_owned(), message };
    if bytes.starts_with(b"glTF") {
        let declared = bytes.get(8..12).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
        match declared {
            Some(len) if (20..=bytes.len()).contains(&len) => {}
            Some(len) => return Err(parse(format!("GLB header declares {len} bytes; the file has {}", bytes.len()))),
            None => return Err(parse(format!("a GLB file of {} bytes is shorter than its header", bytes.len()))),
        }
    }
    // A document that does not even deserialise is reported by the validated parse.
    let Ok(raw) = gltf::Gltf::from_slice_without_validation(bytes) else { return Ok(()) };
    let root = raw.as_json();
    for (m, mesh) in root.meshes.iter().enumerate() {
        if mesh.primitives.is_empty() {
            return Err(GltfError::NoPrimitives {
                path: path.to_owned(),
                mesh: m,
                name: mesh.name.clone().unwrap_or_else(|| "unnamed".into()),
            });
        }
        for (k, prim) in mesh.primitives.iter().enumerate() {
            let bad =
                |message: String| GltfError::BadPrimitive { path: path.to_owned(), mesh: m, primitive: k, message };
            let positions = gltf::json::validation::Checked::Valid(gltf::Semantic::Positions);
            if !prim.attributes.contains_key(&positions) {
                return Err(bad("it has no POSITION attribute".into()));
            }
            let accessors = prim.attributes.values().chain(prim.indices.as_ref());
            for a in accessors {
                if a.value() >= root.accessors.len() {
                    return Err(bad(format!(
                        "it refers to accessor {}, but the file has {}",
                        a.value(),
                        root.accessors.len()
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Triangles of a triangle-list, strip or fan index sequence (strips alternate winding).
fn triangles(mode: Mode, i: &[u32]) -> Vec<[u32; 3]> {
    match mode {
        Mode::TriangleStrip => (2..i.len())
            .map(|k| if k % 2 == 0 { [i[k - 2], i[k - 1], i[k]] } else { [i[k - 1], i[k - 2], i[k]] })
            .collect(),
        Mode::TriangleFan => (2..i.len()).map(|k| [i[0], i[k - 1], i[k]]).collect(),
        _ => i.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect(),
    }
}

/// What an accessor is read as.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// `POSITION` or `NORMAL`: three f32 per vertex.
    Vec3,
    /// Triangle indices: unsigned 8, 16 or 32 bit scalars.
    Index,
}

/// Whether the reader can read accessor `a` as `role` without going out of bounds or hitting
/// the gltf crate's assertions: the right component type and shape, no sparse storage, at least
/// one element, a stride no shorter than an element, and bytes inside its view and buffer
/// (checked arithmetic: counts and offsets come from the file).
fn check_accessor(a: &gltf::Accessor<'_>, role: Role, buffers: &[Vec<u8>]) -> Result<(), String> {
    use gltf::accessor::{DataType, Dimensions};
    let kind_ok = match role {
        Role::Vec3 => a.data_type() == DataType::F32 && a.dimensions() == Dimensions::Vec3,
        Role::Index => {
            matches!(a.data_type(), DataType::U8 | DataType::U16 | DataType::U32)
                && a.dimensions() == Dimensions::Scalar
        }
    };
    if !kind_ok {
        let want = if role == Role::Vec3 { "VEC3 of FLOAT" } else { "SCALAR of UNSIGNED_BYTE, _SHORT or _INT" };
        return Err(format!(
            "accessor {} is {:?} of {:?}; it must be {want}",
            a.index(),
            a.dimensions(),
            a.data_type()
        ));
    }
    if a.sparse().is_some() {
        return Err(format!("accessor {} is sparse, which is not supported here", a.index()));
    }
    if a.count() == 0 {
        return Err(format!("accessor {} has no elements", a.index()));
    }
    let Some(view) = a.view() else { return Ok(()) }; // no buffer view: all zeros
    let data = buffers.get(view.buffer().index()).map_or(0, Vec::len);
    let view_end = view.offset().checked_add(view.length());
    if view_end.is_none_or(|end| end > data) {
        return Err(format!(
            "accessor {} reads buffer view {} ({} bytes at {}), beyond its buffer's {data} bytes",
            a.index(),
            view.index(),
            view.length(),
            view.offset(),
        ));
    }
    let stride = view.stride().unwrap_or(a.size());
    if stride < a.size() {
        return Err(format!(
            "buffer view {} has stride {stride}, shorter than an element ({} bytes)",
            view.index(),
            a.size()
        ));
    }
    let needed = (a.count() - 1)
        .checked_mul(stride)
        .and_then(|n| n.checked_add(a.offset()))
        .and_then(|n| n.checked_add(a.size()));
    if needed.is_none_or(|n| n > view.length()) {
        return Err(format!(
            "accessor {} needs {} elements of {stride} bytes from offset {} of buffer view {}, which has {} bytes",
            a.index(),
            a.count(),
            a.offset(),
            view.index(),
            view.length()
        ));
    }
    Ok(())
}

fn load_buffers(doc: &gltf::Document, mut blob: Option<Vec<u8>>, path: &Path) -> Result<Vec<Vec<u8>>, GltfError> {
    let mut out = Vec::new();
    for b in doc.buffers() {
        let err = |message: String| GltfError::Buffer { path: path.to_owned(), buffer: b.index(), message };
        let data = match b.source() {
            gltf::buffer::Source::Bin => {
                blob.take().ok_or_else(|| err("refers to the GLB binary chunk, which is missing".into()))?
            }
            gltf::buffer::Source::Uri(uri) if uri.starts_with("data:") => {
                let Some((_, payload)) = uri.split_once(";base64,") else {
                    return Err(err("a data URI must be base64 (`data:...;base64,`)".into()));
                };
                base64::engine::general_purpose::STANDARD
                    .decode(payload)
                    .map_err(|e| err(format!("bad base64 data: {e}")))?
            }
            gltf::buffer::Source::Uri(uri) => {
                let relative = percent_decode(uri).ok_or_else(|| err(format!("bad percent-encoding in `{uri}`")))?;
                if relative.contains("://") || Path::new(&relative).is_absolute() {
                    return Err(err(format!("`{uri}` is not a relative file reference or a data URI")));
                }
                let file: PathBuf = path.parent().unwrap_or(Path::new(".")).join(relative);
                std::fs::read(&file).map_err(|e| err(format!("cannot read {}: {e}", file.display())))?
            }
        };
        if data.len() < b.length() {
            return Err(err(format!("declares {} bytes but has {}", b.length(), data.len())));
        }
        out.push(data);
    }
    Ok(out)
}

/// A URI reference with its `%XX` escapes decoded (`None` if an escape is malformed or the
/// result is not UTF-8).
fn percent_decode(uri: &str) -> Option<String> {
    let b = uri.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut k = 0;
    while k < b.len() {
        if b[k] == b'%' {
            let hex = std::str::from_utf8(b.get(k + 1..k + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            k += 3;
        } else {
            out.push(b[k]);
            k += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The node to import and its world matrix (the product of its ancestors' transforms).
fn find_node<'a>(
    doc: &'a gltf::Document,
    name: Option<&str>,
    path: &Path,
) -> Result<(gltf::Node<'a>, Mat4), GltfError> {
    // Walk the scenes from their roots (default scene first) so transforms accumulate; then the
    // hierarchies in no scene (a file need not have scenes), from nodes no node has as a child.
    let mut order: Vec<(gltf::Node<'a>, Mat4)> = Vec::new();
    let mut seen = vec![false; doc.nodes().len()];
    let walk = |root: gltf::Node<'a>, seen: &mut Vec<bool>, order: &mut Vec<(gltf::Node<'a>, Mat4)>| {
        let mut stack = vec![(root, Mat4::IDENTITY)];
        while let Some((n, parent)) = stack.pop() {
            if std::mem::replace(&mut seen[n.index()], true) {
                continue; // a node listed twice, or a cycle: each node once
            }
            let world = parent * Mat4::from_cols_array_2d(&n.transform().matrix());
            let children: Vec<_> = n.children().map(|c| (c, world)).collect();
            stack.extend(children.into_iter().rev());
            order.push((n, world));
        }
    };
    for scene in doc.default_scene().into_iter().chain(doc.scenes()) {
        for root in scene.nodes() {
            walk(root, &mut seen, &mut order);
        }
    }
    let mut is_child = vec![false; doc.nodes().len()];
    for c in doc.nodes().flat_map(|n| n.children()) {
        is_child[c.index()] = true;
    }
    for n in doc.nodes() {
        if !seen[n.index()] && !is_child[n.index()] {
            walk(n, &mut seen, &mut order);
        }
    }
    for n in doc.nodes() {
        if !seen[n.index()] {
            walk(n, &mut seen, &mut order); // only in a cycle of children
        }
    }
    let with_mesh: Vec<String> = order
        .iter()
        .filter(|(n, _)| n.mesh().is_some())
        .map(|(n, _)| n.name().map_or(format!("#{}", n.index()), |s| format!("`{s}`")))
        .collect();
    let found = match name {
        Some(want) => order.into_iter().find(|(n, _)| n.name() == Some(want)).ok_or_else(|| GltfError::NoMesh {
            path: path.to_owned(),
            message: format!("no node named `{want}`; nodes with meshes: {}", list(&with_mesh)),
        })?,
        None => order
            .into_iter()
            .find(|(n, _)| n.mesh().is_some())
            .ok_or_else(|| GltfError::NoMesh { path: path.to_owned(), message: "no node has a mesh".into() })?,
    };
    Ok(found)
}

fn list(names: &[String]) -> String {
    if names.is_empty() { "none".into() } else { names.join(", ") }
}

#[cfg(test)]
mod tests {
    use base64::Engine;

    use super::*;

    /// A glTF document with one buffer (a data URI) holding three positions and `indices`, one
    /// mesh whose single primitive has `attributes` and `mode`, and `node` JSON for node 0.
    fn doc(indices: &[u32], primitive: &str, node: &str) -> Vec<u8> {
        let positions: [f32; 9] = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0];
        let mut bin: Vec<u8> = bytemuck::cast_slice(&positions).to_vec();
        bin.extend_from_slice(bytemuck::cast_slice(indices));
        let uri =
            format!("data:application/octet-stream;base64,{}", base64::engine::general_purpose::STANDARD.encode(&bin));
        format!(
            r#"{{"asset": {{"version": "2.0"}}, "scene": 0, "scenes": [{{"nodes": [0]}}],
            "nodes": [{node}],
            "meshes": [{{"name": "m", "primitives": [{primitive}]}}],
            "buffers": [{{"uri": "{uri}", "byteLength": {}}}],
            "bufferViews": [{{"buffer": 0, "byteOffset": 0, "byteLength": 36}},
                            {{"buffer": 0, "byteOffset": 36, "byteLength": {}}}],
            "accessors": [
                {{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                  "min": [0, 0, 0], "max": [1, 1, 0]}},
                {{"bufferView": 1, "componentType": 5125, "count": {}, "type": "SCALAR"}}]}}"#,
            bin.len(),
            4 * indices.len(),
            indices.len()
        )
        .into_bytes()
    }

    const TRIANGLES: &str = r#"{"attributes": {"POSITION": 0}, "indices": 1}"#;
    const NODE: &str = r#"{"name": "n", "mesh": 0}"#;

    fn parse(bytes: &[u8], node: Option<&str>) -> Result<RenderMesh, GltfError> {
        parse_gltf(bytes, Path::new("test.gltf"), node)
    }

    #[test]
    fn a_triangle_reads_with_its_node_transform() {
        let m =
            parse(&doc(&[0, 1, 2], TRIANGLES, r#"{"name": "n", "mesh": 0, "translation": [0, 2, 0]}"#), None).unwrap();
        assert_eq!(m.name, "n");
        assert_eq!(m.triangles, vec![[0, 1, 2]]);
        assert_eq!(m.positions[1], Vec3::new(1.0, 2.0, 0.0));
        // A mirroring scale keeps the triangle counter-clockwise from outside.
        let m = parse(&doc(&[0, 1, 2], TRIANGLES, r#"{"mesh": 0, "scale": [-1, 1, 1]}"#), None).unwrap();
        assert_eq!(m.triangles, vec![[0, 2, 1]]);
        assert_eq!(m.positions[1], Vec3::new(-1.0, 0.0, 0.0));
        // Children inherit their parents' transforms.
        let nested = r#"{"name": "parent", "translation": [1, 0, 0], "children": [1]}, {"name": "child", "mesh": 0, "scale": [2, 2, 2]}"#;
        let m = parse(&doc(&[0, 1, 2], TRIANGLES, nested), Some("child")).unwrap();
        assert_eq!(m.positions[2], Vec3::new(1.0, 2.0, 0.0));
        // Scenes are optional: a hierarchy in no scene still composes.
        let sceneless = String::from_utf8(doc(&[0, 1, 2], TRIANGLES, nested))
            .unwrap()
            .replace(r#""scene": 0, "scenes": [{"nodes": [0]}],"#, "");
        let m = parse(sceneless.as_bytes(), None).unwrap();
        assert_eq!((m.name.as_str(), m.positions[2]), ("child", Vec3::new(1.0, 2.0, 0.0)));
    }

    #[test]
    fn strips_fans_and_unindexed_primitives_become_triangles() {
        // Odd strip triangles swap their first two corners (glTF 2.0, 3.7.2.1).
        let strip = r#"{"attributes": {"POSITION": 0}, "indices": 1, "mode": 5}"#;
        assert_eq!(
            parse(&doc(&[0, 1, 2, 0, 1], strip, NODE), None).unwrap().triangles,
            vec![[0, 1, 2], [2, 1, 0], [2, 0, 1]]
        );
        let fan = r#"{"attributes": {"POSITION": 0}, "indices": 1, "mode": 6}"#;
        assert_eq!(parse(&doc(&[2, 0, 1, 2], fan, NODE), None).unwrap().triangles, vec![[2, 0, 1], [2, 1, 2]]);
        let unindexed = r#"{"attributes": {"POSITION": 0}}"#;
        assert_eq!(parse(&doc(&[0, 1, 2], unindexed, NODE), None).unwrap().triangles, vec![[0, 1, 2]]);
    }

    #[test]
    fn bad_assets_give_typed_errors_that_say_where() {
        let points = r#"{"attributes": {"POSITION": 0}, "indices": 1, "mode": 0}"#;
        match parse(&doc(&[0, 1, 2], points, NODE), None) {
            Err(GltfError::NotTriangles { mesh: 0, primitive: 0, mode, .. }) => assert_eq!(mode, "Points"),
            other => panic!("{other:?}"),
        }
        let lines = r#"{"attributes": {"POSITION": 0}, "indices": 1, "mode": 1}"#;
        assert!(matches!(parse(&doc(&[0, 1, 2], lines, NODE), None), Err(GltfError::NotTriangles { .. })));
        let no_positions = r#"{"attributes": {}, "indices": 1}"#;
        match parse(&doc(&[0, 1, 2], no_positions, NODE), None) {
            Err(GltfError::BadPrimitive { mesh: 0, primitive: 0, message, .. }) => {
                assert!(message.contains("POSITION"))
            }
            other => panic!("{other:?}"),
        }
        match parse(&doc(&[0, 1, 7], TRIANGLES, NODE), None) {
            Err(GltfError::BadPrimitive { message, .. }) => assert!(message.contains("index 2 is 7"), "{message}"),
            other => panic!("{other:?}"),
        }
        let json = String::from_utf8(doc(&[0, 1, 2], TRIANGLES, NODE))
            .unwrap()
            .replace(r#""primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]"#, r#""primitives": []"#);
        match parse(json.as_bytes(), None) {
            Err(GltfError::NoPrimitives { mesh: 0, name, .. }) => assert_eq!(name, "m"),
            other => panic!("{other:?}"),
        }
        match parse(&doc(&[0, 1, 2], TRIANGLES, NODE), Some("missing")) {
            Err(GltfError::NoMesh { message, .. }) => assert!(message.contains("`n`"), "{message}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse(&doc(&[0, 1, 2], TRIANGLES, r#"{"name": "empty"}"#), None),
            Err(GltfError::NoMesh { .. })
        ));
        assert!(matches!(parse(b"{ not json", None), Err(GltfError::Parse { .. })));
        // Accessors the reader would misread or crash on.
        let text = String::from_utf8(doc(&[0, 1, 2], TRIANGLES, NODE)).unwrap();
        let bad_primitive = |json: String, needle: &str| match parse(json.as_bytes(), None) {
            Err(GltfError::BadPrimitive { message, .. }) => assert!(message.contains(needle), "{message}"),
            other => panic!("{needle}: {other:?}"),
        };
        bad_primitive(text.replace(r#""componentType": 5125"#, r#""componentType": 5126"#), "indices");
        bad_primitive(text.replace(r#""byteLength": 36}"#, r#""byteLength": 36, "byteStride": 4}"#), "stride");
        bad_primitive(text.replace(r#""POSITION": 0}, "indices""#, r#""POSITION": 9}, "indices""#), "accessor 9");
        bad_primitive(
            text.replace(r#""count": 3, "type": "VEC3""#, r#""count": 4, "type": "VEC3""#),
            "needs 4 elements",
        );
        bad_primitive(text.replace(r#""type": "VEC3""#, r#""type": "VEC2""#), "POSITION");
        // A GLB whose header declares more bytes than it has.
        let mut glb = b"glTF".to_vec();
        glb.extend_from_slice(&2u32.to_le_bytes());
        glb.extend_from_slice(&4096u32.to_le_bytes());
        glb.extend_from_slice(&[0; 20]);
        assert!(matches!(parse(&glb, None), Err(GltfError::Parse { .. })));
        let short = String::from_utf8(doc(&[0, 1, 2], TRIANGLES, NODE))
            .unwrap()
            .replace(r#""byteLength": 48}]"#, r#""byteLength": 480}]"#);
        assert!(
            matches!(parse(short.as_bytes(), None), Err(GltfError::Buffer { buffer: 0, .. })),
            "{:?}",
            parse(short.as_bytes(), None)
        );
    }
}
