//! Stiffness sweep (docs/scenes.md 8): E = 1e4 … 1e9 Pa × ν ∈ {0.3, 0.49} × {stable neo-Hookean,
//! StVK}, a cube dropped on a corner and a clamped beam, 120 frames at 10 sweeps each.
//!
//! Pass, every run: no NaN, no explosion (no vertex faster than free fall from the highest start
//! point plus 1 m/s), nothing more than 1 mm below the ground.

mod common;

use pliant::io::bundled::bundled_scene;
use pliant::io::{RunOptions, expand_sweep, run_scene};

// The 24 runs in four tests of six, so that they run side by side (each run is small enough
// to step on one thread).
#[test]
fn every_stiffness_stays_finite_and_bounded_runs_1_to_6() {
    runs_stay_finite_and_bounded(0..6);
}

#[test]
fn every_stiffness_stays_finite_and_bounded_runs_7_to_12() {
    runs_stay_finite_and_bounded(6..12);
}

#[test]
fn every_stiffness_stays_finite_and_bounded_runs_13_to_18() {
    runs_stay_finite_and_bounded(12..18);
}

#[test]
fn every_stiffness_stays_finite_and_bounded_runs_19_to_24() {
    runs_stay_finite_and_bounded(18..24);
}

fn runs_stay_finite_and_bounded(runs: std::ops::Range<usize>) {
    let variants = expand_sweep(bundled_scene("stiffness_sweep").unwrap()).unwrap();
    assert_eq!(variants.len(), 24);
    for v in &variants[runs] {
        // With the fallback on (the default): at 10 sweeps VBD cannot hold the stiffest
        // nearly incompressible beams, whose energy then grows and is caught by the check.
        let scene = v.scene.clone();
        let mut loaded = scene.build(std::path::Path::new("examples/scenes")).unwrap();
        let top = loaded.world.positions().iter().map(|p| p.y).fold(f32::MIN, f32::max) as f64;
        let bound = (2.0 * 9.81 * top).sqrt() + 1.0;
        let run = run_scene(&mut loaded, RunOptions::default()).unwrap();
        for f in &run.frames {
            assert!(!f.nan, "{}: NaN at frame {}", v.label, f.frame);
            assert!(
                (f.max_speed as f64) < bound,
                "{}: {} m/s > {bound} m/s at frame {}",
                v.label,
                f.max_speed,
                f.frame
            );
            assert!(f.min_obstacle_distance.unwrap() > -1e-3, "{}: penetration at frame {}", v.label, f.frame);
            assert!(f.energy_total.is_finite());
        }
    }
}
