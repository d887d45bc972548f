//! Implicit (backward) Euler, linearised once per step (Baraff–Witkin; 000 §4;
//! physics notes §5):
//!
//! ```text
//! (M − h ∂f/∂v − h² ∂f/∂x) Δv = h ( f(x, v) + h ∂f/∂x v ),   v += Δv,   x += h v
//! ```
//!
//! ∂f/∂x and ∂f/∂v are assembled every step from the force terms' Jacobian blocks
//! ([`System::jacobian`]) into a [`Jacobian`] whose sparsity pattern is built on the
//! first step and reused; the system is solved by block-Jacobi preconditioned
//! conjugate gradients ([`Cg`]) to a relative tolerance. Pinned particles (and any
//! with infinite mass) are filtered out of the solve, so they keep their velocity
//! exactly. Force terms without a Jacobian enter through f only (explicitly).
//!
//! Compressed springs contribute negative transverse stiffness, so at a large step
//! the exact system matrix can be indefinite; CG detects it (pᵀAp ≤ 0). The step is
//! then solved again with the *definite* Jacobian ([`crate::force::JacobianSink::definite`]:
//! the terms of the wrong sign left out), and [`StepReport::definite_fallback`] says
//! so. The first attempt always uses the exact Jacobian, as 000 does.
//!
//! For a linear damped system the method is stable at every step, and it damps
//! high-frequency modes (numerical dissipation): first order, like the explicit
//! Eulers. Rotational state, when some particle has inertia, is advanced by
//! symplectic Euler from the torques at the start of the step (ω += h α, then q).

use std::time::Instant;

use super::{Integrator, IntegratorError, StepReport, System, rotate_symplectic};
use crate::force::Loads;
use crate::model::{State, Vec3s};
use crate::solve::{BlockMatrix, Cg, CgError, CgReport, CgSettings, Jacobian, PatternSink};

/// Implicit Euler with a conjugate-gradient solve. See the module docs.
#[derive(Debug, Default)]
pub struct ImplicitEuler {
    cg: Cg,
    loads: Loads,
    jac: Jacobian,
    a: BlockMatrix,
    rhs: Vec3s,
    kv: Vec3s,
    dv: Vec3s,
    fixed: Vec<bool>,
    patterned: bool,
}

impl ImplicitEuler {
    /// An integrator whose linear solves stop by `settings`.
    #[must_use]
    pub fn new(settings: CgSettings) -> Self {
        Self { cg: Cg::new(settings), ..Self::default() }
    }

    /// The linear-solver settings.
    #[must_use]
    pub fn settings(&self) -> CgSettings {
        self.cg.settings
    }

    /// Assembles A and b from the Jacobian (exact or `definite`) and solves for Δv
    /// (into `self.dv`), adding the time spent to `assembly` and `solving`.
    #[allow(clippy::too_many_arguments)]
    fn solve(
        &mut self,
        sys: &mut dyn System,
        state: &State,
        t: f64,
        h: f64,
        definite: bool,
        assembly: &mut std::time::Duration,
        solving: &mut std::time::Duration,
    ) -> Result<CgReport, CgError> {
        let t1 = Instant::now();
        self.jac.definite = definite;
        self.assemble(sys, state, t);
        // A = M − h ∂f/∂v − h² ∂f/∂x, on the Jacobian's pattern.
        self.a.match_pattern(&self.jac.dfdx);
        self.a.add_scaled_mass(1.0, &sys.particles().mass);
        self.a.add_scaled(-h, &self.jac.dfdv);
        self.a.add_scaled(-h * h, &self.jac.dfdx);
        // b = h (f + h ∂f/∂x v)
        self.jac.dfdx.mul(&state.v, &mut self.kv);
        for i in 0..state.len() {
            self.rhs.set(i, (self.loads.f.get(i) + self.kv.get(i) * h) * h);
        }
        let t2 = Instant::now();
        self.dv.fill(glam::DVec3::ZERO);
        let out = self.cg.solve(&self.a, &self.rhs, &mut self.dv, &self.fixed);
        *assembly += t2 - t1;
        *solving += t2.elapsed();
        out
    }

    /// Assembles ∂f/∂x and ∂f/∂v at `state`, building or widening the pattern
    /// when blocks fall outside it.
    fn assemble(&mut self, sys: &mut dyn System, state: &State, t: f64) {
        let n = state.len();
        if !self.patterned || self.jac.dfdx.rows() != n {
            let mut pattern = PatternSink::default();
            sys.jacobian(state, t, &mut pattern);
            let definite = self.jac.definite;
            self.jac = Jacobian::with_pattern(n, &pattern.pairs);
            self.jac.definite = definite;
            self.patterned = true;
        }
        self.jac.clear();
        sys.jacobian(state, t, &mut self.jac);
        if self.jac.missed() {
            self.jac.widen();
            sys.jacobian(state, t, &mut self.jac);
        }
    }
}

impl Integrator for ImplicitEuler {
    fn name(&self) -> &'static str {
        "implicit-euler"
    }

    fn save_state(&self, out: &mut crate::checkpoint::StateWriter) {
        // The pattern only grows (widened when a block falls outside it), and its
        // blocks take part in the products: a resumed run must use the same one.
        out.bool(self.patterned);
        out.usize(self.jac.dfdx.rows());
        let pattern: Vec<u32> = self.jac.dfdx.pattern().into_iter().flat_map(|(i, j)| [i, j]).collect();
        out.u32s(&pattern);
    }

    fn restore_state(
        &mut self,
        input: &mut crate::checkpoint::StateReader<'_>,
    ) -> Result<(), crate::checkpoint::RestoreError> {
        let patterned = input.bool("the implicit integrator's pattern flag")?;
        let n = input.usize("the implicit integrator's rows", u32::MAX as usize)?;
        let mut flat = Vec::new();
        input.u32s("the implicit integrator's pattern", &mut flat)?;
        let pairs = crate::solve::pairs_of(&flat, n)?;
        self.jac = Jacobian::with_pattern(n, &pairs);
        self.patterned = patterned;
        Ok(())
    }

    fn step(&mut self, sys: &mut dyn System, state: &mut State, t: f64, h: f64) -> Result<StepReport, IntegratorError> {
        let n = state.len();
        let t0 = Instant::now();
        sys.loads(state, t, &mut self.loads);
        let t1 = Instant::now();
        for v in [&mut self.rhs, &mut self.kv, &mut self.dv] {
            if v.len() != n {
                *v = Vec3s::zeros(n);
            }
        }
        let particles = sys.particles();
        self.fixed.clear();
        self.fixed.extend((0..n).map(|i| particles.pinned[i] || particles.inv_mass[i] == 0.0));
        let (mut assembly, mut solving) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
        let mut definite_fallback = false;
        let mut outcome = self.solve(sys, state, t, h, false, &mut assembly, &mut solving);
        if matches!(outcome, Err(CgError::NotPositiveDefinite { .. })) {
            // The exact Jacobian made the system indefinite (compressed stiff springs
            // at a large step): solve again with the definite approximation.
            definite_fallback = true;
            outcome = self.solve(sys, state, t, h, true, &mut assembly, &mut solving);
        }
        let solved = outcome?;

        for i in 0..n {
            let v = state.v.get(i) + self.dv.get(i);
            state.v.set(i, v);
            state.x.set(i, state.x.get(i) + v * h);
        }
        rotate_symplectic(sys, state, &mut self.loads, h);
        Ok(StepReport {
            iterations: solved.iterations,
            residual: solved.residual,
            seconds_forces: (t1 - t0).as_secs_f64(),
            seconds_jacobian: assembly.as_secs_f64(),
            seconds_solve: solving.as_secs_f64(),
            definite_fallback,
        })
    }
}
