//! Rigid bodies: one particle with a shape.
//!
//! A rigid body is an ordinary particle — position, velocity, orientation q and
//! angular velocity ω in [`super::State`], mass and principal inertia in
//! [`super::Particles`] — whose extent is described by a [`RigidShape`] in its
//! body frame. The integrators already advance every particle's rotation by Euler's
//! equations; contact ([`crate::constraint::rigid_contact`]) and attachment springs
//! ([`crate::force::attachment`]) read the shape and the frame. The shapes live in
//! [`super::Topology::rigids`] so that every stage (contact, outputs) finds them.

use glam::{DQuat, DVec3};

use super::State;

/// Shape of a rigid body in its body frame, centred on its centre of mass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RigidShape {
    /// Solid ball.
    Sphere {
        /// Radius, m (> 0).
        radius: f64,
    },
    /// Solid box aligned with the body axes.
    Box {
        /// Half the edge lengths along the body x, y, z axes, m (each > 0).
        half: DVec3,
    },
}

impl RigidShape {
    /// Principal moments of inertia (kg m²) of the solid shape with uniform density
    /// and total mass `mass` (kg): 2/5 m r² for a ball, m/3 (b² + c²) etc. for a box
    /// of half-extents (a, b, c).
    #[must_use]
    pub fn inertia(&self, mass: f64) -> DVec3 {
        match *self {
            RigidShape::Sphere { radius } => DVec3::splat(0.4 * mass * radius * radius),
            RigidShape::Box { half: h } => {
                let s = h * h;
                DVec3::new(s.y + s.z, s.x + s.z, s.x + s.y) * (mass / 3.0)
            }
        }
    }

    /// The shape's smallest half-extent, m: a ball's radius, a box's least half edge.
    #[must_use]
    pub fn smallest_half_extent(&self) -> f64 {
        match *self {
            RigidShape::Sphere { radius } => radius,
            RigidShape::Box { half } => half.min_element(),
        }
    }

    /// Radius of the smallest ball about the centre that holds the shape, m.
    #[must_use]
    pub fn bounding_radius(&self) -> f64 {
        match *self {
            RigidShape::Sphere { radius } => radius,
            RigidShape::Box { half } => half.length(),
        }
    }

    /// Signed distance of body-frame point `p` from the surface (m, negative
    /// inside) and the outward unit normal of the nearest surface point, in the body
    /// frame. Inside a box, the nearest face decides (ties go to x, then y, then z).
    #[must_use]
    pub fn distance(&self, p: DVec3) -> (f64, DVec3) {
        match *self {
            RigidShape::Sphere { radius } => {
                let len = p.length();
                let n = if len > 0.0 { p / len } else { DVec3::Y };
                (len - radius, n)
            }
            RigidShape::Box { half } => {
                let q = p.abs() - half;
                if q.max_element() > 0.0 {
                    // Outside: distance to the nearest point of the box.
                    let outside = q.max(DVec3::ZERO);
                    let len = outside.length();
                    (len, (outside * p.signum()) / len)
                } else {
                    // Inside: the face with the least penetration.
                    let axis = if q.x >= q.y && q.x >= q.z {
                        DVec3::X
                    } else if q.y >= q.z {
                        DVec3::Y
                    } else {
                        DVec3::Z
                    };
                    let sign = if p.dot(axis) < 0.0 { -1.0 } else { 1.0 };
                    (q.max_element(), axis * sign)
                }
            }
        }
    }

    /// The point of segment (a, b) (body frame) deepest in the shape, or nearest
    /// to it: the parameter t ∈ [0, 1] of the point a + t (b − a) where the signed
    /// [`Self::distance`] is least, and that distance. The signed distance of a
    /// convex shape is a convex function along a line, so a ball's is found in
    /// closed form (the point nearest the centre) and a box's by golden-section
    /// search, to 1e-12 of the segment.
    #[must_use]
    pub fn deepest_on_segment(&self, a: DVec3, b: DVec3) -> (f64, f64) {
        let d = b - a;
        let at = |t: f64| self.distance(a + t * d).0;
        match *self {
            RigidShape::Sphere { .. } => {
                let len2 = d.length_squared();
                let t = if len2 > 0.0 { (-a.dot(d) / len2).clamp(0.0, 1.0) } else { 0.0 };
                (t, at(t))
            }
            RigidShape::Box { .. } => {
                const GOLDEN: f64 = 0.618_033_988_749_894_8;
                let (mut lo, mut hi) = (0.0, 1.0);
                let (mut t1, mut t2) = (hi - GOLDEN * (hi - lo), lo + GOLDEN * (hi - lo));
                let (mut f1, mut f2) = (at(t1), at(t2));
                while hi - lo > 1e-12 {
                    if f1 <= f2 {
                        hi = t2;
                        (t2, f2) = (t1, f1);
                        t1 = hi - GOLDEN * (hi - lo);
                        f1 = at(t1);
                    } else {
                        lo = t1;
                        (t1, f1) = (t2, f2);
                        t2 = lo + GOLDEN * (hi - lo);
                        f2 = at(t2);
                    }
                }
                // The ends too: the search brackets the least value only to its
                // tolerance, and an end may be the minimum exactly.
                [(0.0, at(0.0)), (1.0, at(1.0)), (0.5 * (lo + hi), at(0.5 * (lo + hi)))]
                    .into_iter()
                    .min_by(|x, y| x.1.total_cmp(&y.1))
                    .expect("three candidates")
            }
        }
    }

    /// The box's twelve edges as pairs of indices into its
    /// [`Self::support_points`] corners (corners differing in one bit); none for
    /// a ball.
    #[must_use]
    pub fn edges(&self) -> &'static [(usize, usize)] {
        const BOX_EDGES: [(usize, usize); 12] =
            [(0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7)];
        match self {
            RigidShape::Sphere { .. } => &[],
            RigidShape::Box { .. } => &BOX_EDGES,
        }
    }

    /// The points tested against the scene's colliders, in the body frame: the
    /// centre of a sphere (with its radius as margin) or the eight corners of a box
    /// (margin 0). Returns the number of points written into `out`.
    #[must_use]
    pub fn support_points(&self, out: &mut [DVec3; 8]) -> (usize, f64) {
        match *self {
            RigidShape::Sphere { radius } => {
                out[0] = DVec3::ZERO;
                (1, radius)
            }
            RigidShape::Box { half } => {
                for (k, slot) in out.iter_mut().enumerate() {
                    let s = |bit: usize| if k & bit == 0 { -1.0 } else { 1.0 };
                    *slot = half * DVec3::new(s(1), s(2), s(4));
                }
                (8, 0.0)
            }
        }
    }

    /// An outward-wound triangle surface for drawing, in the body frame: the box's
    /// 12 triangles (4 vertices per face, so faces shade flat), or a closed
    /// latitude–longitude sphere of 12 slices and 8 stacks.
    #[must_use]
    pub fn surface(&self) -> (Vec<DVec3>, Vec<[u32; 3]>) {
        match *self {
            RigidShape::Box { .. } => {
                let mut corners = [DVec3::ZERO; 8];
                let _ = self.support_points(&mut corners);
                // Corner k has bit 1: +x, bit 2: +y, bit 4: +z. Each face gets its
                // own four vertices so that shading sees flat faces.
                let quads: [[usize; 4]; 6] =
                    [[0, 4, 6, 2], [1, 3, 7, 5], [0, 1, 5, 4], [2, 6, 7, 3], [0, 2, 3, 1], [4, 5, 7, 6]];
                let mut verts = Vec::with_capacity(24);
                let mut tris = Vec::with_capacity(12);
                for quad in quads {
                    let base = verts.len() as u32;
                    verts.extend(quad.map(|k| corners[k]));
                    tris.push([base, base + 1, base + 2]);
                    tris.push([base, base + 2, base + 3]);
                }
                (verts, tris)
            }
            RigidShape::Sphere { radius } => {
                const SLICES: u32 = 12;
                const STACKS: u32 = 8;
                let mut v = vec![DVec3::new(0.0, radius, 0.0)];
                for s in 1..STACKS {
                    let theta = std::f64::consts::PI * f64::from(s) / f64::from(STACKS);
                    for k in 0..SLICES {
                        let phi = std::f64::consts::TAU * f64::from(k) / f64::from(SLICES);
                        v.push(radius * DVec3::new(theta.sin() * phi.cos(), theta.cos(), -theta.sin() * phi.sin()));
                    }
                }
                v.push(DVec3::new(0.0, -radius, 0.0));
                let south = v.len() as u32 - 1;
                let ring = |s: u32, k: u32| 1 + (s - 1) * SLICES + k % SLICES;
                let mut tris = Vec::new();
                for k in 0..SLICES {
                    tris.push([0, ring(1, k), ring(1, k + 1)]);
                    tris.push([south, ring(STACKS - 1, k + 1), ring(STACKS - 1, k)]);
                }
                for s in 1..STACKS - 1 {
                    for k in 0..SLICES {
                        let (a, b, c, d) = (ring(s, k), ring(s + 1, k), ring(s + 1, k + 1), ring(s, k + 1));
                        tris.push([a, b, c]);
                        tris.push([a, c, d]);
                    }
                }
                (v, tris)
            }
        }
    }
}

/// A rigid body: the particle that carries it and its shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rigid {
    /// Index of its particle.
    pub particle: usize,
    /// Its shape in the body frame.
    pub shape: RigidShape,
}

impl Rigid {
    /// World position of the body-frame point `local` at `state`, m.
    #[inline]
    #[must_use]
    pub fn world_point(&self, state: &State, local: DVec3) -> DVec3 {
        state.x.get(self.particle) + state.q[self.particle] * local
    }

    /// Orientation at `state`.
    #[inline]
    #[must_use]
    pub fn orientation(&self, state: &State) -> DQuat {
        state.q[self.particle]
    }
}

/// The drawn surfaces of `rigids` at `state`, in world coordinates: vertices and
/// triangles whose indices start at `first_vertex` (so they can follow the
/// particles in one vertex list).
#[must_use]
pub fn rigid_surfaces(rigids: &[Rigid], state: &State, first_vertex: u32) -> (Vec<DVec3>, Vec<[u32; 3]>) {
    let (mut verts, mut tris) = (Vec::new(), Vec::new());
    for r in rigids {
        let (v, t) = r.shape.surface();
        let base = first_vertex + verts.len() as u32;
        verts.extend(v.into_iter().map(|p| r.world_point(state, p)));
        tris.extend(t.into_iter().map(|t| t.map(|i| i + base)));
    }
    (verts, tris)
}
