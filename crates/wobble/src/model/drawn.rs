//! Surfaces drawn beside the particles, for outputs (frame files, renders, the
//! viewer): the offset vertices x + R(q) o that builders attached to oriented
//! particles (001 §4.3: a rod's tube, a sheet's thickness) and the posed shapes of
//! rigid bodies. Their vertices follow the particles, offsets first, then rigid
//! bodies, with triangles indexed accordingly; nothing in the physics reads them.

use std::ops::Range;

use glam::DVec3;

use super::rigid::rigid_surfaces;
use super::{State, Topology};

/// The drawn surfaces of a state, ready to append after the particles of a frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DrawnSurfaces {
    /// Vertex positions, m.
    pub x: Vec<DVec3>,
    /// Vertex velocities v + ω × R(q) o, m/s.
    pub v: Vec<DVec3>,
    /// The particle each vertex is attached to.
    pub particle: Vec<usize>,
    /// Triangles, indexed as in the frame: particles first, then these vertices.
    pub triangles: Vec<[u32; 3]>,
    /// Per surface: its body's name and its range in `triangles`.
    pub groups: Vec<(String, Range<usize>)>,
}

impl DrawnSurfaces {
    /// Collects every offset surface and rigid shape; empty when there are none.
    #[must_use]
    pub fn of(topology: &Topology, state: &State) -> Self {
        let mut out = Self::default();
        let n = state.len() as u32;
        for s in &topology.offsets {
            let base = n + out.x.len() as u32;
            let first_tri = out.triangles.len();
            for (k, x) in s.positions(state).into_iter().enumerate() {
                let p = s.particle[k] as usize;
                let arm = x - state.x.get(p);
                out.x.push(x);
                out.v.push(state.v.get(p) + state.w.get(p).cross(arm));
                out.particle.push(p);
            }
            out.triangles.extend(s.triangles.iter().map(|t| t.map(|i| i + base)));
            out.groups.push((format!("{}-offset", s.body), first_tri..out.triangles.len()));
        }
        // Rigid bodies: one particle each, drawn as their shape's surface; a surface
        // point moves with v + ω × (p − x).
        for r in &topology.rigids {
            let base = n + out.x.len() as u32;
            let first_tri = out.triangles.len();
            let (verts, tris) = rigid_surfaces(std::slice::from_ref(r), state, base);
            let p = r.particle;
            for x in verts {
                out.v.push(state.v.get(p) + state.w.get(p).cross(x - state.x.get(p)));
                out.x.push(x);
                out.particle.push(p);
            }
            out.triangles.extend(tris);
            let name = topology.body_of(p).map_or_else(|| format!("rigid-{p}"), |b| b.name.clone());
            out.groups.push((name, first_tri..out.triangles.len()));
        }
        out
    }
}
