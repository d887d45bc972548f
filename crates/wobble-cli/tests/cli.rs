//! End-to-end tests of the `wobble` binary: runs write outputs that parse, the cloth
//! benchmark reproduces the C reference, results are bit-identical for any thread
//! count, bad input gets a located message, blow-ups are reported.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn wobble(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wobble"))
        .args(args)
        .current_dir(repo())
        .env("NO_COLOR", "1")
        .output()
        .expect("run wobble")
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wobble-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn summary(dir: &Path) -> serde_json::Value {
    let s = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&s).expect("summary.json parses")
}

/// Reads a binary PLY frame written by wobble: (vertices, faces).
fn read_ply(path: &Path) -> (Vec<[f64; 3]>, Vec<[i32; 3]>) {
    let data = std::fs::read(path).unwrap();
    let end = data.windows(11).position(|w| w == b"end_header\n").expect("PLY header") + 11;
    let header = String::from_utf8_lossy(&data[..end]).to_string();
    assert!(header.starts_with("ply\nformat binary_little_endian 1.0\n"), "{header}");
    let count = |el: &str| -> usize {
        header
            .lines()
            .find(|l| l.starts_with(&format!("element {el} ")))
            .unwrap()
            .split_whitespace()
            .nth(2)
            .unwrap()
            .parse()
            .unwrap()
    };
    let (nv, nf) = (count("vertex"), count("face"));
    let mut at = end;
    let f64_at = |at: usize| f64::from_le_bytes(data[at..at + 8].try_into().unwrap());
    let mut verts = Vec::new();
    for _ in 0..nv {
        verts.push([f64_at(at), f64_at(at + 8), f64_at(at + 16)]);
        at += 24;
    }
    let mut faces = Vec::new();
    for _ in 0..nf {
        assert_eq!(data[at], 3);
        let i = |k: usize| i32::from_le_bytes(data[at + 1 + 4 * k..at + 5 + 4 * k].try_into().unwrap());
        faces.push([i(0), i(1), i(2)]);
        at += 13;
    }
    (verts, faces)
}

#[test]
fn run_default_scene_writes_frames_metrics_and_summary_that_parse() {
    let out = tmp("default");
    let o = wobble(&["run", "--steps", "400", "--out", out.to_str().unwrap(), "-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let s = summary(&out);
    assert_eq!(s["status"], "finished");
    assert_eq!(s["steps"], 400);
    let particles = s["particles"].as_u64().unwrap() as usize;
    // Frames: every 200 steps plus the initial one → 3 PLY files.
    for k in 0..3 {
        let (v, f) = read_ply(&out.join(format!("frames/frame_{k:05}.ply")));
        assert_eq!(v.len(), particles);
        assert!(!f.is_empty() && f.iter().flatten().all(|&i| (i as usize) < particles));
        assert!(v.iter().flatten().all(|c| c.is_finite()));
    }
    let csv = std::fs::read_to_string(out.join("metrics.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[0], "step");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.len() >= 2);
    for r in &rows {
        assert_eq!(r.len(), header.len());
        let step: u64 = r[0].parse().unwrap();
        assert!(step <= 400);
        let total: f64 = r[4].parse().unwrap();
        assert!(total.is_finite());
    }
}

/// The C reference loop's double-precision results after exactly 1000 steps from
/// rest (`../shared/bench-ref/cloth_ref.c` built without fast-math and printed with
/// 17 significant digits): bottom-middle particle (x, y) and maximum strain. Kept as
/// printed, hence the allowance for digits beyond f64's precision.
#[allow(clippy::excessive_precision)]
const C_REFERENCE: [(u32, [f64; 3]); 3] = [
    (32, [0.16001187935539155, -0.31544248717641277, 0.16842489245623651]),
    (64, [0.32000911912629987, -0.63904414257038222, 0.22900241551124903]),
    (128, [0.64000559559106585, -1.2824865427889827, 0.26721758384185157]),
];

#[test]
fn bench_scenes_match_the_c_reference_to_1e9_and_stay_under_50_mb() {
    for (n, [x, y, strain]) in C_REFERENCE {
        let out = tmp(&format!("bench{n}"));
        let scene = format!("scenes/bench/cloth-{n}.toml");
        let o = wobble(&["run", &scene, "--no-frames", "--out", out.to_str().unwrap(), "-q"]);
        assert!(o.status.success(), "{}", text(&o));
        let s = summary(&out);
        assert_eq!(s["steps"], 1000);
        let bm = &s["bodies"][0]["bottom_middle"];
        let (bx, by, bz) = (bm[0].as_f64().unwrap(), bm[1].as_f64().unwrap(), bm[2].as_f64().unwrap());
        let ms = s["max_strain"].as_f64().unwrap();
        // 1e-9 is the bound; summation order differs from the C loop, so
        // agreement is to round-off (about 1e-15 seen), not bitwise.
        for (what, ours, theirs) in [("x", bx, x), ("y", by, y), ("max strain", ms, strain)] {
            assert!((ours - theirs).abs() <= 1e-9, "N={n} {what}: wobble {ours:.17} vs C {theirs:.17}");
        }
        assert_eq!(bz, 0.0, "the cloth stays in its plane");
        if n == 128 {
            let timing: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(out.join("timing.json")).unwrap()).unwrap();
            let mb = timing["peak_memory_mb"].as_f64().expect("peak memory on Linux");
            assert!(mb < 50.0, "peak memory {mb} MB for cloth-128");
        }
    }
}

#[test]
fn results_are_bit_identical_for_any_thread_count() {
    let mut outputs = Vec::new();
    for threads in ["1", "2", "3"] {
        let out = tmp(&format!("threads{threads}"));
        let o = wobble(&[
            "--threads",
            threads,
            "run",
            "scenes/bench/cloth-64.toml",
            "--steps",
            "300",
            "--out",
            out.to_str().unwrap(),
            "-q",
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let metrics = std::fs::read(out.join("metrics.csv")).unwrap();
        let frame = std::fs::read(out.join("frames/frame_00003.ply")).unwrap();
        outputs.push((threads, metrics, frame));
    }
    for (threads, metrics, frame) in &outputs[1..] {
        assert!(*metrics == outputs[0].1, "metrics differ between 1 and {threads} threads");
        assert!(*frame == outputs[0].2, "frames differ between 1 and {threads} threads");
    }
}

fn write_scene(name: &str, body: &str) -> PathBuf {
    let dir = tmp(name);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("scene.toml");
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn bad_scenes_exit_2_with_file_line_and_advice() {
    let cases = [
        ("key", "[[body]]\ntype = \"cloth\"\nmas = 1\n", vec![":3:1: unknown key `mas`", "did you mean `mass`?"]),
        (
            "integrator",
            "[simulation]\nintegrator = \"leapfrog\"\n[[body]]\ntype = \"cloth\"\n",
            vec![":2:14: unknown integrator `leapfrog`", "rk4"],
        ),
        ("mass", "[[body]]\ntype = \"cloth\"\nmass = 0\n", vec![":3:8: `mass` = 0 must be positive (kg)"]),
        (
            "dt",
            "[simulation]\ndt = -0.01\n[[body]]\ntype = \"cloth\"\n",
            vec![":2:6: `dt` = -0.01 must be positive (s)"],
        ),
        (
            "mesh",
            "[[body]]\ntype = \"mesh\"\nfile = \"missing.obj\"\n",
            vec![":3:8: cannot read mesh file", "relative to the scene file"],
        ),
    ];
    for (name, body, fragments) in cases {
        let path = write_scene(name, body);
        for cmd in ["validate", "run"] {
            let o = wobble(&[cmd, path.to_str().unwrap(), "-q"].as_slice()[..if cmd == "validate" { 2 } else { 3 }]);
            assert_eq!(o.status.code(), Some(2), "{name}/{cmd}: {}", text(&o));
            let t = text(&o);
            assert!(t.contains("scene.toml"), "{name}: no file name in {t}");
            for f in &fragments {
                assert!(t.contains(f), "{name}/{cmd}: `{f}` missing from:\n{t}");
            }
        }
    }
    let o = wobble(&["validate", "no/such/scene.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("cannot read the scene file"), "{}", text(&o));
}

#[test]
fn a_blow_up_stops_with_step_particle_and_stable_step() {
    let path = write_scene(
        "blowup",
        "[simulation]\ndt = 0.01\nsteps = 500\n[[body]]\ntype = \"cloth\"\nnx = 8\nny = 8\npin = { edge = [\"top\"] }\nsprings.structural = { stiffness = 5000, damping = 0 }\n",
    );
    let out = tmp("blowup-out");
    let o = wobble(&["run", path.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let t = text(&o);
    for f in ["blew up at step", "particle", "of body `cloth`", "stable estimate", "reduce dt"] {
        assert!(t.contains(f), "`{f}` missing from: {t}");
    }
    let s = summary(&out);
    assert_eq!(s["status"], "blew-up");
    assert!(s["error"].as_str().unwrap().contains("blew up at step"));
    assert!(s["steps"].as_u64().unwrap() < 500);
}

#[test]
fn validate_and_info_describe_the_scene() {
    let o = wobble(&["validate", "scenes/bench/cloth-32.toml"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("1024 particles, 5826 springs"), "{}", text(&o));
    let o = wobble(&["info", "scenes/bench/cloth-32.toml"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    for f in [
        "particles    1024 (2 pinned), total mass 1.000000 kg",
        "structural springs: 1984",
        "shear springs: 1922",
        "bend springs: 1920",
        "stable dt",
        "symplectic-euler",
        "← in use: dt is within",
    ] {
        assert!(t.contains(f), "`{f}` missing from:\n{t}");
    }
    // 1984 + 1922 + 1920 = 5826, the count for N = 32.
}

#[test]
fn set_overrides_a_scene_value_as_if_the_file_said_it() {
    // The same run with the stiffness given by --set and by an edited copy of the file.
    let scene = std::fs::read_to_string(repo().join("scenes/bench/cloth-32.toml")).unwrap();
    let edited = write_scene(
        "set-edited",
        &scene.replace("structural = { stiffness = 1000,", "structural = { stiffness = 640.0,"),
    );
    assert_ne!(std::fs::read_to_string(&edited).unwrap(), scene, "the edit changed the scene");
    let (a, b, c) = (tmp("set-a"), tmp("set-b"), tmp("set-c"));
    let every = ["--set", "simulation.steps=30", "--set", "output.metrics_every=5"];
    let stiff = ["--set", "body.cloth.springs.structural.stiffness=640.0"];
    let run = |scene: &str, out: &Path, extra: &[&str]| {
        let o = wobble(&[&["run", scene, "--out", out.to_str().unwrap(), "-q"][..], &every, extra].concat());
        assert!(o.status.success(), "{}", text(&o));
        std::fs::read_to_string(out.join("metrics.csv")).unwrap()
    };
    let by_set = run("scenes/bench/cloth-32.toml", &a, &stiff);
    let by_file = run(edited.to_str().unwrap(), &b, &[]);
    let unchanged = run("scenes/bench/cloth-32.toml", &c, &[]);
    assert_eq!(by_set.lines().count(), 8, "{by_set}");
    assert_eq!(by_set, by_file, "metrics differ between --set and the edited file");
    assert_ne!(by_set, unchanged, "the stiffness changed nothing");
    let kept = std::fs::read_to_string(a.join("scene.toml")).unwrap();
    assert!(kept.contains("stiffness = 640.0"), "the run folder keeps the scene as run:\n{kept}");
    // Bad paths and values: exit 2 with the place and advice.
    let o = wobble(&["validate", "scenes/bench/cloth-32.toml", "--set", "body.clth.mass=2"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no `body` is named `clth`") && text(&o).contains("did you mean `cloth`?"),
        "{}",
        text(&o)
    );
    let o = wobble(&["validate", "scenes/bench/cloth-32.toml", "--set", "simulation.dt=inf"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("cloth-32.toml (with --set):"), "{}", text(&o));
    let o = wobble(&["validate", "scenes/bench/cloth-32.toml", "--set", "body.cloth.springs.structural.stifness=5"]);
    assert!(text(&o).contains("did you mean `stiffness`?"), "{}", text(&o));
    let o = wobble(&["experiment", "bounce", "--set", "simulation.dt=1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn bench_implicit_prints_the_table_and_writes_csv_and_plot() {
    let out = tmp("bench-implicit");
    let o = wobble(&["bench", "implicit", "--sizes", "8,12", "--steps", "5", "--out", out.to_str().unwrap()]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    for f in ["steps/s", "it/step", "C steps", "cg: cost grows as particles^", "N = 12: cg runs"] {
        assert!(t.contains(f), "`{f}` missing from:\n{t}");
    }
    let csv = std::fs::read_to_string(out.join("implicit.csv")).unwrap();
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().starts_with("n,particles,solver,steps,steps_per_s,cg_iterations_per_step,"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 4, "{csv}");
    assert!(rows[0].starts_with("8,64,cg,5,") && rows[3].starts_with("12,144,cg-jacobi,5,"), "{csv}");
    assert!(std::fs::metadata(out.join("implicit.png")).unwrap().len() > 5000);
    let o = wobble(&["bench", "implicit", "--solvers", "lu"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("unknown solver `lu`; choose from: cg, cg-jacobi, cholesky, auto"), "{}", text(&o));
    let o = wobble(&["bench", "implicit", "--sizes", "0"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn experiments_write_data_plots_and_a_summary() {
    let o = wobble(&["experiment", "--list"]);
    assert!(text(&o).contains("integrator-convergence") && text(&o).contains("bounce"));
    let out = tmp("experiments");
    let o = wobble(&["experiment", "integrator-convergence", "--out", out.to_str().unwrap(), "--strict"]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = out.join("integrator-convergence");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("**Result: PASS**"), "{md}");
    assert!(md.contains("**Claim tested:**"));
    let csv = std::fs::read_to_string(dir.join("convergence.csv")).unwrap();
    assert!(csv.starts_with(
        "h_s,euler_m,symplectic-euler_m,heun_m,midpoint_m,rk4_m,verlet_m,implicit-euler_m,semi-implicit_m\n"
    ));
    let png = std::fs::read(dir.join("convergence.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    for name in ["verlet-emitter", "cloth-constraints", "terzopoulos-box-drop", "terzopoulos-twist"] {
        let o = wobble(&["experiment", name, "--out", out.to_str().unwrap(), "--strict"]);
        assert!(o.status.success(), "{name}: {}", text(&o));
        let md = std::fs::read_to_string(out.join(name).join("summary.md")).unwrap();
        assert!(md.contains("**Result: PASS**"), "{md}");
    }
    let o = wobble(&["experiment", "integrator-convergance"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("did you mean `integrator-convergence`?"), "{}", text(&o));
}

#[test]
fn thesis_experiments_write_data_plots_and_verdicts() {
    // The 004 experiments. sphere-volume and twolayer-inertia must PASS (counts,
    // convergence order, momentum, the rigid-layer model); twolayer-stability and
    // twolayer-collapse report the thesis's claims as measured, whatever the
    // verdict; twolayer-integrators times runs, so only its data are checked here.
    let out = tmp("thesis");
    for (name, strict, csv, header) in [
        ("sphere-volume", true, "spheres.csv", "family,vertices,edges,faces,euler_characteristic"),
        ("twolayer-inertia", true, "pushes.csv", "time_s,inner_x_m,outer_x_m,body_x_m,separation_m,model_m"),
        ("twolayer-collapse", false, "collapse.csv", "time_s,a_volume,a_shape,b_volume"),
        ("twolayer-stability", false, "stability.csv", "object,method,dt_s,survived,blowup_step,blowup_time_s"),
        (
            "twolayer-integrators",
            false,
            "integrators.csv",
            "method,evaluations,contact_time_s,wall_per_sim_second_s,wall_to_contact_s",
        ),
    ] {
        let mut args = vec!["experiment", name, "--out", out.to_str().unwrap()];
        if strict {
            args.push("--strict");
        }
        let o = wobble(&args);
        assert!(o.status.success(), "{name}: {}", text(&o));
        let dir = out.join(name);
        let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
        assert!(md.contains("**Claim tested:**") && md.contains("**Result: "), "{name}: {md}");
        if strict {
            assert!(md.contains("**Result: PASS**"), "{name}: {md}");
        }
        let data = std::fs::read_to_string(dir.join(csv)).unwrap();
        assert!(data.starts_with(header), "{name}: {}", &data[..data.len().min(200)]);
        let pngs: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "png"))
            .collect();
        assert!(!pngs.is_empty(), "{name}: no plot");
        for p in pngs {
            assert_eq!(&std::fs::read(p.path()).unwrap()[..8], b"\x89PNG\r\n\x1a\n");
        }
    }
    // The stability table names the step and particle of every blow-up.
    let md = std::fs::read_to_string(out.join("twolayer-stability/summary.md")).unwrap();
    assert!(md.contains("**blew up** at step"), "{md}");
}

#[test]
fn generalized_spring_experiments_pass() {
    // The two quickest 001 experiments (about a second each): the twisted bar and
    // the one-sided bend law, with their data files.
    let out = tmp("generalized");
    for (name, csv, header) in [
        ("generalized-twisted-bar", "twist.csv", "time_s,generalized_deg,spring_3d_deg\n"),
        ("generalized-asymmetric", "deflection.csv", "time_s,one_sided_down_m,one_sided_up_m,"),
    ] {
        let o = wobble(&["experiment", name, "--out", out.to_str().unwrap(), "--strict"]);
        assert!(o.status.success(), "{name}: {}", text(&o));
        let dir = out.join(name);
        let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
        assert!(md.contains("**Result: PASS**"), "{name}: {md}");
        let data = std::fs::read_to_string(dir.join(csv)).unwrap();
        assert!(data.starts_with(header), "{name}: {csv} starts {:?}", &data[..data.len().min(80)]);
    }
}

#[test]
fn cubic_force_curves_write_the_figure_columns() {
    // 000 Fig. 1–2 as the issue specifies them: force.csv for r in [0, 2] step 0.01
    // (201 rows), stiffness.csv for r in [0.8, 1.2] step 0.005 (81 rows), the same
    // laws in the same order, with units (L = 1 m, K = 1 N/m: r in m, g in N, g' in
    // N/m); the constraints hold (--strict: PASS).
    let out = tmp("cubic");
    let o = wobble(&["experiment", "cubic-force-curves", "--out", out.to_str().unwrap(), "--strict"]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = out.join("cubic-force-curves");
    for (file, unit, rows, first, last) in
        [("force.csv", "N", 201, 0.0, 2.0), ("stiffness.csv", "N_per_m", 81, 0.8, 1.2)]
    {
        let csv = std::fs::read_to_string(dir.join(file)).unwrap();
        let mut lines = csv.lines();
        let header = format!("r_m,spring_{unit},stvk_{unit},cubic_k1_2k_{unit},cubic_k1_4k_{unit},cubic_k1_6k_{unit}");
        assert_eq!(lines.next(), Some(header.as_str()), "{file}");
        let r: Vec<f64> = lines.map(|l| l.split(',').next().unwrap().parse().unwrap()).collect();
        assert_eq!(r.len(), rows, "{file}");
        assert!(
            (r[0] - first).abs() < 1e-12 && (r[rows - 1] - last).abs() < 1e-12,
            "{file}: r from {} to {}",
            r[0],
            r[rows - 1]
        );
    }
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("**Result: PASS**"), "{md}");
}

#[test]
fn a_scene_excerpt_never_carries_escape_codes() {
    // A raw ESC in a comment is invalid TOML; the error quotes the line, and the
    // excerpt must show it defanged.
    let path = write_scene("escape", "[[body]]\ntype = \"cloth\" # \u{1b}]0;pwned\u{7}\n");
    let o = wobble(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(!t.contains('\u{1b}') && !t.contains('\u{7}'), "control characters reach the terminal: {t:?}");
    assert!(t.contains("scene.toml:2"), "{t}");
}

#[test]
fn validate_warns_of_bodies_that_start_interpenetrating() {
    let scene = write_scene(
        "validate-overlap",
        "[[body]]\nname = \"a\"\ntype = \"lattice\"\nn = [3, 3, 3]\nspacing = 0.05\n\
         [[body]]\nname = \"b\"\ntype = \"lattice\"\nn = [3, 3, 3]\nspacing = 0.05\norigin = [0.09, 0, 0]\n",
    );
    let o = wobble(&["validate", scene.to_str().unwrap()]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("warning: bodies `a` and `b` start interpenetrating (by about 1.000e-2 m)"), "{t}");
}
