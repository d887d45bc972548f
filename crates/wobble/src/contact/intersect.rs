//! An independent check that surfaces do not intersect: counts pairs of triangles
//! (sharing no vertex) that cross each other.
//!
//! Written apart from the contact stage on purpose (no shared narrow phase): two
//! triangles that share no vertex intersect exactly when an edge of one passes
//! through the other. Each edge–triangle test uses signed volumes (orientation
//! determinants), so it needs no tolerance for the general case; coplanar pairs
//! (a volume exactly zero) count as intersecting when their 2-D projections
//! overlap. Candidate pairs come from a uniform grid of triangle bounding boxes.

use std::collections::HashMap;

use glam::DVec3;

use crate::model::Vec3s;

/// Number of pairs of triangles in `triangles` (particle indices into `x`) that share
/// no vertex and intersect. `body_of[k]` groups triangles; with `self_pairs` false,
/// triangles of the same group are not tested against each other.
#[must_use]
pub fn count_intersections(triangles: &[[u32; 3]], group: &[usize], x: &Vec3s, self_pairs: bool) -> usize {
    intersecting_pairs(triangles, group, x, self_pairs).len()
}

/// The intersecting triangle pairs (indices into `triangles`, smaller first, sorted).
#[must_use]
pub fn intersecting_pairs(triangles: &[[u32; 3]], group: &[usize], x: &Vec3s, self_pairs: bool) -> Vec<(usize, usize)> {
    if triangles.is_empty() {
        return Vec::new();
    }
    let tri = |k: usize| x.gather(&triangles[k]);
    let boxes: Vec<(DVec3, DVec3)> = (0..triangles.len())
        .map(|k| {
            let [a, b, c] = tri(k);
            (a.min(b).min(c), a.max(b).max(c))
        })
        .collect();
    // Cell size: the median box diagonal (robust to a few huge triangles). Boxes
    // spanning more than 16 cells along an axis, or not finite, are tested against
    // every triangle instead of going into cells.
    let mut diag: Vec<f64> = boxes.iter().map(|(lo, hi)| (*hi - *lo).length()).filter(|d| d.is_finite()).collect();
    diag.sort_by(f64::total_cmp);
    let cell = diag.get(diag.len() / 2).copied().unwrap_or(1.0).max(1e-9);
    let key = |p: DVec3| {
        let c = |v: f64| (v / cell).floor().clamp(-1e15, 1e15) as i64;
        (c(p.x), c(p.y), c(p.z))
    };
    let mut cells: HashMap<(i64, i64, i64), Vec<usize>> = HashMap::new();
    let mut large = Vec::new();
    for (k, (lo, hi)) in boxes.iter().enumerate() {
        let (a, b) = (key(*lo), key(*hi));
        if !(lo.is_finite() && hi.is_finite()) || b.0 - a.0 > 16 || b.1 - a.1 > 16 || b.2 - a.2 > 16 {
            large.push(k);
            continue;
        }
        for i in a.0..=b.0 {
            for j in a.1..=b.1 {
                for l in a.2..=b.2 {
                    cells.entry((i, j, l)).or_default().push(k);
                }
            }
        }
    }
    let mut found = Vec::new();
    let mut test = |p: usize, q: usize| {
        let (p, q) = if p < q { (p, q) } else { (q, p) };
        if p == q || (!self_pairs && group[p] == group[q]) {
            return;
        }
        let (tp, tq) = (triangles[p], triangles[q]);
        if tp.iter().any(|v| tq.contains(v)) {
            return;
        }
        let (bp, bq) = (boxes[p], boxes[q]);
        if bp.0.cmpgt(bq.1).any() || bq.0.cmpgt(bp.1).any() {
            return;
        }
        if triangles_intersect(tri(p), tri(q)) {
            found.push((p, q));
        }
    };
    for list in cells.values() {
        for (m, &p) in list.iter().enumerate() {
            for &q in &list[m + 1..] {
                test(p, q);
            }
        }
    }
    for &p in &large {
        for q in 0..triangles.len() {
            test(p, q);
        }
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// Orientation of d against the plane (a, b, c): the sign of the signed volume.
fn orient(a: DVec3, b: DVec3, c: DVec3, d: DVec3) -> f64 {
    (b - a).cross(c - a).dot(d - a)
}

/// True when triangles `t` and `u` intersect (touching counts).
#[must_use]
pub fn triangles_intersect(t: [DVec3; 3], u: [DVec3; 3]) -> bool {
    let edges = |s: [DVec3; 3]| [(s[0], s[1]), (s[1], s[2]), (s[2], s[0])];
    edges(t).iter().any(|&(p, q)| segment_crosses_triangle(p, q, u))
        || edges(u).iter().any(|&(p, q)| segment_crosses_triangle(p, q, t))
}

/// True when segment (p, q) meets triangle (a, b, c).
#[must_use]
pub fn segment_crosses_triangle(p: DVec3, q: DVec3, [a, b, c]: [DVec3; 3]) -> bool {
    let (op, oq) = (orient(a, b, c, p), orient(a, b, c, q));
    if op == 0.0 && oq == 0.0 {
        return coplanar_segment_triangle(p, q, [a, b, c]);
    }
    if (op > 0.0 && oq > 0.0) || (op < 0.0 && oq < 0.0) {
        return false;
    }
    // The segment meets the plane at one point; it intersects when that point lies
    // in the triangle (tested in the plane, so nearly coplanar segments are judged
    // by where they cross, not by the signs of vanishing volumes).
    let crossing = p + (q - p) * (op / (op - oq));
    point_in_triangle(crossing, [a, b, c])
}

/// Projects onto the two axes where the triangle's normal is smallest.
fn flatten(n: DVec3) -> impl Fn(DVec3) -> (f64, f64) {
    let n = n.abs();
    let drop = if n.x >= n.y && n.x >= n.z {
        0
    } else if n.y >= n.z {
        1
    } else {
        2
    };
    move |v: DVec3| match drop {
        0 => (v.y, v.z),
        1 => (v.x, v.z),
        _ => (v.x, v.y),
    }
}

fn cross2(o: (f64, f64), u: (f64, f64), v: (f64, f64)) -> f64 {
    (u.0 - o.0) * (v.1 - o.1) - (u.1 - o.1) * (v.0 - o.0)
}

/// True when `p` (a point of the triangle's plane) lies in triangle (a, b, c),
/// boundary included.
fn point_in_triangle(p: DVec3, [a, b, c]: [DVec3; 3]) -> bool {
    let flat = flatten((b - a).cross(c - a));
    let (p, a, b, c) = (flat(p), flat(a), flat(b), flat(c));
    let (d1, d2, d3) = (cross2(a, b, p), cross2(b, c, p), cross2(c, a, p));
    (d1 >= 0.0 && d2 >= 0.0 && d3 >= 0.0) || (d1 <= 0.0 && d2 <= 0.0 && d3 <= 0.0)
}

/// Segment and triangle in one plane: project onto the plane's dominant axes and
/// test for overlap (an end inside, or an edge crossing).
fn coplanar_segment_triangle(p: DVec3, q: DVec3, [a, b, c]: [DVec3; 3]) -> bool {
    let flat = flatten((b - a).cross(c - a));
    let (p, q, a, b, c) = (flat(p), flat(q), flat(a), flat(b), flat(c));
    let cross = cross2;
    let inside = |s: (f64, f64)| {
        let (d1, d2, d3) = (cross(a, b, s), cross(b, c, s), cross(c, a, s));
        (d1 >= 0.0 && d2 >= 0.0 && d3 >= 0.0) || (d1 <= 0.0 && d2 <= 0.0 && d3 <= 0.0)
    };
    let segs_cross = |p1: (f64, f64), p2: (f64, f64), q1: (f64, f64), q2: (f64, f64)| {
        let (d1, d2) = (cross(p1, p2, q1), cross(p1, p2, q2));
        let (d3, d4) = (cross(q1, q2, p1), cross(q1, q2, p2));
        ((d1 > 0.0 && d2 < 0.0) || (d1 < 0.0 && d2 > 0.0)) && ((d3 > 0.0 && d4 < 0.0) || (d3 < 0.0 && d4 > 0.0))
    };
    inside(p) || inside(q) || segs_cross(p, q, a, b) || segs_cross(p, q, b, c) || segs_cross(p, q, c, a)
}

/// Generalised winding number of closed, outward-wound `triangles` (indices into
/// `x`) around point `p`: the sum of the solid angles the triangles subtend at `p`
/// over 4π (Van Oosterom and Strackee's formula) — 1 inside, 0 outside, ½ on the
/// surface.
#[must_use]
pub fn winding_number(p: DVec3, triangles: &[[u32; 3]], x: &Vec3s) -> f64 {
    let mut total = 0.0;
    for t in triangles {
        let [a, b, c] = x.gather(t);
        let (a, b, c) = (a - p, b - p, c - p);
        let (la, lb, lc) = (a.length(), b.length(), c.length());
        let num = a.dot(b.cross(c));
        let den = la * lb * lc + a.dot(b) * lc + b.dot(c) * la + c.dot(a) * lb;
        total += 2.0 * num.atan2(den);
    }
    total / (4.0 * std::f64::consts::PI)
}
