//! Frame files: the positions and surfaces of every body at one instant, in formats
//! other tools read — PLY (binary, MeshLab/Blender), OBJ (anything), legacy VTK
//! polydata (ParaView, with velocity and pin flags as point data).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use wobble::World;
use wobble_scene::FrameFormat;

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
    writeln!(
        w,
        "ply\nformat binary_little_endian 1.0\ncomment wobble frame t={} step={}",
        world.time(),
        world.steps()
    )?;
    writeln!(w, "element vertex {}\nproperty double x\nproperty double y\nproperty double z", x.len())?;
    writeln!(w, "element face {}\nproperty list uchar int vertex_indices", tris.len())?;
    writeln!(w, "element edge {}\nproperty int vertex1\nproperty int vertex2\nend_header", lines.len())?;
    for i in 0..x.len() {
        for c in x.get(i).to_array() {
            w.write_all(&c.to_le_bytes())?;
        }
    }
    for t in tris {
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
    for p in world.state.x.iter() {
        writeln!(w, "v {} {} {}", p.x, p.y, p.z)?;
    }
    for body in &world.topology.bodies {
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
    writeln!(
        w,
        "# vtk DataFile Version 3.0\nwobble frame t={} step={}\nASCII\nDATASET POLYDATA",
        world.time(),
        world.steps()
    )?;
    writeln!(w, "POINTS {} double", x.len())?;
    for p in x.iter() {
        writeln!(w, "{} {} {}", p.x, p.y, p.z)?;
    }
    if !tris.is_empty() {
        writeln!(w, "POLYGONS {} {}", tris.len(), 4 * tris.len())?;
        for t in tris {
            writeln!(w, "3 {} {} {}", t[0], t[1], t[2])?;
        }
    }
    if !lines.is_empty() {
        writeln!(w, "LINES {} {}", lines.len(), 3 * lines.len())?;
        for l in lines {
            writeln!(w, "2 {} {}", l[0], l[1])?;
        }
    }
    writeln!(w, "POINT_DATA {}\nVECTORS velocity double", x.len())?;
    for q in v.iter() {
        writeln!(w, "{} {} {}", q.x, q.y, q.z)?;
    }
    writeln!(w, "SCALARS pinned int 1\nLOOKUP_TABLE default")?;
    for &p in &world.particles.pinned {
        writeln!(w, "{}", u8::from(p))?;
    }
    writeln!(w, "SCALARS body int 1\nLOOKUP_TABLE default")?;
    for i in 0..x.len() {
        let b = world.topology.bodies.iter().position(|b| b.particles.contains(&i)).map_or(-1, |b| b as i64);
        writeln!(w, "{b}")?;
    }
    Ok(())
}
