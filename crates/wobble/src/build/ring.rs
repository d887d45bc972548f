//! The thesis's two-dimensional object (004 §3.4): a ring of particles in the x-y
//! plane, one layer or two concentric layers, filled with gas (its area plays the
//! volume's part). See [`super::twolayer`] for the springs, the gas and the inner
//! layer's containment.
//!
//! Particle k of a layer of radius r sits at centre + r (cos θ_k, sin θ_k, 0),
//! θ_k = 2πk/N, so the outer loop k → k + 1 runs counter-clockwise and encloses the
//! regular N-gon's area (N/2) r² sin(2π/N). Every force on a ring lies in its plane
//! when gravity does; keep scripted drag targets at z = 0.

use glam::DVec3;

use super::twolayer::{DEFAULT_INNER_RATIO, DEFAULT_RADIUS, Layers, TwoLayerHandle, TwoLayerParams, build_layers};
use super::{BuildError, WorldBuilder, check, check_count};
use crate::force::pressure::ClosedSurface;

/// Particles per layer of the thesis's ring (004 §7.1.2).
pub const DEFAULT_RING_COUNT: usize = 10;

/// A one- or two-layer ring in the x-y plane.
#[derive(Clone, Debug, PartialEq)]
pub struct Ring {
    /// Centre, m (its z is the ring's plane).
    pub center: DVec3,
    /// Outer radius, m (default [`DEFAULT_RADIUS`]).
    pub radius: f64,
    /// Inner radius, m (default [`DEFAULT_INNER_RATIO`] × radius); `None`: one layer.
    pub inner_radius: Option<f64>,
    /// Particles per layer (≥ 3; default [`DEFAULT_RING_COUNT`]).
    pub count: usize,
    /// Materials and gas.
    pub params: TwoLayerParams,
}

impl Default for Ring {
    fn default() -> Self {
        Self {
            center: DVec3::ZERO,
            radius: DEFAULT_RADIUS,
            inner_radius: Some(DEFAULT_INNER_RATIO * DEFAULT_RADIUS),
            count: DEFAULT_RING_COUNT,
            params: TwoLayerParams::default(),
        }
    }
}

impl Ring {
    /// Adds the ring as body `name` (type `ring`).
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<TwoLayerHandle, BuildError> {
        check(self.count >= 3, name, "count", self.count, "a ring needs at least 3 particles per layer")?;
        check_count(name, "count", &[self.count, 2])?;
        check(self.radius.is_finite() && self.radius > 0.0, name, "radius", self.radius, "must be positive (m)")?;
        if let Some(r) = self.inner_radius {
            check(
                r.is_finite() && r > 0.0 && r < self.radius,
                name,
                "inner_radius",
                r,
                "must be positive and below `radius` (m)",
            )?;
        }
        let n = self.count;
        let dirs: Vec<DVec3> = (0..n)
            .map(|k| {
                let theta = std::f64::consts::TAU * k as f64 / n as f64;
                DVec3::new(theta.cos(), theta.sin(), 0.0)
            })
            .collect();
        let layers = Layers {
            outer: dirs.iter().map(|d| self.center + *d * self.radius).collect(),
            inner: self.inner_radius.map(|r| dirs.iter().map(|d| self.center + *d * r).collect()),
            surface: ClosedSurface::Loop((0..n as u32).map(|k| [k, (k + 1) % n as u32]).collect()),
        };
        build_layers(b, name, "ring", &layers, &self.params)
    }
}
