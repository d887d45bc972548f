//! A direct solver: the sparse Cholesky factorisation L Lᵀ of a [`BlockMatrix`]
//! (faer's simplicial or supernodal factorisation, with its approximate minimum
//! degree ordering), used by [`super::Cg`] as the preconditioner of
//! [`super::SolverKind::Cholesky`].
//!
//! The matrix is copied into compressed sparse columns of scalars (its lower
//! triangle, read from the block rows' upper triangles: the matrix is symmetric).
//! Fixed particles' rows and columns are replaced by the identity, with their
//! entries kept as explicit zeros, so the pattern — and with it the symbolic
//! factorisation (the ordering and the structure of L, computed once) — depends on
//! the block pattern alone; each solve then costs one numeric factorisation and
//! two triangular solves. Everything runs on one thread ([`faer::Par::Seq`]), so
//! results do not depend on the thread count; the buffers are kept from solve to
//! solve.
//!
//! For A alone, conjugate gradients preconditioned by its exact inverse converge
//! in one iteration; with contact stencils outside the pattern (see
//! [`super::Stencils`]) the factor is that of A with the stencils' diagonal blocks,
//! and a few iterations take the rest.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{LltError, LltRegularization};
use faer::sparse::linalg::cholesky::{SymbolicCholesky, SymmetricOrdering, factorize_symbolic_cholesky};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Conj, MatMut, Par, Side};
use glam::DVec3;

use super::BlockMatrix;
use crate::model::Vec3s;

/// Why a factorisation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactorError {
    /// A pivot was not positive: the matrix is not positive definite (on the free
    /// particles). `row` is the scalar row, in the factorisation's own order.
    NotPositiveDefinite {
        /// Scalar row of the failing pivot (permuted).
        row: usize,
    },
    /// faer could not allocate or analyse the matrix.
    Failed,
}

/// The factorisation and its buffers: see the module docs.
#[derive(Default)]
pub struct Cholesky {
    /// The block pattern the symbolic factorisation belongs to.
    block_rows: Vec<u32>,
    block_cols: Vec<u32>,
    /// The scalar lower triangle, compressed by columns.
    col_ptr: Vec<u32>,
    row_idx: Vec<u32>,
    values: Vec<f64>,
    symbolic: Option<SymbolicCholesky<u32>>,
    /// The factor's values.
    factor: Vec<f64>,
    /// Work space of the factorisation and the solves.
    work: Option<MemBuffer>,
    /// Right-hand side and solution, scalar.
    rhs: Vec<f64>,
    /// Scalar entries of the factor (after the symbolic analysis), for reports.
    pub factor_len: usize,
    /// Symbolic analyses so far (one per block pattern).
    pub analyses: u64,
}

impl Clone for Cholesky {
    /// A fresh solver: the factorisation is scratch, rebuilt at the next solve.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for Cholesky {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cholesky").field("factor_len", &self.factor_len).field("analyses", &self.analyses).finish()
    }
}

impl Cholesky {
    /// Factorises S A S + (I − S), S selecting the particles not `fixed` (an empty
    /// `fixed` means none are).
    ///
    /// # Errors
    /// [`FactorError::NotPositiveDefinite`] when a pivot is not positive.
    pub fn factorize(&mut self, a: &BlockMatrix, fixed: &[bool]) -> Result<(), FactorError> {
        if self.symbolic.is_none() || self.block_rows != a.row_ptr || self.block_cols != a.cols {
            self.analyse(a)?;
        }
        let is_fixed = |i: usize| fixed.get(i).copied().unwrap_or(false);
        // The values, in the order `analyse` laid the pattern out.
        self.values.clear();
        for j in 0..a.n {
            for c in 0..3 {
                for k in a.diag[j] as usize..a.row_ptr[j + 1] as usize {
                    let i = a.cols[k] as usize;
                    let block = a.blocks[k];
                    let first = if i == j { c } else { 0 };
                    for r in first..3 {
                        // Entry (3i + r, 3j + c) = entry (3j + c, 3i + r) of the
                        // block (j, i) (symmetry).
                        let value = if is_fixed(i) || is_fixed(j) {
                            if i == j && r == c { 1.0 } else { 0.0 }
                        } else {
                            block.col(r)[c]
                        };
                        self.values.push(value);
                    }
                }
            }
        }
        let symbolic = self.symbolic.as_ref().ok_or(FactorError::Failed)?;
        let n = 3 * a.n;
        // SAFETY: `analyse` built `col_ptr` and `row_idx` as a valid compressed
        // sparse column structure of an n × n matrix (row indices sorted and in
        // range within each column), checked by `new_checked` there.
        let structure = unsafe { SymbolicSparseColMatRef::new_unchecked(n, n, &self.col_ptr, None, &self.row_idx) };
        let matrix = SparseColMatRef::new(structure, &self.values);
        let work = self.work.as_mut().ok_or(FactorError::Failed)?;
        symbolic
            .factorize_numeric_llt::<f64>(
                &mut self.factor,
                matrix,
                Side::Lower,
                LltRegularization::default(),
                Par::Seq,
                MemStack::new(work),
                Default::default(),
            )
            .map(|_| ())
            .map_err(|LltError::NonPositivePivot { index }| FactorError::NotPositiveDefinite { row: index })
    }

    /// The pattern's scalar lower triangle and its symbolic factorisation.
    fn analyse(&mut self, a: &BlockMatrix) -> Result<(), FactorError> {
        let n = 3 * a.n;
        self.col_ptr.clear();
        self.row_idx.clear();
        self.col_ptr.push(0);
        for j in 0..a.n {
            for c in 0..3 {
                for k in a.diag[j] as usize..a.row_ptr[j + 1] as usize {
                    let i = a.cols[k] as usize;
                    let first = if i == j { c } else { 0 };
                    self.row_idx.extend((first..3).map(|r| (3 * i + r) as u32));
                }
                self.col_ptr.push(self.row_idx.len() as u32);
            }
        }
        let structure = SymbolicSparseColMatRef::new_checked(n, n, &self.col_ptr, None, &self.row_idx);
        let symbolic = factorize_symbolic_cholesky(structure, Side::Lower, SymmetricOrdering::Amd, Default::default())
            .map_err(|_| FactorError::Failed)?;
        let scratch = symbolic
            .factorize_numeric_llt_scratch::<f64>(Par::Seq, Default::default())
            .or(symbolic.solve_in_place_scratch::<f64>(1, Par::Seq));
        self.work = Some(MemBuffer::try_new(scratch).map_err(|_| FactorError::Failed)?);
        self.factor.clear();
        self.factor.resize(symbolic.len_val(), 0.0);
        self.factor_len = symbolic.len_val();
        self.symbolic = Some(symbolic);
        self.block_rows.clone_from(&a.row_ptr);
        self.block_cols.clone_from(&a.cols);
        self.analyses += 1;
        Ok(())
    }

    /// z = M⁻¹ r with M the last factorised matrix; returns r · z. Call after a
    /// successful [`Cholesky::factorize`].
    pub fn solve(&mut self, r: &Vec3s, z: &mut Vec3s) -> f64 {
        let n = r.len();
        self.rhs.clear();
        for i in 0..n {
            let v = r.get(i);
            self.rhs.extend([v.x, v.y, v.z]);
        }
        if let (Some(symbolic), Some(work)) = (self.symbolic.as_ref(), self.work.as_mut()) {
            let rhs = MatMut::from_column_major_slice_mut(&mut self.rhs, 3 * n, 1);
            faer::sparse::linalg::cholesky::LltRef::<'_, u32, f64>::new(symbolic, &self.factor)
                .solve_in_place_with_conj(Conj::No, rhs, Par::Seq, MemStack::new(work));
        }
        let mut rz = 0.0;
        for i in 0..n {
            let zi = DVec3::new(self.rhs[3 * i], self.rhs[3 * i + 1], self.rhs[3 * i + 2]);
            z.set(i, zi);
            rz += r.get(i).dot(zi);
        }
        rz
    }
}
