//! A heavy dynamic rapier box dropped onto a soft mattress lying on a fixed rapier ground: the
//! mattress stops and carries it, and the box feels the mattress's push (two-way coupling).
//!
//! ```text
//! cargo run --release --example rigid_on_soft [-- --hz 60] [--stiffening]
//! ```
//!
//! Printed every 0.25 s: the box's height and vertical velocity (read after rapier's step, which
//! adds g·dt over its substeps: about −0.06 m/s at 60 Hz while the box stays put), how far its
//! bottom is below the mattress's rest top, and the impulse the mattress gave it in that frame
//! against its weight × dt (1 at rest). At the end: the box's horizontal and angular speed, and
//! the exact intersection check.
//!
//! The box touches nothing rigid, so the soft step solves its motion with the mattress (a
//! carrier, `solver/carrier.rs`) and rapier is handed the impulse that reproduces it: at any
//! frame rate the box comes to rest. (With the box's pose only predicted, at 60 Hz this 20 kg
//! box on this contact was past the explicit limit `k h²/m < 4/3`, bounced frame to frame and
//! tipped over by 3 s.)

use pliant::prelude::*;
use pliant::rapier::RapierCoupling;
use pliant::rapier::rapier3d::prelude::{ColliderBuilder, PhysicsWorld, RigidBodyBuilder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut hz, mut stiffening) = (60.0f32, false);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--hz" => hz = args.next().and_then(|s| s.parse().ok()).ok_or("--hz needs a frame rate")?,
            "--stiffening" => stiffening = true,
            other => return Err(format!("unknown argument {other}; use --hz N, --stiffening").into()),
        }
    }
    let dt = 1.0 / hz;
    let mut physics = PhysicsWorld::new();
    physics.integration_parameters.dt = dt;
    physics.colliders.insert(ColliderBuilder::cuboid(2.0, 0.1, 2.0).translation(Vec3::new(0.0, -0.1, 0.0)).build());
    // A 0.2 m box of 20 kg, 0.15 m above the mattress.
    let box_mass = 20.0;
    let (box_body, box_collider) = physics.insert(
        RigidBodyBuilder::dynamic().translation(Vec3::new(0.0, 0.35, 0.0)),
        ColliderBuilder::cuboid(0.1, 0.1, 0.1).mass(box_mass).friction(0.6),
    );

    // Mattress: 0.8 × 0.1 × 0.8 m foam, E = 2e5 Pa, lying on the ground.
    let mut world = World::new(StepConfig { dt, contact_stiffening: stiffening, ..StepConfig::default() })?;
    let mut coupling = RapierCoupling::default();
    let mesh = TetMesh::box_mesh(Vec3::new(0.8, 0.1, 0.8), [16, 3, 16], TetSplit::Six)?;
    let mattress = world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh)
            .name("mattress")
            .material(StableNeoHookean::from_young_poisson(2e5, 0.3))
            .density(60.0)
            .translation(Vec3::new(0.0, 0.051, 0.0))
            .build()?,
    );
    println!("rapier box: {box_mass} kg; mattress 0.8 × 0.1 × 0.8 m, E = 2e5 Pa; dt = {dt:.4} s");
    println!(
        "{:>6} {:>10} {:>12} {:>14} {:>16}",
        "t [s]", "box y [m]", "box vy [m/s]", "pressed [mm]", "impulse/(m g dt)"
    );
    let weight_dt = box_mass * 9.81 * dt;
    let frames = (3.0 / dt).round() as u32;
    for frame in 1..=frames {
        coupling.step_with_physics_world(&mut world, &mut physics, &());
        physics.step();
        if frame % (frames / 12) == 0 {
            let b = &physics.bodies[box_body];
            let bottom = b.translation().y - 0.1;
            let j = coupling.collider_impulse(box_collider);
            println!(
                "{:>6.2} {:>10.4} {:>12.4} {:>14.2} {:>16.3}",
                frame as f32 * dt,
                b.translation().y,
                b.linvel().y,
                (0.101 - bottom).max(0.0) * 1e3,
                j.y / weight_dt
            );
        }
    }
    let lowest = world.body_positions(mattress).unwrap_or(&[]).iter().map(|p| p.y).fold(f32::INFINITY, f32::min);
    let b = &physics.bodies[box_body];
    println!(
        "box at the end: horizontal speed {:.4} m/s, angular speed {:.4} rad/s",
        (b.linvel() - Vec3::Y * b.linvel().y).length(),
        b.angvel().length()
    );
    println!("lowest mattress vertex: {lowest:.5} m (ground at 0)");
    println!("intersections at the end: {}", world.find_intersections().len());
    Ok(())
}
