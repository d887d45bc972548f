//! Making a triangle mesh from a file fit to be a body: welding duplicated
//! vertices, refusing non-manifold edges, turning faces to one consistent winding,
//! and finding where a mesh that must be closed is open. Every message names
//! vertices by their 1-based OBJ numbers and faces by their OBJ lines, as the file
//! numbers them.
//!
//! * [`weld`] merges vertices closer than a tolerance (a spatial hash of cells of
//!   the tolerance's size; each vertex joins the lowest-numbered vertex within
//!   reach, so the result does not depend on the hash), drops the triangles that
//!   collapse and vertices no face uses any longer.
//! * [`orient`] checks that every edge borders at most two faces and makes the
//!   winding consistent: a breadth-first walk over faces that share an edge flips
//!   a neighbour that runs the shared edge the same way. A component whose walk
//!   meets a contradiction is not orientable (a Möbius strip) and is refused naming
//!   a face. Closed components are then wound outward (positive signed volume);
//!   open ones keep the winding of their first face.
//! * [`boundary`] lists the edges that border one face only, so a body that must
//!   be closed can name one and suggest a `weld` tolerance that closes the mesh when
//!   its boundary vertices have twins nearby (meshes saved with split vertices).

use std::collections::{HashMap, VecDeque};

use glam::DVec3;

use super::obj::ObjMesh;

/// A mesh that cannot become a body, with the places in the file to look at.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MeshError {
    /// An edge borders three or more faces.
    #[error(
        "the edge between vertices {a} and {b} borders {faces} faces (on lines {lines}); a surface's edge borders at most two"
    )]
    NonManifold {
        /// 1-based OBJ vertex numbers.
        a: usize,
        /// 1-based OBJ vertex numbers.
        b: usize,
        /// How many faces share it.
        faces: usize,
        /// Their OBJ lines, comma-separated.
        lines: String,
    },
    /// Faces cannot all be wound the same way.
    #[error("the face on line {line} cannot be wound consistently with its neighbours: the surface is not orientable")]
    NonOrientable {
        /// OBJ line of the face where the contradiction was found.
        line: usize,
    },
    /// A surface that must be closed has a boundary.
    #[error(
        "the mesh is open: the edge between vertices {a} and {b} (face on line {line}) borders one face only ({edges} such edges in all){hint}"
    )]
    Open {
        /// 1-based OBJ vertex numbers.
        a: usize,
        /// 1-based OBJ vertex numbers.
        b: usize,
        /// OBJ line of its face.
        line: usize,
        /// Number of boundary edges.
        edges: usize,
        /// A suggestion (`weld`), or empty.
        hint: String,
    },
    /// Welding left no triangle.
    #[error("welding with tolerance {0:e} collapses every face; use a tolerance below the mesh's edge lengths")]
    WeldedAway(f64),
}

/// What [`weld`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WeldReport {
    /// Vertices merged into another one.
    pub merged: usize,
    /// Triangles dropped because two of their corners merged.
    pub dropped: usize,
}

/// What [`orient`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrientReport {
    /// Faces whose winding was reversed.
    pub flipped: usize,
    /// Connected components (by shared edges).
    pub components: usize,
}

fn line_of(mesh: &ObjMesh, t: usize) -> usize {
    mesh.face_lines.get(t).copied().unwrap_or(0)
}

fn obj_number(mesh: &ObjMesh, v: u32) -> usize {
    mesh.vertex_numbers.get(v as usize).copied().unwrap_or(v as usize + 1)
}

/// Merges vertices closer than `tolerance` (file units) and drops the triangles
/// and vertices this leaves unused. `ObjMesh::vertex_numbers` keeps each kept
/// vertex's OBJ number for messages.
///
/// # Errors
/// [`MeshError::WeldedAway`] when no triangle is left.
pub fn weld(mesh: &mut ObjMesh, tolerance: f64) -> Result<WeldReport, MeshError> {
    let n = mesh.vertices.len();
    let mut target: Vec<u32> = (0..n as u32).collect();
    if tolerance > 0.0 && tolerance.is_finite() {
        let cell = |p: DVec3| (p / tolerance).floor().as_i64vec3().to_array();
        let mut cells: HashMap<[i64; 3], Vec<u32>> = HashMap::new();
        for (i, p) in mesh.vertices.iter().enumerate() {
            let c = cell(*p);
            let mut best: Option<u32> = None;
            for dx in -1..=1 {
                for dy in -1..=1 {
                    for dz in -1..=1 {
                        let Some(list) = cells.get(&[c[0] + dx, c[1] + dy, c[2] + dz]) else { continue };
                        for &j in list {
                            if mesh.vertices[j as usize].distance(*p) <= tolerance && best.is_none_or(|b| j < b) {
                                best = Some(j);
                            }
                        }
                    }
                }
            }
            match best {
                Some(j) => target[i] = target[j as usize],
                None => cells.entry(c).or_default().push(i as u32),
            }
        }
    }
    let merged = target.iter().enumerate().filter(|&(i, &t)| t as usize != i).count();
    let (mut tris, mut lines) = (Vec::with_capacity(mesh.triangles.len()), Vec::with_capacity(mesh.triangles.len()));
    let mut dropped = 0;
    for (k, t) in mesh.triangles.iter().enumerate() {
        let t = t.map(|i| target[i as usize]);
        if t[0] == t[1] || t[1] == t[2] || t[0] == t[2] {
            dropped += 1;
        } else {
            tris.push(t);
            lines.push(line_of(mesh, k));
        }
    }
    if tris.is_empty() {
        return Err(MeshError::WeldedAway(tolerance));
    }
    // Renumber the vertices still in use, in their original order.
    let mut new_index = vec![u32::MAX; n];
    let (mut vertices, mut numbers) = (Vec::new(), Vec::new());
    for t in &tris {
        for &i in t {
            new_index[i as usize] = 0;
        }
    }
    for (i, slot) in new_index.iter_mut().enumerate() {
        if *slot == 0 {
            *slot = vertices.len() as u32;
            vertices.push(mesh.vertices[i]);
            numbers.push(obj_number(mesh, i as u32));
        }
    }
    for t in &mut tris {
        *t = t.map(|i| new_index[i as usize]);
    }
    mesh.vertices = vertices;
    mesh.vertex_numbers = numbers;
    mesh.triangles = tris;
    mesh.face_lines = lines;
    Ok(WeldReport { merged, dropped })
}

/// For every undirected edge (smaller index first), the faces that border it.
fn edge_faces(tris: &[[u32; 3]]) -> HashMap<(u32, u32), Vec<u32>> {
    let mut map: HashMap<(u32, u32), Vec<u32>> = HashMap::with_capacity(tris.len() * 3 / 2);
    for (f, t) in tris.iter().enumerate() {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            map.entry((a.min(b), a.max(b))).or_default().push(f as u32);
        }
    }
    map
}

/// Whether face `t` runs from `a` to `b` along one of its edges.
fn runs(t: &[u32; 3], a: u32, b: u32) -> bool {
    (0..3).any(|k| t[k] == a && t[(k + 1) % 3] == b)
}

/// Signed volume of the triangles' cone from the origin.
fn signed_volume(x: &[DVec3], tris: &[[u32; 3]], faces: &[u32]) -> f64 {
    faces
        .iter()
        .map(|&f| {
            let [a, b, c] = tris[f as usize].map(|i| x[i as usize]);
            a.dot(b.cross(c)) / 6.0
        })
        .sum()
}

/// Refuses non-manifold edges and turns every face to one consistent winding per
/// connected component, closed components outward (module docs).
///
/// # Errors
/// [`MeshError::NonManifold`] or [`MeshError::NonOrientable`], naming OBJ
/// vertices and lines.
pub fn orient(mesh: &mut ObjMesh) -> Result<OrientReport, MeshError> {
    let edges = edge_faces(&mesh.triangles);
    // Report the first offending edge in face order, so the message is reproducible.
    for t in &mesh.triangles {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            let faces = &edges[&(a.min(b), a.max(b))];
            if faces.len() > 2 {
                let lines: Vec<String> = faces.iter().map(|&f| line_of(mesh, f as usize).to_string()).collect();
                return Err(MeshError::NonManifold {
                    a: obj_number(mesh, a.min(b)),
                    b: obj_number(mesh, a.max(b)),
                    faces: faces.len(),
                    lines: lines.join(", "),
                });
            }
        }
    }
    let nf = mesh.triangles.len();
    let mut seen = vec![false; nf];
    let mut report = OrientReport::default();
    let mut queue = VecDeque::new();
    for start in 0..nf {
        if seen[start] {
            continue;
        }
        report.components += 1;
        seen[start] = true;
        queue.push_back(start as u32);
        let mut component = vec![start as u32];
        let mut closed = true;
        while let Some(f) = queue.pop_front() {
            let t = mesh.triangles[f as usize];
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                let faces = &edges[&(a.min(b), a.max(b))];
                if faces.len() == 1 {
                    closed = false;
                }
                for &g in faces.iter().filter(|&&g| g != f) {
                    // A consistent neighbour runs the shared edge from b to a.
                    let same_way = runs(&mesh.triangles[g as usize], a, b);
                    if seen[g as usize] {
                        if same_way {
                            return Err(MeshError::NonOrientable { line: line_of(mesh, g as usize) });
                        }
                        continue;
                    }
                    if same_way {
                        mesh.triangles[g as usize].swap(1, 2);
                        report.flipped += 1;
                    }
                    seen[g as usize] = true;
                    component.push(g);
                    queue.push_back(g);
                }
            }
        }
        if closed && signed_volume(&mesh.vertices, &mesh.triangles, &component) < 0.0 {
            for &f in &component {
                mesh.triangles[f as usize].swap(1, 2);
            }
            // Reversing a whole component is a choice of outside, not a repair.
        }
    }
    Ok(report)
}

/// The edges bordering one face only, as (vertex, vertex, face), in face order.
#[must_use]
pub fn boundary(mesh: &ObjMesh) -> Vec<(u32, u32, u32)> {
    let edges = edge_faces(&mesh.triangles);
    let mut out = Vec::new();
    for (f, t) in mesh.triangles.iter().enumerate() {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            if edges[&(a.min(b), a.max(b))].len() == 1 {
                out.push((a, b, f as u32));
            }
        }
    }
    out
}

/// Checks that `mesh` is closed; when it is not, the error names a boundary edge
/// and, if every boundary vertex has another vertex within a small distance (a
/// mesh saved with split vertices), suggests the `weld` tolerance that joins them.
///
/// # Errors
/// [`MeshError::Open`].
pub fn require_closed(mesh: &ObjMesh) -> Result<(), MeshError> {
    let open = boundary(mesh);
    let Some(&(a, b, f)) = open.first() else {
        return Ok(());
    };
    let mut verts: Vec<u32> = open.iter().flat_map(|&(a, b, _)| [a, b]).collect();
    verts.sort_unstable();
    verts.dedup();
    // The farthest any boundary vertex is from its nearest other boundary vertex:
    // a weld at (slightly above) it joins every one to a twin.
    let mut reach: f64 = 0.0;
    let scale = mesh_scale(mesh);
    for &v in &verts {
        let p = mesh.vertices[v as usize];
        let nearest = verts
            .iter()
            .filter(|&&w| w != v)
            .map(|&w| mesh.vertices[w as usize].distance(p))
            .fold(f64::INFINITY, f64::min);
        reach = reach.max(nearest);
    }
    let hint = if verts.len() <= 20_000 && reach < 1e-3 * scale {
        let tol = if reach > 0.0 { reach * 2.0 } else { 1e-9 * scale.max(1e-300) };
        format!("; its boundary vertices all have a twin within {reach:.3e} (file units): add `weld = {tol:.1e}`")
    } else {
        "; close its holes in a mesh editor, or use a `mesh` body (open surfaces) instead".to_owned()
    };
    Err(MeshError::Open {
        a: obj_number(mesh, a),
        b: obj_number(mesh, b),
        line: line_of(mesh, f as usize),
        edges: open.len(),
        hint,
    })
}

/// The diagonal of the mesh's bounding box (file units).
#[must_use]
pub fn mesh_scale(mesh: &ObjMesh) -> f64 {
    let (lo, hi) = mesh
        .vertices
        .iter()
        .fold((DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY)), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
    (hi - lo).length()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::obj::parse;

    const TETRA: &str = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n";

    #[test]
    fn faces_are_turned_to_one_winding_and_closed_meshes_outward() {
        // Two faces of the tetrahedron written the wrong way round.
        let mut m = parse("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 4 2\nf 1 4 3\nf 2 4 3\n").unwrap();
        let r = orient(&mut m).unwrap();
        assert_eq!(r, OrientReport { flipped: 2, components: 1 });
        assert!(signed_volume(&m.vertices, &m.triangles, &[0, 1, 2, 3]) > 0.0);
        require_closed(&m).unwrap();
        // Every face of an inside-out tetrahedron: turned outward as a whole.
        let mut m = parse("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 4 2\nf 1 3 4\nf 2 4 3\n").unwrap();
        orient(&mut m).unwrap();
        assert!((signed_volume(&m.vertices, &m.triangles, &[0, 1, 2, 3]) - 1.0 / 6.0).abs() < 1e-15);
    }

    #[test]
    fn a_non_manifold_edge_is_named_by_obj_vertices_and_lines() {
        let text = format!("{TETRA}v 1 1 1\nf 1 2 5\n");
        let mut m = parse(&text).unwrap();
        let e = orient(&mut m).unwrap_err();
        assert_eq!(e, MeshError::NonManifold { a: 1, b: 2, faces: 3, lines: "5, 6, 10".into() });
        assert!(e.to_string().contains("between vertices 1 and 2 borders 3 faces (on lines 5, 6, 10)"));
    }

    #[test]
    fn a_moebius_strip_is_not_orientable() {
        // A strip of 6 quads (12 triangles) whose ends join with a half twist.
        let mut text = String::new();
        let n = 6;
        for i in 0..n {
            let a = std::f64::consts::TAU * i as f64 / n as f64;
            let half = a / 2.0;
            for s in [-0.3, 0.3] {
                let r = 1.0 + s * half.cos();
                text += &format!("v {} {} {}\n", r * a.cos(), r * a.sin(), s * half.sin());
            }
        }
        for i in 0..n {
            let (p, q) = (2 * i + 1, 2 * i + 2);
            let (r, s) = if i + 1 < n { (2 * i + 3, 2 * i + 4) } else { (2, 1) };
            text += &format!("f {p} {r} {q}\nf {q} {r} {s}\n");
        }
        let mut m = parse(&text).unwrap();
        assert!(matches!(orient(&mut m), Err(MeshError::NonOrientable { .. })));
    }

    #[test]
    fn welding_closes_a_mesh_saved_with_split_vertices_and_the_error_suggests_it() {
        // The tetrahedron with every face carrying its own three vertices.
        let m0 = parse(TETRA).unwrap();
        let mut text = String::new();
        for (k, t) in m0.triangles.iter().enumerate() {
            for &i in t {
                let p = m0.vertices[i as usize] + DVec3::splat(1e-7 * k as f64);
                text += &format!("v {} {} {}\n", p.x, p.y, p.z);
            }
            text += &format!("f {} {} {}\n", 3 * k + 1, 3 * k + 2, 3 * k + 3);
        }
        let mut m = parse(&text).unwrap();
        orient(&mut m).unwrap();
        let e = require_closed(&m).unwrap_err();
        let MeshError::Open { edges, ref hint, line, .. } = e else { panic!("{e:?}") };
        assert_eq!((edges, line), (12, 4));
        assert!(hint.contains("add `weld = "), "{hint}");
        let r = weld(&mut m, 1e-6).unwrap();
        assert_eq!(r, WeldReport { merged: 8, dropped: 0 });
        assert_eq!(m.vertices.len(), 4);
        assert_eq!(m.vertex_numbers, vec![1, 2, 3, 6]);
        orient(&mut m).unwrap();
        require_closed(&m).unwrap();
        // A tolerance as large as the mesh collapses it.
        assert_eq!(weld(&mut m, 10.0), Err(MeshError::WeldedAway(10.0)));
    }

    #[test]
    fn an_open_mesh_without_twins_suggests_closing_its_holes() {
        let mut m = parse("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\n").unwrap();
        orient(&mut m).unwrap();
        let e = require_closed(&m).unwrap_err().to_string();
        assert!(e.contains("borders one face only (3 such edges in all)") && e.contains("close its holes"), "{e}");
    }
}
