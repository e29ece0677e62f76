//! Host side of `shaders/check/step_soft.wgsl`: the safety check's soft flags on the device, the
//! residual rule (the CPU's `solver::check::residual_verdict`) and the energy test over
//! islands (on [`crate::gpu::check::step_energy`]'s sums), so a GPU step whose sweeps stall (a stiff block
//! on a soft sheet, stacked cloth), diverge or make energy from nothing (a stiff clamped beam)
//! is redone by the fallback as on the CPU.

use crate::gpu::GpuContext;
use crate::gpu::contact::layout::ContactLayout;
use crate::gpu::kernel::{Bound, ComputeKernel, WORKGROUP};
use crate::solver::check::{
    CLAMP_LOCK_SHARE, DIVERGED_WEIGHTS, MASS_CONTRAST, MIN_WEIGHT_GRAVITY, RESIDUAL_WEIGHT_SHARE, STIFFNESS_CONTRAST,
};
use crate::solver::check::{ENERGY_FLOOR, ENERGY_GAIN, SOFT_LIMIT, SOFT_WINDOW};
use crate::state::SimState;
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str =
    crate::gpu::kernel::compose!("check/step_soft", "step", "contact_layout", "unsafe_flags", "energy_layout");

/// Field bit of a body whose residual grew past [`DIVERGED_WEIGHTS`] times its weight (beside
/// the `step_guard` and `step_check` bits).
pub const BAD_DIVERGED: u32 = 64;
/// Field bit of a body whose island's soft flags filled its window (three of the last five
/// substeps, as on the CPU), the last of them a stalled residual.
pub const BAD_STALLED: u32 = 128;
/// Both.
pub const RESIDUAL: u32 = BAD_DIVERGED | BAD_STALLED;
/// As [`BAD_STALLED`], the last flag the island's energy gain.
pub const BAD_ENERGY: u32 = 256;
/// As [`BAD_STALLED`], the last flag a clamp lock: more than a fifth of a body's surface
/// vertices ended held by their displacement bounds.
pub const BAD_CLAMP_LOCK: u32 = 512;
/// Every bit the kernel sets.
pub const FLAGS: u32 = RESIDUAL | BAD_ENERGY | BAD_CLAMP_LOCK;
/// Words per body in the `soft` buffer: the first sweep's squared residual, the flags and their
/// window, and the heaviest weight among the bodies it touches (the shader's `SOFT_WORDS`).
pub const SOFT_WORDS: usize = 3;

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    phase: u32,
    bodies: u32,
    body_records: u32,
    vertex_body: u32,
    vertices: u32,
    gravity: f32,
    mass_contrast: f32,
    weight_share: f32,
    diverged: f32,
    contrast: f32,
    soft_limit: u32,
    window_mask: u32,
    energy_test: u32,
    energy_gain: f32,
    energy_floor: f32,
    margin: f32,
    clamp_share: f32,
    weight_gravity: f32,
    _pad: [u32; 2],
    contact: ContactLayout,
}

/// What the kernel reads and writes.
pub struct StepSoftBuffers<'a> {
    /// [`crate::gpu::pack::pack_records`] (each body's vertex range).
    pub records: &'a wgpu::Buffer,
    /// Per vertex: w `‖f‖²` of its last update (vec4; see [`crate::gpu::vbd::vbd_color`]).
    pub updates: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`] (`vertex_body`).
    pub index: &'a wgpu::Buffer,
    /// Surface contact's buffer (its vertex → pair lists), or any buffer without it.
    pub contacts: &'a wgpu::Buffer,
    /// [`body_constants`] (vec4 per body).
    pub constants: &'a wgpu::Buffer,
    /// [`SOFT_WORDS`] u32 per body, kept from substep to substep (zeroed with the state's
    /// upload).
    pub soft: &'a wgpu::Buffer,
    /// `step_guard`'s two u32 per body.
    pub bad: &'a wgpu::Buffer,
    /// [`crate::gpu::check::step_energy`]'s buffer (its per-body words; the island labels live there).
    pub energy: &'a wgpu::Buffer,
}

/// Where the kernel finds its tables and what it applies.
#[derive(Clone, Copy, Debug)]
pub struct StepSoftSetup {
    /// Bodies in the state.
    pub bodies: u32,
    /// Vertices in the state.
    pub vertices: u32,
    /// Where the body records start in `records` (vec4s).
    pub body_records: u32,
    /// Where `vertex_body` starts in `index`.
    pub vertex_body: u32,
    /// `|g|` \[m/s²\].
    pub gravity: f32,
    /// Surface contact's layout, when it is on.
    pub contact: Option<ContactLayout>,
    /// Whether the energy test runs (off where something outside the state does work, such
    /// as a moving obstacle).
    pub energy_test: bool,
    /// Margin around an island's height in its energy scale \[m\] (the CPU's island margin).
    pub margin: f32,
}

/// The compiled kernel.
pub struct StepSoft {
    kernel: ComputeKernel,
}

/// The dispatches of a substep.
pub struct StepSoftBound {
    /// After the first sweep.
    pub first: Bound,
    /// After `vbd_finish` and [`crate::gpu::check::step_energy`]'s end, before `step_guard`'s rollback.
    pub end: Vec<Bound>,
}

impl StepSoft {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "step_soft", SHADER) }
    }

    /// The five phases (the pair phase only with surface contact).
    pub fn bind(&self, ctx: &GpuContext, s: &StepSoftSetup, b: &StepSoftBuffers<'_>) -> StepSoftBound {
        let buffers = [b.records, b.updates, b.index, b.contacts, b.constants, b.soft, b.bad, b.energy];
        let params = |phase: u32| Params {
            phase,
            bodies: s.bodies,
            body_records: s.body_records,
            vertex_body: s.vertex_body,
            vertices: s.vertices,
            gravity: s.gravity,
            mass_contrast: MASS_CONTRAST as f32,
            weight_share: RESIDUAL_WEIGHT_SHARE as f32,
            diverged: DIVERGED_WEIGHTS as f32,
            contrast: STIFFNESS_CONTRAST as f32,
            soft_limit: SOFT_LIMIT,
            window_mask: (1 << SOFT_WINDOW) - 1,
            energy_test: u32::from(s.energy_test),
            energy_gain: ENERGY_GAIN as f32,
            energy_floor: ENERGY_FLOOR as f32,
            margin: s.margin,
            clamp_share: CLAMP_LOCK_SHARE,
            weight_gravity: s.gravity.max(MIN_WEIGHT_GRAVITY as f32),
            _pad: [0; 2],
            contact: s.contact.unwrap_or_default(),
        };
        let per_body = s.bodies * WORKGROUP;
        let first = self.kernel.bind_pod(ctx, &params(0), &buffers, per_body);
        let mut end = Vec::new();
        if s.contact.is_some() {
            end.push(self.kernel.bind_pod(ctx, &params(1), &buffers, s.vertices));
        }
        for phase in 2..5 {
            end.push(self.kernel.bind_pod(ctx, &params(phase), &buffers, per_body));
        }
        StepSoftBound { first, end }
    }
}

/// Per body: its mass \[kg\], the largest shear modulus of its tets \[Pa\] (0 without tets:
/// any growth of a cloth's residual counts), its number of surface vertices, and its mean
/// vertex mass \[kg\] (`safety::contrasting` compares these two).
pub fn body_constants(st: &SimState) -> Vec<[f32; 4]> {
    let mut out = vec![[0.0f32; 4]; st.bodies.len()];
    for &v in &st.surface_vertices {
        out[st.vertex_body[v as usize] as usize][2] += 1.0;
    }
    for (&m, &b) in st.masses.iter().zip(&st.vertex_body) {
        out[b as usize][0] += m;
    }
    for t in &st.tets {
        let b = st.vertex_body[t.vertices[0] as usize] as usize;
        out[b][1] = out[b][1].max(st.materials[t.material as usize].mu);
    }
    for (b, c) in out.iter_mut().enumerate() {
        c[3] = crate::solver::check::mean_vertex_mass(st, b) as f32;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::buffers::{output, read_blocking, storage};
    use crate::gpu::check::step_energy::{DRIVEN, ENERGY_WORDS};
    use crate::gpu::test_support;
    use crate::solver::check::{ResidualVerdict, contrasting, residual_verdict};
    use crate::state::BodyRecord;
    use crate::test_rng::Rng;

    /// Five bodies over four substeps, against the CPU's rule and window (squared residuals): a
    /// cloth whose residual grows 1.1× a substep (stalls, flagged at the third), two alike tet
    /// bodies in contact growing 1.2× and 3× (a pile's growth: never), a 7.8 kg block growing
    /// 1.1× on a body 3,000 times lighter per vertex through a contact pair (mass contrast: any
    /// growth counts for both), and a body whose force passes a hundred weights (diverged: at
    /// once). The pairs make islands
    /// of bodies 1 and 2 and of 3 and 4, whose windows take the island's flag, as on the CPU.
    /// Sums as the CPU sums them, flags where the CPU's rule puts them, windows cleared after a
    /// flag.
    #[test]
    fn flags_stalled_and_diverged_bodies_as_the_cpu_rule_does() {
        let Some(ctx) = test_support::context() else { return };
        let sizes = [300u32, 1000, 37, 64, 5];
        let masses = [0.03f32, 1.0, 0.5, 7.8, 2e-4];
        // Stiffnesses 10× apart between the block and its neighbour: the mass contrast is what
        // makes them strict here (the stiffness contrast is the stiff-on-soft scene's, in
        // tests/fallback.rs).
        let shear = [0.0f32, 4e4, 4e4, 4e8, 4e7];
        // Last over first squared residual per substep, and the first's size in body weights.
        let growth = [1.1f32, 1.2, 3.0, 1.1, 1.0];
        let force = [2.0f32, 2.0, 2.0, 2.0, 1.0];
        let mut bodies = Vec::new();
        let mut start = 0;
        for &count in &sizes {
            bodies.push(BodyRecord { vertex_start: start, vertex_count: count, ..Default::default() });
            start += count;
        }
        let n = start as usize;
        let vertex_body: Vec<u32> = bodies
            .iter()
            .enumerate()
            .flat_map(|(b, r)| std::iter::repeat_n(b as u32, r.vertex_count as usize))
            .collect();
        let mut records: Vec<[f32; 4]> = vec![[0.0; 4]; 2];
        records.extend_from_slice(bytemuck::cast_slice(&bodies));
        // One pair between the block and the slab, one between bodies 1 and 2 (alike).
        let pairs = [
            [bodies[3].vertex_start, 0, 0, bodies[4].vertex_start + 2],
            [bodies[1].vertex_start + 5, 0, 0, bodies[2].vertex_start],
        ];
        let mut lists: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (k, p) in pairs.iter().enumerate() {
            lists[p[0] as usize].push((k as u32) << 2);
            lists[p[3] as usize].push(((k as u32) << 2) | 3);
        }
        let mut contacts: Vec<u32> = vec![0];
        for l in &lists {
            contacts.push(contacts.last().copied().unwrap_or(0) + l.len() as u32);
        }
        let entries = contacts.len() as u32;
        contacts.extend(lists.iter().flatten());
        let pair_words = contacts.len() as u32;
        for p in &pairs {
            contacts.extend_from_slice(p);
            contacts.extend_from_slice(&[0; 12]);
        }
        let layout = ContactLayout { offsets: 0, entries, pairs: pair_words, ..ContactLayout::default() };
        let vertex_mass: Vec<f32> = masses.iter().zip(&sizes).map(|(&m, &n)| m / n as f32).collect();
        let constants: Vec<[f32; 4]> = (0..sizes.len()).map(|b| [masses[b], shear[b], 0.0, vertex_mass[b]]).collect();
        let bufs = [
            storage(&ctx, "records", &records, false),
            storage(&ctx, "index", &vertex_body, false),
            storage(&ctx, "contacts", &contacts, false),
            storage(&ctx, "constants", &constants, false),
            output::<u32>(&ctx, "soft", SOFT_WORDS * sizes.len()),
            output::<u32>(&ctx, "energy", ENERGY_WORDS * sizes.len()),
        ];
        let setup = StepSoftSetup {
            bodies: sizes.len() as u32,
            vertices: n as u32,
            body_records: 2,
            vertex_body: 0,
            gravity: 9.81,
            contact: Some(layout),
            energy_test: false,
            margin: 0.0,
        };
        let kernel = StepSoft::new(&ctx);
        let strict: Vec<bool> = (0..sizes.len())
            .map(|b| {
                shear[b] == 0.0
                    || pairs.iter().any(|p| {
                        let (x, y) = (vertex_body[p[0] as usize] as usize, vertex_body[p[3] as usize] as usize);
                        let of = |k: usize| [shear[k] as f64, vertex_mass[k] as f64];
                        (x == b || y == b) && x != y && contrasting(of(x), of(y))
                    })
            })
            .collect();
        assert_eq!(strict, [true, false, false, true, true]);
        let mut rng = Rng(5);
        let mut history = vec![0u32; sizes.len()];
        let mut flagged_at: Vec<Option<(usize, u32)>> = vec![None; sizes.len()];
        for substep in 0..4 {
            // Per vertex: a share of the body's first residual, then that times its growth (the
            // diverged body's last is 150 weights).
            let share: Vec<f32> = (0..n).map(|_| 0.5 + rng.uniform_f32()).collect();
            let mut first = vec![0.0f32; n];
            let mut last = vec![0.0f32; n];
            for (b, r) in bodies.iter().enumerate() {
                let range = r.vertex_start as usize..(r.vertex_start + r.vertex_count) as usize;
                let total: f32 = share[range.clone()].iter().sum();
                let weight = masses[b] * 9.81;
                let f2 = (force[b] * weight).powi(2);
                let l2 = if b == 4 { (150.0 * weight).powi(2) } else { f2 * growth[b] };
                for v in range {
                    first[v] = f2 * share[v] / total;
                    last[v] = l2 * share[v] / total;
                }
            }
            let bad = output::<u32>(&ctx, "bad", 2 * sizes.len() + 2);
            let run = |r: &[f32], phases: &dyn Fn(&StepSoftBound) -> Vec<&Bound>| {
                let updates: Vec<[f32; 4]> = r.iter().map(|&x| [0.0, 0.0, 0.0, x]).collect();
                let updates = storage(&ctx, "updates", &updates, false);
                let b = StepSoftBuffers {
                    records: &bufs[0],
                    updates: &updates,
                    index: &bufs[1],
                    contacts: &bufs[2],
                    constants: &bufs[3],
                    soft: &bufs[4],
                    bad: &bad,
                    energy: &bufs[5],
                };
                let bound = kernel.bind(&ctx, &setup, &b);
                let mut encoder = ctx.device.create_command_encoder(&Default::default());
                {
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    for d in phases(&bound) {
                        d.record(&mut pass);
                    }
                }
                ctx.queue.submit([encoder.finish()]);
            };
            run(&first, &|b| vec![&b.first]);
            run(&last, &|b| b.end.iter().collect());
            let got: Vec<u32> = read_blocking(&ctx, &bad, 2 * sizes.len() + 2).expect("bad");
            let mut world = 0;
            let kept: Vec<u32> = read_blocking(&ctx, &bufs[4], SOFT_WORDS * sizes.len()).expect("soft");
            // Each body's own verdict, then its island's: the lowest member's stall (islands
            // {0}, {1, 2}, {3, 4} through the pairs), as the CPU's settle takes it.
            let verdicts: Vec<Option<ResidualVerdict>> = bodies
                .iter()
                .enumerate()
                .map(|(b, r)| {
                    let range = r.vertex_start as usize..(r.vertex_start + r.vertex_count) as usize;
                    let sum = |x: &[f32]| x[range.clone()].iter().map(|&v| v as f64).sum::<f64>();
                    let weight = |k: usize| masses[k] as f64 * 9.81;
                    // The heaviest weight among the body and those its pairs join it to.
                    let carried = pairs
                        .iter()
                        .map(|p| (vertex_body[p[0] as usize] as usize, vertex_body[p[3] as usize] as usize))
                        .filter_map(|(x, y)| {
                            if x == b {
                                Some(y)
                            } else if y == b {
                                Some(x)
                            } else {
                                None
                            }
                        })
                        .map(weight)
                        .fold(weight(b), f64::max);
                    residual_verdict(sum(&first), sum(&last), weight(b), carried, strict[b])
                })
                .collect();
            let island = |b: usize| match b {
                0 => 0..1,
                1 | 2 => 1..3,
                _ => 3..5,
            };
            for (b, r) in bodies.iter().enumerate() {
                let range = r.vertex_start as usize..(r.vertex_start + r.vertex_count) as usize;
                let sum = |x: &[f32]| x[range.clone()].iter().map(|&v| v as f64).sum::<f64>();
                let kept_first = f32::from_bits(kept[SOFT_WORDS * b]) as f64;
                assert!(
                    (kept_first - sum(&first)).abs() <= 1e-5 * sum(&first),
                    "body {b}: {kept_first} vs {}",
                    sum(&first)
                );
                let mut bits = 0;
                if verdicts[b] == Some(ResidualVerdict::Diverged) {
                    bits |= BAD_DIVERGED;
                }
                let stalled = island(b).any(|k| verdicts[k] == Some(ResidualVerdict::Stalled));
                history[b] = ((history[b] << 1) | u32::from(stalled)) & 31;
                if history[b].count_ones() >= SOFT_LIMIT {
                    bits |= BAD_STALLED;
                    history[b] = 0;
                }
                let want = if bits == 0 { (0, 0) } else { (u32::MAX - r.vertex_start, bits) };
                assert_eq!((got[2 * b], got[2 * b + 1]), want, "substep {substep}, body {b}");
                world |= bits;
                if bits != 0 && flagged_at[b].is_none() {
                    flagged_at[b] = Some((substep, bits));
                }
            }
            assert_eq!(got[2 * sizes.len() + 1], world, "substep {substep}: the world's word");
        }
        // The cloth stalls; bodies 1 and 2, alike, never do; body 4 diverges at once, then
        // stalls with 3, its island.
        let stalled = Some((2, BAD_STALLED));
        assert_eq!(flagged_at, [stalled, None, None, stalled, Some((0, BAD_DIVERGED))]);
    }

    /// The energy test over islands, on energies written as `step_energy` leaves them: bodies 0
    /// and 1 touch (a pair) and trade 1 J (no gain for their island); body 2 gains 10 J alone
    /// (flagged at the third substep, as EnergyGain; 2 of its 10 surface vertices held by their
    /// bound, a fifth: no clamp lock); body 3 gains as much but a pin of it moved (driven: never
    /// tested); body 4 gains nothing but has 3 of its 10 held (clamp lock at the third). The
    /// residuals stay put, so no residual flag is raised.
    #[test]
    fn flags_islands_that_gained_energy_and_clamp_locked_bodies() {
        let Some(ctx) = test_support::context() else { return };
        let count = 5usize;
        let bodies: Vec<BodyRecord> = (0..count as u32)
            .map(|b| BodyRecord { vertex_start: 10 * b, vertex_count: 10, ..Default::default() })
            .collect();
        let n = 10 * count;
        let vertex_body: Vec<u32> = (0..n as u32).map(|v| v / 10).collect();
        let mut records: Vec<[f32; 4]> = vec![[0.0; 4]; 2];
        records.extend_from_slice(bytemuck::cast_slice(&bodies));
        // One pair from vertex 0 (body 0) to vertex 15 (body 1).
        let mut contacts: Vec<u32> = (0..=n as u32).map(|v| u32::from(v > 0) + u32::from(v > 15)).collect();
        let entries = contacts.len() as u32;
        contacts.extend_from_slice(&[0, 3]);
        let pairs = contacts.len() as u32;
        contacts.extend_from_slice(&[0, 0, 0, 15]);
        contacts.extend_from_slice(&[0; 12]);
        let layout = ContactLayout { offsets: 0, entries, pairs, ..ContactLayout::default() };
        let constants = vec![[1.0f32, 1e5, 10.0, 0.0]; count];
        let held = |v: usize| matches!(v, 20 | 21 | 40 | 41 | 42);
        let updates: Vec<[f32; 4]> = (0..n).map(|v| [0.0, 0.0, 0.0, if held(v) { -1.0 } else { 1.0 }]).collect();
        let bufs = [
            storage(&ctx, "records", &records, false),
            storage(&ctx, "updates", &updates, false),
            storage(&ctx, "index", &vertex_body, false),
            storage(&ctx, "contacts", &contacts, false),
            storage(&ctx, "constants", &constants, false),
            output::<u32>(&ctx, "soft", SOFT_WORDS * count),
            output::<u32>(&ctx, "energy", ENERGY_WORDS * count),
        ];
        let setup = StepSoftSetup {
            bodies: count as u32,
            vertices: n as u32,
            body_records: 2,
            vertex_body: 0,
            gravity: 9.81,
            contact: Some(layout),
            energy_test: true,
            margin: 0.0,
        };
        let kernel = StepSoft::new(&ctx);
        // Per body: energies at the start and end (kinetic + elastic, gravitational), height.
        let gains = [1.0f32, -1.0, 10.0, 10.0, 0.0];
        let mut flagged_at = vec![None; count];
        for substep in 0..4 {
            let mut words = vec![0u32; ENERGY_WORDS * count];
            for b in 0..count {
                let w = &mut words[ENERGY_WORDS * b..ENERGY_WORDS * (b + 1)];
                let at = |e: f32, p: f32| [e.to_bits(), p.to_bits()];
                w[..2].copy_from_slice(&at(5.0, 2.0));
                w[2..4].copy_from_slice(&at(5.0 + gains[b], 2.0));
                w[4..6].copy_from_slice(&[0.0f32.to_bits(), 0.1f32.to_bits()]);
                w[DRIVEN] = u32::from(b == 3);
            }
            ctx.queue.write_buffer(&bufs[6], 0, bytemuck::cast_slice(&words));
            let bad = output::<u32>(&ctx, "bad", 2 * count + 2);
            let b = StepSoftBuffers {
                records: &bufs[0],
                updates: &bufs[1],
                index: &bufs[2],
                contacts: &bufs[3],
                constants: &bufs[4],
                soft: &bufs[5],
                bad: &bad,
                energy: &bufs[6],
            };
            let bound = kernel.bind(&ctx, &setup, &b);
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                for d in std::iter::once(&bound.first).chain(&bound.end) {
                    d.record(&mut pass);
                }
            }
            ctx.queue.submit([encoder.finish()]);
            let got: Vec<u32> = read_blocking(&ctx, &bad, 2 * count + 2).expect("bad");
            let labels: Vec<u32> = read_blocking::<u32>(&ctx, &bufs[6], ENERGY_WORDS * count)
                .expect("energy")
                .chunks(ENERGY_WORDS)
                .map(|w| w[7])
                .collect();
            assert_eq!(labels, [0, 0, 2, 3, 4], "island labels");
            for b in 0..count {
                if got[2 * b + 1] != 0 && flagged_at[b].is_none() {
                    flagged_at[b] = Some((substep, got[2 * b + 1], u32::MAX - got[2 * b]));
                }
            }
        }
        let expected = [None, None, Some((2, BAD_ENERGY, 20)), None, Some((2, BAD_CLAMP_LOCK, 40))];
        assert_eq!(flagged_at, expected);
    }
}
