//! Broad phase: a uniform spatial hash of axis-aligned boxes, rebuilt each time it is
//! asked (sorting is cheaper than keeping a dynamic structure valid for soft bodies,
//! whose every primitive moves every step).
//!
//! Boxes are inserted into every cell they overlap; a counting pass groups them so a
//! cell's contents are one contiguous run (boxes stored inline, in single precision
//! rounded outwards) found through an open-addressing table. A box is tested against
//! a run 64 boxes at a time over coordinate arrays, without branches, so the
//! comparisons vectorise (a full build of the crumple's pair list 6.3–6.5 → 5.6–5.7
//! ms; a cell's run holds about 40 boxes there). Query results depend only on the
//! boxes, never on thread count or hash iteration order.

use glam::DVec3;

/// An axis-aligned box, m.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Aabb {
    /// Lower corner.
    pub lo: DVec3,
    /// Upper corner.
    pub hi: DVec3,
}

impl Aabb {
    /// The box around points `p` grown by `margin` on every side.
    #[must_use]
    pub fn around(p: &[DVec3], margin: f64) -> Aabb {
        let (mut lo, mut hi) = (p[0], p[0]);
        for q in &p[1..] {
            lo = lo.min(*q);
            hi = hi.max(*q);
        }
        Aabb { lo: lo - DVec3::splat(margin), hi: hi + DVec3::splat(margin) }
    }

    /// True when the boxes overlap (touching counts).
    #[must_use]
    pub fn overlaps(&self, o: &Aabb) -> bool {
        !(self.lo.cmpgt(o.hi).any() || o.lo.cmpgt(self.hi).any())
    }
}

/// Boxes of a cell tested against one box at a time by [`SpatialHash::scan`].
const SCAN: usize = 64;

/// Most cells one box may cover along an axis before it is clamped to a coarser
/// footprint (a primitive that moved very far in one step): such a box is kept on a
/// separate list tested against every query, so the hash stays bounded.
const MAX_CELLS_PER_AXIS: i64 = 16;

/// Whether single-precision boxes [a_lo, a_hi] and [b_lo, b_hi] overlap (touching
/// counts). Non-short-circuit `&`: one well-predicted branch instead of six.
#[inline]
fn meet(a_lo: [f32; 3], a_hi: [f32; 3], b_lo: [f32; 3], b_hi: [f32; 3]) -> bool {
    (a_lo[0] <= b_hi[0])
        & (b_lo[0] <= a_hi[0])
        & (a_lo[1] <= b_hi[1])
        & (b_lo[1] <= a_hi[1])
        & (a_lo[2] <= b_hi[2])
        & (b_lo[2] <= a_hi[2])
}

/// A hashed box in single precision, rounded outwards (so it contains the box it
/// stands for), with its index: the cells' contents are scanned in order, with no
/// lookup elsewhere until a box overlaps the query.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    lo: [f32; 3],
    hi: [f32; 3],
    idx: u32,
    /// The cell of `lo` (kept so that a join's report test reads it instead of
    /// converting six coordinates per overlapping pair).
    cell: [i32; 3],
}

impl Entry {
    fn new(b: &Aabb, idx: u32) -> Entry {
        // Casting rounds to nearest (relative error below 2⁻²⁴); stepping a
        // millionth outwards first makes the rounding outward.
        let down = |v: f64| (v - v.abs() * 1e-6 - 1e-30) as f32;
        let up = |v: f64| (v + v.abs() * 1e-6 + 1e-30) as f32;
        Entry {
            lo: [down(b.lo.x), down(b.lo.y), down(b.lo.z)],
            hi: [up(b.hi.x), up(b.hi.y), up(b.hi.z)],
            idx,
            cell: [0; 3],
        }
    }

    #[inline]
    fn overlaps(&self, o: &Entry) -> bool {
        meet(self.lo, self.hi, o.lo, o.hi)
    }
}

/// A grouped box's index and the cell of its lower corner (its corners are in
/// `SpatialHash::bounds`).
#[derive(Clone, Copy, Debug, Default)]
struct Grouped {
    idx: u32,
    cell: [i32; 3],
}

/// A spatial hash of boxes. See the module docs.
///
/// Hashes built side by side on different threads must not share a cache line
/// (their `Vec` lengths are written at every insertion): keep them in
/// [`Hashes`], not in a plain array.
#[derive(Clone, Debug, Default)]
pub struct SpatialHash {
    /// Reciprocal of the cell edge, 1/m.
    inv_cell: f64,
    /// Table slot of each (box, cell) incidence, in box order.
    entry_slot: Vec<u32>,
    /// The boxes grouped by cell (each group in box order): their indices and
    /// lower corners' cells ...
    grouped: Vec<Grouped>,
    /// ... and their corners, one array per coordinate (lower x, y, z, upper x,
    /// y, z), so that a box is tested against a run of a cell's boxes several at
    /// a time (see [`SpatialHash::scan`]).
    bounds: [Vec<f32>; 6],
    /// Open-addressing table: (cell key, first index into `grouped`, count);
    /// count 0 = empty.
    table: Vec<(u64, u32, u32)>,
    /// Boxes too large for the grid, tested against every query.
    large: Vec<Entry>,
    /// Each box in single precision, and whether it is large.
    scratch: Vec<(Entry, bool)>,
}

/// Four spatial hashes, each on cache lines of its own ([`crate::par::Padded`]),
/// on the heap.
///
/// Why padded: the full build and the incremental updates build several hashes
/// side by side, each on its own thread. In a plain array one hash's `Vec`
/// lengths, written at every insertion, shared a line with its neighbour's, and
/// on the crumple each of two hashes built at once ran at half its speed. Why on
/// the heap: padding raises the alignment of whatever holds it inline to 128
/// bytes, and a world must stay embeddable where only 16 is guaranteed (a
/// Python object holds one).
#[derive(Clone, Debug, Default)]
pub struct Hashes(pub Box<[crate::par::Padded<SpatialHash>; 4]>);

fn key(c: [i64; 3]) -> u64 {
    // Three 21-bit fields; distant cells may share a key, which only adds
    // candidates that the exact tests remove.
    let m = (1u64 << 21) - 1;
    ((c[0] as u64) & m) | (((c[1] as u64) & m) << 21) | (((c[2] as u64) & m) << 42)
}

fn slot(key: u64, mask: usize) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask
}

impl SpatialHash {
    /// Rebuilds the hash over `boxes` with cells of edge `cell` (m).
    pub fn build(&mut self, boxes: &[Aabb], cell: f64) {
        self.inv_cell = 1.0 / cell;
        self.large.clear();
        self.scratch.clear();
        let mut incidences = 0;
        for (idx, b) in boxes.iter().enumerate() {
            let e = self.entry(b, idx as u32);
            let (lo, hi) = (self.cells_of(e.lo), self.cells_of(e.hi));
            // (A box beyond the entries' i32 cell range counts as large too.)
            let far = |c: i64| c < i64::from(i32::MIN) || c > i64::from(i32::MAX);
            let large = (0..3).any(|a| hi[a] - lo[a] >= MAX_CELLS_PER_AXIS || far(lo[a]) || far(hi[a]));
            if large {
                self.large.push(e);
            } else {
                incidences += (0..3).map(|a| (hi[a] - lo[a] + 1) as usize).product::<usize>();
            }
            self.scratch.push((e, large));
        }
        // Group the incidences by cell with a counting pass over an open-addressing
        // table (linear time, no sort); each group keeps box order. The table starts
        // at twice the box count and doubles while over half full.
        let mut size = (2 * boxes.len()).next_power_of_two().max(16);
        while !self.count_cells(size) {
            size *= 2;
        }
        let mut next = 0u32;
        for t in &mut self.table {
            t.1 = next;
            next += t.2;
        }
        self.grouped.clear();
        self.grouped.resize(incidences, Grouped::default());
        for b in &mut self.bounds {
            b.clear();
            b.resize(incidences, 0.0);
        }
        // Fill each group from its start; `table.1` runs ahead and is reset after.
        let mut n = 0;
        for &(e, large) in &self.scratch {
            if large {
                continue;
            }
            let (lo, hi) = (self.cells_of(e.lo), self.cells_of(e.hi));
            let cells = (0..3).map(|a| (hi[a] - lo[a] + 1) as usize).product::<usize>();
            for &s in &self.entry_slot[n..n + cells] {
                let t = &mut self.table[s as usize];
                let at = t.1 as usize;
                self.grouped[at] = Grouped { idx: e.idx, cell: e.cell };
                for a in 0..3 {
                    self.bounds[a][at] = e.lo[a];
                    self.bounds[3 + a][at] = e.hi[a];
                }
                t.1 += 1;
            }
            n += cells;
        }
        for t in &mut self.table {
            t.1 -= t.2;
        }
    }

    /// Counts each cell's boxes in a table of `size` slots; false (and nothing
    /// usable) when the table would be more than half full.
    fn count_cells(&mut self, size: usize) -> bool {
        let mask = size - 1;
        self.table.clear();
        self.table.resize(size, (0, 0, 0));
        self.entry_slot.clear();
        let mut used = 0;
        for &(e, large) in &self.scratch {
            if large {
                continue;
            }
            let (lo, hi) = (self.cells_of(e.lo), self.cells_of(e.hi));
            for i in lo[0]..=hi[0] {
                for j in lo[1]..=hi[1] {
                    for k in lo[2]..=hi[2] {
                        let c = key([i, j, k]);
                        let mut s = slot(c, mask);
                        while self.table[s].2 != 0 && self.table[s].0 != c {
                            s = (s + 1) & mask;
                        }
                        if self.table[s].2 == 0 {
                            used += 1;
                            if 2 * used > size {
                                return false;
                            }
                        }
                        self.table[s].0 = c;
                        self.table[s].2 += 1;
                        self.entry_slot.push(s as u32);
                    }
                }
            }
        }
        true
    }

    fn cell_coord(&self, v: f32) -> i64 {
        // floor() without a library call: truncate, then step down for negative
        // non-integers.
        let x = (f64::from(v) * self.inv_cell).clamp(-1.0e15, 1.0e15);
        let t = x as i64;
        t - i64::from((t as f64) > x)
    }

    fn cells_of(&self, p: [f32; 3]) -> [i64; 3] {
        p.map(|v| self.cell_coord(v))
    }

    /// Box `b` as an entry of this hash (its cell set from the current cell size;
    /// cells beyond the i32 range, 2³¹ cells from the origin, are clamped: such a
    /// box is large anyway).
    fn entry(&self, b: &Aabb, idx: u32) -> Entry {
        let mut e = Entry::new(b, idx);
        e.cell = self.cells_of(e.lo).map(|c| c.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32);
        e
    }

    /// Grouped box `i` whole.
    fn entry_at(&self, i: usize) -> Entry {
        let b = &self.bounds;
        let Grouped { idx, cell } = self.grouped[i];
        Entry { lo: [b[0][i], b[1][i], b[2][i]], hi: [b[3][i], b[4][i], b[5][i]], idx, cell }
    }

    /// The indices into `grouped` of the boxes in the cell of key `k`.
    fn run(&self, k: u64) -> std::ops::Range<usize> {
        let mask = self.table.len() - 1;
        let mut s = slot(k, mask);
        loop {
            let (key, start, len) = self.table[s];
            if len == 0 {
                return 0..0;
            }
            if key == k {
                return start as usize..(start + len) as usize;
            }
            s = (s + 1) & mask;
        }
    }

    /// Calls `hit(j)`, in order, for each j of `range` (indices into `grouped`)
    /// whose box overlaps `a`. The boxes are tested [`SCAN`] at a time over the
    /// coordinate arrays without branches (the comparisons vectorise), and the
    /// flags are read eight at a time: most tests fail.
    #[inline]
    fn scan(&self, a: &Entry, range: std::ops::Range<usize>, mut hit: impl FnMut(usize)) {
        let mut flags = [0u8; SCAN];
        let mut first = range.start;
        while first < range.end {
            let m = (range.end - first).min(SCAN);
            let [lx, ly, lz, hx, hy, hz] = self.bounds.each_ref().map(|c| &c[first..first + m]);
            for (k, flag) in flags[..m].iter_mut().enumerate() {
                *flag = u8::from(
                    (a.lo[0] <= hx[k])
                        & (lx[k] <= a.hi[0])
                        & (a.lo[1] <= hy[k])
                        & (ly[k] <= a.hi[1])
                        & (a.lo[2] <= hz[k])
                        & (lz[k] <= a.hi[2]),
                );
            }
            flags[m..m.next_multiple_of(8)].fill(0);
            for (c, eight) in flags[..m.next_multiple_of(8)].chunks_exact(8).enumerate() {
                let mut w = u64::from_le_bytes(eight.try_into().expect("eight flags"));
                while w != 0 {
                    // Each flag is 0 or 1: the lowest set bit is a whole flag.
                    hit(first + 8 * c + (w.trailing_zeros() / 8) as usize);
                    w &= w - 1;
                }
            }
            first += m;
        }
    }

    /// Number of table slots: the range that [`SpatialHash::self_join`] and
    /// [`SpatialHash::join`] split into parts.
    #[must_use]
    pub fn slots(&self) -> usize {
        self.table.len()
    }

    /// True when boxes `a` and `b`, both in the cell of key `cell`, are reported
    /// from it: it holds the lower corner of their intersection, max(a.lo, b.lo).
    fn reports(a: [i32; 3], b: [i32; 3], cell: u64) -> bool {
        let (ca, cb) = (a.map(i64::from), b.map(i64::from));
        // Keys alias only cells 2²¹ apart, farther than a box that is not large
        // can reach, so equal keys mean the same cell here.
        key([ca[0].max(cb[0]), ca[1].max(cb[1]), ca[2].max(cb[2])]) == cell
    }

    /// Calls `f(a, b)` with a < b for every pair of overlapping hashed boxes whose
    /// reference cell lies in table slots `slots`; over all slots (and
    /// [`SpatialHash::self_join_large`]), each overlapping pair exactly once, in an
    /// order fixed by the boxes alone. A cell's boxes are one contiguous run (in
    /// box order), so the pairs within it are tested from memory already in cache.
    pub fn self_join(&self, slots: std::ops::Range<usize>, mut f: impl FnMut(u32, u32)) {
        for &(cell, start, len) in &self.table[slots] {
            if len < 2 {
                continue;
            }
            let end = (start + len) as usize;
            for i in start as usize..end {
                let a = self.entry_at(i);
                self.scan(&a, i + 1..end, |j| {
                    let b = &self.grouped[j];
                    if Self::reports(a.cell, b.cell, cell) {
                        f(a.idx, b.idx);
                    }
                });
            }
        }
    }

    /// The pairs of [`SpatialHash::self_join`] that involve a large box.
    pub fn self_join_large(&self, mut f: impl FnMut(u32, u32)) {
        for l in &self.large {
            for (e, large) in &self.scratch {
                // Two large boxes meet once, from the one with the smaller index.
                if (!large || e.idx > l.idx) && e.idx != l.idx && e.overlaps(l) {
                    f(l.idx.min(e.idx), l.idx.max(e.idx));
                }
            }
        }
    }

    /// Calls `f(a, b)` for every overlapping pair of a box `a` hashed here and a
    /// box `b` hashed in `other` (built with the same cell size) whose reference
    /// cell lies in this table's slots `slots`; over all slots (and
    /// [`SpatialHash::join_large`]), each overlapping pair exactly once.
    pub fn join(&self, other: &SpatialHash, slots: std::ops::Range<usize>, mut f: impl FnMut(u32, u32)) {
        for &(cell, start, len) in &self.table[slots] {
            if len == 0 {
                continue;
            }
            let theirs = other.run(cell);
            if theirs.is_empty() {
                continue;
            }
            for i in start as usize..(start + len) as usize {
                let a = self.entry_at(i);
                other.scan(&a, theirs.clone(), |j| {
                    let b = &other.grouped[j];
                    if Self::reports(a.cell, b.cell, cell) {
                        f(a.idx, b.idx);
                    }
                });
            }
        }
    }

    /// The pairs of [`SpatialHash::join`] that involve a large box of either hash.
    pub fn join_large(&self, other: &SpatialHash, mut f: impl FnMut(u32, u32)) {
        for l in &self.large {
            for (e, _) in &other.scratch {
                if e.overlaps(l) {
                    f(l.idx, e.idx);
                }
            }
        }
        for l in &other.large {
            for (e, large) in &self.scratch {
                if !large && e.overlaps(l) {
                    f(e.idx, l.idx);
                }
            }
        }
    }

    /// Calls `f` once for every hashed box that overlaps `query` (touching counts),
    /// in an order fixed by the boxes alone.
    pub fn for_each_overlap(&self, query: &Aabb, mut f: impl FnMut(u32)) {
        if self.table.is_empty() {
            return;
        }
        let q = self.entry(query, 0);
        let (lo, hi) = (self.cells_of(q.lo), self.cells_of(q.hi));
        if (0..3).any(|a| hi[a] - lo[a] >= MAX_CELLS_PER_AXIS) {
            // A huge query box: test every box.
            for (e, _) in &self.scratch {
                if e.overlaps(&q) {
                    f(e.idx);
                }
            }
            return;
        }
        for i in lo[0]..=hi[0] {
            for j in lo[1]..=hi[1] {
                for k in lo[2]..=hi[2] {
                    self.scan(&q, self.run(key([i, j, k])), |at| {
                        // Report the pair only from the cell holding the lower corner
                        // of the two boxes' intersection, max(e.lo, q.lo), whose cell
                        // is the componentwise max of the corners' cells.
                        let e = &self.grouped[at];
                        let c = e.cell.map(i64::from);
                        if c[0].max(lo[0]) == i && c[1].max(lo[1]) == j && c[2].max(lo[2]) == k {
                            f(e.idx);
                        }
                    });
                }
            }
        }
        for e in &self.large {
            if e.overlaps(&q) {
                f(e.idx);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_boxes(n: usize, seed: u64, size: f64) -> Vec<Aabb> {
        let mut s = seed;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut boxes: Vec<Aabb> = (0..n)
            .map(|_| {
                let c = DVec3::new(rnd(), rnd(), rnd()) * 2.0 - DVec3::splat(1.0);
                let e = DVec3::new(rnd(), rnd(), rnd()) * size;
                Aabb { lo: c - e, hi: c + e }
            })
            .collect();
        // Two boxes too large for the grid, and two touching exactly.
        boxes.push(Aabb { lo: DVec3::splat(-10.0), hi: DVec3::splat(10.0) });
        boxes.push(Aabb { lo: DVec3::new(0.0, -10.0, 0.0), hi: DVec3::new(0.1, 10.0, 0.1) });
        boxes.push(Aabb { lo: DVec3::splat(0.3), hi: DVec3::splat(0.4) });
        boxes.push(Aabb { lo: DVec3::splat(0.4), hi: DVec3::splat(0.5) });
        boxes
    }

    /// Checks the self-join of `a` and the join of `a` with `b` (cells of edge
    /// `cell`) against all pairs: each overlapping pair once, nothing else.
    fn assert_joins_match_brute_force(a: &[Aabb], b: &[Aabb], cell: f64) {
        let (mut ha, mut hb) = (SpatialHash::default(), SpatialHash::default());
        ha.build(a, cell);
        hb.build(b, cell);
        // Self-join against all pairs.
        let mut found = Vec::new();
        ha.self_join(0..ha.slots() / 2, |i, j| found.push((i, j)));
        ha.self_join(ha.slots() / 2..ha.slots(), |i, j| found.push((i, j)));
        ha.self_join_large(|i, j| found.push((i, j)));
        let n = found.len();
        found.sort_unstable();
        found.dedup();
        assert_eq!(found.len(), n, "a pair was reported twice");
        let mut brute = Vec::new();
        for i in 0..a.len() {
            for j in i + 1..a.len() {
                if a[i].overlaps(&a[j]) {
                    brute.push((i as u32, j as u32));
                }
            }
        }
        assert_eq!(found, brute);
        // Join of two sets against all pairs.
        let mut found = Vec::new();
        ha.join(&hb, 0..ha.slots(), |i, j| found.push((i, j)));
        ha.join_large(&hb, |i, j| found.push((i, j)));
        let n = found.len();
        found.sort_unstable();
        found.dedup();
        assert_eq!(found.len(), n, "a pair was reported twice");
        let mut brute = Vec::new();
        for (i, ai) in a.iter().enumerate() {
            for (j, bj) in b.iter().enumerate() {
                if ai.overlaps(bj) {
                    brute.push((i as u32, j as u32));
                }
            }
        }
        assert_eq!(found, brute);
    }

    #[test]
    fn joins_find_each_overlapping_pair_once() {
        assert_joins_match_brute_force(&random_boxes(400, 7, 0.12), &random_boxes(250, 99, 0.08), 0.1);
    }

    #[test]
    fn crowded_cells_are_scanned_whole() {
        // Hundreds of boxes in a few cells: each cell's run is longer than the
        // boxes tested at once (`SCAN`) and ends off a multiple of eight, so the
        // scan's blocks, its tails and its eight-flag reads all take part.
        let crowd = |n: usize, seed: u64| -> Vec<Aabb> {
            // Inside [0.1, 0.4]³ (one cell of 0.5 m), but for the set's
            // large boxes.
            let o = DVec3::splat(0.25);
            random_boxes(n, seed, 0.05).into_iter().map(|b| Aabb { lo: o + b.lo * 0.15, hi: o + b.hi * 0.15 }).collect()
        };
        let (a, b) = (crowd(701, 3), crowd(333, 5));
        let mut hash = SpatialHash::default();
        hash.build(&a, 0.5);
        let longest = hash.table.iter().map(|t| t.2).max().unwrap_or(0);
        assert!(longest as usize > 3 * SCAN, "a run of {longest} boxes");
        assert_joins_match_brute_force(&a, &b, 0.5);
        assert_queries_match_brute_force(&a, 0.5);
    }

    #[test]
    fn hash_finds_every_overlap_that_brute_force_finds() {
        // Boxes on a jittered lattice; compare against all-pairs overlap.
        let mut boxes = Vec::new();
        let mut s = 12345u64;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..300 {
            let c = DVec3::new(rnd(), rnd(), rnd()) * 2.0;
            let e = DVec3::new(rnd(), rnd(), rnd()) * 0.2;
            boxes.push(Aabb { lo: c - e, hi: c + e });
        }
        boxes.push(Aabb { lo: DVec3::splat(-10.0), hi: DVec3::splat(10.0) });
        assert_queries_match_brute_force(&boxes, 0.15);
    }

    /// Checks [`SpatialHash::for_each_overlap`] with every box of `boxes` as the
    /// query against a test of all boxes.
    fn assert_queries_match_brute_force(boxes: &[Aabb], cell: f64) {
        let mut hash = SpatialHash::default();
        hash.build(boxes, cell);
        for q in boxes {
            let mut found = Vec::new();
            hash.for_each_overlap(q, |i| found.push(i));
            found.sort_unstable();
            let brute: Vec<u32> = (0..boxes.len() as u32).filter(|&i| boxes[i as usize].overlaps(q)).collect();
            assert_eq!(found, brute);
        }
    }
}
