//! Terzopoulos's semi-implicit step for elastic grids (002 eqs. 16–20; physics notes
//! §7).
//!
//! The equation of motion M r'' + C r' + K(r) r = f is discretised with central
//! differences for r'' and r' and the elastic term taken at the new time with its
//! stiffness frozen at the current state:
//!
//! ```text
//! A_t = K(r_t) + M/h² + C/(2h)
//! g_t = f_t + (M/h² + C/(2h)) r_t + (M/h − C/2) v_t,     v_t = (r_t − r_{t−h})/h
//! A_t r_{t+h} = g_t
//! ```
//!
//! K comes from the force terms of that form (`ForceTerm::add_scalar_stiffness`:
//! the elastic grids), as K ⊗ I₃. C is the damping matrix −∂f/∂v of every term
//! (air drag, spring dampers). f is what remains of the total force once the
//! elastic force −K r and the linear damping −C v are taken out, so the solve is
//! written for the displacement Δr = r_{t+h} − r_t:
//!
//! ```text
//! (K + M/h² + C/(2h)) Δr = f_total + M v_t / h + C v_t / 2,     v_{t+h} = Δr / h
//! ```
//!
//! where f_total is every term's force at the current state; forces without a
//! scalar stiffness (springs, pressure, the drag spring) are thereby explicit.
//! Pinned particles are filtered out of the solve (Δr = 0). The system is solved by
//! block-Jacobi conjugate gradients ([`crate::solve::Cg`]). K is indefinite when a
//! grid is strongly compressed (α < 0); when that makes A indefinite (CG meets
//! pᵀAp ≤ 0) the step is retried as two half steps, which raise M/h² fourfold, down
//! to h/2^[`MAX_HALVINGS`]; if A is still indefinite the step stops with
//! [`IntegratorError::NotPositiveDefinite`] instead of returning garbage.
//! Rotational state, when present, is advanced by symplectic Euler.
//!
//! What the scheme does and does not buy (measured in `tests/semi_implicit.rs`):
//! K(r) is a *secant* stiffness whose coefficients α vanish at the rest shape and
//! turn negative under compression. Where a grid is stretched (α > 0) the implicit
//! part damps and lets the step exceed symplectic Euler's limit; near rest the step
//! is explicit in effect; and because 002's energy (α²) is softer in compression
//! than in tension, the secant term −h K v feeds energy in on average over an
//! oscillation about rest, at a rate proportional to h: undamped grids near rest
//! gain energy where symplectic Euler's stays bounded
//! (`wobble experiment terzopoulos-semi-implicit`). It is first order.

use std::time::Instant;

use glam::{DMat3, DVec3};

use super::{Integrator, IntegratorError, StepReport, System, rotate_symplectic};
use crate::force::{JacobianSink, Loads, ScalarStiffnessSink};
use crate::model::{State, Vec3s};
use crate::solve::{BlockMatrix, Cg, CgSettings, SolverKind};

/// Most times a step is halved when its system is indefinite (16 sub-steps).
pub const MAX_HALVINGS: u32 = 4;

/// Terzopoulos's semi-implicit scheme. See the module docs.
#[derive(Debug, Default)]
pub struct SemiImplicit {
    cg: Cg,
    loads: Loads,
    /// A = K ⊗ I₃ + M/h² + C/(2h).
    a: BlockMatrix,
    /// C = −∂f/∂v, on A's pattern.
    c: BlockMatrix,
    rhs: Vec3s,
    cv: Vec3s,
    dx: Vec3s,
    fixed: Vec<bool>,
    /// Storage index of each K entry, in the order the terms report them.
    slots: Vec<(u32, u32, u32)>,
    patterned: bool,
    /// Whether the last step found any term with a scalar stiffness.
    had_stiffness: bool,
}

/// Collects the coupled pairs of K and C.
#[derive(Default)]
struct Pairs(Vec<(u32, u32)>);

impl ScalarStiffnessSink for Pairs {
    fn add(&mut self, i: usize, j: usize, _value: f64) {
        if i != j {
            self.0.push((i as u32, j as u32));
        }
    }
}

impl JacobianSink for Pairs {
    fn add_dfdx(&mut self, _i: usize, _j: usize, _block: DMat3) {}
    fn wants_dfdx(&self) -> bool {
        false
    }
    fn add_dfdv(&mut self, i: usize, j: usize, _block: DMat3) {
        if i != j {
            self.0.push((i as u32, j as u32));
        }
    }
}

/// Adds K_ij I₃ to a block matrix. Terms report their entries in the same order
/// every step, so the storage index of each entry is remembered by position in
/// that sequence (`slots`) and the pattern is searched only where the sequence
/// changed.
struct Stiffness<'a> {
    m: &'a mut BlockMatrix,
    slots: &'a mut Vec<(u32, u32, u32)>,
    at: usize,
}

impl ScalarStiffnessSink for Stiffness<'_> {
    #[inline]
    fn add(&mut self, i: usize, j: usize, value: f64) {
        let block = DMat3::from_diagonal(DVec3::splat(value));
        let k = match self.slots.get(self.at) {
            Some(&(si, sj, k)) if si as usize == i && sj as usize == j => Some(k as usize),
            _ => {
                let k = self.m.find(i, j);
                if let Some(k) = k {
                    self.slots.truncate(self.at);
                    self.slots.push((i as u32, j as u32, k as u32));
                }
                k
            }
        };
        match k {
            Some(k) => {
                self.at += 1;
                self.m.add_at(k, block);
            }
            // Outside the pattern: recorded as missed, and the pattern is rebuilt.
            None => self.m.add(i, j, block),
        }
    }
}

/// Adds −∂f/∂v blocks (the damping matrix C) to a block matrix; ignores ∂f/∂x.
struct Damping<'a>(&'a mut BlockMatrix);

impl JacobianSink for Damping<'_> {
    fn add_dfdx(&mut self, _i: usize, _j: usize, _block: DMat3) {}
    fn wants_dfdx(&self) -> bool {
        false
    }
    #[inline]
    fn add_dfdv(&mut self, i: usize, j: usize, block: DMat3) {
        self.0.add(i, j, -block);
    }
}

impl SemiImplicit {
    /// An integrator whose linear solves stop by `settings`. The solve is always
    /// block-Jacobi CG ([`SolverKind::CgJacobi`]) whatever `settings.solver` says:
    /// started from the explicit guess it takes about one iteration, where a
    /// Gauss–Seidel sweep costs more and, being ordered, breaks the mirror symmetry
    /// of a symmetric grid at the tolerance (its centre of mass drifted by more than
    /// 1e-14 m in `tests/semi_implicit.rs`).
    #[must_use]
    pub fn new(settings: CgSettings) -> Self {
        Self { cg: Cg::new(CgSettings { solver: SolverKind::CgJacobi, ..settings }), ..Self::default() }
    }

    /// The linear-solver settings.
    #[must_use]
    pub fn settings(&self) -> CgSettings {
        self.cg.settings
    }

    /// Fills K into `a` and C into `c`, (re)building their common pattern when the
    /// coupling changed.
    fn assemble(&mut self, sys: &mut dyn System, state: &State, t: f64) {
        let n = state.len();
        for attempt in 0..2 {
            if !self.patterned || self.a.rows() != n || attempt == 1 {
                let mut pairs = Pairs::default();
                sys.scalar_stiffness(state, t, &mut pairs);
                sys.jacobian(state, t, &mut pairs);
                self.a = BlockMatrix::with_pattern(n, &pairs.0);
                self.c = self.a.clone();
                self.slots.clear();
                self.patterned = true;
            }
            self.a.clear();
            self.c.clear();
            let mut sink = Stiffness { m: &mut self.a, slots: &mut self.slots, at: 0 };
            self.had_stiffness = sys.scalar_stiffness(state, t, &mut sink);
            sys.jacobian(state, t, &mut Damping(&mut self.c));
            if self.a.missed().is_empty() && self.c.missed().is_empty() {
                return;
            }
        }
    }

    /// Whether the last step had an elastic term with a scalar stiffness (false:
    /// the step was symplectic Euler with semi-implicit damping).
    #[must_use]
    pub fn had_stiffness(&self) -> bool {
        self.had_stiffness
    }

    /// One step of `h`, halved recursively (`depth` times so far) while the system
    /// is indefinite. Iterations and times add up over sub-steps.
    fn step_halving(
        &mut self,
        sys: &mut dyn System,
        state: &mut State,
        t: f64,
        h: f64,
        depth: u32,
    ) -> Result<StepReport, IntegratorError> {
        match self.single_step(sys, state, t, h) {
            Err(IntegratorError::NotPositiveDefinite { .. }) if depth < MAX_HALVINGS => {
                // Two half steps. If the second fails after the first succeeded,
                // the state goes back to where this step began, as after any
                // failed step (the world's clock does not move on a failure). A
                // copy, on this path only: it follows a failed solve.
                let start = state.clone();
                let halves = self
                    .step_halving(sys, state, t, 0.5 * h, depth + 1)
                    .and_then(|a| Ok((a, self.step_halving(sys, state, t + 0.5 * h, 0.5 * h, depth + 1)?)));
                let (a, b) = match halves {
                    Ok(reports) => reports,
                    Err(e) => {
                        *state = start;
                        return Err(e);
                    }
                };
                Ok(StepReport {
                    iterations: a.iterations + b.iterations,
                    residual: a.residual.max(b.residual),
                    seconds_forces: a.seconds_forces + b.seconds_forces,
                    seconds_jacobian: a.seconds_jacobian + b.seconds_jacobian,
                    seconds_preconditioner: a.seconds_preconditioner + b.seconds_preconditioner,
                    seconds_solve: a.seconds_solve + b.seconds_solve,
                    definite_fallback: a.definite_fallback || b.definite_fallback,
                    ..StepReport::default()
                })
            }
            other => other,
        }
    }

    /// One step of `h` without retrying. `state` is changed only on success.
    fn single_step(
        &mut self,
        sys: &mut dyn System,
        state: &mut State,
        t: f64,
        h: f64,
    ) -> Result<StepReport, IntegratorError> {
        let n = state.len();
        let t0 = Instant::now();
        sys.loads(state, t, &mut self.loads);
        let t1 = Instant::now();
        self.assemble(sys, state, t);
        // A = K + M/h² + C/(2h): K and C share one pattern.
        self.a.add_scaled_mass(1.0 / (h * h), &sys.particles().mass);
        self.a.add_scaled(0.5 / h, &self.c);
        let t2 = Instant::now();

        for v in [&mut self.rhs, &mut self.cv, &mut self.dx] {
            if v.len() != n {
                *v = Vec3s::zeros(n);
            }
        }
        // b = f + M v / h + C v / 2
        self.c.mul(&state.v, &mut self.cv);
        let particles = sys.particles();
        for i in 0..n {
            let v = state.v.get(i);
            self.rhs.set(i, self.loads.f.get(i) + v * (particles.mass[i] / h) + self.cv.get(i) * 0.5);
            // Warm start: the explicit guess Δr = h v.
            self.dx.set(i, v * h);
        }
        self.fixed.clear();
        self.fixed.extend((0..n).map(|i| particles.pinned[i] || particles.inv_mass[i] == 0.0));
        let solved = self.cg.solve(&self.a, &self.rhs, &mut self.dx, &self.fixed)?;
        let t3 = Instant::now();

        // Fixed (pinned, driven) particles keep their velocity, as under every other
        // method; drivers place them afterwards.
        for i in (0..n).filter(|&i| !self.fixed[i]) {
            let dx = self.dx.get(i);
            state.x.set(i, state.x.get(i) + dx);
            state.v.set(i, dx / h);
        }
        rotate_symplectic(sys, state, &mut self.loads, h);
        Ok(StepReport {
            iterations: solved.iterations,
            residual: solved.residual,
            seconds_forces: (t1 - t0).as_secs_f64(),
            seconds_jacobian: (t2 - t1).as_secs_f64(),
            seconds_preconditioner: solved.seconds_setup,
            seconds_solve: (t3 - t2).as_secs_f64() - solved.seconds_setup,
            definite_fallback: false,
            ..StepReport::default()
        })
    }
}

impl Integrator for SemiImplicit {
    fn name(&self) -> &'static str {
        "semi-implicit"
    }

    fn save_state(&self, out: &mut crate::checkpoint::StateWriter) {
        out.bool(self.patterned);
        out.usize(self.a.rows());
        let pattern: Vec<u32> = self.a.pattern().into_iter().flat_map(|(i, j)| [i, j]).collect();
        out.u32s(&pattern);
        let slots: Vec<u32> = self.slots.iter().flat_map(|&(a, b, c)| [a, b, c]).collect();
        out.u32s(&slots);
        out.bool(self.had_stiffness);
    }

    fn restore_state(
        &mut self,
        input: &mut crate::checkpoint::StateReader<'_>,
    ) -> Result<(), crate::checkpoint::RestoreError> {
        let patterned = input.bool("the semi-implicit pattern flag")?;
        let n = input.usize("the semi-implicit rows", u32::MAX as usize)?;
        let mut flat = Vec::new();
        input.u32s("the semi-implicit pattern", &mut flat)?;
        let pairs = crate::solve::pairs_of(&flat, n)?;
        self.a = BlockMatrix::with_pattern(n, &pairs);
        self.c = self.a.clone();
        input.u32s("the semi-implicit slots", &mut flat)?;
        if !flat.len().is_multiple_of(3) {
            return Err(crate::checkpoint::RestoreError::Invalid("semi-implicit slots"));
        }
        self.slots = flat.chunks_exact(3).map(|c| (c[0], c[1], c[2])).collect();
        self.had_stiffness = input.bool("the semi-implicit stiffness flag")?;
        self.patterned = patterned;
        Ok(())
    }

    fn step(&mut self, sys: &mut dyn System, state: &mut State, t: f64, h: f64) -> Result<StepReport, IntegratorError> {
        self.step_halving(sys, state, t, h, 0)
    }
}
