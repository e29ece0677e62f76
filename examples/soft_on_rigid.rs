//! A soft cube dropped onto a dynamic rapier box that rests on a fixed rapier ground: the two
//! worlds step together, the soft cube pushes the box down into its ground contact, and the
//! box's contact carries both weights.
//!
//! ```text
//! cargo run --release --example soft_on_rigid
//! ```
//!
//! Printed every 0.25 s: the soft cube's centre height, the box's height and speed, and the
//! impulse the soft cube gave the box in that frame against the cube's weight × dt (equal at
//! rest). At the end: the exact intersection check.

use pliant::prelude::*;
use pliant::rapier::RapierCoupling;
use pliant::rapier::rapier3d::prelude::{ColliderBuilder, PhysicsWorld, RigidBodyBuilder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dt = 1.0 / 60.0;
    let mut physics = PhysicsWorld::new();
    physics.integration_parameters.dt = dt;
    // Ground: a fixed slab with its top at y = 0.
    physics.colliders.insert(ColliderBuilder::cuboid(2.0, 0.1, 2.0).translation(Vec3::new(0.0, -0.1, 0.0)).build());
    // A 0.4 × 0.2 × 0.4 m box of 5 kg resting on it.
    let (box_body, box_collider) = physics.insert(
        RigidBodyBuilder::dynamic().translation(Vec3::new(0.0, 0.1, 0.0)),
        ColliderBuilder::cuboid(0.2, 0.1, 0.2).mass(5.0).friction(0.6),
    );

    let mut world = World::new(StepConfig { dt, ..StepConfig::default() })?;

    let mut coupling = RapierCoupling::default();
    let mesh = TetMesh::box_mesh(Vec3::splat(0.15), [6, 6, 6], TetSplit::Six)?;
    let cube = world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh)
            .name("soft cube")
            .material(StableNeoHookean::from_young_poisson(1e5, 0.3))
            .density(1000.0)
            .translation(Vec3::new(0.02, 0.5, 0.0))
            .build()?,
    );
    world.sync();
    let mass: f32 = world.vertex_masses().iter().sum();
    println!("soft cube: {:.3} kg; rapier box: 5 kg; dt = {dt:.4} s", mass);
    println!(
        "{:>6} {:>12} {:>10} {:>12} {:>16}",
        "t [s]", "cube y [m]", "box y [m]", "box v [m/s]", "impulse/(m g dt)"
    );
    let weight_dt = mass * 9.81 * dt;
    let frames = 180;
    for frame in 1..=frames {
        let report = coupling.step_with_physics_world(&mut world, &mut physics, &());
        physics.step();
        if report.nan_detected {
            println!("frame {frame}: non-finite state rolled back");
        }
        if frame % 15 == 0 {
            let ys = world.body_positions(cube).unwrap_or(&[]);
            let cy = ys.iter().map(|p| p.y).sum::<f32>() / ys.len().max(1) as f32;
            let b = &physics.bodies[box_body];
            let j = coupling.collider_impulse(box_collider);
            println!(
                "{:>6.2} {:>12.4} {:>10.4} {:>12.4} {:>16.3}",
                frame as f32 * dt,
                cy,
                b.translation().y,
                b.linvel().length(),
                -j.y / weight_dt
            );
        }
    }
    let crossings = world.find_intersections();
    println!("intersections at the end: {}", crossings.len());
    Ok(())
}
