//! The thesis's bodies in scene files (004; `src/twolayer.rs`): defaults are the
//! thesis's, every example scene with a two-layer body keeps its inner particles
//! inside the outer layer for its whole run, colliders skip inner particles, and
//! bad keys get located errors with advice.

use std::path::PathBuf;

use wobble::force::pressure::ClosedSurface;
use wobble_scene::{Built, Scene, SceneError, Source};

fn scenes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenes")
}

fn build(text: &str) -> Result<Built, SceneError> {
    Scene::parse(Source::new("test.toml", text), scenes())?.build()
}

/// Inner particles of every two-layer body that are outside its outer surface
/// (winding number ≤ ½), as (particle, winding number).
fn escaped(built: &Built) -> Vec<(usize, f64)> {
    let w = &built.world;
    let mut out = Vec::new();
    for (k, body) in built.bodies.iter().enumerate() {
        if body.inner.is_empty() {
            continue;
        }
        let tb = &w.topology.bodies[k];
        let surface = if tb.triangles.is_empty() {
            ClosedSurface::Loop(w.topology.lines[tb.lines.clone()].to_vec())
        } else {
            ClosedSurface::Triangles(w.topology.triangles[tb.triangles.clone()].to_vec())
        };
        out.extend(
            body.inner
                .clone()
                .map(|i| (i, surface.winding_number(&w.state.x, w.state.x.get(i))))
                .filter(|&(_, wn)| wn <= 0.5),
        );
    }
    out
}

#[test]
fn inner_particles_never_end_outside_the_outer_layer_in_the_example_scenes() {
    // 004 §4.6: the inner layer's boundary is the outer layer. Every example scene
    // with a two-layer body (drops onto floors, a throw against a wall, drags, a
    // bottom-heavy inner layer) is run for its whole duration; after every step each
    // inner particle must be inside the outer surface by the global winding number,
    // which does not share any code with the containment constraint.
    let mut checked = 0;
    for name in ["ring", "pressure-sphere", "pressure-sphere-latlong", "pressure-mesh", "liquid"] {
        let scene = Scene::load(&scenes().join(format!("{name}.toml"))).unwrap();
        let mut built = scene.build().unwrap();
        assert!(built.bodies.iter().any(|b| !b.inner.is_empty()), "{name}: no two-layer body");
        for step in 0..scene.simulation.total_steps() {
            built.world.step().unwrap_or_else(|e| panic!("{name}: {e}"));
            let out = escaped(&built);
            assert!(out.is_empty(), "{name}, step {}: inner particles outside the skin: {out:?}", step + 1);
        }
        assert!(built.world.metrics().bbox_min.y.abs() < 1e-9, "{name}: the body must reach the floor");
        checked += 1;
    }
    assert_eq!(checked, 5);
}

#[test]
fn defaults_are_the_thesis_parameters() {
    // 004 §7.2.1: KS 800, KD 15, RKS 700, RKD 50, PRESSURE 20, MASS 1; MKS 150 and
    // MKD 25 for drags. A bare `type = "pressure-sphere"` is a two-layer uniform
    // sphere of level 1 (18 particles per layer), radius 0.5 m, inner radius 0.4 m.
    let mut built =
        build("[[body]]\ntype = \"pressure-sphere\"\n[[drag]]\nnear = [0, 1, 0]\nby = [0, 0.1, 0]\nend = 1.0\n")
            .unwrap();
    let params = built.world.parameters();
    let value = |key: &str| params.iter().find(|p| p.key == key).unwrap_or_else(|| panic!("no {key}")).value;
    let body = "pressure-sphere";
    assert_eq!(value(&format!("springs.{body}.structural.stiffness")), 800.0);
    assert_eq!(value(&format!("springs.{body}.structural.damping")), 15.0);
    for kind in ["radius", "shear-left", "shear-right"] {
        assert_eq!(value(&format!("springs.{body}.{kind}.stiffness")), 700.0, "{kind}");
        assert_eq!(value(&format!("springs.{body}.{kind}.damping")), 50.0, "{kind}");
    }
    assert_eq!(value(&format!("pressure-{body}.outer")), 20.0);
    assert_eq!(value(&format!("pressure-{body}.inner")), 0.0);
    let w = &built.world;
    assert_eq!(w.state.len(), 36);
    assert!(w.particles.mass.iter().all(|&m| m == 1.0));
    assert_eq!(built.bodies[0].inner, 18..36);
    assert!((w.state.x.get(0).length() - 0.5).abs() < 1e-15 && (w.state.x.get(18).length() - 0.4).abs() < 1e-15);
    built.world.step().unwrap();
    let drag = built.world.drag.params;
    assert_eq!((drag.stiffness, drag.damping), (150.0, 25.0));
    let grabbed = built.world.drag.grab.unwrap().particle;
    assert!(grabbed < 18, "drags take outer particles only, got {grabbed}");
}

#[test]
fn scene_colliders_act_on_outer_particles_only() {
    // A floor through the sphere's middle: after one tiny step every outer particle
    // is on it or above, and inner particles below it have not moved (004 §4.6).
    let text = "[simulation]\ndt = 1e-9\nsteps = 1\ngravity = [0, 0, 0]\n[[body]]\ntype = \"pressure-sphere\"\n\
                [[collider]]\ntype = \"plane\"\n";
    let mut built = build(text).unwrap();
    let inner = built.bodies[0].inner.clone();
    let before: Vec<f64> = inner.clone().map(|i| built.world.state.x.get(i).y).collect();
    assert!(before.iter().any(|&y| y < -0.1));
    built.world.step().unwrap();
    let w = &built.world;
    assert!((0..18).all(|i| w.state.x.get(i).y >= 0.0), "outer particles pushed out of the floor");
    for (i, y) in inner.zip(before) {
        assert!((w.state.x.get(i).y - y).abs() < 1e-12, "inner particle {i} moved from {y}");
    }
}

#[test]
fn every_thesis_body_type_builds_with_one_or_two_layers() {
    // Counts per type: pair 2; ring 10 per layer; sphere level 1 18 per layer;
    // lat-long 8 × 4 → 26 per layer; icosahedron 12 per layer.
    let cases = [
        ("type = \"pair\"", 2),
        ("type = \"ring\"", 20),
        ("type = \"ring\"\nlayers = 1", 10),
        ("type = \"pressure-sphere\"\nlayers = 1", 18),
        ("type = \"pressure-sphere\"\nslices = 8\nstacks = 4", 52),
        // Built from material values: one layer unless it asks for two.
        ("type = \"pressure-mesh\"\nfile = \"meshes/icosahedron.obj\"", 12),
        ("type = \"pressure-mesh\"\nfile = \"meshes/icosahedron.obj\"\nlayers = 2", 24),
        ("type = \"pressure-mesh\"\nfile = \"meshes/icosahedron.obj\"\npressure = 20", 24),
    ];
    for (body, n) in cases {
        let built = build(&format!("[[body]]\n{body}\n")).unwrap_or_else(|e| panic!("{body}: {e}"));
        assert_eq!(built.world.state.len(), n, "{body}");
    }
}

/// Asserts that `text` fails at 1-based (line, column) with every fragment shown.
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
fn bad_thesis_body_keys_get_located_errors_with_advice() {
    expect("[[body]]\ntype = \"ring\"\nmass = 3\n", 3, 8, &["per particle", "particle_mass"]);
    expect("[[body]]\ntype = \"pair\"\nmass = 3\n", 3, 8, &["masses = [m1, m2]"]);
    expect("[[body]]\ntype = \"pressure-sphere\"\nlayers = 3\n", 3, 10, &["`layers` = 3 must be 1 or 2"]);
    expect(
        "[[body]]\ntype = \"pressure-sphere\"\nlayers = 1\ninner_radius = 0.3\n",
        4,
        16,
        &["`layers` = 1", "set `layers = 2`"],
    );
    expect("[[body]]\ntype = \"ring\"\npresure = 50\n", 3, 1, &["unknown key `presure`", "did you mean `pressure`?"]);
    expect(
        "[[body]]\ntype = \"pressure-sphere\"\nsprings.shear-lft = { stiffness = 5 }\n",
        3,
        9,
        &["unknown key `shear-lft`", "did you mean `shear-left`?"],
    );
    expect("[[body]]\ntype = \"pressure-sphere\"\ninner_radius = 0.7\n", 3, 16, &["inner_radius", "below `radius`"]);
    expect("[[body]]\ntype = \"ring\"\npressure = -1\n", 3, 12, &["`pressure` = -1 must be finite and ≥ 0"]);
    expect("[[body]]\ntype = \"pair\"\nmasses = [1, 0]\n", 3, 10, &["two positive numbers"]);
    expect("[[body]]\ntype = \"ring\"\ncount = 2\n", 3, 9, &["at least 3"]);
    expect(
        "[[body]]\ntype = \"ring\"\n[[drag]]\nbody = \"ring\"\nparticle = 12\nby = [0, 1, 0]\nend = 1\n",
        3,
        1,
        &["inner layer", "outer particles are 0..10"],
    );
    expect(
        "[[body]]\ntype = \"pressure-mesh\"\nfile = \"meshes/icosahedron.obj\"\nthickness = 5\n",
        4,
        13,
        &["thickness", "folds the inner layer over", "a thickness of 0.", "m or less fits this mesh"],
    );
}

#[test]
fn an_open_obj_surface_is_refused_as_a_pressure_body() {
    let dir = std::env::temp_dir().join(format!("wobble-thesis-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("open.obj"), "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\n").unwrap();
    let text = "[[body]]\ntype = \"pressure-mesh\"\nfile = \"open.obj\"\n";
    let e = Scene::parse(Source::new("test.toml", text), dir.clone()).unwrap().build().unwrap_err();
    let shown = e.to_string();
    assert_eq!((e.line(), e.column()), (3, 8), "{shown}");
    assert!(shown.contains("the mesh is open") && shown.contains("close its holes"), "{shown}");

    // A closed tetrahedron saved with split vertices (every face its own three):
    // refused with the weld that closes it, built with it.
    let corners = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    let mut split = String::new();
    for (k, face) in [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]].iter().enumerate() {
        for &i in face {
            let [x, y, z] = corners[i];
            split += &format!("v {x} {y} {z}\n");
        }
        split += &format!("f {} {} {}\n", 3 * k + 1, 3 * k + 2, 3 * k + 3);
    }
    std::fs::write(dir.join("split.obj"), &split).unwrap();
    let text = "[[body]]\ntype = \"pressure-mesh\"\nfile = \"split.obj\"\nlayers = 1\n";
    let e = Scene::parse(Source::new("test.toml", text), dir.clone()).unwrap().build().unwrap_err().to_string();
    assert!(e.contains("the mesh is open") && e.contains("add `weld = "), "{e}");
    let text = "[[body]]\ntype = \"pressure-mesh\"\nfile = \"split.obj\"\nlayers = 1\nweld = 1e-9\n";
    let built = Scene::parse(Source::new("test.toml", text), dir.clone()).unwrap().build().unwrap();
    assert_eq!(built.world.state.len(), 4);
    let text = "[[body]]\ntype = \"pressure-mesh\"\nfile = \"split.obj\"\nlayers = 1\nweld = 5\n";
    let e = Scene::parse(Source::new("test.toml", text), dir.clone()).unwrap().build().unwrap_err();
    assert_eq!(e.line(), 5, "{e}");
    assert!(e.to_string().contains("collapses every face"), "{e}");

    // A fin on an edge of the tetrahedron: the edge is named by its OBJ vertices and
    // the faces by their lines, and the error points at `file`.
    let fin = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\nv 1 1 1\nf 1 2 5\n";
    std::fs::write(dir.join("fin.obj"), fin).unwrap();
    for kind in ["pressure-mesh", "mesh"] {
        let text = format!("[[body]]\ntype = \"{kind}\"\nfile = \"fin.obj\"\n");
        let e = Scene::parse(Source::new("test.toml", text), dir.clone()).unwrap().build().unwrap_err();
        let shown = e.to_string();
        assert_eq!((e.line(), e.column()), (3, 8), "{shown}");
        assert!(shown.contains("between vertices 1 and 2 borders 3 faces (on lines 5, 6, 10)"), "{shown}");
    }
    // Faces wound every which way are turned to one winding: the volume is positive
    // and the same as the consistently wound file's.
    let mixed = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 4 2\nf 1 4 3\nf 2 4 3\n";
    std::fs::write(dir.join("mixed.obj"), mixed).unwrap();
    let text = "[[body]]\ntype = \"pressure-mesh\"\nfile = \"mixed.obj\"\nlayers = 1\n";
    let w = Scene::parse(Source::new("test.toml", text), dir.clone()).unwrap().build().unwrap().world;
    let v = w.topology.enclosed_volume(&w.topology.bodies[0], &w.state.x).unwrap();
    assert!((v - 1.0 / 6.0).abs() < 1e-12, "volume {v}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn material_values_are_checked_and_never_mixed_with_per_particle_values() {
    let mesh = "[[body]]\ntype = \"pressure-mesh\"\nfile = \"meshes/icosahedron.obj\"\n";
    expect(
        &format!("{mesh}over_pressure = 300\npressure = 20\n"),
        5,
        12,
        &["`pressure` is a per-particle value", "`over_pressure` builds this body from material values"],
    );
    expect(&format!("{mesh}mass = 1\ndensity = 50\n"), 5, 11, &["`mass` or `density`, not both"]);
    expect(
        &format!("{mesh}layers = 1\nlayer_stiffness = 1e4\n"),
        5,
        19,
        &["lining between two layers", "`layers` = 1"],
    );
    expect(&format!("{mesh}membrane_stiffness = -3\n"), 4, 22, &["must be positive"]);
    expect(
        &format!("{mesh}over_pressure = 1e6\nmembrane_stiffness = 10\n"),
        5,
        22,
        &["too soft for the over-pressure"],
    );
    expect("[[body]]\ntype = \"ring\"\ndensity = 10\n", 3, 11, &["a ring takes the thesis's per-particle values"]);
    // A pressure-mesh is built from material values by default, one layer, with
    // bending; a pressure-sphere keeps the thesis's values unless it sets one.
    let w = build(mesh).unwrap().world;
    assert_eq!(w.state.len(), 12);
    assert!(w.forces.iter().any(|f| f.name() == "bending-pressure-mesh"));
    let thesis = build("[[body]]\ntype = \"pressure-sphere\"\n").unwrap().world;
    assert!(thesis.forces.iter().all(|f| !f.name().starts_with("bending")));
    let material = build("[[body]]\ntype = \"pressure-sphere\"\nradius = 0.1\ndensity = 100\n").unwrap().world;
    assert!(material.forces.iter().any(|f| f.name().starts_with("bending")));
}

#[test]
fn a_one_layer_body_whose_gas_cannot_carry_it_is_warned_about() {
    let weak =
        "[[body]]\nname = \"ball\"\ntype = \"pressure-sphere\"\nradius = 0.1\ndensity = 100\nover_pressure = 50\n";
    let w = build(weak).unwrap().world;
    assert_eq!(w.warnings.len(), 1, "{:?}", w.warnings);
    assert!(w.warnings[0].contains("body `ball` has one layer and rests on its gas alone"), "{}", w.warnings[0]);
    assert!(w.warnings[0].contains("raise `over_pressure` to at least"), "{}", w.warnings[0]);
    // The default gas carries ten times the weight: no warning; nor without gravity.
    assert!(
        build("[[body]]\ntype = \"pressure-sphere\"\nradius = 0.1\ndensity = 100\n").unwrap().world.warnings.is_empty()
    );
    assert!(build(&format!("[simulation]\ngravity = [0, 0, 0]\n{weak}")).unwrap().world.warnings.is_empty());
}
