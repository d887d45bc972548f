//! Ideal-gas pressure inside closed surfaces (004 §4.5, Matyka 2003; physics notes
//! §9).
//!
//! # The model
//! A closed surface encloses a gas at constant temperature, so P V = nRT with the
//! product nRT a constant of the body: the "pressure" parameter (004's PRESSURE,
//! default [`DEFAULT_PRESSURE`]). The pressure P = nRT / V follows the enclosed
//! volume V, computed exactly from the current positions:
//!
//! * 3D, outward-wound triangles: V = (1/6) Σ_faces x_a · (x_b × x_c) (divergence
//!   theorem, 004 eq. 13);
//! * 2D, a counter-clockwise loop in the x-y plane: the area A = ½ Σ_edges
//!   (x_a y_b − x_b y_a) (shoelace, Green's theorem, 004 eq. 14); "volume" below
//!   means this area.
//!
//! Each face pushes along its own normal: F = P · area · n̂ = (P/2) n₂ with
//! n₂ = (x_b − x_a) × (x_c − x_a), one third to each vertex; in 2D each edge pushes
//! with P · length · n̂ = P R(x_b − x_a), R(u) = (u_y, −u_x, 0), half to each end.
//! (The thesis's "estimated" spring normals, §4.5.2.2, are not used: it shows they
//! can return the spring itself.)
//!
//! # Energy
//! The per-vertex share n₂/6 summed over the faces around a vertex equals ∂V/∂x_i
//! exactly on a closed surface (the terms x_i × (x_b − x_c) cancel around the fan),
//! so the force is f_i = P ∂V/∂x_i = nRT ∂(ln V)/∂x_i = −∂U/∂x_i with
//!
//! ```text
//! U = −nRT ln(V / V_ref)
//! ```
//!
//! the work the gas can still do expanding from V (isothermal). V_ref is the volume
//! when the term was built, so U starts at zero. Units: nRT is an energy (J) in
//! both 3D (Pa · m³) and 2D (N/m · m²).
//!
//! # Jacobian
//! With g_i = ∂V/∂x_i (the face shares above) and P = nRT/V:
//!
//! ```text
//! ∂f_i/∂x_j = P ∂g_i/∂x_j − (P/V) g_i g_jᵀ
//! ```
//!
//! The first part is local: for a face (a, b, c), ∂n₂/∂x_a = S(x_c − x_b),
//! ∂n₂/∂x_b = S(x_a − x_c), ∂n₂/∂x_c = S(x_b − x_a) with S(e) u = e × u, so each
//! pair of the face's vertices gets (P/6) S(e_j); in 2D, ∂(R(x_b − x_a))/∂x_b = R and
//! ∂/∂x_a = −R, times P/2. The second part couples every pair of the surface's
//! vertices (a dense rank-one block): [`PressureJacobian`] chooses whether
//! [`ForceTerm::add_jacobian`] adds it. There is no velocity dependence.
//!
//! # Limits
//! A surface whose volume reaches zero or turns inside out has no meaningful
//! pressure: the force grows without bound and the world reports a blow-up. 2D loops
//! use only x and y; their particles must stay in the z = 0 plane (nothing here
//! pushes them out of it).

use std::collections::HashMap;

use glam::{DMat3, DVec3};

use super::{ForceContext, ForceTerm, JacobianSink, Loads, Parameter, ParameterError, require_non_negative};
use crate::model::Vec3s;

/// Default gas constant nRT, J (004 §7.2.1, PRESSURE).
pub const DEFAULT_PRESSURE: f64 = 20.0;

/// Surfaces with at most this many vertices add the dense rank-one part of their
/// Jacobian by default (see [`PressureJacobian`]): 512² blocks of 72 bytes is about
/// 19 MB, the most a dense coupling should cost.
pub const DENSE_JACOBIAN_MAX_VERTICES: usize = 512;

/// A closed surface, as particle indices.
#[derive(Clone, Debug, PartialEq)]
pub enum ClosedSurface {
    /// Triangles wound counter-clockwise seen from outside (3D).
    Triangles(Vec<[u32; 3]>),
    /// Segments forming one counter-clockwise loop in the x-y plane (2D).
    Loop(Vec<[u32; 2]>),
}

/// Why a surface cannot enclose a gas.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SurfaceError {
    /// It has no elements.
    #[error("the surface has no faces")]
    Empty,
    /// An edge is not shared by exactly two consistently wound faces.
    #[error(
        "the surface is not closed and consistently wound: the directed edge {a} → {b} appears {forward} time(s) and {b} → {a} {backward} time(s) (each must appear exactly once)"
    )]
    NotClosed {
        /// First end.
        a: u32,
        /// Second end.
        b: u32,
        /// Times a → b appears.
        forward: usize,
        /// Times b → a appears.
        backward: usize,
    },
    /// A loop vertex does not start exactly one segment and end exactly one.
    #[error("the loop is not one closed chain: particle {0} does not start exactly one segment and end exactly one")]
    BrokenLoop(u32),
    /// The enclosed volume (area for a loop) is not positive: the surface is
    /// wound inward (or flat), and its gas would pull it in.
    #[error(
        "the surface encloses a volume of {0:e} (m³, or m² for a loop): it must be wound outward (counter-clockwise seen from outside) around a positive volume"
    )]
    NotOutward(f64),
}

impl ClosedSurface {
    /// Enclosed volume (m³; area in m² for a loop), positive when wound outward.
    #[must_use]
    pub fn measure(&self, x: &Vec3s) -> f64 {
        match self {
            ClosedSurface::Triangles(t) => crate::model::closed_surface_volume(t, x),
            ClosedSurface::Loop(l) => crate::model::loop_area_xy(l, x),
        }
    }

    /// The particles on the surface, sorted, each once.
    #[must_use]
    pub fn vertices(&self) -> Vec<u32> {
        let mut v: Vec<u32> = match self {
            ClosedSurface::Triangles(t) => t.iter().flatten().copied().collect(),
            ClosedSurface::Loop(l) => l.iter().flatten().copied().collect(),
        };
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Number of faces (segments for a loop).
    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            ClosedSurface::Triangles(t) => t.len(),
            ClosedSurface::Loop(l) => l.len(),
        }
    }

    /// True when it has no faces.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The same surface wound the other way.
    #[must_use]
    pub fn reversed(&self) -> ClosedSurface {
        match self {
            ClosedSurface::Triangles(t) => ClosedSurface::Triangles(t.iter().map(|&[a, b, c]| [a, c, b]).collect()),
            ClosedSurface::Loop(l) => ClosedSurface::Loop(l.iter().map(|&[a, b]| [b, a]).collect()),
        }
    }

    /// Checks that the surface is closed and consistently wound: every directed
    /// triangle edge a → b is matched by exactly one b → a (so the divergence
    /// theorem applies and the face shares sum to ∂V/∂x); every loop vertex starts
    /// one segment and ends one.
    pub fn check_closed(&self) -> Result<(), SurfaceError> {
        if self.is_empty() {
            return Err(SurfaceError::Empty);
        }
        match self {
            ClosedSurface::Triangles(tris) => {
                let mut directed: HashMap<(u32, u32), usize> = HashMap::new();
                for t in tris {
                    for k in 0..3 {
                        *directed.entry((t[k], t[(k + 1) % 3])).or_insert(0) += 1;
                    }
                }
                // Report the first offending edge in face order, so the message is
                // reproducible.
                for t in tris {
                    for k in 0..3 {
                        let (a, b) = (t[k], t[(k + 1) % 3]);
                        let forward = directed[&(a, b)];
                        let backward = directed.get(&(b, a)).copied().unwrap_or(0);
                        if forward != 1 || backward != 1 {
                            return Err(SurfaceError::NotClosed { a, b, forward, backward });
                        }
                    }
                }
                Ok(())
            }
            ClosedSurface::Loop(segs) => {
                let mut starts: HashMap<u32, usize> = HashMap::new();
                let mut ends: HashMap<u32, usize> = HashMap::new();
                for &[a, b] in segs {
                    *starts.entry(a).or_insert(0) += 1;
                    *ends.entry(b).or_insert(0) += 1;
                }
                for &[a, b] in segs {
                    for p in [a, b] {
                        if starts.get(&p) != Some(&1) || ends.get(&p) != Some(&1) {
                            return Err(SurfaceError::BrokenLoop(p));
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// Winding number of the surface around point `p`: 1 inside, 0 outside, ½ on
    /// the surface (generalized winding number: the solid angle of every triangle
    /// seen from `p` over 4π, by Van Oosterom and Strackee's formula; for a loop,
    /// the angle it sweeps around `p`'s x-y position over 2π). A global inside test
    /// that needs no closest point.
    #[must_use]
    pub fn winding_number(&self, x: &Vec3s, p: DVec3) -> f64 {
        match self {
            ClosedSurface::Triangles(tris) => {
                let mut total = 0.0;
                for t in tris {
                    let [a, b, c] = x.gather(t);
                    let (a, b, c) = (a - p, b - p, c - p);
                    let (la, lb, lc) = (a.length(), b.length(), c.length());
                    let num = a.dot(b.cross(c));
                    let den = la * lb * lc + a.dot(b) * lc + a.dot(c) * lb + b.dot(c) * la;
                    total += 2.0 * num.atan2(den);
                }
                total / (4.0 * std::f64::consts::PI)
            }
            ClosedSurface::Loop(segs) => {
                let mut total = 0.0;
                for &[a, b] in segs {
                    let (u, v) = (x.get(a as usize) - p, x.get(b as usize) - p);
                    total += (u.x * v.y - u.y * v.x).atan2(u.x * v.x + u.y * v.y);
                }
                total / std::f64::consts::TAU
            }
        }
    }

    /// Adds `scale` · g_i to `out[i]` for every surface particle, with g_i the face
    /// shares of ∂V/∂x_i (n₂/6 per triangle, R(x_b − x_a)/2 per loop segment).
    pub fn add_gradient(&self, x: &Vec3s, scale: f64, out: &mut Vec3s) {
        match self {
            ClosedSurface::Triangles(tris) => {
                let s = scale / 6.0;
                for t in tris {
                    let [a, b, c] = x.gather(t);
                    let f = (b - a).cross(c - a) * s;
                    for &i in t {
                        out.add(i as usize, f);
                    }
                }
            }
            ClosedSurface::Loop(segs) => {
                let s = scale / 2.0;
                for &[a, b] in segs {
                    let f = rot(x.get(b as usize) - x.get(a as usize)) * s;
                    out.add(a as usize, f);
                    out.add(b as usize, f);
                }
            }
        }
    }
}

/// R(u) = (u_y, −u_x, 0): the outward normal (times length) of a counter-clockwise
/// edge u in the x-y plane.
#[inline]
fn rot(u: DVec3) -> DVec3 {
    DVec3::new(u.y, -u.x, 0.0)
}

/// The matrix of [`rot`].
fn rot_matrix() -> DMat3 {
    DMat3::from_cols(DVec3::new(0.0, -1.0, 0.0), DVec3::new(1.0, 0.0, 0.0), DVec3::ZERO)
}

/// S(e), the cross-product matrix: S(e) u = e × u.
#[must_use]
pub fn skew(e: DVec3) -> DMat3 {
    DMat3::from_cols(DVec3::new(0.0, e.z, -e.y), DVec3::new(-e.z, 0.0, e.x), DVec3::new(e.y, -e.x, 0.0))
}

/// Which Jacobian blocks [`Pressure`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PressureJacobian {
    /// Both parts: exact (n² blocks for n surface particles).
    Exact,
    /// Only the local part P ∂g_i/∂x_j (blocks between particles of one face); the
    /// rank-one part −(P/V) g gᵀ is left out. It is negative semi-definite in
    /// ∂f/∂x, so implicit solvers stay well posed without it and treat the gas's
    /// compressibility explicitly.
    Local,
}

/// One gas-filled surface.
#[derive(Clone, Debug, PartialEq)]
pub struct PressureSurface {
    /// Label in parameter keys (`"outer"`, `"inner"`).
    pub label: String,
    /// The surface.
    pub surface: ClosedSurface,
    /// nRT, J (≥ 0; 0 switches the surface off).
    pub nrt: f64,
    /// Volume at which the potential energy is zero, m³ (m² in 2D).
    pub v_ref: f64,
    /// Jacobian blocks reported.
    pub jacobian: PressureJacobian,
    /// Surface particles, sorted (for the rank-one Jacobian and the stiffness bound).
    vertices: Vec<u32>,
}

impl PressureSurface {
    /// A surface with gas constant `nrt` (J), its reference volume taken at `x`.
    /// Fails when the surface is not closed and wound outward at `x`.
    pub fn new(label: &str, surface: ClosedSurface, nrt: f64, x: &Vec3s) -> Result<Self, SurfaceError> {
        surface.check_closed()?;
        let vertices = surface.vertices();
        let jacobian = if vertices.len() <= DENSE_JACOBIAN_MAX_VERTICES {
            PressureJacobian::Exact
        } else {
            PressureJacobian::Local
        };
        let v_ref = surface.measure(x);
        if v_ref.is_nan() || v_ref <= 0.0 {
            return Err(SurfaceError::NotOutward(v_ref));
        }
        Ok(Self { label: label.to_owned(), surface, nrt, v_ref, jacobian, vertices })
    }

    /// Current pressure nRT / V (Pa in 3D, N/m in 2D) and volume at `x`.
    #[must_use]
    pub fn pressure(&self, x: &Vec3s) -> (f64, f64) {
        let v = self.surface.measure(x);
        (self.nrt / v, v)
    }
}

/// The pressure force term of one body: its outer surface and, for a two-layer
/// body, optionally its inner surface, each with its own nRT.
#[derive(Clone, Debug, PartialEq)]
pub struct Pressure {
    /// Term name: `pressure-<body>`.
    name: String,
    /// The gas-filled surfaces.
    pub surfaces: Vec<PressureSurface>,
}

impl Pressure {
    /// A term named `pressure-<body>` over `surfaces`.
    #[must_use]
    pub fn new(body: &str, surfaces: Vec<PressureSurface>) -> Self {
        Self { name: format!("pressure-{body}"), surfaces }
    }

    /// The surface labelled `label`.
    #[must_use]
    pub fn surface(&self, label: &str) -> Option<&PressureSurface> {
        self.surfaces.iter().find(|s| s.label == label)
    }
}

impl ForceTerm for Pressure {
    fn name(&self) -> &str {
        &self.name
    }

    /// f_i = (nRT / V) g_i for every surface with nRT ≠ 0: two passes over the
    /// faces (volume, then forces), serial and in face order, so deterministic.
    fn add_forces(&mut self, ctx: &ForceContext<'_>, out: &mut Loads) {
        for s in &self.surfaces {
            if s.nrt == 0.0 {
                continue;
            }
            let (p, _) = s.pressure(&ctx.state.x);
            s.surface.add_gradient(&ctx.state.x, p, &mut out.f);
        }
    }

    /// U = −Σ nRT ln(V / V_ref), J; infinite once a volume is no longer positive.
    fn potential_energy(&self, ctx: &ForceContext<'_>) -> f64 {
        self.surfaces
            .iter()
            .filter(|s| s.nrt != 0.0)
            .map(|s| {
                let v = s.surface.measure(&ctx.state.x);
                if v > 0.0 && s.v_ref > 0.0 { -s.nrt * (v / s.v_ref).ln() } else { f64::INFINITY }
            })
            .sum()
    }

    /// The local part P ∂g_i/∂x_j and, with [`PressureJacobian::Exact`], the rank-one
    /// part −(P/V) g gᵀ. A sink that asks for a definite matrix
    /// ([`JacobianSink::definite`]) gets the rank-one part alone (negative
    /// semi-definite while P ≥ 0): the local part is P times the Hessian of the
    /// volume, which is trace-free and so indefinite.
    fn add_jacobian(&self, ctx: &ForceContext<'_>, sink: &mut dyn JacobianSink) {
        let x = &ctx.state.x;
        let definite = sink.definite();
        for s in &self.surfaces {
            if s.nrt == 0.0 {
                continue;
            }
            let (p, v) = s.pressure(x);
            match &s.surface {
                _ if definite => {}
                ClosedSurface::Triangles(tris) => {
                    for t in tris {
                        let [a, b, c] = x.gather(t);
                        let e = [c - b, a - c, b - a];
                        for &i in t {
                            for (&j, &ej) in t.iter().zip(&e) {
                                sink.add_dfdx(i as usize, j as usize, skew(ej) * (p / 6.0));
                            }
                        }
                    }
                }
                ClosedSurface::Loop(segs) => {
                    let r = rot_matrix() * (p / 2.0);
                    for &[a, b] in segs {
                        for i in [a, b] {
                            sink.add_dfdx(i as usize, b as usize, r);
                            sink.add_dfdx(i as usize, a as usize, -r);
                        }
                    }
                }
            }
            if s.jacobian == PressureJacobian::Exact && !(definite && p < 0.0) {
                let g = gradients(s, x);
                let coef = -p / v;
                for (i, gi) in s.vertices.iter().zip(&g) {
                    for (j, gj) in s.vertices.iter().zip(&g) {
                        sink.add_dfdx(*i as usize, *j as usize, outer(*gi, *gj) * coef);
                    }
                }
            }
        }
    }

    fn has_jacobian(&self) -> bool {
        true
    }

    /// Gershgorin rows Σ_j ‖K_ij‖ √(w_i w_j) of both Jacobian parts (the bound holds
    /// whichever part [`PressureJacobian`] reports): |P| |e_j| / 6 per face pair
    /// (|P| / 2 per loop pair), plus (|P| / V) |g_i| Σ_j |g_j| for the gas's
    /// compressibility.
    fn add_stiffness_bound(&self, ctx: &ForceContext<'_>, k_row: &mut [f64], _c_row: &mut [f64]) {
        let (x, w) = (&ctx.state.x, &ctx.particles.inv_mass);
        for s in &self.surfaces {
            if s.nrt == 0.0 {
                continue;
            }
            let (p, v) = s.pressure(x);
            let p = p.abs();
            match &s.surface {
                ClosedSurface::Triangles(tris) => {
                    for t in tris {
                        let [a, b, c] = x.gather(t);
                        let e = [(c - b).length(), (a - c).length(), (b - a).length()];
                        for &i in t {
                            for (&j, &ej) in t.iter().zip(&e) {
                                k_row[i as usize] += p / 6.0 * ej * (w[i as usize] * w[j as usize]).sqrt();
                            }
                        }
                    }
                }
                ClosedSurface::Loop(segs) => {
                    for &[a, b] in segs {
                        for i in [a, b] {
                            for j in [a, b] {
                                k_row[i as usize] += p / 2.0 * (w[i as usize] * w[j as usize]).sqrt();
                            }
                        }
                    }
                }
            }
            let g = gradients(s, x);
            let sum: f64 = s.vertices.iter().zip(&g).map(|(&j, gj)| gj.length() * w[j as usize].sqrt()).sum();
            for (&i, gi) in s.vertices.iter().zip(&g) {
                k_row[i as usize] += p / v.abs() * gi.length() * w[i as usize].sqrt() * sum;
            }
        }
    }

    fn counts(&self) -> Vec<(String, usize)> {
        self.surfaces
            .iter()
            .map(|s| {
                let what = match s.surface {
                    ClosedSurface::Triangles(_) => "faces",
                    ClosedSurface::Loop(_) => "edges",
                };
                (format!("{} pressure {what}", s.label), s.surface.len())
            })
            .collect()
    }

    /// `<label>` = nRT (J) for every surface (`outer`, `inner`).
    fn parameters(&self) -> Vec<Parameter> {
        self.surfaces
            .iter()
            .map(|s| Parameter {
                key: s.label.clone(),
                value: s.nrt,
                unit: "J",
                min: 0.0,
                max: (10.0 * s.nrt).max(10.0 * DEFAULT_PRESSURE),
            })
            .collect()
    }

    fn set_parameter(&mut self, key: &str, value: f64) -> Result<(), ParameterError> {
        let known = super::known_keys(&self.parameters());
        let Some(s) = self.surfaces.iter_mut().find(|s| s.label == key) else {
            return Err(ParameterError::Unknown { key: key.to_owned(), known });
        };
        require_non_negative(key, value)?;
        s.nrt = value;
        Ok(())
    }
}

/// g_i = ∂V/∂x_i per surface vertex, in the order of `s.vertices`.
fn gradients(s: &PressureSurface, x: &Vec3s) -> Vec<DVec3> {
    let local: HashMap<u32, usize> = s.vertices.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let mut g = vec![DVec3::ZERO; s.vertices.len()];
    match &s.surface {
        ClosedSurface::Triangles(tris) => {
            for t in tris {
                let [a, b, c] = x.gather(t);
                let share = (b - a).cross(c - a) / 6.0;
                for i in t {
                    g[local[i]] += share;
                }
            }
        }
        ClosedSurface::Loop(segs) => {
            for &[a, b] in segs {
                let share = rot(x.get(b as usize) - x.get(a as usize)) / 2.0;
                g[local[&a]] += share;
                g[local[&b]] += share;
            }
        }
    }
    g
}

/// a bᵀ.
fn outer(a: DVec3, b: DVec3) -> DMat3 {
    DMat3::from_cols(a * b.x, a * b.y, a * b.z)
}
