//! Rigid correction of the initial guess, per body and coupled through contact (Pliant; not
//! in \[VBD\]): a one-level coarse correction whose coarse space is each body's rigid motion
//! or, with `CoarseSpace::Affine`, its affine motion (see "The affine coarse space" below).
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
//!
//! # The affine coarse space (`CoarseSpace::Affine`, issue 30 item 2)
//!
//! Rigid motion cannot carry load: a stack's weight compresses each cube, and the sweeps
//! carry that compression one element layer per sweep. With `CoarseSpace::Affine` every
//! volumetric body also gets a symmetric stretch `S` (six coordinates: whole-body stretch and
//! shear), `δ(r) = t + θ × r + S r`, applied exactly as `x ↦ c + R(θ) (I + S) (x − c) + t`.
//! Elastic energy is then no longer invariant: it enters `E(q)` as its quadratic model along
//! `S` at the current positions (`stretch.rs`: `V P Fᵀ` and the second derivative of `ψ` along
//! `δF = S F`, with Rayleigh damping as the sweeps apply it, projected to be convex). The
//! inertia term stays exact: `½ ΣA |θ × r + S r|²` and `Σ f·(θ × r + S r)` need only the
//! second moment `ΣA r rᵀ` and the force moment `Σ f rᵀ` (`BodyQuadratic::from_moments`).
//! Measured 2026-11-29 on `stack_soft_cubes` at 2 sweeps per step: every cube is within 1 % of
//! its analytic shortening after 0.5 s (the rigid space: 5–12 % short then, within 1 % after
//! about 1.2 s); on `heavy_on_foam` at 30 Hz and 20 sweeps the mattress under the box is
//! pressed to 0.98 of its static answer after 1 s on the stiffening layer (rigid: 0.89), and on
//! the default penalty layer it stops thinning near 1.7 of it (rigid: 3.1 after 3 s and still
//! thinning). The GPU solves it too (`rigid_reduce` sums the moments, `rigid_stretch` the
//! elasticity, `rigid_solve` takes 12 coordinates per body), within 2.6e-5 of the move of this
//! code on lavapipe; but a group of more than two bodies runs its solve out of lavapipe's loop
//! budget there (`shaders/README.md`), so CI checks the GPU's affine space on two. It is not the
//! default yet: three stacked 1e5 Pa cubes jitter more with it (`docs/algorithms.md` §2.7).
//! It does not make a ball roll (the stiffening layer's μ = 0.9 ball: 8.6 cm in 1 s, 7.1 cm
//! with the rigid space): the patch problem below is not one of body-wide strain.
//!
//! # Known limit: a soft ball does not roll (measured for issue 30, not yet fixed)
//!
//! In `ball_roll` (r = 0.15 m, 12 cells, E = 1e6 Pa, 25°, default settings) neither ball moves
//! more than a millimetre along the slope in 1 s, where a rigid ball rolls 1.48 m (μ = 0.9) and
//! slides 1.85 m (μ = 0.05). Four causes, each measured by switching it off in a local build:
//!
//! 1. **The scale-back cancels the correction.** The ball's lowest vertices carry more than
//!    the contact layer holds (cause 2) and sit exactly on the surface (distance 0.0); any move
//!    of theirs "enters" at t = 0, so `toi` is 0 or ~1e-5 every step and the whole motion is
//!    dropped. Letting a vertex go a quarter surface edge deep before scaling back (and putting
//!    it back on the surface alone) made the μ = 0.05 ball slide 1.849 m, but a ball resting in
//!    a 90° groove then stood 7 mm off one plane (`tests/gltf_io.rs` allows 5 mm): the coarse
//!    problem's contact is too soft to be trusted that deep.
//! 2. **The contact layer saturates.** A vertex's penalty holds at most `k δ` = 100 times its
//!    own weight (`ContactStiffness::default_for`); a ball's few lowest vertices carry more, the
//!    path clamp takes the rest, and the lagged normal force λ that friction and this
//!    correction read is too small. With an absolute 3e5 N/m the vertices stay 0.84–0.99 mm off.
//! 3. **Lone bodies do not turn** (`rotates` needs `coupled`). Turning them too (with 1.) rolled
//!    the μ = 0.9 ball 1.02 m, but the block of `incline_slide` on its box obstacle then slid at
//!    a third of its acceleration, its coarse rotation alternating ±7–17 mrad a step.
//! 4. **The integrator damped turning** (fixed in `spin`). Newmark (γ = 3/2) treated a turning
//!    body as an oscillation of every coordinate: a 0.2 m cube spun at 10 rad/s in zero gravity
//!    kept 37 % of its angular momentum after 2 s; it now keeps all but 5e-6 of it (Rayleigh
//!    damping acts relative to the body's spin, see `spin`).
//!
//! With 1., 3. and 4. together the μ = 0.9 ball rolled 1.00 m in 1 s (ω 11.9 rad/s where rolling
//! needs 19.7), with 2. as well 1.00 m (ω 14.3): rolling needs all four, on the CPU and the GPU.
//!
//! The stiffening contact layer (`StepConfig::contact_stiffening`, `collision::contact`) removes
//! causes 1 and 2 at their root: the lowest vertices rest 0.1 mm off the surface instead of on
//! it, so the scale-back no longer drops the motion. With it the μ = 0.05 ball slides at 3.694
//! m/s² where a rigid ball slides at 3.701 (`tests/scene_incline.rs`), but it does not spin up
//! (ω 0.002 rad/s after 1 s where 7.4 is due: cause 3), and the μ = 0.9 ball moves 7 cm in 1 s
//! (ω 0.72 rad/s).
//!
//! **What is left is the step length, not the sweeps** (measured 2026-11-28, local build, with
//! the layer on, lone volumetric bodies turning in the coarse space, and the scale-back letting
//! a vertex go 1 mm under the surface before `limit_step` puts it back on it):
//!
//! | μ = 0.9 ball, 1 s | distance | ω \[rad/s\] |
//! |---|---|---|
//! | rigid ball | 1.48 m | 19.7 |
//! | 1 × 20 sweeps | 0.91 m | 12.2 |
//! | 1 × 80 sweeps | 1.08 m | 15.1 |
//! | 1 × 300 sweeps (0.5 s) | 0.29 m (rigid 0.37) | 7.8 |
//! | 2 × 10 / 4 × 5 / 10 × 2 substeps × sweeps | 1.16 / 1.29 / 1.34 m | 15.2 / 16.8 / 17.8 |
//! | 10 × 20 (0.5 s) | 0.367 m (rigid 0.37) | 9.6 (rigid 9.9) |
//!
//! The coarse problem delivers the rotation the inertia asks for (its θ is within 10 % of
//! `J⁻¹τ` every step), and the ball rolls without slipping (ω r = v), yet it loses about 0.2 J a
//! frame whatever its speed: about the elastic energy of its contact patch (Hertz: 3.6 mm deep,
//! 2.3 cm wide, 0.18 J). At one step per 1/60 s a material point of the ball passes through the
//! patch in about two steps, and the dissipative integrator (Newmark γ = 3/2; backward Euler
//! rolls 1.05 m) damps that deformation like a vibration at its Nyquist frequency: a rolling
//! resistance of the time step, which more sweeps do not remove and substeps do. The deeper
//! allowance changed nothing (1, 3 and 6 mm gave the same run). The same build stopped
//! `incline_slide`'s block (1.6 cm where 1.61 m is due): a block's flat face rocks under a
//! coarse rotation that the penalty layer hardly resists. Neither change is in this code.
//!
//! **The sliding ball's spin-up is lost at one step per frame** (measured 2026-11-29, the same
//! local build: layer on, lone volumetric bodies turning, a vertex allowed `δ` under the surface
//! before the scale-back). The μ = 0.05 ball slides (1.77 m in 1 s, rigid 1.85) but its spin
//! stalls at 0.6–0.9 rad/s where a rigid ball reaches 7.4 at 1 s, and it stalls alike at 100
//! sweeps, with backward Euler, at E = 1e5 and 1e8 Pa, and on a plane instead of its box
//! obstacle (0.74 rad/s at 0.67 s), so neither the sweeps, nor the integrator's damping, nor the
//! contact patch's deformation, nor the box's span contacts is the cause. Substeps are:
//!
//! | μ = 0.05 ball | ω at 0.23 s | ω at 0.45–0.5 s |
//! |---|---|---|
//! | rigid ball | 1.73 | 3.33 (0.45 s) / 3.70 (0.5 s) |
//! | 1 × 20 substeps × sweeps | 0.65 | 0.68 |
//! | 2 × 10 / 4 × 5 | — | 4.36 / 4.23 (0.5 s) |
//! | 10 × 2 | 1.63 | 3.25 (0.45 s) |
//!
//! **Cause: this coarse problem holds the contact patch rigid** (found 2026-11-29). A ball
//! resting on the stiffening layer stands on a patch, flattened or one facet of its mesh
//! (which is why E = 1e8 Pa stalls alike): its lowest vertices, up to a cell (2.5 cm) ahead of
//! and behind the contact point, all sit in the layer. Turning the body about
//! its centre by `θ` presses the vertices ahead of the contact point deeper into the layer by
//! `a θ` (`a` their distance from it along the slope) and lifts those behind, so the coarse
//! contact term resists the turn with a rotational stiffness `Σ k a²` (`k` the layer's
//! stiffness where each vertex rests) that outweighs the inertia term's `I/h²` (457 N·m/rad
//! for this ball at 60 Hz). Measured on the sliding ball at 0.3–0.5 s with the layer on and
//! lone volumetric bodies turning (the scale-back as in this code, which cut nothing there):
//! the initial guess carries about 0.27 of the spin's own turn `ω h` (the
//! body's advance stops at its first obstacle contact), the coarse solve adds the rest, and the
//! sum stays within 1e-4 rad of `ω h` where the friction torque asks for `α h²` = 0.0021 rad
//! more: the coarse solve delivers none of the friction torque's turn, and the sweeps cannot
//! turn a whole ball. Halving `h` makes `I/h²` four times larger against the same contact
//! stiffness, which is why substeps recover the spin.
//!
//! Two changes tried on top of that (neither is in this code):
//! - **No normal-contact torque** (the coarse contact term sees only the body's translation;
//!   friction keeps its arm): the coarse turn rose to 0.011–0.015 rad a step and the sliding
//!   ball spun to 1–2.5 rad/s, but the turn pressed the patch's front vertices through the
//!   surface, the scale-back cut whole steps (toi 0.38–0.92), and the ball alternated between
//!   lifting off and sticking: 0.42 m in 1 s instead of 1.85.
//! - **The contact in series with a spring per vertex**: a candidate's coarse energy is the
//!   layer's minimised over the vertex's own deflection `s` against a spring `k_s`,
//!   `min_s E(d + s) + ½ k_s s²` (its Moreau envelope: convex, with stiffness
//!   `k k_s/(k + k_s)`). With a constant `k_s` of 3e4 / 1e5 N/m and vertices clamped one by one
//!   instead of the whole motion scaled back, the μ = 0.9 ball rolled 0.74 / 0.70 m in 1 s
//!   (ω 10.8 / 10.4 rad/s; rigid 1.48 m and 19.7), but the μ = 0.05 ball stopped sliding: a
//!   vertex clamped on its path stops dead, a stick that friction of 0.05 does not allow.
//!   With each vertex's own rest stiffness `Σ_e V_e (μ + (λ + μ)/3) |∇N_v|²` as `k_s`, the
//!   deflection `s* n` added to the vertices the motion takes into a layer, and a vertex
//!   left inside pushed out along the normal (not stopped on its path), the μ = 0.9 ball rolled
//!   0.99 m (ω 13.5 rad/s) on the stiffening layer and 0.98 m (ω 11.1) on the penalty, and the
//!   μ = 0.05 ball slid 1.52 m on the layer but its spin still stalled at 2.2–2.7 rad/s (7.4
//!   due at 1 s; on the penalty it stuck, cause 2). But 8 tests failed: every resting body
//!   sank too far (a dropped cube's shortening +17 %, a stack's bottom cube +12 %, the
//!   mattress under the box +26 %), the incline's block and the sliding ball accelerated 35 %
//!   too slowly, and three stacked cubes kept 1.4e-4 J of jitter. The spring double-counts the
//!   body's compliance: the coarse problem lets the body sink by it, and the sweeps then add the
//!   elastic deformation again. Preloading each spring with the layer's force at `x^n` (the
//!   body's stress balanced it there: `min_s E(d + s) + λ s + ½ k_s s²`, so a resting contact
//!   has `s* = 0`, and an unloaded one springs back) removed that bias: the stacks rested within
//!   5 % of their analytic shortening again, and the μ = 0.9 ball rolled 0.86 m (layer) and
//!   1.00 m (penalty). But the sliding ball's speed stalled now and then (a quadratic fit over
//!   [0.25, 1] s gave 1.32 m/s² for 3.70), `incline_slide`'s block slid at 1.12 m/s² for 1.61
//!   (a lone block turning rocks on its face), the mattress under the 20 kg box fell back in 10
//!   frames at 60 Hz, and a cloth on a soft cube fell back once (residual growth).
//!
//! What the coarse space lacks is the motion of rolling itself: material moving through a patch
//! that stays flat where it is. Neither a rigid nor an affine body motion holds it, and the
//! sweeps carry it one element per sweep. The same local build also made `incline_slide`'s
//! block on its box obstacle rock (coarse `θ` alternating about −8 and +6 mrad a step) and
//! crawl, where the block on the plane slid as it should; the box's span contacts (`spans`),
//! which the sweeps apply and this coarse problem leaves out, are the first suspect there.

use std::ops::Range;

use glam::{DMat3, DVec3, Mat3A, Vec3A, Vec4};

use crate::collision::surface_pairs::{ContactPair, pair_bodies};
use crate::collision::{Obstacle, limit_step};
use crate::material::tet;
use crate::math::cholesky_solve;
use crate::mesh::unpack_entry;
use crate::solver::parallel::{SharedSlice, SpinBarrier, chunk};
use crate::solver::union_find::UnionFind;
use crate::solver::vbd::contact::relative_displacement;
use crate::solver::vbd::rigid_energy::{BodyQuadratic, Candidate, Coupling, DOF, FIXED, Problem, Side, outer};
use crate::solver::vbd::stretch::{ElementMaterial, StretchQuadratic, stretch_matrix};
use crate::solver::vbd::vertex::VertexInputs;
use crate::state::{SimState, VERTEX_KINEMATIC};

/// Newton steps per correction. The correction only starts the sweeps off close to the
/// answer; with eight, a resting 343-vertex cube's correction took 5.6 steps and 13.7
/// line-search trials a frame, a fifth of its two-sweep step, and every scene test passes with
/// four. The GPU kernel (`rigid_solve.wgsl`) takes the same count.
const NEWTON_STEPS: usize = 4;
/// Newton steps per carrier update (`solver/carrier.rs`): a carrier's pose is the answer, not a
/// start, and with four the heavy box on the mattress kept sliding at 1 cm/s at 120 Hz.
const CARRIER_NEWTON_STEPS: usize = 8;
/// Most bodies one coupled correction solves together: the dense Newton system has `6G`
/// unknowns (48 bodies: a 288² Cholesky factorisation per Newton step, about 8 Mflop). Bodies
/// of larger contact groups are left to the sweeps.
const MAX_GROUP_BODIES: usize = 48;

/// A body's coarse motion: `x ↦ center + linear (x − center) + translation`, with `linear` a
/// rotation, or a rotation times a stretch `R(θ) (I + S)` for a body with an affine coarse space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RigidMotion {
    pub center: Vec3A,
    pub linear: Mat3A,
    pub translation: Vec3A,
}

impl Default for RigidMotion {
    fn default() -> Self {
        Self::IDENTITY
    }
}

impl RigidMotion {
    pub const IDENTITY: Self = Self { center: Vec3A::ZERO, linear: Mat3A::IDENTITY, translation: Vec3A::ZERO };

    /// The motion with rotation vector `theta` \[rad\] about `center`, then `translation`.
    pub(crate) fn new(center: DVec3, translation: DVec3, theta: DVec3) -> Self {
        Self::affine(center, translation, theta, DMat3::ZERO)
    }

    /// The motion `x ↦ center + R(θ) (I + S) (x − center) + translation`: the stretch applied
    /// exactly as a stretch and the rotation as a rotation, so that turning strains nothing.
    pub(crate) fn affine(center: DVec3, translation: DVec3, theta: DVec3, stretch: DMat3) -> Self {
        let angle = theta.length();
        let rotation = if angle > 0.0 { DMat3::from_axis_angle(theta / angle, angle) } else { DMat3::IDENTITY };
        Self {
            center: center.as_vec3().into(),
            linear: Mat3A::from((rotation * (DMat3::IDENTITY + stretch)).as_mat3()),
            translation: translation.as_vec3().into(),
        }
    }

    #[inline]
    pub fn apply(&self, x: Vec3A) -> Vec3A {
        self.center + self.linear * (x - self.center) + self.translation
    }
}

/// Reusable buffers of the correction (thread 0 only).
#[derive(Clone, Debug, Default)]
pub(crate) struct RigidScratch {
    problem: Problem,
    /// Bodies linked by cross-body pairs.
    sets: UnionFind,
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
    /// Volumetric bodies stretch too (`CoarseSpace::Affine`).
    pub affine: bool,
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
                scratch.solve_group(g, pos, &free, inp, pairs, buf);
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
                    let p = limit_step(inp.obstacles, b as u32, x, motion.apply(x));
                    pos.set(v, p.extend(0.0));
                }
            }
        }
    }
    barrier.wait();
}

/// Vertex `v`'s inertia and drag at `x` as a quadratic in its move δ: `½ A |δ|² − f·δ`,
/// returned as `(A, f)`.
fn vertex_quadratic(inp: &VertexInputs<'_>, x: Vec3A, v: usize, damping: f32) -> (f64, DVec3) {
    let dx = x - Vec3A::from_vec4(inp.start[v]);
    let inertia = inp.inertia[v];
    let mut f = ((Vec3A::from_vec4(inertia) - dx) * inertia.w).as_dvec3();
    let mut a = inertia.w as f64;
    if damping > 0.0 {
        let vel = inp.velocity[v];
        let am = (damping * inp.state.masses[v]) as f64;
        f -= (dx * vel.w + Vec3A::from_vec4(vel)).as_dvec3() * am;
        a += am * vel.w as f64;
    }
    (a, f)
}

/// The quadratic model of a body's elastic energy (and its elements' Rayleigh damping) along
/// its stretch at the current positions (`stretch`): each tet once, through the vertex it lists
/// first.
fn body_stretch(vertices: Range<usize>, x: &impl Fn(usize) -> Vec3A, inp: &VertexInputs<'_>) -> StretchQuadratic {
    let st = inp.state;
    let mut quad = StretchQuadratic::default();
    let spin = vertices
        .clone()
        .next()
        .and_then(|v| inp.spins.get(st.vertex_body[v] as usize).copied().flatten())
        .map(|s| s.omega_after.as_dvec3());
    for v in vertices {
        let c1 = inp.velocity[v].w as f64;
        for &entry in st.tet_adjacency.row(v) {
            let (e, slot) = unpack_entry(entry);
            if slot != 0 {
                continue;
            }
            let t = &st.tets[e as usize];
            let xs = t.vertices.map(|i| x(i as usize).as_dvec3());
            let dm_inv = t.dm_inv().as_dmat3();
            let f = tet::deformation_gradient::<f64>(&xs, &dm_inv);
            let m = &st.materials[t.material as usize];
            // Ḟ = c1 F + G_e, relative to the body's spin (as `vertex::elastic_terms` has it).
            let f_dot = (m.damping > 0.0).then(|| {
                let f_dot = f * c1 + inp.tet_rates[e as usize].as_dmat3();
                match spin {
                    Some(w) => f_dot - DMat3::from_cols(w.cross(f.x_axis), w.cross(f.y_axis), w.cross(f.z_axis)),
                    None => f_dot,
                }
            });
            let material = ElementMaterial {
                model: m.model,
                mu: m.mu as f64,
                lambda: m.lambda as f64,
                damping: m.damping as f64,
                c1,
            };
            quad.add_tet(&material, &f, f_dot.as_ref(), t.volume as f64);
        }
    }
    quad.finish();
    quad
}

/// One correction of `positions` (the initial guess) outside a step, on the calling thread (for
/// tests): what a step's correction leaves, with `eligible` bodies corrected, the pairs of
/// `surface` coupling them, in the affine coarse space or the rigid one.
#[cfg(test)]
pub(crate) fn correct_once(inp: &VertexInputs<'_>, eligible: &[bool], affine: bool, positions: &mut [Vec4]) {
    let n = inp.state.vertex_count();
    let mut motions = vec![RigidMotion::IDENTITY; inp.state.bodies.len()];
    let mut flags = inp.state.flags.clone();
    let scratch = parking_lot::Mutex::new(RigidScratch::default());
    let motions = SharedSlice::new(&mut motions);
    let buf = RigidBuffers { motions: &motions, eligible, scratch: &scratch, affine };
    let (pos, flags) = (SharedSlice::new(&mut positions[..n]), SharedSlice::new(&mut flags));
    crate::solver::parallel::run_workers(1, |t, barrier| correct_rigid(t, 1, barrier, &pos, &flags, inp, &buf));
}

impl RigidScratch {
    /// Groups the eligible bodies linked by cross-body pairs (in body order, so the result
    /// does not depend on pair order), and lists the pairs each group couples to.
    fn build_groups(&mut self, st: &SimState, eligible: &[bool], pairs: &[ContactPair]) {
        let nb = st.bodies.len();
        self.sets.reset(nb);
        let sides = |p: &ContactPair| pair_bodies(st, p.vertices);
        for p in pairs {
            let (a, b) = sides(p);
            if a != b && eligible[a as usize] && eligible[b as usize] {
                self.sets.union(a, b);
            }
        }
        // Each eligible body's root (its group's smallest body), and the group sizes.
        self.group.clear();
        self.group.resize(nb, FIXED);
        self.slot.clear();
        self.slot.resize(nb, 0);
        for b in 0..nb {
            if eligible[b] {
                let r = self.sets.find(b as u32);
                self.group[b] = r;
                self.slot[r as usize] += 1;
            }
        }
        // Members of the groups small enough for a dense solve (the others stay fixed), group
        // by group in order of their first body: the group ids and slots do not depend on the
        // pair order.
        let (group, slot) = (&mut self.group, &mut self.slot);
        self.members.clear();
        self.members.extend((0..nb as u32).filter(|&b| {
            let r = group[b as usize];
            r != FIXED && slot[r as usize] as usize <= MAX_GROUP_BODIES
        }));
        self.members.sort_unstable_by_key(|&b| (group[b as usize], b));
        group.fill(FIXED);
        self.starts.clear();
        let mut root = FIXED;
        for (k, &b) in self.members.iter().enumerate() {
            let r = self.sets.find(b);
            if r != root {
                self.starts.push(k as u32);
                root = r;
            }
            let g = self.starts.len() - 1;
            group[b as usize] = g as u32;
            slot[b as usize] = k as u32 - self.starts[g];
        }
        self.starts.push(self.members.len() as u32);
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
        buf: &RigidBuffers<'_, '_>,
    ) {
        // SAFETY: caller guarantees no concurrent writer.
        let x = |v: usize| unsafe { Vec3A::from_vec4(pos.get(v)) };
        let members = self.starts[g] as usize..self.starts[g + 1] as usize;
        let c = &inp.contact;
        (self.problem.delta, self.problem.static_slip) = (c.offset as f64, c.static_slip as f64);
        self.problem.stiffening = c.stiffening;
        let Some(reach) = self.body_quadratics(members.clone(), &x, free, inp, buf.affine) else {
            // Nothing to move (no mass): leave the whole group to the sweeps.
            return;
        };
        self.obstacle_candidates(members.clone(), &x, free, inp, reach);
        self.group_couplings(g, &x, inp, pairs);
        self.minimise(inp.obstacles, NEWTON_STEPS);
        // SAFETY: the caller's guarantee on `motions`.
        unsafe { self.apply_motions(members, &x, free, inp, buf.motions) };
    }

    /// Each member's quadratic model of inertia and drag (and, where its coarse space is
    /// affine, elasticity) about its centre of stiffness (`problem.bodies`); returns the largest
    /// unconstrained move of any vertex of the group, or `None` if a member has nothing to move.
    fn body_quadratics(
        &mut self,
        members: Range<usize>,
        x: &impl Fn(usize) -> Vec3A,
        free: &impl Fn(usize) -> bool,
        inp: &VertexInputs<'_>,
        affine: bool,
    ) -> Option<f64> {
        let st = inp.state;
        let pb = &mut self.problem;
        pb.bodies.clear();
        let mut reach = 0.0f64;
        for &b in &self.members[members] {
            let body = &st.bodies[b as usize];
            let range = body.vertex_start as usize..(body.vertex_start + body.vertex_count) as usize;
            let (mut stiff, mut moment) = (0.0, DVec3::ZERO);
            for v in range.clone().filter(|&v| free(v)) {
                let (a, _) = vertex_quadratic(inp, x(v), v, body.linear_damping);
                stiff += a;
                moment += x(v).as_dvec3() * a;
            }
            if !(stiff > 0.0) {
                return None;
            }
            let center = moment / stiff;
            let volumetric = !st.tet_adjacency.row(range.start).is_empty();
            // Rotation joins the coarse space only where it is needed and safe: for volumetric
            // bodies resting on other bodies, whose tilts the locked interfaces otherwise leave
            // to the sweeps. A sheet's flaps turn about their folds, not with the sheet: a
            // rotation fitted to one falling flap of a draped cloth lifted the opposite one.
            // And a lone block sliding down an incline rocked under rotation corrections of
            // ±5 mrad per step, fitted against its unconverged deformation, and stopped.
            let rotates = self.coupled[b as usize] && volumetric;
            let (mut second_moment, mut force_moment, mut force, mut arm_max) =
                (DMat3::ZERO, DMat3::ZERO, DVec3::ZERO, 0.0f64);
            for v in range.clone().filter(|&v| free(v)) {
                let (a, f) = vertex_quadratic(inp, x(v), v, body.linear_damping);
                let r = x(v).as_dvec3() - center;
                second_moment += outer(r, r) * a;
                force_moment += outer(f, r);
                force += f;
                arm_max = arm_max.max(r.length());
            }
            // A body whose vertices are coplanar or collinear cannot turn or stretch out of
            // them; a relative ridge keeps its blocks invertible without affecting any other
            // motion.
            let ridge =
                1e-9 * (second_moment.x_axis.x + second_moment.y_axis.y + second_moment.z_axis.z) + f64::MIN_POSITIVE;
            second_moment += DMat3::from_diagonal(DVec3::splat(ridge));
            let elastic = (affine && volumetric).then(|| body_stretch(range.clone(), x, inp));
            let quad = BodyQuadratic::from_moments(
                center,
                stiff,
                force,
                second_moment,
                force_moment,
                rotates,
                elastic.as_ref(),
            );
            let free_motion = quad.free_motion().unwrap_or([0.0; DOF]);
            let turn = DVec3::from_slice(&free_motion[3..6]).length();
            let stretch = stretch_matrix(&free_motion[6..]);
            let stretch_norm =
                (stretch.x_axis.length_squared() + stretch.y_axis.length_squared() + stretch.z_axis.length_squared())
                    .sqrt();
            reach = reach.max((force / stiff).length() + (turn + stretch_norm) * arm_max);
            pb.bodies.push(quad);
        }
        Some(reach)
    }

    /// The obstacle contacts of the group (`problem.candidates`): vertices that can reach the
    /// contact offset within the largest unconstrained move `reach`.
    fn obstacle_candidates(
        &mut self,
        members: Range<usize>,
        x: &impl Fn(usize) -> Vec3A,
        free: &impl Fn(usize) -> bool,
        inp: &VertexInputs<'_>,
        reach: f64,
    ) {
        let (st, c) = (inp.state, &inp.contact);
        let pb = &mut self.problem;
        let delta = pb.delta;
        let reach = reach + 2.0 * delta;
        pb.candidates.clear();
        for (slot, &b) in self.members[members].iter().enumerate() {
            let body = &st.bodies[b as usize];
            let center = pb.bodies[slot].center;
            let range = body.vertex_start as usize..(body.vertex_start + body.vertex_count) as usize;
            for v in range.filter(|&v| free(v)) {
                for (k, o) in inp.obstacles.iter().enumerate().filter(|(_, o)| o.applies_to(b)) {
                    let (d, _) = o.signed_distance(x(v));
                    if (d as f64) < delta + reach {
                        let k_c = c.stiffness.for_mass(st.masses[v]) as f64;
                        // Normal force and friction frame lagged from the step's start x^n (IPC's
                        // semi-implicit friction): the current iterate may sit deep in the contact
                        // layer because the initial guess carried gravity into it.
                        let start = Vec3A::from_vec4(inp.start[v]);
                        let (d_start, n_start) = o.signed_distance_start(start);
                        let position = x(v).as_dvec3();
                        pb.candidates.push(Candidate {
                            sides: [Side { slot: slot as u32, coef: 1.0, arm: position - center }, Side::NONE],
                            obstacle: k as u32,
                            position,
                            start: start.as_dvec3(),
                            stiffness: k_c,
                            lambda: c.normal_force(k_c, d_start as f64),
                            normal: n_start.as_dvec3(),
                            mu: 0.5 * (body.friction as f64 + o.friction as f64),
                        });
                    }
                }
            }
        }
    }

    /// The surface contacts between members of group `g` (`problem.couplings`), each side with
    /// its weight, closest point and arm.
    fn group_couplings(
        &mut self,
        g: usize,
        x: &impl Fn(usize) -> Vec3A,
        inp: &VertexInputs<'_>,
        pairs: &[ContactPair],
    ) {
        let st = inp.state;
        let pb = &mut self.problem;
        pb.couplings.clear();
        let first = self.group_pairs.partition_point(|&(pg, _)| (pg as usize) < g);
        for &(pg, k) in &self.group_pairs[first..] {
            if pg as usize != g {
                break;
            }
            let p = &pairs[k as usize];
            if !p.has_energy() {
                continue;
            }
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
                let arm = if coef != 0.0 { point / coef - quad.center } else { DVec3::ZERO };
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
    }

    /// Writes each member's minimising motion, applied exactly and scaled back so that no
    /// vertex enters an obstacle.
    ///
    /// # Safety
    /// Writes `motions` of the group's bodies; nobody may access them meanwhile.
    unsafe fn apply_motions(
        &self,
        members: Range<usize>,
        x: &impl Fn(usize) -> Vec3A,
        free: &impl Fn(usize) -> bool,
        inp: &VertexInputs<'_>,
        motions: &SharedSlice<'_, RigidMotion>,
    ) {
        let st = inp.state;
        for (slot, &b) in self.members[members].iter().enumerate() {
            let dof = self.problem.dof();
            let q = &self.q[dof * slot..dof * (slot + 1)];
            if !q.iter().all(|v| v.is_finite()) {
                continue;
            }
            let stretch = if dof == DOF { stretch_matrix(&q[6..]) } else { DMat3::ZERO };
            let (t, theta) = (DVec3::from_slice(&q[..3]), DVec3::from_slice(&q[3..6]));
            let center = self.problem.bodies[slot].center;
            let body = &st.bodies[b as usize];
            let range = body.vertex_start as usize..(body.vertex_start + body.vertex_count) as usize;
            let motion = RigidMotion::affine(center, t, theta, stretch);
            let mut toi = 1.0f32;
            for v in range.filter(|&v| free(v)) {
                let xv = x(v);
                for o in inp.obstacles.iter().filter(|o| o.applies_to(b)) {
                    if let Some(s) = o.first_entry(xv, motion.apply(xv)) {
                        toi = toi.min(s);
                    }
                }
            }
            let motion = if toi < 1.0 {
                let s = (toi * (1.0 - 1e-4)) as f64;
                RigidMotion::affine(center, t * s, theta * s, stretch * s)
            } else {
                motion
            };
            // SAFETY: caller guarantees exclusive access to the group's motions.
            unsafe { motions.set(b as usize, motion) };
        }
    }

    /// Minimises the energy of a one-body problem set up in `problem` (see `carrier.rs`) from
    /// `q = 0`; returns the body's motion `(t, θ)`, or `None` if it is not finite.
    pub(super) fn solve_single(&mut self, obstacles: &[Obstacle]) -> Option<(DVec3, DVec3)> {
        self.minimise(obstacles, CARRIER_NEWTON_STEPS);
        let q = self.q.get(..6)?;
        q.iter().all(|v| v.is_finite()).then(|| (DVec3::new(q[0], q[1], q[2]), DVec3::new(q[3], q[4], q[5])))
    }

    /// Minimises the problem's energy into `q` (`DOF` per body) from `q = 0`, with at most `steps`
    /// Newton steps.
    fn minimise(&mut self, obstacles: &[Obstacle], steps: usize) {
        let pb = &self.problem;
        self.q.clear();
        let dof = pb.dof();
        self.q.resize(dof * pb.bodies.len(), 0.0);
        if pb.candidates.is_empty() && pb.couplings.is_empty() {
            // Free flight: each body's quadratic alone.
            for (slot, body) in pb.bodies.iter().enumerate() {
                let q = body.free_motion().unwrap_or([f64::NAN; DOF]);
                self.q[dof * slot..dof * (slot + 1)].copy_from_slice(&q[..dof]);
            }
        } else {
            self.newton(obstacles, steps);
        }
    }

    /// The problem to fill before [`RigidScratch::solve_single`].
    pub(super) fn problem_mut(&mut self) -> &mut Problem {
        &mut self.problem
    }

    /// Newton iterations with a backtracking line search from `q = 0`.
    fn newton(&mut self, obstacles: &[Obstacle], steps: usize) {
        let dim = self.q.len();
        for _ in 0..steps {
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
            let length = self.step.iter().map(|s| s * s).sum::<f64>().sqrt();
            for _ in 0..30 {
                // Obstacle distances are f32: a trial moving nothing by more than ~10 nm changes
                // the energy by less than their rounding, and halving on would only evaluate
                // noise (it did, 30 times, in a resting cube's steps).
                if alpha * length < 1e-8 {
                    break;
                }
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

#[cfg(test)]
mod tests {
    use super::*;

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
