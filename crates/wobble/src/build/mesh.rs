//! A body from a triangle mesh (an OBJ file): one particle per vertex, a structural
//! spring per unique edge, the triangles as its surface. Faces are first turned to
//! one consistent winding and a non-manifold edge is refused
//! ([`super::mesh_check::orient`], naming OBJ vertices and lines). A mesh whose
//! every edge is shared by exactly two triangles is closed; it is wound outward and
//! its enclosed volume is reported.

use glam::DVec3;

use super::mesh_check;
use super::obj::ObjMesh;
use super::{BuildError, WorldBuilder, check, check_mass, check_spring, per_particle};
use crate::force::{SpringKind, SpringParams};
use crate::model::closed_surface_volume;

/// Mesh body parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshBody {
    /// The mesh.
    pub mesh: ObjMesh,
    /// Uniform scale applied to the file's coordinates.
    pub scale: f64,
    /// Translation applied after scaling, m.
    pub translate: DVec3,
    /// Total mass, kg, spread evenly over the vertices.
    pub mass: f64,
    /// Springs along the edges.
    pub structural: SpringParams,
    /// Collision radius, m.
    pub radius: f64,
}

pub use crate::model::edges;

impl MeshBody {
    /// Adds the mesh as body `name`; returns the index of its first particle.
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<usize, BuildError> {
        check(self.scale.is_finite() && self.scale > 0.0, name, "scale", self.scale, "must be positive")?;
        check_mass(name, "mass", self.mass)?;
        check_spring(name, "structural", &self.structural)?;
        let (first, tri_first, line_first) = (b.particle_count(), b.topology.triangles.len(), b.topology.lines.len());
        let used = {
            let mut u = vec![false; self.mesh.vertices.len()];
            for t in &self.mesh.triangles {
                for &i in t {
                    u[i as usize] = true;
                }
            }
            u
        };
        check(used.iter().all(|&u| u), name, "mesh", "vertices", "every vertex must belong to a face")?;
        let mut mesh = self.mesh.clone();
        mesh_check::orient(&mut mesh).map_err(|source| BuildError::Mesh { body: name.to_owned(), source })?;
        let m = per_particle(self.mass, mesh.vertices.len());
        for v in &mesh.vertices {
            b.add_particle(*v * self.scale + self.translate, DVec3::ZERO, m, self.radius);
        }
        let (edge_list, uses) = edges(&mesh.triangles);
        let closed = uses.iter().all(|&u| u == 2);
        let mut tris: Vec<[u32; 3]> = mesh.triangles.iter().map(|t| t.map(|i| i + first as u32)).collect();
        if closed && closed_surface_volume(&tris, &b.state.x) < 0.0 {
            for t in &mut tris {
                t.swap(1, 2);
            }
        }
        b.topology.triangles.extend(tris);
        let group = b.springs.group(name);
        let x = b.state.x.clone();
        for [p, q] in edge_list {
            let (p, q) = (first + p as usize, first + q as usize);
            check(x.get(p) != x.get(q), name, "mesh", "edge", "has two vertices at the same position")?;
            b.springs.push_at_rest(&x, p, q, self.structural, SpringKind::Structural, group);
        }
        b.add_body(name, "mesh", first, tri_first, line_first, closed)?;
        Ok(first)
    }
}
