//! `wobble`: run scenes, check them, and reproduce the papers' figures.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use miette::{Diagnostic, NamedSource, SourceSpan};
use wobble_scene::{Override, Scene, SceneError, Source};

mod bench;
mod interrupt;
mod render_command;
mod run;

use wobble_experiments as experiments;
use wobble_viz::plot;

/// The built-in default scene (`scenes/default.toml`).
pub const DEFAULT_SCENE: &str = include_str!("../../../scenes/default.toml");
/// Name shown for the built-in scene.
pub const DEFAULT_SCENE_NAME: &str = "<built-in default: scenes/default.toml>";

#[derive(Parser, Debug)]
#[command(name = "wobble", version, about = "Particle-based soft-body simulation", long_about = None)]
struct Cli {
    /// Worker threads (default: every core). Results are identical for any count.
    #[arg(long, global = true)]
    threads: Option<usize>,
    /// Override a scene value by its dotted path, e.g.
    /// `--set body.cloth.springs.structural.stiffness=800` or `--set simulation.dt=5e-4`
    /// (repeatable; for commands that read a scene file).
    #[arg(long = "set", global = true, value_name = "KEY=VALUE", value_parser = parse_override)]
    set: Vec<Override>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scene and write frames, metrics and a summary.
    Run {
        /// Scene file (default: the built-in default scene).
        #[arg(conflicts_with = "resume")]
        scene: Option<PathBuf>,
        /// Simulated time, s (overrides the scene).
        #[arg(long, conflicts_with = "steps")]
        duration: Option<f64>,
        /// Number of steps (overrides the scene).
        #[arg(long)]
        steps: Option<u64>,
        /// Output directory (default: out/SCENE, SCENE being the file name without extension).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write no frame files.
        #[arg(long)]
        no_frames: bool,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
        /// Replace the outputs of an earlier run in the output folder (only the
        /// files its run.json proves are its own are removed).
        #[arg(long, conflicts_with = "resume")]
        overwrite: bool,
        /// Refuse to start when the run's memory estimate exceeds SIZE (bytes, or
        /// with K, M, G, T: `512M`, `4G`). Default: the memory available now.
        #[arg(long, value_name = "SIZE", value_parser = wobble_io::memory::parse_size)]
        max_memory: Option<u64>,
        /// Continue the interrupted run in DIR from its checkpoint, bit for bit.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["duration", "steps", "out", "no_frames"])]
        resume: Option<PathBuf>,
    },
    /// Check a scene file: parse it and build its world.
    Validate {
        /// Scene file.
        scene: PathBuf,
    },
    /// Describe a scene: counts, mass, stiffness and the stable time step.
    Info {
        /// Scene file (default: the built-in default scene).
        scene: Option<PathBuf>,
    },
    /// Serve the interactive viewer on 127.0.0.1 and print its URL (with the launch token).
    View {
        /// Scene file (default: the built-in default scene).
        scene: Option<PathBuf>,
        /// Port on 127.0.0.1 (0 picks a free one).
        #[arg(long, default_value_t = 8080, conflicts_with = "listen")]
        port: u16,
        /// Serve on ADDR:PORT instead, e.g. 0.0.0.0:8080 — reachable from the network,
        /// unencrypted; the token is still required. Prefer SSH port forwarding.
        #[arg(long, value_name = "ADDR:PORT")]
        listen: Option<std::net::SocketAddr>,
        /// Most simultaneous connections; more are answered 503.
        #[arg(long, default_value_t = wobble_viewer::limits::MAX_CONNECTIONS as u32,
              value_parser = clap::value_parser!(u32).range(1..=4096))]
        max_connections: u32,
        /// Directory the scene chooser lists (default: the scene's directory, else `scenes`).
        #[arg(long)]
        scenes: Option<PathBuf>,
    },
    /// Render a scene (running it) or a run directory's frames to PNG, without a GPU.
    Render {
        /// A scene file, or a directory written by `wobble run`.
        input: PathBuf,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Render every k-th step (scene) or frame file (run directory).
        #[arg(long)]
        every: Option<u64>,
        /// Image width, pixels.
        #[arg(long)]
        width: Option<usize>,
        /// Image height, pixels.
        #[arg(long)]
        height: Option<usize>,
        /// Also write animation.gif.
        #[arg(long)]
        gif: bool,
        /// Colour by spring strain (blue compressed, red stretched).
        #[arg(long)]
        strain: bool,
        /// Draw the springs.
        #[arg(long)]
        springs: bool,
        /// Flat shading (one normal per triangle) instead of Gouraud.
        #[arg(long)]
        flat: bool,
        /// Simulated time for a scene, s.
        #[arg(long, conflicts_with = "steps")]
        duration: Option<f64>,
        /// Steps for a scene.
        #[arg(long)]
        steps: Option<u64>,
    },
    /// Benchmarks that print figures beside the C reference loop.
    Bench {
        #[command(subcommand)]
        kind: BenchKind,
    },
    /// Run a named experiment (a paper figure or a check) and write its data, plots
    /// and summary.
    Experiment {
        /// Experiment name, or `all`.
        name: Option<String>,
        /// List the experiments.
        #[arg(long)]
        list: bool,
        /// Output directory.
        #[arg(long, default_value = "out/experiments")]
        out: PathBuf,
        /// Exit with status 1 if any experiment fails its claim.
        #[arg(long)]
        strict: bool,
    },
}

#[derive(Subcommand, Debug)]
enum BenchKind {
    /// Implicit Euler on the benchmark cloth at several sizes and with each linear
    /// solver: steps/s, CG iterations, residual, time split, and the cost of a step
    /// in explicit steps of the C reference loop; writes implicit.csv and a log–log
    /// plot of the cost of a step against the particle count.
    Implicit {
        /// Cloth sizes N (N × N particles), comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = [32usize, 64, 128, 256])]
        sizes: Vec<usize>,
        /// Linear solvers, comma-separated (cg, cg-jacobi, cholesky, auto).
        #[arg(long, value_delimiter = ',', default_values_t = ["cg".to_string(), "cg-jacobi".to_string()])]
        solvers: Vec<String>,
        /// Steps per run (default: 400, 200, 100, 30 steps for N ≤ 32, 64, 128, more).
        #[arg(long)]
        steps: Option<u64>,
        /// Output directory.
        #[arg(long, default_value = "out/bench")]
        out: PathBuf,
    },
}

/// A scene error as a miette diagnostic with the source line underlined.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{message}")]
struct SceneDiagnostic {
    message: String,
    #[source_code]
    src: NamedSource<String>,
    #[label("here")]
    span: SourceSpan,
    #[help]
    help: Option<String>,
}

impl From<&SceneError> for SceneDiagnostic {
    fn from(e: &SceneError) -> Self {
        let (line, col) = (e.line(), e.column());
        SceneDiagnostic {
            message: format!("{}:{line}:{col}: {}", e.source.name, e.message),
            src: NamedSource::new(e.source.name.clone(), printable_excerpt(&e.source.text)),
            span: (e.span.start, e.span.len()).into(),
            help: e.help.clone(),
        }
    }
}

/// The scene text with every control character but newlines and tabs replaced by
/// `?` (as many as its UTF-8 bytes, so spans still point at the same text): the
/// excerpt under an error must not carry escape codes to the terminal.
fn printable_excerpt(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let keep = !c.is_control() || matches!(c, '\n' | '\t' | '\r');
            let n = if keep { 0 } else { c.len_utf8() };
            std::iter::repeat_n('?', n).chain(keep.then_some(c))
        })
        .collect()
}

/// Prints a scene error with its source excerpt.
fn report_scene_error(e: &SceneError) {
    eprintln!("{:?}", miette::Report::new(SceneDiagnostic::from(e)));
}

/// Loads a scene file, or the built-in default, with `overrides` applied.
pub fn load_scene(path: Option<&Path>, overrides: &[Override]) -> Result<Scene, SceneError> {
    match path {
        Some(p) => Scene::load_with(p, overrides),
        None => Scene::parse_with(Source::new(DEFAULT_SCENE_NAME, DEFAULT_SCENE), PathBuf::from("scenes"), overrides),
    }
}

/// Runs `f` on a thread of the global pool, so that the engine's parallel loops
/// fork from a worker (the other workers steal their halves) instead of being
/// handed over from the main thread and waited for at every loop: on a 4096-particle
/// cloth with two threads that handover cost more than the step itself.
fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    rayon::scope(|_| f())
}

/// Reads one `--set KEY=VALUE`.
fn parse_override(arg: &str) -> Result<Override, String> {
    Override::parse(arg).map_err(|e| match e.help {
        Some(help) => format!("{} ({help})", e.message),
        None => e.message,
    })
}

fn main() -> ExitCode {
    wobble_io::memory::mark_start();
    // Keep file:line:col and paths on one line, whatever the terminal width.
    let _ = miette::set_hook(Box::new(|_| Box::new(miette::MietteHandlerOpts::new().wrap_lines(false).build())));
    let cli = Cli::parse();
    let threads = cli.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if threads == 0 {
        eprintln!("error: --threads must be at least 1");
        return ExitCode::from(2);
    }
    if let Err(e) = wobble::par::pin_global_pool(threads) {
        eprintln!("error: cannot start {threads} threads: {e}");
        return ExitCode::from(2);
    }
    match cli.command {
        Command::Run { scene, duration, steps, out, no_frames, quiet, overwrite, max_memory, resume } => {
            if let Some(d) = duration
                && !(d.is_finite() && d >= 0.0)
            {
                eprintln!("error: --duration {d} is invalid: give a simulated time in seconds, ≥ 0");
                return ExitCode::from(2);
            }
            let result = match resume {
                Some(_) if !cli.set.is_empty() => {
                    eprintln!("error: --set cannot change a run being resumed (its scene.toml is fixed)");
                    return ExitCode::from(2);
                }
                Some(dir) => {
                    let opts = wobble_io::run::RunOptions { max_memory, ..Default::default() };
                    on_pool(|| run::run_in_terminal(run::Job::Resume(&dir), &opts, quiet))
                }
                None => {
                    let scene = match load_scene(scene.as_deref(), &cli.set) {
                        Ok(s) => s,
                        Err(e) => {
                            report_scene_error(&e);
                            return ExitCode::from(2);
                        }
                    };
                    let opts = wobble_io::run::RunOptions {
                        duration,
                        steps,
                        out,
                        no_frames,
                        overwrite,
                        max_memory,
                        command_line: None,
                    };
                    on_pool(|| run::run_in_terminal(run::Job::Run(&scene), &opts, quiet))
                }
            };
            match result {
                Ok(wobble_io::run::RunEnd::Finished) => ExitCode::SUCCESS,
                Ok(wobble_io::run::RunEnd::BlewUp) => ExitCode::from(3),
                Ok(wobble_io::run::RunEnd::Interrupted(sig)) => ExitCode::from(interrupt::exit_code(sig)),
                Ok(wobble_io::run::RunEnd::Failed) => ExitCode::from(1),
                Err(wobble_io::run::RunError::Scene(e)) => {
                    report_scene_error(&e);
                    ExitCode::from(2)
                }
                Err(wobble_io::run::RunError::Refused(msg)) => {
                    eprintln!("error: {msg}");
                    ExitCode::from(2)
                }
                Err(wobble_io::run::RunError::Io(msg)) => {
                    eprintln!("error: {msg}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Validate { scene } => match load_scene(Some(&scene), &cli.set).and_then(|s| s.build().map(|b| (s, b)))
        {
            Ok((s, built)) => {
                let w = &built.world;
                println!(
                    "{}: ok — {} bodies, {} particles, {} springs, {} steps of {} s with {}",
                    scene.display(),
                    w.topology.bodies.len(),
                    w.state.len(),
                    w.segments().len(),
                    s.simulation.total_steps(),
                    s.simulation.dt,
                    s.simulation.integrator
                );
                // What `run` would warn about (bodies that start interpenetrating).
                for warning in &w.warnings {
                    eprintln!("warning: {warning}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                report_scene_error(&e);
                ExitCode::from(2)
            }
        },
        Command::Info { scene } => match load_scene(scene.as_deref(), &cli.set).and_then(|s| s.build().map(|b| (s, b)))
        {
            Ok((s, built)) => {
                print!("{}", run::info_text(&s, &built));
                ExitCode::SUCCESS
            }
            Err(e) => {
                report_scene_error(&e);
                ExitCode::from(2)
            }
        },
        Command::View { scene, port, listen, max_connections, scenes } => {
            let listen = listen.unwrap_or_else(|| std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port)));
            let limits = wobble_viewer::Limits { max_connections: max_connections as usize, ..Default::default() };
            view_command(scene.as_deref(), &cli.set, wobble_viewer::Options { listen, limits }, scenes)
        }
        Command::Bench { .. } if !cli.set.is_empty() => {
            eprintln!("error: --set applies to scene files; benchmarks fix their own set-ups");
            ExitCode::from(2)
        }
        Command::Bench { kind: BenchKind::Implicit { sizes, solvers, steps, out } } => {
            bench_implicit_command(&sizes, &solvers, steps, &out, threads)
        }
        Command::Experiment { .. } if !cli.set.is_empty() => {
            eprintln!("error: --set applies to scene files; experiments fix their own set-ups");
            ExitCode::from(2)
        }
        Command::Experiment { name, list, out, strict } => on_pool(|| experiment_command(name, list, &out, strict)),
        Command::Render { input, out, every, width, height, gif, strain, springs, flat, duration, steps } => {
            for (what, v) in [("--width", width), ("--height", height)] {
                if let Some(v) = v
                    && !(16..=8192).contains(&v)
                {
                    eprintln!("error: {what} {v} must lie in 16..=8192 pixels");
                    return ExitCode::from(2);
                }
            }
            if every == Some(0) {
                eprintln!("error: --every must be at least 1");
                return ExitCode::from(2);
            }
            let opts = render_command::RenderOptions {
                out,
                every,
                width,
                height,
                gif,
                strain,
                springs,
                flat,
                duration,
                steps,
            };
            let result = if input.is_dir() && !cli.set.is_empty() {
                eprintln!("error: --set applies to scene files, not to a run directory's frames");
                return ExitCode::from(2);
            } else if input.is_dir() {
                render_command::render_run_dir(&input, &opts)
            } else {
                match load_scene(Some(&input), &cli.set) {
                    Ok(scene) => render_command::render_scene(&scene, &opts),
                    Err(e) => {
                        report_scene_error(&e);
                        return ExitCode::from(2);
                    }
                }
            };
            match result {
                Ok(n) => {
                    println!("{n} frames in {}", opts.out.display());
                    ExitCode::SUCCESS
                }
                Err(msg) => {
                    eprintln!("error: {msg}");
                    ExitCode::from(1)
                }
            }
        }
    }
}

fn view_command(
    scene: Option<&Path>,
    overrides: &[Override],
    options: wobble_viewer::Options,
    scenes: Option<PathBuf>,
) -> ExitCode {
    let loaded = match load_scene(scene, overrides) {
        Ok(s) => s,
        Err(e) => {
            report_scene_error(&e);
            return ExitCode::from(2);
        }
    };
    let dir = scenes
        .or_else(|| {
            scene
                .and_then(Path::parent)
                .map(|p| if p.as_os_str().is_empty() { PathBuf::from(".") } else { p.to_path_buf() })
        })
        .or_else(|| {
            let d = PathBuf::from("scenes");
            d.is_dir().then_some(d)
        });
    match wobble_viewer::Viewer::bind_with(loaded, dir, options) {
        Ok(viewer) => {
            if !options.listen.ip().is_loopback() {
                eprintln!(
                    "warning: serving on {} — reachable from other machines, over unencrypted HTTP. Anyone who \
                     sees the URL below can drive the simulation. Prefer listening on 127.0.0.1 and \
                     `ssh -L PORT:127.0.0.1:PORT HOST` from the other machine (see the README).",
                    viewer.local_addr().map_or_else(|_| options.listen.to_string(), |a| a.to_string())
                );
            }
            match viewer.url() {
                // The one place the token is shown: it is the key to the viewer.
                Ok(url) => println!("wobble viewer: {url}"),
                Err(e) => eprintln!("warning: cannot read the bound address: {e}"),
            }
            let viewer = viewer.on_notice(|notice| println!("wobble viewer: {notice}"));
            viewer.run();
            ExitCode::SUCCESS
        }
        Err(wobble_viewer::ViewerError::Scene(e)) => {
            report_scene_error(&e);
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn bench_implicit_command(
    sizes: &[usize],
    solvers: &[String],
    steps: Option<u64>,
    out: &Path,
    threads: usize,
) -> ExitCode {
    use wobble::solve::SolverKind;
    let mut kinds = Vec::new();
    for name in solvers {
        match SolverKind::from_name(name) {
            Some(k) => kinds.push(k),
            None => {
                let names: Vec<&str> = SolverKind::ALL.iter().map(|k| k.name()).collect();
                eprintln!("error: unknown solver `{name}`; choose from: {}", names.join(", "));
                return ExitCode::from(2);
            }
        }
    }
    if let Some(&n) = sizes.iter().find(|&&n| !(2..=1024).contains(&n)) {
        eprintln!("error: size {n} is outside 2..=1024");
        return ExitCode::from(2);
    }
    if steps == Some(0) {
        eprintln!("error: --steps must be at least 1");
        return ExitCode::from(2);
    }
    println!("implicit Euler on the benchmark cloth released from rest, h = 1e-3 s, tolerance 1e-6 on the true");
    println!("relative residual, {threads} thread(s); C loop: f32 symplectic Euler, h = 1e-4 s (ms per step)");
    println!("{}", bench::table_header());
    let runs = match bench::run_all(sizes, &kinds, steps, threads, |runs| {
        for r in runs {
            println!("{}", bench::table_row(r));
        }
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    println!("\"C steps\": one implicit step costs that many steps of the C loop at the same N");
    match bench_implicit_outputs(&runs, &kinds, out) {
        Ok(lines) => {
            for l in lines {
                println!("{l}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// Writes `implicit.csv` and `implicit.png` (cost of a step against particles,
/// log–log, one line per solver) and returns the growth and speed-up lines.
fn bench_implicit_outputs(
    runs: &[bench::Run],
    kinds: &[wobble::solve::SolverKind],
    out: &Path,
) -> Result<Vec<String>, String> {
    use plot::{Chart, Series, Style};
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let mut csv = String::from(
        "n,particles,solver,steps,steps_per_s,cg_iterations_per_step,worst_residual,forces_ms,assembly_ms,\
         preconditioner_ms,solve_ms,rest_ms,c_loop_steps_per_s,c_steps_per_implicit_step\n",
    );
    for r in runs {
        let ms = r.split.map(|s| format!("{:e}", s * 1e3));
        let c = r.c_steps_per_s.map_or_else(String::new, |c| format!("{c:e}"));
        let ratio = r.c_steps().map_or_else(String::new, |c| format!("{c:e}"));
        csv.push_str(&format!(
            "{},{},{},{},{:e},{:e},{:e},{},{c},{ratio}\n",
            r.n,
            r.n * r.n,
            r.solver.name(),
            r.steps,
            r.steps_per_s,
            r.iterations,
            r.worst_residual,
            ms.join(",")
        ));
    }
    let csv_path = out.join("implicit.csv");
    std::fs::write(&csv_path, csv).map_err(|e| format!("cannot write {}: {e}", csv_path.display()))?;
    let mut lines = Vec::new();
    let mut chart = Chart::new(
        "Implicit Euler on the benchmark cloth: cost of a step",
        "particles (N × N)",
        "wall time per step (ms)",
    )
    .log_log();
    for &k in kinds {
        let of: Vec<&bench::Run> = runs.iter().filter(|r| r.solver == k).collect();
        let pts: Vec<(f64, f64)> = of.iter().map(|r| ((r.n * r.n) as f64, 1e3 / r.steps_per_s)).collect();
        let slope = experiments::log_log_slope(&pts);
        let steps: Vec<String> = pts.windows(2).map(|w| format!("{:.2}", experiments::log_log_slope(w))).collect();
        if pts.len() >= 2 {
            lines.push(format!(
                "{}: cost grows as particles^{slope:.2} over the sizes (between neighbours: {})",
                k.name(),
                steps.join(", ")
            ));
        }
        chart = chart.with(Series::new(format!("{} (slope {slope:.2})", k.name()), pts, Style::LinePoints));
    }
    let sizes: std::collections::BTreeSet<usize> = runs.iter().map(|r| r.n).collect();
    for n in sizes {
        let rate =
            |k: wobble::solve::SolverKind| runs.iter().find(|r| r.n == n && r.solver == k).map(|r| r.steps_per_s);
        if let (Some(new), Some(old)) = (rate(wobble::solve::SolverKind::Cg), rate(wobble::solve::SolverKind::CgJacobi))
        {
            lines.push(format!("N = {n}: cg runs {:.2} × as fast as cg-jacobi in this invocation", new / old));
        }
    }
    let png = out.join("implicit.png");
    chart.save(&png)?;
    lines.push(format!("wrote {} and {}", csv_path.display(), png.display()));
    Ok(lines)
}

fn experiment_command(name: Option<String>, list: bool, out: &Path, strict: bool) -> ExitCode {
    let registry = experiments::registry();
    if list || name.is_none() {
        println!("Experiments (run one with `wobble experiment NAME --out DIR`, or `all`):");
        for e in &registry {
            println!("  {:<28} {}", e.name, e.title);
        }
        return if list { ExitCode::SUCCESS } else { ExitCode::from(2) };
    }
    let name = name.unwrap_or_default();
    let chosen: Vec<&experiments::Experiment> = if name == "all" {
        registry.iter().collect()
    } else {
        match registry.iter().find(|e| e.name == name) {
            Some(e) => vec![e],
            None => {
                let names: Vec<&str> = registry.iter().map(|e| e.name).collect();
                let hint = wobble_scene::error::nearest(&name, names.iter().copied())
                    .map(|s| format!("; did you mean `{s}`?"))
                    .unwrap_or_default();
                eprintln!("error: unknown experiment `{name}`{hint} experiments: {}", names.join(", "));
                return ExitCode::from(2);
            }
        }
    };
    let (mut passed, mut findings, mut failed, mut errors) = (0, 0, 0, 0);
    let many = chosen.len() > 1;
    for e in chosen {
        let t0 = Instant::now();
        match experiments::run(e, out) {
            Ok(o) => {
                let verdict = o.verdict();
                println!(
                    "{:<7}  {:<28} {:>7.1} s  {}",
                    verdict.label(),
                    e.name,
                    t0.elapsed().as_secs_f64(),
                    out.join(e.name).join("summary.md").display()
                );
                match verdict {
                    experiments::Verdict::Pass => passed += 1,
                    experiments::Verdict::Finding => findings += 1,
                    experiments::Verdict::Fail => failed += 1,
                }
            }
            Err(msg) => {
                println!("ERROR    {:<28} {msg}", e.name);
                errors += 1;
            }
        }
    }
    if many {
        println!("{passed} PASS, {findings} FINDING, {failed} FAIL, {errors} ERROR");
    }
    if strict && failed + errors > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS }
}
