//! [`Vec3s`]: an array of 3-vectors stored as three component arrays.
//!
//! Hot loops (spring kernels, integrator passes) read and write whole component
//! slices, which the compiler vectorises; everything else uses [`Vec3s::get`] and
//! [`Vec3s::set`] with glam's [`DVec3`]. The rejected alternative, `Vec<DVec3>`,
//! interleaves x, y and z, so a SIMD lane load needs shuffles and the cloth spring
//! kernel ran at roughly half the rate.

use glam::DVec3;

/// `n` 3-vectors in structure-of-arrays form. All three arrays always have the same
/// length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Vec3s {
    /// x components.
    pub x: Vec<f64>,
    /// y components.
    pub y: Vec<f64>,
    /// z components.
    pub z: Vec<f64>,
}

impl Vec3s {
    /// `n` zero vectors.
    #[must_use]
    pub fn zeros(n: usize) -> Self {
        Self { x: vec![0.0; n], y: vec![0.0; n], z: vec![0.0; n] }
    }

    /// Collects vectors into component arrays.
    #[must_use]
    pub fn from_vecs(v: &[DVec3]) -> Self {
        Self {
            x: v.iter().map(|p| p.x).collect(),
            y: v.iter().map(|p| p.y).collect(),
            z: v.iter().map(|p| p.z).collect(),
        }
    }

    /// Number of vectors.
    #[must_use]
    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// True when there are no vectors.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// Vector `i`. Panics if `i` is out of range.
    #[inline]
    #[must_use]
    pub fn get(&self, i: usize) -> DVec3 {
        DVec3::new(self.x[i], self.y[i], self.z[i])
    }

    /// Vectors `idx[0]`, `idx[1]`, …: a triangle's or tetrahedron's corners.
    /// Panics if an index is out of range. (Always inlined: `idx.map(|i|
    /// x.get(i))` was compiled as a call per element that returned through
    /// memory, and cost the pressure force a third of its time.)
    #[inline(always)]
    #[must_use]
    pub fn gather<const N: usize>(&self, idx: &[u32; N]) -> [DVec3; N] {
        let mut out = [DVec3::ZERO; N];
        for k in 0..N {
            out[k] = self.get(idx[k] as usize);
        }
        out
    }

    /// Overwrites vector `i`.
    #[inline]
    pub fn set(&mut self, i: usize, v: DVec3) {
        self.x[i] = v.x;
        self.y[i] = v.y;
        self.z[i] = v.z;
    }

    /// Adds `v` to vector `i`.
    #[inline]
    pub fn add(&mut self, i: usize, v: DVec3) {
        self.x[i] += v.x;
        self.y[i] += v.y;
        self.z[i] += v.z;
    }

    /// Subtracts `v` from vector `i`.
    #[inline]
    pub fn sub(&mut self, i: usize, v: DVec3) {
        self.x[i] -= v.x;
        self.y[i] -= v.y;
        self.z[i] -= v.z;
    }

    /// Appends a vector.
    pub fn push(&mut self, v: DVec3) {
        self.x.push(v.x);
        self.y.push(v.y);
        self.z.push(v.z);
    }

    /// Sets every vector to `v`.
    pub fn fill(&mut self, v: DVec3) {
        self.x.fill(v.x);
        self.y.fill(v.y);
        self.z.fill(v.z);
    }

    /// Copies `other` into `self` without reallocating when the lengths match.
    pub fn copy_from(&mut self, other: &Vec3s) {
        self.x.clone_from(&other.x);
        self.y.clone_from(&other.y);
        self.z.clone_from(&other.z);
    }

    /// Resizes to `n` vectors, new ones zero.
    pub fn resize(&mut self, n: usize) {
        self.x.resize(n, 0.0);
        self.y.resize(n, 0.0);
        self.z.resize(n, 0.0);
    }

    /// The three component slices, mutable, for kernels that split them.
    pub fn components_mut(&mut self) -> [&mut [f64]; 3] {
        [&mut self.x, &mut self.y, &mut self.z]
    }

    /// The three component slices.
    #[must_use]
    pub fn components(&self) -> [&[f64]; 3] {
        [&self.x, &self.y, &self.z]
    }

    /// Iterates over the vectors.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = DVec3> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// Collects into a `Vec<DVec3>`.
    #[must_use]
    pub fn to_vecs(&self) -> Vec<DVec3> {
        self.iter().collect()
    }
}
