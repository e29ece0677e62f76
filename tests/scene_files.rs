//! Scene files: the bundled list matches `examples/scenes/`, every scene builds, the runner
//! writes per-frame OBJ (one `o <name>` group per body) and `metrics.json`, and TetGen meshes
//! load from a scene.

use pliant::io::bundled::BUNDLED_SCENES;
use pliant::io::{RunOptions, expand_sweep, load_scene_file, run_scene};

#[test]
fn bundled_list_matches_the_directory_and_every_scene_builds() {
    let mut on_disk: Vec<String> = std::fs::read_dir("examples/scenes")
        .unwrap()
        .filter_map(|e| {
            let path = e.ok()?.path();
            // Scenes are the JSON files; `assets/` holds what they load.
            (path.extension()? == "json").then(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))?
        })
        .collect();
    on_disk.sort();
    let bundled: Vec<String> = BUNDLED_SCENES.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(on_disk, bundled);
    for (name, json) in BUNDLED_SCENES {
        for v in expand_sweep(json).unwrap_or_else(|e| panic!("{name}: {e}")) {
            assert_eq!(&v.scene.name, name);
            v.scene.build(std::path::Path::new("examples/scenes")).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}

#[test]
fn runner_writes_obj_frames_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let mut loaded = load_scene_file(std::path::Path::new("examples/scenes/drop_cube.json")).unwrap();
    let result = run_scene(
        &mut loaded,
        RunOptions {
            frames: Some(12),
            out_dir: Some(dir.path().into()),
            export_obj: true,
            export_gltf: false,
            on_frame: None,
            check_intersections: true,
        },
    )
    .unwrap();
    assert_eq!(result.frames.len(), 12);
    // obj_every = 10: frames 0 and 10.
    let obj = std::fs::read_to_string(dir.path().join("frames/frame_00010.obj")).unwrap();
    assert!(obj.contains("\no cube\n"), "{}", &obj[..200]);
    let v = obj.lines().filter(|l| l.starts_with("v ")).count();
    let f = obj.lines().filter(|l| l.starts_with("f ")).count();
    assert_eq!(v, 11 * 11 * 11 - 9 * 9 * 9, "surface vertices of a 10³-cell box");
    assert_eq!(f, 6 * 10 * 10 * 2);
    // Faces index existing vertices (1-based).
    for l in obj.lines().filter(|l| l.starts_with("f ")) {
        for i in l[2..].split_whitespace() {
            let i: usize = i.parse().unwrap();
            assert!(i >= 1 && i <= v);
        }
    }
    assert!(dir.path().join("frames/frame_00000.obj").exists());
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("metrics.json")).unwrap()).unwrap();
    let frame = &metrics["frames"][3];
    for key in ["step_ms", "iterations", "energy", "min_obstacle_distance", "probes", "energy_total", "residual"] {
        assert!(!frame[key].is_null(), "metrics frame lacks {key}");
    }
    assert_eq!(metrics["summary"]["frames"], 12);
    assert!(metrics["summary"]["ns_per_vertex_iteration"].as_f64().unwrap() > 0.0);
}

#[test]
fn tetgen_meshes_load_from_a_scene() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = pliant::TetMesh::sphere(0.1, 4, pliant::TetSplit::Six).unwrap();
    pliant::io::tetgen::write_tetgen(&mesh, &dir.path().join("ball")).unwrap();
    let scene = r#"{ "version": 1, "name": "ball", "frames": 5,
        "materials": { "m": { "model": "stable_neo_hookean", "E": 1e5, "nu": 0.3, "rho": 1000 } },
        "bodies": [{ "name": "ball", "material": "m", "mesh": { "format": "tetgen", "path": "ball.node" }, "translation": [0, 0.5, 0] }],
        "obstacles": [{ "type": "plane", "normal": [0, 1, 0] }] }"#;
    std::fs::write(dir.path().join("ball.json"), scene).unwrap();
    let mut loaded = load_scene_file(&dir.path().join("ball.json")).unwrap();
    assert_eq!(loaded.world.vertex_count(), mesh.vertex_count());
    let r = run_scene(&mut loaded, RunOptions::default()).unwrap();
    assert!(r.frames.iter().all(|f| !f.nan));
}

#[test]
fn cli_runs_a_bundled_scene_and_lists_scenes() {
    let exe = env!("CARGO_BIN_EXE_pliant");
    let out = std::process::Command::new(exe).arg("scenes").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for (name, _) in BUNDLED_SCENES {
        assert!(text.contains(name), "{name} missing from `pliant scenes`");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(exe)
        .args(["run", "incline_stick", "--frames", "3", "--threads", "1", "--export", "obj", "--quiet", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ns per vertex-iteration") && text.contains("probe"), "{text}");
    assert!(dir.path().join("metrics.json").exists());
    let obj = std::fs::read_to_string(dir.path().join("frames/frame_00000.obj")).unwrap();
    assert!(obj.contains("o on_plane") && obj.contains("o on_box"));
    // A bad scene exits non-zero with the field in the message.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{ "version": 1, "name": "x", "frames": 1, "materials": {}, "bodies": [], "bogus": 1 }"#)
        .unwrap();
    let out = std::process::Command::new(exe).arg("run").arg(&bad).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bogus"));
}
