//! Voxel tet meshes for triangle surfaces: what an artist's render mesh becomes when it has no
//! tet mesh of its own.
//!
//! The surface is voxelized conservatively (every lattice cell a triangle touches is solid),
//! the outside is flood-filled from a margin around the bounding box, and every cell the fill
//! cannot reach is solid too. So a closed surface gives its solid interior and an open one
//! (a sheet, a mesh with a hole) gives at least a shell of cells around it; either way every
//! point of the surface lies in a solid cell, which is what the embedding needs. Solid cells
//! are split into tets with the box generators' patterns, which conform across cells, and the
//! boundary is moved onto the surface (`voxel_conform`).

use std::collections::{HashMap, VecDeque};

use glam::{DVec3, IVec3, Vec3};

use super::generators::split_cell;
use super::voxel_conform::{Lattice, conform};
use super::{MeshError, TetMesh, TetSplit, validate};

/// The most lattice cells (solid or not) a voxelization may span, margin included: 2^22, about
/// 160³, which bounds a body at 25M tets; a finer cell than that is almost certainly a unit
/// mistake (millimetres for metres) and would not simulate in real time anyway.
pub const MAX_VOXEL_CELLS: usize = 1 << 22;

/// The thinnest layer a thin axis gets, in cells: thinner tets would be slivers, stiff across
/// their thickness out of proportion.
const THIN_LAYER: f64 = 0.1;

/// An extent at most this share of the longest side counts as none: the surface is flat.
const FLAT: f64 = 1e-6;

impl TetMesh {
    /// A tet mesh of lattice cells of edge about `cell` \[m\] conforming to the triangle
    /// surface (`positions`, `triangles`): cells the surface touches and every cell it
    /// encloses, each split into tets by `split`, with the boundary vertices then moved onto
    /// the surface as far as their tets stay well shaped (each keeps at least a fifth of its
    /// lattice volume), and no surface vertex left more than a quarter of the smallest cell edge
    /// outside the tets (the embedding carries the rest). Along each axis the cell edge is adjusted (up to about
    /// `cell`) so a whole number of cells spans the surface's bounding box exactly, and an axis
    /// thinner than half a cell is one layer of the surface's own thickness (a tenth of a cell
    /// at least). So the tet mesh lies within the surface's bounding box and its boundary on or
    /// near the surface: a body touches what it rests on where its render mesh does, a ball
    /// rolls, and its mass is that of the volume the surface encloses.
    ///
    /// Errors name the bad input: an empty surface, a non-finite vertex, an index out of range,
    /// a flat surface ([`MeshError::Flat`]: simulate it as cloth), or a `cell` that is not
    /// positive or too fine for the surface's size ([`MeshError::TooManyCells`]: at most 2^22
    /// lattice cells).
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
        // (a plate) gets one layer of its own thickness, but no less than THIN_LAYER cells,
        // centred on it; an axis with no thickness at all is a sheet, not a solid.
        let extent = (hi - lo).as_dvec3();
        let size = extent.max_element();
        let cell = cell as f64;
        for (axis, e) in ['x', 'y', 'z'].into_iter().zip(extent.to_array()) {
            if e <= FLAT * size {
                return Err(MeshError::Flat { axis, extent: e as f32, size: size as f32 });
            }
        }
        let thin = extent.cmplt(DVec3::splat(0.5 * cell));
        let count = DVec3::select(thin, DVec3::ONE, (extent / cell - 1e-6).ceil().max(DVec3::ONE));
        // Sized in f64 before any integer conversion, so an absurd `cell` cannot overflow.
        let total = (count + 2.0).element_product();
        if total > MAX_VOXEL_CELLS as f64 {
            return Err(MeshError::TooManyCells {
                cell: cell as f32,
                extent: extent.as_vec3().to_array(),
                cells: total,
                max: MAX_VOXEL_CELLS,
            });
        }
        let n = count.as_ivec3();
        let h = DVec3::select(thin, extent.max(DVec3::splat(THIN_LAYER * cell)), extent / count);
        let origin = lo.as_dvec3() - DVec3::select(thin, 0.5 * (h - extent), DVec3::ZERO);
        // The flags carry one empty cell of margin on each side, so the flood fill starts
        // outside: flag cell c is lattice cell c − 1.
        let dims = n + IVec3::splat(2);
        let total = total as usize;
        let flat = |c: IVec3| c.x as usize + dims.x as usize * (c.y as usize + dims.y as usize * c.z as usize);
        let cell_of = |p: DVec3| ((p - origin) / h).floor().as_ivec3().clamp(IVec3::ZERO, n - 1) + IVec3::ONE;

        let mut surface = vec![false; total];
        // The triangles touching each lattice cell, for conforming the boundary below.
        let mut bins: HashMap<IVec3, Vec<u32>> = HashMap::new();
        // Touching must count even where rounding says "a hair apart": a face on a lattice
        // plane (every flat face at the bounding box) lies exactly on a cell boundary.
        let half = 0.5 * h * (1.0 + 1e-9);
        for (k, t) in triangles.iter().enumerate() {
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
                            bins.entry(c - IVec3::ONE).or_default().push(k as u32);
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
        let mut tet_cells = Vec::new();
        for z in 0..dims.z {
            for y in 0..dims.y {
                for x in 0..dims.x {
                    let c = IVec3::new(x, y, z);
                    if outside[flat(c)] {
                        continue;
                    }
                    split_cell(split, c - IVec3::ONE, |t| {
                        tet_cells.push(c - IVec3::ONE);
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
        // Each coordinate from its lattice index (not accumulated), so shared faces are exact;
        // then the boundary is moved onto the surface where the tets allow.
        let mut x: Vec<DVec3> = lattice_points.iter().map(|p| origin + p.as_dvec3() * h).collect();
        let lattice = Lattice {
            points: &lattice_points,
            index: &index,
            origin,
            h,
            thin,
            tets: &tets,
            tet_cells: &tet_cells,
            bins: &bins,
        };
        conform(&mut x, &lattice, positions, triangles);
        TetMesh::new_reoriented(x.iter().map(|p| p.as_vec3()).collect(), tets)
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
    use crate::mesh::voxel_conform::MIN_VOLUME_RATIO;

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
    fn an_open_sheet_gives_a_shell_a_flat_one_is_refused_and_a_torus_keeps_its_hole() {
        // A flat sheet has no thickness to make a solid of.
        let sheet =
            (vec![Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.0), Vec3::new(0.0, 0.0, 1.0)], vec![[0, 2, 1]]);
        match TetMesh::voxelize(&sheet.0, &sheet.1, 0.25, TetSplit::Five) {
            Err(MeshError::Flat { axis: 'y', extent, .. }) => assert_eq!(extent, 0.0),
            other => panic!("{other:?}"),
        }
        // An open, curved sheet (a half cylinder, no caps): a shell around it that holds
        // every one of its vertices (within the conforming tolerance).
        let mut p = Vec::new();
        let mut t = Vec::new();
        for i in 0..=16 {
            let a = std::f32::consts::PI * i as f32 / 16.0;
            p.push(Vec3::new(0.3 * a.cos(), 0.3 * a.sin(), 0.0));
            p.push(Vec3::new(0.3 * a.cos(), 0.3 * a.sin(), 1.0));
            if i > 0 {
                let k = 2 * i as u32;
                t.push([k - 2, k - 1, k]);
                t.push([k - 1, k + 1, k]);
            }
        }
        let m = TetMesh::voxelize(&p, &t, 0.1, TetSplit::Six).unwrap();
        let e = crate::mesh::Embedding::new(&m, &p).unwrap();
        assert!(e.max_outside_distance() <= 0.025, "{}", e.max_outside_distance());
        assert!(!m.tets().iter().any(|t| contains(&m, *t, Vec3::new(0.0, 0.1, 0.5))), "inside the arch is empty");

        let torus = crate::mesh::RenderMesh::torus(0.3, 0.1, 32, 16);
        let m = TetMesh::voxelize(&torus.positions, &torus.triangles, 0.04, TetSplit::Six).unwrap();
        assert!(!m.tets().iter().any(|t| contains(&m, *t, Vec3::ZERO)), "the hole must stay empty");
        assert!(m.tets().iter().any(|t| contains(&m, *t, Vec3::new(0.3, 0.0, 0.0))), "the tube is solid");
        // Conformed: the volume of the tube, not of the cubes around it (those hold 1.45x).
        let exact = 2.0 * std::f64::consts::PI.powi(2) * 0.3 * 0.01;
        assert!((m.volume() / exact - 1.0).abs() < 0.1, "volume {} vs {exact}", m.volume());
    }

    #[test]
    fn the_boundary_conforms_to_a_sphere_with_tets_kept_in_shape() {
        let s = crate::mesh::RenderMesh::uv_sphere(0.5, 24, 48);
        let polyhedron = s.enclosed_volume();
        for split in [TetSplit::Five, TetSplit::Six, TetSplit::SixMirrored] {
            let m = TetMesh::voxelize(&s.positions, &s.triangles, 0.1, split).unwrap();
            // The cubes around a sphere of ten cells hold 1.39x its volume.
            assert!((m.volume() / polyhedron - 1.0).abs() < 0.06, "{split:?}: {} vs {polyhedron}", m.volume());
            // Every surface vertex is on or near the tets' boundary, not a cell away.
            let e = crate::mesh::Embedding::new(&m, &s.positions).unwrap();
            assert!(e.max_outside_distance() <= 0.025, "{split:?}: {}", e.max_outside_distance());
            // The boundary lies on the sphere where it could move there: the lowest tet vertex
            // is the sphere's bottom, the mesh within the sphere's box.
            let (lo, hi) = m.bounds();
            assert!(lo.y > -0.5 - 1e-6 && lo.y < -0.5 + 1e-3 && hi.max_element() <= 0.5 + 1e-6, "{lo} {hi}");
            // No tet flattened below the kept share of a lattice tet (a sixth, a third or a
            // sixth of a cell's 1e-3 m³ for the splits; Five's corner tets are a sixth too).
            let least = m
                .tets()
                .iter()
                .map(|t| crate::mesh::tet_volume(t.map(|i| m.positions()[i as usize])))
                .fold(f64::MAX, f64::min);
            assert!(least >= MIN_VOLUME_RATIO * 1e-3 / 6.0 * 0.999, "{split:?}: {least}");
        }
    }

    #[test]
    fn a_rotated_box_keeps_its_corners_and_a_thin_plate_its_thickness() {
        let (p, t) = box_surface(0.25);
        let q = glam::Quat::from_euler(glam::EulerRot::XYZ, 0.3, 0.5, 0.2);
        let p: Vec<Vec3> = p.iter().map(|x| q * *x).collect();
        let m = TetMesh::voxelize(&p, &t, 0.08, TetSplit::SixMirrored).unwrap();
        for c in &p {
            let d = m.positions().iter().map(|x| x.distance(*c)).fold(f32::MAX, f32::min);
            assert!(d < 1e-5, "corner {c} is {d} m from the nearest tet vertex");
        }
        // Slanted faces keep some of the lattice's steps at six cells across (vertices inside
        // the tets but in front of the surface do not move): 14 % over, where the cubes
        // alone hold 76 % more.
        assert!(m.volume() > 0.125 && m.volume() < 1.2 * 0.125, "volume {}", m.volume());

        // A 1 cm plate at 10 cm cells: one layer of its own thickness, not a 10 cm slab.
        let (p, t) = box_surface(0.5);
        let p: Vec<Vec3> = p.iter().map(|x| Vec3::new(x.x, 0.01 * x.y, x.z)).collect();
        let m = TetMesh::voxelize(&p, &t, 0.1, TetSplit::Six).unwrap();
        let (lo, hi) = m.bounds();
        assert!((lo.y + 0.005).abs() < 1e-6 && (hi.y - 0.005).abs() < 1e-6, "{lo} {hi}");
        // Thinner than a tenth of a cell: a tenth of a cell, centred.
        let p: Vec<Vec3> = p.iter().map(|x| Vec3::new(x.x, 0.1 * x.y, x.z)).collect();
        let (lo, hi) = TetMesh::voxelize(&p, &t, 0.1, TetSplit::Six).unwrap().bounds();
        assert!((lo.y + 0.005).abs() < 1e-6 && (hi.y - 0.005).abs() < 1e-6, "{lo} {hi}");
    }

    #[test]
    fn bad_input_is_named() {
        let (p, t) = box_surface(0.5);
        assert!(matches!(
            TetMesh::voxelize(&p, &t, 0.0, TetSplit::Six),
            Err(MeshError::InvalidGenerator { field: "cell", .. })
        ));
        match TetMesh::voxelize(&p, &t, 1e-4, TetSplit::Six) {
            Err(e @ MeshError::TooManyCells { .. }) => assert!(e.to_string().contains("1 x 1 x 1 m"), "{e}"),
            other => panic!("{other:?}"),
        }
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
