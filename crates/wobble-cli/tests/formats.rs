//! Frame files read back by real readers (meshio, VTK, trimesh, plyfile):
//! `scripts/formats.sh` installs them into a virtual environment and runs this
//! test with `WOBBLE_FORMATS_PYTHON` set. The expected counts, coordinates and
//! times come from the engine itself, stepping the same scene to each frame.

use std::path::PathBuf;
use std::process::Command;

use wobble::model::DrawnSurfaces;
use wobble_scene::{Scene, Source};

const SCENE: &str = "[simulation]\ndt = 5e-4\nsteps = 40\n\
[output]\nframe_every = 20\nformats = [\"ply\", \"obj\", \"vtk\", \"vtu\"]\n\
[[body]]\nname = \"cloth\"\ntype = \"cloth\"\nnx = 6\nny = 5\npin = { edge = [\"top\"] }\n\
[[body]]\nname = \"rope\"\ntype = \"chain\"\ncount = 7\nstart = [0, 1, 0]\nend = [0.6, 1, 0]\nmass = 0.1\npin = { edge = [\"first\"] }\n";

#[test]
#[ignore = "needs the Python readers: run scripts/formats.sh"]
fn every_frame_format_reads_back_through_real_readers() {
    let python = std::env::var("WOBBLE_FORMATS_PYTHON").expect("run through scripts/formats.sh");
    let dir = std::env::temp_dir().join(format!("wobble-formats-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let scene_path = dir.join("scene.toml");
    std::fs::write(&scene_path, SCENE).unwrap();
    let out = dir.join("run");
    let o = Command::new(env!("CARGO_BIN_EXE_wobble"))
        .args(["run", scene_path.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // What each frame must hold, from the engine.
    let scene = Scene::parse(Source::new("scene.toml", SCENE), dir.clone()).unwrap();
    let mut world = scene.build().unwrap().world;
    let mut frames = serde_json::Map::new();
    let mut times = Vec::new();
    for k in 0..3u64 {
        if k > 0 {
            world.run(20).unwrap();
        }
        let extra = DrawnSurfaces::of(&world.topology, &world.state);
        let all = world.state.x.len() + extra.x.len();
        let tris = world.topology.triangles.len() + extra.triangles.len();
        let lines = world.topology.lines.len();
        assert!(tris > 0 && lines > 0, "the scene must have both surfaces and polylines");
        let first = world.state.x.get(0).to_array();
        let entry = |vertices: usize, triangles: usize, lines: usize| serde_json::json!({"vertices": vertices, "triangles": triangles, "lines": lines, "first_vertex": first});
        frames.insert(format!("frame_{k:05}.ply"), entry(all, tris, 0));
        frames.insert(format!("frame_{k:05}.lines.ply"), entry(world.state.x.len(), 0, lines));
        frames.insert(format!("frame_{k:05}.vtu"), entry(all, tris, lines));
        times.push(world.time());
    }
    let expected = dir.join("expected.json");
    std::fs::write(&expected, serde_json::json!({"frames": frames, "times": times}).to_string()).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/formats/roundtrip.py");
    let o = Command::new(python).arg(script).arg(&out).arg(&expected).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{text}");
    assert!(text.contains("round trip ok: 9 files"), "{text}");
}
