//! `wobble run` and `wobble info`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use wobble::StepError;
use wobble::integrate::IntegratorKind;
use wobble_scene::{Built, Scene, SceneError};

use crate::output::frames::write_frame;
use crate::output::metrics::MetricsWriter;
use crate::output::peak_memory_mb;

/// Options of `wobble run`.
#[derive(Debug, Default)]
pub struct RunOptions {
    /// Simulated time override, s.
    pub duration: Option<f64>,
    /// Step count override.
    pub steps: Option<u64>,
    /// Output directory.
    pub out: Option<PathBuf>,
    /// Write no frames.
    pub no_frames: bool,
    /// No progress bar.
    pub quiet: bool,
}

/// How a run ended.
#[derive(Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// Every step ran.
    Finished,
    /// The simulation blew up (message printed, summary written).
    BlewUp,
}

/// Why a run could not start or write.
#[derive(Debug)]
pub enum RunError {
    /// The scene does not build.
    Scene(SceneError),
    /// An output could not be written.
    Io(String),
}

/// Frames per simulated second when the scene does not say.
const DEFAULT_FPS: f64 = 25.0;
/// Metrics rows per simulated second when the scene does not say.
const DEFAULT_METRICS_RATE: f64 = 100.0;

/// The directory name for a scene's outputs.
fn stem(scene: &Scene) -> String {
    Path::new(&scene.source.name)
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.starts_with('<'))
        .unwrap_or("default")
        .to_owned()
}

fn io(what: &str, path: &Path, e: impl std::fmt::Display) -> RunError {
    RunError::Io(format!("cannot write {what} {}: {e}", path.display()))
}

/// Runs `scene`, writing frames, `metrics.csv` and `summary.json`.
pub fn run(scene: &Scene, opts: &RunOptions) -> Result<RunEnd, RunError> {
    let Built { mut world, bodies } = scene.build().map_err(RunError::Scene)?;
    for w in &world.warnings {
        eprintln!("warning: {w}");
    }
    let sim = &scene.simulation;
    let dt = sim.dt;
    let steps = opts
        .steps
        .or_else(|| opts.duration.map(|d| (d / dt - 1e-9).ceil().max(0.0) as u64))
        .unwrap_or_else(|| sim.total_steps());
    let out = opts.out.clone().unwrap_or_else(|| PathBuf::from("out").join(stem(scene)));
    let frames_dir = out.join("frames");
    std::fs::create_dir_all(&out).map_err(|e| io("directory", &out, e))?;
    let frame_every = if opts.no_frames {
        0
    } else {
        scene.output.frame_every.unwrap_or_else(|| ((1.0 / (DEFAULT_FPS * dt)).round() as u64).max(1))
    };
    if frame_every > 0 {
        std::fs::create_dir_all(&frames_dir).map_err(|e| io("directory", &frames_dir, e))?;
    }
    let metrics_every =
        scene.output.metrics_every.unwrap_or_else(|| ((1.0 / (DEFAULT_METRICS_RATE * dt)).round() as u64).max(1));
    let metrics_path = out.join("metrics.csv");
    let mut metrics = MetricsWriter::create(&metrics_path).map_err(|e| io("metrics", &metrics_path, e))?;
    let mut frames = 0u64;
    let write_frames = |world: &wobble::World, frames: &mut u64| -> Result<(), RunError> {
        for &format in &scene.output.formats {
            let path = frames_dir.join(format!("frame_{:05}.{}", *frames, format.extension()));
            write_frame(world, format, &path).map_err(|e| io("frame", &path, e))?;
        }
        *frames += 1;
        Ok(())
    };
    if frame_every > 0 {
        write_frames(&world, &mut frames)?;
    }
    metrics.row(&world.metrics()).map_err(|e| io("metrics", &metrics_path, e))?;
    let bar = if opts.quiet { ProgressBar::hidden() } else { ProgressBar::new(steps) };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {bar:40} {pos}/{len} steps  {per_sec}  eta {eta}  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let tick = (steps / 200).max(1);
    let start = Instant::now();
    let mut failure: Option<String> = None;
    for k in 1..=steps {
        if let Err(e) = world.step() {
            failure = Some(e.to_string());
            if let StepError::BlowUp(_) = e {
                // Keep the last metrics row that shows the run-away.
                let _ = metrics.row(&world.metrics());
            }
            break;
        }
        if frame_every > 0 && k % frame_every == 0 {
            write_frames(&world, &mut frames)?;
        }
        if k % metrics_every == 0 {
            metrics.row(&world.metrics()).map_err(|e| io("metrics", &metrics_path, e))?;
        }
        if k % tick == 0 {
            bar.set_position(k);
            bar.set_message(format!("t = {:.3} s", world.time()));
        }
    }
    bar.finish_and_clear();
    let wall = start.elapsed().as_secs_f64();
    metrics.finish().map_err(|e| io("metrics", &metrics_path, e))?;
    let last = world.metrics();
    let bodies_json: Vec<_> = bodies
        .iter()
        .map(|b| {
            let n = b.particles.len() as f64;
            let centroid = b.particles.clone().map(|i| world.state.x.get(i)).fold(glam::DVec3::ZERO, |a, p| a + p) / n;
            json!({
                "name": b.name,
                "particles": b.particles.len(),
                "first_particle": b.particles.start,
                "centroid": centroid.to_array(),
                "bottom_middle": b.bottom_middle().map(|i| world.state.x.get(i).to_array()),
            })
        })
        .collect();
    let summary = json!({
        "scene": scene.source.name,
        "scene_dir": std::path::absolute(&scene.base_dir).unwrap_or_else(|_| scene.base_dir.clone()),
        "status": if failure.is_some() { "blew-up" } else { "finished" },
        "error": failure,
        "integrator": sim.integrator.name(),
        "dt": dt,
        "steps": world.steps(),
        "time": world.time(),
        "wall_seconds": wall,
        "steps_per_second": world.steps() as f64 / wall.max(1e-12),
        "threads": rayon::current_num_threads(),
        "particles": world.state.len(),
        "springs": world.segments().len(),
        "frames": frames,
        "frame_every": frame_every,
        "metrics_every": metrics_every,
        "bodies": bodies_json,
        "max_strain": last.strain_max,
        "final": last,
        "peak_memory_mb": peak_memory_mb(),
    });
    // The scene itself, so that the run can be rendered or repeated later.
    let scene_copy = out.join("scene.toml");
    std::fs::write(&scene_copy, scene.source.text.as_bytes()).map_err(|e| io("scene copy", &scene_copy, e))?;
    let summary_path = out.join("summary.json");
    let text = serde_json::to_string_pretty(&summary).map_err(|e| io("summary", &summary_path, e))?;
    std::fs::write(&summary_path, text + "\n").map_err(|e| io("summary", &summary_path, e))?;
    if let Some(msg) = failure {
        eprintln!("error: {msg}");
        eprintln!("outputs up to the failure are in {}", out.display());
        return Ok(RunEnd::BlewUp);
    }
    if !opts.quiet {
        println!(
            "{} steps ({:.3} s simulated) in {wall:.2} s: {:.0} steps/s; {frames} frames, metrics and summary in {}",
            world.steps(),
            world.time(),
            world.steps() as f64 / wall.max(1e-12),
            out.display()
        );
    }
    Ok(RunEnd::Finished)
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
    let stab = w.stability();
    let (omega, particle) = stab.omega_max();
    let _ = writeln!(s, "stiffness    highest angular frequency bound ω = {omega:.4e} rad/s (particle {particle})");
    let _ = writeln!(s, "stable dt    largest stable explicit time step, estimated from stiffness, damping and mass:");
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
                    if sim.dt <= h { "  ← in use: dt is within" } else { "  ← in use: dt EXCEEDS it" }
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
