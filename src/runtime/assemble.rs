//! Packs the bodies of a [`BodySet`] into the one [`SimState`]: concatenated vertices, global
//! element indices, per-body materials, adjacency and colors. Runs when bodies are inserted or
//! removed, never per step; existing bodies keep their dynamic state.

use glam::{DVec3, Vec3, Vec4};

use crate::body::{BodySet, BodyShape, SoftBody, SoftBodyHandle};
use crate::material::{MODEL_MEMBRANE_STVK, bending, membrane::TriRest, tet::TetRest};
use crate::mesh::{Csr, vertex_element_csr};
use crate::state::{
    BodyRecord, HingeElement, MaterialRecord, SimState, TetElement, TriElement, VERTEX_KINEMATIC, VERTEX_NO_HISTORY,
};

/// Where a body lives in the packed state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BodySlot {
    pub handle: SoftBodyHandle,
    pub vertex_start: u32,
    pub vertex_count: u32,
}

impl BodySlot {
    pub fn range(&self) -> std::ops::Range<usize> {
        self.vertex_start as usize..(self.vertex_start + self.vertex_count) as usize
    }
}

/// Builds the packed state; dynamic data of bodies present in `old` is carried over.
pub(crate) fn assemble(bodies: &BodySet, old: &SimState, old_slots: &[BodySlot]) -> (SimState, Vec<BodySlot>) {
    let mut st = SimState::default();
    let mut slots = Vec::with_capacity(bodies.len());
    for (b, (handle, body)) in bodies.iter().enumerate() {
        let start = st.positions.len() as u32;
        let n = body.shared.vertex_count();
        push_vertices(&mut st, body, b as u32, old_slots.iter().find(|s| s.handle == handle).map(|s| (old, s)));
        push_elements(&mut st, body, start);
        st.bodies.push(BodyRecord {
            vertex_start: start,
            vertex_count: n as u32,
            friction: body.friction,
            linear_damping: body.linear_damping,
            surface_edge_length: body.shared.surface_edge_length,
            self_collision: body.self_collision as u32,
            solver: body.solver.id(),
            _pad: 0,
        });
        st.surface_triangles.extend(body.shared.surface.iter().map(|t| t.map(|i| i + start)));
        st.surface_edges.extend(body.shared.surface_edges.iter().map(|e| e.map(|i| i + start)));
        slots.push(BodySlot { handle, vertex_start: start, vertex_count: n as u32 });
    }
    st.surface_vertices = st.surface_triangles.iter().flatten().copied().collect();
    st.surface_vertices.sort_unstable();
    st.surface_vertices.dedup();
    if st.tet_adjacency.offsets.is_empty() {
        for csr in [&mut st.tet_adjacency, &mut st.tri_adjacency, &mut st.hinge_adjacency] {
            csr.offsets.push(0);
        }
    }
    (st, slots)
}

fn push_vertices(st: &mut SimState, body: &SoftBody, body_index: u32, old: Option<(&SimState, &BodySlot)>) {
    let rest = body.shared.rest_positions();
    match old {
        Some((o, s)) => {
            let r = s.range();
            st.positions.extend_from_slice(&o.positions[r.clone()]);
            st.velocities.extend_from_slice(&o.velocities[r.clone()]);
            st.accelerations.extend_from_slice(&o.accelerations[r.clone()]);
            st.flags.extend(o.flags[r].iter().map(|f| f & VERTEX_NO_HISTORY));
        }
        None => {
            st.positions.extend(rest.iter().map(|p| p.extend(0.0)));
            st.velocities.extend(body.initial_velocities.iter().map(|v| v.extend(0.0)));
            st.accelerations.extend(std::iter::repeat_n(Vec4::ZERO, rest.len()));
            st.flags.extend(std::iter::repeat_n(VERTEX_NO_HISTORY, rest.len()));
        }
    }
    st.masses.extend_from_slice(&body.shared.masses);
    st.vertex_body.extend(std::iter::repeat_n(body_index, rest.len()));
}

fn d(p: Vec3) -> DVec3 {
    p.as_dvec3()
}

fn push_elements(st: &mut SimState, body: &SoftBody, start: u32) {
    let n = body.shared.vertex_count();
    let material = st.materials.len() as u32;
    let (tet_csr, tri_csr, hinge_csr);
    let (tet0, tri0, hinge0) = (st.tets.len() as u32, st.tris.len() as u32, st.hinges.len() as u32);
    match &body.shared.shape {
        BodyShape::Solid { mesh, material: m } => {
            let (mu, lambda) = m.energy_parameters();
            st.materials.push(MaterialRecord {
                model: m.model_id(),
                mu: mu as f32,
                lambda: lambda as f32,
                damping: body.damping,
            });
            let p = mesh.positions();
            for t in mesh.tets() {
                // Rest data in f64, then cast (f32 rule 7).
                let rest = TetRest::<f64>::new(t.map(|i| d(p[i as usize])));
                let (dm_inv, volume) = rest.map_or((glam::DMat3::ZERO, 0.0), |r| (r.dm_inv, r.volume));
                let col = |c: usize| {
                    let v = dm_inv.col(c).as_vec3();
                    [v.x, v.y, v.z, 0.0]
                };
                st.tets.push(TetElement {
                    vertices: t.map(|i| i + start),
                    dm_inv: [col(0), col(1), col(2)],
                    volume: volume as f32,
                    material,
                    _pad: [0; 2],
                });
            }
            tet_csr = vertex_element_csr(n, mesh.tets());
            tri_csr = vertex_element_csr::<3>(n, &[]);
            hinge_csr = vertex_element_csr::<4>(n, &[]);
        }
        BodyShape::Cloth { mesh, material: m, hinges } => {
            let (mu, lambda) = m.membrane_lame();
            st.materials.push(MaterialRecord {
                model: MODEL_MEMBRANE_STVK,
                mu: mu as f32,
                lambda: lambda as f32,
                damping: body.damping,
            });
            let p = mesh.positions();
            for t in mesh.triangles() {
                let rest = TriRest::<f64>::new(t.map(|i| d(p[i as usize])));
                let (dm, area) = rest.map_or(([[0.0; 2]; 2], 0.0), |r| (r.dm_inv, r.area));
                st.tris.push(TriElement {
                    vertices: [t[0] + start, t[1] + start, t[2] + start, u32::MAX],
                    dm_inv: [dm[0][0] as f32, dm[0][1] as f32, dm[1][0] as f32, dm[1][1] as f32],
                    measure: (area * m.thickness) as f32,
                    material,
                    _pad: [0; 2],
                });
            }
            let d_plate = m.bending();
            for h in hinges {
                let r = h.vertices.map(|i| d(p[i as usize]));
                st.hinges.push(HingeElement {
                    vertices: h.vertices.map(|i| i + start),
                    rest_angle: bending::dihedral_angle::<f64>(&r) as f32,
                    stiffness: bending::hinge_stiffness::<f64>(&r, d_plate) as f32,
                    damping: body.damping,
                    _pad: 0,
                });
            }
            let hv: Vec<[u32; 4]> = hinges.iter().map(|h| h.vertices).collect();
            tet_csr = vertex_element_csr::<4>(n, &[]);
            tri_csr = vertex_element_csr(n, mesh.triangles());
            hinge_csr = vertex_element_csr(n, &hv);
        }
    }
    append(&mut st.tet_adjacency, &tet_csr, tet0);
    append(&mut st.tri_adjacency, &tri_csr, tri0);
    append(&mut st.hinge_adjacency, &hinge_csr, hinge0);
}

fn append(dst: &mut Csr, src: &Csr, element_offset: u32) {
    dst.append_shifted(src, element_offset);
}

/// Rebuilds the per-color lists of free vertices from the bodies' colorings and the current
/// kinematic flags. Color `c` of every body is solved in the same pass (bodies share no
/// elements).
pub(crate) fn rebuild_color_lists(st: &mut SimState, bodies: &BodySet, slots: &[BodySlot]) {
    let color_count = slots.iter().map(|s| bodies[s.handle].shared.coloring.color_count).max().unwrap_or(0) as usize;
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); color_count];
    for s in slots {
        let coloring = &bodies[s.handle].shared.coloring;
        for (local, &c) in coloring.colors.iter().enumerate() {
            let v = s.vertex_start + local as u32;
            if st.flags[v as usize] & VERTEX_KINEMATIC == 0 {
                lists[c as usize].push(v);
            }
        }
    }
    st.color_offsets.clear();
    st.color_vertices.clear();
    st.color_offsets.push(0);
    for l in lists.into_iter().filter(|l| !l.is_empty()) {
        st.color_vertices.extend_from_slice(&l);
        st.color_offsets.push(st.color_vertices.len() as u32);
    }
}
