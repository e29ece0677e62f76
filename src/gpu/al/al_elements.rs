//! Host side of `shaders/al/al_elements.wgsl`: the element gradients and PSD-projected Hessians of
//! the augmented-Lagrangian step's potential (the GPU twin of `solver::al::problem`'s
//! `gradient_hessian`), one record per element for `al_pcg` to gather.

use crate::gpu::GpuContext;
use crate::gpu::kernel::{Bound, ComputeKernel};
use crate::gpu::pack::RecordLayout;
use bytemuck::{Pod, Zeroable};

/// WGSL source.
pub const SHADER: &str = crate::gpu::kernel::compose!("al/al_elements", "step", "elements", "mat3", "psd");

/// Words of a tet's or a hinge's record: 4 vertices, a 12-gradient, a 12×12 Hessian.
pub const TET_RECORD: u32 = 4 + 12 + 144;
/// Words of a triangle's record: 4 vertex words, a 9-gradient, a 9×9 Hessian.
pub const TRIANGLE_RECORD: u32 = 4 + 9 + 81;

/// Where each element kind's records start in the `element` buffer (in u32 words): tets first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AlElementLayout {
    /// Counts of tets, triangles and hinges.
    pub counts: [u32; 3],
    /// First word of the triangles' records.
    pub tris: u32,
    /// First word of the hinges' records.
    pub hinges: u32,
    /// Words in all.
    pub words: u32,
}

impl AlElementLayout {
    /// The layout for `tets`, `tris` and `hinges` elements.
    pub fn new(tets: usize, tris: usize, hinges: usize) -> Self {
        let counts = [tets, tris, hinges].map(|n| n as u32);
        let tris = counts[0] * TET_RECORD;
        let hinges = tris + counts[1] * TRIANGLE_RECORD;
        Self { counts, tris, hinges, words: hinges + counts[2] * TET_RECORD }
    }
}

/// The shader's `Params` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct Params {
    kind: u32,
    count: u32,
    base: u32,
    tris: u32,
    hinges: u32,
    _pad: [u32; 3],
}

/// What the kernel reads and writes.
pub struct AlElementsBuffers<'a> {
    /// The targets `x̂` (vec4).
    pub positions: &'a wgpu::Buffer,
    /// The state's tets.
    pub tets: &'a wgpu::Buffer,
    /// The packed records (materials, bodies, triangles, hinges).
    pub records: &'a wgpu::Buffer,
    /// The element records (u32, [`AlElementLayout::words`]), written.
    pub element: &'a wgpu::Buffer,
}

/// The compiled kernel.
pub struct AlElements {
    kernel: ComputeKernel,
}

impl AlElements {
    /// Compiles the shader for `ctx`'s device.
    pub fn new(ctx: &GpuContext) -> Self {
        Self { kernel: ComputeKernel::new(ctx, "al_elements", SHADER) }
    }

    /// One dispatch per element kind (tets, triangles, hinges), `None` for a kind absent.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        layout: &AlElementLayout,
        records: &RecordLayout,
        b: &AlElementsBuffers<'_>,
    ) -> [Option<Bound>; 3] {
        let bases = [0, layout.tris, layout.hinges];
        std::array::from_fn(|kind| {
            (layout.counts[kind] > 0).then(|| {
                let params = Params {
                    kind: kind as u32,
                    count: layout.counts[kind],
                    base: bases[kind],
                    tris: records.tris,
                    hinges: records.hinges,
                    _pad: [0; 3],
                };
                let buffers = [b.positions, b.tets, b.records, b.element];
                self.kernel.bind_pod(ctx, &params, &buffers, layout.counts[kind])
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use glam::{DMat3, DVec3};

    use super::*;
    use crate::gpu::al::fixture::{Device, fixture};
    use crate::gpu::buffers::read_blocking;
    use crate::gpu::kernel::record_pass;
    use crate::gpu::test_support;
    use crate::solver::al::problem::{hinge_terms, projected_dense, tet_terms, triangle_terms};

    /// Every element's record against the CPU's terms (`solver::al::problem`), in f64:
    /// vertices, gradient, and the PSD Hessian (stable neo-Hookean's projected in `F` by its
    /// analytic eigensystem on both; the others PSD by construction, passed through the CPU's
    /// Jacobi projection to check it), within f32 rounding of the element's largest entry. The
    /// stable neo-Hookean tets are indefinite before projection in the fixture's deformation,
    /// so the projection is what is compared.
    #[test]
    fn records_match_the_cpu_element_terms() {
        let Some(ctx) = test_support::context() else { return };
        let f = fixture();
        let st = f.world.state();
        let r = Device::new(&ctx, &f, &f.solve(), &[], 0.0, 0.0);
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        record_pass(&mut encoder, "al_elements", &r.fill.iter().flatten().cloned().collect::<Vec<_>>());
        ctx.queue.submit([encoder.finish()]);
        let words: Vec<u32> = read_blocking(&ctx, &r.element, r.elements.words as usize).expect("records");
        let x: Vec<DVec3> = f.targets.iter().map(|p| p.truncate().as_dvec3()).collect();
        // Checks one record; returns whether the projection changed the CPU's Hessian.
        let check =
            |kind: &str, e: u32, base: u32, vertices: &[u32], g: &[DVec3], h: &dyn Fn(usize, usize) -> DMat3| {
                let k = g.len();
                let n = 3 * k;
                let at = |i: usize| f32::from_bits(words[base as usize + i]) as f64;
                for (a, &v) in vertices.iter().enumerate() {
                    assert_eq!(words[base as usize + a], v, "{kind} {e}: vertex {a}");
                }
                let g_scale = g.iter().map(|v| v.abs().max_element()).fold(1e-9, f64::max);
                for (a, ga) in g.iter().enumerate() {
                    let gpu = DVec3::new(at(4 + 3 * a), at(5 + 3 * a), at(6 + 3 * a));
                    assert!(
                        (gpu - *ga).abs().max_element() <= 1e-4 * g_scale,
                        "{kind} {e}: gradient {a}: {gpu} vs {ga}"
                    );
                }
                let mut dense = [0.0; 144];
                let mut raw = [0.0; 144];
                match k {
                    3 => projected_dense::<3>(h, &mut dense),
                    _ => projected_dense::<4>(h, &mut dense),
                }
                for a in 0..k {
                    for b in 0..k {
                        for rr in 0..3 {
                            for c in 0..3 {
                                raw[(3 * a + rr) * n + 3 * b + c] = h(a, b).col(c)[rr];
                            }
                        }
                    }
                }
                if kind == "tet" {
                    // Already projected, in F: the reference itself (the 12×12 Jacobi
                    // projection of a PSD matrix changes it by rounding only).
                    dense = raw;
                }
                let scale = dense[..n * n].iter().fold(1e-9f64, |m, v| m.max(v.abs()));
                for i in 0..n * n {
                    let (gpu, cpu) = (at(4 + n + i), dense[i]);
                    assert!(
                        (gpu - cpu).abs() <= 2e-4 * scale,
                        "{kind} {e}: Hessian entry {i}: {gpu} vs {cpu} (scale {scale})"
                    );
                }
                raw.iter().zip(&dense).any(|(a, b)| (a - b).abs() > 1e-3 * scale)
            };
        let mut tets_projected = 0;
        for e in 0..st.tets.len() as u32 {
            let (g, h) = tet_terms(st, e, &x);
            let _ = check("tet", e, e * TET_RECORD, &st.tets[e as usize].vertices, &g, &|a, b| h[a][b]);
            // Counted against the exact Hessian, before its projection.
            let t = &st.tets[e as usize];
            let m = &st.materials[t.material as usize];
            if m.model == crate::material::MODEL_STABLE_NEO_HOOKEAN {
                let xs = t.vertices.map(|i| x[i as usize]);
                let (mu, la, rest) = (m.mu as f64, m.lambda as f64, crate::solver::al::problem::tet_rest(t));
                let exact = crate::material::stable_neo_hookean::element_hessian::<f64>(&xs, &rest, mu, la);
                let big = |m: DMat3| m.to_cols_array().iter().fold(0.0f64, |a, v| a.max(v.abs()));
                let scale = h.iter().flatten().map(|b| big(*b)).fold(1e-9, f64::max);
                tets_projected +=
                    u32::from(exact.iter().flatten().zip(h.iter().flatten()).any(|(a, b)| big(*a - *b) > 1e-3 * scale));
            }
        }
        for e in 0..st.tris.len() as u32 {
            let (g, h) = triangle_terms(st, e, &x);
            let mut v = st.tris[e as usize].vertices;
            v[3] = 0;
            let _ = check("triangle", e, r.elements.tris + e * TRIANGLE_RECORD, &v, &g, &|a, b| h[a][b]);
        }
        for e in 0..st.hinges.len() as u32 {
            let (g, h) = hinge_terms(st, e, &x);
            let _ =
                check("hinge", e, r.elements.hinges + e * TET_RECORD, &st.hinges[e as usize].vertices, &g, &|a, b| {
                    h[a][b]
                });
        }
        assert!(tets_projected > 0, "no tet needed its projection");
    }
}
