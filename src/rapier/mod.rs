//! rapier3d interop (feature `rapier`): a game's rapier world and Pliant's soft bodies in one
//! loop.
//!
//! * Every enabled collider is an obstacle for soft vertices, moving with its body over the
//!   frame (friction acts on the motion relative to it), whatever its shape: parry's point
//!   projection gives the contact, its ray cast the path clamp. Sensors exert nothing and
//!   report when a soft body enters them; collision groups decide contact, solver groups
//!   decide whether it exerts forces, as between two rapier colliders.
//! * Two-way coupling: the impulse each contact gave the soft vertices goes back, equal and
//!   opposite, to the collider's dynamic body at the contact point before rapier's next step.
//! * Attachments: soft vertices held at body-local points of a rapier body (dynamic ones feel
//!   the reaction), or at targets the caller sets; made and removed at run time.
//! * Events: [`SoftCollisionEvent`] (began, ended) and [`SoftContactForceEvent`], for colliders
//!   whose `ActiveEvents` ask for them, through a [`SoftEventHandler`].
//!
//! ```
//! use pliant::prelude::*;
//! use pliant::rapier::RapierCoupling;
//! use pliant::rapier::rapier3d::prelude::{ColliderBuilder, ColliderSet, RigidBodySet};
//!
//! let mut bodies = RigidBodySet::new();
//! let mut colliders = ColliderSet::new();
//! colliders.insert(ColliderBuilder::cuboid(1.0, 0.1, 1.0).build());
//! let mut world = World::new(StepConfig::default()).unwrap();
//! let mut coupling = RapierCoupling::default();
//! let mesh = TetMesh::box_mesh(Vec3::splat(0.1), [2, 2, 2], TetSplit::Six).unwrap();
//! world.bodies.insert(SoftBodyBuilder::tetrahedral(mesh).translation(Vec3::Y * 0.3).build().unwrap());
//! for _ in 0..30 {
//!     coupling.step(&mut world, &mut bodies, &colliders, &());
//!     // ... then rapier's own step.
//! }
//! assert!(world.find_intersections().is_empty());
//! ```
//!
//! Call [`RapierCoupling::step`] once per frame before rapier's step, with the same `dt`. It
//! runs the world's step with the coupling as its [`StepHooks`]; a coupled step runs on the CPU.

mod coupling;
mod events;
mod shape;

use std::collections::BTreeMap;

use glam::{Vec3, Vec3A};

use crate::collision::Obstacle;
pub use rapier3d;
use rapier3d::dynamics::{RigidBodyHandle, RigidBodySet};
use rapier3d::geometry::ColliderSet;

use coupling::{
    Accumulator, AttachLink, Attachment, Frame, FrameParams, PairKey, Touch, build_frame, finish_frame, pair_key,
};
pub use coupling::{AttachmentHandle, AttachmentImpulse, ColliderImpulse, RapierCoupling};
pub use events::{SoftChannelEventCollector, SoftCollisionEvent, SoftContactForceEvent, SoftEventHandler};
pub use shape::ColliderGeometry;

use crate::body::{BodyError, Pin, SoftBodyHandle};
use crate::error::PliantError;
use crate::runtime::{FrameMotion, StepHooks, StepReport, SubstepContext, World};

impl RapierCoupling {
    /// Steps `world` one frame together with a rapier world: its colliders are this frame's
    /// moving obstacles, attachments follow their bodies, and the reactions are applied to
    /// dynamic rapier bodies (as impulses, before rapier's next step). Events go to `events`.
    /// Use the same `dt` for both worlds; a coupled step runs on the CPU.
    ///
    /// A dynamic body touching soft bodies and nothing rigid is solved with them (a carrier;
    /// see the README). This function cannot see rapier's joints: with jointed dynamic bodies
    /// near soft ones, use [`RapierCoupling::step_with_physics_world`], which leaves them
    /// explicit.
    pub fn step(
        &mut self,
        world: &mut World,
        bodies: &mut RigidBodySet,
        colliders: &ColliderSet,
        events: &dyn SoftEventHandler,
    ) -> StepReport {
        let mut hooks = RapierStep { coupling: self, bodies, colliders, events, frame: None };
        world.step_with_hooks(&mut hooks)
    }

    /// [`RapierCoupling::step`] with rapier's own world type: call it before
    /// `physics.step()`.
    pub fn step_with_physics_world(
        &mut self,
        world: &mut World,
        physics: &mut rapier3d::pipeline::PhysicsWorld,
        events: &dyn SoftEventHandler,
    ) -> StepReport {
        self.set_rapier_substeps(physics.integration_parameters.num_solver_iterations);
        // rapier's joints hold these bodies, which the soft step cannot see.
        let jointed = physics
            .bodies
            .iter()
            .map(|(h, _)| h)
            .filter(|&h| {
                physics.impulse_joints.attached_joints(h).next().is_some()
                    || physics.multibody_joints.rigid_body_link(h).is_some()
            })
            .collect();
        self.jointed = jointed;
        let (bodies, colliders) = (&mut physics.bodies, &physics.colliders);
        self.step(world, bodies, colliders, events)
    }

    /// Attaches vertices of soft body `soft` (body-local indices) to rapier body `rigid` where
    /// they are now: from the next step they follow the body's motion, and a dynamic body feels
    /// their pull. Detach with [`RapierCoupling::detach`] (a release: the vertices keep their
    /// velocity).
    pub fn attach_to_rigid_body(
        &mut self,
        world: &mut World,
        soft: SoftBodyHandle,
        vertices: &[u32],
        rigid: RigidBodyHandle,
        bodies: &RigidBodySet,
    ) -> Result<AttachmentHandle, PliantError> {
        let rb = bodies.get(rigid).ok_or_else(|| PliantError::NoSuchRigidBody(format!("{rigid:?}")))?;
        let points = current_vertex_positions(world, soft, vertices)?;
        let pose = *rb.position();
        let local = points.iter().map(|&p| pose.inverse_transform_point(p)).collect();
        self.add_attachment(world, soft, vertices, points, Some((rigid, local)))
    }

    /// Attaches vertices of soft body `soft` to targets the caller moves with
    /// [`RapierCoupling::set_attachment_targets`] (a VR hand, a teleoperated tool); they start
    /// where the vertices are now.
    pub fn attach_to_targets(
        &mut self,
        world: &mut World,
        soft: SoftBodyHandle,
        vertices: &[u32],
    ) -> Result<AttachmentHandle, PliantError> {
        let points = current_vertex_positions(world, soft, vertices)?;
        self.add_attachment(world, soft, vertices, points, None)
    }

    /// Sets the end-of-frame targets of an attachment made by
    /// [`RapierCoupling::attach_to_targets`] \[m\], one per vertex.
    pub fn set_attachment_targets(
        &self,
        world: &mut World,
        a: AttachmentHandle,
        targets: &[Vec3],
    ) -> Result<(), PliantError> {
        let att = self.attachment(a).ok_or_else(|| PliantError::NoSuchAttachment(a.to_string()))?;
        if att.rigid.is_some() {
            return Err(PliantError::NoSuchAttachment(format!("{a} with scripted targets (it follows a rapier body)")));
        }
        let (soft, id) = (att.soft, att.pin);
        let pin = pin_index(world, soft, id)
            .ok_or_else(|| PliantError::NoSuchAttachment(format!("{a} (its pin was removed)")))?;
        world.set_pin_targets(soft, pin, targets)
    }

    /// Releases an attachment: its vertices are free from the next step and keep their
    /// velocity.
    pub fn detach(&mut self, world: &mut World, a: AttachmentHandle) -> Result<(), PliantError> {
        let att = self.attachment(a).ok_or_else(|| PliantError::NoSuchAttachment(a.to_string()))?.clone();
        let time = world.time();
        if let Some(body) = world.bodies.get_mut(att.soft)
            && let Some(pin) = body.pins.iter_mut().find(|p| p.id == att.pin)
        {
            pin.release_at = Some(time);
            body.pins_version += 1;
            self.free_pins.entry(att.soft).or_default().push(att.pin);
        }
        self.attachments[a.index as usize].1 = None;
        Ok(())
    }

    /// The attachments alive now.
    pub fn attachments(&self) -> Vec<AttachmentHandle> {
        self.attachments
            .iter()
            .enumerate()
            .filter(|(_, (_, a))| a.is_some())
            .map(|(i, (g, _))| AttachmentHandle { index: i as u32, generation: *g })
            .collect()
    }

    fn add_attachment(
        &mut self,
        world: &mut World,
        soft: SoftBodyHandle,
        vertices: &[u32],
        points: Vec<Vec3>,
        rigid: Option<(RigidBodyHandle, Vec<Vec3>)>,
    ) -> Result<AttachmentHandle, PliantError> {
        let body = world.bodies.get_mut(soft).ok_or(PliantError::InvalidHandle(soft))?;
        let pin = Pin::scripted(vertices.to_vec(), points);
        // A released attachment's pin is reused, so grasp-and-release cycles do not grow the
        // pin list and other pins keep their indices.
        let id = pin.id;
        let reusable = self.free_pins.get_mut(&soft).and_then(Vec::pop);
        match reusable.and_then(|old| body.pins.iter().position(|p| p.id == old).map(|k| (old, k))) {
            Some((old, k)) => {
                if let Err(e) = body.replace_pin(k, pin) {
                    self.free_pins.entry(soft).or_default().push(old);
                    return Err(e.into());
                }
            }
            None => {
                body.add_pin(pin)?;
            }
        }
        let pin = id;
        let att = Attachment { soft, pin, vertices: vertices.to_vec(), rigid };
        let slots = &mut self.attachments;
        let index = match slots.iter().position(|(_, a)| a.is_none()) {
            Some(i) => {
                slots[i].0 += 1;
                slots[i].1 = Some(att);
                i
            }
            None => {
                slots.push((0, Some(att)));
                slots.len() - 1
            }
        };
        Ok(AttachmentHandle { index: index as u32, generation: slots[index].0 })
    }

    /// Sets the targets of attachments to rapier bodies for this frame and lists every
    /// attachment's rigid side; forgets attachments whose soft body was removed and releases
    /// those whose rapier body was.
    fn attachment_links(&mut self, world: &mut World, bodies: &RigidBodySet, dt: f32) -> Vec<AttachLink> {
        let mut links = Vec::new();
        let time = world.time();
        let (gravity, substeps) = (world.config().gravity, self.rapier_substeps_or_default());
        for (index, (generation, slot)) in self.attachments.iter_mut().enumerate() {
            let Some(att) = slot else { continue };
            let handle = AttachmentHandle { index: index as u32, generation: *generation };
            let Some(start) = world.slots().iter().find(|s| s.handle == att.soft).map(|s| s.vertex_start) else {
                self.free_pins.remove(&att.soft);
                *slot = None;
                continue;
            };
            let vertices = att.vertices.iter().map(|&v| start + v).collect();
            let Some((rigid, local)) = &att.rigid else {
                links.push(AttachLink {
                    handle,
                    soft: att.soft,
                    vertices,
                    points: Vec::new(),
                    body: None,
                    center: Vec3A::ZERO,
                });
                continue;
            };
            let Some(rb) = bodies.get(*rigid) else {
                log::warn!("pliant: attachment {handle} released: its rapier body {rigid:?} was removed");
                if let Some(body) = world.bodies.get_mut(att.soft)
                    && let Some(pin) = body.pins.iter_mut().find(|p| p.id == att.pin)
                {
                    pin.release_at = Some(time);
                    self.free_pins.entry(att.soft).or_default().push(att.pin);
                }
                *slot = None;
                continue;
            };
            let end = coupling::end_pose(rb, dt, gravity, substeps);
            let targets: Vec<Vec3> = local.iter().map(|&p| end.transform_point(p)).collect();
            let points = local.iter().map(|&p| Vec3A::from(rb.position().transform_point(p))).collect();
            let Some(pin) = pin_index(world, att.soft, att.pin) else {
                log::warn!("pliant: attachment {handle} dropped: its pin was removed from the body");
                *slot = None;
                continue;
            };
            if let Err(e) = world.set_pin_targets(att.soft, pin, &targets) {
                log::warn!("pliant: attachment {handle}: {e}");
            }
            links.push(AttachLink {
                handle,
                soft: att.soft,
                vertices,
                points,
                body: Some(*rigid),
                center: Vec3A::from(rb.center_of_mass()),
            });
        }
        links
    }
}

/// A coupled frame in progress: the coupling as the step's hooks, with the rapier sets it
/// reads and writes.
struct RapierStep<'a> {
    coupling: &'a mut RapierCoupling,
    bodies: &'a mut RigidBodySet,
    colliders: &'a ColliderSet,
    events: &'a dyn SoftEventHandler,
    /// Set by `before_step`: the frame's links, the impulses so far, the packed bodies, and the
    /// carriers' predicted poses (to tell how far the step moved them).
    frame: Option<(Frame, Accumulator, Vec<SoftBodyHandle>, Vec<Obstacle>)>,
}

impl StepHooks for RapierStep<'_> {
    fn before_step(&mut self, world: &mut World, motion: &mut FrameMotion) {
        let packed: Vec<SoftBodyHandle> = world.slots().iter().map(|s| s.handle).collect();
        let dt = world.config().dt;
        // Queries farther than this from a collider's swept box skip parry altogether.
        let margin = 4.0 * world.config().contact_offset + 1e-3;
        let gravity = world.config().gravity;
        let params =
            FrameParams { dt, gravity, margin, carriers: world.config().substeps == 1, soft_box: world.reach_box(dt) };
        let mut frame = build_frame(self.coupling, &packed, self.bodies, self.colliders, params, motion);
        frame.attachments = self.coupling.attachment_links(world, self.bodies, dt);
        let acc = Accumulator::new(&frame);
        let predicted = if motion.carriers.is_empty() { Vec::new() } else { motion.obstacles.clone() };
        self.frame = Some((frame, acc, packed, predicted));
    }

    fn after_substep(&mut self, substep: &mut SubstepContext<'_>) {
        if let Some((frame, acc, _, _)) = &mut self.frame {
            acc.after_substep(substep, frame);
        }
    }

    fn after_step(&mut self, world: &mut World, _report: &mut StepReport) {
        let Some((frame, mut acc, packed, predicted)) = self.frame.take() else { return };
        acc.touching = touching_pairs(world, &frame);
        let carriers = &world.motion.carriers;
        let follow = coupling::carrier_follow(&frame, &predicted, world.moving_obstacles(), carriers);
        // Each soft body takes its part of the carriers' reactions, unless something else holds
        // it (a rapier support, a static obstacle, a pin), which then takes it.
        let supported = coupling::supported_bodies(&frame, &acc, &follow);
        for (b, j) in coupling::carrier_reactions(&frame, &mut acc, &follow) {
            if !supported.contains(&b) && !world.held_by_environment(b as usize) {
                world.add_body_impulse(b as usize, j);
            }
        }
        finish_frame(self.coupling, &frame, acc, &packed, self.bodies, self.colliders, self.events);
    }
}

/// Where the pin with identity `id` is among body `soft`'s pins now (the user may have
/// removed pins before it).
fn pin_index(world: &World, soft: SoftBodyHandle, id: u64) -> Option<usize> {
    world.bodies.get(soft)?.pins.iter().position(|p| p.id == id)
}

fn current_vertex_positions(
    world: &mut World,
    soft: SoftBodyHandle,
    vertices: &[u32],
) -> Result<Vec<Vec3>, PliantError> {
    world.sync();
    #[cfg(feature = "gpu")]
    world.wait_for_gpu();
    let name = world.bodies.get(soft).ok_or(PliantError::InvalidHandle(soft))?.name().to_owned();
    let positions = world.body_positions(soft).ok_or(PliantError::InvalidHandle(soft))?;
    let count = positions.len() as u32;
    if vertices.is_empty() {
        return Err(PliantError::Body(BodyError::BadPin {
            body: name,
            pin: 0,
            reason: "an attachment needs at least one vertex".into(),
        }));
    }
    vertices
        .iter()
        .map(|&v| {
            positions.get(v as usize).map(|p| p.truncate()).ok_or_else(|| PliantError::NoSuchVertex {
                body: name.clone(),
                vertex: v,
                count,
            })
        })
        .collect()
}

/// Soft bodies touching colliders at the frame's end: within the contact offset of a collider
/// that acts on them, or inside a sensor.
fn touching_pairs(world: &World, frame: &Frame) -> BTreeMap<PairKey, Touch> {
    let offset = world.config().contact_offset;
    let st = world.state();
    let mut out = BTreeMap::new();
    let forces =
        frame.links.iter().map(|l| l.collider).zip(world.moving_obstacles().iter().map(|o| (o, false, offset)));
    let others = frame
        .event_only
        .iter()
        .map(|(c, o)| (*c, (o, false, offset)))
        .chain(frame.sensors.iter().map(|(c, o)| (*c, (o, true, 0.0))));
    for (collider, (o, sensor, within)) in forces.chain(others) {
        for (b, slot) in world.slots().iter().enumerate() {
            if !o.applies_to(b as u32) {
                continue;
            }
            let count =
                slot.range().filter(|&v| o.signed_distance(Vec3A::from_vec4(st.positions[v])).0 < within).count()
                    as u32;
            if count > 0 {
                let t = out.entry(pair_key(slot.handle, collider)).or_insert(Touch {
                    sensor,
                    vertices: 0,
                    reported: false,
                });
                t.vertices = t.vertices.max(count);
            }
        }
    }
    out
}
