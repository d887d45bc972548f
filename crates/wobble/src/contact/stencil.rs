//! Stencil arithmetic every contact response shares: a pair's four particles
//! gathered, the relative velocity of its two sides at the closest points, its
//! effective inverse mass, and an impulse applied to it with the barycentric
//! weights (which sum to zero over the stencil, so momentum is conserved).

use glam::{DMat3, DVec3};

use super::Pair;
use super::narrow::Proximity;
use crate::model::Vec3s;
use crate::par::SharedRows;

pub(super) fn outer(a: DVec3, b: DVec3) -> DMat3 {
    DMat3::from_cols(a * b.x, a * b.y, a * b.z)
}

/// Per-particle vectors the responses read and add to: a [`Vec3s`] itself, or
/// a view of one shared among threads that work on disjoint islands.
pub(super) trait Rows {
    fn row(&self, i: usize) -> DVec3;
    fn add_row(&mut self, i: usize, d: DVec3);
}

/// [`Rows`] through a type's own `get` and `add`.
macro_rules! rows_by_get_and_add {
    ($($t:ty),*) => {$(
        impl Rows for $t {
            #[inline]
            fn row(&self, i: usize) -> DVec3 {
                self.get(i)
            }
            #[inline]
            fn add_row(&mut self, i: usize, d: DVec3) {
                self.add(i, d);
            }
        }
    )*};
}

rows_by_get_and_add!(Vec3s, SharedRows<'_>);

/// Positions of a stencil's particles.
pub(super) fn gather(x: &Vec3s, p: [u32; 4]) -> [DVec3; 4] {
    x.gather(&p)
}

/// Σ w_k u_k over the stencil (a relative position or velocity).
pub(super) fn relative(u: &impl Rows, pair: &Pair, prox: &Proximity) -> DVec3 {
    let mut r = DVec3::ZERO;
    for (k, &p) in pair.p.iter().enumerate() {
        if prox.w[k] != 0.0 {
            r += prox.w[k] * u.row(p as usize);
        }
    }
    r
}

/// Σ w_k² / m_k: the inverse of the stencil's effective mass along a direction.
pub(super) fn effective_inverse_mass(inv_mass: &[f64], pair: &Pair, prox: &Proximity) -> f64 {
    pair.p.iter().zip(prox.w).map(|(&p, w)| w * w * inv_mass[p as usize]).sum()
}

/// Adds w_k / m_k × `impulse` to each stencil particle's entry of `u` (a position
/// change or a velocity change): the stencil's Σ w_k u_k then changes by k × impulse.
pub(super) fn apply(u: &mut impl Rows, inv_mass: &[f64], pair: &Pair, prox: &Proximity, impulse: DVec3) {
    for (k, &p) in pair.p.iter().enumerate() {
        let f = prox.w[k] * inv_mass[p as usize];
        if f != 0.0 {
            u.add_row(p as usize, impulse * f);
        }
    }
}
