//! Sparse linear algebra for the Newton solves of the augmented-Lagrangian fallback: a 3×3
//! block-sparse symmetric matrix in full storage and preconditioned conjugate gradients with a
//! block-Jacobi preconditioner (docs/algorithms.md §4.2; the multilevel preconditioner comes with the
//! affine bodies).

mod block_csr;
mod pcg;

pub(crate) use block_csr::BlockCsr;
pub(crate) use pcg::pcg;
