//! rapier interop: every collider shape as an obstacle, two-way momentum exchange,
//! attachments made and released at run time, contact events.
#![cfg(feature = "rapier")]

use std::sync::mpsc::channel;

use pliant::prelude::*;
use pliant::rapier::RapierCoupling;
use pliant::rapier::rapier3d::parry::shape::TriMeshFlags;
use pliant::rapier::rapier3d::parry::utils::Array2;
use pliant::rapier::rapier3d::prelude::{
    ActiveEvents, BroadPhaseBvh, CCDSolver, Collider, ColliderBuilder, ColliderSet, Group, ImpulseJointSet,
    IntegrationParameters, InteractionGroups, InteractionTestMode, IslandManager, MultibodyJointSet, NarrowPhase,
    PhysicsPipeline, Pose, RigidBodyBuilder, RigidBodySet, SharedShape,
};
use pliant::rapier::{SoftChannelEventCollector, SoftCollisionEvent};

const DT: f32 = 1.0 / 60.0;

fn config(gravity: Vec3) -> StepConfig {
    StepConfig { dt: DT, gravity, ..StepConfig::default() }
}

/// A soft cube of edge `edge` with 3 cells per axis, E = 1e5, ν = 0.3, ρ = 1000.
fn cube(edge: f32, at: Vec3) -> SoftBody {
    cube_of_cells(edge, 3, at)
}

/// [`cube`] with `cells` cells per axis.
fn cube_of_cells(edge: f32, cells: u32, at: Vec3) -> SoftBody {
    let mesh = TetMesh::box_mesh(Vec3::splat(edge), [cells; 3], TetSplit::Six).unwrap();
    SoftBodyBuilder::tetrahedral(mesh)
        .material(StableNeoHookean::from_young_poisson(1e5, 0.3))
        .density(1000.0)
        .translation(at)
        .build()
        .unwrap()
}

fn com(world: &World, h: SoftBodyHandle) -> (Vec3, Vec3, f32) {
    let s = world.body_positions(h).unwrap();
    let v = world.body_velocities(h).unwrap();
    let (positions, masses) = (world.positions(), world.vertex_masses());
    let start = positions.iter().position(|p| std::ptr::eq(p, &s[0])).unwrap();
    let (mut x, mut p, mut m) = (Vec3::ZERO, Vec3::ZERO, 0.0);
    for i in 0..s.len() {
        let mi = masses[start + i];
        x += s[i].truncate() * mi;
        p += v[i].truncate() * mi;
        m += mi;
    }
    (x / m, p, m)
}

/// Unit cube corners and the 12 outward-wound triangles of its faces, scaled by `h`.
fn box_mesh(h: f32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let v = (0..8)
        .map(|k| {
            let s = |bit: u32| if k & bit == 0 { -h } else { h };
            Vec3::new(s(1), s(2), s(4))
        })
        .collect();
    let t = vec![
        [0, 2, 1],
        [1, 2, 3],
        [4, 5, 6],
        [5, 7, 6],
        [0, 1, 4],
        [1, 5, 4],
        [2, 6, 3],
        [3, 6, 7],
        [0, 4, 2],
        [2, 4, 6],
        [1, 3, 5],
        [3, 7, 5],
    ];
    (v, t)
}

/// Every listed collider shape, as (name, collider, height of its top at x = z = 0).
fn shapes() -> Vec<(&'static str, Collider, f32)> {
    let (v, t) = box_mesh(0.4);
    let heights = Array2::from_fn(9, 9, |i, j| 0.01 * ((i * 3 + j * 5) % 4) as f32);
    vec![
        ("ball", ColliderBuilder::ball(0.6).build(), 0.6),
        ("cuboid", ColliderBuilder::cuboid(0.4, 0.2, 0.4).build(), 0.2),
        ("capsule", ColliderBuilder::capsule_x(0.3, 0.2).build(), 0.2),
        ("cylinder", ColliderBuilder::cylinder(0.2, 0.5).build(), 0.2),
        ("cone", ColliderBuilder::cone(0.1, 0.9).build(), 0.1),
        ("round cuboid", ColliderBuilder::round_cuboid(0.35, 0.15, 0.35, 0.05).build(), 0.2),
        ("round cylinder", ColliderBuilder::round_cylinder(0.15, 0.45, 0.05).build(), 0.2),
        ("convex polyhedron", ColliderBuilder::convex_hull(&v).unwrap().build(), 0.4),
        (
            "oriented trimesh",
            ColliderBuilder::trimesh_with_flags(v.clone(), t.clone(), TriMeshFlags::ORIENTED).unwrap().build(),
            0.4,
        ),
        ("open trimesh", ColliderBuilder::trimesh(v, t).unwrap().build(), 0.4),
        ("heightfield", ColliderBuilder::heightfield(heights, Vec3::new(2.0, 1.0, 2.0)).build(), 0.0),
        (
            "compound",
            ColliderBuilder::compound(vec![
                (Pose::from_translation(Vec3::new(0.15, 0.0, 0.0)), SharedShape::cuboid(0.3, 0.2, 0.3)),
                (Pose::from_translation(Vec3::new(-0.15, 0.05, 0.0)), SharedShape::ball(0.15)),
            ])
            .build(),
            0.2,
        ),
    ]
}

/// A 0.1 m soft cube dropped 0.15 m onto each shape comes to rest on it, and no vertex is ever
/// deeper inside it than the contact offset.
#[test]
fn every_collider_shape_stops_a_falling_soft_cube() {
    for (name, collider, top) in shapes() {
        let mut bodies = RigidBodySet::new();
        let mut colliders = ColliderSet::new();
        let handle = colliders.insert(collider);
        let mut world = World::new(config(Vec3::new(0.0, -9.81, 0.0))).unwrap();
        let mut coupling = RapierCoupling::default();
        let offset = world.config().contact_offset;
        // The heightfield's top varies by 3 cm; start above its highest point.
        let c = world.bodies.insert(cube(0.1, Vec3::new(0.0, top + 0.05 + 0.15, 0.0)));
        let mut deepest = f32::INFINITY;
        for frame in 0..90 {
            let report = coupling.step(&mut world, &mut bodies, &colliders, &());
            assert!(!report.nan_detected, "{name}: NaN at frame {frame}");
            let shape = colliders[handle].shape();
            let pose = *colliders[handle].position();
            for p in world.body_positions(c).unwrap() {
                let proj = shape.project_point(&pose, p.truncate(), true);
                let d = (p.truncate() - proj.point).length();
                let signed = if proj.is_inside { -d } else { d };
                deepest = deepest.min(signed);
            }
        }
        let (x, p, m) = com(&world, c);
        let speed = (p / m).length();
        assert!(deepest > -offset, "{name}: a vertex went {:.2e} m deep (contact offset {offset})", -deepest);
        assert!(speed < 0.05, "{name}: still moving at {speed} m/s");
        assert!(x.y > top - 0.02, "{name}: the cube's centre is at y = {} below the top {top}", x.y);
        assert!(world.find_intersections().is_empty(), "{name}: intersections");
        eprintln!("{name}: deepest {deepest:.2e} m, rest height {:.4} m, speed {speed:.1e}", x.y);
    }
}

/// Without gravity, a soft cube thrown at a free rapier box: the linear momentum of the two
/// together is the same before and after the impact (1%), and the box was hit.
#[test]
fn coupling_conserves_linear_momentum() {
    let mut bodies = RigidBodySet::new();
    let mut colliders = ColliderSet::new();
    let rb = bodies.insert(RigidBodyBuilder::dynamic().translation(Vec3::new(0.25, 0.0, 0.0)));
    colliders.insert_with_parent(ColliderBuilder::cuboid(0.05, 0.1, 0.1).density(400.0).build(), rb, &mut bodies);
    let mut physics = PhysicsPipeline::new();
    let (mut islands, mut broad, mut narrow) = (IslandManager::new(), BroadPhaseBvh::new(), NarrowPhase::new());
    let (mut joints, mut multibody, mut ccd) = (ImpulseJointSet::new(), MultibodyJointSet::new(), CCDSolver::new());
    let mut soft_bodies = pliant::rapier::rapier3d::prelude::SoftBodySet::new();
    let params = IntegrationParameters { dt: DT, ..IntegrationParameters::default() };

    let mut world = World::new(config(Vec3::ZERO)).unwrap();

    let mut coupling = RapierCoupling::default();
    let c = world.bodies.insert(cube(0.1, Vec3::ZERO));
    world.sync();
    world.set_body_velocity(c, Vec3::new(2.0, 0.0, 0.0)).unwrap();
    let total = |world: &World, bodies: &RigidBodySet| {
        let (_, p, _) = com(world, c);
        p + bodies[rb].linvel() * bodies[rb].mass()
    };
    let before = total(&world, &bodies);
    for _ in 0..60 {
        coupling.step(&mut world, &mut bodies, &colliders, &());
        physics.step(
            Vec3::ZERO,
            &params,
            &mut islands,
            &mut broad,
            &mut narrow,
            &mut bodies,
            &mut colliders,
            &mut joints,
            &mut multibody,
            &mut soft_bodies,
            &mut ccd,
            &(),
            &(),
        );
    }
    let after = total(&world, &bodies);
    let box_speed = bodies[rb].linvel().x;
    eprintln!("momentum before {before}, after {after}; box speed {box_speed} m/s, box mass {}", bodies[rb].mass());
    assert!(box_speed > 0.2, "the box was not pushed: {box_speed} m/s");
    assert!((after - before).length() < 0.01 * before.length(), "momentum {before} → {after}");
}

/// A soft cube held by its top layer on a kinematic rapier body is lifted with it, and falls
/// once released; a new attachment at run time takes hold again.
#[test]
fn attachments_grasp_and_release_at_run_time() {
    let mut bodies = RigidBodySet::new();
    let colliders = ColliderSet::new();
    let hand = bodies.insert(RigidBodyBuilder::kinematic_position_based().translation(Vec3::new(0.0, 0.55, 0.0)));
    let mut world = World::new(config(Vec3::new(0.0, -9.81, 0.0))).unwrap();
    let mut coupling = RapierCoupling::default();
    let c = world.bodies.insert(cube(0.1, Vec3::new(0.0, 0.5, 0.0)));
    world.sync();
    let top: Vec<u32> = (0..world.body_positions(c).unwrap().len() as u32)
        .filter(|&i| world.body_positions(c).unwrap()[i as usize].y > 0.549)
        .collect();
    assert_eq!(top.len(), 16);
    // A pin of the user's before the attachment's, removed mid-lift below: the attachment must
    // still find its own pin.
    world.bodies.get_mut(c).unwrap().add_pin(Pin::fixed(vec![0]).released_at(0.0)).unwrap();
    let grip = coupling.attach_to_rigid_body(&mut world, c, &top, hand, &bodies).unwrap();
    let mut y_hand = 0.55;
    for frame in 0..30 {
        if frame == 10 {
            world.bodies.get_mut(c).unwrap().remove_pin(0).unwrap();
        }
        // Lift at 0.6 m/s.
        y_hand += 0.6 * DT;
        bodies[hand].set_next_kinematic_position(Pose::from_translation(Vec3::new(0.0, y_hand, 0.0)));
        coupling.step(&mut world, &mut bodies, &colliders, &());
        bodies[hand].set_position(Pose::from_translation(Vec3::new(0.0, y_hand, 0.0)), false);
    }
    let lifted = com(&world, c).0.y;
    assert!((lifted - (y_hand - 0.05)).abs() < 0.01, "held cube at {lifted}, hand at {y_hand}");
    // The attachment's reaction carries the cube's weight (m g dt per frame, upwards on the cube).
    let (_, _, m) = com(&world, c);
    let on_hand = coupling.attachment_impulses()[0].impulse;
    assert!((on_hand.y + m * 9.81 * DT).abs() < 0.1 * m * 9.81 * DT, "reaction {on_hand} for weight {}", m * 9.81);

    coupling.detach(&mut world, grip).unwrap();
    assert!(coupling.detach(&mut world, grip).is_err(), "detaching twice must fail");
    for _ in 0..20 {
        coupling.step(&mut world, &mut bodies, &colliders, &());
    }
    let fallen = com(&world, c).0.y;
    assert!(fallen < lifted - 0.15, "released cube did not fall: {lifted} → {fallen}");

    // Grasp again where the hand is now: the pin is reused, the cube stops falling.
    bodies[hand].set_position(Pose::from_translation(Vec3::new(0.0, fallen + 0.05, 0.0)), false);
    bodies[hand].set_next_kinematic_position(Pose::from_translation(Vec3::new(0.0, fallen + 0.05, 0.0)));
    let pins_before = world.bodies[c].pins().len();
    let _again = coupling.attach_to_rigid_body(&mut world, c, &top, hand, &bodies).unwrap();
    assert_eq!(world.bodies[c].pins().len(), pins_before, "the released pin is reused");
    for _ in 0..20 {
        coupling.step(&mut world, &mut bodies, &colliders, &());
    }
    let (x, p, m) = com(&world, c);
    assert!((p / m).length() < 0.05 && (x.y - fallen).abs() < 0.02, "regrasped cube at {} moving {}", x.y, p / m);
    assert_eq!(coupling.attachments().len(), 1);
    // A released slot reused for a vertex another attachment holds is rejected, as a new pin is.
    let other = coupling.attach_to_targets(&mut world, c, &[0, 1]).unwrap();
    coupling.detach(&mut world, other).unwrap();
    assert!(coupling.attach_to_targets(&mut world, c, &top[..1]).is_err(), "vertex {} is held twice", top[0]);
    assert!(coupling.attach_to_targets(&mut world, c, &[999]).is_err(), "vertex 999 does not exist");
}

/// A cube that lands, is thrown up and lands again: Started, Stopped, Started, each once.
#[test]
fn contact_events_fire_once_per_begin_and_end() {
    let mut bodies = RigidBodySet::new();
    let mut colliders = ColliderSet::new();
    let floor =
        colliders.insert(ColliderBuilder::cuboid(1.0, 0.1, 1.0).active_events(ActiveEvents::COLLISION_EVENTS).build());
    // A collider without the flag is touched too, and must stay silent.
    colliders.insert(ColliderBuilder::cuboid(1.0, 0.1, 1.0).translation(Vec3::new(0.0, 0.0, 2.5)).build());
    let mut world = World::new(config(Vec3::new(0.0, -9.81, 0.0))).unwrap();
    let mut coupling = RapierCoupling::default();
    let c = world.bodies.insert(cube(0.1, Vec3::new(0.0, 0.2, 0.0)));
    let (tx, rx) = channel();
    let (ftx, _frx) = channel();
    let events = SoftChannelEventCollector::new(tx, ftx);
    for frame in 0..150 {
        if frame == 60 {
            world.set_body_velocity(c, Vec3::new(0.0, 2.0, 0.0)).unwrap();
        }
        coupling.step(&mut world, &mut bodies, &colliders, &events);
    }
    let got: Vec<SoftCollisionEvent> = rx.try_iter().collect();
    let kinds: Vec<bool> = got.iter().map(|e| e.started()).collect();
    assert_eq!(kinds, vec![true, false, true], "{got:?}");
    assert!(got.iter().all(|e| e.collider() == floor && e.body() == c));
    assert!(coupling.touching(c, floor));
}

/// Two kinematic jaws squeeze a soft cube on a table, lift it 0.3 m by friction alone, hold it
/// for 2 s and open: it slips less than 1 cm during the hold and falls back after the release.
#[test]
fn gripper_holds_by_friction_and_drops_on_release() {
    // The example's resolution too: a finer cube held by the same squeeze is the harder case
    // (a sweep-clamp change that passed at 4³ let the 6³ cube slip 25 cm).
    for cells in [4, 6] {
        gripper_run(cells);
    }
}

fn gripper_run(cells: u32) {
    let dt = DT;
    let mut bodies = RigidBodySet::new();
    let mut colliders = ColliderSet::new();
    colliders.insert(ColliderBuilder::cuboid(0.5, 0.05, 0.5).translation(Vec3::new(0.0, -0.05, 0.0)).build());
    let edge = 0.06;
    let mut world = World::new(config(Vec3::new(0.0, -9.81, 0.0))).unwrap();
    let mut coupling = RapierCoupling::default();
    let mesh = TetMesh::box_mesh(Vec3::splat(edge), [cells; 3], TetSplit::Six).unwrap();
    let c = world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh)
            .material(StableNeoHookean::from_young_poisson(5e4, 0.45))
            .density(1100.0)
            .friction(0.8)
            .translation(Vec3::new(0.0, edge / 2.0 + 0.002, 0.0))
            .build()
            .unwrap(),
    );
    let (half_t, y0) = (0.005, edge / 2.0 + 0.002);
    let (open, closed) = (edge / 2.0 + 0.01 + half_t, edge / 2.0 - 0.003 + half_t);
    let jaws: Vec<_> = [-1.0f32, 1.0]
        .into_iter()
        .map(|side| {
            let b = bodies.insert(RigidBodyBuilder::kinematic_position_based().translation(Vec3::new(
                side * open,
                y0,
                0.0,
            )));
            colliders.insert_with_parent(
                ColliderBuilder::cuboid(half_t, 0.02, 0.02).friction(0.8).build(),
                b,
                &mut bodies,
            );
            b
        })
        .collect();
    let ramp = |t: f32, a: f32, b: f32| ((t - a) / (b - a)).clamp(0.0, 1.0);
    let (mut hold_start, mut slip, mut held_y) = (None, 0.0f32, 0.0);
    for frame in 1..=(4.5 / dt).round() as u32 {
        let t = frame as f32 * dt;
        let gap = open + (closed - open) * (ramp(t, 0.0, 0.5) - ramp(t, 3.5, 3.75));
        let s = ramp(t, 0.5, 1.5);
        let y = y0 + 0.3 * s * s * (3.0 - 2.0 * s);
        for (k, side) in [-1.0f32, 1.0].into_iter().enumerate() {
            bodies[jaws[k]].set_next_kinematic_position(Pose::from_translation(Vec3::new(side * gap, y, 0.0)));
        }
        let report = coupling.step(&mut world, &mut bodies, &colliders, &());
        assert!(!report.nan_detected);
        for &j in &jaws {
            let next = *bodies[j].next_position();
            bodies[j].set_position(next, false);
        }
        let cy = com(&world, c).0.y;
        if (1.5..3.5).contains(&t) {
            let start = *hold_start.get_or_insert(cy - y);
            slip = slip.max((start - (cy - y)).abs());
            held_y = cy;
        }
    }
    let final_y = com(&world, c).0.y;
    eprintln!("gripper {cells}³: slip {slip:.2e} m over the hold; held at {held_y:.3} m, after release {final_y:.3} m");
    assert!(held_y > 0.3, "the cube was not lifted: {held_y} m");
    assert!(slip < 0.01, "slip {slip} m during the hold");
    assert!(final_y < edge, "the cube did not fall after the release: {final_y} m");
    assert!(world.find_intersections().is_empty());
}

/// Collision groups and sensors, as between rapier colliders: a floor whose groups exclude the
/// soft body lets it fall through; a sensor exerts nothing but reports the body entering it; a
/// floor whose solver groups exclude it reports the contact without stopping it.
#[test]
fn collision_groups_and_sensors_are_respected() {
    let mut bodies = RigidBodySet::new();
    let mut colliders = ColliderSet::new();
    let soft_groups = InteractionGroups::new(Group::GROUP_2, Group::ALL, InteractionTestMode::And);
    // Members of group 1 that only interact with group 1: not with the soft body (group 2).
    let only_one = InteractionGroups::new(Group::GROUP_1, Group::GROUP_1, InteractionTestMode::And);
    let ghost = colliders.insert(
        ColliderBuilder::cuboid(1.0, 0.05, 1.0)
            .translation(Vec3::new(0.0, 0.3, 0.0))
            .collision_groups(only_one)
            .active_events(ActiveEvents::COLLISION_EVENTS)
            .build(),
    );
    let sensor = colliders.insert(
        ColliderBuilder::cuboid(1.0, 0.05, 1.0)
            .translation(Vec3::new(0.0, 0.0, 0.0))
            .sensor(true)
            .active_events(ActiveEvents::COLLISION_EVENTS)
            .build(),
    );
    let no_force = colliders.insert(
        ColliderBuilder::cuboid(1.0, 0.05, 1.0)
            .translation(Vec3::new(0.0, -0.3, 0.0))
            .solver_groups(only_one)
            .active_events(ActiveEvents::COLLISION_EVENTS)
            .build(),
    );
    let floor =
        colliders.insert(ColliderBuilder::cuboid(1.0, 0.05, 1.0).translation(Vec3::new(0.0, -0.6, 0.0)).build());
    let mut world = World::new(config(Vec3::new(0.0, -9.81, 0.0))).unwrap();
    let mut coupling = RapierCoupling::default();
    let c = world.bodies.insert(cube(0.1, Vec3::new(0.0, 0.5, 0.0)));
    coupling.set_collision_groups(c, soft_groups);
    let (tx, rx) = channel();
    let (ftx, _frx) = channel();
    let events = SoftChannelEventCollector::new(tx, ftx);
    for _ in 0..120 {
        coupling.step(&mut world, &mut bodies, &colliders, &events);
    }
    let y = com(&world, c).0.y;
    assert!((y - (-0.55 + 0.05 + 0.001)).abs() < 0.01, "the cube should rest on the last floor, at {y}");
    let got: Vec<SoftCollisionEvent> = rx.try_iter().collect();
    assert!(got.iter().all(|e| e.collider() != ghost), "the excluded collider reported {got:?}");
    let started = |h| got.iter().filter(|e| e.collider() == h && e.started()).count();
    let stopped = |h| got.iter().filter(|e| e.collider() == h && !e.started()).count();
    assert_eq!((started(sensor), stopped(sensor)), (1, 1), "sensor: {got:?}");
    assert!(
        got.iter()
            .any(|e| matches!(e, SoftCollisionEvent::Started { collider, sensor: true, .. } if *collider == sensor))
    );
    assert_eq!((started(no_force), stopped(no_force)), (1, 1), "solver-groups floor: {got:?}");
    assert!(coupling.touching(c, floor));
    assert!(world.find_intersections().is_empty());
}

/// A 20 kg rapier box on a light foam mattress at 60 Hz: an explicit exchange is past its
/// stability limit here (it bounced frame to frame and tipped over); the box, solved with the
/// soft step as a carrier, comes to rest on the mattress, which carries its weight.
#[test]
fn heavy_rigid_box_rests_on_a_soft_mattress() {
    use pliant::rapier::rapier3d::prelude::PhysicsWorld;
    let mut physics = PhysicsWorld::new();
    physics.integration_parameters.dt = DT;
    physics.colliders.insert(ColliderBuilder::cuboid(2.0, 0.1, 2.0).translation(Vec3::new(0.0, -0.1, 0.0)).build());
    let mass = 20.0;
    let (box_body, box_collider) = physics.insert(
        RigidBodyBuilder::dynamic().translation(Vec3::new(0.0, 0.2, 0.0)),
        ColliderBuilder::cuboid(0.1, 0.1, 0.1).mass(mass).friction(0.6),
    );
    let mut world = World::new(config(Vec3::new(0.0, -9.81, 0.0))).unwrap();
    let mut coupling = RapierCoupling::default();
    let mesh = TetMesh::box_mesh(Vec3::new(0.6, 0.08, 0.6), [12, 2, 12], TetSplit::Six).unwrap();
    let mattress = world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh)
            .material(StableNeoHookean::from_young_poisson(2e5, 0.3))
            .density(60.0)
            .translation(Vec3::new(0.0, 0.041, 0.0))
            .build()
            .unwrap(),
    );
    let (mut lowest, mut ratios, mut speeds) = (f32::INFINITY, Vec::new(), Vec::new());
    let mut mattress_velocities = Vec::new();
    for frame in 0..150 {
        coupling.step_with_physics_world(&mut world, &mut physics, &());
        physics.step();
        if frame >= 120 {
            let (_, p, m) = com(&world, mattress);
            mattress_velocities.push(p / m);
        }
        let b = &physics.bodies[box_body];
        lowest = lowest.min(b.translation().y - 0.1);
        if frame >= 120 {
            ratios.push(coupling.collider_impulse(box_collider).y / (mass * 9.81 * DT));
            let v = b.linvel();
            speeds.push(((v - Vec3::Y * v.y).length(), b.angvel().length()));
        }
    }
    let ratio = ratios.iter().sum::<f32>() / ratios.len() as f32;
    let (slide, spin) = speeds.iter().fold((0.0f32, 0.0f32), |(a, b), &(s, w)| (a.max(s), b.max(w)));
    println!("bottom lowest {lowest:.4} m, impulse / (m g dt) {ratio:.3}, slide {slide:.4} m/s, spin {spin:.4} rad/s");
    assert!((ratio - 1.0).abs() < 0.1, "the mattress carries the weight: {ratio}");
    // Measured: 0.009 m/s and 0.12 rad/s of small rocking that the fixed sweep count leaves
    // (none at 120 Hz); with the exchange explicit the box tipped over and fell off.
    assert!(slide < 0.03 && spin < 0.25, "at rest: {slide} m/s, {spin} rad/s");
    // Above the mattress's bottom (0.001 m), pressing its 8 cm foam by a few millimetres.
    assert!(lowest > 0.06, "box bottom went down to {lowest} m");
    // The ground holds the mattress, so the carrier's reaction must not be added to its
    // velocity (it was: 0.72 m/s downwards, every frame). What is left is the coupled step's
    // momentum-residual correction, which the ground cancels on the next step: frame to frame
    // it ranges over −0.27…+0.09 m/s (measured 2026-11-29), so the last frame's value is a draw
    // (0.044, 0.054 and 0.139 m/s in runs differing only in rounding); its mean over the last
    // half second is bounded instead, and every frame's value.
    let mean = mattress_velocities.iter().sum::<Vec3>() / mattress_velocities.len() as f32;
    let largest = mattress_velocities.iter().map(|v| v.length()).fold(0.0f32, f32::max);
    println!("mattress centre-of-mass velocity over the last 0.5 s: mean {mean}, largest {largest} m/s");
    assert!(mean.length() < 0.1, "mattress mean velocity {mean} m/s");
    assert!(largest < 0.5, "mattress velocity up to {largest} m/s");
    assert!(world.find_intersections().is_empty());
}

/// Thin rods and the sharp top edges of thin walls, placed between the vertex columns of a
/// coarse soft cube (2 cells per axis: vertices 10 cm apart), hold it up: no vertex ever
/// touches them, so vertex contact alone lets the cube fall through. Soft edges against
/// collider edges (soft edges against colliders) catch them. No point of any surface edge of the cube goes
/// into a collider by more than the contact offset, and the cube comes to rest on them.
#[test]
fn rods_and_ridges_between_vertices_hold_a_coarse_cube() {
    // Two fixed colliders, at x = ±`x`.
    let pair = |x: f32, part: &dyn Fn(f32) -> Collider| [part(-x), part(x)];
    let rod =
        |x: f32| ColliderBuilder::capsule_z(0.25, 0.008).translation(Vec3::new(x, 0.0, 0.0)).friction(0.5).build();
    let wall =
        |x: f32| ColliderBuilder::cuboid(0.004, 0.05, 0.25).translation(Vec3::new(x, -0.05, 0.0)).friction(0.5).build();
    for (name, parts) in [("rods", pair(0.06, &rod)), ("walls", pair(0.05, &wall))] {
        let mut bodies = RigidBodySet::new();
        let mut colliders = ColliderSet::new();
        let handles: Vec<_> = parts.into_iter().map(|c| colliders.insert(c)).collect();
        let mut world = World::new(config(Vec3::new(0.0, -9.81, 0.0))).unwrap();
        let mut coupling = RapierCoupling::default();
        let offset = world.config().contact_offset;
        let c = world.bodies.insert(cube_of_cells(0.2, 2, Vec3::new(0.0, 0.15, 0.0)));
        let mut deepest = f32::INFINITY;
        for frame in 0..120 {
            let report = coupling.step(&mut world, &mut bodies, &colliders, &());
            assert!(!report.nan_detected, "{name}: NaN at frame {frame}");
            let positions = world.positions();
            for &[a, b] in world.surface_edges() {
                let (pa, pb) = (positions[a as usize].truncate(), positions[b as usize].truncate());
                for k in 0..=40 {
                    let p = pa + (pb - pa) * (k as f32 / 40.0);
                    for &h in &handles {
                        let proj = colliders[h].shape().project_point(colliders[h].position(), p, true);
                        let d = (p - proj.point).length();
                        deepest = deepest.min(if proj.is_inside { -d } else { d });
                    }
                }
            }
        }
        let (x, p, m) = com(&world, c);
        let speed = (p / m).length();
        eprintln!("{name}: deepest edge point {deepest:.2e} m, centre y {:.4} m, speed {speed:.1e} m/s", x.y);
        assert!(deepest > -offset, "{name}: an edge went {:.2e} m into a collider (offset {offset})", -deepest);
        assert!(x.y > 0.05, "{name}: the cube fell through: centre at y = {}", x.y);
        assert!(speed < 0.05, "{name}: still moving at {speed} m/s");
        assert!(world.find_intersections().is_empty(), "{name}: intersections");
    }
}

/// A 60 m/s cube stopped by a fixed rapier wall is redone by the fallback every frame; the
/// coupling's momentum correction must leave those frames alone. It read the fast path's
/// residual at the fallback's state as sweep drift and took the cube's own momentum out once
/// more, doubling its velocity every frame it was held (60 → 92 → 185 → … → 34,000 m/s in 12
/// frames, pressed against the wall).
#[test]
fn a_cube_held_against_a_rapier_wall_gains_no_speed() {
    let mut world = World::new(config(Vec3::ZERO)).unwrap();
    let mesh = TetMesh::box_mesh(Vec3::splat(0.05), [4, 4, 4], TetSplit::Six).unwrap();
    let body = SoftBodyBuilder::tetrahedral(mesh)
        .material(StableNeoHookean::from_young_poisson(1e6, 0.3))
        .density(1000.0)
        .velocity(Vec3::new(60.0, 0.0, 0.0))
        .build()
        .unwrap();
    let h = world.bodies.insert(body);
    let (mut bodies, mut colliders) = (RigidBodySet::new(), ColliderSet::new());
    colliders.insert(ColliderBuilder::cuboid(0.01, 1.0, 1.0).translation(Vec3::new(1.5, 0.0, 0.0)).build());
    let mut coupling = RapierCoupling::default();
    let mut held = 0;
    for frame in 0..8 {
        let report = coupling.step(&mut world, &mut bodies, &colliders, &());
        held += (report.fallbacks > 0) as u32;
        let fastest = world.body_velocities(h).unwrap().iter().map(|v| v.truncate().length()).fold(0.0, f32::max);
        assert!(fastest < 60.0 * 1.05, "frame {frame}: a vertex at {fastest} m/s");
        let front = world.body_positions(h).unwrap().iter().map(|p| p.x).fold(f32::MIN, f32::max);
        assert!(front <= 1.49 + 1e-4, "frame {frame}: the cube's front at {front} m, through the wall's face");
    }
    assert!(held >= 4, "the cube was held against the wall in {held} of 8 frames: the test lost its premise");
}
