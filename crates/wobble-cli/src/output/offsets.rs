//! Extra surfaces in frame files: the offset vertices x + R(q) o that builders
//! attached to oriented particles (001 §4.3: a rod's tube, a sheet's thickness) and
//! the posed surfaces of rigid bodies, appended after the particles with their
//! triangles, so a frame shows the drawn shape.

use std::ops::Range;

use glam::DVec3;
use wobble::World;
use wobble::model::rigid::rigid_surfaces;

/// The offset surfaces of a world at its current state, ready to append to a frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OffsetGeometry {
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

impl OffsetGeometry {
    /// Collects every offset surface of `world`; empty when it has none.
    #[must_use]
    pub fn of(world: &World) -> Self {
        let mut out = Self::default();
        let n = world.state.len() as u32;
        for s in &world.topology.offsets {
            let base = n + out.x.len() as u32;
            let first_tri = out.triangles.len();
            for (k, x) in s.positions(&world.state).into_iter().enumerate() {
                let p = s.particle[k] as usize;
                let arm = x - world.state.x.get(p);
                out.x.push(x);
                out.v.push(world.state.v.get(p) + world.state.w.get(p).cross(arm));
                out.particle.push(p);
            }
            out.triangles.extend(s.triangles.iter().map(|t| t.map(|i| i + base)));
            out.groups.push((format!("{}-offset", s.body), first_tri..out.triangles.len()));
        }
        // Rigid bodies: one particle each, drawn as their shape's surface; a surface
        // point moves with v + ω × (p − x).
        for r in &world.topology.rigids {
            let base = n + out.x.len() as u32;
            let first_tri = out.triangles.len();
            let (verts, tris) = rigid_surfaces(std::slice::from_ref(r), &world.state, base);
            let p = r.particle;
            for x in verts {
                out.v.push(world.state.v.get(p) + world.state.w.get(p).cross(x - world.state.x.get(p)));
                out.x.push(x);
                out.particle.push(p);
            }
            out.triangles.extend(tris);
            let name = world.topology.body_of(p).map_or_else(|| format!("rigid-{p}"), |b| b.name.clone());
            out.groups.push((name, first_tri..out.triangles.len()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use glam::{DQuat, DVec3};
    use wobble::build::WorldBuilder;
    use wobble::build::rod::{Rod, TUBE_SIDES};
    use wobble::world::SimParams;

    use super::OffsetGeometry;
    use crate::output::frames::{write_obj, write_vtk};

    #[test]
    fn tube_vertices_turn_with_their_particle() {
        let rod = Rod { count: 3, tube_radius: 0.05, ..Rod::default() };
        let mut b = WorldBuilder::new();
        rod.build(&mut b, "rod").unwrap();
        let mut world = b.build(SimParams::default()).unwrap();
        let before = OffsetGeometry::of(&world);
        assert_eq!(before.x.len(), 3 * TUBE_SIDES);
        assert_eq!(before.triangles.len(), 2 * 2 * TUBE_SIDES);
        // Twist the middle particle a quarter turn about the rod (x): its ring turns
        // with it; each vertex stays at the tube radius from its particle.
        world.state.q[1] = DQuat::from_rotation_x(std::f64::consts::FRAC_PI_2);
        world.state.w.set(1, DVec3::new(2.0, 0.0, 0.0));
        let after = OffsetGeometry::of(&world);
        for k in 0..after.x.len() {
            let p = after.particle[k];
            let arm = after.x[k] - world.state.x.get(p);
            assert!((arm.length() - 0.05).abs() < 1e-15, "vertex {k} at {} m", arm.length());
            if p == 1 {
                let expected =
                    DQuat::from_rotation_x(std::f64::consts::FRAC_PI_2) * (before.x[k] - world.state.x.get(p));
                assert!((arm - expected).length() < 1e-15, "vertex {k} must turn with particle 1");
                // v = ω × arm for a particle at rest spinning at ω.
                assert!((after.v[k] - DVec3::new(2.0, 0.0, 0.0).cross(arm)).length() < 1e-15);
            }
        }
        let mut obj = Vec::new();
        write_obj(&world, &mut obj).unwrap();
        let obj = String::from_utf8(obj).unwrap();
        assert!(obj.contains("o rod-offset"));
        assert_eq!(obj.lines().filter(|l| l.starts_with("v ")).count(), 3 + 3 * TUBE_SIDES);
        let mut vtk = Vec::new();
        write_vtk(&world, &mut vtk).unwrap();
        let vtk = String::from_utf8(vtk).unwrap();
        assert!(vtk.contains(&format!("POINTS {} double", 3 + 3 * TUBE_SIDES)));
    }
}
