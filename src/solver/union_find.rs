//! Union–find over body indices, for grouping bodies linked by contact (the CCD advance's
//! groups and the rigid correction's groups).
//!
//! Each set's root is its smallest index, so a single ascending pass over the indices meets
//! every root before the rest of its set.

/// Disjoint sets over `0..n`.
#[derive(Clone, Debug, Default)]
pub(crate) struct UnionFind {
    parent: Vec<u32>,
}

impl UnionFind {
    /// Makes `n` singleton sets.
    pub fn reset(&mut self, n: usize) {
        self.parent.clear();
        self.parent.extend(0..n as u32);
    }

    /// The root (smallest index) of `a`'s set, halving the path on the way.
    pub fn find(&mut self, mut a: u32) -> u32 {
        let p = &mut self.parent;
        while p[a as usize] != a {
            p[a as usize] = p[p[a as usize] as usize];
            a = p[a as usize];
        }
        a
    }

    /// Merges the sets of `a` and `b` under the smaller root.
    pub fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra.max(rb) as usize] = ra.min(rb);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_the_smallest_members() {
        let mut u = UnionFind::default();
        u.reset(6);
        u.union(4, 2);
        u.union(5, 4);
        u.union(3, 1);
        assert_eq!([0, 1, 2, 3, 4, 5].map(|i| u.find(i)), [0, 1, 2, 1, 2, 2]);
        u.union(5, 3);
        assert_eq!([1, 2, 3, 4, 5].map(|i| u.find(i)), [1; 5]);
    }
}
