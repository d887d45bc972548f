//! The candidate-pair list of the contact stage (its broad phase, step 1 of
//! [`super`]): boxes around every particle's sweep, grown so that a list serves
//! several steps; the primitives' boxes hashed and joined into vertex–triangle,
//! edge–edge and vertex–vertex pairs, culled by distance (`Near`); incremental
//! updates when a few particles leave their boxes, a full build when many do;
//! and the per-pass gap test (`Contacts::strays`, `kept_apart`) that lets a pass
//! skip pairs that cannot be close.

use glam::DVec3;

use super::broad::{Aabb, SpatialHash};
use super::narrow::{self, PairKind};
use super::stencil::gather;
use super::{Contacts, Pair, surface};
use crate::model::Vec3s;

impl Contacts {
    /// Makes `pairs` hold every pair whose sweeps x0 → x1 (grown by the contact
    /// distance) overlap.
    ///
    /// The list is built with each particle's box around its sweep grown by a
    /// margin, and each primitive's box the union of its particles' boxes (grown by
    /// half the thickness). It stays valid while every particle's x0 and x1 lie
    /// inside its own box: then every primitive's current sweep box lies inside the
    /// box it was hashed with, so no overlapping pair is missing. When a few
    /// particles leave their boxes (corrections within a step), their boxes grow and
    /// only the pairs of the primitives around them are found again
    /// ([`Contacts::update_pairs`]); when many do, the list is rebuilt.
    pub(super) fn ensure_pairs(&mut self, x0: &Vec3s, x1: &Vec3s) {
        let n = x0.len();
        if self.built_lo.len() == n {
            let (lo, hi) = (self.built_lo.components(), self.built_hi.components());
            let (a, b) = (x0.components(), x1.components());
            let limit = (n / INCREMENTAL_SHARE).max(INCREMENTAL_MIN);
            self.moved.clear();
            // Axis by axis over the component arrays, without early exits (the
            // comparisons vectorise); a particle's index is listed when either end
            // of its sweep lies outside its box.
            let test = |r: std::ops::Range<usize>, out: &mut Vec<u32>| {
                let mut outside = [false; 256];
                let mut first = r.start;
                while first < r.end {
                    let len = (r.end - first).min(outside.len());
                    let flags = &mut outside[..len];
                    flags.fill(false);
                    for axis in 0..3 {
                        let rows = first..first + len;
                        let (lo, hi, a, b) =
                            (&lo[axis][rows.clone()], &hi[axis][rows.clone()], &a[axis][rows.clone()], &b[axis][rows]);
                        for (k, flag) in flags.iter_mut().enumerate() {
                            *flag |= !((a[k] >= lo[k]) & (a[k] <= hi[k]) & (b[k] >= lo[k]) & (b[k] <= hi[k]));
                        }
                    }
                    out.extend(flags.iter().enumerate().filter(|&(_, &f)| f).map(|(k, _)| (first + k) as u32));
                    first += len;
                }
            };
            crate::par::collect_ranges(n, &mut self.parts_u32, test, &mut self.moved);
            self.clear_touched();
            if self.moved.is_empty() {
                return;
            }
            if self.moved.len() + self.dirty.len() <= limit {
                self.update_pairs(x0, x1);
                return;
            }
        }
        self.rebuilds += 1;
        self.full_build(x0, x1);
    }

    /// [`Contacts::ensure_pairs`] after responses within a step: x0 is unchanged
    /// and only the particles in `touched` can have moved since the last check, so
    /// only their end positions are tested.
    pub(super) fn ensure_touched(&mut self, x0: &Vec3s, x1: &Vec3s) {
        let n = x0.len();
        if self.built_lo.len() != n {
            self.clear_touched();
            self.ensure_pairs(x0, x1);
            return;
        }
        let (lo, hi) = (&self.built_lo, &self.built_hi);
        let inside = |i: usize, p: DVec3| p.cmpge(lo.get(i)).all() && p.cmple(hi.get(i)).all();
        self.moved.clear();
        self.moved.extend(self.touched.iter().copied().filter(|&i| !inside(i as usize, x1.get(i as usize))));
        self.moved.sort_unstable();
        self.clear_touched();
        if self.moved.is_empty() {
            return;
        }
        let limit = (n / INCREMENTAL_SHARE).max(INCREMENTAL_MIN);
        if self.moved.len() + self.dirty.len() <= limit {
            self.update_pairs(x0, x1);
            return;
        }
        self.rebuilds += 1;
        self.full_build(x0, x1);
    }

    /// Adds the particles of the close pairs to `touched`.
    pub(super) fn touch_close(&mut self) {
        for k in 0..self.close.len() {
            let p = self.pairs[self.close[k] as usize].p;
            self.touch(p);
        }
    }

    /// Adds the particles of the current hits to `touched`.
    pub(super) fn touch_hits(&mut self) {
        for k in 0..self.hits.len() {
            let p = self.pairs[self.hits[k].0].p;
            self.touch(p);
        }
    }

    /// Adds particles `p` to `touched` (each once).
    pub(super) fn touch(&mut self, p: [u32; 4]) {
        if self.marked.len() < self.built_lo.len() {
            self.marked.resize(self.built_lo.len(), false);
        }
        for i in p {
            if let Some(m) = self.marked.get_mut(i as usize).filter(|m| !**m) {
                *m = true;
                self.touched.push(i);
            }
        }
    }

    /// Empties `touched`.
    fn clear_touched(&mut self) {
        for &i in &self.touched {
            self.marked[i as usize] = false;
        }
        self.touched.clear();
    }

    /// Rebuilds the list for the sweep `x0` → `x1`, with a margin for reuse.
    fn full_build(&mut self, x0: &Vec3s, x1: &Vec3s) {
        let n = x0.len();
        // A list can outlive the step when no particle's sweep is longer than
        // the thickness: then each particle's box also covers its motion some
        // steps ahead plus a small margin. For fast motion the box covers two
        // steps ahead and the margin is the thickness (it absorbs small
        // corrections; larger ones go to incremental updates). Either list is
        // culled by distance (`Near`) and each pass tests pairs by their gaps
        // (`kept_apart`).
        let thickness = self.surfaces.bodies.iter().map(|b| b.thickness).fold(0.0, f64::max);
        let sweep = (0..n).map(|i| (x1.get(i) - x0.get(i)).abs().max_element()).fold(0.0, f64::max);
        let slow = sweep <= thickness;
        let factor = if slow { PAIR_MARGIN } else { PAIR_MARGIN_FAST };
        self.margin = factor * thickness;
        // Culling costs a distance per candidate pair at the build and saves a
        // box test per pair in every pass: worth it for a list built to last, and
        // for the fast lists too (implicit crumple, 0.3 builds a step: 63,000 →
        // 37,500 pairs; on two threads broad 2.1 → 2.7 ms, narrow 1.4 → 0.6 ms,
        // response 1.3 → 0.8 ms a step).
        self.cull = true;
        self.lookahead = if slow { PAIR_LOOKAHEAD } else { PAIR_LOOKAHEAD_FAST };
        self.build_pairs(x0, x1, self.margin);
    }

    /// The broad phase on its own: every candidate pair whose boxes around the
    /// sweep `x0` → `x1` (grown by the contact distance) overlap, in the order the
    /// response uses. Valid for this sweep only.
    pub fn broad_phase(&mut self, x0: &Vec3s, x1: &Vec3s) -> &[Pair] {
        self.cull = false;
        self.lookahead = 0.0;
        self.build_pairs(x0, x1, 0.0);
        self.built_lo.resize(0);
        &self.pairs
    }

    /// Sets particle `i`'s box to its sweep `a` → `b` grown by `margin`, or grows
    /// it to cover that sweep.
    fn fit_particle_box(&mut self, i: usize, a: DVec3, b: DVec3, grow: bool) {
        let (mut lo, mut hi) = particle_box(a, b, self.margin, self.lookahead);
        if grow {
            lo = lo.min(self.built_lo.get(i));
            hi = hi.max(self.built_hi.get(i));
        }
        self.built_lo.set(i, lo);
        self.built_hi.set(i, hi);
        self.anchor.set(i, b);
        self.reach[i] = reach(lo, hi, b);
    }

    /// Fits every particle's box to its sweep x0 → x1 (as
    /// [`Contacts::fit_particle_box`] without growing), in parallel ranges.
    fn fit_particle_boxes(&mut self, x0: &Vec3s, x1: &Vec3s) {
        let (margin, lookahead) = (self.margin, self.lookahead);
        let [lx, ly, lz] = self.built_lo.components_mut();
        let [hx, hy, hz] = self.built_hi.components_mut();
        let [ax, ay, az] = self.anchor.components_mut();
        let n = lx.len();
        let cols = [lx, ly, lz, hx, hy, hz, ax, ay, az, &mut self.reach[..n]];
        crate::par::for_ranges_mut(cols, |first, c| {
            let [lx, ly, lz, hx, hy, hz, ax, ay, az, r] = c;
            for k in 0..r.len() {
                let (a, b) = (x0.get(first + k), x1.get(first + k));
                let (lo, hi) = particle_box(a, b, margin, lookahead);
                (lx[k], ly[k], lz[k]) = (lo.x, lo.y, lo.z);
                (hx[k], hy[k], hz[k]) = (hi.x, hi.y, hi.z);
                (ax[k], ay[k], az[k]) = (b.x, b.y, b.z);
                r[k] = reach(lo, hi, b);
            }
        });
    }

    /// Rebuilds `pairs` for the sweep `x0` → `x1` with every box grown by a further
    /// `margin` (m).
    fn build_pairs(&mut self, x0: &Vec3s, x1: &Vec3s, margin: f64) {
        self.pairs.clear();
        // Hits index the old list (and a new list is tested whole anyway).
        self.hits.clear();
        self.pairs_version += 1;
        self.margin = margin;
        self.built_lo.resize(x0.len());
        self.built_hi.resize(x0.len());
        self.anchor.resize(x0.len());
        self.reach.resize(x0.len(), 0.0);
        self.fit_particle_boxes(x0, x1);
        for &i in &self.dirty {
            self.is_dirty[i as usize] = false;
        }
        self.dirty.clear();
        for class in [TRIANGLES, EDGES, POINTS, VERTICES] {
            let count = self.surfaces.count(class);
            for &k in &self.prim_dirty_list[class] {
                self.prim_dirty[class][k as usize] = false;
            }
            self.prim_dirty_list[class].clear();
            self.prim_dirty[class].resize(count, false);
            self.prim_stamp[class].resize(count, 0);
        }
        let surf = &self.surfaces;
        let (lo, hi) = (&self.built_lo, &self.built_hi);
        // Every primitive's box, class after class, filled in parallel chunks.
        let counts = [TRIANGLES, EDGES, POINTS, VERTICES].map(|class| surf.count(class));
        // (Every box is overwritten below: no need to clear them first.)
        self.boxes.resize(counts.iter().sum(), Aabb::default());
        let fill = |first: usize, out: &mut [Aabb]| {
            let (mut class, mut k) = (0, first);
            while class < 3 && k >= counts[class] {
                k -= counts[class];
                class += 1;
            }
            for b in out {
                while k >= counts[class] {
                    k = 0;
                    class += 1;
                }
                *b = primitive_box(surf, lo, hi, class, k);
                k += 1;
            }
        };
        if self.boxes.len() <= CHUNK || rayon::current_num_threads() == 1 {
            fill(0, &mut self.boxes);
        } else {
            use rayon::prelude::*;
            self.boxes.par_chunks_mut(CHUNK).enumerate().for_each(|(c, out)| fill(c * CHUNK, out));
        }
        if self.boxes.is_empty() {
            return;
        }
        let (tri_boxes, point_first) = (surf.triangles.len(), surf.triangles.len() + surf.edges.len());
        let vertex_first = point_first + surf.points.len();
        // Cell size: the mean extent of the triangle, edge and point boxes.
        let shared = &self.boxes[..vertex_first];
        let mean = shared.iter().map(|b| (b.hi - b.lo).max_element()).sum::<f64>() / shared.len().max(1) as f64;
        let cell = (mean * CELL_SIZE).max(1e-9);
        self.cell = cell;
        // Vertex–triangle: the vertices' hash joined with the triangles'; edge–edge
        // and vertex–vertex (particles of bodies without edges): self-joins. Joins
        // run over parts of the table in parallel, concatenated in part order. (The
        // list's order does not matter: the response takes the pairs it acts on
        // in their canonical order, `Pair::order`.)
        let boxes = &self.boxes;
        let tris = &boxes[..tri_boxes];
        let edges = &boxes[tri_boxes..point_first];
        let points = &boxes[point_first..vertex_first];
        let verts = &boxes[vertex_first..];
        let near = Near { on: self.cull, x: &self.anchor, reach: &self.reach };
        let vt = |k, t| surf.vertex_triangle(k, t).and_then(|p| near.keep(p));
        let ee = |k, o| surf.edge_edge(k, o).and_then(|p| near.keep(p));
        let vv = |k, o| surf.point_point(k, o).and_then(|p| near.keep(p));
        // Two independent chains, side by side: the vertices' and triangles'
        // hashes and their join, and the edges' and points' hashes and their
        // self-joins. Neither waits for the other's hashes, and a thread done
        // with its chain takes parts of the other's joins. The second chain's
        // pairs follow the first's, as one list.
        let (pairs, second) = (&mut self.pairs, &mut self.pairs_second);
        second.clear();
        let [hv, ht, he, hp] = &mut *self.hashes.0;
        rayon::join(
            || {
                rayon::join(|| hv.build(verts, cell), || ht.build(tris, cell));
                in_parts(hv.slots(), |r, out| hv.join(ht, r, |k, t| out.extend(vt(k, t))), pairs);
                hv.join_large(ht, |k, t| pairs.extend(vt(k, t)));
            },
            || {
                rayon::join(|| he.build(edges, cell), || hp.build(points, cell));
                in_parts(he.slots(), |r, out| he.self_join(r, |k, o| out.extend(ee(k, o))), second);
                he.self_join_large(|k, o| second.extend(ee(k, o)));
                in_parts(hp.slots(), |r, out| hp.self_join(r, |k, o| out.extend(vv(k, o))), second);
                hp.self_join_large(|k, o| second.extend(vv(k, o)));
            },
        );
        pairs.extend_from_slice(second);
        self.base_len = self.pairs.len();
    }

    /// Incremental update of `pairs` for the particles in `moved` (which left
    /// their boxes): their boxes grow to cover x0 → x1, they and their primitives
    /// become dirty (hashed boxes stale) until the next full build, and the pairs
    /// of the primitives touching them are found again — against the hashes for
    /// clean primitives (whose hashed boxes still hold), and directly against the
    /// dirty ones.
    fn update_pairs(&mut self, x0: &Vec3s, x1: &Vec3s) {
        let n = x0.len();
        self.is_dirty.resize(n, false);
        self.moving.resize(n, false);
        self.pending.resize(n, false);
        // The list's indices change: what the next continuous pass must test is
        // kept per particle instead.
        for &(k, _) in &self.hits {
            for &p in &self.pairs[k].p {
                self.pending[p as usize] = true;
            }
        }
        self.hits.clear();
        for k in 0..self.moved.len() {
            let i = self.moved[k] as usize;
            self.fit_particle_box(i, x0.get(i), x1.get(i), true);
            self.moving[i] = true;
            self.pending[i] = true;
            if !self.is_dirty[i] {
                self.is_dirty[i] = true;
                self.dirty.push(i as u32);
            }
        }
        // Pairs found by earlier updates that touch a moving particle go; they
        // are found again below. (Pairs of the full build that touch a dirty
        // particle are dead: skipped, see `Live`.)
        let moving = &self.moving;
        let mut keep = self.base_len;
        for k in self.base_len..self.pairs.len() {
            if !self.pairs[k].p.iter().any(|&i| moving[i as usize]) {
                self.pairs[keep] = self.pairs[k];
                keep += 1;
            }
        }
        self.pairs.truncate(keep);
        // The primitives touching a moving particle: new this update, and dirty
        // (their hashed boxes are stale) until the next full build.
        let surf = &self.surfaces;
        self.stamp += 1;
        for class in [TRIANGLES, EDGES, POINTS, VERTICES] {
            self.fresh[class].clear();
        }
        for &i in &self.moved {
            for &(class, k) in self.incidence.of_particle(i) {
                let (class, k) = (class as usize, k as usize);
                if self.prim_stamp[class][k] != self.stamp {
                    self.prim_stamp[class][k] = self.stamp;
                    self.fresh[class].push(k as u32);
                    if !self.prim_dirty[class][k] {
                        self.prim_dirty[class][k] = true;
                        self.prim_dirty_list[class].push(k as u32);
                    }
                }
            }
        }
        for &i in &self.moved {
            self.moving[i as usize] = false;
        }
        // Each fresh primitive against the clean ones (through the full build's
        // hashes) and against every dirty one: the fresh ones of a class are hashed
        // on their own and each dirty primitive of the partner class is looked up
        // in that small hash (a direct test of every fresh against every dirty
        // primitive grew with the square of the dirty list: 0.6 ms an update for 17
        // particles on the crumple, late in a list's life). A pair of two fresh
        // primitives is found once.
        // The lookups are independent: the fresh primitives' hashes are built
        // first, and then every lookup is one item of a list cut into chunks
        // taken by any thread (each chunk into its own list, the lists appended
        // in order). In three fixed groups (vertices; triangles; edges and
        // points) the edges' group took 40 of the 66 µs a step that updates
        // cost on the crumple, and set the pace on two threads.
        let mut scratch = std::mem::take(&mut self.update_scratch);
        let (lo, hi) = (&self.built_lo, &self.built_hi);
        let (dirty, dirty_list, fresh, stamp) = (&self.prim_dirty, &self.prim_dirty_list, &self.fresh, self.stamp);
        let [hv, ht, he, hp] = &*self.hashes.0;
        let near = Near { on: self.cull, x: &self.anchor, reach: &self.reach };
        let cell = self.cell;
        let b = |class: usize, k: u32| primitive_box(surf, lo, hi, class, k as usize);
        let clean = |class: usize, k: u32| !dirty[class][k as usize];
        let is_fresh = |class: usize, k: u32| self.prim_stamp[class][k as usize] == stamp;
        let UpdateScratch { hashes: small, boxes, parts } = &mut scratch;
        let small = &mut *small.0;
        {
            let hash_fresh = |class: usize, hash: &mut SpatialHash, boxes: &mut Vec<Aabb>| {
                boxes.clear();
                boxes.extend(fresh[class].iter().map(|&k| b(class, k)));
                hash.build(boxes, cell);
            };
            // (Indexed by class: triangles, edges, points, vertices.)
            let [st, se, sp, sv] = small;
            let [bt, be, bp, bv] = boxes;
            rayon::join(
                || rayon::join(|| hash_fresh(VERTICES, sv, bv), || hash_fresh(TRIANGLES, st, bt)),
                || rayon::join(|| hash_fresh(EDGES, se, be), || hash_fresh(POINTS, sp, bp)),
            );
        }
        let small = &*small;
        // The lookups in order: fresh vertices against the clean triangles, dirty
        // triangles against the fresh vertices; fresh triangles against the clean
        // vertices, dirty vertices (not fresh) against the fresh triangles; then
        // for edges and for points, fresh against clean and dirty against fresh.
        let lists: [&[u32]; 8] = [
            &fresh[VERTICES],
            &dirty_list[TRIANGLES],
            &fresh[TRIANGLES],
            &dirty_list[VERTICES],
            &fresh[EDGES],
            &dirty_list[EDGES],
            &fresh[POINTS],
            &dirty_list[POINTS],
        ];
        let mut starts = [0usize; 9];
        for (g, list) in lists.iter().enumerate() {
            starts[g + 1] = starts[g] + list.len();
        }
        let lookup = |g: usize, item: u32, found: &mut Vec<Pair>| match g {
            0 => ht.for_each_overlap(&b(VERTICES, item), |t| {
                if clean(TRIANGLES, t) {
                    found.extend(surf.vertex_triangle(item, t).and_then(|p| near.keep(p)));
                }
            }),
            1 => {
                let bt = b(TRIANGLES, item);
                small[VERTICES].for_each_overlap(&bt, |j| {
                    let k = fresh[VERTICES][j as usize];
                    if bt.overlaps(&b(VERTICES, k)) {
                        found.extend(surf.vertex_triangle(k, item).and_then(|p| near.keep(p)));
                    }
                });
            }
            2 => hv.for_each_overlap(&b(TRIANGLES, item), |k| {
                if clean(VERTICES, k) {
                    found.extend(surf.vertex_triangle(k, item).and_then(|p| near.keep(p)));
                }
            }),
            3 => {
                if is_fresh(VERTICES, item) {
                    return;
                }
                let bk = b(VERTICES, item);
                small[TRIANGLES].for_each_overlap(&bk, |j| {
                    let t = fresh[TRIANGLES][j as usize];
                    if bk.overlaps(&b(TRIANGLES, t)) {
                        found.extend(surf.vertex_triangle(item, t).and_then(|p| near.keep(p)));
                    }
                });
            }
            _ => {
                let (class, hash) = if g < 6 { (EDGES, he) } else { (POINTS, hp) };
                let make = |k: u32, o: u32| {
                    let (k, o) = (k.min(o), k.max(o));
                    if class == EDGES { surf.edge_edge(k, o) } else { surf.point_point(k, o) }
                        .and_then(|p| near.keep(p))
                };
                if g.is_multiple_of(2) {
                    hash.for_each_overlap(&b(class, item), |o| {
                        if clean(class, o) {
                            found.extend(make(item, o));
                        }
                    });
                } else {
                    let (o, bo) = (item, b(class, item));
                    small[class].for_each_overlap(&bo, |j| {
                        let k = fresh[class][j as usize];
                        if o != k && !(is_fresh(class, o) && o < k) && bo.overlaps(&b(class, k)) {
                            found.extend(make(k, o));
                        }
                    });
                }
            }
        };
        let total = starts[8];
        let chunks = total.div_ceil(UPDATE_CHUNK);
        if parts.len() < chunks {
            parts.resize_with(chunks, Default::default);
        }
        let chunk = |c: usize, found: &mut Vec<Pair>| {
            found.clear();
            let mut g = 0;
            for i in c * UPDATE_CHUNK..((c + 1) * UPDATE_CHUNK).min(total) {
                while i >= starts[g + 1] {
                    g += 1;
                }
                lookup(g, lists[g][i - starts[g]], found);
            }
        };
        if chunks <= 1 || rayon::current_num_threads() == 1 {
            for (c, found) in parts[..chunks].iter_mut().enumerate() {
                chunk(c, found);
            }
        } else {
            use rayon::prelude::*;
            parts[..chunks].par_iter_mut().enumerate().for_each(|(c, found)| chunk(c, found));
        }
        for found in &parts[..chunks] {
            self.pairs.extend_from_slice(found);
        }
        self.update_scratch = scratch;
    }

    /// Sets `stray` to how far each particle is from its anchor: at `x1`, or at
    /// the farthest of `x0` and `x1` (and so anywhere on the straight sweep
    /// between them). With a pair's `gap`, a bound on how close it can be
    /// ([`kept_apart`]).
    pub(super) fn strays(&mut self, x0: Option<&Vec3s>, x1: &Vec3s) {
        let anchor = &self.anchor;
        self.stray.resize(x1.len(), 0.0);
        let fill = |first: usize, out: &mut [f64]| {
            for (k, s) in out.iter_mut().enumerate() {
                let (i, a) = (first + k, anchor.get(first + k));
                let far = x1.get(i).distance(a);
                *s = x0.map_or(far, |x0| far.max(x0.get(i).distance(a)));
            }
        };
        crate::par::for_ranges_mut([&mut self.stray], |first, [out]| fill(first, out));
    }
}

/// Growth of the broad phase's boxes, in units of the largest thickness, that lets
/// the pair list serve several steps (see `Contacts::ensure_pairs`), with
/// [`PAIR_LOOKAHEAD`]. Measured with it on the default scene (32 × 32 cloth,
/// 15 000 steps, one thread): margins 0.25–0.5 with 8–16 steps ahead took 3.8–5.0 s
/// (a noisy machine), without looking ahead 5.6 s at 0.5 and 7.8 s at 1.0; at 2
/// (the value before distance culling) 30 s, as nearly every pair of neighbouring
/// cloth elements then survives the culling. On the symplectic 64 × 64 crumple,
/// 1.7–2.0 ms per step against 3.3 ms without looking ahead.
const PAIR_MARGIN: f64 = 0.35;

/// Steps of a particle's current motion (its sweep x0 → x1 continued past x1)
/// that its box covers ahead, for lists that serve several steps: a cloth that
/// swings as a whole then stays inside its boxes instead of forcing a rebuild
/// every few steps. See [`PAIR_MARGIN`] for the measurements.
const PAIR_LOOKAHEAD: f64 = 12.0;

/// Steps of a particle's motion ahead that its box covers when particles move
/// farther than the thickness in a step: a particle that keeps its velocity then
/// stays inside its box for the next two steps instead of leaving it at once and
/// forcing an update or a rebuild. Measured on the implicit crumple (the
/// `contact-cost` experiment, h = 1 ms, two threads; broad / narrow / response ms
/// per step): 0 steps 4.5–4.8 / 1.2 / 1.2–1.3 (35,900 pairs), 1 step
/// 3.3 / 1.3 / 1.4, 2 steps 2.6–2.8 / 1.4–1.5 / 1.4–1.5 (37,600 pairs), 3 steps
/// 2.5 / 1.5 / 1.5 (42,000), 4 steps 2.7 / 1.4 / 1.5 (44,800).
const PAIR_LOOKAHEAD_FAST: f64 = 2.0;

/// Growth of the broad phase's boxes, in units of the largest thickness, when
/// particles move farther than the thickness in a step (the list cannot outlive the
/// step; the margin absorbs small corrections within it, larger ones go to
/// incremental updates). Measured on the implicit crumple: 0.5, 1 and 2 gave 7.9,
/// 5.4 and 4.8 ms of broad phase but 2.5, 2.6 and 3.1 ms of narrow phase per step.
const PAIR_MARGIN_FAST: f64 = 1.0;

/// An incremental update of the pair list handles at most 1/this of the particles
/// (and at least [`INCREMENTAL_MIN`]); beyond it the list is rebuilt.
const INCREMENTAL_SHARE: usize = 16;

/// See [`INCREMENTAL_SHARE`].
const INCREMENTAL_MIN: usize = 16;

/// Primitive classes of a surface, as indices.
const TRIANGLES: usize = 0;

const EDGES: usize = 1;

const POINTS: usize = 2;

const VERTICES: usize = 3;

/// The primitives (class, index) touching each particle.
#[derive(Clone, Debug, Default)]
pub(super) struct Incidence {
    start: Vec<u32>,
    items: Vec<(u8, u32)>,
}

impl Incidence {
    pub(super) fn of(surf: &surface::Surfaces) -> Incidence {
        let mut all: Vec<(u32, u8, u32)> = Vec::new();
        for class in [TRIANGLES, EDGES, POINTS, VERTICES] {
            for k in 0..surf.count(class) {
                for &p in surf.particles_of(class, k) {
                    all.push((p, class as u8, k as u32));
                }
            }
        }
        all.sort_unstable();
        all.dedup();
        let n = all.iter().map(|a| a.0 as usize + 1).max().unwrap_or(0);
        let mut start = vec![0u32; n + 1];
        for a in &all {
            start[a.0 as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        Incidence { start, items: all.into_iter().map(|a| (a.1, a.2)).collect() }
    }

    fn of_particle(&self, i: u32) -> &[(u8, u32)] {
        let i = i as usize;
        if i + 1 >= self.start.len() {
            return &[];
        }
        &self.items[self.start[i] as usize..self.start[i + 1] as usize]
    }
}

impl surface::Surfaces {
    /// Number of primitives of `class`.
    pub(super) fn count(&self, class: usize) -> usize {
        match class {
            TRIANGLES => self.triangles.len(),
            EDGES => self.edges.len(),
            POINTS => self.points.len(),
            _ => self.vertices.len(),
        }
    }

    /// Particles of primitive `k` of `class`, and its body.
    fn particles_of(&self, class: usize, k: usize) -> &[u32] {
        match class {
            TRIANGLES => &self.triangles[k],
            EDGES => &self.edges[k],
            POINTS => std::slice::from_ref(&self.points[k]),
            _ => std::slice::from_ref(&self.vertices[k]),
        }
    }

    pub(super) fn body_of(&self, class: usize, k: usize) -> u32 {
        match class {
            TRIANGLES => self.triangle_body[k],
            EDGES => self.edge_body[k],
            POINTS => self.point_body[k],
            _ => self.vertex_body[k],
        }
    }

    /// Vertex `k` against triangle `t`, unless they share a particle or their
    /// bodies do not touch.
    pub(super) fn vertex_triangle(&self, k: u32, t: u32) -> Option<Pair> {
        let (v, vb) = (self.vertices[k as usize], self.vertex_body[k as usize]);
        let (tri, tb) = (self.triangles[t as usize], self.triangle_body[t as usize]);
        (!tri.contains(&v) && self.may_touch(vb, tb)).then(|| {
            let p = [v, tri[0], tri[1], tri[2]];
            Pair {
                kind: PairKind::VertexTriangle,
                p,
                distance: self.contact_distance(vb, tb),
                query: k,
                other: t,
                gap: f64::NEG_INFINITY,
            }
        })
    }

    /// Edge `k` against edge `o` (k < o), unless they share a particle or their
    /// bodies do not touch.
    pub(super) fn edge_edge(&self, k: u32, o: u32) -> Option<Pair> {
        let (e, eb) = (self.edges[k as usize], self.edge_body[k as usize]);
        let (f, ob) = (self.edges[o as usize], self.edge_body[o as usize]);
        (!f.contains(&e[0]) && !f.contains(&e[1]) && self.may_touch(eb, ob)).then(|| {
            let p = [e[0], e[1], f[0], f[1]];
            Pair {
                kind: PairKind::EdgeEdge,
                p,
                distance: self.contact_distance(eb, ob),
                query: k,
                other: o,
                gap: f64::NEG_INFINITY,
            }
        })
    }

    /// Point `k` against point `o` (k < o), unless their bodies do not touch.
    fn point_point(&self, k: u32, o: u32) -> Option<Pair> {
        let (v, vb) = (self.points[k as usize], self.point_body[k as usize]);
        let (w, ob) = (self.points[o as usize], self.point_body[o as usize]);
        self.may_touch(vb, ob).then(|| Pair {
            kind: PairKind::VertexVertex,
            p: [v, w, v, v],
            distance: self.contact_distance(vb, ob),
            query: k,
            other: o,
            gap: f64::NEG_INFINITY,
        })
    }
}

/// Box of primitive `k` of `class`: the union of its particles' boxes (`lo`,
/// `hi`), grown by half its body's thickness.
/// A particle's box around its sweep `a` → `b` and that sweep continued
/// `lookahead` times further, grown by `margin` (m).
fn particle_box(a: DVec3, b: DVec3, margin: f64, lookahead: f64) -> (DVec3, DVec3) {
    let m = DVec3::splat(margin);
    let ahead = b + lookahead * (b - a);
    (a.min(b).min(ahead) - m, a.max(b).max(ahead) + m)
}

/// How far a particle anchored at `anchor` can move inside its box `lo`..`hi`:
/// the distance to the box's farthest corner.
fn reach(lo: DVec3, hi: DVec3, anchor: DVec3) -> f64 {
    (anchor - lo).max(hi - anchor).length()
}

fn primitive_box(surf: &surface::Surfaces, lo: &Vec3s, hi: &Vec3s, class: usize, k: usize) -> Aabb {
    let half = DVec3::splat(0.5 * surf.thickness_of(surf.body_of(class, k)));
    let mut b = Aabb { lo: DVec3::splat(f64::INFINITY), hi: DVec3::splat(f64::NEG_INFINITY) };
    for &p in surf.particles_of(class, k) {
        b.lo = b.lo.min(lo.get(p as usize));
        b.hi = b.hi.max(hi.get(p as usize));
    }
    Aabb { lo: b.lo - half, hi: b.hi + half }
}

/// Cell edge of the broad phase's hash, in units of the mean box extent: measured
/// on the 64 × 64 crumple (see docs/performance.md).
const CELL_SIZE: f64 = 2.0;

/// Table slots per parallel part of a broad-phase join.
const SLOTS_PER_PART: usize = 2048;

/// Runs `f(slots, out)` over the table slots 0..n in parallel parts and appends
/// the outputs to `dst` in part order.
fn in_parts<T: Send>(n: usize, f: impl Fn(std::ops::Range<usize>, &mut Vec<T>) + Sync, dst: &mut Vec<T>) {
    use rayon::prelude::*;
    let parts = n.div_ceil(SLOTS_PER_PART);
    if parts <= 1 || rayon::current_num_threads() == 1 {
        f(0..n, dst);
        return;
    }
    let outs: Vec<Vec<T>> = (0..parts)
        .into_par_iter()
        .map(|c| {
            let mut out = Vec::new();
            f(c * SLOTS_PER_PART..((c + 1) * SLOTS_PER_PART).min(n), &mut out);
            out
        })
        .collect();
    for o in outs {
        dst.extend(o);
    }
}

/// Scratch of an incremental update: per class, the hash of its fresh
/// primitives and their boxes; per chunk of lookups, the pairs it found.
#[derive(Clone, Debug, Default)]
pub(super) struct UpdateScratch {
    hashes: super::broad::Hashes,
    boxes: [Vec<Aabb>; 4],
    /// (Each list on lines of its own: the chunks fill theirs at the same time.)
    parts: Vec<crate::par::Padded<Vec<Pair>>>,
}

/// Lookups per parallel chunk of an incremental update.
const UPDATE_CHUNK: usize = 32;

/// Distance culling of candidate pairs for a list meant to serve many steps. While
/// a particle stays in its box it is within reach of its anchor (the distance to
/// the box's farthest corner), and every point of a primitive moves no farther
/// than its farthest-moving particle (points of a segment or triangle are convex
/// combinations of its particles). Two primitives whose distance at the anchors
/// is D therefore stay at least D − r_a − r_b apart, r being each side's largest
/// reach: a pair for which that exceeds its contact distance can neither be
/// closer than it at the end of a step nor come within it during one, and is
/// left out. A kept pair records D as its `gap`, for the per-pass test of
/// [`Contacts::strays`]. (Boxes that grow in an incremental update bring their
/// primitives' pairs back: those are found again with the new boxes and anchors.)
///
/// Two shortcuts keep this cheap, both exact (the kept pairs and their gaps are
/// those of the plain test): each particle's reach is computed once when its box
/// is fitted (`Contacts::reach`), and a candidate whose sides' anchor boxes are
/// already farther apart than its contact distance plus the reaches (a lower
/// bound on D, with a margin for rounding) is dropped before D is measured —
/// most candidates of a folded cloth are neighbours on the same sheet, a few
/// edges apart.
pub(super) struct Near<'a> {
    on: bool,
    /// The particles' anchors.
    x: &'a Vec3s,
    /// Each particle's reach: the distance from its anchor to its box's farthest
    /// corner.
    reach: &'a [f64],
}

impl Near<'_> {
    pub(super) fn keep(&self, mut pair: Pair) -> Option<Pair> {
        if !self.on {
            return Some(pair);
        }
        let reach = sides_reach(&pair, |i| self.reach[i as usize]);
        let pos = gather(self.x, pair.p);
        // The anchor boxes' distance bounds D from below; the margin of a
        // millionth covers the rounding of both D and this bound, so a pair
        // dropped here would also fail the exact test below.
        let bound = pair.distance + reach;
        if anchor_box_gap2(pair.kind, &pos) > (bound * (1.0 + 1e-6)).powi(2) {
            return None;
        }
        pair.gap = narrow::distance(pair.kind, &pos);
        (pair.gap - reach < pair.distance).then_some(pair)
    }
}

/// The largest of `reach` over the particles of each side of `pair`, summed: a
/// bound on how much closer the two primitives can get than they are at the
/// positions `reach` is measured from.
fn sides_reach(pair: &Pair, reach: impl Fn(u32) -> f64) -> f64 {
    let (split, used) = match pair.kind {
        PairKind::VertexTriangle => (1, 4),
        PairKind::EdgeEdge => (2, 4),
        PairKind::VertexVertex => (1, 2),
    };
    let side = |ids: &[u32]| ids.iter().map(|&i| reach(i)).fold(0.0, f64::max);
    side(&pair.p[..split]) + side(&pair.p[split..used])
}

/// Squared distance between the boxes around each side's points of a stencil of
/// kind `kind` at positions `x` (0 when they overlap): a lower bound on the
/// squared distance between the two primitives.
fn anchor_box_gap2(kind: PairKind, x: &[DVec3; 4]) -> f64 {
    let (split, used) = match kind {
        PairKind::VertexTriangle => (1, 4),
        PairKind::EdgeEdge => (2, 4),
        PairKind::VertexVertex => (1, 2),
    };
    let bounds = |p: &[DVec3]| p[1..].iter().fold((p[0], p[0]), |(lo, hi), q| (lo.min(*q), hi.max(*q)));
    let ((alo, ahi), (blo, bhi)) = (bounds(&x[..split]), bounds(&x[split..used]));
    (blo - ahi).max(alo - bhi).max(DVec3::ZERO).length_squared()
}

/// Whether `pair` cannot be within `tolerance` (m) with its particles at most
/// `stray` from their anchors: its `gap` less their reach still exceeds it (with
/// a relative allowance of 1e-9 for the round-off of the distances).
pub(super) fn kept_apart(pair: &Pair, stray: &[f64], tolerance: f64) -> bool {
    pair.gap - sides_reach(pair, |i| stray[i as usize]) > tolerance + 1e-9 * pair.gap
}

/// Tells live pairs from dead ones: a pair of the last full build that touches a
/// particle made dirty since is dead (its primitives' pairs were found again).
#[derive(Clone, Copy)]
pub(super) struct Live<'a> {
    /// Pairs from here on are live (0 when nothing is dirty).
    base_len: usize,
    is_dirty: &'a [bool],
}

impl<'a> Live<'a> {
    /// For a list whose pairs from `base_len` on came from incremental updates
    /// since particles `dirty` (flags `is_dirty`) became dirty.
    pub(super) fn of_list(base_len: usize, dirty: &[u32], is_dirty: &'a [bool]) -> Live<'a> {
        Live { base_len: if dirty.is_empty() { 0 } else { base_len }, is_dirty }
    }

    pub(super) fn of(&self, k: usize, pair: &Pair) -> bool {
        k >= self.base_len || !pair.p.iter().any(|&i| self.is_dirty[i as usize])
    }
}

/// Boxes per parallel chunk when a full build fills the primitives' boxes.
const CHUNK: usize = 512;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::crumple::crumple_world;
    use crate::integrate::IntegratorKind;
    use std::collections::BTreeSet;

    /// The live pairs of `c`'s list as a set of (kind, stencil), none twice.
    fn live_set(c: &Contacts) -> BTreeSet<(u8, [u32; 4])> {
        let live = Live::of_list(c.base_len, &c.dirty, &c.is_dirty);
        let mut set = BTreeSet::new();
        for (k, p) in c.pairs.iter().enumerate() {
            if live.of(k, p) {
                assert!(set.insert((p.kind as u8, p.p)), "pair {:?} {:?} listed twice", p.kind, p.p);
            }
        }
        set
    }

    /// Checks `c`'s list for the sweep `x0` → `x1` against a fresh broad phase
    /// (`fresh`): every pair within its contact distance at the end, or meeting
    /// within η during the sweep, must be live and pass its gap test. Returns how
    /// many close and hitting pairs were checked, and how many pairs in all.
    fn check_pairs_that_can_touch(
        c: &mut Contacts,
        fresh: &mut Contacts,
        x0: &Vec3s,
        x1: &Vec3s,
        round: usize,
    ) -> (usize, usize, usize) {
        let live = Live::of_list(c.base_len, &c.dirty, &c.is_dirty);
        let listed: std::collections::BTreeMap<(u8, [u32; 4]), Pair> = c
            .pairs
            .iter()
            .enumerate()
            .filter(|(k, p)| live.of(*k, p))
            .map(|(_, p)| ((p.kind as u8, p.p), *p))
            .collect();
        c.strays(None, x1);
        let at_end = c.stray.clone();
        c.strays(Some(x0), x1);
        let over_sweep = c.stray.clone();
        let (mut touching, mut hitting, mut checked) = (0, 0, 0);
        let mut times = Vec::new();
        for p in fresh.broad_phase(x0, x1).to_vec() {
            let (a, b) = (gather(x0, p.p), gather(x1, p.p));
            let close = narrow::proximity(p.kind, &b, DVec3::Y).distance < p.distance;
            let eta = 0.1 * p.distance;
            let hit = narrow::ccd(p.kind, &a, &b, eta, &mut times).is_some();
            if !(close || hit) {
                continue;
            }
            checked += 1;
            let kept = listed.get(&(p.kind as u8, p.p));
            let kept =
                kept.unwrap_or_else(|| panic!("round {round}: {:?} {:?} can touch but is not live", p.kind, p.p));
            if close {
                touching += 1;
                assert!(!kept_apart(kept, &at_end, p.distance), "round {round}: close pair skipped by its gap");
            }
            if hit {
                hitting += 1;
                assert!(!kept_apart(kept, &over_sweep, eta), "round {round}: hitting pair skipped by its gap");
            }
        }
        (touching, hitting, checked)
    }

    #[test]
    fn incremental_updates_keep_every_pair_that_can_touch() {
        // A folded cloth, its list built for one fast sweep (every list is culled
        // by distance), then particles nudged out of their boxes a few at a time
        // (incremental updates) and many at once (a rebuild): every pair that a
        // fresh broad phase finds and that is within its contact distance at the
        // end, or meets within η during the sweep, must stay live in the list and
        // pass its gap test.
        let mut world = crumple_world(16, IntegratorKind::SymplecticEuler, 1e-3, true).expect("crumple");
        world.run(150).expect("fold");
        let x0 = world.state.x.clone();
        let mut x1 = x0.clone();
        for i in 0..x1.len() {
            x1.add(i, world.state.v.get(i) * 1e-3);
        }
        let mut c = world.contacts.clone();
        c.ensure_pairs(&x0, &x1);
        let mut fresh = world.contacts.clone();
        let mut seed = 1u64;
        let (mut updates, mut checked) = (0, 0);
        for round in 0..12 {
            let nudged = if round == 8 { x1.len() / 2 } else { 3 };
            for _ in 0..nudged {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let i = (seed >> 33) as usize % x1.len();
                let d = DVec3::new(1.0, -0.5, 0.25) * (0.02 * ((seed >> 20) % 7) as f64 / 7.0);
                x1.add(i, d);
            }
            let before = c.pairs_version;
            c.ensure_pairs(&x0, &x1);
            if c.pairs_version == before && !c.dirty.is_empty() {
                updates += 1;
            }
            // No live pair is listed twice.
            live_set(&c);
            let (_, _, all) = check_pairs_that_can_touch(&mut c, &mut fresh, &x0, &x1, round);
            checked += all;
        }
        assert!(updates >= 5, "only {updates} incremental updates were exercised");
        assert!(checked > 100, "only {checked} touching pairs were checked");
    }

    /// A small deterministic generator for the tests below.
    pub(super) fn next(seed: &mut u64) -> f64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*seed >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The packed keys sort close pairs as `Pair::order` does, ties by index:
    /// random pairs with few distinct values, so that many keys tie in their
    /// first fields and some tie whole.
    #[test]
    fn packed_keys_sort_as_the_canonical_order() {
        let mut seed = 7u64;
        let mut pick = |m: u32| (next(&mut seed) * f64::from(m)) as u32 % m;
        let kinds = [PairKind::VertexTriangle, PairKind::EdgeEdge, PairKind::VertexVertex];
        let pairs: Vec<Pair> = (0..400)
            .map(|_| Pair {
                kind: kinds[pick(3) as usize],
                p: [pick(4), pick(4), pick(3), u32::MAX - pick(2)],
                distance: 1e-3,
                query: pick(3) * 0x7000_0000,
                other: 0,
                gap: f64::NEG_INFINITY,
            })
            .collect();
        let mut ks: Vec<u32> = (0..pairs.len() as u32).rev().collect();
        let mut expected = ks.clone();
        expected.sort_by_key(|&k| (pairs[k as usize].order(), k));
        super::super::sort_canonical(&mut ks, &pairs, &mut Vec::new());
        assert_eq!(ks, expected);
    }

    #[test]
    fn gaps_less_reach_bound_the_distance_after_any_moves() {
        // The bound behind the culling: primitives at distance D, each particle then
        // moved by at most its reach, stay at least D − (largest reach of each side)
        // apart — for every kind of pair, many random shapes and moves.
        let mut seed = 7u64;
        for round in 0..3000 {
            let kind = [PairKind::VertexTriangle, PairKind::EdgeEdge, PairKind::VertexVertex][round % 3];
            let point = |seed: &mut u64, scale: f64| DVec3::new(next(seed), next(seed), next(seed)) * scale;
            let x: [DVec3; 4] = std::array::from_fn(|_| point(&mut seed, 1.0));
            let reach: [f64; 4] = std::array::from_fn(|_| 0.1 * next(&mut seed));
            let pair = Pair { kind, p: [0, 1, 2, 3], distance: 0.0, query: 0, other: 0, gap: f64::NEG_INFINITY };
            let d = narrow::proximity(kind, &x, DVec3::Y).distance;
            // The anchor boxes' distance, the culling's first test, is a lower bound on D.
            let box_gap = anchor_box_gap2(kind, &x).sqrt();
            assert!(box_gap <= d * (1.0 + 1e-12), "{kind:?}: box gap {box_gap} > D = {d}");
            let bound = d - sides_reach(&pair, |i| reach[i as usize]);
            for _ in 0..10 {
                let moved: [DVec3; 4] = std::array::from_fn(|i| {
                    let dir = (point(&mut seed, 2.0) - DVec3::ONE).normalize_or(DVec3::X);
                    x[i] + dir * reach[i] * next(&mut seed).sqrt()
                });
                let after = narrow::proximity(kind, &moved, DVec3::Y).distance;
                assert!(after >= bound - 1e-12, "{kind:?}: {after} < bound {bound} (D = {d})");
            }
        }
    }

    #[test]
    fn culled_lists_keep_every_pair_that_can_touch() {
        // A folded cloth moving slowly (sweeps under the thickness: the list is
        // culled by distance and passes test pairs by their gaps), then nudged a
        // few particles at a time: every pair that a fresh broad phase finds and
        // that is within its contact distance at the end, or meets within η during
        // the sweep, must be live in the list and must pass its gap test.
        let mut world = crumple_world(16, IntegratorKind::SymplecticEuler, 1e-3, true).expect("crumple");
        world.run(300).expect("fold");
        let thickness = world.contacts.surfaces.bodies.iter().map(|b| b.thickness).fold(0.0, f64::max);
        let x0 = world.state.x.clone();
        let vmax = (0..x0.len()).map(|i| world.state.v.get(i).abs().max_element()).fold(1e-9, f64::max);
        let h = 0.5 * thickness / vmax;
        let mut x1 = x0.clone();
        for i in 0..x1.len() {
            x1.add(i, world.state.v.get(i) * h);
        }
        let mut c = world.contacts.clone();
        c.built_lo.resize(0);
        c.ensure_pairs(&x0, &x1);
        assert!(c.cull, "the list should be culled for slow motion");
        let mut fresh = world.contacts.clone();
        let mut seed = 3u64;
        let (mut touching, mut hitting) = (0, 0);
        for round in 0..10 {
            for _ in 0..20 {
                let i = (next(&mut seed) * x1.len() as f64) as usize;
                let dir = DVec3::new(next(&mut seed), next(&mut seed), next(&mut seed)) * 2.0 - DVec3::ONE;
                let d = dir.normalize_or(DVec3::X) * (8.0 * thickness * next(&mut seed));
                x1.add(i, d);
            }
            c.ensure_pairs(&x0, &x1);
            let (close, hit, _) = check_pairs_that_can_touch(&mut c, &mut fresh, &x0, &x1, round);
            touching += close;
            hitting += hit;
        }
        assert!(
            touching > 0 && hitting > 0,
            "{touching} close and {hitting} hitting pairs: the test exercised too little"
        );
    }
}
