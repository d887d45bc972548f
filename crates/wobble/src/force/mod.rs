//! Force terms: everything that pushes particles.
//!
//! A force term adds forces (and torques) for a given state into [`Loads`]; it may
//! also report its potential energy, add its 3×3 Jacobian blocks (∂f/∂x, ∂f/∂v) into
//! a [`JacobianSink`] for implicit integrators, bound its stiffness for the stable
//! time-step estimate, report spring strain for metrics, and expose live-tunable
//! parameters. Each model is one file implementing [`ForceTerm`]; nothing else
//! changes when a model is added.
//!
//! Determinism: a term must produce bit-identical output for any rayon thread
//! count. Terms that run in parallel accumulate in an order fixed by the data, not by
//! the thread schedule (see [`spring`] for how the spring kernel does it).

use std::fmt::Debug;

use crate::model::{Particles, State, Vec3s};

pub mod air_drag;
pub mod attachment;
pub mod bending;
pub mod generalized;
pub mod gravity;
pub mod grid;
pub mod pointer;
pub mod pressure;
pub mod spring;
pub mod triangle_stvk;

pub use air_drag::AirDrag;
pub use attachment::Attachment;
pub use generalized::{AngularLaw, GeneralizedParams, GeneralizedSprings};
pub use gravity::Gravity;
pub use pointer::{DragSpring, DragSpringParams};
pub use pressure::Pressure;
pub use spring::{CubicLaw, SpringError, SpringKind, SpringLaw, SpringNetwork, SpringParams, SpringSet};
pub use triangle_stvk::{Membrane, TriangleStvk};

/// Forces (N) and torques (N m) on every particle, or — after division by mass and
/// inertia — linear (m/s²) and angular (rad/s²) accelerations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Loads {
    /// Force or linear acceleration per particle.
    pub f: Vec3s,
    /// Torque or angular acceleration per particle.
    pub tau: Vec3s,
}

impl Loads {
    /// Zero loads for `n` particles.
    #[must_use]
    pub fn zeros(n: usize) -> Self {
        Self { f: Vec3s::zeros(n), tau: Vec3s::zeros(n) }
    }

    /// Sets every force to zero, and every torque too when `rotational` (otherwise
    /// torques stay zero: nothing adds them). Resizes to `n` if needed.
    pub fn clear(&mut self, n: usize, rotational: bool) {
        if self.f.len() != n {
            self.f = Vec3s::zeros(n);
            self.tau = Vec3s::zeros(n);
        }
        crate::par::zero3(&mut self.f);
        if rotational {
            crate::par::zero3(&mut self.tau);
        }
    }
}

/// What a force term sees: the particles' properties, a state (not necessarily the
/// world's current one: Runge–Kutta stages pass trial states) and its time, s.
#[derive(Clone, Copy, Debug)]
pub struct ForceContext<'a> {
    /// Masses, pins, inertia.
    pub particles: &'a Particles,
    /// The state to evaluate at.
    pub state: &'a State,
    /// Simulation time of `state`, s.
    pub t: f64,
}

// The sinks the force terms write their matrices into belong to the solver.
pub use crate::solve::{JacobianSink, ScalarStiffnessSink};

/// Summary of the strain ε = (r − L)/L of a term's springs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StrainStats {
    /// Number of springs.
    pub count: usize,
    /// Σ ε.
    pub sum: f64,
    /// max ε (largest stretch; negative when all are compressed).
    pub max: f64,
    /// max |ε|.
    pub max_abs: f64,
}

impl StrainStats {
    /// Combines two summaries.
    #[must_use]
    pub fn merge(self, other: StrainStats) -> StrainStats {
        if self.count == 0 {
            return other;
        }
        if other.count == 0 {
            return self;
        }
        StrainStats {
            count: self.count + other.count,
            sum: self.sum + other.sum,
            max: self.max.max(other.max),
            max_abs: self.max_abs.max(other.max_abs),
        }
    }

    /// Mean strain, 0 when there are no springs.
    #[must_use]
    pub fn mean(&self) -> f64 {
        if self.count == 0 { 0.0 } else { self.sum / self.count as f64 }
    }
}

/// A live-tunable parameter of a force term (for sliders and `set_parameter`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Parameter {
    /// Key, unique within the term (`"structural.stiffness"`).
    pub key: String,
    /// Current value.
    pub value: f64,
    /// SI unit (`"N/m"`).
    pub unit: &'static str,
    /// Smallest sensible value.
    pub min: f64,
    /// Largest sensible value.
    pub max: f64,
}

/// Why a parameter could not be set.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ParameterError {
    /// No parameter with that key.
    #[error("unknown parameter `{key}`; this term has: {known}")]
    Unknown {
        /// The key asked for.
        key: String,
        /// The keys it has, comma-separated.
        known: String,
    },
    /// The value is outside what the model accepts.
    #[error("parameter `{key}` = {value} is invalid: {why}")]
    Invalid {
        /// The key.
        key: String,
        /// The rejected value.
        value: f64,
        /// What is wrong.
        why: String,
    },
}

/// A model that contributes forces. See the module docs. `Any` lets callers reach a
/// term's concrete type (`World::force_of`).
pub trait ForceTerm: std::any::Any + Send + Sync + Debug {
    /// Short name for reports and parameter keys (`"springs"`, `"gravity"`).
    fn name(&self) -> &str;

    /// Adds this term's forces and torques at `ctx.state` into `out`.
    fn add_forces(&mut self, ctx: &ForceContext<'_>, out: &mut Loads);

    /// Potential energy stored by this term at `ctx.state`, J (0 for dissipative
    /// terms).
    fn potential_energy(&self, _ctx: &ForceContext<'_>) -> f64 {
        0.0
    }

    /// Adds ∂f/∂x and ∂f/∂v blocks. Terms that return `false` from
    /// [`ForceTerm::has_jacobian`] are treated explicitly by implicit integrators.
    fn add_jacobian(&self, _ctx: &ForceContext<'_>, _sink: &mut dyn JacobianSink) {}

    /// True when [`ForceTerm::add_jacobian`] adds this term's blocks.
    fn has_jacobian(&self) -> bool {
        false
    }

    /// Adds the entries of K for terms whose force is −(K ⊗ I₃) x with K scalar and
    /// frozen at the current state (see [`ScalarStiffnessSink`]); returns `false`
    /// (adding nothing) for terms without that form, which semi-implicit schemes
    /// then treat as explicit forces.
    fn add_scalar_stiffness(&self, _ctx: &ForceContext<'_>, _sink: &mut dyn ScalarStiffnessSink) -> bool {
        false
    }

    /// Adds, per particle i, a bound on the stiffness (N/m) and damping (N s/m) the
    /// term couples to it, scaled as rows of M^{-1/2} K M^{-1/2}: for each element of
    /// stiffness k between i and j, `k * (w_i + sqrt(w_i w_j))` with w the inverse
    /// masses. The stable time-step estimate takes the largest row (Gershgorin).
    fn add_stiffness_bound(&self, _ctx: &ForceContext<'_>, _k_row: &mut [f64], _c_row: &mut [f64]) {}

    /// Strain statistics of this term's springs, if it has any.
    fn strain(&self, _state: &State) -> Option<StrainStats> {
        None
    }

    /// Appends the particle pairs this term connects (for drawing springs).
    fn segments(&self, _out: &mut Vec<[u32; 2]>) {}

    /// Appends the rest length (m) of each segment [`ForceTerm::segments`] appends,
    /// in the same order, so that viewers can colour by strain (r − L)/L. The default
    /// appends NaN for each: unknown, viewers then measure from the first state.
    fn segment_rest_lengths(&self, out: &mut Vec<f64>) {
        let mut segments = Vec::new();
        self.segments(&mut segments);
        out.extend(std::iter::repeat_n(f64::NAN, segments.len()));
    }

    /// Model-specific measurements for reports and experiments
    /// (`[("inverted_cells", 0.0), ...]`).
    fn measures(&self, _state: &State) -> Vec<(&'static str, f64)> {
        Vec::new()
    }

    /// Element counts by label, for reports (`[("structural springs", 1984), ...]`).
    fn counts(&self) -> Vec<(String, usize)> {
        Vec::new()
    }

    /// Live-tunable parameters.
    fn parameters(&self) -> Vec<Parameter> {
        Vec::new()
    }

    /// Sets a parameter by key.
    fn set_parameter(&mut self, key: &str, _value: f64) -> Result<(), ParameterError> {
        Err(ParameterError::Unknown { key: key.to_owned(), known: known_keys(&self.parameters()) })
    }
}

/// Comma-separated keys of `params`, for error messages.
#[must_use]
pub fn known_keys(params: &[Parameter]) -> String {
    if params.is_empty() {
        return "(none)".to_owned();
    }
    params.iter().map(|p| p.key.as_str()).collect::<Vec<_>>().join(", ")
}

/// Checks that `value` is finite and not negative, for stiffness-like parameters.
pub fn require_non_negative(key: &str, value: f64) -> Result<(), ParameterError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(ParameterError::Invalid { key: key.to_owned(), value, why: "must be finite and ≥ 0".to_owned() })
    }
}
