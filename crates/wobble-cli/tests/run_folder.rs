//! The life of a run's output folder, end to end through the `wobble` binary:
//! refusal and `--overwrite`, links planted below the folder, interrupts and kills
//! at random steps followed by `--resume` (bit-identical outputs for every
//! integrator), a full disk, corrupt checkpoints.
//!
//! Runs are stopped through the real signal path: `WOBBLE_SIGNAL_AT_STEP=K:SIG`
//! makes the run send itself SIG right after step K.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn wobble_env(args: &[&str], env: &[(&str, String)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wobble"));
    cmd.args(args).current_dir(repo()).env("NO_COLOR", "1").env_remove("WOBBLE_SIGNAL_AT_STEP");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run wobble")
}

fn wobble(args: &[&str]) -> Output {
    wobble_env(args, &[])
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wobble-folder-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn json(path: &Path) -> serde_json::Value {
    let s = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()))
}

/// Every file under `dir` by relative path (temporaries of atomic writes left
/// out: they never carry a final name).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.to_string_lossy().ends_with(".partial") {
                out.insert(p.strip_prefix(dir).unwrap().display().to_string(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Checks that a binary little-endian PLY file is exactly as long as its header
/// says, walking every element (lists included).
fn check_ply(name: &str, data: &[u8]) {
    let end = data.windows(11).position(|w| w == b"end_header\n").unwrap_or_else(|| panic!("{name}: no header")) + 11;
    let header = String::from_utf8_lossy(&data[..end]).to_string();
    assert!(header.starts_with("ply\nformat binary_little_endian 1.0\n"), "{name}: {header}");
    let size = |t: &str| match t {
        "char" | "uchar" | "int8" | "uint8" => 1,
        "short" | "ushort" | "int16" | "uint16" => 2,
        "int" | "uint" | "float" | "int32" | "uint32" | "float32" => 4,
        "double" | "float64" => 8,
        _ => panic!("{name}: unknown type {t}"),
    };
    // (count, [(list count size or 0, item size)])
    let mut elements: Vec<(usize, Vec<(usize, usize)>)> = Vec::new();
    for line in header.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["element", _, n] => {
                let n: usize = n.parse().unwrap();
                assert!(n > 0, "{name}: empty element in {header}");
                elements.push((n, Vec::new()));
            }
            ["property", "list", c, t, _] => elements.last_mut().unwrap().1.push((size(c), size(t))),
            ["property", t, _] => elements.last_mut().unwrap().1.push((0, size(t))),
            _ => {}
        }
    }
    let mut at = end;
    for (count, props) in &elements {
        for _ in 0..*count {
            for &(list, item) in props {
                if list == 0 {
                    at += item;
                } else {
                    assert_eq!(list, 1, "{name}: list counts are uchar");
                    let n = *data.get(at).unwrap_or_else(|| panic!("{name}: cut inside a list")) as usize;
                    at += 1 + n * item;
                }
            }
        }
    }
    assert_eq!(at, data.len(), "{name}: its size differs from what its header declares");
}

/// Checks that every file of a run folder is complete and parses.
fn check_complete(dir: &Path) {
    for (name, data) in files(dir) {
        if name.ends_with(".json") {
            serde_json::from_slice::<serde_json::Value>(&data).unwrap_or_else(|e| panic!("{name}: {e}"));
        } else if name.ends_with(".csv") {
            let t = String::from_utf8(data).unwrap();
            assert!(t.ends_with('\n'), "{name} ends inside a row");
            let mut lines = t.lines();
            let n = lines.next().unwrap().split(',').count();
            for (k, l) in lines.enumerate() {
                assert_eq!(l.split(',').count(), n, "{name} row {} is cut", k + 2);
            }
        } else if name.ends_with(".ply") {
            check_ply(&name, &data);
        } else if name.ends_with(".obj") || name.ends_with(".vtk") || name.ends_with(".toml") {
            assert!(data.ends_with(b"\n"), "{name} is cut");
        }
    }
}

/// Deterministic pseudo-random numbers for the stopping steps (a 64-bit LCG).
struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// A small pinned cloth falling onto a sphere and a floor, with every frame
/// format, frames every 7 steps and checkpoints every 11.
fn scene_file(name: &str, integrator: &str, dt: f64) -> PathBuf {
    let dir = tmp(&format!("scene-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("scene.toml");
    std::fs::write(
        &path,
        format!(
            "[simulation]\nintegrator = \"{integrator}\"\ndt = {dt}\nsteps = 120\n\
             [output]\nframe_every = 7\nmetrics_every = 3\ncheckpoint_every = {}\nformats = [\"ply\", \"obj\", \"vtk\"]\n\
             [[body]]\ntype = \"cloth\"\nnx = 8\nny = 8\npin = {{ edge = [\"top\"] }}\n\
             [[collider]]\ntype = \"sphere\"\ncenter = [0.2, -0.3, 0.0]\nradius = 0.12\n",
            11.0 * dt
        ),
    )
    .unwrap();
    path
}

/// Outputs that must be equal between an uninterrupted run and a resumed one:
/// everything but the manifest (command line, start time) and timing.json (wall
/// clock).
fn comparable(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut f = files(dir);
    for k in ["run.json", "timing.json", "checkpoint.bin"] {
        f.remove(k);
    }
    f
}

fn assert_same(a: &Path, b: &Path, what: &str) {
    let (fa, fb) = (comparable(a), comparable(b));
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>(), "{what}: different files");
    for (name, data) in &fa {
        assert!(*data == fb[name], "{what}: {name} differs from the uninterrupted run");
    }
}

#[test]
fn interrupted_or_killed_runs_resume_bit_for_bit_for_every_integrator() {
    let mut rng = Lcg(0x5eed);
    for (integrator, dt) in [
        ("euler", 1e-4),
        ("symplectic-euler", 5e-4),
        ("heun", 5e-4),
        ("midpoint", 5e-4),
        ("rk4", 5e-4),
        ("verlet", 5e-4),
        ("implicit-euler", 1e-3),
        ("semi-implicit", 1e-3),
    ] {
        let scene = scene_file(integrator, integrator, dt);
        let full = tmp(&format!("full-{integrator}"));
        let o = wobble(&["run", scene.to_str().unwrap(), "--out", full.to_str().unwrap(), "-q"]);
        assert!(o.status.success(), "{integrator}: {}", text(&o));
        assert_eq!(json(&full.join("run.json"))["status"], "finished");
        for signal in ["INT", "TERM", "KILL"] {
            // A step in 1..119 that is a multiple of neither 7 (frames) nor 11
            // (checkpoints).
            let mut at = 1 + rng.below(118);
            while at.is_multiple_of(7) || at.is_multiple_of(11) {
                at = 1 + rng.below(118);
            }
            let what = format!("{integrator}, SIG{signal} after step {at}");
            let out = tmp(&format!("cut-{integrator}-{signal}"));
            let o = wobble_env(
                &["run", scene.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"],
                &[("WOBBLE_SIGNAL_AT_STEP", format!("{at}:{signal}"))],
            );
            check_complete(&out);
            let manifest = json(&out.join("run.json"));
            match signal {
                "KILL" => {
                    assert_eq!(o.status.code(), None, "{what}: {}", text(&o));
                    assert_eq!(manifest["status"], "running", "{what}");
                }
                _ => {
                    let code = if signal == "INT" { 130 } else { 143 };
                    assert_eq!(o.status.code(), Some(code), "{what}: {}", text(&o));
                    assert_eq!(manifest["status"], "interrupted", "{what}");
                    let s = json(&out.join("summary.json"));
                    assert_eq!(s["status"], "interrupted", "{what}");
                    assert_eq!(s["steps"], at, "{what}: the step in progress completes, no more");
                    let frames = at / 7 + 1;
                    assert_eq!(s["frames"], frames, "{what}");
                    assert_eq!(s["last_frame"], format!("frame_{:05}.*", frames - 1), "{what}");
                    let csv = std::fs::read_to_string(out.join("metrics.csv")).unwrap();
                    let last: u64 = csv.lines().last().unwrap().split(',').next().unwrap().parse().unwrap();
                    assert_eq!(last, at / 3 * 3, "{what}: metrics flushed up to the last row");
                }
            }
            let o = wobble(&["run", "--resume", out.to_str().unwrap(), "-q"]);
            assert!(o.status.success(), "{what}: resume: {}", text(&o));
            assert_eq!(json(&out.join("run.json"))["status"], "finished", "{what}");
            assert_same(&full, &out, &what);
        }
    }
}

#[test]
fn a_second_interrupt_exits_at_once_leaving_only_complete_files() {
    let scene = scene_file("double", "symplectic-euler", 5e-4);
    let out = tmp("double");
    let o = wobble_env(
        &["run", scene.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"],
        &[("WOBBLE_SIGNAL_AT_STEP", "40:INT2".into())],
    );
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    check_complete(&out);
    assert!(!out.join("summary.json").exists(), "the second interrupt must not wait for the summary");
    assert_eq!(json(&out.join("run.json"))["status"], "running");
    // The folder can still be resumed: from its last periodic checkpoint (step 33).
    let o = wobble(&["run", "--resume", out.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let full = tmp("double-full");
    let o = wobble(&["run", scene.to_str().unwrap(), "--out", full.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_same(&full, &out, "after a double interrupt");
}

#[test]
fn a_second_run_is_refused_and_overwrite_removes_only_the_first_runs_files() {
    let out = tmp("refuse");
    let o = wobble(&["run", "--steps", "400", "--out", out.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", text(&o));
    std::fs::write(out.join("notes.txt"), b"my notes").unwrap();
    std::fs::write(out.join("frames/keep.txt"), b"mine too").unwrap();
    let before = files(&out);
    let o = wobble(&["run", "--steps", "200", "--out", out.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    for f in ["holds the outputs of an earlier run", "--overwrite", "--resume"] {
        assert!(text(&o).contains(f), "`{f}` missing from {}", text(&o));
    }
    assert!(files(&out) == before, "a refused run must not touch the folder");
    let o = wobble(&["run", "--steps", "200", "--out", out.to_str().unwrap(), "-q", "--overwrite"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("did not write: frames, notes.txt") || text(&o).contains("notes.txt"), "{}", text(&o));
    let after = files(&out);
    assert_eq!(after["notes.txt"], b"my notes");
    assert_eq!(after["frames/keep.txt"], b"mine too");
    // 200 steps at a frame every 200: frames 0 and 1; the first run's frame 2 is gone.
    assert!(after.contains_key("frames/frame_00001.ply") && !after.contains_key("frames/frame_00002.ply"));
    assert_eq!(json(&out.join("summary.json"))["steps"], 200);
    // A folder of someone else's files is refused, with or without --overwrite.
    let foreign = tmp("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("thesis.tex"), b"precious").unwrap();
    for extra in [None, Some("--overwrite")] {
        let mut args = vec!["run", "--steps", "10", "--out", foreign.to_str().unwrap(), "-q"];
        args.extend(extra);
        let o = wobble(&args);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains("holds no wobble run"), "{}", text(&o));
    }
    assert_eq!(std::fs::read_dir(&foreign).unwrap().count(), 1);
}

#[test]
fn links_planted_below_the_output_folder_are_never_followed() {
    let victim_dir = tmp("victim");
    std::fs::create_dir_all(&victim_dir).unwrap();
    let victim = victim_dir.join("victim.txt");
    std::fs::write(&victim, b"do not touch").unwrap();
    let scene = scene_file("links", "symplectic-euler", 5e-4);
    // A link where a frame will go: the resumed run fails there, status failed.
    let out = tmp("link-file");
    let o = wobble_env(
        &["run", scene.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"],
        &[("WOBBLE_SIGNAL_AT_STEP", "12:INT".into())],
    );
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    std::os::unix::fs::symlink(&victim, out.join("frames/frame_00005.ply")).unwrap();
    let o = wobble(&["run", "--resume", out.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("frame_00005.ply is a symbolic link"), "{}", text(&o));
    assert_eq!(json(&out.join("run.json"))["status"], "failed");
    assert_eq!(std::fs::read(&victim).unwrap(), b"do not touch");
    // A linked frames/ folder: refused before anything is written into it.
    let out = tmp("link-dir");
    let o = wobble_env(
        &["run", scene.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"],
        &[("WOBBLE_SIGNAL_AT_STEP", "12:INT".into())],
    );
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    std::fs::rename(out.join("frames"), out.join("old-frames")).unwrap();
    std::os::unix::fs::symlink(&victim_dir, out.join("frames")).unwrap();
    let o = wobble(&["run", "--resume", out.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("frames is a symbolic link"), "{}", text(&o));
    // A link at metrics.csv: --overwrite will not remove (or follow) it.
    std::os::unix::fs::symlink(&victim, out.join("metrics.csv.tmp")).unwrap();
    std::fs::remove_file(out.join("metrics.csv")).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("metrics.csv")).unwrap();
    let o = wobble(&["run", scene.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--overwrite"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("metrics.csv is a symbolic link"), "{}", text(&o));
    assert_eq!(std::fs::read(&victim).unwrap(), b"do not touch");
    assert_eq!(std::fs::read_dir(&victim_dir).unwrap().count(), 1, "nothing written into the linked folder");
}

#[test]
fn a_corrupt_or_foreign_checkpoint_is_a_clear_error() {
    let scene = scene_file("corrupt", "verlet", 5e-4);
    let out = tmp("corrupt");
    let o = wobble_env(
        &["run", scene.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"],
        &[("WOBBLE_SIGNAL_AT_STEP", "50:INT".into())],
    );
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    let path = out.join("checkpoint.bin");
    let good = std::fs::read(&path).unwrap();
    let mut bad = good.clone();
    let k = bad.len() / 2;
    bad[k] ^= 1;
    std::fs::write(&path, &bad).unwrap();
    let o = wobble(&["run", "--resume", out.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("checksum does not match"), "{}", text(&o));
    std::fs::write(&path, &good[..good.len() - 9]).unwrap();
    let o = wobble(&["run", "--resume", out.to_str().unwrap(), "-q"]);
    assert!(text(&o).contains("checksum does not match"), "{}", text(&o));
    std::fs::write(&path, &good).unwrap();
    // The scene copy edited: the checkpoint no longer belongs to it.
    let scene_copy = out.join("scene.toml");
    let original = std::fs::read_to_string(&scene_copy).unwrap();
    std::fs::write(&scene_copy, original.replace("nx = 8", "nx = 9")).unwrap();
    let o = wobble(&["run", "--resume", out.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("scene.toml has changed"), "{}", text(&o));
    std::fs::write(&scene_copy, original).unwrap();
    let o = wobble(&["run", "--resume", out.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = wobble(&["run", "--resume", out.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("has finished; there is nothing to resume"), "{}", text(&o));
}

/// Runs `script` as root of a private mount namespace (`unshare -rm`); `None`
/// when this machine allows no such namespace.
fn in_mount_namespace(script: &str) -> Option<Output> {
    let probe = Command::new("unshare").args(["-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return None;
    }
    Some(Command::new("unshare").args(["-rm", "sh", "-c", script]).output().unwrap())
}

#[test]
fn a_full_disk_ends_the_run_failed_with_earlier_files_intact() {
    let mnt = tmp("tmpfs");
    let keep = tmp("tmpfs-copy");
    std::fs::create_dir_all(&mnt).unwrap();
    let bin = env!("CARGO_BIN_EXE_wobble");
    let scene = repo().join("scenes/bench/cloth-32.toml");
    // 640 KiB: the reserve (256 KiB), the scene, metrics and a few 50 KB frames.
    let script = format!(
        "mount -t tmpfs -o size=640k tmpfs {m} && cd {m} && {bin} run {scene} --steps 2000 --out {m}/run -q; echo $? > {m}/run/exit-code; cp -r {m}/run {k}",
        m = mnt.display(),
        k = keep.display(),
        scene = scene.display()
    );
    let Some(o) = in_mount_namespace(&script) else {
        eprintln!("SKIPPED: this machine allows no private mount namespace for a small tmpfs");
        return;
    };
    let log = text(&o);
    let code = std::fs::read_to_string(keep.join("exit-code")).unwrap_or_else(|_| panic!("no result: {log}"));
    assert_eq!(code.trim(), "1", "{log}");
    assert!(log.contains("No space left on device"), "{log}");
    let manifest = json(&keep.join("run.json"));
    assert_eq!(manifest["status"], "failed", "{log}");
    let summary = json(&keep.join("summary.json"));
    assert_eq!(summary["status"], "failed");
    assert!(summary["error"].as_str().unwrap().contains("No space left"));
    std::fs::remove_file(keep.join("exit-code")).unwrap();
    check_complete(&keep);
    let frames = summary["frames"].as_u64().unwrap();
    assert!(frames >= 2, "some frames fit before the disk filled: {frames}");
    for k in 0..frames {
        let name = format!("frames/frame_{k:05}.ply");
        assert!(keep.join(&name).exists(), "{name} missing");
    }
}
