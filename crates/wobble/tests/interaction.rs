//! Touching the simulation (`interact.rs`, `force/pointer.rs`) and live parameters
//! (`World::parameters`, `World::set_parameter`).

#[macro_use]
mod support;

use glam::DVec3;
use support::Rng;
use wobble::build::WorldBuilder;
use wobble::build::chain::Chain;
use wobble::build::cloth::Cloth;
use wobble::build::lattice::Lattice;
use wobble::constraint::{Collider, Shape, Surface};
use wobble::force::{DragSpringParams, Gravity, ParameterError, SpringParams};
use wobble::interact::{CursorTarget, PickTarget, ScriptedDrag};
use wobble::world::{SimParams, World};

/// Brute-force nearest particle among those with `mask[i]`.
fn nearest(w: &World, mask: &[bool], p: DVec3) -> usize {
    let mut best = (f64::INFINITY, usize::MAX);
    for (i, _) in mask.iter().enumerate().filter(|(_, m)| **m) {
        let d = w.state.x.get(i).distance(p);
        if d < best.0 {
            best = (d, i);
        }
    }
    best.1
}

#[test]
fn pick_point_returns_nearest_surface_particle() {
    // A 4 × 4 × 4 lattice has 8 interior particles that are on no surface triangle:
    // they cannot be grabbed. pick_point must return the nearest grabbable particle
    // (checked by brute force at 200 random points) and never an interior one, even
    // when asked at an interior particle's exact position.
    let mut b = WorldBuilder::new();
    let lat = Lattice { n: [4, 4, 4], spacing: 0.1, ..Lattice::default() }.build(&mut b, "box").unwrap();
    Cloth { nx: 6, ny: 6, origin: DVec3::new(0.5, 0.3, 0.0), ..Cloth::default() }.build(&mut b, "cloth").unwrap();
    let w = b.build(SimParams::default()).unwrap();
    let mask = w.pickable().to_vec();
    let interior: Vec<usize> = (1..3)
        .flat_map(|k| (1..3).flat_map(move |j| (1..3).map(move |i| (i, j, k))))
        .map(|(i, j, k)| lat.particle(i, j, k))
        .collect();
    for &i in &interior {
        assert!(!mask[i], "interior lattice particle {i} must not be pickable");
    }
    assert_eq!(mask.iter().filter(|&&m| !m).count(), 8, "only the 8 interior particles are hidden");
    for &i in &interior {
        let p = w.state.x.get(i);
        let got = w.pick_point(p).unwrap();
        assert!(mask[got], "picked a hidden particle");
        assert_close!(
            w.state.x.get(got).distance(p),
            0.1,
            1e-12,
            "nearest surface particle to interior particle {i} is one spacing away"
        );
    }
    let mut rng = Rng::new(5);
    for _ in 0..200 {
        let p = DVec3::new(rng.range(-0.2, 0.6), rng.range(-0.2, 0.6), rng.range(-0.2, 0.5));
        let got = w.pick_point(p).unwrap();
        let want = nearest(&w, &mask, p);
        assert_close!(w.state.x.get(got).distance(p), w.state.x.get(want).distance(p), 0.0, "pick_point({p:?})");
    }
}

#[test]
fn pick_ray_hits_the_front_triangle_nearest_vertex() {
    // Two parallel cloths in x–y planes at z = 0.5 (front, seen from +z) and z = 0
    // (back). A ray along −z through a point 0.2 s right and 0.1 s below particle
    // (i, j) of the front cloth hits the triangle that has (i, j) as its nearest
    // vertex; the same ray from −z along +z hits the back cloth first. A ray that
    // misses every triangle returns the particle of a chain (lines only) within the
    // tolerance of the ray, or nothing.
    let s = 0.01;
    let mut b = WorldBuilder::new();
    let front = Cloth { nx: 10, ny: 10, spacing: s, origin: DVec3::new(0.0, 0.0, 0.5), ..Cloth::default() }
        .build(&mut b, "front")
        .unwrap();
    let back =
        Cloth { nx: 10, ny: 10, spacing: s, origin: DVec3::ZERO, ..Cloth::default() }.build(&mut b, "back").unwrap();
    let chain =
        Chain { count: 5, start: DVec3::new(1.0, 0.0, 0.0), end: DVec3::new(1.0, 0.4, 0.0), ..Chain::default() }
            .build(&mut b, "rope")
            .unwrap();
    let w = b.build(SimParams::default()).unwrap();
    for (i, j) in [(0, 0), (3, 4), (7, 2), (8, 8)] {
        let p = w.state.x.get(front.particle(i, j));
        let target = DVec3::new(p.x + 0.2 * s, p.y - 0.1 * s, 0.0);
        let from_front = w.pick_ray(target + DVec3::new(0.0, 0.0, 5.0), -DVec3::Z, 1e-3);
        assert_eq!(from_front, Some(front.particle(i, j)), "ray from +z at ({i}, {j})");
        let from_back = w.pick_ray(target - DVec3::new(0.0, 0.0, 5.0), DVec3::Z, 1e-3);
        assert_eq!(from_back, Some(back.particle(i, j)), "ray from −z at ({i}, {j})");
    }
    // Rope particle 2 at (1, 0.2, 0); the ray passes 0.5 mm from it.
    let near_rope = w.pick_ray(DVec3::new(1.0005, 0.2, 3.0), -DVec3::Z, 1e-3);
    assert_eq!(near_rope, Some(chain + 2), "fallback: particle closest to the ray within tolerance");
    assert_eq!(w.pick_ray(DVec3::new(1.0005, 0.2, 3.0), DVec3::Z, 1e-3), None, "nothing in front of the origin");
    assert_eq!(w.pick_ray(DVec3::new(5.0, 5.0, 3.0), -DVec3::Z, 1e-3), None, "a ray that misses everything");
}

/// A 10 × 10 cloth hanging from its top corners under gravity.
fn hanging_cloth() -> (World, usize) {
    let mut b = WorldBuilder::new();
    let s = SpringParams::linear(500.0, 0.5);
    let h = Cloth { nx: 10, ny: 10, spacing: 0.02, structural: s, shear: Some(s), bend: Some(s), ..Cloth::default() }
        .build(&mut b, "cloth")
        .unwrap();
    b.pin(h.particle(0, 0));
    b.pin(h.particle(9, 0));
    b.add_force(Gravity::default());
    let w = b.build(SimParams { dt: 2e-4, ..SimParams::default() }).unwrap();
    (w, h.particle(5, 9))
}

#[test]
fn grabbed_particle_moves_toward_the_cursor() {
    // The drag spring pulls the grabbed particle with k (p − x) + c (u − v): moving
    // the cursor 0.2 m out of the cloth's plane must bring the particle most of the
    // way there (its distance to the cursor falls below half the initial 0.2 m within
    // 1 s, and it has moved > 5 cm along +z), while an ungrabbed cloth stays in its
    // plane (z exactly 0: nothing pushes out of plane).
    let (mut w, p) = hanging_cloth();
    let (mut control, _) = hanging_cloth();
    w.run(1000).unwrap();
    control.run(1000).unwrap();
    let start = w.state.x.get(p);
    let cursor = start + DVec3::new(0.0, 0.0, 0.2);
    w.grab(p, start);
    w.move_cursor(cursor, DVec3::ZERO);
    let mut closest = f64::INFINITY;
    for _ in 0..5000 {
        w.step().unwrap();
        closest = closest.min(w.state.x.get(p).distance(cursor));
    }
    control.run(5000).unwrap();
    let end = w.state.x.get(p);
    println!(
        "grab: distance to cursor {:.4} m → {:.4} m (closest {closest:.4}), moved {:.4} m along z",
        0.2,
        end.distance(cursor),
        end.z - start.z
    );
    assert!(
        end.distance(cursor) < 0.1,
        "the particle should approach the cursor: distance {:.4} m",
        end.distance(cursor)
    );
    assert!(
        end.z - start.z > 0.05,
        "the particle should move toward the cursor along z: Δz = {:.4} m",
        end.z - start.z
    );
    assert!(
        (0..control.state.len()).all(|i| control.state.x.get(i).z == 0.0),
        "the ungrabbed cloth must stay in its plane"
    );
    w.release();
    assert!(w.drag.grab.is_none());
}

#[test]
fn scripted_drag_grabs_at_start_and_releases_at_end() {
    // A ScriptedDrag takes, at the first step starting at t ≥ start, the grabbable
    // particle nearest its pick point; moves the cursor from that particle's position
    // by d over `ramp` seconds (cursor = x₀ + d·min((t − start)/ramp, 1)); and
    // releases at the first step starting at t ≥ end.
    let (mut w, _) = hanging_cloth();
    let (start, end, ramp) = (0.05, 0.15, 0.02);
    let pick = DVec3::new(0.1, -0.18, 0.0);
    let offset = DVec3::new(0.0, 0.0, 0.1);
    let params = DragSpringParams { stiffness: 300.0, damping: 5.0 };
    w.scripts.push(ScriptedDrag::new(start, end, PickTarget::Point(pick), CursorTarget::By(offset), ramp, params));
    let mut grabbed_at = None;
    let mut released = false;
    for _ in 0..1000 {
        let t = w.time();
        if t >= start && grabbed_at.is_none() {
            let expected = nearest(&w, w.pickable(), pick);
            grabbed_at = Some((expected, w.state.x.get(expected)));
        }
        w.step().unwrap();
        let grab = w.drag.grab;
        if t < start {
            assert!(grab.is_none(), "grabbed too early, at t = {t}");
        } else if t < end {
            let g = grab.unwrap_or_else(|| panic!("not grabbed at t = {t}"));
            let (particle, from) = grabbed_at.unwrap();
            assert_eq!(g.particle, particle, "the particle nearest the pick point at t = {start}");
            let s = ((t - start) / ramp).clamp(0.0, 1.0);
            assert_vec_close!(g.cursor, from + offset * s, 1e-12, "cursor at t = {t}");
            assert_eq!(w.drag.params, params, "the script's drag constants");
        } else {
            assert!(grab.is_none(), "still grabbed at t = {t}");
            assert!(w.scripts[0].done, "the script is marked done");
            released = true;
        }
    }
    assert!(released, "the run must pass the release time");
    let (particle, from) = grabbed_at.unwrap();
    assert!(w.state.x.get(particle).z > from.z + 1e-3, "the drag should have pulled the particle out of plane");
}

fn cloth_with_floor() -> World {
    let mut b = WorldBuilder::new();
    let s = SpringParams::linear(800.0, 2.0);
    Cloth {
        nx: 4,
        ny: 4,
        structural: s,
        shear: Some(SpringParams::linear(300.0, 1.0)),
        bend: None,
        ..Cloth::default()
    }
    .build(&mut b, "cloth")
    .unwrap();
    b.add_force(Gravity::default());
    b.add_constraint(Collider::new(
        "floor",
        Shape::Plane { point: DVec3::new(0.0, -1.0, 0.0), normal: DVec3::Y },
        Surface::default(),
    ));
    b.build(SimParams::default()).unwrap()
}

#[test]
fn parameters_are_listed_with_full_keys_and_values() {
    let w = cloth_with_floor();
    let params = w.parameters();
    let get = |key: &str| {
        params
            .iter()
            .find(|p| p.key == key)
            .unwrap_or_else(|| panic!("missing `{key}`; have {:?}", params.iter().map(|p| &p.key).collect::<Vec<_>>()))
    };
    assert_eq!(get("springs.cloth.structural.stiffness").value, 800.0);
    assert_eq!(get("springs.cloth.structural.damping").value, 2.0);
    assert_eq!(get("springs.cloth.shear.stiffness").value, 300.0);
    assert_eq!(get("gravity.g").value, 9.81);
    assert_eq!(get("drag.stiffness").value, 150.0);
    assert_eq!(get("floor.restitution").value, 0.5);
    assert!(params.iter().all(|p| !p.key.contains(".bend.")), "no bend springs, so no bend parameters");
}

#[test]
fn set_parameter_reaches_springs_whose_runs_share_their_parameters() {
    // A 16 × 16 cloth with a spacing of 1/4 m: every row and column of
    // structural springs has bit-identical rest lengths, so the kernel stores each
    // run's rest length, stiffness and damping once (and meshes of one material
    // their stiffness and damping). A changed stiffness must reach those copies:
    // doubling k doubles every force exactly.
    let mut b = WorldBuilder::new();
    Cloth {
        nx: 16,
        ny: 16,
        spacing: 0.25,
        structural: SpringParams::linear(800.0, 0.0),
        shear: None,
        bend: None,
        ..Cloth::default()
    }
    .build(&mut b, "cloth")
    .unwrap();
    let mut w = b.build(SimParams::default()).unwrap();
    for i in 0..w.state.len() {
        let x = w.state.x.get(i) * 1.25;
        w.state.x.set(i, x);
    }
    let f1 = w.current_loads().f;
    w.set_parameter("springs.cloth.structural.stiffness", 1600.0).unwrap();
    let f2 = w.current_loads().f;
    assert!((0..f1.len()).any(|i| f1.get(i).length() > 1.0), "the stretched cloth carries force");
    for i in 0..f1.len() {
        assert_vec_close!(f2.get(i), 2.0 * f1.get(i), 0.0, "particle {i}: force after doubling k");
    }
}

#[test]
fn set_parameter_changes_the_force_as_hookes_law_says() {
    // Hooke: f ∝ k at fixed geometry, and the damping force ∝ c at fixed velocity.
    // Doubling k (by a power of two, an exact scaling in floating point) must double
    // every spring force exactly; gravity g sets f = m g on every particle.
    let mut w = cloth_with_floor();
    w.set_parameter("gravity.g", 0.0).unwrap();
    w.set_parameter("springs.cloth.shear.stiffness", 0.0).unwrap();
    w.set_parameter("springs.cloth.shear.damping", 0.0).unwrap();
    w.set_parameter("springs.cloth.structural.damping", 0.0).unwrap();
    for i in 0..w.state.len() {
        let x = w.state.x.get(i) * 1.03; // stretch every spring by 3 %
        w.state.x.set(i, x);
    }
    let f1 = w.current_loads().f;
    let fmax = (0..f1.len()).map(|i| f1.get(i).length()).fold(0.0, f64::max);
    assert!(fmax > 0.1, "the stretched cloth must carry force: {fmax}");
    w.set_parameter("springs.cloth.structural.stiffness", 1600.0).unwrap();
    let f2 = w.current_loads().f;
    for i in 0..f1.len() {
        assert_vec_close!(f2.get(i), 2.0 * f1.get(i), 0.0, "particle {i}: force after doubling k");
    }
    // Damping: only relative velocity along springs; a stretch-rate field v = 0.5 x
    // gives every spring a closing speed, so the force changes with c.
    w.set_parameter("springs.cloth.structural.stiffness", 0.0).unwrap();
    for i in 0..w.state.len() {
        let v = 0.5 * w.state.x.get(i);
        w.state.v.set(i, v);
    }
    w.set_parameter("springs.cloth.structural.damping", 1.0).unwrap();
    let d1 = w.current_loads().f;
    w.set_parameter("springs.cloth.structural.damping", 4.0).unwrap();
    let d4 = w.current_loads().f;
    let dmax = (0..d1.len()).map(|i| d1.get(i).length()).fold(0.0, f64::max);
    assert!(dmax > 0.0, "damping must act on a stretching cloth");
    for i in 0..d1.len() {
        assert_vec_close!(d4.get(i), 4.0 * d1.get(i), 0.0, "particle {i}: damping force after c × 4");
    }
    // Gravity: f = m g downward.
    w.set_parameter("springs.cloth.structural.damping", 0.0).unwrap();
    w.set_parameter("gravity.g", 3.7).unwrap();
    let fg = w.current_loads().f;
    for i in 0..fg.len() {
        assert_vec_close!(fg.get(i), DVec3::new(0.0, -3.7 * w.particles.mass[i], 0.0), 1e-15, "particle {i}: m g");
    }
}

#[test]
fn unknown_or_invalid_parameters_are_rejected_with_full_keys() {
    // An unknown key — an unknown owner, or a typo inside a known one — is reported
    // as the key that was passed, with the list of keys set_parameter accepts (the
    // full keys of World::parameters). Invalid values are rejected and change nothing.
    let mut w = cloth_with_floor();
    for bad in
        ["nothing.k", "springs.cloth.structural.stifness", "springs.cloth.bend.stiffness", "gravity.h", "stiffness"]
    {
        match w.set_parameter(bad, 1.0) {
            Err(ParameterError::Unknown { key, known }) => {
                assert_eq!(key, bad, "the error names the key that was passed");
                for good in ["springs.cloth.structural.stiffness", "gravity.g", "drag.damping", "floor.friction"] {
                    assert!(known.contains(good), "`{bad}`: the known keys should include `{good}`: {known}");
                }
            }
            other => panic!("`{bad}`: expected ParameterError::Unknown, got {other:?}"),
        }
    }
    let before = w.parameters();
    for (key, value) in [
        ("springs.cloth.structural.stiffness", -1.0),
        ("floor.restitution", 1.5),
        ("gravity.g", f64::NAN),
        ("drag.damping", f64::INFINITY),
    ] {
        match w.set_parameter(key, value) {
            Err(ParameterError::Invalid { key: k, .. }) => assert_eq!(k, key, "the error names the full key"),
            other => panic!("`{key}` = {value}: expected ParameterError::Invalid, got {other:?}"),
        }
    }
    assert_eq!(w.parameters(), before, "rejected values must not change anything");
}

#[test]
fn every_published_parameter_can_be_set_by_its_key() {
    // What `World::parameters` publishes (the viewer's sliders) must be accepted by
    // `World::set_parameter` under the same key, including owners whose names hold
    // dots (a cloth's membrane term is `<cloth>.membrane`): setting each to 1.5 × its
    // value (or 0.5 when zero, within its range) must change exactly that value.
    use wobble::build::grid::ElasticGrid;
    use wobble::force::Membrane;
    let mut b = WorldBuilder::new();
    let cloth = Cloth {
        nx: 4,
        ny: 4,
        spacing: 0.05,
        membrane: Some(Membrane::from_young(1e4, 0.3)),
        shear: None,
        ..Cloth::default()
    };
    cloth.build(&mut b, "sheet").unwrap();
    ElasticGrid { n: [2, 2, 2], origin: DVec3::new(1.0, 0.0, 0.0), ..ElasticGrid::default() }
        .build(&mut b, "jelly")
        .unwrap();
    b.add_force(Gravity::default());
    b.add_constraint(Collider::new(
        "floor",
        Shape::Plane { point: DVec3::new(0.0, -1.0, 0.0), normal: DVec3::Y },
        Surface::default(),
    ));
    let mut w = b.build(SimParams::default()).unwrap();
    let params = w.parameters();
    assert!(
        params.iter().any(|p| p.key == "sheet.membrane.lame_mu"),
        "{:?}",
        params.iter().map(|p| &p.key).collect::<Vec<_>>()
    );
    for p in params {
        let target = if p.value == 0.0 { 0.5 * p.max.min(1.0) } else { (1.5 * p.value).min(p.max) };
        w.set_parameter(&p.key, target).unwrap_or_else(|e| panic!("{}: {e}", p.key));
        let now = w.parameters().into_iter().find(|q| q.key == p.key).expect("still published").value;
        assert!((now - target).abs() <= 1e-12 * target.abs().max(1.0), "{}: set {target}, reads {now}", p.key);
    }
}
