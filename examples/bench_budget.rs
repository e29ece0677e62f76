//! Benchmark: the frame-budgeted runtime with its fallback (issues 9 and 31).
//!
//! ```text
//! cargo run --release --example bench_budget [-- --json] [--frames N] [--scene NAME] [--budgets 4,8,16] [--threads N]
//! ```
//!
//! Every scene runs on `--threads` worker threads (default 2, the count issue 31's acceptance
//! names; 0 lets `StepConfig` pick, which takes one below 2,000 vertices).
//!
//! Each scene runs with a 4, 8 and 16 ms budget (`StepConfig::budget_ms`): the planner picks
//! each step's sweep count from the measured cost per sweep, the safety check sends unsafe
//! islands to the augmented-Lagrangian fallback, which stops at the budget's end with its
//! current (intersection-free) iterate. Per scene and budget: median, 99th-percentile and
//! largest step time (the largest without the first frame, whose cost the planner has not
//! measured yet), the share of steps over budget, the share of frames in which an island fell
//! back and was truncated, the planned sweep count, the least share of a step any island
//! travelled, the largest lag of an island's clock behind the world's and the simulated time
//! dropped (`IslandReport::lag`, `time_dropped`), the mean time of each phase (prediction,
//! detection, sweeps with their finish, safety check, fallback: `StepReport::phases`),
//! intersections found by the exact check after every frame (must be 0), and the safety tests
//! that sent islands to the fallback, with the frames in which each fired.
//!
//! Scenes: the calm `drop_cube`, `cloth_drape_sphere`, `cloth_on_table_edge` (a cloth over a
//! box's edges and corner), `stack_soft_cubes` and `cloth_self_fold`, the four adversarial `fallback_*` scenes of `tests/fallback.rs`, the
//! `projectile_wall` (a 60 m/s ball) and the 40k-vertex `pile_soft_box`. Frames are capped by
//! `--frames` (default 120).

use pliant::io::bundled::bundled_scene;
use pliant::io::parse_scene;

const SCENES: &[&str] = &[
    "drop_cube",
    "cloth_drape_sphere",
    "cloth_on_table_edge",
    "stack_soft_cubes",
    "cloth_self_fold",
    "fallback_projectile_cloth",
    "fallback_stiff_on_soft",
    "fallback_weight_on_sheet",
    "fallback_cloth_gap",
    "projectile_wall",
    "pile_soft_box",
];

struct Row {
    scene: String,
    budget_ms: f64,
    threads: usize,
    vertices: usize,
    elements: usize,
    frames: usize,
    iterations: f64,
    ms_per_step: f64,
    p50_ms: f64,
    p99_ms: f64,
    /// Largest step time after the first frame.
    max_ms: f64,
    over_budget_share: f64,
    fallback_share: f64,
    truncated_share: f64,
    least_travelled: f64,
    largest_lag_ms: f64,
    time_dropped_ms: f64,
    /// Mean time per step of each phase (`StepReport::phases`).
    phases: pliant::PhaseTimes,
    /// Why islands fell back: the safety tests that fired (holds and the policy left out),
    /// with the frames in which each did.
    reasons: std::collections::BTreeMap<String, usize>,
    intersections: usize,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn run(name: &str, budget_ms: f64, frames_cap: u32, threads_wanted: usize) -> Row {
    let json = bundled_scene(name).unwrap_or_else(|| panic!("no bundled scene {name}"));
    let mut scene = parse_scene(json).expect("scene parses");
    scene.solver.budget_ms = Some(budget_ms);
    scene.solver.threads = threads_wanted;
    let frames = scene.frames.min(frames_cap) as usize;
    let mut loaded = scene.build(std::path::Path::new("examples/scenes")).expect("scene builds");
    let world = &mut loaded.world;
    world.sync();
    let (vertices, elements) = (world.vertex_count(), world.element_count());
    let (mut ms, mut sweeps, mut fell, mut truncated, mut intersections, mut threads) = (Vec::new(), 0u64, 0, 0, 0, 1);
    let (mut least_travelled, mut largest_lag, mut dropped) = (1.0f64, 0.0f64, 0.0f64);
    let mut phases = pliant::PhaseTimes::default();
    let mut reasons = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..frames {
        let r = world.step();
        ms.push(r.wall_ms);
        sweeps += r.iterations as u64 * r.substeps as u64;
        threads = r.threads;
        fell += usize::from(r.fallbacks > 0);
        truncated += usize::from(r.islands.iter().any(|i| i.path == pliant::StepPath::FallbackTruncated));
        let p = &r.phases;
        for (sum, t) in [
            (&mut phases.predict, p.predict),
            (&mut phases.detect, p.detect),
            (&mut phases.solve, p.solve),
            (&mut phases.finish, p.finish),
            (&mut phases.check, p.check),
            (&mut phases.fallback, p.fallback),
        ] {
            *sum += t / frames as f64;
        }
        let mut fired: Vec<String> = r
            .islands
            .iter()
            .filter_map(|i| i.reason)
            .filter(|r| !matches!(r, pliant::FallbackReason::Hold | pliant::FallbackReason::Always))
            .map(|r| format!("{r:?}"))
            .collect();
        fired.sort();
        fired.dedup();
        for f in fired {
            *reasons.entry(f).or_default() += 1;
        }
        for i in &r.islands {
            least_travelled = least_travelled.min(i.travelled);
            largest_lag = largest_lag.max(i.lag);
            dropped += i.time_dropped;
        }
        intersections += world.find_intersections().len();
    }
    let mean = ms.iter().sum::<f64>() / frames as f64;
    let over = ms.iter().filter(|&&m| m > budget_ms).count();
    let max_ms = ms.iter().skip(1).copied().fold(0.0, f64::max);
    ms.sort_by(f64::total_cmp);
    Row {
        scene: name.to_owned(),
        budget_ms,
        threads,
        vertices,
        elements,
        frames,
        iterations: sweeps as f64 / frames as f64,
        ms_per_step: mean,
        p50_ms: percentile(&ms, 0.5),
        p99_ms: percentile(&ms, 0.99),
        max_ms,
        over_budget_share: over as f64 / frames as f64,
        fallback_share: fell as f64 / frames as f64,
        truncated_share: truncated as f64 / frames as f64,
        least_travelled,
        largest_lag_ms: largest_lag * 1e3,
        time_dropped_ms: dropped * 1e3,
        phases,
        reasons,
        intersections,
    }
}

fn main() {
    let (mut json, mut frames, mut only, mut budgets) = (false, 120u32, None::<String>, vec![4.0, 8.0, 16.0]);
    // Issue 31's acceptance is on two threads; below 2,000 vertices the automatic count (0)
    // would take one.
    let mut threads = 2usize;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = true,
            "--frames" => frames = it.next().and_then(|v| v.parse().ok()).unwrap_or(frames),
            "--scene" => only = it.next(),
            "--threads" => threads = it.next().and_then(|v| v.parse().ok()).unwrap_or(threads),
            "--budgets" => {
                budgets = it.next().map(|v| v.split(',').filter_map(|b| b.parse().ok()).collect()).unwrap_or(budgets)
            }
            other => {
                eprintln!("unknown argument {other}; use --json, --frames N, --scene NAME, --budgets A,B, --threads N");
                std::process::exit(2);
            }
        }
    }
    if !json {
        println!(
            "{:<26} {:>6} {:>8} {:>8} {:>6} {:>8} {:>8} {:>8} {:>8} {:>7} {:>9} {:>9} {:>9} {:>8} {:>9} {:>29} {:>13}  fell back for (frames)",
            "scene",
            "budget",
            "vertices",
            "elements",
            "sweeps",
            "ms mean",
            "p50 ms",
            "p99 ms",
            "max ms",
            "over",
            "fell back",
            "truncated",
            "travelled",
            "lag ms",
            "dropped",
            "ms pred/det/solve/chk/fb",
            "intersections"
        );
    }
    for name in SCENES.iter().filter(|n| only.as_deref().is_none_or(|o| o == **n)) {
        for &b in &budgets {
            let r = run(name, b, frames, threads);
            let ns = r.ms_per_step * 1e6 / (r.vertices as f64 * r.iterations.max(1.0));
            if json {
                println!(
                    "{{\"bench\":\"budget\",\"scene\":\"{}\",\"backend\":\"cpu\",\"threads\":{},\"vertices\":{},\"elements\":{},\"frames\":{},\"iterations\":{:.1},\"ms_per_step\":{:.3},\"ns_per_vertex_iteration\":{:.2},\"budget_ms\":{},\"p50_ms\":{:.3},\"p99_ms\":{:.3},\"max_ms\":{:.3},\"over_budget_share\":{:.3},\"fallback_share\":{:.3},\"truncated_share\":{:.3},\"least_travelled\":{:.3},\"largest_lag_ms\":{:.3},\"time_dropped_ms\":{:.3},\"predict_ms\":{:.3},\"detect_ms\":{:.3},\"solve_ms\":{:.3},\"finish_ms\":{:.3},\"check_ms\":{:.3},\"fallback_ms\":{:.3},\"reasons\":{{{}}},\"intersections\":{}}}",
                    r.scene,
                    r.threads,
                    r.vertices,
                    r.elements,
                    r.frames,
                    r.iterations,
                    r.ms_per_step,
                    ns,
                    r.budget_ms,
                    r.p50_ms,
                    r.p99_ms,
                    r.max_ms,
                    r.over_budget_share,
                    r.fallback_share,
                    r.truncated_share,
                    r.least_travelled,
                    r.largest_lag_ms,
                    r.time_dropped_ms,
                    r.phases.predict,
                    r.phases.detect,
                    r.phases.solve,
                    r.phases.finish,
                    r.phases.check,
                    r.phases.fallback,
                    r.reasons.iter().map(|(k, n)| format!("\"{k}\":{n}")).collect::<Vec<_>>().join(","),
                    r.intersections
                );
            } else {
                println!(
                    "{:<26} {:>6} {:>8} {:>8} {:>6.1} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>6.0}% {:>8.0}% {:>8.0}% {:>9.3} {:>8.2} {:>9.2} {:>29} {:>13}  {}",
                    r.scene,
                    r.budget_ms,
                    r.vertices,
                    r.elements,
                    r.iterations,
                    r.ms_per_step,
                    r.p50_ms,
                    r.p99_ms,
                    r.max_ms,
                    100.0 * r.over_budget_share,
                    100.0 * r.fallback_share,
                    100.0 * r.truncated_share,
                    r.least_travelled,
                    r.largest_lag_ms,
                    r.time_dropped_ms,
                    format!(
                        "{:.1}/{:.1}/{:.1}/{:.1}/{:.1}",
                        r.phases.predict,
                        r.phases.detect,
                        r.phases.solve + r.phases.finish,
                        r.phases.check,
                        r.phases.fallback
                    ),
                    r.intersections,
                    r.reasons.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ")
                );
            }
        }
    }
}
