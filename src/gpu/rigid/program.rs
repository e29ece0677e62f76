//! The rigid correction in a GPU step (the twin of `src/solver/vbd/rigid_correction.rs`): its
//! buffer and its dispatches, bound once per set of settings.
//!
//! ```text
//! after vbd_inertia   groups from the last detection's pairs (rigid_groups), and touching
//!                     bodies start their initial guess from x^n
//! after vbd_advance   each body's coarse quadratic (rigid_reduce, and with the affine space its
//!                     elasticity along its stretch: rigid_stretch) → where each group's matrix
//!                     goes (scan) → one Newton solve per group (rigid_solve) → every vertex
//!                     moves with its body (rigid_apply)
//! ```

use crate::collision::ContactModel;
use crate::gpu::GpuContext;
use crate::gpu::buffers::{StateBuffers, output, storage};
use crate::gpu::contact::layout::ContactLayout;
use crate::gpu::contact::scan::Scan;
use crate::gpu::kernel::Bound;
use crate::gpu::obstacles::GpuObstacleSet;
use crate::gpu::pack::{IndexLayout, RecordLayout};
use crate::gpu::rigid::rigid_apply::{RigidApply, RigidApplyBuffers};
use crate::gpu::rigid::rigid_groups::{RIGID_ELIGIBLE, RIGID_VOLUMETRIC, RigidGroups, RigidGroupsBuffers, RigidLayout};
use crate::gpu::rigid::rigid_reduce::{self, RigidReduce, RigidReduceBuffers};
use crate::gpu::rigid::rigid_solve::{RigidSolve, RigidSolveBuffers, RigidSolveSetup};
use crate::gpu::rigid::rigid_stretch::{RigidStretch, RigidStretchBuffers};
use crate::solver::Initialization;
use crate::state::{SimState, VERTEX_KINEMATIC};

/// The rigid correction's device state for one packed [`SimState`].
pub(crate) struct RigidState {
    groups: RigidGroups,
    reduce: RigidReduce,
    stretch: RigidStretch,
    solve: RigidSolve,
    apply: RigidApply,
    scan: Scan,
    buffer: wgpu::Buffer,
    /// `rigid_reduce`'s chunk sums for large bodies.
    partials: wgpu::Buffer,
    /// Vertices of the largest body, and per chunk of its sums.
    largest: u32,
    chunk: u32,
    layout: RigidLayout,
    index: IndexLayout,
    records: RecordLayout,
    vertices: u32,
}

/// The correction's dispatches of a substep.
pub(crate) struct RigidProgram {
    /// After `vbd_inertia`: the groups (the dispatch over the stored pairs is made indirect by
    /// the caller, see [`RigidProgram::pair_dispatch`]), the touching bodies' initial guess.
    pub groups: Vec<Bound>,
    /// Where in `groups` the dispatch over the last detection's stored pairs is.
    pub pair_dispatch: Option<usize>,
    /// After `vbd_advance`: the solve and the motions.
    pub correct: Vec<Bound>,
}

impl RigidState {
    /// Device state for `st` (packed as `index` and `records`), or `None` when no body takes
    /// the correction (every body has a kinematic vertex).
    pub fn new(ctx: &GpuContext, st: &SimState, index: IndexLayout, records: RecordLayout) -> Option<Self> {
        let mut flags: Vec<u32> = st
            .bodies
            .iter()
            .map(|b| {
                let volumetric = !st.tet_adjacency.row(b.vertex_start as usize).is_empty();
                RIGID_ELIGIBLE | if volumetric { RIGID_VOLUMETRIC } else { 0 }
            })
            .collect();
        for (&f, &b) in st.flags.iter().zip(&st.vertex_body) {
            if f & VERTEX_KINEMATIC != 0 {
                flags[b as usize] &= !RIGID_ELIGIBLE;
            }
        }
        if flags.iter().all(|f| f & RIGID_ELIGIBLE == 0) {
            return None;
        }
        let (layout, words) = RigidLayout::new(st.bodies.len() as u32, st.vertex_count() as u32);
        let initial = layout.initial_words(words, flags.into_iter());
        let largest = crate::gpu::pack::largest_body(st);
        Some(Self {
            groups: RigidGroups::new(ctx),
            reduce: RigidReduce::new(ctx),
            stretch: RigidStretch::new(ctx),
            solve: RigidSolve::new(ctx),
            apply: RigidApply::new(ctx),
            scan: Scan::new(ctx),
            buffer: storage(ctx, "rigid", &initial, true),
            partials: output::<f32>(
                ctx,
                "rigid partials",
                rigid_reduce::partial_words(st.bodies.len(), largest, rigid_reduce::CHUNK_VERTICES),
            ),
            largest,
            chunk: rigid_reduce::CHUNK_VERTICES,
            layout,
            index,
            records,
            vertices: st.vertex_count() as u32,
        })
    }

    /// Sums the bodies' quadratics in chunks of `chunk` vertices (tests; steps use
    /// [`rigid_reduce::CHUNK_VERTICES`]).
    #[cfg(test)]
    pub fn sum_in_chunks(&mut self, ctx: &GpuContext, chunk: u32) {
        let bodies = (self.layout.bodies as usize).max(1);
        self.partials = output::<f32>(ctx, "rigid partials", rigid_reduce::partial_words(bodies, self.largest, chunk));
        self.chunk = chunk;
    }

    /// The correction's words (each body's flags: free, volumetric).
    pub fn words(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Binds the correction's dispatches for contact constants `model`, the affine coarse space
    /// or the rigid one (`affine`), `initialization` and `obstacles`; `contacts` is the contacts
    /// buffer and its layout when the scene has surface contact, else any buffer (bound, never
    /// read) and `None`.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        (model, affine): (&ContactModel, bool),
        initialization: Initialization,
        obstacles: &GpuObstacleSet,
        b: &StateBuffers<'_>,
        (contacts, contact): (&wgpu::Buffer, Option<ContactLayout>),
    ) -> RigidProgram {
        let l = &self.layout;
        let vertex_body = self.index.vertex_body;
        let gb = RigidGroupsBuffers {
            index: b.index,
            control: b.control,
            contacts,
            rigid: &self.buffer,
            steps: b.steps,
            flags: b.flags,
            records: b.records,
        };
        let pairs = contact.unwrap_or_default();
        let tables = (vertex_body, self.records.bodies);
        let phase = |phase: u32, count: u32| self.groups.bind(ctx, &pairs, l, phase, count, tables, &gb);
        let mut groups = vec![phase(0, l.bodies)];
        let pair_dispatch = contact.map(|c| {
            groups.push(phase(1, c.capacity));
            groups.len() - 1
        });
        groups.extend([phase(2, l.bodies), phase(3, l.bodies)]);
        // Bodies touching another at the last detection start from x^n (src/solver/vbd/predict.rs).
        if initialization == Initialization::Adaptive && contact.is_some() {
            groups.push(phase(4, self.vertices));
        }
        let rb = RigidReduceBuffers {
            positions: b.positions,
            steps: b.steps,
            records: b.records,
            masses: b.masses,
            rigid: &self.buffer,
            partials: &self.partials,
        };
        let mut correct = self.reduce.bind(ctx, (l, self.records.bodies), (self.largest, self.chunk), affine, &rb);
        if affine {
            let sb = RigidStretchBuffers {
                positions: b.positions,
                steps: b.steps,
                index: b.index,
                tets: b.tets,
                records: b.records,
                rigid: &self.buffer,
            };
            correct.push(self.stretch.bind(ctx, l, (&self.index, &self.records), &sb));
        }
        correct.extend(self.scan.bind(ctx, &self.buffer, l.sizes, l.bodies, l.sums));
        let setup = RigidSolveSetup {
            rigid: *l,
            contact,
            vertex_body,
            bodies: self.records.bodies,
            model: *model,
            affine,
            obstacles,
        };
        let sb = RigidSolveBuffers {
            positions: b.positions,
            steps: b.steps,
            records: b.records,
            masses: b.masses,
            index: b.index,
            control: b.control,
            contacts,
            rigid: &self.buffer,
        };
        correct.push(self.solve.bind(ctx, &setup, &sb));
        let ab = RigidApplyBuffers {
            positions: b.positions,
            steps: b.steps,
            index: b.index,
            rigid: &self.buffer,
            initial: b.initial,
            previous: b.previous,
            before_previous: b.before_previous,
        };
        correct.push(self.apply.bind(ctx, l, self.vertices, vertex_body, obstacles, &ab));
        RigidProgram { groups, pair_dispatch, correct }
    }
}
