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
//! use pliant::rapier::rapier3d::prelude::{ColliderBuilder, ColliderSet, RigidBodySet};
//!
//! let mut bodies = RigidBodySet::new();
//! let mut colliders = ColliderSet::new();
//! colliders.insert(ColliderBuilder::cuboid(1.0, 0.1, 1.0).build());
//! let mut world = World::new(StepConfig::default()).unwrap();
//! let mesh = TetMesh::box_mesh(Vec3::splat(0.1), [2, 2, 2], TetSplit::Six).unwrap();
//! world.bodies.insert(SoftBodyBuilder::tetrahedral(mesh).translation(Vec3::Y * 0.3).build().unwrap());
//! for _ in 0..30 {
//!     world.step_with_rapier(&mut bodies, &colliders, &());
//!     // ... then rapier's own step.
//! }
//! assert!(world.find_intersections().is_empty());
//! ```
//!
//! Call [`World::step_with_rapier`] once per frame before rapier's step, with the same `dt`.
//! A coupled step runs on the CPU.

mod coupling;
mod events;
mod shape;

use std::collections::BTreeMap;

use glam::{Vec3, Vec3A};
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
use crate::runtime::{StepReport, World};

impl World {
    /// Steps one frame together with a rapier world: its colliders are this frame's moving
    /// obstacles, attachments follow their bodies, and the reactions are applied to dynamic
    /// rapier bodies (as impulses, before rapier's next step). Events go to `events`. Use the
    /// same `dt` for both worlds; a coupled step runs on the CPU.
    ///
    /// A dynamic body touching soft bodies and nothing rigid is solved with them (a carrier;
    /// see the README). This function cannot see rapier's joints: with jointed dynamic bodies
    /// near soft ones, use [`World::step_with_physics_world`], which leaves them explicit.
    pub fn step_with_rapier(
        &mut self,
        bodies: &mut RigidBodySet,
        colliders: &ColliderSet,
        events: &dyn SoftEventHandler,
    ) -> StepReport {
        self.sync();
        let packed: Vec<SoftBodyHandle> = self.slots().iter().map(|s| s.handle).collect();
        let mut coupling = std::mem::take(&mut self.rapier);
        let dt = self.config().dt;
        // Queries farther than this from a collider's swept box skip parry altogether.
        let margin = 4.0 * self.config().contact_offset + 1e-3;
        let mut moving = std::mem::take(&mut self.moving_obstacles);
        let gravity = self.config().gravity;
        let params =
            FrameParams { dt, gravity, margin, carriers: self.config().substeps == 1, soft_box: self.reach_box(dt) };
        let mut carriers = std::mem::take(&mut self.carrier_bodies);
        let mut frame = build_frame(&mut coupling, &packed, bodies, colliders, params, &mut moving, &mut carriers);
        self.moving_obstacles = moving;
        self.carrier_bodies = carriers;
        frame.attachments = self.attachment_links(&mut coupling, bodies, dt);
        let mut acc = Accumulator::new(&frame);
        // The carriers' predicted poses, to tell how far the step moved them.
        let predicted = if self.carrier_bodies.is_empty() { Vec::new() } else { self.moving_obstacles.clone() };
        let report = self.step_coupled(Some(&mut |ctx| acc.after_substep(ctx, &frame)));
        acc.touching = self.touching_pairs(&frame);
        let follow = coupling::carrier_follow(&frame, &predicted, &self.moving_obstacles, &self.carrier_bodies);
        // Each soft body takes its part of the carriers' reactions, unless something else holds
        // it (a rapier support, a static obstacle, a pin), which then takes it.
        let supported = coupling::supported_bodies(&frame, &acc, &follow);
        for (b, j) in coupling::carrier_reactions(&frame, &mut acc, &follow) {
            if !supported.contains(&b) && !self.held_by_environment(b as usize) {
                self.add_body_impulse(b as usize, j);
            }
        }
        finish_frame(&mut coupling, &frame, acc, &packed, bodies, colliders, events);
        self.rapier = coupling;
        report
    }

    /// [`World::step_with_rapier`] with rapier's own world type: call it before
    /// `physics.step()`.
    pub fn step_with_physics_world(
        &mut self,
        physics: &mut rapier3d::pipeline::PhysicsWorld,
        events: &dyn SoftEventHandler,
    ) -> StepReport {
        self.rapier.set_rapier_substeps(physics.integration_parameters.num_solver_iterations);
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
        self.rapier.jointed = jointed;
        let (bodies, colliders) = (&mut physics.bodies, &physics.colliders);
        self.step_with_rapier(bodies, colliders, events)
    }

    /// Attaches vertices of soft body `soft` (body-local indices) to rapier body `rigid` where
    /// they are now: from the next step they follow the body's motion, and a dynamic body feels
    /// their pull. Detach with [`World::detach`] (a release: the vertices keep their velocity).
    pub fn attach_to_rigid_body(
        &mut self,
        soft: SoftBodyHandle,
        vertices: &[u32],
        rigid: RigidBodyHandle,
        bodies: &RigidBodySet,
    ) -> Result<AttachmentHandle, PliantError> {
        let rb = bodies.get(rigid).ok_or_else(|| PliantError::NoSuchRigidBody(format!("{rigid:?}")))?;
        let points = self.current_vertex_positions(soft, vertices)?;
        let pose = *rb.position();
        let local = points.iter().map(|&p| pose.inverse_transform_point(p)).collect();
        self.add_attachment(soft, vertices, points, Some((rigid, local)))
    }

    /// Attaches vertices of soft body `soft` to targets the caller moves with
    /// [`World::set_attachment_targets`] (a VR hand, a teleoperated tool); they start where the
    /// vertices are now.
    pub fn attach_to_targets(
        &mut self,
        soft: SoftBodyHandle,
        vertices: &[u32],
    ) -> Result<AttachmentHandle, PliantError> {
        let points = self.current_vertex_positions(soft, vertices)?;
        self.add_attachment(soft, vertices, points, None)
    }

    /// Sets the end-of-frame targets of an attachment made by [`World::attach_to_targets`]
    /// \[m\], one per vertex.
    pub fn set_attachment_targets(&mut self, a: AttachmentHandle, targets: &[Vec3]) -> Result<(), PliantError> {
        let att = self.rapier.attachment(a).ok_or_else(|| PliantError::NoSuchAttachment(a.to_string()))?;
        if att.rigid.is_some() {
            return Err(PliantError::NoSuchAttachment(format!("{a} with scripted targets (it follows a rapier body)")));
        }
        let (soft, id) = (att.soft, att.pin);
        let pin = self
            .pin_index(soft, id)
            .ok_or_else(|| PliantError::NoSuchAttachment(format!("{a} (its pin was removed)")))?;
        self.set_pin_targets(soft, pin, targets)
    }

    /// Releases an attachment: its vertices are free from the next step and keep their
    /// velocity.
    pub fn detach(&mut self, a: AttachmentHandle) -> Result<(), PliantError> {
        let att = self.rapier.attachment(a).ok_or_else(|| PliantError::NoSuchAttachment(a.to_string()))?.clone();
        let time = self.time();
        if let Some(body) = self.bodies.get_mut(att.soft)
            && let Some(pin) = body.pins.iter_mut().find(|p| p.id == att.pin)
        {
            pin.release_at = Some(time);
            body.pins_version += 1;
            self.rapier.free_pins.entry(att.soft).or_default().push(att.pin);
        }
        self.rapier.attachments[a.index as usize].1 = None;
        Ok(())
    }

    /// Where the pin with identity `id` is among body `soft`'s pins now (the user may have
    /// removed pins before it).
    fn pin_index(&self, soft: SoftBodyHandle, id: u64) -> Option<usize> {
        self.bodies.get(soft)?.pins.iter().position(|p| p.id == id)
    }

    /// The attachments alive now.
    pub fn attachments(&self) -> Vec<AttachmentHandle> {
        self.rapier
            .attachments
            .iter()
            .enumerate()
            .filter(|(_, (_, a))| a.is_some())
            .map(|(i, (g, _))| AttachmentHandle { index: i as u32, generation: *g })
            .collect()
    }

    fn current_vertex_positions(&mut self, soft: SoftBodyHandle, vertices: &[u32]) -> Result<Vec<Vec3>, PliantError> {
        self.sync();
        #[cfg(feature = "gpu")]
        self.wait_for_gpu();
        let name = self.bodies.get(soft).ok_or(PliantError::InvalidHandle(soft))?.name().to_owned();
        let positions = self.body_positions(soft).ok_or(PliantError::InvalidHandle(soft))?;
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

    fn add_attachment(
        &mut self,
        soft: SoftBodyHandle,
        vertices: &[u32],
        points: Vec<Vec3>,
        rigid: Option<(RigidBodyHandle, Vec<Vec3>)>,
    ) -> Result<AttachmentHandle, PliantError> {
        let body = self.bodies.get_mut(soft).ok_or(PliantError::InvalidHandle(soft))?;
        let pin = Pin::scripted(vertices.to_vec(), points);
        // A released attachment's pin is reused, so grasp-and-release cycles do not grow the
        // pin list and other pins keep their indices.
        let id = pin.id;
        let reusable = self.rapier.free_pins.get_mut(&soft).and_then(Vec::pop);
        match reusable.and_then(|old| body.pins.iter().position(|p| p.id == old).map(|k| (old, k))) {
            Some((old, k)) => {
                if let Err(e) = body.replace_pin(k, pin) {
                    self.rapier.free_pins.entry(soft).or_default().push(old);
                    return Err(e.into());
                }
            }
            None => {
                body.add_pin(pin)?;
            }
        }
        let pin = id;
        let att = Attachment { soft, pin, vertices: vertices.to_vec(), rigid };
        let slots = &mut self.rapier.attachments;
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
    fn attachment_links(&mut self, coupling: &mut RapierCoupling, bodies: &RigidBodySet, dt: f32) -> Vec<AttachLink> {
        let mut links = Vec::new();
        let time = self.time();
        let (gravity, substeps) = (self.config().gravity, coupling.rapier_substeps_or_default());
        for (index, (generation, slot)) in coupling.attachments.iter_mut().enumerate() {
            let Some(att) = slot else { continue };
            let handle = AttachmentHandle { index: index as u32, generation: *generation };
            let Some(start) = self.slots().iter().find(|s| s.handle == att.soft).map(|s| s.vertex_start) else {
                coupling.free_pins.remove(&att.soft);
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
                if let Some(body) = self.bodies.get_mut(att.soft)
                    && let Some(pin) = body.pins.iter_mut().find(|p| p.id == att.pin)
                {
                    pin.release_at = Some(time);
                    coupling.free_pins.entry(att.soft).or_default().push(att.pin);
                }
                *slot = None;
                continue;
            };
            let end = coupling::end_pose(rb, dt, gravity, substeps);
            let targets: Vec<Vec3> = local.iter().map(|&p| end.transform_point(p)).collect();
            let points = local.iter().map(|&p| Vec3A::from(rb.position().transform_point(p))).collect();
            let Some(pin) = self.pin_index(att.soft, att.pin) else {
                log::warn!("pliant: attachment {handle} dropped: its pin was removed from the body");
                *slot = None;
                continue;
            };
            if let Err(e) = self.set_pin_targets(att.soft, pin, &targets) {
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

    /// Soft bodies touching colliders at the frame's end: within the contact offset of a
    /// collider that acts on them, or inside a sensor.
    fn touching_pairs(&self, frame: &Frame) -> BTreeMap<PairKey, Touch> {
        let offset = self.config().contact_offset;
        let st = self.state();
        let mut out = BTreeMap::new();
        let forces =
            frame.links.iter().map(|l| l.collider).zip(self.moving_obstacles.iter().map(|o| (o, false, offset)));
        let others = frame
            .event_only
            .iter()
            .map(|(c, o)| (*c, (o, false, offset)))
            .chain(frame.sensors.iter().map(|(c, o)| (*c, (o, true, 0.0))));
        for (collider, (o, sensor, within)) in forces.chain(others) {
            for (b, slot) in self.slots().iter().enumerate() {
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
}
