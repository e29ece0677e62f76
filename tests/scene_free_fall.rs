//! Free fall: every vertex of a released body follows `x0 + v0 t + ½ g t²`.
//!
//! Tolerance 1e-4 m after 1 s (the bar). The Newmark integrator is exact for constant
//! acceleration, so what remains is f32 rounding of positions near 1–5 m (≈ 1e-6 m per step);
//! backward Euler would be 8 cm off (½ g h t), which the second test documents.

use pliant::prelude::*;

fn fall(integrator: Integrator) -> f32 {
    let config = StepConfig { integrator, ..StepConfig::default() };
    let mut world = World::new(config).unwrap();
    let v0 = Vec3::new(1.5, 4.0, -0.5);
    let mesh = TetMesh::box_mesh(Vec3::new(0.3, 0.2, 0.1), [4, 3, 2], TetSplit::Six).unwrap();
    let h = world.bodies.insert(
        SoftBodyBuilder::tetrahedral(mesh)
            .material(StableNeoHookean::from_young_poisson(2e5, 0.4))
            .translation(Vec3::new(0.0, 2.0, 0.0))
            .velocity(v0)
            .build()
            .unwrap(),
    );
    world.sync();
    let x0: Vec<Vec3> = world.body_positions(h).unwrap().iter().map(|p| p.truncate()).collect();
    for _ in 0..60 {
        let r = world.step();
        assert!(!r.nan_detected);
    }
    assert!((world.time() - 1.0).abs() < 1e-6);
    let t = world.time() as f32;
    let g = StepConfig::default().gravity;
    world
        .body_positions(h)
        .unwrap()
        .iter()
        .zip(&x0)
        .map(|(p, x)| (p.truncate() - (*x + v0 * t + 0.5 * g * t * t)).length())
        .fold(0.0, f32::max)
}

#[test]
fn free_fall_matches_the_parabola_to_1e_4_m_after_1_s() {
    let err = fall(Integrator::Newmark);
    assert!(err < 1e-4, "max vertex error {err} m");
}

#[test]
fn backward_euler_lags_the_parabola_by_half_g_h_t() {
    let err = fall(Integrator::BackwardEuler);
    let expected = 0.5 * 9.81 / 60.0;
    assert!((err - expected).abs() < 0.02 * expected, "{err} vs {expected}");
}

#[test]
fn free_fall_is_exact_with_several_threads_and_substeps() {
    for (threads, substeps) in [(2, 1), (1, 4)] {
        let config = StepConfig { threads, substeps, ..StepConfig::default() };
        let mut world = World::new(config).unwrap();
        let mesh = TetMesh::sphere(0.1, 6, TetSplit::Six).unwrap();
        let h = world.bodies.insert(SoftBodyBuilder::tetrahedral(mesh).translation(Vec3::Y).build().unwrap());
        world.sync();
        let y0 = world.body_positions(h).unwrap()[0].y;
        for _ in 0..60 {
            world.step();
        }
        let y = world.body_positions(h).unwrap()[0].y;
        assert!((y - (y0 - 0.5 * 9.81)).abs() < 1e-4, "threads {threads} substeps {substeps}: {y} vs {}", y0 - 4.905);
    }
}
