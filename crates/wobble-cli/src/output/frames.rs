//! Frame files: the positions and surfaces of every body at one instant, in formats
//! other tools read — PLY (binary, MeshLab/Blender), OBJ (anything), legacy VTK
//! polydata (ParaView, with velocity and pin flags as point data). Offset surfaces
//! of oriented particles (001 §4.3) and the drawn surfaces of rigid bodies (a box's
//! 12 triangles, a ball's latitude–longitude mesh, posed at the body's position and
//! orientation) follow the particles as extra vertices and triangles
//! ([`super::offsets`]).

use std::io::Write;

use wobble::World;
use wobble_scene::FrameFormat;

use wobble::model::DrawnSurfaces;

/// Encodes the current frame of `world` in `format` into `buf` (cleared first; its
/// allocation is reused from frame to frame).
pub fn encode_frame(world: &World, format: FrameFormat, buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.clear();
    match format {
        FrameFormat::Ply => write_ply(world, buf),
        FrameFormat::Obj => write_obj(world, buf),
        FrameFormat::Vtk => write_vtk(world, buf),
    }
}

/// Binary little-endian PLY: vertices as doubles, triangles as faces, polylines as
/// edges.
pub fn write_ply(world: &World, w: &mut impl Write) -> std::io::Result<()> {
    let (x, tris, lines) = (&world.state.x, &world.topology.triangles, &world.topology.lines);
    let extra = DrawnSurfaces::of(&world.topology, &world.state);
    writeln!(
        w,
        "ply\nformat binary_little_endian 1.0\ncomment wobble frame t={} step={}",
        world.time(),
        world.steps()
    )?;
    writeln!(w, "element vertex {}\nproperty double x\nproperty double y\nproperty double z", x.len() + extra.x.len())?;
    writeln!(w, "element face {}\nproperty list uchar int vertex_indices", tris.len() + extra.triangles.len())?;
    writeln!(w, "element edge {}\nproperty int vertex1\nproperty int vertex2\nend_header", lines.len())?;
    for p in x.iter().chain(extra.x.iter().copied()) {
        for c in p.to_array() {
            w.write_all(&c.to_le_bytes())?;
        }
    }
    for t in tris.iter().chain(&extra.triangles) {
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
    let extra = DrawnSurfaces::of(&world.topology, &world.state);
    for p in world.state.x.iter().chain(extra.x.iter().copied()) {
        writeln!(w, "v {} {} {}", p.x, p.y, p.z)?;
    }
    for (name, range) in &extra.groups {
        writeln!(w, "o {name}")?;
        for t in &extra.triangles[range.clone()] {
            writeln!(w, "f {} {} {}", t[0] + 1, t[1] + 1, t[2] + 1)?;
        }
    }
    // Bodies with neither triangles nor lines (point clouds; rigid bodies, drawn
    // above) get no empty group.
    for body in world.topology.bodies.iter().filter(|b| !b.triangles.is_empty() || !b.lines.is_empty()) {
        writeln!(w, "o {}", body.name)?;
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
    let (x, v, tris, lines) = (&world.state.x, &world.state.v, &world.topology.triangles, &world.topology.lines);
    let extra = DrawnSurfaces::of(&world.topology, &world.state);
    let n = x.len() + extra.x.len();
    let n_tris = tris.len() + extra.triangles.len();
    writeln!(
        w,
        "# vtk DataFile Version 3.0\nwobble frame t={} step={}\nASCII\nDATASET POLYDATA",
        world.time(),
        world.steps()
    )?;
    writeln!(w, "POINTS {n} double")?;
    for p in x.iter().chain(extra.x.iter().copied()) {
        writeln!(w, "{} {} {}", p.x, p.y, p.z)?;
    }
    if n_tris > 0 {
        writeln!(w, "POLYGONS {} {}", n_tris, 4 * n_tris)?;
        for t in tris.iter().chain(&extra.triangles) {
            writeln!(w, "3 {} {} {}", t[0], t[1], t[2])?;
        }
    }
    if !lines.is_empty() {
        writeln!(w, "LINES {} {}", lines.len(), 3 * lines.len())?;
        for l in lines {
            writeln!(w, "2 {} {}", l[0], l[1])?;
        }
    }
    writeln!(w, "POINT_DATA {n}\nVECTORS velocity double")?;
    for q in v.iter().chain(extra.v.iter().copied()) {
        writeln!(w, "{} {} {}", q.x, q.y, q.z)?;
    }
    // Offset vertices take their particle's pin flag and body.
    let owner = |k: usize| if k < x.len() { k } else { extra.particle[k - x.len()] };
    writeln!(w, "SCALARS pinned int 1\nLOOKUP_TABLE default")?;
    for k in 0..n {
        writeln!(w, "{}", u8::from(world.particles.pinned[owner(k)]))?;
    }
    writeln!(w, "SCALARS body int 1\nLOOKUP_TABLE default")?;
    for i in (0..n).map(owner) {
        let b = world.topology.bodies.iter().position(|b| b.particles.contains(&i)).map_or(-1, |b| b as i64);
        writeln!(w, "{b}")?;
    }
    Ok(())
}
