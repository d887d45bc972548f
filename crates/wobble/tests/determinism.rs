//! Bitwise determinism across rayon thread counts (force/mod.rs, force/spring/,
//! par.rs): every particle receives the same force contributions in the same order
//! whatever the number of blocks or threads, so whole runs must agree to the bit.
//! Floating-point addition is not associative, so any schedule-dependent summation
//! would show up as differing low bits within a few steps and grow from there.

#[macro_use]
mod support;

use glam::DVec3;
use support::{Rng, pool};
use wobble::build::WorldBuilder;
use wobble::build::bench::bench_world;
use wobble::force::{Gravity, SpringKind, SpringParams};
use wobble::integrate::IntegratorKind;
use wobble::model::State;
use wobble::world::{SimParams, World};

/// Runs a fresh world from `make` for `steps` steps on a pool of each thread count
/// and asserts that positions and velocities agree bit for bit with the one-thread
/// run. Prints, per thread count, how many components were compared and the largest
/// difference found (0 when identical).
fn assert_bitwise_across_threads(label: &str, make: impl Fn() -> World, steps: u64) {
    let run = |threads: usize| -> State {
        let mut w = make();
        pool(threads)
            .install(|| w.run(steps))
            .unwrap_or_else(|e| panic!("{label}: run on {threads} threads failed: {e}"));
        w.state
    };
    let reference = run(1);
    let start = make().state;
    let moved = (0..reference.len()).map(|i| reference.x.get(i).distance(start.x.get(i))).fold(0.0, f64::max);
    assert!(moved > 1e-4, "{label}: nothing moved (max displacement {moved:e} m); the test would be vacuous");
    for threads in [2, 3, 4] {
        let other = run(threads);
        let mut max_diff: f64 = 0.0;
        let mut differing = 0usize;
        let pairs = [
            (&reference.x.x, &other.x.x),
            (&reference.x.y, &other.x.y),
            (&reference.x.z, &other.x.z),
            (&reference.v.x, &other.v.x),
            (&reference.v.y, &other.v.y),
            (&reference.v.z, &other.v.z),
        ];
        for (a, b) in pairs {
            for (p, q) in a.iter().zip(b.iter()) {
                if p.to_bits() != q.to_bits() {
                    differing += 1;
                    max_diff = max_diff.max((p - q).abs());
                }
            }
        }
        println!(
            "{label}: {threads} threads vs 1: {differing} of {} components differ, max |diff| = {max_diff:e}",
            6 * reference.len()
        );
        assert_eq!(
            differing, 0,
            "{label}: {threads} threads differ from 1 thread in {differing} components (max |diff| = {max_diff:e})"
        );
    }
}

#[test]
fn bench_cloth_is_bitwise_identical_for_1_to_4_threads() {
    // The 64 × 64 benchmark cloth, 300 steps (vectorised runs, parallel blocks).
    assert_bitwise_across_threads("bench cloth 64", || bench_world(64).unwrap().0, 300);
}

#[test]
fn ragged_cloth_blocks_are_bitwise_identical() {
    // 90 × 90 = 8100 particles: block sizes are not multiples of the chunk or row
    // length, so chunks and runs straddle block boundaries.
    assert_bitwise_across_threads("bench cloth 90", || bench_world(90).unwrap().0, 150);
}

#[test]
fn verlet_and_rk4_are_bitwise_identical_across_threads() {
    // The integrators' own parallel passes (Verlet's history update, RK4's stage
    // combinations) on the benchmark cloth.
    for kind in [IntegratorKind::Verlet, IntegratorKind::Rk4] {
        let make = || {
            let (mut w, _) = bench_world(64).unwrap();
            w.set_integrator(kind);
            w
        };
        assert_bitwise_across_threads(&format!("bench cloth 64, {kind}"), make, 100);
    }
}

/// ~5000 particles in a unit cube joined by 15,000 random springs (random index
/// offsets: every spring takes the scattered path, so with several threads the
/// parallel gather runs), 20 pinned, under gravity. Per-particle mass 1 g, k = 2
/// N/m: the stiffest mode has ω ≲ 300 rad/s, so h = 1e-3 s is stable.
fn random_graph_world() -> World {
    let mut rng = Rng::new(2024);
    let mut b = WorldBuilder::new();
    let n = 5000;
    for _ in 0..n {
        b.add_particle(DVec3::new(rng.uniform(), rng.uniform(), rng.uniform()), DVec3::ZERO, 1e-3, 0.0);
    }
    for _ in 0..20 {
        b.pin(rng.below(n));
    }
    let g = b.springs.group("graph");
    let x = b.state.x.clone();
    for _ in 0..15_000 {
        let a = rng.below(n);
        let c = (a + 1 + rng.below(n - 1)) % n;
        b.springs.push_at_rest(&x, a, c, SpringParams::linear(2.0, 0.01), SpringKind::Structural, g);
    }
    b.add_force(Gravity::default());
    b.build(SimParams { dt: 1e-3, integrator: IntegratorKind::SymplecticEuler, ..SimParams::default() }).unwrap()
}

#[test]
fn random_scattered_spring_graph_is_bitwise_identical_across_threads() {
    assert_bitwise_across_threads("random graph 5000", random_graph_world, 300);
}

#[test]
fn stepping_from_outside_the_pool_gives_the_one_thread_bits() {
    // `World::step` and `World::run` called from a thread outside every rayon pool
    // (this test's own) move the step onto a thread of the global pool when the
    // world has parallel passes; the states must be the one-thread run's to the bit,
    // step by step and through `run`, for an explicit and an implicit integrator.
    for kind in [IntegratorKind::SymplecticEuler, IntegratorKind::ImplicitEuler] {
        let make = || {
            let mut w = bench_world(64).unwrap().0;
            w.set_integrator(kind);
            w
        };
        let steps = 40;
        let mut reference = make();
        pool(1).install(|| reference.run(steps)).unwrap();
        let mut by_step = make();
        for _ in 0..steps {
            by_step.step().unwrap();
        }
        let mut by_run = make();
        by_run.run(steps).unwrap();
        let moved = (0..reference.state.len())
            .map(|i| reference.state.x.get(i).distance(make().state.x.get(i)))
            .fold(0.0, f64::max);
        assert!(moved > 1e-6, "{kind:?}: nothing moved ({moved:e} m)");
        for (how, w) in [("step", &by_step), ("run", &by_run)] {
            for i in 0..reference.state.len() {
                let (a, b) = (reference.state.x.get(i), w.state.x.get(i));
                let (u, v) = (reference.state.v.get(i), w.state.v.get(i));
                assert!(
                    a.to_array().iter().zip(b.to_array()).all(|(p, q)| p.to_bits() == q.to_bits())
                        && u.to_array().iter().zip(v.to_array()).all(|(p, q)| p.to_bits() == q.to_bits()),
                    "{kind:?} by {how}: particle {i} differs from the one-thread run ({a} against {b})"
                );
            }
        }
        println!("{kind:?}: {} threads in the global pool, same bits as one thread", rayon::current_num_threads());
    }
}
