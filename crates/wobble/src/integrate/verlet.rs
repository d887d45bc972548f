//! Position Verlet with Jakobsen's drag (003; physics notes §8):
//!
//! ```text
//! x_{n+1} = (2 − δ) x_n − (1 − δ) x_{n−1} + a(x_n) h²
//! ```
//!
//! The previous position is not stored: it is x_n − h v_n, with v_n the velocity the
//! last step left, v_n = (x_n − x_{n−1})/h. Storing it this way means a constraint
//! that moves a particle and corrects its velocity (a collision, a stick) is seen by
//! the next Verlet step exactly as by every other integrator. Rotational state, if
//! any, advances by symplectic Euler. With δ = 0 the method is second order.

use super::{Integrator, IntegratorError, StepReport, System, advance_orientation, vec_apply};
use crate::force::Loads;
use crate::model::State;

/// Jakobsen's default drag δ: x' = 1.99 x − 0.99 x* + a h² (003).
pub const DEFAULT_VERLET_DRAG: f64 = 0.01;

/// Position Verlet.
#[derive(Debug)]
pub struct Verlet {
    /// Drag δ in [0, 1): the fraction of the implied velocity lost per step.
    pub drag: f64,
    acc: Loads,
}

impl Verlet {
    /// Verlet with drag δ (use [`DEFAULT_VERLET_DRAG`] for Jakobsen's 0.01, 0 for the
    /// plain second-order method).
    #[must_use]
    pub fn new(drag: f64) -> Self {
        Self { drag, acc: Loads::default() }
    }
}

impl Integrator for Verlet {
    fn name(&self) -> &'static str {
        "verlet"
    }

    fn step(
        &mut self,
        sys: &mut dyn System,
        state: &mut State,
        t: f64,
        h: f64,
    ) -> Result<StepReport, IntegratorError> {
        sys.accelerations(state, t, &mut self.acc);
        let keep = 1.0 - self.drag;
        let h2 = h * h;
        // v becomes the displacement of this step (over h once divided).
        vec_apply(&mut state.v, &self.acc.f, move |v, a| keep * h * v + h2 * a);
        vec_apply(&mut state.x, &state.v, |x, d| x + d);
        let inv_h = 1.0 / h;
        for axis in [&mut state.v.x, &mut state.v.y, &mut state.v.z] {
            for d in axis.iter_mut() {
                *d *= inv_h;
            }
        }
        if sys.rotational() {
            vec_apply(&mut state.w, &self.acc.tau, move |w, a| w + h * a);
            for i in 0..state.len() {
                state.q[i] = advance_orientation(state.q[i], state.w.get(i), h);
            }
        }
        Ok(StepReport::default())
    }
}
