//! Scene support for rigid bodies and `[[attach]]`: the example scenes build into
//! what they say, keys reach the engine, and bad input gets located errors.

use std::path::PathBuf;

use glam::{DQuat, DVec3};
use wobble::constraint::{Collider, RigidContact};
use wobble::force::attachment::Attachment;
use wobble::model::RigidShape;
use wobble_scene::{Built, Scene, SceneError, Source};

fn scenes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenes")
}

fn build(text: &str) -> Result<Built, SceneError> {
    Scene::parse(Source::new("test.toml", text), scenes())?.build()
}

fn expect(text: &str, line: usize, column: usize, fragments: &[&str]) {
    let e = match build(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    };
    let shown = e.to_string();
    assert_eq!((e.line(), e.column()), (line, column), "wrong position in: {shown}");
    for f in fragments {
        assert!(shown.contains(f), "`{f}` missing from: {shown}");
    }
}

#[test]
fn example_scenes_build_their_rigid_bodies() {
    for (file, shape, mass) in [
        ("heavy-ball.toml", RigidShape::Sphere { radius: 0.1 }, 10.0),
        ("hanging-cube.toml", RigidShape::Box { half: DVec3::splat(0.15) }, 5.0),
        ("solid-cube.toml", RigidShape::Box { half: DVec3::splat(0.08) }, 5.0),
    ] {
        let scene = Scene::load(&scenes().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let built = scene.build().unwrap_or_else(|e| panic!("{file}: {e}"));
        let w = &built.world;
        assert_eq!(w.topology.rigids.len(), 1, "{file}");
        let r = w.topology.rigids[0];
        assert_eq!(r.shape, shape, "{file}");
        assert_eq!(w.particles.mass[r.particle], mass, "{file}");
        assert_eq!(w.particles.inertia[r.particle], shape.inertia(mass), "{file}: default inertia is the solid's");
        assert!(w.constraint_of::<RigidContact>().is_some(), "{file}: no rigid contact");
        // Ordinary colliders leave the rigid body to its own contact.
        for c in &w.constraints {
            if let Some(c) = (c.as_ref() as &dyn std::any::Any).downcast_ref::<Collider>() {
                assert!(
                    c.only.as_ref().is_some_and(|o| !o[r.particle]),
                    "{file}: collider {} acts on the body",
                    c.name
                );
            }
        }
    }
}

/// The hanging cube's 16 links join the bottom edge's middle particles to points
/// of the cube's top face straight below them, 2 cm away.
#[test]
fn hanging_cube_links_are_anchored_on_the_top_face() {
    let built = Scene::load(&scenes().join("hanging-cube.toml")).and_then(|s| s.build()).expect("scene");
    let w = &built.world;
    let a = w.force_of::<Attachment>().expect("attachment");
    assert_eq!(a.links.len(), 16);
    for l in &a.links {
        assert!((l.offset.y - 0.15).abs() < 1e-12, "anchor {} is not on the top face", l.offset);
        assert!((l.rest - 0.02).abs() < 1e-12, "rest {}", l.rest);
        let anchor = w.state.x.get(l.body) + w.state.q[l.body] * l.offset;
        let d = w.state.x.get(l.particle) - anchor;
        assert!((d - DVec3::new(0.0, 0.02, 0.0)).length() < 1e-12, "particle {} is not above its anchor", l.particle);
    }
}

#[test]
fn rigid_keys_reach_the_body() {
    let text = r#"
[[body]]
name = "b"
type = "rigid"
shape = "box"
size = [0.2, 0.4, 0.6]
mass = 3
inertia = [1, 2, 2.5]
position = [1, 2, 3]
velocity = [0, 1, 0]
angular_velocity = [0, 0, 2]
orientation = { axis = [0, 0, 1], angle = 0.5 }
restitution = 0.2
friction = 0.7
"#;
    let built = build(text).expect("scene");
    let w = &built.world;
    let i = w.topology.rigids[0].particle;
    assert_eq!(w.topology.rigids[0].shape, RigidShape::Box { half: DVec3::new(0.1, 0.2, 0.3) });
    assert_eq!(w.particles.inertia[i], DVec3::new(1.0, 2.0, 2.5));
    assert_eq!(w.state.x.get(i), DVec3::new(1.0, 2.0, 3.0));
    assert_eq!(w.state.v.get(i), DVec3::Y);
    assert_eq!(w.state.w.get(i), DVec3::new(0.0, 0.0, 2.0));
    assert!(w.state.q[i].angle_between(DQuat::from_rotation_z(0.5)) < 1e-12);
    let c = w.constraint_of::<RigidContact>().expect("contact");
    assert_eq!((c.surface.restitution, c.surface.friction), (0.2, 0.7));
}

const CLOTH: &str = "[[body]]\nname = \"cloth\"\ntype = \"cloth\"\nnx = 4\nny = 4\n";
const BALL: &str = "[[body]]\nname = \"ball\"\ntype = \"rigid\"\nshape = \"sphere\"\nradius = 0.1\n";

#[test]
fn bad_rigid_keys_get_located_errors() {
    expect(
        "[[body]]\ntype = \"rigid\"\nshape = \"sphre\"\n",
        3,
        9,
        &["unknown rigid shape `sphre`", "did you mean `sphere`?"],
    );
    expect("[[body]]\ntype = \"rigid\"\nradius = 1\n", 1, 1, &["needs `shape`"]);
    expect("[[body]]\ntype = \"rigid\"\nshape = \"box\"\nradius = 1\n", 4, 10, &["a box has no `radius`", "size"]);
    expect("[[body]]\ntype = \"rigid\"\nshape = \"sphere\"\nsize = 1\n", 4, 8, &["a sphere has no `size`"]);
    expect("[[body]]\ntype = \"rigid\"\nshape = \"box\"\nsize = [1, 0, 1]\n", 4, 8, &["must be positive"]);
    expect(
        "[[body]]\ntype = \"rigid\"\nshape = \"sphere\"\nradius = -1\n",
        4,
        10,
        &["`radius` = -1 must be positive (m)"],
    );
    expect(
        "[[body]]\ntype = \"rigid\"\nshape = \"sphere\"\nradius = 1\ninertia = [1, 1, 3]\n",
        5,
        11,
        &["inertia", "no principal moment may exceed"],
    );
    expect(
        "[[body]]\ntype = \"rigid\"\nshape = \"sphere\"\nradius = 1\nparticle_radius = 0.1\n",
        5,
        19,
        &["a rigid body has no `particle_radius`"],
    );
    expect(
        "[[body]]\ntype = \"rigid\"\nshape = \"sphere\"\nradius = 1\norientation = { axis = [0, 0, 0], angle = 1 }\n",
        5,
        24,
        &["`axis` must be a non-zero vector"],
    );
    expect(
        "[[body]]\ntype = \"rigid\"\nshape = \"sphere\"\nradius = 1\nfriction = -1\n",
        5,
        12,
        &["`friction` = -1 must be finite and ≥ 0"],
    );
}

#[test]
fn bad_attachments_get_located_errors() {
    let base = format!("{CLOTH}{BALL}");
    expect(
        &format!("{base}[[attach]]\nrigid = \"cloth\"\nbody = \"cloth\"\nselect = {{ all = true }}\n"),
        12,
        9,
        &["`cloth` is not a rigid body", "rigid bodies: ball"],
    );
    expect(
        &format!("{base}[[attach]]\nrigid = \"bal\"\nbody = \"cloth\"\nselect = {{ all = true }}\n"),
        12,
        9,
        &["`bal` is not a body"],
    );
    expect(
        &format!("{base}[[attach]]\nrigid = \"ball\"\nbody = \"ball\"\nselect = {{ all = true }}\n"),
        13,
        8,
        &["`ball` is a rigid body"],
    );
    expect(&format!("{base}[[attach]]\nrigid = \"ball\"\nbody = \"cloth\"\n"), 11, 1, &["needs `select`"]);
    expect(
        &format!(
            "{base}[[attach]]\nrigid = \"ball\"\nbody = \"cloth\"\nselect = {{ edge = [\"top\"] }}\noffsets = [[0, 0, 0]]\n"
        ),
        11,
        1,
        &["`offsets` has 1 points but the selection picks 4 particles"],
    );
    expect(
        &format!("{base}[[attach]]\nrigid = \"ball\"\nbody = \"cloth\"\nselect = {{ all = true }}\nrest = -1\n"),
        15,
        8,
        &["`rest` = -1 must be finite and ≥ 0"],
    );
    expect(
        &format!(
            "{base}[[attach]]\nrigid = \"ball\"\nbody = \"cloth\"\nselect = {{ all = true }}\nspring = {{ stifness = 1 }}\n"
        ),
        15,
        12,
        &["unknown key `stifness`"],
    );
}

#[test]
fn rigid_bodies_collide_with_each_other() {
    // Two equal balls on a collision course, no gravity, default restitution 0:
    // after the impact they move together (both stop), momentum kept, no overlap.
    let text = r#"
[simulation]
gravity = [0, 0, 0]
dt = 1e-3
[[body]]
name = "a"
type = "rigid"
shape = "sphere"
radius = 0.1
position = [0, 0, 0]
velocity = [1, 0, 0]
[[body]]
name = "b"
type = "rigid"
shape = "sphere"
radius = 0.1
position = [0.3, 0, 0]
velocity = [-1, 0, 0]
"#;
    let mut w = build(text).expect("scene").world;
    w.run(300).unwrap();
    let (a, b) = (w.topology.rigids[0].particle, w.topology.rigids[1].particle);
    let (va, vb) = (w.state.v.get(a), w.state.v.get(b));
    assert!(va.length() < 1e-9 && vb.length() < 1e-9, "velocities after an inelastic impact: {va} {vb}");
    let gap = (w.state.x.get(b) - w.state.x.get(a)).length();
    assert!(gap > 0.2 - 1e-9, "centres {gap} m apart: the balls overlap");
}

#[test]
fn equal_boxes_stacked_edge_to_edge_stay_stacked() {
    // Every corner and edge midpoint of the upper box's bottom face lies on the
    // lower box's side faces at depth 0, where a test of points alone finds no
    // depth; the separating-axis test's face contact carries the stack.
    for integrator in ["symplectic-euler", "rk4", "implicit-euler"] {
        let text = format!(
            r#"
[simulation]
dt = 1e-3
integrator = "{integrator}"
[[collider]]
type = "plane"
[[body]]
name = "low"
type = "rigid"
shape = "box"
size = 0.1
position = [0, 0.05, 0]
[[body]]
name = "high"
type = "rigid"
shape = "box"
size = 0.1
position = [0, 0.2, 0]
"#
        );
        let mut w = build(&text).expect("scene").world;
        w.run(1000).unwrap();
        let high = w.topology.rigids[1].particle;
        let y = w.state.x.get(high).y;
        assert!((y - 0.15).abs() < 2e-3, "{integrator}: the upper box's centre at {y} m, not on the lower box");
    }
}

#[test]
fn collide_false_takes_a_body_out_of_rigid_contact() {
    // A box thrown at a heavy ball (no gravity): it stops on the ball, unless
    // either has `collide = false`, when it passes through.
    let scene = |low: &str, high: &str| {
        format!(
            r#"
[simulation]
dt = 1e-3
gravity = [0, 0, 0]
[[body]]
name = "ball"
type = "rigid"
shape = "sphere"
radius = 0.1
mass = 1000
{low}
[[body]]
name = "box"
type = "rigid"
shape = "box"
size = 0.1
position = [0, 0.3, 0]
velocity = [0, -1, 0]
{high}
"#
        )
    };
    let height = |text: String| {
        let mut w = build(&text).expect("scene").world;
        w.run(1000).unwrap();
        w.state.x.get(w.topology.rigids[1].particle).y
    };
    assert!(height(scene("", "")) > 0.1, "the box should rest on the ball");
    assert!(height(scene("collide = false", "")) < -0.5, "the ball with `collide = false` still holds the box");
    assert!(height(scene("", "collide = false")) < -0.5, "the box with `collide = false` still lands on the ball");
}

#[test]
fn rigid_bodies_have_no_thickness_and_colliders_do_not_rotate() {
    let rigid = "[[body]]\ntype = \"rigid\"\nshape = \"sphere\"\nradius = 0.1\n";
    expect(&format!("{rigid}thickness = 0.01\n"), 5, 13, &["a rigid body has no `thickness`"]);
    expect(&format!("{rigid}self_collide = true\n"), 5, 16, &["a rigid body has no `self_collide`"]);
    let collider =
        "[[collider]]\ntype = \"sphere\"\nradius = 0.2\nmotion = { type = \"rotate\", axis = [0, 1, 0], rate = 1 }\n";
    expect(&format!("{rigid}{collider}"), 8, 10, &["a collider cannot rotate"]);
}

#[test]
fn rigid_bodies_that_start_overlapping_are_warned_of() {
    // Two boxes 3 cm into each other, and a ball 5 cm into a lattice.
    let text = r#"
[simulation]
dt = 1e-3
[[body]]
name = "low"
type = "rigid"
shape = "box"
size = 0.1
position = [0, 0.05, 0]
[[body]]
name = "high"
type = "rigid"
shape = "box"
size = 0.1
position = [0, 0.12, 0]
[[body]]
name = "jelly"
type = "lattice"
n = [3, 3, 3]
spacing = 0.05
origin = [1, 0, 0]
[[body]]
name = "ball"
type = "rigid"
shape = "sphere"
radius = 0.05
position = [1.05, 0.1, 0.05]
"#;
    let w = build(text).expect("scene").world;
    let find = |a: &str, b: &str| w.warnings.iter().find(|m| m.contains(&format!("`{a}` and `{b}`"))).cloned();
    let boxes = find("low", "high").unwrap_or_else(|| panic!("no warning for the boxes: {:?}", w.warnings));
    assert!(boxes.contains("3.000e-2 m"), "{boxes}");
    let ball = find("jelly", "ball").unwrap_or_else(|| panic!("no warning for the ball: {:?}", w.warnings));
    assert!(ball.contains("5.000e-2 m"), "{ball}");
    assert_eq!(w.warnings.len(), 2, "{:?}", w.warnings);
}

/// `rigid-tower.toml`: the six boxes, set exactly face to face, start without a
/// warning, stand still until the ball arrives (at 0.4 s every box is where it was
/// put to 0.1 mm sideways, lower only by the position correction's slop per contact
/// below it, turned by less than 1e-3 rad and at rest), and the ball knocks the
/// tower over (at 3 s the top box is below 0.5 m, where it started at 1.1 m), with
/// every integrator but Verlet (whose drag, 1 % of the velocity a step, stops the
/// ball 0.3 m after it sets off).
#[test]
fn the_rigid_tower_stands_until_the_ball_knocks_it_over() {
    let scene = std::fs::read_to_string(scenes().join("rigid-tower.toml")).unwrap();
    for integrator in ["symplectic-euler", "rk4", "implicit-euler", "semi-implicit"] {
        let text = scene.replace("integrator = \"symplectic-euler\"", &format!("integrator = \"{integrator}\""));
        let mut w = build(&text).expect("scene").world;
        assert!(w.warnings.is_empty(), "warnings: {:?}", w.warnings);
        let boxes: Vec<usize> = w
            .topology
            .rigids
            .iter()
            .filter(|r| matches!(r.shape, RigidShape::Box { .. }))
            .map(|r| r.particle)
            .collect();
        assert_eq!(boxes.len(), 6);
        let start: Vec<(DVec3, DQuat)> = boxes.iter().map(|&i| (w.state.x.get(i), w.state.q[i])).collect();
        w.run(400).unwrap();
        // Each contact under a box keeps the position correction's slop of overlap.
        let slop = wobble::constraint::rigid_contact::POSITION_SLOP * 0.1;
        for (k, (&i, &(x0, q0))) in boxes.iter().zip(&start).enumerate() {
            let d = w.state.x.get(i) - x0;
            let slid = DVec3::new(d.x, 0.0, d.z).length();
            assert!(slid < 1e-4, "{integrator}: box {k} slid {slid} m before the ball arrived");
            let sink = -d.y - (k + 1) as f64 * slop;
            assert!(
                sink.abs() < 0.2 * slop,
                "{integrator}: box {k} sank {} m, not its slops' {}",
                -d.y,
                (k + 1) as f64 * slop
            );
            let turned = w.state.q[i].angle_between(q0);
            assert!(turned < 1e-3, "{integrator}: box {k} turned {turned} rad before the ball arrived");
            let v = w.state.v.get(i).length();
            assert!(v < 1e-3, "{integrator}: box {k} moves at {v} m/s before the ball arrived");
        }
        w.run(2600).unwrap();
        let top = w.state.x.get(boxes[5]).y;
        assert!(top < 0.5, "{integrator}: the top box is still at {top} m: the tower stands");
    }
}
