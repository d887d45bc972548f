//! Cost of contact: the 64 × 64 crumple (`wobble::build::crumple`) with
//! self-collision, symplectic Euler at h = 1e-4 s and implicit Euler at h = 1e-3 s.
//!
//! Run with `cargo bench -p wobble --bench contact`. For each case it prints steps
//! per second with and without self-collision, the share of a step spent in the
//! broad phase, the narrow phase (proximity and continuous tests) and the response,
//! the candidate pairs, and the two-thread speed-up beside the machine's capacity
//! at that moment (two one-thread worlds run side by side, in units of one core;
//! see docs/performance.md). The timed window starts after the first 0.15 s of free
//! fall, when the cloth folds onto itself. The runs without contact, with contact on
//! one thread and with contact on two take turns in blocks of ten steps, so that
//! their ratios are taken on the same machine state.

use std::time::Instant;

use wobble::World;
use wobble::build::crumple::crumple_world;
use wobble::integrate::IntegratorKind;
use wobble::par::pinned_pool;

const N: usize = 64;

struct Timing {
    steps_per_s: f64,
    phases: [f64; 3],
    pairs: usize,
}

/// Steps one world takes before the next world's turn.
const BLOCK: u64 = 10;

/// Times crumples side by side: case k (`self_collide`, pool) steps `steps` times,
/// the cases taking turns in blocks of [`BLOCK`] steps (the order reversed every
/// round), so that a slow minute of a shared machine weighs on every case alike.
fn time_together(kind: IntegratorKind, dt: f64, steps: u64, cases: &[(bool, &rayon::ThreadPool)]) -> Vec<Timing> {
    let mut worlds: Vec<World> = cases
        .iter()
        .map(|&(self_collide, pool)| {
            pool.install(|| {
                let mut world = crumple_world(N, kind, dt, self_collide).expect("crumple");
                world.run((0.15 / dt).round() as u64).expect("warm-up");
                world
            })
        })
        .collect();
    let mut seconds = vec![0.0; cases.len()];
    let mut phases = vec![[0.0; 3]; cases.len()];
    let (mut done, mut round) = (0, 0);
    while done < steps {
        let block = BLOCK.min(steps - done);
        let order: Vec<usize> =
            if round % 2 == 0 { (0..cases.len()).collect() } else { (0..cases.len()).rev().collect() };
        for k in order {
            let (world, pool) = (&mut worlds[k], cases[k].1);
            let start = Instant::now();
            let p = &mut phases[k];
            // The helper threads wait for the passes all through the block, as
            // they do through a run (`World::with_helpers`).
            pool.install(|| {
                world.with_helpers(|world| {
                    for _ in 0..block {
                        world.step().expect("step");
                        let c = world.last_contact();
                        p[0] += c.seconds_broad;
                        p[1] += c.seconds_narrow;
                        p[2] += c.seconds_response;
                    }
                });
            });
            seconds[k] += start.elapsed().as_secs_f64();
        }
        done += block;
        round += 1;
    }
    worlds
        .iter()
        .zip(seconds.iter().zip(&phases))
        .map(|(world, (&total, p))| Timing {
            steps_per_s: steps as f64 / total,
            phases: p.map(|x| x / total),
            pairs: world.last_contact().pairs,
        })
        .collect()
}

fn time(kind: IntegratorKind, dt: f64, self_collide: bool, steps: u64) -> Timing {
    let mut world = crumple_world(N, kind, dt, self_collide).expect("crumple");
    world.run((0.15 / dt).round() as u64).expect("warm-up");
    let start = Instant::now();
    world.run(steps).expect("steps");
    let total = start.elapsed().as_secs_f64();
    Timing { steps_per_s: steps as f64 / total, phases: [0.0; 3], pairs: world.last_contact().pairs }
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
        let mut timed = time_together(kind, dt, steps, &[(false, &one), (true, &one), (true, &two)]).into_iter();
        let (off, on1, on2) = (timed.next().expect("off"), timed.next().expect("on"), timed.next().expect("on, 2"));
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
