//! Where a step's time goes: times each pass of a symplectic-Euler step of the N = 128
//! benchmark cloth (clear forces, spring kernel, gravity, velocity/position update,
//! health check) and prints percentiles. A diagnostic for performance work:
//!
//!     cargo run --release -p wobble --example step_phases -- 2
//!
//! The argument is the thread count (default 1).

use std::time::Instant;

use wobble::force::{ForceContext, Loads};

fn percentiles(name: &str, mut t: Vec<f64>) {
    t.sort_by(f64::total_cmp);
    let n = t.len();
    println!("  {name:<8} p10 {:>7.1} µs   p50 {:>7.1} µs   p90 {:>7.1} µs", t[n / 10], t[n / 2], t[9 * n / 10]);
}

fn main() {
    let threads: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let pool = wobble::par::pinned_pool(threads).expect("thread pool");
    let (mut w, _) = wobble::build::bench::bench_world(128).expect("bench world");
    let h = w.params().dt;
    let mut t = [(); 5].map(|_| Vec::new());
    pool.install(|| {
        w.run(200).expect("warm-up");
        let n = w.state.len();
        let mut loads = Loads::zeros(n);
        for _ in 0..2000 {
            let mut marks = [Instant::now(); 6];
            loads.clear(n, false);
            marks[1] = Instant::now();
            let ctx = ForceContext { particles: &w.particles, state: &w.state, t: 0.0 };
            w.forces[0].add_forces(&ctx, &mut loads);
            marks[2] = Instant::now();
            w.forces[1].add_forces(&ctx, &mut loads);
            marks[3] = Instant::now();
            wobble::par::update_vx(
                &mut w.state.v,
                &mut w.state.x,
                &loads.f,
                &w.particles.inv_mass,
                move |v, x, f, iw| {
                    let v = v + h * (f * iw);
                    (v, x + h * v)
                },
            );
            marks[4] = Instant::now();
            assert!(wobble::metrics::healthy(&w.particles, &w.state, f64::MAX, w.rotational()));
            marks[5] = Instant::now();
            for k in 0..5 {
                t[k].push((marks[k + 1] - marks[k]).as_secs_f64() * 1e6);
            }
        }
    });
    println!("benchmark cloth N = 128 on {threads} thread(s):");
    for (name, times) in ["clear", "springs", "gravity", "update", "health"].into_iter().zip(t) {
        percentiles(name, times);
    }
}
