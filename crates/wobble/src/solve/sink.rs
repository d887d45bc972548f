//! What force terms write their matrices into: Jacobian blocks and scalar
//! stiffness entries. The solver defines these interfaces (it knows matrices, not
//! physics); the force terms implement their side.

use glam::DMat3;

/// Receives 3×3 Jacobian blocks of the total force. Block (i, j) is ∂f_i/∂x_j
/// (N/m) or ∂f_i/∂v_j (N s/m).
pub trait JacobianSink {
    /// Adds `block` to ∂f_i/∂x_j.
    fn add_dfdx(&mut self, i: usize, j: usize, block: DMat3);
    /// Adds `block` to ∂f_i/∂v_j.
    fn add_dfdv(&mut self, i: usize, j: usize, block: DMat3);

    /// True when the sink asks for a *definite* approximation: terms whose exact
    /// ∂f/∂x can have positive eigenvalues (compressed springs, a compressed
    /// membrane) leave out those parts, so that −∂f/∂x is positive semi-definite and
    /// an implicit system matrix stays positive definite. Exact by default.
    fn definite(&self) -> bool {
        false
    }

    /// Adds the blocks of a two-particle element whose force on `a` depends on
    /// x_b − x_a and v_b − v_a only (a spring): `dfdx` and `dfdv` at (a, a) and
    /// (b, b), their negatives at (a, b) and (b, a).
    fn add_pair(&mut self, a: usize, b: usize, dfdx: DMat3, dfdv: DMat3) {
        self.add_dfdx(a, a, dfdx);
        self.add_dfdx(b, b, dfdx);
        self.add_dfdx(a, b, -dfdx);
        self.add_dfdx(b, a, -dfdx);
        self.add_dfdv(a, a, dfdv);
        self.add_dfdv(b, b, dfdv);
        self.add_dfdv(a, b, -dfdv);
        self.add_dfdv(b, a, -dfdv);
    }

    /// Adds the blocks of `count` two-particle elements as [`JacobianSink::add_pair`]
    /// would, element by element in order: element s joins the particles `ends(s)`
    /// with the blocks `blocks(s)`. A sink may call `blocks` for an element more than
    /// once, in any order and on any thread, as long as every block receives the
    /// elements' parts in element order (the system sink splits the work by rows).
    fn add_pairs(
        &mut self,
        count: usize,
        ends: &(dyn Fn(usize) -> (usize, usize) + Sync),
        blocks: &(dyn Fn(usize) -> (DMat3, DMat3) + Sync),
    ) {
        for s in 0..count {
            let (a, b) = ends(s);
            let (dfdx, dfdv) = blocks(s);
            self.add_pair(a, b, dfdx, dfdv);
        }
    }

    /// Adds the blocks of a contact-like element whose force on stencil particle a
    /// is w_a F with F depending on Σ_b w_b x_b and Σ_b w_b v_b: block (a, b) of
    /// ∂f/∂x is w_a w_b `dfdx`, of ∂f/∂v w_a w_b `dfdv` (slots of weight 0 unused).
    /// By default added block by block; the implicit system's sink keeps the
    /// off-diagonal blocks outside its pattern (see [`super::Stencils`]).
    fn add_stencil(&mut self, p: [u32; 4], w: [f64; 4], dfdx: DMat3, dfdv: DMat3) {
        for a in 0..4 {
            for b in 0..4 {
                let ww = w[a] * w[b];
                if ww != 0.0 {
                    self.add_dfdx(p[a] as usize, p[b] as usize, dfdx * ww);
                    self.add_dfdv(p[a] as usize, p[b] as usize, dfdv * ww);
                }
            }
        }
    }

    /// Whether the sink uses ∂f/∂x blocks at all. A sink that only collects the
    /// damping matrix ∂f/∂v (the grids' semi-implicit scheme) says no, and terms
    /// whose Jacobian has no ∂f/∂v part may then skip their work. Yes by default.
    fn wants_dfdx(&self) -> bool {
        true
    }
}

/// Receives the entries of a scalar stiffness matrix K for terms whose force is
/// f = −(K ⊗ I₃) x with coefficients frozen at the current state (Terzopoulos's
/// K(r), 002 eq. 14): entry (i, j) in N/m.
pub trait ScalarStiffnessSink {
    /// Adds `value` to K_ij.
    fn add(&mut self, i: usize, j: usize, value: f64);
}
