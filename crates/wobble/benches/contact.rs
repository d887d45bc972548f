//! Cost of contact: the 64 × 64 crumple (`wobble::build::crumple`) with
//! self-collision, symplectic Euler at h = 1e-4 s and implicit Euler at h = 1e-3 s.
//!
//! Run with `cargo bench -p wobble --bench contact`. For each case it prints steps
//! per second with and without self-collision, the share of a step spent in the
//! broad phase, the narrow phase (proximity and continuous tests) and the response,
//! the candidate pairs, and the two-thread speed-up beside the machine's capacity
//! at that moment (two one-thread worlds run side by side, in units of one core;
//! see docs/performance.md). The timed window starts after the first 0.15 s of free
//! fall, when the cloth folds onto itself.

use std::time::Instant;

use wobble::build::crumple::crumple_world;
use wobble::integrate::IntegratorKind;
use wobble::par::pinned_pool;

const N: usize = 64;

struct Timing {
    steps_per_s: f64,
    phases: [f64; 3],
    pairs: usize,
}

fn time(kind: IntegratorKind, dt: f64, self_collide: bool, steps: u64) -> Timing {
    let mut world = crumple_world(N, kind, dt, self_collide).expect("crumple");
    world.run((0.15 / dt).round() as u64).expect("warm-up");
    let mut phases = [0.0; 3];
    let start = Instant::now();
    for _ in 0..steps {
        world.step().expect("step");
        let c = world.last_contact();
        phases[0] += c.seconds_broad;
        phases[1] += c.seconds_narrow;
        phases[2] += c.seconds_response;
    }
    let total = start.elapsed().as_secs_f64();
    Timing { steps_per_s: steps as f64 / total, phases: phases.map(|p| p / total), pairs: world.last_contact().pairs }
}

fn main() {
    let cases = [
        ("symplectic-euler", IntegratorKind::SymplecticEuler, 1e-4, 1500),
        ("implicit-euler", IntegratorKind::ImplicitEuler, 1e-3, 200),
    ];
    println!("crumple {N} x {N} ({} particles), self-collision on", N * N);
    for (name, kind, dt, steps) in cases {
        let one = pinned_pool(1).expect("pool");
        let two = pinned_pool(2).expect("pool");
        let off = one.install(|| time(kind, dt, false, steps));
        let on1 = one.install(|| time(kind, dt, true, steps));
        let on2 = two.install(|| time(kind, dt, true, steps));
        // Capacity: two one-thread worlds side by side, combined rate over one's.
        let pair = std::thread::scope(|s| {
            let a = s.spawn(|| pinned_pool(1).expect("pool").install(|| time(kind, dt, true, steps)));
            let b = s.spawn(|| pinned_pool(1).expect("pool").install(|| time(kind, dt, true, steps)));
            a.join().expect("a").steps_per_s + b.join().expect("b").steps_per_s
        });
        println!(
            "{name:17} h = {dt:.0e} s: {:8.1} steps/s with contact ({:.2e} particle-steps/s), {:8.1} without ({:.2}x cost); broad {:4.1} %, narrow {:4.1} %, response {:4.1} % of a step; {} pairs; 2 threads {:8.1} steps/s = {:.2}x one thread (capacity {:.2}x)",
            on1.steps_per_s,
            on1.steps_per_s * (N * N) as f64,
            off.steps_per_s,
            off.steps_per_s / on1.steps_per_s,
            100.0 * on1.phases[0],
            100.0 * on1.phases[1],
            100.0 * on1.phases[2],
            on1.pairs,
            on2.steps_per_s,
            on2.steps_per_s / on1.steps_per_s,
            pair / on1.steps_per_s,
        );
    }
}
