//! Frame files: the positions and surfaces of every body at one instant, in formats
//! other tools read — PLY (binary, MeshLab/Blender), OBJ (anything), legacy VTK
//! polydata (ParaView, with velocity and pin flags as point data).
//!
//! Rigid bodies are one particle each; their drawn surfaces (a box's 12 triangles, a
//! ball's latitude–longitude mesh) are posed at the body's position and orientation
//! and appended after the particles as extra vertices and triangles.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use glam::DVec3;
use wobble::World;
use wobble::model::rigid::rigid_surfaces;
use wobble_scene::FrameFormat;

/// The rigid bodies' surfaces at the current state: world-space vertices (indexed
/// after the particles), triangles, and per rigid body its vertex and triangle
/// ranges in those lists.
struct RigidMesh {
    vertices: Vec<DVec3>,
    triangles: Vec<[u32; 3]>,
    /// (body particle, vertex range, triangle range) per rigid body.
    parts: Vec<(usize, std::ops::Range<usize>, std::ops::Range<usize>)>,
}

fn rigid_mesh(world: &World) -> RigidMesh {
    let n = world.state.len() as u32;
    let mut mesh = RigidMesh { vertices: Vec::new(), triangles: Vec::new(), parts: Vec::new() };
    for r in &world.topology.rigids {
        let (v, t) = rigid_surfaces(std::slice::from_ref(r), &world.state, n + mesh.vertices.len() as u32);
        let (v0, t0) = (mesh.vertices.len(), mesh.triangles.len());
        mesh.vertices.extend(v);
        mesh.triangles.extend(t);
        mesh.parts.push((r.particle, v0..mesh.vertices.len(), t0..mesh.triangles.len()));
    }
    mesh
}

/// Writes the current frame of `world` to `path` in `format`.
pub fn write_frame(world: &World, format: FrameFormat, path: &Path) -> std::io::Result<()> {
    let mut w = BufWriter::new(File::create(path)?);
    match format {
        FrameFormat::Ply => write_ply(world, &mut w)?,
        FrameFormat::Obj => write_obj(world, &mut w)?,
        FrameFormat::Vtk => write_vtk(world, &mut w)?,
    }
    w.flush()
}

/// Binary little-endian PLY: vertices as doubles, triangles as faces, polylines as
/// edges.
pub fn write_ply(world: &World, w: &mut impl Write) -> std::io::Result<()> {
    let (x, tris, lines) = (&world.state.x, &world.topology.triangles, &world.topology.lines);
    let rigid = rigid_mesh(world);
    writeln!(
        w,
        "ply\nformat binary_little_endian 1.0\ncomment wobble frame t={} step={}",
        world.time(),
        world.steps()
    )?;
    writeln!(
        w,
        "element vertex {}\nproperty double x\nproperty double y\nproperty double z",
        x.len() + rigid.vertices.len()
    )?;
    writeln!(w, "element face {}\nproperty list uchar int vertex_indices", tris.len() + rigid.triangles.len())?;
    writeln!(w, "element edge {}\nproperty int vertex1\nproperty int vertex2\nend_header", lines.len())?;
    for p in x.iter().chain(rigid.vertices.iter().copied()) {
        for c in p.to_array() {
            w.write_all(&c.to_le_bytes())?;
        }
    }
    for t in tris.iter().chain(&rigid.triangles) {
        w.write_all(&[3u8])?;
        for &i in t {
            w.write_all(&(i as i32).to_le_bytes())?;
        }
    }
    for l in lines {
        for &i in l {
            w.write_all(&(i as i32).to_le_bytes())?;
        }
    }
    Ok(())
}

/// Wavefront OBJ: `v`, `f` and `l` lines, one `o` group per body.
pub fn write_obj(world: &World, w: &mut impl Write) -> std::io::Result<()> {
    writeln!(w, "# wobble frame t={} step={}", world.time(), world.steps())?;
    let rigid = rigid_mesh(world);
    for p in world.state.x.iter().chain(rigid.vertices.iter().copied()) {
        writeln!(w, "v {} {} {}", p.x, p.y, p.z)?;
    }
    for body in &world.topology.bodies {
        writeln!(w, "o {}", body.name)?;
        for (_, _, tris) in rigid.parts.iter().filter(|(p, _, _)| body.particles.contains(p)) {
            for t in &rigid.triangles[tris.clone()] {
                writeln!(w, "f {} {} {}", t[0] + 1, t[1] + 1, t[2] + 1)?;
            }
        }
        for t in &world.topology.triangles[body.triangles.clone()] {
            writeln!(w, "f {} {} {}", t[0] + 1, t[1] + 1, t[2] + 1)?;
        }
        for l in &world.topology.lines[body.lines.clone()] {
            writeln!(w, "l {} {}", l[0] + 1, l[1] + 1)?;
        }
    }
    Ok(())
}

/// Legacy VTK polydata (ASCII) with velocity, speed, pinned flag and body index.
pub fn write_vtk(world: &World, w: &mut impl Write) -> std::io::Result<()> {
    let (x, v, lines) = (&world.state.x, &world.state.v, &world.topology.lines);
    let rigid = rigid_mesh(world);
    let tris: Vec<[u32; 3]> = world.topology.triangles.iter().chain(&rigid.triangles).copied().collect();
    let points = x.len() + rigid.vertices.len();
    // The rigid surface vertices' body particle, for their point data.
    let owner: Vec<usize> = rigid.parts.iter().flat_map(|(p, verts, _)| std::iter::repeat_n(*p, verts.len())).collect();
    writeln!(
        w,
        "# vtk DataFile Version 3.0\nwobble frame t={} step={}\nASCII\nDATASET POLYDATA",
        world.time(),
        world.steps()
    )?;
    writeln!(w, "POINTS {points} double")?;
    for p in x.iter().chain(rigid.vertices.iter().copied()) {
        writeln!(w, "{} {} {}", p.x, p.y, p.z)?;
    }
    if !tris.is_empty() {
        writeln!(w, "POLYGONS {} {}", tris.len(), 4 * tris.len())?;
        for t in &tris {
            writeln!(w, "3 {} {} {}", t[0], t[1], t[2])?;
        }
    }
    if !lines.is_empty() {
        writeln!(w, "LINES {} {}", lines.len(), 3 * lines.len())?;
        for l in lines {
            writeln!(w, "2 {} {}", l[0], l[1])?;
        }
    }
    writeln!(w, "POINT_DATA {points}\nVECTORS velocity double")?;
    for q in v.iter() {
        writeln!(w, "{} {} {}", q.x, q.y, q.z)?;
    }
    // A rigid surface point moves with v + ω × (p − x).
    for (p, &b) in rigid.vertices.iter().zip(&owner) {
        let q = v.get(b) + world.state.w.get(b).cross(*p - x.get(b));
        writeln!(w, "{} {} {}", q.x, q.y, q.z)?;
    }
    writeln!(w, "SCALARS pinned int 1\nLOOKUP_TABLE default")?;
    for &p in world.particles.pinned.iter().chain(owner.iter().map(|&b| &world.particles.pinned[b])) {
        writeln!(w, "{}", u8::from(p))?;
    }
    writeln!(w, "SCALARS body int 1\nLOOKUP_TABLE default")?;
    for i in (0..x.len()).chain(owner.iter().copied()) {
        let b = world.topology.bodies.iter().position(|b| b.particles.contains(&i)).map_or(-1, |b| b as i64);
        writeln!(w, "{b}")?;
    }
    Ok(())
}
