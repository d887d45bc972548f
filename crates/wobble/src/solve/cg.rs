//! Preconditioned conjugate gradients with constraint filtering.
//!
//! Solves A x = b for a symmetric positive definite [`BlockMatrix`] A. Rows of
//! `fixed` particles are filtered out (Baraff–Witkin's S): their unknowns stay at
//! zero and their equations are dropped, which is the exact solve of the reduced
//! system on the free particles. The preconditioner is block SSOR (symmetric
//! Gauss–Seidel over-relaxed by [`SSOR_OMEGA`], [`SolverKind::Cg`]) or the inverse
//! of each free particle's 3×3 diagonal block (block Jacobi, [`SolverKind::CgJacobi`]). Iteration stops when the *true* residual
//! ‖S (b − A x)‖, recomputed from x, is at most tolerance · ‖S b‖.
//!
//! A search direction with pᵀ A p ≤ 0 means A is not positive definite on the free
//! particles (a compressed spring's negative stiffness outweighing the mass, for
//! instance): the solve stops with [`CgError::NotPositiveDefinite`] rather than
//! dividing by it.
//!
//! Sums run in particle order within fixed runs of rows (their partial sums added
//! in run order), so results do not depend on the number of threads.

use std::time::Instant;

use glam::{DMat3, DVec3};

use super::cholesky::{Cholesky, FactorError};
use super::{BlockMatrix, Stencils};
use crate::model::Vec3s;
use crate::par::{RowsMut, par_rows};

/// Stopping rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CgSettings {
    /// Relative residual ‖r‖/‖b‖ to reach (default [`CgSettings::DEFAULT_TOLERANCE`]).
    pub tolerance: f64,
    /// Iterations allowed (default [`CgSettings::DEFAULT_MAX_ITERATIONS`]).
    pub max_iterations: u32,
    /// When true, reaching `max_iterations` ends the solve with the current iterate
    /// instead of [`CgError::NoConvergence`] (a fixed iteration budget, as 000 runs
    /// its solver with two iterations). Default false.
    pub accept_unconverged: bool,
    /// Which linear solver implicit integrators use (default [`SolverKind::Cg`]).
    pub solver: SolverKind,
    /// Newton iterations per implicit Euler step (default 1: the linearised step of
    /// Baraff–Witkin and 000; more solve the non-linear backward Euler system, see
    /// [`crate::integrate::ImplicitEuler`]).
    pub newton_iterations: u32,
    /// Relative residual of the non-linear system at which Newton iterations stop
    /// early (default 0: take all `newton_iterations`).
    pub newton_tolerance: f64,
    /// Highest order of the polynomial that implicit Euler's warm start
    /// extrapolates the last steps' Δv with (0–4, default 4; the order used is
    /// chosen every step, see [`crate::integrate::ImplicitEuler`]). 0 starts from
    /// the last Δv itself.
    pub warm_start_order: u8,
}

/// The linear solver of the implicit integrators (scene key `solver`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SolverKind {
    /// Conjugate gradients preconditioned by block SSOR ([`SSOR_OMEGA`]), started
    /// from the previous steps' solutions extrapolated (implicit Euler; from zero
    /// with a fixed budget, `accept_unconverged`). The default.
    #[default]
    Cg,
    /// Conjugate gradients with block-Jacobi preconditioning started from zero: the
    /// solver before issue 13, kept for comparison.
    CgJacobi,
    /// A direct solve: the sparse Cholesky factorisation of the system matrix
    /// ([`super::cholesky`]), as the preconditioner of conjugate gradients, which
    /// then converge in one iteration (a few with contact stencils outside the
    /// pattern). The true residual is checked against the tolerance as for CG.
    Cholesky,
    /// [`SolverKind::Cg`] for up to [`AUTO_SWITCH_ITERATIONS`] iterations; a
    /// system that needs more (badly conditioned: stiff springs against light
    /// particles, a large step) is then finished by [`SolverKind::Cholesky`] from
    /// the iterate reached. The choice is made afresh at every solve from
    /// iteration counts alone, so it is the same on any machine, thread count or
    /// resumed run.
    Auto,
}

/// Conjugate-gradient iterations after which [`SolverKind::Auto`] turns to the
/// direct solver: about where one factorisation and solve cost as much as the
/// iterations they replace. On the benchmark cloth (`wobble bench implicit`,
/// 2026-11-27, two runs) they cost as much as 42–49 block-SSOR iterations at 32²
/// particles, 74–81 at 64² and 79 at 128².
pub const AUTO_SWITCH_ITERATIONS: u32 = 60;

impl SolverKind {
    /// Every kind, in the order the scene documentation lists them.
    pub const ALL: [SolverKind; 4] = [SolverKind::Cg, SolverKind::CgJacobi, SolverKind::Cholesky, SolverKind::Auto];

    /// The scene-file name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            SolverKind::Cg => "cg",
            SolverKind::CgJacobi => "cg-jacobi",
            SolverKind::Cholesky => "cholesky",
            SolverKind::Auto => "auto",
        }
    }

    /// The kind with scene-file name `name`.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl CgSettings {
    /// Default relative tolerance.
    pub const DEFAULT_TOLERANCE: f64 = 1e-6;
    /// Default iteration limit.
    pub const DEFAULT_MAX_ITERATIONS: u32 = 1000;
    /// Highest [`CgSettings::warm_start_order`] (and its default).
    pub const MAX_WARM_START_ORDER: u8 = 4;
}

impl Default for CgSettings {
    fn default() -> Self {
        Self {
            tolerance: Self::DEFAULT_TOLERANCE,
            max_iterations: Self::DEFAULT_MAX_ITERATIONS,
            accept_unconverged: false,
            solver: SolverKind::default(),
            newton_iterations: 1,
            newton_tolerance: 0.0,
            warm_start_order: Self::MAX_WARM_START_ORDER,
        }
    }
}

/// What a successful solve did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CgReport {
    /// Iterations performed.
    pub iterations: u32,
    /// Final true relative residual ‖S (b − A x)‖/‖S b‖, recomputed after the
    /// iteration (0 when S b = 0).
    pub residual: f64,
    /// Wall time spent setting up the preconditioner, s.
    pub seconds_setup: f64,
}

/// Why a solve failed.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum CgError {
    /// The tolerance was not reached.
    #[error(
        "conjugate gradients did not reach the tolerance in {iterations} iterations (relative residual {residual:.3e})"
    )]
    NoConvergence {
        /// Iterations performed.
        iterations: u32,
        /// Relative residual reached.
        residual: f64,
    },
    /// pᵀ A p ≤ 0 (or not finite) for a search direction p.
    #[error(
        "the system matrix is not positive definite (pᵀAp = {curvature:.3e} at iteration {iteration}); reduce the time step or the compression of stiff springs"
    )]
    NotPositiveDefinite {
        /// The iteration (1-based).
        iteration: u32,
        /// pᵀ A p relative to |p|² (negative or zero, or NaN).
        curvature: f64,
    },
    /// A pivot of the Cholesky factorisation ([`SolverKind::Cholesky`]) was not
    /// positive: the matrix is not positive definite on the free particles.
    #[error(
        "the system matrix is not positive definite (pivot {row} of its Cholesky factorisation is not positive); reduce the time step or the compression of stiff springs"
    )]
    NotPositivePivot {
        /// Scalar row of the pivot, in the factorisation's fill-reducing order.
        row: usize,
    },
    /// The sparse Cholesky factorisation could not be set up (out of memory).
    #[error("the sparse Cholesky factorisation of the system matrix could not be set up (out of memory)")]
    FactorisationFailed,
    /// The right-hand side holds a NaN or infinity (a force was not finite).
    #[error(
        "the right-hand side of the linear system is not finite at particle {particle} (a force is NaN or infinite)"
    )]
    NonFinite {
        /// The first particle whose entry is not finite.
        particle: usize,
    },
}

/// The relaxation factor ω of the SSOR preconditioner (ω = 1 is symmetric
/// Gauss–Seidel). CG iterations per step on the swinging benchmark cloth at
/// h = 1e-3 s, tolerance 1e-6 (`wobble bench implicit`), measured for ω = 1, 1.3, 1.4,
/// 1.5, 1.6, 1.8: N = 128: 18.6, 15.4, 14.7, 14.3, 14.6, 18.7; N = 64: 9.8, 8.4, –,
/// –, 8.9, 12.8; N = 256: 41.0 (ω = 1), 30.4 (1.4), 28.1 (1.5); N = 32: 6.2, 5.2 (1.4),
/// 6.1 (1.5). 1.4 is near the best at every size.
pub const SSOR_OMEGA: f64 = 1.4;

/// The solver and its work vectors (kept between solves: no allocation per step
/// once sized).
#[derive(Clone, Debug, Default)]
pub struct Cg {
    /// Stopping rule.
    pub settings: CgSettings,
    r: Vec3s,
    z: Vec3s,
    p: Vec3s,
    q: Vec3s,
    t: Vec3s,
    precond: Vec<DMat3>,
    /// D̃/ω: the diagonal blocks the SSOR sweeps divide by (positive definite).
    dtilde: Vec<DMat3>,
    /// E = 2 D̃ − D (Eisenstat's correction; D itself where D is positive definite).
    extra: Vec<DMat3>,
    /// The factorisation of [`SolverKind::Cholesky`].
    direct: Cholesky,
    /// Per run of rows: partial sums of the dot products.
    partial: Vec<[f64; 2]>,
    /// The block-SSOR sweeps' order.
    order: SweepOrder,
    /// The separator's values during a sweep.
    side: Vec<DVec3>,
}

impl Cg {
    /// A solver with `settings`.
    #[must_use]
    pub fn new(settings: CgSettings) -> Self {
        Self { settings, ..Self::default() }
    }

    /// Solves A x = b on the particles not `fixed` (an empty `fixed` means none are),
    /// starting from the given x (its fixed rows are set to zero): a warm start when x
    /// holds a guess.
    ///
    /// The preconditioner is block SSOR for [`SolverKind::Cg`] and
    /// block Jacobi for [`SolverKind::CgJacobi`]. The iteration runs on the updated
    /// residual; when that says the tolerance is met, the true residual
    /// ‖S (b − A x)‖ is computed afresh and the iteration goes on from it if it is
    /// not, so the reported residual is always the true one.
    pub fn solve(&mut self, a: &BlockMatrix, b: &Vec3s, x: &mut Vec3s, fixed: &[bool]) -> Result<CgReport, CgError> {
        self.solve_with(a, &Stencils::default(), b, x, fixed)
    }

    /// As [`Cg::solve`] for the system matrix A + C, with C the off-pattern parts
    /// of `extra`'s stencils (see [`Stencils`], indexed for A's size): products and
    /// residuals include C, and block SSOR's sweeps take C's lower and upper
    /// blocks with A's (A holds the stencils' diagonal blocks).
    pub fn solve_with(
        &mut self,
        a: &BlockMatrix,
        extra: &Stencils,
        b: &Vec3s,
        x: &mut Vec3s,
        fixed: &[bool],
    ) -> Result<CgReport, CgError> {
        let settings = self.settings;
        if settings.solver != SolverKind::Auto {
            return self.solve_kind(a, extra, b, x, fixed);
        }
        // Block-SSOR CG within a budget, then the direct solver from its iterate.
        let budget = AUTO_SWITCH_ITERATIONS.min(settings.max_iterations);
        // Within the budget an unconverged answer is accepted only when no second
        // phase can follow (a `cg_max_iterations` at or below the budget).
        let last = budget == settings.max_iterations;
        self.settings = CgSettings {
            solver: SolverKind::Cg,
            max_iterations: budget,
            accept_unconverged: settings.accept_unconverged && last,
            ..settings
        };
        let first = self.solve_kind(a, extra, b, x, fixed);
        let out = match first {
            Err(CgError::NoConvergence { iterations, .. }) if !last => {
                self.settings = CgSettings {
                    solver: SolverKind::Cholesky,
                    max_iterations: settings.max_iterations - iterations,
                    ..settings
                };
                match self.solve_kind(a, extra, b, x, fixed) {
                    Ok(report) => Ok(CgReport { iterations: report.iterations + iterations, ..report }),
                    Err(CgError::NoConvergence { iterations: more, residual }) => {
                        Err(CgError::NoConvergence { iterations: more + iterations, residual })
                    }
                    Err(e) => Err(e),
                }
            }
            other => other,
        };
        self.settings = settings;
        out
    }

    /// [`Cg::solve_with`] by the kind `settings.solver` names (not `Auto`).
    fn solve_kind(
        &mut self,
        a: &BlockMatrix,
        extra: &Stencils,
        b: &Vec3s,
        x: &mut Vec3s,
        fixed: &[bool],
    ) -> Result<CgReport, CgError> {
        let n = a.rows();
        debug_assert!(extra.is_indexed(n), "stencils must be indexed (Stencils::index) before a solve");
        for v in [&mut self.r, &mut self.z, &mut self.p, &mut self.q] {
            if v.len() != n {
                *v = Vec3s::zeros(n);
            }
        }
        let is_fixed = |i: usize| fixed.get(i).copied().unwrap_or(false);
        let t0 = Instant::now();
        let kind = self.settings.solver;
        let direct = kind == SolverKind::Cholesky;
        if direct {
            self.direct.factorize(a, fixed).map_err(|e| match e {
                FactorError::NotPositiveDefinite { row } => CgError::NotPositivePivot { row },
                FactorError::Failed => CgError::FactorisationFailed,
            })?;
        }
        let gauss_seidel = kind == SolverKind::Cg;
        let omega = SSOR_OMEGA;
        // (The direct solver needs no diagonal blocks of its own.) Rows in
        // parallel runs: each row's blocks depend on its diagonal block alone.
        let rows = if direct { 0 } else { n };
        let ssor_rows = if gauss_seidel { rows } else { 0 };
        for (v, len) in [(&mut self.precond, rows), (&mut self.dtilde, ssor_rows), (&mut self.extra, ssor_rows)] {
            v.clear();
            v.resize(len, DMat3::ZERO);
        }
        {
            use rayon::prelude::*;
            let size = crate::par::block_len(n);
            let fill = |first: usize, precond: &mut [DMat3], dtilde: &mut [DMat3], extra: &mut [DMat3]| {
                for (k, p) in precond.iter_mut().enumerate() {
                    let d = a.diagonal(first + k);
                    let (inv, dt) = positive_block(d);
                    if gauss_seidel {
                        let dt = dt * (1.0 / omega);
                        *p = inv * omega;
                        dtilde[k] = dt;
                        extra[k] = dt * 2.0 - d;
                    } else {
                        *p = inv;
                    }
                }
            };
            if gauss_seidel {
                self.precond
                    .par_chunks_mut(size)
                    .zip(self.dtilde.par_chunks_mut(size))
                    .zip(self.extra.par_chunks_mut(size))
                    .enumerate()
                    .for_each(|(c, ((p, d), e))| fill(c * size, p, d, e));
            } else {
                self.precond.par_chunks_mut(size).enumerate().for_each(|(c, p)| fill(c * size, p, &mut [], &mut []));
            }
        }
        let seconds_setup = t0.elapsed().as_secs_f64();

        let mut b_norm2 = 0.0;
        for i in 0..n {
            if is_fixed(i) {
                x.set(i, DVec3::ZERO);
            } else {
                let bi = b.get(i);
                if !bi.is_finite() {
                    return Err(CgError::NonFinite { particle: i });
                }
                b_norm2 += bi.length_squared();
            }
        }
        let b_norm = b_norm2.sqrt();
        if b_norm == 0.0 {
            x.fill(DVec3::ZERO);
            return Ok(CgReport { seconds_setup, ..CgReport::default() });
        }
        let goal = self.settings.tolerance * b_norm;
        if gauss_seidel {
            if self.t.len() != n {
                self.t = Vec3s::zeros(n);
            }
            return self.solve_eisenstat(a, extra, b, x, fixed, b_norm, seconds_setup);
        }
        let mut iterations = 0;
        loop {
            // r = S (b − A x), the true residual (at the start and after every
            // pass that believes it has converged).
            let r_norm = true_residual(a, extra, b, x, fixed, &mut self.r);
            if !r_norm.is_finite() {
                return Err(CgError::NoConvergence { iterations, residual: f64::NAN });
            }
            if r_norm <= goal {
                return Ok(CgReport { iterations, residual: r_norm / b_norm, seconds_setup });
            }
            let mut rz = if direct {
                self.direct.solve(&self.r, &mut self.z)
            } else {
                precondition(&self.precond, &self.r, &mut self.z)
            };
            self.p.copy_from(&self.z);
            let mut r_norm = r_norm;
            while r_norm > goal {
                if iterations >= self.settings.max_iterations {
                    if self.settings.accept_unconverged {
                        let r_norm = true_residual(a, extra, b, x, fixed, &mut self.r);
                        return Ok(CgReport { iterations, residual: r_norm / b_norm, seconds_setup });
                    }
                    return Err(CgError::NoConvergence { iterations, residual: r_norm / b_norm });
                }
                iterations += 1;
                a.mul(&self.p, &mut self.q);
                extra.add_product(&self.p, &mut self.q);
                for i in 0..n {
                    if is_fixed(i) {
                        self.q.set(i, DVec3::ZERO);
                    }
                }
                let p_ap = dot(&self.p, &self.q);
                if p_ap.is_nan() || p_ap <= 0.0 {
                    let p2 = dot(&self.p, &self.p);
                    return Err(CgError::NotPositiveDefinite { iteration: iterations, curvature: p_ap / p2 });
                }
                let alpha = rz / p_ap;
                let mut r2 = 0.0;
                for i in 0..n {
                    x.set(i, x.get(i) + self.p.get(i) * alpha);
                    let ri = self.r.get(i) - self.q.get(i) * alpha;
                    r2 += ri.length_squared();
                    self.r.set(i, ri);
                }
                r_norm = r2.sqrt();
                if !r_norm.is_finite() {
                    return Err(CgError::NoConvergence { iterations, residual: f64::NAN });
                }
                if r_norm <= goal {
                    break;
                }
                let rz_new = if direct {
                    self.direct.solve(&self.r, &mut self.z)
                } else {
                    precondition(&self.precond, &self.r, &mut self.z)
                };
                let beta = rz_new / rz;
                rz = rz_new;
                for i in 0..n {
                    self.p.set(i, self.z.get(i) + self.p.get(i) * beta);
                }
            }
        }
    }

    /// Conjugate gradients preconditioned by block SSOR,
    /// M ∝ (D̃ + L) D̃⁻¹ (D̃ + Lᵀ) with D̃ the diagonal blocks over ω
    /// ([`SSOR_OMEGA`]), in Eisenstat's form (Eisenstat 1981, "Efficient
    /// implementation of a class of preconditioned conjugate gradient methods"):
    /// CG runs on Â = F⁻¹ A B⁻¹ with F = D̃ + L, B = D̃ + Lᵀ, preconditioned by D̃,
    /// which is the same iteration as M-preconditioned CG on A. Since
    /// A = F + B − E with E = 2D̃ − D, a product Â p = t + F⁻¹ (p − E t) with
    /// t = B⁻¹ p costs one backward and one forward sweep, that is one pass over the
    /// matrix, where the plain form costs two (the product and the two sweeps of
    /// M⁻¹). x is updated by α t directly. The iteration's residual is
    /// r̂ = F⁻¹ r; ‖r‖ is estimated from it by the ratio ‖r‖/‖r̂‖ at the start,
    /// and whenever the estimate meets the tolerance the true residual is computed
    /// afresh. If that misses the tolerance the first time, the iteration goes on
    /// with the ratio measured then (on the swinging cloth about half the first
    /// checks miss, by a little); a second miss restarts the iteration from the
    /// true residual.
    ///
    /// **Parallel sweeps.** The rows are cut into runs ([`domain_rows`], a function
    /// of the row count alone). Rows coupled to a later run (by a block of A or a
    /// contact stencil) form the separator S; the sweeps take the rows in the
    /// order "every run's other rows, then S" (L is the block triangle below the
    /// diagonal in that order). Rows of different runs outside S share no block, so
    /// each run's part of a sweep, and its vector updates and partial dot products,
    /// is a task of its own; S (the rows along the cuts: 3 % of a 64² cloth) is swept
    /// on one thread, before the runs in the backward sweep and after them in the
    /// forward one. Partial sums are added in run order, S last. This is block SSOR
    /// of A with its rows renumbered, so it keeps the coupling across the cuts, and
    /// the arithmetic never depends on the thread count. With one run (fewer than
    /// 2 × [`DOMAIN_MIN_ROWS`] rows) S is empty and the order is the rows' own.
    #[allow(clippy::too_many_arguments)]
    fn solve_eisenstat(
        &mut self,
        a: &BlockMatrix,
        extra: &Stencils,
        b: &Vec3s,
        x: &mut Vec3s,
        fixed: &[bool],
        b_norm: f64,
        seconds_setup: f64,
    ) -> Result<CgReport, CgError> {
        use rayon::prelude::*;
        let n = a.rows();
        let goal = self.settings.tolerance * b_norm;
        let size = self.order.split(a, extra, domain_rows(n));
        let runs = n.div_ceil(size).max(1);
        self.partial.clear();
        self.partial.resize(runs, [0.0; 2]);
        let sum = |partial: &[[f64; 2]], k: usize| partial.iter().fold(0.0, |s, p| s + p[k]);
        let mut iterations = 0;
        // Each pass starts from the true residual: at the start, and again when the
        // estimate says converged but the true residual does not (the recurrence's
        // r̂ drifts from F⁻¹ r; restarting from the true one keeps it honest).
        loop {
            let r_norm = true_residual(a, extra, b, x, fixed, &mut self.q);
            if !r_norm.is_finite() {
                return Err(CgError::NoConvergence { iterations, residual: f64::NAN });
            }
            if r_norm <= goal {
                return Ok(CgReport { iterations, residual: r_norm / b_norm, seconds_setup });
            }
            // r̂ = F⁻¹ r, z = D̃ r̂, p = z.
            let (inv, order) = (&self.precond, &self.order);
            {
                let q = &self.q;
                par_rows(&mut self.r, size)
                    .for_each(|mut r| forward_runs(a, extra, inv, fixed, order, |i| q.get(i), &mut r));
                forward_separator(a, extra, inv, fixed, order, |i| q.get(i), &mut self.r, &mut self.side);
            }
            {
                let dtilde = &self.dtilde;
                par_rows(&mut self.r, size).zip(par_rows(&mut self.z, size)).zip(self.partial.par_iter_mut()).for_each(
                    |((r, mut z), part)| {
                        let (mut rz, mut rhat2) = (0.0, 0.0);
                        for i in r.range() {
                            let ri = r.get(i);
                            let zi = dtilde[i] * ri;
                            z.set(i, zi);
                            rz += ri.dot(zi);
                            rhat2 += ri.length_squared();
                        }
                        *part = [rz, rhat2];
                    },
                );
            }
            let (mut rz, rhat2) = (sum(&self.partial, 0), sum(&self.partial, 1));
            self.p.copy_from(&self.z);
            let mut ratio = if rhat2 > 0.0 { r_norm / rhat2.sqrt() } else { 1.0 };
            let mut checked = false;
            // β of the last iteration (none before the first: p = z).
            let mut beta = None;
            loop {
                if iterations >= self.settings.max_iterations {
                    let r_norm = true_residual(a, extra, b, x, fixed, &mut self.q);
                    if self.settings.accept_unconverged {
                        return Ok(CgReport { iterations, residual: r_norm / b_norm, seconds_setup });
                    }
                    return Err(CgError::NoConvergence { iterations, residual: r_norm / b_norm });
                }
                iterations += 1;
                // p = z + β p; t = B⁻¹ p: S first (on one thread), then each run.
                let order = &self.order;
                if let Some(beta) = beta {
                    for &i in &order.sep {
                        let i = i as usize;
                        self.p.set(i, self.z.get(i) + self.p.get(i) * beta);
                    }
                }
                backward_separator(a, extra, inv, fixed, order, &self.p, &mut self.side);
                // Each run in one task: its rows of t = B⁻¹ p (backward), then its
                // rows of q = F⁻¹ (p − E t) (forward) and its partial pᵀ(q + t). A
                // run's forward sweep reads only its own rows (where a row is coupled
                // to a row of an earlier run, that earlier row is in S, swept last),
                // so the task needs no other run's t: one parallel pass, not two. Then
                // S's rows of q, on one thread.
                {
                    let (z, side, e) = (&self.z, &self.side, &self.extra);
                    par_rows(&mut self.p, size)
                        .zip(par_rows(&mut self.t, size))
                        .zip(par_rows(&mut self.q, size))
                        .zip(self.partial.par_iter_mut())
                        .for_each(|(((mut p, mut t), mut q), part)| {
                            if let Some(beta) = beta {
                                for i in p.range() {
                                    if !order.in_separator(i) {
                                        p.set(i, z.get(i) + p.get(i) * beta);
                                    }
                                }
                            }
                            backward_runs(a, extra, inv, fixed, order, side, &p, &mut t);
                            forward_runs(a, extra, inv, fixed, order, |i| p.get(i) - e[i] * t.get(i), &mut q);
                            let mut p_ap = 0.0;
                            for i in q.range() {
                                if !order.in_separator(i) {
                                    p_ap += p.get(i).dot(q.get(i) + t.get(i));
                                }
                            }
                            *part = [p_ap, 0.0];
                        });
                }
                {
                    let (p, t, e) = (&self.p, &self.t, &self.extra);
                    forward_separator(
                        a,
                        extra,
                        inv,
                        fixed,
                        order,
                        |i| p.get(i) - e[i] * t.get(i),
                        &mut self.q,
                        &mut self.side,
                    );
                }
                let mut p_ap = sum(&self.partial, 0);
                for &i in &self.order.sep {
                    let i = i as usize;
                    p_ap += self.p.get(i).dot(self.q.get(i) + self.t.get(i));
                }
                // An infinite curvature is an overflow of the sweeps, which an
                // indefinite A with its stand-in diagonal blocks can cause: as
                // telling as a negative one.
                if !(p_ap > 0.0 && p_ap.is_finite()) {
                    let p2 = dot(&self.p, &self.p);
                    return Err(CgError::NotPositiveDefinite { iteration: iterations, curvature: p_ap / p2 });
                }
                let alpha = rz / p_ap;
                // x += α t, r̂ −= α (q + t), z = D̃ r̂; partial r̂ᵀz and r̂ᵀr̂.
                {
                    let (t, q, dtilde) = (&self.t, &self.q, &self.dtilde);
                    par_rows(x, size)
                        .zip(par_rows(&mut self.r, size))
                        .zip(par_rows(&mut self.z, size))
                        .zip(self.partial.par_iter_mut())
                        .for_each(|(((mut x, mut r), mut z), part)| {
                            let (mut rz_new, mut rhat2) = (0.0, 0.0);
                            for i in x.range() {
                                x.set(i, x.get(i) + t.get(i) * alpha);
                                let ri = r.get(i) - (q.get(i) + t.get(i)) * alpha;
                                r.set(i, ri);
                                let zi = dtilde[i] * ri;
                                z.set(i, zi);
                                rz_new += ri.dot(zi);
                                rhat2 += ri.length_squared();
                            }
                            *part = [rz_new, rhat2];
                        });
                }
                let (rz_new, rhat2) = (sum(&self.partial, 0), sum(&self.partial, 1));
                let rhat = rhat2.sqrt();
                if !rhat.is_finite() {
                    return Err(CgError::NoConvergence { iterations, residual: f64::NAN });
                }
                if rhat * ratio <= goal {
                    // The estimate says converged: check the true residual. If it
                    // misses, the estimate's ratio was off (‖r‖/‖r̂‖ changes as the
                    // error's make-up changes), not the recurrence: go on with the
                    // ratio measured now, keeping the Krylov space. A second miss
                    // restarts from the true residual.
                    if checked {
                        break;
                    }
                    let r_norm = true_residual(a, extra, b, x, fixed, &mut self.q);
                    if r_norm <= goal {
                        return Ok(CgReport { iterations, residual: r_norm / b_norm, seconds_setup });
                    }
                    if !r_norm.is_finite() {
                        return Err(CgError::NoConvergence { iterations, residual: f64::NAN });
                    }
                    checked = true;
                    ratio = r_norm / rhat;
                }
                beta = Some(rz_new / rz);
                rz = rz_new;
            }
        }
    }
}

/// Fewest rows of a run of the block-SSOR sweeps of [`Cg`] (see `solve_eisenstat`): a run
/// is a parallel task of two sweeps and a vector update per iteration.
pub const DOMAIN_MIN_ROWS: usize = 2048;

/// Most runs. Each cut costs iterations: the sweeps no longer carry information
/// through the whole grid in one pass (CG iterations per step on the swinging
/// 128² cloth, `wobble bench implicit`: 14.7 with one run, 16.1 with two, 17.4
/// with four, 19.6 with eight), and its rows go to the separator, swept on one
/// thread. Two runs measured best on the 2-core development machine (solve
/// 17.7 ms a step on two threads against 24.7 with four runs and 27.0 with one).
pub const MAX_DOMAINS: usize = 2;

/// Rows per run of the block-SSOR sweeps for an n-row system (a function of n
/// alone, so that the arithmetic does not depend on the thread count): n cut into
/// at most [`MAX_DOMAINS`] runs of at least [`DOMAIN_MIN_ROWS`] rows.
#[must_use]
pub fn domain_rows(n: usize) -> usize {
    let runs = (n / DOMAIN_MIN_ROWS).clamp(1, MAX_DOMAINS);
    n.div_ceil(runs).max(1)
}

/// The order of the block-SSOR sweeps: runs of rows, and the separator S
/// of rows coupled to a later run (see [`Cg::solve_eisenstat`]).
#[derive(Clone, Debug, Default)]
struct SweepOrder {
    /// Separator rows, ascending.
    sep: Vec<u32>,
    /// Per row: its position in `sep`, or [`NOT_SEPARATOR`].
    slot: Vec<u32>,
    /// Per row outside S: whether a block of A or a stencil entry left of the
    /// diagonal ([`LEFT_OF_S`]) or right of it ([`RIGHT_OF_S`]) has its column in
    /// S. Most rows have none and are swept without looking columns up in `slot`
    /// (the same terms in the same order: the results do not change).
    touches: Vec<u8>,
}

/// [`SweepOrder::touches`]: a column in S left of the diagonal.
const LEFT_OF_S: u8 = 1;
/// [`SweepOrder::touches`]: a column in S right of the diagonal.
const RIGHT_OF_S: u8 = 2;

const NOT_SEPARATOR: u32 = u32::MAX;

/// The separator may hold at most 1/`SEPARATOR_SHARE` of the rows (see
/// [`SweepOrder::split`]); a cloth's holds 1/32.
const SEPARATOR_SHARE: usize = 8;

impl SweepOrder {
    /// Finds the separator of A + stencils for runs of `size` rows, and returns the
    /// rows per run: `size`, or all rows in one run when the separator would hold
    /// more than 1/[`SEPARATOR_SHARE`] of them (a mesh whose numbering does not
    /// follow its geometry couples most rows across any cut; its S, swept on one
    /// thread, would be most of the work, in an order that converges worse).
    fn split(&mut self, a: &BlockMatrix, extra: &Stencils, size: usize) -> usize {
        let n = a.rows();
        let whole = n.max(1);
        self.sep.clear();
        self.touches.clear();
        self.slot.clear();
        self.slot.resize(n, NOT_SEPARATOR);
        if size >= n {
            return whole;
        }
        for i in 0..n {
            let run = i / size;
            // Columns ascend within a row: its last block has its largest column.
            let (s, e) = (a.row_ptr[i] as usize, a.row_ptr[i + 1] as usize);
            let coupled = (e > s && a.cols[e - 1] as usize / size > run)
                || extra.upper(i).iter().any(|&(j, _)| j as usize / size > run);
            if coupled {
                self.slot[i] = self.sep.len() as u32;
                self.sep.push(i as u32);
            }
        }
        if self.sep.len() * SEPARATOR_SHARE > n {
            for &i in &self.sep {
                self.slot[i as usize] = NOT_SEPARATOR;
            }
            self.sep.clear();
            return whole;
        }
        self.touches.clear();
        self.touches.resize(n, 0);
        let in_s = |j: usize| self.slot[j] != NOT_SEPARATOR;
        for i in 0..n {
            if in_s(i) {
                continue;
            }
            let (s, d, e) = (a.row_ptr[i] as usize, a.diag[i] as usize, a.row_ptr[i + 1] as usize);
            let left =
                a.cols[s..d].iter().any(|&j| in_s(j as usize)) || extra.lower(i).iter().any(|&(j, _)| in_s(j as usize));
            let right = a.cols[d + 1..e].iter().any(|&j| in_s(j as usize))
                || extra.upper(i).iter().any(|&(j, _)| in_s(j as usize));
            self.touches[i] = u8::from(left) * LEFT_OF_S + u8::from(right) * RIGHT_OF_S;
        }
        size
    }

    /// Whether row i (outside S) has a column in S on the side `side`
    /// ([`LEFT_OF_S`] or [`RIGHT_OF_S`]); false when there is no separator.
    #[inline]
    fn touches(&self, i: usize, side: u8) -> bool {
        self.touches.get(i).is_some_and(|t| t & side != 0)
    }

    #[inline]
    fn in_separator(&self, i: usize) -> bool {
        self.slot[i] != NOT_SEPARATOR
    }

    /// Whether there is a separator at all (more than one run).
    #[inline]
    fn cut(&self) -> bool {
        !self.sep.is_empty()
    }
}

/// The forward sweep y = F⁻¹ v over one run's rows outside the separator (those
/// of `y`, in ascending order): y_i = D̃_i⁻¹ (v_i − Σ A_ij y_j) over the blocks
/// left of the diagonal whose column is not in S (`inv` = D̃⁻¹). Fixed rows get 0
/// (and so drop out of later rows' sums). Separator rows are left as they are.
fn forward_runs(
    a: &BlockMatrix,
    extra: &Stencils,
    inv: &[DMat3],
    fixed: &[bool],
    order: &SweepOrder,
    v: impl Fn(usize) -> DVec3,
    y: &mut RowsMut<'_>,
) {
    let cut = order.cut();
    for i in y.range() {
        if cut && order.in_separator(i) {
            continue;
        }
        if fixed.get(i).copied().unwrap_or(false) {
            y.set(i, DVec3::ZERO);
            continue;
        }
        prefetch_row(a, i + PREFETCH_ROWS);
        let mut acc = v(i);
        if cut && order.touches(i, LEFT_OF_S) {
            for k in a.row_ptr[i] as usize..a.diag[i] as usize {
                let j = a.cols[k] as usize;
                if !order.in_separator(j) {
                    acc -= a.blocks[k] * y.get(j);
                }
            }
            for &(j, block) in extra.lower(i) {
                if !order.in_separator(j as usize) {
                    acc -= block * y.get(j as usize);
                }
            }
        } else {
            for k in a.row_ptr[i] as usize..a.diag[i] as usize {
                acc -= a.blocks[k] * y.get(a.cols[k] as usize);
            }
            for &(j, block) in extra.lower(i) {
                acc -= block * y.get(j as usize);
            }
        }
        y.set(i, inv[i] * acc);
    }
}

/// The forward sweep over the separator, after [`forward_runs`] has swept every
/// run: S's rows in ascending order take every other row's y and the earlier
/// S rows'. Writes y's separator rows (through `side`, S's values in order).
#[allow(clippy::too_many_arguments)]
fn forward_separator(
    a: &BlockMatrix,
    extra: &Stencils,
    inv: &[DMat3],
    fixed: &[bool],
    order: &SweepOrder,
    v: impl Fn(usize) -> DVec3,
    y: &mut Vec3s,
    side: &mut Vec<DVec3>,
) {
    side.clear();
    for &i in &order.sep {
        let i = i as usize;
        if fixed.get(i).copied().unwrap_or(false) {
            side.push(DVec3::ZERO);
            continue;
        }
        let value = |j: usize, side: &[DVec3]| {
            let s = order.slot[j];
            if s == NOT_SEPARATOR { y.get(j) } else { side[s as usize] }
        };
        let mut acc = v(i);
        for k in a.row_ptr[i] as usize..a.row_ptr[i + 1] as usize {
            let j = a.cols[k] as usize;
            // Earlier in the sweep's order: every row left of the diagonal, and
            // the rows right of it outside S.
            if j < i || (j > i && !order.in_separator(j)) {
                acc -= a.blocks[k] * value(j, side);
            }
        }
        for &(j, block) in extra.lower(i) {
            acc -= block * value(j as usize, side);
        }
        for &(j, block) in extra.upper(i) {
            if !order.in_separator(j as usize) {
                acc -= block * y.get(j as usize);
            }
        }
        side.push(inv[i] * acc);
    }
    for (&i, &value) in order.sep.iter().zip(side.iter()) {
        y.set(i as usize, value);
    }
}

/// The backward sweep t = B⁻¹ v over the separator, first: S's rows in descending
/// order take the later S rows' t (every other row comes before S in the sweep's
/// order). Leaves S's values, in order, in `side`.
fn backward_separator(
    a: &BlockMatrix,
    extra: &Stencils,
    inv: &[DMat3],
    fixed: &[bool],
    order: &SweepOrder,
    v: &Vec3s,
    side: &mut Vec<DVec3>,
) {
    side.clear();
    side.resize(order.sep.len(), DVec3::ZERO);
    for (slot, &i) in order.sep.iter().enumerate().rev() {
        let i = i as usize;
        if fixed.get(i).copied().unwrap_or(false) {
            continue;
        }
        let upper = a.diag[i] as usize + 1..a.row_ptr[i + 1] as usize;
        let acc = minus_separator(a, upper, extra.upper(i), order, side, v.get(i));
        side[slot] = inv[i] * acc;
    }
}

/// `acc` − Σ A_ij t_j over the blocks `blocks` of A (storage indices) and the
/// stencil entries `entries` whose column j is in the separator, t_j from `side`.
#[inline]
fn minus_separator(
    a: &BlockMatrix,
    blocks: std::ops::Range<usize>,
    entries: &[(u32, DMat3)],
    order: &SweepOrder,
    side: &[DVec3],
    mut acc: DVec3,
) -> DVec3 {
    for k in blocks {
        let s = order.slot[a.cols[k] as usize];
        if s != NOT_SEPARATOR {
            acc -= a.blocks[k] * side[s as usize];
        }
    }
    for &(j, block) in entries {
        let s = order.slot[j as usize];
        if s != NOT_SEPARATOR {
            acc -= block * side[s as usize];
        }
    }
    acc
}

/// The backward sweep over one run's rows outside the separator, after
/// [`backward_separator`]: rows in descending order, t_i = D̃_i⁻¹ (v_i − Σ A_ij t_j)
/// over the blocks right of the diagonal and those of S's columns (`side`). Fixed
/// rows get 0; the run's separator rows get their values from `side`.
#[allow(clippy::too_many_arguments)]
fn backward_runs(
    a: &BlockMatrix,
    extra: &Stencils,
    inv: &[DMat3],
    fixed: &[bool],
    order: &SweepOrder,
    side: &[DVec3],
    v: &RowsMut<'_>,
    t: &mut RowsMut<'_>,
) {
    let cut = order.cut();
    let value = |j: usize, t: &RowsMut<'_>| {
        let s = if cut { order.slot[j] } else { NOT_SEPARATOR };
        if s == NOT_SEPARATOR { t.get(j) } else { side[s as usize] }
    };
    for i in t.range().rev() {
        if cut && order.in_separator(i) {
            t.set(i, side[order.slot[i] as usize]);
            continue;
        }
        if fixed.get(i).copied().unwrap_or(false) {
            t.set(i, DVec3::ZERO);
            continue;
        }
        if let Some(ahead) = i.checked_sub(PREFETCH_ROWS) {
            prefetch_row(a, ahead);
        }
        let mut acc = v.get(i);
        if cut && order.touches(i, RIGHT_OF_S) {
            for k in a.diag[i] as usize + 1..a.row_ptr[i + 1] as usize {
                acc -= a.blocks[k] * value(a.cols[k] as usize, t);
            }
            for &(j, block) in extra.upper(i) {
                acc -= block * value(j as usize, t);
            }
        } else {
            for k in a.diag[i] as usize + 1..a.row_ptr[i + 1] as usize {
                acc -= a.blocks[k] * t.get(a.cols[k] as usize);
            }
            for &(j, block) in extra.upper(i) {
                acc -= block * t.get(j as usize);
            }
        }
        if cut && order.touches(i, LEFT_OF_S) {
            // S comes after every run: its blocks left of the diagonal are upper
            // blocks in the sweep's order.
            let lower = a.row_ptr[i] as usize..a.diag[i] as usize;
            acc = minus_separator(a, lower, extra.lower(i), order, side, acc);
        }
        t.set(i, inv[i] * acc);
    }
}

/// r = S (b − (A + C) x); returns ‖r‖.
fn true_residual(a: &BlockMatrix, extra: &Stencils, b: &Vec3s, x: &Vec3s, fixed: &[bool], r: &mut Vec3s) -> f64 {
    a.mul(x, r);
    extra.add_product(x, r);
    let mut r2 = 0.0;
    for i in 0..a.rows() {
        if fixed.get(i).copied().unwrap_or(false) {
            r.set(i, DVec3::ZERO);
        } else {
            let ri = b.get(i) - r.get(i);
            r2 += ri.length_squared();
            r.set(i, ri);
        }
    }
    r2.sqrt()
}

/// Rows ahead of a sweep whose blocks are prefetched (see [`prefetch_row`]).
const PREFETCH_ROWS: usize = 8;

/// Asks the CPU to bring block row `i` of `a` (its blocks and columns) into cache.
/// A sweep's rows depend on each other (row i needs the rows just solved), so the
/// out-of-order core cannot run ahead to load the next rows' blocks itself; once the
/// matrix no longer fits in cache (128² cloth: 15 MB) each row then waited for
/// memory. A hint only: no effect on results.
#[inline(always)]
fn prefetch_row(a: &BlockMatrix, i: usize) {
    #[cfg(target_arch = "x86_64")]
    if i < a.rows() {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let (s, e) = (a.row_ptr[i] as usize, a.row_ptr[i + 1] as usize);
        let blocks = a.blocks[s..e].as_ptr().cast::<i8>();
        let bytes = (e - s) * std::mem::size_of::<DMat3>();
        let mut off = 0;
        while off < bytes {
            // SAFETY: prefetching reads nothing and cannot fault; the address lies
            // within (or one line past the start of) the row's blocks.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(blocks.wrapping_add(off)) };
            off += 64;
        }
        // SAFETY: as above, for the row's column indices.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(a.cols[s..e].as_ptr().cast::<i8>()) };
    }
}

/// z = P r; returns r · z. Fixed rows have r = 0, so z = 0 there too.
fn precondition(precond: &[DMat3], r: &Vec3s, z: &mut Vec3s) -> f64 {
    let mut rz = 0.0;
    for (i, m) in precond.iter().enumerate() {
        let zi = *m * r.get(i);
        z.set(i, zi);
        rz += r.get(i).dot(zi);
    }
    rz
}

fn dot(a: &Vec3s, b: &Vec3s) -> f64 {
    (0..a.len()).map(|i| a.get(i).dot(b.get(i))).sum()
}

/// A positive definite stand-in for a diagonal block and its inverse, for the
/// preconditioners (which must themselves be positive definite): returns (P, D̃),
/// D̃ being the block (symmetrised) when it is positive definite (all leading
/// minors positive) and otherwise its diagonal (1 where that is not positive), and
/// P = D̃⁻¹, symmetrised against round-off.
fn positive_block(m: DMat3) -> (DMat3, DMat3) {
    let m1 = m.x_axis.x;
    let m2 = m.x_axis.x * m.y_axis.y - m.y_axis.x * m.x_axis.y;
    let m3 = m.determinant();
    if m1 > 0.0 && m2 > 0.0 && m3 > 0.0 && m3.is_finite() {
        let sym = (m + m.transpose()) * 0.5;
        let inv = sym.inverse();
        if inv.is_finite() {
            // Symmetrise: round-off must not make the preconditioner asymmetric.
            return ((inv + inv.transpose()) * 0.5, sym);
        }
    }
    let d = DVec3::new(m.x_axis.x, m.y_axis.y, m.z_axis.z);
    let pos = |v: f64| if v > 0.0 && v.is_finite() { v } else { 1.0 };
    let dt = DVec3::new(pos(d.x), pos(d.y), pos(d.z));
    (DMat3::from_diagonal(dt.recip()), DMat3::from_diagonal(dt))
}
