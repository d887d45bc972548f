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
//!
//! # Files
//! `law.rs` holds [`SpringLaw`] (linear and two-term StVK inline) and the Jacobian
//! blocks of any law; `cubic.rs` the full cubic law; `network.rs` the
//! [`SpringNetwork`] force term and its sorted layout; `kernel.rs` the vectorised
//! force loops.

use std::fmt;

use crate::model::Vec3s;

mod cubic;
mod kernel;
mod law;
mod network;

pub use cubic::{CubicLaw, DEFAULT_JACOBIAN_DAMPING, solve_cubic};
pub use kernel::Kernel;
pub use law::{SpringLaw, spring_blocks, spring_blocks_definite};
pub use network::SpringNetwork;

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

    /// Every spring as (a, b, rest length, parameters, kind), in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize, f64, SpringParams, SpringKind)> + '_ {
        self.springs.iter().map(|s| (s.a as usize, s.b as usize, s.rest, s.params, s.kind))
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
