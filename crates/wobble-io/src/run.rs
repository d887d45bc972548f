//! The life of a run, as `wobble run`, the Python bindings and library users live
//! it: [`run`] starts one in a fresh output folder, [`resume`] continues one from
//! its checkpoint. Signals, progress bars and printing stay with the caller, which
//! sees the run through a [`RunObserver`].
//!
//! 1. **Folder.** The output folder is opened through a directory handle
//!    ([`crate::dir`]); a folder holding another run's files is refused unless
//!    [`RunOptions::overwrite`] (which first removes only the files that run's
//!    manifest proves are its own) or [`resume`]. A non-empty folder without a
//!    manifest is always refused: nothing in it can be proved to be wobble's.
//! 2. **Manifest.** `run.json` (status `running`) is written and synced before
//!    anything else, then `scene.toml`, the metrics header and frame 0.
//! 3. **Steps.** Frames are written whole and renamed into place; metrics are
//!    rewritten atomically at flush points; every `checkpoint_every` a checkpoint
//!    (synced) and the manifest record the step.
//! 4. **End.** Finished, blown up, interrupted (the observer asked to stop: the
//!    step in progress completes, then metrics, a checkpoint and the summary are
//!    written) or failed (an output could not be written: a reserve file is given
//!    back to the disk so the summary and manifest can still say so). The summary
//!    (`summary.json`) and the manifest are written last, synced.
//!    Wall-clock figures go to `timing.json`, so that the summary and the metrics
//!    of a resumed run are byte for byte those of an uninterrupted one.
//!
//! ```no_run
//! use wobble_io::run::{RunOptions, SilentObserver, run};
//! use wobble_scene::Scene;
//!
//! let scene = Scene::load("scenes/cloth-hanging.toml".as_ref()).unwrap();
//! let opts = RunOptions { out: Some("out/hanging".into()), ..RunOptions::default() };
//! let outcome = run(&scene, &opts, &mut SilentObserver).unwrap();
//! println!("{:?} after {} steps", outcome.end, outcome.steps_done);
//! ```

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;
use wobble::{StepError, World};
use wobble_scene::{Built, FrameFormat, Scene, SceneError, Source};

use crate::checkpoint::{CHECKPOINT_NAME, Checkpoint};
use crate::dir::{OutDir, PARTIAL_SUFFIX, Sub};
use crate::frames::{encode_frame, pvd_index, write_ply_lines};
use crate::manifest::{
    MANIFEST_FORMAT, MANIFEST_NAME, MANIFEST_VERSION, Manifest, PVD_NAME, Status, fnv1a64, frame_digits, frame_name,
    is_frame_name, now_rfc3339,
};
use crate::memory::{self, MemoryEstimate};
use crate::metrics::MetricsTable;
use crate::peak_memory_mb;

/// What a caller hears of a run while it steps. Every method has a default that
/// does nothing, so an observer implements only what it needs.
pub trait RunObserver {
    /// A message for the user: the memory estimate, resuming, warnings.
    fn message(&mut self, _kind: MessageKind, _text: &str) {}
    /// Stepping begins at step `first` (0, or a resumed run's checkpoint) of `planned`.
    fn started(&mut self, _first: u64, _planned: u64) {}
    /// Polled before every step: `Some(signal number)` asks the run to stop after
    /// the last complete step, write a checkpoint and end as interrupted.
    fn stop_requested(&mut self) -> Option<i32> {
        None
    }
    /// Step `k` has run and its outputs are written.
    fn stepped(&mut self, _k: u64, _world: &World) {}
}

/// An observer that hears nothing and never stops a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct SilentObserver;

impl RunObserver for SilentObserver {}

/// What kind of message [`RunObserver::message`] carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    /// What the run does (the CLI prints it unless `--quiet`).
    Info,
    /// Something the user should know (the CLI always prints it).
    Warning,
}

/// Options of a run (`wobble run`'s flags).
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Simulated time override, s.
    pub duration: Option<f64>,
    /// Step count override.
    pub steps: Option<u64>,
    /// Output directory.
    pub out: Option<PathBuf>,
    /// Write no frames.
    pub no_frames: bool,
    /// Replace an earlier run's outputs in the folder.
    pub overwrite: bool,
    /// Refuse to start when the memory estimate exceeds this, bytes (default:
    /// [`memory::default_limit`]).
    pub max_memory: Option<u64>,
    /// The command that started the run, for the manifest (default: this
    /// process's arguments).
    pub command_line: Option<Vec<String>>,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// Every step ran.
    Finished,
    /// The simulation blew up (summary written; [`RunOutcome::error`] says where).
    BlewUp,
    /// The observer stopped it after a complete step (the signal's number it gave).
    Interrupted(i32),
    /// An output could not be written (status `failed`; [`RunOutcome::error`] says which).
    Failed,
}

/// What a run did, once it has ended.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutcome {
    /// How it ended.
    pub end: RunEnd,
    /// The output folder.
    pub dir: PathBuf,
    /// The step stepping began at (0, or where a resumed run continued).
    pub first_step: u64,
    /// Steps done in all (the world's step count at the end).
    pub steps_done: u64,
    /// Steps the run was planned to take.
    pub steps_planned: u64,
    /// Simulated time at the end, s.
    pub time: f64,
    /// Frames in the folder (per format).
    pub frames: u64,
    /// Wall time spent stepping and writing, s.
    pub wall_seconds: f64,
    /// Steps per wall-clock second of this invocation.
    pub steps_per_second: f64,
    /// The blow-up or write error, for [`RunEnd::BlewUp`] and [`RunEnd::Failed`].
    pub error: Option<String>,
}

/// Why a run could not start.
#[derive(Debug)]
pub enum RunError {
    /// The scene does not build.
    Scene(SceneError),
    /// The folder, its files or the memory estimate forbid the run (a usage error).
    Refused(String),
    /// An output could not be written before stepping began.
    Io(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Scene(e) => write!(f, "{e}"),
            RunError::Refused(m) | RunError::Io(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

/// Frames per simulated second when the scene does not say.
const DEFAULT_FPS: f64 = 25.0;
/// Metrics rows per simulated second when the scene does not say.
const DEFAULT_METRICS_RATE: f64 = 100.0;
/// Wall-clock seconds between metrics flushes at frame times (checkpoints and the
/// end always flush): bounds the cost of rewriting a long table.
const METRICS_FLUSH_SECONDS: f64 = 1.0;
/// Bytes set aside at the start and given back when the disk fills, so that the
/// summary and manifest saying `failed` can still be written.
const RESERVE_BYTES: usize = 256 * 1024;
/// Name of the reserve file.
const RESERVE_NAME: &str = ".wobble-reserve";
/// Files of a run in its folder, besides `frames/`.
const RUN_FILES: [&str; 7] =
    [MANIFEST_NAME, "scene.toml", "metrics.csv", "summary.json", "timing.json", CHECKPOINT_NAME, RESERVE_NAME];

/// The directory name for a scene's outputs (`out/STEM` when none is given).
#[must_use]
pub fn stem(scene: &Scene) -> String {
    Path::new(&scene.source.name)
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.starts_with('<'))
        .unwrap_or("default")
        .to_owned()
}

fn io_error(e: std::io::Error) -> RunError {
    RunError::Io(e.to_string())
}

/// What a run does, fixed at its start and kept in the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Steps to take.
    pub steps: u64,
    /// A frame every this many steps (0: no frames).
    pub frame_every: u64,
    /// A metrics row every this many steps.
    pub metrics_every: u64,
    /// A checkpoint every this many steps (0: only at an interrupt).
    pub checkpoint_every: u64,
    /// Frame formats.
    pub formats: Vec<FrameFormat>,
    /// Digits of frame numbers.
    pub digits: usize,
}

impl Plan {
    /// The plan of running `scene` with `opts`.
    #[must_use]
    pub fn new(scene: &Scene, opts: &RunOptions) -> Plan {
        let dt = scene.simulation.dt;
        let steps = opts
            .steps
            .or_else(|| opts.duration.map(|d| (d / dt - 1e-9).ceil().max(0.0) as u64))
            .unwrap_or_else(|| scene.simulation.total_steps());
        let frame_every = if opts.no_frames {
            0
        } else {
            scene.output.frame_every.unwrap_or_else(|| ((1.0 / (DEFAULT_FPS * dt)).round() as u64).max(1))
        };
        let metrics_every =
            scene.output.metrics_every.unwrap_or_else(|| ((1.0 / (DEFAULT_METRICS_RATE * dt)).round() as u64).max(1));
        let checkpoint_every = scene.output.checkpoint_every.map_or(0, |s| ((s / dt).round() as u64).max(1));
        let last_frame = steps.checked_div(frame_every).unwrap_or(0);
        Plan {
            steps,
            frame_every,
            metrics_every,
            checkpoint_every,
            formats: scene.output.formats.clone(),
            digits: frame_digits(last_frame),
        }
    }

    /// The plan a manifest records, refused (naming the field) unless it is one
    /// [`Plan::new`] could have made: a manifest is a file in the user's folder,
    /// and an edited or damaged one must not panic or misname frames.
    fn from_manifest(m: &Manifest, formats: Vec<FrameFormat>) -> Result<Plan, String> {
        if m.steps_planned > wobble_scene::input::MAX_STEPS {
            return Err(format!(
                "steps_planned = {} is above the limit of {}",
                m.steps_planned,
                wobble_scene::input::MAX_STEPS
            ));
        }
        if m.metrics_every == 0 {
            return Err("metrics_every = 0 (a run writes metrics every step or more)".into());
        }
        let digits = frame_digits(m.steps_planned.checked_div(m.frame_every).unwrap_or(0));
        if m.frame_digits != digits {
            return Err(format!(
                "frame_digits = {} where {} steps with a frame every {} make {digits}",
                m.frame_digits, m.steps_planned, m.frame_every
            ));
        }
        Ok(Plan {
            steps: m.steps_planned,
            frame_every: m.frame_every,
            metrics_every: m.metrics_every,
            checkpoint_every: m.checkpoint_every,
            formats,
            digits: m.frame_digits,
        })
    }
}

/// The open outputs of a run.
struct Outputs {
    dir: OutDir,
    manifest: Manifest,
    plan: Plan,
    metrics: MetricsTable,
    frames: u64,
    /// VTU frames and their times, for the `.pvd` index.
    series: Vec<(String, f64)>,
    buf: Vec<u8>,
    last_flush: Instant,
    reserve: bool,
    /// Wall time spent encoding and writing outputs while stepping, s.
    writing: f64,
    /// The memory estimate the run was admitted on, bytes.
    estimate: u64,
}

impl Outputs {
    /// A run's outputs before anything is written: an empty metrics table, no
    /// frames yet.
    fn new(dir: OutDir, manifest: Manifest, plan: Plan, estimate: u64) -> Self {
        Outputs {
            dir,
            manifest,
            plan,
            metrics: MetricsTable::new(),
            frames: 0,
            series: Vec::new(),
            buf: Vec::new(),
            last_flush: Instant::now(),
            reserve: false,
            writing: 0.0,
            estimate,
        }
    }

    fn write_manifest(&self, durable: bool) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(&self.manifest).map_err(std::io::Error::other)? + "\n";
        self.dir.write_atomic(Sub::Root, MANIFEST_NAME, text.as_bytes(), durable)
    }

    fn write_frames(&mut self, world: &World) -> std::io::Result<()> {
        for &format in &self.plan.formats {
            encode_frame(world, format, &mut self.buf)?;
            let name = frame_name(self.frames, self.plan.digits, format.extension());
            self.dir.write_atomic(Sub::Frames, &name, &self.buf, false)?;
            if format == FrameFormat::Ply {
                self.buf.clear();
                if write_ply_lines(world, &mut self.buf)? {
                    let name = frame_name(self.frames, self.plan.digits, "lines.ply");
                    self.dir.write_atomic(Sub::Frames, &name, &self.buf, false)?;
                }
            }
            if format == FrameFormat::Vtu {
                self.series.push((name, world.time()));
            }
        }
        self.frames += 1;
        Ok(())
    }

    /// The outputs of the state a run starts from: its frame (if frames are
    /// written) and metrics row, flushed.
    fn write_start(&mut self, world: &World) -> std::io::Result<()> {
        if self.plan.frame_every > 0 {
            self.write_frames(world)?;
        }
        self.metrics.row(&world.metrics());
        self.flush_metrics()
    }

    /// Writes the metrics table and the `.pvd` index as they stand.
    fn flush_metrics(&mut self) -> std::io::Result<()> {
        self.last_flush = Instant::now();
        self.dir.write_atomic(Sub::Root, "metrics.csv", self.metrics.text().as_bytes(), false)?;
        if self.plan.formats.contains(&FrameFormat::Vtu) && self.plan.frame_every > 0 {
            self.dir.write_atomic(Sub::Frames, PVD_NAME, pvd_index(&self.series).as_bytes(), false)?;
        }
        Ok(())
    }

    /// Metrics, then the checkpoint (synced), then the manifest: a checkpoint on
    /// disk always has the metrics rows up to its step beside it.
    fn checkpoint(&mut self, world: &World) -> std::io::Result<()> {
        self.flush_metrics()?;
        let c = Checkpoint {
            wobble_version: env!("CARGO_PKG_VERSION").into(),
            scene_hash: u64::from_str_radix(&self.manifest.scene_hash, 16).unwrap_or(0),
            step: world.steps(),
            frames_written: self.frames,
            state: world.save_state(),
        };
        self.dir.write_atomic(Sub::Root, CHECKPOINT_NAME, &c.encode(), true)?;
        self.manifest.steps_done = world.steps();
        self.manifest.frames_written = self.frames;
        self.write_manifest(false)
    }

    fn outcome(&self, end: RunEnd, world: &World, first: u64, wall: f64, error: Option<String>) -> RunOutcome {
        RunOutcome {
            end,
            dir: self.dir.path().to_path_buf(),
            first_step: first,
            steps_done: world.steps(),
            steps_planned: self.plan.steps,
            time: world.time(),
            frames: self.frames,
            wall_seconds: wall,
            steps_per_second: (world.steps() - first) as f64 / wall.max(1e-12),
            error,
        }
    }

    fn give_back_reserve(&mut self) {
        if self.reserve {
            let _ = self.dir.remove_file(Sub::Root, RESERVE_NAME);
            self.reserve = false;
        }
    }
}

/// Removes the files of the earlier run described by `m` (only those its manifest
/// names or whose names follow its frame naming), the manifest last.
fn remove_run(dir: &mut OutDir, m: &Manifest) -> std::io::Result<()> {
    let partial = |name: &str| format!(".{name}{PARTIAL_SUFFIX}");
    for name in m.files.iter().filter(|n| n.as_str() != MANIFEST_NAME && RUN_FILES.contains(&n.as_str())) {
        dir.remove_file(Sub::Root, name)?;
        dir.remove_file(Sub::Root, &partial(name))?;
    }
    if dir.open_frames_if_present()? {
        for name in dir.list(Sub::Frames)? {
            let bare = name.strip_prefix('.').and_then(|n| n.strip_suffix(PARTIAL_SUFFIX)).unwrap_or(&name);
            if is_frame_name(bare, m.frame_digits, &m.frame_formats) || bare == PVD_NAME {
                dir.remove_file(Sub::Frames, &name)?;
            }
        }
        dir.remove_frames_dir_if_empty()?;
    }
    dir.remove_file(Sub::Root, &partial(MANIFEST_NAME))?;
    dir.remove_file(Sub::Root, MANIFEST_NAME)
}

fn read_manifest(dir: &OutDir) -> Result<Option<Manifest>, RunError> {
    let Some(bytes) = dir.read(Sub::Root, MANIFEST_NAME).map_err(|e| RunError::Refused(e.to_string()))? else {
        return Ok(None);
    };
    let path = dir.path().join(MANIFEST_NAME);
    let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| {
        RunError::Refused(format!("{} is not a wobble run manifest ({e}); choose another --out", path.display()))
    })?;
    if m.format != MANIFEST_FORMAT || m.format_version != MANIFEST_VERSION {
        return Err(RunError::Refused(format!(
            "{} has manifest format {} {}; this wobble writes {MANIFEST_FORMAT} {MANIFEST_VERSION}",
            path.display(),
            m.format,
            m.format_version
        )));
    }
    Ok(Some(m))
}

/// Opens the folder for a new run: empty, or holding an earlier run that
/// `overwrite` allows to remove.
fn open_fresh(out: &Path, overwrite: bool, observer: &mut dyn RunObserver) -> Result<OutDir, RunError> {
    let mut dir = OutDir::open(out).map_err(|e| RunError::Refused(e.to_string()))?;
    let entries = dir.list(Sub::Root).map_err(|e| RunError::Refused(e.to_string()))?;
    if entries.is_empty() {
        return Ok(dir);
    }
    match read_manifest(&dir)? {
        None => Err(RunError::Refused(format!(
            "{} is not empty and holds no wobble run (no {MANIFEST_NAME}); wobble writes only into an empty folder or one of its own runs: choose another --out",
            out.display()
        ))),
        Some(m) if !overwrite => Err(RunError::Refused(format!(
            "{} holds the outputs of an earlier run of {} ({}, started {}); pass --overwrite to replace them or `wobble run --resume {}` to continue it",
            out.display(),
            m.scene,
            m.status.name(),
            m.started,
            out.display()
        ))),
        Some(m) => {
            remove_run(&mut dir, &m).map_err(|e| RunError::Refused(format!("--overwrite: {e}")))?;
            let left = dir.list(Sub::Root).map_err(|e| RunError::Refused(e.to_string()))?;
            if !left.is_empty() {
                observer.message(
                    MessageKind::Warning,
                    &format!(
                        "--overwrite left {} entries in {} that the earlier run did not write: {}",
                        left.len(),
                        out.display(),
                        left.join(", ")
                    ),
                );
            }
            Ok(dir)
        }
    }
}

/// The estimated peak memory of running `world` (built from `scene`) by `plan`.
#[must_use]
pub fn estimate_memory(world: &World, scene: &Scene, plan: &Plan) -> MemoryEstimate {
    memory::estimate(world, scene.simulation.integrator, plan.steps, plan.metrics_every, plan.frame_every > 0)
}

/// Estimates the run's memory and refuses it above `limit` (default: what the
/// process holds plus the machine's available memory); the estimate, bytes.
fn check_memory(
    world: &World,
    scene: &Scene,
    plan: &Plan,
    limit: Option<u64>,
    observer: &mut dyn RunObserver,
) -> Result<u64, RunError> {
    let estimate =
        memory::estimate(world, scene.simulation.integrator, plan.steps, plan.metrics_every, plan.frame_every > 0);
    let (limit, what) = match limit {
        Some(l) => (Some(l), "--max-memory"),
        None => (memory::default_limit(), "the memory this machine has available (MemAvailable)"),
    };
    if let Some(limit) = limit
        && estimate.total() > limit
    {
        return Err(RunError::Refused(format!(
            "this run needs an estimated {}, more than {what}: {}; shrink the scene or pass a larger --max-memory",
            estimate.summary(),
            memory::mib(limit)
        )));
    }
    observer.message(MessageKind::Info, &format!("memory estimate: {}", estimate.summary()));
    Ok(estimate.total())
}

/// Runs `scene` into a new output folder, writing the manifest, frames,
/// `metrics.csv`, checkpoints, `summary.json` and `timing.json`. The engine's
/// parallel loops run on the rayon pool of the calling thread; call it from a
/// worker of that pool (e.g. inside `pool.install`) so that they fork from a
/// worker instead of being handed over at every loop.
///
/// # Errors
/// [`RunError`] when the run cannot start; once stepping has begun, every end
/// (blow-up, interrupt, a write that fails) is an [`RunOutcome`].
pub fn run(scene: &Scene, opts: &RunOptions, observer: &mut dyn RunObserver) -> Result<RunOutcome, RunError> {
    // Before the build allocates: a lower bound from the counts the scene states.
    let before = memory::estimate_before_build(scene);
    if let Some(limit) = opts.max_memory.or_else(memory::default_limit)
        && before > limit
    {
        return Err(RunError::Refused(format!(
            "this run needs at least {} for its bodies alone (from their particle counts), more than the \
             limit of {}; shrink the scene or pass a larger --max-memory",
            memory::mib(before),
            memory::mib(limit)
        )));
    }
    let built = scene.build().map_err(RunError::Scene)?;
    for w in &built.world.warnings {
        observer.message(MessageKind::Warning, &w.to_string());
    }
    let plan = Plan::new(scene, opts);
    if plan.steps > wobble_scene::input::MAX_STEPS {
        return Err(RunError::Refused(format!(
            "{} steps exceed the limit of {} steps; split the run or raise dt",
            plan.steps,
            wobble_scene::input::MAX_STEPS
        )));
    }
    let estimate = check_memory(&built.world, scene, &plan, opts.max_memory, observer)?;
    let out = opts.out.clone().unwrap_or_else(|| PathBuf::from("out").join(stem(scene)));
    let dir = open_fresh(&out, opts.overwrite, observer)?;
    let manifest = Manifest {
        format: MANIFEST_FORMAT.into(),
        format_version: MANIFEST_VERSION,
        wobble_version: env!("CARGO_PKG_VERSION").into(),
        scene: scene.source.name.clone(),
        scene_dir: std::path::absolute(&scene.base_dir)
            .unwrap_or_else(|_| scene.base_dir.clone())
            .display()
            .to_string(),
        scene_hash: format!("{:016x}", fnv1a64(scene.source.text.as_bytes())),
        built_hash: Some(format!("{:016x}", fnv1a64(&built.world.save_state()))),
        command_line: opts.command_line.clone().unwrap_or_else(|| std::env::args().collect()),
        started: now_rfc3339(),
        status: Status::Running,
        error: None,
        steps_planned: plan.steps,
        steps_done: 0,
        frames_written: 0,
        frame_every: plan.frame_every,
        metrics_every: plan.metrics_every,
        checkpoint_every: plan.checkpoint_every,
        frame_formats: plan.formats.iter().map(|f| f.extension().to_owned()).collect(),
        frame_digits: plan.digits,
        files: RUN_FILES.iter().map(|s| (*s).to_owned()).collect(),
    };
    let mut outputs = Outputs::new(dir, manifest, plan, estimate);
    // The manifest first, synced: from here on the folder says whose it is.
    outputs.write_manifest(true).map_err(io_error)?;
    outputs.dir.write_atomic(Sub::Root, "scene.toml", scene.source.text.as_bytes(), false).map_err(io_error)?;
    outputs.dir.write_atomic(Sub::Root, RESERVE_NAME, &vec![0u8; RESERVE_BYTES], false).map_err(io_error)?;
    outputs.reserve = true;
    if outputs.plan.frame_every > 0 {
        outputs.dir.open_frames().map_err(io_error)?;
    }
    let Built { world, bodies } = built;
    let mut world = world;
    let start = outputs.write_start(&world);
    if let Err(e) = start {
        return Ok(fail(&mut outputs, scene, &world, &bodies, &e.to_string(), world.steps(), 0.0));
    }
    Ok(step_loop(scene, &mut world, &bodies, &mut outputs, observer))
}

/// Continues the run in `dir_path` from its checkpoint (or from the start when it
/// has none yet), bit for bit as if it had never stopped. `max_memory` as in
/// [`RunOptions::max_memory`].
///
/// # Errors
/// [`RunError::Refused`] when the folder holds no run that can continue (finished,
/// blown up, changed scene, corrupt or mismatched checkpoint), as for [`run`].
pub fn resume(
    dir_path: &Path,
    max_memory: Option<u64>,
    observer: &mut dyn RunObserver,
) -> Result<RunOutcome, RunError> {
    let refused = |e: std::io::Error| RunError::Refused(e.to_string());
    if !dir_path.is_dir() {
        return Err(RunError::Refused(format!("{} is not a folder written by `wobble run`", dir_path.display())));
    }
    let mut dir = OutDir::open(dir_path).map_err(refused)?;
    let Some(mut manifest) = read_manifest(&dir)? else {
        return Err(RunError::Refused(format!(
            "{} holds no {MANIFEST_NAME}: it is not a wobble run folder, so there is nothing to resume",
            dir_path.display()
        )));
    };
    match manifest.status {
        Status::Finished => {
            return Err(RunError::Refused(format!(
                "the run in {} has finished; there is nothing to resume",
                dir_path.display()
            )));
        }
        Status::BlewUp => {
            return Err(RunError::Refused(format!(
                "the run in {} blew up; resuming would blow up again: change the scene and run it anew",
                dir_path.display()
            )));
        }
        Status::Running | Status::Interrupted | Status::Failed => {}
    }
    let text = dir
        .read(Sub::Root, "scene.toml")
        .map_err(refused)?
        .ok_or_else(|| RunError::Refused(format!("{} has no scene.toml to resume from", dir_path.display())))?;
    let hash = fnv1a64(&text);
    if format!("{hash:016x}") != manifest.scene_hash {
        return Err(RunError::Refused(format!(
            "{}/scene.toml has changed since the run started (hash {hash:016x}, manifest {}); run the scene anew",
            dir_path.display(),
            manifest.scene_hash
        )));
    }
    let text = String::from_utf8(text).map_err(|_| RunError::Refused("scene.toml is not UTF-8".into()))?;
    let scene = Scene::parse(Source::new(manifest.scene.clone(), text), PathBuf::from(&manifest.scene_dir))
        .map_err(RunError::Scene)?;
    let mut formats = Vec::new();
    for ext in &manifest.frame_formats {
        let f = FrameFormat::ALL.iter().find(|(f, _)| f.extension() == ext).map(|(f, _)| *f).ok_or_else(|| {
            RunError::Refused(format!("{MANIFEST_NAME} names frame format `{ext}`, which this wobble does not write"))
        })?;
        formats.push(f);
    }
    let Built { mut world, bodies } = scene.build().map_err(RunError::Scene)?;
    if let Some(recorded) = &manifest.built_hash {
        let built = format!("{:016x}", fnv1a64(&world.save_state()));
        if &built != recorded {
            return Err(RunError::Refused(format!(
                "the scene of {} builds a different world than when the run started (state hash {built}, manifest {recorded}): a file it reads, such as a mesh in {}, has changed; run the scene anew",
                dir_path.display(),
                manifest.scene_dir
            )));
        }
    }
    let plan = Plan::from_manifest(&manifest, formats).map_err(|e| {
        RunError::Refused(format!(
            "{}: {e}; it is not a manifest this wobble wrote",
            dir_path.join(MANIFEST_NAME).display()
        ))
    })?;
    let estimate = check_memory(&world, &scene, &plan, max_memory, observer)?;
    let checkpoint = match dir.read(Sub::Root, CHECKPOINT_NAME).map_err(refused)? {
        Some(bytes) => Some(Checkpoint::decode(&bytes, hash).map_err(|e| {
            RunError::Refused(format!("cannot resume from {}: {e}", dir_path.join(CHECKPOINT_NAME).display()))
        })?),
        None => None,
    };
    if plan.frame_every > 0 {
        dir.open_frames().map_err(refused)?;
    }
    manifest.status = Status::Running;
    manifest.error = None;
    let mut outputs = Outputs::new(dir, manifest, plan, estimate);
    // A checkpoint, even one taken before the first step, comes after the start's
    // frame and metrics row were written: only a run without one writes them.
    let fresh = checkpoint.is_none();
    match checkpoint {
        Some(c) => {
            world.restore_state(&c.state).map_err(|e| {
                RunError::Refused(format!("cannot resume from {}: {e}", dir_path.join(CHECKPOINT_NAME).display()))
            })?;
            let csv = outputs.dir.read(Sub::Root, "metrics.csv").map_err(refused)?.unwrap_or_default();
            let csv = String::from_utf8(csv).map_err(|_| RunError::Refused("metrics.csv is not UTF-8".into()))?;
            outputs.metrics = MetricsTable::resume(&csv, c.step, outputs.plan.metrics_every).map_err(|e| {
                RunError::Refused(format!("cannot resume: {}: {e}", dir_path.join("metrics.csv").display()))
            })?;
            outputs.frames = c.frames_written;
            if outputs.plan.formats.contains(&FrameFormat::Vtu) && outputs.plan.frame_every > 0 {
                let pvd = outputs.dir.read(Sub::Frames, PVD_NAME).map_err(refused)?.unwrap_or_default();
                outputs.series = read_pvd(&String::from_utf8_lossy(&pvd), c.frames_written).ok_or_else(|| {
                    RunError::Refused(format!(
                        "cannot resume: frames/{PVD_NAME} lists fewer than the checkpoint's {} frames",
                        c.frames_written
                    ))
                })?;
            }
            observer.message(
                MessageKind::Info,
                &format!("resuming {} at step {} of {}", dir_path.display(), c.step, outputs.plan.steps),
            );
        }
        None => observer.message(
            MessageKind::Info,
            &format!("{} has no checkpoint yet: running it again from the start", dir_path.display()),
        ),
    }
    outputs.write_manifest(true).map_err(io_error)?;
    outputs.dir.write_atomic(Sub::Root, RESERVE_NAME, &vec![0u8; RESERVE_BYTES], false).map_err(io_error)?;
    outputs.reserve = true;
    if fresh {
        let start = outputs.write_start(&world);
        if let Err(e) = start {
            return Ok(fail(&mut outputs, &scene, &world, &bodies, &e.to_string(), 0, 0.0));
        }
    }
    Ok(step_loop(&scene, &mut world, &bodies, &mut outputs, observer))
}

/// Steps from the world's current step to the plan's last, then writes the
/// summary; every write error ends the run as `failed`.
fn step_loop(
    scene: &Scene,
    world: &mut World,
    bodies: &[wobble_scene::BuiltBody],
    outputs: &mut Outputs,
    observer: &mut dyn RunObserver,
) -> RunOutcome {
    let plan = outputs.plan.clone();
    let first = world.steps();
    observer.started(first, plan.steps);
    let clock = Instant::now();
    let mut failure: Option<String> = None;
    let mut signal = None;
    // The helpers wait for the steps' passes all through the loop.
    let written: std::io::Result<()> = world.with_helpers(|world| {
        for k in first + 1..=plan.steps {
            if let Some(sig) = observer.stop_requested() {
                signal = Some(sig);
                break;
            }
            if let Err(e) = world.step() {
                failure = Some(e.to_string());
                if let StepError::BlowUp(_) = e {
                    // Keep the last metrics row that shows the run-away.
                    outputs.metrics.row(&world.metrics());
                }
                break;
            }
            let mut flush = false;
            let writes = Instant::now();
            if plan.frame_every > 0 && k % plan.frame_every == 0 {
                outputs.write_frames(world)?;
                flush = outputs.last_flush.elapsed().as_secs_f64() >= METRICS_FLUSH_SECONDS;
            }
            if k % plan.metrics_every == 0 {
                outputs.metrics.row(&world.metrics());
            }
            if plan.checkpoint_every > 0 && k % plan.checkpoint_every == 0 && k < plan.steps {
                outputs.checkpoint(world)?;
            } else if flush {
                outputs.flush_metrics()?;
            }
            outputs.writing += writes.elapsed().as_secs_f64();
            observer.stepped(k, world);
        }
        // A request that arrived during the last step still counts.
        if signal.is_none() && failure.is_none() && world.steps() < plan.steps {
            signal = observer.stop_requested();
        }
        if signal.is_some() {
            outputs.checkpoint(world)?;
        } else {
            outputs.flush_metrics()?;
        }
        Ok(())
    });
    let wall = clock.elapsed().as_secs_f64();
    if let Err(e) = written {
        return fail(outputs, scene, world, bodies, &e.to_string(), first, wall);
    }
    let status = match (&failure, signal) {
        (Some(_), _) => Status::BlewUp,
        (None, Some(_)) => Status::Interrupted,
        (None, None) => Status::Finished,
    };
    let timing = json!({
        "wall_seconds": wall,
        "steps": world.steps() - first,
        "steps_per_second": (world.steps() - first) as f64 / wall.max(1e-12),
        "output_seconds": outputs.writing,
        "output_share": outputs.writing / wall.max(1e-12),
        "threads": rayon::current_num_threads(),
        "peak_memory_mb": peak_memory_mb(),
        "memory_estimate_mb": outputs.estimate as f64 / f64::from(1 << 20),
    });
    let finished = (|| {
        let text = serde_json::to_string_pretty(&timing).map_err(std::io::Error::other)? + "\n";
        outputs.dir.write_atomic(Sub::Root, "timing.json", text.as_bytes(), false)?;
        write_summary(outputs, scene, world, bodies, status, failure.as_deref())
    })();
    if let Err(e) = finished {
        return fail(outputs, scene, world, bodies, &e.to_string(), first, wall);
    }
    let end = match (&failure, signal) {
        (Some(_), _) => RunEnd::BlewUp,
        (None, Some(sig)) => RunEnd::Interrupted(sig),
        (None, None) => RunEnd::Finished,
    };
    outputs.outcome(end, world, first, wall, failure)
}

/// The first `frames` entries of a `.pvd` index written by [`pvd_index`].
fn read_pvd(text: &str, frames: u64) -> Option<Vec<(String, f64)>> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("<DataSet ")).take(frames as usize) {
        let field = |key: &str| line.split(&format!("{key}=\"")).nth(1)?.split('"').next();
        out.push((field("file")?.to_owned(), field("timestep")?.parse().ok()?));
    }
    (out.len() as u64 == frames).then_some(out)
}

/// Writes `summary.json` (synced) and then the manifest with the final status.
fn write_summary(
    outputs: &mut Outputs,
    scene: &Scene,
    world: &World,
    bodies: &[wobble_scene::BuiltBody],
    status: Status,
    error: Option<&str>,
) -> std::io::Result<()> {
    let sim = &scene.simulation;
    let last = world.metrics();
    let bodies_json: Vec<_> = bodies
        .iter()
        .map(|b| {
            let n = b.particles.len() as f64;
            let centroid =
                b.particles.clone().map(|i| world.state.x.get(i)).fold(wobble::DVec3::ZERO, |a, p| a + p) / n;
            json!({
                "name": b.name,
                "particles": b.particles.len(),
                "first_particle": b.particles.start,
                "centroid": centroid.to_array(),
                "bottom_middle": b.bottom_middle().map(|i| world.state.x.get(i).to_array()),
            })
        })
        .collect();
    let last_frame = outputs.frames.checked_sub(1);
    let summary = json!({
        "scene": scene.source.name,
        "scene_dir": outputs.manifest.scene_dir,
        "status": status.name(),
        "error": error,
        "integrator": sim.integrator.name(),
        "dt": sim.dt,
        "steps": world.steps(),
        "steps_planned": outputs.plan.steps,
        "time": world.time(),
        "particles": world.state.len(),
        "springs": world.segments().len(),
        "frames": outputs.frames,
        "last_frame": last_frame.map(|k| frame_name(k, outputs.plan.digits, "*")),
        "frame_every": outputs.plan.frame_every,
        "metrics_every": outputs.plan.metrics_every,
        "bodies": bodies_json,
        "max_strain": last.strain_max,
        "final": last,
    });
    let text = serde_json::to_string_pretty(&summary).map_err(std::io::Error::other)? + "\n";
    outputs.give_back_reserve();
    outputs.dir.write_atomic(Sub::Root, "summary.json", text.as_bytes(), true)?;
    outputs.manifest.status = status;
    outputs.manifest.error = error.map(str::to_owned);
    outputs.manifest.steps_done = world.steps();
    outputs.manifest.frames_written = outputs.frames;
    outputs.write_manifest(true)
}

/// Ends a run whose output could not be written: gives the reserve back to the
/// disk, then records status `failed` in the summary and the manifest. Earlier
/// files are untouched (every write goes to a temporary file first).
fn fail(
    outputs: &mut Outputs,
    scene: &Scene,
    world: &World,
    bodies: &[wobble_scene::BuiltBody],
    msg: &str,
    first: u64,
    wall: f64,
) -> RunOutcome {
    outputs.give_back_reserve();
    let error = match write_summary(outputs, scene, world, bodies, Status::Failed, Some(msg)) {
        Err(e) => format!("{msg}; cannot record the failure either: {e}"),
        Ok(()) => format!(
            "{msg}; the run stopped at step {}, the files written before are complete in {} (status `failed` in {MANIFEST_NAME})",
            world.steps(),
            outputs.dir.path().display()
        ),
    };
    outputs.outcome(RunEnd::Failed, world, first, wall, Some(error))
}
