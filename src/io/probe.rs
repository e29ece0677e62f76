//! Probe evaluation.

use glam::{DMat3, DVec3, Vec3, Vec3A, Vec4};

use crate::collision::Obstacle;

use super::scene::ProbeKind;
use super::scene_build::{LoadedScene, ResolvedProbe};

/// Values of one probe now.
pub fn evaluate(loaded: &LoadedScene, p: &ResolvedProbe) -> Vec<f64> {
    let body = &loaded.bodies[p.body];
    let w = &loaded.world;
    let (Some(x), Some(v)) = (w.body_positions(body.handle), w.body_velocities(body.handle)) else {
        return Vec::new();
    };
    let masses = &w.bodies[body.handle].shared().masses;
    let sel = || p.vertices.iter().map(|&i| i as usize);
    let n = p.vertices.len() as f64;
    let mean = |f: &dyn Fn(usize) -> Vec3| {
        let s = sel().fold([0.0f64; 3], |a, i| {
            let q = f(i);
            [a[0] + q.x as f64, a[1] + q.y as f64, a[2] + q.z as f64]
        });
        s.map(|c| c / n).to_vec()
    };
    let pos = |i: usize| x[i].truncate();
    match p.kind {
        ProbeKind::MeanPosition => mean(&pos),
        ProbeKind::MeanDisplacement => mean(&|i| pos(i) - body.rest[i]),
        ProbeKind::Com => {
            let (mut s, mut m) = ([0.0f64; 3], 0.0f64);
            for i in sel() {
                let q = pos(i);
                let mi = masses[i] as f64;
                s = [s[0] + mi * q.x as f64, s[1] + mi * q.y as f64, s[2] + mi * q.z as f64];
                m += mi;
            }
            s.map(|c| c / m).to_vec()
        }
        ProbeKind::MaxSpeed => vec![sel().map(|i| speed(v[i])).fold(0.0, f64::max)],
        ProbeKind::KineticEnergy => vec![sel().map(|i| 0.5 * masses[i] as f64 * speed(v[i]).powi(2)).sum()],
        ProbeKind::Bbox => {
            let (lo, hi) = sel().fold((Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)), |(a, b), i| {
                (a.min(pos(i)), b.max(pos(i)))
            });
            [lo.x, lo.y, lo.z, hi.x, hi.y, hi.z].map(|c| c as f64).to_vec()
        }
        ProbeKind::AngularMomentum => {
            let (l, _) =
                spin(sel().map(|i| (masses[i] as f64, x[i].truncate().as_dvec3(), v[i].truncate().as_dvec3())));
            l.to_array().to_vec()
        }
        ProbeKind::AngularVelocity => {
            let (l, inertia) =
                spin(sel().map(|i| (masses[i] as f64, x[i].truncate().as_dvec3(), v[i].truncate().as_dvec3())));
            let omega = if inertia.determinant().abs() > 0.0 { inertia.inverse() * l } else { DVec3::ZERO };
            omega.to_array().to_vec()
        }
        ProbeKind::ObstacleDepth => {
            let surface = &w.bodies[body.handle].shared().surface;
            vec![surface_depth(surface, &|i| pos(i).into(), &w.obstacles) as f64]
        }
    }
}

/// Subdivisions of a triangle's edges in [`surface_depth`]: 28 samples per triangle, 1/6 of an
/// edge apart.
const DEPTH_GRID: u32 = 6;

/// The deepest point \[m\] (0 if none is inside) of the triangles `surface`, over vertex
/// positions `x`, inside any of `obstacles`: always found (`Obstacle::triangle_depth`: a box's
/// corner or edge, a sphere's cap between the vertices; exact for edges and a cap, a lower bound
/// for a box's corner inside the triangle) for a triangle whose vertices are
/// outside a box or a sphere, and sampled on a barycentric grid for every triangle and
/// obstacle (a rapier collider's corner between the samples is missed).
pub(crate) fn surface_depth(surface: &[[u32; 3]], x: &dyn Fn(usize) -> Vec3A, obstacles: &[Obstacle]) -> f32 {
    let mut deepest = 0.0f32;
    for t in surface {
        let [a, b, c] = t.map(|i| x(i as usize));
        for o in obstacles {
            deepest = deepest.max(o.triangle_depth([a, b, c]).unwrap_or(0.0));
        }
        for i in 0..=DEPTH_GRID {
            for j in 0..=DEPTH_GRID - i {
                let (u, v) = (i as f32 / DEPTH_GRID as f32, j as f32 / DEPTH_GRID as f32);
                let p = a + (b - a) * u + (c - a) * v;
                for o in obstacles {
                    deepest = deepest.max(-o.signed_distance(p).0);
                }
            }
        }
    }
    deepest
}

/// Angular momentum and inertia tensor of point masses `(m, x, v)` about their centre of mass.
fn spin(points: impl Iterator<Item = (f64, DVec3, DVec3)> + Clone) -> (DVec3, DMat3) {
    let (m, mx, mv) = points
        .clone()
        .fold((0.0, DVec3::ZERO, DVec3::ZERO), |(m, mx, mv), (mi, x, v)| (m + mi, mx + mi * x, mv + mi * v));
    if m <= 0.0 {
        return (DVec3::ZERO, DMat3::ZERO);
    }
    let (c, vc) = (mx / m, mv / m);
    points.fold((DVec3::ZERO, DMat3::ZERO), |(l, inertia), (mi, x, v)| {
        let r = x - c;
        let arm = DMat3::from_diagonal(DVec3::splat(r.length_squared())) - outer(r, r);
        (l + mi * r.cross(v - vc), inertia + arm * mi)
    })
}

fn outer(a: DVec3, b: DVec3) -> DMat3 {
    DMat3::from_cols(a * b.x, a * b.y, a * b.z)
}

fn speed(v: Vec4) -> f64 {
    v.truncate().length() as f64
}
