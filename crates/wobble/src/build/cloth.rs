//! Rectangular cloth: an nx × ny grid of particles with structural, shear and bend
//! springs, drawn as two triangles per cell.
//!
//! Particle (i, j) sits at `origin + spacing (i u + j v)` and has index
//! `first + j nx + i`. Springs per particle, when the neighbour exists: structural
//! (i,j)–(i+1,j) and (i,j)–(i,j+1); shear (i,j)–(i+1,j+1) and (i+1,j)–(i,j+1); bend
//! (i,j)–(i+2,j) and (i,j)–(i,j+2). Rest lengths are the initial distances. This is
//! exactly the cloth benchmark's layout. With [`Cloth::membrane`] set, a triangle
//! StVK membrane over the drawn triangles replaces the structural and shear springs.

use glam::DVec3;

use super::{BuildError, WorldBuilder, check, check_count, check_mass, check_spring, per_particle};
use crate::force::{Membrane, SpringKind, SpringParams, TriangleStvk};

/// Cloth parameters. Units: m, kg, N/m, N s/m.
#[derive(Clone, Debug, PartialEq)]
pub struct Cloth {
    /// Particles along u (≥ 2).
    pub nx: usize,
    /// Particles along v (≥ 2).
    pub ny: usize,
    /// Distance between neighbours, m (default 0.01).
    pub spacing: f64,
    /// Position of particle (0, 0), m.
    pub origin: DVec3,
    /// Unit direction of increasing i (default +x).
    pub u: DVec3,
    /// Unit direction of increasing j (default −y: row 0 on top).
    pub v: DVec3,
    /// Total mass, kg, spread evenly (default 1).
    pub mass: f64,
    /// Structural springs.
    pub structural: SpringParams,
    /// Shear springs (`None`: none).
    pub shear: Option<SpringParams>,
    /// Bend springs (`None`: none).
    pub bend: Option<SpringParams>,
    /// Collision radius of every particle, m (default 0).
    pub radius: f64,
    /// A triangle StVK membrane instead of structural and shear springs (`None`:
    /// springs; bend springs stay either way).
    pub membrane: Option<Membrane>,
}

impl Default for Cloth {
    fn default() -> Self {
        let s = SpringParams::linear(1000.0, 0.5);
        Self {
            nx: 32,
            ny: 32,
            spacing: 0.01,
            origin: DVec3::ZERO,
            u: DVec3::X,
            v: -DVec3::Y,
            mass: 1.0,
            structural: s,
            shear: Some(s),
            bend: Some(s),
            radius: 0.0,
            membrane: None,
        }
    }
}

/// Where a cloth's particles are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClothHandle {
    /// Body index.
    pub body: usize,
    /// Index of particle (0, 0).
    pub first: usize,
    /// Particles along u.
    pub nx: usize,
    /// Particles along v.
    pub ny: usize,
}

impl ClothHandle {
    /// Index of particle (i, j).
    #[must_use]
    pub fn particle(&self, i: usize, j: usize) -> usize {
        debug_assert!(i < self.nx && j < self.ny);
        self.first + j * self.nx + i
    }
}

impl Cloth {
    /// Adds the cloth to `b` as body `name`.
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<ClothHandle, BuildError> {
        check(self.nx >= 2, name, "nx", self.nx, "needs at least 2 particles")?;
        check(self.ny >= 2, name, "ny", self.ny, "needs at least 2 particles")?;
        check(self.spacing.is_finite() && self.spacing > 0.0, name, "spacing", self.spacing, "must be positive (m)")?;
        check(self.u.is_finite() && self.u.length() > 0.0, name, "u", self.u, "must be a non-zero direction")?;
        check(self.v.is_finite() && self.v.length() > 0.0, name, "v", self.v, "must be a non-zero direction")?;
        check(
            self.u.normalize().cross(self.v.normalize()).length() > 1e-6,
            name,
            "v",
            self.v,
            "must not be parallel to u",
        )?;
        check_count(name, "nx", &[self.nx, self.ny])?;
        check_mass(name, "mass", self.mass)?;
        check_spring(name, "structural", &self.structural)?;
        for p in [&self.shear, &self.bend].into_iter().flatten() {
            check_spring(name, "shear/bend", p)?;
        }
        let (nx, ny) = (self.nx, self.ny);
        let (first, tri_first, line_first) = (b.particle_count(), b.topology.triangles.len(), b.topology.lines.len());
        let m = per_particle(self.mass, nx * ny);
        let (u, v) = (self.u.normalize() * self.spacing, self.v.normalize() * self.spacing);
        for j in 0..ny {
            for i in 0..nx {
                b.add_particle(self.origin + u * i as f64 + v * j as f64, DVec3::ZERO, m, self.radius);
            }
        }
        let group = b.springs.group(name);
        let x = b.state.x.clone();
        let at = |i: usize, j: usize| first + j * nx + i;
        let springs = &mut b.springs;
        let mut add =
            |p: usize, q: usize, params: &SpringParams, kind| springs.push_at_rest(&x, p, q, *params, kind, group);
        for j in 0..ny {
            for i in 0..nx {
                let p = at(i, j);
                let springs = self.membrane.is_none();
                if springs && i + 1 < nx {
                    add(p, at(i + 1, j), &self.structural, SpringKind::Structural);
                }
                if springs && j + 1 < ny {
                    add(p, at(i, j + 1), &self.structural, SpringKind::Structural);
                }
                if let Some(shear) = &self.shear
                    && springs
                    && i + 1 < nx
                    && j + 1 < ny
                {
                    add(p, at(i + 1, j + 1), shear, SpringKind::Shear);
                    add(at(i + 1, j), at(i, j + 1), shear, SpringKind::Shear);
                }
                if let Some(bend) = &self.bend {
                    if i + 2 < nx {
                        add(p, at(i + 2, j), bend, SpringKind::Bend);
                    }
                    if j + 2 < ny {
                        add(p, at(i, j + 2), bend, SpringKind::Bend);
                    }
                }
            }
        }
        for j in 0..ny - 1 {
            for i in 0..nx - 1 {
                let [a, bb, c, d] = [at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)].map(|p| p as u32);
                b.topology.triangles.push([a, bb, c]);
                b.topology.triangles.push([a, c, d]);
            }
        }
        if let Some(material) = self.membrane {
            let tris = b.topology.triangles[tri_first..].to_vec();
            let term = TriangleStvk::new(&format!("{name}.membrane"), tris, &b.state.x, material)
                .map_err(|e| BuildError::Membrane { body: name.to_owned(), source: e })?;
            b.add_force(term);
        }
        let body = b.add_body(name, "cloth", first, tri_first, line_first, false)?;
        Ok(ClothHandle { body, first, nx, ny })
    }
}

/// Expected spring counts of an nx × ny cloth with shear and bend springs:
/// (structural, shear, bend).
#[must_use]
pub fn spring_counts(nx: usize, ny: usize) -> (usize, usize, usize) {
    let structural = (nx - 1) * ny + nx * (ny - 1);
    let shear = 2 * (nx - 1) * (ny - 1);
    let bend = nx.saturating_sub(2) * ny + nx * ny.saturating_sub(2);
    (structural, shear, bend)
}
