//! Explicit (forward) Euler and symplectic (semi-implicit) Euler.

use super::{
    Deriv, Integrator, IntegratorError, StepReport, System, advance_orientation, rotational_accelerations, vec_apply,
};
use crate::force::Loads;
use crate::model::State;
use crate::par;

/// Forward Euler: y ← y + h f(y). First order; it adds energy to any undamped
/// oscillation, so it needs damping to be stable at all.
#[derive(Debug, Default)]
pub struct ExplicitEuler {
    k: Deriv,
}

impl Integrator for ExplicitEuler {
    fn name(&self) -> &'static str {
        "euler"
    }

    fn step(&mut self, sys: &mut dyn System, state: &mut State, t: f64, h: f64) -> Result<StepReport, IntegratorError> {
        self.k.eval(sys, state, t);
        let k = &self.k;
        vec_apply(&mut state.x, &k.dx, move |x, d| x + h * d);
        vec_apply(&mut state.v, &k.acc.f, move |v, a| v + h * a);
        if sys.rotational() {
            vec_apply(&mut state.w, &k.acc.tau, move |w, a| w + h * a);
            for (q, d) in state.q.iter_mut().zip(&k.dq) {
                *q = (*q + *d * h).normalize();
            }
        }
        Ok(StepReport::default())
    }
}

/// Symplectic Euler: v ← v + h a(x, v); x ← x + h v (with the new v). First order,
/// but it keeps the energy of an undamped oscillator bounded for h ω < 2.
#[derive(Debug, Default)]
pub struct SymplecticEuler {
    acc: Loads,
}

impl Integrator for SymplecticEuler {
    fn name(&self) -> &'static str {
        "symplectic-euler"
    }

    fn step(&mut self, sys: &mut dyn System, state: &mut State, t: f64, h: f64) -> Result<StepReport, IntegratorError> {
        // One fused pass per axis: v ← v + h (f w), x ← x + h v.
        sys.loads(state, t, &mut self.acc);
        let w = &sys.particles().inv_mass;
        par::update_vx(&mut state.v, &mut state.x, &self.acc.f, w, move |v, x, f, w| {
            let v = v + h * (f * w);
            (v, x + h * v)
        });
        if sys.rotational() {
            rotational_accelerations(sys.particles(), state, &mut self.acc, true);
            vec_apply(&mut state.w, &self.acc.tau, move |w, a| w + h * a);
            for i in 0..state.len() {
                state.q[i] = advance_orientation(state.q[i], state.w.get(i), h);
            }
        }
        Ok(StepReport::default())
    }
}
