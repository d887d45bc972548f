//! `ForceTerm::segment_rest_lengths`, which the viewer's strain colours use: one
//! length per segment, in order, equal to the segment's length in a scene built at
//! rest (springs, Terzopoulos grids, generalized springs), NaN-free where a term knows them.

use std::path::PathBuf;

use wobble_scene::Scene;

fn scene(name: &str) -> Scene {
    Scene::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenes").join(name)).expect("scene loads")
}

#[test]
fn rest_lengths_match_segments_and_the_rest_state() {
    for name in [
        "default.toml",
        "grid-box-drop.toml",
        "pressure-sphere.toml",
        "chain.toml",
        "lattice-drop.toml",
        "rod-cantilever.toml",
    ] {
        let world = scene(name).build().expect("builds").world;
        let mut checked = 0;
        for term in &world.forces {
            let (mut seg, mut rest) = (Vec::new(), Vec::new());
            term.segments(&mut seg);
            term.segment_rest_lengths(&mut rest);
            assert_eq!(seg.len(), rest.len(), "{name}: term `{}`", term.name());
            for (&[a, b], &l) in seg.iter().zip(&rest) {
                if l.is_nan() {
                    continue; // the term does not know (default implementation)
                }
                let r = world.state.x.get(a as usize).distance(world.state.x.get(b as usize));
                assert!(
                    (r - l).abs() <= 1e-9 * l.max(1.0),
                    "{name}: `{}` segment {a}-{b}: rest {l} m, built {r} m",
                    term.name()
                );
                checked += 1;
            }
        }
        assert!(checked > 0, "{name}: no segment with a known rest length");
    }
}
