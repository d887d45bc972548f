//! [`Motion`]: a prescribed displacement over time, shared by drivers and moving
//! colliders.

use std::f64::consts::TAU;

use glam::{DQuat, DVec3};

/// Displacement d(t) from a starting placement; d(0) = 0 for every variant.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Motion {
    /// Does not move.
    #[default]
    Static,
    /// Constant velocity (m/s) between `start` and `stop` (s), at rest outside.
    Linear {
        /// Velocity while moving, m/s.
        velocity: DVec3,
        /// Time the motion begins, s.
        start: f64,
        /// Time the motion ends, s (`f64::INFINITY` for never).
        stop: f64,
    },
    /// Rotation about an axis through `center` at a constant rate between `start` and
    /// `stop` (s): a point x₀ goes to c + R(ω (t − start)) (x₀ − c). Only drivers
    /// can rotate; colliders translate.
    Rotate {
        /// A point on the axis, m.
        center: DVec3,
        /// Unit axis direction.
        axis: DVec3,
        /// Angular speed, rad/s (right-handed about `axis`).
        rate: f64,
        /// Time the rotation begins, s.
        start: f64,
        /// Time it ends, s.
        stop: f64,
    },
    /// d(t) = A (sin(2π f t + φ) − sin φ).
    Oscillate {
        /// Amplitude vector A, m.
        amplitude: DVec3,
        /// Frequency f, Hz.
        frequency: f64,
        /// Phase φ, rad.
        phase: f64,
    },
}

impl Motion {
    /// Where a point that started at `x0` is at time `t` (s), and its velocity.
    #[must_use]
    pub fn place(&self, x0: DVec3, t: f64) -> (DVec3, DVec3) {
        match *self {
            Motion::Rotate { center, .. } => {
                let (r, omega) = self.rotation(t);
                let x = center + r * (x0 - center);
                (x, omega.cross(x - center))
            }
            _ => (x0 + self.offset(t), self.velocity(t)),
        }
    }

    /// The rotation the motion has applied by time `t` (s) and its angular velocity
    /// (rad/s, world frame): identity and zero for translations.
    #[must_use]
    pub fn rotation(&self, t: f64) -> (DQuat, DVec3) {
        match *self {
            Motion::Rotate { axis, rate, start, stop, .. } => {
                let angle = rate * (t.min(stop) - start).max(0.0);
                let omega = if t >= start && t < stop { axis * rate } else { DVec3::ZERO };
                (DQuat::from_axis_angle(axis, angle), omega)
            }
            _ => (DQuat::IDENTITY, DVec3::ZERO),
        }
    }

    /// Displacement at time `t` (s), m (translation only: zero for rotations, whose
    /// displacement depends on the point — see [`Motion::place`]).
    #[must_use]
    pub fn offset(&self, t: f64) -> DVec3 {
        match *self {
            Motion::Static | Motion::Rotate { .. } => DVec3::ZERO,
            Motion::Linear { velocity, start, stop } => velocity * (t.min(stop) - start).max(0.0),
            Motion::Oscillate { amplitude, frequency, phase } => {
                amplitude * ((TAU * frequency * t + phase).sin() - phase.sin())
            }
        }
    }

    /// Velocity at time `t` (s), m/s.
    #[must_use]
    pub fn velocity(&self, t: f64) -> DVec3 {
        match *self {
            Motion::Static | Motion::Rotate { .. } => DVec3::ZERO,
            Motion::Linear { velocity, start, stop } => {
                if t >= start && t < stop {
                    velocity
                } else {
                    DVec3::ZERO
                }
            }
            Motion::Oscillate { amplitude, frequency, phase } => {
                amplitude * (TAU * frequency * (TAU * frequency * t + phase).cos())
            }
        }
    }
}
