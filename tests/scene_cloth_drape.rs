//! Cloth draped over a sphere (docs/scenes.md 7): 4,225 vertices, 8,192 triangles; and cloth
//! dropped over a table's edge and corner (docs/scenes.md 16).
//!
//! Pass: no NaN; no vertex inside the sphere or below the ground at any frame (signed distance
//! ≥ 0; vertices rest at the 1 mm offset); no point of any triangle (the `obstacle_depth`
//! probe: exact for the box and the sphere) deeper than 0.5 mm in an obstacle at any frame; the apex ends at
//! 0.5 m + offset ± 1 mm; the sheet drapes to within 5 cm of the ground; no edge stretched by
//! more than 5 % in the final frame.

mod common;

#[test]
fn cloth_drapes_over_the_sphere() {
    let (loaded, run) = common::run("cloth_drape_sphere", None);
    for f in &run.frames {
        assert!(!f.nan);
        // A calm scene: the safety check never sends it to the fallback (issue 9).
        assert_eq!(f.fallbacks, 0, "frame {} fell back: {:?}", f.frame, f.islands);
        assert!(f.min_obstacle_distance.unwrap() >= 0.0, "frame {}: {:?}", f.frame, f.min_obstacle_distance);
        // Between the vertices too: the sphere's cap under a triangle gets its own contact.
        assert!(f.probes["depth"][0] < 5e-4, "frame {}: a cloth point {} m inside", f.frame, f.probes["depth"][0]);
    }
    let last = run.frames.last().unwrap();
    let apex = last.probes["apex"][1];
    assert!((apex - 0.501).abs() < 1e-3, "apex at {apex}");
    // Where the folds form, and so whether every corner is down by 4 s, is chaotic: 0.01 %
    // changes of ε_v moved the lowest point at 4 s between 0.7 mm and 3.4 cm (6 runs). The
    // sheet must at least have draped down to the ground's neighbourhood.
    assert!(last.probes["bbox"][1] < 0.05, "the cloth did not drape: min y {}", last.probes["bbox"][1]);
    // Edge stretch against the rest mesh.
    let body = &loaded.world.bodies[loaded.bodies[0].handle];
    let rest = body.shared().rest_positions();
    let x = loaded.world.body_positions(loaded.bodies[0].handle).unwrap();
    let mut worst: f32 = 0.0;
    for t in &body.shared().surface {
        for k in 0..3 {
            let (a, b) = (t[k] as usize, t[(k + 1) % 3] as usize);
            let l0 = (rest[a] - rest[b]).length();
            let l = (x[a].truncate() - x[b].truncate()).length();
            worst = worst.max(l / l0);
        }
    }
    assert!(worst < 1.05, "edge stretched to {worst}");
}

/// A cloth dropped so it hangs over a table's (a box obstacle's) edge and corner, both of which
/// lie between rows of vertices: edge and triangle contacts keep every point of the cloth out
/// (vertex contact alone let the edge poke 6.9 mm through, measured when they were added).
#[test]
fn cloth_hangs_over_a_table_edge_without_the_edge_poking_through() {
    let (_, run) = common::run("cloth_on_table_edge", None);
    for f in &run.frames {
        assert!(!f.nan);
        assert_eq!(f.fallbacks, 0, "frame {} fell back: {:?}", f.frame, f.islands);
        assert!(f.min_obstacle_distance.unwrap() >= 0.0, "frame {}: {:?}", f.frame, f.min_obstacle_distance);
        assert!(f.probes["depth"][0] < 5e-4, "frame {}: a cloth point {} m inside", f.frame, f.probes["depth"][0]);
    }
    // It hangs over the edge: part of it is well below the table's top (0.4 m), part on it.
    let bbox = &run.frames.last().unwrap().probes["bbox"];
    assert!(bbox[1] < 0.2 && bbox[4] > 0.4, "bbox {bbox:?}");
}

/// Both scenes again under a 4 ms frame budget (issue 30's acceptance: the planner's sweep
/// count, one or two sweeps on 2 cores, in place of twenty): no point of any triangle deeper than
/// 0.5 mm in an obstacle at any frame, whichever path each frame takes. Timing decides the
/// sweeps and whether a frame falls back, so only the invariants are asserted.
#[test]
fn under_a_4_ms_budget_no_cloth_point_goes_into_an_obstacle() {
    for name in ["cloth_on_table_edge", "cloth_drape_sphere"] {
        let json = pliant::io::bundled::bundled_scene(name).expect("bundled scene");
        let mut scene = pliant::io::parse_scene(json).expect("scene parses");
        scene.solver.budget_ms = Some(4.0);
        let mut loaded = scene.build(std::path::Path::new("examples/scenes")).expect("scene builds");
        let run = pliant::io::run_scene(&mut loaded, pliant::io::RunOptions::default()).expect("scene runs");
        for f in &run.frames {
            assert!(!f.nan, "{name}, frame {}", f.frame);
            assert!(
                f.min_obstacle_distance.unwrap() >= 0.0,
                "{name}, frame {}: {:?}",
                f.frame,
                f.min_obstacle_distance
            );
            let depth = f.probes["depth"][0];
            assert!(depth < 5e-4, "{name}, frame {}: a cloth point {depth} m inside", f.frame);
        }
        let iterations: Vec<u32> = run.frames.iter().map(|f| f.iterations).collect();
        println!(
            "{name} at 4 ms: sweeps per frame {}–{}",
            iterations.iter().min().unwrap(),
            iterations.iter().max().unwrap()
        );
    }
}
