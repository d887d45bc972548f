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
        FrameFormat::Vtu => write_vtu(world, buf),
    }
}

fn ply_header(w: &mut impl Write, world: &World, what: &str, vertices: usize) -> std::io::Result<()> {
    writeln!(
        w,
        "ply\nformat binary_little_endian 1.0\ncomment wobble {what} t={} step={}",
        world.time(),
        world.steps()
    )?;
    writeln!(w, "element vertex {vertices}\nproperty double x\nproperty double y\nproperty double z")
}

/// Binary little-endian PLY: vertices as doubles, triangles as faces. Elements
/// with no items are left out (several readers reject `element face 0`);
/// polylines go to a file of their own ([`write_ply_lines`]), since readers of
/// surfaces ignore or reject PLY edges.
pub fn write_ply(world: &World, w: &mut impl Write) -> std::io::Result<()> {
    let (x, tris) = (&world.state.x, &world.topology.triangles);
    let extra = DrawnSurfaces::of(&world.topology, &world.state);
    ply_header(w, world, "frame", x.len() + extra.x.len())?;
    let faces = tris.len() + extra.triangles.len();
    if faces > 0 {
        writeln!(w, "element face {faces}\nproperty list uchar int vertex_indices")?;
    }
    writeln!(w, "end_header")?;
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
    Ok(())
}

/// The polylines of a frame (chains, rods, wires) as a PLY of the particles with
/// each segment a two-index face, written as `frame_N.lines.ply` beside the frame
/// when the world has any. PLY's `edge` element would say it better, but meshio
/// rejects files that have one; two-index faces are read by meshio (as lines),
/// plyfile and VTK alike. Returns false (writing nothing) when there are none.
pub fn write_ply_lines(world: &World, w: &mut impl Write) -> std::io::Result<bool> {
    let (x, lines) = (&world.state.x, &world.topology.lines);
    if lines.is_empty() {
        return Ok(false);
    }
    ply_header(w, world, "polylines", x.len())?;
    writeln!(w, "element face {}\nproperty list uchar int vertex_indices\nend_header", lines.len())?;
    for p in x.iter() {
        for c in p.to_array() {
            w.write_all(&c.to_le_bytes())?;
        }
    }
    for l in lines {
        w.write_all(&[2u8])?;
        for &i in l {
            w.write_all(&(i as i32).to_le_bytes())?;
        }
    }
    Ok(true)
}

/// VTK XML unstructured grid (`.vtu`), binary, zlib-compressed, appended raw:
/// points, triangles (VTK cell type 5) and line segments (type 3), with
/// velocity (m/s), speed (m/s), pinned flag and body index as point data.
/// ParaView, VTK's readers and meshio read it; [`pvd_index`] makes a run one time
/// series.
pub fn write_vtu(world: &World, w: &mut impl Write) -> std::io::Result<()> {
    let (x, v, tris, lines) = (&world.state.x, &world.state.v, &world.topology.triangles, &world.topology.lines);
    let extra = DrawnSurfaces::of(&world.topology, &world.state);
    let n = x.len() + extra.x.len();
    let owner = |k: usize| if k < x.len() { k } else { extra.particle[k - x.len()] };
    let mut points = Vec::with_capacity(n * 24);
    for p in x.iter().chain(extra.x.iter().copied()) {
        for c in p.to_array() {
            points.extend_from_slice(&c.to_le_bytes());
        }
    }
    let (mut velocity, mut speed) = (Vec::with_capacity(n * 24), Vec::with_capacity(n * 8));
    for q in v.iter().chain(extra.v.iter().copied()) {
        for c in q.to_array() {
            velocity.extend_from_slice(&c.to_le_bytes());
        }
        speed.extend_from_slice(&q.length().to_le_bytes());
    }
    let pinned: Vec<u8> = (0..n).map(|k| u8::from(world.particles.pinned[owner(k)])).collect();
    let mut body = Vec::with_capacity(n * 4);
    for k in 0..n {
        let i = owner(k);
        let b = world.topology.bodies.iter().position(|b| b.particles.contains(&i)).map_or(-1, |b| b as i32);
        body.extend_from_slice(&b.to_le_bytes());
    }
    let cells = tris.len() + extra.triangles.len() + lines.len();
    let (mut conn, mut offsets, mut types) = (Vec::new(), Vec::with_capacity(cells * 8), Vec::with_capacity(cells));
    let mut end = 0i64;
    for t in tris.iter().chain(&extra.triangles) {
        for &i in t {
            conn.extend_from_slice(&i64::from(i).to_le_bytes());
        }
        end += 3;
        offsets.extend_from_slice(&end.to_le_bytes());
        types.push(5u8);
    }
    for l in lines {
        for &i in l {
            conn.extend_from_slice(&i64::from(i).to_le_bytes());
        }
        end += 2;
        offsets.extend_from_slice(&end.to_le_bytes());
        types.push(3u8);
    }
    let mut appended: Vec<u8> = Vec::new();
    let mut arrays = String::new();
    let add = |appended: &mut Vec<u8>, tag: &str, data: &[u8]| -> std::io::Result<String> {
        let offset = appended.len();
        zlib_block(appended, data)?;
        Ok(format!("<DataArray {tag} format=\"appended\" offset=\"{offset}\"/>\n"))
    };
    arrays.push_str("<PointData Vectors=\"velocity\" Scalars=\"speed\">\n");
    arrays += &add(&mut appended, "type=\"Float64\" Name=\"velocity\" NumberOfComponents=\"3\"", &velocity)?;
    arrays += &add(&mut appended, "type=\"Float64\" Name=\"speed\"", &speed)?;
    arrays += &add(&mut appended, "type=\"UInt8\" Name=\"pinned\"", &pinned)?;
    arrays += &add(&mut appended, "type=\"Int32\" Name=\"body\"", &body)?;
    arrays.push_str("</PointData>\n<Points>\n");
    arrays += &add(&mut appended, "type=\"Float64\" Name=\"Points\" NumberOfComponents=\"3\"", &points)?;
    arrays.push_str("</Points>\n<Cells>\n");
    arrays += &add(&mut appended, "type=\"Int64\" Name=\"connectivity\"", &conn)?;
    arrays += &add(&mut appended, "type=\"Int64\" Name=\"offsets\"", &offsets)?;
    arrays += &add(&mut appended, "type=\"UInt8\" Name=\"types\"", &types)?;
    arrays.push_str("</Cells>\n");
    write!(
        w,
        "<?xml version=\"1.0\"?>\n<!-- wobble frame t={} step={} -->\n<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\" compressor=\"vtkZLibDataCompressor\">\n<UnstructuredGrid>\n<Piece NumberOfPoints=\"{n}\" NumberOfCells=\"{cells}\">\n{arrays}</Piece>\n</UnstructuredGrid>\n<AppendedData encoding=\"raw\">\n_",
        world.time(),
        world.steps()
    )?;
    w.write_all(&appended)?;
    write!(w, "\n</AppendedData>\n</VTKFile>\n")
}

/// Appends `data` as one zlib-compressed block with VTK's header (UInt64: block
/// count 1, block size, last block size, compressed size).
fn zlib_block(out: &mut Vec<u8>, data: &[u8]) -> std::io::Result<()> {
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data)?;
    let compressed = enc.finish()?;
    for v in [1u64, data.len() as u64, data.len() as u64, compressed.len() as u64] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&compressed);
    Ok(())
}

/// A ParaView data-set collection (`.pvd`) listing `frames` (file name relative
/// to the index, simulated time in s): opening it plays the run as a time series
/// with real times.
#[must_use]
pub fn pvd_index(frames: &[(String, f64)]) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n<Collection>\n",
    );
    for (file, t) in frames {
        s.push_str(&format!("<DataSet timestep=\"{t:e}\" part=\"0\" file=\"{file}\"/>\n"));
    }
    s.push_str("</Collection>\n</VTKFile>\n");
    s
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
