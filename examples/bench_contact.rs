//! Benchmark: body–body and self contact on the CPU VBD path.
//!
//! ```text
//! cargo run --release --example bench_contact [-- --json] [--frames N] [--scene NAME] [--threads N]
//! ```
//!
//! 1. `stack_soft_cubes`: four 0.2 m cubes of 8³ cells (2,916 vertices, 12,288 tets) stacked on
//!    the ground, the scene's 30 sweeps per step.
//! 2. `cloth_100x100_self`: a 1 m cloth of 100×100 cells (10,201 vertices, 20,000 triangles)
//!    dropped over a sphere so it folds onto itself, 10 sweeps, dt = 1/60, self contact on.
//!
//! Each runs with 1 and 2 threads. The clock covers whole steps (detection, CCD advance,
//! sweeps); the first quarter of the frames is warm-up and not timed. Accuracy columns: the
//! intersection check over the final state (must be 0), the closest surface pair and the mean
//! number of contact pairs.

use std::time::Instant;

use pliant::io::bundled::bundled_scene;
use pliant::io::{LoadedScene, parse_scene};

fn cloth_scene(frames: u32) -> String {
    format!(
        r#"{{ "version": 1, "name": "cloth_100x100_self", "frames": {frames},
  "solver": {{ "iterations": 10 }},
  "materials": {{ "fabric": {{ "model": "cloth", "E": 2e6, "nu": 0.3, "rho": 400, "thickness": 0.0005 }} }},
  "bodies": [{{ "name": "cloth", "material": "fabric",
               "generator": {{ "type": "cloth_grid", "size": [1, 1], "cells": [100, 100] }},
               "translation": [0, 0.35, 0], "friction": 0.3 }}],
  "obstacles": [{{ "type": "sphere", "center": [0, 0.15, 0], "radius": 0.15, "friction": 0.3 }},
                {{ "type": "plane", "normal": [0, 1, 0], "offset": 0, "friction": 0.3 }}] }}"#
    )
}

fn load(json: &str, threads: usize) -> LoadedScene {
    let mut scene = parse_scene(json).expect("scene parses");
    scene.solver.threads = threads;
    scene.build(std::path::Path::new("examples/scenes")).expect("scene builds")
}

fn main() {
    let mut json = false;
    let mut frames = 120u32;
    let mut only: Option<String> = None;
    let mut thread_counts = vec![1, 2];
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = true,
            "--frames" => frames = it.next().and_then(|v| v.parse().ok()).unwrap_or(frames),
            "--scene" => only = it.next(),
            "--threads" => {
                if let Some(t) = it.next().and_then(|v| v.parse().ok()) {
                    thread_counts = vec![t];
                }
            }
            other => {
                eprintln!("unknown argument {other}; use --json, --frames N, --scene NAME, --threads N");
                std::process::exit(2);
            }
        }
    }
    let stack = bundled_scene("stack_soft_cubes").expect("bundled scene").to_owned();
    let cloth = cloth_scene(frames);
    if !json {
        println!(
            "{:<20} {:>7} {:>8} {:>8} {:>5} {:>10} {:>10} {:>8} {:>12} {:>13}",
            "scene",
            "threads",
            "vertices",
            "elements",
            "iter",
            "ms/step",
            "ns/v-it",
            "pairs",
            "min dist m",
            "intersections"
        );
    }
    for (name, src) in [("stack_soft_cubes", &stack), ("cloth_100x100_self", &cloth)] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        for &threads in &thread_counts {
            let mut loaded = load(src, threads);
            let warm = frames / 4;
            let (mut ms, mut pairs, mut min_d) = (0.0f64, 0u64, f32::INFINITY);
            let mut iterations = 0;
            for f in 0..frames {
                let t = Instant::now();
                let r = loaded.world.step();
                let dt = t.elapsed().as_secs_f64() * 1e3;
                iterations = r.iterations * r.substeps;
                if f >= warm {
                    ms += dt;
                    pairs += r.contact_pairs as u64;
                }
                min_d = min_d.min(r.min_pair_distance.unwrap_or(f32::INFINITY));
            }
            let timed = (frames - warm).max(1) as f64;
            let ms = ms / timed;
            let (v, e) = (loaded.world.vertex_count(), loaded.world.element_count());
            let ns = ms * 1e6 / (v as f64 * iterations as f64);
            let crossings = loaded.world.find_intersections().len();
            let mean_pairs = pairs as f64 / timed;
            if json {
                // JSON has no infinity: no pair within any search radius is `null`.
                let min_json = if min_d.is_finite() { format!("{min_d:.3e}") } else { "null".to_owned() };
                println!(
                    "{{\"bench\":\"bench_contact\",\"scene\":\"{name}\",\"backend\":\"cpu\",\"threads\":{threads},\"vertices\":{v},\"elements\":{e},\"iterations\":{iterations},\"ms_per_step\":{ms:.4},\"ns_per_vertex_iteration\":{ns:.1},\"contact_pairs_mean\":{mean_pairs:.1},\"min_pair_distance\":{min_json},\"intersections\":{crossings}}}"
                );
            } else {
                println!(
                    "{name:<20} {threads:>7} {v:>8} {e:>8} {iterations:>5} {ms:>10.2} {ns:>10.1} {mean_pairs:>8.0} {min_d:>12.3e} {crossings:>13}"
                );
            }
        }
    }
}
