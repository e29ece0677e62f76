//! One coupled frame: rapier colliders become moving obstacles, attachments get their targets
//! from their rigid bodies' end-of-frame poses, the soft step runs, and the impulses contacts
//! and attachments gave the soft vertices go back to the rigid bodies (equal and opposite),
//! followed by the contact events.
//!
//! Coupling is explicit, one frame at a time: a rigid body's end pose is predicted from its
//! velocity (kinematic bodies: their next position) before the soft step, and the reaction
//! changes its velocity before rapier's next step. The impulse on a vertex is what the soft
//! step's momentum balance says the environment gave it (`FastResult::environment_impulses`),
//! so it includes what the path clamp did at an impact, not only the penalty force.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use glam::{Mat3, Vec3, Vec3A};
use rapier3d::dynamics::{RigidBodyHandle, RigidBodySet, RigidBodyType};
use rapier3d::geometry::{ColliderHandle, ColliderSet, InteractionGroups};
use rapier3d::math::Pose;
use rapier3d::pipeline::ActiveEvents;

use super::events::{SoftCollisionEvent, SoftContactForceEvent, SoftEventHandler};
use super::shape::ColliderGeometry;
use crate::body::SoftBodyHandle;
use crate::collision::{Obstacle, ObstacleShape, PosedShape, RigidPose};
use crate::runtime::{FrameMotion, SubstepContext};
use crate::solver::vbd::carrier::CarrierBody;
use crate::state::VERTEX_KINEMATIC;

/// A (soft body, collider) pair as an ordered key (collider handles are not `Ord`), so events
/// come in a fixed order.
pub(super) type PairKey = (SoftBodyHandle, (u32, u32));

pub(super) fn pair_key(body: SoftBodyHandle, collider: ColliderHandle) -> PairKey {
    (body, collider.into_raw_parts())
}

fn pair_collider(key: &PairKey) -> ColliderHandle {
    ColliderHandle::from_raw_parts(key.1.0, key.1.1)
}

/// A soft body touching a collider at the end of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Touch {
    /// The collider is a sensor.
    pub sensor: bool,
    /// Vertices within the contact offset (inside, for a sensor).
    pub vertices: u32,
    /// The collider asked for collision events (so its end is reported even once removed).
    pub reported: bool,
}

/// Names an attachment of soft vertices to a rapier body or a scripted target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttachmentHandle {
    pub(super) index: u32,
    pub(super) generation: u32,
}

impl std::fmt::Display for AttachmentHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}v{}", self.index, self.generation)
    }
}

/// Soft vertices held by a pin that follows a rapier body or scripted targets.
#[derive(Clone, Debug)]
pub(super) struct Attachment {
    pub soft: SoftBodyHandle,
    /// Identity of its scripted pin among the soft body's pins.
    pub pin: u64,
    /// Body-local vertex indices.
    pub vertices: Vec<u32>,
    /// The rigid body and the attachment points in its frame; `None`: scripted targets.
    pub rigid: Option<(RigidBodyHandle, Vec<Vec3>)>,
}

/// What the soft bodies did to one collider in the last coupled frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColliderImpulse {
    /// The collider.
    pub collider: ColliderHandle,
    /// Its rigid body, if any.
    pub body: Option<RigidBodyHandle>,
    /// Impulse the soft bodies gave it over the frame \[N·s\] (applied to the body when it is
    /// dynamic; reported for every body type).
    pub impulse: Vec3,
    /// Angular impulse about the body's centre of mass at the frame's start \[N·m·s\] (about the
    /// collider's origin without a body).
    pub torque: Vec3,
}

/// What the attachment's vertices did to its rigid body in the last coupled frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttachmentImpulse {
    /// The attachment.
    pub attachment: AttachmentHandle,
    /// Impulse the soft vertices gave the body (or the target) over the frame \[N·s\].
    pub impulse: Vec3,
}

/// The state the rapier bridge keeps between frames: per-soft-body collision groups,
/// attachments, which soft bodies touch which colliders, and the last frame's reactions.
#[derive(Debug, Default)]
pub struct RapierCoupling {
    groups: HashMap<SoftBodyHandle, InteractionGroups>,
    pub(super) attachments: Vec<(u32, Option<Attachment>)>,
    /// Pins of detached attachments, released and free for the next attachment of that body.
    pub(super) free_pins: HashMap<SoftBodyHandle, Vec<u64>>,
    geometry: HashMap<ColliderHandle, (usize, Arc<ColliderGeometry>)>,
    /// Touching (body, collider) pairs at the end of the last frame.
    touching: BTreeMap<PairKey, Touch>,
    impulses: Vec<ColliderImpulse>,
    attachment_impulses: Vec<AttachmentImpulse>,
    /// rapier's solver substeps per step; `None`: rapier's default.
    substeps: Option<usize>,
    /// Bodies on joints this frame (rapier holds them; never carriers). Filled by
    /// `RapierCoupling::step_with_physics_world`, which sees the joint sets.
    pub(super) jointed: Vec<RigidBodyHandle>,
}

impl RapierCoupling {
    /// Collision groups of soft body `body`, tested against each collider's collision groups
    /// (contact at all) and solver groups (contact forces), as rapier tests two colliders.
    /// Default: rapier's default (member of group 1, interacting with every group).
    pub fn set_collision_groups(&mut self, body: SoftBodyHandle, groups: InteractionGroups) {
        self.groups.insert(body, groups);
    }

    /// The collision groups of soft body `body`.
    pub fn collision_groups(&self, body: SoftBodyHandle) -> InteractionGroups {
        self.groups.get(&body).copied().unwrap_or_default()
    }

    /// rapier's solver substeps per step (`IntegrationParameters::num_solver_iterations`):
    /// dynamic bodies' end poses are predicted the way rapier will integrate them. Set it when
    /// your integration parameters differ from rapier's default;
    /// [`RapierCoupling::step_with_physics_world`] reads
    /// it from the world. Pliant takes rapier's gravity to be its own `StepConfig::gravity`.
    pub fn set_rapier_substeps(&mut self, substeps: usize) {
        self.substeps = Some(substeps);
    }

    pub(super) fn rapier_substeps_or_default(&self) -> usize {
        self.substeps.unwrap_or_else(|| rapier3d::dynamics::IntegrationParameters::default().num_solver_iterations)
    }

    /// What the soft bodies did to each collider they touched in the last coupled frame.
    pub fn collider_impulses(&self) -> &[ColliderImpulse] {
        &self.impulses
    }

    /// The impulse on one collider in the last coupled frame (zero if untouched).
    pub fn collider_impulse(&self, collider: ColliderHandle) -> Vec3 {
        self.impulses.iter().filter(|c| c.collider == collider).map(|c| c.impulse).sum()
    }

    /// What each attachment's vertices did to its body in the last coupled frame.
    pub fn attachment_impulses(&self) -> &[AttachmentImpulse] {
        &self.attachment_impulses
    }

    /// Whether soft body `body` touched collider `collider` at the end of the last frame.
    pub fn touching(&self, body: SoftBodyHandle, collider: ColliderHandle) -> bool {
        self.touching.contains_key(&pair_key(body, collider))
    }

    pub(super) fn attachment(&self, a: AttachmentHandle) -> Option<&Attachment> {
        match self.attachments.get(a.index as usize) {
            Some((g, Some(att))) if *g == a.generation => Some(att),
            _ => None,
        }
    }

    fn geometry_for(
        &mut self,
        handle: ColliderHandle,
        shape: &rapier3d::geometry::SharedShape,
    ) -> Arc<ColliderGeometry> {
        let key = Arc::as_ptr(&shape.0) as *const () as usize;
        match self.geometry.get(&handle) {
            Some((k, g)) if *k == key => g.clone(),
            _ => {
                let g = Arc::new(ColliderGeometry::new(shape.clone()));
                self.geometry.insert(handle, (key, g.clone()));
                g
            }
        }
    }
}

fn to_pose(p: &Pose) -> RigidPose {
    RigidPose { rotation: p.rotation, translation: p.translation }
}

/// Where a rigid body will be at the end of a frame of length `dt`, before rapier steps it.
/// A dynamic body also falls under `gravity` (and its user force): rapier adds the acceleration
/// in each of its `substeps` solver substeps, so over the frame its centre moves
/// `h v + (n + 1)/(2n) h² a`, not `h v` (measured: 1.02 mm for v = g h upwards, n = 4).
pub(super) fn end_pose(rb: &rapier3d::dynamics::RigidBody, dt: f32, gravity: Vec3, substeps: usize) -> Pose {
    match rb.body_type() {
        RigidBodyType::Fixed => *rb.position(),
        RigidBodyType::KinematicPositionBased => *rb.next_position(),
        // rapier does not move a sleeping body.
        RigidBodyType::Dynamic if rb.is_sleeping() => *rb.position(),
        RigidBodyType::Dynamic => {
            let mut pose = rb.predict_position_using_velocity(dt);
            let inv_mass = rb.mass_properties().effective_inv_mass;
            // Locked axes (and a massless body) do not fall.
            let free = inv_mass.cmpne(Vec3::ZERO);
            let accel = Vec3::select(free, gravity * rb.gravity_scale(), Vec3::ZERO) + rb.user_force() * inv_mass;
            let n = substeps.max(1) as f32;
            pose.translation += accel * (dt * dt * (n + 1.0) / (2.0 * n));
            pose
        }
        _ => rb.predict_position_using_velocity(dt),
    }
}

/// The carrier index of dynamic body `b` (made on its first collider), or `None` for a body
/// the step cannot solve for: not dynamic, massless, with a locked translation, or touching
/// another rigid body (its pose stays the prediction, and the exchange explicit). The caller
/// also leaves out sleeping bodies, bodies holding an attachment and bodies on joints.
#[allow(clippy::too_many_arguments)]
fn carrier_index(
    known: &mut Vec<(RigidBodyHandle, Option<u32>)>,
    carriers: &mut Vec<CarrierBody>,
    b: RigidBodyHandle,
    rb: &rapier3d::dynamics::RigidBody,
    colliders: &ColliderSet,
    dt: f32,
    gravity: Vec3,
    substeps: usize,
) -> Option<u32> {
    if let Some(&(_, c)) = known.iter().find(|(h, _)| *h == b) {
        return c;
    }
    let mp = rb.mass_properties();
    let inv_mass = mp.effective_inv_mass;
    if !rb.is_dynamic() || !(inv_mass.min_element() > 0.0) || !inv_mass.is_finite() || touches_rigid(b, rb, colliders) {
        known.push((b, None));
        return None;
    }
    let i = &mp.effective_world_inv_inertia;
    let inv_inertia =
        Mat3::from_cols(Vec3::new(i.m11, i.m12, i.m13), Vec3::new(i.m12, i.m22, i.m23), Vec3::new(i.m13, i.m23, i.m33));
    // The predicted end pose carries the centre of mass like any body point.
    let end = end_pose(rb, dt, gravity, substeps);
    let local_com = rb.position().inverse_transform_point(rb.center_of_mass());
    let c = carriers.len() as u32;
    carriers.push(CarrierBody {
        mass: rb.mass(),
        inv_inertia,
        center_start: rb.center_of_mass(),
        center_end: end.transform_point(local_com),
    });
    known.push((b, Some(c)));
    Some(c)
}

/// Whether dynamic body `b` touches (within 2 mm) a collider of any other rigid body, fixed
/// or not. rapier's own contacts then hold it, which the soft step cannot see: solved as a
/// carrier it would give way under a soft load that its ground carries, and rapier would push
/// it back. Such a body stays explicit (predicted pose, impulses applied after the step).
fn touches_rigid(b: RigidBodyHandle, rb: &rapier3d::dynamics::RigidBody, colliders: &ColliderSet) -> bool {
    use rapier3d::parry::bounding_volume::BoundingVolume;
    const GAP: f32 = 2e-3;
    for c in rb.colliders().iter().filter_map(|&h| colliders.get(h)) {
        if !c.is_enabled() || c.is_sensor() {
            continue;
        }
        let aabb = c.compute_aabb().loosened(GAP);
        for (_, other) in colliders.iter() {
            if other.parent() == Some(b)
                || !other.is_enabled()
                || other.is_sensor()
                || !c.collision_groups().test(other.collision_groups())
                || !c.solver_groups().test(other.solver_groups())
                || !aabb.intersects(&other.compute_aabb())
            {
                continue;
            }
            let d = rapier3d::parry::query::distance(c.position(), c.shape(), other.position(), other.shape());
            // A pair parry cannot measure counts as touching: explicit is the safe side.
            if d.map_or(true, |d| d.distance < GAP) {
                return true;
            }
        }
    }
    false
}

/// One moving obstacle's rapier side.
#[derive(Clone, Debug)]
pub(super) struct Link {
    pub collider: ColliderHandle,
    pub body: Option<RigidBodyHandle>,
    /// The collider's pose at the frame's start.
    pub start: RigidPose,
    /// Reference point of the angular impulse: the body's world centre of mass at the frame's
    /// start (the collider's origin without a body).
    pub center: Vec3A,
}

/// An attachment's rigid side for one frame.
#[derive(Clone, Debug)]
pub(super) struct AttachLink {
    pub handle: AttachmentHandle,
    pub soft: SoftBodyHandle,
    /// Global state indices of the attached vertices.
    pub vertices: Vec<u32>,
    /// Attachment points at the frame's start \[m\] (none for scripted targets).
    pub points: Vec<Vec3A>,
    pub body: Option<RigidBodyHandle>,
    pub center: Vec3A,
}

/// The frame's links, built before the soft step.
#[derive(Debug, Default)]
pub(super) struct Frame {
    pub links: Vec<Link>,
    /// Sensors: event-only obstacles, never given to the solver.
    pub sensors: Vec<(ColliderHandle, Obstacle)>,
    /// Colliders whose solver groups exclude some soft bodies: their contact is reported but
    /// exerts no force, so they are checked for events like sensors.
    pub event_only: Vec<(ColliderHandle, Obstacle)>,
    pub attachments: Vec<AttachLink>,
    pub dt: f32,
}

/// The frame's length \[s\], the soft world's gravity (taken as rapier's), and the query margin
/// of collider obstacles \[m\].
#[derive(Clone, Copy, Debug)]
pub(super) struct FrameParams {
    pub dt: f32,
    pub gravity: Vec3,
    pub margin: f32,
    /// Whether dynamic bodies may be carriers: only when the soft step is one substep, so
    /// that the solved end pose and the velocity rapier ends with (the pose change over the
    /// frame) are the same implicit-Euler step.
    pub carriers: bool,
    /// A box around every soft vertex and where it can get this frame `(min, max)` \[m\]: a
    /// body whose colliders stay outside it cannot be a carrier (and is not tested for one).
    pub soft_box: (Vec3, Vec3),
}

/// Builds the frame's moving obstacles (into `obstacles`) and links. `packed` lists the packed
/// bodies' handles in state order.
pub(super) fn build_frame(
    coupling: &mut RapierCoupling,
    packed: &[SoftBodyHandle],
    bodies: &RigidBodySet,
    colliders: &ColliderSet,
    params: FrameParams,
    motion: &mut FrameMotion,
) -> Frame {
    let FrameMotion { obstacles, carriers } = motion;
    let FrameParams { dt, gravity, margin, carriers: carriers_allowed, soft_box } = params;
    let mut frame = Frame { dt, ..Frame::default() };
    let substeps = coupling.rapier_substeps_or_default();
    obstacles.clear();
    carriers.clear();
    // Per dynamic rapier body met so far: its carrier index, if it is one.
    let mut carrier_of: Vec<(RigidBodyHandle, Option<u32>)> = Vec::new();
    let groups: Vec<InteractionGroups> = packed.iter().map(|h| coupling.collision_groups(*h)).collect();
    for (handle, collider) in colliders.iter() {
        if !collider.is_enabled() {
            continue;
        }
        let parent = collider.parent().and_then(|b| bodies.get(b).map(|rb| (b, rb)));
        let (start, end, center) = match (parent, collider.position_wrt_parent()) {
            (Some((_, rb)), Some(rel)) => {
                (*rb.position() * *rel, end_pose(rb, dt, gravity, substeps) * *rel, Vec3A::from(rb.center_of_mass()))
            }
            _ => (*collider.position(), *collider.position(), Vec3A::from(collider.position().translation)),
        };
        let geometry = coupling.geometry_for(handle, collider.shared_shape());
        let mut shape = PosedShape::new(geometry, to_pose(&start), to_pose(&end), margin);
        let contact: Vec<bool> = groups.iter().map(|g| g.test(collider.collision_groups())).collect();
        let forces: Vec<bool> =
            groups.iter().zip(&contact).map(|(g, &c)| c && g.test(collider.solver_groups())).collect();
        if collider.is_sensor() || forces.iter().any(|&f| !f) {
            let mut events = shape.clone();
            events.bodies = (!contact.iter().all(|&c| c)).then(|| contact.clone().into());
            let o = Obstacle { shape: ObstacleShape::Posed(events), friction: 0.0 };
            if collider.is_sensor() {
                frame.sensors.push((handle, o));
                continue;
            }
            frame.event_only.push((handle, o));
        }
        if !forces.iter().any(|&f| f) {
            continue;
        }
        shape.bodies = (!forces.iter().all(|&f| f)).then(|| forces.into());
        if let Some((b, rb)) = parent {
            shape.movable = rb.is_dynamic();
            let attached = coupling
                .attachments
                .iter()
                .filter_map(|(_, a)| a.as_ref())
                .any(|a| matches!(&a.rigid, Some((h, _)) if *h == b));
            let (lo, hi) = shape.world_box();
            let reachable = !(hi.cmplt(soft_box.0.into()).any() || lo.cmpgt(soft_box.1.into()).any());
            if carriers_allowed && reachable && !attached && !rb.is_sleeping() && !coupling.jointed.contains(&b) {
                shape.carrier = carrier_index(&mut carrier_of, carriers, b, rb, colliders, dt, gravity, substeps);
            }
        }
        obstacles.push(Obstacle { shape: ObstacleShape::Posed(shape), friction: collider.friction() });
        frame.links.push(Link { collider: handle, body: parent.map(|(b, _)| b), start: to_pose(&start), center });
    }
    frame
}

/// Sums of the frame's impulses, filled after each substep.
#[derive(Debug, Default)]
pub(super) struct Accumulator {
    /// Per link: impulse and angular impulse on the collider.
    pub link_impulse: Vec<(Vec3A, Vec3A)>,
    /// Per (packed body, link): impulse and largest single-vertex impulse.
    pub pair_impulse: BTreeMap<(u32, usize), (Vec3A, f32)>,
    /// Per attachment: impulse and angular impulse on its body.
    pub attach_impulse: Vec<(Vec3A, Vec3A)>,
    /// Pairs touching at the frame's end.
    pub touching: BTreeMap<PairKey, Touch>,
    vertices: Vec<u32>,
    /// Per (vertex, collider) near each other: vertex slot, link, penalty depth, closest
    /// point, distance.
    shares: Vec<(usize, usize, f32, Vec3A, f32)>,
    impulses: Vec<Vec3A>,
}

impl Accumulator {
    pub fn new(frame: &Frame) -> Self {
        Self {
            link_impulse: vec![(Vec3A::ZERO, Vec3A::ZERO); frame.links.len()],
            attach_impulse: vec![(Vec3A::ZERO, Vec3A::ZERO); frame.attachments.len()],
            ..Self::default()
        }
    }

    /// Reads this substep's contact and attachment impulses.
    pub fn after_substep(&mut self, ctx: &mut SubstepContext<'_>, frame: &Frame) {
        let (offset, model) = (ctx.contact.offset, ctx.contact);
        // A vertex the clamp stopped at the surface and the contact then pushed back out sits
        // near the offset; a little beyond it still counts as this obstacle's.
        let reach = 1.5 * offset;
        self.vertices.clear();
        self.shares.clear();
        let st = &*ctx.state;
        let moving = &ctx.obstacles[ctx.moving_start..];
        for (b, slot) in ctx.slots.iter().enumerate() {
            // Neither from a body whose substep was rolled back nor from one the fallback
            // redid: the fast path's impulses are not its state's (the fallback's own contact
            // reactions are not handed to rapier yet).
            if ctx.rolled_back.contains(&slot.handle) || ctx.redone.contains(&slot.handle) {
                continue;
            }
            let b = b as u32;
            for v in slot.range() {
                if st.flags[v] & VERTEX_KINEMATIC != 0 {
                    continue;
                }
                let x = Vec3A::from_vec4(st.positions[v]);
                let mut first = true;
                for (k, o) in moving.iter().enumerate() {
                    if !o.applies_to(b) {
                        continue;
                    }
                    let (d, n) = o.signed_distance(x);
                    if d >= reach {
                        continue;
                    }
                    if first {
                        self.vertices.push(v as u32);
                        first = false;
                    }
                    // Share of the vertex's impulse: by the contact layer's force per unit
                    // stiffness (the penalty's depth, or the stiffening layer's) against every
                    // obstacle touching it (the ground takes its part), by nearness if none
                    // pushes.
                    let depth = model.normal_force(1.0, d);
                    let idx = self.vertices.len() - 1;
                    self.shares.push((idx, k, depth, x - n * d, d));
                }
                // The vertex's edge contacts (`solver::vbd::spans`) share by their penalty depth too,
                // weighted by the vertex's part of the edge point.
                let edges = ctx.fast.obstacle_spans();
                for (j, w, scale, p, d, n) in edges.near(v, ctx.obstacles, &st.positions, reach) {
                    let Some(k) = j.checked_sub(ctx.moving_start) else { continue };
                    if first {
                        self.vertices.push(v as u32);
                        first = false;
                    }
                    let depth = w * scale * (offset - d).max(0.0);
                    let idx = self.vertices.len() - 1;
                    self.shares.push((idx, k, depth, p - n * d, d));
                }
            }
        }
        ctx.impulses(&self.vertices, &mut self.impulses);
        let st = &*ctx.state;
        let mut i = 0;
        while i < self.shares.len() {
            let idx = self.shares[i].0;
            let end = i + self.shares[i..].iter().take_while(|s| s.0 == idx).count();
            let v = self.vertices[idx] as usize;
            let x = Vec3A::from_vec4(st.positions[v]);
            let b = st.vertex_body[v];
            // The static obstacles' share at this vertex.
            let static_depth: f32 =
                ctx.obstacles[..ctx.moving_start].iter().map(|o| model.normal_force(1.0, o.signed_distance(x).0)).sum();
            let total: f32 = static_depth + self.shares[i..end].iter().map(|s| s.2).sum::<f32>();
            // With no penalty acting (a vertex the clamp stopped), the nearest collider takes
            // it, unless a static obstacle is nearer still.
            let nearest_static = ctx.obstacles[..ctx.moving_start]
                .iter()
                .filter(|o| o.applies_to(b))
                .map(|o| o.signed_distance(x).0)
                .fold(f32::INFINITY, f32::min);
            let nearest = self.shares[i..end]
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.4.total_cmp(&b.1.4))
                .filter(|(_, s)| s.4 <= nearest_static)
                .map(|(j, _)| j);
            for (j, &(_, k, depth, point, _)) in self.shares[i..end].iter().enumerate() {
                let share = if total > 0.0 {
                    depth / total
                } else if Some(j) == nearest {
                    1.0
                } else {
                    0.0
                };
                if share == 0.0 {
                    continue;
                }
                let on_collider = -self.impulses[idx] * share;
                let link = &frame.links[k];
                // The contact point carried back to the collider's pose at the frame's start,
                // where rapier applies the impulse.
                let ObstacleShape::Posed(p) = &moving[k].shape else { continue };
                let point0 = link.start.apply(p.end.invert(point));
                let acc = &mut self.link_impulse[k];
                acc.0 += on_collider;
                acc.1 += (point0 - link.center).cross(on_collider);
                let pair = self.pair_impulse.entry((b, k)).or_insert((Vec3A::ZERO, 0.0));
                pair.0 += on_collider;
                pair.1 = pair.1.max(on_collider.length());
            }
            i = end;
        }
        // Attachments: the pin's reaction goes to the body at the attachment point (not from a
        // body whose substep was rolled back, its state the restored start, nor from one the
        // fallback redid).
        for (a, link) in frame.attachments.iter().enumerate() {
            if ctx.rolled_back.contains(&link.soft) || ctx.redone.contains(&link.soft) {
                continue;
            }
            ctx.impulses(&link.vertices, &mut self.impulses);
            for (k, j) in self.impulses.iter().enumerate() {
                let on_body = -*j;
                let acc = &mut self.attach_impulse[a];
                acc.0 += on_body;
                if let Some(p) = link.points.get(k) {
                    acc.1 += (*p - link.center).cross(on_body);
                }
            }
        }
    }
}

/// Per carrier body: the impulse and angular impulse that take it from its predicted end pose
/// to the one the step solved.
pub(super) fn carrier_follow(
    frame: &Frame,
    predicted: &[Obstacle],
    solved: &[Obstacle],
    carriers: &[CarrierBody],
) -> Vec<(RigidBodyHandle, Vec3, Vec3)> {
    let mut out: Vec<(RigidBodyHandle, Vec3, Vec3)> = Vec::new();
    for ((link, p), s) in frame.links.iter().zip(predicted).zip(solved) {
        let (Some(body), ObstacleShape::Posed(p), ObstacleShape::Posed(s)) = (link.body, &p.shape, &s.shape) else {
            continue;
        };
        let Some(c) = p.carrier.and_then(|c| carriers.get(c as usize)) else { continue };
        if out.iter().any(|(b, _, _)| *b == body) {
            continue;
        }
        if p.end == s.end {
            // Nothing reached it: the prediction stands, and rapier integrates it alone.
            continue;
        }
        let change = crate::solver::vbd::carrier::pose_change(&p.end, &s.end);
        let moved = change.rotation * c.center_end + change.translation - c.center_end;
        let turn = crate::solver::vbd::carrier::rotation_vector(change.rotation);
        let inertia = crate::solver::vbd::carrier::inertia_of(c.inv_inertia).as_mat3();
        out.push((body, moved * (c.mass / frame.dt), inertia * (turn / frame.dt)));
    }
    out
}

/// Packed soft bodies that touched a collider of no carrier body this frame (the ground, a
/// kinematic tool, an explicit dynamic body): what they are given of a carrier's reaction goes
/// on to that support, so it is not added to their velocity.
pub(super) fn supported_bodies(frame: &Frame, acc: &Accumulator, follow: &[(RigidBodyHandle, Vec3, Vec3)]) -> Vec<u32> {
    let carried = |k: usize| frame.links[k].body.is_some_and(|b| follow.iter().any(|(h, _, _)| *h == b));
    let mut out: Vec<u32> = acc.pair_impulse.keys().filter(|(_, k)| !carried(*k)).map(|(b, _)| *b).collect();
    out.dedup();
    out
}

/// Makes the frame's impulses on each carrier body (`follow`: the impulse and angular impulse
/// that take it to the pose the step solved, which is what its block of the step balanced
/// against the contact forces) what the coupling applies and reports. The soft vertices' own
/// account of the exchange (`acc`) also carries their remaining residual; the difference is
/// spread over the body's colliders and its soft partners in proportion to their share of the
/// contact impulse, and each soft body takes its part as a velocity change, so momentum is
/// conserved. Returns `(packed body, impulse to add to it)`.
pub(super) fn carrier_reactions(
    frame: &Frame,
    acc: &mut Accumulator,
    follow: &[(RigidBodyHandle, Vec3, Vec3)],
) -> Vec<(u32, Vec3A)> {
    let share = |j: Vec3A, total: f32, count: usize| if total > 0.0 { j.length() / total } else { 1.0 / count as f32 };
    let mut out = Vec::new();
    for &(body, j_c, l_c) in follow {
        let links: Vec<usize> = (0..frame.links.len()).filter(|&i| frame.links[i].body == Some(body)).collect();
        let pairs: Vec<(u32, usize)> = acc.pair_impulse.keys().filter(|(_, k)| links.contains(k)).copied().collect();
        if pairs.is_empty() {
            // No soft body can take the reaction: the body keeps the soft side's own account.
            continue;
        }
        let (j_acc, l_acc) = links
            .iter()
            .fold((Vec3A::ZERO, Vec3A::ZERO), |(j, l), &i| (j + acc.link_impulse[i].0, l + acc.link_impulse[i].1));
        let (missing, missing_l) = (Vec3A::from(j_c) - j_acc, Vec3A::from(l_c) - l_acc);
        let total: f32 = links.iter().map(|&i| acc.link_impulse[i].0.length()).sum();
        let old: Vec<Vec3A> = links.iter().map(|&i| acc.link_impulse[i].0).collect();
        for (&i, &j) in links.iter().zip(&old) {
            let w = share(j, total, links.len());
            acc.link_impulse[i].0 += missing * w;
            acc.link_impulse[i].1 += missing_l * w;
        }
        let total: f32 = pairs.iter().map(|p| acc.pair_impulse[p].0.length()).sum();
        let count = pairs.len();
        for p in pairs {
            if let Some(entry) = acc.pair_impulse.get_mut(&p) {
                let part = missing * share(entry.0, total, count);
                entry.0 += part;
                out.push((p.0, -part));
            }
        }
    }
    out
}

/// After the soft step: reactions to dynamic rigid bodies, the frame's reports, and events.
pub(super) fn finish_frame(
    coupling: &mut RapierCoupling,
    frame: &Frame,
    acc: Accumulator,
    packed: &[SoftBodyHandle],
    bodies: &mut RigidBodySet,
    colliders: &ColliderSet,
    events: &dyn SoftEventHandler,
) {
    let mut touching_now = acc.touching;
    coupling.impulses.clear();
    for (link, &(impulse, torque)) in frame.links.iter().zip(&acc.link_impulse) {
        if impulse == Vec3A::ZERO && torque == Vec3A::ZERO {
            continue;
        }
        if let Some(rb) = link.body.and_then(|b| bodies.get_mut(b))
            && rb.is_dynamic()
        {
            rb.apply_impulse(Vec3::from(impulse), true);
            rb.apply_torque_impulse(Vec3::from(torque), true);
        }
        coupling.impulses.push(ColliderImpulse {
            collider: link.collider,
            body: link.body,
            impulse: Vec3::from(impulse),
            torque: Vec3::from(torque),
        });
    }
    coupling.attachment_impulses.clear();
    for (link, &(impulse, torque)) in frame.attachments.iter().zip(&acc.attach_impulse) {
        if let Some(rb) = link.body.and_then(|b| bodies.get_mut(b))
            && rb.is_dynamic()
        {
            rb.apply_impulse(Vec3::from(impulse), true);
            rb.apply_torque_impulse(Vec3::from(torque), true);
        }
        coupling.attachment_impulses.push(AttachmentImpulse { attachment: link.handle, impulse: Vec3::from(impulse) });
    }

    let wants =
        |c: ColliderHandle, flag: ActiveEvents| colliders.get(c).is_some_and(|c| c.active_events().contains(flag));
    for (key, touch) in touching_now.iter_mut() {
        touch.reported = wants(pair_collider(key), ActiveEvents::COLLISION_EVENTS);
    }
    // Collision events, in a fixed order: ended pairs, then new ones. A pair whose body or
    // collider is gone ends as removed (a removed collider cannot be asked for its flags).
    for (key, touch) in &coupling.touching {
        if touching_now.contains_key(key) {
            continue;
        }
        let (body, collider) = (key.0, pair_collider(key));
        // A removed collider cannot be asked for its flags: its pairs were only ever reported
        // if it had them, which `Started` recorded.
        let removed = colliders.get(collider).is_none() || !packed.contains(&body);
        if (removed && touch.reported) || wants(collider, ActiveEvents::COLLISION_EVENTS) {
            events.handle_soft_collision_event(SoftCollisionEvent::Stopped {
                body,
                collider,
                sensor: touch.sensor,
                removed,
            });
        }
    }
    for (key, touch) in &touching_now {
        let (body, collider) = (key.0, pair_collider(key));
        if !coupling.touching.contains_key(key) && wants(collider, ActiveEvents::COLLISION_EVENTS) {
            events.handle_soft_collision_event(SoftCollisionEvent::Started { body, collider, sensor: touch.sensor });
        }
    }
    for (&(b, k), &(impulse, max_vertex)) in &acc.pair_impulse {
        let link = &frame.links[k];
        let Some(c) = colliders.get(link.collider) else { continue };
        if !c.active_events().contains(ActiveEvents::CONTACT_FORCE_EVENTS) {
            continue;
        }
        let force = impulse.length() / frame.dt;
        if force > c.contact_force_event_threshold() {
            let body = packed[b as usize];
            let vertices = touching_now.get(&pair_key(body, link.collider)).map_or(0, |t| t.vertices);
            events.handle_soft_contact_force_event(
                frame.dt,
                SoftContactForceEvent {
                    body,
                    collider: link.collider,
                    total_impulse: Vec3::from(impulse),
                    total_force_magnitude: force,
                    max_vertex_impulse: max_vertex,
                    vertices,
                },
            );
        }
    }
    coupling.touching = touching_now;
    coupling.geometry.retain(|h, _| colliders.get(*h).is_some());
}
