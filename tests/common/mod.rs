//! Shared helpers for integration tests.

#![allow(dead_code)]
#![allow(clippy::needless_range_loop)]

pub mod static_solve;

use pliant::io::bundled::bundled_scene;
use pliant::io::{LoadedScene, RunOptions, RunResult, parse_scene, run_scene};

/// Loads a bundled scene by name.
pub fn load(name: &str) -> LoadedScene {
    let json = bundled_scene(name).unwrap_or_else(|| panic!("no bundled scene {name}"));
    parse_scene(json).expect("scene parses").build(std::path::Path::new("examples/scenes")).expect("scene builds")
}

/// Runs a bundled scene to completion (optionally fewer frames).
pub fn run(name: &str, frames: Option<u32>) -> (LoadedScene, RunResult) {
    let mut loaded = load(name);
    let result = run_scene(&mut loaded, RunOptions { frames, ..RunOptions::default() }).expect("scene runs");
    (loaded, result)
}

/// Asserts `|a − b| ≤ tol·|b|`.
pub fn assert_rel(a: f64, b: f64, tol: f64, what: &str) {
    assert!(
        (a - b).abs() <= tol * b.abs(),
        "{what}: {a} vs {b} (relative error {:.3}%, allowed {:.1}%)",
        100.0 * (a / b - 1.0),
        100.0 * tol
    );
}

/// Least-squares `s(t) = c0 + c1 t + c2 t²`; returns `[c0, c1, c2]`.
pub fn quadratic_fit(t: &[f64], s: &[f64]) -> [f64; 3] {
    let mut a = [[0.0f64; 4]; 3];
    for (&ti, &si) in t.iter().zip(s) {
        let p = [1.0, ti, ti * ti];
        for r in 0..3 {
            for c in 0..3 {
                a[r][c] += p[r] * p[c];
            }
            a[r][3] += p[r] * si;
        }
    }
    for c in 0..3 {
        let piv = (c..3).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs())).unwrap();
        a.swap(c, piv);
        for r in 0..3 {
            if r != c {
                let f = a[r][c] / a[c][c];
                for k in 0..4 {
                    a[r][k] -= f * a[c][k];
                }
            }
        }
    }
    [a[0][3] / a[0][0], a[1][3] / a[1][1], a[2][3] / a[2][2]]
}

/// Where a GPU test finds no adapter: a failure when `PLIANT_REQUIRE_GPU=1` (CI, on lavapipe),
/// otherwise a note that the test is skipped.
pub fn no_gpu(e: &dyn std::fmt::Display) {
    if std::env::var("PLIANT_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("PLIANT_REQUIRE_GPU=1 but no GPU: {e}");
    }
    eprintln!("skipping a GPU test: {e}");
}

/// Angular momentum of the world's vertices about their centre of mass \[kg m²/s\], in f64.
pub fn angular_momentum(w: &pliant::World) -> glam::DVec3 {
    let (x, v, m) = (w.positions(), w.velocities(), w.vertex_masses());
    let total: f64 = m.iter().map(|&m| m as f64).sum();
    let c = x.iter().zip(m).fold(glam::DVec3::ZERO, |s, (p, &m)| s + p.truncate().as_dvec3() * m as f64) / total;
    x.iter().zip(v).zip(m).fold(glam::DVec3::ZERO, |l, ((p, q), &m)| {
        l + (p.truncate().as_dvec3() - c).cross(q.truncate().as_dvec3()) * m as f64
    })
}
