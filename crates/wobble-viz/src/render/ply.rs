//! Reads the binary PLY frames that `wobble run` writes (see
//! `wobble_io::frames::write_ply`): vertices as doubles, triangle faces,
//! and edges from the `.lines.ply` file beside a frame.

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
    let data = wobble_scene::input::read_bytes(path, wobble_scene::input::MAX_FRAME_BYTES)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let end = data.windows(11).position(|w| w == b"end_header\n").ok_or_else(|| bad(path, "no end_header"))? + 11;
    let header = String::from_utf8_lossy(&data[..end]);
    if !header.starts_with("ply\nformat binary_little_endian 1.0\n") {
        return Err(bad(path, "expected `format binary_little_endian 1.0`"));
    }
    // Frames leave out empty elements (some readers reject them): an absent face
    // or edge element counts 0.
    let count = |el: &str| -> Result<usize, String> {
        let Some(line) = header.lines().find(|l| l.starts_with(&format!("element {el} "))) else {
            return if el == "vertex" { Err(bad(path, "no `element vertex`")) } else { Ok(0) };
        };
        line.split_whitespace()
            .nth(2)
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| bad(path, format!("bad `element {el}` count")))
    };
    let (nv, nf, ne) = (count("vertex")?, count("face")?, count("edge")?);
    // At least 9 bytes a face: a two-index face (a polyline segment) is the shortest.
    let need = [24usize.checked_mul(nv), 9usize.checked_mul(nf), 8usize.checked_mul(ne)]
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
        let corners = usize::from(data[at]);
        if at + 1 + 4 * corners > data.len() {
            return Err(bad(path, "cut short inside its faces"));
        }
        match corners {
            3 => frame.faces.push([index(i32_at(at + 1))?, index(i32_at(at + 5))?, index(i32_at(at + 9))?]),
            2 => frame.edges.push([index(i32_at(at + 1))?, index(i32_at(at + 5))?]),
            _ => return Err(bad(path, "a face is neither a triangle nor a segment")),
        }
        at += 1 + 4 * corners;
    }
    if at + 8 * ne > data.len() {
        return Err(bad(path, "cut short inside its edges"));
    }
    for _ in 0..ne {
        frame.edges.push([index(i32_at(at))?, index(i32_at(at + 4))?]);
        at += 8;
    }
    Ok(frame)
}

/// Reads frame `path` (`frame_N.ply`) and, when present, the polylines beside it
/// (`frame_N.lines.ply`: the particles, and each segment a two-index face).
pub fn read_with_lines(path: &Path) -> Result<PlyFrame, String> {
    let mut frame = read(path)?;
    let lines = path.with_extension("lines.ply");
    if lines.exists() {
        let extra = read(&lines)?;
        if extra.vertices.len() > frame.vertices.len() {
            return Err(bad(&lines, "more vertices than its frame"));
        }
        frame.edges.extend(extra.edges);
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
