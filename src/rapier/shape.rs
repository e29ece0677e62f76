//! Any parry shape as an [`ObstacleGeometry`]: signed distance by point projection, the first
//! hit of a vertex path by a ray cast. Shapes parry cannot tell the inside of are handled here:
//! a heightfield is solid below its surface, a compound is signed by containment (its parts may
//! overlap), and a triangle mesh without orientation is an open, two-sided surface.

use glam::Vec3;
use rapier3d::parry::query::Ray;
use rapier3d::parry::shape::{Shape, ShapeType, SharedShape};

use crate::collision::{ObstacleGeometry, ball_signed_distance, box_signed_distance};

/// A rapier collider's shape, queried in the collider's frame.
#[derive(Clone)]
pub struct ColliderGeometry {
    shape: SharedShape,
    kind: ShapeType,
    solid: bool,
    /// The signed distance in closed form, for the shapes that have one.
    closed_form: Option<ClosedForm>,
}

/// Shapes whose signed distance is a few lines of arithmetic: every vertex of a soft body asks
/// it in every sweep, and a ground or a gripper jaw is usually a box.
#[derive(Clone, Copy, Debug)]
enum ClosedForm {
    Cuboid { half_extents: Vec3 },
    Ball { radius: f32 },
}

impl ClosedForm {
    fn of(shape: &dyn Shape) -> Option<Self> {
        match shape.shape_type() {
            ShapeType::Cuboid => shape.as_cuboid().map(|c| Self::Cuboid { half_extents: c.half_extents }),
            ShapeType::Ball => shape.as_ball().map(|b| Self::Ball { radius: b.radius }),
            _ => None,
        }
    }

    /// Signed distance and outward unit normal at `p` (the shape's frame).
    fn signed_distance(&self, p: Vec3) -> (f32, Vec3) {
        let (d, n) = match *self {
            Self::Cuboid { half_extents } => box_signed_distance(p.into(), half_extents.into()),
            Self::Ball { radius } => ball_signed_distance(p.into(), radius),
        };
        (d, n.into())
    }
}

impl std::fmt::Debug for ColliderGeometry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColliderGeometry").field("kind", &self.kind).field("solid", &self.solid).finish()
    }
}

/// Whether parry's shape has an inside Pliant can keep vertices out of.
fn has_inside(shape: &dyn Shape) -> bool {
    match shape.shape_type() {
        ShapeType::TriMesh => shape.as_trimesh().is_some_and(|m| m.pseudo_normals_if_oriented().is_some()),
        ShapeType::Compound => shape.as_compound().is_some_and(|c| c.shapes().iter().all(|(_, s)| has_inside(&**s))),
        ShapeType::Triangle | ShapeType::Segment | ShapeType::Polyline | ShapeType::RoundTriangle => false,
        _ => true,
    }
}

impl ColliderGeometry {
    /// Wraps a collider's shape (shared, not copied).
    pub fn new(shape: SharedShape) -> Self {
        let kind = shape.shape_type();
        let solid = has_inside(&*shape.0);
        let closed_form = ClosedForm::of(&*shape.0);
        Self { shape, kind, solid, closed_form }
    }

    /// The wrapped shape.
    pub fn shape(&self) -> &SharedShape {
        &self.shape
    }

    /// Whether `p` is inside the solid, for shapes whose projection does not say.
    fn inside(&self, p: Vec3, projected_inside: bool) -> bool {
        match self.kind {
            // A heightfield is solid below its surface: a point is below when the surface is
            // above it (parry's projection never reports a point inside a heightfield).
            ShapeType::HeightField => self.shape.cast_local_ray(&Ray::new(p, Vec3::Y), f32::MAX, false).is_some(),
            // Overlapping parts: a point inside one part may project onto another's surface.
            ShapeType::Compound => self.shape.contains_local_point(p),
            _ => projected_inside && self.solid,
        }
    }
}

impl ObstacleGeometry for ColliderGeometry {
    fn signed_distance(&self, p: Vec3) -> (f32, Vec3) {
        if let Some(c) = &self.closed_form {
            return c.signed_distance(p);
        }
        let proj = self.shape.project_local_point(p, false);
        let diff = p - proj.point;
        let len = diff.length();
        let inside = self.inside(p, proj.is_inside);
        let dir = if len > 1e-12 {
            diff / len
        } else {
            // On the surface: the normal of the feature there, where parry knows it.
            let (on, feature) = self.shape.project_local_point_and_get_feature(p);
            let n = self.shape.feature_normal_at_point(on.subshape, feature, p).unwrap_or(Vec3::Y);
            if inside { -n } else { n }
        };
        if inside { (-len, -dir) } else { (len, dir) }
    }

    fn first_hit(&self, a: Vec3, b: Vec3) -> Option<(f32, Vec3)> {
        let d = b - a;
        if d == Vec3::ZERO {
            return None;
        }
        let hit = self.shape.cast_local_ray_and_get_normal(&Ray::new(a, d), 1.0, false)?;
        let n = hit.normal.normalize_or(-d.normalize());
        // Facing the start: an open surface's normal may point either way.
        Some((hit.time_of_impact, if n.dot(d) > 0.0 { -n } else { n }))
    }

    fn local_bounds(&self) -> (Vec3, Vec3) {
        let aabb = self.shape.compute_local_aabb();
        (aabb.mins, aabb.maxs)
    }

    fn has_inside(&self) -> bool {
        self.solid
    }

    fn is_convex(&self) -> bool {
        self.shape.is_convex()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rapier3d::parry::shape::TriMeshFlags;

    fn shapes() -> Vec<(&'static str, SharedShape)> {
        let cube = |h: f32| {
            let v = (0..8)
                .map(|k| {
                    Vec3::new(
                        if k & 1 == 0 { -h } else { h },
                        if k & 2 == 0 { -h } else { h },
                        if k & 4 == 0 { -h } else { h },
                    )
                })
                .collect::<Vec<_>>();
            let tris = vec![
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
            (v, tris)
        };
        let (v, t) = cube(0.3);
        let heights = rapier3d::parry::utils::Array2::from_fn(5, 5, |i, j| 0.05 * ((i + j) % 2) as f32);
        vec![
            ("ball", SharedShape::ball(0.3)),
            ("cuboid", SharedShape::cuboid(0.3, 0.2, 0.25)),
            ("capsule", SharedShape::capsule_y(0.2, 0.1)),
            ("cylinder", SharedShape::cylinder(0.2, 0.25)),
            ("cone", SharedShape::cone(0.2, 0.25)),
            ("round cuboid", SharedShape::round_cuboid(0.2, 0.2, 0.2, 0.05)),
            ("convex", SharedShape::convex_hull(&v).unwrap()),
            ("trimesh", SharedShape::trimesh_with_flags(v.clone(), t.clone(), TriMeshFlags::ORIENTED).unwrap()),
            ("heightfield", SharedShape::heightfield(heights, Vec3::new(1.0, 1.0, 1.0))),
            (
                "compound",
                SharedShape::compound(vec![
                    (rapier3d::math::Pose::from_translation(Vec3::new(0.1, 0.0, 0.0)), SharedShape::ball(0.2)),
                    (
                        rapier3d::math::Pose::from_translation(Vec3::new(-0.1, 0.0, 0.0)),
                        SharedShape::cuboid(0.2, 0.2, 0.2),
                    ),
                ]),
            ),
        ]
    }

    /// The signed distance's gradient is its normal, away from the surface, for every kind.
    #[test]
    fn distance_gradients_are_the_normals() {
        let points = [Vec3::new(0.45, 0.31, 0.12), Vec3::new(-0.05, 0.52, 0.33), Vec3::new(0.02, 0.06, -0.04)];
        for (name, shape) in shapes() {
            let g = ColliderGeometry::new(shape);
            for p in points {
                let (d, n) = g.signed_distance(p);
                let eps = 1e-3;
                let fd = Vec3::new(
                    g.signed_distance(p + Vec3::X * eps).0 - g.signed_distance(p - Vec3::X * eps).0,
                    g.signed_distance(p + Vec3::Y * eps).0 - g.signed_distance(p - Vec3::Y * eps).0,
                    g.signed_distance(p + Vec3::Z * eps).0 - g.signed_distance(p - Vec3::Z * eps).0,
                ) / (2.0 * eps);
                assert!((fd - n).length() < 2e-2, "{name} at {p}: d {d} n {n} fd {fd}");
            }
        }
    }

    /// Points near the centre are inside every solid (below the heightfield).
    #[test]
    fn closed_forms_agree_with_parry() {
        for shape in [SharedShape::cuboid(0.3, 0.1, 0.2), SharedShape::ball(0.25)] {
            let fast = ColliderGeometry::new(shape.clone());
            assert!(fast.closed_form.is_some());
            let parry = ColliderGeometry { closed_form: None, ..fast.clone() };
            let mut rng = crate::test_rng::Rng(7);
            for k in 0..2000 {
                // Inside, near the surface and outside.
                let scale = [0.2, 0.35, 1.0][k % 3];
                let p = Vec3::new(rng.signed() as f32, rng.signed() as f32, rng.signed() as f32) * scale;
                let (d0, n0) = fast.signed_distance(p);
                let (d1, n1) = parry.signed_distance(p);
                assert!((d0 - d1).abs() < 1e-6, "{:?} at {p}: {d0} vs parry {d1}", fast.kind);
                // Where two faces are equally near either normal is right.
                let tie = matches!(fast.closed_form, Some(ClosedForm::Cuboid { .. })) && d0 < 0.0 && {
                    let q = p.abs() - Vec3::new(0.3, 0.1, 0.2);
                    let mut v = q.to_array();
                    v.sort_by(f32::total_cmp);
                    v[2] - v[1] < 1e-5
                };
                assert!(tie || (n0 - n1).length() < 1e-4, "{:?} at {p}: normal {n0} vs parry {n1}", fast.kind);
            }
        }
    }

    #[test]
    fn centres_are_inside() {
        for (name, shape) in shapes() {
            let g = ColliderGeometry::new(shape);
            assert!(g.has_inside(), "{name}");
            let p = if name == "heightfield" { Vec3::new(0.1, -0.2, 0.1) } else { Vec3::new(0.01, 0.02, 0.0) };
            assert!(g.signed_distance(p).0 < 0.0, "{name}: {:?}", g.signed_distance(p));
        }
        let open = SharedShape::trimesh(vec![Vec3::ZERO, Vec3::X, Vec3::Z], vec![[0, 1, 2]]).unwrap();
        assert!(!ColliderGeometry::new(open).has_inside());
    }

    /// The first hit of a path from above agrees with sampling the signed distance.
    #[test]
    fn first_hits_agree_with_sampling() {
        for (name, shape) in shapes() {
            let g = ColliderGeometry::new(shape);
            for k in 0..20 {
                let a = Vec3::new(-0.2 + 0.02 * k as f32, 0.8, 0.05);
                let b = Vec3::new(0.1, -0.25, -0.03 * k as f32 * 0.1);
                let brute = (0..=4000).map(|i| i as f32 / 4000.0).find(|&t| g.signed_distance(a + (b - a) * t).0 < 0.0);
                match (g.first_hit(a, b), brute) {
                    (Some((t, n)), Some(tb)) => {
                        assert!((t - tb).abs() < 2e-3, "{name}: {t} vs {tb}");
                        assert!(n.dot(b - a) < 0.0, "{name}: normal {n} does not face the start");
                    }
                    (None, None) => {}
                    (hit, brute) => panic!("{name}: hit {hit:?}, sampled {brute:?} on {a} → {b}"),
                }
            }
        }
    }
}
