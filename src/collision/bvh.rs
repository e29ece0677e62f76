//! A bounding-volume hierarchy over axis-aligned boxes: the broadphase of body–body and self
//! contact, of the CCD advance and of the intersection check.
//!
//! Built top-down by median splits along the widest axis of the box centres (O(n log n), no
//! surface-area heuristic: contact queries are local and a balanced tree keeps every query at
//! O(log n)), refit bottom-up when only positions changed. Nodes are stored so that children
//! always come after their parent, which makes the refit a single reverse pass.

use glam::Vec3A;

/// An axis-aligned box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Lower corner \[m\].
    pub min: Vec3A,
    /// Upper corner \[m\].
    pub max: Vec3A,
}

impl Default for Aabb {
    /// The empty box.
    fn default() -> Self {
        Self::EMPTY
    }
}

impl Aabb {
    /// The empty box (growing it by a point gives that point).
    pub const EMPTY: Self = Self { min: Vec3A::splat(f32::INFINITY), max: Vec3A::splat(f32::NEG_INFINITY) };

    /// This box grown to contain `p`.
    #[inline(always)]
    pub fn grow(self, p: Vec3A) -> Self {
        Self { min: self.min.min(p), max: self.max.max(p) }
    }

    /// The smallest box containing both.
    #[inline(always)]
    pub fn union(self, o: Self) -> Self {
        Self { min: self.min.min(o.min), max: self.max.max(o.max) }
    }

    /// This box grown by `r` on every side.
    #[inline(always)]
    pub fn inflate(self, r: f32) -> Self {
        Self { min: self.min - Vec3A::splat(r), max: self.max + Vec3A::splat(r) }
    }

    /// Whether the closed boxes share a point.
    #[inline(always)]
    pub fn overlaps(&self, o: &Self) -> bool {
        self.min.cmple(o.max).all() && o.min.cmple(self.max).all()
    }

    /// Centre.
    #[inline(always)]
    pub fn center(&self) -> Vec3A {
        (self.min + self.max) * 0.5
    }
}

/// Items per leaf at most.
const LEAF_SIZE: usize = 4;

#[derive(Clone, Copy, Debug)]
struct Node {
    aabb: Aabb,
    /// Leaf: first entry in `Bvh::items`; inner node: index of the left child (the right one
    /// follows it).
    first: u32,
    /// Items in a leaf; 0 for an inner node.
    count: u32,
}

/// A bounding-volume hierarchy over item boxes.
#[derive(Clone, Debug, Default)]
pub struct Bvh {
    nodes: Vec<Node>,
    items: Vec<u32>,
    /// Build work list, kept to avoid an allocation per build.
    stack: Vec<usize>,
}

impl Bvh {
    /// Builds the tree over `boxes` (item `i` has box `boxes[i]`), reusing this tree's memory.
    pub fn build(&mut self, boxes: &[Aabb]) {
        self.nodes.clear();
        self.items.clear();
        self.items.extend(0..boxes.len() as u32);
        if boxes.is_empty() {
            return;
        }
        self.nodes.push(Node { aabb: Aabb::EMPTY, first: 0, count: boxes.len() as u32 });
        self.stack.clear();
        self.stack.push(0);
        while let Some(node) = self.stack.pop() {
            let Node { first, count, .. } = self.nodes[node];
            let range = first as usize..(first + count) as usize;
            let items = &mut self.items[range.clone()];
            let (aabb, centers) = items.iter().fold((Aabb::EMPTY, Aabb::EMPTY), |(b, c), &i| {
                let bi = boxes[i as usize];
                (b.union(bi), c.grow(bi.center()))
            });
            self.nodes[node].aabb = aabb;
            if items.len() <= LEAF_SIZE {
                continue;
            }
            let extent = centers.max - centers.min;
            let axis = if extent.x >= extent.y && extent.x >= extent.z {
                0
            } else if extent.y >= extent.z {
                1
            } else {
                2
            };
            let mid = items.len() / 2;
            // A total order (centre, then index) keeps the tree independent of the input
            // order's ties, so a rebuild is deterministic.
            items.select_nth_unstable_by(mid, |&a, &b| {
                let (ca, cb) = (boxes[a as usize].center()[axis], boxes[b as usize].center()[axis]);
                ca.total_cmp(&cb).then(a.cmp(&b))
            });
            let left = self.nodes.len();
            self.nodes.push(Node { aabb: Aabb::EMPTY, first, count: mid as u32 });
            self.nodes.push(Node { aabb: Aabb::EMPTY, first: first + mid as u32, count: count - mid as u32 });
            self.nodes[node].first = left as u32;
            self.nodes[node].count = 0;
            self.stack.push(left + 1);
            self.stack.push(left);
        }
    }

    /// Refits every node's box to the new item `boxes` (same items as at build).
    pub fn refit(&mut self, boxes: &[Aabb]) {
        for k in (0..self.nodes.len()).rev() {
            let Node { first, count, .. } = self.nodes[k];
            self.nodes[k].aabb = if count > 0 {
                self.items[first as usize..(first + count) as usize]
                    .iter()
                    .fold(Aabb::EMPTY, |b, &i| b.union(boxes[i as usize]))
            } else {
                self.nodes[first as usize].aabb.union(self.nodes[first as usize + 1].aabb)
            };
        }
    }

    /// Whether the tree holds no items.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Calls `visit(item)` for every item whose box (as last built or refit) overlaps `query`.
    /// Items come in tree order, which depends only on the boxes.
    #[inline]
    pub fn query(&self, query: &Aabb, boxes: &[Aabb], mut visit: impl FnMut(u32)) {
        if self.nodes.is_empty() {
            return;
        }
        let mut stack = [0u32; 64];
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let node = &self.nodes[stack[top] as usize];
            if !node.aabb.overlaps(query) {
                continue;
            }
            if node.count > 0 {
                for &i in &self.items[node.first as usize..(node.first + node.count) as usize] {
                    if boxes[i as usize].overlaps(query) {
                        visit(i);
                    }
                }
            } else {
                // Median splits give depth ≤ log2(n / LEAF_SIZE) + 1, far below 64 for any
                // mesh that fits in memory.
                stack[top] = node.first;
                stack[top + 1] = node.first + 1;
                top += 2;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_boxes(n: usize, seed: u64) -> Vec<Aabb> {
        let mut rng = crate::test_rng::Rng(seed);
        let mut next = move || rng.uniform_f32();
        (0..n)
            .map(|_| {
                let c = Vec3A::new(next(), next(), next()) * 10.0;
                let h = Vec3A::new(next(), next(), next()) * 0.3;
                Aabb { min: c - h, max: c + h }
            })
            .collect()
    }

    fn brute(boxes: &[Aabb], q: &Aabb) -> Vec<u32> {
        (0..boxes.len() as u32).filter(|&i| boxes[i as usize].overlaps(q)).collect()
    }

    #[test]
    fn queries_match_brute_force_after_build_and_refit() {
        let mut boxes = random_boxes(3000, 7);
        let mut bvh = Bvh::default();
        bvh.build(&boxes);
        for q in random_boxes(200, 99) {
            let mut got = Vec::new();
            bvh.query(&q, &boxes, |i| got.push(i));
            got.sort_unstable();
            assert_eq!(got, brute(&boxes, &q));
        }
        // Move every box and refit: still exact (only slower if the motion is large).
        for (k, b) in boxes.iter_mut().enumerate() {
            let d = Vec3A::new((k % 7) as f32, -((k % 5) as f32), 0.5) * 0.7;
            *b = Aabb { min: b.min + d, max: b.max + d };
        }
        bvh.refit(&boxes);
        for q in random_boxes(200, 1234) {
            let mut got = Vec::new();
            bvh.query(&q, &boxes, |i| got.push(i));
            got.sort_unstable();
            assert_eq!(got, brute(&boxes, &q));
        }
    }

    #[test]
    fn empty_and_degenerate_inputs() {
        let mut bvh = Bvh::default();
        bvh.build(&[]);
        assert!(bvh.is_empty());
        bvh.query(&Aabb::EMPTY.grow(Vec3A::ZERO), &[], |_| panic!("no items"));
        // Many identical boxes: the index tie-break keeps the split well defined.
        let boxes = vec![Aabb::EMPTY.grow(Vec3A::ONE); 100];
        bvh.build(&boxes);
        let mut n = 0;
        bvh.query(&Aabb::EMPTY.grow(Vec3A::ONE), &boxes, |_| n += 1);
        assert_eq!(n, 100);
    }
}
