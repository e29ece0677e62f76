//! Surface primitive pairs for body–body and self contact: vertex–triangle and edge–edge
//! records, which pairs may touch at all, and the broadphase candidate walks shared by contact
//! detection, the CCD advance and the intersection check.

use bytemuck::{Pod, Zeroable};
use glam::{Vec3A, Vec4};

use super::bvh::{Aabb, Bvh};
use crate::math::distance::{Closest, edge_edge, point_triangle};
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

impl ContactPair {
    /// Whether the pair has a contact energy (and friction). Pairs without one are kept for
    /// their displacement bounds only (a contact is counted once, by its closest feature).
    #[inline(always)]
    pub fn has_energy(&self) -> bool {
        self.stiffness > 0.0
    }

    /// Keeps the pair for its displacement bounds only: no energy, no friction.
    #[inline]
    pub fn drop_energy(&mut self) {
        self.stiffness = 0.0;
        self.friction_normal_force = 0.0;
    }
}

/// Vertices of the triangle that carry the closest point of a vertex–triangle pair (nonzero
/// weight): one for a triangle corner, two for an edge, three for the face.
#[inline]
fn closest_feature(p: &ContactPair) -> ([u32; 3], usize) {
    let mut f = [u32::MAX; 3];
    let mut n = 0;
    for k in 1..4 {
        if p.weights[k] != 0.0 {
            f[n] = p.vertices[k];
            n += 1;
        }
    }
    (f, n)
}

/// Among the vertex–triangle pairs of one vertex, keeps the energy only of those whose closest
/// point is a local minimum of the distance to the other surface; the rest keep their bounds.
///
/// A vertex over a triangle corner or edge finds that same closest point once in every
/// triangle sharing it: six times over a vertex of a flat fan, twice over an edge, once over
/// a face. Summing them all made the energy of a flat contact a bumpy landscape whose maxima
/// sat wherever vertices lie over vertices. Two identical cubes stacked face to face (vertex
/// over vertex everywhere, rims coincident) were pushed sideways and never came to rest, and
/// without friction they slid apart.
///
/// The rule uses the closest features only, never a comparison of distances, so f32 rounding
/// of nearly equal distances cannot keep two copies. If the closest feature `F` of pair `p`
/// (a corner or an edge) is part of another pair's triangle `q`, then `q` is at least as close
/// (its distance is a minimum over a superset of `F`), and `p` gives way. When the
/// containment goes both ways, both pairs have the same closest point and the earlier pair
/// stays. Face pairs never give way. Every group of duplicates keeps one pair, and the kept
/// energy is that of the nearest point of each surface patch, continuous as the vertex moves.
/// Separate contacts (the two walls of a concave corner, two layers around a sheet) do not
/// share a feature and all keep their energy.
pub fn keep_closest_features(pairs: &mut [ContactPair]) {
    let contains = |q: &ContactPair, f: &([u32; 3], usize)| f.0[..f.1].iter().all(|v| q.vertices[1..].contains(v));
    let mut nearest: Option<(usize, ContactPair)> = None;
    let mut kept = 0;
    for i in 0..pairs.len() {
        if nearest.is_none_or(|(_, q)| pairs[i].distance < q.distance) {
            nearest = Some((i, pairs[i]));
        }
        let feature = closest_feature(&pairs[i]);
        if feature.1 == 3 {
            kept += 1;
            continue;
        }
        let gives_way = pairs
            .iter()
            .enumerate()
            .any(|(j, q)| j != i && contains(q, &feature) && !(j > i && contains(&pairs[i], &closest_feature(q))));
        if gives_way {
            pairs[i].drop_energy();
        } else {
            kept += 1;
        }
    }
    // Rounding in the feature classification could in principle make every pair give way;
    // the contact then keeps its nearest pair.
    if kept == 0
        && let Some((i, pair)) = nearest
    {
        pairs[i] = pair;
    }
}

/// Closest-point parameter band, as a fraction of each edge, over which an edge–edge pair's
/// energy fades out towards an end point.
pub const EDGE_END_BAND: f32 = 0.1;

/// Energy scale of an edge–edge pair from its closest-point weights at detection: 1 while
/// both closest points lie well inside their edges, falling smoothly to 0 at an end point.
///
/// An edge–edge pair whose closest point is an end point measures the distance from that
/// vertex to the other edge, which the vertex's own point–triangle pairs already carry
/// (against the triangles on that edge; see [`keep_closest_features`]). Counting it again
/// doubled the contact at every rim and corner. Fading over a band rather than cutting at the
/// end point keeps the energy continuous while the crossing point slides off an edge.
#[inline]
pub fn edge_edge_energy_scale(weights: &[f32; 4]) -> f32 {
    // weights = [1 − s, s, −(1 − u), −u]
    let end = weights[0].min(weights[1]).min(-weights[2]).min(-weights[3]);
    let t = (end / EDGE_END_BAND).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
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

/// Bodies of the two sides of a pair with vertices `v` (pair order): the first vertex belongs
/// to one primitive and the last to the other, for both pair kinds.
#[inline(always)]
pub fn pair_bodies(st: &SimState, v: [u32; 4]) -> (u32, u32) {
    (st.vertex_body[v[0] as usize], st.vertex_body[v[3] as usize])
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
    let (ba, bb) = pair_bodies(st, v);
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

/// Broadphase structures over the collision surface of a [`SimState`], in two levels: per body
/// one tree over its triangles (queried by vertices) and one over its edges (queried by
/// edges), and above them the bodies whose trees a body's queries can reach.
///
/// One tree over every body's primitives made most of a detection's work the rejection of a
/// body's own primitives: every vertex's query box holds its own fan of triangles and every
/// edge's its neighbours, and bodies that do not collide with themselves (most volumetric
/// ones) can pair with none of them. On four stacked cubes two thirds of the candidates the
/// walks reported were such pairs. Per-body trees skip those walks, and a body's queries
/// skip every body whose primitives its query boxes cannot reach.
#[derive(Clone, Debug, Default)]
pub struct SurfaceBroadphase {
    /// Box of each surface triangle.
    pub triangle_boxes: Vec<Aabb>,
    /// Box of each surface edge.
    pub edge_boxes: Vec<Aabb>,
    /// Query box of each surface vertex (by its index in `SimState::surface_vertices`).
    pub vertex_boxes: Vec<Aabb>,
    /// Per body: its primitives' ranges, trees and bounding boxes.
    bodies: Vec<BodyTrees>,
    /// Per body, the bodies whose triangles its vertex queries can reach
    /// (`near_triangles[near_offsets[b]..]`), and those whose edges its edge queries can reach,
    /// with an index not below its own (each unordered edge pair is visited once).
    near: [Vec<u32>; 2],
    near_offsets: [Vec<u32>; 2],
    /// Top-level trees over the bodies' triangle and edge boxes.
    top: [Bvh; 2],
    top_boxes: [Vec<Aabb>; 2],
    /// Refits since the last build.
    refits: u32,
    /// Only each body's pairs with itself are candidates (`set_self_only`).
    self_only: bool,
}

/// One body's part of [`SurfaceBroadphase`].
#[derive(Clone, Debug, Default)]
struct BodyTrees {
    /// Ranges of the body's surface triangles, edges and surface vertices.
    triangles: std::ops::Range<usize>,
    edges: std::ops::Range<usize>,
    vertices: std::ops::Range<usize>,
    triangle_tree: Bvh,
    edge_tree: Bvh,
    /// Union of the body's triangle, edge and vertex query boxes.
    triangle_box: Aabb,
    edge_box: Aabb,
    vertex_box: Aabb,
}

/// Sets each body's `range` to the run of `items` whose body (`body_of`) it is, empty for a body
/// without such items; returns whether any range changed. `runtime::assemble` appends each
/// body's surface in one run, body after body; items out of that order would be left out of
/// every query, so the order is checked in every build.
fn assign_ranges<T>(
    bodies: &mut [BodyTrees],
    items: &[T],
    body_of: impl Fn(&T) -> usize,
    range: fn(&mut BodyTrees) -> &mut std::ops::Range<usize>,
) -> bool {
    let mut changed = false;
    let mut k = 0;
    for (b, body) in bodies.iter_mut().enumerate() {
        let first = k;
        while k < items.len() && body_of(&items[k]) == b {
            k += 1;
        }
        let r = range(body);
        changed |= *r != (first..k);
        *r = first..k;
    }
    assert!(k == items.len(), "surface primitives are not grouped by body in body order");
    changed
}

fn union_of(boxes: &[Aabb]) -> Aabb {
    boxes.iter().fold(Aabb::EMPTY, |a, b| a.union(*b))
}

impl SurfaceBroadphase {
    /// Refits between two builds. A refit keeps every box exact, so queries stay complete;
    /// only the trees' tightness decays as surfaces deform, and a build costs as much as the
    /// queries of a detection (two builds per step were 7 % of a 100×100 cloth step, with the
    /// other worker idle).
    pub const REBUILD_INTERVAL: u32 = 16;

    /// Recomputes every primitive's box and every surface vertex's query box from positions
    /// `x` (swept to `y` when given), grown by `radius(first vertex)`, then refits the trees,
    /// or rebuilds them when `rebuild` is set, when the surface changed, or after
    /// [`SurfaceBroadphase::REBUILD_INTERVAL`] refits; then finds which bodies each body's
    /// queries can reach, its own only if `search_self(body)` (a self-colliding body whose
    /// distances to itself are known otherwise is not searched; see `self_clearance`).
    pub fn update(
        &mut self,
        st: &SimState,
        (x, y): (&[Vec4], Option<&[Vec4]>),
        radius: impl Fn(u32) -> f32,
        rebuild: bool,
        search_self: impl Fn(usize) -> bool,
    ) {
        self.triangle_boxes.clear();
        self.triangle_boxes.extend(st.surface_triangles.iter().map(|&t| primitive_box(x, y, t, radius(t[0]))));
        self.edge_boxes.clear();
        self.edge_boxes.extend(st.surface_edges.iter().map(|&e| primitive_box(x, y, e, radius(e[0]))));
        self.vertex_boxes.clear();
        self.vertex_boxes.extend(st.surface_vertices.iter().map(|&v| primitive_box(x, y, [v], radius(v))));
        let of = |v: u32| st.vertex_body[v as usize] as usize;
        let resized = self.bodies.len() != st.bodies.len();
        self.bodies.resize_with(st.bodies.len(), BodyTrees::default);
        let bodies = &mut self.bodies;
        let changed = assign_ranges(bodies, &st.surface_triangles, |t| of(t[0]), |b| &mut b.triangles)
            | assign_ranges(bodies, &st.surface_edges, |e| of(e[0]), |b| &mut b.edges)
            | assign_ranges(bodies, &st.surface_vertices, |&v| of(v), |b| &mut b.vertices)
            | resized;
        let build = rebuild || changed || self.refits >= Self::REBUILD_INTERVAL;
        for body in &mut self.bodies {
            let tri = &self.triangle_boxes[body.triangles.clone()];
            let edge = &self.edge_boxes[body.edges.clone()];
            if build {
                body.triangle_tree.build(tri);
                body.edge_tree.build(edge);
            } else {
                body.triangle_tree.refit(tri);
                body.edge_tree.refit(edge);
            }
            body.triangle_box = union_of(tri);
            body.edge_box = union_of(edge);
            body.vertex_box = union_of(&self.vertex_boxes[body.vertices.clone()]);
        }
        self.refits = if build { 0 } else { self.refits + 1 };
        self.find_near_bodies(search_self);
    }

    /// The bodies each body's vertex and edge queries can reach: a query box lies inside its
    /// body's union of query boxes, so a body whose primitives' union that box misses never
    /// holds a candidate.
    fn find_near_bodies(&mut self, search_self: impl Fn(usize) -> bool) {
        let others = !self.self_only;
        for (kind, tree) in self.top.iter_mut().enumerate() {
            let boxes = &mut self.top_boxes[kind];
            boxes.clear();
            boxes.extend(self.bodies.iter().map(|b| if kind == 0 { b.triangle_box } else { b.edge_box }));
            tree.build(boxes);
            let (near, offsets) = (&mut self.near[kind], &mut self.near_offsets[kind]);
            near.clear();
            offsets.clear();
            offsets.push(0);
            for (a, body) in self.bodies.iter().enumerate() {
                let first = near.len();
                let query = if kind == 0 { body.vertex_box } else { body.edge_box };
                let self_pairs = search_self(a);
                tree.query(&query, boxes, |b| {
                    let reach = others && if kind == 0 { b as usize != a } else { b as usize > a };
                    if reach || (b as usize == a && self_pairs) {
                        near.push(b);
                    }
                });
                // The walk's order follows the tree; visiting bodies in index order keeps a
                // query's candidates in an order that the positions alone decide.
                near[first..].sort_unstable();
                offsets.push(near.len() as u32);
            }
        }
    }

    /// With `only`, the next updates let each body's queries reach only its own primitives
    /// (those `search_self` allows): a search for self contact alone.
    pub fn set_self_only(&mut self, only: bool) {
        self.self_only = only;
    }

    /// Every vertex–triangle and edge–edge candidate whose vertices `keep` accepts, as a
    /// [`PairKey`] into `visit`, vertices in surface order, then edges.
    pub(crate) fn candidates(
        &self,
        st: &SimState,
        keep: &impl Fn(&[u32; 4]) -> bool,
        visit: &mut impl FnMut(crate::collision::swept::PairKey),
    ) {
        use crate::collision::swept::PairKey;
        for k in 0..st.surface_vertices.len() {
            self.point_triangle_candidates(st, k, |_, pv| {
                if keep(&pv) {
                    visit(PairKey { kind: PAIR_POINT_TRIANGLE, vertices: pv });
                }
            });
        }
        for e in 0..st.surface_edges.len() as u32 {
            self.edge_edge_candidates(st, e, |_, pv| {
                if keep(&pv) {
                    visit(PairKey { kind: PAIR_EDGE_EDGE, vertices: pv });
                }
            });
        }
    }

    fn near_bodies(&self, kind: usize, body: usize) -> &[u32] {
        let o = &self.near_offsets[kind];
        &self.near[kind][o[body] as usize..o[body + 1] as usize]
    }

    /// Vertex–triangle candidates of the surface vertex with index `k` in
    /// `SimState::surface_vertices`, whose query box is `vertex_boxes[k]`:
    /// `visit(triangle index, pair vertices)` for every allowed pair whose boxes overlap.
    #[inline]
    pub fn point_triangle_candidates(&self, st: &SimState, k: usize, mut visit: impl FnMut(u32, [u32; 4])) {
        let v = st.surface_vertices[k];
        let query = &self.vertex_boxes[k];
        for &b in self.near_bodies(0, st.vertex_body[v as usize] as usize) {
            let body = &self.bodies[b as usize];
            let first = body.triangles.start;
            body.triangle_tree.query(query, &self.triangle_boxes[body.triangles.clone()], |i| {
                let t = (first + i as usize) as u32;
                let pv = point_triangle_vertices(v, st.surface_triangles[t as usize]);
                if pair_allowed(st, pv) {
                    visit(t, pv);
                }
            });
        }
    }

    /// Edge–edge candidates of surface edge `e`, each unordered pair once: with every edge of
    /// the bodies of larger index its queries reach, and with the edges of larger index of its
    /// own body. `visit(other edge index, pair vertices)`.
    #[inline]
    pub fn edge_edge_candidates(&self, st: &SimState, e: u32, mut visit: impl FnMut(u32, [u32; 4])) {
        let query = &self.edge_boxes[e as usize];
        let a = st.surface_edges[e as usize];
        let own = st.vertex_body[a[0] as usize];
        for &b in self.near_bodies(1, own as usize) {
            let body = &self.bodies[b as usize];
            let first = body.edges.start;
            body.edge_tree.query(query, &self.edge_boxes[body.edges.clone()], |i| {
                let f = (first + i as usize) as u32;
                if b != own || f > e {
                    let pv = edge_edge_vertices(a, st.surface_edges[f as usize]);
                    if pair_allowed(st, pv) {
                        visit(f, pv);
                    }
                }
            });
        }
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

/// Search radius r_v of a vertex of body `b` \[m\]: a quarter of the body's mean surface edge
/// (so a flat sheet finds no self pairs between non-adjacent primitives) and at least twice the
/// contact offset (so resting contact is always found).
pub(crate) fn search_radius(st: &SimState, b: u32, offset: f32) -> f32 {
    (0.25 * st.bodies[b as usize].surface_edge_length).max(2.0 * offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// Every vertex–triangle pair of point `p` against `triangles` closer than `limit`, in
    /// triangle order, as detection stores them (unit stiffness and normal force).
    fn pairs_of(p: Vec3A, points: &[Vec3A], triangles: &[[u32; 3]], limit: f32) -> Vec<ContactPair> {
        let pi = points.len() as u32;
        let mut all = points.to_vec();
        all.push(p);
        let mut out = Vec::new();
        for &t in triangles {
            let v = point_triangle_vertices(pi, t);
            let c = closest(PAIR_POINT_TRIANGLE, &v.map(|i| all[i as usize]));
            if c.distance < limit {
                out.push(ContactPair {
                    vertices: v,
                    frame_normal: c.normal.to_array(),
                    kind: PAIR_POINT_TRIANGLE,
                    stiffness: 1.0,
                    friction_normal_force: 1.0,
                    friction: 0.5,
                    distance: c.distance,
                    weights: c.weights,
                });
            }
        }
        out
    }

    /// A jittered `n × n` grid in the plane y = `y`, two triangles per cell with alternating
    /// diagonals, vertex indices offset by `base`.
    fn plane_patch(n: usize, y: f32, base: u32, rng: &mut Rng) -> (Vec<Vec3A>, Vec<[u32; 3]>) {
        let mut pts = Vec::new();
        for i in 0..=n {
            for j in 0..=n {
                let jitter = if i == 0 || j == 0 || i == n || j == n { 0.0 } else { 0.25 };
                let x = i as f32 + jitter * rng.signed() as f32;
                let z = j as f32 + jitter * rng.signed() as f32;
                pts.push(Vec3A::new(x, y, z));
            }
        }
        let id = |i: usize, j: usize| base + (i * (n + 1) + j) as u32;
        let mut tris = Vec::new();
        for i in 0..n {
            for j in 0..n {
                let (a, b, c, d) = (id(i, j), id(i + 1, j), id(i + 1, j + 1), id(i, j + 1));
                if (i + j) % 2 == 0 {
                    tris.extend([[a, b, c], [a, c, d]]);
                } else {
                    tris.extend([[a, b, d], [b, c, d]]);
                }
            }
        }
        (pts, tris)
    }

    fn with_energy(pairs: &[ContactPair]) -> Vec<&ContactPair> {
        pairs.iter().filter(|p| p.has_energy()).collect()
    }

    #[test]
    fn a_flat_surface_contributes_one_pair_wherever_the_point_is() {
        let mut rng = Rng(7);
        let (pts, tris) = plane_patch(6, 0.0, 0, &mut rng);
        let mut over_vertex = 0;
        for k in 0..4000 {
            // Every fourth point sits exactly over a grid vertex or on an edge's vertical
            // plane, where six or two triangles report the same closest point.
            let p = match k % 4 {
                0 => {
                    let v = pts[(rng.uniform() * pts.len() as f64) as usize];
                    over_vertex += 1;
                    Vec3A::new(v.x, 0.01 + 0.3 * rng.uniform_f32(), v.z)
                }
                _ => Vec3A::new(
                    1.0 + 4.0 * rng.uniform_f32(),
                    0.01 + 0.3 * rng.uniform_f32(),
                    1.0 + 4.0 * rng.uniform_f32(),
                ),
            };
            let mut pairs = pairs_of(p, &pts, &tris, 0.6);
            let min = pairs.iter().map(|q| q.distance).fold(f32::INFINITY, f32::min);
            keep_closest_features(&mut pairs);
            let kept = with_energy(&pairs);
            assert_eq!(kept.len(), 1, "p = {p}: {} pairs keep their energy", kept.len());
            assert!((kept[0].distance - min).abs() <= 1e-6 * min, "p = {p}: {} vs {min}", kept[0].distance);
            assert!((kept[0].distance - p.y).abs() < 1e-5, "p = {p}: {} vs height", kept[0].distance);
            // Dropped pairs keep their bounds: same geometry, no energy.
            assert!(pairs.iter().all(|q| q.has_energy() || q.friction_normal_force == 0.0));
        }
        assert!(over_vertex > 500);
    }

    #[test]
    fn a_convex_rim_and_corner_count_once() {
        // A unit box, two triangles per face; points outside it near edges and corners.
        let c = |i: u32| Vec3A::new((i & 1) as f32, ((i >> 1) & 1) as f32, ((i >> 2) & 1) as f32);
        let pts: Vec<Vec3A> = (0..8).map(c).collect();
        let quads = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]];
        let tris: Vec<[u32; 3]> = quads.iter().flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]).collect();
        let mut rng = Rng(11);
        let mut rim = 0;
        for _ in 0..4000 {
            let p = Vec3A::new(rng.uniform_f32(), rng.uniform_f32(), rng.uniform_f32()) * 1.4 - Vec3A::splat(0.2);
            let outside = p.cmplt(Vec3A::ZERO).any() || p.cmpgt(Vec3A::ONE).any();
            if !outside {
                continue;
            }
            let mut pairs = pairs_of(p, &pts, &tris, 0.3);
            if pairs.is_empty() {
                continue;
            }
            let out_axes = (p.cmplt(Vec3A::ZERO) | p.cmpgt(Vec3A::ONE)).bitmask().count_ones();
            rim += (out_axes > 1) as usize;
            let min = pairs.iter().map(|q| q.distance).fold(f32::INFINITY, f32::min);
            keep_closest_features(&mut pairs);
            let kept = with_energy(&pairs);
            assert_eq!(kept.len(), 1, "p = {p}: {} pairs keep their energy", kept.len());
            assert!((kept[0].distance - min).abs() <= 1e-6 * min, "p = {p}: {} vs {min}", kept[0].distance);
        }
        assert!(rim > 300, "{rim} points beyond an edge or corner");
    }

    #[test]
    fn separate_contacts_all_keep_their_energy() {
        // A point between two parallel sheets is pushed by both.
        let mut rng = Rng(3);
        let (mut pts, mut tris) = plane_patch(4, 0.0, 0, &mut rng);
        let (top, top_tris) = plane_patch(4, 0.2, pts.len() as u32, &mut rng);
        pts.extend(top);
        tris.extend(top_tris);
        for _ in 0..500 {
            let p = Vec3A::new(1.0 + 2.0 * rng.uniform_f32(), 0.1, 1.0 + 2.0 * rng.uniform_f32());
            let mut pairs = pairs_of(p, &pts, &tris, 0.3);
            keep_closest_features(&mut pairs);
            assert_eq!(with_energy(&pairs).len(), 2, "p = {p}");
        }
        // A point in a concave corner (floor and wall) is pushed by both.
        let pts = [
            Vec3A::new(0.0, 0.0, 0.0),
            Vec3A::new(1.0, 0.0, 0.0),
            Vec3A::new(0.0, 0.0, 1.0),
            Vec3A::new(0.0, 1.0, 0.0),
        ];
        let tris = [[0, 2, 1], [0, 3, 2]];
        let mut pairs = pairs_of(Vec3A::new(0.1, 0.1, 0.5), &pts, &tris, 0.3);
        keep_closest_features(&mut pairs);
        assert_eq!(with_energy(&pairs).len(), 2);
    }

    #[test]
    fn edge_edge_energy_fades_smoothly_towards_end_points() {
        let w = |s: f32, u: f32| [1.0 - s, s, u - 1.0, -u];
        assert_eq!(edge_edge_energy_scale(&w(0.5, 0.5)), 1.0);
        assert_eq!(edge_edge_energy_scale(&w(EDGE_END_BAND, 0.7)), 1.0);
        assert_eq!(edge_edge_energy_scale(&w(0.0, 0.5)), 0.0);
        assert_eq!(edge_edge_energy_scale(&w(0.5, 1.0)), 0.0);
        // Continuous and monotone across the band, symmetric in both edges and both ends.
        let mut last = 0.0;
        for k in 0..=1000 {
            let s = k as f32 / 1000.0 * 0.5;
            let e = edge_edge_energy_scale(&w(s, 0.5));
            assert!(e >= last && e - last < 0.02, "s = {s}");
            assert!((e - edge_edge_energy_scale(&w(1.0 - s, 0.5))).abs() < 1e-5);
            assert_eq!(e, edge_edge_energy_scale(&w(0.5, s)));
            last = e;
        }
    }
}
