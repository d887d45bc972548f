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
//! The projection after the step stays, for what the springs leave, and takes
//! back the separating speed the springs gave in pushing a starting penetration out
//! ([`coupled_push_speed`]), so that position errors do not become velocities.
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

/// Stiffness of the contact springs inside an implicit solve, as the multiple κ of
/// the contact's reduced mass over h² (k = κ m_r / h²; default 100; m_r is the
/// particle's mass against a collider). Raising it lets less penetration through (a
/// load F sinks in by F h² / (κ m_r)) and costs conjugate-gradient iterations (the
/// contact rows' diagonal grows by κ m_r).
pub const COUPLED_STIFFNESS: f64 = 100.0;

/// Penetration, as a fraction of the particle's radius, that the projection after
/// an implicit step leaves to the coupled contact springs (default 0.5).
pub const COUPLED_SLOP: f64 = 0.5;

/// Tangential speed, m/s, below which coupled contact friction acts as a viscous
/// damper that holds the contact (default 1 mm/s); above it the damper is weakened to
/// pass the Coulomb force μ k δ at the step's starting speed (lagged friction).
pub const COUPLED_STICK_SPEED: f64 = 1e-3;

/// Damping coefficient (N s/m) of the friction of a coupled contact with friction
/// coefficient `mu`, normal force `normal` (N) and starting tangential speed `slip`
/// (m/s): μ F / max(slip, [`COUPLED_STICK_SPEED`]), so that the force at that speed
/// never exceeds Coulomb's μ F.
#[must_use]
pub fn coupled_friction(mu: f64, normal: f64, slip: f64) -> f64 {
    mu * normal / slip.max(COUPLED_STICK_SPEED)
}

/// The separating normal speed (m/s) that a coupled spring's push out of a starting
/// penetration `depth` (m) gives in a step of `h` (s): implicit Euler moves a lone
/// particle on the spring by κ/(1 + κ) of the penetration. The projection after the
/// step takes back up to this much of a separating speed (a split impulse), so a
/// particle that starts inside a surface is put out of it without being launched.
#[must_use]
pub fn coupled_push_speed(depth: f64, h: f64) -> f64 {
    COUPLED_STIFFNESS / (1.0 + COUPLED_STIFFNESS) * depth / h
}

/// Stiffness (N/m) of a coupled contact spring between sides of total inverse mass
/// `w` (1/kg) for a step of `h` (s): κ / (w h²).
#[must_use]
pub fn coupled_stiffness(w: f64, h: f64) -> f64 {
    COUPLED_STIFFNESS / (w * h * h)
}

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
