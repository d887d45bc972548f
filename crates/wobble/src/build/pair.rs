//! The thesis's one-dimensional object (004 §3.3): two particles joined by one
//! structural spring, each with its own mass (§4.7 step 1). Its single segment goes
//! into the topology's lines, so frames draw it and either end can be dragged.

use glam::DVec3;

use super::twolayer::{DEFAULT_PARTICLE_MASS, DEFAULT_STRUCTURAL_DAMPING, DEFAULT_STRUCTURAL_STIFFNESS};
use super::{BuildError, WorldBuilder, check, check_mass, check_spring};
use crate::force::{SpringKind, SpringParams};

/// Two particles and a spring.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    /// First particle, m (default the origin).
    pub start: DVec3,
    /// Second particle, m (default 0.5 m along x; the rest length is the distance).
    pub end: DVec3,
    /// Masses of the two particles, kg (default MASS, MASS).
    pub masses: [f64; 2],
    /// The spring (default KS, KD).
    pub structural: SpringParams,
    /// Collision radius of both particles, m.
    pub radius: f64,
}

impl Default for Pair {
    fn default() -> Self {
        Self {
            start: DVec3::ZERO,
            end: DVec3::new(0.5, 0.0, 0.0),
            masses: [DEFAULT_PARTICLE_MASS; 2],
            structural: SpringParams::linear(DEFAULT_STRUCTURAL_STIFFNESS, DEFAULT_STRUCTURAL_DAMPING),
            radius: 0.0,
        }
    }
}

impl Pair {
    /// Adds the pair as body `name` (type `pair`); returns its first particle.
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<usize, BuildError> {
        check_mass(name, "masses", self.masses[0])?;
        check_mass(name, "masses", self.masses[1])?;
        check_spring(name, "structural", &self.structural)?;
        check(self.start.is_finite(), name, "start", self.start, "must be finite (m)")?;
        check(self.end.is_finite(), name, "end", self.end, "must be finite (m)")?;
        check(self.start != self.end, name, "end", self.end, "must differ from `start`")?;
        check(self.radius.is_finite() && self.radius >= 0.0, name, "particle_radius", self.radius, "must be ≥ 0 (m)")?;
        let (first, tri_first, line_first) = (b.particle_count(), b.topology.triangles.len(), b.topology.lines.len());
        let a = b.add_particle(self.start, DVec3::ZERO, self.masses[0], self.radius);
        let c = b.add_particle(self.end, DVec3::ZERO, self.masses[1], self.radius);
        let group = b.springs.group(name);
        let x = b.state.x.clone();
        b.springs.push_at_rest(&x, a, c, self.structural, SpringKind::Structural, group);
        b.topology.lines.push([a as u32, c as u32]);
        b.add_body(name, "pair", first, tri_first, line_first, false)?;
        Ok(first)
    }
}
