//! A step that would produce NaN or infinity never reaches the caller. With the fallback off the
//! offending body is rolled back at rest, the event names it, and other bodies carry on; with
//! the fallback on (the default) its island's step is redone by the augmented-Lagrangian solver,
//! which keeps the body intact.

use pliant::prelude::*;

#[test]
fn overflowing_step_is_rolled_back_with_an_event_naming_the_body() {
    // Surface contact off: with it on, a pinned vertex approaches its target only within its
    // contact displacement bound, so this glitch could not even reach the elements. The
    // fallback off: this is the last guard's test.
    let config =
        StepConfig { surface_contact: false, fallback: pliant::FallbackPolicy::Never, ..StepConfig::default() };
    let mut world = World::new(config).unwrap();
    let mesh = TetMesh::box_mesh(Vec3::splat(0.1), [2, 2, 2], TetSplit::Six).unwrap();
    let corner = (0..mesh.vertex_count() as u32).find(|&i| mesh.positions()[i as usize] == Vec3::splat(0.05)).unwrap();
    let wild = world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh.clone())
            .name("hand_driven")
            .translation(Vec3::new(0.0, 1.0, 0.0))
            .pin(Pin::scripted(vec![corner], vec![Vec3::new(0.05, 1.05, 0.05)]))
            .build()
            .unwrap(),
    );
    let calm = world
        .bodies
        .insert(SoftBodyBuilder::tetrahedral(mesh).name("calm").translation(Vec3::new(1.0, 1.0, 0.0)).build().unwrap());
    world.obstacles.push(Obstacle::ground(0.0, 0.5));
    assert!(!world.step().nan_detected);
    let before: Vec<Vec4> = world.body_positions(wild).unwrap().to_vec();
    // A tracking glitch: the hand target jumps to 3e38 m. It is finite, so accepted, but the
    // element stresses overflow f32 inside the step.
    world.set_pin_targets(wild, 0, &[Vec3::splat(3e38)]).unwrap();
    let report = world.step();
    assert!(report.nan_detected);
    assert_eq!(report.rolled_back, vec![wild]);
    let events = world.drain_events();
    assert_eq!(events.len(), 1, "{events:?}");
    match &events[0] {
        PliantEvent::NonFiniteState { body, name, .. } => {
            assert_eq!(*body, wild);
            assert_eq!(name, "hand_driven");
        }
        other => panic!("unexpected event {other:?}"),
    }
    assert!(events[0].to_string().contains("body `hand_driven`"));
    // Restored where it was, at rest; nothing non-finite is visible; the other body moved on.
    assert_eq!(world.body_positions(wild).unwrap(), &before[..]);
    assert!(world.body_velocities(wild).unwrap().iter().all(|v| *v == Vec4::ZERO));
    assert!(world.positions().iter().chain(world.velocities()).all(|p| p.is_finite()));
    assert!(report.energy.total().is_finite());
    assert!(world.body_velocities(calm).unwrap().iter().all(|v| v.y < 0.0));
    // Once the target is sane again, the body simulates normally.
    world.set_pin_targets(wild, 0, &[Vec3::new(0.05, 1.05, 0.05)]).unwrap();
    let r = world.step();
    assert!(!r.nan_detected);
    assert!(world.drain_events().is_empty());
}

/// The same glitch with the fallback on: the safety check sees the non-finite fast step, the
/// augmented-Lagrangian step redoes it; a redo that cannot be valid either is put back at rest.
/// No inverted tet, no non-finite value, and the body steps normally once the target is sane.
#[test]
fn overflowing_step_is_redone_by_the_fallback() {
    let config = StepConfig { surface_contact: false, ..StepConfig::default() };
    let mut world = World::new(config).unwrap();
    let mesh = TetMesh::box_mesh(Vec3::splat(0.1), [2, 2, 2], TetSplit::Six).unwrap();
    let corner = (0..mesh.vertex_count() as u32).find(|&i| mesh.positions()[i as usize] == Vec3::splat(0.05)).unwrap();
    let wild = world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh)
            .name("hand_driven")
            .translation(Vec3::new(0.0, 1.0, 0.0))
            .pin(Pin::scripted(vec![corner], vec![Vec3::new(0.05, 1.05, 0.05)]))
            .build()
            .unwrap(),
    );
    assert!(!world.step().nan_detected);
    world.set_pin_targets(wild, 0, &[Vec3::splat(3e38)]).unwrap();
    let report = world.step();
    assert!(report.nan_detected, "the fast step's overflow is reported");
    let island = report.islands.iter().find(|i| i.bodies.contains(&wild)).unwrap();
    assert_eq!(island.reason, Some(pliant::FallbackReason::NonFinite));
    // Redone, or (when even the redo cannot be valid, as for this target) put back at rest.
    use pliant::StepPath;
    assert!(matches!(island.path, StepPath::Fallback | StepPath::FallbackTruncated | StepPath::Restored));
    if island.path == StepPath::Restored {
        assert_eq!(report.rolled_back, vec![wild]);
    }
    assert!(world.positions().iter().chain(world.velocities()).all(|p| p.is_finite()));
    let j = world.min_volume_ratio().expect("tets");
    assert!(j > 0.0, "an inverted tet: J = {j}");
    world.set_pin_targets(wild, 0, &[Vec3::new(0.05, 1.05, 0.05)]).unwrap();
    for _ in 0..3 {
        let r = world.step();
        assert!(!r.nan_detected);
    }
}
