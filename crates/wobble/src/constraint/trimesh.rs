//! Triangle-mesh collider geometry: closest points through a spatial hash of the
//! triangles, and a sign from angle-weighted pseudo-normals.
//!
//! For a closed, consistently wound mesh the signed distance of a point is its
//! distance to the nearest surface point, negative inside; the side is decided by
//! the pseudo-normal of the feature (face, edge or vertex) holding the nearest point
//! — the face normal, the sum of an edge's two face normals, or the sum of a
//! vertex's face normals weighted by their angles there (Bærentzen and Aanæs), which
//! classifies every point correctly. An open mesh (a scan with holes) is a two-sided
//! shell: the distance is unsigned, less half the shell's `thickness`.

use glam::DVec3;

use crate::contact::broad::{Aabb, SpatialHash};
use crate::contact::narrow::point_triangle;

/// A static triangle mesh prepared for closest-point queries.
#[derive(Clone, Debug)]
pub struct TriMesh {
    /// Vertex positions, m.
    pub vertices: Vec<DVec3>,
    /// Triangles (vertex indices), counter-clockwise seen from outside when closed.
    pub triangles: Vec<[u32; 3]>,
    /// True when every edge has exactly two triangles (the mesh bounds a volume).
    pub closed: bool,
    /// Shell thickness of an open mesh, m (its surface is kept half of it away).
    pub thickness: f64,
    face_normals: Vec<DVec3>,
    /// Pseudo-normal per triangle edge (ab, bc, ca).
    edge_normals: Vec<[DVec3; 3]>,
    vertex_normals: Vec<DVec3>,
    hash: SpatialHash,
    cell: f64,
    bounds: Aabb,
}

impl PartialEq for TriMesh {
    fn eq(&self, other: &Self) -> bool {
        self.vertices == other.vertices && self.triangles == other.triangles && self.thickness == other.thickness
    }
}

/// Why a mesh cannot be a collider.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TriMeshError {
    /// No triangles.
    #[error("the mesh has no triangles")]
    Empty,
    /// A triangle names a vertex that does not exist.
    #[error("triangle {0} (1-based) names a vertex that does not exist")]
    BadIndex(usize),
    /// A coordinate is not finite.
    #[error("vertex {0} (1-based) is not finite")]
    NonFinite(usize),
}

impl TriMesh {
    /// Prepares `triangles` over `vertices`; `thickness` (m) is used when the mesh
    /// is open. Closed meshes wound inward are turned outward.
    pub fn new(vertices: Vec<DVec3>, mut triangles: Vec<[u32; 3]>, thickness: f64) -> Result<TriMesh, TriMeshError> {
        if triangles.is_empty() {
            return Err(TriMeshError::Empty);
        }
        if let Some(k) = vertices.iter().position(|v| !v.is_finite()) {
            return Err(TriMeshError::NonFinite(k + 1));
        }
        if let Some(k) = triangles.iter().position(|t| t.iter().any(|&i| i as usize >= vertices.len())) {
            return Err(TriMeshError::BadIndex(k + 1));
        }
        let (edges, uses) = crate::model::edges(&triangles);
        let closed = !edges.is_empty() && uses.iter().all(|&u| u == 2);
        if closed {
            let vol: f64 = triangles
                .iter()
                .map(|t| {
                    let [a, b, c] = t.map(|i| vertices[i as usize]);
                    a.dot(b.cross(c))
                })
                .sum();
            if vol < 0.0 {
                for t in &mut triangles {
                    t.swap(1, 2);
                }
            }
        }
        let face_normals: Vec<DVec3> = triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| vertices[i as usize]);
                (b - a).cross(c - a).normalize_or_zero()
            })
            .collect();
        // Edge pseudo-normals: the sum of the normals of the faces sharing the edge.
        let mut edge_sum: std::collections::HashMap<(u32, u32), DVec3> = std::collections::HashMap::new();
        for (t, n) in triangles.iter().zip(&face_normals) {
            for (a, b) in [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])] {
                *edge_sum.entry((a.min(b), a.max(b))).or_default() += *n;
            }
        }
        let edge_normals = triangles
            .iter()
            .map(|t| [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])].map(|(a, b)| edge_sum[&(a.min(b), a.max(b))]))
            .collect();
        // Vertex pseudo-normals: angle-weighted sums.
        let mut vertex_normals = vec![DVec3::ZERO; vertices.len()];
        for (t, n) in triangles.iter().zip(&face_normals) {
            for k in 0..3 {
                let (p, q, r) =
                    (vertices[t[k] as usize], vertices[t[(k + 1) % 3] as usize], vertices[t[(k + 2) % 3] as usize]);
                let angle = (q - p).angle_between(r - p);
                if angle.is_finite() {
                    vertex_normals[t[k] as usize] += angle * *n;
                }
            }
        }
        let boxes: Vec<Aabb> = triangles.iter().map(|t| Aabb::around(&t.map(|i| vertices[i as usize]), 0.0)).collect();
        let cell = (boxes.iter().map(|b| (b.hi - b.lo).max_element()).sum::<f64>() / boxes.len() as f64).max(1e-6);
        let mut hash = SpatialHash::default();
        hash.build(&boxes, cell);
        let bounds = Aabb::around(&vertices, 0.0);
        Ok(TriMesh {
            vertices,
            triangles,
            closed,
            thickness,
            face_normals,
            edge_normals,
            vertex_normals,
            hash,
            cell,
            bounds,
        })
    }

    /// Calls `each` once with every triangle whose bounding box meets `query`.
    pub(crate) fn triangles_near(&self, query: &Aabb, mut each: impl FnMut(usize)) {
        self.hash.for_each_overlap(query, |k| each(k as usize));
    }

    /// The nearest surface point to `p` searched within `radius` (m): (distance,
    /// triangle, barycentric weights), or `None` when no triangle is that close.
    fn nearest_within(&self, p: DVec3, radius: f64) -> Option<(f64, usize, [f64; 3])> {
        let q = Aabb { lo: p - DVec3::splat(radius), hi: p + DVec3::splat(radius) };
        let mut best: Option<(f64, usize, [f64; 3])> = None;
        self.hash.for_each_overlap(&q, |k| {
            let [a, b, c] = self.triangles[k as usize].map(|i| self.vertices[i as usize]);
            let (d2, w) = point_triangle(p, a, b, c);
            if best.is_none_or(|(bd, ..)| d2 < bd * bd) {
                best = Some((d2.sqrt(), k as usize, w));
            }
        });
        best.filter(|(d, ..)| *d <= radius)
    }

    /// Signed distance of `p` from the surface (negative inside a closed mesh; an
    /// open shell's distance less half its thickness) and the outward normal, when
    /// `p` is within `reach` (m) of the surface (or, inside a closed mesh, within
    /// `reach` plus two cells of the triangle hash); `None` when it is farther away.
    #[must_use]
    pub fn distance(&self, p: DVec3, reach: f64) -> Option<(f64, DVec3)> {
        // An open shell reaches half its thickness beyond its triangles (a flat
        // mesh's bounds have no depth of their own).
        let pad = if self.closed { reach } else { reach + 0.5 * self.thickness };
        let grown = Aabb { lo: self.bounds.lo - DVec3::splat(pad), hi: self.bounds.hi + DVec3::splat(pad) };
        if !grown.overlaps(&Aabb { lo: p, hi: p }) {
            return None;
        }
        // A closed mesh also looks a little inside (two cells), where a particle
        // that penetrated by more than its reach within a step still gets pushed
        // out; deeper than that it is not seen.
        let search = if self.closed { reach + 2.0 * self.cell } else { reach + 0.5 * self.thickness };
        let (d, k, w) = self.nearest_within(p, search)?;
        let t = self.triangles[k];
        let q = w[0] * self.vertices[t[0] as usize]
            + w[1] * self.vertices[t[1] as usize]
            + w[2] * self.vertices[t[2] as usize];
        let away = p - q;
        if !self.closed {
            let n = away.try_normalize().unwrap_or(self.face_normals[k]);
            return Some((d - 0.5 * self.thickness, n));
        }
        // The feature holding the nearest point decides the side.
        let zero = |x: f64| x <= 1e-12;
        let pseudo = match (zero(w[0]), zero(w[1]), zero(w[2])) {
            (false, true, true) => self.vertex_normals[t[0] as usize],
            (true, false, true) => self.vertex_normals[t[1] as usize],
            (true, true, false) => self.vertex_normals[t[2] as usize],
            (false, false, true) => self.edge_normals[k][0],
            (true, false, false) => self.edge_normals[k][1],
            (false, true, false) => self.edge_normals[k][2],
            _ => self.face_normals[k],
        };
        let inside = away.dot(pseudo) < 0.0;
        let n = match away.try_normalize() {
            Some(u) if inside => -u,
            Some(u) => u,
            None => self.face_normals[k],
        };
        if !inside && d > reach {
            return None;
        }
        Some((if inside { -d } else { d }, n))
    }
}
