//! Property-based mutation tests of the two readers of user files: the scene
//! reader (`Scene::parse` + `Scene::build`, after the UTF-8 check `Scene::load`
//! makes) and the OBJ reader (`wobble::build::obj::parse`).
//!
//! Valid inputs are mutated (bytes flipped, the file cut short, lines duplicated
//! or dropped, numbers replaced by huge, tiny, negative, NaN and infinite values,
//! random bytes inserted) and each case must end within [`CASE_DEADLINE`] without a
//! panic, either accepted or with an error that names a line inside the file.
//!
//! Cases per reader: 256 here, `WOBBLE_FUZZ_CASES` to change it
//! (`scripts/fuzz-readers.sh` runs 10 000).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use wobble_scene::{Scene, Source};

/// A runner with a fixed random sequence: the same mutants every run, so a case
/// that fails (or exhausts the machine) fails every time and can be replayed, and
/// CI does not draw new cases on each run. `scripts/fuzz-readers.sh` raises the
/// count to explore further.
fn runner() -> TestRunner {
    let config = Config { cases: cases(), failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

/// Longest a single case may take before it counts as a hang.
const CASE_DEADLINE: Duration = Duration::from_secs(30);

/// Cases per reader: `WOBBLE_FUZZ_CASES`, else 256.
fn cases() -> u32 {
    std::env::var("WOBBLE_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

fn scenes_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenes")
}

/// Valid scenes to mutate: small example scenes (their mesh paths resolve against
/// `scenes/`) and one that uses every table.
fn scene_seeds() -> Vec<String> {
    let mut seeds: Vec<String> = ["chain", "cloth-hanging", "colliders", "drag", "ring", "contact-balls", "mesh-drop"]
        .iter()
        .map(|n| std::fs::read_to_string(scenes_dir().join(format!("{n}.toml"))).unwrap())
        .collect();
    seeds.push(
        r#"[simulation]
integrator = "verlet"
dt = 1e-3
steps = 20
gravity = [0, -9.81, 0]
[output]
frame_every = 5
formats = ["ply", "vtu"]
[[body]]
name = "flag"
type = "cloth"
nx = 6
ny = 5
spacing = 0.05
velocity = [0.1, 0, 0]
pin = { edge = ["top"] }
springs.structural = { stiffness = 200, damping = 0.1 }
stretch_limit = { tau = 0.1, iterations = 5 }
[[driver]]
body = "flag"
select = { grid = [[0, 0]] }
motion = { type = "oscillate", amplitude = [0.1, 0, 0], frequency = 1.5, phase = 0 }
[[collider]]
type = "sphere"
center = [0.1, -0.3, 0]
radius = 0.1
motion = { type = "linear", velocity = [0, 0.1, 0] }
[[drag]]
start = 0.001
end = 0.01
near = [0, 0, 0]
by = [0, 0.1, 0]
[camera]
position = [1, 1, 2]
fov = 40
[contact]
friction = 0.2
"#
        .to_owned(),
    );
    seeds
}

/// Valid OBJ files to mutate.
fn obj_seeds() -> Vec<String> {
    vec![
        std::fs::read_to_string(scenes_dir().join("meshes/icosahedron.obj")).unwrap(),
        "# cube\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\n\
         f 1 3 2\nf 1 4 3\nf 5 6 7 8\nf 1 2 6 5\nf 2/1 3/2 7/3 6/4\nf 3//1 4//1 8//1 7//1\nf -8 -4 -1 -5\n\
         vn 0 0 1\nvt 0.5 0.5\ng side\nusemtl red\n"
            .to_owned(),
    ]
}

/// Values that replace a number: huge, tiny, negative, NaN, infinite, off-type.
const HOSTILE: [&str; 16] = [
    "0",
    "-1",
    "-0.0",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "1e308",
    "1e-308",
    "1e400",
    "9223372036854775807",
    "-9223372036854775808",
    "99999999999999999999",
    "65536",
    "0x7fffffff",
    "\"x\"",
];

/// One edit of a file.
#[derive(Clone, Debug)]
enum Mutation {
    /// XOR the byte at (position fraction) with a mask.
    Flip(f64, u8),
    /// Keep only a fraction of the bytes.
    Truncate(f64),
    /// Repeat one line (fraction of the line count) `k` times.
    DuplicateLine(f64, usize),
    /// Remove one line.
    DropLine(f64),
    /// Replace the k-th number (fraction of their count) with a hostile value.
    Number(f64, usize),
    /// Insert bytes at a position.
    Insert(f64, Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = 0.0..1.0f64;
    prop_oneof![
        (at.clone(), 1u8..=255).prop_map(|(a, m)| Mutation::Flip(a, m)),
        at.clone().prop_map(Mutation::Truncate),
        (at.clone(), 1usize..4).prop_map(|(a, k)| Mutation::DuplicateLine(a, k)),
        at.clone().prop_map(Mutation::DropLine),
        (at.clone(), 0..HOSTILE.len()).prop_map(|(a, k)| Mutation::Number(a, k)),
        (at.clone(), proptest::collection::vec(any::<u8>(), 1..8)).prop_map(|(a, b)| Mutation::Insert(a, b)),
        // Numbers are where most scene errors hide: weigh them up.
        (at, 0..HOSTILE.len()).prop_map(|(a, k)| Mutation::Number(a, k)),
    ]
}

fn index(fraction: f64, len: usize) -> usize {
    ((fraction * len as f64) as usize).min(len.saturating_sub(1))
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    match m {
        Mutation::Flip(a, mask) => {
            let i = index(*a, bytes.len());
            bytes[i] ^= mask;
        }
        Mutation::Truncate(a) => bytes.truncate(index(*a, bytes.len())),
        Mutation::DuplicateLine(a, k) => {
            let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
            let i = index(*a, lines.len());
            let mut out = Vec::with_capacity(bytes.len() * 2);
            for (j, l) in lines.iter().enumerate() {
                for _ in 0..if j == i { 1 + k } else { 1 } {
                    out.extend_from_slice(l);
                }
            }
            *bytes = out;
        }
        Mutation::DropLine(a) => {
            let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
            let i = index(*a, lines.len());
            *bytes = lines.iter().enumerate().filter(|(j, _)| *j != i).flat_map(|(_, l)| l.iter().copied()).collect();
        }
        Mutation::Number(a, k) => {
            // Numbers: maximal runs of digits, '.', 'e', '-', '+' that start with a digit.
            let mut spans = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) {
                    let start = if i > 0 && bytes[i - 1] == b'-' { i - 1 } else { i };
                    let mut j = i;
                    while j < bytes.len()
                        && (bytes[j].is_ascii_alphanumeric() || matches!(bytes[j], b'.' | b'-' | b'+' | b'_'))
                    {
                        j += 1;
                    }
                    spans.push(start..j);
                    i = j;
                } else {
                    i += 1;
                }
            }
            if !spans.is_empty() {
                let span = spans[index(*a, spans.len())].clone();
                bytes.splice(span, HOSTILE[*k].bytes());
            }
        }
        Mutation::Insert(a, b) => {
            let i = index(*a, bytes.len() + 1);
            bytes.splice(i..i, b.iter().copied());
        }
    }
}

/// Runs `f` on a thread; a panic or a run past the deadline fails the case.
fn within_deadline<T: Send + 'static>(
    what: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, TestCaseError> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("spawn a case thread");
    match rx.recv_timeout(CASE_DEADLINE) {
        Ok(v) => Ok(v),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            Err(TestCaseError::fail(format!("hung for {CASE_DEADLINE:?} on:\n{what}")))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(TestCaseError::fail(format!("panicked on:\n{what}"))),
    }
}

/// The outcome of one scene case: `Ok(())` or (message, line, lines in the file).
fn scene_case(bytes: Vec<u8>) -> Result<(), (String, usize, usize)> {
    let text = match wobble_scene::input::text_of(bytes.clone()) {
        Ok(t) => t,
        Err(e) => {
            let lines = bytes.split(|&b| b == b'\n').count();
            let line = match e {
                wobble_scene::input::ReadError::NotText { line } => line,
                _ => 0,
            };
            return Err((e.to_string(), line, lines));
        }
    };
    let lines = text.split('\n').count();
    let result =
        Scene::parse(Source::new("mutant.toml", text.as_str()), scenes_dir()).and_then(|s| s.build().map(|_| ()));
    result.map_err(|e| {
        // "not a scene file" errors carry no text (so nothing is quoted) and name the
        // line in their message; all others point into the file.
        let line = if e.source.text.is_empty() {
            e.message
                .split("line ")
                .nth(1)
                .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
                .unwrap_or(1)
        } else {
            e.line()
        };
        (e.to_string(), line, lines)
    })
}

#[test]
fn mutated_scenes_never_panic_hang_or_lose_the_line() {
    let seeds = scene_seeds();
    let mut runner = runner();
    let strategy = (0..seeds.len(), proptest::collection::vec(mutation(), 1..4));
    let (accepted, refused) = (AtomicUsize::new(0), AtomicUsize::new(0));
    runner
        .run(&strategy, |(seed, edits)| {
            let mut bytes = seeds[seed].clone().into_bytes();
            for m in &edits {
                apply(&mut bytes, m);
            }
            let shown = String::from_utf8_lossy(&bytes).into_owned();
            match within_deadline(shown.clone(), move || scene_case(bytes))? {
                Ok(()) => {
                    accepted.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                }
                Err((message, line, lines)) => {
                    refused.fetch_add(1, Ordering::Relaxed);
                    prop_assert!(line >= 1 && line <= lines, "error names line {line} of {lines}: {message}\n{shown}");
                    prop_assert!(
                        message.starts_with("mutant.toml:") || message.contains("line "),
                        "error names no line: {message}"
                    );
                    prop_assert!(
                        !message.chars().any(|c| c.is_control() && c != '\n'),
                        "control character in: {message:?}"
                    );
                    Ok(())
                }
            }
        })
        .unwrap();
    println!("scene reader: {} mutants accepted, {} refused with a line", accepted.into_inner(), refused.into_inner());
}

#[test]
fn mutated_obj_files_never_panic_hang_or_lose_the_line() {
    let seeds = obj_seeds();
    let mut runner = runner();
    let strategy = (0..seeds.len(), proptest::collection::vec(mutation(), 1..4));
    let (accepted, refused, not_text) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
    runner
        .run(&strategy, |(seed, edits)| {
            let mut bytes = seeds[seed].clone().into_bytes();
            for m in &edits {
                apply(&mut bytes, m);
            }
            let Ok(text) = wobble_scene::input::text_of(bytes.clone()) else {
                not_text.fetch_add(1, Ordering::Relaxed);
                return Ok(()); // refused before parsing, as a scene is (tested above)
            };
            let lines = text.split('\n').count();
            let shown = text.clone();
            let result = within_deadline(shown.clone(), move || wobble::build::obj::parse(&text).map(|_| ()))?;
            if result.is_ok() {
                accepted.fetch_add(1, Ordering::Relaxed);
            }
            if let Err(e) = result {
                refused.fetch_add(1, Ordering::Relaxed);
                prop_assert!(e.line >= 1 && e.line <= lines, "error names line {} of {lines}: {e}\n{shown}", e.line);
                prop_assert!(e.column >= 1, "column 0: {e}");
                prop_assert!(!e.message.chars().any(char::is_control), "control character in: {e:?}");
            }
            Ok(())
        })
        .unwrap();
    println!(
        "OBJ reader: {} mutants accepted, {} refused with a line, {} not text",
        accepted.into_inner(),
        refused.into_inner(),
        not_text.into_inner()
    );
}
