//! Contact: narrow-phase queries against hand-computed answers, the independent
//! intersection checker on hand-made pairs, and whole worlds that must never end a
//! step with intersecting surfaces.

use glam::DVec3;
use wobble::build::WorldBuilder;
use wobble::build::cloth::Cloth;
use wobble::contact::intersect::{count_intersections, segment_crosses_triangle, triangles_intersect};
use wobble::contact::narrow::{self, PairKind};
use wobble::contact::{ContactOptions, SurfaceError};
use wobble::force::{Gravity, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::model::Vec3s;
use wobble::world::{SimParams, World};

const TOL: f64 = 1e-12;

fn v(x: f64, y: f64, z: f64) -> DVec3 {
    DVec3::new(x, y, z)
}

// ---- narrow phase: point–triangle ----

#[test]
fn point_above_triangle_interior_projects_onto_it() {
    // Triangle in z = 0; the point (0.25, 0.25, 2) projects to (0.25, 0.25, 0),
    // barycentric (0.5, 0.25, 0.25), distance 2.
    let (d2, w) = narrow::point_triangle(v(0.25, 0.25, 2.0), v(0., 0., 0.), v(1., 0., 0.), v(0., 1., 0.));
    assert!((d2 - 4.0).abs() < TOL, "squared distance {d2}");
    for (got, want) in w.iter().zip([0.5, 0.25, 0.25]) {
        assert!((got - want).abs() < TOL, "weights {w:?}");
    }
}

#[test]
fn point_beyond_an_edge_and_a_corner() {
    let (a, b, c) = (v(0., 0., 0.), v(1., 0., 0.), v(0., 1., 0.));
    // Below edge ab: closest point (0.3, 0, 0), distance √(0.5² + 1²).
    let (d2, w) = narrow::point_triangle(v(0.3, -0.5, 1.0), a, b, c);
    assert!((d2 - 1.25).abs() < TOL && (w[0] - 0.7).abs() < TOL && (w[1] - 0.3).abs() < TOL && w[2] == 0.0);
    // Beyond corner b: closest point b.
    let (d2, w) = narrow::point_triangle(v(2.0, -1.0, 0.0), a, b, c);
    assert!((d2 - 2.0).abs() < TOL && w == [0.0, 1.0, 0.0]);
    // Beyond the hypotenuse bc: closest point (0.5, 0.5, 0).
    let (d2, w) = narrow::point_triangle(v(1.0, 1.0, 0.0), a, b, c);
    assert!((d2 - 0.5).abs() < TOL && (w[1] - 0.5).abs() < TOL && (w[2] - 0.5).abs() < TOL);
}

#[test]
fn degenerate_triangle_falls_back_to_its_edges() {
    // All three corners on the x axis: the nearest point to (0.5, 1, 0) is (0.5, 0, 0).
    let (d2, w) = narrow::point_triangle(v(0.5, 1.0, 0.0), v(0., 0., 0.), v(1., 0., 0.), v(2., 0., 0.));
    assert!((d2 - 1.0).abs() < TOL, "squared distance {d2}");
    assert!(w.iter().all(|x| x.is_finite()) && (w.iter().sum::<f64>() - 1.0).abs() < TOL, "weights {w:?}");
    let p = w[0] * v(0., 0., 0.) + w[1] * v(1., 0., 0.) + w[2] * v(2., 0., 0.);
    assert!((p - v(0.5, 0.0, 0.0)).length() < TOL);
}

// ---- narrow phase: edge–edge ----

#[test]
fn crossing_edges_meet_at_their_midpoints() {
    // x axis segment at z = 0 and a y-direction segment at z = 0.3 crossing above (0.5, 0).
    let (d2, s, t) = narrow::segment_segment(v(0., 0., 0.), v(1., 0., 0.), v(0.5, -1., 0.3), v(0.5, 1., 0.3));
    assert!((d2 - 0.09).abs() < TOL && (s - 0.5).abs() < TOL && (t - 0.5).abs() < TOL, "{d2} {s} {t}");
}

#[test]
fn parallel_edges_give_their_separation() {
    // Two parallel segments 0.2 apart, overlapping in x over [0.5, 1].
    let (d2, s, t) = narrow::segment_segment(v(0., 0., 0.), v(1., 0., 0.), v(0.5, 0.2, 0.), v(1.5, 0.2, 0.));
    assert!((d2 - 0.04).abs() < TOL, "squared distance {d2}");
    let p = v(0., 0., 0.) + s * v(1., 0., 0.);
    let q = v(0.5, 0.2, 0.) + t * v(1., 0., 0.);
    assert!(((p - q).length_squared() - 0.04).abs() < TOL);
    // Collinear but apart: gap 0.5 between end and start.
    let (d2, ..) = narrow::segment_segment(v(0., 0., 0.), v(1., 0., 0.), v(1.5, 0., 0.), v(2.5, 0., 0.));
    assert!((d2 - 0.25).abs() < TOL);
}

// ---- continuous detection ----

fn ccd(kind: PairKind, x0: [DVec3; 4], x1: [DVec3; 4], eta: f64) -> Option<narrow::Hit> {
    narrow::ccd(kind, &x0, &x1, eta, &mut Vec::new())
}

#[test]
fn vertex_falling_through_a_triangle_is_caught_at_the_crossing() {
    // The vertex falls from z = 1 to z = −3 over a triangle in z = 0: it crosses at t = 0.25.
    let tri = [v(-1., -1., 0.), v(2., -1., 0.), v(-1., 2., 0.)];
    let x0 = [v(0.2, 0.2, 1.0), tri[0], tri[1], tri[2]];
    let x1 = [v(0.2, 0.2, -3.0), tri[0], tri[1], tri[2]];
    let hit = ccd(PairKind::VertexTriangle, x0, x1, 1e-6).expect("a crossing");
    assert!((hit.t - 0.25).abs() < 1e-9, "hit at t = {}", hit.t);
    // Missing the triangle sideways: no hit.
    let x0 = [v(5.0, 5.0, 1.0), tri[0], tri[1], tri[2]];
    let x1 = [v(5.0, 5.0, -3.0), tri[0], tri[1], tri[2]];
    assert!(ccd(PairKind::VertexTriangle, x0, x1, 1e-6).is_none());
}

#[test]
fn moving_triangle_sweeping_over_a_vertex_is_caught() {
    // The triangle rises from z = −1 to z = 1 through a still vertex at z = 0.5: t = 0.75.
    let tri0 = [v(-1., -1., -1.), v(2., -1., -1.), v(-1., 2., -1.)];
    let tri1 = tri0.map(|p| p + v(0., 0., 2.));
    let p = v(0.1, 0.1, 0.5);
    let hit = ccd(PairKind::VertexTriangle, [p, tri0[0], tri0[1], tri0[2]], [p, tri1[0], tri1[1], tri1[2]], 1e-6)
        .expect("a crossing");
    assert!((hit.t - 0.75).abs() < 1e-9, "hit at t = {}", hit.t);
}

#[test]
fn contact_at_the_end_of_the_step_is_a_hit() {
    // The vertex lands exactly on the triangle at t = 1.
    let tri = [v(-1., -1., 0.), v(2., -1., 0.), v(-1., 2., 0.)];
    let hit = ccd(
        PairKind::VertexTriangle,
        [v(0., 0., 1.), tri[0], tri[1], tri[2]],
        [v(0., 0., 0.), tri[0], tri[1], tri[2]],
        1e-6,
    )
    .expect("a touch at the end");
    assert!((hit.t - 1.0).abs() < 1e-12, "hit at t = {}", hit.t);
    // Stopping 1 mm short is not a hit with η = 0.1 mm.
    assert!(
        ccd(
            PairKind::VertexTriangle,
            [v(0., 0., 1.), tri[0], tri[1], tri[2]],
            [v(0., 0., 1e-3), tri[0], tri[1], tri[2]],
            1e-4
        )
        .is_none()
    );
}

#[test]
fn edges_passing_through_each_other_are_caught() {
    // Edge along x at z = 0; edge along y moving from z = 1 to z = −1: crossing at t = 0.5.
    let (a, b) = (v(-1., 0., 0.), v(1., 0., 0.));
    let x0 = [a, b, v(0., -1., 1.), v(0., 1., 1.)];
    let x1 = [a, b, v(0., -1., -1.), v(0., 1., -1.)];
    let hit = ccd(PairKind::EdgeEdge, x0, x1, 1e-6).expect("a crossing");
    assert!((hit.t - 0.5).abs() < 1e-9, "hit at t = {}", hit.t);
    assert!((hit.at.w[0] - 0.5).abs() < 1e-9 && (hit.at.w[2] + 0.5).abs() < 1e-9, "weights {:?}", hit.at.w);
    // Passing beside the first edge's end: no hit.
    let x0 = [a, b, v(3., -1., 1.), v(3., 1., 1.)];
    let x1 = [a, b, v(3., -1., -1.), v(3., 1., -1.)];
    assert!(ccd(PairKind::EdgeEdge, x0, x1, 1e-6).is_none());
}

#[test]
fn parallel_edges_moving_through_each_other_are_caught() {
    // Two parallel edges: the second moves from 1 above to 1 below the first.
    let (a, b) = (v(0., 0., 0.), v(1., 0., 0.));
    let x0 = [a, b, v(0.2, 0., 1.), v(0.8, 0., 1.)];
    let x1 = [a, b, v(0.2, 0., -1.), v(0.8, 0., -1.)];
    let hit = ccd(PairKind::EdgeEdge, x0, x1, 1e-6).expect("a crossing");
    assert!((hit.t - 0.5).abs() < 1e-6, "hit at t = {}", hit.t);
}

// ---- independent intersection checker ----

#[test]
fn checker_finds_crossing_pairs_and_passes_separate_ones() {
    let t = [v(0., 0., 0.), v(1., 0., 0.), v(0., 1., 0.)];
    // A triangle piercing t vertically through (0.2, 0.2).
    let piercing = [v(0.2, 0.2, -1.), v(0.2, 0.2, 1.), v(0.3, 0.25, 0.0)];
    assert!(triangles_intersect(t, piercing));
    // The same, shifted up so it stays above: no intersection.
    assert!(!triangles_intersect(t, piercing.map(|p| p + v(0., 0., 1.5))));
    // Parallel planes: none.
    assert!(!triangles_intersect(t, t.map(|p| p + v(0., 0., 0.01))));
    // Coplanar and overlapping: counted.
    assert!(triangles_intersect(t, t.map(|p| p + v(0.1, 0.1, 0.))));
    // Segment through the interior and beside it.
    assert!(segment_crosses_triangle(v(0.1, 0.1, 1.), v(0.1, 0.1, -1.), t));
    assert!(!segment_crosses_triangle(v(0.9, 0.9, 1.), v(0.9, 0.9, -1.), t));
    // Through the whole mesh routine: pairs sharing a vertex are skipped.
    let x = Vec3s::from_vecs(&[t[0], t[1], t[2], piercing[0], piercing[1], piercing[2]]);
    assert_eq!(count_intersections(&[[0, 1, 2], [3, 4, 5]], &[0, 1], &x, true), 1);
    assert_eq!(count_intersections(&[[0, 1, 2], [0, 4, 5]], &[0, 0], &x, true), 0);
}

// ---- whole worlds ----

fn cloth(nx: usize, origin: DVec3, spacing: f64) -> Cloth {
    let s = SpringParams::linear(400.0, 0.2);
    Cloth {
        nx,
        ny: nx,
        spacing,
        origin,
        u: DVec3::X,
        v: DVec3::Z,
        mass: 0.2,
        structural: s,
        shear: Some(s),
        bend: Some(SpringParams::linear(40.0, 0.05)),
        ..Cloth::default()
    }
}

fn intersections(world: &World) -> usize {
    let t = &world.topology;
    let groups: Vec<usize> =
        (0..t.triangles.len()).map(|k| t.bodies.iter().position(|b| b.triangles.contains(&k)).unwrap_or(0)).collect();
    count_intersections(&t.triangles, &groups, &world.state.x, true)
}

/// A cloth dropped onto a second, pinned one below it: with every integrator, the two
/// never intersect after any step, and the falling cloth comes to rest on the lower.
#[test]
fn falling_cloth_lands_on_a_pinned_cloth_without_passing_through() {
    for kind in [IntegratorKind::SymplecticEuler, IntegratorKind::Verlet, IntegratorKind::ImplicitEuler] {
        let mut b = WorldBuilder::new();
        let lower = cloth(10, v(-0.1, 0.0, -0.1), 0.02).build(&mut b, "lower").unwrap();
        for (i, j) in [(0, 0), (9, 0), (0, 9), (9, 9)] {
            b.pin(lower.particle(i, j));
        }
        cloth(8, v(-0.07, 0.05, -0.07), 0.02).build(&mut b, "upper").unwrap();
        b.add_force(Gravity::default());
        let dt = if kind == IntegratorKind::ImplicitEuler { 1e-3 } else { 5e-4 };
        let mut world = b.build(SimParams { dt, integrator: kind, ..SimParams::default() }).unwrap();
        assert!(world.warnings.is_empty(), "{:?}", world.warnings);
        let steps = (1.5 / dt) as usize;
        for step in 0..steps {
            world.step().unwrap_or_else(|e| panic!("{kind}: {e}"));
            let n = intersections(&world);
            assert_eq!(n, 0, "{kind}: {n} intersecting triangle pairs after step {}", step + 1);
        }
        // The upper cloth rests on the lower: it moves with it (the loaded hammock
        // still bounces, lightly damped) and lies just above it.
        let upper = world.topology.body("upper").unwrap().particles.clone();
        let lower = world.topology.body("lower").unwrap().particles.clone();
        let mean =
            |r: std::ops::Range<usize>, f: &dyn Fn(usize) -> DVec3| r.clone().map(f).sum::<DVec3>() / r.len() as f64;
        let dv = mean(upper.clone(), &|i| world.state.v.get(i)) - mean(lower.clone(), &|i| world.state.v.get(i));
        let min_y = |r: std::ops::Range<usize>| r.map(|i| world.state.x.get(i).y).fold(f64::INFINITY, f64::min);
        let dy = min_y(upper) - min_y(lower);
        assert!(dv.length() < 0.05, "{kind}: the cloths move apart at {dv} m/s");
        assert!(dy > 0.0 && dy < 0.02, "{kind}: upper cloth's lowest point is {dy} m above the lower's");
    }
}

/// Two cloths thrown at each other with no gravity: linear momentum is conserved by
/// the contact response to round-off.
#[test]
fn head_on_collision_conserves_momentum() {
    let mut b = WorldBuilder::new();
    let a = cloth(6, v(0.0, 0.0, 0.0), 0.02).build(&mut b, "a").unwrap();
    let c = cloth(6, v(0.01, 0.03, 0.01), 0.02).build(&mut b, "b").unwrap();
    let n_a = a.nx * a.ny;
    b.set_velocity(a.first..a.first + n_a, v(0.0, 1.0, 0.0));
    b.set_velocity(c.first..c.first + n_a, v(0.0, -1.0, 0.0));
    let mut world = b.build(SimParams { dt: 5e-4, ..SimParams::default() }).unwrap();
    let p0 = world.metrics().momentum;
    let mut hits = 0;
    for _ in 0..200 {
        world.step().unwrap();
        hits += world.last_contact().ccd_hits + world.last_contact().proximity;
        assert_eq!(intersections(&world), 0);
    }
    assert!(hits > 0, "the cloths never touched");
    let p1 = world.metrics().momentum;
    assert!((p1 - p0).length() < 1e-9, "momentum changed from {p0} to {p1}");
    // They bounced apart: a's particles are on average below b's.
    let mean_y = |r: std::ops::Range<usize>| r.clone().map(|i| world.state.x.get(i).y).sum::<f64>() / r.len() as f64;
    assert!(mean_y(0..n_a) < mean_y(n_a..2 * n_a));
}

#[test]
fn bad_thickness_is_rejected_with_a_value_that_works() {
    let mut b = WorldBuilder::new();
    cloth(6, DVec3::ZERO, 0.02).build(&mut b, "c").unwrap();
    b.set_contact("c", ContactOptions { thickness: Some(-1.0), ..ContactOptions::default() });
    let err = b.build(SimParams::default()).unwrap_err();
    assert!(matches!(err, wobble::build::BuildError::Contact(SurfaceError::BadThickness { .. })), "{err}");
    let mut b = WorldBuilder::new();
    cloth(6, DVec3::ZERO, 0.02).build(&mut b, "c").unwrap();
    b.set_contact("c", ContactOptions { thickness: Some(0.05), ..ContactOptions::default() });
    let err = b.build(SimParams::default()).unwrap_err();
    let text = err.to_string();
    match err {
        wobble::build::BuildError::Contact(SurfaceError::ThicknessTooLarge { gap, .. }) => {
            // Rest gap of a cloth with diagonals: a vertex to the far diagonal of its
            // cell, spacing / √2.
            assert!((gap - 0.02 / 2f64.sqrt()).abs() < 1e-9, "gap {gap}");
        }
        other => panic!("unexpected error {other}"),
    }
    assert!(text.contains("self_collide = false"), "{text}");
    // Without self-collision the same thickness is fine.
    let mut b = WorldBuilder::new();
    cloth(6, DVec3::ZERO, 0.02).build(&mut b, "c").unwrap();
    b.set_contact(
        "c",
        ContactOptions { thickness: Some(0.05), self_collide: Some(false), ..ContactOptions::default() },
    );
    assert!(b.build(SimParams::default()).is_ok());
}

#[test]
fn bodies_that_start_interpenetrating_get_a_warning_and_still_run() {
    let mut b = WorldBuilder::new();
    // A vertical cloth cutting through a horizontal one.
    cloth(6, v(0.0, 0.0, 0.0), 0.02).build(&mut b, "flat").unwrap();
    let mut upright = cloth(6, v(0.05, -0.05, 0.03), 0.02);
    upright.v = DVec3::Y;
    upright.build(&mut b, "upright").unwrap();
    let mut world = b.build(SimParams { dt: 5e-4, ..SimParams::default() }).unwrap();
    assert!(
        world.warnings.iter().any(|w| w.contains("`flat`") && w.contains("`upright`")),
        "warnings: {:?}",
        world.warnings
    );
    world.run(20).unwrap();
}

#[test]
fn winding_number_is_one_inside_a_closed_surface_and_zero_outside() {
    // A tetrahedron, outward wound.
    let x = Vec3s::from_vecs(&[v(0., 0., 0.), v(1., 0., 0.), v(0., 1., 0.), v(0., 0., 1.)]);
    let tris = [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]];
    let inside = wobble::contact::intersect::winding_number(v(0.1, 0.1, 0.1), &tris, &x);
    let outside = wobble::contact::intersect::winding_number(v(1.0, 1.0, 1.0), &tris, &x);
    assert!((inside - 1.0).abs() < 1e-12, "inside: {inside}");
    assert!(outside.abs() < 1e-12, "outside: {outside}");
}

/// Contact results are bit-identical for one and two threads (the parallel passes
/// concatenate their ranges' finds in order; islands are swept whole by one thread).
#[test]
fn crumple_is_bit_identical_for_one_and_two_threads() {
    // `n` × `n` crumple, `steps` steps of `dt` on `threads` threads, stepped one
    // at a time or inside `World::with_helpers` (the passes then go to fixed
    // shares).
    let run = |(n, dt, steps): (usize, f64, u32), threads: usize, helpers: bool| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut w = wobble::build::crumple::crumple_world(n, IntegratorKind::SymplecticEuler, dt, true).unwrap();
            let (mut hits, mut most_close) = (0, 0);
            let mut steps = |w: &mut wobble::World| {
                for _ in 0..steps {
                    w.step().unwrap();
                    hits += w.last_contact().ccd_hits + w.last_contact().proximity;
                    most_close = most_close.max(w.last_contact().proximity);
                }
            };
            if helpers {
                w.with_helpers(|w| steps(w))
            } else {
                steps(&mut w)
            }
            if n >= 48 {
                let pairs = w.last_contact().pairs;
                assert!(pairs >= 2 * wobble::par::MIN_BLOCK, "{pairs} pairs: too few to split the pair passes");
            }
            // Enough close pairs for the proximity response to share its islands
            // out between the threads (from 64).
            assert!(most_close >= 64, "too few close pairs to share the response out: {most_close}");
            (w.state.x.to_vecs(), w.state.v.to_vecs(), hits)
        })
    };
    let bits = |a: &[DVec3]| a.iter().flat_map(|p| p.to_array().map(f64::to_bits)).collect::<Vec<u64>>();
    // At 24 × 24 the per-particle and per-pair passes run on one thread and only
    // the full builds' joins split; at 48 × 48 (2,304 particles, two blocks of at
    // least `par::MIN_BLOCK`) every pass splits, under the helpers in fixed shares.
    const { assert!(48 * 48 >= 2 * wobble::par::MIN_BLOCK) };
    let (small, large) = ((24, 5e-4, 300), (48, 1e-4, 1500));
    let one = [run(small, 1, false), run(large, 1, false)];
    for (case, helpers, (x1, v1, h1)) in [(small, false, &one[0]), (large, false, &one[1]), (large, true, &one[1])] {
        let n = case.0;
        let (x2, v2, h2) = run(case, 2, helpers);
        assert!(*h1 > 0, "{n}: the crumple never touched itself");
        assert_eq!(*h1, h2, "{n}");
        assert!(
            bits(x1) == bits(&x2) && bits(v1) == bits(&v2),
            "{n} × {n}, helpers {helpers}: positions or velocities differ between 1 and 2 threads"
        );
    }
}

/// Two lattices started 1 cm into each other and moving apart (no gravity): one
/// warning with the overlap's depth; they separate without the fail-safe (the
/// pairs between them are out of contact until their surfaces are apart); then,
/// sent back at each other, they collide and stay apart. Before, only the
/// crossing triangles' stencils were left out of continuous detection, and the
/// particles inside the other body locked both bodies in place.
#[test]
fn interpenetrating_lattices_are_warned_once_come_apart_and_then_collide() {
    use wobble::build::lattice::Lattice;
    let mut b = WorldBuilder::new();
    let cube =
        |x: f64| Lattice { n: [3, 3, 3], spacing: 0.05, origin: v(x, 0.0, 0.0), mass: 0.1, ..Lattice::default() };
    let a = cube(0.0).build(&mut b, "a").unwrap().first;
    let c = cube(0.09).build(&mut b, "b").unwrap().first;
    b.set_velocity(a..a + 27, v(-0.1, 0.0, 0.0));
    b.set_velocity(c..c + 27, v(0.1, 0.0, 0.0));
    let mut world = b.build(SimParams { dt: 2e-4, ..SimParams::default() }).unwrap();
    assert_eq!(world.warnings.len(), 1, "warnings: {:?}", world.warnings);
    let w = &world.warnings[0];
    assert!(w.contains("`a` and `b`"), "{w}");
    let depth: f64 =
        w.split("by about ").nth(1).and_then(|t| t.split(' ').next()).unwrap().trim_end_matches(')').parse().unwrap();
    assert!((depth - 0.01).abs() < 1e-9, "depth {depth} m, the overlap is 0.01 m");
    let tris = world.contacts.surfaces.triangles.clone();
    let groups: Vec<usize> = world.contacts.surfaces.triangle_body.iter().map(|&k| k as usize).collect();
    let mut frozen = 0;
    for _ in 0..1000 {
        world.step().unwrap();
        frozen += world.last_contact().frozen;
    }
    assert_eq!(frozen, 0, "the fail-safe froze particles");
    assert_eq!(count_intersections(&tris, &groups, &world.state.x, false), 0, "still interpenetrating after 0.2 s");
    // Back at each other at 0.5 m/s: they meet and never cross.
    for i in 0..world.state.len() {
        world.state.v.set(i, v(if i < c { 0.5 } else { -0.5 }, 0.0, 0.0));
    }
    let mut touched = false;
    for step in 0..1000 {
        world.step().unwrap();
        touched |= world.last_contact().proximity > 0;
        assert_eq!(count_intersections(&tris, &groups, &world.state.x, false), 0, "crossing at step {step}");
    }
    assert!(touched, "the lattices never touched");
}

/// A non-finite position or velocity in a colliding world (the contact stage
/// relies on the step's health check, which runs before it) stops the step with
/// a blow-up naming the particle, and contact does nothing with the bad state.
#[test]
fn non_finite_state_is_reported_before_contact_acts_on_it() {
    for (case, bad) in [("position", 0), ("velocity", 1)] {
        let mut w = wobble::build::crumple::crumple_world(16, IntegratorKind::SymplecticEuler, 1e-4, true).unwrap();
        w.run(200).unwrap();
        // (The first particle: within the step the springs spread the bad value
        // to its neighbours, which come after it.)
        let i = 0;
        if bad == 0 {
            w.state.x.set(i, DVec3::new(f64::NAN, 0.0, 0.0));
        } else {
            w.state.v.set(i, DVec3::new(0.0, f64::INFINITY, 0.0));
        }
        let (before, report) = (w.contact_totals(), w.last_contact());
        match w.step() {
            Err(wobble::world::StepError::BlowUp(b)) => {
                assert_eq!(b.particle, i, "{case}: {b:?}");
                assert!(b.reason.contains("non-finite"), "{case}: {}", b.reason);
                assert_eq!(b.step, 201, "{case}");
            }
            other => panic!("{case}: expected a blow-up, got {other:?}"),
        }
        // The last contact report is still the step before's: the stage did not run.
        assert_eq!(w.last_contact(), report, "{case}: contact ran on the bad state");
        assert_eq!(format!("{:?}", w.contact_totals()), format!("{before:?}"), "{case}");
    }
}
