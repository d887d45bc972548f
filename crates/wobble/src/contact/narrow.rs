//! Narrow phase: distances between a point and a triangle and between two segments,
//! and continuous collision detection (CCD) of points against triangles and of edges
//! against edges moving linearly over a step.
//!
//! Every query returns the closest points as barycentric weights, so that a contact
//! is a *stencil*: particles `p[k]` with weights `w[k]` (summing to 1 on one side
//! and −1 on the other) and a unit normal n, whose signed gap is n · Σ w_k x_k.

use glam::DVec3;

/// Relative tolerance below which a triangle is treated as degenerate (its squared
/// double area against the squared longest edge to the fourth).
const DEGENERATE: f64 = 1e-12;

/// The closest point of triangle (a, b, c) to `p`: (squared distance, barycentric
/// weights of the closest point on a, b, c). Degenerate triangles (zero area) fall
/// back to their longest edge, so the answer is always finite.
#[must_use]
pub fn point_triangle(p: DVec3, a: DVec3, b: DVec3, c: DVec3) -> (f64, [f64; 3]) {
    let (ab, ac) = (b - a, c - a);
    let n2 = ab.cross(ac).length_squared();
    let scale = ab.length_squared().max(ac.length_squared()).max((c - b).length_squared());
    if n2 <= DEGENERATE * scale * scale {
        // Degenerate: the nearest of the three edges.
        let mut best = (f64::INFINITY, [1.0, 0.0, 0.0]);
        for (u, v, iu, iv) in [(a, b, 0, 1), (b, c, 1, 2), (c, a, 2, 0)] {
            let s = point_segment_param(p, u, v);
            let q = u + s * (v - u);
            let d2 = (p - q).length_squared();
            if d2 < best.0 {
                let mut w = [0.0; 3];
                w[iu] = 1.0 - s;
                w[iv] = s;
                best = (d2, w);
            }
        }
        return best;
    }
    // Regions of the triangle's Voronoi diagram, tested in turn.
    let ap = p - a;
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return (ap.length_squared(), [1.0, 0.0, 0.0]);
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return (bp.length_squared(), [0.0, 1.0, 0.0]);
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return ((p - (a + v * ab)).length_squared(), [1.0 - v, v, 0.0]);
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return (cp.length_squared(), [0.0, 0.0, 1.0]);
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return ((p - (a + w * ac)).length_squared(), [1.0 - w, 0.0, w]);
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return ((p - (b + w * (c - b))).length_squared(), [0.0, 1.0 - w, w]);
    }
    let denom = 1.0 / (va + vb + vc);
    let (v, w) = (vb * denom, vc * denom);
    let q = a + ab * v + ac * w;
    ((p - q).length_squared(), [1.0 - v - w, v, w])
}

/// Parameter s ∈ [0, 1] of the point of segment (u, v) closest to `p`.
#[must_use]
pub fn point_segment_param(p: DVec3, u: DVec3, v: DVec3) -> f64 {
    let d = v - u;
    let l2 = d.length_squared();
    if l2 <= 0.0 { 0.0 } else { ((p - u).dot(d) / l2).clamp(0.0, 1.0) }
}

/// Closest points of segments (p1, q1) and (p2, q2): (squared distance, s, t) with
/// the points p1 + s (q1 − p1) and p2 + t (q2 − p2). Parallel and degenerate
/// (zero-length) segments are handled: for parallel segments one of the closest
/// pairs is returned.
#[must_use]
pub fn segment_segment(p1: DVec3, q1: DVec3, p2: DVec3, q2: DVec3) -> (f64, f64, f64) {
    let (d1, d2, r) = (q1 - p1, q2 - p2, p1 - p2);
    let (a, e, f) = (d1.length_squared(), d2.length_squared(), d2.dot(r));
    let tiny = 1e-30;
    let (s, t);
    if a <= tiny && e <= tiny {
        (s, t) = (0.0, 0.0);
    } else if a <= tiny {
        s = 0.0;
        t = (f / e).clamp(0.0, 1.0);
    } else {
        let c = d1.dot(r);
        if e <= tiny {
            t = 0.0;
            s = (-c / a).clamp(0.0, 1.0);
        } else {
            let b = d1.dot(d2);
            let denom = a * e - b * b;
            // Parallel (denominator ~ 0 relative to a e): start from s = 0.
            let s0 = if denom > 1e-14 * a * e { ((b * f - c * e) / denom).clamp(0.0, 1.0) } else { 0.0 };
            let t0 = (b * s0 + f) / e;
            if t0 < 0.0 {
                t = 0.0;
                s = (-c / a).clamp(0.0, 1.0);
            } else if t0 > 1.0 {
                t = 1.0;
                s = ((b - c) / a).clamp(0.0, 1.0);
            } else {
                (s, t) = (s0, t0);
            }
        }
    }
    let d = (p1 + s * d1) - (p2 + t * d2);
    (d.length_squared(), s, t)
}

/// A contact between two primitives at one instant: four particle slots with
/// weights, the unit normal (pointing from the second side to the first) and the
/// distance along it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Proximity {
    /// Weights of the four stencil particles: the first side's sum to 1, the second
    /// side's to −1 (unused slots are 0).
    pub w: [f64; 4],
    /// Unit normal from the second side to the first.
    pub n: DVec3,
    /// Distance between the closest points, m.
    pub distance: f64,
}

/// Point `p` against triangle (a, b, c): the stencil (p, a, b, c). The normal is the
/// direction from the closest point to `p`; when `p` lies on the triangle, the
/// triangle's normal on the side `side_hint` points to (or its own normal).
#[must_use]
pub fn vertex_triangle(p: DVec3, a: DVec3, b: DVec3, c: DVec3, side_hint: DVec3) -> Proximity {
    let (d2, [u, v, w]) = point_triangle(p, a, b, c);
    let q = u * a + v * b + w * c;
    let dist = d2.sqrt();
    let n = direction(p - q, dist, || {
        let tn = (b - a).cross(c - a);
        if tn.dot(side_hint) < 0.0 { -tn } else { tn }
    });
    Proximity { w: [1.0, -u, -v, -w], n, distance: dist }
}

/// Edge (p1, q1) against edge (p2, q2): the stencil (p1, q1, p2, q2).
#[must_use]
pub fn edge_edge(p1: DVec3, q1: DVec3, p2: DVec3, q2: DVec3, side_hint: DVec3) -> Proximity {
    let (d2, s, t) = segment_segment(p1, q1, p2, q2);
    let dist = d2.sqrt();
    let delta = (p1 + s * (q1 - p1)) - (p2 + t * (q2 - p2));
    let n = direction(delta, dist, || {
        let cn = (q1 - p1).cross(q2 - p2);
        if cn.dot(side_hint) < 0.0 { -cn } else { cn }
    });
    Proximity { w: [1.0 - s, s, -(1.0 - t), -t], n, distance: dist }
}

/// Point `p` against point `q` (spheres of oriented-particle bodies).
#[must_use]
pub fn vertex_vertex(p: DVec3, q: DVec3, side_hint: DVec3) -> Proximity {
    let d = p - q;
    let dist = d.length();
    let n = direction(d, dist, || side_hint);
    Proximity { w: [1.0, -1.0, 0.0, 0.0], n, distance: dist }
}

/// `d / len` when that is a usable direction, else the fallback normalised (or +y).
fn direction(d: DVec3, len: f64, fallback: impl FnOnce() -> DVec3) -> DVec3 {
    if len > 1e-300 && (d / len).is_finite() {
        return d / len;
    }
    fallback().try_normalize().unwrap_or(DVec3::Y)
}

/// The kind of a primitive pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PairKind {
    /// A vertex (slot 0) against a triangle (slots 1–3).
    VertexTriangle,
    /// An edge (slots 0–1) against an edge (slots 2–3).
    EdgeEdge,
    /// A vertex against a vertex (slots 0–1).
    VertexVertex,
}

/// Proximity of a stencil of kind `kind` at positions `x`.
#[must_use]
pub fn proximity(kind: PairKind, x: &[DVec3; 4], side_hint: DVec3) -> Proximity {
    match kind {
        PairKind::VertexTriangle => vertex_triangle(x[0], x[1], x[2], x[3], side_hint),
        PairKind::EdgeEdge => edge_edge(x[0], x[1], x[2], x[3], side_hint),
        PairKind::VertexVertex => vertex_vertex(x[0], x[1], side_hint),
    }
}

/// The distance of [`proximity`] alone (the same value to the bit), without the
/// weights and the normal.
#[must_use]
pub fn distance(kind: PairKind, x: &[DVec3; 4]) -> f64 {
    match kind {
        PairKind::VertexTriangle => point_triangle(x[0], x[1], x[2], x[3]).0.sqrt(),
        PairKind::EdgeEdge => segment_segment(x[0], x[1], x[2], x[3]).0.sqrt(),
        PairKind::VertexVertex => (x[0] - x[1]).length(),
    }
}

/// Coefficients (c0, c1, c2, c3) of the cubic f(t) = ((x1 − x0) × (x2 − x0)) · (x3 − x0)
/// for points moving linearly, x_k(t) = a_k + t d_k: f vanishes when the four points
/// are coplanar.
#[must_use]
pub fn coplanarity_cubic(a: &[DVec3; 4], d: &[DVec3; 4]) -> [f64; 4] {
    let (p0, pd) = (a[1] - a[0], d[1] - d[0]);
    let (q0, qd) = (a[2] - a[0], d[2] - d[0]);
    let (r0, rd) = (a[3] - a[0], d[3] - d[0]);
    let c_0 = p0.cross(q0);
    let c_1 = p0.cross(qd) + pd.cross(q0);
    let c_2 = pd.cross(qd);
    [c_0.dot(r0), c_0.dot(rd) + c_1.dot(r0), c_1.dot(rd) + c_2.dot(r0), c_2.dot(rd)]
}

fn cubic_at(c: &[f64; 4], t: f64) -> f64 {
    ((c[3] * t + c[2]) * t + c[1]) * t + c[0]
}

/// Candidate times in (0, 1] at which four linearly moving points may be coplanar,
/// in increasing order, written into `out` with `true` for a root: the roots of the coplanarity cubic
/// (found by bisection on the intervals where it is monotone), its critical points
/// (near-tangential approaches), and t = 1 (contacts at the end of the step). When
/// the cubic vanishes identically (motion within one plane), a few samples stand in.
pub fn coplanar_times(c: &[f64; 4], scale: f64, out: &mut Vec<(f64, bool)>) {
    out.clear();
    let mag = c.iter().map(|v| v.abs()).fold(0.0, f64::max);
    if mag <= 1e-14 * scale {
        out.extend_from_slice(&[(0.25, true), (0.5, true), (0.75, true), (1.0, true)]);
        return;
    }
    // Critical points of f: roots of 3 c3 t² + 2 c2 t + c1 in (0, 1).
    let mut cuts = [0.0, 1.0, 1.0, 1.0];
    let mut ncuts = 1;
    let (qa, qb, qc) = (3.0 * c[3], 2.0 * c[2], c[1]);
    let push_cut = |t: f64, cuts: &mut [f64; 4], n: &mut usize| {
        if t > 0.0 && t < 1.0 {
            cuts[*n] = t;
            *n += 1;
        }
    };
    if qa.abs() > 1e-300 {
        let disc = qb * qb - 4.0 * qa * qc;
        if disc >= 0.0 {
            let s = disc.sqrt();
            // Numerically stable pair of roots.
            let qq = -0.5 * (qb + qb.signum() * s);
            let r1 = qq / qa;
            let r2 = if qq != 0.0 { qc / qq } else { -qb / (2.0 * qa) };
            push_cut(r1, &mut cuts, &mut ncuts);
            push_cut(r2, &mut cuts, &mut ncuts);
        }
    } else if qb.abs() > 1e-300 {
        push_cut(-qc / qb, &mut cuts, &mut ncuts);
    }
    cuts[ncuts] = 1.0;
    ncuts += 1;
    let cuts = &mut cuts[..ncuts];
    cuts.sort_by(f64::total_cmp);
    for k in 0..ncuts - 1 {
        let (mut lo, mut hi) = (cuts[k], cuts[k + 1]);
        if k > 0 {
            out.push((lo, false)); // a critical point
        }
        let (mut flo, fhi) = (cubic_at(c, lo), cubic_at(c, hi));
        if flo == 0.0 && lo > 0.0 {
            continue; // already pushed as a critical point
        }
        if flo.signum() == fhi.signum() && fhi != 0.0 {
            continue;
        }
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            let fm = cubic_at(c, mid);
            if fm == 0.0 {
                hi = mid;
                break;
            }
            if fm.signum() == flo.signum() {
                lo = mid;
                flo = fm;
            } else {
                hi = mid;
            }
        }
        // The later end, so the reported time is never before the crossing.
        if hi > 0.0 {
            out.push((hi, true));
        }
    }
    out.push((1.0, false));
    out.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
    out.dedup_by(|a, b| a.0 == b.0);
}

/// A collision found by continuous detection: the time in (0, 1] (fraction of the
/// step) and the proximity at that time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Fraction of the step at which the primitives meet.
    pub t: f64,
    /// Weights and normal at that time; the normal points from the second side to
    /// the first as they were at the start of the step.
    pub at: Proximity,
}

/// Continuous detection for a stencil of kind `kind` moving linearly from `x0` to
/// `x1`: the first time in (0, 1] at which its primitives come within `eta` (m) of
/// each other while coplanar (vertex–triangle, edge–edge), or within `eta` (vertex–
/// vertex). `scratch` holds candidate times.
///
/// A candidate time other than a root of the coplanarity cubic f is examined only
/// when |f(t)| ≤ η |n(t)| (n the triangle's or the edges' cross product): f / |n| is
/// the distance between the point and the triangle's plane (or between the edges'
/// lines), a lower bound of the distance between the primitives, so the filter
/// never drops a hit.
#[must_use]
pub fn ccd(kind: PairKind, x0: &[DVec3; 4], x1: &[DVec3; 4], eta: f64, scratch: &mut Vec<(f64, bool)>) -> Option<Hit> {
    let d = [x1[0] - x0[0], x1[1] - x0[1], x1[2] - x0[2], x1[3] - x0[3]];
    let at_time = |t: f64| -> [DVec3; 4] { [x0[0] + t * d[0], x0[1] + t * d[1], x0[2] + t * d[2], x0[3] + t * d[3]] };
    let start_normal = || proximity(kind, x0, DVec3::Y).n;
    if kind == PairKind::VertexVertex {
        // Closest approach of two moving points.
        let (r, dr) = (x0[0] - x0[1], d[0] - d[1]);
        let dd = dr.length_squared();
        let t = if dd > 0.0 { (-r.dot(dr) / dd).clamp(0.0, 1.0) } else { 1.0 };
        let p = proximity(kind, &at_time(t), DVec3::Y);
        return (p.distance <= eta && t > 0.0).then(|| Hit { t, at: oriented(p, start_normal()) });
    }
    let c = coplanarity_cubic(x0, &d);
    // Scale of the cubic's terms: the product of three lengths.
    // (The largest squared distance, then one square root: the same number, as the
    // square root is monotonic and correctly rounded.)
    let len = x0.iter().chain(x1.iter()).map(|p| (*p - x0[0]).length_squared()).fold(0.0, f64::max).sqrt().max(eta);
    coplanar_times(&c, len * len * len, scratch);
    let cross_at = |x: &[DVec3; 4]| match kind {
        PairKind::VertexTriangle => (x[2] - x[1]).cross(x[3] - x[1]).length(),
        _ => (x[1] - x[0]).cross(x[3] - x[2]).length(),
    };
    for &(t, is_root) in scratch.iter() {
        let x = at_time(t);
        // Roots are always examined; other times only when nearly coplanar.
        if !is_root && cubic_at(&c, t).abs() > eta * cross_at(&x) * (1.0 + 1e-9) {
            continue;
        }
        let p = proximity(kind, &x, DVec3::Y);
        if p.distance <= eta {
            return Some(Hit { t, at: oriented(p, start_normal()) });
        }
    }
    None
}

/// `p` with its normal flipped, if needed, to agree with the start-of-step normal
/// (the side each primitive came from).
fn oriented(mut p: Proximity, start_n: DVec3) -> Proximity {
    if p.n.dot(start_n) < 0.0 {
        p.n = -p.n;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cubic_roots_found() {
        // f(t) = (t − 0.2)(t − 0.5)(t − 0.9)
        let c = [-0.09, 0.73, -1.6, 1.0];
        let mut out = Vec::new();
        coplanar_times(&c, 1.0, &mut out);
        for r in [0.2, 0.5, 0.9] {
            assert!(out.iter().any(|t| t.1 && (t.0 - r).abs() < 1e-12), "root {r} missing from {out:?}");
        }
    }

    #[test]
    fn distance_alone_is_the_proximity_distance_to_the_bit() {
        let mut s = 17u64;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        for k in 0..3000 {
            let mut x = [(); 4].map(|()| DVec3::new(rnd(), rnd(), rnd()));
            // Some degenerate stencils: a repeated point, a flat triangle, parallel edges.
            match k % 10 {
                0 => x[2] = x[1],
                1 => x[3] = x[1] * 0.5 + x[2] * 0.5,
                2 => x[3] = x[2] + (x[1] - x[0]),
                _ => {}
            }
            for kind in [PairKind::VertexTriangle, PairKind::EdgeEdge, PairKind::VertexVertex] {
                let exact = proximity(kind, &x, DVec3::Y).distance;
                assert_eq!(distance(kind, &x).to_bits(), exact.to_bits(), "{kind:?} {x:?}");
            }
        }
    }
}
