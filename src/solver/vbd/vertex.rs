//! One VBD vertex update (\[VBD\] §3.1–3.6, Eq. 4–16): gather the vertex's inertia, element,
//! damping, contact and friction terms into a 3×3 Newton system and take its step. This is the
//! CPU twin of the future `vbd_color` kernel: it reads neighbours and writes only its result.

use glam::{Mat3A, Vec3A, Vec4};

use crate::collision::surface_pairs::ContactPair;
use crate::collision::{
    ContactModel, ContactParams, ContactPoint, Obstacle, add_contact, layer_force_stiffness, limit_step,
};
use crate::material::MODEL_STABLE_NEO_HOOKEAN;
use crate::material::{bending, membrane, stable_neo_hookean, stvk, tet};
use crate::math::{outer, solve_sym3};
use crate::mesh::unpack_entry;
use crate::solver::parallel::{PhaseCell, SharedSlice};
use crate::solver::vbd::bounds::limit_move;
use crate::solver::vbd::contact::{SurfaceContactScratch, relative_displacement};
use crate::solver::vbd::spans::{self, GAP, SpanContacts};
use crate::solver::vbd::spin::BodySpin;
use crate::state::SimState;

/// Read-only per-step inputs of the vertex update.
#[derive(Clone, Copy)]
pub(crate) struct VertexInputs<'a> {
    pub state: &'a SimState,
    /// `x^n`.
    pub start: &'a [Vec4],
    /// xyz: `y − x^n`; w: inertia stiffness `m/w`.
    pub inertia: &'a [Vec4],
    /// xyz: `c0`; w: `c1` of `v = c1 Δx + c0`.
    pub velocity: &'a [Vec4],
    pub obstacles: &'a [Obstacle],
    pub contact: ContactModel,
    /// Per tet: `G_e = (D_c0 − c1 D_s^n) D_m⁻¹`, so that `Ḟ = c1 F + G_e` (damped tets only).
    pub tet_rates: &'a [Mat3A],
    /// Per body: the rigid spin it turns by exactly this step (`spin`), if any; Rayleigh damping
    /// leaves that turning alone. Empty where no body spins.
    pub spins: &'a [Option<BodySpin>],
    /// Surface contact pairs of the last detection.
    pub surface: &'a PhaseCell<SurfaceContactScratch>,
    /// xyz: position at the last detection; w: displacement bound b_v.
    pub clamp: &'a SharedSlice<'a, Vec4>,
}

/// Result of one vertex update.
pub(crate) struct VertexUpdate {
    pub position: Vec3A,
    /// `‖f‖²` of the Newton system before the step \[N²\].
    pub residual2: f32,
    pub in_contact: bool,
    /// The step was cut short by the displacement bound.
    pub bounded: bool,
}

#[inline(always)]
fn load(pos: &SharedSlice<'_, Vec4>, i: u32) -> Vec3A {
    // SAFETY: called during a color pass; neighbours belong to other colors and are not
    // written in this phase, and the vertex itself is only written in the commit phase.
    Vec3A::from_vec4(unsafe { pos.get(i as usize) })
}

/// The VBD update of free vertex `v` with the current positions `pos`.
#[inline]
pub(crate) fn update_vertex(v: usize, pos: &SharedSlice<'_, Vec4>, inp: &VertexInputs<'_>) -> VertexUpdate {
    let st = inp.state;
    let x = load(pos, v as u32);
    let (f, h, in_contact) = vertex_system(v, x, pos, inp, true);
    let residual2 = f.length_squared();
    let solve = |h: &Mat3A| match solve_sym3::<f32>(h, f) {
        Some(step) => x + step,
        None => x,
    };
    let mut target = solve(&h);
    if in_contact && inp.contact.stiffening {
        // The contact layer stiffens as it is pressed, so the Newton step with its curvature
        // at x overshoots into it (past the surface, for a vertex pulled hard into a thin
        // layer); retaken with each pressed layer's curvature where the step would end (the
        // most on the way, distances linearised along the normals), it minimises a majorant of
        // those layers' energies along the step.
        let extra = layer_majorant(v, x, target, pos, inp);
        if extra != Mat3A::ZERO {
            target = solve(&(h + extra));
        }
    }
    // Stay within the displacement bound since the last contact detection (no surface can be
    // crossed), then exact CCD against the obstacles: the step may end on an obstacle's
    // surface, never inside (the contact force then pushes the vertex out).
    // SAFETY: the clamp data is written only in detection phases.
    let surface = unsafe { inp.surface.get() };
    // A span of the vertex may not enter an obstacle either (`spans`). Its limit projects
    // onto planes, so it goes first: the two limits after it only shorten the move towards x
    // (or push out of an obstacle), which keeps it inside the spans' half-spaces.
    let limited = limit_edge_move(v, x, target, pos, inp, &surface.obstacle_spans);
    let within = limit_move(v, limited, unsafe { inp.clamp.get(v) }, surface);
    let position = limit_step(inp.obstacles, st.vertex_body[v], x, within);
    VertexUpdate { position, residual2, in_contact, bounded: within != limited }
}

/// The curvature the contact layers of vertex `v` gain along the move `x → target` beyond
/// their curvature at `x`: `(E''(d_target) − E''(d)) w² n̂ n̂ᵀ` for every obstacle and pair
/// contact the move presses further (`collision::contact::layer_force_stiffness`; the distance
/// at `target` linearised along the contact's normal).
fn layer_majorant(v: usize, x: Vec3A, target: Vec3A, pos: &SharedSlice<'_, Vec4>, inp: &VertexInputs<'_>) -> Mat3A {
    let st = inp.state;
    let step = target - x;
    let mut extra = Mat3A::ZERO;
    let mut add = |d: f32, along: f32, n: Vec3A, stiffness: f32, w: f32| {
        let offset = inp.contact.offset;
        if d < offset && along < 0.0 {
            let now = layer_force_stiffness(d, stiffness, offset).1;
            let there = layer_force_stiffness(d + along, stiffness, offset).1;
            extra += outer::<f32>(n, n) * ((there - now) * w * w);
        }
    };
    for o in inp.obstacles.iter().filter(|o| o.applies_to(st.vertex_body[v])) {
        let (d, n) = o.signed_distance(x);
        add(d, n.dot(step), n, inp.contact.params(st.masses[v] + o.load_mass()).stiffness, 1.0);
    }
    for (pair, slot) in energetic_pairs(v, inp) {
        let n = Vec3A::from_array(pair.frame_normal);
        let w = pair.weights[slot];
        let gap = pair.linear_gap(&pair.vertices.map(|i| load(pos, i)));
        add(gap, w * n.dot(step), n, pair.stiffness, w);
    }
    extra
}

/// The force on vertex `v` from everything but obstacles and pins (inertia with gravity, drag,
/// elasticity, damping, body–body and self contact) at the current positions \[N\]. Where the
/// vertex's equation is solved, obstacle contact and pins balance it, so `−h` times it is the
/// impulse they gave the vertex over the step: what goes back to a rapier body.
pub(crate) fn unbalanced_force(v: usize, pos: &SharedSlice<'_, Vec4>, inp: &VertexInputs<'_>) -> Vec3A {
    let x = load(pos, v as u32);
    vertex_system(v, x, pos, inp, false).0
}

/// A body's unbalanced forces summed over the vertices no obstacle holds, from two cheap
/// parts: element forces sum to zero over a body, so their sum over the free vertices is minus
/// their sum over the held ones, and only the held vertices need the element loop. Returns
/// vertex `v`'s share: its inertia, drag and pair forces if it is free (`held == false`), minus
/// its element forces if it is held.
pub(crate) fn residual_sum_part(v: usize, held: bool, pos: &SharedSlice<'_, Vec4>, inp: &VertexInputs<'_>) -> Vec3A {
    if held {
        -elastic_terms(v, pos, inp).0
    } else {
        let x = load(pos, v as u32);
        external_terms(v, x, inp, false).force + pair_terms(v, pos, inp).0
    }
}

/// Force and Hessian of vertex `v`'s local problem at `x`, with or without obstacle terms, and
/// whether a contact acted.
#[inline]
fn vertex_system(
    v: usize,
    x: Vec3A,
    pos: &SharedSlice<'_, Vec4>,
    inp: &VertexInputs<'_>,
    obstacles: bool,
) -> (Vec3A, Mat3A, bool) {
    let ext = external_terms(v, x, inp, obstacles);
    let (fe, he) = elastic_terms(v, pos, inp);
    let (fp, hp, pair_contact) = pair_terms(v, pos, inp);
    let (mut f, mut h) = (ext.force + fe + fp, ext.hessian + he + hp);
    let mut edge_contact = false;
    if obstacles {
        // SAFETY: the edge contacts change only in detection phases, never in a color pass.
        let edges = unsafe { &inp.surface.get().obstacle_spans };
        edge_contact = add_edge_terms(v, pos, inp, edges, &mut f, &mut h);
    }
    (f, h, ext.in_contact || pair_contact || edge_contact)
}

/// Force and Hessian of the elements around vertex `v` (tets, membranes, hinges, with their
/// Rayleigh damping). Elements are invariant under translation, so these forces sum to zero
/// over a body: [`residual_sum_parts`] relies on that.
#[inline(always)]
fn elastic_terms(v: usize, pos: &SharedSlice<'_, Vec4>, inp: &VertexInputs<'_>) -> (Vec3A, Mat3A) {
    let st = inp.state;
    let (mut f, mut h) = (Vec3A::ZERO, Mat3A::ZERO);
    // d(velocity)/d(position) of this vertex: damping's contribution to the Hessian.
    let c1 = inp.velocity[v].w;
    // The body's spin after the step, ω': the damping acts on the velocities relative to the
    // turning `ω' × x` (see `spin`).
    let spin = inp.spins.get(st.vertex_body[v] as usize).copied().flatten().map(|s| s.omega_after);

    for &entry in st.tet_adjacency.row(v) {
        let (e, slot) = unpack_entry(entry);
        let t = &st.tets[e as usize];
        let xs =
            [load(pos, t.vertices[0]), load(pos, t.vertices[1]), load(pos, t.vertices[2]), load(pos, t.vertices[3])];
        let dm_inv = t.dm_inv();
        let f_def = tet::deformation_gradient::<f32>(&xs, &dm_inv);
        let g_a = tet::shape_gradient::<f32>(&dm_inv, slot as usize);
        let m = &st.materials[t.material as usize];
        // Ḟ of the current iterate: c1 is the same for every vertex of a step, so
        // Ḟ = c1 F + G_e with G_e fixed per element and step (see `Vbd::tet_rates`).
        let f_dot = (m.damping > 0.0).then(|| {
            let f_dot = f_def * c1 + inp.tet_rates[e as usize];
            match spin {
                Some(w) => f_dot - spin_rate(w, &f_def),
                None => f_dot,
            }
        });
        if m.model == MODEL_STABLE_NEO_HOOKEAN {
            let (grad, hb, d) =
                stable_neo_hookean::vertex_terms::<f32>(&f_def, f_dot.as_ref(), g_a, t.volume, m.mu, m.lambda);
            f -= grad;
            h += hb;
            if m.damping > 0.0 {
                add_damping(&mut f, &mut h, d, hb, m.damping, c1);
            }
        } else {
            let (grad, hb) = stvk::vertex_gradient_hessian_psd::<f32>(&f_def, g_a, t.volume, m.mu, m.lambda);
            f -= grad;
            h += hb;
            if let Some(fd) = f_dot {
                let d = stvk::damping_term::<f32>(&f_def, &fd, g_a, t.volume, m.mu, m.lambda);
                add_damping(&mut f, &mut h, d, hb, m.damping, c1);
            }
        }
    }
    for &entry in st.tri_adjacency.row(v) {
        let (e, slot) = unpack_entry(entry);
        let t = &st.tris[e as usize];
        let xs = [load(pos, t.vertices[0]), load(pos, t.vertices[1]), load(pos, t.vertices[2])];
        let dm_inv = [[t.dm_inv[0], t.dm_inv[1]], [t.dm_inv[2], t.dm_inv[3]]];
        let f_def = membrane::deformation_gradient::<f32>(&xs, &dm_inv);
        let g_a = membrane::shape_gradients(&dm_inv)[slot as usize];
        let m = &st.materials[t.material as usize];
        let (grad, hb) = membrane::vertex_gradient_hessian_psd::<f32>(&f_def, g_a, t.measure, m.mu, m.lambda);
        f -= grad;
        h += hb;
        if m.damping > 0.0 {
            let vs = [0, 1, 2].map(|k| velocity_estimate(pos, inp, t.vertices[k]));
            let f_dot = membrane::deformation_gradient::<f32>(&vs, &dm_inv);
            let d = membrane::damping_term::<f32>(&f_def, &f_dot, g_a, t.measure, m.mu, m.lambda);
            add_damping(&mut f, &mut h, d, hb, m.damping, c1);
        }
    }
    for &entry in st.hinge_adjacency.row(v) {
        let (e, slot) = unpack_entry(entry);
        let b = &st.hinges[e as usize];
        let xs =
            [load(pos, b.vertices[0]), load(pos, b.vertices[1]), load(pos, b.vertices[2]), load(pos, b.vertices[3])];
        let vs = (b.damping > 0.0).then(|| b.vertices.map(|i| velocity_estimate(pos, inp, i)));
        let terms = bending::vertex_terms::<f32>(&xs, vs.as_ref(), slot as usize, b.rest_angle, b.stiffness);
        f -= terms.gradient;
        h += terms.hessian;
        if b.damping > 0.0 {
            add_damping(&mut f, &mut h, terms.damping, terms.hessian, b.damping, c1);
        }
    }
    (f, h)
}

/// The body–body and self contact pairs with energy that vertex `v` belongs to, with its slot
/// in each.
#[inline(always)]
fn energetic_pairs<'a>(v: usize, inp: &VertexInputs<'a>) -> impl Iterator<Item = (&'a ContactPair, usize)> {
    // SAFETY: the pair lists are rebuilt only in detection phases, never during a color pass.
    let surface = unsafe { inp.surface.get() };
    surface.vertex_pairs.row(v).iter().filter_map(move |&entry| {
        let (k, slot) = unpack_entry(entry);
        let pair = &surface.pairs[k as usize];
        pair.has_energy().then_some((pair, slot as usize))
    })
}

/// Force and Hessian of the body–body and self contact pairs vertex `v` belongs to, and
/// whether one acted.
#[inline(always)]
fn pair_terms(v: usize, pos: &SharedSlice<'_, Vec4>, inp: &VertexInputs<'_>) -> (Vec3A, Mat3A, bool) {
    let (mut f, mut h, mut in_contact) = (Vec3A::ZERO, Mat3A::ZERO, false);
    for (pair, slot) in energetic_pairs(v, inp) {
        let xs = pair.vertices.map(|i| load(pos, i));
        let normal = Vec3A::from_array(pair.frame_normal);
        let point = ContactPoint::<f32> {
            distance: pair.linear_gap(&xs),
            normal,
            weight: pair.weights[slot],
            relative_displacement: relative_displacement(&xs, inp.start, pair.vertices, &pair.weights),
            friction: pair.friction,
            friction_normal_force: pair.friction_normal_force,
            friction_normal: normal,
        };
        // The stiffening layer (see `external_terms`).
        let params = ContactParams {
            stiffness: pair.stiffness,
            offset: inp.contact.offset,
            static_slip: inp.contact.static_slip,
        };
        let params = inp.contact.layer_at(params, point.distance);
        in_contact |= add_contact::<f32>(&mut f, &mut h, &point, &params);
    }
    (f, h, in_contact)
}

/// The terms of vertex `v`'s local problem that depend on its own position only: inertia with
/// gravity, linear damping, obstacle contact and friction.
pub(crate) struct ExternalTerms {
    pub force: Vec3A,
    pub hessian: Mat3A,
    pub in_contact: bool,
}

/// Inertia, linear damping and (with `obstacles`) obstacle terms of vertex `v` at position `x`.
/// Elastic and Rayleigh terms are invariant under rigid motions and left out here; the same
/// terms, summed over whole bodies, make up [`crate::solver::vbd::rigid_correction`]'s coarse problem.
#[inline]
pub(crate) fn external_terms(v: usize, x: Vec3A, inp: &VertexInputs<'_>, obstacles: bool) -> ExternalTerms {
    let st = inp.state;
    let dx = x - Vec3A::from_vec4(inp.start[v]);
    let inertia = inp.inertia[v];
    let m_over_w = inertia.w;
    // Inertia with gravity: −m/w (x − y), written with displacements (f32 rule 2).
    let mut f = (Vec3A::from_vec4(inertia) - dx) * m_over_w;
    let mut h = Mat3A::from_diagonal(glam::Vec3::splat(m_over_w));
    let body = &st.bodies[st.vertex_body[v] as usize];
    if body.linear_damping > 0.0 {
        // Drag −α m v through v = c1 Δx + c0.
        let vel = inp.velocity[v];
        let am = body.linear_damping * st.masses[v];
        f -= (dx * vel.w + Vec3A::from_vec4(vel)) * am;
        h += Mat3A::from_diagonal(glam::Vec3::splat(am * vel.w));
    }
    let mut in_contact = false;
    if !obstacles {
        return ExternalTerms { force: f, hessian: h, in_contact };
    }
    let start = Vec3A::from_vec4(inp.start[v]);
    let body_index = st.vertex_body[v];
    for o in inp.obstacles.iter().filter(|o| o.applies_to(body_index)) {
        let contact = inp.contact.params(st.masses[v] + o.load_mass());
        let (distance, normal) = o.signed_distance(x);
        if distance >= contact.offset {
            continue;
        }
        // The layer stiffens as it is pressed (`collision::contact::layer_force_stiffness`):
        // the few vertices a ball stands on or the ground under a loaded mattress carry far
        // more than their own weight. Friction's normal force is lagged at x^n.
        let friction_normal_force = inp.contact.normal_force(contact.stiffness, o.signed_distance_start(start).0);
        let contact = inp.contact.layer_at(contact, distance);
        let c = ContactPoint::<f32> {
            distance,
            normal,
            weight: 1.0,
            // Friction acts on the motion relative to the obstacle's surface.
            relative_displacement: dx - o.surface_displacement(x),
            friction: 0.5 * (body.friction + o.friction),
            friction_normal_force,
            friction_normal: normal,
        };
        in_contact |= add_contact::<f32>(&mut f, &mut h, &c, &contact);
    }
    ExternalTerms { force: f, hessian: h, in_contact }
}

/// `[ω]× F`: the rate of `F` when its body turns at `ω` (velocities `ω × x`).
#[inline(always)]
fn spin_rate(w: Vec3A, f: &Mat3A) -> Mat3A {
    Mat3A::from_cols(w.cross(f.x_axis), w.cross(f.y_axis), w.cross(f.z_axis))
}

/// Velocity of vertex `i` implied by the current iterate, `v = c1 (x − x^n) + c0`.
#[inline(always)]
fn velocity_estimate(pos: &SharedSlice<'_, Vec4>, inp: &VertexInputs<'_>, i: u32) -> Vec3A {
    let c = inp.velocity[i as usize];
    (load(pos, i) - Vec3A::from_vec4(inp.start[i as usize])) * c.w + Vec3A::from_vec4(c)
}

/// Rayleigh damping (\[VBD\] §3.3, applied per element rather than per vertex block so that a
/// rigid translation is not damped): force `−k_d Σ_b K_ab v_b` (the `term`), Hessian
/// `+k_d c1 K_aa` through `v_a = c1 Δx_a + c0`.
#[inline(always)]
fn add_damping(f: &mut Vec3A, h: &mut Mat3A, term: Vec3A, hb: Mat3A, damping: f32, c1: f32) {
    *f -= term * damping;
    *h += hb * (damping * c1);
}

/// Adds the contact and friction terms of vertex `v`'s span contacts to its Newton system;
/// returns whether one acted.
#[inline]
pub(crate) fn add_edge_terms(
    v: usize,
    pos: &SharedSlice<'_, Vec4>,
    inp: &VertexInputs<'_>,
    spans: &SpanContacts,
    f: &mut Vec3A,
    h: &mut Mat3A,
) -> bool {
    let st = inp.state;
    let mut in_contact = false;
    for &entry in spans.row(v) {
        let (k, slot) = unpack_entry(entry);
        let c = &spans.contacts[k as usize];
        let Some(o) = inp.obstacles.get(c.obstacle as usize).filter(|_| c.scale > 0.0) else { continue };
        let p = c.point(|i| load(pos, i));
        let (distance, normal) = o.signed_distance(p);
        let vertices = &c.vertices[..c.len()];
        let mass = vertices.iter().zip(c.weights).map(|(&i, w)| w * st.masses[i as usize]).sum::<f32>() + o.load_mass();
        let mut params = inp.contact.params(mass);
        if distance >= params.offset {
            continue;
        }
        params.stiffness *= c.scale;
        // A span's contact carries what hangs on it (a table's corner under a cloth holds the
        // cloth on both sides), which a penalty sized for the span's own mass cannot: it holds
        // at most `k δ` (here about 100 span weights), and the corner sank 1 mm into the table.
        // The stiffened layer holds 19 k δ at the surface, 19 times the penalty's most.
        let lagged = params.stiffened_at(c.distance);
        let friction_normal_force = lagged.stiffness * (lagged.offset - c.distance).max(0.0);
        let params = params.stiffened_at(distance);
        let moved = c.point(|i| load(pos, i) - Vec3A::from_vec4(inp.start[i as usize]));
        let body = &st.bodies[st.vertex_body[v] as usize];
        let point = ContactPoint::<f32> {
            distance,
            normal,
            weight: c.weights[slot as usize],
            // Friction acts on the span point's motion relative to the obstacle's surface.
            relative_displacement: moved - o.surface_displacement(p),
            friction: 0.5 * (body.friction + o.friction),
            friction_normal_force,
            friction_normal: normal,
        };
        in_contact |= add_contact::<f32>(f, h, &point, &params);
    }
    in_contact
}

/// Limits vertex `v`'s move `x → target` so that none of its contact spans reaches an
/// obstacle that holds still over the step (the span's other vertices hold still during the
/// vertex's color pass). Against a moving collider the sweeps see only its end pose, so a plane there
/// certifies nothing about the path, and it is wrong where the collider carries the surface:
/// a lifting jaw's end pose has its rim above soft material that rises with it, and the plane
/// under the rim kept that material (and the 6³ cube of the gripper test) on the floor. There
/// the span contact's force acts alone. Per span, the vertex may approach the obstacle along the normal at the span's closest point by at
/// most the distance there less [`GAP`] (the separating plane of `spans::plane_fraction`), and
/// move along it or away freely. Violated half-spaces are projected onto, then the move is
/// scaled towards `x` until all hold (as `bounds::limit_move` does for pairs). A triangle
/// whose closest point has left its interior holds nothing here: its edges' contacts do.
#[inline]
pub(crate) fn limit_edge_move(
    v: usize,
    x: Vec3A,
    target: Vec3A,
    pos: &SharedSlice<'_, Vec4>,
    inp: &VertexInputs<'_>,
    spans: &SpanContacts,
) -> Vec3A {
    let row = spans.row(v);
    if row.is_empty() || target == x {
        return target;
    }
    let reach = (target - x).length();
    // Each span's half-space for this vertex's move: n·Δ ≥ −budget.
    let mut planes = [(Vec3A::ZERO, 0.0f32); 8];
    let mut count = 0;
    for &entry in row {
        if count == planes.len() {
            break;
        }
        let (k, slot) = unpack_entry(entry);
        let c = &spans.contacts[k as usize];
        let Some(o) = inp.obstacles.get(c.obstacle as usize).filter(|o| !o.moves()) else { continue };
        let at = |i: usize| if i == slot as usize { x } else { load(pos, c.vertices[i]) };
        let slot = slot as usize;
        // A span farther from the obstacle than the move plus the gap cannot reach it: only
        // this vertex moves, so no point of the span moves farther than the vertex does. The
        // distance must be the span's own, not an estimate: a segment's closest point to a box
        // or a sphere is exact (`closest.rs`'s `a_segment_s_closest_point_to_a_box_is_exact`;
        // a collider's is a search), and a triangle's inside point is for
        // a sphere (the projection of its centre), while a box's corner projected inside a
        // triangle says nothing of the triangle's edges. This skips the separating plane's
        // search for most spans of a resting cloth (it was the sweeps' largest cost after the
        // vertex's own system on `cloth_on_table_edge`).
        let far = |distance: f32| o.tests_triangles() && distance - GAP >= reach;
        let (normal, clearance, low) = if c.len() == 2 {
            let span = [at(0), at(1)];
            let closest = o.segment_closest(span[0], span[1]);
            if far(closest.distance) {
                continue;
            }
            let (n, clearance) = spans::clearances(o, closest.distance, closest.normal, &span);
            (n, clearance[slot], clearance.into_iter().fold(f32::INFINITY, f32::min))
        } else {
            let span = [at(0), at(1), at(2)];
            let Some(closest) = o.triangle_closest(span) else { continue };
            if o.is_sphere() && far(closest.distance) {
                continue;
            }
            let (n, clearance) = spans::clearances(o, closest.distance, closest.normal, &span);
            (n, clearance[slot], clearance.into_iter().fold(f32::INFINITY, f32::min))
        };
        // A span already inside (a collider pressed or moved into it between the vertices)
        // is left to its contact force, as a vertex inside is: its nearest face need not be
        // the way out, and holding it there would pin the body to the collider. A box's or a
        // sphere's plane is a way out; it holds a span a rounding error inside.
        let floor = if o.support(normal).is_some() { -inp.contact.offset } else { 0.0 };
        if low < floor {
            continue;
        }
        let budget = (clearance - GAP).max(0.0);
        // A plane farther than the whole move cannot bind (most spans of a vertex resting on
        // a face).
        if budget >= reach {
            continue;
        }
        planes[count] = (normal, budget);
        count += 1;
    }
    let planes = &planes[..count];
    let mut d = target - x;
    // Alternating projections: a vertex where two edges meet a collider's rim has two nearly
    // opposite planes, and one projection undoes a little of the other; a few rounds keep the
    // sliding part of the move instead of scaling it all away.
    for _ in 0..4 {
        for &(n, budget) in planes {
            let along = n.dot(d);
            if along < -budget {
                d += n * (-budget - along);
            }
        }
    }
    let mut scale = 1.0f32;
    for &(n, budget) in planes {
        let along = n.dot(d);
        // What is left is rounding of the projections (well below the gap).
        if along < -budget - 0.1 * GAP {
            scale = scale.min(budget / -along);
        }
    }
    x + d * scale
}
