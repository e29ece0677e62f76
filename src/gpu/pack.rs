//! The state's arrays as the kernels bind them, packed straight from [`SimState`] with
//! bytemuck. WebGPU gives a compute stage 8 storage buffers, so the integer tables share one
//! `index` buffer and the per-material and per-body constants one `records` buffer; each
//! kernel gets the offsets of its tables in its uniform.

use crate::state::SimState;

/// Where each table starts in the packed `index` buffer (in u32s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexLayout {
    /// `color_vertices` (always first: the free vertices, colour by colour).
    pub color_vertices: u32,
    /// The tet adjacency's `n + 1` row offsets.
    pub tet_offsets: u32,
    /// The tet adjacency's entries (`element << 2 | slot`).
    pub tet_entries: u32,
    /// `vertex_body`.
    pub vertex_body: u32,
    /// The triangle adjacency's row offsets and entries.
    pub tri_offsets: u32,
    /// See `tri_offsets`.
    pub tri_entries: u32,
    /// The hinge adjacency's row offsets and entries.
    pub hinge_offsets: u32,
    /// See `hinge_offsets`.
    pub hinge_entries: u32,
    /// `surface_vertices`.
    pub surface_vertices: u32,
    /// `surface_triangles`, three u32 each.
    pub surface_triangles: u32,
    /// `surface_edges`, two u32 each.
    pub surface_edges: u32,
    /// Vertex → surface span (`span << 2 | slot`; the surface edges, then the surface
    /// triangles: `gpu::vbd::vbd_spans`) row offsets and entries.
    pub span_offsets: u32,
    /// See `span_offsets`.
    pub span_entries: u32,
    /// Total length.
    pub len: u32,
}

/// `color_vertices`, the tet adjacency, `vertex_body`, the triangle and hinge adjacencies and
/// the collision surface (vertices, triangles, edges) in one array, with their offsets.
pub fn pack_index(st: &SimState) -> (Vec<u32>, IndexLayout) {
    let csr_len = |c: &crate::mesh::Csr| c.offsets.len() + c.entries.len();
    let mut index = Vec::with_capacity(
        st.color_vertices.len()
            + st.vertex_count()
            + csr_len(&st.tet_adjacency)
            + csr_len(&st.tri_adjacency)
            + csr_len(&st.hinge_adjacency)
            + st.surface_vertices.len()
            + 3 * st.surface_triangles.len()
            + 2 * st.surface_edges.len(),
    );
    let mut layout = IndexLayout { color_vertices: 0, ..Default::default() };
    index.extend_from_slice(&st.color_vertices);
    layout.tet_offsets = index.len() as u32;
    index.extend_from_slice(&st.tet_adjacency.offsets);
    layout.tet_entries = index.len() as u32;
    index.extend_from_slice(&st.tet_adjacency.entries);
    layout.vertex_body = index.len() as u32;
    index.extend_from_slice(&st.vertex_body);
    // An adjacency without rows (no cloth) still answers every vertex with an empty row.
    let csr = |index: &mut Vec<u32>, c: &crate::mesh::Csr| {
        let offsets = index.len() as u32;
        if c.offsets.is_empty() {
            index.resize(index.len() + st.vertex_count() + 1, 0);
        } else {
            index.extend_from_slice(&c.offsets);
        }
        let entries = index.len() as u32;
        index.extend_from_slice(&c.entries);
        (offsets, entries)
    };
    (layout.tri_offsets, layout.tri_entries) = csr(&mut index, &st.tri_adjacency);
    (layout.hinge_offsets, layout.hinge_entries) = csr(&mut index, &st.hinge_adjacency);
    layout.surface_vertices = index.len() as u32;
    index.extend_from_slice(&st.surface_vertices);
    layout.surface_triangles = index.len() as u32;
    index.extend(st.surface_triangles.iter().flatten());
    layout.surface_edges = index.len() as u32;
    index.extend(st.surface_edges.iter().flatten());
    (layout.span_offsets, layout.span_entries) = csr(&mut index, &span_adjacency(st));
    layout.len = index.len() as u32;
    (index, layout)
}

/// The surface spans (edges, then triangles) each vertex belongs to.
fn span_adjacency(st: &SimState) -> crate::mesh::Csr {
    const NONE: u32 = u32::MAX;
    let spans = st.surface_edges.iter().map(|&[a, b]| [a, b, NONE]).chain(st.surface_triangles.iter().copied());
    let mut csr = crate::mesh::Csr::default();
    csr.fill_vertex_elements(st.vertex_count(), spans, |v| v != NONE);
    csr
}

/// The number of surface spans: edges and triangles.
pub fn span_count(st: &SimState) -> u32 {
    (st.surface_edges.len() + st.surface_triangles.len()) as u32
}

/// Where each record table starts in the packed `records` buffer (in vec4s; the materials
/// start it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordLayout {
    /// `bodies`, two vec4 each.
    pub bodies: u32,
    /// `tris`, three vec4 each.
    pub tris: u32,
    /// `hinges`, two vec4 each.
    pub hinges: u32,
    /// Per body, one vec4 the step writes: the spin `ω'` that `vbd_spin` found (xyz; zero for a
    /// body that does not turn), which Rayleigh damping in `vbd_color` leaves alone.
    pub spins: u32,
}

/// `materials` (one vec4 each), `bodies` (two), `tris` (three) and `hinges` (two) as raw vec4s in
/// one array: every per-element and per-body constant in one binding, then the bodies' spins
/// (one vec4 each, zero here; `vbd_spin` writes them each step, the only kernel that writes
/// this buffer).
pub fn pack_records(st: &SimState) -> (Vec<[f32; 4]>, RecordLayout) {
    let mut records: Vec<[f32; 4]> = bytemuck::cast_slice(&st.materials).to_vec();
    let bodies = records.len() as u32;
    records.extend_from_slice(bytemuck::cast_slice(&st.bodies));
    let tris = records.len() as u32;
    records.extend_from_slice(bytemuck::cast_slice(&st.tris));
    let hinges = records.len() as u32;
    records.extend_from_slice(bytemuck::cast_slice(&st.hinges));
    let spins = records.len() as u32;
    records.resize(records.len() + st.bodies.len(), [0.0; 4]);
    (records, RecordLayout { bodies, tris, hinges, spins })
}

/// Vertices of the state's largest body (how many chunks a per-body sum needs).
pub(crate) fn largest_body(st: &SimState) -> u32 {
    st.bodies.iter().map(|b| b.vertex_count).max().unwrap_or(0)
}

/// Chunks of `chunk` vertices a body of `largest` vertices is summed in (at least one): the
/// per-body reductions (`step_energy`, `vbd_divergence`, `vbd_spin`, `rigid_reduce`) spread a
/// large body over that many workgroups, then add the chunks' sums in a fixed order.
pub(crate) fn chunks(largest: u32, chunk: u32) -> u32 {
    largest.div_ceil(chunk).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prelude::*;

    #[test]
    fn tables_land_at_their_offsets() {
        let mut world = World::new(StepConfig::default()).expect("world");
        for k in 0..2 {
            let mesh = TetMesh::box_mesh(Vec3::splat(0.2), [2, 2, 2 + k], TetSplit::Six).expect("mesh");
            world.bodies.insert(SoftBodyBuilder::tetrahedral(mesh).friction(0.3 + k as f32).build().expect("body"));
        }
        world.sync();
        let st = world.state();
        let (index, l) = pack_index(st);
        let at = |base: u32, len: usize| &index[base as usize..base as usize + len];
        assert_eq!(at(l.color_vertices, st.color_vertices.len()), &st.color_vertices[..]);
        assert_eq!(at(l.tet_offsets, st.tet_adjacency.offsets.len()), &st.tet_adjacency.offsets[..]);
        assert_eq!(at(l.tet_entries, st.tet_adjacency.entries.len()), &st.tet_adjacency.entries[..]);
        assert_eq!(at(l.vertex_body, st.vertex_count()), &st.vertex_body[..]);
        assert_eq!(at(l.surface_vertices, st.surface_vertices.len()), &st.surface_vertices[..]);
        let tris: Vec<u32> = st.surface_triangles.iter().flatten().copied().collect();
        assert_eq!(at(l.surface_triangles, tris.len()), &tris[..]);
        let edges: Vec<u32> = st.surface_edges.iter().flatten().copied().collect();
        assert_eq!(at(l.surface_edges, edges.len()), &edges[..]);
        assert!(!tris.is_empty() && !edges.is_empty());
        assert_eq!(l.len as usize, index.len());
        let (records, r) = pack_records(st);
        let bodies = r.bodies;
        assert_eq!(bodies as usize, st.materials.len());
        assert_eq!(r.tris as usize, st.materials.len() + 2 * st.bodies.len());
        assert_eq!(r.hinges as usize, r.tris as usize + 3 * st.tris.len());
        assert_eq!(r.spins as usize, r.hinges as usize + 2 * st.hinges.len());
        assert_eq!(records.len(), r.spins as usize + st.bodies.len());
        assert!(records[r.spins as usize..].iter().all(|&s| s == [0.0; 4]), "no body turns before the first step");
        for (b, body) in st.bodies.iter().enumerate() {
            let r = records[bodies as usize + 2 * b];
            assert_eq!(r[0].to_bits(), body.vertex_start);
            assert_eq!(r[1].to_bits(), body.vertex_count);
            assert_eq!((r[2], r[3]), (body.friction, body.linear_damping));
        }
        assert_eq!(records[0][1], st.materials[0].mu);
    }
}
