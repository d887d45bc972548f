//! Builders (`build/`): element counts against closed-form combinatorics and
//! independent geometric counts, surfaces that are closed 2-manifolds (Euler's
//! formula V − E + F = 2, every edge shared by two oppositely wound triangles),
//! enclosed volumes against exact values, and the OBJ reader's error positions.

#[macro_use]
mod support;

use std::collections::HashMap;
use std::f64::consts::PI;

use glam::DVec3;
use wobble::build::WorldBuilder;
use wobble::build::cloth::{self, Cloth};
use wobble::build::lattice::{self, Lattice};
use wobble::build::mesh::{MeshBody, edges};
use wobble::build::obj::{self, ObjError};
use wobble::build::sphere::SphereMesh;
use wobble::build::twolayer::PressureSphere;
use wobble::force::{SpringKind, SpringNetwork, SpringParams};
use wobble::model::{Vec3s, closed_surface_volume};
use wobble::world::SimParams;

/// Checks that `tris` form a closed, consistently wound 2-manifold: every directed
/// edge occurs exactly once and its reverse exactly once (so every undirected edge
/// bounds exactly two triangles, wound oppositely). Returns (V, E, F) with V the
/// number of distinct vertices used.
fn closed_surface_counts(tris: &[[u32; 3]], label: &str) -> (usize, usize, usize) {
    let mut directed: HashMap<(u32, u32), usize> = HashMap::new();
    for t in tris {
        for k in 0..3 {
            *directed.entry((t[k], t[(k + 1) % 3])).or_default() += 1;
        }
    }
    for (&(a, b), &count) in &directed {
        assert_eq!(count, 1, "{label}: directed edge {a}→{b} used {count} times (inconsistent winding)");
        assert_eq!(directed.get(&(b, a)), Some(&1), "{label}: edge {a}–{b} is a boundary edge (surface not closed)");
    }
    let mut verts: Vec<u32> = tris.iter().flatten().copied().collect();
    verts.sort_unstable();
    verts.dedup();
    (verts.len(), directed.len() / 2, tris.len())
}

#[test]
fn cloth_spring_counts_match_combinatorics() {
    // An N × N grid has 2N(N−1) axis neighbours (structural), 2(N−1)² cell diagonals
    // (shear) and 2N(N−2) skip-one neighbours (bend): 5,826 / 23,938 / 97,026 springs
    // for N = 32 / 64 / 128. Exact integer counts.
    for (n, total) in [(32usize, 5_826usize), (64, 23_938), (128, 97_026)] {
        let mut b = WorldBuilder::new();
        Cloth { nx: n, ny: n, ..Cloth::default() }.build(&mut b, "cloth").unwrap();
        let net = SpringNetwork::new(&b.springs, b.particle_count()).unwrap();
        let counts = (net.count(SpringKind::Structural), net.count(SpringKind::Shear), net.count(SpringKind::Bend));
        let expected = (2 * n * (n - 1), 2 * (n - 1) * (n - 1), 2 * n * (n - 2));
        assert_eq!(counts, expected, "N = {n}: (structural, shear, bend)");
        assert_eq!(counts, cloth::spring_counts(n, n), "N = {n}: against cloth::spring_counts");
        assert_eq!(net.len(), total, "N = {n}: total springs");
        // 2 (N−1)² triangles.
        assert_eq!(b.topology.triangles.len(), 2 * (n - 1) * (n - 1), "N = {n}: triangles");
    }
}

#[test]
fn cloth_springs_are_exactly_the_geometric_neighbour_pairs() {
    // Independent count for a non-square 20 × 13 cloth: every particle pair at
    // distance s (structural), s√2 (shear) or 2s (bend) must be joined by exactly one
    // spring of that kind with that rest length, and no other pair may be joined.
    // Distances compared to 1e-9 relative.
    let (nx, ny, s) = (20usize, 13usize, 0.01);
    let mut b = WorldBuilder::new();
    Cloth { nx, ny, spacing: s, ..Cloth::default() }.build(&mut b, "cloth").unwrap();
    let net = SpringNetwork::new(&b.springs, b.particle_count()).unwrap();
    let x = &b.state.x;
    let classify = |d: f64| {
        [(s, SpringKind::Structural), (s * 2f64.sqrt(), SpringKind::Shear), (2.0 * s, SpringKind::Bend)]
            .into_iter()
            .find(|(l, _)| (d - l).abs() <= 1e-9 * l)
            .map(|(_, k)| k)
    };
    let mut expected: HashMap<(usize, usize), SpringKind> = HashMap::new();
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            if let Some(kind) = classify(x.get(i).distance(x.get(j))) {
                expected.insert((i, j), kind);
            }
        }
    }
    let mut seen: HashMap<(usize, usize), SpringKind> = HashMap::new();
    for sp in 0..net.len() {
        let (a, c) = net.ends(sp);
        let key = (a.min(c), a.max(c));
        assert!(seen.insert(key, net.kind(sp)).is_none(), "duplicate spring between {a} and {c}");
        let d = x.get(a).distance(x.get(c));
        assert_rel!(net.rest_length(sp), d, 1e-12, "rest length of spring {a}–{c} equals the initial distance");
    }
    assert_eq!(seen.len(), expected.len(), "number of joined pairs vs geometric neighbour pairs");
    for (pair, kind) in &expected {
        assert_eq!(seen.get(pair), Some(kind), "pair {pair:?} should be joined by a {kind} spring");
    }
}

#[test]
fn lattice_spring_counts_match_formula_and_geometry() {
    // Structural: pairs at distance s; shear: face diagonals (s√2) and body diagonals
    // (s√3) of unit cells; bend: axis pairs at 2s. Counted geometrically over all
    // pairs and against lattice::spring_counts and the closed forms written here.
    for n in [[2usize, 2, 2], [3, 4, 5], [5, 3, 2]] {
        let s = 0.05;
        let mut b = WorldBuilder::new();
        let p = SpringParams::linear(100.0, 0.1);
        Lattice { n, spacing: s, shear: Some(p), bend: Some(p), ..Lattice::default() }.build(&mut b, "box").unwrap();
        let net = SpringNetwork::new(&b.springs, b.particle_count()).unwrap();
        let [x, y, z] = n;
        let structural = (x - 1) * y * z + x * (y - 1) * z + x * y * (z - 1);
        let faces = 2 * ((x - 1) * (y - 1) * z + (x - 1) * y * (z - 1) + x * (y - 1) * (z - 1));
        let bodies = 4 * (x - 1) * (y - 1) * (z - 1);
        let bend = x.saturating_sub(2) * y * z + x * y.saturating_sub(2) * z + x * y * z.saturating_sub(2);
        let got = (net.count(SpringKind::Structural), net.count(SpringKind::Shear), net.count(SpringKind::Bend));
        assert_eq!(got, (structural, faces + bodies, bend), "{n:?}: (structural, shear, bend) closed forms");
        assert_eq!((got.0, got.1), lattice::spring_counts(n), "{n:?}: against lattice::spring_counts");
        let pos = &b.state.x;
        let (mut geo_struct, mut geo_shear, mut geo_bend) = (0, 0, 0);
        for i in 0..pos.len() {
            for j in i + 1..pos.len() {
                let d = pos.get(i).distance(pos.get(j)) / s;
                let near = |l: f64| (d - l).abs() < 1e-9;
                if near(1.0) {
                    geo_struct += 1;
                } else if near(2f64.sqrt()) || near(3f64.sqrt()) {
                    geo_shear += 1;
                } else if near(2.0) {
                    geo_bend += 1;
                }
            }
        }
        assert_eq!(got, (geo_struct, geo_shear, geo_bend), "{n:?}: geometric pair counts");
    }
}

#[test]
fn lattice_surface_is_closed_and_encloses_the_box_volume_exactly() {
    // The boundary of an nx × ny × nz lattice is a closed, outward-wound surface of
    // 4[(x−1)(y−1) + (x−1)(z−1) + (y−1)(z−1)] triangles whose vertices are the
    // boundary particles, a topological sphere (V − E + F = 2), enclosing
    // (x−1)(y−1)(z−1) s³. With s = 0.25 and integer origin every triple product is a
    // multiple of 2⁻⁶ and the divergence-theorem sum is exact: equality is asserted.
    // With s = 0.1 and an offset origin, rounding only: 1e-12 relative.
    for (s, origin, exact) in [(0.25, DVec3::ZERO, true), (0.1, DVec3::new(0.3, -1.2, 2.0), false)] {
        for n in [[2usize, 2, 2], [3, 4, 5], [6, 2, 3]] {
            let mut b = WorldBuilder::new();
            Lattice { n, spacing: s, origin, ..Lattice::default() }.build(&mut b, "box").unwrap();
            let w = b.build(SimParams::default()).unwrap();
            let body = w.topology.body("box").unwrap();
            assert!(body.closed, "{n:?}: the lattice body must be marked closed");
            let tris = &w.topology.triangles[body.triangles.clone()];
            let (v, e, f) = closed_surface_counts(tris, &format!("lattice {n:?}"));
            let [x, y, z] = n;
            assert_eq!(f, 4 * ((x - 1) * (y - 1) + (x - 1) * (z - 1) + (y - 1) * (z - 1)), "{n:?}: triangles");
            assert_eq!(
                v,
                x * y * z - x.saturating_sub(2) * y.saturating_sub(2) * z.saturating_sub(2),
                "{n:?}: boundary vertices"
            );
            assert_eq!(
                v as i64 - e as i64 + f as i64,
                2,
                "{n:?}: Euler characteristic V − E + F (V={v}, E={e}, F={f})"
            );
            let volume = w.topology.enclosed_volume(body, &w.state.x).unwrap();
            let expected = ((x - 1) * (y - 1) * (z - 1)) as f64 * s * s * s;
            if exact {
                assert_eq!(volume, expected, "{n:?}: enclosed volume with dyadic coordinates");
            } else {
                assert_rel!(volume, expected, 1e-12, "{n:?}: enclosed volume at an offset origin");
            }
            assert_eq!(w.metrics().volume, Some(volume), "{n:?}: metrics report the same volume");
        }
    }
}

#[test]
fn open_cloth_has_no_enclosed_volume() {
    let mut b = WorldBuilder::new();
    Cloth { nx: 4, ny: 4, ..Cloth::default() }.build(&mut b, "cloth").unwrap();
    let w = b.build(SimParams::default()).unwrap();
    let body = w.topology.body("cloth").unwrap();
    assert!(!body.closed);
    assert_eq!(w.topology.enclosed_volume(body, &w.state.x), None);
    assert_eq!(w.metrics().volume, None);
}

#[test]
fn uniform_sphere_counts_follow_euler_formula() {
    // Octahedron subdivided n times: every split quadruples the faces, F = 8·4ⁿ, and
    // a closed triangulation has E = 3F/2 = 12·4ⁿ, so V = 2 − F + E = 4·4ⁿ + 2:
    // 6/18/66 vertices, 12/48/192 edges, 8/32/128 faces for n = 0/1/2.
    let table = [(0u32, 6usize, 12usize, 8usize), (1, 18, 48, 32), (2, 66, 192, 128)];
    for level in 0..=6u32 {
        let (verts, tris) = SphereMesh::Uniform { level }.generate();
        let p = 4usize.pow(level);
        let (v, e, f) = closed_surface_counts(&tris, &format!("uniform level {level}"));
        assert_eq!((verts.len(), e, f), (4 * p + 2, 12 * p, 8 * p), "level {level}: (V, E, F)");
        assert_eq!(v, verts.len(), "level {level}: every vertex is on the surface");
        assert_eq!(edges(&tris).0.len(), e, "level {level}: mesh::edges count");
        assert_eq!(v as i64 - e as i64 + f as i64, 2, "level {level}: V − E + F");
        if let Some(&(_, tv, te, tf)) = table.iter().find(|r| r.0 == level) {
            assert_eq!((verts.len(), e, f), (tv, te, tf), "level {level}: the table in the notes");
        }
        for (i, p) in verts.iter().enumerate() {
            assert_close!(p.length(), 1.0, 1e-15, "level {level}: vertex {i} on the unit sphere");
        }
    }
}

#[test]
fn uniform_sphere_numbering_puts_its_springs_in_runs() {
    // The vertices are numbered row by row over the octahedral map (a regular
    // grid), so along most of a row an edge's ends differ by the same amount: the
    // springs of a level-4 two-layer sphere (13,314) nearly all form vectorised
    // runs (numbered in subdivision order, 1,026 did: the radius springs). Row
    // j of the grid joins row j + 1 by edges of one offset, broken where the
    // diagonals change direction and at the folded edges of the square.
    for (level, least) in [(3u32, 0.8), (4, 0.95), (5, 0.97)] {
        let mut b = WorldBuilder::new();
        PressureSphere { mesh: SphereMesh::Uniform { level }, ..PressureSphere::default() }.build(&mut b, "s").unwrap();
        let net = SpringNetwork::new(&b.springs, b.particle_count()).unwrap();
        let share = net.vectorised_len() as f64 / net.len() as f64;
        println!("level {level}: {} of {} springs in runs ({:.1} %)", net.vectorised_len(), net.len(), 100.0 * share);
        assert!(share >= least, "level {level}: only {:.1} % of the springs form runs", 100.0 * share);
    }
}

#[test]
fn lat_long_sphere_counts_follow_euler_formula() {
    // s slices × t stacks: two poles plus t − 1 rings of s vertices, V = s(t−1) + 2;
    // 2s pole triangles plus 2s per band between rings, F = 2s(t−1); E = 3F/2.
    for (slices, stacks) in [(3u32, 2u32), (8, 6), (16, 9), (32, 16)] {
        let (verts, tris) = SphereMesh::LatLong { slices, stacks }.generate();
        let (s, t) = (slices as usize, stacks as usize);
        let (v, e, f) = closed_surface_counts(&tris, &format!("lat-long {s}×{t}"));
        assert_eq!(verts.len(), s * (t - 1) + 2, "{s}×{t}: vertices");
        assert_eq!(v, verts.len(), "{s}×{t}: every vertex on the surface");
        assert_eq!(f, 2 * s * (t - 1), "{s}×{t}: faces");
        assert_eq!(e, 3 * f / 2, "{s}×{t}: edges");
        assert_eq!(v as i64 - e as i64 + f as i64, 2, "{s}×{t}: V − E + F");
        let vol = closed_surface_volume(&tris, &Vec3s::from_vecs(&verts));
        assert!(vol > 0.0 && vol < 4.0 * PI / 3.0, "{s}×{t}: inscribed volume {vol} must lie in (0, 4π/3)");
    }
}

#[test]
fn uniform_sphere_volume_converges_to_four_thirds_pi_from_below() {
    // Level 0 is the octahedron with vertices ±eᵢ: volume exactly 4/3. Every level's
    // polyhedron is inscribed in the unit sphere, so its volume is below 4π/3, and
    // refining adds vertices on the sphere, so it grows monotonically; at level 5 the
    // deficit is below 1 %. The deficit of an inscribed triangulation falls as the
    // squared edge length, ≈ 4× per level: checked as a ratio in [3, 5] from level 2.
    let exact = 4.0 * PI / 3.0;
    let mut prev_deficit = f64::INFINITY;
    let mut prev_ratio = None;
    for level in 0..=5u32 {
        let (verts, tris) = SphereMesh::Uniform { level }.generate();
        let vol = closed_surface_volume(&tris, &Vec3s::from_vecs(&verts));
        let deficit = exact - vol;
        println!("level {level}: volume {vol:.8}, deficit {:.3e} ({:.3} %)", deficit, 100.0 * deficit / exact);
        if level == 0 {
            assert_close!(vol, 4.0 / 3.0, 1e-15, "octahedron volume");
        }
        assert!(deficit > 0.0, "level {level}: volume {vol} must stay below 4π/3");
        assert!(deficit < prev_deficit, "level {level}: volume must grow with level ({deficit:e} ≥ {prev_deficit:e})");
        if level >= 2 {
            let ratio = prev_deficit / deficit;
            assert!(
                (3.0..=5.0).contains(&ratio),
                "level {level}: deficit ratio {ratio:.3}, expected ≈ 4 (second-order)"
            );
            prev_ratio = Some(ratio);
        }
        prev_deficit = deficit;
    }
    assert!(prev_deficit / exact < 0.01, "level 5 deficit {:.3e} of 4π/3 must be < 1 %", prev_deficit / exact);
    assert!(prev_ratio.is_some());
}

fn obj_err(text: &str) -> ObjError {
    match obj::parse(text) {
        Ok(m) => panic!("expected an error for {text:?}, got a mesh with {} triangles", m.triangles.len()),
        Err(e) => e,
    }
}

#[test]
fn obj_errors_name_line_and_column() {
    let tri = "v 0 0 0\nv 1 0 0\nv 0 1 0\n";
    // Bad number: `x` starts at column 7 of line 2.
    let e = obj_err("v 0 0 0\nv 1.5 x 0\n");
    assert_eq!((e.line, e.column), (2, 7), "bad number: {e}");
    assert!(e.message.contains("`x`"), "message should quote the token: {e}");
    // Non-finite number.
    let e = obj_err("# header\nv 1 inf 0\n");
    assert_eq!((e.line, e.column), (2, 5), "non-finite number: {e}");
    // Index out of range: `4` at column 7 of line 4 (3 vertices defined).
    let e = obj_err(&format!("{tri}f 1 2 4\n"));
    assert_eq!((e.line, e.column), (4, 7), "index out of range: {e}");
    assert!(e.message.contains('4') && e.message.contains('3'), "message should give the index and the count: {e}");
    // Index 0 does not exist in OBJ's one-based numbering.
    let e = obj_err(&format!("{tri}f 0 1 2\n"));
    assert_eq!((e.line, e.column), (4, 3), "index zero: {e}");
    // Negative index beyond the start.
    let e = obj_err(&format!("{tri}f -1 -2 -4\n"));
    assert_eq!((e.line, e.column), (4, 9), "negative index out of range: {e}");
    // Face with two vertices.
    let e = obj_err(&format!("{tri}\nf 1 2\n"));
    assert_eq!((e.line, e.column), (5, 1), "two-vertex face: {e}");
    assert!(e.message.contains("at least 3"), "{e}");
    // Unknown statement, also when indented: the column is where the statement starts.
    let e = obj_err(&format!("{tri}frob 1 2\n"));
    assert_eq!((e.line, e.column), (4, 1), "unknown statement: {e}");
    assert!(e.message.contains("`frob`"), "{e}");
    let e = obj_err(&format!("{tri}   frob 1 2\n"));
    assert_eq!((e.line, e.column), (4, 4), "indented unknown statement: {e}");
    let e = obj_err(&format!("{tri}  f 1 2\n"));
    assert_eq!((e.line, e.column), (4, 3), "indented two-vertex face: {e}");
    // Missing coordinate: reported just after the last one.
    let e = obj_err("v 1 2\n");
    assert_eq!((e.line, e.column), (1, 6), "missing coordinate: {e}");
}

#[test]
fn obj_parses_relative_indices_polygons_and_ignored_statements() {
    // Negative indices count back from the last vertex defined (OBJ spec); a polygon
    // is split into a fan; texture/normal references and other statements are skipped.
    let text = "o thing\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0 # corner\nvn 0 0 1\ns off\nf -4/1/1 -3/2/1 -2//1 -1\n";
    let m = obj::parse(text).unwrap();
    assert_eq!(m.vertices.len(), 4);
    assert_eq!(m.triangles, vec![[0, 1, 2], [0, 2, 3]]);
}

#[test]
fn obj_concave_polygons_are_cut_into_triangles_inside_them() {
    // An L-shaped hexagon in the xz-plane, notch at x, z > 1 (area 3 of the 2 × 2
    // square). A fan from the first vertex would cover the notch.
    let text = "v 0 0 0\nv 2 0 0\nv 2 0 1\nv 1 0 1\nv 1 0 2\nv 0 0 2\nf 1 2 3 4 5 6\n";
    let m = obj::parse(text).unwrap();
    assert_eq!(m.triangles.len(), 4);
    let area = |t: &[u32; 3]| {
        let [a, b, c] = t.map(|i| m.vertices[i as usize]);
        (b - a).cross(c - a)
    };
    // Every triangle keeps the polygon's winding, and together they cover its area.
    let normal = (m.vertices[1] - m.vertices[0]).cross(m.vertices[5] - m.vertices[0]).normalize();
    let total: f64 = m.triangles.iter().map(|t| 0.5 * area(t).dot(normal)).sum();
    assert!(m.triangles.iter().all(|t| area(t).dot(normal) > 0.0), "{:?}", m.triangles);
    assert!((total - 3.0).abs() < 1e-12, "area {total}");
    // No triangle has its centroid in the notch.
    for t in &m.triangles {
        let c = t.iter().map(|&i| m.vertices[i as usize]).sum::<DVec3>() / 3.0;
        assert!(!(c.x > 1.0 && c.z > 1.0), "triangle {t:?} covers the notch");
    }
    assert!(m.face_lines.iter().all(|&l| l == 7));
    // A bow-tie crosses itself: no triangulation, an error naming its line.
    let e = obj_err("v 0 0 0\nv 1 1 0\nv 1 0 0\nv 0 1 0\nv 0.5 2 0\nf 1 2 3 4 5\n");
    assert_eq!(e.line, 6, "{e}");
    assert!(e.message.contains("crosses itself"), "{e}");
}

const CUBE_TRIANGLES: &str = "\
v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1
f 1 3 2\nf 1 4 3
f 5 6 7\nf 5 7 8
f 1 2 6\nf 1 6 5
f 4 8 7\nf 4 7 3
f 1 5 8\nf 1 8 4
f 2 3 7\nf 2 7 6
";

const CUBE_QUADS_INWARD: &str = "\
v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1
f 1 2 3 4\nf 5 8 7 6\nf 1 5 6 2\nf 4 3 7 8\nf 1 4 8 5\nf 2 6 7 3
";

#[test]
fn cube_obj_builds_closed_mesh_body_with_18_springs_and_unit_volume() {
    // A triangulated unit cube: 8 vertices, 12 triangles, 12 cube edges + 6 face
    // diagonals = 18 springs (V − E + F = 8 − 18 + 12 = 2), 12 of rest length 1 and
    // 6 of √2, enclosing volume 1 exactly (0/1 coordinates). The quad version wound
    // inward is split into the same 12 triangles and flipped outward: volume +1.
    for (label, text) in [("triangles", CUBE_TRIANGLES), ("quads, inward", CUBE_QUADS_INWARD)] {
        let mesh = obj::parse(text).unwrap();
        assert_eq!((mesh.vertices.len(), mesh.triangles.len()), (8, 12), "{label}: vertices, triangles");
        let mut b = WorldBuilder::new();
        let body = MeshBody {
            mesh,
            scale: 1.0,
            translate: DVec3::ZERO,
            mass: 1.0,
            structural: SpringParams::linear(100.0, 0.1),
            radius: 0.0,
        };
        body.build(&mut b, "cube").unwrap();
        let net = SpringNetwork::new(&b.springs, 8).unwrap();
        assert_eq!(net.len(), 18, "{label}: one spring per unique edge");
        let unit = (0..18).filter(|&s| net.rest_length(s) == 1.0).count();
        let diag = (0..18).filter(|&s| (net.rest_length(s) - 2f64.sqrt()).abs() < 1e-15).count();
        assert_eq!((unit, diag), (12, 6), "{label}: rest lengths (1, √2)");
        let w = b.build(SimParams::default()).unwrap();
        let cube = w.topology.body("cube").unwrap();
        assert!(cube.closed, "{label}: a closed mesh");
        let (v, e, f) = closed_surface_counts(&w.topology.triangles[cube.triangles.clone()], label);
        assert_eq!((v, e, f), (8, 18, 12), "{label}: (V, E, F)");
        assert_eq!(w.metrics().volume, Some(1.0), "{label}: enclosed volume");
    }
    // Scaled by 2 and moved: volume 8.
    let mut b = WorldBuilder::new();
    let body = MeshBody {
        mesh: obj::parse(CUBE_TRIANGLES).unwrap(),
        scale: 2.0,
        translate: DVec3::new(-3.0, 1.0, 0.5),
        mass: 1.0,
        structural: SpringParams::linear(100.0, 0.1),
        radius: 0.0,
    };
    body.build(&mut b, "cube").unwrap();
    let w = b.build(SimParams::default()).unwrap();
    assert_rel!(w.metrics().volume.unwrap(), 8.0, 1e-14, "scaled cube volume 2³");
}
