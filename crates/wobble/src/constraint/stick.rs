//! Jakobsen's sticks (003; physics notes §8): rigid distance constraints relaxed
//! after each step.
//!
//! A stick between a and b with rest length L is satisfied by moving both ends
//! along the stick, in proportion to their inverse masses, so that |x_b − x_a| = L:
//!
//! ```text
//! Δ = (r − L) n,   x_a += w_a/(w_a + w_b) Δ,   x_b −= w_b/(w_a + w_b) Δ
//! ```
//!
//! with n the unit vector from a to b. This conserves linear momentum (the two
//! moves carry equal and opposite m Δx) and, since the moves lie on the line through
//! both ends, angular momentum too. Sticks are visited in order (Gauss–Seidel); one
//! pass satisfies each stick exactly at the moment it is visited and disturbs its
//! neighbours, so `World`'s constraint loop repeats the pass `constraint_iterations`
//! times together with pins, drivers and collisions, as Jakobsen does. A pinned end
//! (w = 0) stays; two pinned ends are left alone.
//!
//! Each move also changes the particle's velocity by Δx/h — the velocity a Verlet
//! integrator implies by construction. [`Sticks::correct_velocity`] = `false`
//! reproduces the naive combination with an integrator that keeps its own velocity
//! (003's explicit Euler), which then fights the constraint.

use glam::DVec3;

use super::{Constraint, ConstraintContext};
use crate::model::State;

/// A set of sticks.
#[derive(Clone, Debug, PartialEq)]
pub struct Sticks {
    /// Name for reports and parameter keys.
    pub name: String,
    /// (a, b, rest length in m) per stick, in relaxation order.
    pub sticks: Vec<(usize, usize, f64)>,
    /// Change velocities by Δx/h with every move (default true).
    pub correct_velocity: bool,
    /// Largest relative length error |r − L|/L after the last projection.
    pub last_error: f64,
}

impl Sticks {
    /// Sticks with velocity correction.
    #[must_use]
    pub fn new(name: &str, sticks: Vec<(usize, usize, f64)>) -> Self {
        Self { name: name.to_owned(), sticks, correct_velocity: true, last_error: 0.0 }
    }

    /// Largest relative length error over the sticks in `state`.
    #[must_use]
    pub fn max_error(&self, state: &State) -> f64 {
        self.sticks.iter().map(|&(a, b, l)| (state.x.get(a).distance(state.x.get(b)) - l).abs() / l).fold(0.0, f64::max)
    }
}

/// Moves particle `i` by `dx` and, when asked, its velocity by dx/h.
#[inline]
pub(crate) fn shift(state: &mut State, i: usize, dx: DVec3, inv_h: Option<f64>) {
    state.x.add(i, dx);
    if let Some(inv_h) = inv_h {
        state.v.add(i, dx * inv_h);
    }
}

impl Constraint for Sticks {
    fn name(&self) -> &str {
        &self.name
    }

    fn project(&mut self, ctx: &ConstraintContext<'_>, state: &mut State) {
        let w = &ctx.particles.inv_mass;
        let inv_h = self.correct_velocity.then(|| 1.0 / ctx.h);
        for &(a, b, rest) in &self.sticks {
            let (wa, wb) = (w[a], w[b]);
            let total = wa + wb;
            if total == 0.0 {
                continue;
            }
            let d = state.x.get(b) - state.x.get(a);
            let r = d.length();
            if r == 0.0 {
                continue;
            }
            let delta = d * ((r - rest) / r);
            shift(state, a, delta * (wa / total), inv_h);
            shift(state, b, -delta * (wb / total), inv_h);
        }
        self.last_error = self.max_error(state);
    }

    /// Largest relative length error after the last projection.
    fn stats(&self) -> Vec<(&'static str, f64)> {
        vec![("max_error", self.last_error)]
    }
}
