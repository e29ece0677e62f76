//! The safety check's dispatches in a GPU substep: the start's energies, the residual after the
//! first sweep, and, between `step_guard`'s test and its rollback, the end's energies, the soft
//! flags (`step_soft`) and the hard tests (`step_check`).

use crate::gpu::check::step_check::StepCheckBuffers;
use crate::gpu::check::step_energy::{CHUNK_VERTICES, StepEnergyBuffers, StepEnergySetup};
use crate::gpu::check::step_soft::{StepSoftBuffers, StepSoftSetup};
use crate::gpu::contact::program::ContactState;
use crate::gpu::kernel::Bound;
use crate::gpu::obstacles::GpuObstacleSet;
use crate::gpu::pack::largest_body;
use crate::gpu::step::GpuStepSettings;
use crate::gpu::step::GpuStepper;

/// The check's dispatches, by where they go in the substep.
pub(super) struct Checks {
    /// Before anything moves.
    pub start: Vec<Bound>,
    /// After the first sweep's colours.
    pub first_sweep: Bound,
    /// After `step_guard`'s test, before its rollback.
    pub end: Vec<Bound>,
}

impl GpuStepper {
    /// Binds the check for settings `s` (`contacts`: surface contact's buffer, or a stand-in
    /// without it).
    pub(super) fn bind_checks(
        &self,
        s: &GpuStepSettings,
        obstacles: &GpuObstacleSet,
        contact_state: Option<&ContactState>,
        contacts: &wgpu::Buffer,
    ) -> Checks {
        let (ctx, k, b, l) = (&*self.ctx, &self.kernels, &self.buffers, &self.layout);
        let n = self.vertices;
        let [before, after] = k.energy.bind(
            ctx,
            &StepEnergySetup {
                bodies: self.bodies,
                elements: [self.state.tets.len(), self.state.tris.len(), self.state.hinges.len()].map(|n| n as u32),
                largest_body: largest_body(&self.state),
                chunk: CHUNK_VERTICES,
                layout: l,
                records: &self.records,
                gravity: s.vbd.gravity,
                h: s.h,
                contact: &s.vbd.contact,
                obstacles,
            },
            &StepEnergyBuffers {
                positions: &b.positions,
                velocities: &b.velocities,
                masses: &b.masses,
                tets: &b.tets,
                records: &b.records,
                index: &b.index,
                energy: &b.energy,
            },
        );
        let mut end = after;
        // Between the guard's test and its rollback: unsafe bodies are rolled back too.
        let soft = k.soft.bind(
            ctx,
            &StepSoftSetup {
                bodies: self.bodies,
                vertices: n,
                body_records: self.records.bodies,
                vertex_body: l.vertex_body,
                gravity: s.vbd.gravity.length(),
                contact: contact_state.map(|c| c.layout()),
                // The GPU's obstacles are static: nothing but pins does work on a body.
                energy_test: true,
                margin: s.island_margin,
            },
            &StepSoftBuffers {
                records: &b.records,
                updates: &b.updates,
                index: &b.index,
                contacts,
                constants: &b.soft_constants,
                soft: &b.soft,
                bad: &b.bad,
                energy: &b.energy,
            },
        );
        end.extend(soft.end);
        end.extend(k.check.bind(
            ctx,
            (n, self.state.tets.len() as u32),
            (l.surface_edges, self.state.surface_edges.len() as u32),
            l.vertex_body,
            s.h,
            obstacles,
            &StepCheckBuffers {
                positions: &b.positions,
                velocities: &b.velocities,
                steps: &b.steps,
                tets: &b.tets,
                index: &b.index,
                sizes: &b.sizes,
                bad: &b.bad,
            },
        ));
        Checks { start: before, first_sweep: soft.first, end }
    }
}
