//! The sparse-inverse local–global fast path (`SolverChoice::LocalGlobal`, docs/algorithms.md
//! §3) on the scenes VBD needs many sweeps or substeps for.

mod common;

use pliant::prelude::*;
use pliant::{LocalGlobalSettings, SolverChoice};

const EULER_BERNOULLI: f64 = 0.0491;

/// The 2 m cantilever (E = 1.2e8 Pa, ν = 0) at `cells`, clamped at x = 0, on one 1/60 s step
/// per frame with `iterations` local–global iterations.
fn cantilever(cells: [u32; 3], iterations: u32) -> (World, Vec<usize>, SoftBodyHandle) {
    cantilever_with(cells, iterations, SolverChoice::LocalGlobal)
}

fn cantilever_with(cells: [u32; 3], iterations: u32, solver: SolverChoice) -> (World, Vec<usize>, SoftBodyHandle) {
    let config = StepConfig {
        threads: 2,
        local_global: LocalGlobalSettings { iterations, wait_for_factor: true },
        ..StepConfig::default()
    };
    let mut world = World::new(config).unwrap();
    let mesh = TetMesh::beam(2.0, 0.2, 0.2, cells, TetSplit::Six).unwrap();
    let clamped: Vec<u32> =
        (0..mesh.positions().len() as u32).filter(|&i| mesh.positions()[i as usize].x < 1e-6).collect();
    let tip: Vec<usize> = (0..mesh.positions().len()).filter(|&i| mesh.positions()[i].x > 2.0 - 1e-4).collect();
    let handle = world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh)
            .material(StableNeoHookean::from_young_poisson(1.2e8, 0.0))
            .density(1000.0)
            .pinned(&clamped)
            .solver(solver)
            .build()
            .unwrap(),
    );
    world.sync();
    (world, tip, handle)
}

fn tip_deflection(world: &World, rest: &[Vec4], tip: &[usize]) -> f64 {
    let x = world.positions();
    -tip.iter().map(|&i| (x[i].y - rest[i].y) as f64).sum::<f64>() / tip.len() as f64
}

/// At one step per frame and a fixed iteration count the beam settles on its own mesh's static
/// solve and near Euler–Bernoulli, at rest, every step on the local–global path.
#[test]
fn a_cantilever_settles_on_its_static_solve_in_one_step_per_frame() {
    let cells = [54, 6, 6];
    let mesh = TetMesh::beam(2.0, 0.2, 0.2, cells, TetSplit::Six).unwrap();
    let rest: Vec<glam::DVec3> = mesh.positions().iter().map(|p| p.as_dvec3()).collect();
    let (static_tip, residual) = common::static_solve::cantilever_tip_of_mesh(rest, mesh.tets().to_vec());
    assert!(residual < 1e-8, "static solve: {residual}");
    let (mut world, tip, _) = cantilever(cells, 10);
    let rest = world.positions().to_vec();
    let mut history = Vec::new();
    for frame in 0..300 {
        let r = world.step();
        assert!(!r.nan_detected && r.fallbacks == 0, "frame {frame}: {r:?}");
        assert_eq!(r.local_global.bodies_solved, 1, "frame {frame}: {:?}", r.local_global);
        history.push(tip_deflection(&world, &rest, &tip));
    }
    let tip_now = *history.last().unwrap();
    println!(
        "tip {tip_now:.5} m, static {static_tip:.5} m ({:+.2} %), Euler–Bernoulli {:+.2} %",
        100.0 * (tip_now / static_tip - 1.0),
        100.0 * (tip_now / EULER_BERNOULLI - 1.0)
    );
    common::assert_rel(tip_now, static_tip, 0.02, "tip vs its mesh's static solve");
    common::assert_rel(tip_now, EULER_BERNOULLI, 0.10, "tip vs Euler–Bernoulli");
    // At rest over the last 0.5 s: the tip moves less than 1 mm/s.
    let speed = history[history.len() - 31..].windows(2).map(|w| (w[1] - w[0]).abs() * 60.0).fold(0.0, f64::max);
    assert!(speed < 1e-3, "tip speed {speed} m/s over the last 0.5 s");
    let j = world.min_volume_ratio().unwrap();
    assert!(j > 0.5, "J = {j}");
}

/// The factor depends on the pins, the step length, the masses and the rest shapes: changing
/// one rebuilds it; positions, velocities, gravity and obstacles leave it alone.
#[test]
fn the_factor_is_rebuilt_on_exactly_the_inputs_of_its_matrix() {
    let (mut world, tip, h) = cantilever([20, 2, 2], 10);
    let builds = |world: &mut World| {
        let r = world.step();
        assert!(!r.nan_detected && r.fallbacks == 0, "{r:?}");
        (r.local_global.builds, r.local_global.bodies_solved)
    };
    assert_eq!(builds(&mut world), (1, 1));
    assert!(world.step().local_global.last_build_ms > 0.0);
    // Not rebuilt: gravity, positions, velocities, a far obstacle.
    let mut config = world.config().clone();
    config.gravity = Vec3::new(0.0, -4.0, 1.0);
    world.set_config(config.clone()).unwrap();
    let lifted: Vec<Vec3> = world.body_positions(h).unwrap().iter().map(|p| p.truncate() + Vec3::Y * 0.01).collect();
    world.set_body_positions(h, &lifted).unwrap();
    world.set_body_velocity(h, Vec3::new(0.0, 0.1, 0.0)).unwrap();
    world.obstacles.push(Obstacle::ground(-5.0, 0.5));
    for _ in 0..3 {
        assert_eq!(builds(&mut world), (1, 1));
    }
    // Rebuilt: a new pin (a grab at the tip), then a new step length.
    world.bodies.get_mut(h).unwrap().add_pin(Pin::fixed(vec![tip[0] as u32])).unwrap();
    assert_eq!(builds(&mut world), (2, 1));
    assert_eq!(builds(&mut world), (2, 1));
    config.dt = 1.0 / 120.0;
    world.set_config(config).unwrap();
    assert_eq!(builds(&mut world), (3, 1));
    assert_eq!(builds(&mut world), (3, 1));
}

/// A body whose factor is still being built in the background, or that comes near an
/// obstacle, takes VBD's sweeps for that substep; in free flight it is on the local–global
/// path. A cube dropped on the ground this way lands and rests like a VBD cube, with no
/// intersection.
#[test]
fn a_dropped_cube_switches_paths_at_the_ground_and_rests() {
    let mut world = World::new(StepConfig { threads: 2, ..StepConfig::default() }).unwrap();
    world.obstacles.push(Obstacle::ground(0.0, 0.5));
    let mesh = TetMesh::box_mesh(Vec3::splat(0.2), [6, 6, 6], TetSplit::Six).unwrap();
    world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh)
            .material(StableNeoHookean::from_young_poisson(1e6, 0.3))
            .translation(Vec3::new(0.0, 0.6, 0.0))
            .solver(SolverChoice::LocalGlobal)
            .build()
            .unwrap(),
    );
    world.sync();
    let (mut flying, mut near, mut waiting) = (0, 0, 0);
    for frame in 0..180 {
        let r = world.step();
        assert!(!r.nan_detected, "frame {frame}");
        flying += r.local_global.bodies_solved;
        near += r.local_global.bodies_near_contact;
        waiting += r.local_global.bodies_waiting;
        assert_eq!(world.find_intersections().len(), 0, "frame {frame}");
    }
    println!("frames on local–global {flying}, near contact {near}, waiting for the factor {waiting}");
    assert!(flying > 5 && near > 60, "flying {flying}, near {near}");
    let lowest = world.positions().iter().map(|p| p.y).fold(f32::INFINITY, f32::min);
    let fastest = world.velocities().iter().map(|v| v.truncate().length()).fold(0.0, f32::max);
    assert!(lowest > 0.0 && lowest < 2e-3, "lowest vertex {lowest} m");
    assert!(fastest < 1e-2, "fastest vertex {fastest} m/s");
}

/// `auto` sends the cantilever (stiff: its pressure waves cross ~150 elements per 1/60 s step,
/// and it is ~50 elements long) to the local–global path and a soft cube (6 elements across)
/// to VBD.
#[test]
fn auto_picks_local_global_for_a_stiff_beam_and_vbd_for_a_soft_cube() {
    let (mut world, _, _) = cantilever_with([54, 6, 6], 10, SolverChoice::Auto);
    for _ in 0..3 {
        let r = world.step();
        assert_eq!(
            (r.local_global.auto_local_global, r.local_global.auto_vbd, r.local_global.bodies_solved),
            (1, 0, 1)
        );
    }
    let mut world = World::new(StepConfig { gravity: Vec3::ZERO, ..StepConfig::default() }).unwrap();
    let mesh = TetMesh::box_mesh(Vec3::splat(0.2), [6, 6, 6], TetSplit::Six).unwrap();
    world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh)
            .material(StableNeoHookean::from_young_poisson(1e6, 0.3))
            .solver(SolverChoice::Auto)
            .build()
            .unwrap(),
    );
    world.sync();
    let r = world.step();
    assert_eq!((r.local_global.auto_local_global, r.local_global.auto_vbd, r.local_global.bodies_solved), (0, 1, 0));
}

/// Scenes whose bodies `auto` leaves to VBD (soft solids in contact, cloth) step exactly as
/// with VBD named: every position bit the same after 60 frames.
#[test]
fn scenes_step_identically_under_auto_where_it_picks_vbd() {
    for name in ["drop_cube", "incline_stick", "cloth_drape_sphere"] {
        let json = pliant::io::bundled::bundled_scene(name).unwrap();
        let mut value: serde_json::Value = serde_json::from_str(json).unwrap();
        value["solver"]["fast_path"] = "auto".into();
        let run = |json: &str| {
            let mut loaded =
                pliant::io::parse_scene(json).unwrap().build(std::path::Path::new("examples/scenes")).unwrap();
            let mut auto_vbd = 0;
            for _ in 0..60 {
                let r = loaded.world.step();
                assert!(!r.nan_detected && r.local_global.bodies_solved == 0, "{name}: {r:?}");
                auto_vbd += r.local_global.auto_vbd;
            }
            (loaded.world.positions().to_vec(), auto_vbd)
        };
        let (vbd, none) = run(json);
        let (auto, chose_vbd) = run(&value.to_string());
        assert_eq!(none, 0);
        assert_eq!(vbd, auto, "{name}: auto changed the result");
        println!("{name}: auto chose VBD in {chose_vbd} body-substeps");
    }
}

/// The path's result does not depend on the thread count (the line search's potential is
/// summed in a fixed order): every position bit the same on 1 and 2 threads.
#[test]
fn one_and_two_threads_give_the_same_beam() {
    let positions = |threads: usize| {
        let (mut world, _, _) = cantilever([20, 2, 2], 10);
        let mut config = world.config().clone();
        config.threads = threads;
        world.set_config(config).unwrap();
        for _ in 0..20 {
            assert_eq!(world.step().local_global.bodies_solved, 1);
        }
        world.positions().to_vec()
    };
    assert_eq!(positions(1), positions(2));
}

/// Bodies on the path are solved one after another with shared scratch: a small beam steps
/// exactly as alone when a larger one is solved before it in the same world.
#[test]
fn two_bodies_on_the_path_do_not_disturb_each_other() {
    let beam = |cells: [u32; 3], z: f32| {
        let mesh = TetMesh::beam(2.0, 0.2, 0.2, cells, TetSplit::Six).unwrap();
        let clamped: Vec<u32> =
            (0..mesh.positions().len() as u32).filter(|&i| mesh.positions()[i as usize].x < 1e-6).collect();
        SoftBodyBuilder::tetrahedral(mesh)
            .material(StableNeoHookean::from_young_poisson(1.2e8, 0.0))
            .density(1000.0)
            .pinned(&clamped)
            .translation(Vec3::new(0.0, 0.0, z))
            .solver(SolverChoice::LocalGlobal)
            .build()
            .unwrap()
    };
    let config = StepConfig {
        threads: 2,
        local_global: LocalGlobalSettings { iterations: 10, wait_for_factor: true },
        ..StepConfig::default()
    };
    let run = |with_large: bool| {
        let mut world = World::new(config.clone()).unwrap();
        if with_large {
            world.bodies.insert(beam([30, 3, 3], 1.0));
        }
        let small = world.bodies.insert(beam([20, 2, 2], 0.0));
        world.sync();
        for _ in 0..15 {
            let r = world.step();
            assert_eq!(r.local_global.bodies_solved, 1 + with_large as u32);
        }
        world.body_positions(small).unwrap().to_vec()
    };
    assert_eq!(run(false), run(true));
}
