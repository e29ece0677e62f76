//! Reading a node's triangle meshes from glTF 2.0 (`.gltf` with external or data-URI buffers,
//! or `.glb`).

use std::path::{Path, PathBuf};

use base64::Engine;
use glam::{Mat3, Mat4, Vec3};
use gltf::mesh::Mode;

use super::GltfError;
use super::accessor::{read_indices, read_vec3};
use super::nodes::{label, select_nodes};
use crate::mesh::RenderMesh;

/// Extensions that store geometry in a form this reader cannot decode: a file that requires
/// one is refused with a message naming it, instead of being read as garbage.
const GEOMETRY_EXTENSIONS: [&str; 2] = ["KHR_draco_mesh_compression", "EXT_meshopt_compression"];

/// Reads the triangle meshes of the node named `node` and of every node below it, or of every
/// node of the default scene when `node` is `None`, from a `.gltf` or `.glb` file, merged
/// into one render mesh in world coordinates. Buffers in other files are resolved next to it.
pub fn read_gltf(path: &Path, node: Option<&str>) -> Result<RenderMesh, GltfError> {
    let bytes = std::fs::read(path).map_err(|e| GltfError::Io { path: path.to_owned(), message: e.to_string() })?;
    parse_gltf(&bytes, path, node)
}

/// As [`read_gltf`], from the file's bytes; `path` labels errors and locates external buffers.
///
/// `node` is a node's name, or `#N` for the node with index N (for files whose names repeat).
/// The node's subtree is taken (a parent or empty node groups its children's meshes, as
/// Blender and other tools export objects); without `node`, the whole default scene (the
/// first scene, or every root node of a file without scenes). All triangle primitives are
/// merged (strips and fans are split into triangles), in world coordinates: each node's
/// transform and its ancestors' are applied, normals by the inverse transpose, and a mirroring
/// transform flips the triangles so they stay counter-clockwise from outside. Positions may be
/// floats or (`KHR_mesh_quantization`) normalized or plain integers, and sparse. Files that
/// require compressed geometry (Draco, meshopt) are refused with [`GltfError::Unsupported`];
/// other required extensions (materials, textures) do not touch geometry and are ignored.
/// Normals that cannot be read are dropped (pictures then use smooth ones), not an error.
pub fn parse_gltf(bytes: &[u8], path: &Path, node: Option<&str>) -> Result<RenderMesh, GltfError> {
    precheck(bytes, path)?;
    let parse = |message: String| GltfError::Parse { path: path.to_owned(), message };
    let gltf::Gltf { document, blob } =
        gltf::Gltf::from_slice_without_validation(bytes).map_err(|e| parse(e.to_string()))?;
    validate(&document, path)?;
    let buffers = load_buffers(&document, blob, path)?;
    let selected = select_nodes(&document, node, path)?;
    // Named for the node asked for, else for the only node with a mesh, else for the file.
    let with_mesh: Vec<&gltf::Node<'_>> = selected.iter().map(|(n, _)| n).filter(|n| n.mesh().is_some()).collect();
    let own_name = |n: &gltf::Node<'_>| n.name().or(n.mesh().and_then(|m| m.name())).map(str::to_owned);
    let name = match (node, with_mesh.as_slice()) {
        (Some(_), _) => own_name(&selected[0].0),
        (None, [only]) => own_name(only),
        _ => None,
    }
    .unwrap_or_else(|| path.file_stem().map_or("mesh".into(), |s| s.to_string_lossy().into_owned()));
    let mut out = RenderMesh { name, ..RenderMesh::default() };
    let mut normals = Some(Vec::new());
    for (n, world) in &selected {
        let Some(mesh) = n.mesh() else { continue };
        read_mesh(&mut out, &mut normals, n, &mesh, *world, &buffers, path)?;
    }
    out.normals = normals.filter(|n| n.len() == out.positions.len());
    Ok(out)
}

/// Appends the triangle primitives of `mesh` (instanced by node `n` at `world`) to `out`.
fn read_mesh(
    out: &mut RenderMesh,
    normals: &mut Option<Vec<Vec3>>,
    n: &gltf::Node<'_>,
    mesh: &gltf::Mesh<'_>,
    world: Mat4,
    buffers: &[Vec<u8>],
    path: &Path,
) -> Result<(), GltfError> {
    let mesh_name = mesh.name().unwrap_or("unnamed").to_owned();
    if mesh.primitives().len() == 0 {
        return Err(GltfError::NoPrimitives {
            path: path.to_owned(),
            node: label(n),
            mesh: mesh.index(),
            name: mesh_name,
        });
    }
    let linear = Mat3::from_mat4(world);
    let normal_matrix = linear.inverse().transpose();
    let mirrored = linear.determinant() < 0.0;
    for prim in mesh.primitives() {
        let bad = |message: String| GltfError::BadPrimitive {
            path: path.to_owned(),
            node: label(n),
            mesh: mesh.index(),
            mesh_name: mesh_name.clone(),
            primitive: prim.index(),
            message,
        };
        let mode = prim.mode();
        if !matches!(mode, Mode::Triangles | Mode::TriangleStrip | Mode::TriangleFan) {
            return Err(GltfError::NotTriangles {
                path: path.to_owned(),
                node: label(n),
                mesh: mesh.index(),
                mesh_name: mesh_name.clone(),
                primitive: prim.index(),
                mode: format!("{mode:?}"),
            });
        }
        let Some(positions) = prim.get(&gltf::Semantic::Positions) else {
            return Err(bad("it has no POSITION attribute".into()));
        };
        if positions.view().is_none() && positions.sparse().is_none() {
            // glTF reads that as zeros; for positions it means the geometry is elsewhere (an
            // extension's compressed data without a plain fallback).
            return Err(bad(format!(
                "POSITION accessor {} has no data (no bufferView, no sparse values): is the mesh compressed?",
                positions.index()
            )));
        }
        let local = read_vec3(&positions, buffers).map_err(|m| bad(format!("POSITION: {m}")))?;
        let base = out.positions.len() as u32;
        for (k, p) in local.iter().enumerate() {
            let w = world.transform_point3(*p);
            if !p.is_finite() {
                return Err(bad(format!("vertex {k} is not finite: {p}")));
            }
            if !w.is_finite() {
                return Err(bad(format!("vertex {k} ({p}) is not finite in the world frame: {w}")));
            }
            out.positions.push(w);
        }
        // Normals are optional: an unreadable or mismatched set is dropped, not an error.
        let read_normals = prim.get(&gltf::Semantic::Normals).and_then(|a| read_vec3(&a, buffers).ok());
        match (read_normals, normals.as_mut()) {
            (Some(nr), Some(all)) if nr.len() == local.len() => {
                all.extend(nr.into_iter().map(|v| (normal_matrix * v).normalize_or(Vec3::Y)))
            }
            _ => *normals = None,
        }
        let indices: Vec<u32> = match prim.indices() {
            Some(a) => read_indices(&a, buffers).map_err(|m| bad(format!("indices: {m}")))?,
            None => (0..local.len() as u32).collect(),
        };
        if let Some((k, &i)) = indices.iter().enumerate().find(|(_, i)| **i as usize >= local.len()) {
            return Err(bad(format!("index {k} is {i}, but the primitive has {} vertices", local.len())));
        }
        if mode == Mode::Triangles && !indices.len().is_multiple_of(3) {
            return Err(bad(format!("{} indices do not make whole triangles (a multiple of 3)", indices.len())));
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
    Ok(())
}

/// Checks on the raw JSON that the gltf crate's validation relies on without checking (it
/// indexes primitives' accessors directly), reported as the most specific error: a GLB header
/// whose length does not fit, or a primitive that names an accessor the file does not have.
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
    // A document that does not even deserialise is reported by the parse that follows.
    let Ok(raw) = gltf::Gltf::from_slice_without_validation(bytes) else { return Ok(()) };
    let root = raw.as_json();
    for (m, mesh) in root.meshes.iter().enumerate() {
        for (k, prim) in mesh.primitives.iter().enumerate() {
            let accessors = prim.attributes.values().chain(prim.indices.as_ref());
            for a in accessors {
                if a.value() >= root.accessors.len() {
                    let user = root.nodes.iter().position(|n| n.mesh.is_some_and(|i| i.value() == m));
                    return Err(GltfError::BadPrimitive {
                        path: path.to_owned(),
                        node: user.map_or("(none)".into(), |i| {
                            root.nodes[i].name.as_ref().map_or(format!("#{i}"), |s| format!("`{s}`"))
                        }),
                        mesh: m,
                        mesh_name: mesh.name.clone().unwrap_or_else(|| "unnamed".into()),
                        primitive: k,
                        message: format!(
                            "it refers to accessor {}, but the file has {}",
                            a.value(),
                            root.accessors.len()
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}

/// The gltf crate's validation (every index in range, enums known), less what this reader
/// handles itself: `POSITION` bounds (which it does not use) and required extensions, which
/// are refused only where they change how geometry is stored.
fn validate(document: &gltf::Document, path: &Path) -> Result<(), GltfError> {
    use gltf::json::validation::Validate;
    let root = document.as_json();
    if let Some(ext) = root.extensions_required.iter().find(|e| GEOMETRY_EXTENSIONS.contains(&e.as_str())) {
        return Err(GltfError::Unsupported { path: path.to_owned(), extension: ext.clone() });
    }
    let mut errors = Vec::new();
    root.validate(root, gltf::json::Path::new, &mut |p, e| {
        let at = p().to_string();
        // A primitive without positions is reported where it is read, with its node.
        let tolerated = at.starts_with("extensionsRequired")
            || (at.contains("\"POSITION\"") && (at.ends_with(".min") || at.ends_with(".max")))
            || at.ends_with("[\"POSITION\"]");
        if !tolerated {
            errors.push(format!("{at}: {e}"));
        }
    });
    if errors.is_empty() {
        Ok(())
    } else {
        Err(GltfError::Parse { path: path.to_owned(), message: format!("invalid glTF: {}", errors.join("; ")) })
    }
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

    /// A glTF document under construction, written as `.gltf` with a data-URI buffer: each
    /// test states exactly the bytes and JSON it feeds the reader.
    struct Doc {
        json: serde_json::Value,
        bin: Vec<u8>,
    }

    impl Doc {
        fn new() -> Self {
            let json = serde_json::json!({
                "asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": []}],
                "nodes": [], "meshes": [], "accessors": [], "bufferViews": [], "buffers": []
            });
            Self { json, bin: Vec::new() }
        }

        fn push(&mut self, key: &str, v: serde_json::Value) -> usize {
            let a = self.json[key].as_array_mut().unwrap();
            a.push(v);
            a.len() - 1
        }

        fn view(&mut self, bytes: &[u8], stride: Option<usize>) -> usize {
            while !self.bin.len().is_multiple_of(4) {
                self.bin.push(0);
            }
            let mut v = serde_json::json!({"buffer": 0, "byteOffset": self.bin.len(), "byteLength": bytes.len()});
            if let Some(s) = stride {
                v["byteStride"] = s.into();
            }
            self.bin.extend_from_slice(bytes);
            self.push("bufferViews", v)
        }

        /// An accessor over its own view of `bytes`; `extra` is merged in (sparse, min, ...).
        fn accessor(&mut self, bytes: Option<&[u8]>, stride: Option<usize>, spec: serde_json::Value) -> usize {
            let mut a = spec;
            if let Some(b) = bytes {
                a["bufferView"] = self.view(b, stride).into();
            }
            self.push("accessors", a)
        }

        fn triangles(&mut self, indices: &[u16]) -> usize {
            let bytes: Vec<u8> = bytemuck::cast_slice(indices).to_vec();
            self.accessor(
                Some(&bytes),
                None,
                serde_json::json!({"componentType": 5123, "count": indices.len(), "type": "SCALAR"}),
            )
        }

        fn floats(&mut self, p: &[[f32; 3]]) -> usize {
            let bytes: Vec<u8> = bytemuck::cast_slice(p).to_vec();
            self.accessor(
                Some(&bytes),
                None,
                serde_json::json!({"componentType": 5126, "count": p.len(), "type": "VEC3"}),
            )
        }

        /// A mesh of one triangle-list primitive; returns its index.
        fn mesh(&mut self, name: &str, position: usize, indices: usize) -> usize {
            self.push(
                "meshes",
                serde_json::json!({"name": name, "primitives": [{"attributes": {"POSITION": position}, "indices": indices}]}),
            )
        }

        fn node(&mut self, v: serde_json::Value, root: bool) -> usize {
            let n = self.push("nodes", v);
            if root {
                self.json["scenes"][0]["nodes"].as_array_mut().unwrap().push(n.into());
            }
            n
        }

        fn bytes(&self) -> Vec<u8> {
            let mut json = self.json.clone();
            let uri = format!(
                "data:application/octet-stream;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(&self.bin)
            );
            json["buffers"] = serde_json::json!([{"uri": uri, "byteLength": self.bin.len()}]);
            serde_json::to_vec(&json).unwrap()
        }
    }

    const CORNERS: [[f32; 3]; 4] = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    const FACES: [u16; 12] = [0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3];

    #[test]
    fn quantized_and_sparse_positions_read_as_gltf_defines_them() {
        let mut d = Doc::new();
        // KHR_mesh_quantization: normalized int16, padded to 8-byte elements, scaled by the node.
        // −32768 is clamped to −1 (it would be −1.00003).
        let q: [[i16; 4]; 4] = [[0, 0, 0, 0], [32767, 0, 0, 0], [0, -32768, 0, 0], [0, 0, 16384, 0]];
        let p = d.accessor(
            Some(bytemuck::cast_slice(&q)),
            Some(8),
            serde_json::json!({"componentType": 5122, "normalized": true, "count": 4, "type": "VEC3"}),
        );
        let i = d.triangles(&FACES);
        let m = d.mesh("q", p, i);
        d.node(serde_json::json!({"name": "q", "mesh": m, "scale": [0.5, 0.5, 0.5]}), true);
        // Plain (not normalized) unsigned bytes: integer coordinates.
        let b: [[u8; 4]; 4] = [[0, 0, 0, 0], [3, 0, 0, 0], [0, 3, 0, 0], [0, 0, 3, 0]];
        let p = d.accessor(
            Some(bytemuck::cast_slice(&b)),
            Some(4),
            serde_json::json!({"componentType": 5121, "count": 4, "type": "VEC3"}),
        );
        let m = d.mesh("bytes", p, i);
        d.node(serde_json::json!({"name": "bytes", "mesh": m}), true);
        // Normalized signed and unsigned bytes and unsigned shorts.
        let i8n: [[i8; 4]; 4] = [[0, 0, 0, 0], [127, 0, 0, 0], [0, -128, 0, 0], [0, 0, 64, 0]];
        let u8n: [[u8; 4]; 4] = [[0, 0, 0, 0], [255, 0, 0, 0], [0, 51, 0, 0], [0, 0, 255, 0]];
        let u16n: [[u16; 4]; 4] = [[0, 0, 0, 0], [65535, 0, 0, 0], [0, 13107, 0, 0], [0, 0, 65535, 0]];
        for (name, bytes, ty, stride) in [
            ("i8n", bytemuck::cast_slice::<_, u8>(&i8n).to_vec(), 5120, 4),
            ("u8n", bytemuck::cast_slice::<_, u8>(&u8n).to_vec(), 5121, 4),
            ("u16n", bytemuck::cast_slice::<_, u8>(&u16n).to_vec(), 5123, 8),
        ] {
            let p = d.accessor(
                Some(&bytes),
                Some(stride),
                serde_json::json!({"componentType": ty, "normalized": true, "count": 4, "type": "VEC3"}),
            );
            let m = d.mesh(name, p, i);
            d.node(serde_json::json!({"name": name, "mesh": m}), true);
        }
        // Sparse: no base view (zeros) with three substituted vertices, and a float base with
        // one vertex moved.
        let idx: [u16; 3] = [1, 2, 3];
        let vals: [[f32; 3]; 3] = [[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]];
        let (iv, vv) = (d.view(bytemuck::cast_slice(&idx), None), d.view(bytemuck::cast_slice(&vals), None));
        let sparse = serde_json::json!({"count": 3, "indices": {"bufferView": iv, "componentType": 5123},
                                        "values": {"bufferView": vv}});
        let p = d.accessor(
            None,
            None,
            serde_json::json!({"componentType": 5126, "count": 4, "type": "VEC3", "sparse": sparse}),
        );
        let m = d.mesh("sparse_zeros", p, i);
        d.node(serde_json::json!({"name": "sparse_zeros", "mesh": m}), true);
        // A strided base (16-byte elements) with two vertices moved, listed out of order.
        let two: [u16; 2] = [3, 1];
        let moved: [[f32; 3]; 2] = [[0.0, 0.0, 5.0], [7.0, 0.0, 0.0]];
        let (iv, vv) = (d.view(bytemuck::cast_slice(&two), None), d.view(bytemuck::cast_slice(&moved), None));
        let padded: Vec<[f32; 4]> = CORNERS.iter().map(|c| [c[0], c[1], c[2], 9.0]).collect();
        let base = d.accessor(
            Some(bytemuck::cast_slice(&padded)),
            Some(16),
            serde_json::json!({"componentType": 5126, "count": 4, "type": "VEC3"}),
        );
        d.json["accessors"][base]["sparse"] = serde_json::json!({"count": 2,
            "indices": {"bufferView": iv, "componentType": 5123}, "values": {"bufferView": vv}});
        let m = d.mesh("sparse_base", base, i);
        d.node(serde_json::json!({"name": "sparse_base", "mesh": m}), true);
        d.json["extensionsUsed"] = serde_json::json!(["KHR_mesh_quantization"]);
        d.json["extensionsRequired"] = serde_json::json!(["KHR_mesh_quantization"]);
        let bytes = d.bytes();
        let read = |node: &str| parse(&bytes, Some(node)).unwrap().positions;
        let q = read("q");
        assert_eq!(q[1], Vec3::new(0.5, 0.0, 0.0));
        assert_eq!(q[2], Vec3::new(0.0, -0.5, 0.0));
        assert!((q[3].z - 0.5 * 16384.0 / 32767.0).abs() < 1e-7, "{}", q[3]);
        assert_eq!(read("bytes")[3], Vec3::new(0.0, 0.0, 3.0));
        assert_eq!(read("i8n")[1..], [Vec3::X, -Vec3::Y, Vec3::new(0.0, 0.0, 64.0 / 127.0)]);
        assert_eq!(read("u8n")[1..], [Vec3::X, Vec3::new(0.0, 0.2, 0.0), Vec3::Z]);
        assert_eq!(read("u16n")[1..], [Vec3::X, Vec3::new(0.0, 0.2, 0.0), Vec3::Z]);
        assert_eq!(read("sparse_zeros"), vec![Vec3::ZERO, 2.0 * Vec3::X, 2.0 * Vec3::Y, 2.0 * Vec3::Z]);
        assert_eq!(read("sparse_base"), vec![Vec3::ZERO, 7.0 * Vec3::X, Vec3::Y, 5.0 * Vec3::Z]);
        // A sparse index past the accessor is named.
        let mut d2 = Doc { json: d.json.clone(), bin: d.bin.clone() };
        let bad: [u16; 2] = [9, 1];
        let iv = d2.view(bytemuck::cast_slice(&bad), None);
        d2.json["accessors"][base]["sparse"]["indices"]["bufferView"] = iv.into();
        match parse(&d2.bytes(), Some("sparse_base")) {
            Err(GltfError::BadPrimitive { message, node, .. }) => {
                assert!(message.contains("sparse index 0 is 9") && node == "`sparse_base`", "{message}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_node_brings_its_subtree_and_no_node_the_whole_scene() {
        let mut d = Doc::new();
        let p = d.floats(&CORNERS);
        let i = d.triangles(&FACES);
        let m = d.mesh("tet", p, i);
        // An empty group node (a column-major matrix: translate x by 10) over two meshes.
        let a = d.node(serde_json::json!({"name": "a", "mesh": m, "translation": [0, 1, 0]}), false);
        let b = d.node(serde_json::json!({"name": "b", "mesh": m, "scale": [2, 2, 2]}), false);
        let matrix = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 10, 0, 0, 1];
        d.node(serde_json::json!({"name": "group", "matrix": matrix, "children": [a, b]}), true);
        d.node(serde_json::json!({"name": "lone", "mesh": m, "translation": [0, 0, -5]}), true);
        let bytes = d.bytes();
        let group = parse(&bytes, Some("group")).unwrap();
        assert_eq!(group.name, "group");
        assert_eq!((group.positions.len(), group.triangles.len()), (8, 8));
        assert_eq!(group.positions[1], Vec3::new(11.0, 1.0, 0.0));
        assert_eq!(group.positions[7], Vec3::new(10.0, 0.0, 2.0));
        assert_eq!(group.triangles[4], [4, 6, 5], "the second instance's triangles are offset");
        // A child alone keeps its ancestors' transforms.
        assert_eq!(parse(&bytes, Some("b")).unwrap().positions[1], Vec3::new(12.0, 0.0, 0.0));
        // By index.
        assert_eq!(parse(&bytes, Some("#3")).unwrap().positions[3], Vec3::new(0.0, 0.0, -4.0));
        // No node: the whole default scene, named for the file.
        let all = parse(&bytes, None).unwrap();
        assert_eq!((all.name.as_str(), all.positions.len()), ("test", 12));
        // Two nodes with one name: the error says which, and how to pick one.
        d.json["nodes"][3]["name"] = "a".into();
        match parse(&d.bytes(), Some("a")) {
            Err(GltfError::NoMesh { message, .. }) => assert!(message.contains("#0, #3"), "{message}"),
            other => panic!("{other:?}"),
        }
        // A group of nodes without meshes.
        let mut e = Doc::new();
        e.node(serde_json::json!({"name": "empty", "children": [1]}), true);
        e.node(serde_json::json!({"name": "leaf"}), false);
        match parse(&e.bytes(), Some("empty")) {
            Err(GltfError::NoMesh { message, .. }) => {
                assert!(message.contains("nor has any node below it"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn required_extensions_are_refused_only_for_compressed_geometry() {
        let mut d = Doc::new();
        let p = d.floats(&CORNERS);
        let i = d.triangles(&FACES);
        let m = d.mesh("tet", p, i);
        d.node(serde_json::json!({"name": "n", "mesh": m}), true);
        // No POSITION bounds (glTF requires them; this reader does not need them).
        d.json["extensionsUsed"] = serde_json::json!(["KHR_texture_transform", "KHR_materials_unlit"]);
        d.json["extensionsRequired"] = serde_json::json!(["KHR_texture_transform"]);
        assert_eq!(parse(&d.bytes(), None).unwrap().positions.len(), 4);
        for ext in ["KHR_draco_mesh_compression", "EXT_meshopt_compression"] {
            d.json["extensionsRequired"] = serde_json::json!([ext]);
            match parse(&d.bytes(), None) {
                Err(e @ GltfError::Unsupported { .. }) => assert!(e.to_string().contains(ext), "{e}"),
                other => panic!("{ext}: {other:?}"),
            }
        }
    }

    #[test]
    fn unreadable_normals_are_dropped_and_partial_triangles_refused() {
        let mut d = Doc::new();
        let p = d.floats(&CORNERS);
        let i = d.triangles(&FACES);
        let n2: [[f32; 2]; 4] = [[0.0; 2]; 4];
        let n = d.accessor(
            Some(bytemuck::cast_slice(&n2)),
            None,
            serde_json::json!({"componentType": 5126, "count": 4, "type": "VEC2"}),
        );
        let m = d.push(
            "meshes",
            serde_json::json!({"name": "tet", "primitives": [{"attributes": {"POSITION": p, "NORMAL": n}, "indices": i}]}),
        );
        d.node(serde_json::json!({"name": "n", "mesh": m}), true);
        let read = parse(&d.bytes(), None).unwrap();
        assert_eq!((read.positions.len(), read.normals), (4, None));
        let four = d.triangles(&[0, 1, 2, 3]);
        d.json["meshes"][0]["primitives"][0]["indices"] = four.into();
        match parse(&d.bytes(), None) {
            Err(e @ GltfError::BadPrimitive { .. }) => {
                let text = e.to_string();
                assert!(
                    text.contains("node `n`, mesh 0 (tet), primitive 0") && text.contains("multiple of 3"),
                    "{text}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
