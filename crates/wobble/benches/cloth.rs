//! The cloth benchmark (see `docs/performance.md`): the N × N benchmark cloth under
//! symplectic Euler, timed on one thread and on every thread of the machine.
//!
//! Run with `cargo bench -p wobble --bench cloth`. Prints steps per second, spring
//! updates per second and particle-steps per second for N = 32, 64, 128, and the
//! multi-thread speed-up as the median of per-repetition ratios: repetitions
//! alternate between thread counts so that both see the same machine load.
//!
//! On a shared virtual machine the second core is not always there. So each
//! repetition also runs the yardstick of what the machine offers: one independent
//! single-thread world per core, side by side; "capacity" is how many times one
//! core's throughput they achieve together. The speed-up should be read against it.
//! Peak memory: the benchmark runs itself again in a child process per size, which
//! builds one world and steps it 1000 times, and reports that process's peak
//! resident memory — what `wobble run` of the benchmark scene needs, without outputs.
//!
//! Options (environment): `WOBBLE_BENCH_N="32 64"` to choose sizes,
//! `WOBBLE_BENCH_REPS=9` for repetitions, `WOBBLE_KERNEL=portable|avx2|avx512`.

use std::time::Instant;

use wobble::build::bench::bench_world;
use wobble::force::spring::Kernel;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Peak resident memory of this process, MB (Linux VmHWM).
fn peak_memory_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Child mode: one world of size `n`, 1000 steps, print the peak memory.
fn memory_child(n: usize) {
    let (mut w, _) = bench_world(n).expect("bench world");
    w.run(1000).expect("run");
    println!("{}", peak_memory_mb().unwrap_or(f64::NAN));
}

/// Peak memory of a child process stepping one N × N world, MB.
fn memory_of(n: usize) -> Option<f64> {
    let exe = std::env::current_exe().ok()?;
    let out = std::process::Command::new(exe).env("WOBBLE_BENCH_MEMORY_CHILD", n.to_string()).output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

fn main() {
    if let Some(n) = std::env::var("WOBBLE_BENCH_MEMORY_CHILD").ok().and_then(|s| s.parse().ok()) {
        memory_child(n);
        return;
    }
    let sizes: Vec<usize> = std::env::var("WOBBLE_BENCH_N")
        .map(|s| s.split_whitespace().filter_map(|t| t.parse().ok()).collect())
        .unwrap_or_else(|_| vec![32, 64, 128]);
    let reps: usize = std::env::var("WOBBLE_BENCH_REPS").ok().and_then(|s| s.parse().ok()).unwrap_or(7);
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pools: Vec<(usize, rayon::ThreadPool)> = [1, all]
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|t| {
            let pool = if std::env::var_os("WOBBLE_BENCH_UNPINNED").is_some() {
                rayon::ThreadPoolBuilder::new().num_threads(t).build()
            } else {
                wobble::par::pinned_pool(t)
            };
            (t, pool.expect("thread pool"))
        })
        .collect();
    println!("wobble cloth benchmark: symplectic Euler, f64, h = 1e-4 s, k = 1000 N/m, kernel {:?}", Kernel::select());
    println!(
        "{:>5} {:>9} {:>8} {:>7} {:>10} {:>16} {:>17}",
        "N", "particles", "springs", "threads", "steps/s", "spring-updates/s", "particle-steps/s"
    );
    for n in sizes {
        let steps: u64 = if n >= 128 { 500 } else { 2000 };
        let mut worlds: Vec<_> = pools
            .iter()
            .map(|(_, pool)| {
                let (mut w, _) = bench_world(n).expect("bench world");
                pool.install(|| w.run(100).expect("warm-up"));
                w
            })
            .collect();
        let springs = worlds[0].segments().len();
        let mut times = vec![Vec::new(); pools.len()];
        let mut ratios = Vec::new();
        let mut capacity = Vec::new();
        let mut pair: Vec<_> = (0..all).map(|_| bench_world(n).expect("bench world").0).collect();
        for _ in 0..reps {
            if all > 1 {
                // Yardstick: `all` independent single-thread runs at once.
                let t0 = Instant::now();
                std::thread::scope(|s| {
                    for w in pair.iter_mut() {
                        s.spawn(move || {
                            let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("pool");
                            pool.install(|| w.run(steps).expect("pair run"));
                        });
                    }
                });
                capacity.push(t0.elapsed().as_secs_f64());
            }
            let mut this_rep = Vec::new();
            for (k, (_, pool)) in pools.iter().enumerate() {
                let w = &mut worlds[k];
                let t0 = Instant::now();
                pool.install(|| w.run(steps).expect("bench run"));
                let dt = t0.elapsed().as_secs_f64();
                times[k].push(dt);
                this_rep.push(dt);
            }
            if this_rep.len() > 1 {
                ratios.push(this_rep[0] / this_rep[this_rep.len() - 1]);
            }
        }
        for (k, (threads, _)) in pools.iter().enumerate() {
            let t = median(&mut times[k]);
            let sps = steps as f64 / t;
            println!(
                "{n:>5} {:>9} {springs:>8} {threads:>7} {sps:>10.1} {:>16.3e} {:>17.3e}",
                n * n,
                sps * springs as f64,
                sps * (n * n) as f64
            );
        }
        if !ratios.is_empty() {
            let single = median(&mut times[0].clone());
            let cap = all as f64 * single / median(&mut capacity);
            println!(
                "{:>5} speed-up on {all} threads (median of {reps} paired ratios): {:.2}x",
                "",
                median(&mut ratios)
            );
            println!("{:>5} machine capacity now: {cap:.2}x ({all} independent one-thread runs side by side)", "");
        }
        match memory_of(n) {
            Some(mb) => println!("{:>5} peak memory of one world, 1000 steps: {mb:.1} MB", ""),
            None => println!("{:>5} peak memory: not measurable on this OS", ""),
        }
    }
}
