//! Bad input gets a typed error naming what and where; nothing panics.

use glam::{Vec2, Vec3};
use pliant::io::{SceneError, parse_scene};
use pliant::prelude::*;
use pliant::{MeshError, TetMesh, TetSplit, TriMesh};
use proptest::prelude::*;

fn unit_tet() -> (Vec<Vec3>, Vec<[u32; 4]>) {
    (vec![Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::Z], vec![[0, 1, 2, 3]])
}

#[test]
fn non_finite_coordinates_name_the_vertex_and_axis() {
    let (mut p, t) = unit_tet();
    p[2].y = f32::NAN;
    match TetMesh::new(p.clone(), t.clone()) {
        Err(MeshError::NonFiniteVertex { vertex: 2, axis: 'y', .. }) => {}
        other => panic!("{other:?}"),
    }
    p[2].y = 1.0;
    p[3].z = f32::INFINITY;
    let e = TetMesh::new(p, t).unwrap_err();
    assert!(matches!(e, MeshError::NonFiniteVertex { vertex: 3, axis: 'z', .. }));
    assert!(e.to_string().contains("vertex 3"), "{e}");
}

#[test]
fn out_of_range_and_repeated_indices_name_the_element() {
    let (p, _) = unit_tet();
    let e = TetMesh::new(p.clone(), vec![[0, 1, 2, 3], [0, 1, 2, 7]]).unwrap_err();
    assert_eq!(e, MeshError::IndexOutOfRange { kind: "tet", element: 1, index: 7, vertex_count: 4 });
    assert!(e.to_string().contains("tet 1 refers to vertex 7"), "{e}");
    let e = TetMesh::new(p, vec![[0, 1, 1, 3]]).unwrap_err();
    assert_eq!(e, MeshError::RepeatedIndex { kind: "tet", element: 0, index: 1 });
    let e = TriMesh::new(vec![Vec3::ZERO, Vec3::X, Vec3::Y], vec![[0, 1, 5]]).unwrap_err();
    assert!(matches!(e, MeshError::IndexOutOfRange { kind: "triangle", element: 0, index: 5, .. }));
}

#[test]
fn zero_and_negative_volumes_name_the_tet_and_value() {
    let (p, _) = unit_tet();
    // Swapping two vertices flips the orientation: volume −1/6.
    match TetMesh::new(p.clone(), vec![[0, 2, 1, 3]]) {
        Err(MeshError::DegenerateTet { element: 0, volume, .. }) => assert!((volume + 1.0 / 6.0).abs() < 1e-9),
        other => panic!("{other:?}"),
    }
    let flat = vec![Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::new(1.0, 1.0, 0.0)];
    match TetMesh::new(flat, vec![[0, 1, 2, 3]]) {
        Err(MeshError::DegenerateTet { element: 0, volume, .. }) => assert_eq!(volume, 0.0),
        other => panic!("{other:?}"),
    }
    let e = TriMesh::new(vec![Vec3::ZERO, Vec3::X, Vec3::new(2.0, 0.0, 0.0)], vec![[0, 1, 2]]).unwrap_err();
    assert!(matches!(e, MeshError::DegenerateTriangle { element: 0, .. }));
}

#[test]
fn empty_meshes_and_unused_vertices_are_rejected() {
    assert_eq!(TetMesh::new(vec![], vec![]).unwrap_err(), MeshError::Empty { what: "vertices" });
    assert_eq!(TetMesh::new(vec![Vec3::ZERO], vec![]).unwrap_err(), MeshError::Empty { what: "elements" });
    let (mut p, t) = unit_tet();
    p.push(Vec3::ONE);
    assert_eq!(TetMesh::new(p, t).unwrap_err(), MeshError::UnusedVertex { vertex: 4 });
}

#[test]
fn bad_bodies_materials_and_config_are_typed() {
    let mesh = TetMesh::box_mesh(Vec3::ONE, [1, 1, 1], TetSplit::Six).unwrap();
    let e = SoftBodyBuilder::tetrahedral(mesh.clone()).name("jelly").density(-1.0).build().unwrap_err();
    assert!(e.to_string().contains("jelly") && e.to_string().contains("density"), "{e}");
    let e = SoftBodyBuilder::tetrahedral(mesh.clone())
        .material(StableNeoHookean::from_young_poisson(1e5, 0.5))
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("poisson_ratio"), "{e}");
    let e = SoftBodyBuilder::tetrahedral(mesh.clone()).pinned(&[0, 99]).build().unwrap_err();
    assert!(e.to_string().contains("vertex 99"), "{e}");
    let e = World::new(StepConfig { dt: 0.0, ..StepConfig::default() }).unwrap_err();
    assert_eq!(e.field, "dt");
    let e = World::new(StepConfig { chebyshev_rho: Some(1.2), ..StepConfig::default() }).unwrap_err();
    assert_eq!(e.field, "chebyshev_rho");
    let e = Obstacle::sphere(Vec3::ZERO, f32::NAN, 0.5).unwrap_err();
    assert_eq!(e.field, "radius");
    let cloth = TriMesh::cloth_grid(Vec2::ONE, [2, 2]).unwrap();
    let e = ClothBuilder::new(cloth).material(ClothMaterial::new(1e6, 0.3, -1.0)).build().unwrap_err();
    assert!(e.to_string().contains("thickness"), "{e}");
}

#[test]
fn bad_runtime_edits_are_typed_and_change_nothing() {
    let mut world = World::new(StepConfig::default()).unwrap();
    let mesh = TetMesh::box_mesh(Vec3::ONE, [1, 1, 1], TetSplit::Six).unwrap();
    let h = world.bodies.insert(SoftBodyBuilder::tetrahedral(mesh).name("b").build().unwrap());
    let e = world.set_body_velocity(h, Vec3::new(f32::NAN, 0.0, 0.0)).unwrap_err();
    assert!(e.to_string().contains("non-finite velocity"), "{e}");
    let e = world.set_body_positions(h, &[Vec3::ZERO]).unwrap_err();
    assert!(e.to_string().contains("expected 8 values, got 1"), "{e}");
    assert!(world.body_velocities(h).unwrap().iter().all(|v| v.is_finite()));
}

const GOOD: &str = r#"{ "version": 1, "name": "s", "frames": 2,
  "materials": { "m": { "model": "stable_neo_hookean", "E": 1e5, "nu": 0.3, "rho": 1000 } },
  "bodies": [{ "name": "b", "material": "m", "generator": { "type": "box", "size": [1,1,1], "cells": [2,2,2] },
               "pins": [{ "select": { "face": "y-" } }] }],
  "obstacles": [{ "type": "plane", "normal": [0, 1, 0], "offset": -1 }],
  "probes": [{ "name": "c", "kind": "com", "body": "b" }] }"#;

fn scene_error(json: &str) -> SceneError {
    match parse_scene(json) {
        Err(e) => e,
        Ok(s) => s.build(std::path::Path::new(".")).expect_err("scene should be rejected"),
    }
}

fn field_of(e: &SceneError) -> String {
    match e {
        SceneError::Parse { field, .. }
        | SceneError::InvalidValue { field, .. }
        | SceneError::MissingFile { field, .. } => field.clone(),
        other => panic!("no field in {other:?}"),
    }
}

#[test]
fn the_reference_scene_is_valid() {
    parse_scene(GOOD).unwrap().build(std::path::Path::new(".")).unwrap();
}

#[test]
fn unknown_fields_are_named() {
    let e = scene_error(&GOOD.replace("\"frames\": 2", "\"frames\": 2, \"framez\": 3"));
    assert!(e.to_string().contains("framez"), "{e}");
    let e = scene_error(&GOOD.replace("\"nu\": 0.3", "\"nu\": 0.3, \"colour\": 1"));
    assert!(field_of(&e).starts_with("materials.m"), "{e}");
    assert!(e.to_string().contains("colour"), "{e}");
    let e = scene_error(&GOOD.replace("\"cells\": [2,2,2]", "\"cells\": [2,2,2], \"celss\": 1"));
    assert!(field_of(&e).starts_with("bodies[0].generator"), "{e}");
}

#[test]
fn bad_values_are_named() {
    for (from, to, field) in [
        ("\"E\": 1e5", "\"E\": -5", "materials.m.E"),
        ("\"nu\": 0.3", "\"nu\": 0.7", "materials.m.nu"),
        ("\"rho\": 1000", "\"rho\": 0", "materials.m.rho"),
        ("\"cells\": [2,2,2]", "\"cells\": [2,0,2]", "bodies[0].generator.cells[1]"),
        ("\"size\": [1,1,1]", "\"size\": [1,-1,1]", "bodies[0].generator.size.y"),
        ("\"material\": \"m\"", "\"material\": \"q\"", "bodies[0].material"),
        ("\"face\": \"y-\"", "\"face\": \"w-\"", "bodies[0].pins[0].select.face"),
        ("\"normal\": [0, 1, 0]", "\"normal\": [0, 0, 0]", "obstacles[0].normal"),
        ("\"body\": \"b\"", "\"body\": \"nobody\"", "probes[0].body"),
        ("\"frames\": 2", "\"frames\": 0", "frames"),
        ("\"version\": 1", "\"version\": 7", "version"),
        ("\"frames\": 2", "\"frames\": 2, \"dt\": -0.1", "dt"),
        ("\"frames\": 2", "\"frames\": 2, \"solver\": { \"iterations\": 0 }", "solver.iterations"),
    ] {
        let e = scene_error(&GOOD.replace(from, to));
        assert_eq!(field_of(&e), field, "{from} → {to}: {e}");
    }
    // Wrong types are parse errors naming the path.
    let e = scene_error(&GOOD.replace("\"E\": 1e5", "\"E\": \"stiff\""));
    assert_eq!(field_of(&e), "materials.m.E", "{e}");
}

#[test]
fn missing_mesh_files_are_named() {
    let json = GOOD.replace(
        "\"generator\": { \"type\": \"box\", \"size\": [1,1,1], \"cells\": [2,2,2] }",
        "\"mesh\": { \"format\": \"tetgen\", \"path\": \"no/such/mesh.node\" }",
    );
    let e = scene_error(&json);
    assert!(matches!(e, SceneError::MissingFile { .. }), "{e:?}");
    assert_eq!(field_of(&e), "bodies[0].mesh.path");
    assert!(e.to_string().contains("no/such/mesh.node"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Random meshes (NaN, huge, repeated or out-of-range indices, flat tets) never panic:
    /// validation either accepts them or says what is wrong.
    #[test]
    fn random_meshes_never_panic(
        coords in prop::collection::vec(prop_oneof![-2.0f32..2.0, Just(f32::NAN), Just(f32::INFINITY), Just(0.0)], 0..40),
        idx in prop::collection::vec(0u32..14, 0..24),
    ) {
        let positions: Vec<Vec3> = coords.chunks_exact(3).map(|c| Vec3::new(c[0], c[1], c[2])).collect();
        let tets: Vec<[u32; 4]> = idx.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]).collect();
        if let Ok(m) = TetMesh::new(positions.clone(), tets.clone()) {
            prop_assert!(m.volume() > 0.0);
            // A valid mesh builds a body and steps without NaN.
            let mut w = World::new(StepConfig { iterations: 4, ..StepConfig::default() }).unwrap();
            w.bodies.insert(SoftBodyBuilder::tetrahedral(m).build().unwrap());
            prop_assert!(!w.step().nan_detected);
        }
        let tris: Vec<[u32; 3]> = idx.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
        let _ = TriMesh::new(positions, tris);
    }

    /// Random material and body parameters: typed errors or a body, never a panic.
    #[test]
    fn random_parameters_never_panic(
        e in prop_oneof![-1e9f64..1e10, Just(f64::NAN)],
        nu in -1.0f64..1.0,
        rho in prop_oneof![-10.0f64..5000.0, Just(f64::INFINITY)],
        damping in -1.0f32..1.0,
    ) {
        let mesh = TetMesh::box_mesh(Vec3::ONE, [1, 1, 1], TetSplit::Five).unwrap();
        let r = SoftBodyBuilder::tetrahedral(mesh).material(StVK::from_young_poisson(e, nu)).density(rho).damping(damping).build();
        let ok = e > 0.0 && (0.0..0.5).contains(&nu) && rho > 0.0 && rho.is_finite() && damping >= 0.0;
        prop_assert_eq!(r.is_ok(), ok);
    }
}
