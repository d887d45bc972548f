//! The memory a run will need, estimated before it steps, and the limit it is
//! checked against.
//!
//! The estimate is a sum of parts, each a count the scene fixes times a cost per
//! item measured on this code (the CLI's `tests/memory.rs` checks the sum against the peak
//! resident memory of real runs, within 25 %):
//!
//! * the process itself: its resident memory when `main` started (code, libraries)
//!   plus the thread pool and allocator arenas ([`PROCESS_BYTES`]);
//! * the world: per particle ([`PARTICLE_BYTES`]: state, properties, integrator
//!   scratch) and per spring ([`SPRING_BYTES`]: topology, vectorised runs);
//! * implicit integrators: the block-sparse Jacobian and the CG vectors
//!   ([`IMPLICIT_PARTICLE_BYTES`], [`IMPLICIT_SPRING_BYTES`]: one diagonal 3×3
//!   block per particle, two off-diagonal blocks and pattern entries per spring);
//! * contact: spatial hashes and candidate pair lists per surface primitive
//!   ([`CONTACT_PRIMITIVE_BYTES`], calibrated on cloth falling onto itself; the
//!   pair lists grow with how far primitives travel in the look-ahead, so a fast
//!   or dense scene can need more);
//! * outputs: the metrics table kept in memory for atomic rewrites (one row per
//!   `metrics_every` steps) and one encoded frame.
//!
//! A run refuses to start when the estimate exceeds `--max-memory` (default: what
//! the process holds now plus the machine's `MemAvailable`).

use std::sync::OnceLock;

use wobble::World;
use wobble::integrate::IntegratorKind;

/// Resident memory beyond the executable at start: rayon's threads, allocator
/// arenas, the scene text and its parse, bytes.
pub const PROCESS_BYTES: u64 = 8 << 20;
/// Per particle: positions, velocities, rotations, masses, flags, forces and the
/// integrator's scratch, bytes.
pub const PARTICLE_BYTES: u64 = 220;
/// Per spring (any law): endpoints, rest length, parameters and the vectorised
/// runs that evaluate it, bytes.
pub const SPRING_BYTES: u64 = 190;
/// Per particle for implicit Euler: diagonal Jacobian blocks and CG vectors, bytes.
pub const IMPLICIT_PARTICLE_BYTES: u64 = 480;
/// Per spring for implicit Euler: off-diagonal blocks and their pattern, bytes.
pub const IMPLICIT_SPRING_BYTES: u64 = 85;
/// Per contact primitive (surface vertex, edge, triangle or point): hash entries,
/// boxes, flags and candidate pairs, bytes.
pub const CONTACT_PRIMITIVE_BYTES: u64 = 2700;
/// Per metrics row kept in memory: 27 columns in `{:e}` notation, bytes.
pub const METRICS_ROW_BYTES: u64 = 400;
/// Per particle in one encoded frame (PLY: 3 × f64, plus the text formats'
/// headroom), bytes.
pub const FRAME_PARTICLE_BYTES: u64 = 48;
/// Per triangle in one encoded frame, bytes.
pub const FRAME_TRIANGLE_BYTES: u64 = 16;

static START_RSS: OnceLock<u64> = OnceLock::new();

/// Records the resident memory now (call it at the start of `main`), the base of
/// every later estimate; without it the estimate takes the resident memory when
/// it is made.
pub fn mark_start() {
    let _ = START_RSS.set(resident().unwrap_or(0));
}

/// One `/proc/self/status` field (kB) in bytes.
fn status_field(name: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(name))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
}

/// Resident memory of this process now, bytes (Linux `VmRSS`).
#[must_use]
pub fn resident() -> Option<u64> {
    status_field("VmRSS:")
}

/// Memory the machine can give without swapping, bytes (`MemAvailable` of
/// `/proc/meminfo`).
#[must_use]
pub fn available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
}

/// The default `--max-memory`: what this process holds now plus what the machine
/// has available (`None` when `/proc` cannot tell: then no limit applies).
#[must_use]
pub fn default_limit() -> Option<u64> {
    Some(resident().unwrap_or(0) + available()?)
}

/// An estimate, part by part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryEstimate {
    /// (what, bytes), in the order of the module docs.
    pub parts: Vec<(&'static str, u64)>,
}

impl MemoryEstimate {
    /// The estimated peak resident memory, bytes.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.parts.iter().map(|(_, b)| b).sum()
    }

    /// One line: the total and its largest parts.
    #[must_use]
    pub fn summary(&self) -> String {
        let parts: Vec<String> =
            self.parts.iter().filter(|(_, b)| *b > 0).map(|(w, b)| format!("{w} {}", mib(*b))).collect();
        format!("{} ({})", mib(self.total()), parts.join(", "))
    }
}

/// `bytes` in MiB for messages.
#[must_use]
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

/// Estimates the peak memory of running `world` with `integrator` for `steps`
/// steps, a metrics row every `metrics_every` steps and frames when `frames`.
#[must_use]
pub fn estimate(
    world: &World,
    integrator: IntegratorKind,
    steps: u64,
    metrics_every: u64,
    frames: bool,
) -> MemoryEstimate {
    let n = world.state.len() as u64;
    let springs = world.segments().len() as u64;
    let triangles: u64 = world.topology.bodies.iter().map(|b| b.triangles.len() as u64).sum();
    let s = &world.contacts.surfaces;
    let primitives = (s.vertices.len() + s.edges.len() + s.triangles.len() + s.points.len()) as u64;
    let implicit = integrator == IntegratorKind::ImplicitEuler;
    let rows = steps / metrics_every.max(1) + 1;
    let process = START_RSS.get().copied().or_else(resident).unwrap_or(0) + PROCESS_BYTES;
    MemoryEstimate {
        parts: vec![
            ("process", process),
            ("world", n * PARTICLE_BYTES + springs * SPRING_BYTES),
            (
                "implicit solve",
                if implicit { n * IMPLICIT_PARTICLE_BYTES + springs * IMPLICIT_SPRING_BYTES } else { 0 },
            ),
            ("contact", primitives * CONTACT_PRIMITIVE_BYTES),
            ("metrics", rows * METRICS_ROW_BYTES),
            ("frame", if frames { n * FRAME_PARTICLE_BYTES + triangles * FRAME_TRIANGLE_BYTES } else { 0 }),
        ],
    }
}

/// A lower bound of the world's memory read from the scene alone, before anything
/// is built, bytes: the process, plus particles and springs of the bodies whose
/// counts the scene states (cloth `nx × ny` with at least 4 springs per particle,
/// lattices and grids `n₀ n₁ n₂` with at least 6, chains `count` with 1). Other
/// bodies count as nothing here. It never exceeds [`estimate`] of the built world,
/// so refusing on it never refuses a run the full estimate would allow; it stops a
/// mistyped count before the build allocates gigabytes.
#[must_use]
pub fn estimate_before_build(scene: &wobble_scene::Scene) -> u64 {
    use wobble_scene::BodyShape;
    let per = |particles: u64, springs_each: u64| {
        particles.saturating_mul(PARTICLE_BYTES.saturating_add(springs_each.saturating_mul(SPRING_BYTES)))
    };
    let bodies = scene.bodies.iter().map(|b| match &b.shape {
        BodyShape::Cloth(c) => per((c.nx as u64).saturating_mul(c.ny as u64), 4),
        BodyShape::Lattice(l) => per(l.n.iter().fold(1u64, |a, &k| a.saturating_mul(k as u64)), 6),
        BodyShape::Grid(g) => per(g.n.iter().fold(1u64, |a, &k| a.saturating_mul(k as u64)), 6),
        BodyShape::Chain(c) => per(c.count as u64, 1),
        _ => 0,
    });
    bodies.fold(START_RSS.get().copied().unwrap_or(0) + PROCESS_BYTES, u64::saturating_add)
}

/// Parses a memory size: bytes, or a number with `K`, `M`, `G` or `T` (binary
/// units, an optional `iB`/`B`), e.g. `512M`, `2GiB`, `1.5G`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| format!("`{text}` is not a size (try 512M or 4G)"))?;
    let scale = match unit.trim().trim_end_matches("iB").trim_end_matches('B').to_ascii_uppercase().as_str() {
        "" => 1u64,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return Err(format!("`{text}`: unknown unit (use K, M, G or T)")),
    };
    let bytes = value * scale as f64;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < 2f64.powi(63)) {
        return Err(format!("`{text}` is not a usable size"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_binary_units() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5X").is_err());
        assert!(parse_size("0").is_err());
    }
}
