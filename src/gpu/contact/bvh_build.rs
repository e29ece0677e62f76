//! Host side of `shaders/contact/bvh_build.wgsl`: a linear BVH (Karras 2012) over the collision
//! surface's triangles or edges, built on the GPU from the current positions (Morton codes, a
//! bitonic sort, one invocation per internal node). The layout of a tree in the `bvh` buffer is
//! [`TreeLayout`]; `shaders/contact/bvh_refit.wgsl` fills its boxes.

use bytemuck::{Pod, Zeroable};

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("contact/bvh_build", "bvh");

/// Where one tree lives in the `bvh` buffer (u32 word offsets), as the shaders' `Tree`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct TreeLayout {
    /// Node boxes, six words per node (complemented ordered minimum, ordered maximum).
    pub boxes: u32,
    /// Two words per node: left and right child, or a leaf's primitive and `u32::MAX`.
    pub children: u32,
    /// One word per node: its parent, `u32::MAX` for the root.
    pub parents: u32,
    /// Sort keys, two words per padded slot: Morton code, primitive.
    pub keys: u32,
    /// Six words: the bounds of the primitives' centroids.
    pub bounds: u32,
    /// Primitives (leaves).
    pub count: u32,
    /// The power of two the sort pads `count` to.
    pub padded: u32,
    /// Word offset of the primitive table in the packed `index` buffer.
    pub primitives: u32,
    /// Vertices per primitive (3 for triangles, 2 for edges).
    pub arity: u32,
    _pad: [u32; 3],
}

impl TreeLayout {
    /// A tree over `count` primitives of `arity` vertices listed at word `primitives` of the
    /// `index` buffer, stored from word `base` of the `bvh` buffer; returns it and the first
    /// word after it.
    pub fn new(base: u32, count: u32, arity: u32, primitives: u32) -> (Self, u32) {
        let nodes = Self::nodes_for(count);
        let padded = count.max(1).next_power_of_two();
        let boxes = base;
        let children = boxes + 6 * nodes;
        let parents = children + 2 * nodes;
        let keys = parents + nodes;
        let bounds = keys + 2 * padded;
        let end = bounds + 6;
        let layout = Self { boxes, children, parents, keys, bounds, count, padded, primitives, arity, _pad: [0; 3] };
        (layout, end)
    }

    /// The two trees of `st`'s collision surface packed as `index` (triangles, then edges,
    /// from word 0 of the `bvh` buffer); returns them and the buffer's length in words.
    pub fn surface(st: &crate::state::SimState, index: &crate::gpu::pack::IndexLayout) -> ([Self; 2], u32) {
        let (tris, end) = Self::new(0, st.surface_triangles.len() as u32, 3, index.surface_triangles);
        let (edges, end) = Self::new(end, st.surface_edges.len() as u32, 2, index.surface_edges);
        ([tris, edges], end)
    }

    fn nodes_for(count: u32) -> u32 {
        (2 * count).saturating_sub(1)
    }

    /// Nodes of the tree (`2 count − 1`; none when empty).
    #[cfg(test)]
    pub fn node_count(&self) -> u32 {
        Self::nodes_for(self.count)
    }
}

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    tree: TreeLayout,
    phase: u32,
    count: u32,
    k: u32,
    j: u32,
}

/// What the kernel reads and writes.
pub struct BvhBuildBuffers<'a> {
    /// Positions (vec4).
    pub positions: &'a wgpu::Buffer,
    /// [`crate::gpu::pack::pack_index`] (the primitive tables).
    pub index: &'a wgpu::Buffer,
    /// The trees' words.
    pub bvh: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct BvhBuild {
    kernel: ComputeKernel,
}

impl BvhBuild {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "bvh_build", SHADER) }
    }

    /// Every dispatch of a build of `tree`, in order (none for an empty tree): bounds, keys, the
    /// `log₂ p (log₂ p + 1) / 2` steps of the bitonic network over `p = tree.padded` keys, the
    /// hierarchy and the leaves.
    pub fn bind(&self, ctx: &GpuContext, tree: &TreeLayout, b: &BvhBuildBuffers<'_>) -> Vec<Bound> {
        if tree.count == 0 {
            return Vec::new();
        }
        let buffers = [b.positions, b.index, b.bvh];
        let dispatch = |phase: u32, count: u32, k: u32, j: u32| {
            self.kernel.bind_pod(ctx, &Params { tree: *tree, phase, count, k, j }, &buffers, count)
        };
        let mut out = vec![dispatch(0, 6, 0, 0), dispatch(1, tree.count, 0, 0), dispatch(2, tree.padded, 0, 0)];
        let mut k = 2;
        while k <= tree.padded {
            let mut j = k / 2;
            while j >= 1 {
                out.push(dispatch(3, tree.padded / 2, k, j));
                j /= 2;
            }
            k *= 2;
        }
        if tree.count > 1 {
            out.push(dispatch(4, tree.count - 1, 0, 0));
        }
        out.push(dispatch(5, tree.count, 0, 0));
        out
    }
}

/// The order-preserving u32 image of an f32 that the shaders' boxes use.
#[cfg(test)]
pub fn ordered_bits(f: f32) -> u32 {
    let b = f.to_bits();
    if b & 0x8000_0000 != 0 { !b } else { b | 0x8000_0000 }
}

/// Inverse of [`ordered_bits`].
#[cfg(test)]
pub fn from_ordered_bits(u: u32) -> f32 {
    if u & 0x8000_0000 != 0 { f32::from_bits(u & 0x7fff_ffff) } else { f32::from_bits(!u) }
}

/// A tree read back from the GPU, for tests and tools.
#[derive(Clone, Debug)]
#[cfg(test)]
pub struct TreeSnapshot {
    /// `(min, max)` per node.
    pub boxes: Vec<(glam::Vec3A, glam::Vec3A)>,
    /// Children per node (`[primitive, u32::MAX]` for a leaf).
    pub children: Vec<[u32; 2]>,
    /// Parent per node.
    pub parents: Vec<u32>,
    /// Sorted keys `(code, primitive)` of the `count` primitives.
    pub keys: Vec<(u32, u32)>,
}

#[cfg(test)]
impl TreeSnapshot {
    /// Decodes `tree` from the words of the whole `bvh` buffer.
    #[cfg(test)]
    pub fn read(tree: &TreeLayout, words: &[u32]) -> Self {
        let nodes = tree.node_count() as usize;
        let w = |at: u32, k: usize| words[at as usize + k];
        let boxes = (0..nodes)
            .map(|k| {
                let lo = glam::Vec3A::new(
                    from_ordered_bits(!w(tree.boxes, 6 * k)),
                    from_ordered_bits(!w(tree.boxes, 6 * k + 1)),
                    from_ordered_bits(!w(tree.boxes, 6 * k + 2)),
                );
                let hi = glam::Vec3A::new(
                    from_ordered_bits(w(tree.boxes, 6 * k + 3)),
                    from_ordered_bits(w(tree.boxes, 6 * k + 4)),
                    from_ordered_bits(w(tree.boxes, 6 * k + 5)),
                );
                (lo, hi)
            })
            .collect();
        Self {
            boxes,
            children: (0..nodes).map(|k| [w(tree.children, 2 * k), w(tree.children, 2 * k + 1)]).collect(),
            parents: (0..nodes).map(|k| w(tree.parents, k)).collect(),
            keys: (0..tree.count as usize).map(|k| (w(tree.keys, 2 * k), w(tree.keys, 2 * k + 1))).collect(),
        }
    }

    /// Primitives whose leaf box overlaps `[lo, hi]`, by walking the tree from the root.
    pub fn query(&self, lo: glam::Vec3A, hi: glam::Vec3A) -> Vec<u32> {
        let mut out = Vec::new();
        let mut stack = if self.boxes.is_empty() { vec![] } else { vec![0u32] };
        while let Some(k) = stack.pop() {
            let (nlo, nhi) = self.boxes[k as usize];
            if !(nlo.cmple(hi).all() && lo.cmple(nhi).all()) {
                continue;
            }
            let [a, b] = self.children[k as usize];
            if b == u32::MAX {
                out.push(a);
            } else {
                stack.extend([b, a]);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_bits_keep_the_order_of_floats() {
        let xs = [-3.0e38f32, -1.0, -1e-30, -0.0, 0.0, 1e-30, 0.5, 1.0, 7.0, 3.0e38];
        for w in xs.windows(2) {
            assert!(ordered_bits(w[0]) <= ordered_bits(w[1]), "{} {}", w[0], w[1]);
        }
        for x in xs {
            assert_eq!(from_ordered_bits(ordered_bits(x)).to_bits(), x.to_bits());
        }
        // All-zero words decode to an empty box: a NaN minimum and a NaN maximum.
        assert!(from_ordered_bits(!0).is_nan() && from_ordered_bits(0).is_nan());
    }

    #[test]
    fn layouts_do_not_overlap() {
        let (t, end) = TreeLayout::new(10, 5, 3, 100);
        assert_eq!(t.node_count(), 9);
        assert_eq!(t.padded, 8);
        assert_eq!(end, 10 + 9 * 9 + 16 + 6);
        let (e, end_e) = TreeLayout::new(end, 0, 2, 200);
        assert_eq!((e.node_count(), e.padded), (0, 1));
        assert!(end_e > end);
    }
}
