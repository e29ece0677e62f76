//! Per-body rigid-translation correction (Pliant; not in \[VBD\]).
//!
//! Gauss–Seidel sweeps move a body as a whole only slowly: when one vertex moves, its
//! elastically stiff neighbours pull it back, so a translation that gravity asks of every vertex
//! arrives a fraction `(m/w)/(m/w + k)` per sweep (about 3 % for a 0.1 m, 1 MPa block at 60 Hz).
//! Friction, in contrast, acts in full on the contact layer. A block on a 35° incline with
//! μ = 0.5 therefore never started to slide, at any substep count.
//!
//! Elastic and Rayleigh forces are translation invariant, so a body's best rigid translation
//! `t` minimises only its inertia, drag, contact and friction terms:
//!
//! ```text
//! E(t) = ½ H |t|² − F·t + Σ_c ½ k_c (δ − d_c(x_c + t))₊² + Σ_c μ_c λ_c f0(‖P_c (x_c + t − x_c^n)‖)
//! ```
//!
//! with `F, H` the summed inertia/drag force and stiffness, `λ_c` and the tangent projector
//! `P_c` lagged at the step's start `x^n` (IPC's semi-implicit friction; `E` is then a convex
//! potential). A few Newton
//! steps with a backtracking line search (f64, exact friction Hessian) minimise it; the result
//! is clamped so no vertex enters an obstacle, and applied to the initial guess of bodies
//! without kinematic vertices. It converges the slowest mode, including stick–slip, and leaves
//! the deformation to the sweeps: a one-level coarse correction.

use glam::{DMat3, DVec3, Vec3A, Vec4};

use super::parallel::{SharedSlice, SpinBarrier, chunk};
use super::vbd_vertex::VertexInputs;
use crate::collision::limit_step;
use crate::state::VERTEX_KINEMATIC;

/// Newton steps per correction.
const NEWTON_STEPS: usize = 8;

/// A vertex–obstacle pair that may touch during the correction.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Candidate {
    vertex: u32,
    obstacle: u32,
    /// Penalty stiffness of this vertex \[N/m\].
    stiffness: f64,
    /// Lagged normal force `λ = k_c (δ − d)₊` \[N\].
    lambda: f64,
    /// Lagged normal (defines the tangent plane of friction).
    normal: DVec3,
    /// Friction coefficient.
    mu: f64,
}

/// Shared buffers of the correction.
pub(crate) struct TranslationBuffers<'s, 'a> {
    /// One shift per body (xyz).
    pub shifts: &'s SharedSlice<'a, Vec4>,
    /// Bodies that take part (no kinematic vertex).
    pub eligible: &'s [bool],
    /// Thread 0's scratch list of contact candidates.
    pub candidates: &'s parking_lot::Mutex<Vec<Candidate>>,
}

/// One correction of every eligible body, run by all workers (thread 0 solves, all apply).
#[allow(clippy::too_many_arguments)]
pub(crate) fn correct_translation(
    t: usize,
    threads: usize,
    barrier: &SpinBarrier,
    pos: &SharedSlice<'_, Vec4>,
    flags: &SharedSlice<'_, u32>,
    inp: &VertexInputs<'_>,
    buf: &TranslationBuffers<'_, '_>,
) {
    let st = inp.state;
    let n = st.vertex_count();
    // SAFETY: flags are not written during the sweeps.
    let free = |v: usize| unsafe { flags.get(v) } & VERTEX_KINEMATIC == 0;
    if t == 0 {
        let mut candidates = buf.candidates.lock();
        for (b, body) in st.bodies.iter().enumerate() {
            let shift = if buf.eligible[b] {
                let range = body.vertex_start as usize..(body.vertex_start + body.vertex_count) as usize;
                // SAFETY: only thread 0 runs while the others wait at the barrier below.
                unsafe { solve_body(range, pos, &free, inp, &mut candidates) }
            } else {
                Vec3A::ZERO
            };
            // SAFETY: as above.
            unsafe { buf.shifts.set(b, shift.extend(0.0)) };
        }
    }
    barrier.wait();
    for v in chunk(n, threads, t) {
        let b = st.vertex_body[v] as usize;
        if buf.eligible[b] && free(v) {
            // SAFETY: each thread moves only its own vertices; shifts are read-only here.
            unsafe {
                let x = Vec3A::from_vec4(pos.get(v));
                // The shift was scaled to the earliest obstacle contact; this catches rounding.
                let p = limit_step(inp.obstacles, x, x + Vec3A::from_vec4(buf.shifts.get(b)));
                pos.set(v, p.extend(0.0));
            }
        }
    }
    barrier.wait();
}

/// Lagged IPC friction potential `f0` (\[VBD\] Eq. 15 integrated; ALGORITHMS §1.2).
fn f0(u: f64, s: f64) -> f64 {
    if u < s { -u * u * u / (3.0 * s * s) + u * u / s + s / 3.0 } else { u }
}

fn f1(u: f64, s: f64) -> f64 {
    if u < s { 2.0 * u / s - u * u / (s * s) } else { 1.0 }
}

fn f1_prime(u: f64, s: f64) -> f64 {
    if u < s { 2.0 / s - 2.0 * u / (s * s) } else { 0.0 }
}

/// Minimises `E(t)` for one body; returns the obstacle-safe shift.
///
/// # Safety
/// Reads `pos` for the body's vertices; nobody may write them meanwhile.
unsafe fn solve_body(
    range: std::ops::Range<usize>,
    pos: &SharedSlice<'_, Vec4>,
    free: &impl Fn(usize) -> bool,
    inp: &VertexInputs<'_>,
    candidates: &mut Vec<Candidate>,
) -> Vec3A {
    let st = inp.state;
    // SAFETY: caller guarantees no concurrent writer.
    let x = |v: usize| unsafe { Vec3A::from_vec4(pos.get(v)) };
    // Quadratic part: inertia (m/w) and linear drag (α m c1), isotropic per vertex.
    let (mut force, mut stiff) = (DVec3::ZERO, 0.0f64);
    for v in range.clone().filter(|&v| free(v)) {
        let dx = x(v) - Vec3A::from_vec4(inp.start[v]);
        let inertia = inp.inertia[v];
        force += ((Vec3A::from_vec4(inertia) - dx) * inertia.w).as_dvec3();
        stiff += inertia.w as f64;
        let body = &st.bodies[st.vertex_body[v] as usize];
        if body.linear_damping > 0.0 {
            let vel = inp.velocity[v];
            let am = (body.linear_damping * st.masses[v]) as f64;
            force -= (dx * vel.w + Vec3A::from_vec4(vel)).as_dvec3() * am;
            stiff += am * vel.w as f64;
        }
    }
    if !(stiff > 0.0) {
        return Vec3A::ZERO;
    }
    let unconstrained = force / stiff;
    let c = &inp.contact;
    let (delta, slip) = (c.offset as f64, c.static_slip as f64);
    // Vertices that can reach the contact offset within the unconstrained move.
    let reach = unconstrained.length() + 2.0 * delta;
    candidates.clear();
    let friction = st.bodies[st.vertex_body[range.start] as usize].friction as f64;
    for v in range.clone().filter(|&v| free(v)) {
        for (k, o) in inp.obstacles.iter().enumerate() {
            let (d, _) = o.signed_distance(x(v));
            if (d as f64) < delta + reach {
                let k_c = c.stiffness.for_mass(st.masses[v]) as f64;
                // Normal force and friction frame lagged from the step's start x^n (IPC's
                // semi-implicit friction): the current iterate may sit deep in the contact
                // layer because the initial guess carried gravity into it.
                let (d_start, n_start) = o.signed_distance(Vec3A::from_vec4(inp.start[v]));
                candidates.push(Candidate {
                    vertex: v as u32,
                    obstacle: k as u32,
                    stiffness: k_c,
                    lambda: k_c * (delta - d_start as f64).max(0.0),
                    normal: n_start.as_dvec3(),
                    mu: 0.5 * (friction + o.friction as f64),
                });
            }
        }
    }
    let energy_and_derivatives = |t: DVec3, derivatives: bool| {
        let mut e = 0.5 * stiff * t.length_squared() - force.dot(t);
        let mut g = t * stiff - force;
        let mut h = DMat3::from_diagonal(DVec3::splat(stiff));
        for cand in candidates.iter() {
            let v = cand.vertex as usize;
            let p = x(v).as_dvec3() + t;
            let (d, n) = inp.obstacles[cand.obstacle as usize].signed_distance(Vec3A::from(p.as_vec3()));
            let gap = delta - d as f64;
            if gap > 0.0 {
                let k_c = cand.stiffness;
                e += 0.5 * k_c * gap * gap;
                if derivatives {
                    let n = n.as_dvec3();
                    g -= n * (k_c * gap);
                    h += DMat3::from_cols(n * n.x, n * n.y, n * n.z) * k_c;
                }
            }
            if cand.mu > 0.0 && cand.lambda > 0.0 {
                let n0 = cand.normal;
                let disp = p - Vec3A::from_vec4(inp.start[v]).as_dvec3();
                let u = disp - n0 * n0.dot(disp);
                let ul = u.length();
                let scale = cand.mu * cand.lambda;
                e += scale * f0(ul, slip);
                if derivatives && ul > 0.0 {
                    let uh = u / ul;
                    g += uh * (scale * f1(ul, slip));
                    let tangent = DMat3::IDENTITY - DMat3::from_cols(n0 * n0.x, n0 * n0.y, n0 * n0.z);
                    let along = DMat3::from_cols(uh * uh.x, uh * uh.y, uh * uh.z);
                    h += (tangent - along) * (scale * f1(ul, slip) / ul) + along * (scale * f1_prime(ul, slip));
                } else if derivatives {
                    let tangent = DMat3::IDENTITY - DMat3::from_cols(n0 * n0.x, n0 * n0.y, n0 * n0.z);
                    h += tangent * (scale * 2.0 / slip);
                }
            }
        }
        (e, g, h)
    };
    let mut t = DVec3::ZERO;
    if candidates.is_empty() {
        t = unconstrained;
    } else {
        for _ in 0..NEWTON_STEPS {
            let (e0, g, h) = energy_and_derivatives(t, true);
            let det = h.determinant();
            if !(det.abs() > 0.0) {
                break;
            }
            let step = -(h.inverse() * g);
            let slope = g.dot(step);
            if !(slope < 0.0) {
                break;
            }
            let mut alpha = 1.0;
            let mut accepted = false;
            for _ in 0..30 {
                let (e, _, _) = energy_and_derivatives(t + step * alpha, false);
                if e <= e0 + 1e-4 * alpha * slope {
                    accepted = true;
                    break;
                }
                alpha *= 0.5;
            }
            if !accepted {
                break;
            }
            t += step * alpha;
            if (step * alpha).length() < 1e-9 {
                break;
            }
        }
    }
    // No vertex may enter an obstacle along the shift.
    let shift = Vec3A::from(t.as_vec3());
    let mut toi = 1.0f32;
    for v in range.filter(|&v| free(v)) {
        let xv = x(v);
        for o in inp.obstacles {
            if let Some(s) = o.first_entry(xv, xv + shift) {
                toi = toi.min(s);
            }
        }
    }
    if !shift.is_finite() {
        return Vec3A::ZERO;
    }
    if toi < 1.0 { shift * (toi * (1.0 - 1e-4)) } else { shift }
}
