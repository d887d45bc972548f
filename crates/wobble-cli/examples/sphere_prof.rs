//! Where the level-4 two-layer sphere of the `sphere` benchmark spends its steps
//! before and after it collapses: per 200-step window (and the fall's first
//! phases), the step time on one thread and the containment constraint's
//! counts per step — list makings, list entries read, closest-point tests and
//! corrections (see `docs/performance.md`, issue 14), and how dense the skin is
//! around the inner layer: the mean number of outer faces within 1.25 and 1.5
//! margins of an inner particle (counted outside the timed steps).
//! `cargo run --release -p wobble-cli --example sphere_prof [-- LEVEL]` (pin it to a
//! core with `taskset -c 0` on a shared machine); LEVEL replaces the scene's
//! subdivision level 4, the per-particle values staying the same.
use std::time::Instant;
use wobble::constraint::Containment;

const SCENE: &str = include_str!("../benches/sphere.toml");
const STEPS: u64 = 2300;

fn main() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a thread pool");
    let level: u32 = std::env::args().nth(1).map_or(4, |l| l.parse().expect("a subdivision level"));
    let text = SCENE.replace("level = 4", &format!("level = {level}"));
    let name = format!("<level-{level} sphere benchmark>");
    let source = wobble_scene::Source::new(name.as_str(), text.as_str());
    let scene = wobble_scene::Scene::parse(source, ".".into()).expect("the benchmark scene");
    let mut world = scene.build().expect("the benchmark scene builds").world;
    pool.install(|| {
        let (mut from, mut builds) = (0, 0);
        let (mut entries, mut tests, mut corrections) = (0, 0, 0);
        let mut clock = Instant::now();
        while world.steps() < STEPS {
            world.step().expect("a step");
            let c = world.constraint_of::<Containment>().expect("a two-layer body");
            entries += c.list_visits;
            tests += c.face_tests;
            corrections += c.corrections as u64;
            let s = world.steps();
            if [50, 400, 1000].contains(&s) || (s > 1000 && s.is_multiple_of(200)) {
                let n = (s - from) as f64;
                let made = c.list_builds - builds;
                let ms = 1e3 * clock.elapsed().as_secs_f64() / n;
                let dense = [1.25, 1.5].map(|f| c.mean_faces_within(&world.state, f));
                println!(
                    "steps {from:4}-{s:4}: {:.3} ms/step, lists made {made:3} ({:5.1} steps each), per step: \
                     entries read {:6.0}, closest-point tests {:5.0}, corrections {:4.0}; \
                     faces within 1.25 / 1.5 margins {:5.1} / {:5.1}",
                    ms,
                    n / made.max(1) as f64,
                    entries as f64 / n,
                    tests as f64 / n,
                    corrections as f64 / n,
                    dense[0],
                    dense[1],
                );
                (from, builds) = (s, c.list_builds);
                (entries, tests, corrections) = (0, 0, 0);
                clock = Instant::now();
            }
        }
    });
}
