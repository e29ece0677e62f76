//! The accuracy oracle: a converged static solve of a tet mesh under gravity, pins and
//! half-space contacts, in f64, by Newton's method with a sparse Cholesky factorisation (faer)
//! and a backtracking line search, to a relative residual of 1e-8 (docs/scenes.md).
//!
//! It uses the library's own f64 energies (one source with the solver), the same lumped masses
//! (ρV/4 per tet vertex) and the same contact energy `½ k (δ − d)²` as the runtime, so a settled
//! dynamic run and this solve minimise the same potential.

#![allow(dead_code)]
#![allow(clippy::needless_range_loop)]

use faer::Side;
use faer::linalg::solvers::Solve;
use faer::sparse::{SparseColMat, Triplet};
use glam::{DMat3, DVec3};
use pliant::SolidMaterial;

/// A static problem.
pub struct StaticProblem {
    pub rest: Vec<DVec3>,
    pub tets: Vec<[u32; 4]>,
    /// The tets' material (its energy is the solver's, evaluated in f64).
    pub material: SolidMaterial,
    pub density: f64,
    /// Tets whose material and density are not `material` and `density`: `(tets, material,
    /// density)` (a stiff load bonded to a soft body, say).
    pub parts: Vec<(std::ops::Range<usize>, SolidMaterial, f64)>,
    pub gravity: DVec3,
    /// Vertices held at their rest positions.
    pub pinned: Vec<bool>,
    /// Half-spaces `(unit normal, offset)`: `n·x ≥ offset` is free space.
    pub planes: Vec<(DVec3, f64)>,
    /// Contact stiffness [N/m] and offset δ [m] (as `StepConfig`).
    pub contact_stiffness: f64,
    pub contact_offset: f64,
}

/// The converged configuration.
pub struct StaticSolution {
    pub positions: Vec<DVec3>,
    pub newton_iterations: usize,
    /// `‖∇E‖ / ‖f_gravity‖` over free degrees of freedom.
    pub relative_residual: f64,
}

impl StaticProblem {
    pub fn masses(&self) -> Vec<f64> {
        let mut m = vec![0.0; self.rest.len()];
        for (e, t) in self.tets.iter().enumerate() {
            let [a, b, c, d] = t.map(|i| self.rest[i as usize]);
            let volume = (b - a).dot((c - a).cross(d - a)) / 6.0;
            assert!(volume > 0.0, "valid tet");
            for &i in t {
                m[i as usize] += self.material_of(e).1 * volume / 4.0;
            }
        }
        m
    }

    /// Tet `e`'s material and density.
    fn material_of(&self, e: usize) -> (&SolidMaterial, f64) {
        match self.parts.iter().find(|p| p.0.contains(&e)) {
            Some((_, material, density)) => (material, *density),
            None => (&self.material, self.density),
        }
    }

    fn rests(&self) -> Vec<[DVec3; 4]> {
        self.tets.iter().map(|t| t.map(|i| self.rest[i as usize])).collect()
    }

    fn energy(&self, x: &[DVec3], rests: &[[DVec3; 4]], masses: &[f64]) -> f64 {
        let mut e = 0.0;
        for (k, (t, r)) in self.tets.iter().zip(rests).enumerate() {
            let xs = t.map(|i| x[i as usize]);
            e += self.material_of(k).0.tet_energy(r, &xs).expect("valid tet");
        }
        for (i, p) in x.iter().enumerate() {
            e -= masses[i] * self.gravity.dot(*p);
            for &(n, off) in &self.planes {
                let d = self.contact_offset - (n.dot(*p) - off);
                if d > 0.0 {
                    e += 0.5 * self.contact_stiffness * d * d;
                }
            }
        }
        e
    }

    /// Newton from the rest shape (or `start`).
    pub fn solve(&self, start: Option<&[DVec3]>) -> StaticSolution {
        let n = self.rest.len();
        let masses = self.masses();
        let rests = self.rests();
        let mut dof = vec![usize::MAX; n];
        let mut free = 0;
        for i in 0..n {
            if !self.pinned[i] {
                dof[i] = free;
                free += 1;
            }
        }
        let f_ext: f64 = masses.iter().map(|m| (m * self.gravity).length_squared()).sum::<f64>().sqrt();
        let mut x: Vec<DVec3> = start.map_or_else(|| self.rest.clone(), |s| s.to_vec());
        let mut relative_residual = f64::INFINITY;
        for it in 0..200 {
            let (g, h_exact) = self.assemble(&x, &rests, &masses, &dof, free, false);
            relative_residual = g.iter().map(|v| v * v).sum::<f64>().sqrt() / f_ext;
            if relative_residual < 1e-8 {
                return StaticSolution { positions: x, newton_iterations: it, relative_residual };
            }
            // Exact Hessian when it is positive definite (quadratic convergence near the
            // solution); element-wise PSD projection otherwise.
            let llt = match h_exact.sp_cholesky(Side::Lower) {
                Ok(l) => l,
                Err(_) => {
                    let (_, h_psd) = self.assemble(&x, &rests, &masses, &dof, free, true);
                    h_psd.sp_cholesky(Side::Lower).expect("projected Hessian with pins is positive definite")
                }
            };
            let rhs = faer::Mat::from_fn(3 * free, 1, |r, _| -g[r]);
            let step = llt.solve(&rhs);
            let dir: Vec<DVec3> = (0..n)
                .map(|i| {
                    if dof[i] == usize::MAX {
                        DVec3::ZERO
                    } else {
                        DVec3::new(step[(3 * dof[i], 0)], step[(3 * dof[i] + 1, 0)], step[(3 * dof[i] + 2, 0)])
                    }
                })
                .collect();
            let slope: f64 = (0..3 * free).map(|r| g[r] * step[(r, 0)]).sum();
            let e0 = self.energy(&x, &rests, &masses);
            let mut alpha = 1.0;
            loop {
                let trial: Vec<DVec3> = x.iter().zip(&dir).map(|(p, d)| *p + *d * alpha).collect();
                let e = self.energy(&trial, &rests, &masses);
                // Armijo with a tolerance for round-off once the decrease is below f64 noise.
                if e <= e0 + 1e-4 * alpha * slope || alpha < 1e-6 || (e - e0).abs() <= 1e-14 * e0.abs() {
                    x = trial;
                    break;
                }
                alpha *= 0.5;
            }
        }
        StaticSolution { positions: x, newton_iterations: 200, relative_residual }
    }

    fn assemble(
        &self,
        x: &[DVec3],
        rests: &[[DVec3; 4]],
        masses: &[f64],
        dof: &[usize],
        free: usize,
        project: bool,
    ) -> (Vec<f64>, SparseColMat<usize, f64>) {
        let mut g = vec![0.0; 3 * free];
        let mut trip: Vec<Triplet<usize, usize, f64>> = Vec::with_capacity(self.tets.len() * 144 / 2 + 9 * free);
        let add_block = |trip: &mut Vec<Triplet<usize, usize, f64>>, a: usize, b: usize, m: &DMat3| {
            let (da, db) = (dof[a], dof[b]);
            if da == usize::MAX || db == usize::MAX {
                return;
            }
            for r in 0..3 {
                for c in 0..3 {
                    // Lower triangle only: faer's Cholesky reads the `Lower` side.
                    if 3 * da + r >= 3 * db + c {
                        trip.push(Triplet::new(3 * da + r, 3 * db + c, m.col(c)[r]));
                    }
                }
            }
        };
        for (e, (t, r)) in self.tets.iter().zip(rests).enumerate() {
            let xs = t.map(|i| x[i as usize]);
            let material = self.material_of(e).0;
            let grad = material.tet_gradient(r, &xs).expect("valid tet");
            let mut hess = material.tet_hessian(r, &xs).expect("valid tet");
            if project {
                project_12(&mut hess);
            }
            for a in 0..4 {
                let va = t[a] as usize;
                if dof[va] != usize::MAX {
                    for k in 0..3 {
                        g[3 * dof[va] + k] += grad[a][k];
                    }
                }
                for b in 0..4 {
                    add_block(&mut trip, va, t[b] as usize, &hess[a][b]);
                }
            }
        }
        for (i, p) in x.iter().enumerate() {
            if dof[i] == usize::MAX {
                continue;
            }
            let mut gi = -masses[i] * self.gravity;
            let mut hi = DMat3::ZERO;
            for &(nrm, off) in &self.planes {
                let d = self.contact_offset - (nrm.dot(*p) - off);
                if d > 0.0 {
                    gi -= nrm * (self.contact_stiffness * d);
                    hi += DMat3::from_cols(nrm * nrm.x, nrm * nrm.y, nrm * nrm.z) * self.contact_stiffness;
                }
            }
            for k in 0..3 {
                g[3 * dof[i] + k] += gi[k];
            }
            add_block(&mut trip, i, i, &hi);
        }
        let h = SparseColMat::try_new_from_triplets(3 * free, 3 * free, &trip).expect("valid triplets");
        (g, h)
    }
}

/// Clamps negative eigenvalues of a 12×12 element Hessian to zero.
fn project_12(h: &mut [[DMat3; 4]; 4]) {
    let m = faer::Mat::from_fn(12, 12, |r, c| h[r / 3][c / 3].col(c % 3)[r % 3]);
    let eig = m.self_adjoint_eigen(Side::Lower).expect("symmetric eigen-decomposition");
    let (u, s) = (eig.U(), eig.S());
    let mut out = faer::Mat::<f64>::zeros(12, 12);
    for k in 0..12 {
        let l = s[k].max(0.0);
        if l == 0.0 {
            continue;
        }
        for r in 0..12 {
            for c in 0..12 {
                out[(r, c)] += l * u[(r, k)] * u[(c, k)];
            }
        }
    }
    for a in 0..4 {
        for b in 0..4 {
            h[a][b] = DMat3::from_cols(
                DVec3::new(out[(3 * a, 3 * b)], out[(3 * a + 1, 3 * b)], out[(3 * a + 2, 3 * b)]),
                DVec3::new(out[(3 * a, 3 * b + 1)], out[(3 * a + 1, 3 * b + 1)], out[(3 * a + 2, 3 * b + 1)]),
                DVec3::new(out[(3 * a, 3 * b + 2)], out[(3 * a + 1, 3 * b + 2)], out[(3 * a + 2, 3 * b + 2)]),
            );
        }
    }
}

/// The cantilever of docs/scenes.md at `res` × (20, 2, 2) cells: 2 m × 0.2 m × 0.2 m, clamped at
/// x = 0, E = 1.2e8 Pa, ν = 0, ρ = 1000 kg/m³, stable neo-Hookean; returns the static tip
/// deflection (mean −y displacement of the x = L face) [m].
pub fn cantilever_static_tip(res: u32) -> f64 {
    let mesh = pliant::TetMesh::beam(2.0, 0.2, 0.2, [20 * res, 2 * res, 2 * res], pliant::TetSplit::Six).expect("beam");
    let rest: Vec<DVec3> = mesh.positions().iter().map(|p| p.as_dvec3()).collect();
    let (tip, residual) = cantilever_tip_of_mesh(rest, mesh.tets().to_vec());
    assert!(residual < 1e-8, "static solve did not converge: {residual}");
    tip
}

/// The same cantilever on any tet mesh of it (another engine's tetrahedralisation, say):
/// returns the static tip deflection [m] and the solve's relative residual. The x = 0 face is
/// clamped and the tip is the x = 2 m face (within 1e-6 m and 1e-4 m, for f32 meshes).
pub fn cantilever_tip_of_mesh(rest: Vec<DVec3>, tets: Vec<[u32; 4]>) -> (f64, f64) {
    let p = StaticProblem {
        pinned: rest.iter().map(|p| p.x < 1e-6).collect(),
        tets,
        rest,
        material: pliant::StableNeoHookean::from_young_poisson(1.2e8, 0.0).into(),
        density: 1000.0,
        parts: vec![],
        gravity: DVec3::new(0.0, -9.81, 0.0),
        planes: vec![],
        contact_stiffness: 1e7,
        contact_offset: 1e-3,
    };
    let sol = p.solve(None);
    let tip: Vec<usize> = (0..p.rest.len()).filter(|&i| p.rest[i].x > 2.0 - 1e-4).collect();
    let deflection = -tip.iter().map(|&i| sol.positions[i].y - p.rest[i].y).sum::<f64>() / tip.len() as f64;
    (deflection, sol.relative_residual)
}
