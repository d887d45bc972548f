//! `wobble run` and `wobble info`: the command-line face of
//! [`wobble_io::run`], which owns the life of a run (folder, manifest, frames,
//! checkpoints, resume). Here live what only a terminal has: the progress bar,
//! the SIGINT/SIGTERM handler and the test hook that raises them, and the
//! messages printed when a run ends.

use std::fmt::Write as _;
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use wobble::World;
use wobble::integrate::IntegratorKind;
use wobble_io::run::{MessageKind, Plan, RunEnd, RunError, RunObserver, RunOptions, RunOutcome};
use wobble_scene::{Built, Scene};

use crate::interrupt;

/// The terminal's view of a run: a progress bar (hidden when quiet), messages on
/// stdout/stderr, stop requests from the signal handler.
struct Terminal {
    quiet: bool,
    bar: ProgressBar,
    tick: u64,
    hook: Option<(u64, i32, bool)>,
}

impl Terminal {
    fn new(quiet: bool) -> Self {
        if let Err(e) = interrupt::install() {
            eprintln!("warning: cannot catch Ctrl-C ({e}); an interrupt will stop the run without a summary");
        }
        Terminal { quiet, bar: ProgressBar::hidden(), tick: 1, hook: interrupt::test_hook() }
    }
}

impl RunObserver for Terminal {
    fn message(&mut self, kind: MessageKind, text: &str) {
        match kind {
            MessageKind::Info if !self.quiet => self.bar.suspend(|| println!("{text}")),
            MessageKind::Info => {}
            MessageKind::Warning => self.bar.suspend(|| eprintln!("warning: {text}")),
        }
    }

    fn started(&mut self, first: u64, planned: u64) {
        if !self.quiet {
            self.bar = ProgressBar::new(planned);
            self.bar.set_style(
                ProgressStyle::with_template("{spinner} {bar:40} {pos}/{len} steps  {per_sec}  eta {eta}  {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            self.bar.set_position(first);
        }
        self.tick = (planned / 200).max(1);
    }

    fn stop_requested(&mut self) -> Option<i32> {
        interrupt::requested()
    }

    fn stepped(&mut self, k: u64, world: &World) {
        if let Some((at, sig, twice)) = self.hook
            && at == k
        {
            interrupt::raise(sig);
            if twice {
                interrupt::raise(sig);
            }
        }
        if k.is_multiple_of(self.tick) {
            self.bar.set_position(k);
            self.bar.set_message(format!("t = {:.3} s", world.time()));
        }
    }
}

/// What `wobble run` was asked to do.
pub enum Job<'a> {
    /// Run a scene into a new folder.
    Run(&'a Scene),
    /// Continue the run in a folder.
    Resume(&'a Path),
}

/// Does `job` with the progress bar and the signal handler, prints how it ended
/// and returns it.
pub fn run_in_terminal(job: Job<'_>, opts: &RunOptions, quiet: bool) -> Result<RunEnd, RunError> {
    let mut terminal = Terminal::new(quiet);
    let outcome = match job {
        Job::Resume(dir) => wobble_io::run::resume(dir, opts.max_memory, &mut terminal),
        Job::Run(scene) => wobble_io::run::run(scene, opts, &mut terminal),
    };
    terminal.bar.finish_and_clear();
    let outcome = outcome?;
    report(&outcome, quiet);
    Ok(outcome.end)
}

/// Prints how a run ended.
fn report(o: &RunOutcome, quiet: bool) {
    let dir = o.dir.display();
    match o.end {
        RunEnd::BlewUp => {
            eprintln!("error: {}", o.error.as_deref().unwrap_or("the simulation blew up"));
            eprintln!("outputs up to the failure are in {dir}");
        }
        RunEnd::Failed => eprintln!("error: {}", o.error.as_deref().unwrap_or("an output could not be written")),
        RunEnd::Interrupted(_) => eprintln!(
            "interrupted after step {} of {}; the outputs up to it and a checkpoint are in {dir}: continue with `wobble run --resume {dir}`",
            o.steps_done, o.steps_planned
        ),
        RunEnd::Finished if !quiet => println!(
            "{} steps ({:.3} s simulated) in {:.2} s: {:.0} steps/s; {} frames, metrics and summary in {dir}",
            o.steps_done - o.first_step,
            o.time,
            o.wall_seconds,
            o.steps_per_second,
            o.frames
        ),
        RunEnd::Finished => {}
    }
}

/// The text of `wobble info`.
#[must_use]
pub fn info_text(scene: &Scene, built: &Built) -> String {
    let w = &built.world;
    let sim = &scene.simulation;
    let mut s = String::new();
    let _ = writeln!(s, "scene        {}", scene.source.name);
    let _ = writeln!(
        s,
        "integrator   {} with dt = {} s, {} steps ({} s)",
        sim.integrator,
        sim.dt,
        sim.total_steps(),
        sim.total_steps() as f64 * sim.dt
    );
    let _ = writeln!(
        s,
        "particles    {} ({} pinned), total mass {:.6} kg",
        w.state.len(),
        w.particles.pinned.iter().filter(|p| **p).count(),
        w.particles.total_mass()
    );
    for b in &w.topology.bodies {
        let vol =
            w.topology.enclosed_volume(b, &w.state.x).map(|v| format!(", encloses {v:.6e} m³")).unwrap_or_default();
        let _ = writeln!(
            s,
            "  body {:<14} {:<8} {} particles, {} triangles{vol}",
            b.name,
            b.kind,
            b.particles.len(),
            b.triangles.len()
        );
        if let Some(m) = built.bodies.iter().find(|x| x.name == b.name).and_then(|x| x.material) {
            let _ = writeln!(
                s,
                "    material: {:.4} kg, over-pressure {:.4e} Pa, membrane {:.4e} N/m ({:.4e} N s/m), bending {:.4e} J ({:.4e} J s){}, membrane pre-strain {:.2} %, radius of equal volume {:.4} m",
                m.mass,
                m.over_pressure,
                m.membrane_stiffness,
                m.membrane_damping,
                m.bending_stiffness,
                m.bending_damping,
                if b.particles.len() == b.triangles.len() / 2 + 2 {
                    String::new()
                } else {
                    format!(", lining {:.4e} Pa ({:.4e} Pa s)", m.layer_stiffness, m.layer_damping)
                },
                100.0 * m.prestrain,
                m.radius
            );
        }
    }
    for t in &w.forces {
        for (label, n) in t.counts() {
            let _ = writeln!(s, "  {label}: {n}");
        }
    }
    let _ = writeln!(s, "force terms  {}", w.forces.iter().map(|t| t.name()).collect::<Vec<_>>().join(", "));
    let _ = writeln!(
        s,
        "constraints  {}",
        if w.constraints.is_empty() {
            "none".to_owned()
        } else {
            w.constraints.iter().map(|c| c.name().to_owned()).collect::<Vec<_>>().join(", ")
        }
    );
    let plan = Plan::new(scene, &RunOptions::default());
    let estimate = wobble_io::run::estimate_memory(w, scene, &plan);
    let _ = writeln!(s, "memory       estimated peak of `wobble run`: {}", estimate.summary());
    for warning in &w.warnings {
        let _ = writeln!(s, "warning      {warning}");
    }
    let stab = w.stability();
    let (omega, particle) = stab.omega_max();
    let _ = writeln!(s, "stiffness    highest angular frequency bound ω = {omega:.4e} rad/s (particle {particle})");
    let _ = writeln!(
        s,
        "stable dt    conservative bound on the largest stable time step (from a bound on the stiffest mode's stiffness, damping and mass; a step above it may still run):"
    );
    for kind in IntegratorKind::ALL {
        let est = stab.dt_for(kind);
        let text = match est {
            Some(h) if h.is_infinite() && kind == IntegratorKind::ImplicitEuler => {
                format!("no limit (A-stable){}", if kind == sim.integrator { "  ← in use" } else { "" })
            }
            Some(h) if h.is_infinite() => "no limit (nothing stiff)".to_owned(),
            Some(h) => format!(
                "{h:.4e} s{}",
                if kind == sim.integrator {
                    if sim.dt <= h {
                        "  ← in use: dt is within"
                    } else {
                        "  ← in use: dt is above this conservative bound (the run may still be stable; if it blows up, step below it)"
                    }
                } else {
                    ""
                }
            ),
            None => format!(
                "unstable at any step without damping{}",
                if kind == sim.integrator { "  ← in use" } else { "" }
            ),
        };
        let _ = writeln!(s, "  {:<18} {text}", kind.name());
    }
    s
}
