//! TetGen `.node` / `.ele` import.
//!
//! `.node`: a header `<points> <dim = 3> <attributes> <boundary markers 0|1>`, then one line per
//! point `<index> <x> <y> <z> [attributes] [marker]`. `.ele`: a header `<tets> <nodes per tet
//! 4|10> <region attribute 0|1>`, then `<index> <n1> … <nk> \[attribute\]`. `#` starts a comment.
//! Indices may start at 0 or 1 (the first point's index decides). Quadratic (10-node) tets keep
//! their four corners. A file whose tets are all negatively oriented (the other handedness) is
//! flipped as a whole; a tet whose orientation disagrees with the rest is reported.

use std::path::{Path, PathBuf};

use glam::Vec3;

use crate::mesh::{MeshError, TetMesh, tet_volume};

fn lines(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    text.lines().enumerate().filter_map(|(i, l)| {
        let body = l.split('#').next().unwrap_or("");
        let toks: Vec<&str> = body.split_whitespace().collect();
        (!toks.is_empty()).then_some((i + 1, toks))
    })
}

fn parse<T: std::str::FromStr>(path: &Path, line: usize, tok: &str, what: &str) -> Result<T, MeshError> {
    tok.parse().map_err(|_| MeshError::Parse {
        path: path.to_owned(),
        line,
        message: format!("cannot read {what} from `{tok}`"),
    })
}

fn need<'a>(path: &Path, line: usize, toks: &'a [&'a str], k: usize, what: &str) -> Result<&'a str, MeshError> {
    toks.get(k).copied().ok_or_else(|| MeshError::Parse {
        path: path.to_owned(),
        line,
        message: format!("missing {what}"),
    })
}

/// Parses TetGen text; `node_path`/`ele_path` only label errors.
pub fn parse_tetgen(node_text: &str, ele_text: &str, node_path: &Path, ele_path: &Path) -> Result<TetMesh, MeshError> {
    let mut nl = lines(node_text);
    let (hl, header) = nl.next().ok_or(MeshError::Empty { what: "vertices" })?;
    let count: usize = parse(node_path, hl, need(node_path, hl, &header, 0, "point count")?, "point count")?;
    let dim: usize = parse(node_path, hl, need(node_path, hl, &header, 1, "dimension")?, "dimension")?;
    if dim != 3 {
        return Err(MeshError::Parse {
            path: node_path.to_owned(),
            line: hl,
            message: format!("dimension {dim}, expected 3"),
        });
    }
    let mut positions = Vec::with_capacity(count);
    let mut base = None;
    for (line, toks) in nl.take(count) {
        let idx: i64 = parse(node_path, line, need(node_path, line, &toks, 0, "point index")?, "point index")?;
        let b = *base.get_or_insert(idx);
        if idx - b != positions.len() as i64 {
            return Err(MeshError::Parse {
                path: node_path.to_owned(),
                line,
                message: format!("point index {idx}, expected {}", positions.len() as i64 + b),
            });
        }
        let mut c = [0.0f32; 3];
        for (k, v) in c.iter_mut().enumerate() {
            *v = parse(node_path, line, need(node_path, line, &toks, k + 1, "coordinate")?, "coordinate")?;
        }
        positions.push(Vec3::from(c));
    }
    if positions.len() != count {
        return Err(MeshError::Parse {
            path: node_path.to_owned(),
            line: 0,
            message: format!("header announces {count} points, file has {}", positions.len()),
        });
    }
    let base = base.unwrap_or(0);

    let mut el = lines(ele_text);
    let (hl, header) = el.next().ok_or(MeshError::Empty { what: "elements" })?;
    let tcount: usize = parse(ele_path, hl, need(ele_path, hl, &header, 0, "tet count")?, "tet count")?;
    let per: usize = parse(ele_path, hl, need(ele_path, hl, &header, 1, "nodes per tet")?, "nodes per tet")?;
    if per != 4 && per != 10 {
        return Err(MeshError::Parse {
            path: ele_path.to_owned(),
            line: hl,
            message: format!("{per} nodes per tet, expected 4 or 10"),
        });
    }
    let mut tets = Vec::with_capacity(tcount);
    for (line, toks) in el.take(tcount) {
        let mut t = [0u32; 4];
        for (k, v) in t.iter_mut().enumerate() {
            let raw: i64 = parse(ele_path, line, need(ele_path, line, &toks, k + 1, "vertex index")?, "vertex index")?;
            let i = raw - base;
            if i < 0 {
                return Err(MeshError::Parse {
                    path: ele_path.to_owned(),
                    line,
                    message: format!("vertex index {raw} below the first index {base}"),
                });
            }
            *v = i as u32;
        }
        tets.push(t);
    }
    if tets.len() != tcount {
        return Err(MeshError::Parse {
            path: ele_path.to_owned(),
            line: 0,
            message: format!("header announces {tcount} tets, file has {}", tets.len()),
        });
    }
    // Index range is checked before volumes are computed.
    if let Some((e, &i)) =
        tets.iter().enumerate().find_map(|(e, t)| t.iter().find(|&&i| i as usize >= positions.len()).map(|i| (e, i)))
    {
        return Err(MeshError::IndexOutOfRange {
            kind: "tet",
            element: e as u32,
            index: i,
            vertex_count: positions.len() as u32,
        });
    }
    let negative = tets.iter().filter(|t| tet_volume(t.map(|i| positions[i as usize])) < 0.0).count();
    if negative * 2 > tets.len() {
        for t in &mut tets {
            t.swap(2, 3);
        }
    }
    TetMesh::new(positions, tets)
}

/// Reads `<stem>.node` and `<stem>.ele`; `node_path` may name either file or the stem.
pub fn read_tetgen(node_path: &Path) -> Result<TetMesh, MeshError> {
    let stem: PathBuf = match node_path.extension().and_then(|e| e.to_str()) {
        Some("node") | Some("ele") => node_path.with_extension(""),
        _ => node_path.to_owned(),
    };
    let node = stem.with_extension("node");
    let ele = stem.with_extension("ele");
    let read =
        |p: &Path| std::fs::read_to_string(p).map_err(|e| MeshError::Io { path: p.to_owned(), message: e.to_string() });
    parse_tetgen(&read(&node)?, &read(&ele)?, &node, &ele)
}

/// Writes a mesh as TetGen files `<stem>.node` / `<stem>.ele` (0-based).
pub fn write_tetgen(mesh: &TetMesh, stem: &Path) -> std::io::Result<()> {
    use std::fmt::Write;
    let mut node = format!("{} 3 0 0\n", mesh.vertex_count());
    for (i, p) in mesh.positions().iter().enumerate() {
        let _ = writeln!(node, "{i} {} {} {}", p.x, p.y, p.z);
    }
    let mut ele = format!("{} 4 0\n", mesh.tet_count());
    for (i, t) in mesh.tets().iter().enumerate() {
        let _ = writeln!(ele, "{i} {} {} {} {}", t[0], t[1], t[2], t[3]);
    }
    std::fs::write(stem.with_extension("node"), node)?;
    std::fs::write(stem.with_extension("ele"), ele)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::TetSplit;

    const NODE: &str = "# unit tet pair\n5 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n5 1 1 1 # far corner\n";
    const ELE: &str = "2 4 0\n1 1 2 3 4\n2 2 3 4 5\n";

    #[test]
    fn reads_one_based_files_and_fixes_handedness() {
        let m = parse_tetgen(NODE, ELE, Path::new("a.node"), Path::new("a.ele")).unwrap();
        assert_eq!(m.vertex_count(), 5);
        assert_eq!(m.tet_count(), 2);
        assert!(m.volume() > 0.0);
    }

    #[test]
    fn round_trip_through_files() {
        let dir = std::env::temp_dir().join(format!("pliant_tetgen_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mesh = TetMesh::sphere(0.3, 4, TetSplit::Six).unwrap();
        write_tetgen(&mesh, &dir.join("ball")).unwrap();
        let back = read_tetgen(&dir.join("ball.node")).unwrap();
        assert_eq!(back.tets(), mesh.tets());
        assert_eq!(back.vertex_count(), mesh.vertex_count());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn errors_name_file_and_line() {
        let bad = "5 3 0 0\n1 0 0 0\n2 1 zero 0\n";
        match parse_tetgen(bad, ELE, Path::new("b.node"), Path::new("b.ele")) {
            Err(MeshError::Parse { line: 3, .. }) => {}
            other => panic!("{other:?}"),
        }
        let out = "2 4 0\n1 1 2 3 9\n2 2 3 4 5\n";
        match parse_tetgen(NODE, out, Path::new("c.node"), Path::new("c.ele")) {
            Err(MeshError::IndexOutOfRange { element: 0, index: 8, vertex_count: 5, .. }) => {}
            other => panic!("{other:?}"),
        }
        match read_tetgen(Path::new("/definitely/missing.node")) {
            Err(MeshError::Io { .. }) => {}
            other => panic!("{other:?}"),
        }
    }
}
