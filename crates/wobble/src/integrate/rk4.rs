//! Classic fourth-order Runge–Kutta:
//! y ← y + h/6 (k1 + 2 k2 + 2 k3 + k4) with k1 = f(y), k2 = f(y + h/2 k1),
//! k3 = f(y + h/2 k2), k4 = f(y + h k3).

use super::{Deriv, Integrator, IntegratorError, StepReport, System, stage, vec_apply};
use crate::model::State;

/// Classic RK4.
#[derive(Debug, Default)]
pub struct Rk4 {
    k: Deriv,
    sum: Deriv,
    base: State,
    trial: State,
}

impl Rk4 {
    /// sum += c k.
    fn accumulate(sum: &mut Deriv, k: &Deriv, c: f64, rot: bool) {
        vec_apply(&mut sum.dx, &k.dx, move |s, d| s + c * d);
        vec_apply(&mut sum.acc.f, &k.acc.f, move |s, d| s + c * d);
        if rot {
            vec_apply(&mut sum.acc.tau, &k.acc.tau, move |s, d| s + c * d);
            for (s, d) in sum.dq.iter_mut().zip(&k.dq) {
                *s += *d * c;
            }
        }
    }
}

impl Integrator for Rk4 {
    fn name(&self) -> &'static str {
        "rk4"
    }

    fn step(&mut self, sys: &mut dyn System, state: &mut State, t: f64, h: f64) -> Result<StepReport, IntegratorError> {
        let rot = sys.rotational();
        self.base.copy_stage_from(state, rot);
        self.trial.copy_stage_from(state, rot);
        // k1
        self.sum.eval(sys, &self.base, t);
        stage(&mut self.trial, &self.base, 0.5 * h, &self.sum, rot);
        // k2
        self.k.eval(sys, &self.trial, t + 0.5 * h);
        Self::accumulate(&mut self.sum, &self.k, 2.0, rot);
        stage(&mut self.trial, &self.base, 0.5 * h, &self.k, rot);
        // k3
        self.k.eval(sys, &self.trial, t + 0.5 * h);
        Self::accumulate(&mut self.sum, &self.k, 2.0, rot);
        stage(&mut self.trial, &self.base, h, &self.k, rot);
        // k4
        self.k.eval(sys, &self.trial, t + h);
        Self::accumulate(&mut self.sum, &self.k, 1.0, rot);
        stage(state, &self.base, h / 6.0, &self.sum, rot);
        Ok(StepReport::default())
    }
}
