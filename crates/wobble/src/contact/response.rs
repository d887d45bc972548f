//! The proximity response of the contact stage (step 2 of [`super`]): pairs
//! closer than their contact distance, found in parallel, are pushed apart and
//! given impulses with restitution and Coulomb friction in a Gauss–Seidel sweep
//! in canonical order, island by island (islands share no movable particle, so
//! threads sweep them side by side).

use glam::DVec3;

use super::narrow;
use super::pairs::{Live, kept_apart};
use super::stencil::{Rows, apply, effective_inverse_mass, gather, relative};
use super::{ContactSettings, Contacts, Pair, coupled};
use crate::model::{Particles, State};
use crate::par::SharedRows;

impl Contacts {
    /// Proximity response at the end positions; returns the number of pairs found
    /// closer than their contact distance in the first pass.
    pub(super) fn proximity(&mut self, particles: &Particles, state: &mut State, coupled: bool) -> usize {
        // Detection in parallel (read-only), response in order on the close pairs.
        // First test: the pair's gap.
        let x = &state.x;
        self.strays(None, x);
        let stray = &self.stray;
        let pairs = &self.pairs;
        let live = Live::of_list(self.base_len, &self.dirty, &self.is_dirty);
        let (surfaces, excluded_bodies) = (&self.surfaces, &self.excluded_bodies);
        let detect = |k: usize, out: &mut Vec<u32>| {
            let pair = &pairs[k];
            if !live.of(k, pair) {
                return;
            }
            if kept_apart(pair, stray, pair.distance) {
                return;
            }
            if super::joins_excluded(surfaces, excluded_bodies, pair) {
                return;
            }
            let pos = gather(x, pair.p);
            if narrow::proximity(pair.kind, &pos, DVec3::Y).distance < pair.distance {
                out.push(k as u32);
            }
        };
        self.close.clear();
        crate::par::collect_ranges(
            pairs.len(),
            &mut self.parts_u32,
            |r, out| r.for_each(|k| detect(k, out)),
            &mut self.close,
        );
        // Gauss–Seidel in canonical order.
        super::sort_canonical(&mut self.close, pairs, &mut self.order_keys);
        let found = self.close.len();
        // The contacts the next step's implicit solve (if any) holds as springs:
        // every close pair. Those this step's solve held keep their penetration
        // up to the slop (the spring carries the load with it); the others are
        // moved apart to their distance.
        let mut held = std::mem::take(&mut self.held_keys);
        held.clear();
        if coupled {
            held.extend(self.coupled.iter().map(|p| (p.kind as u8, p.p)));
            held.sort_unstable();
        }
        self.coupled.clear();
        self.coupled.extend(self.close.iter().map(|&k| pairs[k as usize]));
        // A held pair is pushed apart only to within the slop of its distance (the
        // list is a cache: its distances are put back after the response).
        let mut shrunk = std::mem::take(&mut self.shrunk);
        shrunk.clear();
        if coupled {
            for &k in &self.close {
                let pair = &mut self.pairs[k as usize];
                if held.binary_search(&(pair.kind as u8, pair.p)).is_ok() {
                    shrunk.push((k, pair.distance));
                    pair.distance *= 1.0 - coupled::COUPLED_SLOP;
                }
            }
        }
        self.held_keys = held;
        let settings = self.settings;
        let islands = self.islands(particles, state.len());
        // Island after island: an island whose pass changed nothing is done (its
        // next passes would change nothing either), so this does the operations of
        // the passes over all pairs without their idle rounds. Islands share no
        // movable particle, so on two threads or more they are swept side by
        // side, each whole by one thread, on the particles in place: the result
        // is the same whichever thread sweeps which island.
        let (pairs, close, starts) = (&self.pairs, &self.close, &self.island_start);
        let inv = &particles.inv_mass;
        let threads = rayon::current_num_threads();
        if islands < 2 || close.len() < SPLIT_MIN_PAIRS || threads == 1 {
            for i in 0..islands {
                let mine = &close[starts[i] as usize..starts[i + 1] as usize];
                respond_close(pairs, mine, &mut state.x, &mut state.v, inv, settings);
            }
        } else {
            // The islands in order, cut into as many parts as the pass has
            // ranges, of about equal pair counts: a part is the islands whose
            // middle pair falls in its share of the close pairs. (Given to the
            // thread whose share of the particles holds its first particle, as
            // before, the crumple's islands split 38 against 107 close pairs a
            // step, and the sweep took 34 µs on two threads; now 30–32.)
            let (n, parts, total) = (state.len(), crate::par::range_count(state.len()), close.len());
            let part = &mut self.island_part;
            part.clear();
            part.extend((0..islands).map(|i| {
                let middle = (starts[i] as usize + starts[i + 1] as usize) / 2;
                (middle * parts / total).min(parts - 1) as u32
            }));
            let part = &*part;
            // SAFETY: each island's movable particles are in no other island
            // (`Contacts::islands`), and `respond_close` adds only to movable
            // particles (`apply` skips a zero inverse mass), so a row one thread
            // adds to is touched by no other thread.
            let (x, v) = unsafe { (SharedRows::new(&mut state.x), SharedRows::new(&mut state.v)) };
            crate::par::for_parts(n, |k, _| {
                let (mut x, mut v) = (x, v);
                for i in (0..islands).filter(|&i| part[i] as usize == k) {
                    let mine = &close[starts[i] as usize..starts[i + 1] as usize];
                    respond_close(pairs, mine, &mut x, &mut v, inv, settings);
                }
            });
        }
        for &(k, distance) in &shrunk {
            self.pairs[k as usize].distance = distance;
        }
        self.shrunk = shrunk;
        found
    }

    /// Sorts `close` into islands — groups of pairs linked through shared movable
    /// particles (pinned ones are only read) — keeping the canonical order within
    /// each; `island_start` gets their bounds. Returns the number of islands.
    pub(super) fn islands(&mut self, particles: &Particles, n: usize) -> usize {
        let (pairs, parent) = (&self.pairs, &mut self.parent);
        parent.resize(n, 0);
        let movable = |p: u32| particles.inv_mass[p as usize] > 0.0;
        for &k in &self.close {
            for &p in &pairs[k as usize].p {
                parent[p as usize] = p;
            }
        }
        fn root(parent: &mut [u32], mut i: u32) -> u32 {
            while parent[i as usize] != i {
                let up = parent[parent[i as usize] as usize];
                parent[i as usize] = up;
                i = up;
            }
            i
        }
        for &k in &self.close {
            let mut first = None;
            for &p in pairs[k as usize].p.iter().filter(|&&p| movable(p)) {
                let r = root(parent, p);
                match first {
                    None => first = Some(r),
                    Some(f) if f != r => parent[r as usize] = f,
                    Some(_) => {}
                }
            }
        }
        // Number the islands by first appearance, then a stable counting sort.
        self.island_of.clear();
        self.island_of.reserve(self.close.len());
        self.island_id.resize(n, u32::MAX);
        let mut islands = 0u32;
        for &k in &self.close {
            let id = match pairs[k as usize].p.iter().copied().find(|&p| movable(p)) {
                Some(p) => {
                    let r = root(parent, p) as usize;
                    if self.island_id[r] == u32::MAX {
                        self.island_id[r] = islands;
                        islands += 1;
                    }
                    self.island_id[r]
                }
                // Nothing movable: the response skips it; any island will do.
                None => 0,
            };
            self.island_of.push(id);
        }
        islands = islands.max(1);
        for &k in &self.close {
            for &p in &pairs[k as usize].p {
                self.island_id[p as usize] = u32::MAX;
            }
        }
        self.island_start.clear();
        self.island_start.resize(islands as usize + 1, 0);
        for &id in &self.island_of {
            self.island_start[id as usize + 1] += 1;
        }
        for i in 0..islands as usize {
            self.island_start[i + 1] += self.island_start[i];
        }
        self.island_sorted.clear();
        self.island_sorted.resize(self.close.len(), 0);
        let fill = &mut self.island_fill;
        fill.clear();
        fill.extend_from_slice(&self.island_start);
        for (&k, &id) in self.close.iter().zip(&self.island_of) {
            self.island_sorted[fill[id as usize] as usize] = k;
            fill[id as usize] += 1;
        }
        std::mem::swap(&mut self.close, &mut self.island_sorted);
        islands as usize
    }
}

/// The proximity response: Gauss–Seidel passes over the pairs `close` (indices
/// into `pairs`, in the order given) on positions `x` and velocities `v` with
/// inverse masses `inv_mass`: each pair closer than its contact distance is pushed
/// apart to it along the normal and, if approaching, gets an impulse with
/// restitution and Coulomb friction. A pass that finds every pair at its distance
/// (to round-off) is the last.
fn respond_close<R: Rows>(pairs: &[Pair], close: &[u32], x: &mut R, v: &mut R, inv_mass: &[f64], s: ContactSettings) {
    let (eps, mu) = (s.restitution, s.friction);
    for _ in 0..s.proximity_iterations.max(1) {
        let mut changed = false;
        for &k in close {
            let pair = &pairs[k as usize];
            let pos = pair.p.map(|i| x.row(i as usize));
            let prox = narrow::proximity(pair.kind, &pos, DVec3::Y);
            if prox.distance >= pair.distance * (1.0 - 1e-9) {
                continue;
            }
            let k = effective_inverse_mass(inv_mass, pair, &prox);
            if k <= 0.0 {
                continue;
            }
            changed = true;
            // Position: to the contact distance.
            let lambda = (pair.distance - prox.distance) / k;
            apply(x, inv_mass, pair, &prox, prox.n * lambda);
            // Velocity: stop an approach (with restitution), Coulomb friction.
            let rel = relative(v, pair, &prox);
            let vn = rel.dot(prox.n);
            if vn < 0.0 {
                let jn = -(1.0 + eps) * vn / k;
                let vt = rel - vn * prox.n;
                let vt_len = vt.length();
                let mut impulse = prox.n * jn;
                if vt_len > 0.0 {
                    let jt = (vt_len / k).min(mu * jn);
                    impulse -= vt * (jt / vt_len);
                }
                apply(v, inv_mass, pair, &prox, impulse);
            }
        }
        if !changed {
            break;
        }
    }
}

/// Fewest close pairs for which the proximity response's islands are shared out
/// among the threads: below it the hand-over costs more than it saves.
const SPLIT_MIN_PAIRS: usize = 64;
