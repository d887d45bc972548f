//! Provot's stretch limiting (003; physics notes §8): after each step, a spring
//! longer than (1 + τ) L is shortened to (1 + τ) L by moving its ends along it, in
//! proportion to their inverse masses (only the free end when the other is pinned),
//! and velocities are corrected by Δx/h to match. Shortening one spring can stretch
//! its neighbours, so the pass repeats until every spring is within the limit or an
//! iteration cap is reached (Provot: typically 5; 003 caps at 10 and reports 3–7).
//! Compressed springs are left alone. Like sticks, the moves conserve linear and
//! angular momentum.

use super::stick::shift;
use super::{Constraint, ConstraintContext};
use crate::force::{Parameter, ParameterError};
use crate::model::State;

/// Default limit τ: springs may stretch 10 % (Provot, 003).
pub const DEFAULT_STRETCH_LIMIT: f64 = 0.1;
/// Default cap on correction passes per step (003).
pub const DEFAULT_LIMIT_ITERATIONS: u32 = 10;

/// A stretch limit on a set of springs.
#[derive(Clone, Debug, PartialEq)]
pub struct StretchLimit {
    /// Name for reports and parameter keys.
    pub name: String,
    /// (a, b, rest length in m) per limited spring, in correction order.
    pub springs: Vec<(usize, usize, f64)>,
    /// Allowed relative stretch τ (default [`DEFAULT_STRETCH_LIMIT`]).
    pub tau: f64,
    /// Most passes per projection (default [`DEFAULT_LIMIT_ITERATIONS`]).
    pub max_iterations: u32,
    /// Passes the last projection needed (equal to the cap if it did not finish).
    pub last_iterations: u32,
    /// Springs over the limit when the last projection began.
    pub last_violations: usize,
}

impl StretchLimit {
    /// A limit of τ on `springs`.
    #[must_use]
    pub fn new(name: &str, springs: Vec<(usize, usize, f64)>, tau: f64, max_iterations: u32) -> Self {
        Self { name: name.to_owned(), springs, tau, max_iterations, last_iterations: 0, last_violations: 0 }
    }

    /// Largest relative stretch (r − L)/L in `state` (0 when all are compressed).
    #[must_use]
    pub fn max_stretch(&self, state: &State) -> f64 {
        self.springs.iter().map(|&(a, b, l)| (state.x.get(a).distance(state.x.get(b)) - l) / l).fold(0.0, f64::max)
    }
}

impl Constraint for StretchLimit {
    fn name(&self) -> &str {
        &self.name
    }

    fn project(&mut self, ctx: &ConstraintContext<'_>, state: &mut State) {
        let w = &ctx.particles.inv_mass;
        let inv_h = Some(1.0 / ctx.h);
        self.last_iterations = 0;
        self.last_violations = 0;
        for pass in 0..self.max_iterations {
            let mut violations = 0;
            for &(a, b, rest) in &self.springs {
                let limit = (1.0 + self.tau) * rest;
                let d = state.x.get(b) - state.x.get(a);
                let r = d.length();
                // A tiny tolerance keeps a spring just shortened to the limit from
                // counting as violated by rounding.
                if r <= limit * (1.0 + 1e-12) {
                    continue;
                }
                violations += 1;
                let (wa, wb) = (w[a], w[b]);
                let total = wa + wb;
                if total == 0.0 {
                    continue;
                }
                let delta = d * ((r - limit) / r);
                shift(state, a, delta * (wa / total), inv_h);
                shift(state, b, -delta * (wb / total), inv_h);
            }
            if pass == 0 {
                self.last_violations = violations;
            }
            if violations == 0 {
                break;
            }
            self.last_iterations = pass + 1;
        }
    }

    /// Passes used and springs over the limit before them, in the last projection.
    fn stats(&self) -> Vec<(&'static str, f64)> {
        vec![("passes", f64::from(self.last_iterations)), ("violations", self.last_violations as f64)]
    }

    fn parameters(&self) -> Vec<Parameter> {
        vec![Parameter { key: "tau".into(), value: self.tau, unit: "", min: 0.0, max: 1.0 }]
    }

    fn set_parameter(&mut self, key: &str, value: f64) -> Result<(), ParameterError> {
        if key != "tau" {
            return Err(ParameterError::Unknown { key: key.into(), known: "tau".into() });
        }
        crate::force::require_non_negative(key, value)?;
        self.tau = value;
        Ok(())
    }
}
