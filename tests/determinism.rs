//! Determinism: two runs with the same thread count are bitwise equal, and so are runs with 1
//! and 2 threads (every per-vertex computation reads the same inputs whatever thread runs it,
//! and every reduction has a fixed order).

use pliant::prelude::*;

fn run(threads: usize) -> Vec<u32> {
    let config = StepConfig { threads, iterations: 12, ..StepConfig::default() };
    let mut world = World::new(config).unwrap();
    let cube = TetMesh::box_mesh(Vec3::splat(0.2), [7, 7, 7], TetSplit::Six).unwrap();
    world.bodies.insert(
        SoftBodyBuilder::tetrahedral(cube)
            .rotation(Quat::from_rotation_z(0.4))
            .translation(Vec3::new(0.0, 0.3, 0.0))
            .velocity(Vec3::new(0.5, 0.0, 0.2))
            .build()
            .unwrap(),
    );
    let cloth = TriMesh::cloth_grid(Vec2::new(0.6, 0.6), [20, 20]).unwrap();
    world.bodies.insert(ClothBuilder::new(cloth).translation(Vec3::new(0.8, 0.4, 0.0)).build().unwrap());
    world.obstacles.push(Obstacle::ground(0.0, 0.5));
    world.obstacles.push(Obstacle::sphere(Vec3::new(0.8, 0.15, 0.0), 0.15, 0.3).unwrap());
    for _ in 0..40 {
        world.step();
    }
    world.positions().iter().flat_map(|p| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()]).collect()
}

#[test]
fn same_thread_count_is_bitwise_repeatable() {
    assert_eq!(run(2), run(2));
}

#[test]
fn one_and_two_threads_are_bitwise_identical() {
    assert_eq!(run(1), run(2));
}
