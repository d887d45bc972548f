//! Hard limits on bad input (`wobble_scene::input`): oversized, non-regular and
//! non-text files, files that are not scenes, step counts beyond the cap,
//! non-finite numbers anywhere, stiffness that makes the stable step underflow,
//! and unsafe names. Each is a clear error naming the file (and, for scene text,
//! the line), never a panic, a hang or an echo of an unrelated file's contents.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use wobble_scene::input::{MAX_SCENE_BYTES, MAX_STEPS};
use wobble_scene::{Scene, SceneError, Source};

const CLOTH: &str = "[[body]]\ntype = \"cloth\"\nnx = 4\nny = 4\n";

fn parse(text: &str) -> Result<Scene, SceneError> {
    Scene::parse(Source::new("test.toml", text), PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenes"))
}

fn error(text: &str) -> SceneError {
    match parse(text).and_then(|s| s.build().map(|_| s)) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    }
}

/// A fresh scratch folder for this test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wobble-limits-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Loads `path` in a thread and fails the test if it takes more than 10 s (a hang).
fn load_with_deadline(path: &Path) -> Result<Scene, SceneError> {
    let (tx, rx) = mpsc::channel();
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(Scene::load(&p));
    });
    rx.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| panic!("loading {} hung", path.display()))
}

/// The error of loading `path`: it must be "not a scene file" with no excerpt.
fn not_a_scene(path: &Path, why: &str) -> SceneError {
    let e = load_with_deadline(path).expect_err("expected an error");
    let shown = e.to_string();
    assert!(shown.contains("not a scene file"), "{shown}");
    assert!(shown.contains(why), "`{why}` missing from: {shown}");
    assert!(shown.starts_with(&path.display().to_string()), "no file name in: {shown}");
    assert!(e.source.text.is_empty(), "the error carries the file's text, which would be shown: {shown}");
    e
}

#[test]
fn oversized_scene_is_refused_before_parsing() {
    let dir = scratch("big");
    let path = dir.join("big.toml");
    let mut text = String::from(CLOTH);
    text.push_str(&"# padding\n".repeat((MAX_SCENE_BYTES / 10) as usize + 1));
    std::fs::write(&path, &text).unwrap();
    not_a_scene(&path, "larger than the 16 MiB limit");
    // Just under the cap still loads.
    text.truncate(MAX_SCENE_BYTES as usize - 1);
    std::fs::write(&path, &text).unwrap();
    load_with_deadline(&path).unwrap();
}

#[test]
fn fifo_directory_and_devices_are_refused_without_blocking() {
    let dir = scratch("special");
    let fifo = dir.join("pipe.toml");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo failed");
    not_a_scene(&fifo, "a FIFO");
    not_a_scene(&dir, "a directory");
    not_a_scene(Path::new("/dev/null"), "a device");
    not_a_scene(Path::new("/dev/zero"), "a device");
}

#[test]
fn binary_file_is_not_text_and_is_not_echoed() {
    let dir = scratch("binary");
    let path = dir.join("frame.ply");
    let mut bytes = b"ply\nformat binary_little_endian 1.0\nSECRET\n".to_vec();
    bytes.extend([0xff, 0xfe, 0x00, 0x80, 0x81]);
    std::fs::write(&path, &bytes).unwrap();
    let e = not_a_scene(&path, "not a text file (line 4");
    assert!(!e.to_string().contains("SECRET"), "{e}");
}

#[test]
fn proc_and_other_text_files_are_not_quoted() {
    for path in ["/proc/self/status", "/proc/cpuinfo", "/etc/passwd"] {
        let path = Path::new(path);
        if !path.exists() {
            continue;
        }
        let e = not_a_scene(path, "not TOML");
        assert!(!e.to_string().contains("Name") && !e.to_string().contains("root"), "{e}");
    }
    let cargo = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let e = not_a_scene(&cargo, "none of its tables is a scene table");
    assert!(!e.to_string().contains("thiserror"), "{e}");
}

#[test]
fn a_misspelt_scene_table_is_a_typo_not_a_foreign_file() {
    let e = error("[simulaton]\ndt = 1e-3\n");
    assert!(!e.to_string().contains("not a scene file"), "{e}");
    assert!(!e.source.text.is_empty(), "{e}");
}

#[test]
fn a_scene_with_a_syntax_error_is_still_quoted_with_its_line() {
    let e = error("[simulation]\ndt = = 1\n[[body]]\ntype = \"cloth\"\n");
    assert_eq!(e.line(), 2, "{e}");
    assert!(e.to_string().contains("invalid TOML"), "{e}");
    assert!(!e.source.text.is_empty());
}

#[test]
fn steps_beyond_the_cap_name_their_line() {
    let e = error(&format!("[simulation]\nsteps = {}\n{CLOTH}", MAX_STEPS + 1));
    assert_eq!(e.line(), 2, "{e}");
    assert!(e.to_string().contains("exceeds the limit of 1000000000 steps"), "{e}");
    let e = error(&format!("[simulation]\ndt = 1e-9\nduration = 10\n{CLOTH}"));
    assert_eq!(e.line(), 3, "{e}");
    assert!(e.to_string().contains("exceeds the limit"), "{e}");
    assert!(parse(&format!("[simulation]\nsteps = {MAX_STEPS}\n{CLOTH}")).is_ok());
}

/// Every place a number can appear, with a non-finite value: (text, line of the value).
fn non_finite_cases(bad: &str) -> Vec<(String, usize)> {
    let sim = format!("[simulation]\ngravity = [0, {bad}, 0]\n{CLOTH}");
    let vel = format!("[[body]]\ntype = \"cloth\"\nnx = 4\nny = 4\nvelocity = [{bad}, 0, 0]\n");
    let origin = format!("[[body]]\ntype = \"cloth\"\nnx = 4\nny = 4\norigin = [0, 0, {bad}]\n");
    let spring = format!("[[body]]\ntype = \"cloth\"\nnx = 4\nny = 4\nsprings.structural = {{ stiffness = {bad} }}\n");
    let driver = format!(
        "{CLOTH}[[driver]]\nbody = \"cloth\"\nselect = {{ grid = [[0, 0]] }}\n\
         motion = {{ type = \"oscillate\", amplitude = [0.1, 0, 0], frequency = {bad}, phase = 0 }}\n"
    );
    let collider = format!("{CLOTH}[[collider]]\ntype = \"sphere\"\ncenter = [0, {bad}, 0]\nradius = 1\n");
    let collider_motion =
        format!("{CLOTH}[[collider]]\ntype = \"plane\"\nmotion = {{ type = \"linear\", velocity = [0, {bad}, 0] }}\n");
    let camera = format!("{CLOTH}[camera]\nposition = [1, 2, {bad}]\n");
    let drag = format!("{CLOTH}[[drag]]\nstart = 0\nend = {bad}\nnear = [0, 0, 0]\nby = [0, 1, 0]\n");
    let contact = format!("{CLOTH}[contact]\nfriction = {bad}\n");
    vec![
        (sim, 2),
        (vel, 5),
        (origin, 5),
        (spring, 5),
        (driver, 8),
        (collider, 7),
        (collider_motion, 7),
        (camera, 6),
        (drag, 7),
        (contact, 6),
    ]
}

#[test]
fn non_finite_numbers_anywhere_name_their_line() {
    for bad in ["inf", "-inf", "nan", "+nan", "1e400", "-1e999", "1e31"] {
        for (text, line) in non_finite_cases(bad) {
            let e = error(&text);
            let shown = e.to_string();
            assert_eq!(e.line(), line, "`{bad}` reported at the wrong line: {shown}\n{text}");
            assert!(
                shown.contains("is not a finite number") || shown.contains("largest magnitude"),
                "unclear message for `{bad}`: {shown}"
            );
        }
    }
}

#[test]
fn stiffness_or_mass_that_underflows_the_stable_step_is_refused() {
    let stiff = "[[body]]\ntype = \"cloth\"\nnx = 4\nny = 4\nsprings.structural = { stiffness = 1e29 }\n";
    let e = error(stiff);
    let shown = e.to_string();
    assert!(shown.contains("stable time step underflows"), "{shown}");
    assert!((1..=5).contains(&e.line()), "{shown}");
    let light = "[[body]]\ntype = \"cloth\"\nnx = 4\nny = 4\nmass = 1e-29\n";
    let e = error(light);
    assert!(e.to_string().contains("stable time step underflows"), "{e}");
    assert_eq!(e.line(), 5, "{e}");
    // Stiff but sane (steel-like cloth at 1 kHz steps) still builds.
    let fine = "[[body]]\ntype = \"cloth\"\nnx = 4\nny = 4\nsprings.structural = { stiffness = 1e9 }\n";
    parse(fine).unwrap().build().unwrap();
}

#[test]
fn names_outside_the_safe_set_are_refused() {
    for bad in [r#""a\nply""#, r#""\u001b[31mred""#, r#""""#, r#"" lead""#, r#""tab\there""#, r#""é""#] {
        for text in [
            format!("[[body]]\ntype = \"cloth\"\nname = {bad}\n"),
            format!("{CLOTH}[[collider]]\ntype = \"plane\"\nname = {bad}\n"),
            format!("{CLOTH}[[driver]]\nbody = \"cloth\"\nselect = {{ grid = [[0, 0]] }}\nname = {bad}\n"),
        ] {
            let e = error(&text);
            let shown = e.to_string();
            assert!(shown.contains("`name`"), "{shown}");
            assert!(!shown.contains('\u{1b}') && !shown.contains("\nply"), "message carries the raw name: {shown}");
            assert_eq!(
                e.source.line_col(e.span.start).0,
                text.lines().position(|l| l.starts_with("name")).unwrap() + 1
            );
        }
    }
    let long = "x".repeat(65);
    assert!(error(&format!("[[body]]\ntype = \"cloth\"\nname = \"{long}\"\n")).to_string().contains("at most 64"));
    parse("[[body]]\ntype = \"cloth\"\nname = \"Flag-2 v1.0_a\"\n").unwrap();
}

#[test]
fn messages_never_carry_control_characters() {
    let e = error("[[body]]\ntype = \"\\u001b]0;pwned\\u0007\"\n");
    assert!(!e.to_string().chars().any(|c| c.is_control() && c != '\n'), "{e:?}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let text = format!("{CLOTH}x = {}{}\n", "[".repeat(5000), "]".repeat(5000));
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            let _ = tx.send(parse(&text).map(|_| ()));
        })
        .unwrap();
    let r = rx.recv_timeout(Duration::from_secs(10)).expect("deep nesting hung or crashed the reader");
    assert!(r.is_err());
}
