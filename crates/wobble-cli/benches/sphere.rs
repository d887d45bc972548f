//! The level-4 two-layer sphere of issue 14 (see `docs/performance.md`): 2,052
//! particles with the thesis's per-particle values, RK4 at dt = 1 ms, one thread,
//! dropped 0.6 m onto the floor of a room. The thesis's springs cannot carry its
//! 2 t, so it collapses on landing; the benchmark times the steps before the
//! collapse (0.05–0.40 s: the fall, the containment lists empty) and after it
//! (1.0–2.3 s: the crumpled body at rest), as a whole `wobble run` would step
//! them, without writing files.
//!
//! Run with `cargo bench -p wobble-cli --bench sphere` (`WOBBLE_BENCH_REPS`, default
//! 3, sets the runs; the median is printed). On a shared machine pin it to one core
//! (`taskset -c 0 cargo bench …`): the figures are wall-clock times.

use std::time::Instant;

const SCENE: &str = include_str!("sphere.toml");

/// Steps of the phases: [start, end) in steps of 1 ms.
const BEFORE: (u64, u64) = (50, 400);
const AFTER: (u64, u64) = (1000, 2300);

fn main() {
    let reps: usize = std::env::var("WOBBLE_BENCH_REPS").ok().and_then(|s| s.parse().ok()).unwrap_or(3).max(1);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a thread pool");
    let source = wobble_scene::Source::new("<level-4 sphere benchmark>", SCENE);
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let scene = wobble_scene::Scene::parse(source.clone(), ".".into()).expect("the benchmark scene");
        let mut world = scene.build().expect("the benchmark scene builds").world;
        let (b, a) = pool.install(|| {
            let mut phase = |(start, end): (u64, u64)| {
                while world.steps() < start {
                    world.step().expect("a step");
                }
                let t = Instant::now();
                while world.steps() < end {
                    world.step().expect("a step");
                }
                (end - start) as f64 / t.elapsed().as_secs_f64()
            };
            (phase(BEFORE), phase(AFTER))
        });
        before.push(b);
        after.push(a);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (b, a) = (median(&mut before), median(&mut after));
    println!("level-4 two-layer sphere, thesis values, RK4 at dt = 1 ms, 1 thread, median of {reps} runs:");
    println!("  before the collapse (steps {}-{}): {b:7.0} steps/s = {:.2} x real time", BEFORE.0, BEFORE.1, b * 1e-3);
    println!("  after the collapse  (steps {}-{}): {a:7.0} steps/s = {:.2} x real time", AFTER.0, AFTER.1, a * 1e-3);
    println!("  a step after the collapse costs {:.2} x one before", b / a);
}
