//! The incremental potential of the vertices a fallback step solves, in f64: inertia
//! `Σ m/(2w) ‖x − y‖²` plus the elastic energy of every element that touches a solved vertex
//! (docs/algorithms.md §1.2), with its gradient and an SPD-projected Hessian in block-sparse form.
//!
//! The same integrator, predictor and materials as the fast path, so a step redone here solves
//! the problem the fast path was given. Vertices that are not solved (kinematic vertices, other
//! islands) enter the energy at their given positions and carry no unknowns.

use glam::{DMat3, DVec3};

use crate::material::MODEL_STABLE_NEO_HOOKEAN;
use crate::material::tet::TetRest;
use crate::material::{bending, membrane, stable_neo_hookean, stvk};
use crate::solver::linear::BlockCsr;
use crate::state::{SimState, TetElement, TriElement};

/// No unknown: the vertex is held at its given position.
pub(crate) const NO_DOF: u32 = u32::MAX;

/// The solved vertices and their potential.
#[derive(Debug, Default)]
pub(crate) struct Problem {
    /// Unknown index of each vertex, or [`NO_DOF`].
    pub dof: Vec<u32>,
    /// Vertex of each unknown.
    pub vertices: Vec<u32>,
    /// `m / w` per unknown \[kg/s²\].
    pub inertia: Vec<f64>,
    /// Inertial target `y = x^n + (x̂ − x^n) + w g` per unknown \[m\].
    pub target: Vec<DVec3>,
    tets: Vec<u32>,
    tris: Vec<u32>,
    hinges: Vec<u32>,
    /// Hessian of the potential over the unknowns (refilled by [`Problem::gradient_hessian`]).
    pub hessian: BlockCsr,
    /// Block slot per element vertex pair (`NO_DOF` when either vertex has no unknown).
    tet_slots: Vec<u32>,
    tri_slots: Vec<u32>,
    hinge_slots: Vec<u32>,
}

pub(crate) fn tet_rest(t: &TetElement) -> TetRest<f64> {
    let c = |i: usize| DVec3::new(t.dm_inv[i][0] as f64, t.dm_inv[i][1] as f64, t.dm_inv[i][2] as f64);
    TetRest { dm_inv: DMat3::from_cols(c(0), c(1), c(2)), volume: t.volume as f64 }
}

fn tri_dm(t: &TriElement) -> [[f64; 2]; 2] {
    let d = t.dm_inv.map(|v| v as f64);
    [[d[0], d[1]], [d[2], d[3]]]
}

fn gather<const K: usize>(x: &[DVec3], v: &[u32]) -> [DVec3; K] {
    std::array::from_fn(|k| x[v[k] as usize])
}

/// The last problem's structure (unknowns, elements, Hessian pattern, element slots), kept for
/// the next problem over the same vertices of the same state: a hold redoes one island step
/// after step, and building the pattern (every row sorted) was a quarter of a held cloth's
/// set-up. [`crate::solver::al::AlScratch::clear`] forgets it when the state is repacked.
#[derive(Debug, Default)]
pub(crate) struct ProblemCache {
    /// The `solve` mask it was built for.
    solve: Vec<bool>,
    /// Vertex, tet, triangle and hinge counts of the state it was built for.
    counts: [usize; 4],
    problem: Option<Problem>,
}

impl ProblemCache {
    /// The problem over the vertices with `solve[v]` ([`Problem::new`]), its structure reused
    /// when the last one kept was built for the same mask and element counts.
    pub fn take(&mut self, st: &SimState, solve: &[bool], inertia: impl Fn(usize) -> (f64, DVec3)) -> Problem {
        let counts = [st.vertex_count(), st.tets.len(), st.tris.len(), st.hinges.len()];
        match self.problem.take() {
            Some(mut p) if self.counts == counts && self.solve == solve => {
                for (k, &v) in p.vertices.iter().enumerate() {
                    (p.inertia[k], p.target[k]) = inertia(v as usize);
                }
                p
            }
            _ => {
                self.solve.clear();
                self.solve.extend_from_slice(solve);
                self.counts = counts;
                Problem::new(st, solve, inertia)
            }
        }
    }

    /// Keeps `problem` for the next [`ProblemCache::take`].
    pub fn keep(&mut self, problem: Problem) {
        self.problem = Some(problem);
    }
}

impl Problem {
    /// The problem over the vertices with `solve[v]`, each with its inertia `(m/w, y)`.
    pub fn new(st: &SimState, solve: &[bool], inertia: impl Fn(usize) -> (f64, DVec3)) -> Self {
        let n = st.vertex_count();
        let mut p = Self { dof: vec![NO_DOF; n], ..Self::default() };
        for v in (0..n).filter(|&v| solve[v]) {
            p.dof[v] = p.vertices.len() as u32;
            p.vertices.push(v as u32);
            let (k, y) = inertia(v);
            p.inertia.push(k);
            p.target.push(y);
        }
        let touches = |vs: &[u32]| vs.iter().any(|&v| p.dof[v as usize] != NO_DOF);
        p.tets = (0..st.tets.len() as u32).filter(|&e| touches(&st.tets[e as usize].vertices)).collect();
        p.tris = (0..st.tris.len() as u32).filter(|&e| touches(&st.tris[e as usize].vertices[..3])).collect();
        p.hinges = (0..st.hinges.len() as u32).filter(|&e| touches(&st.hinges[e as usize].vertices)).collect();
        // Pattern: every pair of unknowns sharing an element.
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); p.vertices.len()];
        let mut link = |vs: &[u32]| {
            for &a in vs {
                let da = p.dof[a as usize];
                if da == NO_DOF {
                    continue;
                }
                rows[da as usize].extend(vs.iter().map(|&b| p.dof[b as usize]).filter(|&d| d != NO_DOF));
            }
        };
        p.tets.iter().for_each(|&e| link(&st.tets[e as usize].vertices));
        p.tris.iter().for_each(|&e| link(&st.tris[e as usize].vertices[..3]));
        p.hinges.iter().for_each(|&e| link(&st.hinges[e as usize].vertices));
        p.hessian = BlockCsr::with_pattern(p.vertices.len(), |i, row| row.extend_from_slice(&rows[i]));
        let slots = |h: &BlockCsr, dof: &[u32], vs: &[u32], out: &mut Vec<u32>| {
            for &a in vs {
                for &b in vs {
                    let (da, db) = (dof[a as usize], dof[b as usize]);
                    out.push(if da == NO_DOF || db == NO_DOF { NO_DOF } else { h.slot(da, db).unwrap_or(NO_DOF) });
                }
            }
        };
        let (mut ts, mut rs, mut hs) = (Vec::new(), Vec::new(), Vec::new());
        p.tets.iter().for_each(|&e| slots(&p.hessian, &p.dof, &st.tets[e as usize].vertices, &mut ts));
        p.tris.iter().for_each(|&e| slots(&p.hessian, &p.dof, &st.tris[e as usize].vertices[..3], &mut rs));
        p.hinges.iter().for_each(|&e| slots(&p.hessian, &p.dof, &st.hinges[e as usize].vertices, &mut hs));
        (p.tet_slots, p.tri_slots, p.hinge_slots) = (ts, rs, hs);
        p
    }

    /// Number of unknowns.
    pub fn len(&self) -> usize {
        self.vertices.len()
    }

    /// The tets of the problem (indices into the state's tets).
    pub fn tets(&self) -> &[u32] {
        &self.tets
    }

    /// The potential at positions `x` (every vertex) \[J\]; +∞ if it is not finite.
    pub fn energy(&self, st: &SimState, x: &[DVec3]) -> f64 {
        let mut e = 0.0;
        for (k, &v) in self.vertices.iter().enumerate() {
            e += 0.5 * self.inertia[k] * (x[v as usize] - self.target[k]).length_squared();
        }
        for &i in &self.tets {
            let t = &st.tets[i as usize];
            let m = &st.materials[t.material as usize];
            let xs = gather::<4>(x, &t.vertices);
            let (mu, la) = (m.mu as f64, m.lambda as f64);
            e += if m.model == MODEL_STABLE_NEO_HOOKEAN {
                stable_neo_hookean::element_energy::<f64>(&xs, &tet_rest(t), mu, la)
            } else {
                stvk::element_energy::<f64>(&xs, &tet_rest(t), mu, la)
            };
        }
        for &i in &self.tris {
            let t = &st.tris[i as usize];
            let m = &st.materials[t.material as usize];
            let xs = gather::<3>(x, &t.vertices[..3]);
            e += membrane::element_energy::<f64>(&xs, &tri_dm(t), t.measure as f64, m.mu as f64, m.lambda as f64);
        }
        for &i in &self.hinges {
            let hg = &st.hinges[i as usize];
            let xs = gather::<4>(x, &hg.vertices);
            e += bending::element_energy::<f64>(&xs, hg.rest_angle as f64, hg.stiffness as f64);
        }
        if e.is_finite() { e } else { f64::INFINITY }
    }

    /// The gradient (per unknown, into `grad`) and the projected Hessian (into
    /// [`Problem::hessian`]) at `x`. Stable neo-Hookean tets' Hessians are projected onto the
    /// PSD cone element by element, in `F` by their analytic eigensystem; StVK's and the
    /// membrane's are PSD by construction; a hinge contributes its Gauss–Newton term
    /// `k ∇θ ∇θᵀ`, which is PSD and exact at the rest angle.
    pub fn gradient_hessian(&mut self, st: &SimState, x: &[DVec3], grad: &mut [DVec3]) {
        self.hessian.clear();
        for (k, &v) in self.vertices.iter().enumerate() {
            grad[k] = (x[v as usize] - self.target[k]) * self.inertia[k];
            let d = self.hessian.diagonal[k] as usize;
            self.hessian.blocks[d] = DMat3::from_diagonal(DVec3::splat(self.inertia[k]));
        }
        let Self { dof, hessian, tets, tris, hinges, tet_slots, tri_slots, hinge_slots, .. } = self;
        for (n, &i) in tets.iter().enumerate() {
            let (g, h) = tet_terms(st, i, x);
            let vertices = &st.tets[i as usize].vertices;
            scatter::<4>(vertices, &g, &h, dof, grad, hessian, &tet_slots[16 * n..16 * n + 16]);
        }
        for (n, &i) in tris.iter().enumerate() {
            let (g, h) = triangle_terms(st, i, x);
            let vertices = &st.tris[i as usize].vertices[..3];
            scatter::<3>(vertices, &g, &h, dof, grad, hessian, &tri_slots[9 * n..9 * n + 9]);
        }
        for (n, &i) in hinges.iter().enumerate() {
            let (g, h) = hinge_terms(st, i, x);
            let vertices = &st.hinges[i as usize].vertices;
            scatter::<4>(vertices, &g, &h, dof, grad, hessian, &hinge_slots[16 * n..16 * n + 16]);
        }
    }

    /// Largest diagonal entry of the Hessian last filled \[N/m\] (sets the AL penalty; [ALPF]
    /// Eq. 20).
    pub fn max_diagonal(&self) -> f64 {
        let h = &self.hessian;
        (0..h.rows())
            .map(|i| {
                let b = h.diagonal_block(i);
                b.x_axis.x.max(b.y_axis.y).max(b.z_axis.z)
            })
            .fold(0.0, f64::max)
    }
}

/// Tet `i`'s gradient and PSD Hessian blocks at `x`: stable neo-Hookean's projected in `F`
/// (`stable_neo_hookean::element_hessian_psd`; the 12×12 Jacobi sweeps it replaces were half
/// of a dented wall's fallback time), StVK's PSD by construction.
pub(crate) fn tet_terms(st: &SimState, i: u32, x: &[DVec3]) -> ([DVec3; 4], [[DMat3; 4]; 4]) {
    let t = &st.tets[i as usize];
    let m = &st.materials[t.material as usize];
    let xs = gather::<4>(x, &t.vertices);
    let (mu, la, rest) = (m.mu as f64, m.lambda as f64, tet_rest(t));
    if m.model == MODEL_STABLE_NEO_HOOKEAN {
        (
            stable_neo_hookean::element_gradient::<f64>(&xs, &rest, mu, la),
            stable_neo_hookean::element_hessian_psd(&xs, &rest, mu, la),
        )
    } else {
        // PSD by construction: not projected.
        (stvk::element_gradient::<f64>(&xs, &rest, mu, la), stvk::element_hessian_psd::<f64>(&xs, &rest, mu, la))
    }
}

/// Membrane triangle `i`'s gradient and Hessian blocks at `x` (PSD by construction).
pub(crate) fn triangle_terms(st: &SimState, i: u32, x: &[DVec3]) -> ([DVec3; 3], [[DMat3; 3]; 3]) {
    let t = &st.tris[i as usize];
    let m = &st.materials[t.material as usize];
    let xs = gather::<3>(x, &t.vertices[..3]);
    let (dm, a, mu, la) = (tri_dm(t), t.measure as f64, m.mu as f64, m.lambda as f64);
    (membrane::element_gradient::<f64>(&xs, &dm, a, mu, la), membrane::element_hessian_psd::<f64>(&xs, &dm, a, mu, la))
}

/// Hinge `i`'s gradient and Gauss–Newton Hessian `k ∇θ ∇θᵀ` at `x` (PSD, exact at the rest
/// angle).
pub(crate) fn hinge_terms(st: &SimState, i: u32, x: &[DVec3]) -> ([DVec3; 4], [[DMat3; 4]; 4]) {
    let hg = &st.hinges[i as usize];
    let xs = gather::<4>(x, &hg.vertices);
    let (rest, k) = (hg.rest_angle as f64, hg.stiffness as f64);
    let dtheta = bending::angle_gradient::<f64>(&xs);
    let h = std::array::from_fn(|a| {
        std::array::from_fn(|b| {
            DMat3::from_cols(dtheta[a] * dtheta[b].x, dtheta[a] * dtheta[b].y, dtheta[a] * dtheta[b].z) * k
        })
    });
    (bending::element_gradient::<f64>(&xs, rest, k), h)
}

/// The blocks `h(a, b)` of a `K`-vertex element as a dense row-major `3K × 3K` matrix in
/// `dense`, projected onto the PSD cone (the GPU kernels' tests' oracle).
#[cfg(all(test, feature = "gpu"))]
pub(crate) fn projected_dense<const K: usize>(h: impl Fn(usize, usize) -> DMat3, dense: &mut [f64; 144]) {
    let n = 3 * K;
    for a in 0..K {
        for b in 0..K {
            let blk = h(a, b);
            for r in 0..3 {
                for c in 0..3 {
                    dense[(3 * a + r) * n + 3 * b + c] = blk.col(c)[r];
                }
            }
        }
    }
    crate::math::project_psd(&mut dense[..n * n], n);
}

/// Adds an element's gradient and Hessian blocks to the unknowns (`slots`: the Hessian block
/// of each vertex pair, [`NO_DOF`] where either vertex has no unknown).
fn scatter<const K: usize>(
    vertices: &[u32],
    g: &[DVec3; K],
    h: &[[DMat3; K]; K],
    dof: &[u32],
    grad: &mut [DVec3],
    hessian: &mut BlockCsr,
    slots: &[u32],
) {
    for a in 0..K {
        let da = dof[vertices[a] as usize];
        if da != NO_DOF {
            grad[da as usize] += g[a];
        }
        for b in 0..K {
            let s = slots[K * a + b];
            if s != NO_DOF {
                hessian.blocks[s as usize] += h[a][b];
            }
        }
    }
}
