//! Uniform gravity: f_i = m_i g.

use glam::DVec3;

use super::{ForceContext, ForceTerm, Loads, Parameter, ParameterError};

/// Standard gravity, m/s² (default downward acceleration).
pub const STANDARD_GRAVITY: f64 = 9.81;

/// Uniform gravitational field.
#[derive(Clone, Debug, PartialEq)]
pub struct Gravity {
    /// Acceleration, m/s² (default `(0, -9.81, 0)`).
    pub g: DVec3,
}

impl Default for Gravity {
    fn default() -> Self {
        Self { g: DVec3::new(0.0, -STANDARD_GRAVITY, 0.0) }
    }
}

impl ForceTerm for Gravity {
    fn name(&self) -> &str {
        "gravity"
    }

    fn add_forces(&mut self, ctx: &ForceContext<'_>, out: &mut Loads) {
        let m = &ctx.particles.mass;
        for (axis, g) in [(&mut out.f.x, self.g.x), (&mut out.f.y, self.g.y), (&mut out.f.z, self.g.z)] {
            if g != 0.0 {
                crate::par::apply(axis, m, move |f, m| f + m * g);
            }
        }
    }

    /// U = −Σ m_i g · x_i (zero at the origin).
    fn potential_energy(&self, ctx: &ForceContext<'_>) -> f64 {
        let x = &ctx.state.x;
        ctx.particles.mass.iter().enumerate().map(|(i, m)| -m * self.g.dot(x.get(i))).sum()
    }

    /// A constant force: both Jacobians vanish, so there is nothing to add.
    fn has_jacobian(&self) -> bool {
        true
    }

    fn parameters(&self) -> Vec<Parameter> {
        vec![Parameter { key: "g".into(), value: -self.g.y, unit: "m/s²", min: 0.0, max: 30.0 }]
    }

    /// `g` sets the downward (−y) magnitude.
    fn set_parameter(&mut self, key: &str, value: f64) -> Result<(), ParameterError> {
        if key != "g" {
            return Err(ParameterError::Unknown { key: key.into(), known: "g".into() });
        }
        if !value.is_finite() {
            return Err(ParameterError::Invalid { key: key.into(), value, why: "must be finite".into() });
        }
        self.g = DVec3::new(0.0, -value, 0.0);
        Ok(())
    }
}
