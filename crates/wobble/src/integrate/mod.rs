//! Integrators: advance a [`State`] by one time step h.
//!
//! An integrator sees the simulated system only through [`System`]: it can ask for
//! forces or accelerations at any trial state, for the force Jacobian, and for the
//! constraints to be projected. So every integrator works with every force model.
//! Integrators own their scratch space (trial states, stage derivatives), allocated
//! on the first step and reused afterwards: no allocation per step.
//!
//! | method | file | order | notes |
//! |---|---|---|---|
//! | explicit Euler | [`euler`] | 1 | y += h f(y); unstable for undamped oscillation |
//! | symplectic Euler | [`euler`] | 1 | v += h a(x, v); x += h v (new v) |
//! | Heun | [`heun`] | 2 | what 004 calls "midpoint": y += h/2 (k1 + k2), k2 = f(y + h k1) |
//! | midpoint | [`midpoint`] | 2 | y += h f(y + h/2 k1) |
//! | RK4 | [`rk4`] | 4 | classic Runge–Kutta |
//! | Verlet | [`verlet`] | 2 | position Verlet with Jakobsen's drag δ (003) |
//! | implicit Euler | [`implicit_euler`] | 1 | linearised backward Euler, CG solve (000, Baraff–Witkin) |
//! | semi-implicit | [`semi_implicit`] | 1 | Terzopoulos's scheme: elastic K(r) implicit, other forces explicit, CG solve (002) |
//!
//! Rotational state (oriented particles, rigid bodies) is advanced by the same
//! scheme: q' = ½ [ω, 0] ⊗ q with ω in the world frame, ω' = I⁻¹ (τ − ω × I ω), and
//! q is renormalised after every update (the stages' too; each method keeps its
//! order in q, tested on a free spinner).
//!
//! The orders are those of the unconstrained system. Constraints — pins, drivers,
//! colliders, sticks — are projected once, after the whole step (the world's stage
//! 3), not inside the stages: a driven particle sits at x + c h v in stage c rather
//! than on its prescribed path, so forces from a driver that accelerates reach a
//! higher-order method with an O(h²) error per stage, and the method is then of
//! second order at best near it.

use std::fmt;
use std::str::FromStr;

use glam::{DQuat, DVec3};

use crate::force::{JacobianSink, Loads, ScalarStiffnessSink};
use crate::model::{Particles, State, Vec3s};
use crate::par;
use crate::solve::{CgError, CgSettings};

pub mod euler;
pub mod heun;
pub mod implicit_euler;
pub mod midpoint;
pub mod rk4;
pub mod semi_implicit;
pub mod verlet;

pub use euler::{ExplicitEuler, SymplecticEuler};
pub use heun::Heun;
pub use implicit_euler::ImplicitEuler;
pub use midpoint::Midpoint;
pub use rk4::Rk4;
pub use semi_implicit::SemiImplicit;
pub use verlet::{DEFAULT_VERLET_DRAG, Verlet};

/// What an integrator may ask of the system it advances.
pub trait System {
    /// Per-particle masses, inertia and pins.
    fn particles(&self) -> &Particles;

    /// True when some particle has rotational degrees of freedom.
    fn rotational(&self) -> bool;

    /// Total forces and torques at `state` (time `t`, s) into `out` (overwritten).
    fn loads(&mut self, state: &State, t: f64, out: &mut Loads);

    /// Linear and angular accelerations at `state` into `out` (overwritten):
    /// a = f / m, α = I⁻¹ (τ − ω × I ω); zero for pinned particles.
    fn accelerations(&mut self, state: &State, t: f64, out: &mut Loads) {
        self.loads(state, t, out);
        let rotational = self.rotational();
        loads_to_accelerations(self.particles(), state, out, rotational);
    }

    /// Adds the Jacobian blocks of the total force at `state`.
    fn jacobian(&mut self, state: &State, t: f64, sink: &mut dyn JacobianSink);

    /// Adds the scalar stiffness K of the force terms of the form f = −(K ⊗ I₃) x
    /// (coefficients frozen at `state`); returns whether any term has that form.
    fn scalar_stiffness(&mut self, _state: &State, _t: f64, _sink: &mut dyn ScalarStiffnessSink) -> bool {
        false
    }

    /// Projects the constraints (collisions, drivers, sticks, limits) onto `state`
    /// at the end of a step of length `h` ending at time `t`.
    fn project(&mut self, state: &mut State, t: f64, h: f64);

    /// Adds into `out` the forces of the stiff springs that constraints put inside
    /// an implicit solve of a step of length `h` from `state` (rigid contact: see
    /// [`crate::constraint`]'s "Constraints inside an implicit solve"). Only
    /// implicit integrators call it; none by default.
    fn coupled_loads(&mut self, _state: &State, _t: f64, _h: f64, _out: &mut Loads) {}

    /// Adds the ∂f/∂x blocks of those springs.
    fn coupled_jacobian(&mut self, _state: &State, _t: f64, _h: f64, _sink: &mut dyn JacobianSink) {}
}

/// What a step reports beyond the new state (iterative solvers fill it in).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepReport {
    /// Linear-solver iterations in this step (0 for explicit methods).
    pub iterations: u32,
    /// Final relative residual of the linear solve (0 for explicit methods).
    pub residual: f64,
    /// Wall time spent evaluating forces, s (implicit methods only; 0 otherwise).
    pub seconds_forces: f64,
    /// Wall time spent assembling the Jacobian and system matrix, s (implicit only).
    pub seconds_jacobian: f64,
    /// Wall time spent setting up the linear solver's preconditioner, s (implicit
    /// only).
    pub seconds_preconditioner: f64,
    /// Wall time spent in the linear solve after the preconditioner's set-up, s
    /// (implicit only).
    pub seconds_solve: f64,
    /// True when the exact Jacobian gave an indefinite implicit system and the step
    /// was solved with the definite approximation instead (implicit Euler only).
    pub definite_fallback: bool,
    /// Newton iterations taken (implicit Euler with `newton_iterations` > 1; 0
    /// otherwise).
    pub newton_iterations: u32,
    /// Relative residual of the non-linear backward Euler system at the end of the
    /// step, ‖M Δv − h f(x + h v⁺, v⁺)‖ / max(‖h f(x, v)‖, ‖M Δv‖) over free
    /// particles (implicit Euler with `newton_iterations` > 1 or a
    /// `newton_tolerance`; 0 when not computed, as computing it costs a force
    /// evaluation).
    pub newton_residual: f64,
    /// Order of the polynomial the linear solve's starting guess was extrapolated
    /// with (implicit Euler with the `cg` solvers: 0 repeats the last step's Δv, up
    /// to 4; 0 otherwise).
    pub warm_start_order: u8,
}

/// Why a step failed.
#[derive(Clone, Debug, thiserror::Error, PartialEq)]
pub enum IntegratorError {
    /// A linear solve did not converge.
    #[error(
        "the linear solver did not converge in {iterations} iterations (relative residual {residual:.3e}); use a smaller time step, raise `cg_max_iterations` or `cg_tolerance`, or set `cg_accept_unconverged = true` to go on with the unconverged solve"
    )]
    NoConvergence {
        /// Iterations performed.
        iterations: u32,
        /// Residual reached.
        residual: f64,
    },
    /// The implicit system matrix is not positive definite.
    #[error(
        "the implicit system matrix is not positive definite (pᵀAp/|p|² = {curvature:.3e} at CG iteration {iteration}): reduce the time step, or the compression of stiff springs"
    )]
    NotPositiveDefinite {
        /// CG iteration (1-based).
        iteration: u32,
        /// pᵀ A p / |p|².
        curvature: f64,
    },
    /// A pivot of the direct solver's Cholesky factorisation was not positive.
    #[error(
        "the implicit system matrix is not positive definite (pivot {row} of its Cholesky factorisation is not positive): reduce the time step, or the compression of stiff springs"
    )]
    NotPositivePivot {
        /// Scalar row of the pivot, in the factorisation's order.
        row: usize,
    },
    /// The direct solver could not be set up.
    #[error(
        "the sparse Cholesky factorisation of the implicit system could not be set up (out of memory); use `solver = \"cg\"`"
    )]
    FactorisationFailed,
    /// A force entering the linear solve was NaN or infinite.
    #[error(
        "a force on particle {particle} is not finite (NaN or infinite), so the implicit system cannot be solved: look for coincident particles (zero-length springs) or a blow-up"
    )]
    NonFinite {
        /// The first particle with a non-finite right-hand side.
        particle: usize,
    },
}

impl From<CgError> for IntegratorError {
    fn from(e: CgError) -> Self {
        match e {
            CgError::NoConvergence { iterations, residual } => IntegratorError::NoConvergence { iterations, residual },
            CgError::NotPositiveDefinite { iteration, curvature } => {
                IntegratorError::NotPositiveDefinite { iteration, curvature }
            }
            CgError::NotPositivePivot { row } => IntegratorError::NotPositivePivot { row },
            CgError::FactorisationFailed => IntegratorError::FactorisationFailed,
            CgError::NonFinite { particle } => IntegratorError::NonFinite { particle },
        }
    }
}

/// Advances the rotational state (if any particle has inertia) by one symplectic
/// Euler step from the torques in `loads`, evaluated at the start of the step:
/// ω += h α, then q. The implicit schemes treat rotation this way.
pub(crate) fn rotate_symplectic(sys: &dyn System, state: &mut State, loads: &mut Loads, h: f64) {
    if !sys.rotational() {
        return;
    }
    rotational_accelerations(sys.particles(), state, loads, true);
    for i in 0..state.len() {
        let w = state.w.get(i) + loads.tau.get(i) * h;
        state.w.set(i, w);
        state.q[i] = advance_orientation(state.q[i], w, h);
    }
}

/// A time-stepping method. See the module docs for the list.
pub trait Integrator: Send + fmt::Debug {
    /// The method's name as used in scene files.
    fn name(&self) -> &'static str;

    /// Advances `state` from time `t` by `h` seconds. Constraints are the caller's
    /// to project afterwards unless the method projects inside its own loop.
    fn step(&mut self, sys: &mut dyn System, state: &mut State, t: f64, h: f64) -> Result<StepReport, IntegratorError>;

    /// Writes what this method carries from one step to the next and what changes
    /// its later results (not scratch space). Methods without history write nothing.
    fn save_state(&self, _out: &mut crate::checkpoint::StateWriter) {}

    /// Reads what [`Integrator::save_state`] wrote.
    fn restore_state(
        &mut self,
        _input: &mut crate::checkpoint::StateReader<'_>,
    ) -> Result<(), crate::checkpoint::RestoreError> {
        Ok(())
    }
}

/// The integrators a scene can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntegratorKind {
    /// Forward Euler.
    ExplicitEuler,
    /// Semi-implicit (symplectic) Euler.
    SymplecticEuler,
    /// Heun's method (004's "midpoint").
    Heun,
    /// Explicit midpoint.
    Midpoint,
    /// Classic fourth-order Runge–Kutta.
    Rk4,
    /// Position Verlet with Jakobsen's drag.
    Verlet,
    /// Linearised implicit Euler with a conjugate-gradient solve.
    ImplicitEuler,
    /// Terzopoulos's semi-implicit scheme for elastic grids (002).
    SemiImplicit,
}

impl IntegratorKind {
    /// Every kind, in the order of the convergence table.
    pub const ALL: [IntegratorKind; 8] = [
        IntegratorKind::ExplicitEuler,
        IntegratorKind::SymplecticEuler,
        IntegratorKind::Heun,
        IntegratorKind::Midpoint,
        IntegratorKind::Rk4,
        IntegratorKind::Verlet,
        IntegratorKind::ImplicitEuler,
        IntegratorKind::SemiImplicit,
    ];

    /// Name in scene files.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            IntegratorKind::ExplicitEuler => "euler",
            IntegratorKind::SymplecticEuler => "symplectic-euler",
            IntegratorKind::Heun => "heun",
            IntegratorKind::Midpoint => "midpoint",
            IntegratorKind::Rk4 => "rk4",
            IntegratorKind::Verlet => "verlet",
            IntegratorKind::ImplicitEuler => "implicit-euler",
            IntegratorKind::SemiImplicit => "semi-implicit",
        }
    }

    /// Global order of accuracy.
    #[must_use]
    pub fn order(self) -> u32 {
        match self {
            IntegratorKind::ExplicitEuler
            | IntegratorKind::SymplecticEuler
            | IntegratorKind::ImplicitEuler
            | IntegratorKind::SemiImplicit => 1,
            IntegratorKind::Heun | IntegratorKind::Midpoint | IntegratorKind::Verlet => 2,
            IntegratorKind::Rk4 => 4,
        }
    }

    /// Force evaluations per step.
    #[must_use]
    pub fn evaluations(self) -> u32 {
        match self {
            IntegratorKind::ExplicitEuler
            | IntegratorKind::SymplecticEuler
            | IntegratorKind::Verlet
            | IntegratorKind::ImplicitEuler
            | IntegratorKind::SemiImplicit => 1,
            IntegratorKind::Heun | IntegratorKind::Midpoint => 2,
            IntegratorKind::Rk4 => 4,
        }
    }

    /// A new integrator of this kind. `verlet_drag` is Jakobsen's δ (used by Verlet
    /// only); implicit Euler gets the default solver settings.
    #[must_use]
    pub fn create(self, verlet_drag: f64) -> Box<dyn Integrator> {
        self.create_with(verlet_drag, CgSettings::default())
    }

    /// Like [`IntegratorKind::create`], with the linear-solver settings for
    /// implicit methods.
    #[must_use]
    pub fn create_with(self, verlet_drag: f64, solver: CgSettings) -> Box<dyn Integrator> {
        match self {
            IntegratorKind::ImplicitEuler => Box::new(ImplicitEuler::new(solver)),
            IntegratorKind::SemiImplicit => Box::new(SemiImplicit::new(solver)),
            IntegratorKind::ExplicitEuler => Box::new(ExplicitEuler::default()),
            IntegratorKind::SymplecticEuler => Box::new(SymplecticEuler::default()),
            IntegratorKind::Heun => Box::new(Heun::default()),
            IntegratorKind::Midpoint => Box::new(Midpoint::default()),
            IntegratorKind::Rk4 => Box::new(Rk4::default()),
            IntegratorKind::Verlet => Box::new(Verlet::new(verlet_drag)),
        }
    }

    /// Comma-separated list of names, for error messages.
    #[must_use]
    pub fn names() -> String {
        IntegratorKind::ALL.map(|k| k.name()).join(", ")
    }
}

impl fmt::Display for IntegratorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An integrator name that is not known.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("unknown integrator `{0}`; choose one of: {list}", list = IntegratorKind::names())]
pub struct UnknownIntegrator(pub String);

impl FromStr for IntegratorKind {
    type Err = UnknownIntegrator;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IntegratorKind::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| UnknownIntegrator(s.to_owned()))
    }
}

/// Componentwise `dst = op(dst, src)` over vector arrays.
pub(crate) fn vec_apply(dst: &mut Vec3s, src: &Vec3s, op: impl Fn(f64, f64) -> f64 + Sync + Send + Copy) {
    par::apply(&mut dst.x, &src.x, op);
    par::apply(&mut dst.y, &src.y, op);
    par::apply(&mut dst.z, &src.z, op);
}

/// Componentwise `dst = op(base, k)` over vector arrays.
pub(crate) fn vec_set(dst: &mut Vec3s, base: &Vec3s, k: &Vec3s, op: impl Fn(f64, f64) -> f64 + Sync + Send + Copy) {
    par::set(&mut dst.x, &base.x, &k.x, op);
    par::set(&mut dst.y, &base.y, &k.y, op);
    par::set(&mut dst.z, &base.z, &k.z, op);
}

/// Turns forces and torques into accelerations in place: a = w f with w the inverse
/// mass (0 for pinned particles); α = I_w⁻¹ (τ − ω × I_w ω) with the world-frame
/// inertia I_w = R diag(I) Rᵀ.
pub fn loads_to_accelerations(particles: &Particles, state: &State, loads: &mut Loads, rotational: bool) {
    let w = &particles.inv_mass;
    par::apply(&mut loads.f.x, w, |f, w| f * w);
    par::apply(&mut loads.f.y, w, |f, w| f * w);
    par::apply(&mut loads.f.z, w, |f, w| f * w);
    rotational_accelerations(particles, state, loads, rotational);
}

/// Turns torques into angular accelerations in place (see
/// [`loads_to_accelerations`]); does nothing unless `rotational`.
pub fn rotational_accelerations(particles: &Particles, state: &State, loads: &mut Loads, rotational: bool) {
    if rotational {
        for i in 0..state.len() {
            if particles.inv_inertia[i] == DVec3::ZERO {
                loads.tau.set(i, DVec3::ZERO);
                continue;
            }
            let q = state.q[i];
            let omega = state.w.get(i);
            let iw = particles.world_inertia(i, q);
            let torque = loads.tau.get(i) - omega.cross(iw * omega);
            loads.tau.set(i, particles.world_inv_inertia(i, q) * torque);
        }
    }
}

/// Time derivative of an orientation q under world-frame angular velocity ω:
/// q' = ½ [ω, 0] ⊗ q.
#[inline]
#[must_use]
pub fn quat_derivative(q: DQuat, omega: DVec3) -> DQuat {
    DQuat::from_xyzw(omega.x, omega.y, omega.z, 0.0) * q * 0.5
}

/// One stage derivative of the full state: (ẋ, v̇, q̇, ω̇).
#[derive(Clone, Debug, Default)]
pub(crate) struct Deriv {
    /// ẋ = v at the stage.
    pub dx: Vec3s,
    /// v̇ = a and ω̇ = α at the stage.
    pub acc: Loads,
    /// q̇ at the stage (empty when nothing rotates).
    pub dq: Vec<DQuat>,
}

impl Deriv {
    /// Evaluates the derivative of `state` at time `t`.
    pub fn eval(&mut self, sys: &mut dyn System, state: &State, t: f64) {
        self.dx.copy_from(&state.v);
        sys.accelerations(state, t, &mut self.acc);
        if sys.rotational() {
            self.dq.clear();
            self.dq.extend(state.q.iter().zip(0..state.len()).map(|(q, i)| quat_derivative(*q, state.w.get(i))));
        }
    }
}

/// `out = base + h k` for a stage, with q renormalised. Without rotation only
/// positions and velocities are written (orientations and angular velocities
/// stay as they are: nothing changes or reads them).
pub(crate) fn stage(out: &mut State, base: &State, h: f64, k: &Deriv, rotational: bool) {
    vec_set(&mut out.x, &base.x, &k.dx, move |b, d| b + h * d);
    vec_set(&mut out.v, &base.v, &k.acc.f, move |b, d| b + h * d);
    if rotational {
        vec_set(&mut out.w, &base.w, &k.acc.tau, move |b, d| b + h * d);
        for ((q, b), d) in out.q.iter_mut().zip(&base.q).zip(&k.dq) {
            *q = (*b + *d * h).normalize();
        }
    }
}

/// Advances a unit quaternion by angular velocity ω over h:
/// q ← normalize(q + h ½ [ω, 0] q) (notes §6).
#[inline]
#[must_use]
pub fn advance_orientation(q: DQuat, omega: DVec3, h: f64) -> DQuat {
    (q + quat_derivative(q, omega) * h).normalize()
}
