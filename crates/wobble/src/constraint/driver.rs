//! Drivers: particles moved along a prescribed path (an oscillating attachment point,
//! an edge pulled at a set speed). Driven particles are pinned (zero inverse mass), so
//! integrators leave them on their velocity; after each step the driver puts them
//! exactly on the path: x = x₀ + d(t), v = d'(t) (or a rotation about an axis).
//! Oriented particles (positive inertia) are turned with a rotating driver too:
//! q = R(t) q₀, ω = the driver's angular velocity, so a rotated end carries its
//! bend and twist references along (001's twisted bars).

use glam::{DQuat, DVec3};

use super::{Constraint, ConstraintContext, Motion};
use crate::model::State;

/// A set of particles moving together along a [`Motion`].
#[derive(Clone, Debug, PartialEq)]
pub struct Driver {
    /// Name for reports.
    pub name: String,
    /// Driven particles.
    pub particles: Vec<usize>,
    /// Their positions at t = 0, m.
    pub anchors: Vec<DVec3>,
    /// Their orientations at t = 0.
    pub orientations: Vec<DQuat>,
    /// The path.
    pub motion: Motion,
}

impl Driver {
    /// Drives `particles` from their positions in `state` along `motion`.
    #[must_use]
    pub fn new(name: &str, particles: Vec<usize>, state: &State, motion: Motion) -> Self {
        let anchors = particles.iter().map(|&i| state.x.get(i)).collect();
        let orientations = particles.iter().map(|&i| state.q[i]).collect();
        Self { name: name.to_owned(), particles, anchors, orientations, motion }
    }

    /// Places the driven particles for time `t` (s).
    pub fn place(&self, state: &mut State, t: f64) {
        for (&i, &x0) in self.particles.iter().zip(&self.anchors) {
            let (x, v) = self.motion.place(x0, t);
            state.x.set(i, x);
            state.v.set(i, v);
        }
    }
}

impl Constraint for Driver {
    fn name(&self) -> &str {
        &self.name
    }

    fn project(&mut self, ctx: &ConstraintContext<'_>, state: &mut State) {
        self.place(state, ctx.t);
        if matches!(self.motion, Motion::Rotate { .. }) {
            let (r, omega) = self.motion.rotation(ctx.t);
            for (&i, &q0) in self.particles.iter().zip(&self.orientations) {
                if ctx.particles.inertia[i] != DVec3::ZERO {
                    state.q[i] = (r * q0).normalize();
                    state.w.set(i, omega);
                }
            }
        }
    }
}
