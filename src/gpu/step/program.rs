//! A GPU substep's dispatches, bound once for a set of settings and obstacles and grouped by
//! the phase of the step they belong to (the order `record_substep` records them in).

use super::checks::Checks;
use super::{GpuStepSettings, GpuStepper};
use crate::gpu::al::fallback::{GpuFallback, GpuFallbackBuffers, GpuFallbackSetup};
use crate::gpu::buffers::StateBuffers;
use crate::gpu::check::step_guard::StepGuardBuffers;
use crate::gpu::contact::layout::{CONTROL_HEADER, SurfaceBounds};
use crate::gpu::contact::program::{ContactProgram, ContactState};
use crate::gpu::contact::surface::GpuSurface;
use crate::gpu::kernel::Bound;
use crate::gpu::obstacles::GpuObstacleSet;
use crate::gpu::pack::largest_body;
use crate::gpu::pack::span_count;
use crate::gpu::rigid::program::RigidState;
use crate::gpu::vbd::vbd_advance::VbdAdvanceBuffers;
use crate::gpu::vbd::vbd_chebyshev::{SpanRows, VbdChebyshevBuffers};
use crate::gpu::vbd::vbd_color::{VbdColorBuffers, VbdColorSetup};
use crate::gpu::vbd::vbd_divergence::{CHUNK_VERTICES as DIVERGENCE_CHUNK, VbdDivergenceBuffers};
use crate::gpu::vbd::vbd_finish::VbdFinishBuffers;
use crate::gpu::vbd::vbd_inertia::{VbdInertiaBuffers, VbdInertiaParams};
use crate::gpu::vbd::vbd_spans::VbdSpansBuffers;
use crate::gpu::vbd::vbd_spin::{self, VbdSpinBuffers};
use crate::solver::vbd::chebyshev::ChebyshevSchedule;

/// Every dispatch of a substep, by phase.
pub(super) struct Program {
    pub settings: GpuStepSettings,
    pub obstacles: GpuObstacleSet,
    /// Check: the start's energies, before anything moves.
    pub check_start: Vec<Bound>,
    /// Predict: `vbd_spin`, `vbd_inertia`, the rigid correction's groups, `vbd_advance`, the
    /// correction.
    pub predict: Vec<Bound>,
    /// Detect (and the sweeps' re-detections): surface contact, and its sweeps between
    /// detections (0: once per step).
    pub contact: Option<(ContactProgram, u32)>,
    /// Detect, with a box or a sphere among the obstacles: the spans' advance limit (around
    /// surface contact's advance: `vbd_advance`'s reset, `vbd_spans`' limit, `vbd_advance`'s
    /// shortening) and, after surface detection, the span contacts.
    pub spans: Option<([Bound; 3], Bound)>,
    /// Solve: one per colour.
    pub colors: Vec<Bound>,
    /// Check: the residual rule's sum after the first sweep.
    pub first_sweep: Option<Bound>,
    /// Solve: Chebyshev's divergence guard after each sweep (its chunks' sums, then the
    /// bodies', for large bodies).
    pub divergence: Vec<Bound>,
    /// Solve: one Chebyshev mix per sweep but the last (the step ends on a plain Gauss–Seidel
    /// sweep).
    pub chebyshev: Vec<Bound>,
    /// The fast path's finish: the velocities.
    pub finish: Bound,
    /// Check: the guard's non-finite test, the end's energies, the soft flags, the hard tests.
    pub check: Vec<Bound>,
    /// Fall back: the redo of an unsafe substep on the device, and the guard's test again.
    pub fallback: Option<(GpuFallback, Bound)>,
    /// Finish: the guard's rollback and count.
    pub settle: [Bound; 2],
}

/// The buffers and bounds the solve's passes share with surface contact.
struct ContactBinding<'a> {
    bounds: SurfaceBounds,
    /// Surface contact's buffer, or a stand-in without it.
    contacts: &'a wgpu::Buffer,
    state: Option<&'a ContactState>,
}

impl GpuStepper {
    /// Binds every dispatch of a substep for `settings` and `obstacles` (again only when either
    /// changed: a step then creates no GPU object).
    pub(super) fn program(&mut self, settings: &GpuStepSettings, obstacles: &GpuObstacleSet) -> &Program {
        let stale = self.program.as_ref().is_none_or(|p| p.settings != *settings || p.obstacles != *obstacles);
        if stale {
            if settings.surface_contact().is_some() && self.contact.is_none() {
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
            if settings.surface_contact().is_some() && !contact_before {
                // Pairs and bounds from before surface contact was off describe another state.
                self.forget_contacts();
            }
            if settings.vbd.rigid_correction && self.rigid.is_none() {
                self.rigid = Some(RigidState::new(&self.ctx, &self.state, self.layout, self.records));
            }
            self.program = Some(self.bind_program(settings, obstacles));
        }
        self.program.as_ref().unwrap_or_else(|| unreachable!("bound above"))
    }

    fn bind_program(&self, s: &GpuStepSettings, obstacles: &GpuObstacleSet) -> Program {
        let (contact, binding) = self.bind_contact(s);
        let predict = self.bind_predict(s, obstacles, &binding);
        let spans = self.bind_spans(s, obstacles);
        let (colors, divergence, chebyshev) = self.bind_solve(s, obstacles, &binding);
        let [flag, roll_back, count] = self.bind_guard(s);
        let mut check = vec![flag.clone()];
        let (check_start, first_sweep) =
            match s.check.then(|| self.bind_checks(s, obstacles, binding.state, binding.contacts)) {
                Some(Checks { start, first_sweep, end }) => {
                    check.extend(end);
                    (start, Some(first_sweep))
                }
                None => (Vec::new(), None),
            };
        Program {
            settings: *s,
            obstacles: *obstacles,
            check_start,
            predict,
            contact,
            spans,
            colors,
            first_sweep,
            divergence,
            chebyshev,
            finish: self.bind_finish(),
            check,
            fallback: self.bind_fallback(s, obstacles, binding.state, flag),
            settle: [roll_back, count],
        }
    }

    /// What `vbd_advance` binds (the predict phase's advance and the spans' limit).
    fn advance_buffers(&self) -> VbdAdvanceBuffers<'_> {
        let b = &self.buffers;
        VbdAdvanceBuffers {
            positions: &b.positions,
            steps: &b.steps,
            flags: &b.flags,
            index: &b.index,
            body_toi: &b.body_toi,
            initial: &b.initial,
            previous: &b.previous,
            before_previous: &b.before_previous,
        }
    }

    /// The step's state buffers as the contact and rigid-correction programs bind them.
    fn state_buffers(&self) -> StateBuffers<'_> {
        let b = &self.buffers;
        StateBuffers {
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
            tets: &b.tets,
        }
    }

    /// Surface contact's dispatches, and what the colour and Chebyshev passes bound their
    /// moves with.
    fn bind_contact(&self, s: &GpuStepSettings) -> (Option<(ContactProgram, u32)>, ContactBinding<'_>) {
        let buffers = self.state_buffers();
        let state = self.contact.as_ref().filter(|_| s.surface_contact().is_some());
        let contact = state.zip(s.surface_contact()).map(|(state, settings)| {
            (state.bind(&self.ctx, &s.vbd.contact, &settings, &buffers), settings.detection_interval)
        });
        let binding = match (&contact, state) {
            (Some((p, _)), Some(state)) => {
                ContactBinding { bounds: p.bounds, contacts: state.contacts(), state: Some(state) }
            }
            _ => ContactBinding { bounds: SurfaceBounds::off(), contacts: &self.buffers.no_contacts, state: None },
        };
        (contact, binding)
    }

    /// The rigid correction's state when this step runs it (and with it `vbd_spin`).
    fn rigid_state(&self, s: &GpuStepSettings) -> Option<&RigidState> {
        self.rigid.as_ref().and_then(|r| r.as_ref()).filter(|_| s.vbd.rigid_correction)
    }

    /// The predict phase: inertia targets, the rigid correction's groups (touching bodies start
    /// from x^n), the obstacle advance, and the correction itself.
    fn bind_predict(
        &self,
        s: &GpuStepSettings,
        obstacles: &GpuObstacleSet,
        contact: &ContactBinding<'_>,
    ) -> Vec<Bound> {
        let (ctx, k, b, l) = (&*self.ctx, &self.kernels, &self.buffers, &self.layout);
        let n = self.vertices;
        let v = &s.vbd;
        let rigid_state = self.rigid_state(s);
        let mut predict = Vec::new();
        let mut inertia = VbdInertiaParams::new(n as usize, s.h, v.gravity, v.integrator, v.initialization);
        if let Some(state) = rigid_state {
            // The free volumetric bodies' spins (`solver::vbd::spin`), from x^n and v^n.
            let spin = VbdSpinBuffers {
                positions: &b.positions,
                velocities: &b.velocities,
                masses: &b.masses,
                records: &b.records,
                rigid: state.words(),
                turns: &b.turns,
                partials: &b.spin_partials,
                spins: &b.spins,
            };
            predict.extend(k.spin.bind(
                ctx,
                (self.bodies, self.records, s.h),
                (largest_body(&self.state), vbd_spin::CHUNK_VERTICES),
                &spin,
            ));
            inertia = inertia.with_spins();
        }
        predict.push(k.inertia.bind(
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
                turns: &b.turns,
            },
        ));
        let advance = k.advance.bind(ctx, n, self.bodies, l.vertex_body, obstacles, &self.advance_buffers());
        let buffers = self.state_buffers();
        let rigid = rigid_state.map(|state| {
            let pairs = (contact.contacts, contact.state.map(|c| c.layout()));
            let affine = v.coarse_space == crate::solver::CoarseSpace::Affine;
            state.bind(ctx, (&v.contact, affine), v.initialization, obstacles, &buffers, pairs)
        });
        if let Some(r) = &rigid {
            for (k, bound) in r.groups.iter().enumerate() {
                match (r.pair_dispatch, contact.state) {
                    (Some(at), Some(c)) if at == k => {
                        predict.extend(c.over_stored_pairs(ctx, &b.control, bound.clone()))
                    }
                    _ => predict.push(bound.clone()),
                }
            }
        }
        predict.extend(advance.into_iter().take(3));
        if let Some(r) = rigid {
            predict.extend(r.correct);
        }
        predict
    }

    /// The spans' advance limit and detection (`vbd_spans`), when a box or a sphere is among
    /// the obstacles and the surface has spans.
    fn bind_spans(&self, s: &GpuStepSettings, obstacles: &GpuObstacleSet) -> Option<([Bound; 3], Bound)> {
        let spans = span_count(&self.state);
        if !obstacles.has_spans() || spans == 0 {
            return None;
        }
        let (ctx, k, b, l) = (&*self.ctx, &self.kernels, &self.buffers, &self.layout);
        let [_, _, _, reset, shorten] =
            k.advance.bind(ctx, self.vertices, self.bodies, l.vertex_body, obstacles, &self.advance_buffers());
        let surface = GpuSurface::new(&self.state, l, self.records.bodies, &s.vbd.contact, &Default::default());
        let [limit, detect] = k.spans.bind(
            ctx,
            &surface,
            self.vertices,
            self.bodies,
            obstacles,
            &VbdSpansBuffers {
                positions: &b.positions,
                steps: &b.steps,
                index: &b.index,
                records: &b.records,
                updates: &b.updates,
                body_toi: &b.body_toi,
            },
        );
        Some(([reset, limit, shorten], detect))
    }

    /// The solve phase's passes: the colours, and with Chebyshev its divergence guard and one
    /// mix per sweep but the last.
    fn bind_solve(
        &self,
        s: &GpuStepSettings,
        obstacles: &GpuObstacleSet,
        contact: &ContactBinding<'_>,
    ) -> (Vec<Bound>, Vec<Bound>, Vec<Bound>) {
        let (ctx, k, b, l) = (&*self.ctx, &self.kernels, &self.buffers, &self.layout);
        let frozen = CONTROL_HEADER as u32;
        let (bounds, contacts) = (contact.bounds, contact.contacts);
        let spans = (obstacles.has_spans() && span_count(&self.state) > 0)
            .then_some((self.state.surface_edges.len() as u32, self.vertices));
        // `vbd_spin` ran in the predict phase and wrote the bodies' spins (`bind_predict`).
        let spins = self.rigid_state(s).is_some();
        let setup = VbdColorSetup {
            layout: *l,
            records: self.records,
            contact: s.vbd.contact,
            bounds,
            obstacles,
            spans,
            spins,
        };
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
        let Some(rho) = s.vbd.chebyshev_rho.filter(|_| s.vbd.iterations >= 4) else {
            return (colors, Vec::new(), Vec::new());
        };
        let divergence = k.divergence.bind(
            ctx,
            self.bodies,
            self.records.bodies,
            (largest_body(&self.state), DIVERGENCE_CHUNK),
            &VbdDivergenceBuffers {
                records: &b.records,
                updates: &b.updates,
                smallest: &b.smallest,
                control: &b.control,
                frozen,
                partials: &b.residual_partials,
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
            updates: &b.updates,
            spans: spans.map(|(_, base)| SpanRows { base, offsets: l.span_offsets, entries: l.span_entries }),
        };
        let chebyshev = (0..s.vbd.iterations - 1)
            .map(|_| {
                let omega = schedule.next_omega();
                k.chebyshev.bind(ctx, omega, self.colored, l.vertex_body, &bounds, obstacles, &mix)
            })
            .collect();
        (colors, divergence, chebyshev)
    }

    /// The fast path's finish: velocities and accelerations from the solved positions.
    fn bind_finish(&self) -> Bound {
        let b = &self.buffers;
        self.kernels.finish.bind(
            &self.ctx,
            self.vertices as usize,
            &VbdFinishBuffers {
                positions: &b.positions,
                initial: &b.initial,
                steps: &b.steps,
                velocities: &b.velocities,
                accelerations: &b.accelerations,
                flags: &b.flags,
            },
        )
    }

    /// `step_guard`'s three dispatches: the non-finite test (the check's first), the rollback
    /// and the count (the substep's finish).
    fn bind_guard(&self, s: &GpuStepSettings) -> [Bound; 3] {
        let b = &self.buffers;
        self.kernels.guard.bind(
            &self.ctx,
            self.vertices,
            self.bodies,
            self.layout.vertex_body,
            s.fallback.filter(|_| s.check).is_some(),
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
        )
    }

    /// The fallback phase on the device (with the check on and the GPU's fallback asked for),
    /// with the guard's non-finite test after it.
    fn bind_fallback(
        &self,
        s: &GpuStepSettings,
        obstacles: &GpuObstacleSet,
        contact_state: Option<&ContactState>,
        flag: Bound,
    ) -> Option<(GpuFallback, Bound)> {
        let f = s.fallback.filter(|_| s.check)?;
        let (b, l) = (&self.buffers, &self.layout);
        let setup = GpuFallbackSetup {
            st: &self.state,
            index: l,
            records: &self.records,
            obstacles,
            h: s.h,
            integrator: s.vbd.integrator,
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
        Some((GpuFallback::bind(&self.ctx, &setup, &f, &buffers), flag))
    }
}
