//! What atomic frame writes cost (issue 15): `cargo bench -p wobble-io --bench atomic_writes`.
//!
//! Writes the PLY frame of the 64 × 64 benchmark cloth (4096 vertices) 400 times
//! the way `wobble run` does — a temporary file opened relative to the `frames/`
//! handle (no-follow), written, renamed into place — and 400 times with a plain
//! `std::fs::write` to the final name, alternating the two, and times 100 steps of
//! the cloth (a frame every 100 steps). Prints µs per frame for each way, the
//! difference, and that difference as a share of the 100 steps a frame stands for.

use std::path::Path;
use std::time::Instant;

use wobble_io::dir::{OutDir, Sub};
use wobble_scene::{FrameFormat, Scene};

const FRAMES: usize = 400;

fn main() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let scene = Scene::load(&repo.join("scenes/bench/cloth-64.toml")).expect("bench scene");
    let mut world = scene.build().expect("build").world;
    world.run(50).expect("steps");
    let mut frame = Vec::new();
    wobble_io::frames::encode_frame(&world, FrameFormat::Ply, &mut frame).expect("frame");

    let base = std::env::temp_dir().join(format!("wobble-atomic-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let mut dir = OutDir::open(&base.join("atomic")).expect("output folder");
    dir.open_frames().expect("frames folder");
    let plain = base.join("plain");
    std::fs::create_dir_all(&plain).expect("plain folder");

    let (mut atomic_s, mut plain_s) = (0.0, 0.0);
    for k in 0..FRAMES {
        let name = format!("frame_{k:05}.ply");
        let t = Instant::now();
        dir.write_atomic(Sub::Frames, &name, &frame, false).expect("atomic write");
        atomic_s += t.elapsed().as_secs_f64();
        let t = Instant::now();
        std::fs::write(plain.join(&name), &frame).expect("plain write");
        plain_s += t.elapsed().as_secs_f64();
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("pool");
    let t = Instant::now();
    pool.install(|| world.run(100).expect("steps"));
    let hundred = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&base);

    let (a, p) = (atomic_s / FRAMES as f64, plain_s / FRAMES as f64);
    println!("PLY frame of the 64 x 64 cloth: {} bytes", frame.len());
    println!("atomic write (temporary file, rename): {:.1} us per frame", a * 1e6);
    println!("plain write to the final name:         {:.1} us per frame", p * 1e6);
    println!(
        "difference {:.1} us per frame = {:.2} % of the {:.2} ms that 100 steps take on one thread",
        (a - p) * 1e6,
        100.0 * (a - p) / hundred,
        hundred * 1e3
    );
}
