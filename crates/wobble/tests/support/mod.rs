//! Shared helpers for the physics tests: approximate asserts that print the real
//! difference, a seeded xorshift RNG, a dense Jacobian sink, thread pools and small
//! world builders used by several test files.
//!
//! Every test file includes this with `#[macro_use] mod support;`; not every file
//! uses every helper.
#![allow(dead_code, unused_macros)]

use glam::{DMat3, DVec3};
use wobble::build::WorldBuilder;
use wobble::force::{JacobianSink, SpringKind, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::model::Vec3s;
use wobble::world::{SimParams, World};

/// `|measured − expected| ≤ tol` (absolute). On failure prints both values, the
/// absolute and relative difference and the tolerance.
macro_rules! assert_close {
    ($a:expr, $b:expr, $tol:expr $(,)?) => {
        assert_close!($a, $b, $tol, "values differ")
    };
    ($a:expr, $b:expr, $tol:expr, $($msg:tt)+) => {{
        let (a, b, tol): (f64, f64, f64) = ($a, $b, $tol);
        let diff = (a - b).abs();
        if diff.is_nan() || diff > tol {
            panic!(
                "assert_close failed: {}\n  measured   = {a:.17e}\n  expected   = {b:.17e}\n  |diff|     = {diff:.3e}\n  relative   = {:.3e}\n  tolerance  = {tol:.3e} (absolute)",
                format!($($msg)+),
                diff / b.abs()
            );
        }
    }};
}

/// `|measured − expected| ≤ rel · |expected|`. On failure prints both values and the
/// measured relative difference.
macro_rules! assert_rel {
    ($a:expr, $b:expr, $rel:expr $(,)?) => {
        assert_rel!($a, $b, $rel, "values differ")
    };
    ($a:expr, $b:expr, $rel:expr, $($msg:tt)+) => {{
        let (a, b, rel): (f64, f64, f64) = ($a, $b, $rel);
        let diff = (a - b).abs();
        if diff.is_nan() || diff > rel * b.abs() {
            panic!(
                "assert_rel failed: {}\n  measured   = {a:.17e}\n  expected   = {b:.17e}\n  |diff|     = {diff:.3e}\n  relative   = {:.3e}\n  tolerance  = {rel:.3e} (relative)",
                format!($($msg)+),
                diff / b.abs()
            );
        }
    }};
}

/// `|a − b| ≤ tol` for vectors (Euclidean norm of the difference).
macro_rules! assert_vec_close {
    ($a:expr, $b:expr, $tol:expr, $($msg:tt)+) => {{
        let (a, b, tol): (glam::DVec3, glam::DVec3, f64) = ($a, $b, $tol);
        let diff = (a - b).length();
        if diff.is_nan() || diff > tol {
            panic!(
                "assert_vec_close failed: {}\n  measured   = {a:?}\n  expected   = {b:?}\n  |diff|     = {diff:.3e}\n  tolerance  = {tol:.3e} (absolute)",
                format!($($msg)+)
            );
        }
    }};
}

/// xorshift64* (Vigna 2016): a tiny seeded generator so that every "random" test
/// input is reproducible.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a non-zero seed (zero is mapped to a fixed constant).
    pub fn new(seed: u64) -> Self {
        Rng(if seed == 0 { 0x9E37_79B9_7F4A_7C15 } else { seed })
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }

    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A vector with components uniform in [−s, s).
    pub fn vec3(&mut self, s: f64) -> DVec3 {
        DVec3::new(self.range(-s, s), self.range(-s, s), self.range(-s, s))
    }
}

/// The 3n × 3n matrices ∂f/∂x and ∂f/∂v, dense, row-major; row 3i + r is component r
/// of particle i's force.
#[derive(Clone, Debug)]
pub struct DenseJacobian {
    pub n: usize,
    pub dfdx: Vec<f64>,
    pub dfdv: Vec<f64>,
}

impl DenseJacobian {
    pub fn new(n: usize) -> Self {
        Self { n, dfdx: vec![0.0; 9 * n * n], dfdv: vec![0.0; 9 * n * n] }
    }

    fn add(m: &mut [f64], n: usize, i: usize, j: usize, block: DMat3) {
        for r in 0..3 {
            for c in 0..3 {
                // glam matrices are column-major: col(c)[r] is entry (r, c).
                m[(3 * i + r) * 3 * n + 3 * j + c] += block.col(c)[r];
            }
        }
    }
}

impl JacobianSink for DenseJacobian {
    fn add_dfdx(&mut self, i: usize, j: usize, block: DMat3) {
        Self::add(&mut self.dfdx, self.n, i, j, block);
    }
    fn add_dfdv(&mut self, i: usize, j: usize, block: DMat3) {
        Self::add(&mut self.dfdv, self.n, i, j, block);
    }
}

/// Component `c` (0..3) of vector `i` of `v`, as a flat index 3i + c.
pub fn flat(v: &Vec3s) -> Vec<f64> {
    (0..v.len()).flat_map(|i| [v.x[i], v.y[i], v.z[i]]).collect()
}

/// Mutable access to component `c` of vector `i`.
pub fn comp_mut(v: &mut Vec3s, i: usize, c: usize) -> &mut f64 {
    match c {
        0 => &mut v.x[i],
        1 => &mut v.y[i],
        _ => &mut v.z[i],
    }
}

/// A rayon pool of exactly `threads` threads.
pub fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool")
}

/// A one-dimensional harmonic oscillator: particle 0 pinned at the origin, particle 1
/// (mass `m`) at (rest + a, 0, 0) at rest, one undamped linear spring of stiffness
/// `k` and rest length `rest` between them; no gravity. Along the x axis the spring
/// force on particle 1 is exactly −k (x − rest), so x(t) = rest + a cos(ωt) with
/// ω = √(k/m).
pub fn oscillator(kind: IntegratorKind, dt: f64, k: f64, m: f64, rest: f64, a: f64) -> World {
    let mut b = WorldBuilder::new();
    let anchor = b.add_particle(DVec3::ZERO, DVec3::ZERO, 1.0, 0.0);
    b.pin(anchor);
    let bob = b.add_particle(DVec3::new(rest + a, 0.0, 0.0), DVec3::ZERO, m, 0.0);
    let g = b.springs.group("osc");
    b.springs.push(anchor, bob, rest, SpringParams::linear(k, 0.0), SpringKind::Structural, g);
    b.build(SimParams { dt, integrator: kind, verlet_drag: 0.0, constraint_iterations: 1 }).expect("oscillator world")
}

/// Least-squares slope of log(err) against log(h).
pub fn loglog_slope(h: &[f64], err: &[f64]) -> f64 {
    let n = h.len() as f64;
    let lx: Vec<f64> = h.iter().map(|v| v.ln()).collect();
    let ly: Vec<f64> = err.iter().map(|v| v.ln()).collect();
    let mx = lx.iter().sum::<f64>() / n;
    let my = ly.iter().sum::<f64>() / n;
    let sxy: f64 = lx.iter().zip(&ly).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = lx.iter().map(|x| (x - mx) * (x - mx)).sum();
    sxy / sxx
}
