//! Chain or rope: particles on a straight line joined by structural springs, and
//! optionally bend springs skipping one particle.

use glam::DVec3;

use super::{BuildError, WorldBuilder, check, check_count, check_mass, check_spring, per_particle};
use crate::force::{SpringKind, SpringParams};

/// Chain parameters. Units: m, kg, N/m, N s/m.
#[derive(Clone, Debug, PartialEq)]
pub struct Chain {
    /// Number of particles (≥ 2).
    pub count: usize,
    /// First particle's position, m.
    pub start: DVec3,
    /// Last particle's position, m (≠ `start`).
    pub end: DVec3,
    /// Total mass, kg, spread evenly.
    pub mass: f64,
    /// Springs between neighbours.
    pub structural: SpringParams,
    /// Springs skipping one particle (`None`: a slack rope).
    pub bend: Option<SpringParams>,
    /// Collision radius, m.
    pub radius: f64,
}

impl Default for Chain {
    fn default() -> Self {
        Self {
            count: 20,
            start: DVec3::ZERO,
            end: DVec3::new(1.0, 0.0, 0.0),
            mass: 1.0,
            structural: SpringParams::linear(1000.0, 1.0),
            bend: None,
            radius: 0.0,
        }
    }
}

impl Chain {
    /// Adds the chain as body `name`; returns the index of its first particle.
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<usize, BuildError> {
        check(self.count >= 2, name, "count", self.count, "needs at least 2 particles")?;
        check(
            self.start.is_finite() && self.end.is_finite() && self.start != self.end,
            name,
            "end",
            self.end,
            "must differ from start",
        )?;
        check_count(name, "count", &[self.count])?;
        check_mass(name, "mass", self.mass)?;
        check_spring(name, "structural", &self.structural)?;
        if let Some(bend) = &self.bend {
            check_spring(name, "bend", bend)?;
        }
        let (first, tri_first, line_first) = (b.particle_count(), b.topology.triangles.len(), b.topology.lines.len());
        let m = per_particle(self.mass, self.count);
        for k in 0..self.count {
            let s = k as f64 / (self.count - 1) as f64;
            b.add_particle(self.start.lerp(self.end, s), DVec3::ZERO, m, self.radius);
        }
        let group = b.springs.group(name);
        let x = b.state.x.clone();
        for k in 0..self.count - 1 {
            b.springs.push_at_rest(&x, first + k, first + k + 1, self.structural, SpringKind::Structural, group);
            b.topology.lines.push([(first + k) as u32, (first + k + 1) as u32]);
        }
        if let Some(bend) = self.bend {
            for k in 0..self.count.saturating_sub(2) {
                b.springs.push_at_rest(&x, first + k, first + k + 2, bend, SpringKind::Bend, group);
            }
        }
        b.add_body(name, "chain", first, tri_first, line_first, false)?;
        Ok(first)
    }
}
