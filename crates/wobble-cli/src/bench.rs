//! Implicit Euler on the benchmark cloth (issue 13; `docs/performance.md`): what
//! `wobble bench implicit` and `cargo bench -p wobble-cli --bench implicit` run.
//!
//! For each size N it builds the N × N benchmark cloth (`wobble::build::bench`, two
//! top corners pinned), switches it to implicit Euler at h = 1e-3 s with a relative
//! tolerance of 1e-6 on the true residual, releases it from rest (it falls and
//! swings, so a warm start cannot get away with zero iterations) and steps it with
//! each linear solver on a thread pool of `threads` (pinned, as `wobble run`'s).
//! It measures steps per second, CG iterations per step, the worst true relative
//! residual and the split of a step between forces, assembly, preconditioner
//! set-up, the solve and everything else.
//!
//! In the same invocation it builds and runs the plain C loop of
//! `../shared/bench-ref/cloth_ref.c` (single precision, `-O3 -march=native
//! -ffast-math`, symplectic Euler at h = 1e-4 s) at the same N, before and after,
//! and reports "one implicit step costs N explicit C steps", a ratio that compares
//! across noisy machines. Without gcc or the reference file that column is empty.
//!
//! This file is also compiled into the cargo bench target (`benches/implicit.rs`
//! includes it), so it uses only the engine and the standard library.

use std::path::PathBuf;
use std::time::Instant;

use wobble::build::bench::{bench_damping, bench_world};
use wobble::integrate::IntegratorKind;
use wobble::solve::{CgSettings, SolverKind};

/// What one run measured.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    /// Cloth size (N × N particles).
    pub n: usize,
    /// The linear solver.
    pub solver: SolverKind,
    /// Steps taken.
    pub steps: u64,
    /// Steps per second of wall time.
    pub steps_per_s: f64,
    /// CG iterations per step.
    pub iterations: f64,
    /// Worst true relative residual of any step's solve.
    pub worst_residual: f64,
    /// Seconds per step: forces, assembly, preconditioner, solve, rest.
    pub split: [f64; 5],
    /// The C loop's steps per second at this N around the run (None without it).
    pub c_steps_per_s: Option<f64>,
}

impl Run {
    /// Explicit C-loop steps one implicit step costs.
    #[must_use]
    pub fn c_steps(&self) -> Option<f64> {
        self.c_steps_per_s.map(|c| c / self.steps_per_s)
    }
}

/// Default steps per run for a size: about a second per run on the 2-core machine.
#[must_use]
pub fn default_steps(n: usize) -> u64 {
    match n {
        0..=32 => 400,
        33..=64 => 200,
        65..=128 => 100,
        _ => 30,
    }
}

/// Steps the N × N benchmark cloth `steps` times with implicit Euler and `solver`.
pub fn time_implicit(n: usize, solver: SolverKind, steps: u64, pool: &rayon::ThreadPool) -> Result<Run, String> {
    let (mut w, _) = bench_world(n).map_err(|e| format!("cannot build the {n} × {n} cloth: {e}"))?;
    w.set_integrator(IntegratorKind::ImplicitEuler);
    w.set_dt(1e-3).map_err(|e| e.to_string())?;
    w.set_solver_settings(CgSettings { tolerance: 1e-6, solver, ..CgSettings::default() });
    let (mut it, mut worst, mut split) = (0u64, 0.0f64, [0.0; 5]);
    let t0 = Instant::now();
    pool.install(|| {
        for _ in 0..steps {
            let s0 = Instant::now();
            let r = w.step().map_err(|e| e.to_string())?;
            let total = s0.elapsed().as_secs_f64();
            it += u64::from(r.iterations);
            worst = worst.max(r.residual);
            split[0] += r.seconds_forces;
            split[1] += r.seconds_jacobian;
            split[2] += r.seconds_preconditioner;
            split[3] += r.seconds_solve;
            split[4] += total - r.seconds_forces - r.seconds_jacobian - r.seconds_preconditioner - r.seconds_solve;
        }
        Ok::<(), String>(())
    })?;
    let secs = t0.elapsed().as_secs_f64();
    Ok(Run {
        n,
        solver,
        steps,
        steps_per_s: steps as f64 / secs,
        iterations: it as f64 / steps as f64,
        worst_residual: worst,
        split: split.map(|s| s / steps as f64),
        c_steps_per_s: None,
    })
}

/// The plain C reference loop, compiled once for this invocation.
pub struct CReference {
    exe: PathBuf,
}

impl CReference {
    /// Where the reference source is looked for: `$WOBBLE_BENCH_REF`, then
    /// `../shared/bench-ref/cloth_ref.c` beside the repository.
    #[must_use]
    pub fn source() -> Option<PathBuf> {
        let candidates = [
            std::env::var_os("WOBBLE_BENCH_REF").map(PathBuf::from),
            Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench-ref/cloth_ref.c")),
            Some(PathBuf::from("../shared/bench-ref/cloth_ref.c")),
        ];
        candidates.into_iter().flatten().find(|p| p.is_file())
    }

    /// Compiles the loop with gcc (None when the source or gcc is missing).
    #[must_use]
    pub fn build() -> Option<CReference> {
        let src = Self::source()?;
        let exe = std::env::temp_dir().join(format!("wobble-implicit-bench-cloth-f32-{}", std::process::id()));
        let ok = std::process::Command::new("gcc")
            .args(["-O3", "-march=native", "-ffast-math", "-o"])
            .arg(&exe)
            .arg(&src)
            .arg("-lm")
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(CReference { exe })
    }

    /// The loop's steps per second at size n (its median of five timings).
    #[must_use]
    pub fn steps_per_s(&self, n: usize) -> Option<f64> {
        let c = format!("{}", bench_damping(n));
        let out = std::process::Command::new(&self.exe)
            .args([&n.to_string(), "1000", "100", "5", "1e-4", "1000", &c])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        // "timing: ... median 0.1234 s -> 8100.0 steps/s, ..."
        let line = text.lines().find(|l| l.starts_with("timing:"))?;
        line.split("-> ").nth(1)?.split_whitespace().next()?.parse().ok()
    }
}

impl Drop for CReference {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.exe);
    }
}

/// Runs every size with every solver, the C loop before and after each size, and
/// calls `each` with the runs of a size as they finish.
pub fn run_all(
    sizes: &[usize],
    solvers: &[SolverKind],
    steps: Option<u64>,
    threads: usize,
    mut each: impl FnMut(&[Run]),
) -> Result<Vec<Run>, String> {
    let pool = wobble::par::pinned_pool(threads).map_err(|e| format!("cannot start {threads} threads: {e}"))?;
    let c = CReference::build();
    let mut all = Vec::new();
    for &n in sizes {
        let steps = steps.unwrap_or_else(|| default_steps(n));
        let before = c.as_ref().and_then(|c| c.steps_per_s(n));
        let mut runs = solvers.iter().map(|&s| time_implicit(n, s, steps, &pool)).collect::<Result<Vec<Run>, _>>()?;
        let after = c.as_ref().and_then(|c| c.steps_per_s(n));
        // The C loop's rate around the runs (mean of the readings before and after).
        let rate = match (before, after) {
            (Some(a), Some(b)) => Some(0.5 * (a + b)),
            (a, b) => a.or(b),
        };
        for r in &mut runs {
            r.c_steps_per_s = rate;
        }
        each(&runs);
        all.extend(runs);
    }
    Ok(all)
}

/// The header of [`table_row`]'s table.
#[must_use]
pub fn table_header() -> String {
    format!(
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
    )
}

/// One line of the printed table (times in ms per step).
#[must_use]
pub fn table_row(r: &Run) -> String {
    let ms = r.split.map(|s| format!("{:.2}", s * 1e3));
    let c_rate = r.c_steps_per_s.map_or_else(|| "-".to_string(), |c| format!("{c:.0}"));
    let ratio = r.c_steps().map_or_else(|| "-".to_string(), |c| format!("{c:.1}"));
    format!(
        "{:>4} {:>10} {:>6} {:>9.1} {:>8.1} {:>9.1e} {:>7} {:>7} {:>7} {:>7} {:>7} {c_rate:>8} {ratio:>9}",
        r.n,
        r.solver.name(),
        r.steps,
        r.steps_per_s,
        r.iterations,
        r.worst_residual,
        ms[0],
        ms[1],
        ms[2],
        ms[3],
        ms[4],
    )
}
