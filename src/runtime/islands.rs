//! Islands: groups of bodies whose steps depend on each other, so that one can be rolled back
//! and redone without touching the rest (docs/algorithms.md §8). Two bodies share an island when a
//! contact pair joins them, or when their swept boxes over the step overlap: start and end
//! positions and where the start velocities were heading (`x + h v`), grown by `margin`. A
//! redone step, which may go elsewhere than the fast path went (a fast path clamped short of a
//! collision, for one), then does not run into a body it did not consider.

use glam::{Vec3A, Vec4};

use crate::collision::bvh::Aabb;
use crate::collision::surface_pairs::{ContactPair, pair_bodies};
use crate::solver::union_find::UnionFind;
use crate::state::SimState;

/// Islands as lists of packed body indices (ascending within and between islands), with the
/// swept box of each.
pub(crate) fn islands(
    st: &SimState,
    (start, heading): (&[Vec4], &[Vec4]),
    h: f32,
    pairs: &[ContactPair],
    margin: f32,
    uf: &mut UnionFind,
) -> Vec<(Vec<u32>, Aabb)> {
    let nb = st.bodies.len();
    let mut boxes = vec![Aabb::EMPTY; nb];
    for (i, (a, b)) in start.iter().zip(&st.positions).enumerate() {
        let bx = &mut boxes[st.vertex_body[i] as usize];
        let (a, b) = (Vec3A::from_vec4(*a), Vec3A::from_vec4(*b));
        let c = a + Vec3A::from_vec4(heading[i]) * h;
        // A non-finite point (a step to be rolled back) counts as the start.
        let finite = |p: Vec3A| if p.is_finite() { p } else { a };
        *bx = bx.grow(a).grow(finite(b)).grow(finite(c));
    }
    let boxes: Vec<Aabb> = boxes.into_iter().map(|b| b.inflate(margin)).collect();
    uf.reset(nb);
    for p in pairs {
        let (a, b) = pair_bodies(st, p.vertices);
        uf.union(a, b);
    }
    // Sort and sweep along x.
    let mut order: Vec<u32> = (0..nb as u32).filter(|&b| boxes[b as usize].min.x <= boxes[b as usize].max.x).collect();
    order.sort_by(|&a, &b| boxes[a as usize].min.x.total_cmp(&boxes[b as usize].min.x));
    for (k, &a) in order.iter().enumerate() {
        for &b in &order[k + 1..] {
            if boxes[b as usize].min.x > boxes[a as usize].max.x {
                break;
            }
            if boxes[a as usize].overlaps(&boxes[b as usize]) {
                uf.union(a, b);
            }
        }
    }
    let mut by_root: Vec<Option<usize>> = vec![None; nb];
    let mut out: Vec<(Vec<u32>, Aabb)> = Vec::new();
    for b in 0..nb as u32 {
        let r = uf.find(b) as usize;
        let k = *by_root[r].get_or_insert_with(|| {
            out.push((Vec::new(), Aabb::EMPTY));
            out.len() - 1
        });
        out[k].0.push(b);
        out[k].1 = out[k].1.union(boxes[b as usize]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::BodyRecord;

    fn state(bodies: &[(f32, f32)]) -> SimState {
        // One vertex per body at x = start, moving to x = end.
        let mut st = SimState::default();
        for (b, &(a, _)) in bodies.iter().enumerate() {
            st.positions.push(Vec4::new(a, 0.0, 0.0, 0.0));
            st.vertex_body.push(b as u32);
            st.masses.push(1.0);
            st.bodies.push(BodyRecord { vertex_start: b as u32, vertex_count: 1, ..Default::default() });
        }
        st
    }

    #[test]
    fn swept_overlap_joins_and_distance_separates() {
        let moves = [(0.0, 0.0), (1.0, 0.05), (5.0, 5.0)];
        let mut st = state(&moves);
        let start = st.positions.clone();
        for (p, &(_, e)) in st.positions.iter_mut().zip(&moves) {
            p.x = e;
        }
        let still = vec![Vec4::ZERO; 3];
        let mut uf = UnionFind::default();
        let found = islands(&st, (&start, &still), 0.01, &[], 0.05, &mut uf);
        let sets: Vec<Vec<u32>> = found.iter().map(|i| i.0.clone()).collect();
        assert_eq!(sets, vec![vec![0, 1], vec![2]]);
        // A contact pair joins bodies however far apart.
        let pair = ContactPair { vertices: [0, 2, 2, 2], ..Default::default() };
        let found = islands(&st, (&start, &still), 0.01, &[pair], 0.05, &mut uf);
        assert_eq!(found.len(), 1);
        // Body 2 heading for body 1 at 450 m/s joins it although its step ended far away.
        let heading = [Vec4::ZERO, Vec4::ZERO, Vec4::new(-450.0, 0.0, 0.0, 0.0)];
        let found = islands(&st, (&start, &heading), 0.01, &[], 0.05, &mut uf);
        let sets: Vec<Vec<u32>> = found.iter().map(|i| i.0.clone()).collect();
        assert_eq!(sets, vec![vec![0, 1, 2]]);
    }
}
