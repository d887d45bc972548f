//! The explicit midpoint method: k1 = f(y), y ← y + h f(y + h/2 k1). Second order.

use super::{Deriv, Integrator, IntegratorError, StepReport, System, stage};
use crate::model::State;

/// Explicit midpoint (second-order Runge–Kutta).
#[derive(Debug, Default)]
pub struct Midpoint {
    k1: Deriv,
    k2: Deriv,
    trial: State,
}

impl Integrator for Midpoint {
    fn name(&self) -> &'static str {
        "midpoint"
    }

    fn step(&mut self, sys: &mut dyn System, state: &mut State, t: f64, h: f64) -> Result<StepReport, IntegratorError> {
        let rot = sys.rotational();
        self.k1.eval(sys, state, t);
        self.trial.copy_stage_from(state, rot);
        stage(&mut self.trial, state, 0.5 * h, &self.k1, rot);
        self.k2.eval(sys, &self.trial, t + 0.5 * h);
        self.trial.copy_stage_from(state, rot);
        stage(state, &self.trial, h, &self.k2, rot);
        Ok(StepReport::default())
    }
}
