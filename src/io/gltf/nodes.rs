//! Which nodes of a glTF document a body is made of: a node's subtree, or the default scene,
//! each with its world matrix.

use std::path::Path;

use glam::Mat4;

use super::GltfError;

/// How a node is named in messages: `` `name` `` or `#index`.
pub(super) fn label(n: &gltf::Node<'_>) -> String {
    n.name().map_or(format!("#{}", n.index()), |s| format!("`{s}`"))
}

/// The nodes to import with their world matrices (each the product of its ancestors'
/// transforms), in scene order: the subtree of the node `name` names, or the default scene.
pub(super) fn select_nodes<'a>(
    doc: &'a gltf::Document,
    name: Option<&str>,
    path: &Path,
) -> Result<Vec<(gltf::Node<'a>, Mat4)>, GltfError> {
    let nodes: Vec<gltf::Node<'a>> = doc.nodes().collect();
    let count = nodes.len();
    let mut parent = vec![None; count];
    for n in doc.nodes() {
        for c in n.children() {
            parent[c.index()].get_or_insert(n.index());
        }
    }
    // A node's subtree, depth first, transforms accumulated; each node once (a node listed
    // twice, or a cycle of children, in a malformed file).
    let subtree = |root: gltf::Node<'a>, above: Mat4, seen: &mut Vec<bool>, out: &mut Vec<(gltf::Node<'a>, Mat4)>| {
        let mut stack = vec![(root, above)];
        while let Some((n, up)) = stack.pop() {
            if std::mem::replace(&mut seen[n.index()], true) {
                continue;
            }
            let world = up * Mat4::from_cols_array_2d(&n.transform().matrix());
            let children: Vec<_> = n.children().map(|c| (c, world)).collect();
            stack.extend(children.into_iter().rev());
            out.push((n, world));
        }
    };
    let mut seen = vec![false; count];
    let mut out = Vec::new();
    match name {
        Some(want) => {
            let by_index = want.strip_prefix('#').and_then(|i| i.parse::<usize>().ok());
            let named: Vec<gltf::Node<'a>> = doc.nodes().filter(|n| n.name() == Some(want)).collect();
            let target = match (named.as_slice(), by_index) {
                ([one], _) => one.clone(),
                ([], Some(i)) if i < count => nodes[i].clone(),
                ([], _) => {
                    let with_mesh: Vec<String> =
                        doc.nodes().filter(|n| n.mesh().is_some()).map(|n| label(&n)).collect();
                    return Err(GltfError::NoMesh {
                        path: path.to_owned(),
                        message: format!("no node named `{want}`; nodes with meshes: {}", list(&with_mesh)),
                    });
                }
                (many, _) => {
                    let at: Vec<String> = many.iter().map(|n| format!("#{}", n.index())).collect();
                    return Err(GltfError::NoMesh {
                        path: path.to_owned(),
                        message: format!(
                            "{} nodes are named `{want}` ({}); name one by index",
                            many.len(),
                            at.join(", ")
                        ),
                    });
                }
            };
            // The ancestors' transforms, root first (each once: a cycle of parents in a
            // malformed file stops where it would repeat or reach the node itself).
            let mut above = Mat4::IDENTITY;
            let mut chain = Vec::new();
            let mut on_chain = vec![false; count];
            on_chain[target.index()] = true;
            let mut up = parent[target.index()];
            while let Some(p) = up.filter(|&p| !std::mem::replace(&mut on_chain[p], true)) {
                chain.push(p);
                up = parent[p];
            }
            for &p in chain.iter().rev() {
                above *= Mat4::from_cols_array_2d(&nodes[p].transform().matrix());
            }
            subtree(target, above, &mut seen, &mut out);
        }
        None => {
            let roots: Vec<gltf::Node<'a>> = match doc.default_scene().or_else(|| doc.scenes().next()) {
                Some(scene) => scene.nodes().collect(),
                None => doc.nodes().filter(|n| parent[n.index()].is_none()).collect(),
            };
            for r in roots {
                subtree(r, Mat4::IDENTITY, &mut seen, &mut out);
            }
        }
    }
    if out.iter().all(|(n, _)| n.mesh().is_none()) {
        let message = match name {
            Some(want) => format!("node `{want}` has no mesh, nor has any node below it"),
            None => "no node of the default scene has a mesh".into(),
        };
        return Err(GltfError::NoMesh { path: path.to_owned(), message });
    }
    Ok(out)
}

fn list(names: &[String]) -> String {
    if names.is_empty() { "none".into() } else { names.join(", ") }
}
