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
//! A substep is recorded in the CPU step's phases (`step/record.rs`; the dispatches are bound
//! once per set of settings, by phase, in `step/program.rs`):
//!
//! ```text
//! begin      pin targets copied in; [the frame's start kept for a redo]
//! check      [step_energy: the start's energies]
//! predict    vbd_inertia → [rigid_groups] → vbd_advance ×3 → [rigid correction]
//! detect     surface contact: [tree rebuild] → CCD-limited advance → detection
//! solve      ([re-detection] → vbd_color ×colours → [step_soft: first sweep] →
//!            [vbd_divergence → vbd_chebyshev]) ×iterations
//! (finish)   vbd_finish: velocities
//! check      step_guard: non-finite → [step_energy: end → step_soft: pairs, islands,
//!            verdict → step_check: tets, vertices]
//! fall back  [the device's AL redo (gpu::al::fallback), run when al_gate opens → step_guard]
//! finish     step_guard: rollback, count
//! per frame  copy positions, velocities, the guard's flags and the contact counters into the
//!            readback ring
//! ```
//!
//! Surface contact ([`crate::gpu::contact::program`]) decides on the GPU whether its CCD and its
//! re-detections run and how many pairs its lists cover (indirect dispatch). Pairs beyond the
//! pair buffer's capacity are never lost silently: they bound their vertices isotropically (so
//! the step stays free of crossings), the frame reports how many there were, the buffer grows,
//! and the world steps the frame again from its starting state, which the stepper keeps on the
//! device for the last few frames ([`GpuStepper::restore_frame`]).

use std::sync::Arc;

use glam::Vec4;

use crate::collision::Obstacle;
use crate::gpu::al::al_gate;
use crate::gpu::al::fallback::GpuFallbackSettings;
use crate::gpu::buffers::{output, storage};
use crate::gpu::check::step_check::{StepCheck, body_sizes};
use crate::gpu::check::step_energy::{CHUNK_VERTICES, StepEnergy, energy_words};
use crate::gpu::check::step_guard::{ROLLBACK_WORDS, StepGuard};
use crate::gpu::check::step_soft::{SOFT_WORDS, StepSoft, body_constants};
use crate::gpu::contact::layout::{
    CONTROL_OVERFLOW_FRAME, CONTROL_PAIRS_DROPPED, CONTROL_PAIRS_REQUESTED, control_words,
};
use crate::gpu::contact::program::ContactState;
use crate::gpu::pack::{IndexLayout, RecordLayout, chunks, largest_body, pack_index, pack_records, span_count};
use crate::gpu::profile::{KernelTime, Profiler};
use crate::gpu::readback::ReadbackRing;
use crate::gpu::rigid::program::RigidState;
use crate::gpu::submit::Submitter;
use crate::gpu::vbd::vbd_advance::VbdAdvance;
use crate::gpu::vbd::vbd_chebyshev::VbdChebyshev;
use crate::gpu::vbd::vbd_color::VbdColor;
use crate::gpu::vbd::vbd_divergence::{self, VbdDivergence};
use crate::gpu::vbd::vbd_finish::VbdFinish;
use crate::gpu::vbd::vbd_inertia::{GpuVertexStep, VbdInertia};
use crate::gpu::vbd::vbd_spans::{self, VbdSpans};
use crate::gpu::vbd::vbd_spin::{self, VbdSpin};
use crate::gpu::{GpuContext, GpuError};
use crate::solver::{SurfaceContactSettings, VbdSettings};
use crate::state::{SimState, VERTEX_KINEMATIC};

/// Staging buffers of the readback ring: one being written, one mapped, one spare.
const READBACK_SLOTS: usize = 3;

mod checks;
mod clock;
mod frames;
mod limits;
mod program;
use program::Program;
mod record;
mod transfer;

pub use frames::FallbackCounts;
pub use limits::unsupported;
use transfer::Snapshots;
pub use transfer::{CarriedBody, EditedField};

/// What a GPU step needs to know that the state does not hold: the fast path's settings (the
/// CPU's [`VbdSettings`], derived from the same configuration) and the GPU's own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuStepSettings {
    /// Substep length \[s\].
    pub h: f32,
    /// The fast path's settings.
    pub vbd: VbdSettings,
    /// The scene has body–body or self contact to detect (`contact::surface_contact_on`).
    pub surface_on: bool,
    /// Pairs the contact buffer holds at first (0: 16 per surface vertex).
    pub contact_pairs: u32,
    /// The safety check after each substep (`step_check`'s hard tests, `step_energy` and
    /// `step_soft`'s soft flags): once a body's step is unsafe every body is rolled back to the
    /// substep's start at rest, and the body's rollback is counted with the reason, for the host
    /// to redo the frame with the fallback.
    pub check: bool,
    /// Margin around an island's height in the energy test's scale \[m\] (the CPU check's
    /// island margin, `2 δ + 1 mm`).
    pub island_margin: f32,
    /// Unsafe substeps redone on the device by the augmented-Lagrangian fallback
    /// ([`crate::gpu::al::fallback`]), with the check on; `None`: the guard puts every body back
    /// at rest and the host redoes the frame on the CPU.
    pub fallback: Option<GpuFallbackSettings>,
}

impl GpuStepSettings {
    /// Surface contact's settings, when the scene has surface contact.
    pub fn surface_contact(&self) -> Option<SurfaceContactSettings> {
        self.surface_on.then_some(self.vbd.surface_contact)
    }
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
    /// the displacement bound held the vertex); then per surface span and obstacle, its contact
    /// record (`vbd_spans`).
    updates: wgpu::Buffer,
    index: wgpu::Buffer,
    tets: wgpu::Buffer,
    records: wgpu::Buffer,
    body_toi: wgpu::Buffer,
    /// Per vertex: `vbd_spin`'s output (two vec4s).
    turns: wgpu::Buffer,
    /// Counters, flags and per-body words shared by the kernels ([`crate::gpu::contact::layout`]), the
    /// Chebyshev frozen flags among them.
    control: wgpu::Buffer,
    /// Bound in place of the contacts buffer by passes that do not read it (no surface contact).
    no_contacts: wgpu::Buffer,
    smallest: wgpu::Buffer,
    /// Per body and chunk: a chunk's residual sum (`vbd_divergence` on large bodies).
    residual_partials: wgpu::Buffer,
    /// `vbd_spin` on large bodies: the chunks' sums, and each body's spin.
    spin_partials: wgpu::Buffer,
    spins: wgpu::Buffer,
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
    spin: VbdSpin,
    inertia: VbdInertia,
    advance: VbdAdvance,
    spans: VbdSpans,
    color: VbdColor,
    divergence: VbdDivergence,
    chebyshev: VbdChebyshev,
    finish: VbdFinish,
    guard: StepGuard,
    check: StepCheck,
    soft: StepSoft,
    energy: StepEnergy,
}

/// The GPU twin of a VBD substep (`solver::vbd::Vbd`) for one packed state.
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
    /// The frame's timestamps on the device's clock.
    clock: clock::FrameClock,
    /// Dispatches recorded into the frame being recorded, and into the last one submitted.
    frame_dispatches: u32,
    submitted_dispatches: u32,
    /// Per-kernel timestamps, while profiling (`set_profiling`).
    profiler: Option<Profiler>,
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
            updates: output::<Vec4>(c, "updates", vbd_spans::updates_len(n as u32, span_count(st))),
            index: storage(c, "index", &index, false),
            tets: storage(c, "tets", &st.tets, false),
            records: storage(c, "records", &records, false),
            // Per body, twice (the obstacle advance's, then `vbd_spans`').
            body_toi: output::<u32>(c, "body_toi", 2 * bodies),
            turns: output::<Vec4>(c, "turns", 2 * n),
            control: output::<u32>(c, "control", control_words(bodies)),
            no_contacts: output::<u32>(c, "no contacts", 4),
            smallest: output::<[f32; 2]>(c, "smallest", bodies),
            spin_partials: output::<f32>(
                c,
                "spin partials",
                vbd_spin::partial_words(bodies, largest_body(st), vbd_spin::CHUNK_VERTICES),
            ),
            spins: output::<Vec4>(c, "spins", vbd_spin::spin_words(bodies)),
            residual_partials: output::<f32>(
                c,
                "residual partials",
                bodies * chunks(largest_body(st), vbd_divergence::CHUNK_VERTICES) as usize,
            ),
            // Two words per body, then the world's (see `step_guard`).
            bad: output::<[u32; 2]>(c, "bad", bodies + 1),
            rollbacks: output::<[u32; ROLLBACK_WORDS]>(c, "rollbacks", bodies),
            sizes: storage(c, "sizes", &body_sizes(&st.positions, &st.vertex_body, bodies), false),
            soft_constants: storage(c, "soft constants", &body_constants(st), false),
            soft: output::<[u32; SOFT_WORDS]>(c, "soft", bodies),
            energy: output::<u32>(
                c,
                "energy",
                energy_words(bodies, st.tets.len() + st.tris.len() + st.hinges.len(), largest_body(st), CHUNK_VERTICES),
            ),
            gate: crate::gpu::buffers::control_words(c, "al_gate control", al_gate::CONTROL_WORDS),
        };
        let kernels = Kernels {
            spin: VbdSpin::new(c),
            inertia: VbdInertia::new(c),
            advance: VbdAdvance::new(c),
            spans: VbdSpans::new(c),
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
            clock: clock::FrameClock::new(&ctx),
            frame_dispatches: 0,
            submitted_dispatches: 0,
            profiler: None,
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

    /// The positions buffer (vec4 per vertex, w = 0), for a renderer on the same device: it
    /// holds the newest submitted step once the queue has run it (zero-copy; bind it read-only
    /// and order your passes after [`GpuStepper::submit_frame`]'s submission).
    pub fn position_buffer(&self) -> &wgpu::Buffer {
        &self.buffers.positions
    }

    /// Profiles every frame from now on, kernel by kernel (`on`), or stops and forgets the
    /// totals. Returns whether profiling is on: the device needs timestamps inside passes. Each
    /// profiled frame makes [`GpuStepper::submit_frame`] wait for the GPU.
    pub fn set_profiling(&mut self, on: bool) -> bool {
        match (on, self.profiler.is_some()) {
            (true, false) => self.profiler = Profiler::new(&self.ctx),
            (false, true) => self.profiler = None,
            _ => {}
        }
        self.profiler.is_some()
    }

    /// The profiled frames' time per kernel, the costliest first, and the dispatches that
    /// found no timestamp slot; `None` when not profiling.
    pub fn kernel_profile(&self) -> Option<(Vec<KernelTime>, u64)> {
        self.profiler.as_ref().map(|p| p.report())
    }

    /// Dispatches of the last frame handed to the queue (each costs the driver and the GPU's
    /// front end a few µs, whatever it computes).
    pub fn submitted_dispatches(&self) -> u32 {
        self.submitted_dispatches
    }

    /// Frames handed to the GPU that it has not finished (as of the last poll).
    pub fn frames_in_flight(&self) -> usize {
        self.submitter.in_flight()
    }
}
