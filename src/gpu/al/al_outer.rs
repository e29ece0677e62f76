//! Host side of `shaders/al/al_outer.wgsl`: the augmented-Lagrangian step's outer iterations on
//! the GPU — the safe iterate's move towards its targets and the schedule
//! (`solver::al::schedule::Schedule`'s twin) that ends the step without asking the host.

use crate::gpu::GpuContext;
use crate::gpu::buffers::output;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use crate::solver::al::{AlSettings, STALL_ITERATIONS};
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("al/al_outer", "step");

const PHASE_START: u32 = 0;
const PHASE_MOVE: u32 = 1;
const PHASE_SCHEDULE: u32 = 2;
const PHASE_PINS: u32 = 3;

/// Words of `control`: the dispatch arguments (3 each) of an outer iteration's per-vertex
/// phases, of a one-workgroup phase, of its per-pair and per-tet phases; the state,
/// iterations taken, consecutive small steps.
pub const CONTROL_WORDS: usize = 15;
/// Byte offset in `control` of the per-vertex dispatch arguments of an outer iteration (zero
/// workgroups once the step ended).
pub const VERTEX_ARGS: u64 = 0;
/// Byte offset in `control` of a one-workgroup phase's arguments.
pub const ONE_ARGS: u64 = 12;
/// Byte offset in `control` of the per-pair phases' arguments.
pub const PAIR_ARGS: u64 = 24;
/// Byte offset in `control` of the per-tet phases' arguments.
pub const TET_ARGS: u64 = 36;
/// `control` word of the state.
pub const CONTROL_STATE: usize = 12;
/// `control` word of the outer iterations taken.
#[cfg(test)]
pub const CONTROL_ITERATIONS: usize = 13;
/// `control` word of the consecutive small steps.
#[cfg(test)]
pub const CONTROL_SMALL_STEPS: usize = 14;

/// The control words of a step that has ended (capped, no dispatch arguments): what a
/// caller's buffer holds before its first step, where zeroed words would read as a step
/// running, whose idle outer iterations would count and stall on.
pub fn ended_control() -> [u32; CONTROL_WORDS] {
    let mut words = [0; CONTROL_WORDS];
    for args in [VERTEX_ARGS, ONE_ARGS, PAIR_ARGS, TET_ARGS] {
        let at = args as usize / 4;
        words[at + 1] = 1;
        words[at + 2] = 1;
    }
    words[CONTROL_STATE] = 2;
    debug_assert_eq!(OuterState::decode(2), Some(OuterState::Capped));
    words
}
/// `scalars` words of the first iterates' and the start's weights.
#[cfg(test)]
pub const SCALAR_FIRST_WEIGHT: usize = 12;
/// See [`SCALAR_FIRST_WEIGHT`].
#[cfg(test)]
pub const SCALAR_START_WEIGHT: usize = 13;
/// `scalars` word: a kinematic vertex moves within the step (1.0; `al_merit` then compares
/// no iterates).
#[cfg(test)]
pub const SCALAR_PINS_MOVE: usize = 14;

/// How the step stands (the `control` state word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OuterState {
    /// More iterations to go.
    Running,
    /// The first iterates weigh less than ε.
    Converged,
    /// The iteration cap was reached.
    Capped,
}

impl OuterState {
    /// The state word's meaning.
    pub fn decode(word: u32) -> Option<Self> {
        [Self::Running, Self::Converged, Self::Capped].get(word as usize).copied()
    }
}

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct Params {
    phase: u32,
    vertices: u32,
    vertex_groups: u32,
    min_iterates: u32,
    max_iterations: u32,
    stall_iterations: u32,
    epsilon: f32,
    pair_groups: u32,
    tet_groups: u32,
    mu: f32,
    delta: f32,
    _pad: u32,
}

/// What the kernel reads and writes.
pub struct AlOuterBuffers<'a> {
    /// The safe iterate `x` (vec4), moved.
    pub safe: &'a wgpu::Buffer,
    /// The targets `x̂` (vec4).
    pub targets: &'a wgpu::Buffer,
    /// `al_pcg::VERTEX_MOVES` bits per vertex.
    pub solved: &'a wgpu::Buffer,
    /// `al_step_size`'s times (α first).
    pub times: &'a wgpu::Buffer,
    /// The AL scalars (μ, δ, the weights).
    pub scalars: &'a wgpu::Buffer,
    /// [`CONTROL_WORDS`] u32 with `INDIRECT` usage, written.
    pub control: &'a wgpu::Buffer,
}

/// The bound phases.
pub struct AlOuterRun {
    start: Bound,
    pins: Bound,
    iteration: [Bound; 2],
}

impl AlOuterRun {
    /// The same run, its opening read from the dispatch arguments at byte `at` of `gate` (any
    /// count opens the step; zero opens none, and the arguments of the last step, zeroed at
    /// its end, keep every phase of it idle).
    pub fn gate_start(mut self, gate: &wgpu::Buffer, at: u64) -> Self {
        self.start = self.start.indirect(gate, at);
        self
    }

    /// Records the opening of a step into `pass`.
    pub fn record_start(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.start.record(pass);
    }

    /// Records the test of whether a kinematic vertex moves within the step into `pass`
    /// (after the start, with the safe iterate at the step's start and the targets set).
    pub fn record_pins(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.pins.record(pass);
    }

    /// Records an outer iteration's move and schedule into `pass` (after `al_step_size`).
    #[cfg(test)]
    pub fn record_iteration(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.iteration.iter().for_each(|b| b.record(pass));
    }

    /// Records an outer iteration's move alone (what compares iterates runs before the
    /// schedule, which may change δ).
    pub fn record_move(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.iteration[0].record(pass);
    }

    /// Records an outer iteration's schedule alone (after [`AlOuterRun::record_move`]).
    pub fn record_schedule(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.iteration[1].record(pass);
    }
}

/// The compiled kernel.
pub struct AlOuter {
    kernel: ComputeKernel,
}

impl AlOuter {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "al_outer", SHADER) }
    }

    /// Binds the phases over `vertices` with the settings `s` (ε, `K_min`, the cap, the
    /// offset δ) and the first penalty `mu` \[N/m\], which the start writes into the scalars;
    /// `pairs` and `tets` size the per-pair and per-tet dispatch arguments.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        [vertices, pairs, tets]: [usize; 3],
        s: &AlSettings,
        mu: f32,
        b: &AlOuterBuffers<'_>,
    ) -> AlOuterRun {
        let groups = (vertices as u32).div_ceil(WORKGROUP).max(1);
        let base = Params {
            phase: PHASE_START,
            vertices: vertices as u32,
            vertex_groups: groups,
            min_iterates: s.min_iterates,
            max_iterations: s.max_iterations,
            stall_iterations: STALL_ITERATIONS,
            epsilon: s.epsilon as f32,
            pair_groups: (pairs as u32).div_ceil(WORKGROUP),
            tet_groups: (tets as u32).div_ceil(WORKGROUP),
            mu,
            delta: s.offset as f32,
            _pad: 0,
        };
        // The move reads its arguments from `control`, so binds a stand-in in its place.
        let stand_in = output::<u32>(ctx, "al_outer stand-in", CONTROL_WORDS);
        let buffers = [b.safe, b.targets, b.solved, b.times, b.scalars, b.control];
        let mut move_buffers = buffers;
        move_buffers[5] = &stand_in;
        let one = |phase: u32| self.kernel.bind_pod(ctx, &Params { phase, ..base }, &buffers, 1);
        AlOuterRun {
            start: one(PHASE_START),
            pins: self
                .kernel
                .bind_pod(ctx, &Params { phase: PHASE_PINS, ..base }, &move_buffers, groups * WORKGROUP)
                .indirect(b.control, VERTEX_ARGS),
            iteration: [
                self.kernel
                    .bind_pod(ctx, &Params { phase: PHASE_MOVE, ..base }, &move_buffers, groups * WORKGROUP)
                    .indirect(b.control, VERTEX_ARGS),
                one(PHASE_SCHEDULE),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec4;

    use super::*;
    use crate::gpu::al::al_pcg::{SCALAR_DELTA, SCALAR_MU, VERTEX_MOVES, VERTEX_SOLVED, scalar_words};
    use crate::gpu::al::fixture::{DELTA, Device, MU, fixture};
    use crate::gpu::buffers::{read_blocking, storage};
    use crate::gpu::test_support;
    use crate::solver::al::schedule::Schedule;

    /// Outer iterations driven by a sequence of step sizes against the CPU's `Schedule` and
    /// move: two ordinary steps, a stall long enough to double μ and halve δ, then steps that
    /// converge; after convergence, recorded iterations neither move the safe iterate nor
    /// count. Weights, μ, δ, counts, state and positions agree after every iteration.
    #[test]
    fn follows_the_cpu_schedule() {
        let Some(ctx) = test_support::context() else { return };
        let f = fixture();
        let solve = f.solve();
        let d = Device::new(&ctx, &f, &solve, &[], MU as f32, DELTA as f32);
        let (start, xh) = f.start_and_targets();
        let safe_init: Vec<Vec4> = start.iter().map(|p| p.as_vec3().extend(0.0)).collect();
        let safe = storage(&ctx, "safe", &safe_init, true);
        let times = storage(&ctx, "times", &[1.0f32.to_bits()], false);
        let control = Device::control(&ctx, CONTROL_WORDS);
        let settings = AlSettings::default();
        let run = AlOuter::new(&ctx).bind(
            &ctx,
            [d.n, 0, 0],
            &settings,
            MU as f32,
            &AlOuterBuffers {
                safe: &safe,
                targets: &d.positions,
                solved: &d.solved,
                times: &times,
                scalars: &d.scalars,
                control: &control,
            },
        );
        Device::run(&ctx, |pass| run.record_start(pass));
        let mut cpu = Schedule::new(MU, DELTA);
        let mut x = start.clone();
        let mut converged = false;
        let alphas = [0.5, 0.25, 5e-5, 5e-5, 5e-5, 5e-5, 5e-5, 5e-5, 0.9, 0.95, 0.99, 0.999, 0.5, 0.5];
        for (i, &alpha) in alphas.iter().enumerate() {
            let alpha = alpha as f32;
            ctx.queue.write_buffer(&times, 0, bytemuck::bytes_of(&alpha.to_bits()));
            if converged {
                // New targets 0.1 m away: an iteration that still ran would move towards them.
                let away: Vec<Vec4> = f.targets.iter().map(|p| *p + Vec4::new(0.1, 0.0, 0.0, 0.0)).collect();
                ctx.queue.write_buffer(&d.positions, 0, bytemuck::cast_slice(&away));
            }
            Device::run(&ctx, |pass| run.record_iteration(pass));
            if !converged {
                for (v, p) in x.iter_mut().enumerate() {
                    if solve[v] {
                        *p += (xh[v] - *p) * alpha as f64;
                    }
                }
                cpu.weigh(alpha as f64, &settings);
                converged = cpu.converged(&settings);
                if !converged {
                    cpu.stall(alpha as f64);
                }
            }
            let words: Vec<u32> = read_blocking(&ctx, &control, CONTROL_WORDS).expect("control");
            let scalars: Vec<f32> = read_blocking(&ctx, &d.scalars, 16).expect("scalars");
            let state = OuterState::decode(words[CONTROL_STATE]);
            assert_eq!(state, Some(if converged { OuterState::Converged } else { OuterState::Running }), "step {i}");
            assert_eq!(
                (words[CONTROL_ITERATIONS], words[CONTROL_SMALL_STEPS]),
                (cpu.iterations, cpu.small_steps),
                "step {i}"
            );
            let close = |g: f32, c: f64| (g as f64 - c).abs() <= 1e-5 * c.abs().max(1e-3);
            assert!(close(scalars[SCALAR_FIRST_WEIGHT], cpu.first_weight), "step {i}: {scalars:?} vs {cpu:?}");
            assert!(close(scalars[SCALAR_START_WEIGHT], cpu.start_weight), "step {i}: {scalars:?} vs {cpu:?}");
            assert!(
                close(scalars[SCALAR_MU], cpu.mu) && close(scalars[SCALAR_DELTA], cpu.delta),
                "step {i}: {scalars:?}"
            );
            let gpu: Vec<Vec4> = read_blocking(&ctx, &safe, d.n).expect("safe");
            for (v, p) in gpu.iter().enumerate() {
                let want = x[v];
                assert!((p.truncate().as_dvec3() - want).length() <= 1e-6, "step {i}: vertex {v}");
            }
        }
        assert!(converged && cpu.mu == 2.0 * MU, "{cpu:?}");
    }

    /// The pins phase after a start: a free vertex away from its target leaves the flag down,
    /// as does a kinematic one whose target is where the step starts; a kinematic vertex with
    /// its target elsewhere raises it; the next start lowers it.
    #[test]
    fn finds_the_pins_that_move() {
        let Some(ctx) = test_support::context() else { return };
        let n = 200;
        let start: Vec<Vec4> = (0..n).map(|v| Vec4::new(v as f32 * 0.01, 1.0, 0.0, 0.0)).collect();
        let solved: Vec<u32> =
            (0..n).map(|v| if v % 10 == 0 { VERTEX_MOVES } else { VERTEX_SOLVED | VERTEX_MOVES }).collect();
        let mut targets = start.clone();
        targets[5].y += 0.1;
        let safe = storage(&ctx, "safe", &start, true);
        let target_buffer = storage(&ctx, "targets", &targets, true);
        let (solved, times) = (storage(&ctx, "solved", &solved, false), storage(&ctx, "times", &[0u32], false));
        let scalars = storage(&ctx, "scalars", &vec![0.0f32; scalar_words(n)], true);
        let control = Device::control(&ctx, CONTROL_WORDS);
        let run = AlOuter::new(&ctx).bind(
            &ctx,
            [n, 0, 0],
            &AlSettings::default(),
            MU as f32,
            &AlOuterBuffers {
                safe: &safe,
                targets: &target_buffer,
                solved: &solved,
                times: &times,
                scalars: &scalars,
                control: &control,
            },
        );
        let flag = |pins: bool| -> f32 {
            Device::run(&ctx, |pass| {
                run.record_start(pass);
                if pins {
                    run.record_pins(pass);
                }
            });
            read_blocking::<f32>(&ctx, &scalars, 16).expect("scalars")[SCALAR_PINS_MOVE]
        };
        assert_eq!(flag(true), 0.0);
        targets[20].x += 1e-3;
        ctx.queue.write_buffer(&target_buffer, 0, bytemuck::cast_slice(&targets));
        assert_eq!(flag(true), 1.0);
        assert_eq!(flag(false), 0.0);
    }
}
