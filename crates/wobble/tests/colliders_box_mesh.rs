//! Box and triangle-mesh colliders against hand-computed distances, and particles
//! resting on them.

use std::sync::Arc;

use glam::{DQuat, DVec3};
use wobble::build::WorldBuilder;
use wobble::constraint::collider::{Shape, Surface};
use wobble::constraint::{Collider, TriMesh};
use wobble::force::Gravity;
use wobble::world::SimParams;

const TOL: f64 = 1e-12;

fn v(x: f64, y: f64, z: f64) -> DVec3 {
    DVec3::new(x, y, z)
}

fn boxed(rotation: DQuat) -> Collider {
    Collider::new("box", Shape::Box { center: v(1.0, 0.0, 0.0), half: v(0.5, 0.25, 1.0), rotation }, Surface::default())
}

#[test]
fn box_distance_outside_at_an_edge_and_inside() {
    let c = boxed(DQuat::IDENTITY);
    // Above the top face: 0.75 − 0.25 = 0.5, normal +y.
    let (d, n) = c.distance(v(1.2, 0.75, 0.3), 0.0);
    assert!((d - 0.5).abs() < TOL && (n - DVec3::Y).length() < TOL, "{d} {n}");
    // Beyond the +x/+y edge: (0.3, 0.4) away → 0.5, normal (0.6, 0.8, 0).
    let (d, n) = c.distance(v(1.8, 0.65, 0.0), 0.0);
    assert!((d - 0.5).abs() < TOL && (n - v(0.6, 0.8, 0.0)).length() < TOL, "{d} {n}");
    // Inside, nearest the top face (0.05 below it).
    let (d, n) = c.distance(v(1.0, 0.2, 0.0), 0.0);
    assert!((d + 0.05).abs() < TOL && (n - DVec3::Y).length() < TOL, "{d} {n}");
}

#[test]
fn rotated_box_turns_its_normals() {
    // Turned 90° about z: the box's x axis points along world y; its half-extent
    // along world y is now 0.5.
    let c = boxed(DQuat::from_rotation_z(std::f64::consts::FRAC_PI_2));
    let (d, n) = c.distance(v(1.0, 1.5, 0.0), 0.0);
    assert!((d - 1.0).abs() < 1e-12 && (n - DVec3::Y).length() < 1e-12, "{d} {n}");
}

#[test]
fn particle_dropped_on_a_box_rests_on_its_top_face() {
    let mut b = WorldBuilder::new();
    b.add_particle(v(1.1, 1.0, 0.2), DVec3::ZERO, 1.0, 0.01);
    b.add_force(Gravity::default());
    b.add_constraint(boxed(DQuat::IDENTITY));
    let mut w = b.build(SimParams { dt: 1e-3, ..SimParams::default() }).unwrap();
    w.run(2000).unwrap();
    let x = w.state.x.get(0);
    // Top face at y = 0.25, particle radius 0.01.
    assert!((x.y - 0.26).abs() < 1e-3, "rests at y = {}", x.y);
    assert!(w.state.v.get(0).length() < 1e-2);
}

/// A regular tetrahedron (outward wound) and one open triangle.
fn tetra() -> TriMesh {
    let vs = vec![v(0., 0., 0.), v(1., 0., 0.), v(0., 1., 0.), v(0., 0., 1.)];
    TriMesh::new(vs, vec![[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], 0.0).unwrap()
}

#[test]
fn closed_mesh_distance_is_signed_by_its_pseudo_normals() {
    let m = tetra();
    assert!(m.closed);
    // Below the face 0-2-1, which lies in the plane z = 0.
    let (d, n) = m.distance(v(0.2, 0.2, -0.3), 1.0).unwrap();
    assert!((d - 0.3).abs() < TOL && (n + DVec3::Z).length() < TOL, "{d} {n}");
    // Inside, 0.1 from the z = 0 face and farther from the others.
    let (d, n) = m.distance(v(0.2, 0.2, 0.1), 1.0).unwrap();
    assert!((d + 0.1).abs() < TOL && (n + DVec3::Z).length() < TOL, "{d} {n}");
    // Outside beyond the vertex at the origin: nearest point is the vertex.
    let (d, _) = m.distance(v(-0.1, -0.1, -0.1), 1.0).unwrap();
    assert!((d - 3f64.sqrt() * 0.1).abs() < TOL, "{d}");
    // Outside near the slanted face's edge between faces: positive.
    let (d, _) = m.distance(v(0.6, 0.6, -0.01), 1.0).unwrap();
    assert!(d > 0.0, "{d}");
    // Wound inward, the mesh is turned outward on construction: same answer.
    let vs = vec![v(0., 0., 0.), v(1., 0., 0.), v(0., 1., 0.), v(0., 0., 1.)];
    let inward = TriMesh::new(vs, vec![[0, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 2]], 0.0).unwrap();
    let (d, _) = inward.distance(v(0.2, 0.2, 0.1), 1.0).unwrap();
    assert!((d + 0.1).abs() < TOL, "{d}");
}

#[test]
fn open_triangle_is_a_two_sided_shell() {
    let m = TriMesh::new(vec![v(0., 0., 0.), v(1., 0., 0.), v(0., 1., 0.)], vec![[0, 1, 2]], 0.02).unwrap();
    assert!(!m.closed);
    for (z, n) in [(0.1, DVec3::Z), (-0.1, -DVec3::Z)] {
        let (d, got) = m.distance(v(0.2, 0.2, z), 1.0).unwrap();
        assert!((d - (0.1 - 0.01)).abs() < TOL && (got - n).length() < TOL, "side {z}: {d} {got}");
    }
    assert!(m.distance(v(0.2, 0.2, 5.0), 0.5).is_none());
    // A point within the shell of a flat mesh is seen with no reach of its own
    // (the mesh's bounds are flat; the shell is not).
    let (d, n) = m.distance(v(0.2, 0.2, 0.004), 0.0).expect("inside the shell");
    assert!((d - (0.004 - 0.01)).abs() < TOL && (n - DVec3::Z).length() < TOL, "{d} {n}");
}

#[test]
fn particle_without_radius_lands_on_a_flat_open_mesh() {
    let square = TriMesh::new(
        vec![v(0., 0., 0.), v(1., 0., 0.), v(1., 0., 1.), v(0., 0., 1.)],
        vec![[0, 1, 2], [0, 2, 3]],
        0.01,
    )
    .unwrap();
    let mut b = WorldBuilder::new();
    b.add_particle(v(0.3, 0.1, 0.4), DVec3::ZERO, 1.0, 0.0);
    b.add_force(Gravity::default());
    let surface = Surface { restitution: 0.0, ..Surface::default() };
    b.add_constraint(Collider::new("square", Shape::Mesh(Arc::new(square)), surface));
    let mut w = b.build(SimParams { dt: 2e-4, ..SimParams::default() }).unwrap();
    w.run(2000).unwrap();
    // Rests on the shell's upper face, half the thickness above the triangles.
    let x = w.state.x.get(0);
    assert!((x.y - 0.005).abs() < 1e-4, "at {x}");
    assert!(w.state.v.get(0).length() < 1e-2, "still moving: {}", w.state.v.get(0));
}

#[test]
fn mesh_queries_match_brute_force_on_the_bunny() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenes/meshes/bunny.obj")).unwrap();
    let obj = wobble::build::obj::parse(&text).unwrap();
    let vs: Vec<DVec3> = obj.vertices.iter().map(|p| *p * 0.03).collect();
    let m = TriMesh::new(vs.clone(), obj.triangles.clone(), 0.0).unwrap();
    assert!(m.closed, "the bunny mesh is closed");
    let mut seed = 7u64;
    let mut rnd = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let reach = 0.02;
    let mut checked = 0;
    for _ in 0..400 {
        let p = v(rnd() * 0.36 - 0.18, rnd() * 0.32 - 0.01, rnd() * 0.26 - 0.13);
        // Brute force: nearest distance over every triangle.
        let brute = m
            .triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| m.vertices[i as usize]);
                wobble::contact::narrow::point_triangle(p, a, b, c).0.sqrt()
            })
            .fold(f64::INFINITY, f64::min);
        let inside =
            wobble::contact::intersect::winding_number(p, &m.triangles, &wobble::model::Vec3s::from_vecs(&m.vertices))
                > 0.5;
        if brute > reach {
            continue;
        }
        let (d, _) = m.distance(p, reach).expect("within reach");
        let want = if inside { -brute } else { brute };
        assert!((d - want).abs() < 1e-12, "at {p}: hash {d}, brute force {want}");
        checked += 1;
    }
    assert!(checked > 20, "only {checked} points near the surface");
}

#[test]
fn mesh_collider_stops_a_falling_particle() {
    let mut b = WorldBuilder::new();
    b.add_particle(v(0.2, 0.2, 1.0), DVec3::ZERO, 1.0, 0.01);
    b.add_force(Gravity::default());
    b.add_constraint(Collider::new("tetra", Shape::Mesh(Arc::new(tetra())), Surface::default()));
    let mut w = b.build(SimParams { dt: 1e-3, ..SimParams::default() }).unwrap();
    w.run(1500).unwrap();
    // Lands on the slanted face x + y + z = 1 and slides down it; it never goes inside.
    let x = w.state.x.get(0);
    assert!(x.x + x.y + x.z > 1.0 - 1e-6 || x.z < 0.0 || x.x < 0.0 || x.y < 0.0, "inside the tetrahedron at {x}");
}
