//! `wobble render`: images of the requested size with the body where the camera puts
//! it, a decodable animated GIF, the same picture from a scene and from the run
//! directory it produced, and clear errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn wobble(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wobble")).args(args).env("NO_COLOR", "1").output().expect("run wobble")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wobble-render-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// (width, height, RGB bytes) of a PNG.
fn read_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// A 0.4 m square cloth hanging in the x-y plane at z = 0, centred on (0, 1, 0),
/// seen head-on by the scene's camera from z = 2: it covers the picture's centre and
/// leaves its corners to the sky.
const HANGING_CLOTH: &str = r#"
[simulation]
integrator = "symplectic-euler"
dt = 1e-4
duration = 0.06
gravity = [0, -9.81, 0]

[output]
frame_every = 200
formats = ["ply"]

[camera]
position = [0, 1, 2]
target = [0, 1, 0]
fov = 40
width = 160
height = 120

[[body]]
name = "cloth"
type = "cloth"
nx = 9
ny = 9
spacing = 0.05
origin = [-0.2, 1.2, 0]
u = [1, 0, 0]
v = [0, -1, 0]
mass = 0.1
pin = { grid = [[0, 0], [8, 0]] }
velocity = [0, 0, 2]     # swings toward the camera
springs.structural = { stiffness = 200, damping = 0.1 }
"#;

fn write_scene(dir: &Path) -> PathBuf {
    let path = dir.join("hanging.toml");
    std::fs::write(&path, HANGING_CLOTH).unwrap();
    path
}

fn pixel(rgb: &[u8], width: u32, x: u32, y: u32) -> [u8; 3] {
    let i = 3 * (y * width + x) as usize;
    [rgb[i], rgb[i + 1], rgb[i + 2]]
}

#[test]
fn scene_render_has_the_camera_size_and_the_cloth_in_the_middle() {
    let dir = tmp("scene");
    let scene = write_scene(&dir);
    let out = dir.join("frames");
    let o = wobble(&["render", scene.to_str().unwrap(), "--out", out.to_str().unwrap(), "--steps", "0"]);
    assert!(o.status.success(), "{}", text(&o));
    let (w, h, rgb) = read_png(&out.join("frame_00000.png"));
    assert_eq!((w, h), (160, 120));
    // The cloth's first body colour is a warm red; the sky is grey-blue (blue ≥ red).
    let [r, _, b] = pixel(&rgb, w, 80, 60);
    assert!(i32::from(r) > i32::from(b) + 60, "centre pixel should be cloth, is {:?}", pixel(&rgb, w, 80, 60));
    for (x, y) in [(2, 2), (w - 3, 2), (2, h - 3), (w - 3, h - 3)] {
        let [r, _, b] = pixel(&rgb, w, x, y);
        assert!(b >= r, "corner ({x}, {y}) should be sky, is {:?}", pixel(&rgb, w, x, y));
    }
    // The cloth spans ±0.2 m at 2 m with a 40° field of view: ±0.2/2 / tan 20° of
    // the half-height, i.e. ±16.5 px around the centre column.
    let half = 0.2 / 2.0 / 20f64.to_radians().tan() * 60.0;
    let row: Vec<bool> = (0..w)
        .map(|x| {
            let [r, _, b] = pixel(&rgb, w, x, 50);
            i32::from(r) > i32::from(b) + 60
        })
        .collect();
    let first = row.iter().position(|&c| c).unwrap() as f64;
    let last = row.iter().rposition(|&c| c).unwrap() as f64;
    assert!(
        (first - (80.0 - half)).abs() <= 2.0 && (last - (80.0 + half - 1.0)).abs() <= 2.0,
        "cloth spans columns {first}..{last}, expected about ±{half:.1} around 80"
    );
}

#[test]
fn run_directory_renders_the_same_frames_as_the_scene() {
    let dir = tmp("rundir");
    let scene = write_scene(&dir);
    let run = dir.join("run");
    let o = wobble(&["run", scene.to_str().unwrap(), "--out", run.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    let from_run = dir.join("from-run");
    let o = wobble(&["render", run.to_str().unwrap(), "--out", from_run.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let from_scene = dir.join("from-scene");
    let o = wobble(&["render", scene.to_str().unwrap(), "--out", from_scene.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    // 600 steps, a frame every 200: frames at steps 0, 200, 400, 600.
    for k in 0..4 {
        let name = format!("frame_{k:05}.png");
        let a = read_png(&from_run.join(&name));
        let b = read_png(&from_scene.join(&name));
        assert!(a == b, "{name} differs between the run directory and the scene");
    }
    assert!(!from_run.join("frame_00004.png").exists());
    // The cloth moved: the first and last frames differ.
    let changed = read_png(&from_run.join("frame_00000.png")).2 != read_png(&from_run.join("frame_00003.png")).2;
    assert!(changed, "the first and last frames are the same picture");
}

#[test]
fn gif_holds_every_frame_at_the_gif_width() {
    let dir = tmp("gif");
    let scene = write_scene(&dir);
    let out = dir.join("frames");
    let o = wobble(&["render", scene.to_str().unwrap(), "--out", out.to_str().unwrap(), "--gif", "--every", "100"]);
    assert!(o.status.success(), "{}", text(&o));
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::RGBA);
    let mut decoder = options.read_info(std::fs::File::open(out.join("animation.gif")).unwrap()).unwrap();
    let (w, h) = (decoder.width(), decoder.height());
    assert_eq!((w, h), (480, 360), "GIF width 480, the camera's 4:3 aspect");
    let mut frames = 0;
    while let Some(frame) = decoder.read_next_frame().unwrap() {
        assert_eq!((frame.width, frame.height), (w, h));
        frames += 1;
    }
    assert_eq!(frames, 7, "steps 0, 100, …, 600");
}

#[test]
fn bad_inputs_get_clear_errors() {
    let dir = tmp("errors");
    let o = wobble(&["render", dir.to_str().unwrap(), "--out", dir.join("x").to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(text(&o).contains("is not a run directory"), "{}", text(&o));
    let scene = write_scene(&dir);
    let o = wobble(&["render", scene.to_str().unwrap(), "--out", dir.join("y").to_str().unwrap(), "--width", "4"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("--width 4 must lie in 16..=8192"), "{}", text(&o));
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, HANGING_CLOTH.replace("fov = 40", "fov = 200")).unwrap();
    let o = wobble(&["render", bad.to_str().unwrap(), "--out", dir.join("z").to_str().unwrap()]);
    assert!(!o.status.success());
    let t = text(&o);
    assert!(t.contains("bad.toml") && t.contains("fov") && t.contains("179"), "{t}");
}

/// A rigid box falling beside a rod drawn as a tube: both draw extra vertices after
/// the particles (the box's posed surface, the tube's rings).
const BOX_AND_ROD: &str = r#"
[simulation]
integrator = "symplectic-euler"
dt = 1e-4
duration = 0.04
gravity = [0, -9.81, 0]

[output]
frame_every = 200
formats = ["ply"]

[camera]
position = [0.3, 1.2, 1.5]
target = [0.3, 0.9, 0]
width = 160
height = 120

[[body]]
name = "bar"
type = "rod"
count = 5
start = [0, 1, 0]
end = [0.4, 1, 0]
mass = 0.1
particle_radius = 0.02
tube_radius = 0.02
pin = { edge = ["first"] }
springs = { stretch = 2e3, damping = 0.5, bend = 2, twist = 1 }

[[body]]
name = "box"
type = "rigid"
shape = "box"
size = 0.15
mass = 1.0
position = [0.3, 0.8, 0]
angular_velocity = [0, 3, 1]
"#;

#[test]
fn rigid_shapes_and_tubes_render_the_same_from_a_run_directory() {
    let dir = tmp("rigid");
    let scene = dir.join("box.toml");
    std::fs::write(&scene, BOX_AND_ROD).unwrap();
    let run = dir.join("run");
    let o = wobble(&["run", scene.to_str().unwrap(), "--out", run.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    let (from_run, from_scene) = (dir.join("from-run"), dir.join("from-scene"));
    for (input, out) in [(&run, &from_run), (&scene, &from_scene)] {
        let o = wobble(&["render", input.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o));
    }
    for k in 0..3 {
        let name = format!("frame_{k:05}.png");
        assert!(read_png(&from_run.join(&name)) == read_png(&from_scene.join(&name)), "{name} differs");
    }
    // The box (second body colour, blue: blue well above red) is in the picture.
    let (w, _, rgb) = read_png(&from_scene.join("frame_00000.png"));
    let blue = (0..rgb.len() / 3).filter(|&p| i32::from(rgb[3 * p + 2]) > i32::from(rgb[3 * p]) + 80).count();
    assert!(blue > 50, "{blue} box pixels in a {w}-wide picture");
}
