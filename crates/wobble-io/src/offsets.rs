//! Extra surfaces in frame files: [`wobble::model::DrawnSurfaces`] (offset surfaces
//! of oriented particles, rigid bodies' shapes), appended after the particles.

#[cfg(test)]
mod tests {
    use glam::{DQuat, DVec3};
    use wobble::build::WorldBuilder;
    use wobble::build::rod::{Rod, TUBE_SIDES};
    use wobble::world::SimParams;

    use crate::frames::{write_obj, write_vtk};
    use wobble::model::DrawnSurfaces;

    #[test]
    fn tube_vertices_turn_with_their_particle() {
        let rod = Rod { count: 3, tube_radius: 0.05, ..Rod::default() };
        let mut b = WorldBuilder::new();
        rod.build(&mut b, "rod").unwrap();
        let mut world = b.build(SimParams::default()).unwrap();
        let before = DrawnSurfaces::of(&world.topology, &world.state);
        assert_eq!(before.x.len(), 3 * TUBE_SIDES);
        assert_eq!(before.triangles.len(), 2 * 2 * TUBE_SIDES);
        // Twist the middle particle a quarter turn about the rod (x): its ring turns
        // with it; each vertex stays at the tube radius from its particle.
        world.state.q[1] = DQuat::from_rotation_x(std::f64::consts::FRAC_PI_2);
        world.state.w.set(1, DVec3::new(2.0, 0.0, 0.0));
        let after = DrawnSurfaces::of(&world.topology, &world.state);
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
