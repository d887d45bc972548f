//! [`Motion`]: a prescribed displacement over time, shared by drivers and moving
//! colliders.

use std::f64::consts::TAU;

use glam::DVec3;

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
    /// Displacement at time `t` (s), m.
    #[must_use]
    pub fn offset(&self, t: f64) -> DVec3 {
        match *self {
            Motion::Static => DVec3::ZERO,
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
            Motion::Static => DVec3::ZERO,
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
