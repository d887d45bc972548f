//! Blocks of elements whose particles change from step to step (contacts), kept
//! outside the sparse pattern.
//!
//! A contact between a vertex and a triangle, or two edges, couples its four
//! stencil particles through one 3×3 block M scaled by the stencil weights:
//! its part of the system matrix is (w wᵀ) ⊗ M, block (a, b) = w_a w_b M. Written
//! into the block pattern, every new pair of touching elements would widen it
//! (a rebuild of the matrix, and a second assembly) — every step of a folding
//! cloth. So the diagonal blocks w_a² M go into the matrix (always in its pattern,
//! and where the preconditioner sees them), and the rest is applied here without a
//! matrix: (C p)_a = w_a M (Σ_b w_b p_b) − w_a² M p_a, O(stencils) per product.
//! For the block-SSOR preconditioner the off-diagonal blocks are also sorted into
//! rows once per step ([`Stencils::index`]), so that its sweeps take them beside the
//! matrix's own rows and it sees the contacts' coupling.
//! The sum A + C is the system matrix; it stays symmetric when every M is.

use glam::{DMat3, DVec3};

use crate::model::Vec3s;

/// Off-pattern parts of stencil blocks: see the module docs.
#[derive(Clone, Debug, Default)]
pub struct Stencils {
    /// Particles of each stencil (unused slots carry weight 0).
    pub particles: Vec<[u32; 4]>,
    /// Weights of each stencil's particles.
    pub weights: Vec<[f64; 4]>,
    /// Each stencil's block M.
    pub blocks: Vec<DMat3>,
    /// The off-diagonal blocks by row ([`Stencils::index`]): row i's are
    /// `entries[row_ptr[i]..row_ptr[i + 1]]`, (column, block), those left of the
    /// diagonal up to `row_mid[i]` and those right of it from there.
    row_ptr: Vec<u32>,
    row_mid: Vec<u32>,
    entries: Vec<(u32, DMat3)>,
    /// Scratch of [`Stencils::index`].
    cursor: Vec<u32>,
    /// Stencils covered by the index.
    indexed: usize,
}

impl Stencils {
    /// Removes every stencil (keeping the storage).
    pub fn clear(&mut self) {
        self.particles.clear();
        self.weights.clear();
        self.blocks.clear();
        self.entries.clear();
        self.row_ptr.clear();
        self.row_mid.clear();
        self.indexed = 0;
    }

    /// Sorts the off-diagonal blocks w_a w_b M (a ≠ b) into rows of an n-row
    /// matrix, so that the preconditioner's sweeps can take them with the matrix's
    /// own rows (a counting pass; the storage is kept from step to step). Within a
    /// row the blocks left of the diagonal come first and those right of it after,
    /// each part in stencil order: the forward sweep reads only the first part and
    /// the backward sweep only the second.
    pub fn index(&mut self, n: usize) {
        let pairs = |p: &[u32; 4], w: &[f64; 4]| {
            let (p, w) = (*p, *w);
            (0..4)
                .flat_map(move |a| (0..4).map(move |b| (a, b)))
                .filter(move |&(a, b)| a != b && w[a] * w[b] != 0.0 && p[a] != p[b])
        };
        self.row_ptr.clear();
        self.row_ptr.resize(n + 1, 0);
        self.row_mid.clear();
        self.row_mid.resize(n, 0);
        for (p, w) in self.particles.iter().zip(&self.weights) {
            for (a, b) in pairs(p, w) {
                self.row_ptr[p[a] as usize + 1] += 1;
                if p[b] < p[a] {
                    self.row_mid[p[a] as usize] += 1;
                }
            }
        }
        for i in 0..n {
            self.row_ptr[i + 1] += self.row_ptr[i];
            self.row_mid[i] += self.row_ptr[i];
        }
        self.entries.clear();
        self.entries.resize(self.row_ptr[n] as usize, (0, DMat3::ZERO));
        // Fill each row's two parts from their starts with moving cursors.
        self.cursor.clear();
        self.cursor.extend_from_slice(&self.row_ptr[..n]);
        self.cursor.extend_from_slice(&self.row_mid);
        for ((p, w), m) in self.particles.iter().zip(&self.weights).zip(&self.blocks) {
            for (a, b) in pairs(p, w) {
                let row = p[a] as usize;
                let c = if p[b] < p[a] { row } else { n + row };
                self.entries[self.cursor[c] as usize] = (p[b], *m * (w[a] * w[b]));
                self.cursor[c] += 1;
            }
        }
        self.indexed = self.blocks.len();
    }

    /// Whether [`Stencils::index`] covers every stencil for an n-row matrix.
    #[must_use]
    pub fn is_indexed(&self, n: usize) -> bool {
        self.indexed == self.blocks.len() && (self.blocks.is_empty() || self.row_ptr.len() == n + 1)
    }

    /// Off-diagonal blocks of row i left of the diagonal (column < i): (column,
    /// block), in stencil order.
    #[inline]
    #[must_use]
    pub fn lower(&self, i: usize) -> &[(u32, DMat3)] {
        if self.row_ptr.len() <= i + 1 {
            return &[];
        }
        &self.entries[self.row_ptr[i] as usize..self.row_mid[i] as usize]
    }

    /// Off-diagonal blocks of row i right of the diagonal (column > i): (column,
    /// block), in stencil order.
    #[inline]
    #[must_use]
    pub fn upper(&self, i: usize) -> &[(u32, DMat3)] {
        if self.row_ptr.len() <= i + 1 {
            return &[];
        }
        &self.entries[self.row_mid[i] as usize..self.row_ptr[i + 1] as usize]
    }

    /// Number of stencils.
    #[must_use]
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// True when there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Adds a stencil: particles `p`, weights `w`, block `m`.
    pub fn push(&mut self, p: [u32; 4], w: [f64; 4], m: DMat3) {
        self.particles.push(p);
        self.weights.push(w);
        self.blocks.push(m);
    }

    /// out += C x, the off-diagonal parts of every stencil (see the module docs).
    /// Stencils are taken in order, so the sums are the same for any thread count.
    pub fn add_product(&self, x: &Vec3s, out: &mut Vec3s) {
        for ((p, w), m) in self.particles.iter().zip(&self.weights).zip(&self.blocks) {
            let mut u = DVec3::ZERO;
            for k in 0..4 {
                if w[k] != 0.0 {
                    u += x.get(p[k] as usize) * w[k];
                }
            }
            for k in 0..4 {
                if w[k] != 0.0 {
                    let i = p[k] as usize;
                    out.add(i, *m * ((u - x.get(i) * w[k]) * w[k]));
                }
            }
        }
    }
}
