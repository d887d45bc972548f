//! What a wobble run leaves in its output folder: the folder itself (reached only
//! through directory handles, never following a symbolic link), the manifest
//! (`run.json`), frames (PLY, OBJ, legacy and XML VTK with a `.pvd` series index),
//! the metrics CSV, checkpoints, and the life of a run that writes them ([`run`]:
//! start, resume, interrupt, fail cleanly). The command-line tool, the Python bindings and
//! library users write the same files through this crate.
//!
//! ```
//! use wobble_scene::{Scene, Source};
//!
//! let text = "[[body]]\ntype = \"cloth\"\nnx = 4\nny = 4\n";
//! let scene = Scene::parse(Source::new("tiny.toml", text), ".".into()).unwrap();
//! let mut world = scene.build().unwrap().world;
//! world.step().unwrap();
//! let mut ply = Vec::new();
//! wobble_io::frames::write_ply(&world, &mut ply).unwrap();
//! assert!(ply.starts_with(b"ply\n"));
//! ```

pub mod checkpoint;
pub mod dir;
pub mod frames;
pub mod manifest;
pub mod memory;
pub mod metrics;
pub mod offsets;
pub mod run;

/// Peak resident memory of this process, MB (Linux `VmHWM`; `None` elsewhere).
#[must_use]
pub fn peak_memory_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
