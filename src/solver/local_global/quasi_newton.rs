//! The iterations of a local–global substep, in quasi-Newton form (Liu, Bouaziz & Kavan 2017,
//! "Quasi-Newton methods for real-time simulation of hyperelastic materials"; `docs/algorithms.md`
//! §3.1): L-BFGS on the incremental potential with the prefactored local–global matrix `Ã` as
//! the initial Hessian. Each iteration is
//!
//! ```text
//! local    per tet: F_e, ψ_e and the stress P_e at the iterate   (the gradient, in parallel)
//! global   p = −H g by the two-loop recursion, H₀ = Ã⁻¹           (two sparse mat-vecs)
//! search   x + α p, α = 1, ½, …, until the potential decreases (Armijo)
//! ```
//!
//! With no history the step is exactly a projective-dynamics local–global step on an ARAP-like
//! energy; the history adds the curvature that `Ã` lacks (the rotations a bending beam's
//! elements take, the true volumetric stiffness), which plain local–global iterations recover
//! only at a rate near one on slender stiff bodies. The line search makes every iteration lower
//! the potential, so a cut iteration count leaves a damped, never an energised, state.

use glam::{DMat3, Mat3A, Vec3A};

use super::{BodySolve, Built, inertia_and_drag};
use crate::material::tet::{deformation_gradient, shape_gradient};
use crate::material::{MODEL_STABLE_NEO_HOOKEAN, stable_neo_hookean, stvk};
use crate::mesh::unpack_entry;
use crate::solver::parallel::{PhaseCell, SharedSlice, SpinBarrier, chunk};

/// Curvature pairs kept (L-BFGS memory).
const HISTORY: usize = 5;
/// Step halvings before an iteration is given up (the iterate is then as good as f32 allows).
const MAX_HALVINGS: u32 = 8;
/// Armijo's sufficient-decrease constant.
const ARMIJO: f64 = 1e-4;

/// The rows' vectors and the iteration's scalars, owned by the solve phase.
#[derive(Clone, Debug, Default)]
pub(crate) struct QuasiNewton {
    /// Per tet: `V_e P_e` at the last evaluated point.
    stress: Vec<Mat3A>,
    /// Per tet and per row: its elastic, and inertia and drag, energy at the last evaluation,
    /// summed by thread 0 in index order so the potential, and with it every line-search
    /// decision, is the same for any thread count.
    tet_energy: Vec<f64>,
    row_energy: Vec<f64>,
    /// Per vertex of the solved bodies: `δ = x − x^n` of the point being evaluated. Elements
    /// read `F(x^n) + F(δ)` rather than `F(x)`: the rounding of f32 positions (2.4e-7 m at
    /// 2 m) is a strain of 1e-5 in a 4 cm element, a stress noise of 800 Pa at E = 1.2e8 Pa
    /// that would make the line search's potential and the gradient jitter from one trial to
    /// the next; δ is exact to f32's relative precision.
    disp: Vec<Vec3A>,
    /// Per row: the mat-vecs' intermediate and result, and the gradient at the last trial.
    z: Vec<Vec3A>,
    r: Vec<Vec3A>,
    trial_grad: Vec<Vec3A>,
    rows: RowVectors,
}

/// Per row of the body's system.
#[derive(Clone, Debug, Default)]
struct RowVectors {
    /// Inertia and drag: diagonal `d` and constant force `e` (`vertex::external_terms`).
    diag: Vec<f32>,
    force: Vec<Vec3A>,
    /// `δ = x − x^n` of the accepted iterate.
    delta: Vec<Vec3A>,
    /// Gradient at the accepted iterate.
    grad: Vec<Vec3A>,
    /// Search direction.
    dir: Vec<Vec3A>,
    /// The two-loop's vector before `Ã⁻¹`.
    q: Vec<Vec3A>,
    /// Vectors for the next curvature pair.
    spare_s: Vec<Vec3A>,
    spare_y: Vec<Vec3A>,
}

/// A body's L-BFGS curvature pairs `(s, y, 1/(sᵀy))`, oldest first. Kept across substeps
/// while the body stays on the path with the same factor: the inertia part of the Hessian is
/// constant and the elastic part changes little from one substep to the next, so the pairs of
/// the last substep start the next one with the curvature `Ã` lacks.
#[derive(Clone, Debug, Default)]
pub(crate) struct History {
    s: Vec<Vec<Vec3A>>,
    y: Vec<Vec<Vec3A>>,
    rho: Vec<f64>,
}

impl History {
    /// Forgets every pair.
    pub fn clear(&mut self) {
        self.s.clear();
        self.y.clear();
        self.rho.clear();
    }
}

/// What thread 0 decides and the other threads follow.
#[derive(Clone, Copy, Debug, Default)]
struct Control {
    /// Step length of the current trial.
    alpha: f32,
    /// The potential at the accepted iterate, and the directional derivative `gᵀp` there.
    energy: f64,
    slope: f64,
    /// The potential at the last trial.
    trial_energy: f64,
    /// Stop iterating (no descent direction left at f32 precision).
    stop: bool,
    /// The last trial met the Armijo condition.
    ///
    /// Each flag is written by thread 0 only in the phase that decides it and read by every
    /// thread after the barrier that ends it; the next write is several barriers later, so no
    /// thread reads a flag that was already reset for the next decision.
    accepted: bool,
}

/// Squared force residuals of the body's first and last iterate \[N²\].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Residuals {
    pub first: f64,
    pub last: f64,
}

impl QuasiNewton {
    /// Sizes the scratch for `vertices` vertices, `tets` tets and `rows` rows.
    pub fn resize(&mut self, vertices: usize, tets: usize, rows: usize) {
        self.stress.resize(tets, Mat3A::ZERO);
        self.disp.resize(vertices, Vec3A::ZERO);
        self.tet_energy.resize(tets, 0.0);
        self.row_energy.resize(rows, 0.0);
        let r = &mut self.rows;
        for v in [
            &mut r.force,
            &mut r.delta,
            &mut r.grad,
            &mut r.dir,
            &mut r.q,
            &mut self.z,
            &mut self.r,
            &mut self.trial_grad,
        ] {
            v.resize(rows, Vec3A::ZERO);
        }
        r.diag.resize(rows, 0.0);
    }

    /// The shared view the phase's threads work through.
    pub fn share<'a>(&'a mut self, histories: &'a mut [History]) -> SharedQuasiNewton<'a> {
        SharedQuasiNewton {
            histories: PhaseCell::new(histories),
            stress: SharedSlice::new(&mut self.stress),
            tet_energy: SharedSlice::new(&mut self.tet_energy),
            row_energy: SharedSlice::new(&mut self.row_energy),
            disp: SharedSlice::new(&mut self.disp),
            z: SharedSlice::new(&mut self.z),
            r: SharedSlice::new(&mut self.r),
            trial_grad: SharedSlice::new(&mut self.trial_grad),
            rows: PhaseCell::new(&mut self.rows),
            control: PhaseCell::new(Control::default()),
        }
    }
}

/// [`QuasiNewton`] as the threads of one solve phase share it: per-tet and per-row slots
/// written by one thread each, the row vectors handed between phases behind barriers.
pub(crate) struct SharedQuasiNewton<'a> {
    stress: SharedSlice<'a, Mat3A>,
    tet_energy: SharedSlice<'a, f64>,
    row_energy: SharedSlice<'a, f64>,
    disp: SharedSlice<'a, Vec3A>,
    z: SharedSlice<'a, Vec3A>,
    r: SharedSlice<'a, Vec3A>,
    trial_grad: SharedSlice<'a, Vec3A>,
    rows: PhaseCell<&'a mut RowVectors>,
    /// Per body, touched by thread 0 only.
    histories: PhaseCell<&'a mut [History]>,
    control: PhaseCell<Control>,
}

impl SharedQuasiNewton<'_> {
    /// Thread `t`'s share of `iterations` quasi-Newton iterations of body `body` with factor
    /// `f`, from the positions in `inp.pos` (the initial guess), which receive the result.
    ///
    /// # Safety
    /// Every thread of the phase calls this with the same arguments. The body's free vertices'
    /// positions are written only here; between barriers each row, tet and per-thread slot is
    /// written by one thread, and thread 0 alone touches the row vectors in its serial parts.
    pub unsafe fn solve(
        &self,
        inp: &BodySolve<'_>,
        body: usize,
        f: &Built,
        iterations: u32,
        t: usize,
        barrier: &SpinBarrier,
    ) -> Residuals {
        let threads = inp.threads;
        let n = f.rows.len();
        // SAFETY (whole function): see the contract; every access below names its phase.
        unsafe {
            if t == 0 {
                let r = self.rows.get_mut();
                let st = inp.state;
                // The body's rigid motion over the substep: its centre's velocity and, for a
                // free body, its exact spin.
                let bd = &st.bodies[body];
                let brange = bd.vertex_start as usize..(bd.vertex_start + bd.vertex_count) as usize;
                let mass: f32 = st.masses[brange.clone()].iter().sum();
                let vc =
                    brange.clone().fold(Vec3A::ZERO, |a, v| a + Vec3A::from_vec4(inp.velocities[v]) * st.masses[v])
                        / mass.max(f32::MIN_POSITIVE);
                for (row, &v) in f.rows.iter().enumerate() {
                    let v = v as usize;
                    (r.diag[row], r.force[row]) = inertia_and_drag(st, inp.inertia, inp.velocity, v);
                    // The iterations start from x^n moved rigidly (see `docs/algorithms.md`
                    // §3.2), not from VBD's extrapolated guess x^(0), whose per-vertex
                    // acceleration term fed each inexact step into the next.
                    let x = Vec3A::from_vec4(inp.start[v]);
                    let d = match inp.spin {
                        Some((center, rotation)) => vc * inp.h + rotation * (x - center) - (x - center),
                        None => vc * inp.h,
                    };
                    r.delta[row] = d;
                    inp.pos.set(v, (Vec3A::from_vec4(inp.start[v]) + d).extend(0.0));
                }
                // Every vertex of the body, pinned ones included (they sit at their targets).
                let b = &st.bodies[body];
                for v in b.vertex_start as usize..(b.vertex_start + b.vertex_count) as usize {
                    self.disp.set(v, Vec3A::from_vec4(inp.pos.get(v)) - Vec3A::from_vec4(inp.start[v]));
                }
            }
            barrier.wait();
            self.evaluate(inp, f, t, barrier);
            let mut residuals = Residuals::default();
            // The row vectors are sized for the largest body of the substep: thread 0 reads and
            // writes this body's first `n` rows only.
            if t == 0 {
                let r = self.rows.get_mut();
                r.grad[..n].copy_from_slice(&self.trial_grad.as_slice()[..n]);
                let c = self.control.get_mut();
                *c = Control { energy: c.trial_energy, ..Control::default() };
                residuals.first = squared_norm(&r.grad[..n]);
            }
            barrier.wait();
            for _ in 0..iterations {
                // Direction: the two-loop recursion around H₀ = Ã⁻¹.
                let mut alphas = [0.0f64; HISTORY];
                if t == 0 {
                    let r = self.rows.get_mut();
                    let h = &self.histories.get()[body];
                    let q = &mut r.q[..n];
                    q.copy_from_slice(&r.grad[..n]);
                    for i in (0..h.s.len()).rev() {
                        alphas[i] = h.rho[i] * dot(&h.s[i], q);
                        axpy(q, -alphas[i] as f32, &h.y[i]);
                    }
                }
                barrier.wait();
                {
                    let q = &self.rows.get().q;
                    for i in f.inverse.rows_of(true, threads, t) {
                        self.z.set(i, f.inverse.lower_row(i, q));
                    }
                }
                barrier.wait();
                {
                    let z = self.z.as_slice();
                    for i in f.inverse.rows_of(false, threads, t) {
                        let (row, v) = f.inverse.upper_row(i, z);
                        self.r.set(row, v);
                    }
                }
                barrier.wait();
                if t == 0 {
                    let r = self.rows.get_mut();
                    let q = &mut r.q[..n];
                    q.copy_from_slice(&self.r.as_slice()[..n]);
                    let h = &self.histories.get()[body];
                    for i in 0..h.s.len() {
                        let beta = h.rho[i] * dot(&h.y[i], q);
                        axpy(q, (alphas[i] - beta) as f32, &h.s[i]);
                    }
                    for (d, x) in r.dir[..n].iter_mut().zip(q.iter()) {
                        *d = -*x;
                    }
                    let c = self.control.get_mut();
                    c.slope = dot(&r.grad[..n], &r.dir[..n]);
                    c.alpha = 1.0;
                    // Not a descent direction: the history went stale (Ã⁻¹ alone always gives
                    // one). The substep ends here and the next starts without the history.
                    c.stop = !(c.slope < 0.0);
                    if c.stop {
                        self.histories.get_mut()[body].clear();
                    }
                }
                barrier.wait();
                if self.control.get().stop {
                    break;
                }
                // Line search.
                let mut accepted = false;
                for _ in 0..=MAX_HALVINGS {
                    let alpha = self.control.get().alpha;
                    {
                        let r = self.rows.get();
                        for row in chunk(n, threads, t) {
                            let v = f.rows[row] as usize;
                            let d = r.delta[row] + r.dir[row] * alpha;
                            self.disp.set(v, d);
                            inp.pos.set(v, (Vec3A::from_vec4(inp.start[v]) + d).extend(0.0));
                        }
                    }
                    barrier.wait();
                    self.evaluate(inp, f, t, barrier);
                    if t == 0 {
                        let c = self.control.get_mut();
                        c.accepted = c.trial_energy <= c.energy + ARMIJO * c.alpha as f64 * c.slope;
                        if !c.accepted {
                            c.alpha *= 0.5;
                        }
                    }
                    barrier.wait();
                    accepted = self.control.get().accepted;
                    if accepted {
                        break;
                    }
                }
                if !accepted {
                    // No decrease found: the accepted iterate stands, and the next substep
                    // starts without the history that pointed here.
                    if t == 0 {
                        self.histories.get_mut()[body].clear();
                    }
                    let r = self.rows.get();
                    for row in chunk(n, threads, t) {
                        let v = f.rows[row] as usize;
                        self.disp.set(v, r.delta[row]);
                        inp.pos.set(v, (Vec3A::from_vec4(inp.start[v]) + r.delta[row]).extend(0.0));
                    }
                    barrier.wait();
                    break;
                }
                if t == 0 {
                    let c = self.control.get_mut();
                    let r = self.rows.get_mut();
                    let alpha = c.alpha;
                    let trial_grad = &self.trial_grad.as_slice()[..n];
                    // The new pair is built in spare vectors; a full history hands its oldest
                    // pair's vectors back as the next spares, so a long run allocates nothing.
                    let (mut s, mut y) = (std::mem::take(&mut r.spare_s), std::mem::take(&mut r.spare_y));
                    s.clear();
                    s.extend(r.dir[..n].iter().map(|d| *d * alpha));
                    y.clear();
                    y.extend(trial_grad.iter().zip(&r.grad[..n]).map(|(a, b)| *a - *b));
                    let sy = dot(&s, &y);
                    for (d, ds) in r.delta[..n].iter_mut().zip(&s) {
                        *d += *ds;
                    }
                    r.grad[..n].copy_from_slice(trial_grad);
                    c.energy = c.trial_energy;
                    // Only pairs of positive curvature keep H positive definite.
                    if sy > 1e-12 * dot(&s, &s).sqrt() * dot(&y, &y).sqrt() {
                        let h = &mut self.histories.get_mut()[body];
                        if h.s.len() == HISTORY {
                            h.rho.remove(0);
                            (s, y) = (std::mem::replace(&mut h.s[0], s), std::mem::replace(&mut h.y[0], y));
                            h.s.rotate_left(1);
                            h.y.rotate_left(1);
                        } else {
                            h.s.push(s);
                            h.y.push(y);
                            (s, y) = (Vec::new(), Vec::new());
                        }
                        h.rho.push(1.0 / sy);
                    }
                    (r.spare_s, r.spare_y) = (s, y);
                }
                barrier.wait();
            }
            if t == 0 {
                residuals.last = squared_norm(&self.rows.get().grad[..n]);
            }
            barrier.wait();
            residuals
        }
    }

    /// The gradient at the last accepted iterate, per row.
    ///
    /// # Safety
    /// Only after [`Self::solve`] returned on every thread, before the next solve.
    pub unsafe fn gradient(&self) -> &[Vec3A] {
        // SAFETY: the caller guarantees no thread writes the row vectors now.
        unsafe { &self.rows.get().grad }
    }

    /// The potential and its gradient at the positions in `inp.pos`: `trial_energy` and
    /// `trial_grad`.
    ///
    /// # Safety
    /// As [`Self::solve`]; positions are not written during the call.
    unsafe fn evaluate(&self, inp: &BodySolve<'_>, f: &Built, t: usize, barrier: &SpinBarrier) {
        let (st, threads) = (inp.state, inp.threads);
        let start = |v: u32| Vec3A::from_vec4(inp.start[v as usize]).as_dvec3();
        // SAFETY: the displacements are written only between evaluations.
        let disp = |v: u32| unsafe { self.disp.get(v as usize) }.as_dvec3();
        for k in chunk(f.tets.len(), threads, t) {
            let e = f.tets.start + k;
            let tet = &st.tets[e];
            let m = &st.materials[tet.material as usize];
            let dm_inv = tet.dm_inv().as_dmat3();
            let fd: DMat3 = deformation_gradient::<f64>(&tet.vertices.map(start), &dm_inv)
                + deformation_gradient::<f64>(&tet.vertices.map(disp), &dm_inv);
            let f32m = Mat3A::from(fd.as_mat3());
            let (psi, p) = if m.model == MODEL_STABLE_NEO_HOOKEAN {
                (
                    stable_neo_hookean::energy_density::<f64>(&fd, m.mu as f64, m.lambda as f64),
                    stable_neo_hookean::pk1::<f32>(&f32m, m.mu, m.lambda),
                )
            } else {
                (
                    stvk::energy_density::<f64>(&fd, m.mu as f64, m.lambda as f64),
                    stvk::pk1::<f32>(&f32m, m.mu, m.lambda),
                )
            };
            // SAFETY: tet e is this thread's alone in this phase.
            unsafe {
                self.tet_energy.set(e, psi * tet.volume as f64);
                self.stress.set(e, p * tet.volume);
            }
        }
        barrier.wait();
        {
            // SAFETY: the stresses were completed at the barrier; each row is this thread's.
            let r = unsafe { self.rows.get() };
            for row in chunk(f.rows.len(), threads, t) {
                let v = f.rows[row] as usize;
                let d = unsafe { self.disp.get(v) };
                let mut g = d * r.diag[row] - r.force[row];
                let dd = d.as_dvec3();
                let energy = 0.5 * r.diag[row] as f64 * dd.length_squared() - r.force[row].as_dvec3().dot(dd);
                for &entry in st.tet_adjacency.row(v) {
                    let (e, slot) = unpack_entry(entry);
                    let ga = shape_gradient::<f32>(&st.tets[e as usize].dm_inv(), slot as usize);
                    g += unsafe { self.stress.get(e as usize) } * ga;
                }
                unsafe {
                    self.trial_grad.set(row, g);
                    self.row_energy.set(row, energy);
                }
            }
        }
        barrier.wait();
        if t == 0 {
            // SAFETY: thread 0 alone until the barrier.
            unsafe {
                let tets = f.tets.clone().map(|e| self.tet_energy.get(e)).sum::<f64>();
                let total = tets + (0..f.rows.len()).map(|row| self.row_energy.get(row)).sum::<f64>();
                self.control.get_mut().trial_energy = total;
            }
        }
        barrier.wait();
    }
}

fn dot(a: &[Vec3A], b: &[Vec3A]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x.dot(*y) as f64).sum()
}

fn squared_norm(a: &[Vec3A]) -> f64 {
    dot(a, a)
}

fn axpy(out: &mut [Vec3A], a: f32, x: &[Vec3A]) {
    for (o, v) in out.iter_mut().zip(x) {
        *o += *v * a;
    }
}
