//! `World`: the bodies, obstacles and configuration, and `step()`.

use std::borrow::Cow;

#[cfg(feature = "gpu")]
mod gpu;
mod step;

use glam::{Vec3, Vec3A, Vec4};

use crate::body::{BodySet, PinMotion, SoftBodyHandle};
use crate::collision::Obstacle;
use crate::collision::surface_check::find_triangle_intersections;
use crate::error::PliantError;
use crate::runtime::assemble::{BodySlot, assemble, rebuild_color_lists};
use crate::runtime::config::{Backend, ConfigError, StepConfig};
use crate::runtime::events::PliantEvent;
use crate::runtime::hooks::FrameMotion;
use crate::runtime::kinematics::{reset_anchors, update_pin_flags};
use crate::runtime::report::StepReport;
use crate::runtime::transaction::Snapshot;
use crate::solver::Vbd;
use crate::solver::check::energy;
use crate::solver::fast_path::FastResult;
use crate::solver::vbd::carrier::Carrier;
use crate::state::{SimState, VERTEX_KINEMATIC, VERTEX_NO_HISTORY};

/// A crossing found by [`World::find_intersections`]. Triangles are given by their vertex
/// indices within their body. Non-exhaustive: the exact test grows with the contact model (the
/// triangle variant came with analytic obstacles' triangle contact), so match with a wildcard.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Intersection {
    /// Two surface triangles cross (the same body for self-intersection).
    Triangles {
        /// Body of the first triangle.
        body_a: SoftBodyHandle,
        /// First triangle's vertices (body-local).
        triangle_a: [u32; 3],
        /// Body of the second triangle.
        body_b: SoftBodyHandle,
        /// Second triangle's vertices (body-local).
        triangle_b: [u32; 3],
    },
    /// A vertex lies inside an obstacle.
    InsideObstacle {
        /// The body.
        body: SoftBodyHandle,
        /// Body-local vertex index.
        vertex: u32,
        /// Index into [`World::all_obstacles`].
        obstacle: usize,
        /// Depth below the obstacle's surface \[m\].
        depth: f32,
    },
    /// A surface edge passes through an obstacle between its two vertices (a box's or a rapier
    /// collider's edge, a sphere or a thin rod cutting into the surface; see
    /// `solver::vbd::spans`).
    EdgeInsideObstacle {
        /// The body.
        body: SoftBodyHandle,
        /// Body-local vertex indices of the edge.
        edge: [u32; 2],
        /// Index into [`World::all_obstacles`].
        obstacle: usize,
        /// Depth of the edge's deepest point below the obstacle's surface \[m\].
        depth: f32,
    },
    /// A box's corner or edge, or a sphere's cap, pokes through a surface triangle between its
    /// edges (its vertices and edges all outside).
    TriangleInsideObstacle {
        /// The body.
        body: SoftBodyHandle,
        /// Body-local vertex indices of the triangle.
        triangle: [u32; 3],
        /// Index into [`World::all_obstacles`].
        obstacle: usize,
        /// Depth below the obstacle's surface of a point of the triangle \[m\]: the deepest for
        /// a sphere's cap, never more than the deepest for a box.
        depth: f32,
    },
}

/// A simulation world: soft bodies, analytic obstacles and the step configuration.
///
/// ```
/// use pliant::prelude::*;
/// let mut world = World::new(StepConfig::default()).unwrap();
/// let mesh = TetMesh::box_mesh(Vec3::splat(0.2), [3, 3, 3], TetSplit::Six).unwrap();
/// let cube = world.bodies.insert(SoftBodyBuilder::tetrahedral(mesh).translation(Vec3::Y).build().unwrap());
/// world.obstacles.push(Obstacle::ground(0.0, 0.5));
/// let report = world.step();
/// assert!(!report.nan_detected);
/// assert!(world.body_positions(cube).unwrap()[0].y < 1.0);
/// ```
#[derive(Debug)]
pub struct World {
    /// The soft bodies. Insert and remove freely; the world repacks its state on the next step.
    pub bodies: BodySet,
    /// Static analytic obstacles.
    pub obstacles: Vec<Obstacle>,
    config: StepConfig,
    time: f64,
    frame: u64,
    state: SimState,
    slots: Vec<BodySlot>,
    /// `(set id, topology version)` the packed state was built from.
    built_version: Option<(u64, u64)>,
    /// The fast path.
    pub(crate) vbd: Vbd,
    /// End-of-substep targets of kinematic vertices, one per vertex (others unread).
    pub(crate) targets: Vec<Vec4>,
    /// The substep's carriers (dynamic rigid bodies solved with the soft ones).
    pub(crate) carriers: Vec<Carrier>,
    /// The substep's obstacles (a buffer kept between substeps).
    pub(crate) substep_obstacles: Vec<Obstacle>,
    pub(crate) snapshot: Snapshot,
    events: Vec<PliantEvent>,
    /// Scratch for `update_pin_flags`.
    pin_marks: Vec<bool>,
    momentum: crate::solver::momentum::MomentumScratch,
    /// The safety check's and fallback's state (hysteresis, active set, budget planner).
    fallback: crate::runtime::fallback::FallbackRuntime,
    /// What moves during the coming frame besides the soft bodies: obstacles at their start and
    /// end poses (rapier colliders), each substep taking its share of the motion, and the
    /// dynamic rigid bodies that carry some of them (their `carrier` index), whose response to
    /// the soft contacts the step solves (see `solver/carrier.rs`). Set by a hook before the
    /// step ([`StepHooks::before_step`]).
    pub(crate) motion: FrameMotion,
    /// The GPU backend's device and state.
    #[cfg(feature = "gpu")]
    gpu: gpu::GpuRuntime,
}

impl World {
    /// An empty world. With [`Backend::Gpu`] this opens the GPU (the adapter named by
    /// `config.gpu_adapter`, or the high-performance one) and fails without one; with
    /// [`Backend::Auto`] a missing adapter, or only a software one, sends steps to the CPU.
    pub fn new(config: StepConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut world = Self {
            bodies: BodySet::new(),
            obstacles: Vec::new(),
            config,
            time: 0.0,
            frame: 0,
            state: SimState::default(),
            slots: Vec::new(),
            built_version: None,
            vbd: Vbd::default(),
            targets: Vec::new(),
            carriers: Vec::new(),
            substep_obstacles: Vec::new(),
            snapshot: Snapshot::default(),
            events: Vec::new(),
            pin_marks: Vec::new(),
            momentum: Default::default(),
            fallback: Default::default(),
            motion: FrameMotion::default(),
            #[cfg(feature = "gpu")]
            gpu: gpu::GpuRuntime::default(),
        };
        world.open_backend_for_config()?;
        Ok(world)
    }

    #[cfg(feature = "gpu")]
    fn open_backend_for_config(&mut self) -> Result<(), ConfigError> {
        self.open_backend(None)
    }

    #[cfg(not(feature = "gpu"))]
    fn open_backend_for_config(&mut self) -> Result<(), ConfigError> {
        match self.config.backend {
            Backend::Cpu => Ok(()),
            Backend::Gpu => Err(ConfigError {
                field: "backend",
                value: "gpu".into(),
                reason: "this build of pliant has no GPU backend (enable the `gpu` feature)",
            }),
            Backend::Auto => {
                self.events.push(PliantEvent::BackendFallback {
                    reason: Some("this build of pliant has no GPU backend (the `gpu` feature is off)".into()),
                });
                Ok(())
            }
        }
    }

    /// The step configuration.
    pub fn config(&self) -> &StepConfig {
        &self.config
    }

    /// Replaces the step configuration (validated). A change of backend or adapter waits for
    /// the GPU once and carries the state over.
    pub fn set_config(&mut self, config: StepConfig) -> Result<(), ConfigError> {
        config.validate()?;
        let reopen = config.backend != self.config.backend || config.gpu_adapter != self.config.gpu_adapter;
        let old = std::mem::replace(&mut self.config, config);
        if reopen && let Err(e) = self.open_backend_for_config() {
            self.config = old;
            return Err(e);
        }
        Ok(())
    }

    /// Simulated time \[s\].
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Steps taken.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// The packed simulation state (read-only).
    pub(crate) fn state(&self) -> &SimState {
        &self.state
    }

    /// Every vertex's position \[m\] (`w` = 0) in the packed order: body after body, in the
    /// set's order (see [`World::body_positions`] for one body's). On the GPU backend this is
    /// the host copy, the newest finished frame ([`World::latest_positions`]).
    pub fn positions(&self) -> &[Vec4] {
        &self.state.positions
    }

    /// Every vertex's velocity \[m/s\], in the order of [`World::positions`].
    pub fn velocities(&self) -> &[Vec4] {
        &self.state.velocities
    }

    /// Every vertex's lumped mass \[kg\], in the order of [`World::positions`] (pinned vertices
    /// included).
    pub fn vertex_masses(&self) -> &[f32] {
        &self.state.masses
    }

    /// Vertices of every body.
    pub fn vertex_count(&self) -> usize {
        self.state.vertex_count()
    }

    /// Elements of every body: tets, cloth triangles and bending hinges.
    pub fn element_count(&self) -> usize {
        self.state.element_count()
    }

    /// The collision surface's triangles, as indices into [`World::positions`] (a renderer's
    /// index buffer for every body at once).
    pub fn surface_triangles(&self) -> &[[u32; 3]] {
        &self.state.surface_triangles
    }

    /// The collision surface's edges, as indices into [`World::positions`].
    pub fn surface_edges(&self) -> &[[u32; 2]] {
        &self.state.surface_edges
    }

    /// The smallest volume ratio `J = det F` of any tet at the current positions (1 at rest,
    /// ≤ 0 for an inverted tet), or `None` without tets: the worst element's compression.
    pub fn min_volume_ratio(&self) -> Option<f32> {
        let st = &self.state;
        st.tets
            .iter()
            .map(|t| {
                let x = t.vertices.map(|i| Vec3A::from_vec4(st.positions[i as usize]));
                crate::material::tet::deformation_gradient::<f32>(&x, &t.dm_inv()).determinant()
            })
            .reduce(f32::min)
    }

    /// Events since the last call (non-finite rollbacks, …).
    pub fn drain_events(&mut self) -> Vec<PliantEvent> {
        std::mem::take(&mut self.events)
    }

    /// Packs newly inserted or removed bodies into the state. `step()` does this itself; call
    /// it to read positions of new bodies before their first step.
    pub fn sync(&mut self) {
        let version = (self.bodies.id, self.bodies.topology_version);
        if self.built_version == Some(version) {
            return;
        }
        // Dynamic state carries over only within the same set: another set's handles name
        // other bodies.
        let same_set = self.built_version.is_some_and(|(id, _)| id == self.bodies.id);
        // The GPU's state is the current one: the surviving bodies' state goes over to the new
        // packing on the device at the next step (without waiting), or to the host copy first.
        #[cfg(feature = "gpu")]
        self.detach_gpu_state(same_set);
        let old_slots: &[BodySlot] = if same_set { &self.slots } else { &[] };
        let (state, slots) = assemble(&self.bodies, &self.state, old_slots);
        self.state = state;
        self.slots = slots;
        update_pin_flags(&mut self.state, &mut self.bodies, &self.slots, self.time, &mut self.pin_marks);
        rebuild_color_lists(&mut self.state, &self.bodies, &self.slots);
        self.vbd.topology_changed();
        self.fallback.al.clear();
        let cloth = if self.state.tris.is_empty() { 0 } else { crate::runtime::budget::CLOTH_LEAST_SWEEPS };
        // Never above the configured count, which caps the least count too.
        let floor = cloth.min(self.config.iterations.max(1));
        self.fallback.planner.forget_least(floor);
        self.built_version = Some(version);
    }

    fn slot(&self, h: SoftBodyHandle) -> Option<&BodySlot> {
        self.bodies.get(h)?;
        self.slots.iter().find(|s| s.handle == h)
    }

    /// Current positions of a body's vertices \[m\] (`w` = 0), or `None` if the handle is invalid
    /// or the body was inserted after the last `step()`/`sync()`.
    pub fn body_positions(&self, h: SoftBodyHandle) -> Option<&[Vec4]> {
        self.slot(h).map(|s| &self.state.positions[s.range()])
    }

    /// Current velocities of a body's vertices \[m/s\]; see [`World::body_positions`].
    pub fn body_velocities(&self, h: SoftBodyHandle) -> Option<&[Vec4]> {
        self.slot(h).map(|s| &self.state.velocities[s.range()])
    }

    fn checked_slot(&mut self, h: SoftBodyHandle) -> Result<BodySlot, PliantError> {
        self.sync();
        self.slot(h).copied().ok_or(PliantError::InvalidHandle(h))
    }

    /// Makes the state ready for an edit of body `h`'s `field` (velocities or positions, with
    /// its flags). An edit applies to the current state, not to the last frame read back: on
    /// the GPU backend it is written to the device after the frames in flight (returns `true`;
    /// call [`World::finish_edit`] after editing the host copy), or, where that cannot be done
    /// (a body with pins, a state not on the device), the GPU's state is brought over first.
    fn begin_edit(&mut self, h: SoftBodyHandle) -> bool {
        #[cfg(feature = "gpu")]
        {
            let pinned = self.bodies.get(h).is_some_and(|b| !b.pins.is_empty());
            if !pinned && self.gpu_takes_edits() {
                return true;
            }
            self.pull_gpu_state();
        }
        let _ = h;
        false
    }

    /// Body–body and self contact pairs found at the last detection of the last CPU step (for
    /// debug drawing and inspection); vertex indices are global state indices. The GPU backend
    /// keeps its pairs on the device (their count and closest distance come back in
    /// `StepReport`); this then holds those of the last CPU step, if any.
    pub fn contact_pairs(&self) -> &[crate::collision::surface_pairs::ContactPair] {
        self.vbd.contact_pairs()
    }

    /// The static obstacles followed by the moving ones of the last frame (rapier colliders, at
    /// that frame's end poses); [`Intersection::InsideObstacle`] indexes this list.
    pub fn all_obstacles(&self) -> Cow<'_, [Obstacle]> {
        if self.motion.obstacles.is_empty() {
            Cow::Borrowed(&self.obstacles)
        } else {
            Cow::Owned(self.obstacles.iter().chain(&self.motion.obstacles).cloned().collect())
        }
    }

    /// Every pair of crossing surface triangles in the current state (body–body and self
    /// contact alike), found with exact predicates, every vertex inside an obstacle, every
    /// surface edge through a box, a sphere or a rapier collider between its vertices, and
    /// every surface triangle that a box or a sphere pokes through inside its edges. Empty for
    /// a valid state; the solver keeps it so. Costs one broadphase build over all surface
    /// triangles.
    pub fn find_intersections(&mut self) -> Vec<Intersection> {
        self.sync();
        let st = &self.state;
        let mut out = Vec::new();
        let locate = |tri: u32| {
            let g = st.surface_triangles[tri as usize];
            let s = &self.slots[st.vertex_body[g[0] as usize] as usize];
            (s.handle, g.map(|i| i - s.vertex_start))
        };
        for (a, b) in find_triangle_intersections(&st.positions, &st.surface_triangles) {
            let ((body_a, triangle_a), (body_b, triangle_b)) = (locate(a), locate(b));
            out.push(Intersection::Triangles { body_a, triangle_a, body_b, triangle_b });
        }
        let obstacles = self.all_obstacles();
        for (v, p) in st.positions.iter().enumerate() {
            for (k, o) in obstacles.iter().enumerate().filter(|(_, o)| o.applies_to(st.vertex_body[v])) {
                let (d, _) = o.signed_distance(glam::Vec3A::from_vec4(*p));
                if d < 0.0 {
                    let s = &self.slots[st.vertex_body[v] as usize];
                    out.push(Intersection::InsideObstacle {
                        body: s.handle,
                        vertex: v as u32 - s.vertex_start,
                        obstacle: k,
                        depth: -d,
                    });
                }
            }
        }
        for &[a, b] in &st.surface_edges {
            let body = st.vertex_body[a as usize];
            let (xa, xb) =
                (glam::Vec3A::from_vec4(st.positions[a as usize]), glam::Vec3A::from_vec4(st.positions[b as usize]));
            for (k, o) in obstacles.iter().enumerate() {
                if !(o.tests_edges() && o.applies_to(body)) {
                    continue;
                }
                // An end inside is reported as that vertex.
                if let Some(depth) = o.edge_depth(xa, xb) {
                    let s = &self.slots[body as usize];
                    out.push(Intersection::EdgeInsideObstacle {
                        body: s.handle,
                        edge: [a - s.vertex_start, b - s.vertex_start],
                        obstacle: k,
                        depth,
                    });
                }
            }
        }
        for &t in &st.surface_triangles {
            let body = st.vertex_body[t[0] as usize];
            let x = t.map(|v| glam::Vec3A::from_vec4(st.positions[v as usize]));
            for (k, o) in obstacles.iter().enumerate().filter(|(_, o)| o.applies_to(body)) {
                // Its vertices and edges inside are reported as those.
                if let Some((edges, depth)) = o.triangle_depths(x)
                    && edges == 0.0
                    && depth > 0.0
                {
                    let s = &self.slots[body as usize];
                    out.push(Intersection::TriangleInsideObstacle {
                        body: s.handle,
                        triangle: t.map(|v| v - s.vertex_start),
                        obstacle: k,
                        depth,
                    });
                }
            }
        }
        out
    }

    /// Sets every vertex of a body to velocity `v` \[m/s\].
    pub fn set_body_velocity(&mut self, h: SoftBodyHandle, v: Vec3) -> Result<(), PliantError> {
        let s = self.checked_slot(h)?;
        if !v.is_finite() {
            return Err(PliantError::NonFiniteInput {
                body: self.bodies[h].name().to_owned(),
                field: "velocity",
                index: 0,
            });
        }
        let through = self.begin_edit(h);
        for i in s.range() {
            self.state.velocities[i] = v.extend(0.0);
            self.state.flags[i] |= VERTEX_NO_HISTORY;
        }
        #[cfg(feature = "gpu")]
        if through {
            self.finish_edit(s.range(), crate::gpu::step::EditedField::Velocities);
        }
        let _ = through;
        Ok(())
    }

    /// Teleports a body's vertices (one position per vertex) \[m\].
    pub fn set_body_positions(&mut self, h: SoftBodyHandle, positions: &[Vec3]) -> Result<(), PliantError> {
        let s = self.checked_slot(h)?;
        let name = self.bodies[h].name().to_owned();
        if positions.len() != s.vertex_count as usize {
            return Err(PliantError::LengthMismatch {
                body: name,
                expected: s.vertex_count as usize,
                got: positions.len(),
            });
        }
        if let Some(i) = positions.iter().position(|p| !p.is_finite()) {
            return Err(PliantError::NonFiniteInput { body: name, field: "position", index: i });
        }
        let through = self.begin_edit(h);
        for (i, p) in s.range().zip(positions) {
            self.state.positions[i] = p.extend(0.0);
            self.state.flags[i] |= VERTEX_NO_HISTORY;
        }
        #[cfg(feature = "gpu")]
        if through {
            self.finish_edit(s.range(), crate::gpu::step::EditedField::Positions);
        }
        let _ = through;
        // Pins move with the teleported body: their anchors are captured again next step.
        if let Some(body) = self.bodies.get_mut(h) {
            reset_anchors(&mut body.pins);
        }
        Ok(())
    }

    /// Sets the targets of a scripted pin for the coming steps \[m\].
    pub fn set_pin_targets(&mut self, h: SoftBodyHandle, pin: usize, targets: &[Vec3]) -> Result<(), PliantError> {
        let body = self.bodies.get_mut(h).ok_or(PliantError::InvalidHandle(h))?;
        let name = body.name().to_owned();
        let p = body.pins.get_mut(pin).ok_or_else(|| PliantError::NoSuchPin { body: name.clone(), pin })?;
        match &mut p.motion {
            PinMotion::Scripted(goal) if goal.len() == targets.len() => {
                if let Some(i) = targets.iter().position(|t| !t.is_finite()) {
                    return Err(PliantError::NonFiniteInput { body: name, field: "pin target", index: i });
                }
                goal.copy_from_slice(targets);
                Ok(())
            }
            PinMotion::Scripted(goal) => {
                Err(PliantError::LengthMismatch { body: name, expected: goal.len(), got: targets.len() })
            }
            _ => Err(PliantError::NoSuchPin { body: name, pin }),
        }
    }

    /// The moving obstacles of the last frame, where the step left them (empty unless a hook
    /// set some).
    pub fn moving_obstacles(&self) -> &[Obstacle] {
        &self.motion.obstacles
    }

    /// A box around every vertex and where it can get within `dt` (twice its speed's travel,
    /// plus 5 cm): `(min, max)` \[m\]; empty (min > max) without vertices.
    pub(crate) fn reach_box(&self, dt: f32) -> (Vec3, Vec3) {
        let st = &self.state;
        let (lo, hi) =
            crate::solver::vbd::carrier::reach_box(&st.positions, &st.velocities, 0..st.vertex_count(), dt, 0.05);
        (lo.into(), hi.into())
    }

    /// Whether packed body `b` has pinned vertices or a vertex touching a fixed or kinematic
    /// obstacle (static, or a rapier collider no momentum moves).
    pub(crate) fn held_by_environment(&self, b: usize) -> bool {
        let Some(slot) = self.slots.get(b) else { return false };
        let reach = 1.5 * self.config.contact_offset;
        let obstacles = self.all_obstacles();
        slot.range().any(|i| {
            let x = Vec3A::from_vec4(self.state.positions[i]);
            self.state.flags[i] & VERTEX_KINEMATIC != 0
                || obstacles.iter().any(|o| !o.movable() && o.applies_to(b as u32) && o.signed_distance(x).0 < reach)
        })
    }

    /// Adds the impulse `j` \[N·s\] to packed body `b` as one velocity change of its free
    /// vertices (velocities only: positions stay intersection-free).
    pub(crate) fn add_body_impulse(&mut self, b: usize, j: Vec3A) {
        let Some(slot) = self.slots.get(b) else { return };
        let range = slot.range();
        let free = |i: &usize| self.state.flags[*i] & VERTEX_KINEMATIC == 0;
        let mass: f32 = range.clone().filter(free).map(|i| self.state.masses[i]).sum();
        if !(mass > 0.0) || !j.is_finite() {
            return;
        }
        let dv = (j / mass).extend(0.0);
        for i in range {
            if self.state.flags[i] & VERTEX_KINEMATIC == 0 {
                self.state.velocities[i] += dv;
            }
        }
    }

    /// The packed state and the fast path, for tests of solver internals.
    #[cfg(test)]
    pub(crate) fn state_and_fast_path(&mut self) -> (&mut SimState, &mut Vbd) {
        (&mut self.state, &mut self.vbd)
    }

    /// Fills the report's measures of the host state: energies, largest speed, obstacle
    /// distance.
    fn measure(&self, report: &mut StepReport) {
        let gravity = Vec3A::from(self.config.gravity);
        let contact = self.config.contact_model(self.config.substep_dt());
        let obstacles = self.all_obstacles();
        report.energy = energy::energies(&self.state, gravity, &obstacles, &contact);
        report.max_speed = energy::max_speed(&self.state.velocities);
        report.min_obstacle_distance = energy::min_obstacle_distance(&self.state, &obstacles);
    }

    /// The packed slot of every body, in state order.
    pub(crate) fn slots(&self) -> &[BodySlot] {
        &self.slots
    }

    /// Completes a GPU step's report: waits for the GPU, brings the host copy of the state up
    /// to date and measures it (energies, largest speed, obstacle distance). A CPU report is
    /// complete already and left as it is, unless [`StepConfig::measure_state`] is off: then
    /// the current state is measured into it. For tools and tests, not for a game loop.
    pub fn complete_report(&mut self, report: &mut StepReport) {
        if report.backend == Backend::Gpu {
            #[cfg(feature = "gpu")]
            self.wait_for_gpu();
            report.state_frame = self.frame;
            self.measure(report);
        } else if !self.config.measure_state {
            self.measure(report);
        }
    }
}
