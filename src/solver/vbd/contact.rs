//! Body–body and self contact inside a VBD step (docs/algorithms.md §2.4–2.6, §7): how a step is kept
//! penetration-free however fast surfaces move.
//!
//! ```text
//! advance   CCD over x^n → x^(0) on swept-box candidates; bodies linked by a candidate pair
//!           form a group, and each group's initial guess is scaled back to its earliest
//!           time of impact (additive CCD leaves a tenth of the gap)
//! detect    at x^det (x^(0), then every `detection_interval` sweeps while anything is near):
//!           pairs within each vertex's search radius; those closer than the store limit
//!           become contact pairs, the rest set the isotropic bound b_v = γ_p (d_min(v) − ξ)
//! sweeps    every vertex update (and Chebyshev mix, and pin catch-up) is limited by
//!           `limit_move`: within b_v of x^det, and per contact pair at most γ_p (d − ξ)
//!           towards the other side along the pair's normal
//! ```
//!
//! Why the bounds certify the whole step: a contact pair's closest points define separating
//! planes; with each side's vertices approaching by at most γ_p (d − ξ) along the normal
//! (γ_p < ½), each primitive stays behind its shifted plane and the gap stays above
//! `(1 − 2γ_p) d + 2γ_p ξ > 0`, while both sides may move apart or slide freely. Any other pair
//! the broadphase reported is at least d_min away and each of its vertices moves at most
//! `γ_p d_min`. A pair the broadphase did not report has boxes apart by more than the two
//! search radii, and each vertex moves at most `2 γ_p r_v < r_v`. A body whose distance to
//! itself is certified since its last search (`collision::self_clearance`) is not searched for
//! pairs with itself, in the advance or the detection: its vertices' `d_min` take the certified
//! clearance instead.

use std::sync::atomic::{AtomicU32, Ordering};

use glam::{Vec3A, Vec4};
use parking_lot::Mutex;

use crate::collision::ContactModel;
use crate::collision::bvh::Aabb;
use crate::collision::ccd::{CcdParams, edge_edge_toi, point_triangle_toi};
use crate::collision::self_clearance::SelfClearance;
use crate::collision::surface_pairs::{
    ContactPair, PAIR_EDGE_EDGE, PAIR_POINT_TRIANGLE, SurfaceBroadphase, edge_edge_energy_scale, gather,
    keep_closest_features, pair_bodies, search_radius,
};
use crate::mesh::Csr;
use crate::solver::parallel::{PhaseCell, SharedSlice, SpinBarrier, chunk};
use crate::solver::union_find::UnionFind;
use crate::solver::vbd::bounds::{BOUND_FRACTION, store_limit};
use crate::solver::vbd::spans::SpanContacts;
use crate::state::SimState;

/// Pair stiffness relative to the obstacle rule for the same mass: pairs carry the weight of
/// whole bodies stacked above them, not just their own vertex's. Since each contact counts
/// once (`keep_closest_features`), 1 let a sheet folded onto itself close to 0.43 mm after its
/// release (δ = 1 mm; docs/scenes.md asks ≥ δ/2); 2 keeps 0.61 mm. 3 kept 0.64 mm but pressed two
/// sheets of the coarse cloth stack to 0.42 mm apart while they landed.
pub(crate) const PAIR_STIFFNESS_FACTOR: f32 = 2.0;

/// Settings of surface contact for one step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurfaceContactSettings {
    /// Detect body–body and self contact at all.
    pub enabled: bool,
    /// Sweeps between detections (`0` = once per step).
    pub detection_interval: u32,
    /// Additive CCD settings of the initial advance.
    pub ccd: CcdParams<f32>,
}

impl Default for SurfaceContactSettings {
    fn default() -> Self {
        Self { enabled: true, detection_interval: 0, ccd: CcdParams::default() }
    }
}

/// Whether a step of `st` has surface contact at all: it is enabled, there is a collision
/// surface, and a pair can form. A lone body that does not collide with itself can form none:
/// its step skips the CCD advance and the detections (a 100×100 cloth over a sphere: 51 → 33 ms
/// per step).
pub(crate) fn surface_contact_on(st: &SimState, settings: &SurfaceContactSettings) -> bool {
    let pairs_possible = st.bodies.len() > 1 || st.bodies.iter().any(|b| b.self_collision != 0);
    settings.enabled && !st.surface_triangles.is_empty() && pairs_possible
}

/// Pairs found by one thread in one detection.
#[derive(Debug, Default, Clone)]
struct Found {
    point_triangle: Vec<ContactPair>,
    edge_edge: Vec<ContactPair>,
    /// CCD: linked bodies `(a, b)`, `a < b`.
    links: Vec<(u32, u32)>,
    /// CCD: `(body, toi)` of every hit.
    hits: Vec<(u32, f32)>,
}

/// Per-thread result buffers (cloning gives empty ones: they hold nothing between phases).
#[derive(Debug, Default)]
struct PerThread(Vec<Mutex<Found>>);

impl Clone for PerThread {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::ops::Deref for PerThread {
    type Target = Vec<Mutex<Found>>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// Scratch of surface contact; lives across steps (the per-body touch flags do too).
#[derive(Debug, Default, Clone)]
pub struct SurfaceContactScratch {
    broadphase: SurfaceBroadphase,
    /// Pairs of the last detection, vertex–triangle first.
    pub pairs: Vec<ContactPair>,
    /// Vertex → `pair << 2 | slot`.
    pub vertex_pairs: Csr,
    /// Minimum separation ξ of the last detection \[m\].
    pub(super) min_separation: f32,
    /// Per-vertex search radius r_v \[m\].
    radius: Vec<f32>,
    /// Vertex lies on the collision surface.
    on_surface: Vec<bool>,
    /// Smallest search radius of any body \[m\].
    radius_min: f32,
    /// Per body: bounding box at the detection, and the distance from it to the nearest other
    /// body's box (a lower bound on every pair distance with other bodies).
    body_boxes: Vec<Aabb>,
    isolation: Vec<f32>,
    /// Smallest pair distance per vertex at the detection (f32 bits; positive floats order
    /// as integers).
    dmin: Vec<u32>,
    found: PerThread,
    /// Initial-advance scale per body.
    pub body_scale: Vec<f32>,
    /// Bodies linked by a CCD candidate pair.
    groups: UnionFind,
    /// The bounds of the last detection (`clamp` as `detect` wrote it), kept past the end of
    /// the step so that the next step's initial advance can be certified without CCD.
    pub(super) last_bounds: Vec<Vec4>,
    /// `last_bounds`, `pairs` and `vertex_pairs` belong to the current topology.
    pub(super) bounds_valid: bool,
    /// Surface spans against boxes, spheres and colliders (`spans`): kept here because the vertex
    /// updates read them through the same phase cell as the pairs.
    pub(crate) obstacle_spans: SpanContacts,
    /// Each body's distances to itself since its last search (`self_clearance`).
    clearance: SelfClearance,
    /// Per body, for the current broadphase update: its own primitives are searched.
    search_self: Vec<bool>,
    /// Per body certified at the current detection: what its clearances lost since the
    /// reference \[m\].
    clearance_loss: Vec<f32>,
    /// Per body: the last detection stored a pair of the body with itself.
    stored_self: Vec<bool>,
}

impl SurfaceContactScratch {
    /// Each body's distances to itself since its last search.
    pub(crate) fn clearance(&self) -> &SelfClearance {
        &self.clearance
    }

    /// Forgets the pairs of the last detection (their vertex indices name another topology).
    pub(crate) fn forget_pairs(&mut self) {
        // The trees index the old surface too.
        self.broadphase = SurfaceBroadphase::default();
        self.pairs.clear();
        self.vertex_pairs.entries.clear();
        self.vertex_pairs.offsets.clear();
        self.bounds_valid = false;
        self.obstacle_spans.clear(0);
        self.clearance.forget();
    }

    /// Keeps the step's last bounds for [`super::bounds::advance_certified`] (after the sweeps).
    pub(crate) fn keep_bounds(&mut self, clamp: &[Vec4]) {
        self.last_bounds.clear();
        self.last_bounds.extend_from_slice(clamp);
        self.bounds_valid = true;
    }

    fn resize(&mut self, st: &SimState, threads: usize, model: &ContactModel) {
        let n = st.vertex_count();
        self.radius.clear();
        self.radius.extend(st.vertex_body.iter().map(|&b| search_radius(st, b, model.offset)));
        self.dmin.resize(n, 0);
        self.radius_min = self.radius.iter().copied().fold(f32::INFINITY, f32::min);
        self.body_boxes.resize(st.bodies.len(), Aabb::EMPTY);
        self.isolation.resize(st.bodies.len(), f32::INFINITY);
        self.on_surface.clear();
        self.on_surface.resize(n, false);
        for &v in &st.surface_vertices {
            self.on_surface[v as usize] = true;
        }
        self.body_scale.resize(st.bodies.len(), 1.0);
        self.found.0.resize_with(threads, Default::default);
        self.clearance.resize(st);
        self.search_self.resize(st.bodies.len(), true);
        self.clearance_loss.resize(st.bodies.len(), 0.0);
    }
}

/// Read-only inputs shared by the contact phases.
pub(crate) struct ContactContext<'a> {
    pub st: &'a SimState,
    pub model: ContactModel,
    pub settings: SurfaceContactSettings,
}

/// Prepares the scratch for a step (single-threaded, before the parallel region).
pub(crate) fn begin_step(
    scratch: &mut SurfaceContactScratch,
    st: &SimState,
    threads: usize,
    model: &ContactModel,
    enabled: bool,
) {
    scratch.resize(st, threads, model);
    if scratch.last_bounds.len() != st.vertex_count() {
        scratch.bounds_valid = false;
    }
    if !enabled {
        scratch.bounds_valid = false;
        // No detection this step: empty pair lists for every vertex.
        scratch.pairs.clear();
        scratch.vertex_pairs.entries.clear();
        scratch.vertex_pairs.offsets.clear();
        scratch.vertex_pairs.offsets.resize(st.vertex_count() + 1, 0);
    }
}

/// The CCD-limited initial advance: fills `body_scale` with the fraction of `x^n → x^(0)` each
/// body may travel. Called by every worker; `start` is `x^n`, `pos` holds `x^(0)` (read only).
pub(crate) fn advance_scale(
    t: usize,
    threads: usize,
    barrier: &SpinBarrier,
    ctx: &ContactContext<'_>,
    cell: &PhaseCell<SurfaceContactScratch>,
    start: &[Vec4],
    pos: &SharedSlice<'_, Vec4>,
) {
    let st = ctx.st;
    let xi = ctx.settings.ccd.min_separation;
    if t == 0 {
        // SAFETY: thread 0 alone between the barriers; `pos` is not written in this phase.
        let (s, x0) = unsafe { (cell.get_mut(), pos.as_slice()) };
        s.body_scale.fill(1.0);
        // A body whose distances to itself stay certified along its path needs no CCD with
        // itself.
        for (b, search) in s.search_self.iter_mut().enumerate() {
            *search = st.bodies[b].self_collision != 0 && !s.clearance.certify_path(st, b, start, x0, xi);
        }
        let search_self = &s.search_self;
        s.broadphase.update(st, (start, Some(x0)), |_| xi, false, |b| search_self[b]);
    }
    barrier.wait();
    {
        // SAFETY: read-only phase for the scratch's trees and for `pos`; each thread locks only
        // its own `found` slot.
        let (s, x0) = unsafe { (cell.get(), pos.as_slice()) };
        let mut found = s.found[t].lock();
        let f = &mut *found;
        f.links.clear();
        f.hits.clear();
        let mut test = |kind: u32, v: [u32; 4]| {
            let (ba, bb) = pair_bodies(st, v);
            if ba != bb {
                f.links.push((ba.min(bb), ba.max(bb)));
            }
            let x = gather(start, v);
            let y = gather(x0, v);
            let dx = [y[0] - x[0], y[1] - x[1], y[2] - x[2], y[3] - x[3]];
            let toi = toi(kind, &x, &dx, &ctx.settings.ccd);
            if let Some(toi) = toi {
                f.hits.push((ba, toi));
            }
        };
        let bp = &s.broadphase;
        for k in chunk(st.surface_vertices.len(), threads, t) {
            bp.point_triangle_candidates(st, k, |_, pv| test(PAIR_POINT_TRIANGLE, pv));
        }
        for e in chunk(st.surface_edges.len(), threads, t) {
            bp.edge_edge_candidates(st, e as u32, |_, pv| test(PAIR_EDGE_EDGE, pv));
        }
        f.links.sort_unstable();
        f.links.dedup();
    }
    barrier.wait();
    if t == 0 {
        // SAFETY: thread 0 alone.
        let s = unsafe { cell.get_mut() };
        let SurfaceContactScratch { found, groups, body_scale, .. } = s;
        groups.reset(body_scale.len());
        for f in found.iter() {
            for &(a, b) in &f.lock().links {
                groups.union(a, b);
            }
        }
        // Group scale: the earliest time of impact of any pair in the group. Kinematic vertices
        // are scaled too, so the whole group moves along the straight path the CCD certified.
        // Each root collects its group's earliest hit; a root has the smallest index of its
        // group, so one ascending pass then hands every body its root's final value.
        for f in found.iter() {
            for &(b, toi) in &f.lock().hits {
                let r = groups.find(b) as usize;
                body_scale[r] = body_scale[r].min(toi);
            }
        }
        for b in 0..body_scale.len() {
            body_scale[b] = body_scale[groups.find(b as u32) as usize];
        }
    }
    barrier.wait();
}

#[inline]
fn toi(kind: u32, x: &[Vec3A; 4], dx: &[Vec3A; 4], ccd: &CcdParams<f32>) -> Option<f32> {
    if kind == PAIR_POINT_TRIANGLE { point_triangle_toi(x, dx, ccd, 1.0) } else { edge_edge_toi(x, dx, ccd, 1.0) }
}

/// Contact detection at the current positions (`x^det`): pairs, per-vertex pair lists and the
/// per-vertex displacement bounds written to `clamp` (xyz: `x^det`, w: `b_v`). Called by every
/// worker; `pos` is read only.
#[allow(clippy::too_many_arguments)]
pub(crate) fn detect(
    t: usize,
    threads: usize,
    barrier: &SpinBarrier,
    ctx: &ContactContext<'_>,
    cell: &PhaseCell<SurfaceContactScratch>,
    pos: &SharedSlice<'_, Vec4>,
    clamp: &SharedSlice<'_, Vec4>,
) {
    let st = ctx.st;
    let n = st.vertex_count();
    if t == 0 {
        // SAFETY: thread 0 alone between the barriers; `pos` is not written in this phase.
        let (s, x) = unsafe { (cell.get_mut(), pos.as_slice()) };
        s.begin_detection(ctx, x);
    }
    barrier.wait();
    {
        // SAFETY: read-only phase for the trees, radii and positions; `dmin` is written only
        // through atomics (min is order independent, so the result does not depend on threads).
        let (s, x) = unsafe { (cell.get(), pos.as_slice()) };
        let dmin = as_atomic(&s.dmin);
        let clearance = as_atomic(&s.clearance.vertex);
        for k in chunk(n, threads, t) {
            // A pair the broadphase does not report is further apart than the two search radii,
            // so at least r_v + r_min. Other bodies are at least their box distance away, and
            // a body not searched for pairs with itself is its certified clearance away from
            // itself. Interior vertices are never part of a pair: unbounded.
            let b = st.vertex_body[k] as usize;
            let unfound = s.radius[k] + s.radius_min;
            let d = if !s.on_surface[k] {
                f32::INFINITY
            } else if s.search_self[b] {
                // Searched again: the clearance starts from what no search can miss.
                clearance[k].store(unfound.to_bits(), Ordering::Relaxed);
                unfound
            } else if st.bodies[b].self_collision == 0 {
                unfound.max(s.isolation[b])
            } else {
                let own = f32::from_bits(clearance[k].load(Ordering::Relaxed)) - s.clearance_loss[b];
                unfound.max(s.isolation[b]).min(own)
            };
            dmin[k].store(d.to_bits(), Ordering::Relaxed);
        }
        barrier.wait();
        let mut found = s.found[t].lock();
        let f = &mut *found;
        f.point_triangle.clear();
        f.edge_edge.clear();
        let store_limit = store_limit(ctx.model.offset);
        let visit = |kind: u32, v: [u32; 4], out: &mut Vec<ContactPair>| {
            let xs = gather(x, v);
            let c = crate::collision::surface_pairs::closest(kind, &xs);
            let reach = s.radius[v[0] as usize] + s.radius[v[3] as usize];
            if !(c.distance < reach) {
                return;
            }
            let (ba, bb) = pair_bodies(st, v);
            if ba == bb {
                for &i in &v {
                    clearance[i as usize].fetch_min(c.distance.to_bits(), Ordering::Relaxed);
                }
            }
            if c.distance < store_limit {
                // Close pairs bound their vertices along the pair's normal only (see
                // `limit_move`), so that they can always move apart.
                let mut pair = make_pair(st, ctx, kind, v, c.distance, c.normal, &c.weights);
                if kind == PAIR_EDGE_EDGE {
                    // A scale of 0 leaves the pair with its bounds only (see `has_energy`).
                    let scale = edge_edge_energy_scale(&c.weights);
                    pair.stiffness *= scale;
                    pair.friction_normal_force *= scale;
                }
                out.push(pair);
            } else {
                for &i in &v {
                    dmin[i as usize].fetch_min(c.distance.to_bits(), Ordering::Relaxed);
                }
            }
        };
        let bp = &s.broadphase;
        for k in chunk(st.surface_vertices.len(), threads, t) {
            let first = f.point_triangle.len();
            bp.point_triangle_candidates(st, k, |_, pv| visit(PAIR_POINT_TRIANGLE, pv, &mut f.point_triangle));
            // Each query's pairs in the order of their vertices, not of the tree walk: the
            // pair order (which fixes each vertex's summation order and which of two pairs with
            // the same closest point keeps its energy) then depends on the positions alone, not
            // on the tree's shape, which changes with each rebuild and between backends.
            f.point_triangle[first..].sort_unstable_by_key(|p| p.vertices);
            keep_closest_features(&mut f.point_triangle[first..]);
        }
        for e in chunk(st.surface_edges.len(), threads, t) {
            let first = f.edge_edge.len();
            bp.edge_edge_candidates(st, e as u32, |_, pv| visit(PAIR_EDGE_EDGE, pv, &mut f.edge_edge));
            f.edge_edge[first..].sort_unstable_by_key(|p| p.vertices);
        }
    }
    barrier.wait();
    {
        // SAFETY: read-only scratch; each thread writes its own range of `clamp`.
        let s = unsafe { cell.get() };
        let dmin = as_atomic(&s.dmin);
        let xi = ctx.settings.ccd.min_separation;
        for v in chunk(n, threads, t) {
            // SAFETY: own range only; `pos` is read only in this phase.
            unsafe {
                let x = pos.get(v);
                // Kinematic vertices are bounded too: they approach their targets only as far as
                // the bound allows (see `detect.rs`, `catch_up_kinematic`), so a pin can never drive a surface through
                // another; it lags instead and catches up once free.
                // Measured from the minimum separation ξ rather than 0, a gap d ≥ ξ ends above
                // (1 − 2γ_p) d + 2γ_p ξ ≥ ξ: however hard the surfaces are pressed together,
                // they stay further apart than f32 rounding of positions (6e-8 m at 1 m).
                let d = f32::from_bits(dmin[v].load(Ordering::Relaxed));
                let bound = BOUND_FRACTION * (d - xi).max(0.0);
                clamp.set(v, Vec3A::from_vec4(x).extend(bound));
            }
        }
    }
    barrier.wait();
    if t == 0 {
        // SAFETY: thread 0 alone; `clamp` is read only until the next detection.
        let s = unsafe { cell.get_mut() };
        // SAFETY: `pos` is not written in this phase.
        s.end_detection(ctx, unsafe { pos.as_slice() });
    }
    barrier.wait();
}

impl SurfaceContactScratch {
    /// Thread 0's start of a detection at `x`: the bodies' boxes and isolation, which bodies
    /// are searched for pairs with themselves (`self_clearance`), and the broadphase.
    fn begin_detection(&mut self, ctx: &ContactContext<'_>, x: &[Vec4]) {
        let st = ctx.st;
        let SurfaceContactScratch {
            broadphase: bp,
            radius,
            body_boxes,
            isolation,
            clearance,
            search_self,
            clearance_loss,
            ..
        } = self;
        body_boxes.fill(Aabb::EMPTY);
        for (p, &b) in x.iter().zip(&st.vertex_body) {
            body_boxes[b as usize] = body_boxes[b as usize].grow(Vec3A::from_vec4(*p));
        }
        for (a, iso) in isolation.iter_mut().enumerate() {
            *iso = body_boxes
                .iter()
                .enumerate()
                .filter(|&(b, _)| b != a)
                .map(|(_, bb)| box_distance(&body_boxes[a], bb))
                .fold(f32::INFINITY, f32::min);
        }
        // A self-colliding body is searched for pairs with itself unless its clearances
        // certify that none can be stored (`self_clearance`).
        let store = store_limit(ctx.model.offset);
        for (b, search) in search_self.iter_mut().enumerate() {
            let certified = if st.bodies[b].self_collision != 0 { clearance.certify_at(st, b, x, store) } else { None };
            *search = st.bodies[b].self_collision != 0 && certified.is_none();
            clearance_loss[b] = certified.unwrap_or(0.0);
        }
        // The trees were (re)built or refitted by the step's CCD advance; refitting them to the
        // current positions keeps them tight enough.
        bp.update(st, (x, None), |v| radius[v as usize], false, |b| search_self[b]);
    }

    /// Thread 0's end of a detection at `x`: the pairs in the single-threaded order, the vertex
    /// → pair lists, and the searched bodies' new references.
    fn end_detection(&mut self, ctx: &ContactContext<'_>, x: &[Vec4]) {
        let (st, n) = (ctx.st, ctx.st.vertex_count());
        self.min_separation = ctx.settings.ccd.min_separation;
        let SurfaceContactScratch { found, pairs, vertex_pairs, clearance, search_self, stored_self, .. } = self;
        pairs.clear();
        // Every stored pair can come within the offset before the next detection (its gap
        // closes by at most 2γ_p (d − ξ)), and every pair that can is stored.
        // Thread chunks are contiguous and in order, so this order is the single-threaded one.
        for f in found.iter() {
            pairs.extend_from_slice(&f.lock().point_triangle);
        }
        for f in found.iter() {
            pairs.extend_from_slice(&f.lock().edge_edge);
        }
        build_vertex_pairs(vertex_pairs, pairs, n);
        // The bodies just searched become their own references.
        stored_self.clear();
        stored_self.resize(search_self.len(), false);
        for p in pairs.iter() {
            let (a, b) = pair_bodies(st, p.vertices);
            stored_self[a as usize] |= a == b;
        }
        for (b, &searched) in search_self.iter().enumerate() {
            if searched {
                clearance.record(st, b, x, stored_self[b]);
            }
        }
    }
}

/// One contact detection at `positions`, outside a step and on the calling thread (for
/// tests): the pairs, vertex → pair lists and bounds a step's detection leaves, the bounds as
/// `clamp` (xyz `x^det`, w `b_v`).
#[cfg(test)]
pub(crate) fn detect_once(
    st: &SimState,
    model: ContactModel,
    settings: SurfaceContactSettings,
    positions: &mut [Vec4],
) -> (SurfaceContactScratch, Vec<Vec4>) {
    let mut scratch = SurfaceContactScratch::default();
    let clamp = detect_again(&mut scratch, st, model, settings, positions);
    (scratch, clamp)
}

/// [`detect_once`] with a scratch that lives on (its trees and self-contact references).
#[cfg(test)]
pub(crate) fn detect_again(
    scratch: &mut SurfaceContactScratch,
    st: &SimState,
    model: ContactModel,
    settings: SurfaceContactSettings,
    positions: &mut [Vec4],
) -> Vec<Vec4> {
    begin_step(scratch, st, 1, &model, true);
    let mut clamp = vec![Vec4::ZERO; st.vertex_count()];
    let cell = PhaseCell::new(std::mem::take(scratch));
    {
        let ctx = ContactContext { st, model, settings };
        let pos = SharedSlice::new(positions);
        let clamp_sh = SharedSlice::new(&mut clamp);
        crate::solver::parallel::run_workers(1, |t, barrier| detect(t, 1, barrier, &ctx, &cell, &pos, &clamp_sh));
    }
    *scratch = cell.into_inner();
    clamp
}

/// A scratch holding `pairs` between vertices `0..n` (for tests).
#[cfg(test)]
pub(super) fn scratch_with(pairs: Vec<ContactPair>, n: usize, min_separation: f32) -> SurfaceContactScratch {
    let mut s = SurfaceContactScratch { pairs, min_separation, ..Default::default() };
    build_vertex_pairs(&mut s.vertex_pairs, &s.pairs, n);
    s
}

/// One CCD-limited initial advance of every body along `start → guess`, outside a step (for
/// tests): each body's scale, as a step's advance computes it.
#[cfg(test)]
pub(crate) fn advance_once(
    st: &SimState,
    model: ContactModel,
    settings: SurfaceContactSettings,
    start: &[Vec4],
    guess: &mut [Vec4],
) -> Vec<f32> {
    let mut scratch = SurfaceContactScratch::default();
    begin_step(&mut scratch, st, 1, &model, true);
    let cell = PhaseCell::new(scratch);
    {
        let ctx = ContactContext { st, model, settings };
        let pos = SharedSlice::new(guess);
        crate::solver::parallel::run_workers(1, |t, barrier| advance_scale(t, 1, barrier, &ctx, &cell, start, &pos));
    }
    cell.into_inner().body_scale
}

/// Distance between two boxes (0 when they overlap).
fn box_distance(a: &Aabb, b: &Aabb) -> f32 {
    let gap = (a.min - b.max).max(b.min - a.max).max(Vec3A::ZERO);
    gap.length()
}

fn as_atomic(v: &[u32]) -> &[AtomicU32] {
    // SAFETY: `AtomicU32` has the same size and alignment as `u32`; every concurrent access in
    // the detection phases goes through the atomics.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const AtomicU32, v.len()) }
}

fn make_pair(
    st: &SimState,
    ctx: &ContactContext<'_>,
    kind: u32,
    v: [u32; 4],
    distance: f32,
    normal: Vec3A,
    w: &[f32; 4],
) -> ContactPair {
    // Stiffness from the mass the pair moves: the mean of the two sides' interpolated masses.
    let m = 0.5 * (0..4).map(|k| w[k].abs() * st.masses[v[k] as usize]).sum::<f32>();
    let stiffness = PAIR_STIFFNESS_FACTOR * ctx.model.stiffness.for_mass(m);
    let (ba, bb) = pair_bodies(st, v);
    ContactPair {
        vertices: v,
        frame_normal: normal.to_array(),
        kind,
        stiffness,
        friction_normal_force: ctx.model.normal_force(stiffness, distance),
        friction: 0.5 * (st.bodies[ba as usize].friction + st.bodies[bb as usize].friction),
        distance,
        weights: *w,
    }
}

/// Vertex → pair entries, in pair order (fixes each vertex's summation order). Kinematic
/// vertices get rows too: their moves are limited by the same pairs.
fn build_vertex_pairs(csr: &mut Csr, pairs: &[ContactPair], n: usize) {
    csr.fill_vertex_elements(n, pairs.iter().map(|p| p.vertices), |_| true);
}

/// Sum of `w_k (x_k − x_k^n)` over a pair: the relative displacement of its closest points
/// over the step (the friction slip).
#[inline(always)]
pub(crate) fn relative_displacement(x: &[Vec3A; 4], start: &[Vec4], v: [u32; 4], w: &[f32; 4]) -> Vec3A {
    let mut d = Vec3A::ZERO;
    for k in 0..4 {
        d += (x[k] - Vec3A::from_vec4(start[v[k] as usize])) * w[k];
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::collision::surface_pairs::closest;
    use crate::test_rng::Rng;

    #[test]
    fn vertex_pair_lists_cover_every_vertex_in_pair_order() {
        let pairs = [
            ContactPair { vertices: [0, 1, 2, 3], ..Default::default() },
            ContactPair { vertices: [4, 0, 1, 2], ..Default::default() },
        ];
        let mut csr = Csr::default();
        build_vertex_pairs(&mut csr, &pairs, 5);
        assert_eq!(csr.row(0), &[crate::mesh::pack_entry(0, 0), crate::mesh::pack_entry(1, 1)]);
        assert_eq!(csr.row(1), &[crate::mesh::pack_entry(0, 1), crate::mesh::pack_entry(1, 2)]);
        assert_eq!(csr.row(4), &[crate::mesh::pack_entry(1, 0)]);
    }

    /// A soft box (self-colliding, as every body is by default) alone, at rest, and the
    /// scenes' contact model.
    fn soft_box() -> (SimState, ContactModel) {
        use crate::prelude::*;
        let mut world = World::new(StepConfig::default()).expect("world");
        let mesh = TetMesh::box_mesh(glam::Vec3::splat(0.2), [5, 5, 5], TetSplit::Six).expect("mesh");
        world.bodies.insert(SoftBodyBuilder::tetrahedral(mesh).build().expect("body"));
        world.sync();
        let st = world.state().clone();
        let model = ContactModel {
            stiffness: crate::collision::ContactStiffness::default_for(9.81, 1e-3),
            offset: 1e-3,
            static_slip: 1e-6,
            stiffening: false,
        };
        (st, model)
    }

    /// `rest` turned by `angle` about z, moved, squashed along y by `squash` and shaken by
    /// `noise` \[m\].
    fn deformed(rest: &[Vec4], angle: f32, squash: f32, noise: f32, rng: &mut Rng) -> Vec<Vec4> {
        let turn = glam::Quat::from_rotation_z(angle);
        rest.iter()
            .map(|p| {
                let q = Vec3A::new(p.x, p.y * squash, p.z);
                (turn * q + Vec3A::new(0.1, -0.05, 0.02) + rng.vec().as_vec3a() * noise).extend(0.0)
            })
            .collect()
    }

    /// Every allowed pair of the body's own primitives.
    fn own_pairs(st: &SimState) -> Vec<(u32, [u32; 4])> {
        use crate::collision::surface_pairs::{edge_edge_vertices, pair_allowed, point_triangle_vertices};
        let mut pairs = Vec::new();
        for &v in &st.surface_vertices {
            for &t in &st.surface_triangles {
                pairs.push((PAIR_POINT_TRIANGLE, point_triangle_vertices(v, t)));
            }
        }
        for (i, &a) in st.surface_edges.iter().enumerate() {
            for &b in &st.surface_edges[i + 1..] {
                pairs.push((PAIR_EDGE_EDGE, edge_edge_vertices(a, b)));
            }
        }
        pairs.retain(|&(_, v)| pair_allowed(st, v));
        pairs
    }

    /// A body whose distances to itself are certified is not searched for pairs with itself,
    /// yet stores the pairs a full search stores (none here) and bounds no vertex further than
    /// a fraction γ_p of its true distance to the body's other primitives allows; a squash that
    /// uses up the certificate's slack searches the body again.
    #[test]
    fn a_body_certified_clear_of_itself_bounds_its_vertices_by_their_true_distances() {
        let (st, model) = soft_box();
        let settings = SurfaceContactSettings::default();
        let pairs = own_pairs(&st);
        let rest = st.positions.clone();
        let mut scratch = SurfaceContactScratch::default();
        detect_again(&mut scratch, &st, model, settings, &mut rest.clone());
        assert!(scratch.search_self[0], "the first detection searches the body");
        let mut rng = Rng(3);
        let mut skipped = 0;
        for k in 0..12 {
            let x = deformed(&rest, 0.1 * k as f32, 1.0 - 0.001 * k as f32, 3e-4, &mut rng);
            let clamp = detect_again(&mut scratch, &st, model, settings, &mut x.clone());
            skipped += usize::from(!scratch.search_self[0]);
            let (full, _) = detect_once(&st, model, settings, &mut x.clone());
            assert_eq!(scratch.pairs.len(), full.pairs.len(), "step {k}");
            let mut nearest = vec![f32::INFINITY; st.vertex_count()];
            for &(kind, v) in &pairs {
                let d = closest(kind, &gather(&x, v)).distance;
                for i in v {
                    nearest[i as usize] = nearest[i as usize].min(d);
                }
            }
            let xi = settings.ccd.min_separation;
            for v in 0..st.vertex_count() {
                let allowed = BOUND_FRACTION * (nearest[v] - xi);
                assert!(clamp[v].w <= allowed * (1.0 + 1e-5), "step {k}, vertex {v}: bound {} > {allowed}", clamp[v].w);
            }
        }
        assert!(skipped >= 10, "certified in {skipped} of 12 detections");
        let squashed = deformed(&rest, 0.0, 0.8, 0.0, &mut rng);
        detect_again(&mut scratch, &st, model, settings, &mut squashed.clone());
        assert!(scratch.search_self[0], "a 20 % squash is searched");
    }

    /// The path certificate against every allowed pair of the box's own primitives sampled
    /// along the straight paths: a certified path keeps every pair at least `1 − SELF_SLACK`
    /// of the least clearance apart, and a twisted, squashed path is not certified.
    #[test]
    fn a_certified_path_keeps_every_pair_of_the_body_apart() {
        use crate::collision::self_clearance::SELF_SLACK;
        let (st, model) = soft_box();
        let rest = st.positions.clone();
        let mut scratch = SurfaceContactScratch::default();
        detect_again(&mut scratch, &st, model, SurfaceContactSettings::default(), &mut rest.clone());
        let least = st
            .surface_vertices
            .iter()
            .map(|&v| f32::from_bits(scratch.clearance.vertex[v as usize]))
            .fold(f32::INFINITY, f32::min);
        let pairs = own_pairs(&st);
        let mut rng = Rng(8);
        let mut certified = 0;
        for k in 0..6 {
            let x = deformed(&rest, 0.05 * k as f32, 1.0 - 0.0004 * k as f32, 1e-4, &mut rng);
            let y = deformed(&rest, 0.05 * k as f32 + 0.3, 1.0 - 0.0006 * k as f32, 1e-4, &mut rng);
            if !scratch.clearance.certify_path(&st, 0, &x, &y, 0.0) {
                continue;
            }
            certified += 1;
            for s in 0..=8 {
                let s = s as f32 / 8.0;
                let at: Vec<Vec4> = x.iter().zip(&y).map(|(a, b)| *a + (*b - *a) * s).collect();
                for &(kind, v) in &pairs {
                    let d = closest(kind, &gather(&at, v)).distance;
                    assert!(d >= (1.0 - SELF_SLACK) * least * (1.0 - 1e-4), "path {k}, s = {s}: {d} < {least}");
                }
            }
        }
        assert!(certified >= 4, "{certified} of 6 paths certified");
        let twisted = deformed(&rest, 0.0, 0.7, 0.0, &mut rng);
        assert!(!scratch.clearance.certify_path(&st, 0, &rest, &twisted, 0.0));
    }
}
