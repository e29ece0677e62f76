//! The exact sparse inverse of the global step's constant matrix (\[SILG\] §4.2–4.3;
//! `docs/algorithms.md` §3.2).
//!
//! `Ã` (one scalar row per free vertex; the system is `Ã ⊗ I₃`) is ordered by AMD and factored
//! `P Ã Pᵀ = L Lᵀ` in f64 with faer's simplicial Cholesky. Column `j` of `L⁻¹` is nonzero only
//! on the elimination-tree path from `j` to its root, so each column is one short forward
//! substitution along that path. The solve `Ã⁻¹ b = Pᵀ L⁻ᵀ (L⁻¹ (P b))` is then two sparse
//! mat-vecs, both gathering by rows (no dependency chain, no atomics): the CSR of `L⁻¹`, whose
//! column indices already name the unpermuted rows of `b`, and the CSR of `L⁻ᵀ` (the CSC of
//! `L⁻¹`), whose row `i` lands in `x[perm[i]]`. Values are kept in f32 (the apply's precision,
//! as on the GPU); each entry serves the three coordinates.

use faer::Side;
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::sparse::linalg::amd;
use faer::sparse::linalg::cholesky::simplicial;
use faer::sparse::{SparseColMat, SymbolicSparseColMat, Triplet};
use glam::Vec3A;

/// Why a system could not be factored.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum FactorError {
    /// faer could not allocate or order the matrix.
    #[error("the sparse factorisation failed: {0}")]
    Faer(String),
    /// `L⁻¹` would hold more entries than 32-bit indices address.
    #[error("the sparse inverse of {0} rows needs more than 2^32 entries")]
    TooLarge(usize),
    /// A pivot was not positive: the matrix is not positive definite.
    #[error("the system matrix is not positive definite (pivot {0})")]
    NotPositiveDefinite(usize),
}

/// One triangular factor's inverse in CSR: rows `ptr[i]..ptr[i+1]` of `col` and `val`.
#[derive(Clone, Debug, Default)]
struct Csr32 {
    ptr: Vec<u32>,
    col: Vec<u32>,
    val: Vec<f32>,
}

impl Csr32 {
    fn row(&self, i: usize) -> impl Iterator<Item = (usize, f32)> + '_ {
        let r = self.ptr[i] as usize..self.ptr[i + 1] as usize;
        self.col[r.clone()].iter().map(|&c| c as usize).zip(self.val[r].iter().copied())
    }

    /// Row `i` times the rows of `x` it names.
    #[inline]
    fn dot(&self, i: usize, x: &[Vec3A]) -> Vec3A {
        self.row(i).fold(Vec3A::ZERO, |acc, (c, v)| acc + x[c] * v)
    }
}

/// `Ã⁻¹` as two sparse factors (see the module docs).
#[derive(Clone, Debug, Default)]
pub(crate) struct SparseInverse {
    /// `perm[i]`: the unpermuted row that permuted row `i` is.
    perm: Vec<u32>,
    /// `L⁻¹`, its column indices unpermuted.
    lower: Csr32,
    /// `L⁻ᵀ`, in the permuted order.
    upper: Csr32,
}

impl SparseInverse {
    /// Factors the symmetric positive-definite `n × n` matrix given by its upper-triangle
    /// entries `(row, col, value)` with `row ≤ col` (duplicates are summed).
    pub fn build(n: usize, upper: &[(u32, u32, f64)]) -> Result<Self, FactorError> {
        let faer_error = |e: &dyn std::fmt::Debug| FactorError::Faer(format!("{e:?}"));
        let triplets: Vec<Triplet<usize, usize, f64>> =
            upper.iter().map(|&(r, c, v)| Triplet::new(r as usize, c as usize, v)).collect();
        let a = SparseColMat::<usize, f64>::try_new_from_triplets(n, n, &triplets).map_err(|e| faer_error(&e))?;
        let nnz = a.compute_nnz();

        // Fill-reducing order.
        let (mut perm, mut perm_inv) = (vec![0usize; n], vec![0usize; n]);
        let mut mem = MemBuffer::try_new(amd::order_scratch::<usize>(n, nnz)).map_err(|e| faer_error(&e))?;
        amd::order(&mut perm, &mut perm_inv, a.symbolic(), amd::Control::default(), MemStack::new(&mut mem))
            .map_err(|e| faer_error(&e))?;
        // SAFETY: `amd::order` filled both arrays as mutually inverse permutations of 0..n.
        let p = unsafe { faer::perm::PermRef::new_unchecked(&perm, &perm_inv, n) };
        let (mut val, mut col_ptr, mut row_idx) = (vec![0.0f64; nnz], vec![0usize; n + 1], vec![0usize; nnz]);
        let mut mem = MemBuffer::try_new(faer::sparse::utils::permute_self_adjoint_scratch::<usize>(n))
            .map_err(|e| faer_error(&e))?;
        faer::sparse::utils::permute_self_adjoint_to_unsorted(
            &mut val,
            &mut col_ptr,
            &mut row_idx,
            a.as_ref(),
            p,
            Side::Upper,
            Side::Upper,
            MemStack::new(&mut mem),
        );
        // SAFETY: faer wrote a valid (unsorted) CSC structure of an n × n matrix.
        let permuted = SparseColMat::<usize, f64>::new(
            unsafe { SymbolicSparseColMat::new_unchecked(n, n, col_ptr, None, row_idx) },
            val,
        );

        // Elimination tree, symbolic and numeric LLᵀ.
        let mut mem = MemBuffer::try_new(StackReq::any_of(&[
            simplicial::prefactorize_symbolic_cholesky_scratch::<usize>(n, nnz),
            simplicial::factorize_simplicial_symbolic_cholesky_scratch::<usize>(n),
            simplicial::factorize_simplicial_numeric_llt_scratch::<usize, f64>(n),
        ]))
        .map_err(|e| faer_error(&e))?;
        let stack = MemStack::new(&mut mem);
        let (mut etree, mut counts) = (vec![0isize; n], vec![0usize; n]);
        simplicial::prefactorize_symbolic_cholesky(&mut etree, &mut counts, permuted.symbolic(), stack);
        // SAFETY: `etree` was filled by `prefactorize_symbolic_cholesky` on this matrix.
        let tree = unsafe { simplicial::EliminationTreeRef::from_inner(&etree) };
        let symbolic = simplicial::factorize_simplicial_symbolic_cholesky(permuted.symbolic(), tree, &counts, stack)
            .map_err(|e| faer_error(&e))?;
        let mut l = vec![0.0f64; symbolic.len_val()];
        simplicial::factorize_simplicial_numeric_llt::<usize, f64>(
            &mut l,
            permuted.as_ref(),
            LltRegularization::default(),
            &symbolic,
            stack,
        )
        .map_err(|e| match e {
            faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index } => {
                FactorError::NotPositiveDefinite(perm[index.min(n - 1)])
            }
        })?;
        let (lp, li) = (symbolic.col_ptr(), symbolic.row_idx());

        // Columns of L⁻¹ along the elimination-tree paths (L's rows below the diagonal of column
        // k are ancestors of k, so the substitution never leaves the path).
        let mut y = vec![0.0f64; n];
        let mut path = Vec::new();
        let (mut cols_ptr, mut cols_row, mut cols_val) = (vec![0u32], Vec::new(), Vec::new());
        for j in 0..n {
            path.clear();
            let mut k = j as isize;
            while k >= 0 {
                path.push(k as usize);
                k = etree[k as usize];
            }
            y[j] = 1.0;
            for &k in &path {
                let range = lp[k]..lp[k + 1];
                // The diagonal leads each sorted column.
                debug_assert_eq!(li[range.start], k);
                let yk = y[k] / l[range.start];
                y[k] = yk;
                for q in range.start + 1..range.end {
                    y[li[q]] -= l[q] * yk;
                }
            }
            if cols_row.len() + path.len() > u32::MAX as usize {
                return Err(FactorError::TooLarge(n));
            }
            for &k in &path {
                cols_row.push(k as u32);
                cols_val.push(y[k] as f32);
                y[k] = 0.0;
            }
            cols_ptr.push(cols_row.len() as u32);
        }
        // CSR of L⁻ᵀ is the CSC of L⁻¹ just built; its transpose is the CSR of L⁻¹, with the
        // input's permutation folded into the column indices.
        let upper_inv = Csr32 { ptr: cols_ptr, col: cols_row, val: cols_val };
        let mut counts = vec![0u32; n + 1];
        for &r in &upper_inv.col {
            counts[r as usize + 1] += 1;
        }
        for i in 0..n {
            counts[i + 1] += counts[i];
        }
        let mut next = counts.clone();
        let total = upper_inv.col.len();
        let (mut col, mut val) = (vec![0u32; total], vec![0.0f32; total]);
        for j in 0..n {
            for (r, v) in upper_inv.row(j) {
                let at = next[r] as usize;
                col[at] = perm[j] as u32;
                val[at] = v;
                next[r] += 1;
            }
        }
        let lower = Csr32 { ptr: counts, col, val };
        Ok(Self { perm: perm.iter().map(|&p| p as u32).collect(), lower, upper: upper_inv })
    }

    /// Rows of the system.
    pub fn len(&self) -> usize {
        self.perm.len()
    }

    /// Stored entries of both factors.
    #[cfg(test)]
    pub fn entries(&self) -> usize {
        self.lower.val.len() + self.upper.val.len()
    }

    /// Bytes the two factors and the permutation hold.
    pub fn bytes(&self) -> usize {
        let csr = |m: &Csr32| 4 * (m.ptr.len() + m.col.len() + m.val.len());
        csr(&self.lower) + csr(&self.upper) + 4 * self.perm.len()
    }

    /// Rows `range` of `z = L⁻¹ P b` (the first mat-vec).
    #[inline]
    pub fn lower_row(&self, i: usize, b: &[Vec3A]) -> Vec3A {
        self.lower.dot(i, b)
    }

    /// Row `i` of `L⁻ᵀ z` and the unpermuted row of `x` it is (the second mat-vec).
    #[inline]
    pub fn upper_row(&self, i: usize, z: &[Vec3A]) -> (usize, Vec3A) {
        (self.perm[i] as usize, self.upper.dot(i, z))
    }

    /// The rows of thread `t` of `threads` in the first (`first == true`) or second mat-vec,
    /// split so each thread gathers about as many entries.
    pub fn rows_of(&self, first: bool, threads: usize, t: usize) -> std::ops::Range<usize> {
        let ptr = if first { &self.lower.ptr } else { &self.upper.ptr };
        let total = *ptr.last().unwrap_or(&0) as u64;
        let at = |k: usize| {
            let goal = (total * k as u64 / threads.max(1) as u64) as u32;
            ptr.partition_point(|&p| p < goal).min(self.len())
        };
        at(t)..if t + 1 >= threads { self.len() } else { at(t + 1) }
    }

    /// `x = Ã⁻¹ b` on the calling thread; `z` is scratch of the same length.
    #[cfg(test)]
    pub fn solve(&self, b: &[Vec3A], z: &mut [Vec3A], x: &mut [Vec3A]) {
        for (i, zi) in z.iter_mut().enumerate() {
            *zi = self.lower_row(i, b);
        }
        for i in 0..self.len() {
            let (r, v) = self.upper_row(i, z);
            x[r] = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::cholesky_solve;
    use crate::test_rng::Rng;

    /// A random sparse SPD matrix: a grid Laplacian with random positive weights plus a
    /// diagonal, as the global step's matrix is (upper triangle, and dense row-major).
    fn grid_matrix(side: usize, rng: &mut Rng) -> (usize, Vec<(u32, u32, f64)>, Vec<f64>) {
        let n = side * side * side;
        let id = |x: usize, y: usize, z: usize| x + side * (y + side * z);
        let (mut upper, mut dense) = (Vec::new(), vec![0.0; n * n]);
        let mut add = |i: usize, j: usize, v: f64, upper: &mut Vec<(u32, u32, f64)>| {
            upper.push((i.min(j) as u32, i.max(j) as u32, v));
            dense[i * n + j] += v;
            if i != j {
                dense[j * n + i] += v;
            }
        };
        for z in 0..side {
            for y in 0..side {
                for x in 0..side {
                    let i = id(x, y, z);
                    add(i, i, 0.5 + rng.uniform(), &mut upper);
                    for (dx, dy, dz) in [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0), (0, 1, 1)] {
                        let (a, b, c) = (x + dx, y + dy, z + dz);
                        if a < side && b < side && c < side {
                            let w = 1.0 + 10.0 * rng.uniform();
                            let j = id(a, b, c);
                            add(i, i, w, &mut upper);
                            add(j, j, w, &mut upper);
                            add(i, j, -w, &mut upper);
                        }
                    }
                }
            }
        }
        (n, upper, dense)
    }

    #[test]
    fn the_sparse_inverse_solves_like_a_direct_solve() {
        let mut rng = Rng(17);
        let (n, upper, dense) = grid_matrix(6, &mut rng);
        let inv = SparseInverse::build(n, &upper).unwrap();
        assert!(inv.entries() < n * n, "L⁻¹ is sparse: {} entries for n = {n}", inv.entries());
        for _ in 0..3 {
            let b: Vec<Vec3A> = (0..n).map(|_| rng.vec().as_vec3().into()).collect();
            let (mut z, mut x) = (vec![Vec3A::ZERO; n], vec![Vec3A::ZERO; n]);
            inv.solve(&b, &mut z, &mut x);
            for c in 0..3 {
                let mut a = dense.clone();
                let mut want: Vec<f64> = b.iter().map(|v| v[c] as f64).collect();
                assert!(cholesky_solve(&mut a, &mut want, n));
                let err = x.iter().zip(&want).map(|(g, w)| (g[c] as f64 - w).powi(2)).sum::<f64>().sqrt();
                let norm = want.iter().map(|w| w * w).sum::<f64>().sqrt();
                assert!(err <= 1e-5 * norm, "coordinate {c}: ‖x − x*‖ = {err:e}, ‖x*‖ = {norm:e}");
            }
        }
    }

    #[test]
    fn thread_rows_cover_every_row_once() {
        let mut rng = Rng(3);
        let (n, upper, _) = grid_matrix(4, &mut rng);
        let inv = SparseInverse::build(n, &upper).unwrap();
        for first in [true, false] {
            for threads in 1..5 {
                let ranges: Vec<_> = (0..threads).map(|t| inv.rows_of(first, threads, t)).collect();
                assert_eq!(ranges[0].start, 0);
                assert_eq!(ranges[threads - 1].end, n);
                assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
            }
        }
    }

    #[test]
    fn an_indefinite_matrix_is_an_error() {
        let upper = [(0, 0, 1.0), (0, 1, 2.0), (1, 1, 1.0)];
        assert!(matches!(SparseInverse::build(2, &upper), Err(FactorError::NotPositiveDefinite(_))));
    }
}
