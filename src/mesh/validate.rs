//! Mesh validation: the checks every mesh passes before it becomes a body.

use std::collections::HashMap;

use glam::{DVec3, Vec3};

use super::MeshError;

/// Degeneracy threshold: an element is rejected when its volume is below this fraction of its
/// longest edge cubed (area: squared). A regular tet has 0.118; f32 deformation gradients of
/// elements below 1e-6 carry relative errors above 10 %.
pub const DEGENERACY_RATIO: f64 = 1e-6;

pub(crate) fn check_vertices(positions: &[Vec3]) -> Result<(), MeshError> {
    if positions.is_empty() {
        return Err(MeshError::Empty { what: "vertices" });
    }
    for (i, p) in positions.iter().enumerate() {
        for (axis, v) in [('x', p.x), ('y', p.y), ('z', p.z)] {
            if !v.is_finite() {
                return Err(MeshError::NonFiniteVertex { vertex: i as u32, axis, value: v as f64 });
            }
        }
    }
    Ok(())
}

pub(crate) fn check_indices<const K: usize>(
    kind: &'static str,
    elements: &[[u32; K]],
    vertex_count: usize,
) -> Result<(), MeshError> {
    if elements.is_empty() {
        return Err(MeshError::Empty { what: "elements" });
    }
    for (e, el) in elements.iter().enumerate() {
        for (k, &i) in el.iter().enumerate() {
            if i as usize >= vertex_count {
                return Err(MeshError::IndexOutOfRange {
                    kind,
                    element: e as u32,
                    index: i,
                    vertex_count: vertex_count as u32,
                });
            }
            if el[..k].contains(&i) {
                return Err(MeshError::RepeatedIndex { kind, element: e as u32, index: i });
            }
        }
    }
    Ok(())
}

pub(crate) fn check_all_used<const K: usize>(elements: &[[u32; K]], vertex_count: usize) -> Result<(), MeshError> {
    let mut used = vec![false; vertex_count];
    for el in elements {
        for &i in el {
            used[i as usize] = true;
        }
    }
    match used.iter().position(|u| !u) {
        Some(v) => Err(MeshError::UnusedVertex { vertex: v as u32 }),
        None => Ok(()),
    }
}

/// Signed volume of a tet, in f64.
pub fn tet_volume(p: [Vec3; 4]) -> f64 {
    let a = p[0].as_dvec3();
    (p[1].as_dvec3() - a).dot((p[2].as_dvec3() - a).cross(p[3].as_dvec3() - a)) / 6.0
}

pub(crate) fn longest_edge<const K: usize>(p: [Vec3; K]) -> f64 {
    let mut l: f64 = 0.0;
    for i in 0..K {
        for j in i + 1..K {
            l = l.max((p[i].as_dvec3() - p[j].as_dvec3()).length());
        }
    }
    l
}

pub(crate) fn check_tet_volumes(positions: &[Vec3], tets: &[[u32; 4]]) -> Result<(), MeshError> {
    for (e, t) in tets.iter().enumerate() {
        let p = t.map(|i| positions[i as usize]);
        let v = tet_volume(p);
        let l = longest_edge(p);
        if !(v > DEGENERACY_RATIO * l * l * l) {
            return Err(MeshError::DegenerateTet { element: e as u32, volume: v, longest_edge: l });
        }
    }
    Ok(())
}

/// Area of a triangle, in f64.
pub fn triangle_area(p: [Vec3; 3]) -> f64 {
    let a: DVec3 = p[0].as_dvec3();
    0.5 * (p[1].as_dvec3() - a).cross(p[2].as_dvec3() - a).length()
}

pub(crate) fn check_triangle_areas(positions: &[Vec3], tris: &[[u32; 3]]) -> Result<(), MeshError> {
    for (e, t) in tris.iter().enumerate() {
        let p = t.map(|i| positions[i as usize]);
        let a = triangle_area(p);
        let l = longest_edge(p);
        if !(a > DEGENERACY_RATIO * l * l) {
            return Err(MeshError::DegenerateTriangle { element: e as u32, area: a, longest_edge: l });
        }
    }
    Ok(())
}

pub(crate) fn check_manifold_faces(tets: &[[u32; 4]]) -> Result<(), MeshError> {
    let mut count: HashMap<[u32; 3], u32> = HashMap::with_capacity(tets.len() * 2);
    for t in tets {
        for f in super::surface::TET_FACES {
            let mut key = [t[f[0]], t[f[1]], t[f[2]]];
            key.sort_unstable();
            *count.entry(key).or_insert(0) += 1;
        }
    }
    // Report the first offender in tet order so the message is deterministic.
    for t in tets {
        for f in super::surface::TET_FACES {
            let mut key = [t[f[0]], t[f[1]], t[f[2]]];
            key.sort_unstable();
            let c = count[&key];
            if c > 2 {
                return Err(MeshError::NonManifold { what: "face", a: key[0], b: key[1], c: key[2], count: c });
            }
        }
    }
    Ok(())
}

pub(crate) fn check_manifold_edges(tris: &[[u32; 3]]) -> Result<(), MeshError> {
    let mut count: HashMap<[u32; 2], u32> = HashMap::with_capacity(tris.len() * 2);
    for t in tris {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            *count.entry([a.min(b), a.max(b)]).or_insert(0) += 1;
        }
    }
    for t in tris {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            let c = count[&[a.min(b), a.max(b)]];
            if c > 2 {
                return Err(MeshError::NonManifold { what: "edge", a: a.min(b), b: a.max(b), c: u32::MAX, count: c });
            }
        }
    }
    Ok(())
}
