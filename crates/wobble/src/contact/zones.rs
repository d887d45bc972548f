//! The contact stage's fail-safe (step 4 of [`super`]): rigid impact zones
//! (Provot; Bridson, Fedkiw and Anderson). The particles of the hits left after
//! continuous detection are merged into zones, and each zone moves rigidly over
//! the step with its own linear and angular momentum.

use glam::{DMat3, DQuat, DVec3};

use super::Contacts;
use super::narrow::PairKind;
use super::stencil::outer;
use crate::model::{Particles, State, Vec3s};

impl Contacts {
    /// Merges the particles of every current hit into impact zones (union–find on
    /// `zone_of`).
    pub(super) fn merge_zones(&mut self) {
        let find = |z: &mut Vec<u32>, mut i: u32| {
            while z[i as usize] != i {
                let up = z[z[i as usize] as usize];
                z[i as usize] = up;
                i = up;
            }
            i
        };
        for &(k, _) in &self.hits {
            let pair = self.pairs[k];
            let used = match pair.kind {
                PairKind::VertexVertex => 2,
                _ => 4,
            };
            let root = find(&mut self.zone_of, pair.p[0]);
            for &p in &pair.p[1..used] {
                let r = find(&mut self.zone_of, p);
                if r != root {
                    let (lo, hi) = if r < root { (r, root) } else { (root, r) };
                    self.zone_of[hi as usize] = lo;
                }
            }
        }
        for i in 0..self.zone_of.len() {
            let r = find(&mut self.zone_of, i as u32);
            self.zone_of[i] = r;
        }
    }

    /// Moves every zone of more than one particle rigidly over the step, keeping its
    /// linear and angular momentum (zones holding a pinned or driven particle stop).
    pub(super) fn rigidify_zones(&mut self, particles: &Particles, x0: &Vec3s, state: &mut State, h: f64) {
        // Members of each zone, in particle order.
        let n = self.zone_of.len();
        let mut size = vec![0u32; n];
        for &z in &self.zone_of {
            size[z as usize] += 1;
        }
        let mut members: Vec<(u32, u32)> = (0..n as u32)
            .filter(|&i| size[self.zone_of[i as usize] as usize] > 1)
            .map(|i| (self.zone_of[i as usize], i))
            .collect();
        members.sort_unstable();
        let mut start = 0;
        while start < members.len() {
            let zone = members[start].0;
            let end = start + members[start..].iter().take_while(|m| m.0 == zone).count();
            let ids: Vec<usize> = members[start..end].iter().map(|m| m.1 as usize).collect();
            start = end;
            if ids.len() < 2 {
                continue;
            }
            if ids.iter().any(|&i| particles.inv_mass[i] == 0.0) {
                for &i in &ids {
                    if particles.inv_mass[i] > 0.0 {
                        state.x.set(i, x0.get(i));
                        state.v.set(i, DVec3::ZERO);
                    }
                }
                continue;
            }
            let mass: f64 = ids.iter().map(|&i| particles.mass[i]).sum();
            let wsum = |f: &dyn Fn(usize) -> DVec3| ids.iter().map(|&i| particles.mass[i] * f(i)).sum::<DVec3>() / mass;
            let c0 = wsum(&|i| x0.get(i));
            let c1 = wsum(&|i| state.x.get(i));
            let vc = wsum(&|i| state.v.get(i));
            let mut l = DVec3::ZERO;
            let mut inertia = DMat3::ZERO;
            for &i in &ids {
                let (m, r) = (particles.mass[i], x0.get(i) - c0);
                let u = (state.x.get(i) - x0.get(i) - (c1 - c0)) / h;
                l += m * r.cross(u);
                inertia += m * (DMat3::from_diagonal(DVec3::splat(r.length_squared())) - outer(r, r));
            }
            let w = if inertia.determinant().abs() > 1e-300 { inertia.inverse() * l } else { DVec3::ZERO };
            let rot = if w.length() * h > 0.0 { DQuat::from_scaled_axis(w * h) } else { DQuat::IDENTITY };
            for &i in &ids {
                let r = rot * (x0.get(i) - c0);
                state.x.set(i, c1 + r);
                state.v.set(i, vc + w.cross(r));
            }
        }
    }
}
