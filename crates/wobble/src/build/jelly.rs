//! A jelly cube (001 §4): a lattice of oriented particles joined along its edges
//! only. With generalized springs the edges resist bending and twisting, so the cube
//! keeps its shape without the diagonal springs a plain spring lattice needs; with
//! plain springs ([`GeneralizedParams::plain`]) the same lattice has no shear
//! resistance and folds.

use glam::DVec3;

use super::lattice::{Lattice, LatticeHandle};
use super::oriented::{default_across, generalize_springs};
use super::{BuildError, WorldBuilder, check};
use crate::force::{GeneralizedParams, SpringParams};

/// Jelly cube parameters. Units: m, kg.
#[derive(Clone, Debug, PartialEq)]
pub struct JellyCube {
    /// Particles along x, y, z (each ≥ 2).
    pub n: [usize; 3],
    /// Edge length of a cell, m.
    pub spacing: f64,
    /// Position of particle (0, 0, 0), the minimum corner, m.
    pub origin: DVec3,
    /// Total mass, kg.
    pub mass: f64,
    /// Particle radius, m (> 0): collision radius and inertia 2/5 m r².
    pub radius: f64,
    /// The edge springs.
    pub springs: GeneralizedParams,
}

impl Default for JellyCube {
    fn default() -> Self {
        Self {
            n: [4, 4, 4],
            spacing: 0.1,
            origin: DVec3::ZERO,
            mass: 1.0,
            radius: 0.02,
            springs: GeneralizedParams::new(2000.0, 1.0, 0.5, 0.5).with_angular_damping(0.002, 0.002),
        }
    }
}

impl JellyCube {
    /// Adds the cube as body `name` with its own generalized-spring term.
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<LatticeHandle, BuildError> {
        check(self.radius.is_finite() && self.radius > 0.0, name, "radius", self.radius, "must be positive (m)")?;
        let lattice = Lattice {
            n: self.n,
            spacing: self.spacing,
            origin: self.origin,
            mass: self.mass,
            structural: SpringParams::linear(self.springs.stretch, self.springs.damping),
            shear: None,
            bend: None,
            radius: self.radius,
        };
        let handle = lattice.build(b, name)?;
        let range = handle.first..b.particle_count();
        b.make_oriented(name, range, None)?;
        let rest = b.state.clone();
        let term = generalize_springs(b, name, self.springs, &rest, default_across)?;
        b.add_force(term);
        b.topology.bodies[handle.body].kind = "jelly-cube".to_owned();
        Ok(handle)
    }
}
