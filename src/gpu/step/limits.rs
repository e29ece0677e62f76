//! What the GPU step takes: a scene beyond it steps on the CPU with the reason.

use crate::collision::{Obstacle, ObstacleShape};
use crate::gpu::kernel::WORKGROUP;
use crate::gpu::obstacles::MAX_OBSTACLES;
use crate::state::SimState;

/// Why a scene cannot be stepped on the GPU yet, or `None` when it can. The CPU path takes
/// every scene; the GPU path does tets and cloth with damping, pins, analytic obstacles and
/// body–body and self contact (the rigid correction is checked by the world).
pub fn unsupported(st: &SimState, obstacles: &[Obstacle]) -> Option<String> {
    if obstacles.iter().any(|o| matches!(o.shape, ObstacleShape::Posed(_))) {
        return Some("moving obstacles of general shape (rapier colliders) step on the CPU".into());
    }
    if obstacles.len() > MAX_OBSTACLES {
        return Some(format!("{} obstacles (at most {})", obstacles.len(), MAX_OBSTACLES));
    }
    if st.vertex_count() == 0 {
        return Some("an empty world".into());
    }
    // Dispatches are one-dimensional: at most 65,535 workgroups. A tree over n surface
    // primitives has 2n − 1 nodes and sorts n keys padded to a power of two (< 2n).
    let limit = 65_535 * WORKGROUP as usize;
    let counts = [
        ("vertices", st.vertex_count()),
        ("tetrahedra", st.tets.len()),
        ("triangles", st.tris.len()),
        ("hinges", st.hinges.len()),
        ("surface triangles", 2 * st.surface_triangles.len()),
        ("surface edges", 2 * st.surface_edges.len()),
    ];
    if let Some((what, n)) = counts.into_iter().find(|&(_, n)| n > limit) {
        return Some(format!("{what}: {n} invocations in one dispatch (at most {limit})"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scene with more of something than one dispatch covers is named as such (the world then
    /// steps on the CPU with that reason) instead of failing on the device.
    #[test]
    fn counts_beyond_one_dispatch_are_unsupported() {
        let limit = 65_535 * WORKGROUP as usize;
        let mut st = SimState { masses: vec![1.0; limit], ..SimState::default() };
        assert_eq!(unsupported(&st, &[]), None);
        st.masses.push(1.0);
        let why = unsupported(&st, &[]).expect("too many vertices");
        assert!(why.contains("vertices") && why.contains(&(limit + 1).to_string()), "{why}");
        st.masses.truncate(8);
        st.surface_edges = vec![[0, 1]; limit / 2 + 1];
        let why = unsupported(&st, &[]).expect("too many surface edges");
        assert!(why.contains("surface edges"), "{why}");
    }
}
