//! Cost of contact: the 64 × 64 crumple (`wobble::build::crumple`) with
//! self-collision, symplectic Euler at h = 1e-4 s and implicit Euler at h = 1e-3 s.
//!
//! Run with `cargo bench -p wobble --bench contact`. For each case it prints steps
//! per second with and without self-collision, the share of a step spent in the
//! broad phase, the narrow phase (proximity and continuous tests) and the response,
//! the candidate pairs, and the two-thread speed-up beside the machine's capacity
//! (two one-thread worlds stepping at the same time on two OS threads, their
//! combined rate in units of one world's; see docs/performance.md) and the share of
//! that capacity the two-thread step gets. Around each two-thread block it also
//! times a cache line's round trip between the pool's two cores
//! ([`wobble::par::core_round_trip`]) and prints the speed-up of the rounds whose
//! round trip was near the run's fastest apart from the others: a host that
//! places the two virtual CPUs far apart (round trips of 150–380 ns against 60 ns
//! on the development VM) slows the two-thread step without changing the
//! capacity. The timed window starts after the first
//! 0.15 s of free fall, when the cloth folds onto itself. The runs without contact,
//! with contact on one thread, with contact on two, and the two side by side take
//! turns in blocks of ten steps, so that their ratios are taken on the same machine
//! state.

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
    /// Seconds of each round's block (a side-by-side case: its slower world's).
    blocks: Vec<f64>,
    /// A multi-thread case: the slower of the cache-line round trips between its
    /// pool's first two threads timed just before and just after each block, ns.
    round_trips: Vec<f64>,
}

/// A round's cache-line round trip between the cores counts as near when it is
/// within this factor of the run's fastest.
const NEAR: f64 = 1.5;

/// Steps one world takes before the next world's turn.
const BLOCK: u64 = 10;

/// One of the cases that take turns: a crumple (`self_collide`) stepped on a pool,
/// or two crumples with self-collision stepped at the same time, each on its own
/// one-thread pool and OS thread (the machine's capacity for two independent runs).
enum Case<'a> {
    One(bool, &'a rayon::ThreadPool),
    SideBySide(&'a rayon::ThreadPool, &'a rayon::ThreadPool),
}

/// A crumple at the start of the timed window, built and warmed up on `pool`.
fn warm_world(kind: IntegratorKind, dt: f64, self_collide: bool, pool: &rayon::ThreadPool) -> World {
    pool.install(|| {
        let mut world = crumple_world(N, kind, dt, self_collide).expect("crumple");
        world.run((0.15 / dt).round() as u64).expect("warm-up");
        world
    })
}

/// Steps `world` `block` times on `pool`, adding the contact stage's phase times
/// to `phases`. The helper threads wait for the passes all through the block, as
/// they do through a run (`World::with_helpers`).
fn step_block(world: &mut World, pool: &rayon::ThreadPool, block: u64, phases: &mut [f64; 3]) {
    pool.install(|| {
        world.with_helpers(|world| {
            for _ in 0..block {
                world.step().expect("step");
                let c = world.last_contact();
                phases[0] += c.seconds_broad;
                phases[1] += c.seconds_narrow;
                phases[2] += c.seconds_response;
            }
        });
    });
}

/// Times the cases side by side: each steps `steps` times, the cases taking turns
/// in blocks of [`BLOCK`] steps (the order reversed every round), so that a slow
/// minute of a shared machine weighs on every case alike. A side-by-side case's
/// time is that of its slower world, and its rate counts the steps of both.
fn time_together(kind: IntegratorKind, dt: f64, steps: u64, cases: &[Case<'_>]) -> Vec<Timing> {
    let mut worlds: Vec<Vec<World>> = cases
        .iter()
        .map(|case| match *case {
            Case::One(self_collide, pool) => vec![warm_world(kind, dt, self_collide, pool)],
            Case::SideBySide(a, b) => vec![warm_world(kind, dt, true, a), warm_world(kind, dt, true, b)],
        })
        .collect();
    let mut seconds = vec![0.0; cases.len()];
    let mut phases = vec![[0.0; 3]; cases.len()];
    let mut blocks = vec![Vec::new(); cases.len()];
    let mut round_trips = vec![Vec::new(); cases.len()];
    // 5 probes of 400 trips: about 0.15 ms at 60 ns a trip.
    let probe = |pool: &rayon::ThreadPool| wobble::par::core_round_trip(pool, 400, 5);
    let (mut done, mut round) = (0, 0);
    while done < steps {
        let block = BLOCK.min(steps - done);
        let order: Vec<usize> =
            if round % 2 == 0 { (0..cases.len()).collect() } else { (0..cases.len()).rev().collect() };
        for k in order {
            let p = &mut phases[k];
            let seconds_block = match (&cases[k], worlds[k].as_mut_slice()) {
                (Case::One(_, pool), [world]) => {
                    let before = probe(pool);
                    let start = Instant::now();
                    step_block(world, pool, block, p);
                    let elapsed = start.elapsed().as_secs_f64();
                    if let (Some(a), Some(b)) = (before, probe(pool)) {
                        round_trips[k].push(a.max(b));
                    }
                    elapsed
                }
                (Case::SideBySide(pa, pb), [a, b]) => {
                    // Both start together; the block lasts until the slower ends.
                    let go = std::sync::Barrier::new(2);
                    let mut scratch = [0.0; 3];
                    std::thread::scope(|s| {
                        let go = &go;
                        let first = s.spawn(move || {
                            go.wait();
                            let start = Instant::now();
                            step_block(a, pa, block, p);
                            start.elapsed().as_secs_f64()
                        });
                        go.wait();
                        let start = Instant::now();
                        step_block(b, pb, block, &mut scratch);
                        let mine = start.elapsed().as_secs_f64();
                        mine.max(first.join().expect("side-by-side world"))
                    })
                }
                _ => unreachable!("one world per single case, two per side-by-side case"),
            };
            seconds[k] += seconds_block;
            blocks[k].push(seconds_block);
        }
        done += block;
        round += 1;
    }
    worlds
        .iter()
        .zip(cases)
        .zip(seconds.iter().zip(&phases))
        .zip(blocks.into_iter().zip(round_trips))
        .map(|(((worlds, case), (&total, p)), (blocks, round_trips))| {
            let count = if matches!(case, Case::SideBySide(..)) { 2.0 } else { 1.0 };
            Timing {
                steps_per_s: count * steps as f64 / total,
                phases: p.map(|x| x / total),
                pairs: worlds[0].last_contact().pairs,
                blocks,
                round_trips,
            }
        })
        .collect()
}

/// The two-thread speed-up over the rounds whose round trip was near the run's
/// fastest (within [`NEAR`]) and over the others: per group, the rounds' count,
/// their mean round trip (ns) and the one-thread blocks' time over the
/// two-thread blocks' (the worlds step the same trajectory, bit for bit, so a
/// round's two blocks do the same work). `None` for a group without rounds.
fn speed_up_by_round_trip(one: &Timing, two: &Timing) -> [Option<(usize, f64, f64)>; 2] {
    let fastest = two.round_trips.iter().copied().fold(f64::INFINITY, f64::min);
    let group = |near: bool| {
        let rounds: Vec<usize> =
            (0..two.round_trips.len()).filter(|&r| (two.round_trips[r] <= NEAR * fastest) == near).collect();
        if rounds.is_empty() {
            return None;
        }
        let sum = |t: &Timing| rounds.iter().map(|&r| t.blocks[r]).sum::<f64>();
        let trip = rounds.iter().map(|&r| two.round_trips[r]).sum::<f64>() / rounds.len() as f64;
        Some((rounds.len(), trip, sum(one) / sum(two)))
    };
    [group(true), group(false)]
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
        let (side_a, side_b) = (pinned_pool(1).expect("pool"), pinned_pool(1).expect("pool"));
        let cases =
            [Case::One(false, &one), Case::One(true, &one), Case::One(true, &two), Case::SideBySide(&side_a, &side_b)];
        let mut timed = time_together(kind, dt, steps, &cases).into_iter();
        let (off, on1, on2) = (timed.next().expect("off"), timed.next().expect("on"), timed.next().expect("on, 2"));
        // Capacity: two one-thread worlds side by side, combined rate over one's,
        // in the same minutes as the other cases.
        let pair = timed.next().expect("side by side").steps_per_s;
        println!(
            "{name:17} h = {dt:.0e} s: {:8.1} steps/s with contact ({:.2e} particle-steps/s), {:8.1} without ({:.2}x cost); broad {:4.1} %, narrow {:4.1} %, response {:4.1} % of a step; {} pairs; 2 threads {:8.1} steps/s = {:.2}x one thread (capacity {:.2}x, so {:.0} % of it)",
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
            100.0 * on2.steps_per_s / pair,
        );
        let show = |g: Option<(usize, f64, f64)>| match g {
            Some((rounds, trip, ratio)) => format!("{ratio:.2}x over {rounds} rounds (mean {trip:.0} ns)"),
            None => "no rounds".to_string(),
        };
        let [near, far] = speed_up_by_round_trip(&on1, &on2);
        println!(
            "{:17} 2 threads by the cores' cache-line round trip: rounds within {NEAR}x the run's fastest {}; the others {}",
            "",
            show(near),
            show(far)
        );
    }
}
