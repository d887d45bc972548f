//! Any triangle mesh's edges as generalized springs (001 §4): one oriented particle
//! per vertex, a generalized spring per unique edge, the triangles as the surface.
//! Unlike a plain spring mesh, such a body holds its shape without extra springs.

use glam::DVec3;

use super::mesh::MeshBody;
use super::obj::ObjMesh;
use super::oriented::{default_across, generalize_springs};
use super::{BuildError, WorldBuilder, check};
use crate::force::{GeneralizedParams, SpringParams};

/// Generalized mesh body parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct GeneralizedMesh {
    /// The mesh.
    pub mesh: ObjMesh,
    /// Uniform scale applied to the file's coordinates.
    pub scale: f64,
    /// Translation applied after scaling, m.
    pub translate: DVec3,
    /// Total mass, kg, spread evenly over the vertices.
    pub mass: f64,
    /// Particle radius, m (> 0): collision radius and inertia 2/5 m r².
    pub radius: f64,
    /// The edge springs.
    pub springs: GeneralizedParams,
}

impl GeneralizedMesh {
    /// Adds the mesh as body `name` with its own generalized-spring term; returns
    /// the index of its first particle.
    pub fn build(&self, b: &mut WorldBuilder, name: &str) -> Result<usize, BuildError> {
        check(self.radius.is_finite() && self.radius > 0.0, name, "radius", self.radius, "must be positive (m)")?;
        let body = MeshBody {
            mesh: self.mesh.clone(),
            scale: self.scale,
            translate: self.translate,
            mass: self.mass,
            structural: SpringParams::linear(self.springs.stretch, self.springs.damping),
            radius: self.radius,
        };
        let first = body.build(b, name)?;
        b.make_oriented(name, first..b.particle_count(), None)?;
        let rest = b.state.clone();
        let term = generalize_springs(b, name, self.springs, &rest, default_across)?;
        b.add_force(term);
        if let Some(last) = b.topology.bodies.last_mut() {
            last.kind = "generalized-mesh".to_owned();
        }
        Ok(first)
    }
}
