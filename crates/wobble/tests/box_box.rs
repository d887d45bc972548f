//! Two solid boxes: the separating-axis test and its contact manifold
//! (`wobble::contact::box_box`), and rigid boxes meeting each other, a box collider
//! and a ball collider through it, and a mesh collider's tips and ridges.
//!
//! Checked against hand-computed cases (boxes stacked face to face, a box wider
//! than the face it lies on, two ridges crossing away from their midpoints, ridges
//! that cross above each other without touching), and against an independent
//! oracle on random poses: two solid boxes overlap exactly when their surface
//! triangles intersect or one holds the other's centre. Moving a box by the reported
//! depth along the normal separates the pair; moving it by less does not.

#[macro_use]
mod support;

use glam::{DMat3, DQuat, DVec3};
use support::Rng;
use wobble::build::WorldBuilder;
use wobble::build::rigid::RigidBody;
use wobble::constraint::collider::Surface;
use wobble::constraint::rigid_contact::POSITION_SLOP;
use wobble::constraint::trimesh::TriMesh;
use wobble::constraint::{Collider, Constraint, ConstraintContext, RigidContact, Shape};
use wobble::contact::box_box::{BoxManifold, Cuboid, Feature, box_box};
use wobble::contact::intersect::triangles_intersect;
use wobble::force::Gravity;
use wobble::integrate::IntegratorKind;
use wobble::model::{Particles, RigidShape, State};
use wobble::world::{SimParams, World};

fn cuboid(centre: DVec3, q: DQuat, half: DVec3) -> Cuboid {
    Cuboid { centre, axes: DMat3::from_quat(q), half }
}

/// The box's surface triangles in world coordinates.
fn triangles(c: &Cuboid) -> Vec<[DVec3; 3]> {
    let (v, t) = RigidShape::Box { half: c.half }.surface();
    t.iter().map(|f| f.map(|i| c.centre + c.axes * v[i as usize])).collect()
}

/// True when the point lies inside the solid box (by its own coordinates).
fn holds(c: &Cuboid, p: DVec3) -> bool {
    let local = c.axes.transpose() * (p - c.centre);
    local.abs().cmplt(c.half).all()
}

/// The oracle: two solid boxes overlap when their surfaces cross or one holds the
/// other's centre (then it holds all of it, the surfaces not crossing).
fn overlap(a: &Cuboid, b: &Cuboid) -> bool {
    let (ta, tb) = (triangles(a), triangles(b));
    ta.iter().any(|&t| tb.iter().any(|&u| triangles_intersect(t, u))) || holds(a, b.centre) || holds(b, a.centre)
}

fn moved(c: &Cuboid, by: DVec3) -> Cuboid {
    Cuboid { centre: c.centre + by, ..*c }
}

fn assert_vec(measured: DVec3, expected: DVec3, tol: f64, what: &str) {
    assert!((measured - expected).length() <= tol, "{what}: measured {measured}, expected {expected}");
}

/// The contact points, sorted by x then z, for comparison with a hand-made list.
fn sorted_points(m: &BoxManifold) -> Vec<DVec3> {
    let mut p: Vec<DVec3> = m.points[..m.count].to_vec();
    p.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.z.total_cmp(&b.z)));
    p
}

/// A quarter cube (half-extent 0.25) resting 0.01 m into the top of a unit cube:
/// the unit cube's top face is the reference, the normal points from the upper box
/// down into the lower one's side (b above a gives −y), and the four corners of the
/// upper box's bottom face are the contacts, each 0.01 m deep, midway between that
/// face and the top of the lower box.
#[test]
fn a_box_pressed_into_a_face_touches_at_its_four_corners() {
    let a = cuboid(DVec3::ZERO, DQuat::IDENTITY, DVec3::splat(0.5));
    let b = cuboid(DVec3::new(0.1, 0.74, -0.05), DQuat::IDENTITY, DVec3::splat(0.25));
    let m = box_box(&a, &b).expect("they overlap");
    assert_eq!(m.feature, Feature::FaceOfA(1));
    assert_vec(m.normal, -DVec3::Y, 1e-15, "normal");
    assert_close!(m.depth, 0.01, 1e-15);
    assert_eq!(m.count, 4);
    let expected = [(-0.15, -0.3), (-0.15, 0.2), (0.35, -0.3), (0.35, 0.2)];
    for (p, (x, z)) in sorted_points(&m).iter().zip(expected) {
        assert_vec(*p, DVec3::new(x, 0.495, z), 1e-14, "contact point");
    }
    assert!(m.depths[..4].iter().all(|&d| (d - 0.01).abs() < 1e-15), "depths {:?}", &m.depths[..4]);
    // The same pair the other way round: the tie now goes to the quarter cube's
    // bottom face, the big cube's top face is clipped to it, and the contacts are
    // the same points; the normal flips.
    let m = box_box(&b, &a).expect("they overlap");
    assert_eq!(m.feature, Feature::FaceOfA(1));
    assert_vec(m.normal, DVec3::Y, 1e-15, "normal, swapped");
    assert_eq!(m.count, 4);
    for (p, (x, z)) in sorted_points(&m).iter().zip(expected) {
        assert_vec(*p, DVec3::new(x, 0.495, z), 1e-14, "contact point, swapped");
    }
}

/// A slab wider than the face it lies on is clipped to that face: contacts at the
/// face's corners under the slab, (−0.4 … 0.5) × (−0.5 … 0.5).
#[test]
fn a_wide_slab_is_clipped_to_the_face_below_it() {
    let a = cuboid(DVec3::ZERO, DQuat::IDENTITY, DVec3::splat(0.5));
    let b = cuboid(DVec3::new(0.6, 0.74, 0.0), DQuat::IDENTITY, DVec3::new(1.0, 0.25, 1.0));
    let m = box_box(&a, &b).expect("they overlap");
    assert_close!(m.depth, 0.01, 1e-15);
    assert_eq!(m.count, 4);
    let expected = [(-0.4, -0.5), (-0.4, 0.5), (0.5, -0.5), (0.5, 0.5)];
    for (p, (x, z)) in sorted_points(&m).iter().zip(expected) {
        assert_vec(*p, DVec3::new(x, 0.495, z), 1e-14, "contact point");
    }
}

/// A unit cube turned 45° about x (a ridge along x on top, at height √2/2) under
/// one turned 45° about z (a ridge along z underneath), the ridges crossing at
/// x = 0.3, z = 0.2: away from both ridges' midpoints, so no corner, edge midpoint
/// or face centre of either box lies in the other. `gap` is the vertical distance
/// between the ridges.
fn crossing_ridges(gap: f64) -> (Cuboid, Cuboid) {
    let r = std::f64::consts::FRAC_1_SQRT_2;
    let a = cuboid(DVec3::new(0.0, 0.0, 0.2), DQuat::from_rotation_x(std::f64::consts::FRAC_PI_4), DVec3::splat(0.5));
    let b = cuboid(
        DVec3::new(0.3, 2.0 * r + gap, 0.0),
        DQuat::from_rotation_z(std::f64::consts::FRAC_PI_4),
        DVec3::splat(0.5),
    );
    (a, b)
}

#[test]
fn ridges_crossing_away_from_their_midpoints_meet_edge_to_edge() {
    let r = std::f64::consts::FRAC_1_SQRT_2;
    let (a, b) = crossing_ridges(-0.01);
    let m = box_box(&a, &b).expect("the ridges overlap");
    assert!(matches!(m.feature, Feature::Edges(0, 2)), "feature {:?}", m.feature);
    assert_vec(m.normal, -DVec3::Y, 1e-12, "normal");
    assert_close!(m.depth, 0.01, 1e-12);
    assert_eq!(m.count, 1);
    assert_vec(m.points[0], DVec3::new(0.3, r - 0.005, 0.2), 1e-12, "contact point");
    // No corner, edge midpoint or face centre of one lies inside the other: a
    // point-based test sees nothing.
    for (from, to) in [(&a, &b), (&b, &a)] {
        for k in 0..27 {
            let s = DVec3::new((k % 3) as f64 - 1.0, ((k / 3) % 3) as f64 - 1.0, (k / 9) as f64 - 1.0);
            let p = from.centre + from.axes * (s * from.half);
            assert!(!holds(to, p), "support point {p} lies in the other box");
        }
    }
}

/// The same ridges 0.01 m apart: every face axis overlaps, and only the cross
/// product of the two ridge directions separates them.
#[test]
fn ridges_above_each_other_are_apart() {
    let (a, b) = crossing_ridges(0.01);
    assert!(box_box(&a, &b).is_none());
    assert!(!overlap(&a, &b), "the oracle disagrees");
    // Face-to-face contact that only touches is apart as well.
    let a = cuboid(DVec3::ZERO, DQuat::IDENTITY, DVec3::splat(0.5));
    let b = cuboid(DVec3::new(0.0, 1.0, 0.0), DQuat::IDENTITY, DVec3::splat(0.5));
    assert!(box_box(&a, &b).is_none());
}

fn random_box(rng: &mut Rng, spread: f64) -> Cuboid {
    let axis = rng.vec3(1.0).normalize_or(DVec3::X);
    let q = DQuat::from_axis_angle(axis, rng.range(0.0, std::f64::consts::TAU));
    let half = DVec3::new(rng.range(0.05, 0.5), rng.range(0.05, 0.5), rng.range(0.05, 0.5));
    cuboid(rng.vec3(spread), q, half)
}

/// On 3,000 random pairs the test agrees with the oracle; moving box a by the depth
/// (plus 1e-9 m) along the normal separates the pair, by 0.9 × the depth it does
/// not (the depth is within the tie-breaks of the shortest separating move); every
/// contact point lies within its depth of both boxes.
#[test]
fn random_pairs_agree_with_the_triangle_oracle() {
    let mut rng = Rng::new(12);
    let (mut overlapping, mut edges) = (0, 0);
    for case in 0..3000 {
        let (a, b) = (random_box(&mut rng, 0.4), random_box(&mut rng, 0.4));
        let found = box_box(&a, &b);
        assert_eq!(found.is_some(), overlap(&a, &b), "case {case}: box_box and the oracle disagree");
        let Some(m) = found else { continue };
        overlapping += 1;
        edges += usize::from(matches!(m.feature, Feature::Edges(..)));
        assert_close!(m.normal.length(), 1.0, 1e-12);
        assert!(m.depth > 0.0 && (1..=8).contains(&m.count), "case {case}: {m:?}");
        let apart = moved(&a, (m.depth + 1e-9) * m.normal);
        assert!(box_box(&apart, &b).is_none() && !overlap(&apart, &b), "case {case}: still overlapping after the push");
        let short = moved(&a, 0.9 * m.depth * m.normal);
        assert!(overlap(&short, &b), "case {case}: 0.9 × depth {} already separates", m.depth);
        for (p, depth) in m.contacts() {
            assert!(depth > 0.0 && depth <= m.depth * (1.0 + 1e-9) + 1e-12, "case {case}: point depth {depth}");
            for c in [&a, &b] {
                let (d, _) = RigidShape::Box { half: c.half }.distance(c.axes.transpose() * (p - c.centre));
                assert!(d <= m.depth + 1e-9, "case {case}: contact point {p} is {d} m outside a box");
            }
        }
    }
    // The sample reaches both kinds of contact.
    assert!(overlapping > 500 && edges > 20, "{overlapping} overlapping pairs, {edges} edge contacts");
}

fn params(dt: f64) -> SimParams {
    SimParams { dt, integrator: IntegratorKind::SymplecticEuler, verlet_drag: 0.0, constraint_iterations: 1 }
}

/// The overlap of two rigid boxes of a world, by their particles.
fn world_overlap(w: &World, i: usize, j: usize, half: DVec3) -> f64 {
    let c = |k: usize| cuboid(w.state.x.get(k), w.state.q[k], half);
    box_box(&c(i), &c(j)).map_or(0.0, |m| m.depth)
}

/// Two free unit cubes, the upper one moving down at 1 m/s with its ridge across
/// the lower one's away from the midpoints (as above, no gravity, no friction or
/// restitution): they meet edge to edge, the overlap never exceeds one step's
/// travel, the lower box is set moving, kinetic energy does not grow (the contact
/// is inelastic), and linear momentum is kept to round-off.
#[test]
fn free_boxes_meet_along_crossing_edges_and_keep_momentum() {
    let (a, b) = crossing_ridges(0.05);
    let mut builder = WorldBuilder::new();
    let body = |c: &Cuboid, v: DVec3| RigidBody {
        shape: RigidShape::Box { half: c.half },
        mass: 1.0,
        position: c.centre,
        orientation: DQuat::from_mat3(&c.axes),
        velocity: v,
        ..RigidBody::default()
    };
    let ia = body(&a, DVec3::ZERO).build(&mut builder, "a").unwrap().particle;
    let ib = body(&b, -DVec3::Y).build(&mut builder, "b").unwrap().particle;
    let mut contact = RigidContact::new(
        "boxes",
        builder.topology.rigids.clone(),
        Surface { restitution: 0.0, friction: 0.0 },
        Vec::new(),
    );
    contact.only = Some(vec![false; builder.state.len()]);
    builder.add_constraint(contact);
    let dt = 1e-3;
    let mut w = builder.build(params(dt)).unwrap();
    let energy = |w: &World| {
        [ia, ib]
            .iter()
            .map(|&i| {
                let (v, omega) = (w.state.v.get(i), w.state.w.get(i));
                0.5 * (v.length_squared() / w.particles.inv_mass[i]
                    + omega.dot(w.particles.world_inertia(i, w.state.q[i]) * omega))
            })
            .sum::<f64>()
    };
    let (p0, e0) = (w.metrics().momentum, energy(&w));
    let mut deepest = 0.0f64;
    for _ in 0..200 {
        w.run(1).unwrap();
        deepest = deepest.max(world_overlap(&w, ia, ib, a.half));
    }
    assert!(energy(&w) <= e0 * (1.0 + 1e-12), "kinetic energy grew from {e0} J to {} J", energy(&w));
    assert!(w.state.v.get(ia).y < -0.1, "the lower box was not pushed: v = {}", w.state.v.get(ia));
    assert!(deepest <= 1.0 * dt + 1e-12, "overlap reached {deepest} m");
    assert!((w.metrics().momentum - p0).length() < 1e-12, "momentum changed by {}", w.metrics().momentum - p0);
}

/// A 1 kg box (`half`, placed at `position` turned by `orientation`) falling
/// under gravity onto one fixed collider of `shape` (no restitution, friction
/// 0.5), stepped by symplectic Euler at 1 ms; returns the world and the box's
/// particle.
fn box_over_collider(half: DVec3, position: DVec3, orientation: DQuat, shape: Shape) -> (World, usize) {
    let mut builder = WorldBuilder::new();
    let body = RigidBody { shape: RigidShape::Box { half }, mass: 1.0, position, orientation, ..RigidBody::default() };
    let i = body.build(&mut builder, "box").unwrap().particle;
    let collider = Collider::new("collider", shape, Surface { restitution: 0.0, friction: 0.5 });
    builder.add_constraint(RigidContact::new(
        "contact",
        builder.topology.rigids.clone(),
        Surface::default(),
        vec![collider],
    ));
    builder.add_force(Gravity::default());
    (builder.build(params(1e-3)).unwrap(), i)
}

/// A cube falling onto a fixed box collider turned into a ridge, its own ridge
/// across, is held up edge to edge (its lowest point stays at the collider's
/// ridge to within one step's fall) instead of sinking in until a corner enters.
#[test]
fn a_box_lands_edge_first_on_a_box_collider() {
    let (ridge, b) = crossing_ridges(0.02);
    let shape = Shape::Box { center: ridge.centre, half: ridge.half, rotation: DQuat::from_mat3(&ridge.axes) };
    let (mut w, i) = box_over_collider(b.half, b.centre, DQuat::from_mat3(&b.axes), shape);
    let mut deepest = 0.0f64;
    for _ in 0..150 {
        w.run(1).unwrap();
        deepest = deepest.max(world_overlap_with(&w, i, b.half, &ridge));
    }
    assert!(deepest > 0.0, "the box never reached the ridge");
    assert!(deepest < 5e-3, "the box sank {deepest} m into the ridge");
}

fn world_overlap_with(w: &World, i: usize, half: DVec3, other: &Cuboid) -> f64 {
    box_box(&cuboid(w.state.x.get(i), w.state.q[i], half), other).map_or(0.0, |m| m.depth)
}

/// A flat box on top of a large fixed ball collider rests on its face centre, at
/// the ball's top (its centre 2 m + its half-height above the ball's), not sunk in
/// until its corners reach the ball (which would put it 0.13 m lower).
#[test]
fn a_flat_box_rests_on_a_ball_collider_at_its_face_centre() {
    let half = DVec3::new(0.5, 0.1, 0.5);
    let ball = Shape::Sphere { center: DVec3::ZERO, radius: 2.0 };
    let (mut w, i) = box_over_collider(half, DVec3::new(0.0, 2.15, 0.0), DQuat::IDENTITY, ball);
    w.run(1500).unwrap();
    assert_close!(w.state.x.get(i).y, 2.0 + half.y, 1e-3, "resting height of the box's centre");
    assert!(w.state.v.get(i).length() < 1e-2, "still moving at {}", w.state.v.get(i));
}

fn linear_momentum(p: &Particles, s: &State) -> DVec3 {
    (0..s.len()).map(|i| p.mass[i] * s.v.get(i)).sum()
}

fn angular_momentum(p: &Particles, s: &State) -> DVec3 {
    (0..s.len()).map(|i| s.x.get(i).cross(p.mass[i] * s.v.get(i)) + p.world_inertia(i, s.q[i]) * s.w.get(i)).sum()
}

/// One projection of two overlapping, moving and spinning boxes (with friction and
/// restitution; crossing ridges, a face contact and random poses): Σ m v is
/// unchanged to round-off, and the angular momentum about the origin changes only
/// by the position correction that moves and turns them apart at unchanged
/// velocities, Σ Δxᵢ × mᵢ vᵢ + Σ ΔIᵢ ωᵢ (the impulses, equal and opposite at each
/// contact point, leave it unchanged); the correction moves the pair's mass
/// centre nowhere.
#[test]
fn a_box_pair_projection_keeps_momentum() {
    let mut rng = Rng::new(7);
    let mut pairs = vec![crossing_ridges(-0.01)];
    pairs.push((
        cuboid(DVec3::ZERO, DQuat::IDENTITY, DVec3::splat(0.5)),
        cuboid(DVec3::new(0.1, 0.74, -0.05), DQuat::from_rotation_y(0.3), DVec3::splat(0.25)),
    ));
    while pairs.len() < 40 {
        let (a, b) = (random_box(&mut rng, 0.3), random_box(&mut rng, 0.3));
        if box_box(&a, &b).is_some() {
            pairs.push((a, b));
        }
    }
    for (case, (a, b)) in pairs.iter().enumerate() {
        let mut builder = WorldBuilder::new();
        let mut body = |c: &Cuboid, mass: f64, rng: &mut Rng, name: &str| {
            RigidBody {
                shape: RigidShape::Box { half: c.half },
                mass,
                position: c.centre,
                orientation: DQuat::from_mat3(&c.axes),
                velocity: rng.vec3(2.0),
                angular_velocity: rng.vec3(3.0),
                ..RigidBody::default()
            }
            .build(&mut builder, name)
            .unwrap()
            .particle
        };
        let ia = body(a, 1.5, &mut rng, "a");
        let ib = body(b, 4.0, &mut rng, "b");
        let mut c = RigidContact::new(
            "boxes",
            builder.topology.rigids.clone(),
            Surface { restitution: 0.3, friction: 0.5 },
            Vec::new(),
        );
        c.only = Some(vec![false; builder.state.len()]);
        let (p, s) = (&builder.particles, &mut builder.state);
        let (x0, v0) = ([s.x.get(ia), s.x.get(ib)], [s.v.get(ia), s.v.get(ib)]);
        let (q0, w0) = ([s.q[ia], s.q[ib]], [s.w.get(ia), s.w.get(ib)]);
        let (p0, l0) = (linear_momentum(p, s), angular_momentum(p, s));
        let scale = p.mass[ia] * v0[0].length() + p.mass[ib] * v0[1].length() + l0.length();
        c.project(&ConstraintContext { particles: p, t: 0.0, h: 1e-3 }, s);
        assert!(c.contacts >= 1, "case {case}: no contact");
        assert_vec_close!(linear_momentum(p, s), p0, 1e-13 * scale, "case {case}: linear momentum");
        let shift = [s.x.get(ia) - x0[0], s.x.get(ib) - x0[1]];
        assert_vec_close!(
            p.mass[ia] * shift[0] + p.mass[ib] * shift[1],
            DVec3::ZERO,
            1e-14,
            "case {case}: mass centre moved"
        );
        // The position correction moved and turned the boxes without changing
        // their velocities: L changes by Σ Δxᵢ × mᵢ vᵢ + Σ (Iᵢ(q') − Iᵢ(q)) ωᵢ.
        let translation = shift[0].cross(p.mass[ia] * v0[0]) + shift[1].cross(p.mass[ib] * v0[1]);
        let turn: DVec3 = [(ia, q0[0], w0[0]), (ib, q0[1], w0[1])]
            .iter()
            .map(|&(i, q, omega)| (p.world_inertia(i, s.q[i]) - p.world_inertia(i, q)) * omega)
            .sum();
        assert_vec_close!(
            angular_momentum(p, s),
            l0 + translation + turn,
            1e-13 * scale,
            "case {case}: angular momentum"
        );
    }
}

/// A closed mesh: a square pyramid (base 1 m at y = 0, apex at 0.5 m) or a
/// triangular prism lying along z (the same cross-section, 1 m long), its ridge at
/// y = 0.5 m.
fn peak(ridge: bool) -> TriMesh {
    let (vertices, triangles) = if ridge {
        let v = [(-0.5, 0.0), (0.5, 0.0), (0.0, 0.5)];
        let vertices: Vec<DVec3> =
            [-0.5, 0.5].iter().flat_map(|&z| v.iter().map(move |&(x, y)| DVec3::new(x, y, z))).collect();
        (vertices, vec![[0, 2, 1], [3, 4, 5], [0, 1, 4], [0, 4, 3], [1, 2, 5], [1, 5, 4], [2, 0, 3], [2, 3, 5]])
    } else {
        let vertices = vec![
            DVec3::new(-0.5, 0.0, -0.5),
            DVec3::new(0.5, 0.0, -0.5),
            DVec3::new(0.5, 0.0, 0.5),
            DVec3::new(-0.5, 0.0, 0.5),
            DVec3::new(0.0, 0.5, 0.0),
        ];
        (vertices, vec![[0, 1, 2], [0, 2, 3], [0, 4, 1], [1, 4, 2], [2, 4, 3], [3, 4, 0]])
    };
    let mesh = TriMesh::new(vertices, triangles, 0.0).expect("mesh");
    assert!(mesh.closed);
    mesh
}

/// A flat box (0.6 × 0.1 × 0.6 m) dropped level from 2 cm above a mesh collider's
/// tip (a pyramid's apex) or ridge (a prism's, across the box's middle, the box
/// 0.15 m off the ridge's middle along it) is held by them: 0.5 s later its
/// bottom face is still at the tip's height (to 5 mm), instead of sunk until its
/// corners reach the slopes (0.09 m lower, as with corners alone). On the ridge it
/// also stays level along the ridge, to 1e-5: it is held along a line (one contact
/// point on the ridge rocks it by about 1e-4).
#[test]
fn a_box_lands_on_a_mesh_tip_and_ridge() {
    let half = DVec3::new(0.3, 0.05, 0.3);
    for ridge in [false, true] {
        let position = DVec3::new(0.0, 0.5 + half.y + 0.02, if ridge { 0.15 } else { 0.0 });
        let shape = Shape::Mesh(std::sync::Arc::new(peak(ridge)));
        let (mut w, i) = box_over_collider(half, position, DQuat::IDENTITY, shape);
        w.run(500).unwrap();
        let (x, q) = (w.state.x.get(i), w.state.q[i]);
        // The box's bottom face centre, and how far the face has turned.
        let bottom = x - half.y * (q * DVec3::Y);
        let label = if ridge { "ridge" } else { "tip" };
        assert!((bottom.y - 0.5).abs() < 5e-3, "{label}: bottom face centre at y = {} m", bottom.y);
        if ridge {
            let lean = (q * DVec3::Y).z.abs();
            assert!(lean < 1e-5, "ridge: the box tipped along the ridge (sin = {lean})");
        }
    }
}

/// Four 0.2 m cubes, each turned a little about y and set 1 cm off the one below
/// (and 1 mm above it), with a floor.
fn box_stack() -> (World, Vec<(usize, DVec3)>) {
    let half = DVec3::splat(0.1);
    let mut builder = WorldBuilder::new();
    let mut start = Vec::new();
    for k in 0..4 {
        let position = DVec3::new(0.01 * k as f64, 0.1 + 0.201 * k as f64, -0.005 * k as f64);
        let body = RigidBody {
            shape: RigidShape::Box { half },
            mass: 2.0,
            position,
            orientation: DQuat::from_rotation_y(0.05 * k as f64),
            ..RigidBody::default()
        };
        start.push((body.build(&mut builder, &format!("box {k}")).unwrap().particle, position));
    }
    let floor = Collider::new(
        "floor",
        Shape::Plane { point: DVec3::ZERO, normal: DVec3::Y },
        Surface { restitution: 0.0, friction: 0.6 },
    );
    builder.add_constraint(RigidContact::new(
        "contact",
        builder.topology.rigids.clone(),
        Surface { restitution: 0.0, friction: 0.6 },
        vec![floor],
    ));
    builder.add_force(Gravity::default());
    (builder.build(params(1e-3)).unwrap(), start)
}

/// A stack of boxes interrupted after 150 steps and resumed from its checkpoint
/// in a freshly built world continues bit for bit as the uninterrupted run (the
/// contacts' warm start is part of the checkpoint).
#[test]
fn a_resumed_box_stack_continues_bit_for_bit() {
    let (mut whole, _) = box_stack();
    whole.run(300).unwrap();
    let (mut first, _) = box_stack();
    first.run(150).unwrap();
    let saved = first.save_state();
    let (mut resumed, _) = box_stack();
    resumed.restore_state(&saved).expect("restore");
    resumed.run(150).unwrap();
    assert_eq!(resumed.save_state(), whole.save_state(), "the resumed run differs");
    // Cut short, the saved state is refused and the world is left as it was.
    let (mut other, _) = box_stack();
    let before = other.save_state();
    assert!(other.restore_state(&saved[..saved.len() - 4]).is_err());
    assert_eq!(other.save_state(), before);
}

/// Four 0.2 m cubes stacked on the floor, each turned a little about y and set
/// 1 cm off the one below (and 1 mm above it), settle into a stack: after two
/// seconds every centre is at its resting height (2k + 1) × 0.1 m less the
/// position correction's slop per contact below it (to a fifth of the slop),
/// every cube level to 1e-3 rad and at rest (|v| < 1e-5 m/s, |ω| < 1e-4 rad/s),
/// and none has slid 0.1 mm from where it was put. (With each step's contacts
/// resolved from zero impulses and the overlap taken out by translation alone,
/// the same stack rocked ever more, tilting 0.26 rad after two seconds.)
#[test]
fn a_stack_of_four_boxes_settles_and_stays() {
    let half = DVec3::splat(0.1);
    let (mut w, start) = box_stack();
    w.run(2000).unwrap();
    // Each contact below a cube keeps the position correction's slop of overlap.
    let slop = POSITION_SLOP * half.y;
    for (k, &(i, from)) in start.iter().enumerate() {
        let (x, q) = (w.state.x.get(i), w.state.q[i]);
        let rest = 0.1 + 0.2 * k as f64 - (k + 1) as f64 * slop;
        assert_close!(x.y, rest, 0.2 * slop, "box {k}: resting height");
        let tilt = (q * DVec3::Y).angle_between(DVec3::Y);
        assert!(tilt < 1e-3, "box {k}: tilted by {tilt} rad");
        let slid = DVec3::new(x.x - from.x, 0.0, x.z - from.z).length();
        assert!(slid < 1e-4, "box {k}: slid {slid} m");
        let (v, omega) = (w.state.v.get(i).length(), w.state.w.get(i).length());
        assert!(v < 1e-5 && omega < 1e-4, "box {k}: still moving, |v| = {v} m/s, |ω| = {omega} rad/s");
    }
}
