//! Primitive pairs swept by a linear motion `x → y` of every vertex: the candidates that the
//! augmented-Lagrangian step-size search and the fast path's safety check both run continuous
//! collision detection on (docs/algorithms.md §4.4 and §8): vertex–triangle and edge–edge pairs
//! of the surfaces, and vertices and surface edges against obstacles. One broadphase walk, two
//! narrow phases.

use glam::{DVec3, Vec3A, Vec4};

use super::obstacle::Obstacle;
use super::self_clearance::SelfClearance;
use super::surface_pairs::SurfaceBroadphase;
use crate::state::SimState;

/// [`PairKey::kind`] of a vertex–obstacle pair: `vertices = [vertex, obstacle index, MAX, MAX]`.
pub(crate) const PAIR_OBSTACLE: u32 = 2;
/// [`PairKey::kind`] of a surface edge–obstacle pair: `vertices = [a, b, obstacle index, MAX]`,
/// for obstacles whose edges, corners or curved faces can come between an edge's vertices
/// ([`Obstacle::tests_edges`]).
pub(crate) const PAIR_OBSTACLE_EDGE: u32 = 3;

/// A contact primitive pair: `PAIR_POINT_TRIANGLE` and `PAIR_EDGE_EDGE` with their four global
/// vertices in the order of [`super::surface_pairs::ContactPair`], [`PAIR_OBSTACLE`] or
/// [`PAIR_OBSTACLE_EDGE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct PairKey {
    pub kind: u32,
    pub vertices: [u32; 4],
}

impl PairKey {
    /// The vertices the pair moves (one for a vertex–obstacle pair, two for an edge's).
    pub fn moving_vertices(&self) -> &[u32] {
        match self.kind {
            PAIR_OBSTACLE => &self.vertices[..1],
            PAIR_OBSTACLE_EDGE => &self.vertices[..2],
            _ => &self.vertices,
        }
    }

    /// The obstacle of a vertex– or edge–obstacle pair.
    pub fn obstacle(&self) -> Option<u32> {
        match self.kind {
            PAIR_OBSTACLE => Some(self.vertices[1]),
            PAIR_OBSTACLE_EDGE => Some(self.vertices[2]),
            _ => None,
        }
    }
}

/// Broadphase scratch for swept queries.
#[derive(Clone, Debug, Default)]
pub(crate) struct SweptPairs {
    broadphase: SurfaceBroadphase,
    x32: Vec<Vec4>,
    y32: Vec<Vec4>,
    /// Each body's distances to itself as the fast path last found them: a body they prove
    /// keeps its own primitives apart over a sweep is not searched for pairs with itself
    /// (`set_self_certificate`).
    certificate: Option<SelfClearance>,
    /// Least distance the certificate must prove between a body's own primitives before its
    /// pairs are skipped \[m\] (`set_self_certificate`).
    certified_floor: f32,
    /// Per body: searched for pairs with itself in this sweep.
    search_self: Vec<bool>,
    /// The broadphase of each body's pairs with itself, in the frame of its mean motion.
    own: SurfaceBroadphase,
    /// Positions `y` in that frame.
    y_own: Vec<Vec4>,
    /// Per body: the sum of its vertices' displacements and their count, then its mean
    /// displacement.
    shift: Vec<(DVec3, u32)>,
    /// Per body: the farthest any of its vertices' displacements strays from its mean \[m\].
    stray: Vec<f64>,
}

/// A body whose vertices all move by its mean displacement to within this \[m\] translates,
/// and its own pairs are not searched: none comes closer by more than four times this (the
/// relative motion of a pair's four vertices), which could cross only a pair already within
/// 4 nm, and reach a search's separation only from within 9 nm (additive CCD's first advance
/// certifies any pair whose relative motion is below `(1 − s)` of its gap, at least half its
/// distance), where the fallback keeps pairs ξ = 1 µm apart. A stiff ball flying at a wall
/// translates over its free flight to within 3e-10 m (its velocities are f32): searched, its
/// 37,000 pairs within two offsets of each other, none approaching, were four fifths of the
/// fallback's impact search.
const TRANSLATION_STRAY: f64 = 1e-9;

fn to32(x: &[DVec3], out: &mut Vec<Vec4>) {
    out.clear();
    out.extend(x.iter().map(|p| p.as_vec3().extend(0.0)));
}

impl SweptPairs {
    /// The self-contact certificate later sweeps may use, or `None` to search every
    /// self-colliding body's own pairs. Before it, a wall that a ball flew at was searched
    /// for pairs with itself in every sweep of the fallback's impact search: three quarters of
    /// `projectile_wall`'s frames went to those pairs, none of which could meet.
    ///
    /// A certified body's own pairs are skipped only while they are proven at least `floor`
    /// apart (and the search's radius): the caller's contact scale, so that no pair that could
    /// come near enough to need a contact constraint goes unseen. At the search's radius
    /// alone (the AL's ξ = 1 µm) a certified body could fold to within microns of itself
    /// before any of its pairs were searched.
    pub fn set_self_certificate(&mut self, certificate: Option<SelfClearance>, floor: f32) {
        self.certificate = certificate;
        self.certified_floor = floor;
    }

    /// Calls `surface(key)` for every allowed vertex–triangle and edge–edge pair with a vertex
    /// in `moves` whose boxes, swept over `x → y` and grown by `radius` \[m\], overlap (when
    /// `pairs` is set); and
    /// `obstacle(vertex, index)` for every moving vertex whose swept box reaches an obstacle
    /// that acts on it, and `edge(edge, index)` for every surface edge with a moving vertex
    /// whose swept box reaches an obstacle that acts on it and has edges or curved faces to come
    /// between its vertices ([`Obstacle::tests_edges`]; `edge` indexes `st.surface_edges`). Boxes are built in f32 and grown by a further 1e-5 m, far above the
    /// rounding of positions within kilometres of the origin, so the walk misses no pair the
    /// f64 narrow phase could find.
    #[allow(clippy::too_many_arguments)]
    pub fn visit(
        &mut self,
        st: &SimState,
        obstacles: &[Obstacle],
        (x, y): (&[DVec3], &[DVec3]),
        (moves, pairs): (&[bool], bool),
        radius: f64,
        mut surface: impl FnMut(PairKey),
        mut obstacle: impl FnMut(u32, u32),
        mut edge: impl FnMut(u32, u32),
    ) {
        let r = radius as f32 + 1e-5;
        let swept_box = |v: usize| {
            let (a, b) = (Vec3A::from(x[v].as_vec3()), Vec3A::from(y[v].as_vec3()));
            (a.min(b) - Vec3A::splat(r), a.max(b) + Vec3A::splat(r))
        };
        for (v, _) in moves.iter().enumerate().filter(|(_, m)| **m) {
            let (lo, hi) = swept_box(v);
            for (k, o) in obstacles.iter().enumerate() {
                if o.applies_to(st.vertex_body[v]) && o.box_reaches(lo, hi, 0.0) {
                    obstacle(v as u32, k as u32);
                }
            }
        }
        if obstacles.iter().any(Obstacle::tests_edges) {
            for (e, &[a, b]) in st.surface_edges.iter().enumerate() {
                if !(moves[a as usize] || moves[b as usize]) {
                    continue;
                }
                let ((lo_a, hi_a), (lo_b, hi_b)) = (swept_box(a as usize), swept_box(b as usize));
                let (lo, hi) = (lo_a.min(lo_b), hi_a.max(hi_b));
                for (k, o) in obstacles.iter().enumerate() {
                    if o.tests_edges() && o.applies_to(st.vertex_body[a as usize]) && o.box_reaches(lo, hi, 0.0) {
                        edge(e as u32, k as u32);
                    }
                }
            }
        }
        if !pairs || st.surface_triangles.is_empty() {
            return;
        }
        to32(x, &mut self.x32);
        to32(y, &mut self.y32);
        let moving = |v: &[u32; 4]| v.iter().any(|&i| moves[i as usize]);
        // Pairs between bodies, swept `x → y`. Both trees are refitted between the
        // broadphase's periodic rebuilds: a refit keeps every box exact, so no pair is missed,
        // and successive calls (the step-size search of one fallback step, its next
        // iterations) sweep nearly the same boxes. Rebuilding on every call was a fifth of a
        // cloth's fallback step (median splits over every surface primitive).
        self.broadphase.update(st, (&self.x32, Some(&self.y32)), |_| r, false, |_| false);
        self.broadphase.candidates(st, &moving, &mut surface);
        // Each body's pairs with itself, unless it translates (`TRANSLATION_STRAY`) or its
        // certificate proves it keeps apart from itself over the sweep. Their distances do not change when the whole body is
        // translated, so they are swept in a frame that moves with the body's mean
        // displacement, `x → y − t_b`: a pair that meets along `x → y` meets there at the same
        // moment, and so is still found. A flying body's own primitives then sweep nothing:
        // `projectile_wall`'s ball, swept over its flight, paired each primitive with a third
        // of its surface (75,000 pairs for a 3 cm ball flying 1 cm).
        // Each body's mean displacement, and how far its vertices stray from it.
        let nb = st.bodies.len();
        let (shift, stray) = (&mut self.shift, &mut self.stray);
        shift.clear();
        shift.resize(nb, (DVec3::ZERO, 0));
        for (v, (a, b)) in x.iter().zip(y).enumerate() {
            let s = &mut shift[st.vertex_body[v] as usize];
            *s = (s.0 + (*b - *a), s.1 + 1);
        }
        for s in shift.iter_mut() {
            let t = s.0 / s.1.max(1) as f64;
            // A non-finite vertex must not take its body's boxes with it: unshifted, only its
            // own primitives' boxes are lost, and the narrow phase reads its distance as 0.
            s.0 = if t.is_finite() { t } else { DVec3::ZERO };
        }
        stray.clear();
        stray.resize(nb, 0.0);
        for (v, (a, b)) in x.iter().zip(y).enumerate() {
            let body = st.vertex_body[v] as usize;
            let off = (*b - *a - shift[body].0).length();
            stray[body] = if off.is_finite() { stray[body].max(off) } else { f64::INFINITY };
        }
        self.search_self.clear();
        let floor = r.max(self.certified_floor);
        let mut any = false;
        for b in 0..nb {
            let own = st.bodies[b].self_collision != 0
                && !(stray[b] <= TRANSLATION_STRAY)
                && !self.certificate.as_mut().is_some_and(|c| c.keeps_apart(st, b, &self.x32, &self.y32, floor));
            any |= own;
            self.search_self.push(own);
        }
        if !any {
            return;
        }
        let shift = &self.shift;
        self.y_own.clear();
        self.y_own.extend(
            self.y32.iter().enumerate().map(|(v, p)| *p - shift[st.vertex_body[v] as usize].0.as_vec3().extend(0.0)),
        );
        let search_self = &self.search_self;
        self.own.set_self_only(true);
        self.own.update(st, (&self.x32, Some(&self.y_own)), |_| r, false, |b| search_self[b]);
        self.own.candidates(st, &moving, &mut surface);
    }
}

/// Positions of a pair's four vertices at `x`, and their motion to `y`.
pub(crate) fn pair_motion(key: &PairKey, x: &[DVec3], y: &[DVec3]) -> ([DVec3; 4], [DVec3; 4]) {
    let p = key.vertices.map(|i| x[i as usize]);
    let q = key.vertices.map(|i| y[i as usize]);
    (p, std::array::from_fn(|k| q[k] - p[k]))
}

/// Sign of the orientation of a pair's four points (exact): a vertex–triangle or edge–edge
/// pair that passes through itself changes it.
pub(crate) fn orientation(p: &[DVec3; 4]) -> f64 {
    let c = |v: DVec3| robust::Coord3D { x: v.x, y: v.y, z: v.z };
    robust::orient3d(c(p[0]), c(p[1]), c(p[2]), c(p[3])).signum()
}

/// Conservative time of first contact `t ∈ [0, 1]` of a vertex moving `a → b` with an obstacle
/// (within `xi` \[m\] of its surface), marching like additive CCD on the obstacle's signed
/// distance (1-Lipschitz): `None` when the whole motion keeps more than `xi`; otherwise a time
/// at which at least `safety` of the starting gap is left.
///
/// A vertex starting within `2 xi` of the surface (the fast path leaves vertices on it) gets
/// the obstacle's exact entry test instead, so it may slide along the surface or leave it: the
/// time returned is then the entry's, and a vertex already inside may not go deeper.
pub(crate) fn obstacle_toi(o: &Obstacle, a: DVec3, b: DVec3, xi: f64, safety: f64) -> Option<f64> {
    let d = |p: DVec3| o.signed_distance(Vec3A::from(p.as_vec3())).0 as f64;
    let d0 = d(a);
    if !(d0 > 2.0 * xi) {
        if !(d0 >= 0.0) {
            return (!(d(b) >= d0)).then_some(0.0);
        }
        return match o.first_entry(Vec3A::from(a.as_vec3()), Vec3A::from(b.as_vec3())) {
            Some(t) => Some((t as f64 * 0.9).min(1.0)),
            // A start on the face can read as inside to the entry test's f32 arithmetic, which
            // then finds no entry: a path that ends inside entered, at once for all we know.
            None => (d(b) < 0.0).then_some(0.0),
        };
    }
    march(|t| d(a + (b - a) * t) - xi, d0 - xi, (b - a).length(), safety)
}

/// Conservative advancement along a motion over `t ∈ [0, 1]`: `gap(t)` is a gap that closes no
/// faster than `len` \[m\] per unit of `t` (a 1-Lipschitz distance, less its floor, of points
/// moving at most `len`), `gap0` its value at 0. `None` when the gap stays above `safety` of
/// `gap0` all the way; otherwise a time at which at least that share is left.
fn march(gap: impl Fn(f64) -> f64, gap0: f64, len: f64, safety: f64) -> Option<f64> {
    if len == 0.0 {
        return None;
    }
    let mut t = 0.0;
    let mut advance = (1.0 - safety) * gap0 / len;
    for _ in 0..64 {
        let ahead = t + advance;
        if ahead > 1.0 {
            return (gap(1.0) < safety * gap0).then_some(t);
        }
        let left = gap(ahead);
        if !(left > 0.0) {
            return Some(t);
        }
        if left < safety * gap0 {
            // The first advance leaves a path straight at the surface exactly the kept share
            // of its gap, which rounding may read a hair under: refused, the step stopped at
            // t = 0, and a vertex heading square at a wall held its whole island (a 60 m/s
            // cube was cut into 5 mm pieces all the way to a rapier wall, 670 ms a frame).
            // What the advance bound guarantees still holds there.
            return Some(if t == 0.0 && left > 0.5 * safety * gap0 { ahead } else { t });
        }
        t = ahead;
        advance = 0.9 * left / len;
    }
    Some(t)
}

/// Conservative time of first contact `t ∈ [0, 1]` of a surface edge whose ends move
/// `from → to` with an obstacle that has edges or curved faces ([`Obstacle::tests_edges`]):
/// `None` when the whole motion keeps every point of the edge more than `xi` \[m\] from the
/// solid; otherwise a time at which at least `safety` of the starting gap is left. Second, for
/// an edge that touches the solid, the distance its path must keep (below). The edge's
/// distance (its closest point's, [`Obstacle::segment_closest`]) is 1-Lipschitz in the larger
/// of its ends' displacements, since every point of the edge moves by a blend of the two: the
/// march is [`obstacle_toi`]'s.
///
/// An edge starting within `2 xi` of the solid touches it (through a vertex the fast path left
/// on a face, or wrapped over a rim): marched, it could not move at all, so its path is
/// sampled instead, and it may slide and turn on the solid as long as no sample comes closer
/// than half its starting distance. A fixed plane between the edge and the solid (the
/// separating plane) was tried first: exact, but an edge turning about a box's rim (a pinned
/// row pulled down past it) moves one end behind any fixed plane at first order, and
/// `fallback_cloth_gap` froze on its first fallback frame. Between samples the path may dip;
/// the state the step takes is sampled again where another pair stops the step sooner
/// (`solver::al::step_size`), so every iterate keeps the edge out. An edge already inside may
/// not go deeper.
pub(crate) fn edge_obstacle_toi(
    o: &Obstacle,
    from: [DVec3; 2],
    to: [DVec3; 2],
    xi: f64,
    safety: f64,
) -> (Option<f64>, Option<f64>) {
    let d0 = edge_distance_at(o, from, to, 0.0);
    if !(d0 >= 0.0) {
        return ((!(edge_distance_at(o, from, to, 1.0) >= d0)).then_some(0.0), None);
    }
    if d0 <= 2.0 * xi {
        // Within 2ξ, a march could not move the edge: it advances by its gap. Halving from the
        // whole step, the first share whose path keeps the edge at half its distance or more
        // (`edge_path_clear`) is taken.
        let floor = 0.5 * d0;
        if edge_path_clear(o, from, to, 1.0, floor) {
            return (None, Some(floor));
        }
        let mut t = 0.5;
        while t > TOUCHING_SHARE {
            if edge_path_clear(o, from, to, t, floor) {
                return (Some(t), Some(floor));
            }
            t *= 0.5;
        }
        return (Some(0.0), Some(floor));
    }
    let floor = xi.min(0.5 * d0);
    let len = (to[0] - from[0]).length().max((to[1] - from[1]).length());
    if !(len > 0.0) {
        return (None, None);
    }
    (march(|t| edge_distance_at(o, from, to, t) - floor, d0 - floor, len, safety), None)
}

/// Smallest share of a step a touching edge's sampled path is halved to before it stops the
/// step (`edge_obstacle_toi`).
pub(crate) const TOUCHING_SHARE: f64 = 1e-6;

/// The closest distance to `o` of the edge with its ends a share `t` of the way `from → to`
/// \[m\].
fn edge_distance_at(o: &Obstacle, from: [DVec3; 2], to: [DVec3; 2], t: f64) -> f64 {
    let at = |k: usize| Vec3A::from((from[k] + (to[k] - from[k]) * t).as_vec3());
    o.segment_closest(at(0), at(1)).distance as f64
}

/// Whether the edge moving its ends a share `t` of the way `from → to` stays at least `floor`
/// \[m\] from `o` at a quarter, half, three quarters and all of it: the sampled rule of a touching
/// edge (`edge_obstacle_toi`), which the step size applies again at the step it takes.
pub(crate) fn edge_path_clear(o: &Obstacle, from: [DVec3; 2], to: [DVec3; 2], t: f64, floor: f64) -> bool {
    (1..=4).all(|j| edge_distance_at(o, from, to, t * j as f64 / 4.0) >= floor)
}

/// Whether the segment `a → b` runs through the obstacle's solid deeper than `tolerance` \[m\]
/// (enters it and leaves again, or ends inside): tunnelling through a thin obstacle is caught
/// although both ends are outside.
///
/// On a convex solid the depth is that of the chord's deepest point. A vertex sliding on a
/// curved surface at zero clearance moves along a chord that dips in by `L²/8R` (4e-10 m for a
/// 21 µm step on a 0.15 m sphere), but the whole chord lies in the solid: measured by its
/// length, such a step read as a crossing and sent a cloth draped on a sphere to the fallback.
/// Other solids keep the chord's length (a chord of a non-convex one may leave and re-enter).
/// `step_check.wgsl` is the GPU's twin.
pub(crate) fn obstacle_crossed(o: &Obstacle, a: DVec3, b: DVec3, tolerance: f64) -> bool {
    let (a32, b32) = (Vec3A::from(a.as_vec3()), Vec3A::from(b.as_vec3()));
    if (o.signed_distance(b32).0 as f64) < -tolerance {
        return true;
    }
    let (Some(enter), Some(exit_back)) = (o.first_entry(a32, b32), o.first_entry(b32, a32)) else {
        return false;
    };
    let (t0, t1) = (enter as f64, 1.0 - exit_back as f64);
    if o.is_convex() { chord_depth(o, a, b, t0, t1) > tolerance } else { (t1 - t0) * (b - a).length() > tolerance }
}

/// Ternary-search steps for the deepest point of a chord (the interval shrinks to (2/3)^32 ≈ 2e-6
/// of the chord).
pub(crate) const CHORD_SEARCH_STEPS: u32 = 32;

/// Depth of the deepest point of `a + t (b − a)`, `t ∈ [t0, t1]`, in a convex solid \[m\]: the
/// depth is concave along a line through a convex solid, so a ternary search finds it.
fn chord_depth(o: &Obstacle, a: DVec3, b: DVec3, mut t0: f64, mut t1: f64) -> f64 {
    let depth = |t: f64| -(o.signed_distance(Vec3A::from((a + (b - a) * t).as_vec3())).0 as f64);
    for _ in 0..CHORD_SEARCH_STEPS {
        let (m0, m1) = (t0 + (t1 - t0) / 3.0, t1 - (t1 - t0) / 3.0);
        if depth(m0) < depth(m1) {
            t0 = m0;
        } else {
            t1 = m1;
        }
    }
    depth(0.5 * (t0 + t1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::surface_pairs::{PAIR_EDGE_EDGE, PAIR_POINT_TRIANGLE};

    #[test]
    fn obstacle_march_stops_before_the_ground_and_sees_tunnelling() {
        let ground = Obstacle::ground(0.0, 0.5);
        let (a, b) = (DVec3::new(0.0, 1.0, 0.0), DVec3::new(0.3, -1.0, 0.0));
        let t = obstacle_toi(&ground, a, b, 1e-5, 0.1).expect("crosses");
        assert!(t > 0.0 && t < 0.5, "{t}");
        assert!((a + (b - a) * t).y > 1e-5);
        assert_eq!(obstacle_toi(&ground, a, DVec3::new(0.0, 0.5, 0.0), 1e-5, 0.1), None);
        // Straight down at it: the first advance keeps a tenth of the gap, and is taken.
        let t = obstacle_toi(&ground, a, DVec3::new(0.0, -1.0, 0.0), 1e-5, 0.1).expect("crosses");
        assert!((t - 0.45).abs() < 1e-3, "{t}");
        // On the surface: sliding along it or leaving is free, entering is not.
        let on = DVec3::new(0.0, 0.0, 0.0);
        assert_eq!(obstacle_toi(&ground, on, DVec3::new(0.5, 0.0, 0.0), 1e-5, 0.1), None);
        assert_eq!(obstacle_toi(&ground, on, DVec3::new(0.5, 0.2, 0.0), 1e-5, 0.1), None);
        assert_eq!(obstacle_toi(&ground, on, DVec3::new(0.5, -0.2, 0.0), 1e-5, 0.1), Some(0.0));
        // A thin slab: both ends outside, the path runs through it.
        let slab =
            Obstacle::cuboid(glam::Vec3::ZERO, glam::Vec3::new(1.0, 0.01, 1.0), glam::Quat::IDENTITY, 0.5).unwrap();
        assert!(obstacle_crossed(&slab, DVec3::new(0.0, 0.5, 0.0), DVec3::new(0.0, -0.5, 0.0), 1e-6));
        // A vertex sliding 21 µm on a 0.15 m sphere at zero clearance: its chord lies in the
        // solid (by its length it crossed) but dips 4e-10 m; a chord 9 mm deep, or a path
        // through the middle, crosses.
        let ball = Obstacle::sphere(glam::Vec3::ZERO, 0.15, 0.3).unwrap();
        // (Ends 0.15 µm out, so that both ends are outside after rounding to f32.)
        let on = |angle: f64| DVec3::new(angle.sin(), angle.cos(), 0.0) * 0.15 * (1.0 + 1e-6);
        let (from, to) = (DVec3::new(-1.05e-5, 0.15f32 as f64, 0.0), DVec3::new(1.05e-5, 0.15f32 as f64, 0.0));
        let chord = |p: DVec3, q: DVec3| ball.first_entry(p.as_vec3().into(), q.as_vec3().into());
        assert!(chord(from, to).is_some() && chord(to, from).is_some(), "the chord is in the solid");
        assert!(!obstacle_crossed(&ball, from, to, 1e-5));
        assert!(obstacle_crossed(&ball, on(0.3), on(1.0), 1e-5), "a chord {} m deep", 0.15 * (1.0 - 0.35f64.cos()));
        assert!(obstacle_crossed(&ball, DVec3::new(-0.2, 0.0, 0.0), DVec3::new(0.2, 0.0, 0.0), 1e-5));
        // A box's edge cut 1 cm deep (depth along the chord peaks at the corner, not its middle).
        let block = Obstacle::cuboid(glam::Vec3::ZERO, glam::Vec3::splat(0.1), glam::Quat::IDENTITY, 0.5).unwrap();
        assert!(obstacle_crossed(&block, DVec3::new(0.05, 0.11, 0.0), DVec3::new(0.11, 0.05, 0.0), 1e-5));
        assert!(!obstacle_crossed(&block, DVec3::new(0.05, 0.1, 0.0), DVec3::new(0.09, 0.1, 0.0), 1e-5));
        assert!(!obstacle_crossed(&slab, DVec3::new(0.0, 0.5, 0.0), DVec3::new(0.0, 0.01, 0.0), 1e-6));
        assert!(!obstacle_crossed(&slab, DVec3::new(0.0, 0.5, 0.0), DVec3::new(3.0, -0.5, 0.0), 1e-6));
    }

    /// A cloth edge dropped across a box's rim with both ends clear of it stops before the
    /// rim; one that slides along the top face, one end on it, or turns about the rim it
    /// touches is not stopped; one that swings down through the rim is.
    #[test]
    fn an_edge_stops_at_a_box_rim_between_its_vertices() {
        let block = Obstacle::cuboid(glam::Vec3::ZERO, glam::Vec3::splat(0.1), glam::Quat::IDENTITY, 0.5).unwrap();
        let xi = 1e-6;
        let closest =
            |a: DVec3, b: DVec3| block.segment_closest(a.as_vec3().into(), b.as_vec3().into()).distance as f64;
        // Over the rim at x = y = 0.1, 5 mm up, falling 1 cm.
        let from = [DVec3::new(0.09, 0.115, 0.0), DVec3::new(0.11, 0.085, 0.0)].map(|p| p + DVec3::Y * 0.005);
        let fall = DVec3::Y * -0.01;
        let to = from.map(|p| p + fall);
        assert!(closest(to[0], to[1]) < 0.0 && block.signed_distance(to[1].as_vec3().into()).0 > 0.0);
        let t = edge_obstacle_toi(&block, from, to, xi, 0.1).0.expect("the rim is hit");
        assert!(t > 0.0 && t < 1.0);
        assert!(closest(from[0] + fall * t, from[1] + fall * t) > xi, "stopped short of the rim");
        // Along the top face, one end on it (to the bit: the top is at 0.1 in f32 too).
        let on = [DVec3::new(0.0, 0.1, 0.0), DVec3::new(0.01, 0.1005, 0.0)];
        let slide = DVec3::new(0.03, 0.0, 0.02);
        assert_eq!(edge_obstacle_toi(&block, on, on.map(|p| p + slide), xi, 0.1).0, None);
        // Touching the rim 0.5 µm up, turned 10° about it: not stopped; swung down through
        // it about its outer end: stopped at once.
        let rim = DVec3::new(0.1, 0.1, 0.0);
        let dir = DVec3::new(1.0, -1.0, 0.0).normalize();
        let n = DVec3::new(1.0, 1.0, 0.0).normalize();
        let touch = [rim + n * 5e-7 - dir * 0.005, rim + n * 5e-7 + dir * 0.012];
        let turn = glam::DQuat::from_rotation_z(-10f64.to_radians());
        let turned = touch.map(|p| rim + n * 5e-7 + turn * (p - rim - n * 5e-7));
        assert!(closest(turned[0], turned[1]) > 0.0);
        assert_eq!(edge_obstacle_toi(&block, touch, turned, xi, 0.1).0, None);
        let swung = [touch[0] - n * 0.003, touch[1]];
        let t = edge_obstacle_toi(&block, touch, swung, xi, 0.1).0.expect("through the rim");
        assert!(t < 1e-3, "{t}");
        // An edge already 1 µm into the rim may leave, not go deeper.
        let inside = touch.map(|p| p - n * 1.5e-6);
        assert_eq!(edge_obstacle_toi(&block, inside, inside.map(|p| p + n * 1e-3), xi, 0.1).0, None);
        assert_eq!(edge_obstacle_toi(&block, inside, inside.map(|p| p - n * 1e-4), xi, 0.1).0, Some(0.0));
    }

    /// Two soft boxes 1 cm apart; the upper moves by `shift` (each vertex jittered by up to
    /// `jitter`), the lower by its jitter only.
    fn two_boxes(shift: DVec3, jitter: f64) -> (SimState, Vec<DVec3>, Vec<DVec3>) {
        use crate::prelude::*;
        let mut world = World::new(StepConfig::default()).expect("world");
        for (k, y) in [0.05f32, 0.16].into_iter().enumerate() {
            let mesh = TetMesh::box_mesh(glam::Vec3::splat(0.1), [6, 6, 6], TetSplit::Six).expect("mesh");
            let body = SoftBodyBuilder::tetrahedral(mesh).translation(glam::Vec3::new(0.01 * k as f32, y, 0.0));
            world.bodies.insert(body.build().expect("body"));
        }
        world.sync();
        let st = world.state().clone();
        let mut rng = crate::test_rng::Rng(7);
        let x: Vec<DVec3> = st.positions.iter().map(|p| p.truncate().as_dvec3()).collect();
        let y = x
            .iter()
            .zip(&st.vertex_body)
            .map(|(p, &b)| *p + if b == 1 { shift } else { DVec3::ZERO } + rng.vec() * jitter)
            .collect();
        (st, x, y)
    }

    /// Every pair `visit` reports, as a set of keys with each primitive's vertices sorted.
    fn reported(swept: &mut SweptPairs, st: &SimState, x: &[DVec3], y: &[DVec3], r: f64) -> Vec<[u32; 4]> {
        let moves = vec![true; st.vertex_count()];
        let mut out = Vec::new();
        swept.visit(st, &[], (x, y), (&moves, true), r, |k| out.push(sorted(k.kind, k.vertices)), |_, _| {}, |_, _| {});
        out.sort_unstable();
        out
    }

    fn sorted(kind: u32, v: [u32; 4]) -> [u32; 4] {
        let mut v = v;
        if kind == PAIR_POINT_TRIANGLE {
            v[1..].sort_unstable();
        } else {
            v[..2].sort_unstable();
            v[2..].sort_unstable();
            if v[2..] < v[..2] {
                v = [v[2], v[3], v[0], v[1]];
            }
        }
        v
    }

    /// The swept search misses no pair that comes within its radius, between the bodies or
    /// within one (each body's own pairs are swept in the frame of its mean motion), and a
    /// body that only translates sweeps no more pairs with itself than one standing still.
    #[test]
    fn swept_pairs_find_every_close_pair_and_ignore_translation() {
        use crate::math::distance::{edge_edge, point_triangle};
        // Wide enough for pairs of a box with itself (its cells are 1.7 cm).
        let r = 0.015;
        let (st, x, y) = two_boxes(DVec3::new(0.004, -0.03, 0.002), 0.012);
        let found = reported(&mut SweptPairs::default(), &st, &x, &y, r);
        let mut checked = (0, 0);
        let at = |v: u32, s: f64| x[v as usize] + (y[v as usize] - x[v as usize]) * s;
        let mut close = |kind: u32, v: [u32; 4]| {
            let d = |s: f64| {
                let p = v.map(|i| at(i, s));
                if kind == PAIR_POINT_TRIANGLE {
                    point_triangle::<f64>(p[0], p[1], p[2], p[3]).distance
                } else {
                    edge_edge::<f64>(p[0], p[1], p[2], p[3]).distance
                }
            };
            if (0..=16).any(|k| d(k as f64 / 16.0) < r) {
                let own = v.iter().all(|&i| st.vertex_body[i as usize] == st.vertex_body[v[0] as usize]);
                if own {
                    checked.0 += 1
                } else {
                    checked.1 += 1
                }
                assert!(found.binary_search(&sorted(kind, v)).is_ok(), "missed {kind} {v:?}");
            }
        };
        for &p in &st.surface_vertices {
            for t in &st.surface_triangles {
                if !t.contains(&p) {
                    close(PAIR_POINT_TRIANGLE, [p, t[0], t[1], t[2]]);
                }
            }
        }
        for (i, a) in st.surface_edges.iter().enumerate() {
            for b in &st.surface_edges[i + 1..] {
                if !a.iter().any(|v| b.contains(v)) {
                    close(PAIR_EDGE_EDGE, [a[0], a[1], b[0], b[1]]);
                }
            }
        }
        assert!(checked.0 > 0 && checked.1 > 0, "the scene has close pairs of both kinds: {checked:?}");
        // Translation: the upper box's own pairs are those of a box standing still (both
        // jittered by the same micrometre, so that neither merely translates), and none at
        // all for a box that only translates.
        let own_pairs = |shift: DVec3, jitter: f64| {
            let (st, x, y) = two_boxes(shift, jitter);
            let pairs = reported(&mut SweptPairs::default(), &st, &x, &y, r);
            pairs.iter().filter(|k| k.iter().all(|&v| st.vertex_body[v as usize] == 1)).count()
        };
        let flight = DVec3::new(0.3, 0.5, -0.2);
        let (still, flying) = (own_pairs(DVec3::ZERO, 1e-6), own_pairs(flight, 1e-6));
        // (Equal but for the f32 rounding of the shifted boxes, which are grown by 1e-5 m.)
        assert!(still > 0 && flying <= still + still / 20, "standing {still}, flying {flying}");
        assert_eq!(own_pairs(flight, 0.0), 0, "a body that only translates has no pairs with itself searched");
    }

    /// A body whose certificate proves it keeps apart from itself (by the caller's floor) has
    /// no pairs with itself searched; one that deforms past what the certificate allows has.
    #[test]
    fn a_certified_body_is_not_searched_for_pairs_with_itself() {
        let r = 0.015;
        let own = |shift: DVec3, jitter: f64, floor: f32| {
            let (st, x, y) = two_boxes(shift, jitter);
            let mut certificate = SelfClearance::default();
            certificate.resize(&st);
            // Every surface vertex 2 cm from the rest of its body at the start (the boxes'
            // cells are 1.7 cm: a claim, not a measurement; this test is about the skip).
            certificate.vertex.iter_mut().for_each(|c| *c = 0.02f32.to_bits());
            let start: Vec<Vec4> = x.iter().map(|p| p.as_vec3().extend(0.0)).collect();
            for b in 0..st.bodies.len() {
                certificate.record(&st, b, &start, false);
            }
            let mut swept = SweptPairs::default();
            swept.set_self_certificate(Some(certificate), floor);
            let pairs = reported(&mut swept, &st, &x, &y, r);
            pairs
                .iter()
                .filter(|k| k.iter().all(|&v| st.vertex_body[v as usize] == st.vertex_body[k[0] as usize]))
                .count()
        };
        let flight = DVec3::new(0.3, 0.5, -0.2);
        // Jittered by a micrometre: a body that only translates is not searched at all.
        assert_eq!(own(flight, 1e-6, 0.0), 0, "a body deforming within its clearance is certified");
        assert!(own(flight, 1e-6, 0.025) > 0, "not above a floor beyond its clearance");
        assert!(own(flight, 0.012, 0.0) > 0, "not once it deforms by more than its clearance allows");
    }

    #[test]
    fn orientation_flips_when_a_point_passes_a_triangle() {
        let tri = [DVec3::ZERO, DVec3::X, DVec3::Y];
        let above = orientation(&[DVec3::new(0.2, 0.2, 1.0), tri[0], tri[1], tri[2]]);
        let below = orientation(&[DVec3::new(0.2, 0.2, -1.0), tri[0], tri[1], tri[2]]);
        assert_eq!(above, -below);
        assert_ne!(above, 0.0);
    }
}
