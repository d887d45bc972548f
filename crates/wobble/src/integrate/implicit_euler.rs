//! Implicit (backward) Euler, linearised once per step (Baraff–Witkin; 000 §4;
//! physics notes §5):
//!
//! ```text
//! (M − h ∂f/∂v − h² ∂f/∂x) Δv = h ( f(x, v) + h ∂f/∂x v ),   v += Δv,   x += h v
//! ```
//!
//! ∂f/∂x and ∂f/∂v are assembled every step from the force terms' Jacobian blocks
//! ([`System::jacobian`]) into a [`Jacobian`] whose sparsity pattern is built on the
//! first step and reused; the system is solved by conjugate gradients ([`Cg`],
//! block-SSOR preconditioned by default) to a relative tolerance, starting from the
//! last steps' Δv extrapolated by a polynomial whose order (up to
//! [`CgSettings::warm_start_order`]) is the one that best predicted the last Δv.
//! Pinned particles (and any with infinite mass) are filtered out of the solve, so
//! they keep their velocity exactly. A step whose solve fails returns the error
//! with the state as it was, and the next step starts cold (from Δv = 0, as the
//! first does): the failed solve's last iterate is no Δv of the motion. Force
//! terms without a Jacobian enter through f only (explicitly).
//!
//! Compressed springs contribute negative transverse stiffness, so at a large step
//! the exact system matrix can be indefinite; CG detects it (pᵀAp ≤ 0). The step is
//! then solved again with the *definite* Jacobian ([`crate::force::JacobianSink::definite`]:
//! the terms of the wrong sign left out), and [`StepReport::definite_fallback`] says
//! so. The first attempt always uses the exact Jacobian, as 000 does.
//!
//! **Newton iterations** (`newton_iterations = k`, default 1). The step above is
//! one Newton iteration of the non-linear backward Euler system
//!
//! ```text
//! G(v⁺) = M (v⁺ − v) − h f(x + h v⁺, v⁺) = 0
//! ```
//!
//! linearised at the start state (x, v). Each further iteration evaluates f and the
//! Jacobians at the current iterate (x + h v⁺, v⁺) and solves
//! (M − h ∂f/∂v − h² ∂f/∂x) δ = −G(v⁺), v⁺ += δ: Newton's method, which converges
//! quadratically once close. Each iteration takes the full step δ when it lowers
//! |G|, else the first of δ/2, δ/4, … down to δ/1024 that does (a line search:
//! far from the solution a full Newton step can overshoot); when none does, the
//! iterations stop there. The last iterate's relative |G| is reported
//! ([`StepReport::newton_residual`]); `newton_tolerance`
//! stops the iterations early (and with k = 1 asks for the residual of the
//! linearised step). With k = 1 and no tolerance nothing changes: no extra
//! evaluation.
//!
//! For a linear damped system the method is stable at every step, and it damps
//! high-frequency modes (numerical dissipation): first order, like the explicit
//! Eulers. Rotational state, when some particle has inertia, is advanced by
//! symplectic Euler from the torques at the start of the step (ω += h α, then q).

use std::time::{Duration, Instant};

use glam::{DMat3, DVec3};

use super::{Integrator, IntegratorError, StepReport, System, rotate_symplectic};
use crate::force::{JacobianSink, Loads};
use crate::model::{State, Vec3s};
use crate::solve::{BlockMatrix, Cg, CgError, CgReport, CgSettings, Jacobian, PatternSink, SolverKind, Stencils};

/// Implicit Euler with a conjugate-gradient solve. See the module docs.
#[derive(Debug, Default)]
pub struct ImplicitEuler {
    cg: Cg,
    loads: Loads,
    /// ∂f/∂x and ∂f/∂v, assembled apart only by [`SolverKind::CgJacobi`] (the
    /// solver before issue 13, kept as it was for comparison); its pattern is the
    /// system matrix's.
    jac: Jacobian,
    a: BlockMatrix,
    rhs: Vec3s,
    kv: Vec3s,
    /// The last step's Δv; the next solve's starting guess once [`Self::guess`]
    /// has extrapolated it ([`SolverKind::Cg`]).
    dv: Vec3s,
    /// Earlier steps' Δv, newest first, at most [`WARM_START_POINTS`] of them:
    /// while a step solves, those before the one in `dv`; [`Self::guess`] moves
    /// `dv`'s to the front and extrapolates from them.
    past: Vec<Vec3s>,
    /// Per run of [`WARM_START_ROWS`] rows: partial sums of the predictors' squared
    /// errors.
    partial: Vec<[f64; WARM_START_POINTS]>,
    /// Steps solved since the start (or the last change of size).
    history: u32,
    /// The order [`Self::guess`] extrapolated the last guess with.
    last_order: usize,
    fixed: Vec<bool>,
    patterned: bool,
    /// Off-pattern blocks of contact stencils (see [`Stencils`]), refilled with A.
    stencils: Stencils,
    /// Where each spring's four blocks live in A, in the order the force terms
    /// hand them over (see [`PairSlots`]).
    slots: PairSlots,
    /// Newton iterations: the iterate's state, its loads, the correction δ.
    trial: State,
    trial_loads: Loads,
    delta: Vec3s,
}

/// Storage indices of the blocks (a,a), (b,b), (a,b), (b,a) of each
/// [`JacobianSink::add_pair`] call, in call order, found once and reused while the
/// calls and the pattern stay the same: an assembly then writes each block without
/// searching its row (the force terms hand their pairs over in the same order every
/// step). A call that does not match its remembered pair is looked up and
/// remembered anew; the list is cleared whenever the pattern changes.
#[derive(Debug, Default)]
struct PairSlots {
    list: Vec<(u32, u32, [u32; 4])>,
    cursor: usize,
}

/// What the right-hand side of a solve is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rhs {
    /// h (f + h ∂f/∂x v): the linearised step, from `loads` and ∂f/∂x v.
    Linearised,
    /// Already in `rhs` (−G of a Newton iteration).
    Given,
}

/// Assembles A = M − h ∂f/∂v − h² ∂f/∂x and ∂f/∂x v in one pass over the force
/// terms' blocks (no separate Jacobian matrices): a spring's four blocks are
/// combined once and added at their four places.
struct SystemSink<'a> {
    a: &'a mut BlockMatrix,
    slots: &'a mut PairSlots,
    /// Where the off-diagonal blocks of stencils go.
    stencils: &'a mut Stencils,
    /// ∂f/∂x v, N/s.
    kv: &'a mut Vec3s,
    v: &'a Vec3s,
    h: f64,
    definite: bool,
}

impl JacobianSink for SystemSink<'_> {
    #[inline]
    fn add_dfdx(&mut self, i: usize, j: usize, block: DMat3) {
        self.a.add(i, j, block * (-self.h * self.h));
        self.kv.add(i, block * self.v.get(j));
    }

    #[inline]
    fn add_dfdv(&mut self, i: usize, j: usize, block: DMat3) {
        self.a.add(i, j, block * -self.h);
    }

    fn definite(&self) -> bool {
        self.definite
    }

    #[inline]
    fn add_pair(&mut self, a: usize, b: usize, dfdx: DMat3, dfdv: DMat3) {
        let k = dfdx * (-self.h * self.h) - dfdv * self.h;
        let at = self.slots.cursor;
        self.slots.cursor += 1;
        let known = match self.slots.list.get(at) {
            Some(&(x, y, s)) if x as usize == a && y as usize == b => Some(s),
            _ => {
                let m = &*self.a;
                let found = [m.find(a, a), m.find(b, b), m.find(a, b), m.find(b, a)];
                let s = found.iter().all(Option::is_some).then(|| found.map(|k| k.unwrap_or(0) as u32));
                if let Some(s) = s {
                    self.slots.list.truncate(at);
                    self.slots.list.push((a as u32, b as u32, s));
                }
                s
            }
        };
        match known {
            Some([aa, bb, ab, ba]) => {
                self.a.add_at(aa as usize, k);
                self.a.add_at(bb as usize, k);
                self.a.add_at(ab as usize, -k);
                self.a.add_at(ba as usize, -k);
            }
            // Outside the pattern: `add` records the miss, and the pattern widens.
            None => {
                self.a.add(a, a, k);
                self.a.add(b, b, k);
                self.a.add(a, b, -k);
                self.a.add(b, a, -k);
            }
        }
        let d = dfdx * (self.v.get(a) - self.v.get(b));
        self.kv.add(a, d);
        self.kv.sub(b, d);
    }

    /// Pairs whose four slots are known (every step after the first with the same
    /// pattern) are written by row: the matrix's runs of rows
    /// ([`crate::solve::cg::domain_rows`]) are tasks of their own, each taking the
    /// elements with an end in its rows, in element order, and writing only its
    /// rows' blocks and ∂f/∂x v (an element across two runs is evaluated by both).
    /// Each block and row receives the same parts in the same order as from
    /// [`JacobianSink::add_pair`] one element after another, so the sums are the
    /// same to the bit for any thread count.
    fn add_pairs(
        &mut self,
        count: usize,
        ends: &(dyn Fn(usize) -> (usize, usize) + Sync),
        blocks: &(dyn Fn(usize) -> (DMat3, DMat3) + Sync),
    ) {
        use rayon::prelude::*;
        let n = self.a.rows();
        let size = crate::solve::cg::domain_rows(n);
        let at = self.slots.cursor;
        let known = size < n
            && self.slots.list.len() >= at + count
            && (0..count).all(|s| {
                let (a, b) = ends(s);
                let (x, y, _) = self.slots.list[at + s];
                x as usize == a && y as usize == b
            });
        if !known {
            for s in 0..count {
                let (a, b) = ends(s);
                let (dfdx, dfdv) = blocks(s);
                self.add_pair(a, b, dfdx, dfdv);
            }
            return;
        }
        self.slots.cursor += count;
        let slots = &self.slots.list[at..at + count];
        let (h, v) = (self.h, self.v);
        let runs = self.a.row_runs_mut(size);
        runs.into_par_iter().zip(crate::par::par_rows(self.kv, size)).for_each(|((rows, first, own), mut kv)| {
            for (s, &(_, _, [aa, bb, ab, ba])) in slots.iter().enumerate() {
                let (a, b) = ends(s);
                let (ina, inb) = (rows.contains(&a), rows.contains(&b));
                if !(ina || inb) {
                    continue;
                }
                let (dfdx, dfdv) = blocks(s);
                let k = dfdx * (-h * h) - dfdv * h;
                if ina {
                    own[aa as usize - first] += k;
                }
                if inb {
                    own[bb as usize - first] += k;
                }
                if ina {
                    own[ab as usize - first] += -k;
                }
                if inb {
                    own[ba as usize - first] += -k;
                }
                let d = dfdx * (v.get(a) - v.get(b));
                if ina {
                    kv.add(a, d);
                }
                if inb {
                    kv.sub(b, d);
                }
            }
        });
    }

    /// Diagonal blocks into A, the rest into the stencil list; ∂f/∂x v exactly.
    fn add_stencil(&mut self, p: [u32; 4], w: [f64; 4], dfdx: DMat3, dfdv: DMat3) {
        let m = dfdx * (-self.h * self.h) - dfdv * self.h;
        let mut u = DVec3::ZERO;
        for k in 0..4 {
            if w[k] != 0.0 {
                u += self.v.get(p[k] as usize) * w[k];
            }
        }
        let du = dfdx * u;
        for k in 0..4 {
            if w[k] != 0.0 {
                let i = p[k] as usize;
                self.a.add(i, i, m * (w[k] * w[k]));
                self.kv.add(i, du * w[k]);
            }
        }
        self.stencils.push(p, w, m);
    }
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
    /// (into `self.dv`, which holds the starting guess), adding the time spent to
    /// `times` (assembly, preconditioner, solve).
    #[allow(clippy::too_many_arguments)]
    fn solve(
        &mut self,
        sys: &mut dyn System,
        state: &State,
        t: f64,
        h: f64,
        definite: bool,
        rhs: Rhs,
        times: &mut [Duration; 3],
    ) -> Result<CgReport, CgError> {
        let t1 = Instant::now();
        if self.cg.settings.solver == SolverKind::CgJacobi {
            self.assemble_apart(sys, state, t, h, definite);
        } else {
            self.assemble_fused(sys, state, t, h, definite);
        }
        if rhs == Rhs::Linearised {
            // b = h (f + h ∂f/∂x v)
            for i in 0..state.len() {
                self.rhs.set(i, (self.loads.f.get(i) + self.kv.get(i) * h) * h);
            }
        }
        let t2 = Instant::now();
        self.stencils.index(state.len());
        let target = if rhs == Rhs::Linearised { &mut self.dv } else { &mut self.delta };
        let out = self.cg.solve_with(&self.a, &self.stencils, &self.rhs, target, &self.fixed);
        let setup = out.as_ref().map_or(Duration::ZERO, |r| Duration::from_secs_f64(r.seconds_setup));
        times[0] += t2 - t1;
        times[1] += setup;
        times[2] += t2.elapsed().saturating_sub(setup);
        out
    }

    /// Builds the pattern on the first step (or when the size changed).
    fn ensure_pattern(&mut self, sys: &mut dyn System, state: &State, t: f64, h: f64) {
        let n = state.len();
        if !self.patterned || self.a.rows() != n {
            let mut pattern = PatternSink::default();
            sys.jacobian(state, t, &mut pattern);
            sys.coupled_jacobian(state, t, h, &mut pattern);
            self.a = BlockMatrix::with_pattern(n, &pattern.pairs);
            self.slots.list.clear();
            self.patterned = true;
        }
    }

    /// A and ∂f/∂x v in one pass ([`SystemSink`]), widening the pattern when a block
    /// falls outside it.
    fn assemble_fused(&mut self, sys: &mut dyn System, state: &State, t: f64, h: f64, definite: bool) {
        self.ensure_pattern(sys, state, t, h);
        for attempt in 0..2 {
            if attempt == 1 {
                self.a.widen();
                self.slots.list.clear();
            }
            self.a.clear();
            self.a.add_scaled_mass(1.0, &sys.particles().mass);
            self.kv.fill(DVec3::ZERO);
            self.stencils.clear();
            self.slots.cursor = 0;
            let mut sink = SystemSink {
                a: &mut self.a,
                slots: &mut self.slots,
                stencils: &mut self.stencils,
                kv: &mut self.kv,
                v: &state.v,
                h,
                definite,
            };
            sys.jacobian(state, t, &mut sink);
            sys.coupled_jacobian(state, t, h, &mut sink);
            if self.a.missed().is_empty() {
                return;
            }
        }
    }

    /// Today's path before issue 13: ∂f/∂x and ∂f/∂v assembled into two matrices,
    /// then combined, and ∂f/∂x v by a product.
    fn assemble_apart(&mut self, sys: &mut dyn System, state: &State, t: f64, h: f64, definite: bool) {
        self.ensure_pattern(sys, state, t, h);
        self.stencils.clear();
        if self.jac.dfdx.rows() != self.a.rows() || self.jac.dfdx.pattern() != self.a.pattern() {
            self.jac = Jacobian::with_pattern(self.a.rows(), &self.a.pattern());
        }
        self.jac.definite = definite;
        self.jac.clear();
        sys.jacobian(state, t, &mut self.jac);
        sys.coupled_jacobian(state, t, h, &mut self.jac);
        if self.jac.missed() {
            self.jac.widen();
            sys.jacobian(state, t, &mut self.jac);
            sys.coupled_jacobian(state, t, h, &mut self.jac);
        }
        // A = M − h ∂f/∂v − h² ∂f/∂x, on the Jacobian's pattern.
        self.a.match_pattern(&self.jac.dfdx);
        self.slots.list.clear();
        self.a.add_scaled_mass(1.0, &sys.particles().mass);
        self.a.add_scaled(-h, &self.jac.dfdv);
        self.a.add_scaled(-h * h, &self.jac.dfdx);
        self.jac.dfdx.mul(&state.v, &mut self.kv);
    }

    /// Newton iterations 2..k on G(v⁺) = M (v⁺ − v) − h f(x + h v⁺, v⁺) from
    /// v⁺ = v + `self.dv` (the linearised step), updating `self.dv`; then G once
    /// more for the report. f is taken at t + h, as backward Euler has it.
    fn newton(
        &mut self,
        sys: &mut dyn System,
        state: &State,
        t: f64,
        h: f64,
        report: &mut StepReport,
        times: &mut [Duration; 3],
    ) -> Result<(), IntegratorError> {
        let n = state.len();
        if self.delta.len() != n {
            self.delta = Vec3s::zeros(n);
        }
        // The scale of G: the impulse of the start forces, or the step's momentum change.
        let mass = &sys.particles().mass;
        let (mut f0, mut mdv) = (0.0, 0.0);
        for i in (0..n).filter(|&i| !self.fixed[i]) {
            f0 += (self.loads.f.get(i) * h).length_squared();
            mdv += (self.dv.get(i) * mass[i]).length_squared();
        }
        let scale = f0.sqrt().max(mdv.sqrt()).max(f64::MIN_POSITIVE);
        let settings = self.cg.settings;
        let mut taken = 1;
        let mut g2 = self.minus_g(sys, state, t, h, None);
        loop {
            report.newton_residual = g2.sqrt() / scale;
            report.newton_iterations = taken;
            if taken >= settings.newton_iterations || report.newton_residual <= settings.newton_tolerance {
                return Ok(());
            }
            // δ from the Jacobians at the iterate (the definite ones if the exact
            // ones make the system indefinite there).
            let trial = std::mem::take(&mut self.trial);
            self.delta.fill(DVec3::ZERO);
            let mut outcome = self.solve(sys, &trial, t + h, h, report.definite_fallback, Rhs::Given, times);
            if matches!(outcome, Err(CgError::NotPositiveDefinite { .. } | CgError::NotPositivePivot { .. })) {
                report.definite_fallback = true;
                self.delta.fill(DVec3::ZERO);
                outcome = self.solve(sys, &trial, t + h, h, true, Rhs::Given, times);
            }
            self.trial = trial;
            let solved = outcome?;
            report.iterations += solved.iterations;
            report.residual = report.residual.max(solved.residual);
            // The line search: the first of v⁺ + α δ, α = 1, 1/2, …, whose residual
            // is below the iterate's.
            let mut alpha = 1.0;
            let accepted = loop {
                let tried = self.minus_g(sys, state, t, h, Some(alpha));
                if tried < g2 {
                    g2 = tried;
                    break true;
                }
                if alpha <= NEWTON_SMALLEST_STEP {
                    break false;
                }
                alpha *= 0.5;
            };
            if !accepted {
                // No step along δ lowers the residual: the iterate stays, and so
                // does its residual in the report.
                return Ok(());
            }
            for i in 0..n {
                self.dv.set(i, self.dv.get(i) + alpha * self.delta.get(i));
            }
            taken += 1;
        }
    }

    /// Evaluates −G at the iterate v⁺ = v + Δv, Δv being `self.dv` (`along` =
    /// None) or `self.dv` + α `self.delta` (`along` = Some(α)): the state there
    /// into `self.trial`, −G into `self.rhs`. Returns |G|² over the free particles.
    fn minus_g(&mut self, sys: &mut dyn System, state: &State, t: f64, h: f64, along: Option<f64>) -> f64 {
        let n = state.len();
        let dv = |i: usize, dv: &Vec3s, delta: &Vec3s| along.map_or(dv.get(i), |a| dv.get(i) + a * delta.get(i));
        self.trial.copy_from(state);
        for i in 0..n {
            let v = state.v.get(i) + dv(i, &self.dv, &self.delta);
            self.trial.v.set(i, v);
            self.trial.x.set(i, state.x.get(i) + v * h);
        }
        sys.loads(&self.trial, t + h, &mut self.trial_loads);
        sys.coupled_loads(&self.trial, t + h, h, &mut self.trial_loads);
        let mass = &sys.particles().mass;
        let mut g2 = 0.0;
        for (i, &m) in mass.iter().enumerate().take(n) {
            let minus_g = self.trial_loads.f.get(i) * h - dv(i, &self.dv, &self.delta) * m;
            if !self.fixed[i] {
                g2 += minus_g.length_squared();
            }
            self.rhs.set(i, minus_g);
        }
        g2
    }

    /// Puts the starting guess for Δv into `self.dv` (which holds the last step's
    /// Δv), and moves the last Δv into `self.past`.
    ///
    /// The guess extrapolates the last k + 1 steps' Δv by the polynomial of order k
    /// through them ([`EXTRAPOLATION`]): k = 0 repeats the last Δv, k = 1 is
    /// 2Δvₙ − Δvₙ₋₁, up to k = [`WARM_START_POINTS`] − 1. The order is chosen every
    /// step: each order's prediction of the Δv just solved (from the ones before
    /// it) is compared with that Δv, and the order that predicted it best is used
    /// for the next step (the lowest among equals). A smoothly moving body gets a
    /// high order; a step after an impact, whose Δv no polynomial foresaw, a low
    /// one. The choice depends on the Δv alone (partial sums over fixed runs of
    /// rows, added in order), so it is the same for any thread count.
    ///
    /// Iterations per step (swinging benchmark cloth, 100 steps, tolerance 1e-6;
    /// 64² / 128²): fixed order 1: 9.9 / 16.1; order 2: 8.0 / 13.3; order 3:
    /// 6.7 / 11.0; order 4: 6.2 / 10.1. On the 64² crumple with self-contact
    /// (`examples/crumple_phases.rs`) fixed orders 1–4 took 29.8, 29.8, 30.7 and
    /// 32.9 iterations per step: high orders overshoot after contacts. The choice
    /// by the last step's errors is measured in `docs/performance.md`.
    ///
    /// Zero for [`SolverKind::CgJacobi`] (as before issue 13). A fixed iteration
    /// budget (`accept_unconverged`) also starts from zero: an unconverged Δv fed
    /// back through the extrapolation made the budgeted runs of
    /// `wobble experiment cubic-jacobian-damping` oscillate with metres of amplitude.
    fn guess(&mut self) {
        use rayon::prelude::*;
        let settings = self.cg.settings;
        let n = self.dv.len();
        self.last_order = 0;
        if self.history == 0 {
            self.past.clear();
            self.dv.fill(DVec3::ZERO);
            return;
        }
        let zero_start = settings.solver == SolverKind::CgJacobi || settings.accept_unconverged;
        // Each order's error in predicting the last Δv from the ones before it.
        let most = usize::from(settings.warm_start_order).min(WARM_START_POINTS - 1);
        let known = self.past.len().min(most + 1);
        let mut order = 0;
        if known > 1 && !zero_start {
            let runs = n.div_ceil(WARM_START_ROWS).max(1);
            self.partial.clear();
            self.partial.resize(runs, [0.0; WARM_START_POINTS]);
            let (past, dv) = (&self.past, &self.dv);
            self.partial.par_iter_mut().enumerate().for_each(|(r, part)| {
                // Summed here and stored once: neighbouring runs' sums share cache
                // lines, and other threads fill them at the same time.
                let mut sums = [0.0; WARM_START_POINTS];
                for i in r * WARM_START_ROWS..((r + 1) * WARM_START_ROWS).min(n) {
                    let actual = dv.get(i);
                    for (k, err) in sums.iter_mut().enumerate().take(known) {
                        let predicted = extrapolate(k, |j| past[j].get(i));
                        *err += (predicted - actual).length_squared();
                    }
                }
                *part = sums;
            });
            let mut errors = [0.0; WARM_START_POINTS];
            for part in &self.partial {
                for (e, p) in errors.iter_mut().zip(part) {
                    *e += p;
                }
            }
            for k in 1..known {
                if errors[k] < errors[order] {
                    order = k;
                }
            }
        }
        // The last Δv joins the history (newest first); `dv` takes the oldest
        // vector's storage and receives the guess.
        if self.past.len() < WARM_START_POINTS {
            self.past.push(Vec3s::zeros(n));
        }
        self.past.rotate_right(1);
        std::mem::swap(&mut self.past[0], &mut self.dv);
        if zero_start {
            self.dv.fill(DVec3::ZERO);
            return;
        }
        self.last_order = order;
        let past = &self.past;
        crate::par::par_rows(&mut self.dv, crate::par::block_len(n)).for_each(|mut dv| {
            for i in dv.range() {
                dv.set(i, extrapolate(order, |j| past[j].get(i)));
            }
        });
    }
}

/// The shortest step along a Newton direction that the line search tries
/// (2⁻¹⁰ of the full step) before it gives up and keeps the iterate.
const NEWTON_SMALLEST_STEP: f64 = 1.0 / 1024.0;

/// The most Δv a warm start extrapolates from: orders up to
/// [`CgSettings::MAX_WARM_START_ORDER`].
pub const WARM_START_POINTS: usize = CgSettings::MAX_WARM_START_ORDER as usize + 1;

/// Rows per run of the warm start's error sums (a constant, so that the sums do
/// not depend on the thread count).
const WARM_START_ROWS: usize = 4096;

/// Coefficients of the polynomial extrapolation of order k (row k) from the last
/// k + 1 values, newest first: the next value of a polynomial of degree k sampled
/// at equal steps, (−1)ʲ C(k + 1, j + 1).
pub const EXTRAPOLATION: [[f64; WARM_START_POINTS]; WARM_START_POINTS] = [
    [1.0, 0.0, 0.0, 0.0, 0.0],
    [2.0, -1.0, 0.0, 0.0, 0.0],
    [3.0, -3.0, 1.0, 0.0, 0.0],
    [4.0, -6.0, 4.0, -1.0, 0.0],
    [5.0, -10.0, 10.0, -5.0, 1.0],
];

/// Σⱼ EXTRAPOLATION[k][j] · value(j) over j = 0..=k (value(0) the newest).
#[inline]
fn extrapolate(k: usize, value: impl Fn(usize) -> DVec3) -> DVec3 {
    let c = &EXTRAPOLATION[k];
    let mut sum = value(0) * c[0];
    for (j, &cj) in c.iter().enumerate().take(k + 1).skip(1) {
        sum += value(j) * cj;
    }
    sum
}

impl Integrator for ImplicitEuler {
    fn name(&self) -> &'static str {
        "implicit-euler"
    }

    fn save_state(&self, out: &mut crate::checkpoint::StateWriter) {
        // The pattern only grows (widened when a block falls outside it), and its
        // blocks take part in the products: a resumed run must use the same one.
        out.bool(self.patterned);
        out.usize(self.a.rows());
        let pattern: Vec<u32> = self.a.pattern().into_iter().flat_map(|(i, j)| [i, j]).collect();
        out.u32s(&pattern);
        // The warm start: the next solve starts from (and so ends near) these.
        out.u32(self.history);
        out.vec3s(&self.dv);
        out.usize(self.past.len());
        for v in &self.past {
            out.vec3s(v);
        }
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
        self.a = BlockMatrix::with_pattern(n, &pairs);
        self.slots.list.clear();
        self.patterned = patterned;
        self.history = input.u32("the implicit integrator's warm-start count")?;
        input.vec3s("the implicit integrator's last velocity change", None, &mut self.dv)?;
        let known = input.usize("the implicit integrator's count of earlier velocity changes", WARM_START_POINTS)?;
        self.past.resize_with(known, Vec3s::default);
        for v in &mut self.past {
            input.vec3s("an earlier velocity change of the implicit integrator", Some(self.dv.len()), v)?;
        }
        Ok(())
    }

    fn step(&mut self, sys: &mut dyn System, state: &mut State, t: f64, h: f64) -> Result<StepReport, IntegratorError> {
        let n = state.len();
        let t0 = Instant::now();
        sys.loads(state, t, &mut self.loads);
        sys.coupled_loads(state, t, h, &mut self.loads);
        let t1 = Instant::now();
        if self.dv.len() != n {
            self.history = 0;
        }
        for v in [&mut self.rhs, &mut self.kv, &mut self.dv] {
            if v.len() != n {
                *v = Vec3s::zeros(n);
            }
        }
        let particles = sys.particles();
        self.fixed.clear();
        self.fixed.extend((0..n).map(|i| particles.pinned[i] || particles.inv_mass[i] == 0.0));
        self.guess();
        let mut times = [Duration::ZERO; 3];
        let mut definite_fallback = false;
        let mut outcome = self.solve(sys, state, t, h, false, Rhs::Linearised, &mut times);
        if matches!(outcome, Err(CgError::NotPositiveDefinite { .. } | CgError::NotPositivePivot { .. })) {
            // The exact Jacobian made the system indefinite (compressed stiff springs
            // at a large step): solve again with the definite approximation.
            definite_fallback = true;
            self.dv.fill(DVec3::ZERO);
            outcome = self.solve(sys, state, t, h, true, Rhs::Linearised, &mut times);
        }
        // A failed solve leaves its last iterate in `dv`, which is no Δv of the
        // motion: the step after a failure starts cold, as the first step does.
        let solved = outcome.inspect_err(|_| self.history = 0)?;
        let mut report = StepReport {
            iterations: solved.iterations,
            residual: solved.residual,
            definite_fallback,
            warm_start_order: self.last_order as u8,
            ..StepReport::default()
        };
        let mut seconds_forces = (t1 - t0).as_secs_f64();
        if self.cg.settings.newton_iterations > 1 || self.cg.settings.newton_tolerance > 0.0 {
            let (t2, solving) = (Instant::now(), times.iter().sum::<Duration>());
            self.newton(sys, state, t, h, &mut report, &mut times).inspect_err(|_| self.history = 0)?;
            let solving = times.iter().sum::<Duration>().saturating_sub(solving);
            seconds_forces += t2.elapsed().saturating_sub(solving).as_secs_f64();
        }
        self.history = self.history.saturating_add(1);

        for i in 0..n {
            let v = state.v.get(i) + self.dv.get(i);
            state.v.set(i, v);
            state.x.set(i, state.x.get(i) + v * h);
        }
        rotate_symplectic(sys, state, &mut self.loads, h);
        report.seconds_forces = seconds_forces;
        report.seconds_jacobian = times[0].as_secs_f64();
        report.seconds_preconditioner = times[1].as_secs_f64();
        report.seconds_solve = times[2].as_secs_f64();
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extrapolation_of_order_k_continues_a_polynomial_of_degree_k_exactly() {
        // Samples of p(t) = Σ aₘ tᵐ (degree k, integer coefficients, so every value
        // is exact in f64) at t = 1, 2, …, k + 1; the order-k rule, fed newest first,
        // must give p(k + 2) exactly, and a rule of lower order must miss it.
        for k in 0..WARM_START_POINTS {
            let coefficients: Vec<f64> =
                (0..=k).map(|m| (3 * m + 1) as f64 * if m % 2 == 0 { 1.0 } else { -1.0 }).collect();
            let p = |t: f64| coefficients.iter().rev().fold(0.0, |acc, c| acc * t + c);
            let newest = (k + 1) as f64;
            let sample = |j: usize| DVec3::new(p(newest - j as f64), 2.0 * p(newest - j as f64), 0.0);
            let next = p(newest + 1.0);
            assert_eq!(extrapolate(k, sample), DVec3::new(next, 2.0 * next, 0.0), "order {k}");
            if k > 0 {
                assert_ne!(extrapolate(k - 1, sample).x, next, "order {} should not continue degree {k}", k - 1);
            }
        }
    }
}
