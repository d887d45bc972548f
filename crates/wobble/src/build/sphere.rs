//! Sphere surfaces: uniform (an octahedron subdivided n times and re-projected onto
//! the sphere, 004's uniform sphere) and latitude–longitude (slices and stacks, 004's
//! non-uniform sphere), plus [`Ball`], a sphere surface held in shape by a hub
//! particle at its centre.
//!
//! Uniform level n has 4·4ⁿ + 2 vertices, 12·4ⁿ edges and 8·4ⁿ faces (6/18/66,
//! 12/48/192, 8/32/128 for n = 0/1/2); a latitude–longitude sphere with s slices and
//! t stacks has s(t − 1) + 2 vertices and 2s(t − 1) faces. Both satisfy
//! V − E + F = 2. Triangles are wound counter-clockwise seen from outside.

use std::collections::HashMap;

use glam::DVec3;

use super::{BuildError, WorldBuilder, check, check_mass, check_spring, per_particle};
use crate::force::{SpringKind, SpringParams};
use crate::model::Vec3s;

/// Highest subdivision level accepted (level 6 has 16,386 vertices).
pub const MAX_LEVEL: u32 = 6;

/// How a sphere is triangulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SphereMesh {
    /// Octahedron subdivided `level` times (0..=6).
    Uniform {
        /// Subdivision level.
        level: u32,
    },
    /// Latitude–longitude grid.
    LatLong {
        /// Vertices per ring (≥ 3).
        slices: u32,
        /// Bands from pole to pole (≥ 2).
        stacks: u32,
    },
}

impl SphereMesh {
    /// Unit-sphere vertices and outward-wound triangles.
    #[must_use]
    pub fn generate(self) -> (Vec<DVec3>, Vec<[u32; 3]>) {
        match self {
            SphereMesh::Uniform { level } => uniform(level),
            SphereMesh::LatLong { slices, stacks } => lat_long(slices, stacks),
        }
    }

    /// Checks the parameters; `body` names the body for the error.
    pub fn validate(self, body: &str) -> Result<(), BuildError> {
        match self {
            SphereMesh::Uniform { level } => check(level <= MAX_LEVEL, body, "level", level, "must be 0..=6"),
            SphereMesh::LatLong { slices, stacks } => {
                check(slices >= 3, body, "slices", slices, "needs at least 3")?;
                check(stacks >= 2, body, "stacks", stacks, "needs at least 2")?;
                super::check_count(body, "slices", &[slices as usize, stacks as usize]).map(|_| ())
            }
        }
    }
}

/// Winds `t` so that its normal points away from the origin.
fn outward(v: &[DVec3], t: [u32; 3]) -> [u32; 3] {
    let [a, b, c] = t.map(|i| v[i as usize]);
    if (b - a).cross(c - a).dot(a + b + c) >= 0.0 { t } else { [t[0], t[2], t[1]] }
}

fn uniform(level: u32) -> (Vec<DVec3>, Vec<[u32; 3]>) {
    let mut v = vec![DVec3::X, -DVec3::X, DVec3::Y, -DVec3::Y, DVec3::Z, -DVec3::Z];
    // Each vertex's point on the flat octahedron |x| + |y| + |z| = 1 before the
    // projection onto the sphere: exact binary fractions, for the numbering below.
    let mut flat = v.clone();
    let mut tris: Vec<[u32; 3]> = Vec::new();
    for &(a, b) in &[(0u32, 2u32), (2, 1), (1, 3), (3, 0)] {
        for pole in [4u32, 5] {
            tris.push(outward(&v, [a, b, pole]));
        }
    }
    for _ in 0..level {
        let mut mid: HashMap<(u32, u32), u32> = HashMap::new();
        let mut next = Vec::with_capacity(tris.len() * 4);
        for t in &tris {
            let mut m = [0u32; 3];
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                let key = (a.min(b), a.max(b));
                m[k] = *mid.entry(key).or_insert_with(|| {
                    v.push((v[a as usize] + v[b as usize]).normalize());
                    flat.push(0.5 * (flat[a as usize] + flat[b as usize]));
                    (v.len() - 1) as u32
                });
            }
            next.push([t[0], m[0], m[2]]);
            next.push([m[0], t[1], m[1]]);
            next.push([m[2], m[1], t[2]]);
            next.push([m[0], m[1], m[2]]);
        }
        tris = next;
    }
    octahedral_order(&v, &flat, &tris, 1 << level)
}

/// The mesh with its vertices renumbered row by row over the octahedral map: the
/// flat octahedron unfolded onto the square [−1, 1]² (the upper half, z ≥ 0, is
/// the diamond |u| + |v| ≤ 1 with (u, v) = (x, y); each lower face folds out
/// into the corner beyond it). The subdivided faces become a regular grid of
/// spacing 1/`n` there, so numbering its points row by row (a point on the
/// square's edge, which the fold shares with a mirrored point, where first met)
/// makes an edge's two ends differ by the same amount all along a row: the
/// springs on the edges form long runs for the vectorised kernel (issue 14).
fn octahedral_order(v: &[DVec3], flat: &[DVec3], tris: &[[u32; 3]], n: u32) -> (Vec<DVec3>, Vec<[u32; 3]>) {
    // Exact binary fractions: the bits identify a point (−0 folded into +0).
    let key = |p: DVec3| (p + DVec3::ZERO).to_array().map(f64::to_bits);
    let index: HashMap<[u64; 3], u32> = flat.iter().enumerate().map(|(i, &p)| (key(p), i as u32)).collect();
    let mut new_of = vec![u32::MAX; v.len()];
    let mut order: Vec<u32> = Vec::with_capacity(v.len());
    let side = f64::from(n);
    for j in 0..=2 * n {
        for i in 0..=2 * n {
            let (u, w) = (f64::from(i) / side - 1.0, f64::from(j) / side - 1.0);
            let z = 1.0 - u.abs() - w.abs();
            let p = if z >= 0.0 {
                DVec3::new(u, w, z)
            } else {
                DVec3::new((1.0 - w.abs()) * u.signum(), (1.0 - u.abs()) * w.signum(), z)
            };
            let old = index[&key(p)];
            if new_of[old as usize] == u32::MAX {
                new_of[old as usize] = order.len() as u32;
                order.push(old);
            }
        }
    }
    debug_assert_eq!(order.len(), v.len(), "the octahedral map reaches every vertex");
    let verts = order.iter().map(|&i| v[i as usize]).collect();
    let tris = tris.iter().map(|t| t.map(|i| new_of[i as usize])).collect();
    (verts, tris)
}

fn lat_long(slices: u32, stacks: u32) -> (Vec<DVec3>, Vec<[u32; 3]>) {
    use std::f64::consts::{PI, TAU};
    let mut v = vec![DVec3::Y];
    for k in 1..stacks {
        let theta = PI * f64::from(k) / f64::from(stacks);
        for s in 0..slices {
            let phi = TAU * f64::from(s) / f64::from(slices);
            v.push(DVec3::new(theta.sin() * phi.cos(), theta.cos(), theta.sin() * phi.sin()));
        }
    }
    v.push(-DVec3::Y);
    let south = (v.len() - 1) as u32;
    let ring = |k: u32, s: u32| 1 + (k - 1) * slices + s % slices;
    let mut tris = Vec::new();
    for s in 0..slices {
        tris.push(outward(&v, [0, ring(1, s), ring(1, s + 1)]));
        tris.push(outward(&v, [south, ring(stacks - 1, s), ring(stacks - 1, s + 1)]));
        for k in 1..stacks - 1 {
            let (a, b, c, d) = (ring(k, s), ring(k, s + 1), ring(k + 1, s + 1), ring(k + 1, s));
            tris.push(outward(&v, [a, b, c]));
            tris.push(outward(&v, [a, c, d]));
        }
    }
    (v, tris)
}

/// A ball: a sphere surface with structural springs on its edges and a hub particle
/// at the centre joined to every surface particle by a radius spring.
#[derive(Clone, Debug, PartialEq)]
pub struct Ball {
    /// Centre, m.
    pub center: DVec3,
    /// Radius, m.
    pub radius: f64,
    /// Triangulation.
    pub mesh: SphereMesh,
    /// Total mass, kg (the hub gets one surface particle's share).
    pub mass: f64,
    /// Edge springs.
    pub structural: SpringParams,
    /// Hub-to-surface springs.
    pub spokes: SpringParams,
    /// Collision radius of each particle, m.
    pub particle_radius: f64,
}

impl Default for Ball {
    fn default() -> Self {
        Self {
            center: DVec3::ZERO,
            radius: 0.1,
            mesh: SphereMesh::Uniform { level: 2 },
            mass: 1.0,
            structural: SpringParams::linear(2000.0, 2.0),
            spokes: SpringParams::linear(2000.0, 2.0),
            particle_radius: 0.0,
        }
    }
}

impl Ball {
    /// Adds the ball as body `name` (surface particles first, hub last); returns the
    /// index of its first particle.
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<usize, BuildError> {
        self.mesh.validate(name)?;
        check(self.radius.is_finite() && self.radius > 0.0, name, "radius", self.radius, "must be positive (m)")?;
        check_mass(name, "mass", self.mass)?;
        check_spring(name, "structural", &self.structural)?;
        check_spring(name, "spokes", &self.spokes)?;
        let (first, tri_first, line_first) = (b.particle_count(), b.topology.triangles.len(), b.topology.lines.len());
        let (verts, tris) = self.mesh.generate();
        let m = per_particle(self.mass, verts.len() + 1);
        for p in &verts {
            b.add_particle(self.center + *p * self.radius, DVec3::ZERO, m, self.particle_radius);
        }
        let hub = b.add_particle(self.center, DVec3::ZERO, m, self.particle_radius);
        b.topology.triangles.extend(tris.iter().map(|t| t.map(|i| i + first as u32)));
        let group = b.springs.group(name);
        let x: Vec3s = b.state.x.clone();
        for [p, q] in super::mesh::edges(&tris).0 {
            b.springs.push_at_rest(
                &x,
                first + p as usize,
                first + q as usize,
                self.structural,
                SpringKind::Structural,
                group,
            );
        }
        for i in 0..verts.len() {
            b.springs.push_at_rest(&x, hub, first + i, self.spokes, SpringKind::Radius, group);
        }
        b.add_body(name, "ball", first, tri_first, line_first, true)?;
        Ok(first)
    }
}
