//! Cantilever (docs/scenes.md 1–3) at the finest resolution CI affords, 60×6×6 cells (2,989
//! vertices, 12,960 tets): 2 m × 0.2 m × 0.2 m, E = 1.2e8 Pa, ν = 0, ρ = 1000 kg/m³, clamped at
//! x = 0.
//!
//! Pass: the settled tip deflection (mean of the last 60 frames) is within 2 % of the converged
//! static solve of the same mesh (f64 Newton, `tests/common/static_solve.rs`) and within 15 % of
//! Euler–Bernoulli `qL⁴/(8EI)` = 0.0491 m; the beam is at rest and no element inverted. The
//! static solve of this mesh is itself 8 % below Euler–Bernoulli (linear tets are stiff in
//! bending); coarser meshes are 17 % (40×4×4) and 45 % (20×2×2) below.
//!
//! VBD needs 20 substeps of 10 sweeps per frame, the inertia initialisation and linear damping
//! to settle this slender stiff beam; `BENCHMARKS.md` records the cost and the failures at one
//! step per frame.

mod common;

const EULER_BERNOULLI: f64 = 0.0491;

#[test]
fn cantilever_settles_on_the_static_solution() {
    let static_tip = common::static_solve::cantilever_static_tip(3);
    assert!((static_tip / EULER_BERNOULLI - 1.0).abs() < 0.15, "mesh too coarse: static tip {static_tip}");
    let (loaded, run) = common::run("cantilever_ci", None);
    let frames = &run.frames;
    let last: Vec<f64> = frames[frames.len() - 60..].iter().map(|f| -f.probes["tip"][1]).collect();
    let tip = last.iter().sum::<f64>() / last.len() as f64;
    common::assert_rel(tip, static_tip, 0.02, "tip vs static solve");
    common::assert_rel(tip, EULER_BERNOULLI, 0.15, "tip vs Euler-Bernoulli");
    // At rest (docs/scenes.md: over the last 0.5 s): the tip moves less than 0.01 mm.
    let rest = &last[30..];
    let spread =
        rest.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b)) - rest.iter().fold(f64::INFINITY, |a, &b| a.min(b));
    assert!(spread < 1e-5, "tip still moving: spread {spread} m");
    assert!(frames.iter().all(|f| !f.nan));
    // No inverted element.
    let j = loaded.world.min_volume_ratio().expect("tets");
    assert!(j > 0.5, "inverted or crushed tet: J = {j}");
}
