//! Heun's method: the thesis's "midpoint" (004 ch. 5), named for what it is.
//!
//! k1 = f(y), k2 = f(y + h k1), y ← y + h/2 (k1 + k2). Second order.

use super::{Deriv, Integrator, IntegratorError, StepReport, System, stage, vec_apply};
use crate::model::State;

/// Heun's second-order method (explicit trapezoid).
#[derive(Debug, Default)]
pub struct Heun {
    k1: Deriv,
    k2: Deriv,
    trial: State,
}

impl Integrator for Heun {
    fn name(&self) -> &'static str {
        "heun"
    }

    fn step(&mut self, sys: &mut dyn System, state: &mut State, t: f64, h: f64) -> Result<StepReport, IntegratorError> {
        let rot = sys.rotational();
        self.k1.eval(sys, state, t);
        self.trial.copy_stage_from(state, rot);
        stage(&mut self.trial, state, h, &self.k1, rot);
        self.k2.eval(sys, &self.trial, t + h);
        let (k1, k2) = (&mut self.k1, &self.k2);
        vec_apply(&mut k1.dx, &k2.dx, |a, b| a + b);
        vec_apply(&mut k1.acc.f, &k2.acc.f, |a, b| a + b);
        if rot {
            vec_apply(&mut k1.acc.tau, &k2.acc.tau, |a, b| a + b);
            for (a, b) in k1.dq.iter_mut().zip(&k2.dq) {
                *a += *b;
            }
        }
        // The trial state becomes a copy of the start of the step.
        self.trial.copy_stage_from(state, rot);
        stage(state, &self.trial, 0.5 * h, k1, rot);
        Ok(StepReport::default())
    }
}
