//! Broad phase: a uniform spatial hash of axis-aligned boxes, rebuilt each time it is
//! asked (sorting is cheaper than keeping a dynamic structure valid for soft bodies,
//! whose every primitive moves every step).
//!
//! Boxes are inserted into every cell they overlap as (cell key, index) entries; the
//! entries are sorted, so a cell's contents are one contiguous, ordered run found by
//! binary search. Query results depend only on the boxes, never on thread count or
//! hash iteration order.

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

/// Most cells one box may cover along an axis before it is clamped to a coarser
/// footprint (a primitive that moved very far in one step): its cells then stand for
/// a region (still found through its overlap test), so the hash stays bounded.
const MAX_CELLS_PER_AXIS: i64 = 16;

/// A spatial hash of boxes. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct SpatialHash {
    cell: f64,
    /// (cell key, box index), in box order.
    entries: Vec<(u64, u32)>,
    /// Table slot of each entry.
    entry_slot: Vec<u32>,
    /// Box indices grouped by cell (each group in box order).
    grouped: Vec<u32>,
    /// Open-addressing table: (cell key, first index into `grouped`, count);
    /// count 0 = empty.
    table: Vec<(u64, u32, u32)>,
    /// Boxes too large for the grid, tested against every query.
    large: Vec<u32>,
    /// Number of boxes hashed.
    count: usize,
    /// Cell of each hashed box's lower corner.
    lo_cells: Vec<[i64; 3]>,
}

fn cell_coord(v: f64, cell: f64) -> i64 {
    (v / cell).floor().clamp(-1.0e15, 1.0e15) as i64
}

fn key(i: i64, j: i64, k: i64) -> u64 {
    // Three 21-bit fields; distant cells may share a key, which only adds
    // candidates that the exact tests remove.
    let m = (1u64 << 21) - 1;
    ((i as u64) & m) | (((j as u64) & m) << 21) | (((k as u64) & m) << 42)
}

fn slot(key: u64, mask: usize) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask
}

impl SpatialHash {
    /// Rebuilds the hash over `boxes` with cells of edge `cell` (m).
    pub fn build(&mut self, boxes: &[Aabb], cell: f64) {
        self.cell = cell;
        self.count = boxes.len();
        self.entries.clear();
        self.large.clear();
        self.lo_cells.clear();
        for (idx, b) in boxes.iter().enumerate() {
            let (lo, hi) = (self.cells_of(b.lo), self.cells_of(b.hi));
            self.lo_cells.push(lo);
            if (0..3).any(|a| hi[a] - lo[a] >= MAX_CELLS_PER_AXIS) {
                self.large.push(idx as u32);
                continue;
            }
            for i in lo[0]..=hi[0] {
                for j in lo[1]..=hi[1] {
                    for k in lo[2]..=hi[2] {
                        self.entries.push((key(i, j, k), idx as u32));
                    }
                }
            }
        }
        // Group the entries by cell with a counting pass over an open-addressing
        // table (linear time, no sort); each group keeps box order.
        let size = (2 * self.entries.len()).next_power_of_two().max(16);
        self.table.clear();
        self.table.resize(size, (0, 0, 0));
        self.entry_slot.clear();
        let mask = size - 1;
        for &(k, _) in &self.entries {
            let mut s = slot(k, mask);
            while self.table[s].2 != 0 && self.table[s].0 != k {
                s = (s + 1) & mask;
            }
            self.table[s].0 = k;
            self.table[s].2 += 1;
            self.entry_slot.push(s as u32);
        }
        let mut next = 0u32;
        for t in &mut self.table {
            t.1 = next;
            next += t.2;
        }
        self.grouped.clear();
        self.grouped.resize(self.entries.len(), 0);
        // Fill each group from its start; `table.1` runs ahead and is reset after.
        for (e, &s) in self.entries.iter().zip(&self.entry_slot) {
            let t = &mut self.table[s as usize];
            self.grouped[t.1 as usize] = e.1;
            t.1 += 1;
        }
        for t in &mut self.table {
            t.1 -= t.2;
        }
    }

    fn cells_of(&self, p: DVec3) -> [i64; 3] {
        [cell_coord(p.x, self.cell), cell_coord(p.y, self.cell), cell_coord(p.z, self.cell)]
    }

    fn run(&self, k: u64) -> &[u32] {
        let mask = self.table.len() - 1;
        let mut s = slot(k, mask);
        loop {
            let (key, start, len) = self.table[s];
            if len == 0 {
                return &[];
            }
            if key == k {
                return &self.grouped[start as usize..(start + len) as usize];
            }
            s = (s + 1) & mask;
        }
    }

    /// Calls `f` once for every box of `boxes` (the ones hashed) that overlaps
    /// `query`, in an order fixed by the boxes alone.
    ///
    /// A pair is reported only from the cell holding the lower corner of the two
    /// boxes' intersection, so no pair is seen twice and no sorting is needed.
    pub fn for_each_overlap(&self, boxes: &[Aabb], query: &Aabb, mut f: impl FnMut(u32)) {
        if self.count == 0 {
            return;
        }
        let (lo, hi) = (self.cells_of(query.lo), self.cells_of(query.hi));
        if (0..3).any(|a| hi[a] - lo[a] >= MAX_CELLS_PER_AXIS) {
            // A huge query box: test every box.
            for (idx, b) in boxes.iter().enumerate() {
                if b.overlaps(query) {
                    f(idx as u32);
                }
            }
            return;
        }
        for i in lo[0]..=hi[0] {
            for j in lo[1]..=hi[1] {
                for k in lo[2]..=hi[2] {
                    for &idx in self.run(key(i, j, k)) {
                        // The intersection's lower corner is max(b.lo, query.lo), and
                        // its cell the componentwise max of the corners' cells.
                        let c = self.lo_cells[idx as usize];
                        if c[0].max(lo[0]) != i || c[1].max(lo[1]) != j || c[2].max(lo[2]) != k {
                            continue;
                        }
                        if boxes[idx as usize].overlaps(query) {
                            f(idx);
                        }
                    }
                }
            }
        }
        for &idx in &self.large {
            if boxes[idx as usize].overlaps(query) {
                f(idx);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut hash = SpatialHash::default();
        hash.build(&boxes, 0.15);
        for q in &boxes {
            let mut found = Vec::new();
            hash.for_each_overlap(&boxes, q, |i| found.push(i));
            found.sort_unstable();
            let brute: Vec<u32> = (0..boxes.len() as u32).filter(|&i| boxes[i as usize].overlaps(q)).collect();
            assert_eq!(found, brute);
        }
    }
}
