//! Edits between steps: pins that release inside a substep, a replaced body set, teleports of
//! pinned bodies. (Regressions found in review of the foundation.)

use pliant::prelude::*;

fn small_box() -> TetMesh {
    TetMesh::box_mesh(Vec3::splat(0.1), [2, 2, 2], TetSplit::Six).unwrap()
}

#[test]
fn pin_releasing_inside_the_first_substep_does_not_jump() {
    let mut world = World::new(StepConfig::default()).unwrap();
    let h = world.bodies.insert(
        SoftBodyBuilder::tetrahedral(small_box())
            .translation(Vec3::new(3.0, 2.0, 1.0))
            .pin(Pin::fixed(vec![0, 1, 2]).released_at(0.01))
            .build()
            .unwrap(),
    );
    world.sync();
    let before: Vec<Vec4> = world.body_positions(h).unwrap().to_vec();
    world.step();
    for (a, b) in before.iter().zip(world.body_positions(h).unwrap()) {
        // Held for this step (released at 0.01 s inside the 1/60 s step), never sent elsewhere.
        assert!((*a - *b).length() < 0.01, "{a} → {b}");
    }
    for _ in 0..30 {
        world.step();
    }
    assert!(world.body_positions(h).unwrap()[0].y < before[0].y - 0.3, "released body did not fall");
}

#[test]
fn replacing_the_body_set_rebuilds_the_state() {
    let mut world = World::new(StepConfig::default()).unwrap();
    world.bodies.insert(SoftBodyBuilder::tetrahedral(small_box()).translation(Vec3::Y).build().unwrap());
    for _ in 0..5 {
        world.step();
    }
    // A new set whose first handle equals the old one's, with a larger body.
    world.bodies = BodySet::new();
    let big = TetMesh::box_mesh(Vec3::splat(0.2), [4, 4, 4], TetSplit::Six).unwrap();
    let h =
        world.bodies.insert(SoftBodyBuilder::tetrahedral(big).translation(Vec3::new(0.0, 5.0, 0.0)).build().unwrap());
    let r = world.step();
    assert!(!r.nan_detected);
    let x = world.body_positions(h).unwrap();
    assert_eq!(x.len(), 125);
    // It starts from its own rest shape at y = 5, not from the old body's state.
    assert!(x.iter().all(|p| p.y > 4.8), "min y {}", x.iter().map(|p| p.y).fold(f32::MAX, f32::min));
}

#[test]
fn teleporting_a_pinned_body_moves_its_pins() {
    let mut world = World::new(StepConfig::default()).unwrap();
    let mesh = small_box();
    let n = mesh.vertex_count();
    let h = world.bodies.insert(SoftBodyBuilder::tetrahedral(mesh).pinned(&[0, 1]).build().unwrap());
    world.step();
    let moved: Vec<Vec3> = world.body_positions(h).unwrap().iter().map(|p| p.truncate() + Vec3::X).collect();
    world.set_body_positions(h, &moved).unwrap();
    world.step();
    let x = world.body_positions(h).unwrap();
    assert_eq!(x.len(), n);
    for v in [0usize, 1] {
        assert!((x[v].truncate() - moved[v]).length() < 1e-5, "pinned vertex {v} snapped back");
    }
}

#[test]
fn removing_a_body_keeps_the_others_state() {
    let mut world = World::new(StepConfig::default()).unwrap();
    let a = world.bodies.insert(SoftBodyBuilder::tetrahedral(small_box()).translation(Vec3::Y).build().unwrap());
    let b = world
        .bodies
        .insert(SoftBodyBuilder::tetrahedral(small_box()).translation(Vec3::new(1.0, 1.0, 0.0)).build().unwrap());
    for _ in 0..10 {
        world.step();
    }
    let vb: Vec<Vec4> = world.body_velocities(b).unwrap().to_vec();
    world.bodies.remove(a);
    world.sync();
    assert_eq!(world.body_velocities(b).unwrap(), &vb[..]);
    assert!(world.body_positions(a).is_none());
    world.step();
    assert!(world.body_velocities(b).unwrap()[0].y < vb[0].y, "keeps falling");
}

/// With `measure_state` off a CPU step leaves its report's measurements empty (the solver does
/// not need them), and `complete_report` measures the current state into it, as the default
/// configuration's step does.
#[test]
fn state_measurement_can_be_left_to_complete_report() {
    let run = |measure_state: bool| {
        let mut world = World::new(StepConfig { measure_state, ..StepConfig::default() }).unwrap();
        world.obstacles.push(Obstacle::ground(0.0, 0.5));
        world
            .bodies
            .insert(SoftBodyBuilder::tetrahedral(small_box()).translation(Vec3::new(0.0, 0.2, 0.0)).build().unwrap());
        let mut report = world.step();
        for _ in 0..9 {
            report = world.step();
        }
        let before = report.clone();
        world.complete_report(&mut report);
        (before, report)
    };
    let (measured, completed) = run(true);
    assert_eq!(measured, completed, "a measured CPU report is complete");
    assert!(measured.max_speed > 0.1 && measured.min_obstacle_distance.is_some());
    let (skipped, completed_later) = run(false);
    assert_eq!(skipped.max_speed, 0.0);
    assert_eq!(skipped.min_obstacle_distance, None);
    assert_eq!(completed_later.energy, measured.energy);
    assert_eq!(completed_later.max_speed, measured.max_speed);
    assert_eq!(completed_later.min_obstacle_distance, measured.min_obstacle_distance);
}
