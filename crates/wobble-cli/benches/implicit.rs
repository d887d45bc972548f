//! Implicit Euler on the benchmark cloth (issue 13; see `docs/performance.md`): the
//! code of `wobble bench implicit` (`src/bench.rs`, included here), printed as a table.
//!
//! Run with `cargo bench -p wobble-cli --bench implicit`. Options (environment,
//! lists separated by spaces or commas): `WOBBLE_BENCH_N="64 128"` for sizes (default 32 64 128 256), `WOBBLE_BENCH_STEPS`
//! for the steps per run (default scaled by size), `WOBBLE_BENCH_SOLVERS="cg
//! cg-jacobi"` for the solvers, `WOBBLE_BENCH_THREADS` for the pool size.

#[path = "../src/bench.rs"]
mod bench;

use wobble::solve::SolverKind;

fn main() {
    let sizes: Vec<usize> =
        list("WOBBLE_BENCH_N", |t| t.parse().ok().filter(|&n| n > 0)).unwrap_or_else(|| vec![32, 64, 128, 256]);
    let solvers: Vec<SolverKind> =
        list("WOBBLE_BENCH_SOLVERS", SolverKind::from_name).unwrap_or_else(|| SolverKind::ALL.to_vec());
    let steps: Option<u64> = std::env::var("WOBBLE_BENCH_STEPS").ok().and_then(|s| s.parse().ok());
    let threads = std::env::var("WOBBLE_BENCH_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    println!("wobble implicit benchmark: benchmark cloth released from rest, implicit Euler, h = 1e-3 s,");
    println!(
        "tolerance 1e-6 on the true relative residual, {threads} thread(s); C loop: f32 symplectic Euler, h = 1e-4 s"
    );
    println!("{}", bench::table_header());
    let result = bench::run_all(&sizes, &solvers, steps, threads, |runs| {
        for r in runs {
            println!("{}", bench::table_row(r));
        }
    });
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    println!("(time split columns in ms per step; \"C steps\": one implicit step costs that many C-loop steps)");
}

/// The items of environment variable `key` (separated by spaces or commas), or
/// `None` when it is not set; exits with a message naming the item it cannot read.
fn list<T>(key: &str, parse: impl Fn(&str) -> Option<T>) -> Option<Vec<T>> {
    let text = std::env::var(key).ok()?;
    let items: Vec<T> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| {
            parse(t).unwrap_or_else(|| {
                eprintln!("error: {key}: cannot read `{t}` (in `{text}`)");
                std::process::exit(2);
            })
        })
        .collect();
    if items.is_empty() {
        eprintln!("error: {key} is set but lists nothing");
        std::process::exit(2);
    }
    Some(items)
}
