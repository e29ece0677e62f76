//! Wavefront OBJ frames: every body's mesh as its own `o <name>` group, in metres with y up,
//! and optionally the frame's contact points as point elements (`p`) in a group `contacts`.
//! [`parse_obj_frame`] reads such a file back (for `pliant render`).

use std::fmt::Write;

use glam::Vec3;

use crate::mesh::RenderMesh;

/// The OBJ group name that carries contact points (prefixed, so a body called `contacts` stays
/// a body).
pub const CONTACTS_GROUP: &str = "pliant:contacts";

/// Renders `meshes` (and `contacts`, when any) as OBJ text.
pub fn frame_obj(meshes: &[RenderMesh], contacts: &[Vec3]) -> String {
    let mut out = String::from("# Pliant frame export (metres, y up)\n");
    // OBJ indices are 1-based and global across objects; normals are counted apart.
    let (mut base, mut normal_base) = (1usize, 1usize);
    for m in meshes {
        let _ = writeln!(out, "o {}", m.name);
        for p in &m.positions {
            let _ = writeln!(out, "v {} {} {}", p.x, p.y, p.z);
        }
        // Normals, where the mesh has them, one per vertex (`f v//n`).
        let normals = m.normals.as_ref().filter(|n| n.len() == m.positions.len());
        for n in normals.into_iter().flatten() {
            let _ = writeln!(out, "vn {} {} {}", n.x, n.y, n.z);
        }
        for t in &m.triangles {
            let [a, b, c] = t.map(|i| base + i as usize);
            let _ = match normals {
                Some(_) => {
                    let [na, nb, nc] = t.map(|i| normal_base + i as usize);
                    writeln!(out, "f {a}//{na} {b}//{nb} {c}//{nc}")
                }
                None => writeln!(out, "f {a} {b} {c}"),
            };
        }
        base += m.positions.len();
        normal_base += normals.map_or(0, Vec::len);
    }
    if !contacts.is_empty() {
        let _ = writeln!(out, "o {CONTACTS_GROUP}");
        for p in contacts {
            let _ = writeln!(out, "v {} {} {}", p.x, p.y, p.z);
        }
        let _ = write!(out, "p");
        for k in 0..contacts.len() {
            let _ = write!(out, " {}", base + k);
        }
        out.push('\n');
    }
    out
}

/// The next three numbers of a `v` or `vn` line (`None` if one is missing or not a number).
fn three<'a>(tok: &mut impl Iterator<Item = &'a str>) -> Option<Vec3> {
    let mut c = [0.0f32; 3];
    for v in &mut c {
        *v = tok.next()?.parse().ok()?;
    }
    Some(Vec3::from(c))
}

/// Reads an OBJ frame: one mesh per `o` group (faces with more than three corners are fanned,
/// `v/vt/vn` references keep the vertex and its normal: a group whose every vertex has one
/// gets normals), and the points of the [`CONTACTS_GROUP`] group. Errors name the line.
pub fn parse_obj_frame(text: &str) -> Result<(Vec<RenderMesh>, Vec<Vec3>), String> {
    let mut vertices: Vec<Vec3> = Vec::new();
    let mut vn: Vec<Vec3> = Vec::new();
    // The normal each vertex was last given by a face corner (`v//n`, `v/t/n`).
    let mut vertex_normal: Vec<Option<Vec3>> = Vec::new();
    let mut groups: Vec<(String, Vec<[usize; 3]>, Vec<usize>)> = Vec::new();
    for (n, full) in text.lines().enumerate() {
        let line = full.split('#').next().unwrap_or("");
        let mut tok = line.split_whitespace();
        let err = |what: &str| format!("line {}: {what}: `{full}`", n + 1);
        let index = |s: &str, count: usize| -> Result<usize, String> {
            let i: i64 = s.split('/').next().unwrap_or("").parse().map_err(|_| err("bad index"))?;
            let k = if i < 0 { count as i64 + i } else { i - 1 };
            if k < 0 || k as usize >= count {
                return Err(err("index out of range"));
            }
            Ok(k as usize)
        };
        match tok.next() {
            Some("v") => {
                vertices.push(three(&mut tok).ok_or_else(|| err("a vertex needs three coordinates"))?);
                vertex_normal.push(None);
            }
            Some("vn") => vn.push(three(&mut tok).ok_or_else(|| err("a normal needs three coordinates"))?),
            Some("o") | Some("g") => groups.push((tok.collect::<Vec<_>>().join(" "), Vec::new(), Vec::new())),
            Some("f") => {
                let corners: Vec<&str> = tok.collect();
                let idx: Vec<usize> = corners.iter().map(|t| index(t, vertices.len())).collect::<Result<_, _>>()?;
                for (t, &v) in corners.iter().zip(&idx) {
                    if let Some(n) = t.split('/').nth(2).filter(|s| !s.is_empty()) {
                        let i: i64 = n.parse().map_err(|_| err("bad normal index"))?;
                        let k = if i < 0 { vn.len() as i64 + i } else { i - 1 };
                        if k < 0 || k as usize >= vn.len() {
                            return Err(err("normal index out of range"));
                        }
                        vertex_normal[v] = Some(vn[k as usize]);
                    }
                }
                if idx.len() < 3 {
                    return Err(err("a face needs three corners"));
                }
                if groups.is_empty() {
                    groups.push(("mesh".into(), Vec::new(), Vec::new()));
                }
                if let Some(g) = groups.last_mut() {
                    g.1.extend((2..idx.len()).map(|k| [idx[0], idx[k - 1], idx[k]]));
                }
            }
            Some("p") => {
                let idx: Vec<usize> = tok.map(|t| index(t, vertices.len())).collect::<Result<_, _>>()?;
                if let Some(g) = groups.last_mut() {
                    g.2.extend(idx);
                }
            }
            _ => {}
        }
    }
    let mut meshes = Vec::new();
    let mut contacts = Vec::new();
    for (name, faces, points) in groups {
        if name == CONTACTS_GROUP {
            contacts.extend(points.iter().map(|&i| vertices[i]));
            continue;
        }
        if faces.is_empty() {
            continue;
        }
        // Renumber the vertices this group uses, in file order.
        let mut used: Vec<usize> = faces.iter().flatten().copied().collect();
        used.sort_unstable();
        used.dedup();
        let local: std::collections::HashMap<usize, u32> =
            used.iter().enumerate().map(|(k, &i)| (i, k as u32)).collect();
        let positions = used.iter().map(|&i| vertices[i]).collect();
        let normals = used.iter().map(|&i| vertex_normal[i]).collect();
        let triangles = faces.iter().map(|f| f.map(|i| local[&i])).collect();
        meshes.push(RenderMesh { name, positions, normals, triangles });
    }
    Ok((meshes, contacts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_read_back_as_written() {
        let torus = RenderMesh::torus(0.3, 0.1, 8, 6);
        let cube = RenderMesh {
            name: "cube".into(),
            positions: vec![Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::Z],
            normals: None,
            triangles: vec![[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]],
        };
        let contacts = [Vec3::new(0.5, 0.0, 0.25), Vec3::new(-1.0, 2.0, 3.0)];
        // A mesh without normals before one with them: each keeps its own numbering.
        let text = frame_obj(&[cube.clone(), torus.clone(), cube.clone()], &contacts);
        let (meshes, points) = parse_obj_frame(&text).unwrap();
        assert_eq!(points, contacts);
        assert_eq!(meshes.len(), 3);
        for (a, b) in meshes.iter().zip([&cube, &torus, &cube]) {
            assert_eq!(a.name, b.name);
            assert_eq!(a.triangles, b.triangles);
            assert_eq!(a.positions, b.positions);
            // Normals where the mesh had them (`f v//n`), none where it had not.
            assert_eq!(a.normals, b.normals);
        }
        assert!(text.contains("vn ") && text.contains("//"), "the torus's normals are written");
        // A face corner's normal reference is checked like its vertex.
        assert!(
            parse_obj_frame("v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 0 1\nf 1//1 2//2 3//1\n")
                .unwrap_err()
                .contains("normal index")
        );
        assert!(parse_obj_frame("v 0 0 0\nf 1 2 3\n").unwrap_err().starts_with("line 2"));
        assert!(parse_obj_frame("v 0 0\n").unwrap_err().contains("three coordinates"));
        // Comments anywhere; a body may be called `contacts`.
        let (m, p) = parse_obj_frame("o contacts\nv 0 0 0 # origin\nv 1 0 0\nv 0 1 0\nf 1 2 3 # one\n").unwrap();
        assert_eq!((m.len(), p.len(), m[0].name.as_str()), (1, 0, "contacts"));
    }
}
