//! The fallback (issue 9): scenes where the fast path at its fixed sweep count is unsafe are
//! caught by the safety check and redone by the augmented-Lagrangian step, and no frame
//! intersects; calm scenes never fall back (asserted in their own scene tests). The scenes are
//! the bundled `fallback_*` scene files, which `bench_budget` times.

mod common;

use pliant::prelude::*;
use pliant::{FallbackPolicy, FallbackReason, Intersection, StepPath};

/// The handle of a loaded scene's body by name.
fn body(loaded: &pliant::io::LoadedScene, name: &str) -> SoftBodyHandle {
    loaded.bodies.iter().find(|b| b.name == name).map(|b| b.handle).unwrap_or_else(|| panic!("no body {name}"))
}

/// Deepest a surface edge may reach into an obstacle on the GPU \[m\]. The CPU's fallback
/// holds edges against obstacles' rims and corners (edge–obstacle pairs, `collision::swept`)
/// and its frames are checked with no tolerance; the GPU's fallback holds vertices only: in
/// `fallback_cloth_gap` the pinned row drags the cloth's edges across both boxes' rims, up to
/// 2.8 mm deep, measured when `find_intersections` began to test edges against boxes and
/// spheres (issue 30).
#[cfg(feature = "gpu")]
const EDGE_DEPTH_LIMIT: f32 = 4e-3;

/// Intersections on the GPU other than an edge within [`EDGE_DEPTH_LIMIT`] of an obstacle's
/// surface.
#[cfg(feature = "gpu")]
fn gpu_crossings(world: &mut World) -> Vec<Intersection> {
    let mut found = world.find_intersections();
    found.retain(|i| !matches!(i, Intersection::EdgeInsideObstacle { depth, .. } if *depth <= EDGE_DEPTH_LIMIT));
    found
}

/// Steps `frames` frames; every frame must be free of intersections (`find_intersections`:
/// crossing triangles, vertices and edges inside obstacles), inverted tets and NaN. Returns
/// the reports.
fn run(world: &mut World, frames: usize) -> Vec<StepReport> {
    let mut out = Vec::new();
    for _ in 0..frames {
        let r = world.step();
        assert!(!r.nan_detected, "frame {}: NaN", r.frame);
        let crossings = world.find_intersections();
        assert!(
            crossings.is_empty(),
            "frame {}: {} intersections, first {:?}; islands {:?}",
            r.frame,
            crossings.len(),
            crossings[0],
            r.islands
        );
        assert!(min_volume_ratio(world) > 0.0, "frame {}: an inverted tet", r.frame);
        out.push(r);
    }
    out
}

/// The safety check itself rejected at least one fast step (not a hold or a forced policy),
/// and the fallback took it.
fn assert_detected(reports: &[StepReport]) -> Vec<FallbackReason> {
    let detected: Vec<FallbackReason> = reports
        .iter()
        .flat_map(|r| &r.islands)
        .filter(|i| matches!(i.path, StepPath::Fallback | StepPath::FallbackTruncated))
        .filter_map(|i| i.reason)
        .filter(|r| !matches!(r, FallbackReason::Hold | FallbackReason::Always))
        .collect();
    assert!(!detected.is_empty(), "the safety check never rejected a fast step");
    for r in reports {
        for i in &r.islands {
            assert_ne!(i.path, StepPath::Restored, "frame {}: an island had to be restored", r.frame);
        }
    }
    detected
}

/// The frame ran on the fast path: no island fell back.
fn assert_stayed_fast(r: &StepReport) {
    assert_eq!(r.fallbacks, 0, "frame {}: {:?}", r.frame, r.islands.iter().find(|i| i.path != StepPath::Fast));
}

/// Smallest volume ratio `J` of any tet.
fn min_volume_ratio(world: &World) -> f32 {
    world.min_volume_ratio().unwrap_or(f32::INFINITY)
}

fn lowest_y(world: &World, h: SoftBodyHandle) -> f32 {
    world.body_positions(h).unwrap().iter().map(|p| p.y).fold(f32::INFINITY, f32::min)
}

fn centroid_y(world: &World, h: SoftBodyHandle) -> f32 {
    let p = world.body_positions(h).unwrap();
    p.iter().map(|p| p.y).sum::<f32>() / p.len() as f32
}

/// A ball whose fallback steps get no time lags behind the world's clock and catches up,
/// keeping its momentum (docs/algorithms.md §4.5). Its first step is too fast for the check
/// (Speed) and its fallback starts past the deadline (a budget no step can meet): it stands
/// still, a substep behind. Its next steps skip the sweeps (asserted from the step's phase
/// times), fly it along its free flight for a substep and a half, and catch the lag up. In every frame the ball is where its velocity
/// puts it after the world's time less the reported lag, and moves at its velocity.
#[test]
fn a_ball_whose_steps_run_out_of_time_lags_and_catches_up() {
    let config = StepConfig { gravity: Vec3::ZERO, budget_ms: Some(1e-6), ..StepConfig::default() };
    let mut world = World::new(config).expect("world");
    let mesh = TetMesh::sphere(0.05, 4, TetSplit::Six).expect("mesh");
    let speed = 30.0;
    let ball = world
        .bodies
        .insert(SoftBodyBuilder::tetrahedral(mesh).velocity(Vec3::new(speed, 0.0, 0.0)).build().expect("body"));
    let centroid_x = |w: &World| {
        let p = w.body_positions(ball).unwrap();
        p.iter().map(|p| p.x as f64).sum::<f64>() / p.len() as f64
    };
    world.sync();
    let x0 = centroid_x(&world);
    let h = world.config().dt as f64;
    let (mut lagged, mut caught_up, mut held_frames) = (false, false, 0);
    for _ in 0..30 {
        let r = world.step();
        assert!(!r.nan_detected, "frame {}: NaN", r.frame);
        let lag = r.islands.iter().map(|i| i.lag).fold(0.0, f64::max);
        assert!(lag <= 4.0 * h + 1e-9, "frame {}: lag {lag} s", r.frame);
        assert!(r.islands.iter().all(|i| i.time_dropped == 0.0), "frame {}: {:?}", r.frame, r.islands);
        let expected = x0 + speed as f64 * (r.time - lag);
        let x = centroid_x(&world);
        assert!(
            (x - expected).abs() < 1e-4,
            "frame {}: ball at {x} m, {expected} m after {} s less {lag} s",
            r.frame,
            r.time
        );
        let v = world.body_velocities(ball).unwrap();
        let mean = v.iter().map(|v| v.x as f64).sum::<f64>() / v.len() as f64;
        assert!((mean - speed as f64).abs() < 1e-3 * speed as f64, "frame {}: ball at {mean} m/s", r.frame);
        lagged |= lag > 0.0;
        caught_up |= lagged && lag == 0.0;
        // A frame in which every island is held skips the sweeps it would throw away.
        if r.islands.iter().all(|i| i.reason == Some(FallbackReason::Hold)) {
            held_frames += 1;
            assert!(r.phases.solve == 0.0 && r.phases.detect == 0.0, "frame {}: {:?}", r.frame, r.phases);
        }
    }
    assert!(held_frames > 0, "no frame was held");
    assert!(lagged && caught_up, "lagged: {lagged}, caught up: {caught_up}");
    let events = world.drain_events();
    assert!(
        events.iter().any(|e| matches!(e, pliant::PliantEvent::IslandLagging { lag, .. } if *lag > 0.0)),
        "no lag reported: {events:?}"
    );
}

/// `cloth_drape_sphere` under a budget no step can meet, configured for one sweep (so the
/// planner's least count for cloth, two sweeps, is capped at one): at one sweep the draping
/// cloth gains energy until the energy test sends it to the fallback (frame 22 when measured).
/// The first held step that gets no time to travel ends the hold instead of freezing the cloth
/// for the rest of it (it stood still for nine frames of 24 ms at an 8 ms budget).
#[test]
fn a_cloth_whose_fallback_gets_no_time_is_handed_back_to_the_fast_path() {
    let json = pliant::io::bundled::bundled_scene("cloth_drape_sphere").expect("bundled scene");
    let mut scene = pliant::io::parse_scene(json).expect("scene parses");
    scene.solver.budget_ms = Some(1e-6);
    scene.solver.iterations = 1;
    let mut world = scene.build(std::path::Path::new("examples/scenes")).expect("scene builds").world;
    let reports = run(&mut world, 60);
    let fell_back = |r: &StepReport| r.islands.iter().any(|i| i.path != StepPath::Fast);
    let first = reports
        .iter()
        .position(|r| r.islands.iter().any(|i| i.reason == Some(FallbackReason::EnergyGain)))
        .expect("the cloth no longer gains energy at one sweep: this test then checks nothing");
    assert!(reports.iter().take(first).all(|r| r.iterations == 1 && !fell_back(r)), "before frame {}", first + 1);
    // A held frame that travelled nothing ends the hold: the next frame is back on the fast
    // path. (Frames before it may travel part of their step: the cloth slides fast enough to
    // count as flying, and a flying island always takes its first iteration.)
    let back = first + reports[first..].iter().position(|r| !fell_back(r)).expect("never back on the fast path");
    for (k, r) in reports.iter().enumerate().take(back).skip(first) {
        let stood_still = r.islands.iter().any(|i| i.reason == Some(FallbackReason::Hold) && i.travelled == 0.0);
        assert!(!stood_still || k + 1 == back, "frame {} stood still and frame {} was held", k + 1, k + 2);
    }
}

/// The same drape at its configured 20 sweeps under a budget no step can meet: the planner
/// takes the least count a world with cloth starts with, two sweeps, from the second frame
/// (the first takes the configured count), and the cloth never gains energy enough to fall
/// back (at one sweep it did at frame 22, above).
#[test]
fn a_cloth_under_a_budget_drapes_at_two_sweeps_without_falling_back() {
    let json = pliant::io::bundled::bundled_scene("cloth_drape_sphere").expect("bundled scene");
    let mut scene = pliant::io::parse_scene(json).expect("scene parses");
    scene.solver.budget_ms = Some(1e-6);
    let mut world = scene.build(std::path::Path::new("examples/scenes")).expect("scene builds").world;
    let reports = run(&mut world, 60);
    for r in &reports[1..] {
        assert!(r.islands.iter().all(|i| i.path == StepPath::Fast), "frame {}: {:?}", r.frame, r.islands);
        assert_eq!(r.iterations, 2, "frame {}", r.frame);
    }
}

/// A hold that began for a hard failure is kept when its steps get no time: the fast path
/// would only fail again, at its own cost on top of the fallback's. `fallback_projectile_cloth`
/// under a budget no step can meet: the cube's impact stalls the sweeps (a hard residual
/// growth) in the first frame, and the frames after it are held, not handed back to the fast
/// path to fail again. (Ending such holds made `projectile_wall` fall back for its speed 29
/// times in 60 frames instead of twice.)
#[test]
fn a_hold_for_a_hard_failure_is_kept_when_it_gets_no_time() {
    let mut loaded = common::load("fallback_projectile_cloth");
    let config = StepConfig { budget_ms: Some(1e-6), ..loaded.world.config().clone() };
    loaded.world.set_config(config).expect("config");
    let reports = run(&mut loaded.world, 12);
    let hard =
        |r: &StepReport| r.islands.iter().any(|i| i.reason.is_some_and(|r| r.is_hard() && r != FallbackReason::Hold));
    let first = reports.iter().position(hard).expect("no hard failure: this test then checks nothing");
    let held: Vec<&StepReport> = reports[first + 1..]
        .iter()
        .take_while(|r| r.islands.iter().all(|i| i.reason == Some(FallbackReason::Hold)))
        .collect();
    assert!(held.len() >= 5, "held for {} frames after frame {}", held.len(), first + 1);
    assert!(held.iter().any(|r| r.islands.iter().all(|i| i.travelled == 0.0)), "no held frame went without time");
}

/// A body swapped for one with as many vertices and tets but other elements is redone with its
/// own elements: the fallback keeps its last problem's structure (Hessian pattern, element
/// slots) only until the state is repacked. A bar of 8 × 1 × 1 cells is replaced by one of
/// 1 × 1 × 8 (36 vertices and 48 tets each, connected otherwise), and its fallback step matches
/// that of a world that only ever held the second bar, iterations included.
#[test]
fn a_body_swapped_for_one_of_the_same_size_is_redone_with_its_own_elements() {
    let config = StepConfig { fallback: FallbackPolicy::Always, ..StepConfig::default() };
    let bar = |cells: [u32; 3], size: Vec3| {
        let mesh = TetMesh::box_mesh(size, cells, TetSplit::Six).expect("mesh");
        SoftBodyBuilder::tetrahedral(mesh).translation(Vec3::new(0.0, 0.3, 0.0)).build().expect("body")
    };
    let (long_x, long_z) = (bar([8, 1, 1], Vec3::new(0.4, 0.05, 0.05)), bar([1, 1, 8], Vec3::new(0.05, 0.05, 0.4)));
    let mut swapped = World::new(config.clone()).expect("world");
    swapped.obstacles.push(Obstacle::ground(0.0, 0.5));
    let first = swapped.bodies.insert(long_x);
    run(&mut swapped, 2);
    swapped.bodies.remove(first);
    let second = swapped.bodies.insert(long_z.clone());
    let mut fresh = World::new(config).expect("world");
    fresh.obstacles.push(Obstacle::ground(0.0, 0.5));
    let only = fresh.bodies.insert(long_z);
    for frame in 0..3 {
        let (a, b) = (swapped.step(), fresh.step());
        let (ia, ib) = (&a.islands[0], &b.islands[0]);
        assert_eq!(ia.path, StepPath::Fallback, "frame {frame}: {ia:?}");
        assert_eq!(
            (ia.iterations, ia.newton_iterations, ia.cg_iterations),
            (ib.iterations, ib.newton_iterations, ib.cg_iterations),
            "frame {frame}"
        );
        let (pa, pb) = (swapped.body_positions(second).unwrap(), fresh.body_positions(only).unwrap());
        let apart = pa.iter().zip(pb).map(|(x, y)| (*x - *y).length()).fold(0.0f32, f32::max);
        assert!(apart < 1e-6, "frame {frame}: {apart} m apart");
    }
}

/// A 3 cm steel cube at 60 m/s at a pinned cloth: one frame spans a metre. The check rejects
/// the fast step (its speed, and the sweeps' diverging residual) and the fallback catches the
/// cube on the cloth's near side.
#[test]
fn projectile_at_a_cloth_is_caught_on_its_near_side() {
    let mut loaded = common::load("fallback_projectile_cloth");
    let (sheet, shot) = (body(&loaded, "sheet"), body(&loaded, "cube"));
    let reports = run(&mut loaded.world, 20);
    assert_detected(&reports);
    // The impact frame was never an accepted fast step.
    assert_ne!(reports[0].islands.iter().find(|i| i.bodies.contains(&shot)).unwrap().path, StepPath::Fast);
    let (cube, cloth) = (centroid_y(&loaded.world, shot), lowest_y(&loaded.world, sheet));
    assert!(cube > cloth, "cube centre {cube} below the cloth's lowest point {cloth}");
}

/// A 1e9 Pa block dropped on a 1e4 Pa tet sheet lying on the ground: the fast path's sweeps
/// cannot resolve the stiffness ratio (their residual grows); the check sees it and the fallback
/// keeps every tet un-inverted.
#[test]
fn stiff_block_on_a_soft_sheet_never_inverts_it() {
    let mut loaded = common::load("fallback_stiff_on_soft");
    let (soft, hard) = (body(&loaded, "sheet"), body(&loaded, "block"));
    let reports = run(&mut loaded.world, 60);
    assert_detected(&reports);
    assert!(lowest_y(&loaded.world, hard) > lowest_y(&loaded.world, soft));
    assert!(min_volume_ratio(&loaded.world) > 0.0);
}

/// A 7.8 kg steel block (E = 1e11 Pa) set on a pinned cloth of 0.03 kg: the fast path's sweeps
/// diverge on the mass ratio; the check rejects them and the fallback keeps every frame free of
/// crossings. (Known defect, not asserted: the cloth overstretched in the fast steps before the
/// detection throws the block up when the fallback releases it.)
#[test]
fn heavy_rigid_weight_on_a_thin_sheet_never_crosses_it() {
    let mut loaded = common::load("fallback_weight_on_sheet");
    let reports = run(&mut loaded.world, 60);
    assert_detected(&reports);
}

/// A cloth pulled down at 2 m/s through a 1 cm slot between two boxes bunches up and slides
/// through; the fast path's straight vertex paths cut the boxes' edges and are rejected.
#[test]
fn cloth_pulled_through_a_narrow_gap_never_crosses() {
    let mut loaded = common::load("fallback_cloth_gap");
    let cloth = body(&loaded, "cloth");
    let reports = run(&mut loaded.world, 40);
    let detected = assert_detected(&reports);
    assert!(detected.contains(&FallbackReason::Crossing), "{detected:?}");
    // The fallback pulls the cloth with its pins, not behind them: it once froze the island
    // (no iterate could move a vertex the fast path had left on a box's face) while the pins
    // ran 0.4 m ahead, and the cloth was yanked through when the hold ended; and again, held
    // off the rims, when it dragged the cloth a whole frame at a time (0.46 m), before pins
    // that drag an island far took it in pieces. (The fast path's initial advance holds pins
    // back where a span would reach an obstacle: 1.5 cm in two fast frames, not asserted.)
    let fallback = |r: &StepReport| r.islands.iter().any(|i| i.path != StepPath::Fast);
    for r in reports.iter().filter(|r| fallback(r)) {
        assert!(r.pin_lag < 1e-3, "frame {}: pins {} m behind their targets; {:?}", r.frame, r.pin_lag, r.islands);
    }
    assert!(reports.iter().filter(|r| fallback(r)).count() > 20, "the fallback pulls the cloth through");
    // It went through: the pulled row is below the boxes.
    assert!(lowest_y(&loaded.world, cloth) < -0.2);
}

/// Steps a GPU world to frame `frames` (frames the check rejects are stepped again on the
/// CPU); every frame read back must be free of intersections and inverted tets. Returns the
/// reports.
#[cfg(feature = "gpu")]
fn drive_on_gpu(world: &mut World, frames: u64) -> Vec<StepReport> {
    let mut reports = Vec::new();
    let mut calls = 0;
    while world.frame() < frames {
        calls += 1;
        assert!(calls < 10 * frames, "the world does not advance");
        let r = world.step();
        if r.gpu_busy {
            std::thread::yield_now();
            continue;
        }
        world.wait_for_gpu();
        let crossings = gpu_crossings(world);
        assert!(crossings.is_empty(), "frame {} ({:?}): {:?}", r.frame, r.backend, crossings[0]);
        assert!(min_volume_ratio(world) > 0.0, "frame {}: an inverted tet", r.frame);
        reports.push(r);
    }
    reports
}

/// Loads `scene` on the GPU backend and steps it to frame `frames` ([`drive_on_gpu`]).
/// Returns the world, the reports and the events; `None` without an adapter.
#[cfg(feature = "gpu")]
fn run_on_gpu(
    scene: &str,
    frames: u64,
) -> Option<(pliant::io::LoadedScene, Vec<StepReport>, Vec<pliant::PliantEvent>)> {
    use pliant::Backend;
    let mut loaded = common::load(scene);
    let config = StepConfig { backend: Backend::Gpu, ..loaded.world.config().clone() };
    if let Err(e) = loaded.world.set_config(config) {
        common::no_gpu(&e);
        return None;
    }
    let reports = drive_on_gpu(&mut loaded.world, frames);
    let events = loaded.world.drain_events();
    Some((loaded, reports, events))
}

/// Whether the GPU's check rejected `body`'s step for `reason` and the frame was stepped again.
#[cfg(feature = "gpu")]
fn rejected_on_gpu(events: &[pliant::PliantEvent], body: SoftBodyHandle, reason: FallbackReason) -> bool {
    events.iter().any(|e| {
        matches!(e, pliant::PliantEvent::UnsafeStep { body: b, reason: r, redone: true, .. } if *b == body && *r == reason)
    })
}

/// On the GPU backend (lavapipe in CI): the GPU's own check rejects the projectile's fast
/// step (its speed) and puts the cube back at rest on the device, so no unsafe state is read
/// back; the world rewinds the frame on the device and steps it again on the CPU with the
/// fallback, keeps the island there for its hold, then returns to the GPU. No frame intersects
/// and the cube is caught on the cloth's near side, as on the CPU.
#[cfg(feature = "gpu")]
#[test]
fn on_the_gpu_the_check_rejects_the_projectile_and_the_fallback_redoes_its_frame() {
    use pliant::Backend;
    let Some((loaded, reports, events)) = run_on_gpu("fallback_projectile_cloth", 40) else { return };
    let (sheet, shot) = (body(&loaded, "sheet"), body(&loaded, "cube"));
    assert!(
        rejected_on_gpu(&events, shot, FallbackReason::Speed),
        "the GPU's check did not reject the cube's step: {events:?}"
    );
    // The redone frame went to the fallback (for the GPU's reason, or its own check's).
    assert_detected(&reports);
    let first_cpu = reports.iter().position(|r| r.backend == Backend::Cpu).expect("no frame on the CPU");
    assert!(reports[first_cpu..].iter().any(|r| r.backend == Backend::Gpu), "the world never went back to the GPU");
    let (cube, cloth) = (centroid_y(&loaded.world, shot), lowest_y(&loaded.world, sheet));
    assert!(cube > cloth, "cube centre {cube} below the cloth's lowest point {cloth}");
}

/// On the GPU backend: the 1e9 Pa block on the 1e4 Pa sheet and the steel block on the cloth
/// break no hard rule; their sweeps stall. The GPU's residual rule (`step_soft`, the CPU's
/// ResidualGrowth) sees it, the frame is rewound and redone by the fallback, and no frame read
/// back intersects (a rejected substep puts every body back, so the block is never returned
/// into a sheet that moved). Before the rule the GPU kept every one of these steps. The weight's
/// stalled step also gains energy, and which of the two tests rejects it first turns on the
/// rounding of the colour passes' sums: there either reason is the catch. Its first rejection
/// comes in frame 14 (18 frames are run, for the frame to come back): until 2026-11-29 the
/// steel's elastic energy was f32 round-off of joules, and the energy test fired on that noise
/// from the start.
#[cfg(feature = "gpu")]
#[test]
fn on_the_gpu_the_residual_rule_sends_stalled_sweeps_to_the_fallback() {
    use FallbackReason::{EnergyGain, ResidualGrowth};
    for (scene, frames, stalled, reasons) in [
        ("fallback_stiff_on_soft", 12, "block", &[ResidualGrowth][..]),
        ("fallback_weight_on_sheet", 18, "weight", &[ResidualGrowth, EnergyGain][..]),
    ] {
        let Some((loaded, reports, events)) = run_on_gpu(scene, frames) else { return };
        let names: Vec<&str> = loaded.bodies.iter().map(|b| b.name.as_str()).collect();
        let rejected = loaded.bodies.iter().any(|b| reasons.iter().any(|&r| rejected_on_gpu(&events, b.handle, r)));
        let first = events.iter().find_map(|e| match e {
            pliant::PliantEvent::UnsafeStep { time, reason, .. } => Some((*time, *reason)),
            _ => None,
        });
        eprintln!("{scene}: the GPU's first rejection {first:?}");
        assert!(rejected, "{scene}: the GPU's check rejected no step of {names:?} ({stalled}): {events:?}");
        let detected = assert_detected(&reports);
        assert!(reasons.iter().any(|r| detected.contains(r)), "{scene}: {detected:?}");
    }
}

/// A GPU world of `config` with a clamped 1 m beam of 1e9 Pa, nearly incompressible (ν =
/// 0.49), at 10 sweeps (the stiffness sweep's stiffest variant), over a ground; `None`
/// without an adapter.
#[cfg(feature = "gpu")]
fn stiff_beam_on_gpu(config: StepConfig, self_collision: bool) -> Option<(World, SoftBodyHandle)> {
    use pliant::Backend;
    let config = StepConfig { backend: Backend::Gpu, iterations: 10, ..config };
    let mut world = match World::new(config) {
        Ok(w) => w,
        Err(e) => {
            common::no_gpu(&e);
            return None;
        }
    };
    let mesh = TetMesh::beam(1.0, 0.1, 0.1, [20, 2, 2], TetSplit::Six).expect("beam");
    let end = mesh.positions().iter().map(|p| p.x).fold(f32::INFINITY, f32::min);
    let clamped: Vec<u32> =
        (0..mesh.vertex_count() as u32).filter(|&i| mesh.positions()[i as usize].x <= end + 1e-6).collect();
    let beam = world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh)
            .name("beam")
            .material(StableNeoHookean::from_young_poisson(1e9, 0.49))
            .translation(Vec3::new(0.5, 0.5, 0.0))
            .pin(Pin::fixed(clamped))
            .self_collision(self_collision)
            .build()
            .expect("beam"),
    );
    world.obstacles.push(Obstacle::ground(0.0, 0.5));
    Some((world, beam))
}

/// On the GPU backend: the stiff beam ([`stiff_beam_on_gpu`]). The sweeps cannot hold it:
/// without the energy test its elastic energy grew by up to 39 kJ in one frame on the GPU,
/// with no force doing work. The GPU's energy test (`step_energy`, `step_soft`) rejects it
/// within the first frames; the fallback steps it from then on and no vertex gets faster than
/// 5 m/s.
#[cfg(feature = "gpu")]
#[test]
fn on_the_gpu_the_energy_test_catches_a_stiff_beam_making_energy() {
    let Some((mut world, beam)) = stiff_beam_on_gpu(StepConfig::default(), true) else { return };
    let reports = drive_on_gpu(&mut world, 8);
    let events = world.drain_events();
    assert!(rejected_on_gpu(&events, beam, FallbackReason::EnergyGain), "{events:?}");
    assert_detected(&reports);
    let fastest = world.velocities().iter().map(|v| v.truncate().length()).fold(0.0, f32::max);
    assert!(fastest < 5.0, "{fastest} m/s");
}

/// The stiff beam with `gpu_fallback` and its self contact off (no surface pairs, so the
/// device's own fallback applies): the GPU's energy test rejects the fast step and the device
/// redoes the substep with the augmented-Lagrangian step in the same submission, then holds
/// it there. Every frame runs on the GPU and none is stepped again by the host: the events say
/// redone, the reports count the device's fallback substeps and give its islands (the reason,
/// the outer iterations), and the beam holds (its lowest
/// point stays within 2 mm of the clamp's height of 0.45 m: 0.2 mm of sag on lavapipe, where
/// the CPU's fallback leaves 0.1 mm; with no fallback the beam falls to the ground, 0.0 m),
/// with no vertex faster than 5 m/s.
#[cfg(feature = "gpu")]
#[test]
fn on_the_gpu_the_device_redoes_the_stiff_beam_itself() {
    use pliant::Backend;
    let config = StepConfig { gpu_fallback: true, ..StepConfig::default() };
    let Some((mut world, beam)) = stiff_beam_on_gpu(config, false) else { return };
    let reports = drive_on_gpu(&mut world, 8);
    let events = world.drain_events();
    assert!(rejected_on_gpu(&events, beam, FallbackReason::EnergyGain), "{events:?}");
    for r in &reports {
        assert_eq!(r.backend, Backend::Gpu, "frame {}: {:?}", r.frame, world.why_not_gpu());
        assert_eq!(r.frames_redone, 0, "frame {}", r.frame);
    }
    let redone: u32 = reports.iter().map(|r| r.fallbacks).sum();
    assert!(redone >= 4, "{redone} substeps redone on the device");
    // The reports' islands carry the device's reason and its step's outer iterations.
    assert!(assert_detected(&reports).contains(&FallbackReason::EnergyGain));
    let island = reports.iter().flat_map(|r| &r.islands).find(|i| i.reason == Some(FallbackReason::EnergyGain));
    let island = island.expect("an island redone for the energy gain");
    assert!(island.iterations > 0 && island.travelled > 0.0, "{island:?}");
    let fastest = world.velocities().iter().map(|v| v.truncate().length()).fold(0.0, f32::max);
    assert!(fastest < 5.0, "{fastest} m/s");
    let low = lowest_y(&world, beam);
    assert!(low > 0.448, "the beam sagged to {low} m");
}

/// On the GPU backend with `gpu_fallback`: a 10 cm steel-stiff cube (1e9 Pa, self contact off)
/// shot at the ground at 60 m/s from 0.5 m: one frame spans a metre. The GPU's check rejects
/// the fast step (its speed) and the device's augmented-Lagrangian step redoes it against the
/// ground: every frame runs on the GPU, none is stepped again by the host, and no vertex is
/// ever found below the ground (the check after every frame read back, in `drive_on_gpu`, and
/// its lowest height here).
#[cfg(feature = "gpu")]
#[test]
fn on_the_gpu_the_device_catches_a_projectile_on_the_ground() {
    use pliant::Backend;
    let config = StepConfig { backend: Backend::Gpu, gpu_fallback: true, ..StepConfig::default() };
    let mut world = match World::new(config) {
        Ok(w) => w,
        Err(e) => {
            common::no_gpu(&e);
            return;
        }
    };
    let mesh = TetMesh::box_mesh(Vec3::splat(0.1), [3, 3, 3], TetSplit::Six).expect("cube");
    let shot = world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh)
            .name("shot")
            .material(StableNeoHookean::from_young_poisson(1e9, 0.3))
            .translation(Vec3::new(0.0, 0.5, 0.0))
            .velocity(Vec3::new(0.0, -60.0, 0.0))
            .self_collision(false)
            .build()
            .expect("cube"),
    );
    world.obstacles.push(Obstacle::ground(0.0, 0.5));
    let mut lowest = f32::INFINITY;
    let mut reports = Vec::new();
    while world.frame() < 12 {
        let r = world.step();
        if r.gpu_busy {
            continue;
        }
        world.wait_for_gpu();
        lowest = lowest.min(lowest_y(&world, shot));
        assert!(world.positions().iter().all(|p| p.is_finite()), "frame {}", r.frame);
        reports.push(r);
    }
    let events = world.drain_events();
    assert!(rejected_on_gpu(&events, shot, FallbackReason::Speed), "{events:?}");
    assert!(assert_detected(&reports).contains(&FallbackReason::Speed));
    for r in &reports {
        assert_eq!(r.backend, Backend::Gpu, "frame {}: {:?}", r.frame, world.why_not_gpu());
        assert_eq!(r.frames_redone, 0, "frame {}", r.frame);
    }
    assert!(lowest >= 0.0, "the cube reached {lowest} m, below the ground");
    assert!(lowest_y(&world, shot) < 0.01, "the cube did not come down: {} m", lowest_y(&world, shot));
}

/// 48 soft boxes and spheres settling into a pile: each carries the ones above, and the fast
/// path's sweeps stall on it with a residual 1.0–1.2× above the first sweep's from one step to
/// the next. That is no failure: the pile stays on the fast path (it fell back in 51 of 60
/// frames, at 10–28 s each, when any growth was a stall; bodies alike now never stall).
#[test]
fn a_settling_pile_never_falls_back() {
    let mut loaded = common::load("pile_soft_box");
    for _ in 0..20 {
        let r = loaded.world.step();
        assert_stayed_fast(&r);
    }
}

/// Three 0.1 m cubes of the default jelly (1e5 Pa), 1 cm apart, above the ground.
fn soft_cube_stack(config: StepConfig) -> World {
    let mut world = World::new(config).expect("world");
    for k in 0..3 {
        let mesh = TetMesh::box_mesh(Vec3::splat(0.1), [4, 4, 4], TetSplit::Six).expect("mesh");
        let at = Vec3::new(0.0, 0.055 + 0.11 * k as f32, 0.0);
        world.bodies.insert(SoftBodyBuilder::tetrahedral(mesh).translation(at).build().expect("body"));
    }
    world.obstacles.push(Obstacle::ground(0.0, 0.5));
    world
}

/// The stack of [`soft_cube_stack`] dropped onto itself comes to rest on the fast path. Its
/// sweeps end each step up to 3.5× above their first sweep's residual with up to three body
/// weights unbalanced, which the residual rule once took for a stall: the stack fell back from
/// frame 8, in 83 of 90 frames.
///
/// These 1e5 Pa cubes never quite settle: from 0.5 s on their kinetic energy jitters between
/// 1e-5 and 4e-4 J frame to frame (means of 0.5–3e-4 J over each half second up to 4 s), alike
/// before and after Rayleigh damping stopped damping each body's spin (measured 2026-11-29), so
/// the last frame's value is a draw from that spread; the mean over the last half second is
/// bounded as well.
#[test]
fn a_stack_of_soft_cubes_never_falls_back() {
    let mut world = soft_cube_stack(StepConfig::default());
    let kinetic = |world: &World| -> f32 {
        world.velocities().iter().zip(world.vertex_masses()).map(|(v, &m)| 0.5 * m * v.length_squared()).sum()
    };
    let mut mean = 0.0f32;
    for frame in 1..=90 {
        for r in run(&mut world, 1) {
            assert_stayed_fast(&r);
        }
        if frame > 60 {
            mean += kinetic(&world) / 30.0;
        }
    }
    // At rest: under a three-thousandth of the 0.29 J the upper cubes' fall released.
    let last = kinetic(&world);
    assert!(last < 1e-4, "kinetic energy {last} J after 1.5 s");
    assert!(mean < 2e-4, "mean kinetic energy {mean} J over 1–1.5 s");
}

/// The same on the GPU backend: its check (`step_soft`) applies the same rule, and once fell
/// back at frame 9 as the CPU did.
#[cfg(feature = "gpu")]
#[test]
fn on_the_gpu_a_stack_of_soft_cubes_never_falls_back() {
    never_falls_back_on_gpu(soft_cube_stack(StepConfig::default()), 40);
}

/// Moves `world` to the GPU backend and steps it `frames` frames: none may fall back or leave
/// the GPU, and the check raises no `UnsafeStep` (skipped without an adapter).
#[cfg(feature = "gpu")]
fn never_falls_back_on_gpu(mut world: World, frames: u64) {
    use pliant::{Backend, PliantEvent};
    if let Err(e) = world.set_config(StepConfig { backend: Backend::Gpu, ..world.config().clone() }) {
        common::no_gpu(&e);
        return;
    }
    for r in drive_on_gpu(&mut world, frames) {
        assert_stayed_fast(&r);
        assert_eq!(r.backend, Backend::Gpu, "frame {}", r.frame);
    }
    let events = world.drain_events();
    assert!(!events.iter().any(|e| matches!(e, PliantEvent::UnsafeStep { .. })), "{events:?}");
}

/// A 0.6 m cloth (24 × 24 cells, 72 g) dropped 10 cm onto a 0.2 m jelly cube (8 kg) on the
/// ground.
fn cloth_on_soft_cube(config: StepConfig) -> World {
    let mut world = World::new(config).expect("world");
    let mesh = TetMesh::box_mesh(Vec3::splat(0.2), [6, 6, 6], TetSplit::Six).expect("mesh");
    world
        .bodies
        .insert(SoftBodyBuilder::tetrahedral(mesh).translation(Vec3::new(0.0, 0.1, 0.0)).build().expect("cube"));
    let cloth = TriMesh::cloth_grid(Vec2::new(0.6, 0.6), [24, 24]).expect("cloth");
    world
        .bodies
        .insert(ClothBuilder::new(cloth).friction(0.3).translation(Vec3::new(0.0, 0.3, 0.0)).build().expect("cloth"));
    world.obstacles.push(Obstacle::ground(0.0, 0.5));
    world
}

/// The cloth of [`cloth_on_soft_cube`] drapes over the cube on the fast path. The cloth
/// exchanges 3–10 N of contact force with the cube from sweep to sweep, ten times its weight but
/// an eighth of the cube's; measured against its own weight, the residual rule sent the scene to
/// the fallback from frame 12, in 109 of 120 frames at 200 ms each.
#[test]
fn a_cloth_settling_on_a_soft_cube_never_falls_back() {
    let mut world = cloth_on_soft_cube(StepConfig::default());
    for r in run(&mut world, 90) {
        assert_stayed_fast(&r);
    }
}

/// The same on the GPU backend.
#[cfg(feature = "gpu")]
#[test]
fn on_the_gpu_a_cloth_settling_on_a_soft_cube_never_falls_back() {
    never_falls_back_on_gpu(cloth_on_soft_cube(StepConfig::default()), 40);
}

/// A 0.8 m cloth (32 × 32) dropped onto a 0.15 m sphere on the ground drapes and slides off it.
/// Its vertices slide on the sphere at zero clearance, and a straight step between two points
/// on a sphere runs inside it: the check once measured that chord by its length and took a
/// 21 µm slide, 4e-10 m deep, for a crossing (frame 114, then a hold). Now by its depth.
#[test]
fn a_cloth_sliding_on_a_sphere_never_falls_back() {
    let mut world = World::new(StepConfig::default()).expect("world");
    let cloth = TriMesh::cloth_grid(Vec2::new(0.8, 0.8), [32, 32]).expect("cloth");
    let builder = ClothBuilder::new(cloth).friction(0.3).self_collision(false).translation(Vec3::new(0.0, 0.32, 0.0));
    world.bodies.insert(builder.build().expect("cloth"));
    world.obstacles.push(Obstacle::sphere(Vec3::new(0.0, 0.15, 0.0), 0.15, 0.3).expect("sphere"));
    world.obstacles.push(Obstacle::ground(0.0, 0.5));
    for r in run(&mut world, 120) {
        assert_stayed_fast(&r);
    }
}

/// A stack held on the fallback (every step redone, as in a hold) keeps moving: two soft boxes
/// dropped 4 mm onto each other settle, and no step after contact returns its start unchanged.
/// The fast path leaves the pairs closer than the contact offset; the fallback's iterates push
/// them out to it, which lifts the boxes, and comparing iterates by potential energy alone
/// rewound every such step to staying put: the island froze (zero velocity every frame of a
/// hold, 26 of 40 frames in a three-box drop).
#[test]
fn a_stack_held_on_the_fallback_is_not_frozen() {
    let mut world =
        World::new(StepConfig { fallback: FallbackPolicy::Always, ..StepConfig::default() }).expect("world");
    let mut boxes = Vec::new();
    for k in 0..2 {
        let mesh = TetMesh::box_mesh(Vec3::splat(0.2), [3, 3, 3], TetSplit::Six).expect("mesh");
        let at = Vec3::new(0.0, 0.102 + 0.204 * k as f32, 0.0);
        boxes.push(
            world
                .bodies
                .insert(SoftBodyBuilder::tetrahedral(mesh).friction(0.4).translation(at).build().expect("body")),
        );
    }
    world.obstacles.push(Obstacle::ground(0.0, 0.5));
    let reports = run(&mut world, 24);
    let mut frozen = Vec::new();
    for r in &reports[4..] {
        let redone = r.islands.iter().all(|i| matches!(i.path, StepPath::Fallback | StepPath::FallbackTruncated));
        assert!(redone, "frame {}: {:?}", r.frame, r.islands);
        if r.islands.iter().any(|i| i.travelled == 0.0) {
            frozen.push(r.frame);
        }
    }
    assert!(
        frozen.is_empty(),
        "the fallback returned its start unchanged at frames {frozen:?}: {:?}",
        frozen.iter().map(|&f| &reports[f as usize - 1].islands).collect::<Vec<_>>()
    );
    // Moving, and no faster than the settling stack's own motion: the price paid for the
    // offset adds no energy.
    let fastest = world.velocities().iter().map(|v| v.length()).fold(0.0, f32::max);
    assert!(fastest > 0.0 && fastest < 0.1, "fastest vertex {fastest} m/s");
    assert!(lowest_y(&world, boxes[0]) > 0.0 && lowest_y(&world, boxes[1]) > lowest_y(&world, boxes[0]));
}

/// On the GPU backend with `gpu_fallback`: the body–body scenes above (the projectile at the
/// cloth, the stiff block on the soft sheet, the steel weight on the cloth), which have surface
/// contact, are redone on the device itself: its check rejects the fast step, its
/// augmented-Lagrangian step (with the surface pairs its own CCD finds) redoes the substep in
/// the same submission, and no frame is stepped again by the host. Every frame read back is
/// free of crossings and inverted tets (`drive_on_gpu`), the cube is caught on the cloth's near
/// side and the block stays above the sheet. The cloth pulled through the slot between two
/// boxes (no surface pairs decide there; the boxes' entry tests do) is pulled into the slot.
/// Known defect, not asserted: the device's step (8 outer iterations) holds that cloth in the
/// slot (3 cm below the boxes' tops after 40 frames with span contacts, 10 cm before them),
/// where the CPU's fallback pulls it through and out below (its test above).
///
/// One test per scene (below), so that the four run side by side.
#[cfg(feature = "gpu")]
fn the_device_redoes_body_body_contact_itself(scene: &str, frames: u64, reasons: &[FallbackReason]) {
    use pliant::Backend;
    let mut loaded = common::load(scene);
    let config = StepConfig { backend: Backend::Gpu, gpu_fallback: true, ..loaded.world.config().clone() };
    if let Err(e) = loaded.world.set_config(config) {
        common::no_gpu(&e);
        return;
    }
    let reports = drive_on_gpu(&mut loaded.world, frames);
    let events = loaded.world.drain_events();
    let rejected = loaded.bodies.iter().any(|b| reasons.iter().any(|&r| rejected_on_gpu(&events, b.handle, r)));
    assert!(rejected, "{scene}: the GPU's check did not reject a step for {reasons:?}: {events:?}");
    let detected = assert_detected(&reports);
    assert!(reasons.iter().any(|r| detected.contains(r)), "{scene}: {detected:?}");
    for r in &reports {
        assert_eq!(r.backend, Backend::Gpu, "{scene} frame {}: {:?}", r.frame, loaded.world.why_not_gpu());
        assert_eq!(r.frames_redone, 0, "{scene} frame {}: stepped again by the host", r.frame);
    }
    let world = &loaded.world;
    match scene {
        "fallback_projectile_cloth" => {
            let (cube, cloth) = (centroid_y(world, body(&loaded, "cube")), lowest_y(world, body(&loaded, "sheet")));
            assert!(cube > cloth, "cube centre {cube} below the cloth's lowest point {cloth}");
        }
        "fallback_stiff_on_soft" => {
            let (block, sheet) = (lowest_y(world, body(&loaded, "block")), lowest_y(world, body(&loaded, "sheet")));
            assert!(block > sheet, "block at {block}, sheet at {sheet}");
        }
        "fallback_cloth_gap" => {
            // Below the boxes' tops (0.1 m). With span contacts on the fast path (issue 30)
            // the device's step holds the cloth higher still: 0.067 m after 40 frames, where
            // it was below 0 m before.
            let low = lowest_y(world, body(&loaded, "cloth"));
            assert!(low < 0.09, "the cloth was not pulled into the slot: lowest {low} m");
        }
        _ => {}
    }
}

#[cfg(feature = "gpu")]
#[test]
fn on_the_gpu_the_device_redoes_the_projectile_at_the_cloth_itself() {
    the_device_redoes_body_body_contact_itself("fallback_projectile_cloth", 20, &[FallbackReason::Speed]);
}

#[cfg(feature = "gpu")]
#[test]
fn on_the_gpu_the_device_redoes_the_stiff_block_on_the_sheet_itself() {
    the_device_redoes_body_body_contact_itself("fallback_stiff_on_soft", 12, &[FallbackReason::ResidualGrowth]);
}

/// The weight's stalled step is caught by whichever of the residual rule and the energy test
/// sees it first (see `on_the_gpu_the_residual_rule_sends_stalled_sweeps_to_the_fallback`).
#[cfg(feature = "gpu")]
#[test]
fn on_the_gpu_the_device_redoes_the_weight_on_the_sheet_itself() {
    use FallbackReason::{EnergyGain, ResidualGrowth};
    the_device_redoes_body_body_contact_itself("fallback_weight_on_sheet", 18, &[ResidualGrowth, EnergyGain]);
}

#[cfg(feature = "gpu")]
#[test]
fn on_the_gpu_the_device_redoes_the_cloth_in_the_gap_itself() {
    the_device_redoes_body_body_contact_itself("fallback_cloth_gap", 40, &[FallbackReason::Crossing]);
}
