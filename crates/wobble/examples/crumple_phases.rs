//! Profiling aid for the contact stage on the 64 × 64 crumple.
//!
//! `cargo run --release -p wobble --example crumple_phases -- [se]` steps it (`se`:
//! symplectic Euler at 1e-4 s, else implicit Euler at 1e-3 s) and prints the
//! contact stage's phase times, the pair-list rebuilds and a fingerprint of the
//! final state (equal fingerprints: the same trajectory).
//! `off` among the arguments turns self-collision off. `... -- broad` times the
//! broad phase alone, rebuilt 50 times (`REPS`) on one crumpled state and sweep,
//! in a pool with the helpers waiting as in a run.
use wobble::build::crumple::crumple_world;
use wobble::integrate::IntegratorKind;
fn main() {
    let arg = std::env::args().nth(1).unwrap_or_default();
    let se = arg == "se" || std::env::args().any(|a| a == "se");
    let off = std::env::args().any(|a| a == "off");
    let (kind, dt, steps) =
        if se { (IntegratorKind::SymplecticEuler, 1e-4, 1500) } else { (IntegratorKind::ImplicitEuler, 1e-3, 200) };
    let mut w = crumple_world(64, kind, dt, !off).expect("crumple");
    w.run((0.15 / dt) as u64).expect("warm-up");
    // The pool the timed part runs in (`RAYON_NUM_THREADS` threads).
    let pool = rayon::ThreadPoolBuilder::new().build().expect("pool");
    if arg == "broad" {
        w.run(100).expect("crumple");
        let x0 = w.state.x.clone();
        let mut x1 = x0.clone();
        for i in 0..x1.len() {
            x1.add(i, w.state.v.get(i) * dt);
        }
        let mut pairs = 0;
        let reps: usize = std::env::var("REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(50);
        // In the pool, with the helpers waiting, as the steps of a run build
        // their lists.
        let seconds = pool.install(|| {
            w.with_helpers(|w| {
                let start = std::time::Instant::now();
                for _ in 0..reps {
                    pairs = w.contacts.broad_phase(&x0, &x1).len();
                }
                start.elapsed().as_secs_f64()
            })
        });
        println!("broad phase: {:.3} ms per rebuild, {pairs} pairs", seconds * 1e3 / reps as f64);
        return;
    }
    let (mut b, mut n, mut r, mut rebuilds) = (0.0, 0.0, 0.0, 0);
    let (mut forces, mut jacobian, mut solve, mut iterations) = (0.0, 0.0, 0.0, 0u64);
    let start = std::time::Instant::now();
    // The steps run as a run loop runs them: in the pool, with the helpers kept
    // waiting between steps (`World::with_helpers`).
    pool.install(|| {
        w.with_helpers(|w| {
            for _ in 0..steps {
                w.step().expect("step");
                let c = w.last_contact();
                b += c.seconds_broad;
                n += c.seconds_narrow;
                r += c.seconds_response;
                rebuilds += c.rebuilds;
                let s = w.last_report();
                forces += s.seconds_forces;
                jacobian += s.seconds_jacobian;
                solve += s.seconds_preconditioner + s.seconds_solve;
                iterations += u64::from(s.iterations);
            }
        });
    });
    let ms = |s: f64| 1e3 * s / steps as f64;
    println!(
        "per step ms: total {:.3} broad {:.3} narrow {:.3} response {:.3}; pair-list rebuilds per step {:.2}",
        ms(start.elapsed().as_secs_f64()),
        ms(b),
        ms(n),
        ms(r),
        rebuilds as f64 / steps as f64
    );
    println!(
        "per step ms: forces {:.3} assembly {:.3} solve {:.3} ({:.1} iterations)",
        ms(forces),
        ms(jacobian),
        ms(solve),
        iterations as f64 / steps as f64
    );
    let x = &w.state.x;
    let sum: f64 = (0..x.len()).map(|i| x.get(i).dot(glam::DVec3::new(1.0, 2.0, 3.0))).sum();
    println!("fingerprint {sum:.17e}; contact totals {:?}", w.contact_totals());
}
