//! `run.json`: what a run is and how far it got. Written (durably) before any
//! other output and updated last, so a folder with a manifest always says which
//! run's files it holds and whether that run finished.

use serde::{Deserialize, Serialize};

/// The `format` field that marks a wobble run manifest.
pub const MANIFEST_FORMAT: &str = "wobble-run";
/// Version of the manifest's layout.
pub const MANIFEST_VERSION: u32 = 1;
/// File name of the manifest in the output folder.
pub const MANIFEST_NAME: &str = "run.json";

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Stepping (or killed while stepping: nothing updated the manifest since).
    Running,
    /// Every step ran.
    Finished,
    /// Stopped by SIGINT or SIGTERM after a complete step; resumable.
    Interrupted,
    /// An output could not be written (a full disk, say); earlier files are intact.
    Failed,
    /// The simulation became non-finite or ran away.
    BlewUp,
}

impl Status {
    /// The name written to `run.json` and `summary.json`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Finished => "finished",
            Status::Interrupted => "interrupted",
            Status::Failed => "failed",
            Status::BlewUp => "blew-up",
        }
    }
}

/// The manifest's content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`MANIFEST_FORMAT`].
    pub format: String,
    /// [`MANIFEST_VERSION`] when written.
    pub format_version: u32,
    /// Version of the wobble that wrote the run.
    pub wobble_version: String,
    /// Scene name (its path as given, or the built-in default's name).
    pub scene: String,
    /// Directory relative mesh paths of the scene resolve against (absolute).
    pub scene_dir: String,
    /// FNV-1a 64 of the scene text, as 16 hex digits.
    pub scene_hash: String,
    /// FNV-1a 64 of the built world's state before its first step (positions,
    /// velocities and the rest of what a checkpoint holds), as 16 hex digits: a
    /// resume builds the scene again and refuses to go on if it differs, which
    /// catches what the scene text's hash cannot, such as an edited mesh file.
    /// Absent in manifests written before it was added (then not checked).
    #[serde(default)]
    pub built_hash: Option<String>,
    /// The command line that started the run (the first start, not a resume).
    pub command_line: Vec<String>,
    /// When the run first started, UTC, RFC 3339.
    pub started: String,
    /// Where the run stands.
    pub status: Status,
    /// Why it failed or blew up.
    pub error: Option<String>,
    /// Steps the run is to take.
    pub steps_planned: u64,
    /// Steps taken as of the last update.
    pub steps_done: u64,
    /// Frame files written (per format) as of the last update.
    pub frames_written: u64,
    /// Steps between frames (0: none).
    pub frame_every: u64,
    /// Steps between metrics rows.
    pub metrics_every: u64,
    /// Steps between checkpoints (0: only at an interrupt).
    pub checkpoint_every: u64,
    /// Frame file extensions, one per format (`frames/frame_NNNNNN.EXT`).
    pub frame_formats: Vec<String>,
    /// Digits of frame numbers (enough for every planned frame, so names sort).
    pub frame_digits: usize,
    /// Files in the output folder this run writes (besides `frames/`).
    pub files: Vec<String>,
}

/// FNV-1a, 64 bits: the scene hash and the checkpoint checksum.
#[must_use]
pub fn fnv1a64(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The name of frame `k` with `digits` digits: `frame_000042.ply`.
#[must_use]
pub fn frame_name(k: u64, digits: usize, ext: &str) -> String {
    format!("frame_{k:0digits$}.{ext}")
}

/// Digits for frame numbers up to `last`: at least 5, and enough that every
/// name of the run has the same width (so lexical order is frame order).
#[must_use]
pub fn frame_digits(last: u64) -> usize {
    (last.checked_ilog10().unwrap_or(0) as usize + 1).max(5)
}

/// Whether `name` is frame file of this naming: `frame_` + `digits` digits + `.`
/// + one of `exts`. Other names in `frames/` are not a run's to remove.
#[must_use]
pub fn is_frame_name(name: &str, digits: usize, exts: &[String]) -> bool {
    let Some(rest) = name.strip_prefix("frame_") else { return false };
    let Some((number, ext)) = rest.split_once('.') else { return false };
    // Polylines beside a PLY frame: `frame_N.lines.ply`.
    let ext = if ext == "lines.ply" { "ply" } else { ext };
    number.len() == digits && number.bytes().all(|b| b.is_ascii_digit()) && exts.iter().any(|e| e == ext)
}

/// Name of the ParaView time-series index in `frames/` (VTU frames only).
pub const PVD_NAME: &str = "series.pvd";

/// Now, UTC, as RFC 3339 to the second.
#[must_use]
pub fn now_rfc3339() -> String {
    rfc3339(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

/// `secs` after the Unix epoch, UTC, as RFC 3339.
#[must_use]
pub fn rfc3339(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian, in 400-year eras).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_names_keep_lexical_order_past_99999_frames() {
        let digits = frame_digits(150_000);
        assert_eq!(digits, 6);
        let names: Vec<String> =
            [0, 9, 99_999, 100_000, 149_999].iter().map(|&k| frame_name(k, digits, "ply")).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert_eq!(frame_digits(400), 5, "short runs keep the familiar five digits");
        assert!(is_frame_name("frame_000042.ply", 6, &["ply".into()]));
        assert!(!is_frame_name("frame_00042.ply", 6, &["ply".into()]));
        assert!(!is_frame_name("frame_000042.obj", 6, &["ply".into()]));
        assert!(!is_frame_name("notes.txt", 6, &["ply".into()]));
        assert!(is_frame_name("frame_000042.lines.ply", 6, &["ply".into()]));
        assert!(!is_frame_name("frame_000042.lines.ply", 6, &["vtu".into()]));
    }

    #[test]
    fn rfc3339_dates_match_known_days() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        // A leap day, and `date -u -d @1700000000`.
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn fnv1a64_matches_the_reference_values() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
