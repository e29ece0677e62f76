//! Voxel tet meshes for triangle surfaces: what an artist's render mesh becomes when it has no
//! tet mesh of its own.
//!
//! The surface is voxelized conservatively (every lattice cell a triangle touches is solid),
//! the outside is flood-filled from a margin around the bounding box, and every cell the fill
//! cannot reach is solid too. So a closed surface gives its solid interior and an open one
//! (a sheet, a mesh with a hole) gives at least a shell of cells around it; either way every
//! point of the surface lies in a solid cell, which is what the embedding needs. Solid cells
//! are split into tets with the box generators' patterns, which conform across cells.

use std::collections::{HashMap, VecDeque};

use glam::{DVec3, IVec3, Vec3};

use super::generators::split_cell;
use super::{MeshError, TetMesh, TetSplit, validate};

/// The most lattice cells (solid or not) a voxelization may span, margin included: 2^22, about
/// 160³, which bounds a body at 25M tets; a finer cell than that is almost certainly a unit
/// mistake (millimetres for metres) and would not simulate in real time anyway.
pub const MAX_VOXEL_CELLS: usize = 1 << 22;

impl TetMesh {
    /// A tet mesh of lattice cells of edge about `cell` \[m\] covering the triangle surface
    /// (`positions`, `triangles`): cells the surface touches and every cell it encloses, each
    /// split into tets by `split`. Along each axis the cell edge is adjusted (up to about
    /// `cell`) so a whole number of cells spans the surface's bounding box exactly: the tet
    /// mesh has the same bounding box as the surface, so a body touches the ground where its
    /// render mesh does.
    ///
    /// Errors name the bad input: an empty surface, a non-finite vertex, an index out of range,
    /// a surface with no extent, or a `cell` that is not positive or too fine for the surface's
    /// size ([`MAX_VOXEL_CELLS`]).
    pub fn voxelize(positions: &[Vec3], triangles: &[[u32; 3]], cell: f32, split: TetSplit) -> Result<Self, MeshError> {
        if positions.is_empty() {
            return Err(MeshError::Empty { what: "vertices" });
        }
        if triangles.is_empty() {
            return Err(MeshError::Empty { what: "triangles" });
        }
        validate::check_vertices(positions)?;
        validate::check_indices("triangle", triangles, positions.len())?;
        if !(cell.is_finite() && cell > 0.0) {
            return Err(MeshError::InvalidGenerator {
                field: "cell",
                value: cell.to_string(),
                reason: "must be finite and > 0",
            });
        }
        let (lo, hi) = positions
            .iter()
            .fold((Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
        // Cells per axis, and the cell size that makes them span the bounding box exactly:
        // the tet mesh then has the surface's extent (a body rests where its render mesh
        // touches), at the price of cells a little off cubic. An axis thinner than half a cell
        // (a flat sheet, up to rounding) gets one cell of edge `cell` centred on it.
        let extent = (hi - lo).as_dvec3();
        let cell = cell as f64;
        let thin = extent.cmplt(DVec3::splat(0.5 * cell));
        let count = DVec3::select(thin, DVec3::ONE, (extent / cell - 1e-6).ceil().max(DVec3::ONE));
        // Sized in f64 before any integer conversion, so an absurd `cell` cannot overflow.
        let total = (count + 2.0).element_product();
        if total > MAX_VOXEL_CELLS as f64 {
            return Err(MeshError::InvalidGenerator {
                field: "cell",
                value: cell.to_string(),
                reason: "too fine for the surface's size: the lattice would exceed MAX_VOXEL_CELLS cells",
            });
        }
        let n = count.as_ivec3();
        let h = DVec3::select(thin, DVec3::splat(cell), extent / count);
        let origin = lo.as_dvec3() - DVec3::select(thin, 0.5 * (h - extent), DVec3::ZERO);
        // The flags carry one empty cell of margin on each side, so the flood fill starts
        // outside: flag cell c is lattice cell c − 1.
        let dims = n + IVec3::splat(2);
        let total = total as usize;
        let flat = |c: IVec3| c.x as usize + dims.x as usize * (c.y as usize + dims.y as usize * c.z as usize);
        let cell_of = |p: DVec3| ((p - origin) / h).floor().as_ivec3().clamp(IVec3::ZERO, n - 1) + IVec3::ONE;

        let mut surface = vec![false; total];
        let half = 0.5 * h;
        for t in triangles {
            let v = t.map(|i| positions[i as usize].as_dvec3());
            let (a, b) = (v[0].min(v[1]).min(v[2]), v[0].max(v[1]).max(v[2]));
            let (c0, c1) = (cell_of(a - 1e-9 * h), cell_of(b + 1e-9 * h));
            for z in c0.z..=c1.z {
                for y in c0.y..=c1.y {
                    for x in c0.x..=c1.x {
                        let c = IVec3::new(x, y, z);
                        let center = origin + ((c - IVec3::ONE).as_dvec3() + 0.5) * h;
                        if triangle_overlaps_box(v.map(|p| p - center), half) {
                            surface[flat(c)] = true;
                        }
                    }
                }
            }
        }

        // Outside: reachable from the margin through cells the surface does not touch.
        let mut outside = vec![false; total];
        let mut queue = VecDeque::from([IVec3::ZERO]);
        outside[0] = true;
        while let Some(c) = queue.pop_front() {
            for d in [IVec3::X, IVec3::NEG_X, IVec3::Y, IVec3::NEG_Y, IVec3::Z, IVec3::NEG_Z] {
                let n = c + d;
                if n.cmplt(IVec3::ZERO).any() || n.cmpge(dims).any() {
                    continue;
                }
                let k = flat(n);
                if !outside[k] && !surface[k] {
                    outside[k] = true;
                    queue.push_back(n);
                }
            }
        }

        let mut index: HashMap<IVec3, u32> = HashMap::new();
        let mut lattice_points = Vec::new();
        let mut tets = Vec::new();
        for z in 0..dims.z {
            for y in 0..dims.y {
                for x in 0..dims.x {
                    let c = IVec3::new(x, y, z);
                    if outside[flat(c)] {
                        continue;
                    }
                    split_cell(split, c - IVec3::ONE, |t| {
                        tets.push(t.map(|p| {
                            *index.entry(p).or_insert_with(|| {
                                lattice_points.push(p);
                                (lattice_points.len() - 1) as u32
                            })
                        }))
                    });
                }
            }
        }
        // Each coordinate from its lattice index (not accumulated), so shared faces are exact.
        let positions = lattice_points.iter().map(|p| (origin + p.as_dvec3() * h).as_vec3()).collect();
        TetMesh::new_reoriented(positions, tets)
    }
}

/// Whether the triangle `v` (relative to the box centre) touches the box of half-extents `half`:
/// the separating-axis test over the box's three axes, the triangle's normal and the nine
/// edge–axis cross products. Touching counts as overlapping (the voxelization is conservative).
fn triangle_overlaps_box(v: [DVec3; 3], half: DVec3) -> bool {
    let separated = |axis: DVec3| {
        let p = v.map(|x| axis.dot(x));
        let r = half.dot(axis.abs());
        p[0].min(p[1]).min(p[2]) > r || p[0].max(p[1]).max(p[2]) < -r
    };
    let e = [v[1] - v[0], v[2] - v[1], v[0] - v[2]];
    if [DVec3::X, DVec3::Y, DVec3::Z].into_iter().any(separated) {
        return false;
    }
    let n = e[0].cross(e[1]);
    if n != DVec3::ZERO && separated(n) {
        return false;
    }
    for edge in e {
        for axis in [DVec3::X, DVec3::Y, DVec3::Z] {
            let a = axis.cross(edge);
            if a != DVec3::ZERO && separated(a) {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 12 triangles of the box [-s, s]³, outward.
    fn box_surface(s: f32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
        let tets = TetMesh::box_mesh(Vec3::splat(2.0 * s), [1, 1, 1], TetSplit::Six).unwrap();
        let surf = tets.boundary_surface();
        (tets.positions().to_vec(), surf.triangles.clone())
    }

    #[test]
    fn a_closed_box_fills_solid_and_covers_its_surface() {
        let (p, t) = box_surface(0.5);
        let m = TetMesh::voxelize(&p, &t, 0.1, TetSplit::Six).unwrap();
        // The lattice spans the bounding box exactly, and every cell is touched or enclosed.
        let v = m.volume();
        assert!((v - 1.0).abs() < 1e-5, "volume {v}");
        let (lo, hi) = m.bounds();
        assert!((lo + 0.5).abs().max_element() < 1e-6 && (hi - 0.5).abs().max_element() < 1e-6, "{lo} {hi}");
        // A cell of 0.3 does not divide 1: four cells of 0.25 along each axis.
        let m = TetMesh::voxelize(&p, &t, 0.3, TetSplit::Six).unwrap();
        assert_eq!(m.vertex_count(), 125);
        // Solid inside: the centre is in a tet.
        assert!(m.tets().iter().any(|t| contains(&m, *t, Vec3::ZERO)));
    }

    #[test]
    fn an_open_sheet_gives_a_shell_and_a_torus_keeps_its_hole() {
        let sheet =
            (vec![Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.0), Vec3::new(0.0, 0.0, 1.0)], vec![[0, 2, 1]]);
        let m = TetMesh::voxelize(&sheet.0, &sheet.1, 0.25, TetSplit::Five).unwrap();
        let (lo, hi) = m.bounds();
        assert!((hi.y - lo.y - 0.25).abs() < 1e-6, "a flat sheet is one cell thick, centred: {lo} {hi}");
        assert!((lo.y + 0.125).abs() < 1e-6 && (hi.x - 1.0).abs() < 1e-6, "{lo} {hi}");

        let torus = crate::mesh::RenderMesh::torus(0.3, 0.1, 32, 16);
        let m = TetMesh::voxelize(&torus.positions, &torus.triangles, 0.04, TetSplit::Six).unwrap();
        assert!(!m.tets().iter().any(|t| contains(&m, *t, Vec3::ZERO)), "the hole must stay empty");
        assert!(m.tets().iter().any(|t| contains(&m, *t, Vec3::new(0.3, 0.0, 0.0))), "the tube is solid");
        let exact = 2.0 * std::f64::consts::PI.powi(2) * 0.3 * 0.01;
        assert!(m.volume() > exact && m.volume() < 3.0 * exact, "volume {} vs {exact}", m.volume());
    }

    #[test]
    fn bad_input_is_named() {
        let (p, t) = box_surface(0.5);
        assert!(matches!(
            TetMesh::voxelize(&p, &t, 0.0, TetSplit::Six),
            Err(MeshError::InvalidGenerator { field: "cell", .. })
        ));
        assert!(matches!(
            TetMesh::voxelize(&p, &t, 1e-4, TetSplit::Six),
            Err(MeshError::InvalidGenerator { field: "cell", .. })
        ));
        assert!(matches!(
            TetMesh::voxelize(&p, &[[0, 1, 99]], 0.1, TetSplit::Six),
            Err(MeshError::IndexOutOfRange { index: 99, .. })
        ));
        let mut q = p.clone();
        q[3].y = f32::NAN;
        assert!(matches!(
            TetMesh::voxelize(&q, &t, 0.1, TetSplit::Six),
            Err(MeshError::NonFiniteVertex { vertex: 3, .. })
        ));
    }

    #[test]
    fn overlap_test_matches_the_obvious_cases() {
        let tri = |a: [f64; 3], b: [f64; 3], c: [f64; 3]| [DVec3::from(a), DVec3::from(b), DVec3::from(c)];
        assert!(triangle_overlaps_box(tri([-2.0, 0.0, -2.0], [2.0, 0.0, -2.0], [0.0, 0.0, 2.0]), DVec3::splat(0.5)));
        assert!(!triangle_overlaps_box(tri([-2.0, 0.6, -2.0], [2.0, 0.6, -2.0], [0.0, 0.6, 2.0]), DVec3::splat(0.5)));
        // Passes by a corner diagonally: its bounding box overlaps, its plane does not.
        assert!(!triangle_overlaps_box(
            tri([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]).map(|p| p + 0.2),
            DVec3::splat(0.5)
        ));
        assert!(triangle_overlaps_box(tri([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]), DVec3::splat(0.5)));
    }

    fn contains(m: &TetMesh, t: [u32; 4], p: Vec3) -> bool {
        let x = t.map(|i| m.positions()[i as usize]);
        let w = crate::mesh::barycentric(x, p);
        w.iter().all(|&w| w >= -1e-9)
    }
}
