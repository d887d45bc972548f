//! Bodies of oriented particles in scene files (001; `src/oriented.rs`): every
//! example scene loads, builds and runs without blowing up; defaults and keys reach
//! the builders; bad keys get located errors.

use std::path::PathBuf;

use wobble::force::GeneralizedSprings;
use wobble_scene::{Built, Scene, SceneError, Source};

fn scenes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenes")
}

fn build(text: &str) -> Result<Built, SceneError> {
    Scene::parse(Source::new("test.toml", text), scenes())?.build()
}

#[test]
fn example_scenes_build_and_run() {
    for name in ["rod-cantilever", "twisted-bar", "mobile", "jelly-cube", "sheet-crease", "generalized-mesh"] {
        let scene = Scene::load(&scenes().join(format!("{name}.toml"))).unwrap();
        let mut built = scene.build().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(built.world.rotational(), "{name}: particles must be oriented");
        assert!(built.world.force_of::<GeneralizedSprings>().is_some(), "{name}: no generalized springs");
        built.world.run(2000).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn spring_keys_reach_the_term() {
    let built = build(
        "[[body]]\ntype = \"rod\"\ncount = 3\nparticle_radius = 0.01\n\
         springs = { stretch = 123, bend = 2, bend_negative = 0.5, twist = 3, bend_cubic = 0.25 }\n",
    )
    .unwrap();
    let term = built.world.force_of::<GeneralizedSprings>().unwrap();
    let p = term.params(0);
    assert_eq!(p.stretch, 123.0);
    assert_eq!((p.bend.positive, p.bend.negative, p.bend.cubic), (2.0, 0.5, 0.25));
    assert_eq!((p.twist.positive, p.twist.negative), (3.0, 3.0), "twist_negative defaults to twist");
    assert_eq!(term.len(), 2);
}

#[test]
fn mobile_tree_is_read_recursively() {
    let built = build(
        "[[body]]\ntype = \"mobile\"\n[body.bar]\nlength = 1\nmass = 0.1\nleft = { thread = 0.2, weight = 0.1 }\n\
         right = { thread = 0.2, bar = { length = 0.5, mass = 0.05, left = { thread = 0.1, weight = 0.02 }, right = { thread = 0.1, weight = 0.02 } } }\n",
    )
    .unwrap();
    // anchor + 2 bars + 5 threads' inner particles + 3 weights.
    let d = wobble::build::mobile::Mobile::default();
    let per_bar = d.bar_segments + 1;
    let per_thread = d.thread_segments - 1;
    assert_eq!(built.world.state.len(), 1 + 2 * per_bar + 5 * per_thread + 3);
}

fn expect_error(text: &str, line: usize, fragments: &[&str]) {
    let e = match build(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    };
    let shown = e.to_string();
    assert_eq!(e.line(), line, "wrong line in: {shown}");
    for f in fragments {
        assert!(shown.contains(f), "`{f}` missing from: {shown}");
    }
}

#[test]
fn bad_keys_are_located() {
    expect_error("[[body]]\ntype = \"rod\"\nsprings = { bend = -1 }\n", 3, &["bend", "≥ 0"]);
    expect_error("[[body]]\ntype = \"rod\"\nsprings = { bendd = 1 }\n", 3, &["bendd", "bend"]);
    expect_error("[[body]]\ntype = \"mobile\"\nmass = 2\n", 3, &["mobile", "weight"]);
    expect_error(
        "[[body]]\ntype = \"mobile\"\n[body.bar]\nlength = 1\nmass = 0.1\nleft = { thread = 0.2, weight = 0.1, bar = { length = 1 } }\nright = { thread = 0.2, weight = 0.1 }\n",
        6,
        &["either", "weight", "bar"],
    );
    expect_error("[[body]]\ntype = \"sheet\"\nnx = 5\ncrease = 4\n", 4, &["crease"]);
    expect_error("[[body]]\ntype = \"jelly-cube\"\nn = [1, 2, 2]\n", 3, &["n"]);
}
