//! Procedural meshes: boxes and beams split into 5 or 6 tets per cell, spheres and ellipsoids,
//! cloth grids. Every generator returns a validated mesh.

use glam::{IVec3, Vec2, Vec3};

use super::{MeshError, TetMesh, TriMesh};

/// How a hexahedral cell is split into tets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum TetSplit {
    /// Five tets per cell (a central tet and four corners), alternating with cell parity so
    /// neighbouring cells share face diagonals. Fewer elements, slightly anisotropic.
    Five,
    /// Six tets per cell around the main diagonal (Kuhn/Freudenthal): conforming without
    /// alternation, the default of `docs/scenes.md`. Every cell has the same diagonal, which the
    /// mesh's response feels: see [`TetSplit::SixMirrored`].
    #[default]
    Six,
    /// Six tets per cell as [`TetSplit::Six`], with cells of odd index along an axis mirrored
    /// along it. Mirrored neighbours share face diagonals, so the mesh stays conforming, and
    /// the lattice has no preferred diagonal. With one diagonal everywhere a compressed box
    /// shears along it: four stacked soft cubes leaned by 1.2 mm towards (+x, +z) with `six`
    /// and by 0.013 mm with `six_mirrored`.
    SixMirrored,
}

/// Corner `k` of a cell has offset (k & 1, (k >> 1) & 1, (k >> 2) & 1).
const CORNER: [IVec3; 8] = [
    IVec3::new(0, 0, 0),
    IVec3::new(1, 0, 0),
    IVec3::new(0, 1, 0),
    IVec3::new(1, 1, 0),
    IVec3::new(0, 0, 1),
    IVec3::new(1, 0, 1),
    IVec3::new(0, 1, 1),
    IVec3::new(1, 1, 1),
];

/// Kuhn split: one tet per permutation of the axes, walking from corner 0 to corner 7 (of
/// the cell as mirrored, see [`TetSplit::SixMirrored`]).
const SIX: [[usize; 4]; 6] = [[0, 1, 3, 7], [0, 1, 5, 7], [0, 2, 3, 7], [0, 2, 6, 7], [0, 4, 5, 7], [0, 4, 6, 7]];
/// Even cells: the central tet joins the odd-popcount corners; one tet per even corner.
const FIVE_EVEN: [[usize; 4]; 5] = [[1, 2, 4, 7], [0, 1, 2, 4], [3, 1, 2, 7], [5, 1, 4, 7], [6, 2, 4, 7]];
/// Odd cells: mirror image, so shared faces use the same diagonal.
const FIVE_ODD: [[usize; 4]; 5] = [[0, 3, 5, 6], [1, 0, 3, 5], [2, 0, 3, 6], [4, 0, 5, 6], [7, 3, 5, 6]];

fn check_cells(cells: [u32; 3]) -> Result<(), MeshError> {
    for (field, c) in [("cells[0]", cells[0]), ("cells[1]", cells[1]), ("cells[2]", cells[2])] {
        if c == 0 || c > 1024 {
            return Err(MeshError::InvalidGenerator { field, value: c.to_string(), reason: "must be in 1..=1024" });
        }
    }
    Ok(())
}

fn check_positive(field: &'static str, v: f32) -> Result<(), MeshError> {
    if !(v.is_finite() && v > 0.0) {
        return Err(MeshError::InvalidGenerator { field, value: v.to_string(), reason: "must be finite and > 0" });
    }
    Ok(())
}

/// Splits the lattice cell whose lowest corner is `cell` into tets, given as lattice points.
/// The pattern depends only on the cell's lattice index, so any set of cells split this way
/// is conforming (neighbours share face diagonals): the voxel meshes rely on it.
pub(crate) fn split_cell(split: TetSplit, cell: IVec3, mut emit: impl FnMut([IVec3; 4])) {
    let pattern: &[[usize; 4]] = match split {
        TetSplit::Six | TetSplit::SixMirrored => &SIX,
        TetSplit::Five if (cell.x + cell.y + cell.z).rem_euclid(2) == 0 => &FIVE_EVEN,
        TetSplit::Five => &FIVE_ODD,
    };
    // Cells with an odd index along an axis use the split mirrored along that axis (corner bit
    // flipped).
    let mirror = if split == TetSplit::SixMirrored {
        (cell.x.rem_euclid(2) | cell.y.rem_euclid(2) << 1 | cell.z.rem_euclid(2) << 2) as usize
    } else {
        0
    };
    for t in pattern {
        emit(t.map(|k| cell + CORNER[k ^ mirror]));
    }
}

/// A lattice of `cells` hexahedra mapped through `place` (lattice index → position), split into
/// tets. Orientation is fixed after mapping, so any orientation-reversing map still works.
fn lattice(cells: [u32; 3], split: TetSplit, place: impl Fn(IVec3) -> Vec3) -> Result<TetMesh, MeshError> {
    check_cells(cells)?;
    let [nx, ny, nz] = cells.map(|c| c as i32);
    let index = |p: IVec3| (p.x + (nx + 1) * (p.y + (ny + 1) * p.z)) as u32;
    let mut positions = Vec::with_capacity(((nx + 1) * (ny + 1) * (nz + 1)) as usize);
    for z in 0..=nz {
        for y in 0..=ny {
            for x in 0..=nx {
                positions.push(place(IVec3::new(x, y, z)));
            }
        }
    }
    let mut tets = Vec::with_capacity((nx * ny * nz) as usize * if split == TetSplit::Five { 5 } else { 6 });
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                split_cell(split, IVec3::new(x, y, z), |t| tets.push(t.map(index)));
            }
        }
    }
    TetMesh::new_reoriented(positions, tets)
}

impl TetMesh {
    /// A box of `size` \[m\] centred at the origin, with `cells` hexahedra along x, y, z, each
    /// split into tets. Vertex count `(nx+1)(ny+1)(nz+1)`.
    pub fn box_mesh(size: Vec3, cells: [u32; 3], split: TetSplit) -> Result<Self, MeshError> {
        check_positive("size.x", size.x)?;
        check_positive("size.y", size.y)?;
        check_positive("size.z", size.z)?;
        let n = Vec3::new(cells[0] as f32, cells[1] as f32, cells[2] as f32);
        // Compute each coordinate from the lattice index (not by accumulation), so faces are
        // exactly planar and opposite faces exactly at ±size/2.
        lattice(cells, split, |p| (p.as_vec3() / n - 0.5) * size)
    }

    /// A beam of `length` along +x from x = 0, with cross-section `height` (y) × `width` (z)
    /// centred on the x axis: the cantilever of `docs/scenes.md`, clamped at x = 0.
    pub fn beam(length: f32, height: f32, width: f32, cells: [u32; 3], split: TetSplit) -> Result<Self, MeshError> {
        let size = Vec3::new(length, height, width);
        Ok(Self::box_mesh(size, cells, split)?.transformed(glam::Quat::IDENTITY, Vec3::new(0.5 * length, 0.0, 0.0)))
    }

    /// A solid ellipsoid with semi-axes `radii` \[m\], centred at the origin, from a cube lattice
    /// with `cells` cells across mapped shell by shell onto ellipsoidal shells.
    ///
    /// The map sends the cube shell `max(|x|,|y|,|z|) = s` to the sphere of radius `s` with the
    /// area-balanced cube→sphere formula, so element quality stays near the lattice's
    /// everywhere (no pole singularity, no degenerate corner tets).
    pub fn ellipsoid(radii: Vec3, cells: u32, split: TetSplit) -> Result<Self, MeshError> {
        check_positive("radii.x", radii.x)?;
        check_positive("radii.y", radii.y)?;
        check_positive("radii.z", radii.z)?;
        if cells < 2 {
            return Err(MeshError::InvalidGenerator {
                field: "cells",
                value: cells.to_string(),
                reason: "must be ≥ 2",
            });
        }
        let half = cells as f32 * 0.5;
        lattice([cells; 3], split, |p| {
            let c = p.as_vec3() / half - 1.0; // in [-1, 1]^3
            let s = c.abs().max_element();
            if s == 0.0 {
                return Vec3::ZERO;
            }
            let u = c / s; // on the unit cube's surface
            let (x2, y2, z2) = (u.x * u.x, u.y * u.y, u.z * u.z);
            let sphere = Vec3::new(
                u.x * (1.0 - 0.5 * (y2 + z2) + y2 * z2 / 3.0).max(0.0).sqrt(),
                u.y * (1.0 - 0.5 * (z2 + x2) + z2 * x2 / 3.0).max(0.0).sqrt(),
                u.z * (1.0 - 0.5 * (x2 + y2) + x2 * y2 / 3.0).max(0.0).sqrt(),
            );
            sphere * s * radii
        })
    }

    /// A solid sphere of `radius` \[m\] centred at the origin; see [`TetMesh::ellipsoid`].
    pub fn sphere(radius: f32, cells: u32, split: TetSplit) -> Result<Self, MeshError> {
        Self::ellipsoid(Vec3::splat(radius), cells, split)
    }
}

impl TriMesh {
    /// A flat cloth of `size` \[m\] (x, z) in the y = 0 plane, centred at the origin, with
    /// `cells` quads along x and z, each split into two triangles. Triangle normals point +y.
    /// `(nx+1)(nz+1)` vertices, `2 nx nz` triangles.
    pub fn cloth_grid(size: Vec2, cells: [u32; 2]) -> Result<Self, MeshError> {
        check_positive("size.x", size.x)?;
        check_positive("size.y", size.y)?;
        for (field, c) in [("cells[0]", cells[0]), ("cells[1]", cells[1])] {
            if c == 0 || c > 4096 {
                return Err(MeshError::InvalidGenerator { field, value: c.to_string(), reason: "must be in 1..=4096" });
            }
        }
        let [nx, nz] = cells;
        let mut positions = Vec::with_capacity(((nx + 1) * (nz + 1)) as usize);
        for k in 0..=nz {
            for i in 0..=nx {
                positions.push(Vec3::new(
                    (i as f32 / nx as f32 - 0.5) * size.x,
                    0.0,
                    (k as f32 / nz as f32 - 0.5) * size.y,
                ));
            }
        }
        let id = |i: u32, k: u32| i + (nx + 1) * k;
        let mut triangles = Vec::with_capacity((2 * nx * nz) as usize);
        for k in 0..nz {
            for i in 0..nx {
                // Counter-clockwise seen from +y: x then -z turns left.
                triangles.push([id(i, k), id(i, k + 1), id(i + 1, k + 1)]);
                triangles.push([id(i, k), id(i + 1, k + 1), id(i + 1, k)]);
            }
        }
        Self::new(positions, triangles)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_counts_and_volume() {
        for (split, per) in [(TetSplit::Six, 6), (TetSplit::SixMirrored, 6), (TetSplit::Five, 5)] {
            let m = TetMesh::box_mesh(Vec3::new(1.0, 2.0, 0.5), [3, 4, 2], split).unwrap();
            assert_eq!(m.vertex_count(), 4 * 5 * 3);
            assert_eq!(m.tet_count(), 3 * 4 * 2 * per);
            assert!((m.volume() - 1.0).abs() < 1e-5, "{split:?}: {}", m.volume());
        }
    }

    #[test]
    fn scene_counts_match_the_scene_table() {
        // docs/scenes.md: cantilever 20×2×2 → 189 v / 480 tets; drop cube 10³ → 1,331 v / 6,000 tets.
        let b = TetMesh::beam(2.0, 0.2, 0.2, [20, 2, 2], TetSplit::Six).unwrap();
        assert_eq!((b.vertex_count(), b.tet_count()), (189, 480));
        let (lo, hi) = b.bounds();
        assert!(lo.x.abs() < 1e-6 && (hi.x - 2.0).abs() < 1e-6);
        let c = TetMesh::box_mesh(Vec3::splat(0.2), [10; 3], TetSplit::Six).unwrap();
        assert_eq!((c.vertex_count(), c.tet_count()), (1331, 6000));
    }

    #[test]
    fn mirrored_six_split_is_conforming_and_mirror_symmetric() {
        use std::collections::BTreeSet;
        let m = TetMesh::box_mesh(Vec3::new(1.0, 0.6, 0.8), [4, 2, 4], TetSplit::SixMirrored).unwrap();
        // Conforming: the boundary is exactly two triangles per boundary quad.
        assert_eq!(m.boundary_surface().triangles.len(), 2 * 2 * (4 * 2 + 2 * 4 + 4 * 4));
        // With even cell counts the tets are symmetric under each axis reflection through the
        // centre: no preferred diagonal (the unmirrored Kuhn split fails this).
        let key = |p: Vec3| (p * 1000.0).round().as_ivec3().to_array();
        let index: std::collections::BTreeMap<_, u32> =
            m.positions().iter().enumerate().map(|(i, &p)| (key(p), i as u32)).collect();
        let set = |tets: &mut dyn Iterator<Item = [u32; 4]>| -> BTreeSet<[u32; 4]> {
            tets.map(|mut t| {
                t.sort_unstable();
                t
            })
            .collect()
        };
        let original = set(&mut m.tets().iter().copied());
        for axis in 0..3 {
            let mut flip = Vec3::ONE;
            flip[axis] = -1.0;
            let reflected = set(&mut m.tets().iter().map(|t| t.map(|i| index[&key(m.positions()[i as usize] * flip)])));
            assert_eq!(reflected, original, "not symmetric under reflection of axis {axis}");
        }
    }

    #[test]
    fn sphere_is_valid_and_round() {
        for cells in [2, 3, 8, 15] {
            for split in [TetSplit::Six, TetSplit::SixMirrored, TetSplit::Five] {
                let m = TetMesh::sphere(0.5, cells, split).unwrap();
                let exact = 4.0 / 3.0 * std::f64::consts::PI * 0.125;
                // Coarse spheres are polyhedra inscribed in the sphere; fine ones converge.
                let tol = if cells >= 8 { 0.03 } else { 0.4 };
                assert!((m.volume() / exact - 1.0).abs() < tol, "cells {cells}: {}", m.volume() / exact);
                for p in m.positions() {
                    assert!(p.length() <= 0.5 + 1e-5);
                }
            }
        }
    }

    #[test]
    fn cloth_grid_counts_and_normals() {
        let m = TriMesh::cloth_grid(Vec2::new(1.0, 0.5), [4, 2]).unwrap();
        assert_eq!(m.vertex_count(), 15);
        assert_eq!(m.triangles().len(), 16);
        assert!((m.area() - 0.5).abs() < 1e-6);
        for t in m.triangles() {
            let p = t.map(|i| m.positions()[i as usize]);
            assert!((p[1] - p[0]).cross(p[2] - p[0]).y > 0.0);
        }
        // Interior edges: (nx-1)·nz vertical + nx·(nz-1) horizontal + nx·nz diagonals.
        assert_eq!(m.hinges().len(), 3 * 2 + 4 + 8);
    }

    #[test]
    fn bad_generator_parameters_are_typed_errors() {
        let e = TetMesh::box_mesh(Vec3::new(1.0, -1.0, 1.0), [1, 1, 1], TetSplit::Six).unwrap_err();
        assert!(matches!(e, MeshError::InvalidGenerator { field: "size.y", .. }), "{e}");
        let e = TetMesh::box_mesh(Vec3::ONE, [1, 0, 1], TetSplit::Six).unwrap_err();
        assert!(matches!(e, MeshError::InvalidGenerator { field: "cells[1]", .. }), "{e}");
    }
}
