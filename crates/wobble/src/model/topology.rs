//! [`Topology`]: what does not change while stepping — bodies and their surfaces.
//!
//! Element data that belongs to one force model (springs and their rest lengths,
//! pressure surfaces, grid cells) lives with that force term, beside its parameters;
//! the topology keeps what every stage shares: which particles form which body and
//! which triangles draw, pick and bound it.

use std::collections::HashMap;
use std::ops::Range;

use glam::DVec3;

use super::Vec3s;

/// A named group of consecutive particles and the surface triangles drawn for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    /// Unique name, from the scene file or the builder.
    pub name: String,
    /// The builder that made it (`"cloth"`, `"chain"`, `"lattice"`, `"mesh"`, ...).
    pub kind: String,
    /// Its particles, as a range of particle indices.
    pub particles: Range<usize>,
    /// Its surface triangles, as a range into [`Topology::triangles`].
    pub triangles: Range<usize>,
    /// Its polyline segments (chains, rings), as a range into [`Topology::lines`].
    pub lines: Range<usize>,
    /// True when the triangles form a closed, outward-wound surface that encloses a
    /// volume (or the lines a closed loop in the x-y plane enclosing an area).
    pub closed: bool,
}

/// Bodies and shared surface geometry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Topology {
    /// Bodies, in the order they were built.
    pub bodies: Vec<Body>,
    /// Surface triangles (particle indices, counter-clockwise seen from outside).
    pub triangles: Vec<[u32; 3]>,
    /// Polyline segments (particle indices) for one- and two-dimensional bodies.
    pub lines: Vec<[u32; 2]>,
    /// Surfaces drawn at offsets from oriented particles (tubes, thick sheets;
    /// 001 §4.3), for outputs only.
    pub offsets: Vec<super::OffsetSurface>,
    /// Rigid bodies: particles with a shape (see [`super::rigid`]).
    pub rigids: Vec<super::Rigid>,
}

impl Topology {
    /// The body named `name`.
    #[must_use]
    pub fn body(&self, name: &str) -> Option<&Body> {
        self.bodies.iter().find(|b| b.name == name)
    }

    /// The rigid body carried by particle `i`, if any.
    #[must_use]
    pub fn rigid_of(&self, i: usize) -> Option<&super::Rigid> {
        self.rigids.iter().find(|r| r.particle == i)
    }

    /// The body that owns particle `i`.
    #[must_use]
    pub fn body_of(&self, i: usize) -> Option<&Body> {
        self.bodies.iter().find(|b| b.particles.contains(&i))
    }

    /// Particles that are vertices of some surface triangle or line (the ones a user
    /// can grab); all particles of bodies that have neither.
    #[must_use]
    pub fn surface_particles(&self, n: usize) -> Vec<bool> {
        let mut on = vec![false; n];
        for body in &self.bodies {
            let tris = &self.triangles[body.triangles.clone()];
            let lines = &self.lines[body.lines.clone()];
            if tris.is_empty() && lines.is_empty() {
                on[body.particles.clone()].fill(true);
            }
            for t in tris {
                for &p in t {
                    on[p as usize] = true;
                }
            }
            for l in lines {
                for &p in l {
                    on[p as usize] = true;
                }
            }
        }
        on
    }

    /// Volume enclosed by `body` (m³) by the divergence theorem,
    /// V = (1/6) Σ x_a · (x_b × x_c) over its outward-wound triangles; for a closed
    /// line loop, the area it encloses in the x-y plane (m²). `None` for open bodies.
    #[must_use]
    pub fn enclosed_volume(&self, body: &Body, x: &Vec3s) -> Option<f64> {
        if !body.closed {
            return None;
        }
        if !body.triangles.is_empty() {
            Some(closed_surface_volume(&self.triangles[body.triangles.clone()], x))
        } else if !body.lines.is_empty() {
            Some(loop_area_xy(&self.lines[body.lines.clone()], x))
        } else {
            None
        }
    }
}

/// Volume enclosed by outward-wound triangles, m³ (divergence theorem, exact for a
/// closed triangulated surface).
#[must_use]
pub fn closed_surface_volume(triangles: &[[u32; 3]], x: &Vec3s) -> f64 {
    triangles
        .iter()
        .map(|t| {
            let [a, b, c] = x.gather(t);
            a.dot(b.cross(c))
        })
        .sum::<f64>()
        / 6.0
}

/// Signed area enclosed by counter-clockwise segments in the x-y plane (shoelace), m².
#[must_use]
pub fn loop_area_xy(lines: &[[u32; 2]], x: &Vec3s) -> f64 {
    0.5 * lines
        .iter()
        .map(|&[a, b]| {
            let (pa, pb) = (x.get(a as usize), x.get(b as usize));
            pa.x * pb.y - pb.x * pa.y
        })
        .sum::<f64>()
}

/// Area-weighted normal of triangle `t` (length = twice its area).
#[inline]
#[must_use]
pub fn triangle_normal(t: [u32; 3], x: &Vec3s) -> DVec3 {
    let [a, b, c] = x.gather(&t);
    (b - a).cross(c - a)
}

/// How many of `triangles` point against themselves at `rest`: their normal at
/// `x` has a negative (or zero) component along their normal at `rest`. A
/// triangle turned inside out by a collapse or a fold counts; one that only
/// rotates by less than 90° does not, so the count suits bodies that do not turn
/// over as a whole (a drop onto a floor). Degenerate triangles count.
#[must_use]
pub fn flipped_triangles(triangles: &[[u32; 3]], rest: &Vec3s, x: &Vec3s) -> usize {
    triangles.iter().filter(|t| triangle_normal(**t, x).dot(triangle_normal(**t, rest)) <= 0.0).count()
}

/// Unique undirected edges of `triangles` in first-seen order, and for each the
/// number of triangles that use it.
#[must_use]
pub fn edges(triangles: &[[u32; 3]]) -> (Vec<[u32; 2]>, Vec<u32>) {
    let mut index: HashMap<(u32, u32), usize> = HashMap::new();
    let (mut list, mut uses) = (Vec::new(), Vec::new());
    for t in triangles {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            let key = (a.min(b), a.max(b));
            let e = *index.entry(key).or_insert_with(|| {
                list.push([key.0, key.1]);
                uses.push(0);
                list.len() - 1
            });
            uses[e] += 1;
        }
    }
    (list, uses)
}
