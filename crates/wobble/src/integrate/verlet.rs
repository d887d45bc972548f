//! Position Verlet with Jakobsen's drag (003; physics notes §8):
//!
//! ```text
//! x_{n+1} = (2 − δ) x_n − (1 − δ) x_{n−1} + a(x_n) h²
//! ```
//!
//! The integrator keeps each particle's previous position x_{n−1}. The state's
//! velocity is kept as a second-order estimate of v(t_{n+1}),
//! v_{n+1} = (x_{n+1} − x_n)/h + ½ h a_n, so that damping forces and metrics see
//! a true velocity.
//!
//! A history is only valid while nothing else touches the particle. When the
//! position or velocity found at the start of a step differs from the one this
//! integrator wrote (a collision moved or reflected it, a pin zeroed it, a drag or
//! the user changed it), or on the first step, or when h changes, that component
//! restarts from the Taylor start x_{n−1} = x_n − h v_n + ½ h² a_n, which is itself
//! second-order accurate. Both are compared because a collider pushes a particle
//! that is not approaching its surface out without touching its velocity. With δ = 0
//! the method is second order; Jakobsen's δ = 0.01 removes 1 % of the implied
//! velocity per step. Rotational state, if any, advances by symplectic Euler.

use super::{
    Integrator, IntegratorError, StepReport, System, advance_orientation, rotational_accelerations, vec_apply,
};
use crate::force::Loads;
use crate::model::{State, Vec3s};
use crate::par;

/// Jakobsen's default drag δ: x' = 1.99 x − 0.99 x* + a h² (003).
pub const DEFAULT_VERLET_DRAG: f64 = 0.01;

/// Position Verlet.
#[derive(Debug)]
pub struct Verlet {
    /// Drag δ in [0, 1): the fraction of the implied velocity lost per step.
    pub drag: f64,
    loads: Loads,
    x_prev: Vec3s,
    x_written: Vec3s,
    v_written: Vec3s,
    h_prev: f64,
}

impl Verlet {
    /// Verlet with drag δ (use [`DEFAULT_VERLET_DRAG`] for Jakobsen's 0.01, 0 for the
    /// plain second-order method).
    #[must_use]
    pub fn new(drag: f64) -> Self {
        Self {
            drag,
            loads: Loads::default(),
            x_prev: Vec3s::default(),
            x_written: Vec3s::default(),
            v_written: Vec3s::default(),
            h_prev: f64::NAN,
        }
    }
}

/// One axis of the Verlet update over every particle.
#[allow(clippy::too_many_arguments)]
fn axis_update(
    x: &mut [f64],
    v: &mut [f64],
    xp: &mut [f64],
    xw: &mut [f64],
    vw: &mut [f64],
    f: &[f64],
    w: &[f64],
    h: f64,
    keep: f64,
    fresh: bool,
) {
    let serial =
        |x: &mut [f64], v: &mut [f64], xp: &mut [f64], xw: &mut [f64], vw: &mut [f64], f: &[f64], w: &[f64]| {
            for i in 0..x.len() {
                let a = f[i] * w[i];
                let touched = v[i].to_bits() != vw[i].to_bits() || x[i].to_bits() != xw[i].to_bits();
                let prev = if fresh || touched { x[i] - h * v[i] + 0.5 * h * h * a } else { xp[i] };
                let next = x[i] + keep * (x[i] - prev) + h * h * a;
                let vel = (next - x[i]) / h + 0.5 * h * a;
                xp[i] = x[i];
                x[i] = next;
                xw[i] = next;
                v[i] = vel;
                vw[i] = vel;
            }
        };
    let n = x.len().min(v.len()).min(xp.len()).min(xw.len()).min(vw.len()).min(f.len()).min(w.len());
    par::for_ranges_mut([&mut x[..n], &mut v[..n], &mut xp[..n], &mut xw[..n], &mut vw[..n]], |first, c| {
        let [x, v, xp, xw, vw] = c;
        let r = first..first + x.len();
        serial(x, v, xp, xw, vw, &f[r.clone()], &w[r]);
    });
}

impl Integrator for Verlet {
    fn name(&self) -> &'static str {
        "verlet"
    }

    fn save_state(&self, out: &mut crate::checkpoint::StateWriter) {
        out.vec3s(&self.x_prev);
        out.vec3s(&self.x_written);
        out.vec3s(&self.v_written);
        out.f64(self.h_prev);
    }

    fn restore_state(
        &mut self,
        input: &mut crate::checkpoint::StateReader<'_>,
    ) -> Result<(), crate::checkpoint::RestoreError> {
        input.vec3s("Verlet's previous positions", None, &mut self.x_prev)?;
        input.vec3s("Verlet's written positions", None, &mut self.x_written)?;
        input.vec3s("Verlet's written velocities", None, &mut self.v_written)?;
        self.h_prev = input.f64("Verlet's last step")?;
        Ok(())
    }

    fn step(&mut self, sys: &mut dyn System, state: &mut State, t: f64, h: f64) -> Result<StepReport, IntegratorError> {
        let n = state.len();
        let fresh = self.x_prev.len() != n || self.h_prev.to_bits() != h.to_bits();
        if self.x_prev.len() != n {
            self.x_prev = Vec3s::zeros(n);
            self.x_written = Vec3s::zeros(n);
            self.v_written = Vec3s::zeros(n);
        }
        self.h_prev = h;
        sys.loads(state, t, &mut self.loads);
        let w = &sys.particles().inv_mass;
        let keep = 1.0 - self.drag;
        let (x, v, f) = (&mut state.x, &mut state.v, &self.loads.f);
        let (xp, xw, vw) = (&mut self.x_prev, &mut self.x_written, &mut self.v_written);
        axis_update(&mut x.x, &mut v.x, &mut xp.x, &mut xw.x, &mut vw.x, &f.x, w, h, keep, fresh);
        axis_update(&mut x.y, &mut v.y, &mut xp.y, &mut xw.y, &mut vw.y, &f.y, w, h, keep, fresh);
        axis_update(&mut x.z, &mut v.z, &mut xp.z, &mut xw.z, &mut vw.z, &f.z, w, h, keep, fresh);
        if sys.rotational() {
            rotational_accelerations(sys.particles(), state, &mut self.loads, true);
            vec_apply(&mut state.w, &self.loads.tau, move |w, a| w + h * a);
            for i in 0..state.len() {
                state.q[i] = advance_orientation(state.q[i], state.w.get(i), h);
            }
        }
        Ok(StepReport::default())
    }
}
