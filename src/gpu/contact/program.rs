//! The surface-contact part of a GPU step (the twin of `src/solver/vbd/contact.rs`): its
//! buffers, and its dispatches bound once per set of settings, in the order a substep records
//! them. What runs is decided on the GPU: `contact_schedule` writes the workgroup counts of the
//! indirect dispatches after it from what the kernels before it found.
//!
//! ```text
//! rebuild     every REBUILD_INTERVAL substeps: both trees from the current positions
//! advance     check the initial paths against the last bounds → schedule(advance) →
//!             [CCD: reset, swept refit, vertex–triangle and edge–edge TOI, groups, rescale]
//! detection   schedule(detect | re-detect) → [body boxes and seeds, refit, pair queries]
//!             → schedule(pairs) → [count, scan, fill, rows and bounds, kinematic catch-up]
//! ```

use crate::collision::{ContactModel, ContactStiffness};
use crate::gpu::GpuContext;
use crate::gpu::al::surface_pairs::AlSurfaceSource;
use crate::gpu::buffers::{StateBuffers, output};
use crate::gpu::contact::bvh_build::{BvhBuild, BvhBuildBuffers, TreeLayout};
use crate::gpu::contact::bvh_refit::{BvhRefit, BvhRefitBuffers, RefitBoxes};
use crate::gpu::contact::contact_advance::{ContactAdvance, ContactAdvanceBuffers};
use crate::gpu::contact::contact_bodies::{ContactBodies, ContactBodiesBuffers};
use crate::gpu::contact::contact_catch_up::{ContactCatchUp, ContactCatchUpBuffers};
use crate::gpu::contact::contact_ccd::{ContactCcd, ContactCcdBuffers};
use crate::gpu::contact::contact_csr::ContactCsr;
use crate::gpu::contact::contact_detect::{ContactDetect, ContactDetectBuffers};
use crate::gpu::contact::contact_groups::ContactGroups;
use crate::gpu::contact::contact_rows::ContactRows;
use crate::gpu::contact::contact_schedule::{ContactSchedule, MAX_ENTRIES, ScheduleEntry, ScheduleMode};
use crate::gpu::contact::layout::{ContactLayout, SurfaceBounds};
use crate::gpu::contact::scan::Scan;
use crate::gpu::contact::surface::GpuSurface;
use crate::gpu::kernel::Bound;
use crate::gpu::pack::{IndexLayout, RecordLayout};
use crate::solver::SurfaceContactSettings;
use crate::state::SimState;

/// Substeps between two builds of the trees; every other detection refits them. A refit keeps
/// every box exact (queries stay complete); only the trees' tightness decays as surfaces move,
/// as on the CPU (`SurfaceBroadphase::REBUILD_INTERVAL`).
pub const REBUILD_INTERVAL: u32 = 16;

/// Contact constants of a surface before a program binds the step's.
const UNSET: ContactModel =
    ContactModel { stiffness: ContactStiffness::Absolute(0.0), offset: 0.0, static_slip: 0.0, stiffening: false };

/// Indirect dispatch slots (three u32 each) of one contact program.
const SLOTS: usize = 2 * MAX_ENTRIES;

/// The compiled contact kernels.
struct Kernels {
    build: BvhBuild,
    refit: BvhRefit,
    bodies: ContactBodies,
    detect: ContactDetect,
    csr: ContactCsr,
    scan: Scan,
    rows: ContactRows,
    schedule: ContactSchedule,
    ccd: ContactCcd,
    groups: ContactGroups,
    advance: ContactAdvance,
    catch_up: ContactCatchUp,
}

/// Surface contact's device state for one packed [`SimState`].
pub(crate) struct ContactState {
    kernels: Kernels,
    /// Both trees' words.
    bvh: wgpu::Buffer,
    /// Bounds, pair lists and pairs ([`ContactLayout`]).
    contacts: wgpu::Buffer,
    /// Workgroup counts of the scheduled dispatches (`INDIRECT`).
    dispatch: wgpu::Buffer,
    tris: TreeLayout,
    edges: TreeLayout,
    layout: ContactLayout,
    index: IndexLayout,
    /// Some vertex is kinematic (the catch-up runs).
    kinematic: bool,
    /// Detection queries (surface vertices and edges).
    queries: u32,
    /// The surface's tables (the contact constants are set at binding), and the smallest mean
    /// surface edge length of any body \[m\].
    surface: GpuSurface,
    shortest_edge: f32,
}

/// Every contact dispatch of a substep, bound for one set of settings.
pub(crate) struct ContactProgram {
    /// Builds both trees (every [`REBUILD_INTERVAL`] substeps).
    pub rebuild: Vec<Bound>,
    /// The initial advance (check, schedule, CCD).
    pub advance: Vec<Bound>,
    /// Schedules a detection (after the advance).
    pub detect: Bound,
    /// Schedules a detection when needed (between sweeps).
    pub redetect: Bound,
    /// The detection a schedule decided.
    pub detection: Vec<Bound>,
    /// What the colour and Chebyshev passes apply.
    pub bounds: SurfaceBounds,
}

/// Hands out indirect slots and collects what a schedule writes into them.
struct Gate<'a> {
    dispatch: &'a wgpu::Buffer,
    next: &'a mut usize,
    entries: Vec<ScheduleEntry>,
}

impl<'a> Gate<'a> {
    fn new(dispatch: &'a wgpu::Buffer, next: &'a mut usize) -> Self {
        Self { dispatch, next, entries: Vec::new() }
    }

    /// `bound`, made indirect and decided by this gate's schedule (one invocation per stored
    /// pair when `per_pair`).
    fn gate(&mut self, bound: Bound, per_pair: bool) -> Bound {
        let offset = (*self.next * 12) as u64;
        *self.next += 1;
        // The last slot is `over_stored_pairs`'.
        assert!(*self.next < SLOTS, "more scheduled dispatches than slots");
        self.entries.push(ScheduleEntry { offset, workgroups: bound.workgroups(), per_pair });
        bound.indirect(self.dispatch, offset)
    }

    fn gate_all(&mut self, bounds: impl IntoIterator<Item = Bound>) -> Vec<Bound> {
        bounds.into_iter().map(|b| self.gate(b, false)).collect()
    }
}

impl ContactState {
    /// Device state for `st` (packed as `index` and `records`) with room for `capacity` pairs.
    pub fn new(ctx: &GpuContext, st: &SimState, index: IndexLayout, records: RecordLayout, capacity: u32) -> Self {
        let ([tris, edges], end) = TreeLayout::surface(st, &index);
        let queries = (st.surface_vertices.len() + st.surface_edges.len()) as u32;
        let (layout, words) = ContactLayout::new(st.vertex_count() as u32, st.bodies.len() as u32, queries, capacity);
        let dispatch = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("contact dispatch"),
            size: (SLOTS * 12) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::INDIRECT | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Self {
            kernels: Kernels {
                build: BvhBuild::new(ctx),
                refit: BvhRefit::new(ctx),
                bodies: ContactBodies::new(ctx),
                detect: ContactDetect::new(ctx),
                csr: ContactCsr::new(ctx),
                scan: Scan::new(ctx),
                rows: ContactRows::new(ctx),
                schedule: ContactSchedule::new(ctx),
                ccd: ContactCcd::new(ctx),
                groups: ContactGroups::new(ctx),
                advance: ContactAdvance::new(ctx),
                catch_up: ContactCatchUp::new(ctx),
            },
            bvh: output::<u32>(ctx, "bvh", end as usize),
            contacts: output::<u32>(ctx, "contacts", words),
            dispatch,
            tris,
            edges,
            layout,
            index,
            queries,
            kinematic: st.flags.iter().any(|&f| f & crate::state::VERTEX_KINEMATIC != 0),
            surface: GpuSurface::new(st, &index, records.bodies, &UNSET, &Default::default()),
            shortest_edge: st.bodies.iter().map(|b| b.surface_edge_length).fold(f32::INFINITY, f32::min),
        }
    }

    /// Pairs that fit.
    pub fn capacity(&self) -> u32 {
        self.layout.capacity
    }

    /// Replaces the contacts buffer by one with room for `capacity` pairs (zeroed: the caller
    /// marks the bounds invalid and rebinds). Frames in flight keep the old buffer.
    pub fn grow(&mut self, ctx: &GpuContext, capacity: u32) {
        let (layout, words) = ContactLayout::new(self.layout.vertices, self.layout.bodies, self.queries, capacity);
        self.layout = layout;
        self.contacts = output::<u32>(ctx, "contacts", words);
    }

    /// The most pairs the device can hold: the contacts buffer within one storage binding, and
    /// the dispatches over the pairs within one dispatch dimension.
    pub fn max_capacity(&self, ctx: &GpuContext) -> u32 {
        let fixed = ContactLayout::new(self.layout.vertices, self.layout.bodies, self.queries, 0).1 as u64;
        let per_pair = (ContactLayout::new(self.layout.vertices, self.layout.bodies, self.queries, 1).1 as u64) - fixed;
        let words = ctx.device.limits().max_storage_buffer_binding_size / 4;
        let by_memory = words.saturating_sub(fixed) / per_pair;
        let by_dispatch = 65_535 * crate::gpu::kernel::WORKGROUP as u64;
        by_memory.min(by_dispatch).min(u32::MAX as u64) as u32
    }

    /// The surface and both trees, for the fallback's surface pairs (which refit the trees
    /// to their own boxes: every use here refits them first).
    pub fn al_surface_source(&self) -> AlSurfaceSource<'_> {
        AlSurfaceSource { surface: self.surface, tris: self.tris, edges: self.edges, bvh: &self.bvh }
    }

    /// Binds every contact dispatch of a substep for contact constants `model` and `settings`.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        model: &ContactModel,
        settings: &SurfaceContactSettings,
        b: &StateBuffers<'_>,
    ) -> ContactProgram {
        let k = &self.kernels;
        let (l, tris, edges) = (&self.layout, &self.tris, &self.edges);
        let xi = settings.ccd.min_separation;
        let surface = self.surface.with_model(self.shortest_edge, model, &settings.ccd);
        let mut slots = 0;

        let bb = BvhBuildBuffers { positions: b.positions, index: b.index, bvh: &self.bvh };
        let rebuild = [tris, edges].iter().flat_map(|t| k.build.bind(ctx, t, &bb)).collect();
        let rb = BvhRefitBuffers {
            positions: b.positions,
            steps: b.steps,
            index: b.index,
            records: b.records,
            bvh: &self.bvh,
            ends: None,
        };
        let refit = |boxes: RefitBoxes| -> Vec<Bound> {
            [tris, edges].iter().flat_map(|t| k.refit.bind(ctx, t, &surface, boxes, &rb)).collect()
        };

        // The initial advance.
        let ab = ContactAdvanceBuffers {
            positions: b.positions,
            steps: b.steps,
            index: b.index,
            control: b.control,
            contacts: &self.contacts,
            initial: b.initial,
            previous: b.previous,
            before_previous: b.before_previous,
        };
        let [check, rescale] = k.advance.bind(ctx, l, self.index.vertex_body, xi, &ab);
        let cb = ContactCcdBuffers {
            positions: b.positions,
            steps: b.steps,
            index: b.index,
            records: b.records,
            bvh: &self.bvh,
            control: b.control,
        };
        let [reset, point_triangle, edge_edge] = k.ccd.bind(ctx, &surface, l, tris, edges, &settings.ccd, &cb);
        let mut gate = Gate::new(&self.dispatch, &mut slots);
        let mut ccd = gate.gate_all([reset]);
        ccd.extend(gate.gate_all(refit(RefitBoxes::Swept { inflate: xi })));
        ccd.extend(gate.gate_all([point_triangle, edge_edge]));
        ccd.extend(gate.gate_all(k.groups.bind(ctx, l, b.control)));
        ccd.extend(gate.gate_all([rescale]));
        let schedule = |mode: ScheduleMode, entries: &[ScheduleEntry]| {
            k.schedule.bind(ctx, l, mode, entries, b.control, &self.dispatch)
        };
        let mut advance = vec![check, schedule(ScheduleMode::Advance, &gate.entries)];
        advance.extend(ccd);

        // A detection: what the detect/re-detect schedule decides, then what the pairs schedule
        // decides once the count is known.
        let cb = ContactBodiesBuffers {
            positions: b.positions,
            index: b.index,
            records: b.records,
            control: b.control,
            contacts: &self.contacts,
        };
        let db = ContactDetectBuffers {
            positions: b.positions,
            index: b.index,
            records: b.records,
            masses: b.masses,
            bvh: &self.bvh,
            control: b.control,
            contacts: &self.contacts,
        };
        let mut gate = Gate::new(&self.dispatch, &mut slots);
        let mut queries = gate.gate_all(k.bodies.bind(ctx, &surface, l, &cb));
        queries.extend(gate.gate_all(refit(RefitBoxes::SearchRadius)));
        queries.extend(gate.gate_all(k.detect.bind(ctx, &k.scan, &surface, l, tris, edges, model, &db)));
        let detect = schedule(ScheduleMode::Detect, &gate.entries);
        let redetect = schedule(ScheduleMode::Redetect, &gate.entries);
        let mut gate = Gate::new(&self.dispatch, &mut slots);
        let mut lists = vec![gate.gate(k.csr.bind(ctx, l, 0, b.control, &self.contacts), true)];
        lists.extend(gate.gate_all(k.scan.bind(ctx, &self.contacts, l.offsets, l.vertices + 1, l.scan)));
        lists.push(gate.gate(k.csr.bind(ctx, l, 1, b.control, &self.contacts), true));
        lists.push(gate.gate(k.rows.bind(ctx, l, xi, b.positions, b.control, &self.contacts), false));
        if self.kinematic {
            let ub = ContactCatchUpBuffers {
                positions: b.positions,
                flags: b.flags,
                targets: b.targets,
                control: b.control,
                contacts: &self.contacts,
            };
            lists.push(gate.gate(k.catch_up.bind(ctx, l, xi, &ub), false));
        }
        let mut detection = queries;
        detection.push(schedule(ScheduleMode::Pairs, &gate.entries));
        detection.extend(lists);
        ContactProgram { rebuild, advance, detect, redetect, detection, bounds: SurfaceBounds::new(*l, xi) }
    }

    /// The contacts buffer (for the colour and Chebyshev passes).
    pub fn contacts(&self) -> &wgpu::Buffer {
        &self.contacts
    }

    /// Where the bounds, lists and pairs are in [`ContactState::contacts`].
    pub fn layout(&self) -> ContactLayout {
        self.layout
    }

    /// `bound`, a dispatch over the pairs the last detection stored (one invocation per pair),
    /// made indirect, after the schedule that sizes it: for passes outside a detection.
    pub fn over_stored_pairs(&self, ctx: &GpuContext, control: &wgpu::Buffer, bound: Bound) -> [Bound; 2] {
        // The last slot: no program's gates reach it (see `Gate::gate`).
        let offset = ((SLOTS - 1) * 12) as u64;
        let entry = ScheduleEntry { offset, workgroups: 0, per_pair: true };
        let schedule =
            self.kernels.schedule.bind(ctx, &self.layout, ScheduleMode::Stored, &[entry], control, &self.dispatch);
        [schedule, bound.indirect(&self.dispatch, offset)]
    }
}
