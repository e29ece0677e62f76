//! Pliant beside rapier 0.36's own soft bodies, on the same scenes, in one process, at every
//! resolution, with comparisons at equal cost and at equal accuracy.
//!
//! ```text
//! cargo run --release --example bench_vs_rapier [-- --json] [--quick] [--only SCENE] [--threads N] [--max-seconds S]
//! ```
//!
//! Scenes, settings and metrics are `examples/common/vs_rapier.rs`'s (shared with `report`,
//! which runs the headline resolution with a finer sweep and writes BENCHMARKS.md's headline
//! table). Here: the cantilever at 8×2×2, 26×3×3 and 54×6×6 cells and the drop cube at 6³, 11³
//! and 21³ (`--quick`: the two coarser of each), each with Pliant's default, Pliant's fast
//! settings and rapier's constraints solver at 1, 4 (its default) and 16 iterations, with and
//! without linear damping 2/s, and rapier's FEM solver at its default; then, for Pliant's
//! default (the cantilever: also local–global at its default) and for rapier's default, the
//! other engine's setting nearest in ms per step and its cheapest setting at least as accurate
//! among those tried. `--only cantilever|drop_cube|projectile` runs one scene; `--threads`
//! (default 2) is every row's thread count; a run past `--max-seconds` (default 120) of wall time
//! stops early, says so, and takes part in no comparison.

#[path = "common/vs_rapier.rs"]
mod vs_rapier;

use vs_rapier::{
    CANTILEVER_FRAMES, DROP_FRAMES, Row, Setting, Solver, StaticCache, comparisons, measure_cantilever,
    measure_drop_cube, measure_projectile, pick,
};

/// rapier's settings tried on a scene: the constraints solver at 1, 4 and 16 iterations, with
/// and without linear damping 2/s, and the FEM solver at its default.
fn rapier_settings(threads: usize) -> Vec<Setting> {
    vs_rapier::rapier_settings(&[1, 4, 16], &[1, 4, 16], threads)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (mut json, mut quick, mut only, mut threads, mut max_seconds) = (false, false, String::new(), 2, 120.0);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = true,
            "--quick" => quick = true,
            "--only" => only = it.next().ok_or("--only needs cantilever, drop_cube or projectile")?,
            "--threads" => threads = it.next().and_then(|s| s.parse().ok()).ok_or("--threads needs a count")?,
            "--max-seconds" => {
                max_seconds = it.next().and_then(|s| s.parse().ok()).ok_or("--max-seconds needs a number")?
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let print = |r: &Row| {
        if json {
            println!("{}", r.json("bench_vs_rapier"));
        } else {
            println!("{}", r.line());
        }
    };
    let wants = |scene: &str| only.is_empty() || scene.starts_with(only.as_str());
    let mut statics = StaticCache::new();
    let t = threads;
    let pliant_default = Setting::pliant_default(t);
    let rapier_default = Setting::rapier_default(Solver::RapierConstraints, t);

    if wants("cantilever") {
        let grids: &[[u32; 3]] = &[[8, 2, 2], [26, 3, 3], [54, 6, 6]];
        let lg_default = Setting::local_global(pliant::LocalGlobalSettings::default().iterations, t);
        for &cells in if quick { &grids[..2] } else { grids } {
            let mut settings = vec![pliant_default, Setting::local_global(4, t), lg_default, Setting::vbd_tuned(20, t)];
            settings.extend(rapier_settings(t));
            let mut rows = Vec::new();
            for s in &settings {
                let r = measure_cantilever(s, cells, max_seconds, &mut statics)?;
                print(&r);
                rows.push(r);
            }
            let refs = [
                pick(&rows, &pliant_default, "Pliant's default"),
                pick(&rows, &lg_default, "Pliant's local–global default"),
                pick(&rows, &rapier_default, "rapier's default"),
            ];
            let named: Vec<(&Row, &str)> = refs.iter().map(|r| (r, r.role.as_str())).collect();
            comparisons(&rows, &named, CANTILEVER_FRAMES).iter().for_each(print);
        }
    }

    if wants("drop_cube") {
        let sizes: &[u32] = &[6, 11, 21];
        for &cells in if quick { &sizes[..2] } else { sizes } {
            let mut settings = vec![pliant_default, Setting::vbd(5, t), Setting::vbd(2, t), Setting::vbd(1, t)];
            settings.extend(rapier_settings(t));
            let mut rows = Vec::new();
            for s in &settings {
                let r = measure_drop_cube(s, cells, max_seconds, &mut statics)?;
                print(&r);
                rows.push(r);
            }
            let refs =
                [pick(&rows, &pliant_default, "Pliant's default"), pick(&rows, &rapier_default, "rapier's default")];
            let named: Vec<(&Row, &str)> = refs.iter().map(|r| (r, r.role.as_str())).collect();
            comparisons(&rows, &named, DROP_FRAMES).iter().for_each(print);
        }
    }

    if wants("projectile") {
        for s in [pliant_default, rapier_default, Setting::rapier_default(Solver::RapierFem, t)] {
            print(&measure_projectile(&s, max_seconds)?);
        }
    }
    Ok(())
}
