//! The active set of the augmented-Lagrangian step ([ALPF] §4, Alg. 2–3; docs/algorithms.md §4.1–4.4):
//! contact pairs found by CCD, each with a multiplier `λ ≥ 0` and a decay factor `γ`, its
//! distance linearised at the last intersection-free iterate, and IPC's lagged friction. Pairs
//! are the surfaces' vertex–triangle and edge–edge pairs, vertices against obstacles, and
//! surface edges against obstacles with edges or curved faces (the edge's closest point, whose
//! weights `1 − t` and `t` share its gradient and its friction between the two ends).
//!
//! A pair's constraint is `c(x̂) = d(x) + ∇d(x)·(x̂ − x) − δ` with `x` the safe iterate: a signed
//! plane that stays correctly oriented after the solver's target `x̂` passes through, so no
//! barrier is needed. Its term in the Lagrangian is `γ (μ/2 (c − s)² − λ (c − s))` with the slack
//! `s = max(0, c − λ/μ)`; gradient `μγ (c − λ/μ − s) ∇c`, Hessian `μγ ∇c ∇cᵀ`.

use std::collections::HashMap;

use glam::{DMat3, DVec3, Vec3A};

use crate::collision::surface_pairs::PAIR_POINT_TRIANGLE;
use crate::collision::swept::{PAIR_OBSTACLE, PAIR_OBSTACLE_EDGE, PairKey};
use crate::collision::{Obstacle, friction_f0, friction_f1_over_u};
use crate::math::distance::{edge_edge, point_triangle};
use crate::state::SimState;

use crate::solver::al::problem::NO_DOF;

/// Decay of an inactive pair's weight per dual update (\[ALPF\]: Γ = 0.9).
pub(crate) const DECAY: f64 = 0.9;
/// Pairs whose weight fell below this leave the set (≈ 44 inactive updates).
pub(crate) const DROP_WEIGHT: f64 = 0.01;

/// One pair of the active set.
#[derive(Clone, Debug)]
pub(crate) struct Constraint {
    pub key: PairKey,
    /// Multiplier λ ≥ 0 \[N\].
    pub lambda: f64,
    /// Weight γ ∈ (0, 1].
    pub gamma: f64,
    /// Distance at the safe iterate \[m\].
    pub distance: f64,
    /// `∂d/∂x_k` at the safe iterate.
    pub grad: [DVec3; 4],
    /// Positions of the safe iterate.
    pub base: [DVec3; 4],
    /// Coulomb coefficient.
    pub friction: f64,
    /// Lagged normal force Λ \[N\].
    pub normal_force: f64,
    /// Lagged friction frame: the normal whose tangent plane friction acts in.
    pub frame: DVec3,
    /// Closest-point weights when the pair joined (`P − Q = Σ w_k x_k`).
    pub weights: [f64; 4],
}

fn positions(key: &PairKey, x: &[DVec3]) -> [DVec3; 4] {
    let at = |k: usize| x[key.vertices[k] as usize];
    match key.kind {
        PAIR_OBSTACLE => [at(0); 4],
        PAIR_OBSTACLE_EDGE => [at(0), at(1), at(0), at(1)],
        _ => key.vertices.map(|v| x[v as usize]),
    }
}

/// Distance, its gradient, the closest-point weights and the unit normal of a pair at `x`.
fn measure(key: &PairKey, x: &[DVec3], obstacles: &[Obstacle]) -> (f64, [DVec3; 4], [f64; 4], DVec3) {
    let p = positions(key, x);
    if key.kind == PAIR_OBSTACLE {
        let o = &obstacles[key.vertices[1] as usize];
        let (d, n) = o.signed_distance(Vec3A::from(p[0].as_vec3()));
        let n = n.as_dvec3();
        return (d as f64, [n, DVec3::ZERO, DVec3::ZERO, DVec3::ZERO], [1.0, 0.0, 0.0, 0.0], n);
    }
    if key.kind == PAIR_OBSTACLE_EDGE {
        // The distance of the edge's closest point `(1 − t) a + t b`; moving either end moves
        // it by that end's weight (the closest point's own shift along the edge is second
        // order at a minimum).
        let o = &obstacles[key.vertices[2] as usize];
        let c = o.segment_closest(Vec3A::from(p[0].as_vec3()), Vec3A::from(p[1].as_vec3()));
        let (t, n) = (c.t as f64, c.normal.as_dvec3());
        let grad = [n * (1.0 - t), n * t, DVec3::ZERO, DVec3::ZERO];
        return (c.distance as f64, grad, [1.0 - t, t, 0.0, 0.0], n);
    }
    let c = if key.kind == PAIR_POINT_TRIANGLE {
        point_triangle::<f64>(p[0], p[1], p[2], p[3])
    } else {
        edge_edge::<f64>(p[0], p[1], p[2], p[3])
    };
    (c.distance, c.gradient(), c.weights, c.normal)
}

impl Constraint {
    /// `c(x̂)` \[m\] for offset `delta`.
    pub fn value(&self, xh: &[DVec3], delta: f64) -> f64 {
        let p = positions(&self.key, xh);
        let mut c = self.distance - delta;
        for k in 0..self.key.moving_vertices().len() {
            c += self.grad[k].dot(p[k] - self.base[k]);
        }
        c
    }

    /// Tangential slip of the pair over the step, `P (Σ w_k (x̂_k − x_k^t))` \[m\].
    fn slip(&self, xh: &[DVec3], start: &[DVec3]) -> DVec3 {
        let (p, q) = (positions(&self.key, xh), positions(&self.key, start));
        let n = self.key.moving_vertices().len();
        let r: DVec3 = (0..n).map(|k| (p[k] - q[k]) * self.weights[k]).sum();
        r - self.frame * self.frame.dot(r)
    }
}

/// The active set.
#[derive(Clone, Debug, Default)]
pub(crate) struct ActiveSet {
    pub list: Vec<Constraint>,
    index: HashMap<PairKey, usize>,
}

impl ActiveSet {
    /// Whether `key` is in the set.
    pub fn contains(&self, key: &PairKey) -> bool {
        self.index.contains_key(key)
    }

    /// Adds a pair at the safe iterate `x` with `λ = 0`, `γ = 1` (unless present).
    pub fn add(&mut self, st: &SimState, obstacles: &[Obstacle], key: PairKey, x: &[DVec3]) {
        if self.contains(&key) {
            return;
        }
        let (distance, grad, weights, frame) = measure(&key, x, obstacles);
        let body = |v: u32| &st.bodies[st.vertex_body[v as usize] as usize];
        let friction = if let Some(k) = key.obstacle() {
            0.5 * (body(key.vertices[0]).friction + obstacles[k as usize].friction) as f64
        } else {
            0.5 * (body(key.vertices[0]).friction + body(key.vertices[3]).friction) as f64
        };
        self.index.insert(key, self.list.len());
        self.list.push(Constraint {
            key,
            lambda: 0.0,
            gamma: 1.0,
            distance,
            grad,
            base: positions(&key, x),
            friction,
            normal_force: 0.0,
            frame,
            weights,
        });
    }

    /// Re-linearises every pair at the safe iterate `x`.
    pub fn linearize(&mut self, x: &[DVec3], obstacles: &[Obstacle]) {
        for c in &mut self.list {
            let (d, g, _, _) = measure(&c.key, x, obstacles);
            c.distance = d;
            c.grad = g;
            c.base = positions(&c.key, x);
        }
    }

    /// The constraint and friction terms of the Lagrangian at `xh` \[J\].
    pub fn energy(&self, xh: &[DVec3], start: &[DVec3], mu: f64, delta: f64, static_slip: f64) -> f64 {
        let mut e = 0.0;
        for c in &self.list {
            let v = c.value(xh, delta);
            let s = (v - c.lambda / mu).max(0.0);
            e += c.gamma * (0.5 * mu * (v - s) * (v - s) - c.lambda * (v - s));
            if c.normal_force > 0.0 && c.friction > 0.0 {
                e += c.friction * c.normal_force * friction_f0(c.slip(xh, start).length(), static_slip);
            }
        }
        e
    }

    /// Adds the terms' gradient to `grad` and their Hessian's diagonal blocks to `diag` (per
    /// unknown), and records what [`ActiveSet::multiply`] needs.
    #[allow(clippy::too_many_arguments)]
    pub fn gradient(
        &self,
        xh: &[DVec3],
        start: &[DVec3],
        dof: &[u32],
        mu: f64,
        delta: f64,
        static_slip: f64,
        grad: &mut [DVec3],
        diag: &mut [DMat3],
        friction_scale: &mut Vec<f64>,
    ) {
        friction_scale.clear();
        for c in &self.list {
            let v = c.value(xh, delta);
            let s = (v - c.lambda / mu).max(0.0);
            let force = mu * c.gamma * (v - c.lambda / mu - s);
            let (k_f, slip) = if c.normal_force > 0.0 && c.friction > 0.0 {
                let u = c.slip(xh, start);
                (c.friction * c.normal_force * friction_f1_over_u(u.length(), static_slip), u)
            } else {
                (0.0, DVec3::ZERO)
            };
            friction_scale.push(k_f);
            let tangent =
                DMat3::IDENTITY - DMat3::from_cols(c.frame * c.frame.x, c.frame * c.frame.y, c.frame * c.frame.z);
            for (k, &vtx) in c.key.moving_vertices().iter().enumerate() {
                let d = dof[vtx as usize];
                if d == NO_DOF {
                    continue;
                }
                let g = c.grad[k];
                grad[d as usize] += g * force + slip * (k_f * c.weights[k]);
                let gg = DMat3::from_cols(g * g.x, g * g.y, g * g.z) * (mu * c.gamma);
                diag[d as usize] += gg + tangent * (k_f * c.weights[k] * c.weights[k]);
            }
        }
    }

    /// `y += H_c p` for the constraint and friction Hessians (`μγ ∇c∇cᵀ` and the lagged
    /// friction's `μ_f Λ f1(u)/u wwᵀ ⊗ (I − n nᵀ)`), with `friction_scale` from the last
    /// [`ActiveSet::gradient`].
    pub fn multiply(&self, dof: &[u32], mu: f64, friction_scale: &[f64], p: &[DVec3], y: &mut [DVec3]) {
        for (c, &k_f) in self.list.iter().zip(friction_scale) {
            let verts = c.key.moving_vertices();
            let (mut along, mut rel) = (0.0, DVec3::ZERO);
            for (k, &v) in verts.iter().enumerate() {
                let d = dof[v as usize];
                if d != NO_DOF {
                    along += c.grad[k].dot(p[d as usize]);
                    rel += p[d as usize] * c.weights[k];
                }
            }
            let rel = rel - c.frame * c.frame.dot(rel);
            for (k, &v) in verts.iter().enumerate() {
                let d = dof[v as usize];
                if d != NO_DOF {
                    y[d as usize] += c.grad[k] * (mu * c.gamma * along) + rel * (k_f * c.weights[k]);
                }
            }
        }
    }

    /// The dual update (\[ALPF\] Alg. 2 with the decay on inactive pairs, docs/algorithms.md E9): an active
    /// pair's multiplier grows while it is violated and its weight resets; an inactive pair's
    /// multiplier drops to zero and its weight decays. The lagged friction's normal force
    /// becomes the new multiplier (docs/algorithms.md E10: its magnitude).
    pub fn dual_update(&mut self, xh: &[DVec3], mu: f64, delta: f64) {
        for c in &mut self.list {
            let v = c.value(xh, delta);
            if v - c.lambda / mu <= 0.0 {
                c.lambda = (c.lambda - mu * v).max(0.0);
                c.gamma = 1.0;
            } else {
                c.lambda = 0.0;
                c.gamma *= DECAY;
            }
            c.normal_force = c.lambda;
        }
    }

    /// What the offset violations of a safe iterate `x` are worth \[J\]: each pair closer than
    /// `delta` costs twice its multiplier times the shortfall. The multipliers estimate the
    /// contact forces, so this is an exact penalty (weights above the forces): lifting a stack
    /// out to the offset against gravity costs about `Σ λ (δ − d)` of potential energy and is
    /// paid for, while energy from nowhere (metres of motion) is not, since the price is
    /// bounded by `2 Σ λ δ`.
    pub fn violation_price(&self, x: &[DVec3], obstacles: &[Obstacle], delta: f64) -> f64 {
        let shortfall = |c: &Constraint| (delta - measure(&c.key, x, obstacles).0).max(0.0);
        self.list.iter().filter(|c| c.lambda > 0.0).map(|c| 2.0 * c.lambda * shortfall(c)).sum()
    }

    /// Drops pairs whose weight decayed below [`DROP_WEIGHT`].
    pub fn prune(&mut self) {
        self.list.retain(|c| c.gamma >= DROP_WEIGHT);
        self.index.clear();
        for (i, c) in self.list.iter().enumerate() {
            self.index.insert(c.key, i);
        }
    }

    /// Smallest linearised-at-safe distance of any pair \[m\] (+∞ when empty).
    pub fn min_distance(&self) -> f64 {
        self.list.iter().map(|c| c.distance).fold(f64::INFINITY, f64::min)
    }

    /// Keeps only pairs whose vertices all satisfy `keep`.
    pub fn retain_vertices(&mut self, keep: impl Fn(u32) -> bool) {
        self.list.retain(|c| c.key.moving_vertices().iter().all(|&v| keep(v)));
        self.prune();
    }
}

/// \[ALPF\] Alg. 3's filter: of the new pairs `hits` (key, time of impact), keep those that are
/// the earliest hit of at least one of their vertices; deep multi-layer penetrations otherwise
/// add up to ten times more pairs than needed (\[ALPF\] §6.3).
pub(crate) fn earliest_hits(hits: &[(PairKey, f64)], vertex_count: usize, first: &mut Vec<f64>) -> Vec<PairKey> {
    first.clear();
    first.resize(vertex_count, f64::INFINITY);
    for (k, t) in hits {
        for &v in k.moving_vertices() {
            first[v as usize] = first[v as usize].min(*t);
        }
    }
    hits.iter().filter(|(k, t)| k.moving_vertices().iter().any(|&v| first[v as usize] == *t)).map(|(k, _)| *k).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::surface_pairs::PAIR_POINT_TRIANGLE;
    use crate::state::BodyRecord;

    /// Two one-vertex-or-triangle "bodies" and the ground: a vertex–triangle pair and a
    /// vertex–obstacle pair, at a safe state `x` and a penetrating target `xh`.
    fn setup() -> (SimState, Vec<Obstacle>, ActiveSet, Vec<DVec3>, Vec<DVec3>) {
        let st = SimState {
            vertex_body: vec![0, 1, 1, 1],
            bodies: vec![
                BodyRecord { friction: 0.4, ..Default::default() },
                BodyRecord { friction: 0.6, ..Default::default() },
            ],
            ..SimState::default()
        };
        let obstacles = vec![Obstacle::ground(0.0, 0.5)];
        let x = vec![
            DVec3::new(0.2, 0.05, 0.1),
            DVec3::new(0.0, 0.02, 0.0),
            DVec3::new(0.5, 0.02, 0.0),
            DVec3::new(0.0, 0.03, 0.5),
        ];
        let mut set = ActiveSet::default();
        set.add(&st, &obstacles, PairKey { kind: PAIR_POINT_TRIANGLE, vertices: [0, 1, 2, 3] }, &x);
        set.add(&st, &obstacles, PairKey { kind: PAIR_OBSTACLE, vertices: [1, 0, u32::MAX, u32::MAX] }, &x);
        let xh = vec![
            DVec3::new(0.25, 0.01, 0.12),
            DVec3::new(0.01, -0.004, 0.02),
            DVec3::new(0.49, 0.025, 0.01),
            DVec3::new(0.02, 0.03, 0.48),
        ];
        (st, obstacles, set, x, xh)
    }

    /// The Lagrangian terms' gradient against central differences of their energy, with
    /// multipliers, decayed weights and lagged friction all active; and the constraint
    /// Hessian-vector product against differences of the gradient (friction off, where the
    /// Hessian is exact).
    #[test]
    fn gradient_and_hessian_match_finite_differences() {
        let (_, obstacles, mut set, x, xh) = setup();
        let (mu, delta, slip) = (2e3, 1e-3, 1e-5);
        set.linearize(&x, &obstacles);
        set.list[0].lambda = 3.0;
        set.list[1].gamma = 0.7;
        set.list[0].normal_force = 2.0;
        set.list[1].normal_force = 5.0;
        let start = x.clone();
        let dof: Vec<u32> = (0..4).collect();
        let grad_at = |set: &ActiveSet, y: &[DVec3]| {
            let mut g = vec![DVec3::ZERO; 4];
            let mut d = vec![DMat3::ZERO; 4];
            let mut fs = Vec::new();
            set.gradient(y, &start, &dof, mu, delta, slip, &mut g, &mut d, &mut fs);
            (g, fs)
        };
        let (g, _) = grad_at(&set, &xh);
        let h = 1e-7;
        for v in 0..4 {
            for k in 0..3 {
                let mut p = xh.clone();
                let mut m = xh.clone();
                p[v][k] += h;
                m[v][k] -= h;
                let fd =
                    (set.energy(&p, &start, mu, delta, slip) - set.energy(&m, &start, mu, delta, slip)) / (2.0 * h);
                assert!((fd - g[v][k]).abs() < 1e-5 * (1.0 + fd.abs()), "vertex {v} axis {k}: {fd} vs {}", g[v][k]);
            }
        }
        // Hessian-vector product of the constraint terms (exact: the constraints are linear).
        for c in &mut set.list {
            c.normal_force = 0.0;
        }
        let (g0, fs) = grad_at(&set, &xh);
        let dir = [
            DVec3::new(0.3, -1.0, 0.2),
            DVec3::new(-0.5, 0.4, 1.0),
            DVec3::new(0.1, 0.2, -0.3),
            DVec3::new(1.0, 0.0, 0.5),
        ];
        let mut hv = vec![DVec3::ZERO; 4];
        set.multiply(&dof, mu, &fs, &dir, &mut hv);
        let eps = 1e-6;
        let shifted: Vec<DVec3> = xh.iter().zip(&dir).map(|(a, d)| *a + *d * eps).collect();
        // Only pairs whose slack stays zero along the direction have a linear gradient there.
        let (g1, _) = grad_at(&set, &shifted);
        for v in 0..4 {
            let fd = (g1[v] - g0[v]) / eps;
            assert!((fd - hv[v]).length() < 1e-3 * (1.0 + fd.length()), "vertex {v}: {fd} vs {}", hv[v]);
        }
    }

    /// An edge–obstacle pair's gradient is its distance's (the edge over a box's rim, off its
    /// middle, and over a sphere): central differences of the closest distance, which is f32.
    #[test]
    fn an_edge_pair_s_gradient_is_its_distance_s() {
        let block = Obstacle::cuboid(glam::Vec3::ZERO, glam::Vec3::splat(0.1), glam::Quat::IDENTITY, 0.5).unwrap();
        let ball = Obstacle::sphere(glam::Vec3::new(0.5, 0.0, 0.0), 0.1, 0.5).unwrap();
        let cases = [
            (0u32, [DVec3::new(0.09, 0.115, 0.01), DVec3::new(0.115, 0.09, -0.01)]),
            (1, [DVec3::new(0.42, 0.105, 0.0), DVec3::new(0.55, 0.11, 0.02)]),
        ];
        for (k, ends) in cases {
            let obstacles = vec![block.clone(), ball.clone()];
            let key = PairKey { kind: PAIR_OBSTACLE_EDGE, vertices: [0, 1, k, u32::MAX] };
            let (d, grad, weights, _) = measure(&key, &ends, &obstacles);
            assert!(d > 0.0 && weights[1] > 0.1 && weights[1] < 0.9, "{d} {weights:?}");
            let h = 1e-4;
            for v in 0..2 {
                for axis in 0..3 {
                    let mut p = ends;
                    let mut m = ends;
                    p[v][axis] += h;
                    m[v][axis] -= h;
                    let fd = (measure(&key, &p, &obstacles).0 - measure(&key, &m, &obstacles).0) / (2.0 * h);
                    assert!(
                        (fd - grad[v][axis]).abs() < 2e-3,
                        "obstacle {k} vertex {v} axis {axis}: {fd} vs {}",
                        grad[v][axis]
                    );
                }
            }
        }
    }

    /// The dual update grows a violated pair's multiplier by `−μ c` and decays a pair that
    /// separated; the filter keeps only each vertex's earliest hit.
    #[test]
    fn dual_update_and_filter() {
        let (_, obstacles, mut set, x, xh) = setup();
        let (mu, delta) = (2e3, 1e-3);
        set.linearize(&x, &obstacles);
        let c0 = set.list[1].value(&xh, delta);
        assert!(c0 < 0.0, "the target penetrates the ground");
        set.dual_update(&xh, mu, delta);
        assert!((set.list[1].lambda + mu * c0).abs() < 1e-9 && set.list[1].gamma == 1.0);
        // Far above the ground: inactive, λ = 0, weight decays.
        let mut away = xh.clone();
        away[1].y = 1.0;
        set.dual_update(&away, mu, delta);
        assert_eq!(set.list[1].lambda, 0.0);
        assert!((set.list[1].gamma - DECAY).abs() < 1e-12);
        let a = PairKey { kind: PAIR_OBSTACLE, vertices: [0, 0, u32::MAX, u32::MAX] };
        let b = PairKey { kind: PAIR_POINT_TRIANGLE, vertices: [0, 1, 2, 3] };
        let c = PairKey { kind: PAIR_POINT_TRIANGLE, vertices: [1, 0, 2, 3] };
        let mut first = Vec::new();
        let kept = earliest_hits(&[(a, 0.5), (b, 0.2), (c, 0.7)], 4, &mut first);
        // b is vertex 0's (and 1's, 2's, 3's) earliest; a and c are nobody's.
        assert_eq!(kept, vec![b]);
    }
}
