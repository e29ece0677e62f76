//! Teleoperated grasp: two kinematic rapier jaws close on a soft cube lying on a fixed table,
//! lift it 0.3 m against gravity by friction alone, hold it for 2 s, and open. Nothing attaches
//! the cube to the jaws; only the squeeze and Coulomb friction hold it.
//!
//! ```text
//! cargo run --release --example teleop_gripper
//! ```
//!
//! Printed every 0.25 s: the phase, the jaws' height, the cube's centre height, how far the cube
//! has slipped down relative to the jaws since the hold began, and the squeeze force of one
//! jaw. At the end: the slip over the 2 s hold, whether the cube fell after the release, and the
//! exact intersection check.

use pliant::prelude::*;
use pliant::rapier::RapierCoupling;
use pliant::rapier::rapier3d::prelude::{ColliderBuilder, PhysicsWorld, Pose, RigidBodyBuilder};

/// Jaw plan: close (0–0.5 s), lift 0.3 m (–1.5 s), hold (–3.5 s), open (–3.75 s), wait (–4.5 s).
fn jaws_at(t: f32, half_gap_open: f32, half_gap_closed: f32, y0: f32) -> (f32, f32) {
    let ramp = |t: f32, a: f32, b: f32| ((t - a) / (b - a)).clamp(0.0, 1.0);
    let close = ramp(t, 0.0, 0.5) - ramp(t, 3.5, 3.75);
    let gap = half_gap_open + (half_gap_closed - half_gap_open) * close;
    // Smooth lift (zero speed at both ends) so the cube is not jerked.
    let s = ramp(t, 0.5, 1.5);
    let lift = 0.3 * s * s * (3.0 - 2.0 * s);
    (gap, y0 + lift)
}

fn phase(t: f32) -> &'static str {
    match t {
        t if t < 0.5 => "close",
        t if t < 1.5 => "lift",
        t if t < 3.5 => "hold",
        t if t < 3.75 => "open",
        _ => "released",
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dt = 1.0 / 60.0;
    let mut physics = PhysicsWorld::new();
    physics.integration_parameters.dt = dt;
    // Table top at y = 0.
    physics.colliders.insert(ColliderBuilder::cuboid(0.5, 0.05, 0.5).translation(Vec3::new(0.0, -0.05, 0.0)).build());

    // The object: a 6 cm soft cube (E = 5e4 Pa, ν = 0.45, ρ = 1100: 0.24 kg).
    let edge = 0.06;
    let mut world = World::new(StepConfig { dt, ..StepConfig::default() })?;
    let mut coupling = RapierCoupling::default();
    let mesh = TetMesh::box_mesh(Vec3::splat(edge), [6, 6, 6], TetSplit::Six)?;
    let cube = world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh)
            .name("object")
            .material(StableNeoHookean::from_young_poisson(5e4, 0.45))
            .density(1100.0)
            .friction(0.8)
            .translation(Vec3::new(0.0, edge / 2.0 + 0.002, 0.0))
            .build()?,
    );

    // Jaws: 1 cm thick, 4 × 4 cm faces, friction 0.8; they squeeze 3 mm per side.
    let (half_t, y0) = (0.005, edge / 2.0 + 0.002);
    let (open, closed) = (edge / 2.0 + 0.01 + half_t, edge / 2.0 - 0.003 + half_t);
    let mut jaws = Vec::new();
    for side in [-1.0f32, 1.0] {
        let at = Vec3::new(side * open, y0, 0.0);
        jaws.push(physics.insert(
            RigidBodyBuilder::kinematic_position_based().translation(at),
            ColliderBuilder::cuboid(half_t, 0.02, 0.02).friction(0.8),
        ));
    }
    world.sync();
    let mass: f32 = world.vertex_masses().iter().sum();
    println!(
        "object: {edge} m soft cube, {mass:.3} kg (weight {:.2} N); jaws squeeze 3 mm per side, μ = 0.8",
        mass * 9.81
    );
    println!(
        "{:>6} {:>9} {:>10} {:>11} {:>10} {:>11}",
        "t [s]", "phase", "jaws y", "object y", "slip [mm]", "squeeze [N]"
    );

    let com_y = |world: &World| {
        let p = world.body_positions(cube).unwrap_or(&[]);
        p.iter().map(|p| p.y).sum::<f32>() / p.len().max(1) as f32
    };
    let frames = (4.5 / dt).round() as u32;
    let mut hold_start = None;
    let mut slip_hold = 0.0f32;
    let mut y_release = 0.0;
    for frame in 1..=frames {
        let t = frame as f32 * dt;
        let (gap, y) = jaws_at(t, open, closed, y0);
        for (k, side) in [-1.0f32, 1.0].into_iter().enumerate() {
            physics.bodies[jaws[k].0].set_next_kinematic_position(Pose::from_translation(Vec3::new(
                side * gap,
                y,
                0.0,
            )));
        }
        coupling.step_with_physics_world(&mut world, &mut physics, &());
        physics.step();
        let offset = com_y(&world) - y;
        if phase(t) == "hold" {
            let start = *hold_start.get_or_insert(offset);
            slip_hold = slip_hold.max(start - offset);
        }
        if phase(t) == "open" {
            y_release = y;
        }
        if frame % 15 == 0 {
            let squeeze = coupling.collider_impulse(jaws[1].1).x / dt;
            let slip = hold_start.map_or(0.0, |s| (s - offset) * 1e3);
            println!("{:>6.2} {:>9} {:>10.4} {:>11.4} {:>10.2} {:>11.2}", t, phase(t), y, com_y(&world), slip, squeeze);
        }
    }
    let final_y = com_y(&world);
    println!("slip during the 2 s hold: {:.2} mm", slip_hold * 1e3);
    println!(
        "after the release the object fell from {:.3} m to {:.3} m ({})",
        y_release,
        final_y,
        if final_y < edge { "back on the table" } else { "still held" }
    );
    println!("intersections at the end: {}", world.find_intersections().len());
    Ok(())
}
