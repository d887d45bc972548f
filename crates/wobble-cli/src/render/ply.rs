//! Reads the binary PLY frames that `wobble run` writes (see
//! [`crate::output::frames::write_ply`]): vertices as doubles, triangle faces,
//! edges.

use std::path::Path;

use glam::DVec3;

/// The content of one frame file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlyFrame {
    /// Vertex positions, m.
    pub vertices: Vec<DVec3>,
    /// Triangles.
    pub faces: Vec<[u32; 3]>,
    /// Edges (polylines).
    pub edges: Vec<[u32; 2]>,
}

fn bad(path: &Path, what: impl std::fmt::Display) -> String {
    format!("{}: not a wobble PLY frame: {what}", path.display())
}

/// Reads a frame written by `wobble run`.
pub fn read(path: &Path) -> Result<PlyFrame, String> {
    let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let end = data.windows(11).position(|w| w == b"end_header\n").ok_or_else(|| bad(path, "no end_header"))? + 11;
    let header = String::from_utf8_lossy(&data[..end]);
    if !header.starts_with("ply\nformat binary_little_endian 1.0\n") {
        return Err(bad(path, "expected `format binary_little_endian 1.0`"));
    }
    let count = |el: &str| -> Result<usize, String> {
        let line = header
            .lines()
            .find(|l| l.starts_with(&format!("element {el} ")))
            .ok_or_else(|| bad(path, format!("no `element {el}`")))?;
        line.split_whitespace()
            .nth(2)
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| bad(path, format!("bad `element {el}` count")))
    };
    let (nv, nf, ne) = (count("vertex")?, count("face")?, count("edge")?);
    let need = [24usize.checked_mul(nv), 13usize.checked_mul(nf), 8usize.checked_mul(ne)]
        .into_iter()
        .try_fold(end, |acc, part| acc.checked_add(part?))
        .ok_or_else(|| bad(path, "element counts too large"))?;
    if data.len() < need {
        return Err(bad(path, format!("{} bytes, the header promises {need}", data.len())));
    }
    let f64_at = |at: usize| f64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"));
    let i32_at = |at: usize| i32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes"));
    let mut frame = PlyFrame::default();
    let mut at = end;
    for _ in 0..nv {
        frame.vertices.push(DVec3::new(f64_at(at), f64_at(at + 8), f64_at(at + 16)));
        at += 24;
    }
    let index = |v: i32| -> Result<u32, String> {
        u32::try_from(v)
            .ok()
            .filter(|&i| (i as usize) < nv)
            .ok_or_else(|| bad(path, format!("vertex index {v} out of range")))
    };
    for _ in 0..nf {
        if data[at] != 3 {
            return Err(bad(path, "a face is not a triangle"));
        }
        frame.faces.push([index(i32_at(at + 1))?, index(i32_at(at + 5))?, index(i32_at(at + 9))?]);
        at += 13;
    }
    for _ in 0..ne {
        frame.edges.push([index(i32_at(at))?, index(i32_at(at + 4))?]);
        at += 8;
    }
    Ok(frame)
}

#[cfg(test)]
mod tests {
    #[test]
    fn absurd_element_counts_are_an_error_not_a_panic() {
        let dir = std::env::temp_dir().join(format!("wobble-ply-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.ply");
        let header = format!(
            "ply\nformat binary_little_endian 1.0\nelement vertex {}\nproperty double x\nproperty double y\nproperty double z\nelement face 0\nproperty list uchar int vertex_indices\nelement edge 0\nproperty int vertex1\nproperty int vertex2\nend_header\n",
            usize::MAX / 8
        );
        std::fs::write(&path, header).unwrap();
        let err = super::read(&path).expect_err("must be refused");
        assert!(err.contains("not a wobble PLY frame"), "{err}");
    }
}
