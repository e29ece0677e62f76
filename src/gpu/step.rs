//! The whole VBD step on the GPU: the state lives in device buffers, a frame is recorded into
//! one command buffer (a compute pass per substep, then the readback copy) and submitted
//! without waiting, and finished frames come back through a [`ReadbackRing`]. One submission
//! per frame matters: some drivers (lavapipe) make a submission wait for the previous one.
//! The host keeps the step's settings and the pins' targets; the GPU never waits for the host
//! and the host never waits for the GPU, except in [`GpuStepper::download_blocking`] (edits of
//! pinned bodies, pin-set changes, tools that want the current state). Moving state in and out
//! (uploads, edits, snapshots, the carry-over to a repacked state) is in `step/transfer.rs`;
//! what a scene may hold to step here, in `step/limits.rs`.
//!
//! ```text
//! per substep   [pin targets copied in] [step_energy: start] vbd_inertia → [rigid groups]
//!               → vbd_advance ×3 → [rigid correction] → surface contact: [tree rebuild]
//!               → initial advance → detection
//!               → [re-detection (scheduled) → vbd_color ×colours → [step_soft: first sweep]
//!                  → vbd_divergence → vbd_chebyshev] ×iterations
//!               → vbd_finish → step_guard (non-finite test) → [step_energy: end → step_soft:
//!               pairs, islands, verdict → step_check: tets, vertices] → step_guard (rollback,
//!               count)
//! per frame     copy positions, velocities, the guard's flags and the contact counters into
//!               the readback ring
//! ```
//!
//! Surface contact ([`crate::gpu::contact::program`]) decides on the GPU whether its CCD and its
//! re-detections run and how many pairs its lists cover (indirect dispatch). Pairs beyond the
//! pair buffer's capacity are never lost silently: they bound their vertices isotropically (so
//! the step stays free of crossings), the frame reports how many there were, the buffer grows,
//! and the world steps the frame again from its starting state, which the stepper keeps on the
//! device for the last few frames ([`GpuStepper::restore_frame`]).

use std::sync::Arc;

use glam::{Vec3A, Vec4};

use crate::collision::{ContactModel, Obstacle};
use crate::gpu::al::al_gate;
use crate::gpu::al::fallback::{GpuFallback, GpuFallbackBuffers, GpuFallbackSettings, GpuFallbackSetup};
use crate::gpu::buffers::{StateBuffers, output, storage};
use crate::gpu::check::step_check::{StepCheck, body_sizes};
use crate::gpu::check::step_energy::{StepEnergy, energy_words};
use crate::gpu::check::step_guard::{ROLLBACK_WORDS, StepGuard, StepGuardBuffers};
use crate::gpu::check::step_soft::{SOFT_WORDS, StepSoft, body_constants};
use crate::gpu::contact::layout::{
    CONTROL_ADVANCE_NEEDED, CONTROL_DETECTIONS, CONTROL_FRAME, CONTROL_HEADER, CONTROL_OVERFLOW_FRAME,
    CONTROL_PAIRS_DROPPED, CONTROL_PAIRS_REQUESTED, SurfaceBounds, control_words,
};
use crate::gpu::contact::program::{ContactProgram, ContactState, REBUILD_INTERVAL};
use crate::gpu::kernel::Bound;
use crate::gpu::obstacles::GpuObstacleSet;
use crate::gpu::pack::{IndexLayout, RecordLayout, pack_index, pack_records};
use crate::gpu::readback::ReadbackRing;
use crate::gpu::rigid::program::RigidState;
use crate::gpu::submit::Submitter;
use crate::gpu::vbd::vbd_advance::{VbdAdvance, VbdAdvanceBuffers};
use crate::gpu::vbd::vbd_chebyshev::{VbdChebyshev, VbdChebyshevBuffers};
use crate::gpu::vbd::vbd_color::{VbdColor, VbdColorBuffers, VbdColorSetup};
use crate::gpu::vbd::vbd_divergence::{VbdDivergence, VbdDivergenceBuffers};
use crate::gpu::vbd::vbd_finish::{VbdFinish, VbdFinishBuffers};
use crate::gpu::vbd::vbd_inertia::{GpuVertexStep, VbdInertia, VbdInertiaBuffers, VbdInertiaParams};
use crate::gpu::{GpuContext, GpuError};
use crate::solver::vbd::chebyshev::ChebyshevSchedule;
use crate::solver::{Initialization, Integrator, SurfaceContactSettings};
use crate::state::{SimState, VERTEX_KINEMATIC};

/// Staging buffers of the readback ring: one being written, one mapped, one spare.
const READBACK_SLOTS: usize = 3;

mod checks;
mod frames;
mod limits;
mod transfer;

pub use frames::{FallbackCounts, FrameTail, GpuFrame};
pub use limits::unsupported;
pub use transfer::{CarriedBody, EditedField};
use transfer::{SNAPSHOTS, Snapshots};

/// What a GPU step needs to know that the state does not hold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuStepSettings {
    /// Substep length \[s\].
    pub h: f32,
    /// Sweeps per substep.
    pub iterations: u32,
    /// Chebyshev ρ (`None`: off).
    pub chebyshev_rho: Option<f32>,
    /// Initial guess.
    pub initialization: Initialization,
    /// Time integrator.
    pub integrator: Integrator,
    /// Gravity \[m/s²\].
    pub gravity: Vec3A,
    /// Contact constants.
    pub contact: ContactModel,
    /// Body–body and self contact, when the scene has it.
    pub surface_contact: Option<SurfaceContactSettings>,
    /// Pairs the contact buffer holds at first (0: 16 per surface vertex).
    pub contact_pairs: u32,
    /// The rigid correction of the initial guess (`solver/rigid_correction.rs`).
    pub rigid_correction: bool,
    /// The safety check after each substep (`step_check`'s hard tests, `step_energy` and
    /// `step_soft`'s soft flags): once a body's step is unsafe every body is rolled back to the
    /// substep's start at rest, and the body's rollback is counted with the reason, for the host
    /// to redo the frame with the fallback.
    pub check: bool,
    /// Margin around an island's height in the energy test's scale \[m\] (the CPU check's
    /// island margin, `2 δ + 1 mm`).
    pub island_margin: f32,
    /// Unsafe substeps redone on the device by the augmented-Lagrangian fallback
    /// ([`crate::gpu::al::fallback`]), with the check on; `None`: the guard puts every body back at
    /// rest and the host redoes the frame on the CPU.
    pub fallback: Option<GpuFallbackSettings>,
}

/// Which frame a recorded substep belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameTag {
    /// The frame's number (the world's frame after it).
    pub frame: u64,
    /// The id its readback will carry ([`GpuStepper::submit_frame`]).
    pub id: u64,
    /// The substep within the frame.
    pub substep: u32,
}

/// Device buffers of the state and the step's scratch.
struct StepBuffers {
    positions: wgpu::Buffer,
    velocities: wgpu::Buffer,
    accelerations: wgpu::Buffer,
    masses: wgpu::Buffer,
    flags: wgpu::Buffer,
    targets: wgpu::Buffer,
    steps: wgpu::Buffer,
    initial: wgpu::Buffer,
    previous: wgpu::Buffer,
    before_previous: wgpu::Buffer,
    /// Per vertex: a staged colour update and its squared residual (vec4; the sign bit set when
    /// the displacement bound held the vertex).
    updates: wgpu::Buffer,
    index: wgpu::Buffer,
    tets: wgpu::Buffer,
    records: wgpu::Buffer,
    body_toi: wgpu::Buffer,
    /// Counters, flags and per-body words shared by the kernels ([`crate::gpu::contact::layout`]), the
    /// Chebyshev frozen flags among them.
    control: wgpu::Buffer,
    /// Bound in place of the contacts buffer by passes that do not read it (no surface contact).
    no_contacts: wgpu::Buffer,
    smallest: wgpu::Buffer,
    bad: wgpu::Buffer,
    rollbacks: wgpu::Buffer,
    /// Per body: the bounding-box diagonal at upload (the check's speed limit).
    sizes: wgpu::Buffer,
    /// Per body: mass, largest tet shear modulus, surface vertex count and mean vertex mass (`step_soft`'s
    /// constants).
    soft_constants: wgpu::Buffer,
    /// Per body: the first sweep's residual, the window of soft flags and the heaviest weight
    /// touching it (`step_soft`).
    soft: wgpu::Buffer,
    /// Per body: energies and height of the substep, pins moved, island label; per element:
    /// its energy (`step_energy`).
    energy: wgpu::Buffer,
    /// The GPU fallback's gate (`al_gate`): its dispatch arguments, the hold left and the
    /// substeps it ran, read back with every frame.
    gate: wgpu::Buffer,
}

/// The compiled kernels of a step.
struct Kernels {
    inertia: VbdInertia,
    advance: VbdAdvance,
    color: VbdColor,
    divergence: VbdDivergence,
    chebyshev: VbdChebyshev,
    finish: VbdFinish,
    guard: StepGuard,
    check: StepCheck,
    soft: StepSoft,
    energy: StepEnergy,
}

/// Every dispatch of a substep, bound once for a set of settings and obstacles.
struct Program {
    settings: GpuStepSettings,
    obstacles: GpuObstacleSet,
    /// The start's energies (with the check), before anything moves.
    energy_before: Vec<Bound>,
    prepare: Vec<Bound>,
    colors: Vec<Bound>,
    /// The residual rule's sum after the first sweep (with the check).
    first_sweep: Option<Bound>,
    divergence: Option<Bound>,
    /// One per sweep but the last (the step ends on a plain Gauss–Seidel sweep).
    chebyshev: Vec<Bound>,
    /// The velocities, the guard's flags and the check.
    finish: Vec<Bound>,
    /// The redo of an unsafe substep on the device, and the guard's flags again after it.
    fallback: Option<(GpuFallback, Bound)>,
    /// The guard's rollback and count.
    settle: [Bound; 2],
    /// Surface contact, and its sweeps between detections (0: once per step).
    contact: Option<(ContactProgram, u32)>,
}

/// The GPU twin of [`crate::solver::vbd_step`] for one packed state.
pub struct GpuStepper {
    ctx: Arc<GpuContext>,
    kernels: Kernels,
    buffers: StepBuffers,
    layout: IndexLayout,
    records: RecordLayout,
    vertices: u32,
    bodies: u32,
    colored: u32,
    color_offsets: Vec<u32>,
    program: Option<Program>,
    ring: Arc<ReadbackRing>,
    submitter: Arc<Submitter>,
    /// The frame being recorded, and its substeps so far.
    pending: Option<wgpu::CommandEncoder>,
    pending_substeps: u32,
    /// Pin targets of every substep of a frame (`capacity` substeps × n), each copied into
    /// `targets` just before its substep: queue writes all land before the frame's one
    /// submission, so a single `targets` buffer would give every substep the last targets.
    frame_targets: Option<(wgpu::Buffer, u32)>,
    /// The vertices from the first kinematic one to the last (only their targets are uploaded;
    /// the kinematic set is fixed for a stepper's life).
    kinematic: std::ops::Range<usize>,
    /// Surface contact's buffers (made when a program first needs them).
    contact: Option<ContactState>,
    /// The rigid correction's buffers (made when a program first needs them; `Some(None)`
    /// when no body takes the correction).
    rigid: Option<Option<RigidState>>,
    /// Substeps recorded since the contact trees were last built.
    since_build: u32,
    /// The dynamic state at the start of recent frames (with surface contact, whose pair
    /// buffer can overflow and the frame be redone).
    snapshots: Option<Snapshots>,
    /// A copy of the packed state's tables, for surface contact's buffers.
    state: SimState,
    /// The per-body block of the energy buffer as [`GpuStepper::set_driven`] writes it (kept to
    /// spare an allocation per frame).
    driven_words: Vec<u32>,
}

impl std::fmt::Debug for GpuStepper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuStepper")
            .field("adapter", &self.ctx.adapter_info.name)
            .field("vertices", &self.vertices)
            .field("bodies", &self.bodies)
            .finish_non_exhaustive()
    }
}

impl GpuStepper {
    /// Uploads `st` (topology, constants and dynamic state) to `ctx`'s device.
    pub fn new(ctx: Arc<GpuContext>, st: &SimState, obstacles: &[Obstacle]) -> Result<Self, GpuError> {
        Self::build(ctx, st, obstacles, None)
    }

    fn build(
        ctx: Arc<GpuContext>,
        st: &SimState,
        obstacles: &[Obstacle],
        submitter: Option<Arc<Submitter>>,
    ) -> Result<Self, GpuError> {
        if let Some(feature) = unsupported(st, obstacles) {
            return Err(GpuError::Unsupported { feature });
        }
        let n = st.vertex_count();
        let bodies = st.bodies.len();
        let (index, layout) = pack_index(st);
        let (records, record_layout) = pack_records(st);
        let c = &ctx;
        let buffers = StepBuffers {
            positions: storage(c, "positions", &st.positions, true),
            velocities: storage(c, "velocities", &st.velocities, true),
            accelerations: storage(c, "accelerations", &st.accelerations, true),
            masses: storage(c, "masses", &st.masses, false),
            flags: storage(c, "flags", &st.flags, true),
            targets: output::<Vec4>(c, "targets", n),
            steps: output::<GpuVertexStep>(c, "steps", n),
            initial: output::<Vec4>(c, "initial", n),
            previous: output::<Vec4>(c, "previous", n),
            before_previous: output::<Vec4>(c, "before_previous", n),
            updates: output::<Vec4>(c, "updates", n),
            index: storage(c, "index", &index, false),
            tets: storage(c, "tets", &st.tets, false),
            records: storage(c, "records", &records, false),
            body_toi: output::<u32>(c, "body_toi", bodies),
            control: output::<u32>(c, "control", control_words(bodies)),
            no_contacts: output::<u32>(c, "no contacts", 4),
            smallest: output::<[f32; 2]>(c, "smallest", bodies),
            // Two words per body, then the world's (see `step_guard`).
            bad: output::<[u32; 2]>(c, "bad", bodies + 1),
            rollbacks: output::<[u32; ROLLBACK_WORDS]>(c, "rollbacks", bodies),
            sizes: storage(c, "sizes", &body_sizes(&st.positions, &st.vertex_body, bodies), false),
            soft_constants: storage(c, "soft constants", &body_constants(st), false),
            soft: output::<[u32; SOFT_WORDS]>(c, "soft", bodies),
            energy: output::<u32>(c, "energy", energy_words(bodies, st.tets.len() + st.tris.len() + st.hinges.len())),
            gate: crate::gpu::buffers::control_words(c, "al_gate control", al_gate::CONTROL_WORDS),
        };
        let kernels = Kernels {
            inertia: VbdInertia::new(c),
            advance: VbdAdvance::new(c),
            color: VbdColor::new(c),
            divergence: VbdDivergence::new(c),
            chebyshev: VbdChebyshev::new(c),
            finish: VbdFinish::new(c),
            guard: StepGuard::new(c),
            check: StepCheck::new(c),
            soft: StepSoft::new(c),
            energy: StepEnergy::new(c),
        };
        let ring =
            Arc::new(ReadbackRing::with_deferred_unmap(c, "frame", Self::frame_bytes(n, bodies), READBACK_SLOTS));
        let submitter = match submitter {
            Some(s) => s,
            None => Arc::new(Submitter::new(ctx.clone(), Some(ring.clone()))?),
        };
        Ok(Self {
            kernels,
            buffers,
            layout,
            records: record_layout,
            vertices: n as u32,
            bodies: bodies as u32,
            colored: st.color_vertices.len() as u32,
            color_offsets: st.color_offsets.clone(),
            program: None,
            ring,
            submitter,
            pending: None,
            pending_substeps: 0,
            frame_targets: None,
            kinematic: {
                let is_kinematic = |f: &u32| f & VERTEX_KINEMATIC != 0;
                match (st.flags.iter().position(is_kinematic), st.flags.iter().rposition(is_kinematic)) {
                    (Some(first), Some(last)) => first..last + 1,
                    _ => 0..0,
                }
            },
            contact: None,
            rigid: None,
            since_build: 0,
            snapshots: None,
            state: st.clone(),
            driven_words: Vec::new(),
            ctx,
        })
    }

    /// Surface contact's pair capacity (0 before its buffers exist).
    pub fn contact_capacity(&self) -> u32 {
        self.contact.as_ref().map_or(0, |c| c.capacity())
    }

    /// Gives surface contact room for `requested` pairs (with margin) when it has less: a
    /// frame found more. The new buffer starts without pairs or bounds, as after an upload
    /// (the next step's advance runs its CCD); frames in flight keep the old one.
    pub fn grow_contacts(&mut self, requested: u32) {
        let Some(contact) = self.contact.as_mut() else { return };
        let limit = contact.max_capacity(&self.ctx);
        let capacity = requested.saturating_add(requested / 2).next_power_of_two().min(limit);
        if capacity <= contact.capacity() {
            // At the device's limit: detections keep overflowing, safely, and say so.
            return;
        }
        contact.grow(&self.ctx, capacity);
        self.forget_contacts();
        self.program = None;
    }

    /// The host has acted on the overflow counters it read back: they start again from zero
    /// for the frames submitted from now on.
    pub fn acknowledge_overflow(&self) {
        let control = &self.buffers.control;
        for word in [CONTROL_PAIRS_REQUESTED, CONTROL_PAIRS_DROPPED, CONTROL_OVERFLOW_FRAME] {
            self.submitter.write(control, (word * size_of::<u32>()) as u64, &0u32.to_ne_bytes());
        }
    }

    /// The device context.
    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// The positions buffer (vec4 per vertex, w = 0), for a renderer on the same device: it
    /// holds the newest submitted step once the queue has run it (zero-copy; bind it read-only
    /// and order your passes after [`GpuStepper::submit_frame`]'s submission).
    pub fn position_buffer(&self) -> &wgpu::Buffer {
        &self.buffers.positions
    }

    /// Frames handed to the GPU that it has not finished (as of the last poll).
    pub fn frames_in_flight(&self) -> usize {
        self.submitter.in_flight()
    }

    /// Binds every dispatch of a substep for `settings` and `obstacles` (again only when either
    /// changed: a step then creates no GPU object).
    fn program(&mut self, settings: &GpuStepSettings, obstacles: &GpuObstacleSet) -> &Program {
        let stale = self.program.as_ref().is_none_or(|p| p.settings != *settings || p.obstacles != *obstacles);
        if stale {
            if settings.surface_contact.is_some() && self.contact.is_none() {
                // Room for 16 pairs per surface vertex unless told otherwise (a vertex 5 mm over a
                // face stores 6–8 pairs, as many again from its edges); a frame that finds more
                // grows it.
                let capacity = match settings.contact_pairs {
                    0 => (16 * self.state.surface_vertices.len() as u32).max(4096),
                    n => n,
                };
                self.contact = Some(ContactState::new(&self.ctx, &self.state, self.layout, self.records, capacity));
                // Its trees exist once built.
                self.since_build = 0;
            }
            let contact_before = self.program.as_ref().is_some_and(|p| p.contact.is_some());
            if settings.surface_contact.is_some() && !contact_before {
                // Pairs and bounds from before surface contact was off describe another state.
                self.forget_contacts();
            }
            if settings.rigid_correction && self.rigid.is_none() {
                self.rigid = Some(RigidState::new(&self.ctx, &self.state, self.layout, self.records));
            }
            self.program = Some(self.bind_program(settings, obstacles));
        }
        self.program.as_ref().unwrap_or_else(|| unreachable!("bound above"))
    }

    fn bind_program(&self, s: &GpuStepSettings, obstacles: &GpuObstacleSet) -> Program {
        let (ctx, k, b, l) = (&*self.ctx, &self.kernels, &self.buffers, &self.layout);
        let n = self.vertices;
        let inertia = VbdInertiaParams::new(n as usize, s.h, s.gravity, s.integrator, s.initialization);
        let mut prepare = vec![k.inertia.bind(
            ctx,
            &inertia,
            &VbdInertiaBuffers {
                positions: &b.positions,
                velocities: &b.velocities,
                accelerations: &b.accelerations,
                masses: &b.masses,
                flags: &b.flags,
                targets: &b.targets,
                steps: &b.steps,
            },
        )];
        let advance = k.advance.bind(
            ctx,
            n,
            self.bodies,
            l.vertex_body,
            obstacles,
            &VbdAdvanceBuffers {
                positions: &b.positions,
                steps: &b.steps,
                flags: &b.flags,
                index: &b.index,
                body_toi: &b.body_toi,
                initial: &b.initial,
                previous: &b.previous,
                before_previous: &b.before_previous,
            },
        );
        // Surface contact, and what the colour and Chebyshev passes bound their moves with.
        let buffers = StateBuffers {
            positions: &b.positions,
            steps: &b.steps,
            index: &b.index,
            records: &b.records,
            masses: &b.masses,
            flags: &b.flags,
            targets: &b.targets,
            initial: &b.initial,
            previous: &b.previous,
            before_previous: &b.before_previous,
            control: &b.control,
        };
        let contact_state = self.contact.as_ref().filter(|_| s.surface_contact.is_some());
        let contact = contact_state
            .zip(s.surface_contact.as_ref())
            .map(|(state, settings)| (state.bind(ctx, &s.contact, settings, &buffers), settings.detection_interval));
        let (bounds, contacts) = match (&contact, contact_state) {
            (Some((p, _)), Some(state)) => (p.bounds, state.contacts()),
            _ => (SurfaceBounds::off(), &b.no_contacts),
        };
        // The rigid correction: its groups before the obstacle advance (touching bodies start
        // from x^n), its solve after it.
        let rigid = self.rigid.as_ref().and_then(|r| r.as_ref()).filter(|_| s.rigid_correction).map(|state| {
            let pairs = (contacts, contact_state.map(|c| c.layout()));
            state.bind(ctx, &s.contact, s.initialization, obstacles, &buffers, pairs)
        });
        if let Some(r) = &rigid {
            for (k, bound) in r.groups.iter().enumerate() {
                match (r.pair_dispatch, contact_state) {
                    (Some(at), Some(c)) if at == k => {
                        prepare.extend(c.over_stored_pairs(ctx, &b.control, bound.clone()))
                    }
                    _ => prepare.push(bound.clone()),
                }
            }
        }
        prepare.extend(advance);
        if let Some(r) = rigid {
            prepare.extend(r.correct);
        }
        let frozen = CONTROL_HEADER as u32;
        let setup = VbdColorSetup { layout: *l, records: self.records, contact: s.contact, bounds, obstacles };
        let color_buffers = VbdColorBuffers {
            positions: &b.positions,
            steps: &b.steps,
            index: &b.index,
            tets: &b.tets,
            records: &b.records,
            updates: &b.updates,
            control: &b.control,
            frozen,
            contacts,
        };
        let colors = self
            .color_offsets
            .windows(2)
            .filter(|w| w[1] > w[0])
            .flat_map(|w| k.color.bind(ctx, w[0], w[1] - w[0], &setup, &color_buffers))
            .collect();
        // Chebyshev needs a few sweeps to pay off (as on the CPU).
        let rho = s.chebyshev_rho.filter(|_| s.iterations >= 4);
        let (divergence, chebyshev) = match rho {
            Some(rho) => {
                let divergence = k.divergence.bind(
                    ctx,
                    self.bodies,
                    self.records.bodies,
                    &VbdDivergenceBuffers {
                        records: &b.records,
                        updates: &b.updates,
                        smallest: &b.smallest,
                        control: &b.control,
                        frozen,
                    },
                );
                let mut schedule = ChebyshevSchedule::new(rho);
                let mix = VbdChebyshevBuffers {
                    positions: &b.positions,
                    previous: &b.previous,
                    before_previous: &b.before_previous,
                    index: &b.index,
                    control: &b.control,
                    frozen,
                    contacts,
                };
                let sweeps = (0..s.iterations - 1)
                    .map(|_| {
                        let omega = schedule.next_omega();
                        k.chebyshev.bind(ctx, omega, self.colored, l.vertex_body, &bounds, obstacles, &mix)
                    })
                    .collect();
                (Some(divergence), sweeps)
            }
            None => (None, Vec::new()),
        };
        let mut finish = vec![k.finish.bind(
            ctx,
            n as usize,
            &VbdFinishBuffers {
                positions: &b.positions,
                initial: &b.initial,
                steps: &b.steps,
                velocities: &b.velocities,
                accelerations: &b.accelerations,
                flags: &b.flags,
            },
        )];
        let fallback_settings = s.fallback.filter(|_| s.check);
        let [flag, roll_back, count] = k.guard.bind(
            ctx,
            n,
            self.bodies,
            l.vertex_body,
            fallback_settings.is_some(),
            &StepGuardBuffers {
                positions: &b.positions,
                velocities: &b.velocities,
                accelerations: &b.accelerations,
                flags: &b.flags,
                steps: &b.steps,
                index: &b.index,
                bad: &b.bad,
                rollbacks: &b.rollbacks,
            },
        );
        finish.push(flag.clone());
        let checks = s.check.then(|| self.bind_checks(s, obstacles, contact_state, contacts));
        let (energy_before, first_sweep) = match checks {
            Some(c) => {
                finish.extend(c.end);
                (c.start, Some(c.first_sweep))
            }
            None => (Vec::new(), None),
        };
        let fallback = fallback_settings.map(|f| {
            let setup = GpuFallbackSetup {
                st: &self.state,
                index: l,
                records: &self.records,
                obstacles,
                h: s.h,
                integrator: s.integrator,
                surface: contact_state.map(ContactState::al_surface_source),
            };
            let buffers = GpuFallbackBuffers {
                positions: &b.positions,
                velocities: &b.velocities,
                accelerations: &b.accelerations,
                flags: &b.flags,
                steps: &b.steps,
                index: &b.index,
                tets: &b.tets,
                records: &b.records,
                bad: &b.bad,
                gate: &b.gate,
            };
            (GpuFallback::bind(ctx, &setup, &f, &buffers), flag)
        });
        Program {
            settings: *s,
            obstacles: *obstacles,
            energy_before,
            prepare,
            colors,
            first_sweep,
            divergence,
            chebyshev,
            finish,
            fallback,
            settle: [roll_back, count],
            contact,
        }
    }

    /// Records one substep of a frame (nothing is submitted yet). `targets` (end-of-substep
    /// positions of kinematic vertices, one per vertex) is needed when the scene has pins;
    /// `substeps` is the frame's substep count.
    pub fn record_substep(
        &mut self,
        tag: FrameTag,
        settings: &GpuStepSettings,
        obstacles: &[Obstacle],
        targets: Option<&[Vec4]>,
        substeps: u32,
    ) -> Result<(), GpuError> {
        let packed = GpuObstacleSet::pack(obstacles)?;
        self.program(settings, &packed);
        if (settings.surface_contact.is_some() || settings.check) && self.snapshots.is_none() {
            self.snapshots = Some(Snapshots::new(&self.ctx, self.vertices as usize));
        }
        let n_bytes = self.vertices as u64 * size_of::<Vec4>() as u64;
        if targets.is_some() && self.frame_targets.as_ref().is_none_or(|(_, cap)| *cap < substeps) {
            let buffer = output::<Vec4>(&self.ctx, "frame targets", self.vertices as usize * substeps as usize);
            self.frame_targets = Some((buffer, substeps));
        }
        let Self {
            ctx,
            buffers: b,
            program,
            pending,
            pending_substeps,
            frame_targets,
            submitter,
            kinematic,
            bodies,
            since_build,
            snapshots,
            ..
        } = self;
        let p = program.as_ref().unwrap_or_else(|| unreachable!("bound above"));
        let encoder = pending.get_or_insert_with(|| {
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("vbd frame") })
        });
        if let Some(snap) = snapshots.as_mut().filter(|_| *pending_substeps == 0) {
            // Only a frame's start can be restored; a stepper made mid-frame keeps none of it.
            let slot = (tag.frame % SNAPSHOTS as u64) as usize;
            snap.frames[slot] = u64::MAX;
            if tag.substep == 0 {
                for (from, to) in
                    [&b.positions, &b.velocities, &b.accelerations, &b.flags].into_iter().zip(&snap.slots[slot])
                {
                    encoder.copy_buffer_to_buffer(from, 0, to, 0, None);
                }
                snap.frames[slot] = tag.frame;
            }
        }
        if let (Some(t), Some((all, _))) = (targets, frame_targets.as_ref())
            && kinematic.end > kinematic.start
        {
            let vec4 = size_of::<Vec4>() as u64;
            let (first, bytes) = (kinematic.start as u64 * vec4, kinematic.len() as u64 * vec4);
            let at = *pending_substeps as u64 * n_bytes + first;
            submitter.write(all, at, bytemuck::cast_slice(&t[kinematic.clone()]));
            encoder.copy_buffer_to_buffer(all, at, &b.targets, first, bytes);
        }
        let word = |w: usize| (w * size_of::<u32>()) as u64;
        if *pending_substeps == 0 {
            // The frame's counters (detections, advances), and which frame runs.
            encoder.clear_buffer(&b.control, word(CONTROL_DETECTIONS), Some(word(2)));
            let id = (tag.id as u32).wrapping_add(1);
            submitter.write(&b.control, word(CONTROL_FRAME), &id.to_ne_bytes());
        }
        encoder.clear_buffer(&b.control, word(CONTROL_ADVANCE_NEEDED), Some(word(1)));
        encoder.clear_buffer(&b.control, word(CONTROL_HEADER), Some(word(*bodies as usize)));
        encoder.clear_buffer(&b.smallest, 0, None);
        encoder.clear_buffer(&b.bad, 0, None);
        let rebuild = *since_build == 0;
        *since_build = (*since_build + 1) % REBUILD_INTERVAL;
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("vbd substep"),
                timestamp_writes: None,
            });
            // Surface contact after the initial guess: the trees (now and then), the advance, a
            // detection; a scheduled re-detection every `interval` sweeps.
            let (start, redetect, interval): (Vec<&Bound>, Vec<&Bound>, u32) = match &p.contact {
                Some((c, interval)) => {
                    let rebuild = c.rebuild.iter().filter(|_| rebuild);
                    let start = rebuild.chain(&c.advance).chain([&c.detect]).chain(&c.detection).collect();
                    (start, [&c.redetect].into_iter().chain(&c.detection).collect(), *interval)
                }
                None => (Vec::new(), Vec::new(), 0),
            };
            let sweeps = (0..settings.iterations as usize).flat_map(|sweep| {
                let detect = interval > 0 && sweep > 0 && (sweep as u32).is_multiple_of(interval);
                let redetect = redetect.iter().copied().filter(move |_| detect);
                let first = p.first_sweep.as_ref().filter(move |_| sweep == 0);
                redetect.chain(&p.colors).chain(first).chain(p.divergence.as_ref()).chain(p.chebyshev.get(sweep))
            });
            let mut last: Option<&Bound> = None;
            for d in p.energy_before.iter().chain(&p.prepare).chain(start).chain(sweeps).chain(&p.finish) {
                if last.is_some_and(|l| l.same_pipeline(d)) {
                    d.record_same_pipeline(&mut pass);
                } else {
                    d.record(&mut pass);
                }
                last = Some(d);
            }
            if let Some((fallback, flag)) = &p.fallback {
                fallback.record(&mut pass);
                // A non-finite answer (absurd input) is put back at rest by the guard.
                flag.record(&mut pass);
            }
            p.settle.iter().for_each(|d| d.record(&mut pass));
        }
        *pending_substeps += 1;
        Ok(())
    }
}
