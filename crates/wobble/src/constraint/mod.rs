//! Constraints: rules that project the state after (or inside) a step.
//!
//! A constraint moves particles onto its admissible set and decides their velocities:
//! colliders push particles out of planes and spheres and reflect an approaching
//! normal velocity (a particle that is not approaching is moved and keeps its
//! velocity); drivers put particles on a prescribed path with the path's velocity;
//! position-based corrections (sticks, stretch limits) change the velocity by Δx/h.
//! Integrators with history (Verlet) restart a particle's history whenever its
//! position or velocity is not what they wrote, so every integrator sees the same
//! corrected motion.
//! Pins are not constraints: a pinned particle has zero inverse mass (see
//! [`crate::model::Particles`]) and no integrator moves it.
//!
//! # Constraints inside an implicit solve
//! A projection after the step sees only masses: what it pushes against moves as
//! a free mass would over the step, not as the stiff body behind it does. At an
//! implicit integrator's large steps (h²k/m ≫ 1) that makes a heavy rigid body on a
//! stiff lattice see the lattice's top layer as loose particles, and sink through
//! it. A constraint may therefore also act as stiff springs *inside* the solve
//! ([`Constraint::add_coupled_forces`], [`Constraint::add_coupled_jacobian`]), so
//! the implicit system couples the two sides; implicit Euler asks for them (through
//! [`crate::integrate::System::coupled_loads`]), explicit integrators never do.
//! The projection after the step stays for the contacts that began within it; a
//! contact held as a spring is moved back only by what exceeds [`COUPLED_SLOP`] of
//! its radius (its penetration at rest, F h² / (κ m), is what carries the load and
//! the friction in the next solve), and the separating speed the spring gave in pushing a starting
//! penetration out is taken back ([`coupled_push_speed`]), so that position
//! errors do not become velocities.
//! Friction goes
//! into the solve too, as a damper on the tangential relative velocity whose
//! coefficient comes from the normal force and the slip at the step's start
//! ([`coupled_friction`]): a sliding contact passes the Coulomb force, a resting one
//! is held. Without it, a box resting on a lattice at 5 ms slid off its edges,
//! which push diagonally.

use std::fmt::Debug;

use crate::force::{Loads, Parameter, ParameterError};
use crate::model::{Particles, State};
use crate::solve::JacobianSink;

pub mod collider;
pub mod containment;
pub mod driver;
pub mod motion;
pub mod rigid_contact;
pub mod stick;
pub mod stretch_limit;
pub mod trimesh;

pub use collider::{Collider, Shape, Surface};
pub use containment::Containment;
pub use driver::Driver;
pub use motion::Motion;
pub use rigid_contact::RigidContact;
pub use stick::Sticks;
pub use stretch_limit::StretchLimit;
pub use trimesh::TriMesh;

// The coupled-contact helpers live with the contact stage, which uses them too.
pub use crate::contact::coupled::{
    COUPLED_SLOP, COUPLED_STICK_SPEED, COUPLED_STIFFNESS, coupled_friction, coupled_push_speed, coupled_stiffness,
    coupled_touches,
};

/// The outer product n nᵀ.
#[must_use]
pub(crate) fn outer(n: glam::DVec3) -> glam::DMat3 {
    glam::DMat3::from_cols(n * n.x, n * n.y, n * n.z)
}

/// What a constraint sees: particle properties, the time at the end of the step (s)
/// and the step length (s).
#[derive(Clone, Copy, Debug)]
pub struct ConstraintContext<'a> {
    /// Masses and pins.
    pub particles: &'a Particles,
    /// Time at the end of the step being corrected, s.
    pub t: f64,
    /// Step length, s.
    pub h: f64,
}

/// A rule that projects the state. See the module docs.
pub trait Constraint: std::any::Any + Send + Sync + Debug {
    /// Short name for reports and parameter keys.
    fn name(&self) -> &str;

    /// Projects `state` onto the constraint.
    fn project(&mut self, ctx: &ConstraintContext<'_>, state: &mut State);

    /// Adds the forces (N) and torques (N m) of the springs this constraint puts
    /// inside an implicit solve at `state` (see the module docs). A constraint that
    /// adds any also relaxes its projection of the same step so as not to undo
    /// them. Nothing by default.
    fn add_coupled_forces(&mut self, _ctx: &ConstraintContext<'_>, _state: &State, _out: &mut Loads) {}

    /// Adds the translational ∂f/∂x blocks of those springs at `state`. Nothing by
    /// default.
    fn add_coupled_jacobian(&mut self, _ctx: &ConstraintContext<'_>, _state: &State, _sink: &mut dyn JacobianSink) {}

    /// Called once as the world is assembled, with the contact stage's collision
    /// `surfaces` (each deformable body's thickness), before the first step.
    /// Nothing by default.
    fn prepare(&mut self, _particles: &Particles, _surfaces: &crate::contact::surface::Surfaces) {}

    /// Writes the state this constraint carries from one projection to the next
    /// and that changes what later ones compute (a warm start), for checkpoints.
    /// Nothing by default.
    fn save_state(&self, _out: &mut crate::checkpoint::StateWriter) {}

    /// Reads state written by [`Constraint::save_state`] of the same constraint,
    /// leaving `self` unchanged on error. Nothing by default.
    ///
    /// # Errors
    /// When the bytes do not hold such state.
    fn restore_state(&mut self, _bytes: &[u8]) -> Result<(), crate::checkpoint::RestoreError> {
        Ok(())
    }

    /// Bodies this constraint finds overlapping in the starting `state`: (body,
    /// body, depth in m), for the world's warnings. None by default.
    fn start_overlaps(
        &self,
        _particles: &Particles,
        _topology: &crate::model::Topology,
        _state: &State,
    ) -> Vec<(String, String, f64)> {
        Vec::new()
    }

    /// Figures from the last projection for reports (`[("passes", 4.0)]`).
    fn stats(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }

    /// Live-tunable parameters.
    fn parameters(&self) -> Vec<Parameter> {
        Vec::new()
    }

    /// Sets a parameter by key.
    fn set_parameter(&mut self, key: &str, _value: f64) -> Result<(), ParameterError> {
        Err(ParameterError::Unknown { key: key.to_owned(), known: crate::force::known_keys(&self.parameters()) })
    }
}
