//! Two solid oriented boxes: whether they overlap, by how much, and where they touch.
//!
//! # Separating axes
//! Two convex polyhedra are apart exactly when some axis separates their
//! projections, and for two boxes it is enough to try fifteen: the three face
//! normals of each box and the nine cross products of an edge direction of one with
//! an edge direction of the other. Along a unit axis l the boxes, with centres a, b,
//! unit axes aₖ, bₖ and half-extents αₖ, βₖ, project to intervals of radii
//! r_a = Σ αₖ |aₖ · l| and r_b = Σ βₖ |bₖ · l| about a · l and b · l; their
//! separation along l is s(l) = |(a − b) · l| − r_a − r_b. If any s(l) ≥ 0 the boxes
//! do not overlap (touching counts as apart). Otherwise the axis of largest s (least
//! overlap) is the penetration direction and −s its depth: the shortest translation
//! that separates two boxes is along one of these fifteen axes (they hold every face
//! normal of the boxes' Minkowski difference). Cross products of nearly parallel
//! edges (|aᵢ × bⱼ| < [`PARALLEL`]) are left out: their directions are noise, and
//! the face axes already cover those configurations.
//!
//! Near-ties are broken towards the more stable feature: a face of b is taken over
//! a face of a only when its separation beats 0.98 × a's (plus a small absolute
//! slack), and an edge pair over the faces only when it beats 0.95 × theirs, so a
//! resting stack keeps the same reference face from step to step instead of
//! flickering between equal axes.
//!
//! # Contact points
//! - *Face*: the box owning the axis is the reference, its face along the axis
//!   (towards the other box) the reference face; the other box's face most opposed to
//!   it is the incident face. The incident face (a quadrilateral) is clipped to the
//!   four side planes of the reference face (Sutherland–Hodgman, at most eight
//!   vertices); each remaining vertex below the reference plane is a contact point,
//!   with its depth under the plane, placed midway between the vertex and the plane.
//!   Two boxes resting face to face so touch at up to four (or eight) points, and the
//!   support has no preferred corner.
//! - *Edge pair*: the edge of each box parallel to its axis and farthest along the
//!   penetration direction towards the other box; the contact point is the midpoint
//!   of their closest points, with the axis's depth. Two edges crossing mid-span
//!   are found here although no corner of either box lies inside the other.

use glam::{DMat3, DVec3};

use super::narrow::segment_segment;

/// Below this length, the cross product of two unit edge directions is not tried as
/// a separating axis (the edges are parallel to within about 1e-6 rad).
pub const PARALLEL: f64 = 1e-6;

/// A face of box b is taken as the reference over one of box a when its separation
/// exceeds this fraction of a's (and [`ABSOLUTE_SLACK`]).
const FACE_TIE: f64 = 0.98;
/// An edge pair is taken over the faces when its separation exceeds this fraction
/// of theirs (and [`ABSOLUTE_SLACK`]).
const EDGE_TIE: f64 = 0.95;
/// Absolute slack of the tie-breaks, as a fraction of the smallest half-extent.
const ABSOLUTE_SLACK: f64 = 1e-4;

/// A solid box placed in the world.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cuboid {
    /// Centre, m.
    pub centre: DVec3,
    /// The box's own unit axes in world coordinates, as columns (a rotation).
    pub axes: DMat3,
    /// Half the edge lengths along those axes, m (each > 0).
    pub half: DVec3,
}

impl Cuboid {
    fn axis(&self, k: usize) -> DVec3 {
        self.axes.col(k)
    }

    /// Half-width of the box's projection onto unit axis `l`.
    fn radius_along(&self, l: DVec3) -> f64 {
        (0..3).map(|k| self.half[k] * self.axis(k).dot(l).abs()).sum()
    }

    /// The box's point farthest along `dir` (a corner; ties go to +).
    fn support(&self, dir: DVec3) -> DVec3 {
        (0..3).fold(self.centre, |p, k| p + sign(self.axis(k).dot(dir)) * self.half[k] * self.axis(k))
    }
}

/// Which features of the two boxes meet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// A face of box a (its axis index) is the reference face.
    FaceOfA(usize),
    /// A face of box b (its axis index) is the reference face.
    FaceOfB(usize),
    /// Edge of a along its axis i against edge of b along its axis j.
    Edges(usize, usize),
}

/// Where two boxes overlap: the penetration direction and the contact points.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxManifold {
    /// Unit normal from box b towards box a.
    pub normal: DVec3,
    /// Overlap along `normal`, m (> 0; from [`box_box_within`], down to minus its
    /// margin): moving a by `depth × normal` separates them.
    pub depth: f64,
    /// Contact points (the first `count`), m.
    pub points: [DVec3; 8],
    /// Depth of each contact point along `normal`, m (> 0, or above minus the
    /// margin of [`box_box_within`]).
    pub depths: [f64; 8],
    /// Number of contact points (1 to 8).
    pub count: usize,
    /// The features that meet.
    pub feature: Feature,
}

impl BoxManifold {
    /// The contact points with their depths.
    pub fn contacts(&self) -> impl Iterator<Item = (DVec3, f64)> + '_ {
        self.points[..self.count].iter().copied().zip(self.depths[..self.count].iter().copied())
    }
}

fn sign(x: f64) -> f64 {
    if x < 0.0 { -1.0 } else { 1.0 }
}

/// The overlap of boxes `a` and `b`, or `None` when they are apart or only touch
/// (see the module docs).
#[must_use]
pub fn box_box(a: &Cuboid, b: &Cuboid) -> Option<BoxManifold> {
    box_box_within(a, b, 0.0)
}

/// As [`box_box`], also for boxes up to `margin` (m, ≥ 0) apart: the manifold of
/// the nearest features, whose depths are then negative (minus the gap) down to
/// −`margin`. Contacts that are about to form so enter a solver one step early
/// (speculative contacts), and a resting contact at depth 0 stays one.
#[must_use]
pub fn box_box_within(a: &Cuboid, b: &Cuboid, margin: f64) -> Option<BoxManifold> {
    let d = a.centre - b.centre;
    let separation = |l: DVec3| d.dot(l).abs() - a.radius_along(l) - b.radius_along(l);
    // (separation, axis oriented from b towards a, feature)
    let mut face_a = (f64::NEG_INFINITY, DVec3::ZERO, Feature::FaceOfA(0));
    let mut face_b = (f64::NEG_INFINITY, DVec3::ZERO, Feature::FaceOfB(0));
    for k in 0..3 {
        for (box_, best, feature) in [(a, &mut face_a, Feature::FaceOfA(k)), (b, &mut face_b, Feature::FaceOfB(k))] {
            let l = box_.axis(k);
            let s = separation(l);
            if s >= margin {
                return None;
            }
            if s > best.0 {
                *best = (s, sign(d.dot(l)) * l, feature);
            }
        }
    }
    let mut edges = (f64::NEG_INFINITY, DVec3::ZERO, Feature::Edges(0, 0));
    for i in 0..3 {
        for j in 0..3 {
            let l = a.axis(i).cross(b.axis(j));
            let len = l.length();
            if len < PARALLEL {
                continue;
            }
            let l = l / len;
            let s = separation(l);
            if s >= margin {
                return None;
            }
            if s > edges.0 {
                edges = (s, sign(d.dot(l)) * l, Feature::Edges(i, j));
            }
        }
    }
    let slack = ABSOLUTE_SLACK * a.half.min_element().min(b.half.min_element());
    let face = if face_b.0 > FACE_TIE * face_a.0 + slack { face_b } else { face_a };
    let (s, normal, feature) = if edges.0 > EDGE_TIE * face.0 + slack { edges } else { face };
    let depth = -s;
    let mut m = BoxManifold { normal, depth, points: [DVec3::ZERO; 8], depths: [0.0; 8], count: 0, feature };
    match feature {
        // Reference a: its face towards b has outward normal −normal.
        Feature::FaceOfA(k) => face_points(a, k, -normal, b, margin, &mut m),
        Feature::FaceOfB(k) => face_points(b, k, normal, a, margin, &mut m),
        Feature::Edges(i, j) => {
            // The supporting edges: through the corners farthest towards each
            // other, along a's axis i and b's axis j (centred on those corners'
            // projections onto the edge lines).
            let (ea, eb) = (a.axis(i), b.axis(j));
            let (pa, pb) = (a.support(-normal), b.support(normal));
            let (ma, mb) = (pa - ea.dot(pa - a.centre) * ea, pb - eb.dot(pb - b.centre) * eb);
            let (ca, qa) = (ma - a.half[i] * ea, ma + a.half[i] * ea);
            let (cb, qb) = (mb - b.half[j] * eb, mb + b.half[j] * eb);
            let (_, s, t) = segment_segment(ca, qa, cb, qb);
            m.points[0] = 0.5 * (ca + s * (qa - ca) + cb + t * (qb - cb));
            m.depths[0] = depth;
            m.count = 1;
        }
    }
    Some(m)
}

/// Contact points of a face case: reference box `r` with face along its axis `k`
/// of outward normal `nr` (towards the incident box `inc`); clipped vertices less
/// than `margin` above the reference plane count.
fn face_points(r: &Cuboid, k: usize, nr: DVec3, inc: &Cuboid, margin: f64, m: &mut BoxManifold) {
    let plane = nr.dot(r.centre) + r.half[k];
    // Incident face: the face of `inc` whose outward normal is most opposed to nr.
    let j =
        (0..3).max_by(|&x, &y| inc.axis(x).dot(nr).abs().total_cmp(&inc.axis(y).dot(nr).abs())).expect("three axes");
    let out = -sign(inc.axis(j).dot(nr)) * inc.axis(j);
    let centre = inc.centre + inc.half[j] * out;
    let (u, v) = ((j + 1) % 3, (j + 2) % 3);
    let (du, dv) = (inc.half[u] * inc.axis(u), inc.half[v] * inc.axis(v));
    let mut poly = [DVec3::ZERO; 8];
    poly[..4].copy_from_slice(&[centre + du + dv, centre - du + dv, centre - du - dv, centre + du - dv]);
    let mut len = 4;
    // Clip to the reference face's side planes: |e · (x − c)| ≤ half along its other axes.
    for side in [(k + 1) % 3, (k + 2) % 3] {
        let e = r.axis(side);
        for dir in [e, -e] {
            len = clip(&mut poly, len, dir, dir.dot(r.centre) + r.half[side]);
        }
    }
    for &p in &poly[..len] {
        let depth = plane - nr.dot(p);
        if depth > -margin {
            m.points[m.count] = p + 0.5 * depth * nr;
            m.depths[m.count] = depth;
            m.count += 1;
        }
    }
    if m.count == 0 {
        // Round-off left no clipped vertex below the plane: the incident box's
        // deepest corner carries the contact.
        let p = inc.support(-nr);
        m.points[0] = p + 0.5 * m.depth * nr;
        m.depths[0] = m.depth;
        m.count = 1;
    }
}

/// Clips the convex polygon `poly[..len]` to the half-space dir · x ≤ offset in
/// place; returns the new vertex count (a convex polygon gains at most one vertex
/// per plane, so a quadrilateral clipped by four planes keeps at most eight).
fn clip(poly: &mut [DVec3; 8], len: usize, dir: DVec3, offset: f64) -> usize {
    let input = *poly;
    let mut n = 0;
    for i in 0..len {
        let (p, q) = (input[i], input[(i + 1) % len]);
        let (dp, dq) = (dir.dot(p) - offset, dir.dot(q) - offset);
        if dp <= 0.0 && n < poly.len() {
            poly[n] = p;
            n += 1;
        }
        if (dp <= 0.0) != (dq <= 0.0) && n < poly.len() {
            poly[n] = p + (dp / (dp - dq)) * (q - p);
            n += 1;
        }
    }
    n
}
