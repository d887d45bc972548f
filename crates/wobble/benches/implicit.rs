//! Implicit Euler on the benchmark cloth (issue 13; see `docs/performance.md`).
//!
//! Run with `cargo bench -p wobble --bench implicit`. For N = 32, 64, 128 and 256 it
//! builds the N × N benchmark cloth (`wobble::build::bench`, two top corners
//! pinned), switches it to implicit Euler at h = 1e-3 s with a relative tolerance of
//! 1e-6 on the true residual, releases it from rest (it falls and swings, so a warm
//! start cannot get away with zero iterations) and steps it with each linear solver
//! (`SolverKind`), today's default thread pool (every core, pinned). It prints steps
//! per second, CG iterations per step, the worst true relative residual, and the
//! split of a step between forces, assembly, preconditioner set-up, the solve and
//! everything else.
//!
//! In the same invocation it builds and runs the plain C loop of
//! `../shared/bench-ref/cloth_ref.c` (single precision, `-O3 -march=native
//! -ffast-math`, symplectic Euler at h = 1e-4 s) at the same N and prints the ratio
//! "one implicit step costs N explicit C steps", which compares across noisy
//! machines. Without gcc or the reference file that column is left out.
//!
//! Options (environment): `WOBBLE_BENCH_N="64 128"` for sizes, `WOBBLE_BENCH_STEPS`
//! for the steps per run (default scaled by size), `WOBBLE_BENCH_SOLVERS="cg
//! cg-jacobi"` for the solvers, `WOBBLE_BENCH_THREADS` for the pool size.

use std::path::PathBuf;
use std::time::Instant;

use wobble::build::bench::{bench_damping, bench_world};
use wobble::integrate::IntegratorKind;
use wobble::solve::{CgSettings, SolverKind};

/// What one run measured.
struct Run {
    steps_per_s: f64,
    iterations: f64,
    worst_residual: f64,
    /// Seconds per step: forces, assembly, preconditioner, solve, rest.
    split: [f64; 5],
}

fn run(n: usize, solver: SolverKind, steps: u64, pool: &rayon::ThreadPool) -> Run {
    let (mut w, _) = bench_world(n).expect("bench world");
    w.set_integrator(IntegratorKind::ImplicitEuler);
    w.set_dt(1e-3).expect("dt");
    w.set_solver_settings(CgSettings { tolerance: 1e-6, solver, ..CgSettings::default() });
    let (mut it, mut worst, mut split) = (0u64, 0.0f64, [0.0; 5]);
    let t0 = Instant::now();
    pool.install(|| {
        for _ in 0..steps {
            let s0 = Instant::now();
            let r = w.step().expect("implicit step");
            let total = s0.elapsed().as_secs_f64();
            it += u64::from(r.iterations);
            worst = worst.max(r.residual);
            split[0] += r.seconds_forces;
            split[1] += r.seconds_jacobian;
            split[2] += r.seconds_preconditioner;
            split[3] += r.seconds_solve;
            split[4] += total - r.seconds_forces - r.seconds_jacobian - r.seconds_preconditioner - r.seconds_solve;
        }
    });
    let secs = t0.elapsed().as_secs_f64();
    Run {
        steps_per_s: steps as f64 / secs,
        iterations: it as f64 / steps as f64,
        worst_residual: worst,
        split: split.map(|s| s / steps as f64),
    }
}

/// The C reference loop's steps per second at size n (single precision, fast-math),
/// or None when it cannot be built here.
fn c_loop_steps_per_s(exe: &PathBuf, n: usize) -> Option<f64> {
    let c = format!("{}", bench_damping(n) * 1.0);
    let out =
        std::process::Command::new(exe).args([&n.to_string(), "1000", "100", "5", "1e-4", "1000", &c]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    // "timing: ... median 0.1234 s -> 8100.0 steps/s, ..."
    let line = text.lines().find(|l| l.starts_with("timing:"))?;
    line.split("-> ").nth(1)?.split_whitespace().next()?.parse().ok()
}

fn build_c_loop() -> Option<PathBuf> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench-ref/cloth_ref.c");
    if !src.exists() {
        return None;
    }
    let exe = std::env::temp_dir().join(format!("wobble-implicit-bench-cloth-f32-{}", std::process::id()));
    let ok = std::process::Command::new("gcc")
        .args(["-O3", "-march=native", "-ffast-math", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-lm")
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(exe)
}

fn main() {
    let sizes: Vec<usize> = std::env::var("WOBBLE_BENCH_N")
        .map(|s| s.split_whitespace().filter_map(|t| t.parse().ok()).collect())
        .unwrap_or_else(|_| vec![32, 64, 128, 256]);
    let solvers: Vec<SolverKind> = std::env::var("WOBBLE_BENCH_SOLVERS")
        .map(|s| s.split_whitespace().filter_map(SolverKind::from_name).collect())
        .unwrap_or_else(|_| SolverKind::ALL.to_vec());
    let fixed_steps: Option<u64> = std::env::var("WOBBLE_BENCH_STEPS").ok().and_then(|s| s.parse().ok());
    let threads = std::env::var("WOBBLE_BENCH_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let pool = wobble::par::pinned_pool(threads).expect("thread pool");
    let c_exe = build_c_loop();
    println!("wobble implicit benchmark: benchmark cloth released from rest, implicit Euler, h = 1e-3 s,");
    println!(
        "tolerance 1e-6 on the true relative residual, {threads} thread(s); C loop: f32 symplectic Euler, h = 1e-4 s"
    );
    println!(
        "{:>4} {:>10} {:>6} {:>9} {:>8} {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>9}",
        "N",
        "solver",
        "steps",
        "steps/s",
        "it/step",
        "residual",
        "forces",
        "assem",
        "precond",
        "solve",
        "rest",
        "C st/s",
        "C steps"
    );
    for n in sizes {
        let steps = fixed_steps.unwrap_or(match n {
            0..=32 => 400,
            33..=64 => 200,
            65..=128 => 100,
            _ => 30,
        });
        let c_before = c_exe.as_ref().and_then(|e| c_loop_steps_per_s(e, n));
        let runs: Vec<(SolverKind, Run)> = solvers.iter().map(|&s| (s, run(n, s, steps, &pool))).collect();
        let c_after = c_exe.as_ref().and_then(|e| c_loop_steps_per_s(e, n));
        // The C loop's rate around the runs (mean of the readings before and after).
        let c = match (c_before, c_after) {
            (Some(a), Some(b)) => Some(0.5 * (a + b)),
            (a, b) => a.or(b),
        };
        for (solver, r) in &runs {
            let ms = r.split.map(|s| format!("{:.2}", s * 1e3));
            let (c_rate, ratio) = c.map_or(("-".to_string(), "-".to_string()), |c| {
                (format!("{c:.0}"), format!("{:.1}", c / r.steps_per_s))
            });
            println!(
                "{n:>4} {:>10} {steps:>6} {:>9.1} {:>8.1} {:>9.1e} {:>7} {:>7} {:>7} {:>7} {:>7} {c_rate:>8} {ratio:>9}",
                solver.name(),
                r.steps_per_s,
                r.iterations,
                r.worst_residual,
                ms[0],
                ms[1],
                ms[2],
                ms[3],
                ms[4],
            );
        }
        if let (Some(base), Some(new)) =
            (runs.iter().find(|(s, _)| *s == SolverKind::CgJacobi), runs.iter().find(|(s, _)| *s == SolverKind::Cg))
        {
            println!("{:>4} cg / cg-jacobi speed in this run: {:.2}x", "", new.1.steps_per_s / base.1.steps_per_s);
        }
    }
    println!("(time split columns in ms per step; \"C steps\": one implicit step costs that many C-loop steps)");
    if let Some(e) = c_exe {
        std::fs::remove_file(e).ok();
    }
}
