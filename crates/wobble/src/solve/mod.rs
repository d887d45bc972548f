//! Sparse linear algebra for implicit integration: a symmetric matrix of 3×3 blocks
//! ([`BlockMatrix`]) and block-Jacobi preconditioned conjugate gradients ([`Cg`]).
//!
//! The sparsity pattern (which particle pairs couple) is built once from the blocks
//! the force terms report and reused every step; assembling only overwrites block
//! values, and the solver keeps its work vectors, so a step allocates nothing. A
//! block outside the pattern is recorded as missed ([`BlockMatrix::missed`]); the
//! caller widens the pattern ([`BlockMatrix::widen`]) and assembles again — which
//! happens only when the coupling changes (a new drag, a new contact pair).
//!
//! Pinned or otherwise constrained particles are handled by *filtering*
//! (Baraff–Witkin's S projection): their rows and columns are excluded from the
//! solve, so their unknowns stay exactly zero.
//!
//! Used by [`crate::integrate::ImplicitEuler`]; other semi-implicit schemes (the
//! elastic grids' K(r) system) can assemble a [`BlockMatrix`] through
//! [`JacobianSink`] or [`BlockMatrix::add`] and call [`Cg::solve`].

use glam::{DMat3, DVec3};

use crate::model::Vec3s;

pub mod cg;
pub mod cholesky;
mod sink;
pub mod stencil;

pub use cg::{Cg, CgError, CgReport, CgSettings, SolverKind};
pub use sink::{JacobianSink, ScalarStiffnessSink};
pub use stencil::Stencils;

/// (row, column) pairs from a flat list `[i0, j0, i1, j1, ...]` of a saved pattern
/// over `n` block rows (for [`crate::checkpoint`]).
pub(crate) fn pairs_of(flat: &[u32], n: usize) -> Result<Vec<(u32, u32)>, crate::checkpoint::RestoreError> {
    if !flat.len().is_multiple_of(2) || flat.iter().any(|&k| k as usize >= n) {
        return Err(crate::checkpoint::RestoreError::Invalid("sparse pattern"));
    }
    Ok(flat.chunks_exact(2).map(|c| (c[0], c[1])).collect())
}

/// A square matrix of 3×3 blocks in compressed sparse row form, n block rows.
/// Every diagonal block is always in the pattern.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlockMatrix {
    n: usize,
    /// Row i's blocks are `row_ptr[i]..row_ptr[i + 1]`.
    row_ptr: Vec<u32>,
    /// Column of each block, ascending within a row.
    cols: Vec<u32>,
    /// Index of the diagonal block of each row.
    diag: Vec<u32>,
    blocks: Vec<DMat3>,
    missed: Vec<(u32, u32)>,
}

impl BlockMatrix {
    /// A matrix with n block rows whose pattern holds the diagonal and every (i, j)
    /// and (j, i) of `pairs`. All blocks start at zero.
    #[must_use]
    pub fn with_pattern(n: usize, pairs: &[(u32, u32)]) -> Self {
        let mut all: Vec<(u32, u32)> = Vec::with_capacity(2 * pairs.len() + n);
        all.extend((0..n as u32).map(|i| (i, i)));
        for &(i, j) in pairs {
            all.push((i, j));
            all.push((j, i));
        }
        all.sort_unstable();
        all.dedup();
        let mut row_ptr = vec![0u32; n + 1];
        for &(i, _) in &all {
            row_ptr[i as usize + 1] += 1;
        }
        for i in 0..n {
            row_ptr[i + 1] += row_ptr[i];
        }
        let cols: Vec<u32> = all.iter().map(|&(_, j)| j).collect();
        let diag = (0..n)
            .map(|i| {
                let (s, e) = (row_ptr[i] as usize, row_ptr[i + 1] as usize);
                s as u32 + cols[s..e].binary_search(&(i as u32)).expect("diagonal is in the pattern") as u32
            })
            .collect();
        let blocks = vec![DMat3::ZERO; cols.len()];
        Self { n, row_ptr, cols, diag, blocks, missed: Vec::new() }
    }

    /// Number of block rows.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.n
    }

    /// Number of stored blocks.
    #[must_use]
    pub fn nnz_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Sets every block to zero and forgets missed blocks (the pattern stays).
    pub fn clear(&mut self) {
        use rayon::prelude::*;
        // In parallel runs: at 128² the blocks are 15 MB.
        let size = crate::par::block_len(self.n).saturating_mul(16).max(1);
        self.blocks.par_chunks_mut(size).for_each(|b| b.fill(DMat3::ZERO));
        self.missed.clear();
    }

    /// Storage index of block (i, j), if it is in the pattern.
    #[inline]
    #[must_use]
    pub fn find(&self, i: usize, j: usize) -> Option<usize> {
        if i == j {
            return Some(self.diag[i] as usize);
        }
        let (s, e) = (self.row_ptr[i] as usize, self.row_ptr[i + 1] as usize);
        self.cols[s..e].binary_search(&(j as u32)).ok().map(|k| s + k)
    }

    /// Adds `block` to (i, j); a block outside the pattern is recorded in
    /// [`BlockMatrix::missed`] and otherwise ignored.
    #[inline]
    pub fn add(&mut self, i: usize, j: usize, block: DMat3) {
        match self.find(i, j) {
            Some(k) => self.blocks[k] += block,
            None => self.missed.push((i as u32, j as u32)),
        }
    }

    /// The blocks split by runs of `size` block rows, in row order: each run's rows,
    /// the storage index of its first block and its blocks (for parallel writers that
    /// own rows).
    pub fn row_runs_mut(&mut self, size: usize) -> Vec<(std::ops::Range<usize>, usize, &mut [DMat3])> {
        let size = size.max(1);
        let mut runs = Vec::with_capacity(self.n.div_ceil(size));
        let mut rest: &mut [DMat3] = &mut self.blocks;
        let mut first = 0;
        for r0 in (0..self.n).step_by(size) {
            let r1 = (r0 + size).min(self.n);
            let end = self.row_ptr[r1] as usize;
            let (mine, tail) = std::mem::take(&mut rest).split_at_mut(end - first);
            runs.push((r0..r1, first, mine));
            rest = tail;
            first = end;
        }
        runs
    }

    /// Adds `block` at storage index `k` (from [`BlockMatrix::find`]).
    #[inline]
    pub fn add_at(&mut self, k: usize, block: DMat3) {
        self.blocks[k] += block;
    }

    /// Block (i, j) (zero outside the pattern).
    #[must_use]
    pub fn block(&self, i: usize, j: usize) -> DMat3 {
        self.find(i, j).map_or(DMat3::ZERO, |k| self.blocks[k])
    }

    /// The diagonal block of row i.
    #[inline]
    #[must_use]
    pub fn diagonal(&self, i: usize) -> DMat3 {
        self.blocks[self.diag[i] as usize]
    }

    /// Blocks added outside the pattern since the last [`BlockMatrix::clear`].
    #[must_use]
    pub fn missed(&self) -> &[(u32, u32)] {
        &self.missed
    }

    /// Every (row, column) of the pattern, row by row, columns ascending.
    #[must_use]
    pub fn pattern(&self) -> Vec<(u32, u32)> {
        let mut pairs = Vec::with_capacity(self.cols.len());
        for i in 0..self.n {
            for k in self.row_ptr[i] as usize..self.row_ptr[i + 1] as usize {
                pairs.push((i as u32, self.cols[k]));
            }
        }
        pairs
    }

    /// Rebuilds the pattern to include the missed blocks (values are cleared).
    pub fn widen(&mut self) {
        let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(self.cols.len() + self.missed.len());
        for i in 0..self.n {
            for k in self.row_ptr[i] as usize..self.row_ptr[i + 1] as usize {
                pairs.push((i as u32, self.cols[k]));
            }
        }
        pairs.extend_from_slice(&self.missed);
        *self = BlockMatrix::with_pattern(self.n, &pairs);
    }

    /// Adds `scale · m_i · I` to every diagonal block (`mass` per block row): the
    /// mass matrix of M − h ∂f/∂v − h² ∂f/∂x.
    pub fn add_scaled_mass(&mut self, scale: f64, mass: &[f64]) {
        for (i, &m) in mass.iter().enumerate().take(self.n) {
            self.blocks[self.diag[i] as usize] += DMat3::from_diagonal(DVec3::splat(scale * m));
        }
    }

    /// `self += scale · other` for a matrix with the same pattern.
    ///
    /// # Panics
    /// When the patterns differ.
    pub fn add_scaled(&mut self, scale: f64, other: &BlockMatrix) {
        assert!(self.row_ptr == other.row_ptr && self.cols == other.cols, "add_scaled needs equal patterns");
        for (a, b) in self.blocks.iter_mut().zip(&other.blocks) {
            *a += *b * scale;
        }
    }

    /// Copies `other`'s pattern (not its values, which become zero) if it differs.
    pub fn match_pattern(&mut self, other: &BlockMatrix) {
        if self.row_ptr != other.row_ptr || self.cols != other.cols {
            self.n = other.n;
            self.row_ptr.clone_from(&other.row_ptr);
            self.cols.clone_from(&other.cols);
            self.diag.clone_from(&other.diag);
            self.blocks = vec![DMat3::ZERO; other.blocks.len()];
        }
        self.clear();
    }

    /// y = A x (rows in parallel runs; each row's sum in column order, so the
    /// result does not depend on the thread count).
    pub fn mul(&self, x: &Vec3s, y: &mut Vec3s) {
        use rayon::prelude::*;
        crate::par::par_rows(y, crate::par::block_len(self.n)).for_each(|mut y| {
            for i in y.range() {
                let mut acc = DVec3::ZERO;
                for k in self.row_ptr[i] as usize..self.row_ptr[i + 1] as usize {
                    acc += self.blocks[k] * x.get(self.cols[k] as usize);
                }
                y.set(i, acc);
            }
        });
    }

    /// Largest |A_ij − A_jiᵀ| entry over all blocks, for symmetry checks.
    #[must_use]
    pub fn asymmetry(&self) -> f64 {
        let mut worst: f64 = 0.0;
        for i in 0..self.n {
            for k in self.row_ptr[i] as usize..self.row_ptr[i + 1] as usize {
                let j = self.cols[k] as usize;
                let d = self.blocks[k] - self.block(j, i).transpose();
                worst = worst.max(d.to_cols_array().iter().fold(0.0f64, |m, v| m.max(v.abs())));
            }
        }
        worst
    }
}

/// Collects the pairs a force term's Jacobian couples, to build a pattern.
#[derive(Debug, Default)]
pub struct PatternSink {
    /// (i, j) pairs seen, in order, with repeats.
    pub pairs: Vec<(u32, u32)>,
}

impl JacobianSink for PatternSink {
    fn add_dfdx(&mut self, i: usize, j: usize, _block: DMat3) {
        if i != j {
            self.pairs.push((i as u32, j as u32));
        }
    }
    fn add_dfdv(&mut self, i: usize, j: usize, _block: DMat3) {
        if i != j {
            self.pairs.push((i as u32, j as u32));
        }
    }
    /// Stencils stay outside the pattern (their diagonal blocks are always in it).
    fn add_stencil(&mut self, _p: [u32; 4], _w: [f64; 4], _dfdx: DMat3, _dfdv: DMat3) {}
}

/// ∂f/∂x and ∂f/∂v as two block matrices with one pattern: a [`JacobianSink`].
#[derive(Clone, Debug, Default)]
pub struct Jacobian {
    /// ∂f/∂x, N/m.
    pub dfdx: BlockMatrix,
    /// ∂f/∂v, N s/m.
    pub dfdv: BlockMatrix,
    /// Ask the force terms for a definite approximation ([`JacobianSink::definite`]).
    pub definite: bool,
}

impl Jacobian {
    /// Both matrices with the pattern of `pairs` over n particles.
    #[must_use]
    pub fn with_pattern(n: usize, pairs: &[(u32, u32)]) -> Self {
        let dfdx = BlockMatrix::with_pattern(n, pairs);
        let dfdv = dfdx.clone();
        Self { dfdx, dfdv, definite: false }
    }

    /// Zeroes both.
    pub fn clear(&mut self) {
        self.dfdx.clear();
        self.dfdv.clear();
    }

    /// True when some block fell outside the pattern.
    #[must_use]
    pub fn missed(&self) -> bool {
        !self.dfdx.missed().is_empty() || !self.dfdv.missed().is_empty()
    }

    /// Widens both patterns to hold every missed block (values cleared).
    pub fn widen(&mut self) {
        let extra: Vec<(u32, u32)> = self.dfdx.missed().iter().chain(self.dfdv.missed()).copied().collect();
        self.dfdx.missed = extra;
        self.dfdx.widen();
        self.dfdv = self.dfdx.clone();
    }
}

impl JacobianSink for Jacobian {
    #[inline]
    fn add_dfdx(&mut self, i: usize, j: usize, block: DMat3) {
        self.dfdx.add(i, j, block);
    }
    #[inline]
    fn add_dfdv(&mut self, i: usize, j: usize, block: DMat3) {
        self.dfdv.add(i, j, block);
    }
    fn definite(&self) -> bool {
        self.definite
    }
}
