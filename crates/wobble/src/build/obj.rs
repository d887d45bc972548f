//! A small Wavefront OBJ reader: vertices (`v`) and faces (`f`), polygons split into
//! triangles by ear clipping (a convex polygon into the fan from its first vertex).
//! Texture coordinates, normals, groups and materials are skipped.
//! Errors name the line and column and say what is wrong.

use glam::DVec3;

/// A triangle mesh read from OBJ text.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjMesh {
    /// Vertex positions, in file units.
    pub vertices: Vec<DVec3>,
    /// Triangles as zero-based vertex indices, in file winding.
    pub triangles: Vec<[u32; 3]>,
    /// The OBJ line of each triangle's face (a polygon's fan shares its line), for
    /// messages.
    pub face_lines: Vec<usize>,
    /// The 1-based OBJ number of each vertex, for messages; empty while vertices are
    /// numbered as in the file (vertex i is OBJ vertex i + 1), filled by
    /// [`super::mesh_check::weld`] when it drops some.
    pub vertex_numbers: Vec<usize>,
}

impl ObjMesh {
    /// Each triangle split into four at its edges' midpoints (one new vertex per
    /// edge, shared by the triangles on both sides): the same surface with four
    /// times the triangles, for resolution studies. Face lines are kept; new
    /// vertices have no OBJ number of their own and are named after the file's
    /// count.
    #[must_use]
    pub fn subdivided(&self) -> ObjMesh {
        let mut vertices = self.vertices.clone();
        let mut midpoint: std::collections::HashMap<(u32, u32), u32> = std::collections::HashMap::new();
        let mut mid = |a: u32, b: u32, vertices: &mut Vec<DVec3>| {
            *midpoint.entry((a.min(b), a.max(b))).or_insert_with(|| {
                vertices.push(0.5 * (vertices[a as usize] + vertices[b as usize]));
                (vertices.len() - 1) as u32
            })
        };
        let (mut triangles, mut face_lines) = (Vec::new(), Vec::new());
        for (k, &[a, b, c]) in self.triangles.iter().enumerate() {
            let (ab, bc, ca) = (mid(a, b, &mut vertices), mid(b, c, &mut vertices), mid(c, a, &mut vertices));
            triangles.extend([[a, ab, ca], [ab, b, bc], [ca, bc, c], [ab, bc, ca]]);
            face_lines.extend([self.face_lines.get(k).copied().unwrap_or(0); 4]);
        }
        ObjMesh { vertices, triangles, face_lines, vertex_numbers: Vec::new() }
    }
}

/// A malformed OBJ file.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
#[error("OBJ line {line}, column {column}: {message}")]
pub struct ObjError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong and what to do.
    pub message: String,
}

/// Largest coordinate magnitude accepted: beyond it squared distances are no
/// longer safely finite.
pub const MAX_COORDINATE: f64 = 1e30;

/// A token for a message: quoted when it is short printable ASCII, else described,
/// so a binary or unrelated file passed as a mesh is not echoed to the terminal.
fn shown(tok: &str) -> String {
    if tok.len() <= 24 && tok.chars().all(|c| c.is_ascii_graphic()) {
        format!("`{tok}`")
    } else {
        format!("a {}-byte token", tok.len())
    }
}

/// Parses OBJ text.
pub fn parse(text: &str) -> Result<ObjMesh, ObjError> {
    let mut mesh = ObjMesh::default();
    for (ln, raw) in text.lines().enumerate() {
        let line = ln + 1;
        let content = raw.split('#').next().unwrap_or("");
        let mut tokens = tokens_with_columns(content);
        let Some((keyword_column, keyword)) = tokens.next() else {
            continue;
        };
        match keyword {
            "v" => {
                let mut c = [0.0f64; 3];
                for (k, slot) in c.iter_mut().enumerate() {
                    let Some((col, tok)) = tokens.next() else {
                        return Err(ObjError {
                            line,
                            column: raw.len() + 1,
                            message: format!("vertex needs 3 coordinates, found {k}"),
                        });
                    };
                    *slot = tok.parse::<f64>().ok().filter(|v| v.abs() <= MAX_COORDINATE).ok_or_else(|| ObjError {
                        line,
                        column: col,
                        message: format!("{} is not a finite number within ±{MAX_COORDINATE:e}", shown(tok)),
                    })?;
                }
                mesh.vertices.push(DVec3::from_array(c));
            }
            "f" => {
                let mut idx = Vec::with_capacity(4);
                for (col, tok) in tokens {
                    let first = tok.split('/').next().unwrap_or("");
                    let i: i64 = first.parse().map_err(|_| ObjError {
                        line,
                        column: col,
                        message: format!("{} is not a vertex index", shown(tok)),
                    })?;
                    let n = mesh.vertices.len() as i64;
                    let resolved = if i > 0 { i - 1 } else { n + i };
                    if i == 0 || resolved < 0 || resolved >= n {
                        return Err(ObjError {
                            line,
                            column: col,
                            message: format!(
                                "face refers to vertex {i}, but {n} vertices are defined before this line"
                            ),
                        });
                    }
                    idx.push(resolved as u32);
                }
                if idx.len() < 3 {
                    return Err(ObjError {
                        line,
                        column: keyword_column,
                        message: format!("a face needs at least 3 vertices, found {}", idx.len()),
                    });
                }
                let mut seen = idx.clone();
                seen.sort_unstable();
                if seen.windows(2).any(|w| w[0] == w[1]) {
                    return Err(ObjError { line, column: keyword_column, message: "face repeats a vertex".into() });
                }
                let triangles = triangulate(&idx, &mesh.vertices).ok_or_else(|| ObjError {
                    line,
                    column: keyword_column,
                    message: format!(
                        "the {}-sided face crosses itself, so it has no triangulation; split it into triangles",
                        idx.len()
                    ),
                })?;
                for t in triangles {
                    mesh.triangles.push(t);
                    mesh.face_lines.push(line);
                }
            }
            "vt" | "vn" | "vp" | "o" | "g" | "s" | "usemtl" | "mtllib" | "l" => {}
            other => {
                return Err(ObjError {
                    line,
                    column: keyword_column,
                    message: format!("unknown statement {}; expected `v`, `f` or a comment", shown(other)),
                });
            }
        }
    }
    if mesh.vertices.is_empty() {
        return Err(ObjError { line: 1, column: 1, message: "the file defines no vertices".into() });
    }
    if mesh.triangles.is_empty() {
        return Err(ObjError { line: 1, column: 1, message: "the file defines no faces".into() });
    }
    Ok(mesh)
}

/// Splits polygon `poly` (vertex indices into `vertices`, in order) into triangles
/// that cover it, by ear clipping in the plane of its Newell normal: a convex
/// polygon gives the fan from its first vertex, a concave one triangles that stay
/// inside it. A polygon with no area (all points on a line) gives the fan too.
/// `None` when the polygon crosses itself (no ear can be cut).
fn triangulate(poly: &[u32], vertices: &[DVec3]) -> Option<Vec<[u32; 3]>> {
    let n = poly.len();
    let at = |k: usize| vertices[poly[k] as usize];
    let fan = || (1..n - 1).map(|k| [poly[0], poly[k], poly[k + 1]]).collect::<Vec<_>>();
    if n == 3 {
        return Some(fan());
    }
    let normal = (0..n).map(|k| at(k).cross(at((k + 1) % n))).sum::<DVec3>();
    let scale = (0..n).map(|k| (at(k) - at(0)).length_squared()).fold(0.0, f64::max);
    if normal.length_squared() <= 1e-24 * scale * scale {
        return Some(fan());
    }
    // Coordinates in the plane, oriented so the polygon runs counter-clockwise.
    let (u, v) = {
        let w = normal.normalize();
        let u = w.any_orthonormal_vector();
        (u, w.cross(u))
    };
    let p: Vec<[f64; 2]> = (0..n).map(|k| [at(k).dot(u), at(k).dot(v)]).collect();
    let cross = |a: [f64; 2], b: [f64; 2], c: [f64; 2]| (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
    let tol = 1e-12 * scale;
    // Two edges that do not share a corner must not cross.
    let crosses = |(a, b): (usize, usize), (c, d): (usize, usize)| {
        let side = |x: usize, y: usize, z: usize| cross(p[x], p[y], p[z]);
        side(a, b, c) * side(a, b, d) < 0.0 && side(c, d, a) * side(c, d, b) < 0.0
    };
    let edge = |k: usize| (k, (k + 1) % n);
    if (0..n).any(|i| (i + 2..n).any(|j| (j + 1) % n != i && crosses(edge(i), edge(j)))) {
        return None;
    }
    let mut left: Vec<usize> = (0..n).collect();
    let mut out = Vec::with_capacity(n - 2);
    while left.len() > 3 {
        let m = left.len();
        // Corners in turn from the second, so that a convex polygon gives its fan.
        let ear = (1..=m).map(|j| j % m).find(|&j| {
            let (a, b, c) = (left[(j + m - 1) % m], left[j], left[(j + 1) % m]);
            let (pa, pb, pc) = (p[a], p[b], p[c]);
            if cross(pa, pb, pc) <= tol {
                return false;
            }
            // No other corner inside or on the candidate triangle.
            left.iter().all(|&k| {
                k == a
                    || k == b
                    || k == c
                    || cross(pa, pb, p[k]) < -tol
                    || cross(pb, pc, p[k]) < -tol
                    || cross(pc, pa, p[k]) < -tol
            })
        })?;
        let (a, b, c) = (left[(ear + m - 1) % m], left[ear], left[(ear + 1) % m]);
        out.push([poly[a], poly[b], poly[c]]);
        left.remove(ear);
    }
    out.push([poly[left[0]], poly[left[1]], poly[left[2]]]);
    Some(out)
}

/// Whitespace-separated tokens with their 1-based columns.
fn tokens_with_columns(s: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = s;
    let mut offset = 0;
    std::iter::from_fn(move || {
        let start = rest.find(|c: char| !c.is_whitespace())?;
        let tail = &rest[start..];
        let len = tail.find(char::is_whitespace).unwrap_or(tail.len());
        let column = offset + start + 1;
        let tok = &tail[..len];
        offset += start + len;
        rest = &tail[len..];
        Some((column, tok))
    })
}
