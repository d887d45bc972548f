//! Terzopoulos's elastically deformable grids (002; physics notes §7) with the
//! integrity improvements: Metrix, Spatial Diagonal Metric and Pillar.
//!
//! # The discrete energy, as constraints
//! A grid body has particles r[l, m, n] at intrinsic spacings h₁, h₂, h₃ (its rest
//! spacings). Forward differences D_i⁺ r = (r[p + e_i] − r\[p\])/h_i give the discrete
//! metric G_ij = D_i⁺ r · D_j⁺ r; the elastic force on the particles is −e with
//! e = −Σ_ij D_i⁻(α_ij D_j⁺ r), α_ij = η_ij (G_ij − G⁰_ij) (002 eqs. 11–13). Under
//! the natural boundary condition (a forward difference leaving the grid is zero)
//! this e is exactly the gradient of
//!
//! ```text
//! E = Σ_p [ Σ_i ¼ η_ii (G_ii − G⁰_ii)² + Σ_{i<j} ½ η_ij (G_ij − G⁰_ij)² ]
//! ```
//!
//! so the term is written as a sum of two kinds of constraint, each present only
//! when all its particles exist:
//!
//! * a **length constraint** on a pair (p, q) with scale s: x = s² |r_q − r_p|² − G⁰,
//!   energy ½ ∫₀ˣ φ, force on q −φ(x) s² (r_q − r_p) and the opposite on p. The
//!   metric's diagonal (s = 1/h_i, q = p + e_i), Metrix's plane diagonals to
//!   [+1, +1] and [−1, +1] (s = 1/√(h_i² + h_j²)), the SDM's four body diagonals to
//!   [l∓1, m±1, n+1] (s = 1/|(h₁, h₂, h₃)|) and Pillar's central differences
//!   (q = p + e_i, the pair (p − e_i, p + e_i), s = 1/(2h_i)) are all of this form.
//!   φ(x) = η x, or η x|x| for the paper's "squared" constraints (002 §6), which
//!   stiffen under large deformation (energy η |x|³/6);
//! * an **angle constraint** on (p, a = p + e_i, b = p + e_j) for the original
//!   model's off-diagonal metric: u = (r_a − r_p)/h_i, w = (r_b − r_p)/h_j,
//!   x = u·w − G⁰_ij, energy ½ η_ij x².
//!
//! The original model uses the metric's diagonal and angle constraints; the
//! improved model replaces the angle constraints by Metrix diagonals (002 §4.1) and
//! adds the SDM (§4.2) and Pillar (§5) constraints. A global strength factor scales
//! every η (002 §6: interactive stiffening; inflation when it acts on Pillar). G⁰
//! comes from the rest positions, so any rest shape works.
//!
//! Units: with intrinsic coordinates in metres, G is dimensionless and η is in
//! newton-metres; a length constraint behaves near rest like a spring of stiffness
//! 2 η s² G⁰ (N/m), i.e. 2η/h² along a grid line.
//!
//! # Terzopoulos's stiffness matrix
//! With every α frozen at the current state, the force is −(K ⊗ I₃) r for a
//! scalar, symmetric matrix K = Σ D⁺ᵀ α D⁺ (002 eq. 14): a length constraint adds
//! weight α s² between its pair; an angle constraint adds the stencil of
//! α (D_iᵀ D_j + D_jᵀ D_i). [`ForceTerm::add_scalar_stiffness`] exposes it for the
//! semi-implicit scheme (002 eqs. 16–20).

use glam::{DMat3, DVec3};

use super::{
    ForceContext, ForceTerm, JacobianSink, Loads, Parameter, ParameterError, ScalarStiffnessSink, require_non_negative,
};
use crate::model::{State, Vec3s};

/// Which constraint family a length constraint belongs to (for reports and the
/// "squared" switch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LengthKind {
    /// Metric diagonal along a grid direction.
    Metric,
    /// Metrix plane diagonal.
    Metrix,
    /// Spatial Diagonal Metric body diagonal.
    Sdm,
    /// Pillar central difference (axis or, optionally, plane diagonal).
    Pillar,
}

/// Length constraints in structure-of-arrays form.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lengths {
    /// First particle.
    pub p: Vec<u32>,
    /// Second particle.
    pub q: Vec<u32>,
    /// Scale s (1/m): the difference operator is s (r_q − r_p).
    pub s: Vec<f64>,
    /// Rest value G⁰ = s² |r⁰_q − r⁰_p|².
    pub g0: Vec<f64>,
    /// Weight η, N m.
    pub eta: Vec<f64>,
    /// φ(x) = η x|x| instead of η x.
    pub squared: Vec<bool>,
    /// Family.
    pub kind: Vec<LengthKind>,
}

/// Angle constraints (original model's off-diagonal metric) in structure-of-arrays
/// form.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Angles {
    /// Corner particle p.
    pub p: Vec<u32>,
    /// p + e_i.
    pub a: Vec<u32>,
    /// p + e_j.
    pub b: Vec<u32>,
    /// 1/h_i.
    pub si: Vec<f64>,
    /// 1/h_j.
    pub sj: Vec<f64>,
    /// Rest value G⁰_ij.
    pub g0: Vec<f64>,
    /// Weight η_ij, N m.
    pub eta: Vec<f64>,
}

/// One grid body's elasticity.
#[derive(Clone, Debug, PartialEq)]
pub struct GridElasticity {
    /// Name for reports and parameter keys (the body's name).
    pub name: String,
    /// Length constraints.
    pub lengths: Lengths,
    /// Angle constraints.
    pub angles: Angles,
    /// Global factor on every η (default 1).
    pub strength: f64,
    /// Extra factor on the Pillar constraints' η (default 1): 002's inflation.
    pub pillar_strength: f64,
    /// Cells (8 corner particles, in the order of [`cell_corners`]) for the
    /// integrity measures; empty for surfaces.
    pub cells: Vec<[u32; 8]>,
    /// Rest volume of each cell, m³.
    pub cell_rest_volume: Vec<f64>,
}

/// Corner order of a cell: bit 0 of the index is +l, bit 1 +m, bit 2 +n.
pub const fn cell_corners() -> [[usize; 3]; 8] {
    [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 1], [1, 1, 1]]
}

/// The five tetrahedra of a cube (corner indices as in [`cell_corners`]), a
/// decomposition whose signed volumes all turn negative when the cell inverts.
const TETS: [[usize; 4]; 5] = [[0, 1, 2, 4], [1, 3, 2, 7], [1, 4, 5, 7], [2, 4, 7, 6], [1, 2, 4, 7]];

/// Signed volume of tetrahedron (a, b, c, d), m³.
fn tet_volume(a: DVec3, b: DVec3, c: DVec3, d: DVec3) -> f64 {
    (b - a).dot((c - a).cross(d - a)) / 6.0
}

/// Signed volumes of a cell's five tetrahedra.
fn cell_tets(cell: &[u32; 8], x: &Vec3s) -> [f64; 5] {
    let c = x.gather(cell);
    TETS.map(|t| tet_volume(c[t[0]], c[t[1]], c[t[2]], c[t[3]]))
}

/// Signed volume of a cell (corners in [`cell_corners`] order), m³: the sum of its
/// five tetrahedra, exact for any hexahedron whose faces are planar.
#[must_use]
pub fn cell_volume(cell: &[u32; 8], x: &Vec3s) -> f64 {
    cell_tets(cell, x).iter().sum()
}

impl GridElasticity {
    /// η of length constraint `k` with the strength factors applied.
    #[inline]
    fn length_eta(&self, k: usize) -> f64 {
        let pillar = if self.lengths.kind[k] == LengthKind::Pillar { self.pillar_strength } else { 1.0 };
        self.lengths.eta[k] * self.strength * pillar
    }

    /// φ(x) and φ'(x) of length constraint `k`.
    #[inline]
    fn phi(&self, k: usize, x: f64) -> (f64, f64) {
        let eta = self.length_eta(k);
        if self.lengths.squared[k] { (eta * x * x.abs(), 2.0 * eta * x.abs()) } else { (eta * x, eta) }
    }

    /// Number of inverted cells: cells whose signed volume (the sum of their five
    /// tetrahedra) is negative (physics notes §7). A flattened cell (volume 0) is
    /// not counted; a heavily sheared cell with one tetrahedron flipped but a
    /// positive volume is not either.
    #[must_use]
    pub fn inverted_cells(&self, x: &Vec3s) -> usize {
        self.cells.iter().filter(|c| cell_volume(c, x) < 0.0).count()
    }

    /// Cells inverted against the body's majority orientation: the smaller of the
    /// inverted and the upright counts, and whether the majority is inverted (the
    /// body is a mirror image of its rest shape). The elastic energy depends on the
    /// metric only, so a mirror image is at rest like the original shape; only the
    /// cells that disagree with the rest of the body are damage.
    #[must_use]
    pub fn cells_against_majority(&self, x: &Vec3s) -> (usize, bool) {
        let inverted = self.inverted_cells(x);
        let upright = self.cells.len() - inverted;
        (inverted.min(upright), inverted > upright)
    }

    /// Smallest ratio of a cell's volume (sum of its tetrahedra) to its rest volume.
    #[must_use]
    pub fn min_volume_ratio(&self, x: &Vec3s) -> f64 {
        self.cells
            .iter()
            .zip(&self.cell_rest_volume)
            .map(|(c, v0)| cell_volume(c, x) / v0)
            .fold(f64::INFINITY, f64::min)
    }

    /// Counts of each constraint family.
    #[must_use]
    pub fn family_counts(&self) -> [(LengthKind, usize); 4] {
        [LengthKind::Metric, LengthKind::Metrix, LengthKind::Sdm, LengthKind::Pillar]
            .map(|k| (k, self.lengths.kind.iter().filter(|x| **x == k).count()))
    }
}

impl ForceTerm for GridElasticity {
    fn name(&self) -> &str {
        &self.name
    }

    fn add_forces(&mut self, ctx: &ForceContext<'_>, out: &mut Loads) {
        let x = &ctx.state.x;
        let l = &self.lengths;
        for k in 0..l.p.len() {
            let (p, q) = (l.p[k] as usize, l.q[k] as usize);
            let d = x.get(q) - x.get(p);
            let s2 = l.s[k] * l.s[k];
            let (phi, _) = self.phi(k, s2 * d.length_squared() - l.g0[k]);
            let f = d * (phi * s2);
            out.f.sub(q, f);
            out.f.add(p, f);
        }
        let a = &self.angles;
        for k in 0..a.p.len() {
            let (p, i, j) = (a.p[k] as usize, a.a[k] as usize, a.b[k] as usize);
            let u = (x.get(i) - x.get(p)) * a.si[k];
            let w = (x.get(j) - x.get(p)) * a.sj[k];
            let alpha = a.eta[k] * self.strength * (u.dot(w) - a.g0[k]);
            let fa = w * (alpha * a.si[k]);
            let fb = u * (alpha * a.sj[k]);
            out.f.sub(i, fa);
            out.f.sub(j, fb);
            out.f.add(p, fa + fb);
        }
    }

    fn potential_energy(&self, ctx: &ForceContext<'_>) -> f64 {
        let x = &ctx.state.x;
        let l = &self.lengths;
        let mut e = 0.0;
        for k in 0..l.p.len() {
            let d = x.get(l.q[k] as usize) - x.get(l.p[k] as usize);
            let v = l.s[k] * l.s[k] * d.length_squared() - l.g0[k];
            let eta = self.length_eta(k);
            e += if l.squared[k] { eta * v.abs().powi(3) / 6.0 } else { 0.25 * eta * v * v };
        }
        let a = &self.angles;
        for k in 0..a.p.len() {
            let p = x.get(a.p[k] as usize);
            let u = (x.get(a.a[k] as usize) - p) * a.si[k];
            let w = (x.get(a.b[k] as usize) - p) * a.sj[k];
            let v = u.dot(w) - a.g0[k];
            e += 0.5 * a.eta[k] * self.strength * v * v;
        }
        e
    }

    /// Exact ∂f/∂x (no velocity dependence). A sink that asks for a definite
    /// matrix ([`JacobianSink::definite`]) gets each length constraint's block with
    /// its negative stiffnesses (along and across the link) cut to zero, and each
    /// angle constraint's rank-one part η g gᵀ without the α (c_u c_wᵀ + c_w c_uᵀ)
    /// term, which has eigenvalues of both signs whenever α ≠ 0.
    fn add_jacobian(&self, ctx: &ForceContext<'_>, sink: &mut dyn JacobianSink) {
        // Position-only forces: nothing for a sink that wants ∂f/∂v alone.
        if !sink.wants_dfdx() {
            return;
        }
        let definite = sink.definite();
        let x = &ctx.state.x;
        let l = &self.lengths;
        for k in 0..l.p.len() {
            let (p, q) = (l.p[k] as usize, l.q[k] as usize);
            let d = x.get(q) - x.get(p);
            let s2 = l.s[k] * l.s[k];
            let (phi, dphi) = self.phi(k, s2 * d.length_squared() - l.g0[k]);
            // F_q = −φ s² d: ∂F_q/∂r_q = −s² (φ I + 2 s² φ' d dᵀ).
            let dd = DMat3::from_cols(d * d.x, d * d.y, d * d.z);
            let block = if definite {
                // −s² (φ (I − n nᵀ) + (φ + 2 s² φ' |d|²) n nᵀ), each stiffness ≥ 0.
                let r2 = d.length_squared();
                let nn = if r2 > 0.0 { dd * (1.0 / r2) } else { DMat3::ZERO };
                let along = phi + 2.0 * s2 * dphi * r2;
                -((DMat3::IDENTITY - nn) * (phi.max(0.0) * s2) + nn * (along.max(0.0) * s2))
            } else {
                -(DMat3::IDENTITY * (phi * s2) + dd * (2.0 * s2 * s2 * dphi))
            };
            sink.add_dfdx(q, q, block);
            sink.add_dfdx(p, p, block);
            sink.add_dfdx(p, q, -block);
            sink.add_dfdx(q, p, -block);
        }
        let a = &self.angles;
        for k in 0..a.p.len() {
            let idx = [a.p[k] as usize, a.a[k] as usize, a.b[k] as usize];
            let (si, sj) = (a.si[k], a.sj[k]);
            let u = (x.get(idx[1]) - x.get(idx[0])) * si;
            let w = (x.get(idx[2]) - x.get(idx[0])) * sj;
            let eta = a.eta[k] * self.strength;
            let alpha = eta * (u.dot(w) - a.g0[k]);
            // du/dr = si (δ_a − δ_p) I, dw/dr = sj (δ_b − δ_p) I, so with c the stencil
            // coefficients, F_n = −(α (c_u[n] si w + c_w[n] sj u)), and
            // ∂F_n/∂r_m = −[η (c_u[n] si w + c_w[n] sj u)(c_u[m] si w + c_w[m] sj u)ᵀ
            //              + α si sj (c_u[n] c_w[m] + c_w[n] c_u[m]) I].
            let cu = [-1.0, 1.0, 0.0];
            let cw = [-1.0, 0.0, 1.0];
            let g: [DVec3; 3] = std::array::from_fn(|n| w * (cu[n] * si) + u * (cw[n] * sj));
            for n in 0..3 {
                for m in 0..3 {
                    let outer = DMat3::from_cols(g[n] * g[m].x, g[n] * g[m].y, g[n] * g[m].z);
                    let iso = if definite { 0.0 } else { alpha * si * sj * (cu[n] * cw[m] + cw[n] * cu[m]) };
                    sink.add_dfdx(idx[n], idx[m], -(outer * eta + DMat3::IDENTITY * iso));
                }
            }
        }
    }

    fn has_jacobian(&self) -> bool {
        true
    }

    /// K with α frozen: weight α s² per length constraint, the α (D_iᵀD_j + D_jᵀD_i)
    /// stencil per angle constraint.
    fn add_scalar_stiffness(&self, ctx: &ForceContext<'_>, sink: &mut dyn ScalarStiffnessSink) -> bool {
        let x = &ctx.state.x;
        let l = &self.lengths;
        for k in 0..l.p.len() {
            let (p, q) = (l.p[k] as usize, l.q[k] as usize);
            let s2 = l.s[k] * l.s[k];
            let (phi, _) = self.phi(k, s2 * x.get(q).distance_squared(x.get(p)) - l.g0[k]);
            let wgt = phi * s2;
            sink.add(p, p, wgt);
            sink.add(q, q, wgt);
            sink.add(p, q, -wgt);
            sink.add(q, p, -wgt);
        }
        let a = &self.angles;
        for k in 0..a.p.len() {
            let idx = [a.p[k] as usize, a.a[k] as usize, a.b[k] as usize];
            let u = (x.get(idx[1]) - x.get(idx[0])) * a.si[k];
            let w = (x.get(idx[2]) - x.get(idx[0])) * a.sj[k];
            let c = a.eta[k] * self.strength * (u.dot(w) - a.g0[k]) * a.si[k] * a.sj[k];
            let cu = [-1.0, 1.0, 0.0];
            let cw = [-1.0, 0.0, 1.0];
            for n in 0..3 {
                for m in 0..3 {
                    let v = c * (cu[n] * cw[m] + cw[n] * cu[m]);
                    if v != 0.0 {
                        sink.add(idx[n], idx[m], v);
                    }
                }
            }
        }
        true
    }

    fn add_stiffness_bound(&self, ctx: &ForceContext<'_>, k_row: &mut [f64], _c_row: &mut [f64]) {
        let (x, w) = (&ctx.state.x, &ctx.particles.inv_mass);
        let l = &self.lengths;
        for k in 0..l.p.len() {
            let (p, q) = (l.p[k] as usize, l.q[k] as usize);
            let d2 = x.get(q).distance_squared(x.get(p));
            let s2 = l.s[k] * l.s[k];
            let (phi, dphi) = self.phi(k, s2 * d2 - l.g0[k]);
            // Spectral norm of the pair's block: s² (|φ| + 2 s² φ' |d|²).
            let stiff = s2 * (phi.abs() + 2.0 * s2 * dphi * d2);
            let cross = (w[p] * w[q]).sqrt();
            k_row[p] += stiff * (w[p] + cross);
            k_row[q] += stiff * (w[q] + cross);
        }
        let a = &self.angles;
        for k in 0..a.p.len() {
            let idx = [a.p[k] as usize, a.a[k] as usize, a.b[k] as usize];
            let u = (x.get(idx[1]) - x.get(idx[0])) * a.si[k];
            let v = (x.get(idx[2]) - x.get(idx[0])) * a.sj[k];
            let eta = a.eta[k] * self.strength;
            let alpha = eta * (u.dot(v) - a.g0[k]);
            let g = (u.length() * a.sj[k] + v.length() * a.si[k]).powi(2);
            let stiff = 2.0 * (eta * g + alpha.abs() * a.si[k] * a.sj[k]);
            for &n in &idx {
                k_row[n] += stiff * 2.0 * w[n];
            }
        }
    }

    fn measures(&self, state: &State) -> Vec<(&'static str, f64)> {
        if self.cells.is_empty() {
            return Vec::new();
        }
        vec![
            ("inverted_cells", self.inverted_cells(&state.x) as f64),
            ("min_cell_volume_ratio", self.min_volume_ratio(&state.x)),
        ]
    }

    fn segments(&self, out: &mut Vec<[u32; 2]>) {
        let l = &self.lengths;
        out.extend((0..l.p.len()).filter(|&k| l.kind[k] == LengthKind::Metric).map(|k| [l.p[k], l.q[k]]));
    }

    /// Rest length of each metric constraint, √G⁰ / s.
    fn segment_rest_lengths(&self, out: &mut Vec<f64>) {
        let l = &self.lengths;
        out.extend((0..l.p.len()).filter(|&k| l.kind[k] == LengthKind::Metric).map(|k| l.g0[k].sqrt() / l.s[k]));
    }

    fn counts(&self) -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = self
            .family_counts()
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (format!("{} {k:?} constraints", self.name), *n))
            .collect();
        if !self.angles.p.is_empty() {
            out.push((format!("{} angle constraints", self.name), self.angles.p.len()));
        }
        if !self.cells.is_empty() {
            out.push((format!("{} cells", self.name), self.cells.len()));
        }
        out
    }

    fn parameters(&self) -> Vec<Parameter> {
        vec![
            Parameter { key: "strength".into(), value: self.strength, unit: "", min: 0.0, max: 10.0 },
            Parameter { key: "pillar_strength".into(), value: self.pillar_strength, unit: "", min: 0.0, max: 20.0 },
        ]
    }

    fn set_parameter(&mut self, key: &str, value: f64) -> Result<(), ParameterError> {
        let slot = match key {
            "strength" => &mut self.strength,
            "pillar_strength" => &mut self.pillar_strength,
            _ => return Err(ParameterError::Unknown { key: key.into(), known: "strength, pillar_strength".into() }),
        };
        require_non_negative(key, value)?;
        *slot = value;
        Ok(())
    }
}
