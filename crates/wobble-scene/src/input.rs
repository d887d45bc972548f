//! Hard limits on what the scene reader accepts, and the one way it reads a file.
//!
//! Everything a scene names is read through [`read_text`]: only regular files (a
//! FIFO, device or directory is refused before a byte is read, and the open never
//! blocks), at most a stated size (the cap is enforced on the bytes actually read,
//! since `/proc` files report a size of 0), and only UTF-8. Errors say what the
//! file is not; they never quote its contents, so a binary or `/proc` file passed
//! by mistake is not echoed to the terminal.

use std::io::Read;
use std::path::Path;

/// Largest scene file read, bytes (16 MiB: the largest example scene is a few kB).
pub const MAX_SCENE_BYTES: u64 = 16 << 20;

/// Largest frame file read back (a PLY frame for `wobble render`), bytes (1 GiB:
/// about 40 million particles with their triangles).
pub const MAX_FRAME_BYTES: u64 = 1 << 30;

/// Largest mesh (OBJ) file read, bytes (256 MiB: about 5 million vertices).
pub const MAX_MESH_BYTES: u64 = 256 << 20;

/// Most steps a run may plan (`steps`, or `duration / dt`): 10⁹, about a day at
/// 10 000 steps per second.
pub const MAX_STEPS: u64 = 1_000_000_000;

/// Most particles a body may have (about 2–4 GB of world at ~200–400 bytes a
/// particle with its springs): a larger count is refused when the scene is read,
/// before anything is allocated.
pub const MAX_PARTICLES: u64 = 10_000_000;

/// Largest magnitude of any number in a scene. Beyond it a product of two
/// parameters (a stiffness times a length, a mass times an acceleration) is no
/// longer safely finite, and no physical scene needs it.
pub const MAX_MAGNITUDE: f64 = 1e30;

/// Highest angular frequency a scene may have, rad/s. The stable explicit time step
/// is about 2/ω, so above 10¹² rad/s it falls below 2 ps and a second of simulated
/// time would need 10¹² steps: the stiffness or mass is a mistake.
pub const MAX_OMEGA: f64 = 1e12;

/// Longest body, collider or driver name, characters.
pub const MAX_NAME_CHARS: usize = 64;

/// Why a file could not be read as text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The operating system refused (missing, permissions…).
    #[error("cannot read it: {0}")]
    Io(String),
    /// A directory, FIFO, socket or device.
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    /// Larger than the cap.
    #[error("it is larger than the {cap_mib} MiB limit")]
    TooLarge {
        /// The cap, MiB.
        cap_mib: u64,
    },
    /// Not UTF-8 (or holds NUL bytes): a binary file.
    #[error("it is not a text file (line {line} holds bytes that are not UTF-8 text)")]
    NotText {
        /// 1-based line of the first bad byte.
        line: usize,
    },
}

/// What kind of non-regular file `m` describes.
fn kind_of(m: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_char_device() || t.is_block_device() {
        Some("a device")
    } else {
        Some("not a regular file")
    }
}

/// Reads `path` as UTF-8 text of at most `cap` bytes, refusing anything that is not a
/// regular file. Never blocks on a FIFO and never reads more than `cap + 1` bytes.
pub fn read_text(path: &Path, cap: u64) -> Result<String, ReadError> {
    text_of(read_bytes(path, cap)?)
}

/// Reads `path` as bytes, at most `cap` of them, refusing anything that is not a
/// regular file (binary outputs read back: PLY frames). Never blocks on a FIFO and
/// never reads more than `cap + 1` bytes.
pub fn read_bytes(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |e: std::io::Error| ReadError::Io(e.to_string());
    // Refuse by type before opening: opening some devices has side effects.
    if let Some(kind) = kind_of(&std::fs::metadata(path).map_err(io)?) {
        return Err(ReadError::NotRegular(kind));
    }
    // O_NONBLOCK: a FIFO swapped in after the check must not hang the open.
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(io)?;
    if let Some(kind) = kind_of(&file.metadata().map_err(io)?) {
        return Err(ReadError::NotRegular(kind));
    }
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge { cap_mib: cap >> 20 });
    }
    Ok(bytes)
}

/// Checks that `bytes` are UTF-8 without NUL bytes and returns them as text.
pub fn text_of(bytes: Vec<u8>) -> Result<String, ReadError> {
    let bad_at =
        |at: usize, bytes: &[u8]| ReadError::NotText { line: 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count() };
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        return Err(bad_at(at, &bytes));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        bad_at(at, e.as_bytes())
    })
}

/// Checks a name against the safe set: 1 to [`MAX_NAME_CHARS`] ASCII letters, digits,
/// `-`, `_`, `.` and inner spaces. Names end up in frame file headers (PLY comments,
/// OBJ groups), CSV columns and terminal output, so a newline or an escape code in
/// one could forge a header line or drive the terminal. Returns what is wrong.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a name cannot be empty".into());
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!("a name may have at most {MAX_NAME_CHARS} characters"));
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ' '))) {
        return Err(format!("a name may hold only letters, digits, `-`, `_`, `.` and spaces, not {:?}", c));
    }
    if name.starts_with(' ') || name.ends_with(' ') {
        return Err("a name cannot start or end with a space".into());
    }
    Ok(())
}

/// `s` with every control character (escape codes, carriage returns, bidi
/// overrides) written as a visible escape, for messages that echo input.
#[must_use]
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c != '\n' && (c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
