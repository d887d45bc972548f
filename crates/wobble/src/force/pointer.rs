//! The user's drag spring (004's mouse spring, MKS/MKD): a zero-rest-length spring
//! from one picked particle to a cursor point that the user moves. The cursor end is
//! immovable: f = k (p − x) + c (u − v), with p and u the cursor's position and
//! velocity.

use glam::{DMat3, DVec3};

use super::{ForceContext, ForceTerm, JacobianSink, Loads, Parameter, ParameterError, require_non_negative};

/// Default drag stiffness, N/m (004 §7.2.1, MKS).
pub const DEFAULT_DRAG_STIFFNESS: f64 = 150.0;
/// Default drag damping, N s/m (004 §7.2.1, MKD).
pub const DEFAULT_DRAG_DAMPING: f64 = 25.0;

/// Largest c h / m that [`DragSpringParams::stable_for`] gives the lightest
/// particle a drag may take.
pub const DRAG_DAMPING_LIMIT: f64 = 0.2;
/// Largest k h² / m that [`DragSpringParams::stable_for`] gives it.
pub const DRAG_STIFFNESS_LIMIT: f64 = 0.05;

/// Stiffness and damping of the drag spring.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DragSpringParams {
    /// Stiffness, N/m (default [`DEFAULT_DRAG_STIFFNESS`]).
    pub stiffness: f64,
    /// Damping on the velocity relative to the cursor, N s/m (default
    /// [`DEFAULT_DRAG_DAMPING`]).
    pub damping: f64,
}

impl DragSpringParams {
    /// 004's MKS and MKD, each reduced where it would make a particle of mass
    /// `lightest` unstable on its own at time step `dt`. An explicit step of a mass m
    /// tied to a fixed point by a spring k with damping c needs h c/m and h² k/m well
    /// below 1 (a cloth particle of 0.5 g with MKD = 25 N s/m has h c/m = 10 at
    /// h = 0.2 ms: the first drag would blow the cloth up). The viewer and the Python
    /// bindings start with these; users may go beyond.
    #[must_use]
    pub fn stable_for(dt: f64, lightest: f64) -> Self {
        let default = Self::default();
        if !(lightest.is_finite() && lightest > 0.0 && dt > 0.0) {
            return default;
        }
        Self {
            stiffness: default.stiffness.min(DRAG_STIFFNESS_LIMIT * lightest / (dt * dt)),
            damping: default.damping.min(DRAG_DAMPING_LIMIT * lightest / dt),
        }
    }
}

impl Default for DragSpringParams {
    fn default() -> Self {
        Self { stiffness: DEFAULT_DRAG_STIFFNESS, damping: DEFAULT_DRAG_DAMPING }
    }
}

/// The active grab, if any.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grab {
    /// The picked particle.
    pub particle: usize,
    /// Cursor position, m.
    pub cursor: DVec3,
    /// Cursor velocity, m/s (the damping acts on the velocity relative to it).
    pub cursor_velocity: DVec3,
}

/// The drag spring force term. It is idle until a particle is grabbed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DragSpring {
    /// Spring constants.
    pub params: DragSpringParams,
    /// The current grab.
    pub grab: Option<Grab>,
}

impl ForceTerm for DragSpring {
    fn name(&self) -> &str {
        "drag"
    }

    fn add_forces(&mut self, ctx: &ForceContext<'_>, out: &mut Loads) {
        if let Some(g) = self.grab {
            let (x, v) = (ctx.state.x.get(g.particle), ctx.state.v.get(g.particle));
            out.f.add(
                g.particle,
                self.params.stiffness * (g.cursor - x) + self.params.damping * (g.cursor_velocity - v),
            );
        }
    }

    fn potential_energy(&self, ctx: &ForceContext<'_>) -> f64 {
        self.grab
            .map_or(0.0, |g| 0.5 * self.params.stiffness * (g.cursor - ctx.state.x.get(g.particle)).length_squared())
    }

    fn add_jacobian(&self, _ctx: &ForceContext<'_>, sink: &mut dyn JacobianSink) {
        if let Some(g) = self.grab {
            sink.add_dfdx(g.particle, g.particle, DMat3::from_diagonal(DVec3::splat(-self.params.stiffness)));
            sink.add_dfdv(g.particle, g.particle, DMat3::from_diagonal(DVec3::splat(-self.params.damping)));
        }
    }

    fn has_jacobian(&self) -> bool {
        true
    }

    fn add_stiffness_bound(&self, ctx: &ForceContext<'_>, k_row: &mut [f64], c_row: &mut [f64]) {
        if let Some(g) = self.grab {
            let w = ctx.particles.inv_mass[g.particle];
            k_row[g.particle] += self.params.stiffness * w;
            c_row[g.particle] += self.params.damping * w;
        }
    }

    fn parameters(&self) -> Vec<Parameter> {
        vec![
            Parameter { key: "stiffness".into(), value: self.params.stiffness, unit: "N/m", min: 0.0, max: 5000.0 },
            Parameter { key: "damping".into(), value: self.params.damping, unit: "N s/m", min: 0.0, max: 500.0 },
        ]
    }

    fn set_parameter(&mut self, key: &str, value: f64) -> Result<(), ParameterError> {
        require_non_negative(key, value)?;
        match key {
            "stiffness" => self.params.stiffness = value,
            "damping" => self.params.damping = value,
            _ => {
                return Err(ParameterError::Unknown { key: key.into(), known: "stiffness, damping".into() });
            }
        }
        Ok(())
    }
}
