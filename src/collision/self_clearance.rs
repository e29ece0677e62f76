//! How far each body's surface stays from itself, carried from one full self-contact detection
//! to later configurations, so that a body that is not folding is not searched for contact
//! with itself in every detection.
//!
//! A full detection walks a self-colliding body's own primitives and finds, for each surface
//! vertex, a lower bound on its distance to every primitive of the same body it may pair with
//! (sharing no vertex): its *clearance*. Those positions become the body's *reference*. At
//! later positions `y`, fit the rigid motion `T` that best maps the reference onto `y`
//! (`math::fit_rigid`) and let `ε` be the largest distance of a surface vertex from its image.
//! Points of a primitive are fixed convex combinations of its vertices and `T` preserves
//! distances, so every distance between two points of the body's surface changed by at most
//! `2ε`, and each pair of primitives is still at least `clearance − 2ε` apart at every vertex.
//! Along a straight path from `x` to `y` whose end fits turn by `θ` relative to each other,
//! the points follow `((1 − s) R₀ + s R₁) X` up to `ε`, a linear map that shrinks no vector by
//! more than `cos(θ/2)`: every pair stays at least `cos(θ/2) · least − 2ε` apart, where
//! `least` is the smallest clearance of the body.
//!
//! A certificate is used while it keeps at least `1 − SELF_SLACK` of the least clearance and
//! stays above the caller's floor; otherwise the body is walked again and becomes its own new
//! reference. A body whose full detection stored a pair with itself (a folded sheet) is never
//! certified: its pairs need their frames from a detection.
//!
//! On four stacked cubes two thirds of a detection's candidates were each cube's own
//! neighbouring primitives, every one of them rejected as too far; a resting or flying body
//! now costs nothing here beyond one pass over its surface.

use glam::{Quat, Vec3A, Vec4};

use crate::math::{RigidFit, fit_residual, fit_rigid};
use crate::state::SimState;

/// Share of a body's least clearance a certificate may use up before the body's own
/// primitives are searched again. The certified distances, and so the displacement bounds,
/// are up to twice this share smaller than a search's (the reference's distances less `2ε`,
/// where a search may find them `2ε` larger): at 0.25 the cloth sheets of `cloth_stack`
/// were held enough while landing that the residual rule sent a step to the fallback.
pub const SELF_SLACK: f32 = 0.1;

/// Per-body self-contact references and per-vertex clearances.
#[derive(Clone, Debug, Default)]
pub struct SelfClearance {
    bodies: Vec<BodyClearance>,
    /// Per vertex: its clearance at its body's reference \[m\] (f32 bits, so that a detection
    /// can lower it through atomics; positive floats order as integers).
    pub vertex: Vec<u32>,
}

#[derive(Clone, Debug, Default)]
struct BodyClearance {
    /// The body's range in `SimState::surface_vertices`.
    surface: std::ops::Range<usize>,
    /// Positions of those vertices at the reference.
    reference: Vec<Vec3A>,
    /// Smallest clearance of the body's surface vertices \[m\].
    least: f32,
    /// The reference exists and stored no pair with itself.
    valid: bool,
    /// The last fit's rotation (where the next fit starts).
    rotation: Quat,
}

impl SelfClearance {
    /// Sizes the clearances for `st`; a body whose surface moved within the surface lists
    /// loses its reference.
    pub fn resize(&mut self, st: &SimState) {
        self.vertex.resize(st.vertex_count(), 0);
        self.bodies.resize_with(st.bodies.len(), BodyClearance::default);
        let mut k = 0;
        for (b, body) in self.bodies.iter_mut().enumerate() {
            let first = k;
            while k < st.surface_vertices.len() && st.vertex_body[st.surface_vertices[k] as usize] as usize == b {
                k += 1;
            }
            if body.surface != (first..k) {
                body.surface = first..k;
                body.valid = false;
            }
        }
    }

    /// Forgets every reference (the surface lists name another topology).
    pub fn forget(&mut self) {
        self.bodies.clear();
    }

    fn fit(&self, st: &SimState, b: usize, x: &[Vec4], start: Quat) -> (RigidFit, f32) {
        let body = &self.bodies[b];
        let at = |i: usize| Vec3A::from_vec4(x[st.surface_vertices[body.surface.start + i] as usize]);
        let fit = fit_rigid(&body.reference, at, start);
        (fit, fit_residual(&fit, &body.reference, at))
    }

    /// Whether the certificate may stand in for a search with a guaranteed distance `d`.
    fn enough(&self, b: usize, d: f32, floor: f32) -> bool {
        d >= floor.max((1.0 - SELF_SLACK) * self.bodies[b].least)
    }

    /// At positions `x`: `Some(loss)` when body `b`'s reference certifies that every pair of
    /// its own primitives is at least its vertices' clearance less `loss` apart, with at least
    /// `floor` left; `None` when the body must be searched.
    pub fn certify_at(&mut self, st: &SimState, b: usize, x: &[Vec4], floor: f32) -> Option<f32> {
        if !self.bodies.get(b).is_some_and(|c| c.valid) {
            return None;
        }
        let (fit, residual) = self.fit(st, b, x, self.bodies[b].rotation);
        self.bodies[b].rotation = fit.rotation;
        let loss = 2.0 * residual;
        // A non-finite position gives an infinite loss: not certified.
        self.enough(b, self.bodies[b].least - loss, floor).then_some(loss)
    }

    /// The least distance body `b`'s reference guarantees between any two of its own
    /// primitives anywhere along the straight paths `x → y`, `cos(θ/2) · least − 2ε` (module
    /// docs); `None` without a valid reference. Not finite for a non-finite position.
    fn path_bound(&mut self, st: &SimState, b: usize, x: &[Vec4], y: &[Vec4]) -> Option<f32> {
        if !self.bodies.get(b).is_some_and(|c| c.valid) {
            return None;
        }
        let (start, start_residual) = self.fit(st, b, x, self.bodies[b].rotation);
        let (end, end_residual) = self.fit(st, b, y, start.rotation);
        self.bodies[b].rotation = end.rotation;
        let turn = RigidFit { rotation: start.rotation.inverse() * end.rotation, ..end }.angle();
        Some((0.5 * turn).cos() * self.bodies[b].least - 2.0 * start_residual.max(end_residual))
    }

    /// Whether body `b`'s reference certifies that no two of its own primitives come closer
    /// than `floor` anywhere along the straight paths `x → y`.
    pub fn certify_path(&mut self, st: &SimState, b: usize, x: &[Vec4], y: &[Vec4], floor: f32) -> bool {
        self.path_bound(st, b, x, y).is_some_and(|d| self.enough(b, d, floor))
    }

    /// Whether body `b`'s reference proves that no two of its own primitives come within
    /// `floor` of each other anywhere along the straight paths `x → y`: the bound of
    /// [`SelfClearance::certify_path`] without its slack, which only guards the quality of the
    /// fast path's displacement bounds. A swept search for crossings may skip the body's own
    /// pairs when it holds.
    pub fn keeps_apart(&mut self, st: &SimState, b: usize, x: &[Vec4], y: &[Vec4], floor: f32) -> bool {
        // Not finite (a non-finite position): not proven.
        self.path_bound(st, b, x, y).is_some_and(|d| d >= floor)
    }

    /// Makes positions `x` body `b`'s reference, with the clearances a full detection just
    /// left in `vertex`; `stored_self_pair` if that detection stored a pair of the body with
    /// itself.
    pub fn record(&mut self, st: &SimState, b: usize, x: &[Vec4], stored_self_pair: bool) {
        let body = &mut self.bodies[b];
        let vertices = &st.surface_vertices[body.surface.clone()];
        body.reference.clear();
        body.reference.extend(vertices.iter().map(|&v| Vec3A::from_vec4(x[v as usize])));
        body.least = vertices.iter().map(|&v| f32::from_bits(self.vertex[v as usize])).fold(f32::INFINITY, f32::min);
        body.valid = !stored_self_pair && body.least.is_finite() && body.least > 0.0;
        body.rotation = Quat::IDENTITY;
    }
}
