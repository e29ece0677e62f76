//! glTF in and out on whole scenes: the bundled asset is what its generator writes, a body made
//! from it exports its render mesh unchanged before any step, the embedding is a convex
//! combination, the animated GLB of a run parses back with validation, and the render mesh
//! follows the simulation.

mod common;

use glam::{Mat4, Vec3};
use pliant::io::bundled::{bundled_asset, generate_bundled_assets};
use pliant::io::gltf::{AnimatedGlb, read_gltf};
use pliant::io::{RunOptions, parse_scene, run_scene};

/// Positions of every primitive of every node with a mesh, in world coordinates (the gltf
/// crate's own transform and reader: an oracle independent of Pliant's import).
fn world_positions(doc: &gltf::Document, blob: &[u8]) -> Vec<(String, Vec<Vec3>)> {
    let mut out = Vec::new();
    fn walk(n: gltf::Node<'_>, parent: Mat4, blob: &[u8], out: &mut Vec<(String, Vec<Vec3>)>) {
        let m = parent * Mat4::from_cols_array_2d(&n.transform().matrix());
        if let Some(mesh) = n.mesh() {
            let mut p = Vec::new();
            for prim in mesh.primitives() {
                let r = prim.reader(|_| Some(blob));
                p.extend(r.read_positions().unwrap().map(|x| m.transform_point3(Vec3::from(x))));
            }
            out.push((n.name().unwrap_or("").to_owned(), p));
        }
        for c in n.children() {
            walk(c, m, blob, out);
        }
    }
    for n in doc.default_scene().unwrap().nodes() {
        walk(n, Mat4::IDENTITY, blob, &mut out);
    }
    out
}

#[test]
fn the_bundled_asset_is_what_its_generator_writes() {
    for (path, generated) in generate_bundled_assets().unwrap() {
        let committed = std::fs::read(std::path::Path::new("examples/scenes").join(path)).unwrap();
        assert_eq!(bundled_asset(path).unwrap(), &committed[..], "{path}: the compiled-in copy is stale");
        // Compared by value, not bytes: another libm may round a sine differently.
        let (a, b) = (gltf::Gltf::from_slice(&committed).unwrap(), gltf::Gltf::from_slice(&generated).unwrap());
        let (pa, pb) = (world_positions(&a, a.blob.as_ref().unwrap()), world_positions(&b, b.blob.as_ref().unwrap()));
        assert_eq!(pa.len(), pb.len());
        for ((na, xa), (nb, xb)) in pa.iter().zip(&pb) {
            assert_eq!(na, nb);
            assert_eq!(xa.len(), xb.len());
            let err = xa.iter().zip(xb).map(|(p, q)| (*p - *q).length()).fold(0.0f32, f32::max);
            assert!(err < 1e-6, "{path} node {na}: regenerate with `cargo run --example make_assets` ({err} m)");
        }
    }
}

/// The scene `gltf_jelly`, loaded.
fn jelly() -> pliant::io::LoadedScene {
    let json = pliant::io::bundled::bundled_scene("gltf_jelly").unwrap();
    parse_scene(json).unwrap().build(std::path::Path::new("examples/scenes")).unwrap()
}

#[test]
fn import_then_export_without_a_step_reproduces_the_render_mesh() {
    let mut loaded = jelly();
    let dir = tempfile::tempdir().unwrap();
    run_scene(
        &mut loaded,
        RunOptions { frames: Some(0), out_dir: Some(dir.path().into()), export_gltf: true, ..RunOptions::default() },
    )
    .unwrap();
    let bytes = std::fs::read(dir.path().join("run.glb")).unwrap();
    // Validation on: the GLB is well formed.
    let out = gltf::Gltf::from_slice(&bytes).expect("the exported GLB validates");
    let frame0: Vec<Vec<Vec3>> = {
        let node = out.nodes().find(|n| n.name() == Some("frame_00000")).unwrap();
        let blob = out.blob.as_ref().unwrap();
        node.mesh()
            .unwrap()
            .primitives()
            .map(|p| p.reader(|_| Some(blob)).read_positions().unwrap().map(Vec3::from).collect())
            .collect()
    };
    // The oracle: the asset's own positions through its node transforms.
    let asset = std::fs::read("examples/scenes/assets/jelly.glb").unwrap();
    let doc = gltf::Gltf::from_slice(&asset).unwrap();
    let expected = world_positions(&doc, doc.blob.as_ref().unwrap());
    for (k, name) in ["torus", "pebble"].iter().enumerate() {
        let want = &expected.iter().find(|(n, _)| n == name).unwrap().1;
        assert_eq!(frame0[k].len(), want.len(), "{name}");
        let err = frame0[k].iter().zip(want).map(|(p, q)| (*p - *q).length()).fold(0.0f32, f32::max);
        assert!(err <= 1e-6, "{name}: exported render vertices differ from the asset's by {err} m");
        // And Pliant's import agrees with the oracle.
        let imported = read_gltf(std::path::Path::new("examples/scenes/assets/jelly.glb"), Some(name)).unwrap();
        let err = imported.positions.iter().zip(want).map(|(p, q)| (*p - *q).length()).fold(0.0f32, f32::max);
        assert!(err <= 1e-6, "{name}: import differs by {err} m");
    }
}

#[test]
fn embedding_weights_are_convex_and_every_render_vertex_is_inside() {
    let loaded = jelly();
    for b in &loaded.bodies {
        let e = &b.render.as_ref().unwrap().embedding;
        assert_eq!(e.outside_count(), 0, "{}", b.name);
        for (k, w) in e.weights().iter().enumerate() {
            assert!(w.iter().all(|&w| w >= 0.0), "{} vertex {k}: {w:?}", b.name);
            assert!((w.iter().sum::<f32>() - 1.0).abs() <= 1e-6, "{} vertex {k}: {w:?}", b.name);
        }
        // The voxel mesh spans the render mesh's bounding box exactly.
        let (lo, hi) = bounds(&b.rest);
        let (rlo, rhi) = bounds(&b.render.as_ref().unwrap().mesh.positions);
        assert!((lo - rlo).abs().max_element() < 1e-5 && (hi - rhi).abs().max_element() < 1e-5, "{}", b.name);
    }
}

fn bounds(p: &[Vec3]) -> (Vec3, Vec3) {
    p.iter().fold((Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)), |(a, b), x| (a.min(*x), b.max(*x)))
}

#[test]
fn the_render_mesh_follows_the_simulation_and_the_run_exports_an_animation() {
    let mut loaded = jelly();
    let dir = tempfile::tempdir().unwrap();
    let result = run_scene(
        &mut loaded,
        RunOptions {
            frames: Some(60),
            out_dir: Some(dir.path().into()),
            export_gltf: true,
            export_obj: true,
            check_intersections: true,
            ..RunOptions::default()
        },
    )
    .unwrap();
    assert_eq!(result.summary.intersecting_frames, Some(0));
    assert_eq!(result.summary.nan_frames, 0);
    let meshes = pliant::io::frame_meshes(&loaded.world, &loaded.export_bodies());
    for (b, m) in loaded.bodies.iter().zip(&meshes) {
        // Convex weights keep every render vertex inside the simulated body's bounds.
        let x: Vec<Vec3> = loaded.world.body_positions(b.handle).unwrap().iter().map(|p| p.truncate()).collect();
        let (lo, hi) = bounds(&x);
        for p in &m.positions {
            assert!(p.cmpge(lo - 1e-5).all() && p.cmple(hi + 1e-5).all(), "{}: {p} outside {lo}..{hi}", b.name);
        }
        assert_eq!(m.positions.len(), b.render.as_ref().unwrap().mesh.positions.len());
    }
    // The torus fell onto the pebble: its lowest render vertex went down by more than 0.1 m
    // and stays above the ground.
    let torus0 = &loaded.bodies[0].render.as_ref().unwrap().mesh.positions;
    let drop = bounds(torus0).0.y - bounds(&meshes[0].positions).0.y;
    assert!(drop > 0.1 && bounds(&meshes[0].positions).0.y > 0.0, "drop {drop}");
    // The animation: 7 frames (0, 10, …, 60), one node and one scale channel each, step keyed.
    let out = gltf::Gltf::from_slice(&std::fs::read(dir.path().join("run.glb")).unwrap()).unwrap();
    let anim = out.animations().next().expect("an animation");
    assert_eq!(anim.channels().count(), 7);
    for c in anim.channels() {
        assert_eq!(c.sampler().interpolation(), gltf::animation::Interpolation::Step);
        // At most three keys a frame: the file grows linearly with the frames.
        assert!(c.sampler().input().count() <= 3);
        assert_eq!(c.target().property(), gltf::animation::Property::Scale);
    }
    let last = out.nodes().find(|n| n.name() == Some("frame_00006")).unwrap();
    let blob = out.blob.as_ref().unwrap();
    let p: Vec<Vec3> = last
        .mesh()
        .unwrap()
        .primitives()
        .next()
        .unwrap()
        .reader(|_| Some(blob))
        .read_positions()
        .unwrap()
        .map(Vec3::from)
        .collect();
    let err = p.iter().zip(&meshes[0].positions).map(|(a, b)| (*a - *b).length()).fold(0.0f32, f32::max);
    assert!(err < 1e-6, "the last animation frame is the world's state ({err} m)");
    // OBJ frames carry the render meshes too.
    let obj = std::fs::read_to_string(dir.path().join("frames/frame_00060.obj")).unwrap();
    let (objs, _) = pliant::io::parse_obj_frame(&obj).unwrap();
    assert_eq!(objs[0].positions.len(), torus0.len());
}

#[test]
fn an_animation_rejects_inconsistent_frames() {
    let mut a = AnimatedGlb::new();
    assert!(a.to_glb().is_err(), "nothing recorded");
    a.add_mesh("m", vec![[0, 1, 2]]).unwrap();
    assert!(a.push_frame(0.0, vec![vec![Vec3::ZERO; 2]]).is_err(), "too few positions");
    assert!(a.push_frame(0.0, vec![]).is_err(), "too few meshes");
    assert!(a.push_frame(0.0, vec![vec![Vec3::NAN; 3]]).is_err(), "NaN");
    a.push_frame(0.0, vec![vec![Vec3::ZERO, Vec3::X, Vec3::Y]]).unwrap();
    assert!(a.push_frame(0.0, vec![vec![Vec3::ZERO, Vec3::X, Vec3::Y]]).is_err(), "time must increase");
    assert!(a.add_mesh("late", vec![]).is_err());
    gltf::Gltf::from_slice(&a.to_glb().unwrap()).expect("a one-frame GLB validates");
}

#[test]
fn scene_errors_name_the_mesh_field() {
    let base = r#"{"version": 1, "name": "t", "frames": 1,
        "materials": {"m": {"model": "stable_neo_hookean", "E": 1e5, "nu": 0.3, "rho": 1000}},
        "bodies": [{"name": "b", "material": "m", "mesh": MESH}]}"#;
    let build = |mesh: &str| {
        parse_scene(&base.replace("MESH", mesh)).and_then(|s| s.build(std::path::Path::new("examples/scenes")))
    };
    let err = build(r#"{"format": "gltf", "path": "assets/nope.glb"}"#).unwrap_err().to_string();
    assert!(err.contains("bodies[0].mesh.path") && err.contains("nope.glb"), "{err}");
    let err = build(r#"{"format": "gltf", "path": "assets/jelly.glb", "node": "teapot"}"#).unwrap_err().to_string();
    assert!(err.contains("bodies[0].mesh.node") && err.contains("`torus`"), "{err}");
    let err = build(r#"{"format": "gltf", "path": "assets/jelly.glb", "cell": 0.05, "resolution": 4}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("bodies[0].mesh"), "{err}");
    let err = build(r#"{"format": "gltf", "path": "assets/jelly.glb", "resolution": 500}"#).unwrap_err().to_string();
    assert!(err.contains("bodies[0].mesh.resolution"), "{err}");
    let err = build(r#"{"format": "gltf", "path": "assets/jelly.glb", "cell": 1e-5}"#).unwrap_err().to_string();
    assert!(err.contains("bodies[0].mesh.cell") && err.contains("too fine"), "{err}");
    let err = build(r#"{"format": "gltf", "path": "assets/jelly.glb", "cell": -1}"#).unwrap_err().to_string();
    assert!(err.contains("bodies[0].mesh.cell"), "{err}");
    let err = build(r#"{"format": "gltf", "path": "assets/jelly.glb", "resoluton": 4}"#).unwrap_err().to_string();
    assert!(err.contains("resoluton"), "{err}");
}

#[test]
fn a_render_mesh_embeds_in_given_tetgen_tets_and_extrapolates_outside_them() {
    // A box of tets that covers the pebble except its outermost 1 cm in x: those vertices lie
    // outside and follow their nearest tet.
    let dir = tempfile::tempdir().unwrap();
    let tets = pliant::mesh::TetMesh::box_mesh(Vec3::new(0.22, 0.16, 0.22), [6, 4, 6], pliant::mesh::TetSplit::Six)
        .unwrap()
        .transformed(glam::Quat::IDENTITY, Vec3::new(0.0, 0.07, 0.0));
    let mut node = format!("{} 3 0 0\n", tets.vertex_count());
    for (k, p) in tets.positions().iter().enumerate() {
        node += &format!("{k} {} {} {}\n", p.x, p.y, p.z);
    }
    let mut ele = format!("{} 4 0\n", tets.tet_count());
    for (k, t) in tets.tets().iter().enumerate() {
        ele += &format!("{k} {} {} {} {}\n", t[0], t[1], t[2], t[3]);
    }
    std::fs::write(dir.path().join("box.node"), node).unwrap();
    std::fs::write(dir.path().join("box.ele"), ele).unwrap();
    std::fs::copy("examples/scenes/assets/jelly.glb", dir.path().join("jelly.glb")).unwrap();
    let json = r#"{"version": 1, "name": "t", "frames": 1,
        "materials": {"m": {"model": "stable_neo_hookean", "E": 1e5, "nu": 0.3, "rho": 1000}},
        "bodies": [{"name": "pebble", "material": "m", "translation": [0, 0.01, 0],
                    "mesh": {"format": "gltf", "path": "jelly.glb", "node": "pebble", "tetgen": "box.node"}}]}"#;
    let loaded = parse_scene(json).unwrap().build(dir.path()).unwrap();
    let render = loaded.bodies[0].render.as_ref().unwrap();
    assert!(render.embedding.outside_count() > 0, "the pebble is wider than the box in x");
    assert_eq!(loaded.bodies[0].rest.len(), tets.vertex_count());
    // At rest the embedding reproduces every render vertex, inside or out (placement included).
    let meshes = pliant::io::frame_meshes(&loaded.world, &loaded.export_bodies());
    let asset = read_gltf(&dir.path().join("jelly.glb"), Some("pebble")).unwrap();
    let err = meshes[0]
        .positions
        .iter()
        .zip(&asset.positions)
        .map(|(p, q)| (*p - (*q + Vec3::new(0.0, 0.01, 0.0))).length())
        .fold(0.0f32, f32::max);
    assert!(err < 1e-5, "{err} m");
}
