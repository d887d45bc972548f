//! Solid box lattice: nx × ny × nz particles on a cubic grid with structural springs
//! along the axes, shear springs across every face diagonal and body diagonal, and
//! optional bend springs skipping one particle. Its boundary is a closed,
//! outward-wound triangle surface.
//!
//! Particle (i, j, k) sits at `origin + spacing (i, j, k)` with index
//! `first + (k ny + j) nx + i`.

use glam::DVec3;

use super::{BuildError, WorldBuilder, check, check_count, check_mass, check_spring, per_particle};
use crate::force::{SpringKind, SpringParams};

/// Lattice parameters. Units: m, kg, N/m, N s/m.
#[derive(Clone, Debug, PartialEq)]
pub struct Lattice {
    /// Particles along x, y, z (each ≥ 2).
    pub n: [usize; 3],
    /// Grid spacing, m.
    pub spacing: f64,
    /// Position of particle (0, 0, 0), the minimum corner, m.
    pub origin: DVec3,
    /// Total mass, kg.
    pub mass: f64,
    /// Springs along the axes.
    pub structural: SpringParams,
    /// Springs across face and body diagonals (`None`: none — the lattice then has
    /// no shear resistance and folds).
    pub shear: Option<SpringParams>,
    /// Springs skipping one particle along the axes.
    pub bend: Option<SpringParams>,
    /// Collision radius, m.
    pub radius: f64,
}

impl Default for Lattice {
    fn default() -> Self {
        let s = SpringParams::linear(1000.0, 1.0);
        Self {
            n: [5, 5, 5],
            spacing: 0.05,
            origin: DVec3::ZERO,
            mass: 1.0,
            structural: s,
            shear: Some(s),
            bend: None,
            radius: 0.0,
        }
    }
}

/// Where a lattice's particles are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatticeHandle {
    /// Body index.
    pub body: usize,
    /// Index of particle (0, 0, 0).
    pub first: usize,
    /// Particles per axis.
    pub n: [usize; 3],
}

impl LatticeHandle {
    /// Index of particle (i, j, k).
    #[must_use]
    pub fn particle(&self, i: usize, j: usize, k: usize) -> usize {
        self.first + (k * self.n[1] + j) * self.n[0] + i
    }
}

impl Lattice {
    /// Adds the lattice as body `name`.
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<LatticeHandle, BuildError> {
        for (axis, n) in ["nx", "ny", "nz"].into_iter().zip(self.n) {
            check(n >= 2, name, axis, n, "needs at least 2 particles")?;
        }
        check(self.spacing.is_finite() && self.spacing > 0.0, name, "spacing", self.spacing, "must be positive (m)")?;
        check_count(name, "n", &self.n)?;
        check_mass(name, "mass", self.mass)?;
        check_spring(name, "structural", &self.structural)?;
        for p in [&self.shear, &self.bend].into_iter().flatten() {
            check_spring(name, "shear/bend", p)?;
        }
        let [nx, ny, nz] = self.n;
        let (first, tri_first, line_first) = (b.particle_count(), b.topology.triangles.len(), b.topology.lines.len());
        let m = per_particle(self.mass, nx * ny * nz);
        for k in 0..nz {
            for j in 0..ny {
                for i in 0..nx {
                    let p = self.origin + self.spacing * DVec3::new(i as f64, j as f64, k as f64);
                    b.add_particle(p, DVec3::ZERO, m, self.radius);
                }
            }
        }
        let handle = LatticeHandle { body: 0, first, n: self.n };
        let at = |i: usize, j: usize, k: usize| handle.particle(i, j, k);
        let group = b.springs.group(name);
        let x = b.state.x.clone();
        let springs = &mut b.springs;
        let mut add = |p, q, params: &SpringParams, kind| springs.push_at_rest(&x, p, q, *params, kind, group);
        let inside = |i: usize, j: usize, k: usize| i < nx && j < ny && k < nz;
        for k in 0..nz {
            for j in 0..ny {
                for i in 0..nx {
                    let p = at(i, j, k);
                    for (di, dj, dk) in [(1, 0, 0), (0, 1, 0), (0, 0, 1)] {
                        if inside(i + di, j + dj, k + dk) {
                            add(p, at(i + di, j + dj, k + dk), &self.structural, SpringKind::Structural);
                        }
                    }
                    if let Some(bend) = &self.bend {
                        for (di, dj, dk) in [(2, 0, 0), (0, 2, 0), (0, 0, 2)] {
                            if inside(i + di, j + dj, k + dk) {
                                add(p, at(i + di, j + dj, k + dk), bend, SpringKind::Bend);
                            }
                        }
                    }
                    let Some(shear) = &self.shear else { continue };
                    // Face diagonals of the three squares with this corner as minimum.
                    if inside(i + 1, j + 1, k) {
                        add(p, at(i + 1, j + 1, k), shear, SpringKind::Shear);
                        add(at(i + 1, j, k), at(i, j + 1, k), shear, SpringKind::Shear);
                    }
                    if inside(i + 1, j, k + 1) {
                        add(p, at(i + 1, j, k + 1), shear, SpringKind::Shear);
                        add(at(i + 1, j, k), at(i, j, k + 1), shear, SpringKind::Shear);
                    }
                    if inside(i, j + 1, k + 1) {
                        add(p, at(i, j + 1, k + 1), shear, SpringKind::Shear);
                        add(at(i, j + 1, k), at(i, j, k + 1), shear, SpringKind::Shear);
                    }
                    // Body diagonals of the cube with this corner as minimum.
                    if inside(i + 1, j + 1, k + 1) {
                        add(p, at(i + 1, j + 1, k + 1), shear, SpringKind::Shear);
                        add(at(i + 1, j, k), at(i, j + 1, k + 1), shear, SpringKind::Shear);
                        add(at(i, j + 1, k), at(i + 1, j, k + 1), shear, SpringKind::Shear);
                        add(at(i + 1, j + 1, k), at(i, j, k + 1), shear, SpringKind::Shear);
                    }
                }
            }
        }
        // Boundary: two triangles per boundary square, wound so the normal points out.
        let quad = |b: &mut WorldBuilder, q: [usize; 4], outward: DVec3| {
            let [a, c1, c2, d] = q.map(|p| p as u32);
            let n = (b.state.x.get(q[1]) - b.state.x.get(q[0])).cross(b.state.x.get(q[2]) - b.state.x.get(q[0]));
            if n.dot(outward) >= 0.0 {
                b.topology.triangles.push([a, c1, c2]);
                b.topology.triangles.push([a, c2, d]);
            } else {
                b.topology.triangles.push([a, c2, c1]);
                b.topology.triangles.push([a, d, c2]);
            }
        };
        for (fixed, (ua, va)) in [(0usize, (1usize, 2usize)), (1, (0, 2)), (2, (0, 1))] {
            let n_fixed = self.n[fixed];
            for side in [0, n_fixed - 1] {
                let mut outward = DVec3::ZERO;
                outward[fixed] = if side == 0 { -1.0 } else { 1.0 };
                for s in 0..self.n[ua] - 1 {
                    for t in 0..self.n[va] - 1 {
                        let idx = |du: usize, dv: usize| {
                            let mut c = [0usize; 3];
                            c[fixed] = side;
                            c[ua] = s + du;
                            c[va] = t + dv;
                            at(c[0], c[1], c[2])
                        };
                        quad(b, [idx(0, 0), idx(1, 0), idx(1, 1), idx(0, 1)], outward);
                    }
                }
            }
        }
        let body = b.add_body(name, "lattice", first, tri_first, line_first, true)?;
        Ok(LatticeHandle { body, ..handle })
    }
}

/// Expected (structural, shear) spring counts of a lattice with shear springs.
#[must_use]
pub fn spring_counts(n: [usize; 3]) -> (usize, usize) {
    let [x, y, z] = n;
    let structural = (x - 1) * y * z + x * (y - 1) * z + x * y * (z - 1);
    let faces = 2 * ((x - 1) * (y - 1) * z + (x - 1) * y * (z - 1) + x * (y - 1) * (z - 1));
    let body = 4 * (x - 1) * (y - 1) * (z - 1);
    (structural, faces + body)
}
