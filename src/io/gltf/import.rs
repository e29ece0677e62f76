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
    let gltf::Gltf { document, blob } = gltf::Gltf::from_slice(bytes).map_err(|e| explain_invalid(bytes, path, e))?;
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
        for (_, accessor) in prim.attributes() {
            check_accessor(&accessor, &buffers).map_err(&bad)?;
        }
        if let Some(a) = prim.indices() {
            check_accessor(&a, &buffers).map_err(&bad)?;
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
        let indices: Vec<u32> = match reader.read_indices() {
            Some(i) => i.into_u32().collect(),
            None => (0..local.len() as u32).collect(),
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

/// A validation failure as the most specific error: a mesh without primitives or a primitive
/// without positions (found in the unvalidated JSON, without following any index), else the
/// parser's message.
fn explain_invalid(bytes: &[u8], path: &Path, e: gltf::Error) -> GltfError {
    if let Ok(raw) = gltf::Gltf::from_slice_without_validation(bytes) {
        for (m, mesh) in raw.as_json().meshes.iter().enumerate() {
            if mesh.primitives.is_empty() {
                return GltfError::NoPrimitives {
                    path: path.to_owned(),
                    mesh: m,
                    name: mesh.name.clone().unwrap_or_else(|| "unnamed".into()),
                };
            }
            for (k, prim) in mesh.primitives.iter().enumerate() {
                let has_positions = prim
                    .attributes
                    .keys()
                    .any(|s| matches!(s, gltf::json::validation::Checked::Valid(gltf::Semantic::Positions)));
                if !has_positions {
                    return GltfError::BadPrimitive {
                        path: path.to_owned(),
                        mesh: m,
                        primitive: k,
                        message: "it has no POSITION attribute".into(),
                    };
                }
            }
        }
    }
    GltfError::Parse { path: path.to_owned(), message: e.to_string() }
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

/// Whether an accessor's bytes lie inside its view and buffer, so reading it cannot go out of
/// bounds.
fn check_accessor(a: &gltf::Accessor<'_>, buffers: &[Vec<u8>]) -> Result<(), String> {
    let Some(view) = a.view() else { return Ok(()) }; // all zeros (or sparse only)
    let data = buffers.get(view.buffer().index()).map_or(0, Vec::len);
    if view.offset() + view.length() > data {
        return Err(format!(
            "accessor {} reads buffer view {} ({} bytes at {}), beyond its buffer's {} bytes",
            a.index(),
            view.index(),
            view.length(),
            view.offset(),
            data
        ));
    }
    let stride = view.stride().unwrap_or(a.size());
    let needed = if a.count() == 0 { 0 } else { a.offset() + (a.count() - 1) * stride + a.size() };
    if needed > view.length() {
        return Err(format!(
            "accessor {} needs {needed} bytes of buffer view {}, which has {}",
            a.index(),
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
                let file: PathBuf = path.parent().unwrap_or(Path::new(".")).join(uri);
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

/// The node to import and its world matrix (the product of its ancestors' transforms).
fn find_node<'a>(
    doc: &'a gltf::Document,
    name: Option<&str>,
    path: &Path,
) -> Result<(gltf::Node<'a>, Mat4), GltfError> {
    // Walk the scenes from the roots (default scene first) so transforms accumulate; nodes in
    // no scene follow with their own transform.
    let mut order: Vec<(gltf::Node<'a>, Mat4)> = Vec::new();
    let mut seen = vec![false; doc.nodes().len()];
    let scenes = doc.default_scene().into_iter().chain(doc.scenes());
    for scene in scenes {
        let mut stack: Vec<(gltf::Node<'a>, Mat4)> = scene.nodes().map(|n| (n, Mat4::IDENTITY)).collect();
        stack.reverse();
        while let Some((n, parent)) = stack.pop() {
            if std::mem::replace(&mut seen[n.index()], true) {
                continue;
            }
            let world = parent * Mat4::from_cols_array_2d(&n.transform().matrix());
            let children: Vec<_> = n.children().map(|c| (c, world)).collect();
            stack.extend(children.into_iter().rev());
            order.push((n, world));
        }
    }
    for n in doc.nodes() {
        if !seen[n.index()] {
            let m = Mat4::from_cols_array_2d(&n.transform().matrix());
            order.push((n, m));
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
    }

    #[test]
    fn strips_fans_and_unindexed_primitives_become_triangles() {
        let strip = r#"{"attributes": {"POSITION": 0}, "indices": 1, "mode": 5}"#;
        assert_eq!(parse(&doc(&[0, 1, 2], strip, NODE), None).unwrap().triangles, vec![[0, 1, 2]]);
        let fan = r#"{"attributes": {"POSITION": 0}, "indices": 1, "mode": 6}"#;
        assert_eq!(parse(&doc(&[2, 0, 1], fan, NODE), None).unwrap().triangles, vec![[2, 0, 1]]);
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
