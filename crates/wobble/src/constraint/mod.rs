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

use std::fmt::Debug;

use crate::force::{Parameter, ParameterError};
use crate::model::{Particles, State};

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
