//! Collision surfaces: which particles, edges and triangles of each body collide, and
//! with what thickness.

use glam::DVec3;

use super::narrow;
use crate::model::{Topology, Vec3s};

/// Default thickness as a fraction of a body's mean surface edge length: thin
/// enough to leave no visible gap between touching bodies, thick enough for a
/// continuous test's tolerance η (a tenth of it) to stay far above round-off.
pub const DEFAULT_THICKNESS: f64 = 0.1;

/// Per-body contact options (`None`: the default for the body's kind).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactOptions {
    /// Whether the body collides at all (default: yes, except rigid bodies, whose
    /// own contact handles them).
    pub collide: Option<bool>,
    /// Whether the body collides with itself (default: cloths do, other bodies not).
    pub self_collide: Option<bool>,
    /// Contact distance, m (default: [`DEFAULT_THICKNESS`] times the mean surface edge length,
    /// capped at half the smallest rest distance between non-adjacent elements;
    /// for bodies of loose particles, twice the mean particle radius).
    pub thickness: Option<f64>,
}

/// Why a body's contact options are invalid.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SurfaceError {
    /// The thickness is not a positive finite number.
    #[error(
        "body `{body}`: `thickness` = {value} is invalid: it must be positive and finite (m); {suggestion:.3e} m would work"
    )]
    BadThickness {
        /// The body.
        body: String,
        /// The value given.
        value: f64,
        /// The default for this body.
        suggestion: f64,
    },
    /// Self-contacts would fire at rest.
    #[error(
        "body `{body}`: `thickness` = {value} m is at or above the smallest rest distance between its non-adjacent elements ({gap:.3e} m), so self-contacts would fire at rest; use less than {gap:.3e} m (e.g. {suggestion:.3e} m) or `self_collide = false`"
    )]
    ThicknessTooLarge {
        /// The body.
        body: String,
        /// The value given.
        value: f64,
        /// Smallest rest distance between non-adjacent elements, m.
        gap: f64,
        /// The default for this body.
        suggestion: f64,
    },
}

/// One colliding body.
#[derive(Clone, Debug, PartialEq)]
pub struct SurfaceBody {
    /// Body name.
    pub name: String,
    /// Contact distance, m.
    pub thickness: f64,
    /// Whether it collides with itself.
    pub self_collide: bool,
}

/// The collision surfaces of all colliding bodies, as flat lists of primitives, each
/// tagged with its body (an index into `bodies`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Surfaces {
    /// Colliding bodies.
    pub bodies: Vec<SurfaceBody>,
    /// Surface vertices (particle indices), each tested against triangles.
    pub vertices: Vec<u32>,
    /// Body of each vertex.
    pub vertex_body: Vec<u32>,
    /// Edges (of triangles and polylines), each once.
    pub edges: Vec<[u32; 2]>,
    /// Body of each edge.
    pub edge_body: Vec<u32>,
    /// Triangles.
    pub triangles: Vec<[u32; 3]>,
    /// Body of each triangle.
    pub triangle_body: Vec<u32>,
    /// Particles of bodies with neither triangles nor edges (spheres).
    pub points: Vec<u32>,
    /// Body of each point.
    pub point_body: Vec<u32>,
}

impl Surfaces {
    /// True when nothing can touch anything: no colliding body, or a single one
    /// that does not collide with itself.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        match self.bodies.as_slice() {
            [] => true,
            [only] => !only.self_collide,
            _ => false,
        }
    }

    /// Thickness of surface body `b`, m.
    #[must_use]
    pub fn thickness_of(&self, b: u32) -> f64 {
        self.bodies[b as usize].thickness
    }

    /// Whether primitives of bodies `a` and `b` may touch.
    #[must_use]
    pub fn may_touch(&self, a: u32, b: u32) -> bool {
        a != b || self.bodies[a as usize].self_collide
    }

    /// Contact distance between primitives of bodies `a` and `b`, m.
    #[must_use]
    pub fn contact_distance(&self, a: u32, b: u32) -> f64 {
        0.5 * (self.thickness_of(a) + self.thickness_of(b))
    }

    /// A rough depth for a warning: the largest distance of stencil `p`'s points
    /// from their centroid.
    #[must_use]
    pub fn depth_estimate(&self, p: [u32; 4], x: &Vec3s) -> f64 {
        let pts = x.gather(&p);
        let c = pts.iter().sum::<DVec3>() / 4.0;
        pts.iter().map(|q| (*q - c).length()).fold(0.0, f64::max)
    }

    /// How deep two distinct bodies with closed surfaces overlap at `x`: the
    /// largest distance from a vertex of either that lies inside the other
    /// (winding number above ½) to the other's surface; `None` when either
    /// surface is open (a cloth) or `a` = `b`.
    #[must_use]
    pub fn overlap_depth(&self, a: u32, b: u32, x: &Vec3s) -> Option<f64> {
        if a == b {
            return None;
        }
        let tris_of = |body: u32| -> Vec<[u32; 3]> {
            self.triangles.iter().zip(&self.triangle_body).filter(|(_, k)| **k == body).map(|(t, _)| *t).collect()
        };
        let closed = |tris: &[[u32; 3]]| {
            let mut edges: Vec<[u32; 2]> = tris
                .iter()
                .flat_map(|t| [[t[0], t[1]], [t[1], t[2]], [t[2], t[0]]])
                .map(|[p, q]| [p.min(q), p.max(q)])
                .collect();
            edges.sort_unstable();
            !tris.is_empty() && edges.chunk_by(|p, q| p == q).all(|run| run.len() == 2)
        };
        let (ta, tb) = (tris_of(a), tris_of(b));
        if !closed(&ta) || !closed(&tb) {
            return None;
        }
        let inside = |from: u32, tris: &[[u32; 3]]| {
            let corners: Vec<DVec3> = tris.iter().flat_map(|t| x.gather(t)).collect();
            let lo = corners.iter().copied().fold(DVec3::splat(f64::INFINITY), DVec3::min);
            let hi = corners.iter().copied().fold(DVec3::splat(f64::NEG_INFINITY), DVec3::max);
            self.vertices
                .iter()
                .zip(&self.vertex_body)
                .filter(|(_, k)| **k == from)
                .map(|(&v, _)| x.get(v as usize))
                .filter(|p| p.cmpge(lo).all() && p.cmple(hi).all())
                .filter(|&p| super::intersect::winding_number(p, tris, x) > 0.5)
                .map(|p| {
                    let d2 = tris
                        .iter()
                        .map(|t| {
                            let [u, v, w] = x.gather(t);
                            narrow::point_triangle(p, u, v, w).0
                        })
                        .fold(f64::INFINITY, f64::min);
                    d2.sqrt()
                })
                .fold(0.0, f64::max)
        };
        Some(inside(a, &tb).max(inside(b, &ta)))
    }

    /// The surface bodies of `pair`'s two sides (its query primitive's first).
    #[must_use]
    pub fn pair_bodies(&self, pair: &super::Pair) -> (u32, u32) {
        let (q, o) = (pair.query as usize, pair.other as usize);
        match pair.kind {
            narrow::PairKind::VertexTriangle => (self.vertex_body[q], self.triangle_body[o]),
            narrow::PairKind::EdgeEdge => (self.edge_body[q], self.edge_body[o]),
            narrow::PairKind::VertexVertex => (self.point_body[q], self.point_body[o]),
        }
    }

    /// Collision surfaces of the bodies in `topology` at rest positions `x`, with
    /// `options[k]` for body k (missing entries take the defaults).
    pub fn from_topology(
        topology: &Topology,
        x: &Vec3s,
        radius: &[f64],
        options: &[ContactOptions],
    ) -> Result<Surfaces, SurfaceError> {
        let mut s = Surfaces::default();
        for (k, body) in topology.bodies.iter().enumerate() {
            let opt = options.get(k).copied().unwrap_or_default();
            let collide = opt.collide.unwrap_or(body.kind != "rigid");
            if !collide || body.kind == "rigid" {
                continue;
            }
            let self_collide = opt.self_collide.unwrap_or(body.kind == "cloth");
            let tris = &topology.triangles[body.triangles.clone()];
            let lines = &topology.lines[body.lines.clone()];
            let mut edges: Vec<[u32; 2]> = Vec::new();
            for t in tris {
                for (a, b) in [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])] {
                    edges.push([a.min(b), a.max(b)]);
                }
            }
            edges.extend(lines.iter().map(|l| [l[0].min(l[1]), l[0].max(l[1])]));
            edges.sort_unstable();
            edges.dedup();
            let mut verts: Vec<u32> = edges.iter().flatten().copied().collect();
            verts.sort_unstable();
            verts.dedup();
            let mut single = Surfaces::default();
            single.bodies.push(SurfaceBody { name: body.name.clone(), thickness: 0.0, self_collide: true });
            let points: Vec<u32> =
                if edges.is_empty() { body.particles.clone().map(|i| i as u32).collect() } else { Vec::new() };
            single.vertices = if tris.is_empty() { Vec::new() } else { verts.clone() };
            single.vertex_body = vec![0; single.vertices.len()];
            single.edges.clone_from(&edges);
            single.edge_body = vec![0; edges.len()];
            single.triangles = tris.to_vec();
            single.triangle_body = vec![0; tris.len()];
            single.points.clone_from(&points);
            single.point_body = vec![0; points.len()];
            // Scale of the surface: mean edge length, or mean particle diameter.
            let mean_edge = if edges.is_empty() {
                0.0
            } else {
                edges.iter().map(|e| (x.get(e[0] as usize) - x.get(e[1] as usize)).length()).sum::<f64>()
                    / edges.len() as f64
            };
            let mean_radius =
                body.particles.clone().map(|i| radius[i]).sum::<f64>() / body.particles.len().max(1) as f64;
            // The search for the rest gap reaches past a given thickness, so that a
            // gap it reports below the thickness is a real one, and finding none
            // means no self-contact fires at rest.
            let search = if edges.is_empty() { (4.0 * mean_radius).max(1e-6) } else { 2.0 * mean_edge };
            let search = match opt.thickness {
                Some(h) if h.is_finite() && self_collide => search.max(1.01 * h),
                _ => search,
            };
            let gap = single.rest_gap(x, search);
            let default = if edges.is_empty() {
                // Loose particles: spheres of their radius (contact at r_a + r_b).
                (2.0 * mean_radius).min(if self_collide { 0.5 * gap } else { f64::INFINITY }).max(1e-9)
            } else {
                (DEFAULT_THICKNESS * mean_edge).min(0.5 * gap).max(1e-9)
            };
            let thickness = opt.thickness.unwrap_or(default);
            if !(thickness.is_finite() && thickness > 0.0) {
                return Err(SurfaceError::BadThickness {
                    body: body.name.clone(),
                    value: thickness,
                    suggestion: default,
                });
            }
            if self_collide && thickness >= gap {
                return Err(SurfaceError::ThicknessTooLarge {
                    body: body.name.clone(),
                    value: thickness,
                    gap,
                    suggestion: default,
                });
            }
            let id = s.bodies.len() as u32;
            s.bodies.push(SurfaceBody { name: body.name.clone(), thickness, self_collide });
            if !tris.is_empty() {
                s.vertex_body.extend(std::iter::repeat_n(id, verts.len()));
                s.vertices.extend(verts);
            }
            s.edge_body.extend(std::iter::repeat_n(id, edges.len()));
            s.edges.extend(edges);
            s.triangle_body.extend(std::iter::repeat_n(id, tris.len()));
            s.triangles.extend_from_slice(tris);
            s.point_body.extend(std::iter::repeat_n(id, points.len()));
            s.points.extend(points);
        }
        Ok(s)
    }

    /// Smallest distance at positions `x` between non-adjacent primitives of this
    /// (single-body) surface, searched up to `radius` (m); `radius` when none is
    /// closer.
    #[must_use]
    pub fn rest_gap(&self, x: &Vec3s, radius: f64) -> f64 {
        let search = radius;
        let mut probe = self.clone();
        for b in &mut probe.bodies {
            b.thickness = search;
            b.self_collide = true;
        }
        let mut stage = super::Contacts::new(probe, super::ContactSettings::default());
        stage.broad_phase(x, x);
        let mut gap = search;
        for pair in stage.pairs() {
            let pos = x.gather(&pair.p);
            gap = gap.min(narrow::proximity(pair.kind, &pos, DVec3::Y).distance);
        }
        gap
    }
}
