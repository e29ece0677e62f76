//! Rigid correction of the initial guess, per body and coupled through contact (Pliant; not
//! in \[VBD\]): a one-level coarse correction whose coarse space is each body's rigid motion.
//!
//! Gauss–Seidel sweeps move a body as a whole only slowly: when one vertex moves, its
//! elastically stiff neighbours pull it back, so a translation that gravity asks of every vertex
//! arrives a fraction `(m/w)/(m/w + k)` per sweep (about 3 % for a 0.1 m, 1 MPa block at 60 Hz).
//! Friction, in contrast, acts in full on the contact layer. A block on a 35° incline with
//! μ = 0.5 therefore never started to slide, at any substep count.
//!
//! Bodies in contact with each other are worse off: a stiff contact layer locks the vertices on
//! its two sides together for Gauss–Seidel, so load passes through an interface only a little
//! per sweep. A stack of four soft cubes solved with 30 sweeps per step never came to rest: the
//! cubes bounced against each other at 3.6 Hz. Coupling translations alone through the contact
//! pairs settled the bounce, but left the cubes' tilts to the sweeps, and the stack swayed by
//! centimetres: rotations belong in the coarse space too.
//!
//! Elastic energy and Rayleigh damping are invariant under rigid motions, so the best rigid
//! motion `q_b = (t_b, θ_b)` of each body of a group linked by surface contact pairs minimises
//! only the inertia, drag, contact and friction terms. With `r` a point's arm from its body's
//! centre and `δ(r) = t + θ × r` its displacement (rotation linearised in the solve):
//!
//! ```text
//! E(q) = Σ_vertices ½ A_v |δ_v|² − f_v·δ_v                          (inertia and drag)
//!      + Σ_obstacle contacts  ½ k (δ − d(x + δ))₊² + μλ f0(‖P (x + δ − x^n)‖)
//!      + Σ_surface pairs      ½ k (δ − g − n̂·s)₊² + μλ f0(‖P (u + s)‖),   s = δ_A(r_A) − δ_B(r_B)
//! ```
//!
//! with `g, u` a pair's linearised gap and slip at the current positions, and `λ`, the normals
//! and the tangent projectors `P` lagged (IPC's semi-implicit friction; `E` is then convex).
//! Centres are the `A`-weighted centroids, so the inertia term is block diagonal:
//! `½ ΣA |t|² + ½ θᵀ J θ − F·t − τ·θ`. A few Newton steps on the dense `6G × 6G` system with a
//! backtracking line search (f64, exact friction Hessian) minimise `E`. Each motion is applied
//! exactly (`x ↦ c + R(θ)(x − c) + t`, so it strains nothing), scaled back so no vertex enters
//! an obstacle, to bodies without kinematic vertices (kinematic bodies take part as fixed
//! partners); the CCD advance that follows keeps surfaces apart. The sweeps are left with the
//! deformation.
//!
//! Pairs come from the last detection (the previous step's): the correction runs before this
//! step's detection, which needs the corrected initial guess.

use glam::{DMat3, DVec3, Mat3A, Vec3A, Vec4};

use super::parallel::{SharedSlice, SpinBarrier, chunk};
use super::vbd_contact::relative_displacement;
use super::vbd_vertex::VertexInputs;
use crate::collision::surface_pairs::ContactPair;
use crate::collision::{Obstacle, friction_f0, friction_f1_over_u, friction_f1_prime, limit_step};
use crate::math::cholesky_solve;
use crate::state::{SimState, VERTEX_KINEMATIC};

/// Newton steps per correction.
const NEWTON_STEPS: usize = 8;
/// Most bodies one coupled correction solves together: the dense Newton system has `6G`
/// unknowns (48 bodies: a 288² Cholesky factorisation per Newton step, about 8 Mflop). Bodies
/// of larger contact groups are left to the sweeps.
const MAX_GROUP_BODIES: usize = 48;
/// A body that takes no part in the current group solve.
const FIXED: u32 = u32::MAX;

/// A body's rigid motion: `x ↦ center + rotation (x − center) + translation`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RigidMotion {
    pub center: Vec3A,
    pub rotation: Mat3A,
    pub translation: Vec3A,
}

impl Default for RigidMotion {
    fn default() -> Self {
        Self::IDENTITY
    }
}

impl RigidMotion {
    pub const IDENTITY: Self = Self { center: Vec3A::ZERO, rotation: Mat3A::IDENTITY, translation: Vec3A::ZERO };

    /// The motion with rotation vector `theta` \[rad\] about `center`, then `translation`.
    fn new(center: DVec3, translation: DVec3, theta: DVec3) -> Self {
        let angle = theta.length();
        let rotation =
            if angle > 0.0 { Mat3A::from_axis_angle((theta / angle).as_vec3(), angle as f32) } else { Mat3A::IDENTITY };
        Self { center: center.as_vec3().into(), rotation, translation: translation.as_vec3().into() }
    }

    #[inline]
    pub fn apply(&self, x: Vec3A) -> Vec3A {
        self.center + self.rotation * (x - self.center) + self.translation
    }
}

/// One side of a contact point: its body's group slot (or `FIXED`), the sum of its weights and
/// its arm from the body's centre. The point moves by `coef · (t + θ × arm)`.
#[derive(Clone, Copy, Debug)]
struct Side {
    slot: u32,
    coef: f64,
    arm: DVec3,
}

impl Side {
    const NONE: Self = Self { slot: FIXED, coef: 0.0, arm: DVec3::ZERO };
}

/// A vertex–obstacle pair that may touch during the correction.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    side: Side,
    obstacle: u32,
    /// Current position and `x^n` of the vertex.
    position: DVec3,
    start: DVec3,
    /// Penalty stiffness of this vertex \[N/m\].
    stiffness: f64,
    /// Lagged normal force `λ = k_c (δ − d)₊` \[N\].
    lambda: f64,
    /// Lagged normal (defines the tangent plane of friction).
    normal: DVec3,
    /// Friction coefficient.
    mu: f64,
}

/// A surface contact pair between a body of the group and another body (of the group, or
/// fixed).
#[derive(Clone, Copy, Debug)]
struct Coupling {
    sides: [Side; 2],
    /// Linearised gap and slip at the current positions.
    gap: f64,
    slip: DVec3,
    /// Lagged normal: direction of the gap and normal of the friction plane.
    normal: DVec3,
    stiffness: f64,
    lambda: f64,
    mu: f64,
}

/// Inertia and drag of one body in the coarse space.
#[derive(Clone, Copy, Debug)]
struct BodyQuadratic {
    /// `A`-weighted centroid of the free vertices.
    center: DVec3,
    /// `ΣA` and `J = ΣA (|r|² I − r rᵀ)`.
    stiff: f64,
    inertia: DMat3,
    /// `F = Σf` and `τ = Σ r × f`.
    force: DVec3,
    torque: DVec3,
    /// Whether the body's coarse space includes rotation (volumetric bodies).
    rotates: bool,
}

/// The energy `E(q)` of one group.
#[derive(Clone, Debug, Default)]
struct Problem {
    bodies: Vec<BodyQuadratic>,
    candidates: Vec<Candidate>,
    couplings: Vec<Coupling>,
    /// Contact offset δ and static slip of friction \[m\].
    delta: f64,
    static_slip: f64,
}

/// Reusable buffers of the correction (thread 0 only).
#[derive(Clone, Debug, Default)]
pub(crate) struct RigidScratch {
    problem: Problem,
    /// Union–find over bodies.
    parent: Vec<u32>,
    /// Per body: its group, or `FIXED`.
    group: Vec<u32>,
    /// Per body: its slot within its group.
    slot: Vec<u32>,
    /// Bodies in group order; group `g` is `members[starts[g]..starts[g + 1]]`.
    members: Vec<u32>,
    starts: Vec<u32>,
    /// `(group, pair)` of every pair a group couples to, sorted.
    group_pairs: Vec<(u32, u32)>,
    /// Per body: it has a surface pair with another body.
    coupled: Vec<bool>,
    /// Newton state (`6G` and `(6G)²`).
    q: Vec<f64>,
    step: Vec<f64>,
    trial: Vec<f64>,
    grad: Vec<f64>,
    hess: Vec<f64>,
}

/// Shared buffers of the correction.
pub(crate) struct RigidBuffers<'s, 'a> {
    /// One motion per body.
    pub motions: &'s SharedSlice<'a, RigidMotion>,
    /// Bodies that take part (no kinematic vertex).
    pub eligible: &'s [bool],
    /// Thread 0's scratch.
    pub scratch: &'s parking_lot::Mutex<RigidScratch>,
}

/// One correction of every eligible body, run by all workers (thread 0 solves, all apply).
#[allow(clippy::too_many_arguments)]
pub(crate) fn correct_rigid(
    t: usize,
    threads: usize,
    barrier: &SpinBarrier,
    pos: &SharedSlice<'_, Vec4>,
    flags: &SharedSlice<'_, u32>,
    inp: &VertexInputs<'_>,
    buf: &RigidBuffers<'_, '_>,
) {
    let st = inp.state;
    let n = st.vertex_count();
    // SAFETY: flags are not written during the sweeps.
    let free = |v: usize| unsafe { flags.get(v) } & VERTEX_KINEMATIC == 0;
    if t == 0 {
        let mut scratch = buf.scratch.lock();
        // SAFETY: only thread 0 runs while the others wait at the barrier below; the pair
        // lists change only in detection phases.
        unsafe {
            let pairs = &inp.surface.get().pairs;
            scratch.build_groups(st, buf.eligible, pairs);
            for b in 0..st.bodies.len() {
                buf.motions.set(b, RigidMotion::IDENTITY);
            }
            for g in 0..scratch.starts.len().saturating_sub(1) {
                scratch.solve_group(g, pos, &free, inp, pairs, buf.motions);
            }
        }
    }
    barrier.wait();
    for v in chunk(n, threads, t) {
        let b = st.vertex_body[v] as usize;
        if buf.eligible[b] && free(v) {
            // SAFETY: each thread moves only its own vertices; motions are read-only here.
            unsafe {
                let motion = buf.motions.get(b);
                if motion != RigidMotion::IDENTITY {
                    let x = Vec3A::from_vec4(pos.get(v));
                    // The motion was scaled to the earliest obstacle contact; this catches
                    // rounding.
                    let p = limit_step(inp.obstacles, x, motion.apply(x));
                    pos.set(v, p.extend(0.0));
                }
            }
        }
    }
    barrier.wait();
}

fn find(parent: &mut [u32], mut a: u32) -> u32 {
    while parent[a as usize] != a {
        let up = parent[parent[a as usize] as usize];
        parent[a as usize] = up;
        a = up;
    }
    a
}

fn outer(a: DVec3, b: DVec3) -> DMat3 {
    DMat3::from_cols(a * b.x, a * b.y, a * b.z)
}

/// A point's arm from its body's centre, or zero for a body that does not rotate.
fn arm(rotates: bool, r: DVec3) -> DVec3 {
    if rotates { r } else { DVec3::ZERO }
}

/// `[r]×`: the matrix with `[r]× v = r × v`.
fn skew(r: DVec3) -> DMat3 {
    DMat3::from_cols(DVec3::new(0.0, r.z, -r.y), DVec3::new(-r.z, 0.0, r.x), DVec3::new(r.y, -r.x, 0.0))
}

/// Energy, gradient and Hessian (with respect to the contact point's displacement) of a
/// penalty contact with gap `gap` along `normal`, and a lagged friction term with slip `slip`.
struct ContactTerm {
    energy: f64,
    gradient: DVec3,
    hessian: DMat3,
}

#[allow(clippy::too_many_arguments)]
fn contact_term(
    gap: f64,
    normal: DVec3,
    stiffness: f64,
    friction_normal: DVec3,
    slip: DVec3,
    mu_lambda: f64,
    delta: f64,
    static_slip: f64,
    derivatives: bool,
) -> ContactTerm {
    let mut c = ContactTerm { energy: 0.0, gradient: DVec3::ZERO, hessian: DMat3::ZERO };
    let pen = delta - gap;
    if pen > 0.0 {
        c.energy += 0.5 * stiffness * pen * pen;
        if derivatives {
            c.gradient -= normal * (stiffness * pen);
            c.hessian += outer(normal, normal) * stiffness;
        }
    }
    if mu_lambda > 0.0 {
        let n0 = friction_normal;
        let u = slip - n0 * n0.dot(slip);
        let ul = u.length();
        c.energy += mu_lambda * friction_f0(ul, static_slip);
        if derivatives {
            let tangent = DMat3::IDENTITY - outer(n0, n0);
            // f1(u)/u, finite at u = 0: the isotropic sticking stiffness.
            let f1_over_u = friction_f1_over_u(ul, static_slip);
            if ul > 0.0 {
                let uh = u / ul;
                let along = outer(uh, uh);
                c.gradient += u * (mu_lambda * f1_over_u);
                c.hessian += (tangent - along) * (mu_lambda * f1_over_u)
                    + along * (mu_lambda * friction_f1_prime(ul, static_slip));
            } else {
                c.hessian += tangent * (mu_lambda * f1_over_u);
            }
        }
    }
    c
}

impl RigidScratch {
    /// Groups the eligible bodies linked by cross-body pairs (in body order, so the result
    /// does not depend on pair order), and lists the pairs each group couples to.
    fn build_groups(&mut self, st: &SimState, eligible: &[bool], pairs: &[ContactPair]) {
        let nb = st.bodies.len();
        self.parent.clear();
        self.parent.extend(0..nb as u32);
        let sides = |p: &ContactPair| (st.vertex_body[p.vertices[0] as usize], st.vertex_body[p.vertices[3] as usize]);
        for p in pairs {
            let (a, b) = sides(p);
            if a != b && eligible[a as usize] && eligible[b as usize] {
                let (ra, rb) = (find(&mut self.parent, a), find(&mut self.parent, b));
                if ra != rb {
                    self.parent[ra.max(rb) as usize] = ra.min(rb);
                }
            }
        }
        // Group ids in order of each group's first (lowest) body; sizes, then members.
        self.group.clear();
        self.group.resize(nb, FIXED);
        let mut count: Vec<u32> = Vec::new();
        for b in 0..nb {
            if eligible[b] {
                let r = find(&mut self.parent, b as u32) as usize;
                if self.group[r] == FIXED {
                    self.group[r] = count.len() as u32;
                    count.push(0);
                }
                self.group[b] = self.group[r];
                count[self.group[b] as usize] += 1;
            }
        }
        // Groups too large for a dense solve are dropped (their bodies stay fixed).
        let mut renumber = vec![FIXED; count.len()];
        let mut kept = 0u32;
        for (g, &c) in count.iter().enumerate() {
            if (c as usize) <= MAX_GROUP_BODIES {
                renumber[g] = kept;
                kept += 1;
            }
        }
        self.starts.clear();
        self.starts.resize(kept as usize + 1, 0);
        for g in self.group.iter_mut() {
            if *g != FIXED {
                *g = renumber[*g as usize];
                if *g != FIXED {
                    self.starts[*g as usize + 1] += 1;
                }
            }
        }
        for g in 0..kept as usize {
            self.starts[g + 1] += self.starts[g];
        }
        self.members.clear();
        self.members.resize(self.starts[kept as usize] as usize, 0);
        self.slot.clear();
        self.slot.resize(nb, FIXED);
        let mut fill: Vec<u32> = self.starts[..kept as usize].to_vec();
        for b in 0..nb {
            let g = self.group[b];
            if g != FIXED {
                let k = fill[g as usize];
                self.slot[b] = k - self.starts[g as usize];
                self.members[k as usize] = b as u32;
                fill[g as usize] += 1;
            }
        }
        self.group_pairs.clear();
        self.coupled.clear();
        self.coupled.resize(nb, false);
        for (k, p) in pairs.iter().enumerate() {
            let (a, b) = sides(p);
            if a == b {
                continue;
            }
            self.coupled[a as usize] = true;
            self.coupled[b as usize] = true;
            let g = if self.group[a as usize] != FIXED { self.group[a as usize] } else { self.group[b as usize] };
            if g != FIXED {
                self.group_pairs.push((g, k as u32));
            }
        }
        self.group_pairs.sort_unstable();
    }

    /// Minimises `E(q)` for group `g` and writes each member's obstacle-safe motion.
    ///
    /// # Safety
    /// Reads `pos` and writes `motions` of the group's bodies; nobody may access them meanwhile.
    unsafe fn solve_group(
        &mut self,
        g: usize,
        pos: &SharedSlice<'_, Vec4>,
        free: &impl Fn(usize) -> bool,
        inp: &VertexInputs<'_>,
        pairs: &[ContactPair],
        motions: &SharedSlice<'_, RigidMotion>,
    ) {
        let st = inp.state;
        // SAFETY: caller guarantees no concurrent writer.
        let x = |v: usize| unsafe { Vec3A::from_vec4(pos.get(v)) };
        let members = self.starts[g] as usize..self.starts[g + 1] as usize;
        let pb = &mut self.problem;
        let c = &inp.contact;
        (pb.delta, pb.static_slip) = (c.offset as f64, c.static_slip as f64);
        let delta = pb.delta;

        // Inertia and drag per vertex: ½ A |δ|² − f·δ.
        let vertex_quadratic = |v: usize, damping: f32| {
            let dx = x(v) - Vec3A::from_vec4(inp.start[v]);
            let inertia = inp.inertia[v];
            let mut f = ((Vec3A::from_vec4(inertia) - dx) * inertia.w).as_dvec3();
            let mut a = inertia.w as f64;
            if damping > 0.0 {
                let vel = inp.velocity[v];
                let am = (damping * st.masses[v]) as f64;
                f -= (dx * vel.w + Vec3A::from_vec4(vel)).as_dvec3() * am;
                a += am * vel.w as f64;
            }
            (a, f)
        };
        pb.bodies.clear();
        // Largest unconstrained move of any vertex of the group.
        let mut reach = 0.0f64;
        for &b in &self.members[members.clone()] {
            let body = &st.bodies[b as usize];
            let range = body.vertex_start as usize..(body.vertex_start + body.vertex_count) as usize;
            let (mut stiff, mut moment) = (0.0, DVec3::ZERO);
            for v in range.clone().filter(|&v| free(v)) {
                let (a, _) = vertex_quadratic(v, body.linear_damping);
                stiff += a;
                moment += x(v).as_dvec3() * a;
            }
            if !(stiff > 0.0) {
                // Nothing to move (no mass): leave the whole group to the sweeps.
                return;
            }
            let center = moment / stiff;
            // Rotation joins the coarse space only where it is needed and safe: for volumetric
            // bodies resting on other bodies, whose tilts the locked interfaces otherwise leave
            // to the sweeps. A sheet's flaps turn about their folds, not with the sheet: a
            // rotation fitted to one falling flap of a draped cloth lifted the opposite one.
            // And a lone block sliding down an incline rocked under rotation corrections of
            // ±5 mrad per step, fitted against its unconverged deformation, and stopped.
            let rotates = self.coupled[b as usize] && !st.tet_adjacency.row(range.start).is_empty();
            let (mut inertia, mut force, mut torque, mut arm_max) = (DMat3::ZERO, DVec3::ZERO, DVec3::ZERO, 0.0f64);
            for v in range.filter(|&v| free(v)) {
                let (a, f) = vertex_quadratic(v, body.linear_damping);
                let r = x(v).as_dvec3() - center;
                inertia += (DMat3::from_diagonal(DVec3::splat(r.length_squared())) - outer(r, r)) * a;
                force += f;
                torque += r.cross(f);
                arm_max = arm_max.max(r.length());
            }
            if !rotates {
                // θ = 0 is then the minimiser: no torque, no arms (see `Side`), unit inertia.
                (inertia, torque, arm_max) = (DMat3::IDENTITY, DVec3::ZERO, 0.0);
            }
            // A body whose vertices are collinear cannot turn about that line; a relative ridge
            // keeps its block invertible without affecting any other rotation.
            let ridge = 1e-9 * (inertia.x_axis.x + inertia.y_axis.y + inertia.z_axis.z) + f64::MIN_POSITIVE;
            inertia += DMat3::from_diagonal(DVec3::splat(ridge));
            let turn = if inertia.determinant() > 0.0 { inertia.inverse() * torque } else { DVec3::ZERO };
            reach = reach.max((force / stiff).length() + turn.length() * arm_max);
            pb.bodies.push(BodyQuadratic { center, stiff, inertia, force, torque, rotates });
        }
        // Vertices that can reach the contact offset within the largest unconstrained move.
        let reach = reach + 2.0 * delta;
        pb.candidates.clear();
        for (slot, &b) in self.members[members.clone()].iter().enumerate() {
            let body = &st.bodies[b as usize];
            let (center, rotates) = (pb.bodies[slot].center, pb.bodies[slot].rotates);
            let range = body.vertex_start as usize..(body.vertex_start + body.vertex_count) as usize;
            for v in range.filter(|&v| free(v)) {
                for (k, o) in inp.obstacles.iter().enumerate() {
                    let (d, _) = o.signed_distance(x(v));
                    if (d as f64) < delta + reach {
                        let k_c = c.stiffness.for_mass(st.masses[v]) as f64;
                        // Normal force and friction frame lagged from the step's start x^n (IPC's
                        // semi-implicit friction): the current iterate may sit deep in the contact
                        // layer because the initial guess carried gravity into it.
                        let start = Vec3A::from_vec4(inp.start[v]);
                        let (d_start, n_start) = o.signed_distance(start);
                        let position = x(v).as_dvec3();
                        pb.candidates.push(Candidate {
                            side: Side { slot: slot as u32, coef: 1.0, arm: arm(rotates, position - center) },
                            obstacle: k as u32,
                            position,
                            start: start.as_dvec3(),
                            stiffness: k_c,
                            lambda: k_c * (delta - d_start as f64).max(0.0),
                            normal: n_start.as_dvec3(),
                            mu: 0.5 * (body.friction as f64 + o.friction as f64),
                        });
                    }
                }
            }
        }
        pb.couplings.clear();
        let first = self.group_pairs.partition_point(|&(pg, _)| (pg as usize) < g);
        for &(pg, k) in &self.group_pairs[first..] {
            if pg as usize != g {
                break;
            }
            let p = &pairs[k as usize];
            let xs = p.vertices.map(|v| x(v as usize));
            let body_a = st.vertex_body[p.vertices[0] as usize];
            let mut sides = [Side::NONE; 2];
            for (i, side) in sides.iter_mut().enumerate() {
                let body = st.vertex_body[p.vertices[3 * i] as usize];
                if self.group[body as usize] != g as u32 {
                    continue;
                }
                // This side's weights and closest point (Σ w x / Σ w).
                let (mut coef, mut point) = (0.0f64, DVec3::ZERO);
                for (k, &v) in p.vertices.iter().enumerate() {
                    if (st.vertex_body[v as usize] == body_a) == (i == 0) {
                        coef += p.weights[k] as f64;
                        point += xs[k].as_dvec3() * p.weights[k] as f64;
                    }
                }
                let slot = self.slot[body as usize];
                let quad = &pb.bodies[slot as usize];
                let arm = if coef != 0.0 { arm(quad.rotates, point / coef - quad.center) } else { DVec3::ZERO };
                *side = Side { slot, coef, arm };
            }
            pb.couplings.push(Coupling {
                sides,
                gap: p.linear_gap(&xs) as f64,
                slip: relative_displacement(&xs, inp.start, p.vertices, &p.weights).as_dvec3(),
                normal: DVec3::from_array(p.frame_normal.map(f64::from)),
                stiffness: p.stiffness as f64,
                lambda: p.friction_normal_force as f64,
                mu: p.friction as f64,
            });
        }

        let count = members.len();
        self.q.clear();
        self.q.resize(6 * count, 0.0);
        let pb = &self.problem;
        if pb.candidates.is_empty() && pb.couplings.is_empty() {
            // Free flight: each body's quadratic alone.
            for (slot, body) in pb.bodies.iter().enumerate() {
                let t = body.force / body.stiff;
                let theta = body.inertia.inverse() * body.torque;
                self.q[6 * slot..6 * slot + 6].copy_from_slice(&[t.x, t.y, t.z, theta.x, theta.y, theta.z]);
            }
        } else {
            self.newton(inp.obstacles);
        }

        // Apply exactly, scaled back so that no vertex enters an obstacle.
        for (slot, &b) in self.members[members].iter().enumerate() {
            let q = &self.q[6 * slot..6 * slot + 6];
            if !q.iter().all(|v| v.is_finite()) {
                continue;
            }
            let (t, theta) = (DVec3::new(q[0], q[1], q[2]), DVec3::new(q[3], q[4], q[5]));
            let center = self.problem.bodies[slot].center;
            let body = &st.bodies[b as usize];
            let range = body.vertex_start as usize..(body.vertex_start + body.vertex_count) as usize;
            let motion = RigidMotion::new(center, t, theta);
            let mut toi = 1.0f32;
            for v in range.filter(|&v| free(v)) {
                let xv = x(v);
                for o in inp.obstacles {
                    if let Some(s) = o.first_entry(xv, motion.apply(xv)) {
                        toi = toi.min(s);
                    }
                }
            }
            let motion = if toi < 1.0 {
                let s = (toi * (1.0 - 1e-4)) as f64;
                RigidMotion::new(center, t * s, theta * s)
            } else {
                motion
            };
            // SAFETY: caller guarantees exclusive access to the group's motions.
            unsafe { motions.set(b as usize, motion) };
        }
    }

    /// Newton iterations with a backtracking line search from `q = 0`.
    fn newton(&mut self, obstacles: &[Obstacle]) {
        let dim = self.q.len();
        for _ in 0..NEWTON_STEPS {
            let e0 = self.problem.energy(&self.q, obstacles, Some((&mut self.grad, &mut self.hess)));
            self.step.clear();
            self.step.extend(self.grad.iter().map(|g| -g));
            if !cholesky_solve(&mut self.hess, &mut self.step, dim) {
                break;
            }
            let slope: f64 = self.grad.iter().zip(&self.step).map(|(g, s)| g * s).sum();
            if !(slope < 0.0) {
                break;
            }
            let mut alpha = 1.0;
            let mut accepted = false;
            self.trial.resize(dim, 0.0);
            for _ in 0..30 {
                for i in 0..dim {
                    self.trial[i] = self.q[i] + alpha * self.step[i];
                }
                if self.problem.energy(&self.trial, obstacles, None) <= e0 + 1e-4 * alpha * slope {
                    accepted = true;
                    break;
                }
                alpha *= 0.5;
            }
            if !accepted {
                break;
            }
            std::mem::swap(&mut self.q, &mut self.trial);
            // Converged once the last step moves nothing by more than a nanometre (rotations
            // measured at a metre).
            if alpha * self.step.iter().map(|s| s * s).sum::<f64>().sqrt() < 1e-9 {
                break;
            }
        }
    }
}

/// Adds `scale · m` to the 3×3 block at `(row, col)` of a `dim × dim` row-major matrix.
fn add_block(hess: &mut [f64], dim: usize, row: usize, col: usize, m: &DMat3, scale: f64) {
    for r in 0..3 {
        for c in 0..3 {
            hess[(row + r) * dim + col + c] += scale * m.col(c)[r];
        }
    }
}

/// Adds a term of a point that moves by `Σ_sides coef (t + θ × arm)`, with gradient `g` and
/// Hessian `h` with respect to that motion: `J_iᵀ g` and `J_iᵀ h J_j`, `J_i = coef_i [I, −[arm_i]×]`.
fn add_point_term(grad: &mut [f64], hess: &mut [f64], sides: &[Side], g: DVec3, h: &DMat3) {
    let dim = grad.len();
    for si in sides.iter().filter(|s| s.slot != FIXED) {
        let i = 6 * si.slot as usize;
        let (gt, gr) = (g * si.coef, si.arm.cross(g) * si.coef);
        for r in 0..3 {
            grad[i + r] += gt[r];
            grad[i + 3 + r] += gr[r];
        }
        let ski = skew(si.arm);
        for sj in sides.iter().filter(|s| s.slot != FIXED) {
            let j = 6 * sj.slot as usize;
            let skj = skew(sj.arm);
            let c = si.coef * sj.coef;
            add_block(hess, dim, i, j, h, c);
            add_block(hess, dim, i, j + 3, &(*h * skj), -c);
            add_block(hess, dim, i + 3, j, &(ski * *h), c);
            add_block(hess, dim, i + 3, j + 3, &(ski * *h * skj), -c);
        }
    }
}

impl Problem {
    /// `E(q)`; with `derivatives`, also fills its gradient and dense row-major Hessian.
    fn energy(&self, q: &[f64], obstacles: &[Obstacle], derivatives: Option<(&mut Vec<f64>, &mut Vec<f64>)>) -> f64 {
        let dim = q.len();
        let motion = |slot: u32| {
            let i = 6 * slot as usize;
            (DVec3::new(q[i], q[i + 1], q[i + 2]), DVec3::new(q[i + 3], q[i + 4], q[i + 5]))
        };
        let displacement = |s: &Side| {
            if s.slot == FIXED {
                DVec3::ZERO
            } else {
                let (t, theta) = motion(s.slot);
                (t + theta.cross(s.arm)) * s.coef
            }
        };
        let mut out = derivatives.map(|(g, h)| {
            g.clear();
            g.resize(dim, 0.0);
            h.clear();
            h.resize(dim * dim, 0.0);
            (g, h)
        });
        let want = out.is_some();
        let (delta, slip) = (self.delta, self.static_slip);
        let mut e = 0.0;
        for (slot, b) in self.bodies.iter().enumerate() {
            let (t, theta) = motion(slot as u32);
            let j_theta = b.inertia * theta;
            e += 0.5 * b.stiff * t.length_squared() + 0.5 * theta.dot(j_theta) - b.force.dot(t) - b.torque.dot(theta);
            if let Some((g, h)) = out.as_mut() {
                let i = 6 * slot;
                let (gt, gr) = (t * b.stiff - b.force, j_theta - b.torque);
                for r in 0..3 {
                    g[i + r] += gt[r];
                    g[i + 3 + r] += gr[r];
                }
                add_block(h, dim, i, i, &DMat3::IDENTITY, b.stiff);
                add_block(h, dim, i + 3, i + 3, &b.inertia, 1.0);
            }
        }
        for cand in &self.candidates {
            let p = cand.position + displacement(&cand.side);
            let (d, n) = obstacles[cand.obstacle as usize].signed_distance(Vec3A::from(p.as_vec3()));
            let mu_lambda = cand.mu * cand.lambda;
            let term = contact_term(
                d as f64,
                n.as_dvec3(),
                cand.stiffness,
                cand.normal,
                p - cand.start,
                mu_lambda,
                delta,
                slip,
                want,
            );
            e += term.energy;
            if let Some((g, h)) = out.as_mut() {
                add_point_term(g, h, &[cand.side], term.gradient, &term.hessian);
            }
        }
        for cp in &self.couplings {
            let s = displacement(&cp.sides[0]) + displacement(&cp.sides[1]);
            let mu_lambda = cp.mu * cp.lambda;
            let gap = cp.gap + cp.normal.dot(s);
            let term = contact_term(gap, cp.normal, cp.stiffness, cp.normal, cp.slip + s, mu_lambda, delta, slip, want);
            e += term.energy;
            if let Some((g, h)) = out.as_mut() {
                add_point_term(g, h, &cp.sides, term.gradient, &term.hessian);
            }
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random numbers in [−1, 1).
    fn rng(state: &mut u64) -> f64 {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((*state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    fn vec(s: &mut u64, scale: f64) -> DVec3 {
        DVec3::new(rng(s), rng(s), rng(s)) * scale
    }

    /// Two rotating bodies, one fixed partner, a ground contact, and pairs in the penalty,
    /// sliding and sticking regimes.
    fn problem() -> (Problem, Vec<Obstacle>) {
        let mut s = 11u64;
        let mut bodies = Vec::new();
        for _ in 0..2 {
            let a = vec(&mut s, 1.0);
            let inertia = outer(a, a) * 50.0 + DMat3::from_diagonal(DVec3::new(30.0, 40.0, 35.0));
            bodies.push(BodyQuadratic {
                center: vec(&mut s, 0.5),
                stiff: 900.0,
                inertia,
                force: vec(&mut s, 2.0),
                torque: vec(&mut s, 0.5),
                rotates: true,
            });
        }
        let (delta, static_slip) = (1e-3, 1e-5);
        let side = |slot: u32, coef: f64, s: &mut u64| Side { slot, coef, arm: vec(s, 0.1) };
        let mut couplings = Vec::new();
        for (k, slots) in [[0, 1], [1, 0], [0, FIXED], [1, 1], [FIXED, 1]].into_iter().enumerate() {
            let sides = [side(slots[0], 1.0, &mut s), side(slots[1], -1.0, &mut s)];
            let normal = vec(&mut s, 1.0).normalize();
            // Slips from sticking (below 1e-5) to sliding; the test motions move contact points
            // by about 1e-6 m, away from the regime boundary and from zero slip.
            let slip = vec(&mut s, 1.0).normalize() * [3e-6, 6e-6, 1e-3, 3e-4, 2e-3][k];
            couplings.push(Coupling {
                sides,
                gap: 0.4e-3 + 0.1e-3 * k as f64,
                slip,
                normal,
                stiffness: 2e4,
                lambda: 5.0,
                mu: 0.4,
            });
        }
        let candidates = vec![Candidate {
            side: Side { slot: 0, coef: 1.0, arm: DVec3::new(0.05, -0.08, 0.02) },
            obstacle: 0,
            position: DVec3::new(0.25, 0.5e-3, -0.125),
            start: DVec3::new(0.25 - 2e-4, 0.6e-3, -0.125),
            // Soft, so that the f32 obstacle distance adds no noise to the differences.
            stiffness: 1e2,
            lambda: 3.0,
            normal: DVec3::Y,
            mu: 0.5,
        }];
        let ground = Obstacle::ground(0.0, 0.5);
        (Problem { bodies, candidates, couplings, delta, static_slip }, vec![ground])
    }

    #[test]
    fn energy_gradient_and_hessian_match_finite_differences() {
        let (pb, obstacles) = problem();
        let dim = 12;
        let mut s = 5u64;
        // Small motions: rotations of ~1e-5 rad, translations of ~1e-6 m.
        let q: Vec<f64> = (0..dim).map(|i| rng(&mut s) * if i % 6 < 3 { 1e-6 } else { 1e-5 }).collect();
        let (mut g, mut h) = (Vec::new(), Vec::new());
        pb.energy(&q, &obstacles, Some((&mut g, &mut h)));
        for i in 0..dim {
            let step = if i % 6 < 3 { 1e-8 } else { 1e-7 };
            let shifted = |d: f64| {
                let mut p = q.clone();
                p[i] += d;
                p
            };
            let (qp, qm) = (shifted(step), shifted(-step));
            let fd = (pb.energy(&qp, &obstacles, None) - pb.energy(&qm, &obstacles, None)) / (2.0 * step);
            assert!((fd - g[i]).abs() <= 1e-4 * g[i].abs().max(1.0), "gradient {i}: {} vs fd {fd}", g[i]);
            let (mut gp, mut gm, mut hp) = (Vec::new(), Vec::new(), Vec::new());
            pb.energy(&qp, &obstacles, Some((&mut gp, &mut hp)));
            pb.energy(&qm, &obstacles, Some((&mut gm, &mut hp)));
            for r in 0..dim {
                let fd = (gp[r] - gm[r]) / (2.0 * step);
                let an = h[r * dim + i];
                let scale = h[r * dim + r].abs().max(h[i * dim + i].abs()).sqrt().max(1.0);
                assert!(
                    (fd - an).abs() <= 1e-3 * scale * scale.max(an.abs().sqrt()),
                    "hessian ({r}, {i}): {an} vs fd {fd}"
                );
            }
        }
    }

    #[test]
    fn hessian_is_symmetric_positive_definite() {
        let (pb, obstacles) = problem();
        let q = vec![0.0; 12];
        let (mut g, mut h) = (Vec::new(), Vec::new());
        pb.energy(&q, &obstacles, Some((&mut g, &mut h)));
        for r in 0..12 {
            for c in 0..12 {
                assert!((h[r * 12 + c] - h[c * 12 + r]).abs() <= 1e-9 * h[r * 12 + r].abs().max(1.0));
            }
        }
        let mut rhs = g.clone();
        assert!(cholesky_solve(&mut h, &mut rhs, 12));
    }

    #[test]
    fn rigid_motion_applies_rotation_about_the_centre() {
        let m = RigidMotion::new(
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(0.0, 0.0, 0.5),
            DVec3::new(0.0, 0.0, std::f64::consts::FRAC_PI_2),
        );
        let p = m.apply(Vec3A::new(2.0, 0.0, 0.0));
        assert!((p - Vec3A::new(1.0, 1.0, 0.5)).length() < 1e-6, "{p}");
        assert_eq!(
            RigidMotion::new(DVec3::ZERO, DVec3::ZERO, DVec3::ZERO),
            RigidMotion { center: Vec3A::ZERO, ..RigidMotion::IDENTITY }
        );
    }
}
