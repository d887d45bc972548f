//! Continuous collision detection of the contact stage (step 3 of [`super`]):
//! each candidate pair's linear motion over the step tested for a touching,
//! coplanar instant, and the inelastic response to each hit.

use glam::DVec3;

use super::Contacts;
use super::narrow::{self, Hit, PairKind};
use super::pairs::{Live, kept_apart};
use super::stencil::{apply, effective_inverse_mass, gather, relative};
use crate::model::{Particles, State, Vec3s};

impl Contacts {
    /// Continuous detection for the sweep `x0` → `x1` into `hits`.
    ///
    /// Within one resolve (x0 fixed) a pass after the first tests only the pairs
    /// with a particle that moved since the previous pass or took part in one of
    /// its hits: every other pair has the same sweep as when it was last found
    /// clear, so testing it again would give the same answer. A rebuilt pair list
    /// is tested whole.
    pub(super) fn find_hits(&mut self, x0: &Vec3s, x1: &Vec3s) {
        let partial = self.tested == Some(self.pairs_version) && self.tested_x1.len() == x1.len();
        if partial {
            self.retest.clear();
            self.retest.resize(x1.len(), false);
            self.pending.resize(x1.len(), false);
            for (i, r) in self.retest.iter_mut().enumerate() {
                *r = x1.get(i) != self.tested_x1.get(i) || self.pending[i];
            }
            for &(k, _) in &self.hits {
                for &p in &self.pairs[k].p {
                    self.retest[p as usize] = true;
                }
            }
        }
        // First test: the pair's gap.
        self.strays(Some(x0), x1);
        let stray = &self.stray;
        let (pairs, excluded, retest) = (&self.pairs, &self.excluded, &self.retest);
        let (surfaces, excluded_bodies) = (&self.surfaces, &self.excluded_bodies);
        let live = Live::of_list(self.base_len, &self.dirty, &self.is_dirty);
        let test = |k: usize, out: &mut Vec<(usize, Hit)>| {
            let pair = &pairs[k];
            if partial && !pair.p.iter().any(|&p| retest[p as usize]) || !live.of(k, pair) {
                return;
            }
            let eta = 0.1 * pair.distance;
            if kept_apart(pair, stray, eta) {
                return;
            }
            if !excluded.is_empty() && excluded.binary_search(&pair.p).is_ok() {
                return;
            }
            if super::joins_excluded(surfaces, excluded_bodies, pair) {
                return;
            }
            let (a, b) = (gather(x0, pair.p), gather(x1, pair.p));
            if sweeps_apart(pair.kind, &a, &b, eta) {
                return;
            }
            SCRATCH.with_borrow_mut(|times| {
                if let Some(hit) = narrow::ccd(pair.kind, &a, &b, eta, times) {
                    out.push((k, hit));
                }
            });
        };
        self.hits.clear();
        crate::par::collect_ranges(
            pairs.len(),
            &mut self.parts_hits,
            |r, out| r.for_each(|k| test(k, out)),
            &mut self.hits,
        );
        // The responses take the hits in canonical order.
        self.hits.sort_unstable_by_key(|h| pairs[h.0].order());
        self.pending.clear();
        self.tested = Some(self.pairs_version);
        self.tested_x1.copy_from(x1);
        if !self.excluded.is_empty() {
            // Excluded stencils that have separated rejoin continuous detection.
            let pairs = &self.pairs;
            let still = |p: &[u32; 4]| {
                pairs.iter().find(|q| q.p == *p).is_none_or(|q| {
                    let pos = gather(x1, q.p);
                    narrow::proximity(q.kind, &pos, DVec3::Y).distance < q.distance
                })
            };
            let before = self.excluded.len();
            self.excluded.retain(still);
            if self.excluded.len() != before {
                // Pairs that rejoined have not been tested yet.
                self.tested = None;
            }
        }
        if !self.excluded_bodies.is_empty() {
            // Bodies whose surfaces no longer intersect rejoin contact ...
            let surf = &self.surfaces;
            let groups: Vec<usize> = surf.triangle_body.iter().map(|&b| b as usize).collect();
            let mut still: Vec<(u32, u32)> = super::intersect::intersecting_pairs(&surf.triangles, &groups, x1, true)
                .into_iter()
                .map(|(a, b)| {
                    let (a, b) = (surf.triangle_body[a], surf.triangle_body[b]);
                    (a.min(b), a.max(b))
                })
                .collect();
            // ... and are apart by their contact distance (surfaces that just stopped
            // crossing touch, and would lock at once).
            for pair in &self.pairs {
                if super::joins_excluded(surf, &self.excluded_bodies, pair)
                    && narrow::proximity(pair.kind, &gather(x1, pair.p), DVec3::Y).distance < pair.distance
                {
                    let (a, b) = surf.pair_bodies(pair);
                    still.push((a.min(b), a.max(b)));
                }
            }
            still.sort_unstable();
            still.dedup();
            let before = self.excluded_bodies.len();
            self.excluded_bodies.retain(|p| still.binary_search(p).is_ok());
            if self.excluded_bodies.len() != before {
                self.tested = None;
            }
        }
    }

    /// Impulse-and-push response to each hit, in order (Gauss–Seidel).
    pub(super) fn respond_to_hits(&mut self, particles: &Particles, x0: &Vec3s, state: &mut State) {
        for &(k, hit) in &self.hits {
            let pair = self.pairs[k];
            let mut prox = hit.at;
            prox.n = hit_normal(pair.kind, &gather(x0, pair.p), &gather(&state.x, pair.p), &hit);
            let kk = effective_inverse_mass(&particles.inv_mass, &pair, &prox);
            if kk <= 0.0 {
                continue;
            }
            let target = 0.5 * pair.distance;
            let gap = relative(&state.x, &pair, &prox).dot(prox.n);
            if gap < target {
                apply(&mut state.x, &particles.inv_mass, &pair, &prox, prox.n * ((target - gap) / kk));
            }
            let vn = relative(&state.v, &pair, &prox).dot(prox.n);
            if vn < 0.0 {
                apply(&mut state.v, &particles.inv_mass, &pair, &prox, prox.n * (-vn / kk));
            }
        }
    }
}

thread_local! {
    /// Candidate times of continuous detection, one buffer per thread.
    static SCRATCH: std::cell::RefCell<Vec<(f64, bool)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// True when the two sides of a stencil sweeping from `a` to `b` stay farther apart
/// than `eta` (their swept boxes do not meet).
fn sweeps_apart(kind: PairKind, a: &[DVec3; 4], b: &[DVec3; 4], eta: f64) -> bool {
    let (split, used) = match kind {
        PairKind::VertexTriangle => (1, 4),
        PairKind::EdgeEdge => (2, 4),
        PairKind::VertexVertex => (1, 2),
    };
    let bound = |r: std::ops::Range<usize>| {
        r.fold((DVec3::INFINITY, DVec3::NEG_INFINITY), |(lo, hi), k| (lo.min(a[k]).min(b[k]), hi.max(a[k]).max(b[k])))
    };
    let ((lo1, hi1), (lo2, hi2)) = (bound(0..split), bound(split..used));
    let e = DVec3::splat(eta);
    (lo1 - e).cmpgt(hi2).any() || (lo2 - e).cmpgt(hi1).any()
}

/// The normal of a hit: the triangle's (vertex–triangle) or the edges' common
/// perpendicular (edge–edge) at the hit time, pointing to where the first side was
/// at the start of the step; the proximity direction when that is degenerate.
fn hit_normal(kind: PairKind, x0: &[DVec3; 4], x1: &[DVec3; 4], hit: &Hit) -> DVec3 {
    let at = |k: usize| x0[k] + hit.t * (x1[k] - x0[k]);
    let geometric = match kind {
        PairKind::VertexTriangle => (at(2) - at(1)).cross(at(3) - at(1)),
        PairKind::EdgeEdge => (at(1) - at(0)).cross(at(3) - at(2)),
        PairKind::VertexVertex => hit.at.n,
    };
    let n = geometric.try_normalize().unwrap_or(hit.at.n);
    // Orient by the start: Σ w_k x⁰_k · n must be positive.
    let start: DVec3 = (0..4).map(|k| hit.at.w[k] * x0[k]).sum();
    let s = start.dot(n);
    if s < 0.0 || (s == 0.0 && n.dot(hit.at.n) < 0.0) { -n } else { n }
}
