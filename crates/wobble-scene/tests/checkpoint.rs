//! Checkpoint and resume, bit for bit: a world stepped k steps, saved, and restored
//! into a world freshly built from the same scene continues exactly as the world
//! that never stopped: the saved state (positions, velocities, orientations,
//! integrator history, drags, contact state) and every metrics sample after the
//! restore are equal to the last bit.
//!
//! Every scene in `scenes/` is run (with its own integrator), and one scene with
//! each integrator; k is never a multiple of the frame or checkpoint intervals.

use std::path::PathBuf;

use wobble::World;
use wobble::integrate::IntegratorKind;
use wobble_scene::Scene;

fn scenes_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenes")
}

fn world(scene: &Scene) -> World {
    scene.build().expect("scene builds").world
}

/// Metrics as exact bits (Debug of f64 round-trips, so equal text is equal bits).
fn sample(w: &World) -> String {
    format!("{:?}", w.metrics())
}

/// Steps `scene` `total` steps straight, and again with a save at step `k` and a
/// restore into a fresh world; returns a description of the first difference.
fn resume_differs(scene: &Scene, k: u64, total: u64) -> Option<String> {
    let mut straight = world(scene);
    let mut samples = Vec::new();
    for step in 1..=total {
        if straight.step().is_err() {
            return Some(format!("the uninterrupted run stopped at step {step}"));
        }
        if step > k {
            samples.push(sample(&straight));
        }
    }
    let mut first = world(scene);
    first.run(k).expect("first part steps");
    let saved = first.save_state();
    drop(first);
    let mut resumed = world(scene);
    resumed.restore_state(&saved).expect("state restores");
    if resumed.save_state() != saved {
        return Some("the restored world saves different bytes than it was given".into());
    }
    for (n, step) in (k + 1..=total).enumerate() {
        resumed.step().expect("resumed run steps");
        let s = sample(&resumed);
        if s != samples[n] {
            return Some(format!("metrics differ at step {step}:\n  straight {}\n  resumed  {s}", samples[n]));
        }
    }
    (resumed.save_state() != straight.save_state()).then(|| format!("final states differ after {total} steps"))
}

#[test]
fn every_scene_resumes_bit_for_bit() {
    let mut failures = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(scenes_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    assert!(paths.len() > 30, "expected the scene collection, found {}", paths.len());
    for path in &paths {
        let scene = Scene::load(path).unwrap();
        // Long enough for contacts, drags and drivers to act in most scenes,
        // short enough for the suite; 37 is prime, so never on a frame boundary.
        let total = 120u64.min(scene.simulation.total_steps().max(60));
        if let Some(d) = resume_differs(&scene, 37, total) {
            failures.push(format!("{}: {d}", path.display()));
        }
    }
    assert!(failures.is_empty(), "resumed runs differ:\n{}", failures.join("\n"));
}

#[test]
fn every_integrator_resumes_bit_for_bit() {
    // A pinned cloth with a scripted drag and a floor: history (Verlet), sparse
    // patterns (implicit), scalar stiffness (semi-implicit) all matter here.
    let text = std::fs::read_to_string(scenes_dir().join("drag.toml")).unwrap();
    for kind in IntegratorKind::ALL {
        let mut scene = Scene::parse(wobble_scene::Source::new("drag.toml", text.clone()), scenes_dir()).unwrap();
        scene.simulation.integrator = kind;
        // Small steps keep the explicit methods stable through the drag.
        scene.simulation.dt = scene.simulation.dt.min(2e-4);
        if let Some(d) = resume_differs(&scene, 53, 160) {
            panic!("{}: {d}", kind.name());
        }
    }
}

#[test]
fn a_state_from_another_scene_or_cut_short_is_refused_and_changes_nothing() {
    let load = |name: &str| Scene::load(&scenes_dir().join(name)).unwrap();
    let mut cloth = world(&load("cloth-hanging.toml"));
    cloth.run(5).unwrap();
    let saved = cloth.save_state();
    let mut other = world(&load("chain.toml"));
    let before = other.save_state();
    let e = other.restore_state(&saved).unwrap_err();
    assert!(e.to_string().contains("does not fit this world"), "{e}");
    assert_eq!(other.save_state(), before, "a refused restore must leave the world as it was");
    let mut fresh = world(&load("cloth-hanging.toml"));
    for cut in [0, 10, saved.len() / 2, saved.len() - 1] {
        assert!(fresh.restore_state(&saved[..cut]).is_err(), "cut at {cut} accepted");
    }
    let mut longer = saved.clone();
    longer.push(0);
    assert!(fresh.restore_state(&longer).is_err());
}
