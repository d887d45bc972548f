//! Rigid bodies (000's heavy ball and cube): one particle with mass, principal
//! inertia and a shape ([`crate::model::rigid`]).

use glam::{DQuat, DVec3};

use super::{BuildError, WorldBuilder, check, check_mass};
use crate::model::{Rigid, RigidShape};

/// Rigid body parameters. Units: m, kg, kg m², m/s, rad/s.
#[derive(Clone, Debug, PartialEq)]
pub struct RigidBody {
    /// Shape in the body frame (default a ball of radius 0.1 m).
    pub shape: RigidShape,
    /// Mass, kg (default 1).
    pub mass: f64,
    /// Principal moments of inertia, kg m² (`None`: the uniform solid's, from the
    /// shape and the mass).
    pub inertia: Option<DVec3>,
    /// Position of the centre of mass, m.
    pub position: DVec3,
    /// Velocity, m/s.
    pub velocity: DVec3,
    /// Orientation, body to world (normalised on build).
    pub orientation: DQuat,
    /// Angular velocity in the world frame, rad/s.
    pub angular_velocity: DVec3,
}

impl Default for RigidBody {
    fn default() -> Self {
        Self {
            shape: RigidShape::Sphere { radius: 0.1 },
            mass: 1.0,
            inertia: None,
            position: DVec3::ZERO,
            velocity: DVec3::ZERO,
            orientation: DQuat::IDENTITY,
            angular_velocity: DVec3::ZERO,
        }
    }
}

/// Where a rigid body is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RigidHandle {
    /// Body index.
    pub body: usize,
    /// Its particle.
    pub particle: usize,
}

impl RigidBody {
    /// Adds the rigid body as body `name` (kind `"rigid"`). Its particle's collision
    /// radius is the ball's radius, or the box's smallest half-extent, for
    /// colliders that treat it as a point; [`crate::constraint::RigidContact`] uses
    /// the true shape.
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<RigidHandle, BuildError> {
        let radius = match self.shape {
            RigidShape::Sphere { radius } => {
                check(radius.is_finite() && radius > 0.0, name, "radius", radius, "must be positive (m)")?;
                radius
            }
            RigidShape::Box { half } => {
                check(
                    half.is_finite() && half.min_element() > 0.0,
                    name,
                    "size",
                    half * 2.0,
                    "every edge must be positive (m)",
                )?;
                half.min_element()
            }
        };
        check_mass(name, "mass", self.mass)?;
        let inertia = self.inertia.unwrap_or_else(|| self.shape.inertia(self.mass));
        check(
            inertia.is_finite() && inertia.min_element() > 0.0,
            name,
            "inertia",
            inertia,
            "every principal moment must be positive (kg m²)",
        )?;
        // A real body's moments obey the triangle inequality I1 ≤ I2 + I3.
        let sum = inertia.element_sum();
        check(
            inertia.max_element() <= 0.5 * sum * (1.0 + 1e-12),
            name,
            "inertia",
            inertia,
            "no principal moment may exceed the sum of the other two",
        )?;
        check(self.position.is_finite(), name, "position", self.position, "must be finite (m)")?;
        check(self.velocity.is_finite(), name, "velocity", self.velocity, "must be finite (m/s)")?;
        check(
            self.angular_velocity.is_finite(),
            name,
            "angular_velocity",
            self.angular_velocity,
            "must be finite (rad/s)",
        )?;
        let q = self.orientation;
        check(q.is_finite() && q.length() > 0.0, name, "orientation", q, "must be a non-zero quaternion")?;
        let (first, tri_first, line_first) = (b.particle_count(), b.topology.triangles.len(), b.topology.lines.len());
        let particle = b.add_particle(self.position, self.velocity, self.mass, radius);
        b.particles.set_inertia(particle, inertia);
        b.state.q[particle] = q.normalize();
        b.state.w.set(particle, self.angular_velocity);
        b.topology.rigids.push(Rigid { particle, shape: self.shape });
        let body = b.add_body(name, "rigid", first, tri_first, line_first, false)?;
        Ok(RigidHandle { body, particle })
    }
}
