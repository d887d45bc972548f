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
}

impl Stencils {
    /// Removes every stencil (keeping the storage).
    pub fn clear(&mut self) {
        self.particles.clear();
        self.weights.clear();
        self.blocks.clear();
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
