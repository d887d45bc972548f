//! A rod or bar of oriented particles joined by generalized springs (001 §4): it
//! resists stretching, bending and, unless built from 3D springs, twisting.

use glam::{DQuat, DVec3};

use super::{BuildError, WorldBuilder, check, check_count, check_mass, per_particle};
use crate::force::{GeneralizedParams, GeneralizedSprings, generalized};
use crate::model::{OffsetSurface, State};

/// Rod parameters. Units: m, kg, N/m, N m/rad.
#[derive(Clone, Debug, PartialEq)]
pub struct Rod {
    /// Number of particles (≥ 2).
    pub count: usize,
    /// First particle's position, m.
    pub start: DVec3,
    /// Last particle's position, m (≠ `start`).
    pub end: DVec3,
    /// Total mass, kg, spread evenly.
    pub mass: f64,
    /// Particle radius, m (> 0): collision radius and the sphere of the inertia
    /// 2/5 m r².
    pub radius: f64,
    /// Springs between neighbours.
    pub springs: GeneralizedParams,
    /// A direction across the rod: the twist references and the bend axis h (a bend
    /// is positive when the rod's tangent turns counter-clockwise about h going from
    /// start to end). Default +z.
    pub across: DVec3,
    /// Radius of the tube drawn around the rod by offsetting (001 §4.3), m; 0 for
    /// none.
    pub tube_radius: f64,
    /// Initial twist, rad: after the springs are made at rest, particle k is turned
    /// about the rod's axis by this angle × k/(count − 1), so the far end starts
    /// turned by it relative to the first (001 §5's twisted bar).
    pub initial_twist: f64,
}

/// Vertices around each ring of a tube.
pub const TUBE_SIDES: usize = 8;

/// A tube of radius `radius` (m) around the polyline of particles `path` in the
/// rest shape `rest`: a ring of [`TUBE_SIDES`] vertices offset from each particle,
/// across the local tangent (`across` picks the ring's first direction).
#[must_use]
pub fn tube(body: &str, path: &[usize], rest: &State, radius: f64, across: DVec3) -> OffsetSurface {
    let mut s = OffsetSurface::new(body);
    let n = path.len();
    for k in 0..n {
        let (lo, hi) = (path[k.saturating_sub(1)], path[(k + 1).min(n - 1)]);
        let t = (rest.x.get(hi) - rest.x.get(lo)).normalize_or_zero();
        let e1 = generalized::across(t, across);
        let e2 = t.cross(e1);
        for j in 0..TUBE_SIDES {
            let phi = std::f64::consts::TAU * j as f64 / TUBE_SIDES as f64;
            s.push(path[k], (e1 * phi.cos() + e2 * phi.sin()) * radius, rest.q[path[k]]);
        }
    }
    let m = TUBE_SIDES as u32;
    for k in 0..n.saturating_sub(1) as u32 {
        for j in 0..m {
            let (a, b) = (k * m + j, k * m + (j + 1) % m);
            let (c, d) = (b + m, a + m);
            s.triangles.push([a, b, c]);
            s.triangles.push([a, c, d]);
        }
    }
    s
}

impl Default for Rod {
    fn default() -> Self {
        Self {
            count: 11,
            start: DVec3::ZERO,
            end: DVec3::X,
            mass: 1.0,
            radius: 0.02,
            springs: GeneralizedParams::new(1e4, 1.0, 1.0, 1.0),
            across: DVec3::Z,
            tube_radius: 0.0,
            initial_twist: 0.0,
        }
    }
}

impl Rod {
    /// Adds the rod as body `name` with its own generalized-spring term (named
    /// `name`); returns the index of its first particle.
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
        check(self.radius.is_finite() && self.radius > 0.0, name, "radius", self.radius, "must be positive (m)")?;
        check(self.across.is_finite(), name, "across", self.across, "must be finite")?;
        let (first, tri_first, line_first) = (b.particle_count(), b.topology.triangles.len(), b.topology.lines.len());
        let m = per_particle(self.mass, self.count);
        for k in 0..self.count {
            let s = k as f64 / (self.count - 1) as f64;
            b.add_particle(self.start.lerp(self.end, s), DVec3::ZERO, m, self.radius);
        }
        b.make_oriented(name, first..first + self.count, None)?;
        let mut term = GeneralizedSprings::new(name);
        let g = term.group(name, self.springs)?;
        for k in 0..self.count - 1 {
            term.push_at_rest(&b.particles, &b.state, first + k, first + k + 1, g, self.across, self.across)?;
            b.topology.lines.push([(first + k) as u32, (first + k + 1) as u32]);
        }
        b.add_force(term);
        check(
            self.tube_radius.is_finite() && self.tube_radius >= 0.0,
            name,
            "tube_radius",
            self.tube_radius,
            "must be ≥ 0 (m)",
        )?;
        if self.tube_radius > 0.0 {
            let path: Vec<usize> = (first..first + self.count).collect();
            b.topology.offsets.push(tube(name, &path, &b.state, self.tube_radius, self.across));
        }
        check(self.initial_twist.is_finite(), name, "initial_twist", self.initial_twist, "must be finite (rad)")?;
        let axis = (self.end - self.start).normalize();
        for k in 0..self.count {
            let s = k as f64 / (self.count - 1) as f64;
            b.state.q[first + k] = DQuat::from_axis_angle(axis, self.initial_twist * s) * b.state.q[first + k];
        }
        b.add_body(name, "rod", first, tri_first, line_first, false)?;
        Ok(first)
    }
}
