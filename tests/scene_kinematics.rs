//! Pins and kinematic targets: prescribed vertices sit exactly on their end-of-step targets
//! (no lag behind a moving target), a pin lets go at its release time and the vertices keep
//! moving, scripted targets follow the caller, and pins can be added and removed at run time.

use pliant::prelude::*;

fn cloth_world() -> (World, SoftBodyHandle, Vec<u32>) {
    let mut world = World::new(StepConfig { threads: 1, ..StepConfig::default() }).unwrap();
    let mesh = TriMesh::cloth_grid(Vec2::new(0.5, 0.5), [10, 10]).unwrap();
    let edge: Vec<u32> = (0..mesh.vertex_count() as u32).filter(|&i| mesh.positions()[i as usize].x < -0.249).collect();
    let path = KinematicPath {
        keyframes: vec![
            Keyframe { time: 0.0, translation: Vec3::ZERO, rotation: Quat::IDENTITY },
            Keyframe { time: 1.0, translation: Vec3::new(0.3, 0.2, 0.0), rotation: Quat::from_rotation_y(1.0) },
        ],
        pivot: None,
    };
    let cloth = ClothBuilder::new(mesh)
        .name("flag")
        .translation(Vec3::new(0.0, 1.0, 0.0))
        .pin(Pin::path(edge.clone(), path).released_at(1.5))
        .build()
        .unwrap();
    let h = world.bodies.insert(cloth);
    (world, h, edge)
}

#[test]
fn pinned_vertices_follow_their_path_exactly_then_release() {
    let (mut world, h, edge) = cloth_world();
    world.sync();
    let anchors: Vec<Vec3> = edge.iter().map(|&i| world.body_positions(h).unwrap()[i as usize].truncate()).collect();
    let pivot = anchors.iter().sum::<Vec3>() / anchors.len() as f32;
    for _ in 0..60 {
        world.step();
        let t = world.time().min(1.0) as f32;
        let (tr, rot) = (Vec3::new(0.3, 0.2, 0.0) * t, Quat::from_rotation_y(t));
        let x = world.body_positions(h).unwrap();
        for (&i, &a) in edge.iter().zip(&anchors) {
            let target = rot * (a - pivot) + pivot + tr;
            let lag = (x[i as usize].truncate() - target).length();
            assert!(lag < 1e-5, "t = {t}: vertex {i} lags its target by {lag} m");
        }
    }
    // Held still after the last keyframe, then released at 1.5 s: the edge falls.
    for _ in 0..30 {
        world.step();
    }
    let held = world.body_positions(h).unwrap()[edge[0] as usize];
    for _ in 0..30 {
        world.step();
    }
    let fallen = world.body_positions(h).unwrap()[edge[0] as usize];
    assert!(fallen.y < held.y - 0.05, "released edge did not fall: {} → {}", held.y, fallen.y);
}

#[test]
fn scripted_targets_and_run_time_pins() {
    let mut world = World::new(StepConfig::default()).unwrap();
    let mesh = TetMesh::box_mesh(Vec3::splat(0.1), [3, 3, 3], TetSplit::Six).unwrap();
    let top: Vec<u32> = (0..mesh.vertex_count() as u32).filter(|&i| mesh.positions()[i as usize].y > 0.049).collect();
    let start: Vec<Vec3> = top.iter().map(|&i| mesh.positions()[i as usize] + Vec3::Y).collect();
    let h = world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh)
            .translation(Vec3::Y)
            .pin(Pin::scripted(top.clone(), start.clone()))
            .build()
            .unwrap(),
    );
    // A "hand" lifts the top face 1 cm per step.
    for k in 1..=10 {
        let goal: Vec<Vec3> = start.iter().map(|p| *p + Vec3::Y * (0.01 * k as f32)).collect();
        world.set_pin_targets(h, 0, &goal).unwrap();
        world.step();
        let x = world.body_positions(h).unwrap();
        for (&i, g) in top.iter().zip(&goal) {
            assert!((x[i as usize].truncate() - *g).length() < 1e-5);
        }
    }
    // Release at run time: the body falls; grasp again: it is held where it is.
    let y_release = world.body_positions(h).unwrap()[top[0] as usize].y;
    world.bodies.get_mut(h).unwrap().remove_pin(0).unwrap();
    for _ in 0..10 {
        world.step();
    }
    let y_free = world.body_positions(h).unwrap()[top[0] as usize].y;
    // Released moving up at 0.6 m/s: after 1/6 s it is ≥ 3 cm lower (ballistic estimate).
    assert!(y_free < y_release - 0.03, "released body did not fall: {y_release} → {y_free}");
    world.bodies.get_mut(h).unwrap().add_pin(Pin::fixed(top.clone())).unwrap();
    world.step();
    let held = world.body_positions(h).unwrap()[top[0] as usize];
    for _ in 0..10 {
        world.step();
    }
    assert!((world.body_positions(h).unwrap()[top[0] as usize] - held).length() < 1e-6);
    // A bad run-time pin is a typed error and changes nothing.
    let e = world.bodies.get_mut(h).unwrap().add_pin(Pin::fixed(vec![9999])).unwrap_err();
    assert!(e.to_string().contains("vertex 9999"), "{e}");
    assert_eq!(world.bodies[h].pins().len(), 1);
}
