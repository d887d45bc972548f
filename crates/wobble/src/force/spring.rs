//! Two-particle springs of every law, with relative-velocity damping.
//!
//! For a spring between particles a and b with rest length L, r = |x_b − x_a| and
//! unit direction n = (x_b − x_a)/r, the force on a is
//!
//! ```text
//! f_a = [ g(r) + c (v_b − v_a) · n ] n ,   f_b = −f_a
//! ```
//!
//! where g is the law's signed magnitude (positive when stretched, so it pulls the
//! ends together). [`SpringLaw`] holds the laws: linear g(r) = k (r − L) (physics
//! notes §1), two-term StVK (§2) and the full cubic with constraint-based parameters
//! (§3, [`CubicLaw`]). The kernel has one monomorphised loop per law.
//!
//! # The kernel
//! At build time the springs are sorted into *runs*: maximal sequences whose first
//! ends are consecutive particles and whose second ends are a fixed offset further on
//! (a cloth's horizontal springs along one row, all of its vertical springs, ...).
//! A run reads contiguous slices of the position and velocity arrays, so the force
//! loop vectorises (AVX2/AVX-512 chosen at run time), and its results are added to
//! contiguous slices. Springs that form no run of [`MIN_RUN`] go to a scalar
//! "scattered" list.
//!
//! # Determinism
//! Particle i's force is a sum of spring contributions in an order fixed by the data:
//! runs in order, each run in chunks of [`CHUNK`] springs aligned to the run's start,
//! within a chunk first the contributions to first ends, then to second ends; then
//! the scattered springs in index order. Parallel evaluation splits the *particles*
//! into blocks; a block recomputes the few springs it shares with its neighbours and
//! keeps only its own side, so every particle receives the same contributions in the
//! same order whatever the number of blocks or threads. SIMD lanes compute the same
//! IEEE operations as the scalar loop (no fused multiply-add), so results are also
//! bit-identical across instruction sets.

use std::fmt;
use std::sync::OnceLock;

use glam::{DMat3, DVec3};
use rayon::prelude::*;

use super::{
    ForceContext, ForceTerm, JacobianSink, Loads, Parameter, ParameterError, StrainStats, require_non_negative,
};
use crate::model::{State, Vec3s};

/// Shortest sequence of regularly spaced springs kept as a vectorised run.
pub const MIN_RUN: usize = 8;
/// Springs per chunk of a run: the unit of the canonical summation order.
pub const CHUNK: usize = 256;

/// What a spring is for. Labels springs for reports and per-kind parameters; the
/// force does not depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpringKind {
    /// Along grid lines or mesh edges.
    Structural,
    /// Across grid cell diagonals.
    Shear,
    /// Skipping one particle, to resist bending.
    Bend,
    /// Between a two-layer body's inner and outer particle (004).
    Radius,
    /// Two-layer shear spring inner_i–outer_j for edge (i, j) (004).
    ShearLeft,
    /// Two-layer shear spring inner_j–outer_i for edge (i, j) (004).
    ShearRight,
    /// Binds one body to another (a cube hung from a cloth).
    Attachment,
}

impl SpringKind {
    /// Every kind, in label order.
    pub const ALL: [SpringKind; 7] = [
        SpringKind::Structural,
        SpringKind::Shear,
        SpringKind::Bend,
        SpringKind::Radius,
        SpringKind::ShearLeft,
        SpringKind::ShearRight,
        SpringKind::Attachment,
    ];

    /// The label used in scene files and parameter keys.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SpringKind::Structural => "structural",
            SpringKind::Shear => "shear",
            SpringKind::Bend => "bend",
            SpringKind::Radius => "radius",
            SpringKind::ShearLeft => "shear-left",
            SpringKind::ShearRight => "shear-right",
            SpringKind::Attachment => "attachment",
        }
    }
}

impl fmt::Display for SpringKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a spring's force depends on its length.
///
/// Every law is written in the rest-length-free form g(r) = k L ĝ(r/L) with ĝ a
/// polynomial fixed by dimensionless parameters, so one law serves springs of any
/// rest length L and stiffness k (a cloth's structural and shear springs share it),
/// and g'(L) = k for every law.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum SpringLaw {
    /// Hooke: g(r) = k (r − L) (physics notes §1).
    #[default]
    Linear,
    /// Two-term St Venant–Kirchhoff: g(r) = k/(2L²) r³ − (k/2) r (notes §2). Soft in
    /// compression: it pushes back less and less below L/√3.
    StVK,
    /// Full cubic g(r) = a r³ + b r² + c r + d from four slope constraints (notes §3).
    Cubic(CubicLaw),
}

impl SpringLaw {
    /// Signed force magnitude g(r) (N, positive when stretched) and its derivative
    /// g'(r) (N/m) for rest length `rest` (m) and stiffness `k` (N/m).
    #[inline]
    #[must_use]
    pub fn magnitude(&self, r: f64, rest: f64, k: f64) -> (f64, f64) {
        match self {
            SpringLaw::Linear => (k * (r - rest), k),
            SpringLaw::StVK => (stvk_g(r, rest, k), 0.5 * k * (3.0 * (r / rest) * (r / rest) - 1.0)),
            SpringLaw::Cubic(c) => c.magnitude(r, rest, k, 1.0),
        }
    }

    /// g and g' as the Jacobian sees them: for the cubic law with b and d scaled by
    /// its Jacobian damping factor (notes §3, "Jacobian damping"); otherwise equal to
    /// [`SpringLaw::magnitude`].
    #[inline]
    #[must_use]
    pub fn jacobian_magnitude(&self, r: f64, rest: f64, k: f64) -> (f64, f64) {
        match self {
            SpringLaw::Cubic(c) => c.magnitude(r, rest, k, c.jacobian_damping),
            other => other.magnitude(r, rest, k),
        }
    }

    /// Stored energy ∫_L^r g, J.
    #[must_use]
    pub fn energy(&self, r: f64, rest: f64, k: f64) -> f64 {
        match self {
            SpringLaw::Linear => 0.5 * k * (r - rest) * (r - rest),
            SpringLaw::StVK => unit_cubic_energy([0.5, 0.0, -0.5, 0.0], r, rest, k),
            SpringLaw::Cubic(c) => unit_cubic_energy(c.unit, r, rest, k),
        }
    }

    /// Short name for reports and scene files.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            SpringLaw::Linear => "linear",
            SpringLaw::StVK => "stvk",
            SpringLaw::Cubic(_) => "cubic",
        }
    }

    /// The law's force magnitude alone, exactly as the kernel computes it.
    #[inline(always)]
    fn g(&self, l: f64, rest: f64, k: f64) -> f64 {
        match self {
            SpringLaw::Linear => k * (l - rest),
            SpringLaw::StVK => stvk_g(l, rest, k),
            SpringLaw::Cubic(c) => c.g(l, rest, k),
        }
    }
}

/// k L (ρ³ − ρ)/2 with ρ = l/L: the StVK magnitude, as the kernel computes it.
#[inline(always)]
fn stvk_g(l: f64, rest: f64, k: f64) -> f64 {
    let rho = l / rest;
    k * rest * (0.5 * (rho * rho * rho - rho))
}

/// ∫_L^r k L ĝ(r'/L) dr' for ĝ(ρ) = u0 ρ³ + u1 ρ² + u2 ρ + u3.
fn unit_cubic_energy(u: [f64; 4], r: f64, rest: f64, k: f64) -> f64 {
    let rho = r / rest;
    let p = |n: i32| (rho.powi(n) - 1.0) / f64::from(n);
    k * rest * rest * (u[0] * p(4) + u[1] * p(3) + u[2] * p(2) + u[3] * p(1))
}

/// The full cubic law with constraint-based parameters (notes §3): g(L) = 0,
/// g'(L) = k, g'(a1 L) = K1, g'(a2 L) = K2, with K1 and K2 held as multiples of k.
///
/// The coefficients are solved once for L = 1, k = 1 ([`CubicLaw::unit`]); for a
/// spring of rest length L and stiffness k they scale as a = k û₀/L², b = k û₁/L,
/// c = k û₂, d = k L û₃ ([`CubicLaw::coefficients`]), which satisfies the same four
/// constraints exactly. So springs of any rest length share one law, and changing a
/// spring's stiffness live scales K1 and K2 with it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubicLaw {
    /// Stretch ratio a1 (> 1) where the slope is K1.
    pub a1: f64,
    /// K1 / k.
    pub k1_ratio: f64,
    /// Compression ratio a2 (in (0, 1)) where the slope is K2.
    pub a2: f64,
    /// K2 / k.
    pub k2_ratio: f64,
    /// Factor on b and d in the Jacobian only (default [`DEFAULT_JACOBIAN_DAMPING`];
    /// 1 switches it off).
    pub jacobian_damping: f64,
    /// Coefficients (a, b, c, d) for L = 1 m, k = 1 N/m.
    pub unit: [f64; 4],
}

/// Default Jacobian damping factor on the cubic law's b and d (000 §4.1).
pub const DEFAULT_JACOBIAN_DAMPING: f64 = 0.99;

impl CubicLaw {
    /// Solves the law for slope `k1` (N/m) at stretch `a1` and `k2` at compression
    /// `a2`, relative to the stiffness `k` (N/m) the springs will have; rejects
    /// parameters that make eq. 8 singular or the law inconsistent.
    pub fn new(k: f64, a1: f64, k1: f64, a2: f64, k2: f64, jacobian_damping: f64) -> Result<Self, SpringError> {
        let bad = |why: String| Err(SpringError::BadLaw { why });
        for (name, v) in [("k", k), ("k1", k1), ("k2", k2)] {
            if !(v.is_finite() && v > 0.0) {
                return bad(format!("cubic law: {name} = {v} N/m must be positive and finite"));
            }
        }
        if !(a1.is_finite() && a1 > 1.0) {
            return bad(format!("cubic law: a1 = {a1} must be a stretch ratio > 1"));
        }
        if !(a2.is_finite() && a2 > 0.0 && a2 < 1.0) {
            return bad(format!("cubic law: a2 = {a2} must be a compression ratio in (0, 1)"));
        }
        if !(jacobian_damping.is_finite() && jacobian_damping > 0.0 && jacobian_damping <= 1.0) {
            return bad(format!("cubic law: jacobian_damping = {jacobian_damping} must lie in (0, 1]"));
        }
        let (k1_ratio, k2_ratio) = (k1 / k, k2 / k);
        let unit = solve_cubic(1.0, 1.0, a1, k1_ratio, a2, k2_ratio)?;
        Ok(Self { a1, k1_ratio, a2, k2_ratio, jacobian_damping, unit })
    }

    /// (a, b, c, d) for rest length `rest` (m) and stiffness `k` (N/m): g(r) = a r³ +
    /// b r² + c r + d in N with r in m.
    #[must_use]
    pub fn coefficients(&self, rest: f64, k: f64) -> [f64; 4] {
        let u = self.unit;
        [k * u[0] / (rest * rest), k * u[1] / rest, k * u[2], k * u[3] * rest]
    }

    /// g(l), as the kernel computes it: k L ĝ(l/L) by Horner's rule.
    #[inline(always)]
    fn g(&self, l: f64, rest: f64, k: f64) -> f64 {
        let u = &self.unit;
        let rho = l / rest;
        k * rest * (((u[0] * rho + u[1]) * rho + u[2]) * rho + u[3])
    }

    /// (g, g') with b and d scaled by `bd` (1 for the force itself).
    fn magnitude(&self, r: f64, rest: f64, k: f64, bd: f64) -> (f64, f64) {
        let u = self.unit;
        let (u1, u3) = (u[1] * bd, u[3] * bd);
        let rho = r / rest;
        let g = k * rest * (((u[0] * rho + u1) * rho + u[2]) * rho + u3);
        let dg = k * ((3.0 * u[0] * rho + 2.0 * u1) * rho + u[2]);
        (g, dg)
    }
}

/// Solves eq. 8 of 000 (notes §3) for the cubic's (a, b, c, d): g(L) = 0, g'(L) = K,
/// g'(a1 L) = K1, g'(a2 L) = K2, by Gaussian elimination with partial pivoting.
/// Fails with [`SpringError::BadLaw`] when the system is singular (a1 = a2, or
/// either equal to 1) or the solution is not finite.
pub fn solve_cubic(l: f64, k: f64, a1: f64, k1: f64, a2: f64, k2: f64) -> Result<[f64; 4], SpringError> {
    if a1 == a2 || a1 == 1.0 || a2 == 1.0 || l.is_nan() || l <= 0.0 {
        return Err(SpringError::BadLaw {
            why: format!(
                "cubic law: the constraints are singular for L = {l}, a1 = {a1}, a2 = {a2} (need L > 0 and a1, a2 and 1 distinct)"
            ),
        });
    }
    let slope = |r: f64| [3.0 * r * r, 2.0 * r, 1.0, 0.0];
    let mut m = [[l * l * l, l * l, l, 1.0], slope(l), slope(a1 * l), slope(a2 * l)];
    let mut rhs = [0.0, k, k1, k2];
    let scale = m.iter().flatten().fold(0.0f64, |s, v| s.max(v.abs()));
    for col in 0..4 {
        let pivot = (col..4).max_by(|&i, &j| m[i][col].abs().total_cmp(&m[j][col].abs())).unwrap_or(col);
        if m[pivot][col].is_nan() || m[pivot][col].abs() <= 1e-13 * scale {
            return Err(SpringError::BadLaw {
                why: format!("cubic law: the constraints are singular for L = {l}, a1 = {a1}, a2 = {a2}"),
            });
        }
        m.swap(col, pivot);
        rhs.swap(col, pivot);
        for row in col + 1..4 {
            let f = m[row][col] / m[col][col];
            let pivot_row = m[col];
            for (dst, src) in m[row].iter_mut().zip(pivot_row).skip(col) {
                *dst -= f * src;
            }
            rhs[row] -= f * rhs[col];
        }
    }
    let mut out = [0.0; 4];
    for row in (0..4).rev() {
        let tail: f64 = (row + 1..4).map(|c| m[row][c] * out[c]).sum();
        out[row] = (rhs[row] - tail) / m[row][row];
    }
    if out.iter().all(|v| v.is_finite()) {
        Ok(out)
    } else {
        Err(SpringError::BadLaw { why: format!("cubic law: no finite solution for a1 = {a1}, a2 = {a2}") })
    }
}

/// Stiffness, damping and law shared by a group of springs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpringParams {
    /// Stiffness k, N/m (the slope g'(L) at rest for every law).
    pub stiffness: f64,
    /// Damping c along the spring, N s/m.
    pub damping: f64,
    /// Force law.
    pub law: SpringLaw,
}

impl SpringParams {
    /// Linear spring with stiffness `k` (N/m) and damping `c` (N s/m).
    #[must_use]
    pub fn linear(k: f64, c: f64) -> Self {
        Self { stiffness: k, damping: c, law: SpringLaw::Linear }
    }

    /// The same stiffness and damping with another law.
    #[must_use]
    pub fn with_law(self, law: SpringLaw) -> Self {
        Self { law, ..self }
    }
}

/// Springs as builders add them, before they are sorted into runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpringSet {
    springs: Vec<SpringSpec>,
    groups: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
struct SpringSpec {
    a: u32,
    b: u32,
    rest: f64,
    params: SpringParams,
    kind: SpringKind,
    group: u16,
}

/// Why a spring network could not be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpringError {
    /// An end is not a particle.
    #[error("spring {index} ({kind}) joins particle {particle}, but there are only {count} particles")]
    OutOfRange {
        /// Spring index in insertion order.
        index: usize,
        /// Its kind.
        kind: SpringKind,
        /// The bad particle index.
        particle: usize,
        /// Number of particles.
        count: usize,
    },
    /// Both ends are the same particle.
    #[error("spring {index} ({kind}) joins particle {particle} to itself")]
    SelfLoop {
        /// Spring index in insertion order.
        index: usize,
        /// Its kind.
        kind: SpringKind,
        /// The particle.
        particle: usize,
    },
    /// Rest length not positive and finite.
    #[error(
        "spring {index} ({kind}) between particles {a} and {b} has rest length {rest} m; it must be positive (are two particles at the same place?)"
    )]
    BadRest {
        /// Spring index.
        index: usize,
        /// Its kind.
        kind: SpringKind,
        /// First end.
        a: usize,
        /// Second end.
        b: usize,
        /// The rest length.
        rest: f64,
    },
    /// Negative or non-finite stiffness or damping.
    #[error("spring {index} ({kind}) has stiffness {k} N/m and damping {c} N s/m; both must be finite and ≥ 0")]
    BadParams {
        /// Spring index.
        index: usize,
        /// Its kind.
        kind: SpringKind,
        /// Stiffness.
        k: f64,
        /// Damping.
        c: f64,
    },
    /// A force law's parameters are inconsistent (a singular cubic, a1 ≤ 1, ...).
    #[error("{why}")]
    BadLaw {
        /// What is wrong.
        why: String,
    },
}

impl SpringSet {
    /// An empty set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of springs.
    #[must_use]
    pub fn len(&self) -> usize {
        self.springs.len()
    }

    /// True when there are no springs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.springs.is_empty()
    }

    /// The group index for `name` (a body name), created on first use.
    pub fn group(&mut self, name: &str) -> u16 {
        if let Some(i) = self.groups.iter().position(|g| g == name) {
            return i as u16;
        }
        self.groups.push(name.to_owned());
        (self.groups.len() - 1) as u16
    }

    /// Adds a spring between particles `a` and `b` with rest length `rest` (m).
    pub fn push(&mut self, a: usize, b: usize, rest: f64, params: SpringParams, kind: SpringKind, group: u16) {
        self.springs.push(SpringSpec { a: a as u32, b: b as u32, rest, params, kind, group });
    }

    /// Adds a spring whose rest length is the current distance between its ends.
    pub fn push_at_rest(&mut self, x: &Vec3s, a: usize, b: usize, params: SpringParams, kind: SpringKind, group: u16) {
        let rest = x.get(a).distance(x.get(b));
        self.push(a, b, rest, params, kind, group);
    }

    /// Number of springs of `kind`.
    #[must_use]
    pub fn count(&self, kind: SpringKind) -> usize {
        self.springs.iter().filter(|s| s.kind == kind).count()
    }

    /// The (a, b) pairs in insertion order.
    #[must_use]
    pub fn pairs(&self) -> Vec<[u32; 2]> {
        self.springs.iter().map(|s| [s.a, s.b]).collect()
    }

    /// (a, b, rest length) of the springs of `group` whose kind is in `kinds`, in
    /// insertion order.
    #[must_use]
    pub fn select(&self, group: u16, kinds: &[SpringKind]) -> Vec<(usize, usize, f64)> {
        self.springs
            .iter()
            .filter(|s| s.group == group && kinds.contains(&s.kind))
            .map(|s| (s.a as usize, s.b as usize, s.rest))
            .collect()
    }

    /// Removes the springs of `group` whose kind is in `kinds` and returns them as
    /// (a, b, rest length), in insertion order — to turn them into constraints
    /// (Jakobsen's sticks) instead of forces.
    pub fn take(&mut self, group: u16, kinds: &[SpringKind]) -> Vec<(usize, usize, f64)> {
        let taken = self.select(group, kinds);
        self.springs.retain(|s| !(s.group == group && kinds.contains(&s.kind)));
        taken
    }
}

/// A run of springs (a0 + i, b0 + i), i < len, stored at spring indices s0 + i.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Run {
    a0: usize,
    b0: usize,
    s0: usize,
    len: usize,
    law: u8,
    /// (rest, k, c) when every spring of the run shares them (regular grids): the
    /// kernel then reads no per-spring data, which halves its memory traffic.
    uniform: Option<(f64, f64, f64)>,
}

/// The spring force term: every spring of a world, sorted into runs.
#[derive(Clone, Debug)]
pub struct SpringNetwork {
    a: Vec<u32>,
    b: Vec<u32>,
    rest: Vec<f64>,
    k: Vec<f64>,
    c: Vec<f64>,
    kind: Vec<SpringKind>,
    group: Vec<u16>,
    law_id: Vec<u8>,
    laws: Vec<SpringLaw>,
    groups: Vec<String>,
    runs: Vec<Run>,
    /// First spring index of the scattered list (all later springs are scattered).
    scattered_start: usize,
    /// Per particle, its scattered springs in index order: CSR offsets into `gather`.
    gather_offsets: Vec<u32>,
    /// Scattered-spring index (relative to `scattered_start`) << 1 | (1 for the second end).
    gather: Vec<u32>,
    /// Per-spring forces of the scattered list, for the parallel gather.
    scratch: Vec3s,
    n_particles: usize,
}

impl SpringNetwork {
    /// Sorts `set` into runs for `n_particles` particles, checking every spring.
    pub fn new(set: &SpringSet, n_particles: usize) -> Result<Self, SpringError> {
        for (index, s) in set.springs.iter().enumerate() {
            for p in [s.a as usize, s.b as usize] {
                if p >= n_particles {
                    return Err(SpringError::OutOfRange { index, kind: s.kind, particle: p, count: n_particles });
                }
            }
            if s.a == s.b {
                return Err(SpringError::SelfLoop { index, kind: s.kind, particle: s.a as usize });
            }
            if !(s.rest.is_finite() && s.rest > 0.0) {
                return Err(SpringError::BadRest {
                    index,
                    kind: s.kind,
                    a: s.a as usize,
                    b: s.b as usize,
                    rest: s.rest,
                });
            }
            let (k, c) = (s.params.stiffness, s.params.damping);
            if !(k.is_finite() && k >= 0.0 && c.is_finite() && c >= 0.0) {
                return Err(SpringError::BadParams { index, kind: s.kind, k, c });
            }
        }
        let mut laws: Vec<SpringLaw> = Vec::new();
        let mut law_of = |law: SpringLaw| -> u8 {
            match laws.iter().position(|l| *l == law) {
                Some(i) => i as u8,
                None => {
                    laws.push(law);
                    (laws.len() - 1) as u8
                }
            }
        };
        // Normalise a < b (the force is symmetric in its ends), then order by law,
        // offset and first end so that runs are contiguous. The sort is stable and
        // keyed on data only, so the layout is reproducible.
        let mut items: Vec<(u8, u32, u32, usize)> = set
            .springs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (a, b) = if s.a < s.b { (s.a, s.b) } else { (s.b, s.a) };
                (law_of(s.params.law), b - a, a, i)
            })
            .collect();
        items.sort_by_key(|&(law, off, a, _)| (law, off, a));

        // Split into maximal runs.
        let mut run_items: Vec<(usize, usize)> = Vec::new(); // (start, len) into items
        let mut start = 0;
        for i in 1..=items.len() {
            let continues = i < items.len() && {
                let (p, q) = (items[i - 1], items[i]);
                p.0 == q.0 && p.1 == q.1 && p.2 + 1 == q.2
            };
            if !continues {
                run_items.push((start, i - start));
                start = i;
            }
        }
        let mut order: Vec<usize> = Vec::with_capacity(items.len());
        let mut runs = Vec::new();
        let mut scattered: Vec<usize> = Vec::new();
        for &(st, len) in &run_items {
            if len >= MIN_RUN {
                let (law, off, a0, _) = items[st];
                runs.push(Run { a0: a0 as usize, b0: (a0 + off) as usize, s0: order.len(), len, law, uniform: None });
                order.extend(items[st..st + len].iter().map(|it| it.3));
            } else {
                scattered.extend(st..st + len);
            }
        }
        // Scattered springs in (first end, second end) order for locality.
        scattered.sort_by_key(|&i| (items[i].2, items[i].2 + items[i].1, items[i].3));
        let scattered_start = order.len();
        order.extend(scattered.iter().map(|&i| items[i].3));

        let mut net = SpringNetwork {
            a: Vec::with_capacity(order.len()),
            b: Vec::with_capacity(order.len()),
            rest: Vec::with_capacity(order.len()),
            k: Vec::with_capacity(order.len()),
            c: Vec::with_capacity(order.len()),
            kind: Vec::with_capacity(order.len()),
            group: Vec::with_capacity(order.len()),
            law_id: Vec::with_capacity(order.len()),
            laws: Vec::new(),
            groups: set.groups.clone(),
            runs,
            scattered_start,
            gather_offsets: Vec::new(),
            gather: Vec::new(),
            scratch: Vec3s::zeros(order.len() - scattered_start),
            n_particles,
        };
        for &i in &order {
            let s = &set.springs[i];
            let (a, b) = if s.a < s.b { (s.a, s.b) } else { (s.b, s.a) };
            net.a.push(a);
            net.b.push(b);
            net.rest.push(s.rest);
            net.k.push(s.params.stiffness);
            net.c.push(s.params.damping);
            net.kind.push(s.kind);
            net.group.push(s.group);
        }
        for run in &mut net.runs {
            let r = run.s0..run.s0 + run.len;
            let first = (net.rest[run.s0], net.k[run.s0], net.c[run.s0]);
            let same = |v: &[f64], x: f64| v.iter().all(|&y| y.to_bits() == x.to_bits());
            if same(&net.rest[r.clone()], first.0) && same(&net.k[r.clone()], first.1) && same(&net.c[r], first.2) {
                run.uniform = Some(first);
            }
        }
        let mut law_by_insertion = vec![0u8; items.len()];
        for it in &items {
            law_by_insertion[it.3] = it.0;
        }
        net.law_id = order.iter().map(|&i| law_by_insertion[i]).collect();
        net.laws = laws;

        // CSR of scattered springs per particle, each list in spring order.
        let mut counts = vec![0u32; n_particles + 1];
        for s in scattered_start..net.len() {
            counts[net.a[s] as usize + 1] += 1;
            counts[net.b[s] as usize + 1] += 1;
        }
        for i in 0..n_particles {
            counts[i + 1] += counts[i];
        }
        let mut fill = counts.clone();
        let mut gather = vec![0u32; counts[n_particles] as usize];
        for s in scattered_start..net.len() {
            let rel = (s - scattered_start) as u32;
            for (p, side) in [(net.a[s], 0u32), (net.b[s], 1u32)] {
                let slot = &mut fill[p as usize];
                gather[*slot as usize] = rel << 1 | side;
                *slot += 1;
            }
        }
        net.gather_offsets = counts;
        net.gather = gather;
        Ok(net)
    }

    /// Number of springs.
    #[must_use]
    pub fn len(&self) -> usize {
        self.a.len()
    }

    /// True when there are no springs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.a.is_empty()
    }

    /// Number of springs that run through the vectorised kernel.
    #[must_use]
    pub fn vectorised_len(&self) -> usize {
        self.scattered_start
    }

    /// Ends of spring `s` (kernel order).
    #[must_use]
    pub fn ends(&self, s: usize) -> (usize, usize) {
        (self.a[s] as usize, self.b[s] as usize)
    }

    /// Rest length of spring `s`, m.
    #[must_use]
    pub fn rest_length(&self, s: usize) -> f64 {
        self.rest[s]
    }

    /// Stiffness of spring `s`, N/m.
    #[must_use]
    pub fn stiffness(&self, s: usize) -> f64 {
        self.k[s]
    }

    /// Damping of spring `s`, N s/m.
    #[must_use]
    pub fn damping(&self, s: usize) -> f64 {
        self.c[s]
    }

    /// Kind of spring `s`.
    #[must_use]
    pub fn kind(&self, s: usize) -> SpringKind {
        self.kind[s]
    }

    /// Law of spring `s`.
    #[must_use]
    pub fn law(&self, s: usize) -> SpringLaw {
        self.laws[self.law_id[s] as usize]
    }

    /// Number of springs of `kind`.
    #[must_use]
    pub fn count(&self, kind: SpringKind) -> usize {
        self.kind.iter().filter(|k| **k == kind).count()
    }

    /// Strain (r − L)/L of spring `s` in state `x`.
    #[must_use]
    pub fn strain_of(&self, s: usize, x: &Vec3s) -> f64 {
        let (a, b) = self.ends(s);
        (x.get(a).distance(x.get(b)) - self.rest[s]) / self.rest[s]
    }

    /// Force on the first end of spring `s` (the second end gets its negative),
    /// evaluated as the scalar reference of the kernel.
    #[inline]
    #[must_use]
    pub fn spring_force(&self, s: usize, x: &Vec3s, v: &Vec3s) -> DVec3 {
        let (a, b) = self.ends(s);
        let law = self.laws[self.law_id[s] as usize];
        scalar_force(law, x.get(a), x.get(b), v.get(a), v.get(b), self.rest[s], self.k[s], self.c[s])
    }

    /// Adds all spring forces with a plain loop in spring order: the reference the
    /// kernel is tested against (equal up to summation order).
    pub fn add_forces_reference(&self, state: &State, f: &mut Vec3s) {
        for s in 0..self.len() {
            let (a, b) = self.ends(s);
            let fa = self.spring_force(s, &state.x, &state.v);
            f.add(a, fa);
            f.sub(b, fa);
        }
    }

    /// Adds every spring force to `f` with the given kernel (every kernel gives the
    /// same bits; this exists to test that).
    pub fn add_forces_with(&mut self, kernel: Kernel, state: &State, f: &mut Vec3s) {
        self.add_run_forces(kernel, state, f);
        self.add_scattered_forces(state, f);
    }

    fn add_run_forces(&self, kernel: Kernel, state: &State, f: &mut Vec3s) {
        let n = self.n_particles;
        let bs = crate::par::block_len(n);
        let view = RunView {
            runs: &self.runs,
            laws: &self.laws,
            x: state.x.components(),
            v: state.v.components(),
            rest: &self.rest,
            k: &self.k,
            c: &self.c,
        };
        if bs >= n {
            let [fx, fy, fz] = f.components_mut();
            kernel.run_block(&view, 0, n, [fx, fy, fz]);
            return;
        }
        let [fx, fy, fz] = f.components_mut();
        fx.par_chunks_mut(bs).zip(fy.par_chunks_mut(bs)).zip(fz.par_chunks_mut(bs)).enumerate().for_each(
            |(bi, ((fx, fy), fz))| {
                let p0 = bi * bs;
                let p1 = p0 + fx.len();
                kernel.run_block(&view, p0, p1, [fx, fy, fz]);
            },
        );
    }

    fn add_scattered_forces(&mut self, state: &State, f: &mut Vec3s) {
        let s0 = self.scattered_start;
        let count = self.len() - s0;
        if count == 0 {
            return;
        }
        let bs = crate::par::block_len(self.n_particles);
        if bs >= self.n_particles {
            // Same contributions in the same per-particle order as the gather below.
            for s in s0..self.len() {
                let (a, b) = self.ends(s);
                let fa = self.spring_force(s, &state.x, &state.v);
                f.add(a, fa);
                f.sub(b, fa);
            }
            return;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let this = &*self;
        {
            let [sx, sy, sz] = scratch.components_mut();
            sx.par_chunks_mut(CHUNK).zip(sy.par_chunks_mut(CHUNK)).zip(sz.par_chunks_mut(CHUNK)).enumerate().for_each(
                |(ci, ((sx, sy), sz))| {
                    for j in 0..sx.len() {
                        let fa = this.spring_force(s0 + ci * CHUNK + j, &state.x, &state.v);
                        sx[j] = fa.x;
                        sy[j] = fa.y;
                        sz[j] = fa.z;
                    }
                },
            );
        }
        let (offsets, gather) = (&self.gather_offsets, &self.gather);
        let [fx, fy, fz] = f.components_mut();
        let sc = &scratch;
        fx.par_chunks_mut(bs).zip(fy.par_chunks_mut(bs)).zip(fz.par_chunks_mut(bs)).enumerate().for_each(
            |(bi, ((fx, fy), fz))| {
                for j in 0..fx.len() {
                    let p = bi * bs + j;
                    for &e in &gather[offsets[p] as usize..offsets[p + 1] as usize] {
                        let s = (e >> 1) as usize;
                        if e & 1 == 0 {
                            fx[j] += sc.x[s];
                            fy[j] += sc.y[s];
                            fz[j] += sc.z[s];
                        } else {
                            fx[j] -= sc.x[s];
                            fy[j] -= sc.y[s];
                            fz[j] -= sc.z[s];
                        }
                    }
                }
            },
        );
        self.scratch = scratch;
    }

    /// Indices of springs whose group (body) is `group` and kind is `kind`.
    fn select(&self, group: u16, kind: SpringKind) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).filter(move |&s| self.group[s] == group && self.kind[s] == kind)
    }
}

/// Force on end a of one spring: the scalar form of the kernel, operation for
/// operation, so that both give identical bits.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn scalar_force(law: SpringLaw, xa: DVec3, xb: DVec3, va: DVec3, vb: DVec3, rest: f64, k: f64, c: f64) -> DVec3 {
    let (mut dx, mut dy, mut dz) = (xb.x - xa.x, xb.y - xa.y, xb.z - xa.z);
    let l = (dx * dx + dy * dy + dz * dz).sqrt();
    let il = 1.0 / l;
    dx *= il;
    dy *= il;
    dz *= il;
    let dv = (vb.x - va.x) * dx + (vb.y - va.y) * dy + (vb.z - va.z) * dz;
    let f = law_magnitude(law, l, rest, k) + c * dv;
    DVec3::new(f * dx, f * dy, f * dz)
}

#[inline(always)]
fn law_magnitude(law: SpringLaw, l: f64, rest: f64, k: f64) -> f64 {
    law.g(l, rest, k)
}

/// Borrowed inputs of the run kernel.
struct RunView<'a> {
    runs: &'a [Run],
    laws: &'a [SpringLaw],
    x: [&'a [f64]; 3],
    v: [&'a [f64]; 3],
    rest: &'a [f64],
    k: &'a [f64],
    c: &'a [f64],
}

/// Instruction set of the run kernel, detected once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Portable code (SSE2 on x86-64).
    Portable,
    /// AVX2 + FMA available (FMA is not used: results stay bit-identical).
    Avx2,
    /// AVX-512F.
    Avx512,
}

impl Kernel {
    /// AVX2 when this CPU has it (AVX-512 measured no faster on the cloth
    /// benchmark and can lower the clock), else portable code; the
    /// `WOBBLE_KERNEL` environment variable (`portable`, `avx2`, `avx512`) picks
    /// another that this CPU supports. Every choice gives identical results.
    #[must_use]
    pub fn select() -> Kernel {
        static CHOICE: OnceLock<Kernel> = OnceLock::new();
        *CHOICE.get_or_init(|| {
            let best = Kernel::best_available();
            let default = if best == Kernel::Portable { Kernel::Portable } else { Kernel::Avx2 };
            match std::env::var("WOBBLE_KERNEL").as_deref() {
                Ok("portable") => Kernel::Portable,
                Ok("avx2") => default,
                Ok("avx512") => best,
                _ => default,
            }
        })
    }

    /// Every kernel this CPU can run (for tests of bitwise agreement).
    #[must_use]
    pub fn available() -> Vec<Kernel> {
        match Kernel::best_available() {
            Kernel::Portable => vec![Kernel::Portable],
            Kernel::Avx2 => vec![Kernel::Portable, Kernel::Avx2],
            Kernel::Avx512 => vec![Kernel::Portable, Kernel::Avx2, Kernel::Avx512],
        }
    }

    /// The widest instruction set this CPU supports.
    #[must_use]
    pub fn best_available() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Kernel::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Kernel::Avx2;
            }
        }
        Kernel::Portable
    }

    fn run_block(self, view: &RunView<'_>, p0: usize, p1: usize, f: [&mut [f64]; 3]) {
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `select` only returns Avx512 when the CPU reports avx512f.
            Kernel::Avx512 => unsafe { run_block_avx512(view, p0, p1, f) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `select` only returns Avx2 when the CPU reports avx2.
            Kernel::Avx2 => unsafe { run_block_avx2(view, p0, p1, f) },
            _ => run_block_generic(view, p0, p1, f),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn run_block_avx512(view: &RunView<'_>, p0: usize, p1: usize, f: [&mut [f64]; 3]) {
    run_block_generic(view, p0, p1, f);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn run_block_avx2(view: &RunView<'_>, p0: usize, p1: usize, f: [&mut [f64]; 3]) {
    run_block_generic(view, p0, p1, f);
}

/// Indices i in [0, len) with base + i in [p0, p1), as a half-open range.
#[inline(always)]
fn clip(p0: usize, p1: usize, base: usize, len: usize) -> (usize, usize) {
    let lo = p0.max(base);
    let hi = p1.min(base + len);
    if lo >= hi { (0, 0) } else { (lo - base, hi - base) }
}

/// Adds every run's contributions to the particles of block [p0, p1) (`f` holds
/// exactly that block), in the canonical order described in the module docs.
#[inline(always)]
fn run_block_generic(view: &RunView<'_>, p0: usize, p1: usize, f: [&mut [f64]; 3]) {
    let [fx, fy, fz] = f;
    let mut ox = [0.0f64; CHUNK];
    let mut oy = [0.0f64; CHUNK];
    let mut oz = [0.0f64; CHUNK];
    for run in view.runs {
        let (ia0, ia1) = clip(p0, p1, run.a0, run.len);
        let (ib0, ib1) = clip(p0, p1, run.b0, run.len);
        let (has_a, has_b) = (ia0 < ia1, ib0 < ib1);
        if !has_a && !has_b {
            continue;
        }
        let lo = if !has_a {
            ib0
        } else if !has_b {
            ia0
        } else {
            ia0.min(ib0)
        };
        let hi = if !has_a {
            ib1
        } else if !has_b {
            ia1
        } else {
            ia1.max(ib1)
        };
        let law = view.laws[run.law as usize];
        let mut chunk = lo / CHUNK * CHUNK;
        while chunk < hi {
            let (c0, c1) = (chunk.max(lo), (chunk + CHUNK).min(hi));
            chunk += CHUNK;
            let (ca0, ca1) = (c0.max(ia0), c1.min(ia1));
            let (cb0, cb1) = (c0.max(ib0), c1.min(ib1));
            let (in_a, in_b) = (has_a && ca0 < ca1, has_b && cb0 < cb1);
            if !in_a && !in_b {
                continue;
            }
            let s = if !in_a {
                cb0
            } else if !in_b {
                ca0
            } else {
                ca0.min(cb0)
            };
            let e = if !in_a {
                cb1
            } else if !in_b {
                ca1
            } else {
                ca1.max(cb1)
            };
            let n = e - s;
            let (a, b, p) = (run.a0 + s, run.b0 + s, run.s0 + s);
            let out = (&mut ox[..n], &mut oy[..n], &mut oz[..n]);
            // One monomorphised loop per law, so each vectorises on its own.
            match law {
                SpringLaw::Linear => chunk_any(n, view, a, b, p, run.uniform, |l, rest, k| k * (l - rest), out),
                SpringLaw::StVK => chunk_any(n, view, a, b, p, run.uniform, stvk_g, out),
                SpringLaw::Cubic(c) => chunk_any(n, view, a, b, p, run.uniform, |l, rest, k| c.g(l, rest, k), out),
            }
            if in_a {
                let (d0, d1) = (run.a0 + ca0 - p0, run.a0 + ca1 - p0);
                let src = ca0 - s..ca1 - s;
                accumulate(&mut fx[d0..d1], &ox[src.clone()], 1.0);
                accumulate(&mut fy[d0..d1], &oy[src.clone()], 1.0);
                accumulate(&mut fz[d0..d1], &oz[src], 1.0);
            }
            if in_b {
                let (d0, d1) = (run.b0 + cb0 - p0, run.b0 + cb1 - p0);
                let src = cb0 - s..cb1 - s;
                accumulate(&mut fx[d0..d1], &ox[src.clone()], -1.0);
                accumulate(&mut fy[d0..d1], &oy[src.clone()], -1.0);
                accumulate(&mut fz[d0..d1], &oz[src], -1.0);
            }
        }
    }
}

/// `dst += src` (sign 1) or `dst -= src` (sign −1), elementwise.
#[inline(always)]
fn accumulate(dst: &mut [f64], src: &[f64], sign: f64) {
    if sign > 0.0 {
        for (d, s) in dst.iter_mut().zip(src) {
            *d += s;
        }
    } else {
        for (d, s) in dst.iter_mut().zip(src) {
            *d -= s;
        }
    }
}

/// Per-spring (rest, k, c) for the kernel: shared by a whole run, or read per spring.
trait Params {
    fn at(&self, i: usize) -> (f64, f64, f64);
}

/// One (rest, k, c) for every spring of the chunk.
struct Uniform((f64, f64, f64));

impl Params for Uniform {
    #[inline(always)]
    fn at(&self, _i: usize) -> (f64, f64, f64) {
        self.0
    }
}

/// Per-spring slices (rest, k, c), each as long as the chunk.
struct PerSpring<'a>(&'a [f64], &'a [f64], &'a [f64]);

impl Params for PerSpring<'_> {
    #[inline(always)]
    fn at(&self, i: usize) -> (f64, f64, f64) {
        (self.0[i], self.1[i], self.2[i])
    }
}

/// [`chunk_forces`] with the run's shared parameters, or per-spring ones from spring
/// index `p` on.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn chunk_any(
    n: usize,
    view: &RunView<'_>,
    a: usize,
    b: usize,
    p: usize,
    uniform: Option<(f64, f64, f64)>,
    magnitude: impl Fn(f64, f64, f64) -> f64,
    out: (&mut [f64], &mut [f64], &mut [f64]),
) {
    match uniform {
        Some(u) => chunk_forces(n, view, a, b, Uniform(u), magnitude, out),
        None => {
            let per = PerSpring(&view.rest[p..p + n], &view.k[p..p + n], &view.c[p..p + n]);
            chunk_forces(n, view, a, b, per, magnitude, out)
        }
    }
}

/// Forces on the first ends of n springs whose ends are a..a+n and b..b+n. The body
/// mirrors [`scalar_force`] operation for operation.
#[inline(always)]
fn chunk_forces(
    n: usize,
    view: &RunView<'_>,
    a: usize,
    b: usize,
    params: impl Params,
    magnitude: impl Fn(f64, f64, f64) -> f64,
    out: (&mut [f64], &mut [f64], &mut [f64]),
) {
    let (ox, oy, oz) = out;
    let (xa, ya, za) = (&view.x[0][a..a + n], &view.x[1][a..a + n], &view.x[2][a..a + n]);
    let (xb, yb, zb) = (&view.x[0][b..b + n], &view.x[1][b..b + n], &view.x[2][b..b + n]);
    let (vxa, vya, vza) = (&view.v[0][a..a + n], &view.v[1][a..a + n], &view.v[2][a..a + n]);
    let (vxb, vyb, vzb) = (&view.v[0][b..b + n], &view.v[1][b..b + n], &view.v[2][b..b + n]);
    let (ox, oy, oz) = (&mut ox[..n], &mut oy[..n], &mut oz[..n]);
    for i in 0..n {
        let (mut dx, mut dy, mut dz) = (xb[i] - xa[i], yb[i] - ya[i], zb[i] - za[i]);
        let l = (dx * dx + dy * dy + dz * dz).sqrt();
        let il = 1.0 / l;
        dx *= il;
        dy *= il;
        dz *= il;
        let dv = (vxb[i] - vxa[i]) * dx + (vyb[i] - vya[i]) * dy + (vzb[i] - vza[i]) * dz;
        let (rest, k, c) = params.at(i);
        let f = magnitude(l, rest, k) + c * dv;
        ox[i] = f * dx;
        oy[i] = f * dy;
        oz[i] = f * dz;
    }
}

/// Jacobian blocks of one spring's force on its first end with respect to that end:
/// (∂f_a/∂x_a, ∂f_a/∂v_a). For any law, with g and g' its magnitude and slope,
/// ∂f_a/∂x_a = −[ (g/r)(I − n nᵀ) + g' n nᵀ ] (notes §1 and §3 with F = g n); the
/// damping's dependence on position is left out, as in Baraff–Witkin, which keeps the
/// matrix symmetric. ∂f_a/∂v_a = −c n nᵀ. The cubic law's Jacobian damping (b and d
/// scaled, notes §3) applies here and only here.
#[must_use]
pub fn spring_blocks(law: SpringLaw, xa: DVec3, xb: DVec3, rest: f64, k: f64, c: f64) -> (DMat3, DMat3) {
    let d = xb - xa;
    let r = d.length();
    let n = d / r;
    let nn = DMat3::from_cols(n * n.x, n * n.y, n * n.z);
    let (g, dg) = law.jacobian_magnitude(r, rest, k);
    let kx = -((DMat3::IDENTITY - nn) * (g / r) + nn * dg);
    let kv = nn * -c;
    (kx, kv)
}

/// [`spring_blocks`] with the stiffness part made negative semi-definite: the
/// transverse tension g/r and the slope g' are clamped at zero, which drops the
/// terms a compressed spring (or a law with negative slope, StVK below L/√3)
/// contributes with the wrong sign. For [`JacobianSink::definite`] sinks.
#[must_use]
pub fn spring_blocks_definite(law: SpringLaw, xa: DVec3, xb: DVec3, rest: f64, k: f64, c: f64) -> (DMat3, DMat3) {
    let d = xb - xa;
    let r = d.length();
    let n = d / r;
    let nn = DMat3::from_cols(n * n.x, n * n.y, n * n.z);
    let (g, dg) = law.jacobian_magnitude(r, rest, k);
    let kx = -((DMat3::IDENTITY - nn) * (g / r).max(0.0) + nn * dg.max(0.0));
    (kx, nn * -c)
}

impl ForceTerm for SpringNetwork {
    fn name(&self) -> &str {
        "springs"
    }

    fn add_forces(&mut self, ctx: &ForceContext<'_>, out: &mut Loads) {
        debug_assert_eq!(ctx.state.len(), self.n_particles);
        self.add_forces_with(Kernel::select(), ctx.state, &mut out.f);
    }

    fn potential_energy(&self, ctx: &ForceContext<'_>) -> f64 {
        let x = &ctx.state.x;
        (0..self.len())
            .map(|s| {
                let (a, b) = self.ends(s);
                self.law(s).energy(x.get(a).distance(x.get(b)), self.rest[s], self.k[s])
            })
            .sum()
    }

    fn add_jacobian(&self, ctx: &ForceContext<'_>, sink: &mut dyn JacobianSink) {
        let x = &ctx.state.x;
        let blocks = if sink.definite() { spring_blocks_definite } else { spring_blocks };
        for s in 0..self.len() {
            let (a, b) = self.ends(s);
            let (kx, kv) = blocks(self.law(s), x.get(a), x.get(b), self.rest[s], self.k[s], self.c[s]);
            sink.add_pair(a, b, kx, kv);
        }
    }

    fn has_jacobian(&self) -> bool {
        true
    }

    fn add_stiffness_bound(&self, ctx: &ForceContext<'_>, k_row: &mut [f64], c_row: &mut [f64]) {
        let w = &ctx.particles.inv_mass;
        let x = &ctx.state.x;
        for s in 0..self.len() {
            let (a, b) = self.ends(s);
            let cross = (w[a] * w[b]).sqrt();
            // Non-linear laws: the block's norm at the current length, max(|g'|, |g/r|)
            // (at least k), since a stretched cubic is far stiffer than at rest.
            let k = match self.law(s) {
                SpringLaw::Linear => self.k[s],
                law => {
                    let r = x.get(a).distance(x.get(b));
                    let (g, dg) = law.magnitude(r, self.rest[s], self.k[s]);
                    self.k[s].max(dg.abs()).max(if r > 0.0 { (g / r).abs() } else { 0.0 })
                }
            };
            k_row[a] += k * (w[a] + cross);
            k_row[b] += k * (w[b] + cross);
            c_row[a] += self.c[s] * (w[a] + cross);
            c_row[b] += self.c[s] * (w[b] + cross);
        }
    }

    fn strain(&self, state: &State) -> Option<StrainStats> {
        if self.is_empty() {
            return None;
        }
        let mut st = StrainStats { count: self.len(), sum: 0.0, max: f64::NEG_INFINITY, max_abs: 0.0 };
        for s in 0..self.len() {
            let e = self.strain_of(s, &state.x);
            st.sum += e;
            st.max = st.max.max(e);
            st.max_abs = st.max_abs.max(e.abs());
        }
        Some(st)
    }

    fn segments(&self, out: &mut Vec<[u32; 2]>) {
        out.extend(self.a.iter().zip(&self.b).map(|(&a, &b)| [a, b]));
    }

    fn segment_rest_lengths(&self, out: &mut Vec<f64>) {
        out.extend_from_slice(&self.rest);
    }

    fn counts(&self) -> Vec<(String, usize)> {
        SpringKind::ALL
            .into_iter()
            .map(|k| (format!("{k} springs"), self.count(k)))
            .filter(|(_, n)| *n > 0)
            .chain(std::iter::once(("springs in vectorised runs".to_owned(), self.vectorised_len())))
            .collect()
    }

    /// `<body>.<kind>.stiffness` and `<body>.<kind>.damping` for every kind present.
    fn parameters(&self) -> Vec<Parameter> {
        let mut out = Vec::new();
        for (g, name) in self.groups.iter().enumerate() {
            for kind in SpringKind::ALL {
                if let Some(s) = self.select(g as u16, kind).next() {
                    let k = self.k[s];
                    out.push(Parameter {
                        key: format!("{name}.{kind}.stiffness"),
                        value: k,
                        unit: "N/m",
                        min: 0.0,
                        max: (10.0 * k).max(1.0),
                    });
                    let c = self.c[s];
                    out.push(Parameter {
                        key: format!("{name}.{kind}.damping"),
                        value: c,
                        unit: "N s/m",
                        min: 0.0,
                        max: (10.0 * c).max(1.0),
                    });
                }
            }
        }
        out
    }

    fn set_parameter(&mut self, key: &str, value: f64) -> Result<(), ParameterError> {
        let unknown = || ParameterError::Unknown { key: key.to_owned(), known: super::known_keys(&self.parameters()) };
        let mut parts = key.rsplitn(3, '.');
        let (Some(field), Some(kind), Some(group)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(unknown());
        };
        let Some(kind) = SpringKind::ALL.into_iter().find(|k| k.as_str() == kind) else {
            return Err(unknown());
        };
        let Some(g) = self.groups.iter().position(|n| n == group) else {
            return Err(unknown());
        };
        require_non_negative(key, value)?;
        let selected: Vec<usize> = self.select(g as u16, kind).collect();
        if selected.is_empty() {
            return Err(unknown());
        }
        let target = match field {
            "stiffness" => &mut self.k,
            "damping" => &mut self.c,
            _ => return Err(unknown()),
        };
        for s in selected {
            target[s] = value;
        }
        Ok(())
    }
}
