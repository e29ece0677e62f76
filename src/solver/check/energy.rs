//! End-of-step measurements: energies, speeds, obstacle distances, finiteness per body.

use glam::{Vec3A, Vec4};

use crate::collision::{ContactModel, Obstacle};
use crate::material::MODEL_STABLE_NEO_HOOKEAN;
use crate::material::{bending, membrane, stable_neo_hookean, stvk, tet};
use crate::state::{SimState, TetElement};

/// Energies of the whole world at the end of a step \[J\].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Energies {
    /// `½ Σ m |v|²`.
    pub kinetic: f64,
    /// Elastic energy Ψ (membrane and bending included).
    pub elastic: f64,
    /// Gravitational potential `−Σ m g·x` (zero at the origin).
    pub gravitational: f64,
    /// Contact penalty energy.
    pub contact: f64,
}

impl Energies {
    /// Sum of all terms.
    pub fn total(&self) -> f64 {
        self.kinetic + self.elastic + self.gravitational + self.contact
    }
}

#[inline]
fn p(st: &SimState, i: u32) -> Vec3A {
    Vec3A::from_vec4(st.positions[i as usize])
}

/// Energies of the state (fixed summation order).
pub(crate) fn energies(st: &SimState, gravity: Vec3A, obstacles: &[Obstacle], contact: &ContactModel) -> Energies {
    let mut e = Energies::default();
    for (i, (&x, &v)) in st.positions.iter().zip(&st.velocities).enumerate() {
        let m = st.masses[i] as f64;
        e.kinetic += 0.5 * m * Vec3A::from_vec4(v).length_squared() as f64;
        e.gravitational -= m * gravity.dot(Vec3A::from_vec4(x)) as f64;
        let k_c = contact.stiffness.for_mass(st.masses[i]) as f64;
        for o in obstacles.iter().filter(|o| o.applies_to(st.vertex_body[i])) {
            e.contact += contact.energy(k_c, o.signed_distance(Vec3A::from_vec4(x)).0 as f64);
        }
    }
    for t in &st.tets {
        e.elastic += tet_energy(st, t, |i| p(st, i));
    }
    for t in &st.tris {
        let x = [p(st, t.vertices[0]), p(st, t.vertices[1]), p(st, t.vertices[2])];
        let m = &st.materials[t.material as usize];
        let dm = [[t.dm_inv[0], t.dm_inv[1]], [t.dm_inv[2], t.dm_inv[3]]];
        e.elastic += membrane::element_energy::<f32>(&x, &dm, t.measure, m.mu, m.lambda) as f64;
    }
    for h in &st.hinges {
        let x = h.vertices.map(|i| p(st, i));
        e.elastic += bending::element_energy::<f32>(&x, h.rest_angle, h.stiffness) as f64;
    }
    e
}

/// Elastic energy of tet `t` with its vertices at `at(i)` \[J\].
fn tet_energy(st: &SimState, t: &TetElement, at: impl Fn(u32) -> Vec3A) -> f64 {
    let f = tet::deformation_gradient::<f32>(&t.vertices.map(at), &t.dm_inv());
    let m = &st.materials[t.material as usize];
    let psi = if m.model == MODEL_STABLE_NEO_HOOKEAN {
        stable_neo_hookean::energy_density::<f32>(&f, m.mu, m.lambda)
    } else {
        stvk::energy_density::<f32>(&f, m.mu, m.lambda)
    };
    (t.volume * psi) as f64
}

/// Largest vertex speed \[m/s\].
pub(crate) fn max_speed(velocities: &[Vec4]) -> f32 {
    velocities.iter().map(|v| v.truncate().length()).fold(0.0, f32::max)
}

/// Smallest signed vertex–obstacle distance \[m\]. Far from a moving obstacle of general shape
/// its distance is a lower bound (its swept box's), so the result is exact whenever some vertex
/// is within that obstacle's query margin.
pub(crate) fn min_obstacle_distance(st: &SimState, obstacles: &[Obstacle]) -> Option<f32> {
    if obstacles.is_empty() || st.positions.is_empty() {
        return None;
    }
    let mut m = f32::INFINITY;
    for (&x, &b) in st.positions.iter().zip(&st.vertex_body) {
        for o in obstacles.iter().filter(|o| o.applies_to(b)) {
            m = m.min(o.signed_distance(Vec3A::from_vec4(x)).0);
        }
    }
    Some(m)
}

/// First vertex in `range` with a non-finite position, velocity or acceleration.
pub(crate) fn first_non_finite(st: &SimState, range: std::ops::Range<usize>) -> Option<(usize, &'static str)> {
    for i in range {
        if !st.positions[i].is_finite() {
            return Some((i, "position"));
        }
        if !st.velocities[i].is_finite() {
            return Some((i, "velocity"));
        }
        if !st.accelerations[i].is_finite() {
            return Some((i, "acceleration"));
        }
    }
    None
}

/// Per body, `(kinetic + elastic, gravitational + obstacle contact)` energy \[J\] of positions
/// `x` and velocities `v`, for the safety check's energy test (the contact layer's energy
/// counts, so a body springing back from it does not read as a gain).
pub(crate) fn body_energies(
    st: &SimState,
    (x, v): (&[Vec4], &[Vec4]),
    gravity: Vec3A,
    obstacles: &[Obstacle],
    contact: &ContactModel,
    out: &mut Vec<(f64, f64)>,
) {
    out.clear();
    out.resize(st.bodies.len(), (0.0, 0.0));
    let at = |i: u32| Vec3A::from_vec4(x[i as usize]);
    for (i, (&p, &u)) in x.iter().zip(v).enumerate() {
        let m = st.masses[i] as f64;
        let e = &mut out[st.vertex_body[i] as usize];
        e.0 += 0.5 * m * Vec3A::from_vec4(u).length_squared() as f64;
        e.1 -= m * gravity.dot(Vec3A::from_vec4(p)) as f64;
        let k_c = contact.stiffness.for_mass(st.masses[i]) as f64;
        for o in obstacles.iter().filter(|o| o.applies_to(st.vertex_body[i])) {
            e.1 += contact.energy(k_c, o.signed_distance(Vec3A::from_vec4(p)).0 as f64);
        }
    }
    for t in &st.tets {
        out[st.vertex_body[t.vertices[0] as usize] as usize].0 += tet_energy(st, t, at);
    }
    for t in &st.tris {
        let m = &st.materials[t.material as usize];
        let dm = [[t.dm_inv[0], t.dm_inv[1]], [t.dm_inv[2], t.dm_inv[3]]];
        let e = membrane::element_energy::<f32>(
            &[at(t.vertices[0]), at(t.vertices[1]), at(t.vertices[2])],
            &dm,
            t.measure,
            m.mu,
            m.lambda,
        );
        out[st.vertex_body[t.vertices[0] as usize] as usize].0 += e as f64;
    }
    for h in &st.hinges {
        let e = bending::element_energy::<f32>(&h.vertices.map(at), h.rest_angle, h.stiffness);
        out[st.vertex_body[h.vertices[0] as usize] as usize].0 += e as f64;
    }
}
