//! A VR finger poke: a kinematic rapier capsule (a fingertip, r = 1 cm) presses 3 cm into a
//! soft pad at 1 m/s, holds, and withdraws at 1 m/s. The pad's reaction on the capsule is what
//! a haptic device would render.
//!
//! ```text
//! cargo run --release --example vr_poke
//! ```
//!
//! The loop runs at 240 Hz (a haptics-friendly rate). Printed every 10 ms: the fingertip's
//! depth below the pad's top and the force the pad exerts on the capsule (the coupled contact
//! impulse of the frame / dt). At the end: the largest force, the force at full depth against a
//! flat-punch estimate, and the exact intersection check.

use pliant::prelude::*;
use pliant::rapier::RapierCoupling;
use pliant::rapier::rapier3d::prelude::{ColliderBuilder, PhysicsWorld, Pose, RigidBodyBuilder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dt = 1.0 / 240.0;
    let mut physics = PhysicsWorld::new();
    physics.integration_parameters.dt = dt;
    let (radius, half_height) = (0.01, 0.03);
    let top = 0.06;
    // The capsule's tip starts 5 mm above the pad.
    let tip_start = top + 0.005;
    let centre = |tip: f32| Vec3::new(0.0, tip + radius + half_height, 0.0);
    let (finger, finger_collider) = physics.insert(
        RigidBodyBuilder::kinematic_position_based().translation(centre(tip_start)),
        ColliderBuilder::capsule_y(half_height, radius).friction(0.5),
    );

    // Pad: 0.2 × 0.06 × 0.2 m, E = 1e5 Pa, ν = 0.45, bottom layer fixed.
    let mut world = World::new(StepConfig { dt, ..StepConfig::default() })?;
    let mut coupling = RapierCoupling::default();
    let (young, poisson) = (1e5f64, 0.45f64);
    let mesh = TetMesh::box_mesh(Vec3::new(0.2, top, 0.2), [20, 6, 20], TetSplit::Six)?;
    let bottom: Vec<u32> =
        (0..mesh.vertex_count() as u32).filter(|&i| mesh.positions()[i as usize].y < -top / 2.0 + 1e-6).collect();
    let pad = world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh)
            .name("pad")
            .material(StableNeoHookean::from_young_poisson(young, poisson))
            .density(1100.0)
            .damping(0.002)
            .translation(Vec3::new(0.0, top / 2.0, 0.0))
            .pinned(&bottom)
            .build()?,
    );

    // Motion: 5 mm approach + 3 cm press at 1 m/s, hold 0.1 s, withdraw at 1 m/s, rest 0.05 s.
    let speed = 1.0;
    let depth = 0.03;
    let t_press = (tip_start - top + depth) / speed;
    let t_hold = t_press + 0.1;
    let t_back = t_hold + (tip_start - top + depth) / speed;
    let t_end = t_back + 0.05;
    let tip_at = |t: f32| {
        if t < t_press {
            tip_start - speed * t
        } else if t < t_hold {
            top - depth
        } else if t < t_back {
            top - depth + speed * (t - t_hold)
        } else {
            tip_start
        }
    };
    println!("pad 0.2 × 0.06 × 0.2 m, E = {young:.0e} Pa, ν = {poisson}; capsule r = 1 cm; 240 Hz");
    println!("{:>8} {:>12} {:>10}", "t [ms]", "depth [mm]", "force [N]");
    let frames = (t_end / dt).ceil() as u32;
    let (mut peak, mut held) = (0.0f32, Vec::new());
    for frame in 1..=frames {
        let t = frame as f32 * dt;
        physics.bodies[finger].set_next_kinematic_position(Pose::from_translation(centre(tip_at(t))));
        coupling.step_with_physics_world(&mut world, &mut physics, &());
        physics.step();
        let force = coupling.collider_impulse(finger_collider).y / dt;
        peak = peak.max(force);
        if (t_press + 0.05..t_hold).contains(&t) {
            held.push(force);
        }
        if frame % 3 == 0 {
            println!("{:>8.1} {:>12.2} {:>10.3}", t * 1e3, (top - tip_at(t)).max(0.0) * 1e3, force);
        }
    }
    let held_mean = held.iter().sum::<f32>() / held.len().max(1) as f32;
    // A rigid flat punch of radius a pressed d into a half-space: F = 2 a E* d, E* = E/(1−ν²).
    // The capsule's round tip touches over less than its radius and the pad is thin and fixed
    // below, so this is a scale, not a reference.
    let e_star = young / (1.0 - poisson * poisson);
    let punch = 2.0 * radius as f64 * e_star * depth as f64;
    println!("largest force: {peak:.3} N; mean over the second half of the hold: {held_mean:.3} N");
    println!("flat-punch scale 2·a·E*·d = {punch:.2} N (a = capsule radius)");
    let _ = pad;
    println!("intersections at the end: {}", world.find_intersections().len());
    Ok(())
}
