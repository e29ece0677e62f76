//! Conforming a voxel tet mesh to the surface it was made from: the boundary vertices of the
//! blocky lattice are moved onto the surface, as far as the tets around them stay well shaped.
//!
//! A conservative voxelization covers the surface with whole cells, so its boundary stands off
//! a slanted or curved surface by up to a cell diagonal: a ball made of cubes rests on a flat
//! patch and cannot roll, a body hovers that far above what it lies on, and its mass counts
//! the overhang. Moving each boundary vertex to the closest point of the surface removes that
//! offset where the lattice allows it; where a move would flatten or invert a tet (thin parts,
//! sharp concave corners) the vertex goes part of the way. Only vertices in front of the
//! surface (on its outward side, triangles counter-clockwise from outside) move, so the cells
//! around an open sheet keep their thickness behind it.

use std::collections::HashMap;

use glam::{DVec3, IVec3, Vec3};

use super::embedding::closest_in_tet;
use super::surface::extract_boundary;
use crate::math::distance::point_triangle;

/// The least volume a tet keeps while its vertices are moved, as a share of its lattice
/// volume: a fifth keeps the tets of a conformed body within a factor of a few of the
/// lattice's conditioning, so its stiffness and time step stay those of the voxel mesh.
pub const MIN_VOLUME_RATIO: f64 = 0.2;

/// The lattice, its tets and where the surface lies in it.
pub(super) struct Lattice<'a> {
    /// Each vertex's lattice point (integer coordinates).
    pub points: &'a [IVec3],
    /// The vertex at each lattice point.
    pub index: &'a HashMap<IVec3, u32>,
    /// Where lattice point 0 lies \[m\].
    pub origin: DVec3,
    /// Cell edge per axis \[m\].
    pub h: DVec3,
    /// Axes one layer thick (thinner than half a cell): vertices keep their coordinate along
    /// them, so conforming does not squash the layer below the thickness it was given.
    pub thin: glam::BVec3,
    /// The tets (lattice vertex indices, either orientation).
    pub tets: &'a [[u32; 4]],
    /// The lattice cell each tet splits.
    pub tet_cells: &'a [IVec3],
    /// For each lattice cell the surface touches, the triangles that touch it.
    pub bins: &'a HashMap<IVec3, Vec<u32>>,
}

/// How far outside the conformed tets a surface vertex may end, in cells (of the smallest
/// edge): the chord of a curved surface between conformed vertices leaves its vertices a
/// little outside, which the embedding carries; where moves leave one farther out (at the rim
/// of an open sheet, across a thin gap) the cells around it are put back.
pub const MAX_OUTSIDE: f64 = 0.25;

/// Moves the boundary vertices of the tets in `x` (their lattice positions, updated in place)
/// towards their closest points on the surface (`positions`, `triangles`), in three passes of
/// a full, a half and a quarter move each, keeping every tet at least [`MIN_VOLUME_RATIO`] of
/// its lattice volume with its orientation; then puts back the cells around any surface
/// vertex left more than [`MAX_OUTSIDE`] outside. Deterministic: vertices go in index order.
pub(super) fn conform(x: &mut [DVec3], lattice: &Lattice<'_>, positions: &[Vec3], triangles: &[[u32; 3]]) {
    let rest: Vec<f64> = lattice.tets.iter().map(|t| tet_volume6(x, t)).collect();
    // Boundary vertices: those of faces that belong to one tet only.
    let mut on_boundary = vec![false; x.len()];
    for &v in &extract_boundary(lattice.tets).vertices {
        on_boundary[v as usize] = true;
    }
    let mut around: Vec<Vec<u32>> = vec![Vec::new(); x.len()];
    for (k, t) in lattice.tets.iter().enumerate() {
        for &i in t {
            if on_boundary[i as usize] {
                around[i as usize].push(k as u32);
            }
        }
    }
    let c = Conform { lattice, rest, around, canonical: crate::mesh::render_mesh::weld(positions) };
    let mut targets = c.surface_targets(x, &on_boundary, positions, triangles);
    c.snap_corners(x, &mut targets, positions, triangles);
    c.approach(x, &targets);
    c.put_back_outside(x, positions);
    debug_assert!((0..lattice.tets.len()).all(|t| c.fits(x, t as u32)), "a conformed tet lost its shape");
}

/// Six times the signed volume of tet `t` at positions `x`.
fn tet_volume6(x: &[DVec3], t: &[u32; 4]) -> f64 {
    let [a, b, c, d] = t.map(|i| x[i as usize]);
    (b - a).dot((c - a).cross(d - a))
}

/// What the steps of [`conform`] share.
struct Conform<'a> {
    lattice: &'a Lattice<'a>,
    /// Each tet's lattice volume (×6).
    rest: Vec<f64>,
    /// Per boundary vertex, the tets around it.
    around: Vec<Vec<u32>>,
    /// Per surface vertex, the first vertex at its position (seams welded).
    canonical: Vec<u32>,
}

impl Conform<'_> {
    /// Whether tet `k` keeps at least [`MIN_VOLUME_RATIO`] of its lattice volume.
    fn fits(&self, x: &[DVec3], k: u32) -> bool {
        let k = k as usize;
        tet_volume6(x, &self.lattice.tets[k]) / self.rest[k] >= MIN_VOLUME_RATIO
    }

    /// A boundary vertex is a corner of a cell the surface touches, so its closest surface
    /// point lies within a cell diagonal: the cells that far around it are searched.
    fn reach(&self) -> IVec3 {
        let h = self.lattice.h;
        (h.length() / h).ceil().as_ivec3()
    }

    /// Each boundary vertex's target: its closest point on the surface, where it lies in front
    /// of the surface.
    fn surface_targets(
        &self,
        x: &[DVec3],
        on_boundary: &[bool],
        positions: &[Vec3],
        triangles: &[[u32; 3]],
    ) -> Vec<Option<DVec3>> {
        let lattice = self.lattice;
        let reach = self.reach();
        (0..x.len())
            .map(|v| {
                if !on_boundary[v] {
                    return None;
                }
                let p = lattice.points[v];
                // Candidates' distances, closest points and unit normals.
                let mut found: Vec<(f64, DVec3, DVec3)> = Vec::new();
                for cz in p.z - reach.z - 1..=p.z + reach.z {
                    for cy in p.y - reach.y - 1..=p.y + reach.y {
                        for cx in p.x - reach.x - 1..=p.x + reach.x {
                            let Some(tris) = lattice.bins.get(&IVec3::new(cx, cy, cz)) else { continue };
                            for &t in tris {
                                let [a, b, c] = triangles[t as usize].map(|i| positions[i as usize].as_dvec3());
                                let close = point_triangle::<f64>(x[v], a, b, c);
                                let w = close.weights;
                                let q = -(a * w[1] + b * w[2] + c * w[3]);
                                found.push((close.distance, q, (b - a).cross(c - a).normalize_or_zero()));
                            }
                        }
                    }
                }
                let (d, q, _) = *found.iter().min_by(|a, b| a.0.total_cmp(&b.0))?;
                // Only a vertex in front of the surface is pulled onto it: behind it (the inside
                // of an open sheet's shell of cells) the lattice is all the thickness there is.
                // Where the closest point is an edge or a corner, every triangle that shares it
                // votes with its normal (a pseudo-normal): one face alone can point away from a
                // vertex that is outside a sharp edge.
                let tie = 1e-9 * lattice.h.length();
                let normal: DVec3 = found.iter().filter(|f| f.0 <= d + tie).map(|f| f.2).sum();
                ((x[v] - q).dot(normal) > 0.0).then_some(DVec3::select(lattice.thin, x[v], q))
            })
            .collect()
    }

    /// Corners first, on the untouched lattice: projection from outside reaches a convex corner
    /// only from inside its narrow cone of closest points, so a box's corners would come out
    /// bevelled. Each corner of the surface takes the nearest boundary vertex that can move all
    /// the way onto it (no vertex serving two corners); the projection then leaves it there.
    fn snap_corners(&self, x: &mut [DVec3], targets: &mut [Option<DVec3>], positions: &[Vec3], triangles: &[[u32; 3]]) {
        let lattice = self.lattice;
        let reach = self.reach();
        let mut taken = vec![false; x.len()];
        for s in corners(positions, triangles, &self.canonical) {
            let c = ((s - lattice.origin) / lattice.h).round().as_ivec3();
            let mut candidates: Vec<(f64, usize)> = Vec::new();
            for z in c.z - reach.z..=c.z + reach.z {
                for y in c.y - reach.y..=c.y + reach.y {
                    for xx in c.x - reach.x..=c.x + reach.x {
                        let Some(&v) = lattice.index.get(&IVec3::new(xx, y, z)) else { continue };
                        let d = x[v as usize].distance(s);
                        if d <= lattice.h.length() && targets[v as usize].is_some() && !taken[v as usize] {
                            candidates.push((d, v as usize));
                        }
                    }
                }
            }
            candidates.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            for (_, v) in candidates {
                let start = x[v];
                let s = DVec3::select(lattice.thin, start, s);
                x[v] = s;
                if self.around[v].iter().all(|&k| self.fits(x, k)) {
                    targets[v] = Some(s);
                    taken[v] = true;
                    break;
                }
                x[v] = start;
            }
        }
    }

    /// Three passes over the vertices in index order, each moving a vertex the whole way to
    /// its target, or half or a quarter of it, as far as its tets keep their shape.
    fn approach(&self, x: &mut [DVec3], targets: &[Option<DVec3>]) {
        for _pass in 0..3 {
            for v in 0..x.len() {
                let Some(target) = targets[v] else { continue };
                let start = x[v];
                if start == target {
                    continue;
                }
                for share in [1.0, 0.5, 0.25] {
                    x[v] = start + (target - start) * share;
                    if self.around[v].iter().all(|&k| self.fits(x, k)) {
                        break;
                    }
                    x[v] = start;
                }
            }
        }
    }

    /// Surface vertices the moves left too far outside: the lattice (conservative) contains
    /// every one, so putting back the cells around it brings it inside again. A vertex put back
    /// can leave a neighbouring tet, whose other vertices moved, below its kept share: those
    /// are put back too, until every tet fits again (the lattice itself does).
    fn put_back_outside(&self, x: &mut [DVec3], positions: &[Vec3]) {
        let lattice = self.lattice;
        let lattice_x: Vec<DVec3> = lattice.points.iter().map(|p| lattice.origin + p.as_dvec3() * lattice.h).collect();
        let mut cell_tets: HashMap<IVec3, Vec<u32>> = HashMap::new();
        for (k, c) in lattice.tet_cells.iter().enumerate() {
            cell_tets.entry(*c).or_default().push(k as u32);
        }
        let near = |c: IVec3| {
            let ring =
                (-1..=1).flat_map(move |z| (-1..=1).flat_map(move |y| (-1..=1).map(move |x| IVec3::new(x, y, z))));
            // The cell itself first: most points are in it, and the search stops at the first fit.
            std::iter::once(c).chain(ring.filter(|d| *d != IVec3::ZERO).map(move |d| c + d))
        };
        let tolerance = MAX_OUTSIDE * lattice.h.min_element();
        for _round in 0..3 {
            let mut put_back: Vec<usize> = Vec::new();
            for (k, p) in positions.iter().enumerate() {
                if self.canonical[k] as usize != k {
                    continue; // a seam's duplicate: checked once
                }
                let p = p.as_dvec3();
                let c = ((p - lattice.origin) / lattice.h).floor().as_ivec3();
                let covered = near(c)
                    .filter_map(|n| cell_tets.get(&n))
                    .flatten()
                    .any(|&t| closest_in_tet(lattice.tets[t as usize].map(|i| x[i as usize]), p).1 <= tolerance);
                if !covered {
                    for &t in near(c).filter_map(|n| cell_tets.get(&n)).flatten() {
                        for &i in &lattice.tets[t as usize] {
                            if x[i as usize] != lattice_x[i as usize] {
                                x[i as usize] = lattice_x[i as usize];
                                put_back.push(i as usize);
                            }
                        }
                    }
                }
            }
            if put_back.is_empty() {
                break;
            }
            while let Some(v) = put_back.pop() {
                for &t in &self.around[v] {
                    if !self.fits(x, t) {
                        for &i in &lattice.tets[t as usize] {
                            if x[i as usize] != lattice_x[i as usize] {
                                x[i as usize] = lattice_x[i as usize];
                                put_back.push(i as usize);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The largest angle between a corner's mean normal and one of its triangles' normals for it
/// to count as a corner (40°: a cube's corner is 55°, the rim of a cylinder 45°).
const CORNER_COS: f64 = 0.766;

/// Surface vertices (welded across seams) where the surface folds sharply: some triangle
/// around them faces more than 40° away from their mean normal.
fn corners(positions: &[Vec3], triangles: &[[u32; 3]], canonical: &[u32]) -> Vec<DVec3> {
    let face: Vec<DVec3> = triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| positions[i as usize].as_dvec3());
            (b - a).cross(c - a)
        })
        .collect();
    let mut mean = vec![DVec3::ZERO; positions.len()];
    for (t, n) in triangles.iter().zip(&face) {
        for &i in t {
            mean[canonical[i as usize] as usize] += *n;
        }
    }
    let mut sharp = vec![false; positions.len()];
    for (t, n) in triangles.iter().zip(&face) {
        let Some(n) = n.try_normalize() else { continue };
        for &i in t {
            let c = canonical[i as usize] as usize;
            if mean[c].try_normalize().is_none_or(|m| m.dot(n) < CORNER_COS) {
                sharp[c] = true;
            }
        }
    }
    (0..positions.len()).filter(|&k| sharp[k] && canonical[k] as usize == k).map(|k| positions[k].as_dvec3()).collect()
}
