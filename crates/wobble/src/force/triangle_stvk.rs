//! Triangle St Venant–Kirchhoff membrane (Volino et al. 2009; physics notes §4), the
//! finite-element cloth model 000 compares its springs against.
//!
//! Each triangle (x0, x1, x2) keeps its rest shape as the inverse B = D_m⁻¹ of the
//! 2×2 matrix of its rest edges in its own plane, and its rest area A0. The
//! deformation gradient is F = [x1 − x0, x2 − x0] B (3×2), the Green strain
//! E = ½ (FᵀF − I), and the energy
//!
//! ```text
//! W = A0 [ μ E:E + (λ/2) tr(E)² ] ,   S = 2μ E + λ tr(E) I ,   P = F S .
//! ```
//!
//! Writing F = Σ_k x_k g_kᵀ with g_1, g_2 the rows of B and g_0 = −g_1 − g_2, the
//! force on corner k is f_k = −A0 P g_k, and the Jacobian block (k, l) is
//!
//! ```text
//! ∂f_k/∂x_l = −A0 [ (g_lᵀ S g_k) I + μ (g_l·g_k) F Fᵀ + μ (F g_l)(F g_k)ᵀ + λ (F g_k)(F g_l)ᵀ ]
//! ```
//!
//! which is symmetric in the sense ∂f_k/∂x_l = (∂f_l/∂x_k)ᵀ. Under compression S has
//! negative entries and the blocks can be indefinite (a membrane buckles). The
//! model has no damping of its own: implicit Euler's numerical damping, air drag or
//! the springs' damping (bend springs stay) provide it. μ and λ are 2D (thickness-
//! integrated) Lamé parameters in N/m; [`Membrane::from_young`] converts a 2D
//! Young's modulus and Poisson ratio under plane stress.

use glam::{DMat3, DVec2, DVec3};

use super::{ForceContext, ForceTerm, JacobianSink, Loads, Parameter, ParameterError, require_non_negative};
use crate::model::{State, Vec3s};

/// Material of a StVK membrane: 2D Lamé parameters, N/m.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Membrane {
    /// Shear modulus μ, N/m.
    pub mu: f64,
    /// Lamé's first parameter λ, N/m.
    pub lambda: f64,
}

impl Membrane {
    /// From a 2D Young's modulus `e` (N/m) and Poisson ratio `nu` under plane stress:
    /// μ = E / (2 (1 + ν)), λ = E ν / (1 − ν²).
    #[must_use]
    pub fn from_young(e: f64, nu: f64) -> Self {
        Self { mu: e / (2.0 * (1.0 + nu)), lambda: e * nu / (1.0 - nu * nu) }
    }
}

/// Why a membrane could not be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MembraneError {
    /// A triangle's rest area is zero (or a corner is out of range).
    #[error("membrane triangle {index} ({a}, {b}, {c}) is degenerate or out of range at rest")]
    Degenerate {
        /// Triangle index.
        index: usize,
        /// Corners.
        a: u32,
        /// Corners.
        b: u32,
        /// Corners.
        c: u32,
    },
    /// μ or λ negative or not finite.
    #[error("membrane Lamé parameters μ = {mu} N/m, λ = {lambda} N/m must be finite and ≥ 0")]
    BadMaterial {
        /// μ.
        mu: f64,
        /// λ.
        lambda: f64,
    },
}

/// The membrane force term over a set of triangles.
#[derive(Clone, Debug)]
pub struct TriangleStvk {
    name: String,
    tris: Vec<[u32; 3]>,
    /// Per triangle (g0, g1, g2).
    g: Vec<[DVec2; 3]>,
    area: Vec<f64>,
    material: Membrane,
}

impl TriangleStvk {
    /// A membrane over `tris` (particle indices) whose rest shape is `x`.
    pub fn new(name: &str, tris: Vec<[u32; 3]>, x: &Vec3s, material: Membrane) -> Result<Self, MembraneError> {
        if !(material.mu.is_finite() && material.mu >= 0.0 && material.lambda.is_finite() && material.lambda >= 0.0) {
            return Err(MembraneError::BadMaterial { mu: material.mu, lambda: material.lambda });
        }
        let mut g = Vec::with_capacity(tris.len());
        let mut area = Vec::with_capacity(tris.len());
        for (index, t) in tris.iter().enumerate() {
            let degenerate = MembraneError::Degenerate { index, a: t[0], b: t[1], c: t[2] };
            if t.iter().any(|&p| p as usize >= x.len()) {
                return Err(degenerate);
            }
            let [x0, x1, x2] = x.gather(t);
            let (e1, e2) = (x1 - x0, x2 - x0);
            let n = e1.cross(e2);
            let a0 = 0.5 * n.length();
            if !(a0.is_finite() && a0 > 1e-14 * e1.length_squared().max(e2.length_squared())) {
                return Err(degenerate);
            }
            // Rest frame: u along e1, w in the plane perpendicular to it.
            let u = e1.normalize();
            let w = n.cross(e1).normalize();
            let dm = glam::DMat2::from_cols(DVec2::new(e1.dot(u), 0.0), DVec2::new(e2.dot(u), e2.dot(w)));
            let b = dm.inverse();
            // F = [e1 e2] B: g_1 and g_2 are the rows of B.
            let g1 = DVec2::new(b.x_axis.x, b.y_axis.x);
            let g2 = DVec2::new(b.x_axis.y, b.y_axis.y);
            g.push([-g1 - g2, g1, g2]);
            area.push(a0);
        }
        Ok(Self { name: name.to_owned(), tris, g, area, material })
    }

    /// Number of triangles.
    #[must_use]
    pub fn len(&self) -> usize {
        self.tris.len()
    }

    /// True when there are no triangles.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tris.is_empty()
    }

    /// Rest area of triangle `t`, m².
    #[must_use]
    pub fn rest_area(&self, t: usize) -> f64 {
        self.area[t]
    }

    /// The material.
    #[must_use]
    pub fn material(&self) -> Membrane {
        self.material
    }

    /// F's columns (3-vectors) for triangle `t` in `x`.
    fn deformation(&self, t: usize, x: &Vec3s) -> [DVec3; 2] {
        let [p0, p1, p2] = x.gather(&self.tris[t]);
        let g = &self.g[t];
        let (d1, d2) = (p1 - p0, p2 - p0);
        // F = [d1 d2] B, column a = d1 B[0][a] + d2 B[1][a] = d1 g1[a] + d2 g2[a].
        [d1 * g[1].x + d2 * g[2].x, d1 * g[1].y + d2 * g[2].y]
    }

    /// Green strain (E00, E01, E11) and second Piola–Kirchhoff stress S (same order).
    fn strain_stress(&self, f: [DVec3; 2]) -> ([f64; 3], [f64; 3]) {
        let e = [0.5 * (f[0].dot(f[0]) - 1.0), 0.5 * f[0].dot(f[1]), 0.5 * (f[1].dot(f[1]) - 1.0)];
        let (mu, la) = (self.material.mu, self.material.lambda);
        let tr = e[0] + e[2];
        (e, [2.0 * mu * e[0] + la * tr, 2.0 * mu * e[1], 2.0 * mu * e[2] + la * tr])
    }

    /// Energy of triangle `t`, J.
    #[must_use]
    pub fn triangle_energy(&self, t: usize, x: &Vec3s) -> f64 {
        let (e, _) = self.strain_stress(self.deformation(t, x));
        let tr = e[0] + e[2];
        let ee = e[0] * e[0] + 2.0 * e[1] * e[1] + e[2] * e[2];
        self.area[t] * (self.material.mu * ee + 0.5 * self.material.lambda * tr * tr)
    }

    /// Forces on the three corners of triangle `t`.
    #[must_use]
    pub fn triangle_forces(&self, t: usize, x: &Vec3s) -> [DVec3; 3] {
        let f = self.deformation(t, x);
        let (_, s) = self.strain_stress(f);
        let a0 = self.area[t];
        self.g[t].map(|g| {
            // P g = F (S g)
            let sg = DVec2::new(s[0] * g.x + s[1] * g.y, s[1] * g.x + s[2] * g.y);
            -(f[0] * sg.x + f[1] * sg.y) * a0
        })
    }

    /// Jacobian blocks ∂f_k/∂x_l of triangle `t`, indexed `[k][l]`. With `definite`,
    /// the stress S in the geometric term is replaced by its positive part (negative
    /// eigenvalues set to zero), which makes −∂f/∂x positive semi-definite.
    #[must_use]
    pub fn triangle_jacobian(&self, t: usize, x: &Vec3s, definite: bool) -> [[DMat3; 3]; 3] {
        let f = self.deformation(t, x);
        let (_, s) = self.strain_stress(f);
        let s = if definite { positive_part(s) } else { s };
        let (mu, la, a0) = (self.material.mu, self.material.lambda, self.area[t]);
        let g = &self.g[t];
        let fg = g.map(|gk| f[0] * gk.x + f[1] * gk.y);
        let outer = |a: DVec3, b: DVec3| DMat3::from_cols(a * b.x, a * b.y, a * b.z);
        let fft = outer(f[0], f[0]) + outer(f[1], f[1]);
        let mut out = [[DMat3::ZERO; 3]; 3];
        for k in 0..3 {
            for l in 0..3 {
                let (gk, gl) = (g[k], g[l]);
                let sgk = DVec2::new(s[0] * gk.x + s[1] * gk.y, s[1] * gk.x + s[2] * gk.y);
                let m = DMat3::IDENTITY * gl.dot(sgk)
                    + fft * (mu * gl.dot(gk))
                    + outer(fg[l], fg[k]) * mu
                    + outer(fg[k], fg[l]) * la;
                out[k][l] = m * -a0;
            }
        }
        out
    }
}

/// Positive part of a symmetric 2×2 matrix (s00, s01, s11): its eigen-decomposition
/// with negative eigenvalues set to zero.
fn positive_part(s: [f64; 3]) -> [f64; 3] {
    let (a, b, c) = (s[0], s[1], s[2]);
    let mean = 0.5 * (a + c);
    let rad = (0.25 * (a - c) * (a - c) + b * b).sqrt();
    let (l1, l2) = (mean + rad, mean - rad);
    if l2 >= 0.0 {
        return s;
    }
    if l1 <= 0.0 {
        return [0.0; 3];
    }
    // Only l1 > 0 survives: l1 v vᵀ with v its unit eigenvector.
    let v = if b.abs() > 1e-300 {
        DVec2::new(b, l1 - a).normalize()
    } else if a >= c {
        DVec2::X
    } else {
        DVec2::Y
    };
    [l1 * v.x * v.x, l1 * v.x * v.y, l1 * v.y * v.y]
}

impl ForceTerm for TriangleStvk {
    fn name(&self) -> &str {
        &self.name
    }

    fn add_forces(&mut self, ctx: &ForceContext<'_>, out: &mut Loads) {
        let x = &ctx.state.x;
        for t in 0..self.tris.len() {
            let f = self.triangle_forces(t, x);
            for (c, &p) in self.tris[t].iter().enumerate() {
                out.f.add(p as usize, f[c]);
            }
        }
    }

    fn potential_energy(&self, ctx: &ForceContext<'_>) -> f64 {
        (0..self.tris.len()).map(|t| self.triangle_energy(t, &ctx.state.x)).sum()
    }

    fn add_jacobian(&self, ctx: &ForceContext<'_>, sink: &mut dyn JacobianSink) {
        for t in 0..self.tris.len() {
            let j = self.triangle_jacobian(t, &ctx.state.x, sink.definite());
            let p = self.tris[t];
            for k in 0..3 {
                for l in 0..3 {
                    sink.add_dfdx(p[k] as usize, p[l] as usize, j[k][l]);
                }
            }
        }
    }

    fn has_jacobian(&self) -> bool {
        true
    }

    /// At rest each block (k, l) has norm ≤ A0 (2μ + λ) |g_k| |g_l|: counted as an
    /// element of that stiffness between k and l.
    fn add_stiffness_bound(&self, ctx: &ForceContext<'_>, k_row: &mut [f64], _c_row: &mut [f64]) {
        let w = &ctx.particles.inv_mass;
        let modulus = 2.0 * self.material.mu + self.material.lambda;
        for t in 0..self.tris.len() {
            let p = self.tris[t].map(|p| p as usize);
            for k in 0..3 {
                for l in 0..3 {
                    if k != l {
                        let stiff = self.area[t] * modulus * self.g[t][k].length() * self.g[t][l].length();
                        k_row[p[k]] += stiff * (w[p[k]] + (w[p[k]] * w[p[l]]).sqrt());
                    }
                }
            }
        }
    }

    fn measures(&self, state: &State) -> Vec<(&'static str, f64)> {
        let x = &state.x;
        let (mut rest, mut now) = (0.0, 0.0);
        for t in 0..self.tris.len() {
            let [p0, p1, p2] = x.gather(&self.tris[t]);
            rest += self.area[t];
            now += 0.5 * (p1 - p0).cross(p2 - p0).length();
        }
        vec![("membrane_area_ratio", if rest > 0.0 { now / rest } else { 1.0 })]
    }

    fn counts(&self) -> Vec<(String, usize)> {
        vec![("membrane triangles".to_owned(), self.tris.len())]
    }

    fn parameters(&self) -> Vec<Parameter> {
        let p = |key: &str, value: f64| Parameter {
            key: key.to_owned(),
            value,
            unit: "N/m",
            min: 0.0,
            max: (10.0 * value).max(1.0),
        };
        vec![p("lame_mu", self.material.mu), p("lame_lambda", self.material.lambda)]
    }

    fn set_parameter(&mut self, key: &str, value: f64) -> Result<(), ParameterError> {
        let target = match Some(key) {
            Some("lame_mu") => &mut self.material.mu,
            Some("lame_lambda") => &mut self.material.lambda,
            _ => {
                return Err(ParameterError::Unknown {
                    key: key.to_owned(),
                    known: super::known_keys(&self.parameters()),
                });
            }
        };
        require_non_negative(key, value)?;
        *target = value;
        Ok(())
    }
}
