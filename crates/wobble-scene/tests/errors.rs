//! Bad scene input gets a clear error naming the line, the column and what to do —
//! never a panic.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use wobble_scene::{Scene, SceneError, Source};

fn parse(text: &str) -> Result<Scene, SceneError> {
    Scene::parse(Source::new("test.toml", text), PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenes"))
}

fn error(text: &str) -> SceneError {
    match parse(text).and_then(|s| s.build().map(|_| s)) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    }
}

/// Asserts the error points at 1-based (line, column) and mentions every fragment.
fn expect(text: &str, line: usize, column: usize, fragments: &[&str]) {
    let e = error(text);
    let shown = e.to_string();
    assert_eq!((e.line(), e.column()), (line, column), "wrong position in: {shown}");
    for f in fragments {
        assert!(shown.contains(f), "`{f}` missing from: {shown}");
    }
    assert!(shown.starts_with(&format!("test.toml:{line}:{column}: ")), "no file:line:col prefix: {shown}");
}

const CLOTH: &str = "[[body]]\ntype = \"cloth\"\nnx = 4\nny = 4\n";

#[test]
fn unknown_key_names_the_nearest_valid_one() {
    let text = "[[body]]\ntype = \"cloth\"\nspacng = 0.01\n";
    expect(text, 3, 1, &["unknown key `spacng`", "did you mean `spacing`?"]);
    let text = "[[body]]\ntype = \"cloth\"\nsprings.structural = { stifness = 5 }\n";
    expect(text, 3, 24, &["unknown key `stifness`", "did you mean `stiffness`?"]);
    let text = "[simulation]\ndtt = 0.1\n[[body]]\ntype = \"cloth\"\n";
    expect(text, 2, 1, &["unknown key `dtt`", "did you mean `dt`?"]);
    let text = "[simulaton]\n[[body]]\ntype = \"cloth\"\n";
    expect(text, 1, 2, &["unknown key `simulaton`", "did you mean `simulation`?"]);
}

#[test]
fn unknown_integrator_lists_the_choices() {
    let text = format!("[simulation]\nintegrator = \"rk5\"\n{CLOTH}");
    expect(
        &text,
        2,
        14,
        &["unknown integrator `rk5`", "euler, symplectic-euler, heun, midpoint, rk4, verlet", "did you mean `rk4`?"],
    );
}

#[test]
fn non_positive_time_step_and_mass_are_rejected() {
    expect(&format!("[simulation]\ndt = 0\n{CLOTH}"), 2, 6, &["`dt` = 0 must be positive (s)"]);
    expect(&format!("[simulation]\ndt = -1e-3\n{CLOTH}"), 2, 6, &["must be positive"]);
    expect("[[body]]\ntype = \"chain\"\nmass = -2\n", 3, 8, &["`mass` = -2 must be positive (kg)"]);
    expect("[[body]]\ntype = \"lattice\"\nmass = 0.0\n", 3, 8, &["must be positive (kg)"]);
}

#[test]
fn missing_mesh_file_points_at_the_file_key() {
    let text = "[[body]]\ntype = \"mesh\"\nfile = \"meshes/nope.obj\"\n";
    expect(text, 3, 8, &["cannot read mesh file", "nope.obj"]);
}

#[test]
fn malformed_obj_reports_its_own_line() {
    let dir = std::env::temp_dir().join(format!("wobble-obj-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bad.obj"), "v 0 0 0\nv 1 0 0\nv 0 1 oops\nf 1 2 3\n").unwrap();
    std::fs::write(dir.join("range.obj"), "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 7\n").unwrap();
    let scene = |file: &str| format!("[[body]]\ntype = \"mesh\"\nfile = \"{file}\"\n");
    for (file, fragments) in [
        ("bad.obj", ["OBJ line 3, column 7", "`oops` is not a finite number"]),
        ("range.obj", ["OBJ line 4, column 7", "face refers to vertex 7, but 3 vertices"]),
    ] {
        let e = Scene::parse(Source::new("test.toml", scene(file)), dir.clone()).unwrap().build().unwrap_err();
        assert_eq!((e.line(), e.column()), (3, 8));
        for f in fragments {
            assert!(e.to_string().contains(f), "`{f}` missing from: {e}");
        }
    }
}

#[test]
fn invalid_toml_points_at_the_syntax_error() {
    let e = error("[simulation]\ndt = = 3\n");
    assert_eq!(e.line(), 2);
    assert!(e.to_string().contains("invalid TOML"), "{e}");
}

#[test]
fn type_errors_name_the_expected_type() {
    expect(
        "[[body]]\ntype = \"cloth\"\nnx = \"many\"\n",
        3,
        6,
        &["`nx` must be a non-negative integer, found a string"],
    );
    expect("[[body]]\ntype = \"cloth\"\norigin = [1, 2]\n", 3, 10, &["`origin` must be an array of 3 numbers"]);
    expect("[[body]]\ntype = \"clth\"\n", 2, 8, &["unknown body type `clth`", "did you mean `cloth`?"]);
}

#[test]
fn references_to_missing_bodies_and_particles_are_caught() {
    let text = format!("{CLOTH}[[driver]]\nbody = \"clth\"\nselect = {{ all = true }}\n");
    expect(&text, 6, 8, &["no body is named `clth`", "did you mean `cloth`?"]);
    let text = format!("{CLOTH}pin = {{ grid = [[9, 9]] }}\n");
    expect(&text, 5, 7, &["grid [9, 9] is not a particle of cloth `cloth` (4 × 4"]);
    let text = format!("{CLOTH}pin = {{ indices = [99] }}\n");
    expect(&text, 5, 7, &["has 16 particles; index 99 does not exist"]);
}

#[test]
fn builder_errors_point_at_their_key() {
    expect("[[body]]\ntype = \"cloth\"\nnx = 1\n", 3, 6, &["`nx` = 1 must be at least 2"]);
    expect(
        "[[body]]\ntype = \"cloth\"\nnx = 100000\nny = 100000\n",
        3,
        6,
        &["body `cloth` would have 10000000000 particles, more than the limit of 10000000"],
    );
    expect("[[body]]\ntype = \"ball\"\nlevel = 9\n", 3, 9, &["body `ball`: `level` = 9 is invalid: must be 0..=6"]);
}

#[test]
fn duplicate_body_names_are_rejected() {
    let text = format!("{CLOTH}{CLOTH}");
    expect(&text, 5, 1, &["a body named `cloth` already exists (line 1)"]);
}

#[test]
fn a_scene_without_bodies_says_how_to_add_one() {
    let e = error("[simulation]\ndt = 1e-3\n");
    assert!(e.to_string().contains("the scene has no bodies"), "{e}");
    assert!(e.help.as_deref().unwrap_or("").contains("[[body]]"));
}

/// xorshift64*: a tiny seeded generator for the mutation test.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Any edit of a valid scene either loads and builds or fails with a SceneError:
/// it never panics. Numbers are replaced by hostile values (0, −1, NaN, infinities,
/// huge integers), characters deleted, keys renamed.
#[test]
fn mutated_scenes_never_panic() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenes");
    let hostile = ["0", "-1", "nan", "inf", "-inf", "1e308", "9223372036854775807", "\"x\"", "[]", "{}", "true", "3"];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for _ in 0..60 {
            let mut t = text.clone();
            match rng.below(3) {
                0 => {
                    // Replace one number with a hostile value.
                    let spots: Vec<usize> = t.match_indices(|c: char| c.is_ascii_digit()).map(|(i, _)| i).collect();
                    if let Some(&at) = spots.get(rng.below(spots.len().max(1))) {
                        let end = t[at..]
                            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
                            .map_or(t.len(), |e| at + e);
                        t.replace_range(at..end, hostile[rng.below(hostile.len())]);
                    }
                }
                1 => {
                    let at = rng.below(t.len());
                    if t.is_char_boundary(at) && t.is_char_boundary(at + 1) {
                        t.remove(at);
                    }
                }
                _ => {
                    let at = rng.below(t.len());
                    if t.is_char_boundary(at) {
                        t.insert(at, 'x');
                    }
                }
            }
            let result = catch_unwind(AssertUnwindSafe(|| {
                if let Ok(scene) = Scene::parse(Source::new("mutant.toml", t.as_str()), dir.clone())
                    && let Ok(mut built) = scene.build()
                {
                    let _ = built.world.run(3);
                }
            }));
            assert!(result.is_ok(), "panicked on a mutation of {}:\n{t}", path.display());
            checked += 1;
        }
    }
    assert!(checked >= 600, "only {checked} mutants checked");
}

#[test]
fn every_example_scene_loads_and_steps() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenes");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.extend(std::fs::read_dir(dir.join("bench")).unwrap().map(|e| e.unwrap().path()));
    let mut n = 0;
    for path in paths.iter().filter(|p| p.extension().and_then(|e| e.to_str()) == Some("toml")) {
        let scene = Scene::load(path).unwrap_or_else(|e| panic!("{e}"));
        let mut built = scene.build().unwrap_or_else(|e| panic!("{e}"));
        built.world.run(20).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        n += 1;
    }
    assert!(n >= 13, "expected every example scene, found {n}");
}

#[test]
fn camera_reads_its_defaults_and_rejects_impossible_views() {
    let scene = parse(&format!("{CLOTH}[camera]\nposition = [1, 2, 3]\n")).unwrap();
    let cam = scene.camera.expect("camera");
    assert_eq!((cam.target.to_array(), cam.up.to_array(), cam.fov_deg), ([0.0; 3], [0.0, 1.0, 0.0], 40.0));
    assert_eq!((cam.width, cam.height), (None, None));
    assert!(parse(CLOTH).unwrap().camera.is_none());
    expect(&format!("{CLOTH}[camera]\ntarget = [0, 1, 0]\n"), 5, 1, &["position"]);
    expect(&format!("{CLOTH}[camera]\nposition = [0, 1, 0]\ntarget = [0, 1, 0]\n"), 6, 12, &["other than its target"]);
    expect(&format!("{CLOTH}[camera]\nposition = [0, 1, 2]\nfov = 180\n"), 7, 7, &["below 179 degrees"]);
    expect(&format!("{CLOTH}[camera]\nposition = [0, 1, 2]\nwidth = 10\n"), 7, 9, &["16..=8192"]);
    expect(&format!("{CLOTH}[camera]\nposition = [0, 1, 2]\nzoom = 2\n"), 7, 1, &["unknown key `zoom`"]);
}

#[test]
fn contact_thickness_errors_name_the_line_and_a_value_that_works() {
    let body = "[[body]]\ntype = \"cloth\"\nnx = 6\nny = 6\nspacing = 0.02\n";
    // Negative: rejected where it is written.
    expect(&format!("{body}thickness = -0.01\n"), 6, 13, &["`thickness` = -0.01", "positive"]);
    // At or above the smallest rest distance between non-adjacent elements (a
    // cloth's vertex to the far diagonal of its cell, 0.02/√2 m).
    let scene = Scene::parse(Source::new("t.toml", format!("{body}thickness = 0.05\n")), PathBuf::from(".")).unwrap();
    let err = scene.build().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("1.414e-2") && text.contains("self_collide = false"), "{text}");
    assert_eq!(err.line(), 6, "{text}");
}

#[test]
fn mesh_collider_files_that_are_missing_or_empty_are_errors_at_their_line() {
    let dir = std::env::temp_dir().join(format!("wobble-mesh-collider-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("empty.obj"), "# nothing here\n").unwrap();
    std::fs::write(dir.join("points.obj"), "v 0 0 0\nv 1 0 0\n").unwrap();
    for (file, fragment) in
        [("missing.obj", "cannot read mesh file"), ("empty.obj", "empty.obj"), ("points.obj", "points.obj")]
    {
        let text = format!("{CLOTH}\n[[collider]]\ntype = \"mesh\"\nfile = \"{file}\"\n");
        let scene = Scene::parse(Source::new("test.toml", text), dir.clone()).unwrap();
        let err = scene.build().unwrap_err();
        assert_eq!(err.line(), 8, "{err}");
        assert!(err.to_string().contains(fragment), "{err}");
    }
    // A box with a non-positive edge.
    expect(&format!("{CLOTH}\n[[collider]]\ntype = \"box\"\nsize = [1, 0, 1]\n"), 8, 8, &["must be positive"]);
}

/// `self_collide = true` beside `collide = false` is a contradiction, reported at
/// the `self_collide` line; a body with no non-adjacent elements (a `pair`'s one
/// spring) takes any thickness, since no self-contact can fire at rest, where the
/// rest-gap search once stopped at its own radius and quoted that as the gap.
#[test]
fn self_collision_options_that_contradict_or_cannot_fire() {
    expect(&format!("{CLOTH}collide = false\nself_collide = true\n"), 6, 16, &["contradicts `collide = false`"]);
    let pair = "[[body]]\nname = \"pair\"\ntype = \"pair\"\nstart = [0, 1, 0]\nend = [0.5, 1, 0]\nself_collide = true\nthickness = 1.5\n";
    let scene = parse(pair).expect("parses");
    scene.build().expect("a pair has no non-adjacent elements, so any thickness is valid");
    // A cloth whose thickness is past the twice-mean-edge search radius is still
    // measured against its real gap (0.02/√2 m).
    let body = "[[body]]\ntype = \"cloth\"\nnx = 6\nny = 6\nspacing = 0.02\nthickness = 0.5\n";
    let err = parse(body).unwrap().build().unwrap_err().to_string();
    assert!(err.contains("1.414e-2"), "{err}");
}

/// A box collider takes `size` as one number for a cube, as a rigid box does.
#[test]
fn a_box_collider_takes_a_single_size() {
    let text = format!("{CLOTH}\n[[collider]]\ntype = \"box\"\nsize = 0.5\n");
    parse(&text).expect("parses").build().expect("builds");
    expect(&format!("{CLOTH}\n[[collider]]\ntype = \"box\"\nsize = \"big\"\n"), 8, 8, &["a number or [x, y, z]"]);
}
