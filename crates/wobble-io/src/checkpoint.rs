//! `checkpoint.bin`: a world's state ([`wobble::World::save_state`]) in a
//! versioned file with a checksum, bound to the scene and the wobble that wrote it.
//!
//! Layout (little-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `WOBBLECK` |
//! | 4 | format version ([`CHECKPOINT_VERSION`]) |
//! | 8 + n | wobble version (length, UTF-8) |
//! | 8 | scene hash (FNV-1a 64 of the scene text) |
//! | 8 | step |
//! | 8 | frames written (per format) |
//! | 8 + n | world state (length, bytes) |
//! | 8 | FNV-1a 64 of everything above |

use super::manifest::fnv1a64;

/// File name in the output folder.
pub const CHECKPOINT_NAME: &str = "checkpoint.bin";
/// Version of the layout above (2: the contact stage also saves the body pairs
/// that started interpenetrating).
pub const CHECKPOINT_VERSION: u32 = 2;
const MAGIC: &[u8; 8] = b"WOBBLECK";

/// A checkpoint's content.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// Version of the wobble that wrote it.
    pub wobble_version: String,
    /// FNV-1a 64 of the scene text.
    pub scene_hash: u64,
    /// Steps taken.
    pub step: u64,
    /// Frame files written per format.
    pub frames_written: u64,
    /// [`wobble::World::save_state`].
    pub state: Vec<u8>,
}

impl Checkpoint {
    /// The file's bytes.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(self.state.len() + 80);
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&CHECKPOINT_VERSION.to_le_bytes());
        b.extend_from_slice(&(self.wobble_version.len() as u64).to_le_bytes());
        b.extend_from_slice(self.wobble_version.as_bytes());
        for v in [self.scene_hash, self.step, self.frames_written, self.state.len() as u64] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&self.state);
        let sum = fnv1a64(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    /// Reads a checkpoint, checking magic, version and checksum, then that it
    /// belongs to the scene with `scene_hash` and to this wobble.
    pub fn decode(data: &[u8], scene_hash: u64) -> Result<Checkpoint, String> {
        if data.len() < MAGIC.len() || &data[..MAGIC.len()] != MAGIC {
            return Err("it is not a wobble checkpoint (no WOBBLECK header)".into());
        }
        if data.len() < 20 {
            return Err("it is cut short".into());
        }
        let (body, sum) = data.split_at(data.len() - 8);
        if fnv1a64(body).to_le_bytes() != sum {
            return Err("its checksum does not match: the file is corrupt or cut short".into());
        }
        let mut at = MAGIC.len();
        let mut take = |n: usize| -> Result<&[u8], String> {
            let end = at.checked_add(n).filter(|&e| e <= body.len()).ok_or("it is cut short")?;
            let s = &body[at..end];
            at = end;
            Ok(s)
        };
        let version = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
        if version != CHECKPOINT_VERSION {
            return Err(format!("it has checkpoint format {version}; this wobble reads format {CHECKPOINT_VERSION}"));
        }
        let mut u64_at = || -> Result<u64, String> { Ok(u64::from_le_bytes(take(8)?.try_into().expect("8 bytes"))) };
        let len = usize::try_from(u64_at()?).map_err(|_| "it is corrupt")?;
        let wobble_version = String::from_utf8(take(len)?.to_vec()).map_err(|_| "its version is not text")?;
        let mut u64_at = || -> Result<u64, String> { Ok(u64::from_le_bytes(take(8)?.try_into().expect("8 bytes"))) };
        let (hash, step, frames_written, len) = (u64_at()?, u64_at()?, u64_at()?, u64_at()?);
        let len = usize::try_from(len).map_err(|_| "it is corrupt")?;
        let state = take(len)?.to_vec();
        if at != body.len() {
            return Err("it has bytes after its state".into());
        }
        let ours = env!("CARGO_PKG_VERSION");
        if wobble_version != ours {
            return Err(format!(
                "it was written by wobble {wobble_version} and this is wobble {ours}; results could differ, so run the scene again"
            ));
        }
        if hash != scene_hash {
            return Err(format!(
                "it belongs to another scene (scene hash {hash:016x}; the folder's scene.toml has {scene_hash:016x})"
            ));
        }
        Ok(Checkpoint { wobble_version, scene_hash: hash, step, frames_written, state })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Checkpoint {
        Checkpoint {
            wobble_version: env!("CARGO_PKG_VERSION").into(),
            scene_hash: 0x1234,
            step: 77,
            frames_written: 4,
            state: (0..100u8).collect(),
        }
    }

    #[test]
    fn checkpoints_round_trip_and_every_flipped_byte_is_caught() {
        let c = sample();
        let bytes = c.encode();
        assert_eq!(Checkpoint::decode(&bytes, 0x1234).unwrap(), c);
        for k in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[k] ^= 0x10;
            assert!(Checkpoint::decode(&bad, 0x1234).is_err(), "flipping byte {k} went unnoticed");
        }
        for cut in 0..bytes.len() {
            assert!(Checkpoint::decode(&bytes[..cut], 0x1234).is_err(), "cut at {cut} went unnoticed");
        }
    }

    #[test]
    fn another_scene_or_version_is_a_clear_error() {
        let e = Checkpoint::decode(&sample().encode(), 0x9999).unwrap_err();
        assert!(e.contains("belongs to another scene"), "{e}");
        let old = Checkpoint { wobble_version: "0.0.1".into(), ..sample() };
        let e = Checkpoint::decode(&old.encode(), 0x1234).unwrap_err();
        assert!(e.contains("written by wobble 0.0.1"), "{e}");
        let e = Checkpoint::decode(b"PK\x03\x04 not ours at all", 0x1234).unwrap_err();
        assert!(e.contains("not a wobble checkpoint"), "{e}");
    }
}
