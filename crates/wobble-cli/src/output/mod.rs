//! What `wobble run` leaves in its output folder: the folder itself (reached only
//! through directory handles), the manifest, frames, metrics, checkpoints.

pub mod checkpoint;
pub mod dir;
pub mod frames;
pub mod manifest;
pub mod metrics;
pub mod offsets;

/// Peak resident memory of this process, MB (Linux `VmHWM`; `None` elsewhere).
#[must_use]
pub fn peak_memory_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
