//! Python bindings of the wobble engine: the extension module `wobble._wobble`,
//! wrapped by the pure-Python package in `python/wobble` (which adds sweeps).
//!
//! The bindings expose the engine, not the command-line tool: a `Scene` is
//! read and checked by `wobble-scene` (the same messages as the CLI, raised as
//! `wobble.SceneError`), a `World` steps with the GIL released, on a thread
//! pool of its own that never pins threads to cores, and writes frames with
//! `wobble-io`, so its files are the CLI's.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Instant;

use glam::DVec3;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyFloat, PyInt, PyList, PyString, PyTuple};
use wobble::World;
use wobble_scene::{FrameFormat, Override, Scene, Source};

pyo3::create_exception!(
    wobble,
    SceneError,
    PyValueError,
    "A scene that cannot be read or built; the message names the file, line and column."
);
pyo3::create_exception!(
    wobble,
    SimulationError,
    PyRuntimeError,
    "A step that failed: a blow-up (with the step, the particle and the likely cause) or a solver failure."
);

/// A `wobble_scene::SceneError` as a Python `SceneError` with `file`, `line`,
/// `column` and `help` attributes.
fn scene_error(py: Python<'_>, e: &wobble_scene::SceneError) -> PyErr {
    let err = SceneError::new_err(e.to_string());
    let value = err.value(py);
    let _ = value.setattr("file", e.source.name.clone());
    let _ = value.setattr("line", e.line());
    let _ = value.setattr("column", e.column());
    let _ = value.setattr("help", e.help.clone());
    err
}

/// A Python value as TOML text: bools, ints, finite floats, strings, and lists or
/// tuples of them.
fn toml_value(v: &Bound<'_, PyAny>) -> Result<String, String> {
    if v.is_instance_of::<PyBool>() {
        return Ok(if v.extract::<bool>().map_err(|e| e.to_string())? { "true" } else { "false" }.into());
    }
    // Python ints and integer-like objects (NumPy's int64 has `__index__`).
    if v.is_instance_of::<PyInt>() || v.hasattr("__index__").unwrap_or(false) {
        let i: i64 = v.extract().map_err(|_| "the integer does not fit in 64 bits".to_string())?;
        return Ok(i.to_string());
    }
    if v.is_instance_of::<PyFloat>() || v.hasattr("__float__").unwrap_or(false) && !v.is_instance_of::<PyString>() {
        let x: f64 = v.extract().map_err(|e: PyErr| e.to_string())?;
        if !x.is_finite() {
            return Err(format!("{x} is not a finite number; scene values must be finite"));
        }
        // Debug prints the shortest text that reads back as the same double.
        return Ok(format!("{x:?}"));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(wobble_scene::set::quote(&s.to_cow().map_err(|e| e.to_string())?));
    }
    let items: Vec<Bound<'_, PyAny>> = if let Ok(l) = v.cast::<PyList>() {
        l.iter().collect()
    } else if let Ok(t) = v.cast::<PyTuple>() {
        t.iter().collect()
    } else {
        let ty = v.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return Err(format!("a {ty} is not a scene value; use a number, bool, string or list"));
    };
    let parts: Result<Vec<String>, String> = items.iter().map(toml_value).collect();
    Ok(format!("[{}]", parts?.join(", ")))
}

/// A scene: read, checked, and changed by dotted path.
#[pyclass(name = "Scene", module = "wobble._wobble")]
struct PyScene {
    /// The scene as read, before overrides.
    source: Source,
    base: PathBuf,
    overrides: Vec<Override>,
    scene: Scene,
}

impl PyScene {
    fn new(py: Python<'_>, source: Source, base: PathBuf, overrides: Vec<Override>) -> PyResult<Self> {
        let scene = Scene::parse_with(source.clone(), base.clone(), &overrides).map_err(|e| scene_error(py, &e))?;
        Ok(Self { source, base, overrides, scene })
    }
}

#[pymethods]
impl PyScene {
    /// Reads a scene file.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let scene = Scene::load(&path).map_err(|e| scene_error(py, &e))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Self { source: scene.source.clone(), base, overrides: Vec::new(), scene })
    }

    /// Reads a scene from TOML text; `base_dir` resolves relative mesh paths.
    #[staticmethod]
    #[pyo3(signature = (text, base_dir = PathBuf::from("."), name = "<string>".to_string()))]
    fn from_toml(py: Python<'_>, text: &str, base_dir: PathBuf, name: String) -> PyResult<Self> {
        Self::new(py, Source::new(name, text), base_dir, Vec::new())
    }

    /// Sets `key` (a dotted path, as `wobble run --set` takes) to `value` (a
    /// number, bool, string, or list of them) and checks the scene at once; on an
    /// error the scene stays as it was. Returns the scene, so calls chain.
    fn set<'py>(mut slf: PyRefMut<'py, Self>, key: &str, value: &Bound<'_, PyAny>) -> PyResult<PyRefMut<'py, Self>> {
        let py = slf.py();
        let text = toml_value(value).map_err(|why| {
            let src = Source::new("--set", format!("{key}=…"));
            scene_error(py, &wobble_scene::SceneError::new(&src, key.len() + 1..src.text.len(), why))
        })?;
        let o = Override::new(key, &text).map_err(|e| scene_error(py, &e))?;
        let mut overrides = slf.overrides.clone();
        overrides.push(o);
        let next = Self::new(py, slf.source.clone(), slf.base.clone(), overrides)?;
        *slf = next;
        Ok(slf)
    }

    /// An independent copy (later `set` calls on either leave the other alone).
    fn copy(&self) -> Self {
        Self {
            source: self.source.clone(),
            base: self.base.clone(),
            overrides: self.overrides.clone(),
            scene: self.scene.clone(),
        }
    }

    /// The scene text as it will run (overrides applied).
    #[getter]
    fn text(&self) -> String {
        self.scene.source.text.to_string()
    }

    /// The name of the scene's source (the file, with "(with --set)" once changed).
    #[getter]
    fn name(&self) -> String {
        self.scene.source.name.clone()
    }

    /// The folder relative mesh paths are resolved against.
    #[getter]
    fn base_dir(&self) -> PathBuf {
        self.base.clone()
    }

    /// Time step, s.
    #[getter]
    fn dt(&self) -> f64 {
        self.scene.simulation.dt
    }

    /// Steps the scene asks for (its `steps`, or `duration / dt`).
    #[getter]
    fn steps(&self) -> u64 {
        self.scene.simulation.total_steps()
    }

    /// Builds the world; `threads` sizes its own thread pool (default: every
    /// core). Results are identical for any thread count.
    #[pyo3(signature = (threads = None))]
    fn build(&self, py: Python<'_>, threads: Option<usize>) -> PyResult<PyWorld> {
        let pool = thread_pool(threads)?;
        let scene = &self.scene;
        let built = py.detach(|| pool.install(|| scene.build())).map_err(|e| scene_error(py, &e))?;
        let bodies = built.bodies.iter().map(|b| (b.name.clone(), b.particles.clone())).collect();
        let hash = wobble_io::manifest::fnv1a64(self.scene.source.text.as_bytes());
        Ok(PyWorld {
            world: Mutex::new(built.world),
            bodies,
            threads: pool.current_num_threads(),
            pool,
            scene_hash: hash,
        })
    }

    /// Runs the scene into the output folder `out` as `wobble run` does (the same
    /// manifest, frames, metrics, checkpoints, summary and refusals), with the GIL
    /// released, and returns a dict of how it ended. Ctrl-C stops it after a
    /// complete step, writes a checkpoint and raises KeyboardInterrupt; the folder
    /// then continues with `wobble.resume(out)`.
    #[pyo3(signature = (out, *, steps = None, duration = None, frames = true, overwrite = false, max_memory = None, threads = None))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        out: PathBuf,
        steps: Option<u64>,
        duration: Option<f64>,
        frames: bool,
        overwrite: bool,
        max_memory: Option<u64>,
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Some(d) = duration
            && !(d.is_finite() && d >= 0.0)
        {
            return Err(PyValueError::new_err(format!(
                "duration {d} is invalid: give a simulated time in seconds, >= 0"
            )));
        }
        let opts = wobble_io::run::RunOptions {
            duration,
            steps,
            out: Some(out),
            no_frames: !frames,
            overwrite,
            max_memory,
            command_line: Some(vec!["python".into(), "wobble.Scene.run".into(), self.scene.source.name.clone()]),
        };
        let scene = &self.scene;
        run_with_signals(py, threads, |observer| wobble_io::run::run(scene, &opts, observer))
    }

    fn __repr__(&self) -> String {
        format!("Scene({:?}, {} bodies)", self.scene.source.name, self.scene.bodies.len())
    }
}

/// A thread pool of `threads` (default: every core) for one world or run. A
/// library in someone else's process must not pin threads to cores, nor take the
/// global pool.
fn thread_pool(threads: Option<usize>) -> PyResult<rayon::ThreadPool> {
    let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if threads == 0 {
        return Err(PyValueError::new_err("threads must be at least 1"));
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("wobble-{i}"))
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start {threads} threads: {e}")))
}

/// A simulated world.
#[pyclass(name = "World", module = "wobble._wobble")]
struct PyWorld {
    /// Behind a mutex only so the class is `Sync`; methods take `&mut self`
    /// and reach it with `get_mut`, never locking.
    world: Mutex<World>,
    bodies: Vec<(String, Range<usize>)>,
    pool: rayon::ThreadPool,
    threads: usize,
    scene_hash: u64,
}

impl PyWorld {
    fn world(&mut self) -> &mut World {
        self.world.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn range(&mut self, body: Option<&str>) -> PyResult<Range<usize>> {
        match body {
            None => Ok(0..self.world().state.len()),
            Some(name) => self.bodies.iter().find(|(n, _)| n == name).map(|(_, r)| r.clone()).ok_or_else(|| {
                let names: Vec<&str> = self.bodies.iter().map(|(n, _)| n.as_str()).collect();
                PyValueError::new_err(format!("no body is named `{name}`; bodies: {}", names.join(", ")))
            }),
        }
    }

    fn particle(&mut self, i: usize) -> PyResult<usize> {
        let n = self.world().state.len();
        if i < n {
            Ok(i)
        } else {
            Err(PyValueError::new_err(format!("particle {i} does not exist (the world has {n})")))
        }
    }
}

/// `n × 3` float64 NumPy array holding copies of `v`'s entries in `range`.
fn array<'py>(py: Python<'py>, v: &wobble::model::Vec3s, range: Range<usize>) -> PyResult<Bound<'py, PyAny>> {
    let n = range.len();
    let mut bytes = Vec::with_capacity(n * 24);
    for i in range {
        for c in [v.x[i], v.y[i], v.z[i]] {
            bytes.extend_from_slice(&c.to_ne_bytes());
        }
    }
    let buf = PyByteArray::new(py, &bytes);
    let np = py.import("numpy")?;
    np.call_method1("frombuffer", (buf, "float64"))?.call_method1("reshape", (n, 3))
}

fn vec3(v: &Bound<'_, PyAny>) -> PyResult<DVec3> {
    let [x, y, z]: [f64; 3] = v.extract().map_err(|_| PyTypeError::new_err("expected a point [x, y, z]"))?;
    let p = DVec3::new(x, y, z);
    if p.is_finite() { Ok(p) } else { Err(PyValueError::new_err("the point must be finite")) }
}

#[pymethods]
impl PyWorld {
    /// Takes `n` steps with the GIL released. Ctrl-C (or any pending signal
    /// handler that raises) stops between steps, raising KeyboardInterrupt with the
    /// world valid at the last complete step.
    #[pyo3(signature = (n = 1))]
    fn step(&mut self, py: Python<'_>, n: u64) -> PyResult<()> {
        let pool = &self.pool;
        let world = self.world.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut done = 0;
        // Steps per release of the GIL, grown until a chunk takes about 20 ms so that
        // signals are seen promptly and a fast step pays little for the handover.
        let mut chunk = 1u64;
        while done < n {
            let k = chunk.min(n - done);
            let start = Instant::now();
            // `World::run` keeps the pool's other threads waiting for the passes
            // through the chunk (`World::with_helpers`).
            let result = py.detach(|| pool.install(|| world.run(k)));
            result.map_err(|e| SimulationError::new_err(e.to_string()))?;
            done += k;
            py.check_signals()?;
            let took = start.elapsed().as_secs_f64();
            if took < 0.01 {
                chunk = (chunk * 2).min(1 << 20);
            } else if took > 0.04 {
                chunk = (chunk / 2).max(1);
            }
        }
        Ok(())
    }

    /// Simulated time, s.
    #[getter]
    fn time(&mut self) -> f64 {
        self.world().time()
    }

    /// Steps taken.
    #[getter]
    fn steps(&mut self) -> u64 {
        self.world().steps()
    }

    /// Time step, s.
    #[getter]
    fn dt(&mut self) -> f64 {
        self.world().params().dt
    }

    /// Size of the world's thread pool.
    #[getter]
    fn threads(&self) -> usize {
        self.threads
    }

    /// Number of particles.
    #[getter]
    fn particle_count(&mut self) -> usize {
        self.world().state.len()
    }

    /// Body names in scene order.
    #[getter]
    fn bodies(&self) -> Vec<String> {
        self.bodies.iter().map(|(n, _)| n.clone()).collect()
    }

    /// Particle indices of `body` as (start, stop).
    fn particles_of(&mut self, body: &str) -> PyResult<(usize, usize)> {
        let r = self.range(Some(body))?;
        Ok((r.start, r.end))
    }

    /// Positions, m: an n×3 float64 array (a copy; the engine stores x, y, z apart).
    #[pyo3(signature = (body = None))]
    fn positions<'py>(&mut self, py: Python<'py>, body: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let r = self.range(body)?;
        array(py, &self.world().state.x, r)
    }

    /// Velocities, m/s: an n×3 float64 array (a copy).
    #[pyo3(signature = (body = None))]
    fn velocities<'py>(&mut self, py: Python<'py>, body: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let r = self.range(body)?;
        array(py, &self.world().state.v, r)
    }

    /// The metrics of the current state as a dict (the columns of `metrics.csv`:
    /// energies in J, momenta, strain, bounds, volume, solver and contact counts).
    fn metrics<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let text =
            serde_json::to_string(&self.world().metrics()).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        py.import("json")?.call_method1("loads", (text,))
    }

    /// Pins (or frees) particle `i`.
    #[pyo3(signature = (i, pinned = true))]
    fn pin(&mut self, i: usize, pinned: bool) -> PyResult<()> {
        let i = self.particle(i)?;
        self.world().set_pinned(i, pinned);
        Ok(())
    }

    /// Drags particle `i` towards `target` with the viewer's drag spring (004's
    /// mouse spring; by default its constants are the viewer's, reduced to what the
    /// lightest particle bears at this step); call again to move the target,
    /// `release()` to let go.
    #[pyo3(signature = (i, target, stiffness = None, damping = None))]
    fn drag(
        &mut self,
        i: usize,
        target: &Bound<'_, PyAny>,
        stiffness: Option<f64>,
        damping: Option<f64>,
    ) -> PyResult<()> {
        let i = self.particle(i)?;
        let p = vec3(target)?;
        let w = self.world();
        let start = w.starting_drag();
        let params = wobble::force::DragSpringParams {
            stiffness: stiffness.unwrap_or(start.stiffness),
            damping: damping.unwrap_or(start.damping),
        };
        if !(params.stiffness.is_finite()
            && params.stiffness >= 0.0
            && params.damping.is_finite()
            && params.damping >= 0.0)
        {
            return Err(PyValueError::new_err("drag stiffness and damping must be finite and ≥ 0"));
        }
        w.set_drag_params(params);
        if w.drag.grab.is_none_or(|g| g.particle != i) {
            w.grab(i, p);
        }
        w.move_cursor(p, DVec3::ZERO);
        Ok(())
    }

    /// Lets go of a dragged particle.
    fn release(&mut self) {
        self.world().release();
    }

    /// The particle nearest to `point` among those a drag may take.
    fn pick(&mut self, point: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        let p = vec3(point)?;
        Ok(self.world().pick_point(p))
    }

    /// Writes the current frame to `path` in the format its extension names
    /// (`.ply`, `.obj`, `.vtk`, `.vtu`), as `wobble run` writes frames: to a
    /// temporary file beside it, then renamed into place.
    fn save_frame(&mut self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        let Some(&(format, _)) = FrameFormat::ALL.iter().find(|(_, name)| *name == ext) else {
            let names: Vec<&str> = FrameFormat::ALL.iter().map(|(_, n)| *n).collect();
            return Err(PyValueError::new_err(format!(
                "cannot tell the frame format from `{}`: name the file .{}",
                path.display(),
                names.join(", .")
            )));
        };
        let world = self.world.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut buf = Vec::new();
        wobble_io::frames::encode_frame(world, format, &mut buf)
            .map_err(|e| PyRuntimeError::new_err(format!("cannot encode the frame: {e}")))?;
        py.detach(|| {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let tmp = path.with_file_name(format!(".{name}.partial"));
            std::fs::write(&tmp, &buf).and_then(|()| std::fs::rename(&tmp, &path)).inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })
        })
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("cannot write {}: {e}", path.display())))
    }

    /// The full state as bytes in the checkpoint format of `wobble run` (bound to
    /// this scene and this wobble, with a checksum).
    fn checkpoint<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let hash = self.scene_hash;
        let w = self.world();
        let ck = wobble_io::checkpoint::Checkpoint {
            wobble_version: env!("CARGO_PKG_VERSION").to_string(),
            scene_hash: hash,
            step: w.steps(),
            frames_written: 0,
            state: w.save_state(),
        };
        PyBytes::new(py, &ck.encode())
    }

    /// Puts the state of `checkpoint()` back; the world must come from the same
    /// scene. Stepping on gives the same results bit for bit.
    fn restore(&mut self, data: &[u8]) -> PyResult<()> {
        let ck = wobble_io::checkpoint::Checkpoint::decode(data, self.scene_hash)
            .map_err(|why| PyValueError::new_err(format!("cannot restore this checkpoint: {why}")))?;
        self.world()
            .restore_state(&ck.state)
            .map_err(|e| PyValueError::new_err(format!("cannot restore this checkpoint: {e}")))
    }

    fn __repr__(&mut self) -> String {
        let w = self.world();
        format!("World({} particles, t = {} s, step {})", w.state.len(), w.time(), w.steps())
    }
}

/// Continues the run in `out` from its checkpoint, bit for bit as if it had
/// never stopped, as `wobble run --resume` does; returns what `Scene.run` returns.
#[pyfunction]
#[pyo3(signature = (out, *, max_memory = None, threads = None))]
fn resume(py: Python<'_>, out: PathBuf, max_memory: Option<u64>, threads: Option<usize>) -> PyResult<Bound<'_, PyAny>> {
    run_with_signals(py, threads, |observer| wobble_io::run::resume(&out, max_memory, observer))
}

/// Asks a run to stop once the Python side has seen a signal.
struct StopFlag<'a>(&'a AtomicI32);

impl wobble_io::run::RunObserver for StopFlag<'_> {
    fn stop_requested(&mut self) -> Option<i32> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            s => Some(s),
        }
    }
}

/// Does a run on a pool of `threads` on another thread while this one, holding
/// the GIL only between waits, lets Python's signal handlers run every 20 ms: a
/// KeyboardInterrupt (or any exception a handler raises) asks the run to stop
/// after a complete step and is raised once the run has written its checkpoint
/// and summary.
fn run_with_signals<'py>(
    py: Python<'py>,
    threads: Option<usize>,
    job: impl FnOnce(&mut StopFlag<'_>) -> Result<wobble_io::run::RunOutcome, wobble_io::run::RunError> + Send,
) -> PyResult<Bound<'py, PyAny>> {
    let pool = thread_pool(threads)?;
    let stop = AtomicI32::new(0);
    let caller = std::thread::current();
    let (result, raised) = std::thread::scope(|s| {
        let stop = &stop;
        let worker = s.spawn(move || {
            let r = pool.install(|| job(&mut StopFlag(stop)));
            caller.unpark();
            r
        });
        let mut raised: Option<PyErr> = None;
        while !worker.is_finished() {
            py.detach(|| std::thread::park_timeout(std::time::Duration::from_millis(20)));
            if let Err(e) = py.check_signals() {
                stop.store(2, Ordering::Relaxed);
                raised.get_or_insert(e);
            }
        }
        (worker.join(), raised)
    });
    let outcome = match result {
        Ok(Ok(o)) => o,
        Ok(Err(wobble_io::run::RunError::Scene(e))) => return Err(scene_error(py, &e)),
        Ok(Err(e @ wobble_io::run::RunError::Refused(_))) => return Err(PyValueError::new_err(e.to_string())),
        Ok(Err(e @ wobble_io::run::RunError::Io(_))) => return Err(PyOSError::new_err(e.to_string())),
        Err(_) => return Err(PyRuntimeError::new_err("the run's thread panicked")),
    };
    if let Some(e) = raised {
        return Err(e);
    }
    let end = match outcome.end {
        wobble_io::run::RunEnd::Finished => "finished",
        wobble_io::run::RunEnd::BlewUp => "blew-up",
        wobble_io::run::RunEnd::Interrupted(_) => "interrupted",
        wobble_io::run::RunEnd::Failed => "failed",
    };
    let json = serde_json::json!({
        "status": end,
        "dir": outcome.dir.display().to_string(),
        "first_step": outcome.first_step,
        "steps": outcome.steps_done,
        "steps_planned": outcome.steps_planned,
        "time": outcome.time,
        "frames": outcome.frames,
        "wall_seconds": outcome.wall_seconds,
        "steps_per_second": outcome.steps_per_second,
        "error": outcome.error,
    });
    py.import("json")?.call_method1("loads", (json.to_string(),))
}

/// The engine's version.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _wobble(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyScene>()?;
    m.add_class::<PyWorld>()?;
    m.add("SceneError", m.py().get_type::<SceneError>())?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(resume, m)?)?;
    Ok(())
}
