//! The life of a run through the library API (`wobble_io::run`), without the CLI:
//! an observer that stops a run is an interrupt, `resume` continues it bit for
//! bit, a second run into the folder is refused, and the observer hears the
//! run's start, every step and its messages.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use wobble_io::run::{MessageKind, RunEnd, RunError, RunObserver, RunOptions, SilentObserver, resume, run};
use wobble_scene::{Scene, Source};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wobble-run-api-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn scene(integrator: &str) -> Scene {
    let text = format!(
        "[simulation]\nintegrator = \"{integrator}\"\ndt = 2e-3\nsteps = 90\n\
         [output]\nframe_every = 7\nmetrics_every = 3\ncheckpoint_every = 0.022\nformats = [\"ply\", \"vtu\"]\n\
         [[body]]\ntype = \"cloth\"\nnx = 8\nny = 8\npin = {{ edge = [\"top\"] }}\n"
    );
    Scene::parse(Source::new("api.toml", text), ".".into()).expect("scene")
}

/// Every file below `dir` but the ones that carry wall-clock or command-line
/// facts (manifest, timing) and the checkpoint.
fn comparable(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let p = e.expect("entry").path();
            let name = p.strip_prefix(dir).expect("below").display().to_string();
            if p.is_dir() {
                stack.push(p);
            } else if !["run.json", "timing.json", "checkpoint.bin"].contains(&name.as_str()) {
                out.insert(name, std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

/// Asserts that the folders `a` and `b` hold the same comparable files, byte for
/// byte (see [`comparable`]).
fn assert_same_outputs(a: &Path, b: &Path, label: &str) {
    let (a, b) = (comparable(a), comparable(b));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "{label}: file lists differ");
    for (name, data) in &a {
        assert!(*data == b[name], "{label}: {name} differs from the uninterrupted run");
    }
}

/// Stops the run after step `at` as SIGINT would, and records what it heard.
#[derive(Default)]
struct StopAt {
    at: u64,
    stop: bool,
    started: Option<(u64, u64)>,
    steps: Vec<u64>,
    messages: Vec<(MessageKind, String)>,
}

impl RunObserver for StopAt {
    fn message(&mut self, kind: MessageKind, text: &str) {
        self.messages.push((kind, text.to_owned()));
    }
    fn started(&mut self, first: u64, planned: u64) {
        self.started = Some((first, planned));
    }
    fn stop_requested(&mut self) -> Option<i32> {
        self.stop.then_some(2)
    }
    fn stepped(&mut self, k: u64, _world: &wobble::World) {
        self.steps.push(k);
        self.stop |= k == self.at;
    }
}

#[test]
fn an_observer_that_stops_a_run_leaves_a_folder_that_resumes_bit_for_bit() {
    for integrator in ["symplectic-euler", "verlet", "rk4", "implicit-euler"] {
        let s = scene(integrator);
        let whole = tmp(&format!("whole-{integrator}"));
        let opts = RunOptions { out: Some(whole.clone()), ..RunOptions::default() };
        let o = run(&s, &opts, &mut SilentObserver).expect("uninterrupted run");
        assert_eq!(o.end, RunEnd::Finished, "{integrator}");
        assert_eq!((o.steps_done, o.steps_planned, o.first_step), (90, 90, 0));
        assert_eq!(o.frames, 90 / 7 + 1);

        let cut = tmp(&format!("cut-{integrator}"));
        let opts = RunOptions { out: Some(cut.clone()), ..RunOptions::default() };
        // 37 is neither a multiple of the frame (7) nor of the checkpoint interval (11).
        let mut stop = StopAt { at: 37, ..StopAt::default() };
        let o = run(&s, &opts, &mut stop).expect("interrupted run");
        assert_eq!(o.end, RunEnd::Interrupted(2), "{integrator}");
        assert_eq!(o.steps_done, 37);
        assert_eq!(stop.started, Some((0, 90)));
        assert_eq!(stop.steps, (1..=37).collect::<Vec<_>>());
        assert!(stop.messages.iter().any(|(k, m)| *k == MessageKind::Info && m.starts_with("memory estimate")));
        let manifest = std::fs::read_to_string(cut.join("run.json")).expect("manifest");
        assert!(manifest.contains("\"interrupted\""), "{manifest}");

        let mut heard = StopAt { at: u64::MAX, ..StopAt::default() };
        let o = resume(&cut, None, &mut heard).expect("resume");
        assert_eq!(o.end, RunEnd::Finished);
        assert_eq!((o.first_step, o.steps_done), (37, 90));
        assert_eq!(heard.started, Some((37, 90)));
        assert!(heard.messages.iter().any(|(_, m)| m.contains("resuming") && m.contains("at step 37 of 90")));

        assert_same_outputs(&whole, &cut, integrator);
        let _ = std::fs::remove_dir_all(&whole);
        let _ = std::fs::remove_dir_all(&cut);
    }
}

#[test]
fn a_run_stopped_before_its_first_step_resumes_bit_for_bit() {
    // Ctrl-C during set-up: the loop stops before step 1 and checkpoints step 0,
    // after the start's frame and metrics row were written. Resuming must not
    // write them again (it once did: frame 0 twice, every later frame shifted).
    let s = scene("symplectic-euler");
    let whole = tmp("whole-at-0");
    run(&s, &RunOptions { out: Some(whole.clone()), ..RunOptions::default() }, &mut SilentObserver).expect("run");
    let cut = tmp("cut-at-0");
    let mut stop = StopAt { stop: true, ..StopAt::default() };
    let o = run(&s, &RunOptions { out: Some(cut.clone()), ..RunOptions::default() }, &mut stop).expect("stopped run");
    assert_eq!((o.end, o.steps_done, o.frames), (RunEnd::Interrupted(2), 0, 1));
    let o = resume(&cut, None, &mut SilentObserver).expect("resume");
    assert_eq!((o.end, o.first_step, o.steps_done, o.frames), (RunEnd::Finished, 0, 90, 90 / 7 + 1));
    assert_same_outputs(&whole, &cut, "stopped at step 0");
    let _ = std::fs::remove_dir_all(&whole);
    let _ = std::fs::remove_dir_all(&cut);
}

#[test]
fn a_resume_refuses_a_metrics_table_older_than_its_checkpoint_and_an_edited_manifest() {
    // An interrupted run (step 37: checkpoint and metrics to step 36, the last
    // multiple of 3). Its folder copied twice: one with the metrics cut after step
    // 30 (a table older than the checkpoint), one with `metrics_every` set to 0 in
    // run.json. Both are refused with a message naming the file, neither panics;
    // the untouched folder still resumes.
    let s = scene("symplectic-euler");
    let cut = tmp("older-metrics");
    let mut stop = StopAt { at: 37, ..StopAt::default() };
    run(&s, &RunOptions { out: Some(cut.clone()), ..RunOptions::default() }, &mut stop).expect("stopped run");
    let copy = |name: &str| {
        let to = tmp(name);
        std::fs::create_dir_all(to.join("frames")).unwrap();
        for sub in ["", "frames"] {
            for e in std::fs::read_dir(cut.join(sub)).unwrap() {
                let p = e.unwrap().path();
                if p.is_file() {
                    std::fs::copy(&p, to.join(sub).join(p.file_name().unwrap())).unwrap();
                }
            }
        }
        to
    };
    let short = copy("older-metrics-short");
    let csv = std::fs::read_to_string(short.join("metrics.csv")).unwrap();
    let kept: Vec<&str> = csv
        .lines()
        .take_while(|l| l.split(',').next().and_then(|s| s.parse::<u64>().ok()).is_none_or(|k| k <= 30))
        .collect();
    std::fs::write(short.join("metrics.csv"), kept.join("\n") + "\n").unwrap();
    match resume(&short, None, &mut SilentObserver) {
        Err(RunError::Refused(m)) => {
            assert!(m.contains("metrics.csv") && m.contains("end at step 30") && m.contains("step 36"), "{m}")
        }
        other => panic!("a table cut before its checkpoint resumed: {other:?}"),
    }
    let edited = copy("older-metrics-manifest");
    let manifest = std::fs::read_to_string(edited.join("run.json")).unwrap();
    let zeroed = manifest.replace("\"metrics_every\": 3", "\"metrics_every\": 0");
    assert_ne!(zeroed, manifest, "run.json keeps metrics_every as expected: {manifest}");
    std::fs::write(edited.join("run.json"), zeroed).unwrap();
    match resume(&edited, None, &mut SilentObserver) {
        Err(RunError::Refused(m)) => assert!(m.contains("run.json") && m.contains("metrics_every = 0"), "{m}"),
        other => panic!("a manifest with metrics_every = 0 resumed: {other:?}"),
    }
    assert_eq!(resume(&cut, None, &mut SilentObserver).expect("resume").end, RunEnd::Finished);
    for d in [cut, short, edited] {
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[test]
fn a_resume_refuses_a_scene_whose_mesh_file_changed_since_the_run_started() {
    // The scene text is the same, so its hash cannot tell; the built world's state
    // hash in run.json can. Put back, the mesh resumes again.
    let base = tmp("mesh-edit");
    std::fs::create_dir_all(&base).unwrap();
    let ico = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenes/meshes/icosahedron.obj");
    let original = std::fs::read_to_string(&ico).unwrap();
    std::fs::write(base.join("ico.obj"), &original).unwrap();
    let text = "[simulation]\nintegrator = \"symplectic-euler\"\ndt = 2e-4\nsteps = 60\n\
                [output]\nframe_every = 20\n\
                [[body]]\ntype = \"mesh\"\nfile = \"ico.obj\"\nscale = 0.2\norigin = [0, 0.8, 0]\nmass = 0.5\n\
                springs.structural = { stiffness = 2000, damping = 1.0 }\n";
    let s = Scene::parse(Source::new("mesh.toml", text.to_owned()), base.clone()).expect("scene");
    let out = base.join("out");
    let mut stop = StopAt { at: 25, ..StopAt::default() };
    run(&s, &RunOptions { out: Some(out.clone()), ..RunOptions::default() }, &mut stop).expect("stopped run");
    // Move the first vertex a little: same vertex count, same scene text.
    let edited: String = original
        .lines()
        .map(|l| l.to_owned())
        .scan(false, |moved, l| {
            if !*moved && l.starts_with("v ") {
                *moved = true;
                let mut f: Vec<f64> = l[2..].split_whitespace().map(|x| x.parse().unwrap()).collect();
                f[0] += 0.01;
                return Some(format!("v {} {} {}", f[0], f[1], f[2]));
            }
            Some(l)
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(base.join("ico.obj"), edited + "\n").unwrap();
    match resume(&out, None, &mut SilentObserver) {
        Err(RunError::Refused(m)) => assert!(m.contains("builds a different world") && m.contains("mesh"), "{m}"),
        other => panic!("a run whose mesh changed resumed: {other:?}"),
    }
    std::fs::write(base.join("ico.obj"), &original).unwrap();
    assert_eq!(resume(&out, None, &mut SilentObserver).expect("resume").end, RunEnd::Finished);
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn a_folder_holding_a_run_is_refused_unless_overwritten_and_a_finished_run_does_not_resume() {
    let s = scene("symplectic-euler");
    let out = tmp("refused");
    let mut opts = RunOptions { out: Some(out.clone()), steps: Some(10), ..RunOptions::default() };
    run(&s, &opts, &mut SilentObserver).expect("first run");
    let stray = out.join("notes.txt");
    std::fs::write(&stray, "mine").expect("stray file");
    match run(&s, &opts, &mut SilentObserver) {
        Err(RunError::Refused(m)) => assert!(m.contains("--overwrite") && m.contains("--resume"), "{m}"),
        other => panic!("a second run into the folder was not refused: {other:?}"),
    }
    match resume(&out, None, &mut SilentObserver) {
        Err(RunError::Refused(m)) => assert!(m.contains("has finished"), "{m}"),
        other => panic!("a finished run resumed: {other:?}"),
    }
    opts.overwrite = true;
    let mut heard = StopAt { at: u64::MAX, ..StopAt::default() };
    let o = run(&s, &opts, &mut heard).expect("overwrite");
    assert_eq!(o.end, RunEnd::Finished);
    assert_eq!(std::fs::read_to_string(&stray).expect("stray kept"), "mine", "--overwrite removed a file not its own");
    assert!(
        heard.messages.iter().any(|(k, m)| *k == MessageKind::Warning && m.contains("notes.txt")),
        "the file left behind is not reported: {:?}",
        heard.messages
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_memory_limit_below_the_estimate_refuses_the_run_before_any_file_is_written() {
    let s = scene("symplectic-euler");
    let out = tmp("memory");
    let opts = RunOptions { out: Some(out.clone()), max_memory: Some(1 << 20), ..RunOptions::default() };
    match run(&s, &opts, &mut SilentObserver) {
        Err(RunError::Refused(m)) => assert!(m.contains("needs") && m.contains("the limit of 1.0 MiB"), "{m}"),
        other => panic!("a run above its memory limit started: {other:?}"),
    }
    assert!(!out.exists(), "the refused run created its folder");
}
