//! Oriented particles: giving particles rotational degrees of freedom.
//!
//! Every particle already carries an orientation q and an angular velocity ω (see
//! [`crate::model::State`]); a particle rotates once it has a positive inertia. The
//! default is a solid sphere, I = 2/5 m r² about every axis (physics notes §6).

use glam::{DQuat, DVec3};

use super::{BuildError, WorldBuilder, check};
use crate::force::generalized::set_sphere_inertia;
use crate::force::{GeneralizedParams, GeneralizedSprings, SpringKind};
use crate::model::State;

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

/// Replaces the springs of group `group` (a body's structural, shear, ... springs as
/// its builder made them) by generalized springs with `params`, their references
/// taken from `rest` (the rest shape: positions and orientations). `across` gives,
/// for a spring's rest direction, the hint for its twist reference and bend axis.
/// Returns the new force term (named `name`), which the caller adds to `b`.
pub(crate) fn generalize_springs(
    b: &mut WorldBuilder,
    name: &str,
    params: GeneralizedParams,
    rest: &State,
    across: impl Fn(DVec3) -> DVec3,
) -> Result<GeneralizedSprings, BuildError> {
    let group = b.springs.group(name);
    let pairs = b.springs.take(group, &SpringKind::ALL);
    let mut term = GeneralizedSprings::new(name);
    let g = term.group(name, params)?;
    for (p, q, _) in pairs {
        let u = (rest.x.get(q) - rest.x.get(p)).normalize_or_zero();
        let hint = across(u);
        term.push_at_rest(&b.particles, rest, p, q, g, hint, hint)?;
    }
    Ok(term)
}

/// A direction across `u` from a fixed preference list (+y, then +z): twist hints
/// for bodies without a natural one.
#[must_use]
pub fn default_across(u: DVec3) -> DVec3 {
    if u.cross(DVec3::Y).length_squared() > 1e-6 { DVec3::Y } else { DVec3::Z }
}
