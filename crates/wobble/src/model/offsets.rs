//! Offset surfaces (001 §4.3): geometry drawn around oriented particles.
//!
//! A rod of oriented particles is a line; drawn as a tube, each particle carries a
//! ring of vertices at fixed offsets o in its own frame, placed at x + R(q) o. A
//! sheet is drawn thick the same way (a vertex above and one below each particle).
//! The surface turns with the particles, so a twisted rod's tube shows the twist.
//! It is data for outputs only: no force or constraint reads it.

use glam::DVec3;

use super::State;

/// Vertices at offsets from oriented particles, and triangles over them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OffsetSurface {
    /// The body it draws.
    pub body: String,
    /// For each vertex, the particle it is attached to.
    pub particle: Vec<u32>,
    /// For each vertex, its offset in the particle's frame, m.
    pub offset: Vec<DVec3>,
    /// Triangles over the vertices (indices into `particle`/`offset`),
    /// counter-clockwise seen from outside.
    pub triangles: Vec<[u32; 3]>,
}

impl OffsetSurface {
    /// An empty surface for `body`.
    #[must_use]
    pub fn new(body: &str) -> Self {
        Self { body: body.to_owned(), ..Self::default() }
    }

    /// Adds a vertex at `offset` (m, world frame of the rest shape) from particle
    /// `p`, whose rest orientation is `q_rest`; returns its index.
    pub fn push(&mut self, p: usize, offset_world: DVec3, q_rest: glam::DQuat) -> u32 {
        self.particle.push(p as u32);
        self.offset.push(q_rest.inverse() * offset_world);
        (self.particle.len() - 1) as u32
    }

    /// Number of vertices.
    #[must_use]
    pub fn len(&self) -> usize {
        self.particle.len()
    }

    /// True when the surface has no vertices.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.particle.is_empty()
    }

    /// Vertex positions at `state`: x_p + R(q_p) o, m.
    #[must_use]
    pub fn positions(&self, state: &State) -> Vec<DVec3> {
        self.particle
            .iter()
            .zip(&self.offset)
            .map(|(&p, &o)| {
                let p = p as usize;
                state.x.get(p) + state.q[p] * o
            })
            .collect()
    }
}
