//! Elastic grids (002): surfaces (L × M × 1) and solids (L × M × N) of particles whose
//! elasticity is Terzopoulos's metric model, original or with the integrity
//! improvements (see [`crate::force::grid`]). Solids may be boxes or the ellipsoid
//! inscribed in the box (rubber balls, 002's water lily): grid points outside it are
//! left out, and constraints reaching them vanish as at the grid's own boundary.
//!
//! Grid point (l, m, n) sits at `origin + (l h₁, m h₂, n h₃)`. The surface drawn is
//! the grid itself for a surface, and the boundary faces of the complete cells for a
//! solid (closed, wound outward).

use std::collections::HashMap;

use glam::DVec3;

use super::{BuildError, WorldBuilder, check, check_count, check_mass, per_particle};
use crate::force::grid::{Angles, GridElasticity, LengthKind, Lengths, cell_corners, cell_volume};

/// Default η of the metric's diagonal (length) constraints, N m.
pub const DEFAULT_ETA_LENGTH: f64 = 1.0;
/// Default η of the angular (original) and Metrix (improved) constraints, N m.
pub const DEFAULT_ETA_ANGLE: f64 = 0.5;
/// Default η of the Spatial Diagonal Metric constraints, N m.
pub const DEFAULT_ETA_SDM: f64 = 0.5;
/// Default η of the Pillar constraints, N m.
pub const DEFAULT_ETA_PILLAR: f64 = 0.5;

/// Which elasticity the grid has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridModel {
    /// Terzopoulos 1987: the metric's lengths and angles.
    Original,
    /// 002's improved model: lengths, Metrix diagonals instead of angles, and
    /// optionally the SDM and Pillar constraints.
    Improved {
        /// Spatial Diagonal Metric (solids only).
        sdm: bool,
        /// Pillar central-difference lengths.
        pillar: bool,
        /// Pillar also on central plane diagonals (central-difference Metrix).
        pillar_metrix: bool,
        /// Square the Metrix and SDM constraint forces (002 §6).
        squared: bool,
    },
}

impl GridModel {
    /// The full improved model: Metrix, SDM and Pillar, not squared.
    pub const IMPROVED: GridModel =
        GridModel::Improved { sdm: true, pillar: true, pillar_metrix: false, squared: false };
}

/// Grid outline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridShape {
    /// Every grid point.
    Box,
    /// Grid points inside the ellipsoid inscribed in the grid's box.
    Ellipsoid,
}

/// Grid parameters. Units: m, kg, N m.
#[derive(Clone, Debug, PartialEq)]
pub struct ElasticGrid {
    /// Points along l, m, n (each ≥ 2, except n = 1 for a surface).
    pub n: [usize; 3],
    /// Rest spacing along l, m, n, m.
    pub spacing: [f64; 3],
    /// Position of grid point (0, 0, 0), m.
    pub origin: DVec3,
    /// Outline.
    pub shape: GridShape,
    /// Total mass, kg.
    pub mass: f64,
    /// Elasticity model.
    pub model: GridModel,
    /// η of length constraints along grid lines, N m.
    pub eta_length: f64,
    /// η of angle (original) or Metrix (improved) constraints, N m.
    pub eta_angle: f64,
    /// η of SDM constraints, N m.
    pub eta_sdm: f64,
    /// η of Pillar constraints, N m.
    pub eta_pillar: f64,
    /// Global strength factor on every η.
    pub strength: f64,
    /// Collision radius of every particle, m.
    pub radius: f64,
}

impl Default for ElasticGrid {
    fn default() -> Self {
        Self {
            n: [6, 6, 6],
            spacing: [0.05; 3],
            origin: DVec3::ZERO,
            shape: GridShape::Box,
            mass: 1.0,
            model: GridModel::IMPROVED,
            eta_length: DEFAULT_ETA_LENGTH,
            eta_angle: DEFAULT_ETA_ANGLE,
            eta_sdm: DEFAULT_ETA_SDM,
            eta_pillar: DEFAULT_ETA_PILLAR,
            strength: 1.0,
            radius: 0.0,
        }
    }
}

/// Where a grid's particles are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridHandle {
    /// Body index.
    pub body: usize,
    /// Points per axis.
    pub n: [usize; 3],
    /// Particle of each grid point (`None` outside the outline), index l + L (m + M n).
    pub index: Vec<Option<usize>>,
}

impl GridHandle {
    /// Particle at grid point (l, m, n), if present.
    #[must_use]
    pub fn particle(&self, l: usize, m: usize, n: usize) -> Option<usize> {
        if l < self.n[0] && m < self.n[1] && n < self.n[2] {
            self.index[l + self.n[0] * (m + self.n[1] * n)]
        } else {
            None
        }
    }

    /// Particle at signed grid coordinates, if inside the grid and present.
    fn at(&self, c: [i64; 3]) -> Option<usize> {
        if c.iter().any(|&v| v < 0) {
            return None;
        }
        self.particle(c[0] as usize, c[1] as usize, c[2] as usize)
    }
}

impl ElasticGrid {
    /// Adds the grid as body `name` with its elasticity term.
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<GridHandle, BuildError> {
        let [nl, nm, nn] = self.n;
        check(nl >= 2 && nm >= 2, name, "n", format!("{:?}", self.n), "needs at least 2 points along l and m")?;
        check(nn >= 1, name, "n", format!("{:?}", self.n), "needs at least 1 point along n (1 for a surface)")?;
        check_count(name, "n", &self.n)?;
        for h in self.spacing {
            check(h.is_finite() && h > 0.0, name, "spacing", h, "must be positive (m)")?;
        }
        check_mass(name, "mass", self.mass)?;
        for (what, eta) in [
            ("eta_length", self.eta_length),
            ("eta_angle", self.eta_angle),
            ("eta_sdm", self.eta_sdm),
            ("eta_pillar", self.eta_pillar),
            ("strength", self.strength),
        ] {
            check(eta.is_finite() && eta >= 0.0, name, what, eta, "must be finite and ≥ 0")?;
        }
        let solid = nn >= 2;
        let h = self.spacing;
        let inside = |l: usize, m: usize, n: usize| match self.shape {
            GridShape::Box => true,
            GridShape::Ellipsoid => {
                let q =
                    |i: usize, count: usize| if count > 1 { 2.0 * i as f64 / (count - 1) as f64 - 1.0 } else { 0.0 };
                let (x, y, z) = (q(l, nl), q(m, nm), q(n, nn));
                // A small margin keeps the points on the ellipsoid's axes ends.
                x * x + y * y + z * z <= 1.0 + 1e-9
            }
        };
        let present: Vec<(usize, usize, usize)> = (0..nn)
            .flat_map(|n| (0..nm).flat_map(move |m| (0..nl).map(move |l| (l, m, n))))
            .filter(|&(l, m, n)| inside(l, m, n))
            .collect();
        check(present.len() >= 2, name, "n", format!("{:?}", self.n), "leaves fewer than 2 points inside the outline")?;
        let (first, tri_first, line_first) = (b.particle_count(), b.topology.triangles.len(), b.topology.lines.len());
        let mass = per_particle(self.mass, present.len());
        let mut handle = GridHandle { body: 0, n: self.n, index: vec![None; nl * nm * nn] };
        for &(l, m, n) in &present {
            let x = self.origin + DVec3::new(l as f64 * h[0], m as f64 * h[1], n as f64 * h[2]);
            let i = b.add_particle(x, DVec3::ZERO, mass, self.radius);
            handle.index[l + nl * (m + nm * n)] = Some(i);
        }
        let x0 = b.state.x.clone();
        let axes = if solid { 3 } else { 2 };
        let unit = |i: usize| {
            let mut e = [0i64; 3];
            e[i] = 1;
            e
        };
        let add = |c: [i64; 3], d: [i64; 3]| [c[0] + d[0], c[1] + d[1], c[2] + d[2]];
        let neg = |d: [i64; 3]| [-d[0], -d[1], -d[2]];
        let mut lengths = Lengths::default();
        let mut push_length = |p: usize, q: usize, s: f64, eta: f64, squared: bool, kind: LengthKind| {
            lengths.p.push(p as u32);
            lengths.q.push(q as u32);
            lengths.s.push(s);
            lengths.g0.push(s * s * x0.get(q).distance_squared(x0.get(p)));
            lengths.eta.push(eta);
            lengths.squared.push(squared);
            lengths.kind.push(kind);
        };
        let mut angles = Angles::default();
        for &(l, m, n) in &present {
            let c = [l as i64, m as i64, n as i64];
            let p = handle.at(c).expect("present point");
            for (i, hi) in h.iter().enumerate().take(axes) {
                if let Some(q) = handle.at(add(c, unit(i))) {
                    push_length(p, q, 1.0 / hi, self.eta_length, false, LengthKind::Metric);
                }
            }
            match self.model {
                GridModel::Original => {
                    for i in 0..axes {
                        for j in i + 1..axes {
                            if let (Some(a), Some(bq)) = (handle.at(add(c, unit(i))), handle.at(add(c, unit(j)))) {
                                angles.p.push(p as u32);
                                angles.a.push(a as u32);
                                angles.b.push(bq as u32);
                                angles.si.push(1.0 / h[i]);
                                angles.sj.push(1.0 / h[j]);
                                angles.g0.push((x0.get(a) - x0.get(p)).dot(x0.get(bq) - x0.get(p)) / (h[i] * h[j]));
                                angles.eta.push(self.eta_angle);
                            }
                        }
                    }
                }
                GridModel::Improved { sdm, pillar, pillar_metrix, squared } => {
                    for i in 0..axes {
                        for j in i + 1..axes {
                            let s = 1.0 / (h[i] * h[i] + h[j] * h[j]).sqrt();
                            let (ei, ej) = (unit(i), unit(j));
                            for d in [add(ei, ej), add(neg(ei), ej)] {
                                if let Some(q) = handle.at(add(c, d)) {
                                    push_length(p, q, s, self.eta_angle, squared, LengthKind::Metrix);
                                }
                            }
                            if pillar && pillar_metrix {
                                for d in [add(ei, ej), add(ei, neg(ej))] {
                                    if let (Some(a), Some(q)) = (handle.at(add(c, neg(d))), handle.at(add(c, d))) {
                                        push_length(a, q, 0.5 * s, self.eta_pillar, false, LengthKind::Pillar);
                                    }
                                }
                            }
                        }
                    }
                    if sdm && solid {
                        let s = 1.0 / (h[0] * h[0] + h[1] * h[1] + h[2] * h[2]).sqrt();
                        for d in [[-1, 1, 1], [-1, -1, 1], [1, 1, 1], [1, -1, 1]] {
                            if let Some(q) = handle.at(add(c, d)) {
                                push_length(p, q, s, self.eta_sdm, squared, LengthKind::Sdm);
                            }
                        }
                    }
                    if pillar {
                        for (i, hi) in h.iter().enumerate().take(axes) {
                            if let (Some(a), Some(q)) = (handle.at(add(c, neg(unit(i)))), handle.at(add(c, unit(i)))) {
                                push_length(a, q, 0.5 / hi, self.eta_pillar, false, LengthKind::Pillar);
                            }
                        }
                    }
                }
            }
        }
        // Cells and the drawn surface.
        let (mut cells, mut rest) = (Vec::new(), Vec::new());
        if solid {
            for n in 0..nn - 1 {
                for m in 0..nm - 1 {
                    for l in 0..nl - 1 {
                        let corners: Option<Vec<usize>> =
                            cell_corners().iter().map(|o| handle.particle(l + o[0], m + o[1], n + o[2])).collect();
                        if let Some(c) = corners {
                            let cell: [u32; 8] = std::array::from_fn(|k| c[k] as u32);
                            cells.push(cell);
                        }
                    }
                }
            }
            rest = cells.iter().map(|c| cell_volume(c, &x0)).collect();
            b.topology.triangles.extend(boundary_faces(&cells, &x0));
        } else {
            for m in 0..nm - 1 {
                for l in 0..nl - 1 {
                    if let (Some(a), Some(c1), Some(c2), Some(d)) = (
                        handle.particle(l, m, 0),
                        handle.particle(l + 1, m, 0),
                        handle.particle(l + 1, m + 1, 0),
                        handle.particle(l, m + 1, 0),
                    ) {
                        b.topology.triangles.push([a as u32, c1 as u32, c2 as u32]);
                        b.topology.triangles.push([a as u32, c2 as u32, d as u32]);
                    }
                }
            }
        }
        let term = GridElasticity {
            name: name.to_owned(),
            lengths,
            angles,
            strength: self.strength,
            pillar_strength: 1.0,
            cells,
            cell_rest_volume: rest,
        };
        b.add_force(term);
        let closed = solid && self.shape == GridShape::Box;
        handle.body = b.add_body(name, "grid", first, tri_first, line_first, closed)?;
        Ok(handle)
    }
}

/// Faces of the cells that belong to only one cell, as outward-wound triangles.
fn boundary_faces(cells: &[[u32; 8]], x: &crate::model::Vec3s) -> Vec<[u32; 3]> {
    // Each cube face as four corner indices in cyclic order.
    const FACES: [[usize; 4]; 6] = [[0, 2, 6, 4], [1, 3, 7, 5], [0, 1, 5, 4], [2, 3, 7, 6], [0, 1, 3, 2], [4, 5, 7, 6]];
    let mut seen: HashMap<[u32; 4], (usize, usize)> = HashMap::new();
    for (ci, cell) in cells.iter().enumerate() {
        for (fi, f) in FACES.iter().enumerate() {
            let mut key = f.map(|k| cell[k]);
            key.sort_unstable();
            seen.entry(key).and_modify(|e| e.0 = usize::MAX).or_insert((ci, fi));
        }
    }
    let mut faces: Vec<(usize, usize)> = seen.into_values().filter(|e| e.0 != usize::MAX).collect();
    faces.sort_unstable();
    let mut out = Vec::with_capacity(2 * faces.len());
    for (ci, fi) in faces {
        let cell = &cells[ci];
        let centre = cell.iter().map(|&i| x.get(i as usize)).sum::<DVec3>() / 8.0;
        let q = FACES[fi].map(|k| cell[k]);
        let [a, bq, c, d] = x.gather(&q);
        let normal = (bq - a).cross(c - a);
        let outward = normal.dot((a + bq + c + d) / 4.0 - centre) > 0.0;
        let [i0, i1, i2, i3] = q;
        if outward {
            out.push([i0, i1, i2]);
            out.push([i0, i2, i3]);
        } else {
            out.push([i0, i2, i1]);
            out.push([i0, i3, i2]);
        }
    }
    out
}
