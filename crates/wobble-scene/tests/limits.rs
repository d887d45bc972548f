//! Particle counts known before building, and the limit they enforce.

use std::path::Path;

use wobble_scene::{Scene, Source};

/// Every body of every example scene: the count its parameters give is the count
/// the builder makes (an upper bound for grids with points left out).
#[test]
fn particle_counts_from_parameters_match_the_built_bodies() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenes");
    let mut checked = 0;
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths.into_iter().filter(|p| p.extension().is_some_and(|e| e == "toml")) {
        let scene = Scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let built = scene.build().unwrap_or_else(|e| panic!("{e}"));
        for (spec, body) in scene.bodies.iter().zip(&built.bodies) {
            if let Some(n) = spec.shape.particle_count() {
                let made = body.particles.len() as u64;
                if matches!(spec.shape, wobble_scene::BodyShape::Grid(_)) {
                    assert!(n >= made, "{}: body `{}`: {n} < {made}", path.display(), spec.name);
                } else {
                    assert_eq!(n, made, "{}: body `{}`", path.display(), spec.name);
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "only {checked} bodies checked");
}

#[test]
fn bodies_beyond_the_particle_limit_are_refused_before_building() {
    for (body, what) in [
        ("type = \"cloth\"\nnx = 100000\nny = 1000", "100000000 particles"),
        ("type = \"pressure-sphere\"\nslices = 100000\nstacks = 1000", "particles, more than the limit"),
        ("type = \"lattice\"\nn = [1000, 1000, 1000]", "1000000000 particles"),
    ] {
        let text = format!("[[body]]\n{body}\n");
        let e = Scene::parse(Source::new("big.toml", text.as_str()), ".".into()).unwrap_err();
        assert!(e.message.contains(what) && e.message.contains("limit of 10000000"), "{e}");
        assert_eq!(e.line(), 3, "{e}");
    }
}
