//! Surface primitive pairs for body–body and self contact: vertex–triangle and edge–edge
//! records, which pairs may touch at all, and the broadphase candidate walks shared by contact
//! detection, the CCD advance and the intersection check.

use bytemuck::{Pod, Zeroable};
use glam::{Vec3A, Vec4};

use super::bvh::{Aabb, Bvh};
use super::distance::{Closest, edge_edge, point_triangle};
use crate::state::SimState;

/// [`ContactPair::kind`]: vertex `vertices[0]` against triangle `vertices[1..4]`.
pub const PAIR_POINT_TRIANGLE: u32 = 0;
/// [`ContactPair::kind`]: edge `vertices[0..2]` against edge `vertices[2..4]`.
pub const PAIR_EDGE_EDGE: u32 = 1;

/// A surface contact pair found by detection, with the constants its energy uses until the
/// next detection (\[VBD\] §3.5–3.6: the friction frame and normal force are lagged).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ContactPair {
    /// Global vertex indices in the order of [`ContactPair::kind`].
    pub vertices: [u32; 4],
    /// Unit normal between the closest points at detection: the lagged friction frame.
    pub frame_normal: [f32; 3],
    /// `PAIR_*`.
    pub kind: u32,
    /// Penalty stiffness `k_c` of the pair \[N/m\].
    pub stiffness: f32,
    /// Normal force at detection `λ = k_c max(0, δ − d)` \[N\], which scales friction.
    pub friction_normal_force: f32,
    /// Coulomb coefficient of the pair.
    pub friction: f32,
    /// Distance at detection \[m\].
    pub distance: f32,
    /// Closest-point weights at detection (`P − Q = Σ w_k x_k`), held until the next detection.
    pub weights: [f32; 4],
}

impl ContactPair {
    /// Gap along the detection normal with the detection's closest-point weights,
    /// `n̂ · Σ w_k x_k`: the pair's distance linearised at detection (\[VBD\] §3.5 holds the normal
    /// and the contact points fixed between detections). Exact at `x^det`; four multiply-adds
    /// instead of a distance query, which matters because every contact vertex evaluates all
    /// of its pairs in every sweep.
    #[inline(always)]
    pub fn linear_gap(&self, x: &[Vec3A; 4]) -> f32 {
        let w = self.weights;
        let r = x[0] * w[0] + x[1] * w[1] + x[2] * w[2] + x[3] * w[3];
        Vec3A::from_array(self.frame_normal).dot(r)
    }
}

/// Closest points of a pair of `kind` with vertex positions `x` (in pair order).
#[inline(always)]
pub fn closest(kind: u32, x: &[Vec3A; 4]) -> Closest<f32> {
    if kind == PAIR_POINT_TRIANGLE {
        point_triangle::<f32>(x[0], x[1], x[2], x[3])
    } else {
        edge_edge::<f32>(x[0], x[1], x[2], x[3])
    }
}

/// Whether the primitives with vertices `v` (pair order) may contact: they share no vertex,
/// and they are on different bodies or on a self-colliding one. Pairs of kinematic vertices
/// count too: kinematic vertices approach their targets under the same displacement bounds.
#[inline]
pub fn pair_allowed(st: &SimState, v: [u32; 4]) -> bool {
    for i in 0..4 {
        for j in i + 1..4 {
            if v[i] == v[j] {
                return false;
            }
        }
    }
    let (ba, bb) = (st.vertex_body[v[0] as usize], st.vertex_body[v[3] as usize]);
    ba != bb || st.bodies[ba as usize].self_collision != 0
}

/// Vertices of a vertex–triangle pair.
#[inline(always)]
pub fn point_triangle_vertices(v: u32, tri: [u32; 3]) -> [u32; 4] {
    [v, tri[0], tri[1], tri[2]]
}

/// Vertices of an edge–edge pair.
#[inline(always)]
pub fn edge_edge_vertices(a: [u32; 2], b: [u32; 2]) -> [u32; 4] {
    [a[0], a[1], b[0], b[1]]
}

/// Positions of a pair's vertices.
#[inline(always)]
pub fn gather(positions: &[Vec4], v: [u32; 4]) -> [Vec3A; 4] {
    v.map(|i| Vec3A::from_vec4(positions[i as usize]))
}

/// Broadphase structures over the collision surface of a [`SimState`]: one tree over the
/// triangles (queried by vertices) and one over the edges (queried by edges).
#[derive(Clone, Debug, Default)]
pub struct SurfaceBroadphase {
    /// Box of each surface triangle.
    pub triangle_boxes: Vec<Aabb>,
    /// Box of each surface edge.
    pub edge_boxes: Vec<Aabb>,
    /// Tree over `triangle_boxes`.
    pub triangles: Bvh,
    /// Tree over `edge_boxes`.
    pub edges: Bvh,
    /// Refits since the last build.
    refits: u32,
}

impl SurfaceBroadphase {
    /// Refits between two builds. A refit keeps every box exact, so queries stay complete;
    /// only the trees' tightness decays as surfaces deform, and a build costs as much as the
    /// queries of a detection (two builds per step were 7 % of a 100×100 cloth step, with the
    /// other worker idle).
    pub const REBUILD_INTERVAL: u32 = 16;

    /// Recomputes every primitive's box from positions `x` (swept to `y` when given), grown by
    /// `radius(first vertex)`, then refits the trees, or rebuilds them when `rebuild` is set,
    /// when the surface changed size, or after [`SurfaceBroadphase::REBUILD_INTERVAL`] refits.
    pub fn update(
        &mut self,
        st: &SimState,
        x: &[Vec4],
        y: Option<&[Vec4]>,
        radius: impl Fn(u32) -> f32,
        rebuild: bool,
    ) {
        self.triangle_boxes.clear();
        self.triangle_boxes.extend(st.surface_triangles.iter().map(|&t| primitive_box(x, y, t, radius(t[0]))));
        self.edge_boxes.clear();
        self.edge_boxes.extend(st.surface_edges.iter().map(|&e| primitive_box(x, y, e, radius(e[0]))));
        let resized = self.triangles.item_count() != self.triangle_boxes.len()
            || self.edges.item_count() != self.edge_boxes.len();
        if rebuild || resized || self.refits >= Self::REBUILD_INTERVAL {
            self.triangles.build(&self.triangle_boxes);
            self.edges.build(&self.edge_boxes);
            self.refits = 0;
        } else {
            self.triangles.refit(&self.triangle_boxes);
            self.edges.refit(&self.edge_boxes);
            self.refits += 1;
        }
    }

    /// Vertex–triangle candidates of surface vertex `v` whose query box is `query`:
    /// `visit(triangle index, pair vertices)` for every allowed pair whose boxes overlap.
    #[inline]
    pub fn point_triangle_candidates(&self, st: &SimState, v: u32, query: &Aabb, mut visit: impl FnMut(u32, [u32; 4])) {
        self.triangles.query(query, &self.triangle_boxes, |t| {
            let pv = point_triangle_vertices(v, st.surface_triangles[t as usize]);
            if pair_allowed(st, pv) {
                visit(t, pv);
            }
        });
    }

    /// Edge–edge candidates of surface edge `e` with edges of larger index (each unordered pair
    /// once): `visit(other edge index, pair vertices)`.
    #[inline]
    pub fn edge_edge_candidates(&self, st: &SimState, e: u32, mut visit: impl FnMut(u32, [u32; 4])) {
        let query = self.edge_boxes[e as usize];
        let a = st.surface_edges[e as usize];
        self.edges.query(&query, &self.edge_boxes, |f| {
            if f > e {
                let pv = edge_edge_vertices(a, st.surface_edges[f as usize]);
                if pair_allowed(st, pv) {
                    visit(f, pv);
                }
            }
        });
    }
}

/// Box of the points `p` at positions `x` and, if given, at `y` (a swept box), grown by `r`.
#[inline]
pub fn primitive_box<const K: usize>(x: &[Vec4], y: Option<&[Vec4]>, p: [u32; K], r: f32) -> Aabb {
    let mut b = Aabb::EMPTY;
    for &i in &p {
        b = b.grow(Vec3A::from_vec4(x[i as usize]));
        if let Some(y) = y {
            b = b.grow(Vec3A::from_vec4(y[i as usize]));
        }
    }
    b.inflate(r)
}
