//! Oriented particles: giving particles rotational degrees of freedom.
//!
//! Every particle already carries an orientation q and an angular velocity ω (see
//! [`crate::model::State`]); a particle rotates once it has a positive inertia. The
//! default is a solid sphere, I = 2/5 m r² about every axis (physics notes §6).

use glam::{DQuat, DVec3};

use super::{BuildError, WorldBuilder, check};
use crate::force::generalized::set_sphere_inertia;

impl WorldBuilder {
    /// Makes particles `range` oriented with the inertia of solid spheres of radius
    /// `radius` (m, > 0), or of each particle's collision radius when `None` (which
    /// must then be positive). `body` names the body in errors.
    pub fn make_oriented(
        &mut self,
        body: &str,
        range: std::ops::Range<usize>,
        radius: Option<f64>,
    ) -> Result<(), BuildError> {
        for i in range {
            let r = radius.unwrap_or(self.particles.radius[i]);
            check(
                r.is_finite() && r > 0.0,
                body,
                "inertia_radius",
                r,
                "must be positive (m): oriented particles need a radius for their inertia 2/5 m r²",
            )?;
            set_sphere_inertia(&mut self.particles, i, r);
        }
        Ok(())
    }

    /// Sets the orientation (body to world) and angular velocity (rad/s, world frame)
    /// of particle `i`.
    pub fn set_orientation(&mut self, i: usize, q: DQuat, w: DVec3) {
        self.state.q[i] = q.normalize();
        if !self.particles.pinned[i] {
            self.state.w.set(i, w);
        }
    }
}
