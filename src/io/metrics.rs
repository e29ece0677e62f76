//! Per-frame metrics and the run summary, as written to `metrics.json`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::runtime::{Backend, Energies};

/// One frame's measurements.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FrameMetrics {
    /// Frame number (1 = after the first step).
    pub frame: u64,
    /// Simulated time \[s\].
    pub time: f64,
    /// Wall time from the step's call until its state was on the host \[ms\] (on the CPU the
    /// step itself; on the GPU the frame's GPU time and readback: the runner waits for each).
    pub step_ms: f64,
    /// The calling thread's time in `step()` \[ms\] (on the GPU: recording and handing over
    /// the frame).
    pub game_thread_ms: f64,
    /// Where the step ran.
    pub backend: Backend,
    /// VBD sweeps per substep.
    pub iterations: u32,
    /// Substeps.
    pub substeps: u32,
    /// Force residual of the last sweep \[N\].
    pub residual: f32,
    /// Energies \[J\].
    pub energy: Energies,
    /// Total energy \[J\].
    pub energy_total: f64,
    /// Largest vertex speed \[m/s\].
    pub max_speed: f32,
    /// Smallest signed vertex–obstacle distance \[m\] (`null` without obstacles).
    pub min_obstacle_distance: Option<f32>,
    /// Deepest vertex penetration into any obstacle \[m\] (0 if none).
    pub ground_penetration_max: f32,
    /// Vertices in contact.
    pub contact_vertices: u32,
    /// Surface contact pairs (body–body and self) at the last detection.
    pub contact_pairs: u32,
    /// Smallest distance between surface primitives that could touch \[m\] (`null` when none
    /// was within the contact search radius).
    pub min_distance: Option<f32>,
    /// Largest distance of a kinematic vertex from its target \[m\].
    pub pin_lag: f32,
    /// Intersecting triangle pairs and vertices inside obstacles after the frame (`null` when
    /// the check was not run).
    pub intersections: Option<u32>,
    /// A non-finite value was detected and rolled back this frame.
    pub nan: bool,
    /// Bodies rolled back this frame.
    pub rolled_back: Vec<String>,
    /// Probe values by name.
    pub probes: BTreeMap<String, Vec<f64>>,
    /// Islands that fell back to the augmented-Lagrangian step this frame.
    pub fallbacks: u32,
    /// Every island of every substep: path (`fast`, `fallback`, `fallback_truncated`,
    /// `restored`), why, iterations, time, residual.
    pub islands: Vec<crate::runtime::IslandReport>,
}

/// Percentiles and totals of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunSummary {
    /// Scene name.
    pub scene: String,
    /// Frames run.
    pub frames: u64,
    /// Vertices.
    pub vertices: usize,
    /// Elements (tets + triangles + hinges).
    pub elements: usize,
    /// Sweeps per substep.
    pub iterations: u32,
    /// Substeps per frame.
    pub substeps: u32,
    /// Worker threads.
    pub threads: usize,
    /// Mean step time \[ms\].
    pub ms_per_step: f64,
    /// Median step time \[ms\].
    pub step_ms_p50: f64,
    /// 95th percentile \[ms\].
    pub step_ms_p95: f64,
    /// 99th percentile \[ms\].
    pub step_ms_p99: f64,
    /// Mean ns per vertex per sweep.
    pub ns_per_vertex_iteration: f64,
    /// Mean and largest time of the calling thread in `step()` \[ms\].
    pub game_thread_ms: f64,
    /// See `game_thread_ms`.
    pub game_thread_ms_max: f64,
    /// Where the last frame ran.
    pub backend: Backend,
    /// Frames with a rollback.
    pub nan_frames: u64,
    /// Largest speed over the run \[m/s\].
    pub max_speed: f32,
    /// Smallest obstacle distance over the run \[m\].
    pub min_obstacle_distance: Option<f32>,
    /// Smallest surface-pair distance over the run \[m\].
    pub min_distance: Option<f32>,
    /// Largest pin lag over the run \[m\].
    pub pin_lag_max: f32,
    /// Frames with at least one intersection (`null` when the check was not run).
    pub intersecting_frames: Option<u64>,
    /// Largest single-frame total-energy increase over the run \[J\].
    pub energy_gain_max: f64,
    /// Kinetic energy at the last frame \[J\].
    pub final_kinetic_energy: f64,
    /// Probe values at the last frame.
    pub final_probes: BTreeMap<String, Vec<f64>>,
    /// Frames in which some island fell back.
    pub fallback_frames: u64,
    /// `fallback_frames / frames`.
    pub fallback_share: f64,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let k = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[k]
}

impl RunSummary {
    /// Summarises frames.
    pub fn from_frames(scene: &str, vertices: usize, elements: usize, threads: usize, frames: &[FrameMetrics]) -> Self {
        let mut ms: Vec<f64> = frames.iter().map(|f| f.step_ms).collect();
        ms.sort_by(f64::total_cmp);
        let mean = if ms.is_empty() { 0.0 } else { ms.iter().sum::<f64>() / ms.len() as f64 };
        let (iterations, substeps) = frames.last().map_or((0, 0), |f| (f.iterations, f.substeps));
        let sweeps = vertices as f64 * iterations as f64 * substeps as f64;
        Self {
            scene: scene.to_owned(),
            frames: frames.len() as u64,
            vertices,
            elements,
            iterations,
            substeps,
            threads,
            ms_per_step: mean,
            step_ms_p50: percentile(&ms, 0.5),
            step_ms_p95: percentile(&ms, 0.95),
            step_ms_p99: percentile(&ms, 0.99),
            ns_per_vertex_iteration: if sweeps > 0.0 { mean * 1e6 / sweeps } else { 0.0 },
            game_thread_ms: frames.iter().map(|f| f.game_thread_ms).sum::<f64>() / frames.len().max(1) as f64,
            game_thread_ms_max: frames.iter().map(|f| f.game_thread_ms).fold(0.0, f64::max),
            backend: frames.last().map_or(Backend::Cpu, |f| f.backend),
            nan_frames: frames.iter().filter(|f| f.nan).count() as u64,
            max_speed: frames.iter().map(|f| f.max_speed).fold(0.0, f32::max),
            min_obstacle_distance: frames.iter().filter_map(|f| f.min_obstacle_distance).reduce(f32::min),
            min_distance: frames.iter().filter_map(|f| f.min_distance).reduce(f32::min),
            pin_lag_max: frames.iter().map(|f| f.pin_lag).fold(0.0, f32::max),
            intersecting_frames: frames
                .iter()
                .map(|f| f.intersections.map(|n| (n > 0) as u64))
                .try_fold(0, |acc, k| k.map(|k| acc + k)),
            energy_gain_max: frames.windows(2).map(|w| w[1].energy_total - w[0].energy_total).fold(0.0, f64::max),
            final_kinetic_energy: frames.last().map_or(0.0, |f| f.energy.kinetic),
            final_probes: frames.last().map(|f| f.probes.clone()).unwrap_or_default(),
            fallback_frames: frames.iter().filter(|f| f.fallbacks > 0).count() as u64,
            fallback_share: frames.iter().filter(|f| f.fallbacks > 0).count() as f64 / frames.len().max(1) as f64,
        }
    }
}
