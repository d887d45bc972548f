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
    entries: Vec<(u64, u32)>,
    /// Boxes too large for the grid, tested against every query.
    large: Vec<u32>,
}

fn cell_coord(v: f64, cell: f64) -> i64 {
    (v / cell).floor().clamp(-1.0e15, 1.0e15) as i64
}

fn key(i: i64, j: i64, k: i64) -> u64 {
    // Three 21-bit fields; distant cells may share a key, which only adds
    // candidates that the box test removes.
    let m = (1u64 << 21) - 1;
    ((i as u64) & m) | (((j as u64) & m) << 21) | (((k as u64) & m) << 42)
}

impl SpatialHash {
    /// Rebuilds the hash over `boxes` with cells of edge `cell` (m).
    pub fn build(&mut self, boxes: &[Aabb], cell: f64) {
        self.cell = cell;
        self.entries.clear();
        self.large.clear();
        for (idx, b) in boxes.iter().enumerate() {
            let (lo, hi) = (self.cells_of(b.lo), self.cells_of(b.hi));
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
        self.entries.sort_unstable();
    }

    fn cells_of(&self, p: DVec3) -> [i64; 3] {
        [cell_coord(p.x, self.cell), cell_coord(p.y, self.cell), cell_coord(p.z, self.cell)]
    }

    /// Indices of the boxes in the hash that may overlap `query`, written to `out`
    /// sorted and without repeats (the caller tests the exact overlap).
    pub fn query(&self, query: &Aabb, out: &mut Vec<u32>) {
        out.clear();
        let (lo, hi) = (self.cells_of(query.lo), self.cells_of(query.hi));
        if (0..3).any(|a| hi[a] - lo[a] >= MAX_CELLS_PER_AXIS) {
            // A huge query box: every entry is a candidate.
            out.extend(self.entries.iter().map(|e| e.1));
        } else {
            for i in lo[0]..=hi[0] {
                for j in lo[1]..=hi[1] {
                    for k in lo[2]..=hi[2] {
                        let kk = key(i, j, k);
                        let start = self.entries.partition_point(|e| e.0 < kk);
                        out.extend(self.entries[start..].iter().take_while(|e| e.0 == kk).map(|e| e.1));
                    }
                }
            }
        }
        out.extend_from_slice(&self.large);
        out.sort_unstable();
        out.dedup();
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
        let mut out = Vec::new();
        for q in &boxes {
            hash.query(q, &mut out);
            let found: Vec<u32> = out.iter().copied().filter(|&i| boxes[i as usize].overlaps(q)).collect();
            let brute: Vec<u32> = (0..boxes.len() as u32).filter(|&i| boxes[i as usize].overlaps(q)).collect();
            assert_eq!(found, brute);
        }
    }
}
