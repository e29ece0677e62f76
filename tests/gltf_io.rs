//! glTF in and out on whole scenes: the bundled asset is what its generator writes, a body made
//! from it exports its render mesh unchanged before any step, the embedding is a convex
//! combination, the animated GLB of a run parses back with validation, and the render mesh
//! follows the simulation.

mod common;

use glam::{Mat4, Vec3};
use pliant::io::bundled::{bundled_asset, generate_bundled_assets};
use pliant::io::gltf::{AnimatedGlb, read_gltf};
use pliant::io::{RunOptions, parse_scene, run_scene};

/// How far outside the conformed tets a surface vertex may end, in cells: a quarter of the
/// smallest cell edge, as `TetMesh::voxelize` documents.
const MAX_OUTSIDE: f32 = 0.25;

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
fn embedding_weights_are_convex_and_the_tets_conform_to_the_render_mesh() {
    let loaded = jelly();
    for (b, resolution) in loaded.bodies.iter().zip([12.0, 8.0]) {
        let render = &b.render.as_ref().unwrap().mesh;
        let e = &b.render.as_ref().unwrap().embedding;
        for (k, w) in e.weights().iter().enumerate() {
            assert!(w.iter().all(|&w| w >= 0.0), "{} vertex {k}: {w:?}", b.name);
            assert!((w.iter().sum::<f32>() - 1.0).abs() <= 1e-6, "{} vertex {k}: {w:?}", b.name);
        }
        // The tets lie within the render mesh's box and their boundary on its surface: a
        // render vertex is at most a quarter cell outside (a chord's sag), not a cell inside.
        let (lo, hi) = bounds(&b.rest);
        let (rlo, rhi) = bounds(&render.positions);
        assert!(lo.cmpge(rlo - 1e-5).all() && hi.cmple(rhi + 1e-5).all(), "{}: {lo} {hi} in {rlo} {rhi}", b.name);
        let cell = (rhi - rlo).max_element() / resolution;
        assert!(
            e.max_outside_distance() <= MAX_OUTSIDE * cell,
            "{}: {} m outside, cell {cell}",
            b.name,
            e.max_outside_distance()
        );
        // So the body weighs about what the volume the asset encloses does: 1.15x and 1.09x
        // at these coarse resolutions (a tube three cells across), where the cubes around it
        // weighed 2.0x and 1.7x.
        let enclosed = render.enclosed_volume();
        let shared = loaded.world.bodies.get(b.handle).unwrap().shared();
        let mass: f64 = shared.masses.iter().map(|&m| m as f64).sum();
        let ratio = mass / shared.density / enclosed;
        assert!((0.97..1.2).contains(&ratio), "{}: the body weighs {ratio}x the enclosed volume", b.name);
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
        // Every render vertex stays with the simulated body: within its bounds, up to the
        // few millimetres a conformed chord's sag leaves it outside.
        let x: Vec<Vec3> = loaded.world.body_positions(b.handle).unwrap().iter().map(|p| p.truncate()).collect();
        let (lo, hi) = bounds(&x);
        let sag = 2.0 * b.render.as_ref().unwrap().embedding.max_outside_distance() + 1e-5;
        for p in &m.positions {
            assert!(p.cmpge(lo - sag).all() && p.cmple(hi + sag).all(), "{}: {p} outside {lo}..{hi}", b.name);
        }
        assert_eq!(m.positions.len(), b.render.as_ref().unwrap().mesh.positions.len());
        // Normals come with the frame, unit length, turned with the body.
        let n = m.normals.as_ref().expect("render meshes carry their deformed normals");
        assert_eq!(n.len(), m.positions.len());
        assert!(n.iter().all(|v| (v.length() - 1.0).abs() < 1e-4), "{}", b.name);
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
    let tets = pliant::TetMesh::box_mesh(Vec3::new(0.22, 0.16, 0.22), [6, 4, 6], pliant::TetSplit::Six)
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

/// Writes `nodes` as a GLB in `dir` and returns the path.
fn write_asset(dir: &std::path::Path, name: &str, nodes: &[pliant::io::gltf::StaticNode]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, pliant::io::gltf::static_glb(nodes).unwrap()).unwrap();
    path
}

fn node(mesh: pliant::RenderMesh) -> pliant::io::gltf::StaticNode {
    pliant::io::gltf::StaticNode { mesh, translation: Vec3::ZERO, rotation: glam::Quat::IDENTITY, scale: Vec3::ONE }
}

#[test]
fn a_ball_from_an_asset_rests_in_a_groove_touching_both_sides() {
    // Two planes at ±45° make a groove. A sphere of radius R rests with its centre √2·(R + δ)
    // above the groove's floor line and its surface δ from each plane. Cubes around the
    // sphere (the voxel lattice alone) would stand off the slanted planes by up to half a
    // cell's diagonal, and the render mesh would hover there.
    let dir = tempfile::tempdir().unwrap();
    write_asset(dir.path(), "ball.glb", &[node(pliant::RenderMesh::uv_sphere(0.1, 16, 32))]);
    let json = r#"{"version": 1, "name": "groove", "frames": 90,
        "materials": {"rubber": {"model": "stable_neo_hookean", "E": 1e6, "nu": 0.3, "rho": 1000,
                                 "linear_damping": 2.0}},
        "bodies": [{"name": "ball", "material": "rubber", "translation": [0, 0.16, 0],
                    "mesh": {"format": "gltf", "path": "ball.glb", "resolution": 8}}],
        "obstacles": [{"type": "plane", "normal": [0.70710678, 0.70710678, 0], "offset": 0},
                      {"type": "plane", "normal": [-0.70710678, 0.70710678, 0], "offset": 0}]}"#;
    let mut loaded = parse_scene(json).unwrap().build(dir.path()).unwrap();
    run_scene(&mut loaded, RunOptions::default()).unwrap();
    let meshes = pliant::io::frame_meshes(&loaded.world, &loaded.export_bodies());
    let gap = |n: Vec3| meshes[0].positions.iter().map(|p| p.dot(n)).fold(f32::MAX, f32::min);
    let h = std::f32::consts::FRAC_1_SQRT_2;
    let (left, right) = (gap(Vec3::new(h, h, 0.0)), gap(Vec3::new(-h, h, 0.0)));
    // δ = 1 mm, give or take what conforming leaves at 2.5 cm cells (a chord's sag inward,
    // lattice steps the tets' shape kept outward): 2.7 and 3.5 mm measured, where the
    // lattice's cubes alone stand the render ball 13.1 mm off both planes.
    for (side, g) in [("left", left), ("right", right)] {
        assert!((-0.006..0.005).contains(&g), "the render ball stands {g} m off the {side} plane");
    }
}

/// A square sheet of `n`×`n` quads, split down the middle into two halves whose border
/// vertices are duplicated (a UV seam, as exporters write one).
fn seamed_sheet(size: f32, n: u32) -> pliant::RenderMesh {
    let mut positions = Vec::new();
    let mut triangles = Vec::new();
    for half in 0..2 {
        let cols: Vec<u32> = (0..=n).filter(|&i| if half == 0 { i <= n / 2 } else { i >= n / 2 }).collect();
        let base = positions.len() as u32;
        let w = cols.len() as u32;
        for j in 0..=n {
            for &i in &cols {
                positions.push(Vec3::new(size * (i as f32 / n as f32 - 0.5), 0.0, size * (j as f32 / n as f32 - 0.5)));
            }
        }
        for j in 0..n {
            for c in 0..w - 1 {
                let (a, d) = (base + j * w + c, base + (j + 1) * w + c);
                triangles.push([a, d, a + 1]);
                triangles.push([a + 1, d, d + 1]);
            }
        }
    }
    pliant::RenderMesh { name: "sheet".into(), positions, normals: None, triangles }
}

#[test]
fn a_flat_asset_with_a_cloth_material_is_a_cloth_welded_along_its_seams() {
    let dir = tempfile::tempdir().unwrap();
    let sheet = seamed_sheet(0.8, 16);
    write_asset(dir.path(), "sheet.glb", &[node(sheet.clone())]);
    let json = r#"{"version": 1, "name": "drape", "frames": 60,
        "materials": {"silk": {"model": "cloth", "E": 1e6, "nu": 0.3, "rho": 200, "thickness": 0.001},
                      "rubber": {"model": "stable_neo_hookean", "E": 1e5, "nu": 0.3, "rho": 1000}},
        "bodies": [{"name": "sheet", "material": "silk", "translation": [0, 0.5, 0],
                    "mesh": {"format": "gltf", "path": "sheet.glb"}}],
        "obstacles": [{"type": "sphere", "center": [0, 0.2, 0], "radius": 0.2},
                      {"type": "plane", "normal": [0, 1, 0], "offset": 0}]}"#;
    let mut loaded = parse_scene(json).unwrap().build(dir.path()).unwrap();
    // One cloth vertex per distinct position: the 17 seam vertices are shared, not doubled.
    assert_eq!(loaded.bodies[0].rest.len(), 17 * 17);
    assert_eq!(sheet.positions.len(), 17 * 18);
    // Every frame free of intersections, but for one kind: the exact test finds the sphere's cap
    // through the inside of this coarse cloth's 5 cm triangles on the fast path (up to 0.12 mm in
    // 10 of 60 frames, 2026-12-04; 0.19 mm in 4 before that day's span changes, unseen by the
    // older test), which until the advance holds triangles near a sphere is held to issue 30's
    // 0.5 mm bar here.
    for frame in 0..60 {
        assert!(!loaded.world.step().nan_detected, "frame {frame}: NaN rolled back");
        for found in loaded.world.find_intersections() {
            match found {
                pliant::Intersection::TriangleInsideObstacle { depth, .. } => {
                    assert!(depth < 5e-4, "frame {frame}: the sphere {depth} m through a triangle")
                }
                other => panic!("frame {frame}: {other:?}"),
            }
        }
    }
    let m = &pliant::io::frame_meshes(&loaded.world, &loaded.export_bodies())[0];
    // The render vertices are the cloth's: the seam stayed closed, and the sheet draped (its
    // centre rests on the sphere's top, its corners hang below it).
    let x = loaded.world.body_positions(loaded.bodies[0].handle).unwrap();
    for (k, p) in m.positions.iter().enumerate() {
        assert!(x.iter().any(|q| (q.truncate() - *p).length() < 1e-6), "render vertex {k} is on no cloth vertex");
        for (j, q) in sheet.positions.iter().enumerate() {
            if (*q - sheet.positions[k]).length() < 1e-6 {
                assert!((m.positions[j] - *p).length() < 1e-6, "seam vertices {k} and {j} came apart");
            }
        }
    }
    let (lo, hi) = bounds(&m.positions);
    assert!(hi.y < 0.42 && hi.y > 0.39 && lo.y < 0.3, "draped from {} to {}", lo.y, hi.y);
    // Voxel settings make no sense for a cloth: named.
    let err = parse_scene(&json.replace(r#""path": "sheet.glb""#, r#""path": "sheet.glb", "resolution": 8"#))
        .unwrap()
        .build(dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("bodies[0].mesh") && err.contains("own triangles"), "{err}");
    // A flat asset with a solid material: the error says to use a cloth.
    let err = parse_scene(&json.replace(r#""material": "silk""#, r#""material": "rubber""#))
        .unwrap()
        .build(dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("flat along y") && err.contains("cloth"), "{err}");
}

#[test]
fn an_asset_in_centimetres_is_scaled_to_metres() {
    let dir = tempfile::tempdir().unwrap();
    // A 20 cm ball written in centimetres, as some tools export.
    let mut ball = pliant::RenderMesh::uv_sphere(10.0, 8, 16);
    ball.name = "ball".into();
    write_asset(dir.path(), "cm.glb", &[node(ball)]);
    let json = r#"{"version": 1, "name": "cm", "frames": 1,
        "materials": {"m": {"model": "stable_neo_hookean", "E": 1e5, "nu": 0.3, "rho": 1000}},
        "bodies": [{"name": "b", "material": "m", "translation": [0, 1, 0],
                    "mesh": {"format": "gltf", "path": "cm.glb", "scale": SCALE}}]}"#;
    let loaded = parse_scene(&json.replace("SCALE", "0.01")).unwrap().build(dir.path()).unwrap();
    let (lo, hi) = bounds(&loaded.bodies[0].rest);
    assert!(((hi - lo) - Vec3::splat(0.2)).abs().max_element() < 1e-4, "{lo} {hi}");
    let (rlo, rhi) = bounds(&loaded.bodies[0].render.as_ref().unwrap().mesh.positions);
    assert!((rlo - Vec3::new(-0.1, 0.9, -0.1)).abs().max_element() < 1e-5 && (rhi.y - 1.1).abs() < 1e-5);
    for bad in ["0", "-1"] {
        let err = parse_scene(&json.replace("SCALE", bad)).unwrap().build(dir.path()).unwrap_err().to_string();
        assert!(err.contains("bodies[0].mesh.scale"), "{err}");
    }
}
