//! The safety check after the fast path (docs/algorithms.md §8, `ARCHITECTURE.md`, "The fallback"): per
//! body, whether the step's result may be kept. Hard failures send the body's island to the
//! fallback at once; soft ones count towards it (three in five frames).

pub mod energy;

use glam::{DVec3, Vec3A, Vec4};

use crate::collision::Obstacle;
use crate::collision::ccd::{CcdParams, edge_edge_toi, point_triangle_toi};
use crate::collision::surface_pairs::PAIR_POINT_TRIANGLE;
use crate::collision::swept::{SweptPairs, obstacle_crossed, orientation, pair_motion};
use crate::solver::fast_path::FastResult;
use crate::state::SimState;

/// Why an island's fast-path step was not kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(rename_all = "snake_case"))]
pub enum FallbackReason {
    /// A position or velocity was NaN or infinite.
    NonFinite,
    /// Continuous collision detection over `x^t → x^{t+1}` found two surface primitives passing
    /// through each other, or a vertex through an obstacle.
    Crossing,
    /// A tet's volume ratio `J` fell to 0.05 or below.
    Inversion,
    /// A vertex was faster than 50 m/s, or than half its island's size per step, at the
    /// step's start or end.
    Speed,
    /// Soft: kinetic + elastic + gravitational + contact energy grew, in a step with no work
    /// done by pins or moving colliders, by more than 5 % of the island's energy scale
    /// (kinetic + elastic energy + weight × island height) plus 1 mJ (three soft flags in five
    /// frames fall back).
    EnergyGain,
    /// The sweeps ended with a larger force residual than their first sweep left: hard with
    /// more than 100 times the body's weight (diverged); soft with more than a quarter of it
    /// unbalanced (no progress) on cloth and on bodies touching one 1,000 times stiffer or
    /// softer, or 100 times heavier or lighter per vertex, where stalled sweeps cannot carry the
    /// load across.
    ResidualGrowth,
    /// Soft: more than a fifth of the island's surface vertices ended held by their
    /// displacement bound.
    ClampLock,
    /// The island fell back recently and stays on the fallback for a while (hysteresis).
    Hold,
    /// `FallbackPolicy::Always`.
    Always,
}

impl FallbackReason {
    /// Whether the reason can send an island to the fallback on its own (a residual growth
    /// can be either; see the variant).
    pub fn is_hard(self) -> bool {
        !matches!(self, Self::EnergyGain | Self::ClampLock)
    }
}

/// Volume ratio at or below which a tet counts as inverted (docs/algorithms.md §8).
pub const INVERSION_J: f32 = 0.05;

/// Depth \[m\] past which a surface edge inside an obstacle at the end of a fast step is a
/// crossing (a vertex's path gets the same tolerance).
pub(crate) const EDGE_CROSSING_DEPTH: f32 = 1e-5;
/// Largest speed any vertex may reach \[m/s\].
pub const MAX_SPEED: f32 = 50.0;
/// Share of the weight a body carries that, left unbalanced by sweeps that made no progress,
/// raises a soft flag. The weight is the heaviest of the body's own and those of the bodies it
/// touches: a light cloth lying on a soft cube (0.7 N on 78 N) exchanges contact forces of 3–10
/// N with it from sweep to sweep while both settle on the fast path, but one under a steel block
/// (0.3 N under 77 N) that cannot hold it is left with 70–90 N unbalanced.
pub const RESIDUAL_WEIGHT_SHARE: f64 = 0.25;
/// A residual that grew to this many times the body's weight is a hard failure (the sweeps
/// diverged), not a soft flag.
pub const DIVERGED_WEIGHTS: f64 = 100.0;
/// The residual rule takes a body's weight under at least this gravity \[m/s²\]: without
/// gravity the weight is no scale for the forces a step leaves (a spun 8 kg cube's elements carry
/// 80 N of centripetal force), and the rule's 1 mN floor flagged its first step as diverged.
pub const MIN_WEIGHT_GRAVITY: f64 = 1.0;
/// Ratio of shear moduli between two tet bodies in contact beyond which the fast path's
/// per-vertex sweeps cannot carry the force across (docs/algorithms.md §8's stiffness ratios): there
/// the sweeps stall for good (a 1e9 Pa block on a 1e4 Pa sheet ends each step 1.0–1.3× above
/// its first sweep's residual), so any growth of the residual is a soft flag, as on cloth
/// (stacked cloth layers sink closer than half the contact offset).
///
/// Between bodies alike the residual's growth says little: sweeps on a pile of soft bodies,
/// each carrying the ones above, end 1.0–3.5× above their first with up to three body weights
/// unbalanced, from one step to the next, while the pile comes to rest on the fast path with no
/// crossing (three 0.1 m cubes of 1e5 Pa stacked: kinetic energy 5e-7 J after 3 s); flagging
/// it sent such a stack to the fallback in 83 of 90 frames at 15× the cost. Crossings,
/// inversion, speed and the energy test guard them.
pub const STIFFNESS_CONTRAST: f64 = 1e3;
/// Ratio of mean vertex masses between two bodies in contact beyond which the sweeps cannot
/// carry the heavy one's load across (a dense block on a light sheet of the same stiffness):
/// any growth of either's residual counts, as for [`STIFFNESS_CONTRAST`]. Vertex mass follows
/// the mesh too: two alike cubes meshed 2³ and 20³ cells apart differ 343× and count as
/// contrasting (their sweeps are then held to the stricter rule, not exempted).
pub const MASS_CONTRAST: f64 = 1e2;
/// Energy gain, as a share of the island's energy scale, that raises a soft flag.
pub(crate) const ENERGY_GAIN: f64 = 0.05;
/// Energy gain \[J\] below which no step is suspect, whatever its island's scale.
pub(crate) const ENERGY_FLOOR: f64 = 1e-3;
/// Soft flags within the last [`SOFT_WINDOW`] substeps that send an island to the fallback.
pub(crate) const SOFT_LIMIT: u32 = 3;
/// Substeps over which soft flags are counted.
pub(crate) const SOFT_WINDOW: u32 = 5;
/// Share of an island's surface vertices that may end clamped.
pub const CLAMP_LOCK_SHARE: f32 = 0.2;

/// Per body: the first hard failure and the first soft flag.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct BodyVerdict {
    pub hard: Option<FallbackReason>,
    pub soft: Option<FallbackReason>,
    /// Surface vertices, and those that ended clamped.
    pub surface_vertices: u32,
    pub clamped: u32,
}

/// The check's buffers, kept between steps (its per-vertex arrays are not reallocated on the
/// step's path).
#[derive(Debug, Default)]
pub(crate) struct CheckScratch {
    swept: SweptPairs,
    x: Vec<DVec3>,
    y: Vec<DVec3>,
    moves: Vec<bool>,
    residuals: Vec<(f64, f64)>,
    weight: Vec<f64>,
    /// Per body: the heaviest weight among its own and the bodies it touches \[N\].
    carried: Vec<f64>,
    /// Per body: the largest shear modulus of its tets (0 for cloth).
    shear: Vec<f64>,
    /// Per body: its mean vertex mass \[kg\].
    vertex_mass: Vec<f64>,
    /// Per body: any growth of its residual counts as a stall.
    strict: Vec<bool>,
}

/// What the check reads.
pub(crate) struct CheckInput<'a> {
    /// The state after the fast path.
    pub st: &'a SimState,
    /// Positions `x^t` before it.
    pub start: &'a [Vec4],
    pub obstacles: &'a [Obstacle],
    pub fast: &'a dyn FastResult,
    /// `|g|` \[m/s²\].
    pub gravity: f32,
    /// The fast path bounded every surface vertex's motion by its contact pairs (VBD with
    /// surface contact on): surface pairs are certified and their CCD is skipped (docs/algorithms.md §8:
    /// "skipped for clamp-certified vertex sets"). Vertex–obstacle paths are always checked.
    pub surface_certified: bool,
}

/// Checks every body; `out[b]` gets body `b`'s verdict (the speed and energy checks need the
/// island and are made by the caller).
pub(crate) fn check_bodies(c: &CheckInput<'_>, scratch: &mut CheckScratch, out: &mut Vec<BodyVerdict>) {
    let st = c.st;
    out.clear();
    out.resize(st.bodies.len(), BodyVerdict::default());
    let hard = |out: &mut Vec<BodyVerdict>, b: u32, r: FallbackReason| {
        let v = &mut out[b as usize];
        v.hard = v.hard.or(Some(r));
    };
    for (i, (x, v)) in st.positions.iter().zip(&st.velocities).enumerate() {
        if !(x.is_finite() && v.is_finite()) {
            hard(out, st.vertex_body[i], FallbackReason::NonFinite);
        }
    }
    let CheckScratch { swept, x, y, moves, residuals, weight, carried, shear, vertex_mass, strict } = scratch;
    shear.clear();
    shear.resize(st.bodies.len(), 0.0);
    for t in &st.tets {
        let b = st.vertex_body[t.vertices[0] as usize] as usize;
        shear[b] = shear[b].max(st.materials[t.material as usize].mu as f64);
        let x = t.vertices.map(|i| Vec3A::from_vec4(st.positions[i as usize]));
        let f = crate::material::tet::deformation_gradient::<f32>(&x, &t.dm_inv());
        if !(f.determinant() > INVERSION_J) {
            hard(out, st.vertex_body[t.vertices[0] as usize], FallbackReason::Inversion);
        }
    }
    for &v in &st.surface_vertices {
        let b = st.vertex_body[v as usize] as usize;
        out[b].surface_vertices += 1;
        if c.fast.clamped(v as usize) {
            out[b].clamped += 1;
        }
    }
    c.fast.body_residuals(st, residuals);
    vertex_mass.clear();
    vertex_mass.extend((0..st.bodies.len()).map(|b| mean_vertex_mass(st, b)));
    weight.clear();
    weight.resize(st.bodies.len(), 0.0);
    for (&m, &b) in st.masses.iter().zip(&st.vertex_body) {
        weight[b as usize] += m as f64 * (c.gravity as f64).max(MIN_WEIGHT_GRAVITY);
    }
    let bodies = BodyConstants { shear, vertex_mass, weight };
    read_contacts(st, &bodies, c.fast.contact_pairs(), strict, carried);
    for (b, v) in out.iter_mut().enumerate() {
        if v.clamped as f32 > CLAMP_LOCK_SHARE * v.surface_vertices as f32 {
            v.soft = v.soft.or(Some(FallbackReason::ClampLock));
        }
        let (first, last) = residuals[b];
        match residual_verdict(first, last, weight[b], carried[b], strict[b]) {
            Some(ResidualVerdict::Diverged) => v.hard = v.hard.or(Some(FallbackReason::ResidualGrowth)),
            Some(ResidualVerdict::Stalled) => v.soft = v.soft.or(Some(FallbackReason::ResidualGrowth)),
            None => {}
        }
    }
    // Continuous collision detection over the step, only where bodies are finite.
    let finite = out.iter().all(|v| v.hard != Some(FallbackReason::NonFinite));
    if finite {
        x.clear();
        x.extend(c.start.iter().map(|p| p.truncate().as_dvec3()));
        y.clear();
        y.extend(st.positions.iter().map(|p| p.truncate().as_dvec3()));
        moves.clear();
        moves.extend(x.iter().zip(y.iter()).map(|(a, b)| a != b));
        let (x, y): (&[DVec3], &[DVec3]) = (x, y);
        let mut crossings: Vec<u32> = Vec::new();
        let mut through_obstacle: Vec<u32> = Vec::new();
        let mut edge_inside: Vec<u32> = Vec::new();
        // ξ far below the fast path's, no early stop: the march runs until the pair is proven
        // apart over the whole step or reaches contact; a reached contact counts only if the
        // pair's orientation flipped (it went through), so pairs sliding in resting contact,
        // which the march cannot clear, are not flagged.
        let params = CcdParams::<f64> { min_separation: 1e-8, safety: 0.0, max_iterations: 64 };
        swept.visit(
            st,
            c.obstacles,
            (x, y),
            (moves, !c.surface_certified),
            0.0,
            |key| {
                let (p, dp) = pair_motion(&key, x, y);
                let toi = if key.kind == PAIR_POINT_TRIANGLE {
                    point_triangle_toi::<f64>(&p, &dp, &params, 1.0)
                } else {
                    edge_edge_toi::<f64>(&p, &dp, &params, 1.0)
                };
                if toi.is_some() {
                    let end: [DVec3; 4] = std::array::from_fn(|k| p[k] + dp[k]);
                    if orientation(&p) != orientation(&end) {
                        crossings.push(st.vertex_body[key.vertices[0] as usize]);
                        crossings.push(st.vertex_body[key.vertices[3] as usize]);
                    }
                }
            },
            |v, k| {
                let o = &c.obstacles[k as usize];
                // A moving collider is checked at the step's end only (its sweep is the
                // contact model's business).
                let through = if o.moves() {
                    o.signed_distance(Vec3A::from_vec4(st.positions[v as usize])).0 < -1e-5
                } else {
                    obstacle_crossed(o, x[v as usize], y[v as usize], 1e-5)
                };
                if through {
                    through_obstacle.push(st.vertex_body[v as usize]);
                }
            },
            |e, k| {
                // An obstacle's edge, corner or cap between a surface edge's vertices (the fast
                // path's span contacts hold free vertices, not a pinned one that drags its
                // edges over a rim): the step's end only; an end inside is the vertex's.
                let [a, b] = st.surface_edges[e as usize];
                let (pa, pb) = (Vec3A::from_vec4(st.positions[a as usize]), Vec3A::from_vec4(st.positions[b as usize]));
                if c.obstacles[k as usize].edge_depth(pa, pb).is_some_and(|d| d > EDGE_CROSSING_DEPTH) {
                    edge_inside.push(st.vertex_body[a as usize]);
                }
            },
        );
        for b in crossings.into_iter().chain(through_obstacle).chain(edge_inside) {
            hard(out, b, FallbackReason::Crossing);
        }
    }
}

/// What a body's residuals say about its sweeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResidualVerdict {
    /// The force grew past [`DIVERGED_WEIGHTS`] times the body's weight: hard.
    Diverged,
    /// No progress on a force that matters: soft.
    Stalled,
}

/// The residual rule of the check, on the CPU and (as its oracle) the GPU's `step_soft`:
/// `first` and `last` are the body's squared force residuals after its first and last sweep
/// \[N²\], `weight` its weight and `carried` the heaviest weight among its own and its
/// neighbours' \[N\] (see [`RESIDUAL_WEIGHT_SHARE`]), `strict` whether a growth counts as a
/// stall (cloth, and contrasting bodies in contact: see [`STIFFNESS_CONTRAST`]).
pub(crate) fn residual_verdict(
    first: f64,
    last: f64,
    weight: f64,
    carried: f64,
    strict: bool,
) -> Option<ResidualVerdict> {
    let w = weight.max(1e-3);
    if last > first && last.sqrt() > DIVERGED_WEIGHTS * w {
        // Not a stall but a blow-up: the force grew past a hundred times the body's weight.
        Some(ResidualVerdict::Diverged)
    } else if strict && last > first && last.sqrt() > RESIDUAL_WEIGHT_SHARE * carried.max(w) {
        // No progress on a force that matters: the sweeps ended with more force than the
        // first left (residuals are squared here), with more than RESIDUAL_WEIGHT_SHARE of the
        // weight the body carries unbalanced.
        Some(ResidualVerdict::Stalled)
    } else {
        None
    }
}

/// Body `b`'s mean vertex mass \[kg\] (what [`contrasting`] compares; the GPU's
/// `step_soft::body_constants` carries it).
pub(crate) fn mean_vertex_mass(st: &SimState, b: usize) -> f64 {
    let r = &st.bodies[b];
    let range = r.vertex_start as usize..(r.vertex_start + r.vertex_count) as usize;
    st.masses[range].iter().map(|&m| m as f64).sum::<f64>() / r.vertex_count.max(1) as f64
}

/// Whether two bodies, each given as its largest tet shear modulus (0: no tets) and its mean
/// vertex mass, differ in stiffness by more than [`STIFFNESS_CONTRAST`] (both with tets) or in
/// vertex mass by more than [`MASS_CONTRAST`] (on the GPU: `step_soft`'s pair phase).
pub(crate) fn contrasting(a: [f64; 2], b: [f64; 2]) -> bool {
    let beyond = |x: f64, y: f64, ratio: f64| x > 0.0 && y > 0.0 && x.max(y) > ratio * x.min(y);
    beyond(a[0], b[0], STIFFNESS_CONTRAST) || beyond(a[1], b[1], MASS_CONTRAST)
}

/// What the residual rule reads of each body: its largest tet shear modulus (0 without tets),
/// its mean vertex mass and its weight.
struct BodyConstants<'a> {
    shear: &'a [f64],
    vertex_mass: &'a [f64],
    weight: &'a [f64],
}

/// One pass over the step's contact pairs, as the GPU's `step_soft` pair phase makes it. Per
/// body, into `strict`: whether a growth of its residual counts as a stall (it has no tets, i.e.
/// cloth, or it touches a body [`contrasting`] with it); into `carried`: the heaviest weight
/// among its own and those of the bodies it touches.
fn read_contacts(
    st: &SimState,
    bodies: &BodyConstants<'_>,
    pairs: &[crate::collision::surface_pairs::ContactPair],
    strict: &mut Vec<bool>,
    carried: &mut Vec<f64>,
) {
    let BodyConstants { shear, vertex_mass, weight } = bodies;
    strict.clear();
    strict.extend(shear.iter().map(|&s| s == 0.0));
    carried.clear();
    carried.extend_from_slice(weight);
    for p in pairs {
        let (a, b) = (st.vertex_body[p.vertices[0] as usize] as usize, st.vertex_body[p.vertices[3] as usize] as usize);
        carried[a] = carried[a].max(weight[b]);
        carried[b] = carried[b].max(weight[a]);
        if a != b && contrasting([shear[a], vertex_mass[a]], [shear[b], vertex_mass[b]]) {
            strict[a] = true;
            strict[b] = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cloth and contrasting bodies stall on any growth past a quarter weight; bodies alike
    /// only diverge (a hundred weights), whatever their growth.
    #[test]
    fn the_residual_rule_flags_growth_only_where_it_means_a_stall() {
        let w = 10.0;
        let sq = |x: f64| x * x;
        assert_eq!(residual_verdict(sq(3.0), sq(3.1), w, w, true), Some(ResidualVerdict::Stalled));
        assert_eq!(residual_verdict(sq(3.0), sq(2.9), w, w, true), None);
        assert_eq!(residual_verdict(sq(1.0), sq(2.0), w, w, true), None, "below a quarter weight");
        assert_eq!(residual_verdict(sq(10.0), sq(35.0), w, w, false), None, "a pile's 3.5x growth");
        assert_eq!(residual_verdict(sq(10.0), sq(1001.0), w, w, false), Some(ResidualVerdict::Diverged));
        assert_eq!(residual_verdict(sq(10.0), sq(1001.0), w, w, true), Some(ResidualVerdict::Diverged));
        // A 0.7 N cloth on a 78 N cube: 10 N of exchange is below a quarter of what it touches;
        // a 0.3 N cloth under a 77 N block left with 25 N is not (past 30 N it has diverged).
        assert_eq!(residual_verdict(sq(6.6), sq(8.8), 0.7, 78.5, true), None);
        assert_eq!(residual_verdict(sq(20.0), sq(25.0), 0.3, 76.5, true), Some(ResidualVerdict::Stalled));
        // The divergence test keeps the body's own weight.
        assert_eq!(residual_verdict(sq(1.0), sq(71.0), 0.7, 78.5, true), Some(ResidualVerdict::Diverged));
    }

    #[test]
    fn contrast_is_in_stiffness_between_tet_bodies_or_in_vertex_mass() {
        assert!(contrasting([4e8, 0.1], [4e4, 0.1]));
        assert!(!contrasting([4e6, 0.1], [4e4, 0.1]));
        assert!(!contrasting([0.0, 0.1], [4e8, 0.1]), "cloth has no shear modulus to compare");
        assert!(contrasting([4e4, 0.12], [4e4, 1e-3]), "120x heavier per vertex");
        assert!(!contrasting([4e4, 0.05], [4e4, 1e-3]));
        assert!(contrasting([0.0, 1e-5], [1e11, 0.03]), "a steel block's vertices on a cloth's");
    }
}
