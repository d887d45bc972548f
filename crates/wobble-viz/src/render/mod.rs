//! Offline rendering without a GPU: `wobble render`, and pictures for experiments.
//!
//! A frame is first reduced to [`Geometry`] — positions, triangles, polylines,
//! particles drawn as dots, a colour per vertex, and the colliders worth showing
//! (a floor, spheres) — from a live [`World`] or from a PLY frame written by
//! `wobble run`. [`render`] then draws it with [`raster::Canvas`]: a z-buffer at
//! 2 × 2 supersampling, two-sided Lambert shading with a key light and ambient,
//! Gouraud (per-vertex normals, the default) or flat, lines and dots depth-tested,
//! and a checkered floor. Everything is plain single-threaded arithmetic, so the same
//! input gives the same bytes.

pub mod camera;
pub mod ply;
pub mod raster;

use std::path::Path;

use glam::DVec3;
use wobble::World;
use wobble::build::sphere::SphereMesh;
use wobble::constraint::{Collider, Shape};
use wobble::force::SpringNetwork;

use camera::{Camera, Projector};
use raster::{Canvas, Rgb};

/// Body colours, in body order.
pub const PALETTE: [Rgb; 6] = [
    [0.85, 0.35, 0.25],
    [0.25, 0.55, 0.85],
    [0.35, 0.70, 0.35],
    [0.90, 0.65, 0.20],
    [0.60, 0.40, 0.75],
    [0.30, 0.70, 0.70],
];
const SKY_TOP: Rgb = [0.93, 0.95, 0.98];
const SKY_BOTTOM: Rgb = [0.78, 0.82, 0.88];
const COLLIDER: Rgb = [0.70, 0.70, 0.72];
const LIGHT: DVec3 = DVec3::new(0.4, 0.8, 0.45);

/// How to shade triangles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shading {
    /// One normal per triangle.
    Flat,
    /// Per-vertex normals, interpolated colours (Gouraud).
    Smooth,
}

/// What to draw and how.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    /// Camera; `None` frames the geometry automatically.
    pub camera: Option<Camera>,
    /// Output width, pixels.
    pub width: usize,
    /// Output height, pixels.
    pub height: usize,
    /// Shading of triangles.
    pub shading: Shading,
    /// Colour by spring strain (blue compressed, white at rest, red stretched; full
    /// colour at |ε| = `strain_scale`) instead of by body.
    pub strain: bool,
    /// Strain that saturates the colour ramp.
    pub strain_scale: f64,
    /// Also draw every spring as a thin line.
    pub springs: bool,
}

impl Default for View {
    fn default() -> Self {
        Self {
            camera: None,
            width: 800,
            height: 600,
            shading: Shading::Smooth,
            strain: false,
            strain_scale: 0.1,
            springs: false,
        }
    }
}

/// A frame, reduced to what is drawn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Geometry {
    /// Vertex positions, m.
    pub positions: Vec<DVec3>,
    /// Colour per vertex.
    pub colors: Vec<Rgb>,
    /// Shaded triangles.
    pub triangles: Vec<[u32; 3]>,
    /// Polylines (chains, rings).
    pub lines: Vec<[u32; 2]>,
    /// Thin lines (springs), drawn when asked.
    pub springs: Vec<[u32; 2]>,
    /// Vertices drawn as dots (bodies with neither triangles nor lines).
    pub dots: Vec<u32>,
    /// Height of a floor plane facing +y, m.
    pub floor: Option<f64>,
    /// Sphere colliders (centre, radius), m.
    pub spheres: Vec<(DVec3, f64)>,
}

/// Colour of box and mesh colliders.
const COLLIDER_GREY: Rgb = [0.55, 0.57, 0.6];

/// Blue → white → red for strain −1 … 1 (in units of the scale).
#[must_use]
pub fn strain_color(e: f64) -> Rgb {
    let t = e.clamp(-1.0, 1.0) as f32;
    if t >= 0.0 { [1.0, 1.0 - 0.8 * t, 1.0 - 0.85 * t] } else { [1.0 + 0.8 * t, 1.0 + 0.6 * t, 1.0] }
}

/// Mean strain (r − L)/L of the springs around each particle (0 where none).
#[must_use]
pub fn vertex_strain(world: &World) -> Vec<f64> {
    let n = world.state.len();
    let (mut sum, mut count) = (vec![0.0; n], vec![0u32; n]);
    if let Some(net) = world.force_of::<SpringNetwork>() {
        for s in 0..net.len() {
            let e = net.strain_of(s, &world.state.x);
            let (a, b) = net.ends(s);
            for p in [a, b] {
                sum[p] += e;
                count[p] += 1;
            }
        }
    }
    sum.iter().zip(&count).map(|(s, &c)| if c > 0 { s / f64::from(c) } else { 0.0 }).collect()
}

impl Geometry {
    /// The current frame of `world`, coloured by body or by strain.
    #[must_use]
    pub fn from_world(world: &World, view: &View) -> Geometry {
        let n = world.state.len();
        let mut g = Geometry { positions: world.state.x.to_vecs(), colors: vec![PALETTE[0]; n], ..Geometry::default() };
        let strain = view.strain.then(|| vertex_strain(world));
        for (k, body) in world.topology.bodies.iter().enumerate() {
            for i in body.particles.clone() {
                g.colors[i] = match &strain {
                    Some(e) => strain_color(e[i] / view.strain_scale),
                    None => PALETTE[k % PALETTE.len()],
                };
            }
            if body.triangles.is_empty() && body.lines.is_empty() && body.kind != "rigid" {
                g.dots.extend(body.particles.clone().map(|i| i as u32));
            }
        }
        g.triangles = world.topology.triangles.clone();
        g.lines = world.topology.lines.clone();
        // Offset surfaces of oriented particles (001 §4.3) and rigid bodies' posed
        // shapes, in their particle's colour, appended after the particles as in the
        // frame files (so a run directory's frames line up with these vertices).
        let extra = wobble::model::DrawnSurfaces::of(&world.topology, &world.state);
        let colors: Vec<Rgb> = extra.particle.iter().map(|&p| g.colors[p]).collect();
        g.positions.extend(extra.x);
        g.colors.extend(colors);
        g.triangles.extend(extra.triangles);
        if view.springs {
            g.springs = world.segments();
        }
        g.add_colliders(
            world.constraints.iter().filter_map(|c| (c.as_ref() as &dyn std::any::Any).downcast_ref::<Collider>()),
            world.time(),
        );
        g
    }

    /// Adds the colliders worth drawing: the lowest upward-facing plane as a floor,
    /// and spheres.
    pub fn add_colliders<'a>(&mut self, colliders: impl Iterator<Item = &'a Collider>, t: f64) {
        for c in colliders {
            let d = c.motion.offset(t);
            match &c.shape {
                &Shape::Plane { point, normal } if normal.dot(DVec3::Y) > 0.999 => {
                    let y = point.y + d.y;
                    self.floor = Some(self.floor.map_or(y, |f| f.min(y)));
                }
                Shape::Sphere { center, radius } => self.spheres.push((*center + d, *radius)),
                Shape::Plane { .. } => {}
                shape @ (Shape::Box { .. } | Shape::Mesh(_)) => {
                    // Boxes and meshes as grey triangles after everything else.
                    let (vertices, triangles) = wobble::constraint::collider::surface_of(shape);
                    let first = self.positions.len() as u32;
                    self.positions.extend(vertices.iter().map(|v| *v + d));
                    self.colors.extend(std::iter::repeat_n(COLLIDER_GREY, vertices.len()));
                    self.triangles.extend(triangles.iter().map(|t| t.map(|i| i + first)));
                }
            }
        }
    }

    /// Bounding box of the vertices (and spheres).
    #[must_use]
    pub fn bounds(&self) -> (DVec3, DVec3) {
        let mut lo = DVec3::INFINITY;
        let mut hi = DVec3::NEG_INFINITY;
        for p in &self.positions {
            lo = lo.min(*p);
            hi = hi.max(*p);
        }
        for (c, r) in &self.spheres {
            lo = lo.min(*c - DVec3::splat(*r));
            hi = hi.max(*c + DVec3::splat(*r));
        }
        if !lo.is_finite() {
            return (DVec3::splat(-1.0), DVec3::splat(1.0));
        }
        (lo, hi)
    }
}

/// An 8-bit RGB image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Width, pixels.
    pub width: usize,
    /// Height, pixels.
    pub height: usize,
    /// Row-major RGB bytes.
    pub rgb: Vec<u8>,
}

impl Image {
    /// Saves as PNG.
    pub fn save_png(&self, path: &Path) -> std::io::Result<()> {
        crate::image::save_rgb_png(path, self.width as u32, self.height as u32, &self.rgb)
    }

    /// The pixel at (x, y).
    #[cfg(test)]
    #[must_use]
    pub fn pixel(&self, x: usize, y: usize) -> [u8; 3] {
        let i = 3 * (y * self.width + x);
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }
}

/// Lambert shading of `base` for a normal, two-sided (the normal is turned toward
/// the viewer), with ambient light.
fn shade(base: Rgb, normal: DVec3, to_eye: DVec3) -> Rgb {
    let n = if normal.dot(to_eye) < 0.0 { -normal } else { normal };
    let diffuse = n.normalize_or_zero().dot(LIGHT.normalize()).max(0.0) as f32;
    let k = 0.35 + 0.65 * diffuse;
    base.map(|c| c * k)
}

/// The camera a view will use for `g`.
#[must_use]
pub fn camera_for(g: &Geometry, view: &View) -> Camera {
    view.camera.unwrap_or_else(|| {
        let (lo, hi) = g.bounds();
        Camera::fit(lo, hi, view.width as f64 / view.height as f64)
    })
}

/// Draws `g` as seen by `view`.
#[must_use]
pub fn render(g: &Geometry, view: &View) -> Image {
    let camera = camera_for(g, view);
    let (lo, hi) = g.bounds();
    let radius = (0.5 * (hi - lo).length()).max(1e-3) + (camera.target - 0.5 * (lo + hi)).length();
    let proj = Projector::new(&camera, view.width, view.height, radius);
    let mut canvas = Canvas::new(view.width, view.height, SKY_TOP, SKY_BOTTOM);
    let eye = camera.position;

    if let Some(y) = g.floor {
        draw_floor(&mut canvas, &proj, y, 0.5 * (lo + hi), 1.5 * radius + 1.0, eye);
    }
    let ball = SphereMesh::Uniform { level: 3 }.generate();
    for &(c, r) in &g.spheres {
        let pos: Vec<DVec3> = ball.0.iter().map(|p| c + *p * r).collect();
        for t in &ball.1 {
            let v = t.map(|i| pos[i as usize]);
            let proj3 = v.map(|p| proj.project(p));
            if let [Some(a), Some(b), Some(d)] = proj3 {
                let col = t.map(|i| shade(COLLIDER, ball.0[i as usize], eye - pos[i as usize]));
                canvas.triangle([a, b, d], col);
            }
        }
    }

    // Per-vertex normals for smooth shading: area-weighted sums.
    let mut normals = vec![DVec3::ZERO; g.positions.len()];
    for t in &g.triangles {
        let [a, b, c] = t.map(|i| g.positions[i as usize]);
        let n = (b - a).cross(c - a);
        for &i in t {
            normals[i as usize] += n;
        }
    }
    let projected: Vec<Option<DVec3>> = g.positions.iter().map(|&p| proj.project(p)).collect();
    for t in &g.triangles {
        let idx = t.map(|i| i as usize);
        let (Some(a), Some(b), Some(c)) = (projected[idx[0]], projected[idx[1]], projected[idx[2]]) else { continue };
        let [pa, pb, pc] = idx.map(|i| g.positions[i]);
        let face = (pb - pa).cross(pc - pa);
        let centre = (pa + pb + pc) / 3.0;
        let col = match view.shading {
            Shading::Flat => [shade(avg(idx.map(|i| g.colors[i])), face, eye - centre); 3],
            Shading::Smooth => idx.map(|i| {
                let n = if normals[i].dot(face) < 0.0 { face } else { normals[i] };
                shade(g.colors[i], if n == DVec3::ZERO { face } else { n }, eye - g.positions[i])
            }),
        };
        canvas.triangle([a, b, c], col);
    }
    let line_px = (view.height as f64 / 300.0).max(1.5);
    for l in &g.lines {
        if let (Some(a), Some(b)) = (projected[l[0] as usize], projected[l[1] as usize]) {
            let c = g.colors[l[0] as usize].map(|v| v * 0.75);
            canvas.line(a, b, line_px, c);
        }
    }
    for s in &g.springs {
        if let (Some(a), Some(b)) = (projected[s[0] as usize], projected[s[1] as usize]) {
            canvas.line(a, b, 0.5 * line_px, [0.15, 0.15, 0.2]);
        }
    }
    for &i in &g.dots {
        if let Some(p) = projected[i as usize] {
            canvas.disc(p, 1.2 * line_px, g.colors[i as usize].map(|v| v * 0.8));
        }
    }
    Image { width: view.width, height: view.height, rgb: canvas.resolve() }
}

fn avg(c: [Rgb; 3]) -> Rgb {
    [0, 1, 2].map(|k| (c[0][k] + c[1][k] + c[2][k]) / 3.0)
}

/// A checkered floor at height `y` around `centre`, `half` metres each way.
fn draw_floor(canvas: &mut Canvas, proj: &Projector, y: f64, centre: DVec3, half: f64, eye: DVec3) {
    let tiles = 16;
    let size = 2.0 * half / tiles as f64;
    let (x0, z0) = (centre.x - half, centre.z - half);
    for i in 0..tiles {
        for j in 0..tiles {
            let base: Rgb = if (i + j) % 2 == 0 { [0.82, 0.82, 0.80] } else { [0.72, 0.72, 0.70] };
            let c = shade(base, DVec3::Y, eye - DVec3::new(x0, y, z0));
            let p = |a: f64, b: f64| proj.project(DVec3::new(x0 + a * size, y, z0 + b * size));
            let (fi, fj) = (i as f64, j as f64);
            if let (Some(a), Some(b), Some(cc), Some(d)) =
                (p(fi, fj), p(fi + 1.0, fj), p(fi + 1.0, fj + 1.0), p(fi, fj + 1.0))
            {
                // Pushed slightly back so bodies resting on the floor are drawn over it.
                let back = |v: DVec3| DVec3::new(v.x, v.y, v.z + 1e-5);
                canvas.triangle([back(a), back(b), back(cc)], [c; 3]);
                canvas.triangle([back(a), back(cc), back(d)], [c; 3]);
            }
        }
    }
}

/// Renders the current state of `world` to a PNG file: the pictures experiments
/// keep beside their data.
pub fn snapshot(world: &World, view: &View, path: &Path) -> Result<(), String> {
    render(&Geometry::from_world(world, view), view)
        .save_png(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Writes frames as an animated GIF, `delay_cs` hundredths of a second apart.
pub fn save_gif(path: &Path, frames: &[Image], delay_cs: u16) -> Result<(), String> {
    let first = frames.first().ok_or("no frames to animate")?;
    let file = std::fs::File::create(path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let mut enc = gif::Encoder::new(std::io::BufWriter::new(file), first.width as u16, first.height as u16, &[])
        .map_err(|e| e.to_string())?;
    enc.set_repeat(gif::Repeat::Infinite).map_err(|e| e.to_string())?;
    for img in frames {
        let mut frame = gif::Frame::from_rgb_speed(img.width as u16, img.height as u16, &img.rgb, 10);
        frame.delay = delay_cs;
        enc.write_frame(&frame).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BACKGROUND_TOLERANCE: i32 = 2;

    /// A square of side 2 in the z = 0 plane, centred on the origin, seen head-on
    /// from z = 5: with a 40° field of view it spans a known part of the picture.
    fn square(z: f64, color: Rgb) -> Geometry {
        Geometry {
            positions: vec![
                DVec3::new(-1.0, -1.0, z),
                DVec3::new(1.0, -1.0, z),
                DVec3::new(1.0, 1.0, z),
                DVec3::new(-1.0, 1.0, z),
            ],
            colors: vec![color; 4],
            triangles: vec![[0, 1, 2], [0, 2, 3]],
            ..Geometry::default()
        }
    }

    fn head_on(width: usize, height: usize) -> View {
        let camera = Camera { position: DVec3::new(0.0, 0.0, 5.0), target: DVec3::ZERO, up: DVec3::Y, fov_deg: 40.0 };
        View { camera: Some(camera), width, height, shading: Shading::Flat, ..View::default() }
    }

    fn is_background(img: &Image, x: usize, y: usize) -> bool {
        // The sky is a vertical grey-blue gradient: blue exceeds red by a few levels.
        let [r, g, b] = img.pixel(x, y);
        let sky = Canvas::new(1, img.height, SKY_TOP, SKY_BOTTOM).resolve();
        let [sr, sg, sb] = [sky[3 * y], sky[3 * y + 1], sky[3 * y + 2]];
        (i32::from(r) - i32::from(sr)).abs() <= BACKGROUND_TOLERANCE
            && (i32::from(g) - i32::from(sg)).abs() <= BACKGROUND_TOLERANCE
            && (i32::from(b) - i32::from(sb)).abs() <= BACKGROUND_TOLERANCE
    }

    #[test]
    fn image_has_the_requested_size_and_the_square_where_projection_puts_it() {
        let (w, h) = (200, 150);
        let img = render(&square(0.0, [0.9, 0.1, 0.1]), &head_on(w, h));
        assert_eq!((img.width, img.height, img.rgb.len()), (w, h, w * h * 3));
        // Half-height of the square on screen: focal · 1 / 5, focal = (h/2) / tan 20°.
        let focal = 0.5 * h as f64 / 20f64.to_radians().tan();
        let half = focal / 5.0;
        let (cx, cy) = (w as f64 / 2.0, h as f64 / 2.0);
        let inside = [(cx, cy), (cx + 0.8 * half, cy + 0.8 * half), (cx - 0.8 * half, cy - 0.8 * half)];
        for (x, y) in inside {
            let [r, g, b] = img.pixel(x as usize, y as usize);
            assert!(r > 2 * g && r > 2 * b, "({x}, {y}) should be red, is {:?}", [r, g, b]);
        }
        let outside = [(cx + 1.2 * half, cy), (cx, cy - 1.2 * half), (2.0, 2.0), (w as f64 - 3.0, h as f64 - 3.0)];
        for (x, y) in outside {
            assert!(
                is_background(&img, x as usize, y as usize),
                "({x}, {y}) should be sky, is {:?}",
                img.pixel(x as usize, y as usize)
            );
        }
    }

    #[test]
    fn nearer_surface_hides_farther_whatever_the_drawing_order() {
        let near = square(1.0, [0.1, 0.9, 0.1]);
        let far = square(0.0, [0.9, 0.1, 0.1]);
        for (first, second) in [(&near, &far), (&far, &near)] {
            let mut g = first.clone();
            let offset = g.positions.len() as u32;
            g.positions.extend(&second.positions);
            g.colors.extend(&second.colors);
            g.triangles.extend(second.triangles.iter().map(|t| t.map(|i| i + offset)));
            let img = render(&g, &head_on(120, 90));
            let [r, gr, b] = img.pixel(60, 45);
            assert!(gr > 2 * r && gr > 2 * b, "the near green square must cover the centre, got {:?}", [r, gr, b]);
        }
    }

    #[test]
    fn an_up_direction_along_the_view_still_gives_a_picture() {
        // Looking straight down −z with up = +z (or +y looking down −y): the basis
        // falls back to another axis instead of turning NaN and drawing nothing.
        for (position, up) in [(DVec3::new(0.0, 0.0, 5.0), DVec3::Z), (DVec3::new(0.0, 5.0, 0.0), DVec3::Y)] {
            let camera = Camera { position, target: DVec3::ZERO, up, fov_deg: 40.0 };
            let (r, u, f) = camera.basis();
            assert!(r.is_finite() && u.is_finite() && f.is_finite());
            let mut g = square(0.0, [0.9, 0.1, 0.1]);
            if position.y > 0.0 {
                for p in &mut g.positions {
                    *p = DVec3::new(p.x, 0.0, p.y);
                }
            }
            let img = render(&g, &View { camera: Some(camera), width: 80, height: 60, ..View::default() });
            let [red, gr, b] = img.pixel(40, 30);
            assert!(red > 2 * gr && red > 2 * b, "the square is in the middle, got {:?}", [red, gr, b]);
        }
    }

    /// Renders on a thread and fails if it takes more than `secs` (a hang).
    fn render_within(g: Geometry, view: View, secs: u64) -> Image {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(render(&g, &view));
        });
        rx.recv_timeout(std::time::Duration::from_secs(secs)).expect("rendering hung on a far-away vertex")
    }

    #[test]
    fn a_far_away_vertex_neither_hangs_nor_hides_the_visible_part() {
        // A square whose corner 2 is pulled 1e30 m off to the side, with its edges
        // drawn as lines: the lines and triangles must be clipped, not stamped or
        // scanned across 10^31 pixels.
        for far in [DVec3::new(1e30, 1.0, 0.0), DVec3::new(-1e30, 1e30, 0.0), DVec3::new(1e300, 0.0, 0.0)] {
            let mut g = square(0.0, [0.9, 0.1, 0.1]);
            g.positions[2] = far;
            g.lines = vec![[0, 1], [1, 2], [2, 3], [3, 0]];
            let t0 = std::time::Instant::now();
            let img = render_within(g, head_on(160, 120), 20);
            assert!(t0.elapsed().as_secs_f64() < 5.0, "took {:?} for {far}", t0.elapsed());
            // The triangle 0-2-3 and 0-1-2 still cover the lower-left corner region near (−1, −1).
            let drawn = (0..120)
                .flat_map(|y| (0..160).map(move |x| (x, y)))
                .filter(|&(x, y)| !is_background(&img, x, y))
                .count();
            assert!(drawn > 100, "only {drawn} pixels drawn for a far vertex at {far}");
        }
    }

    #[test]
    fn clipping_keeps_the_visible_part_of_a_segment_and_a_triangle() {
        let rect = [0.0, 100.0, 0.0, 100.0];
        let (a, b) = raster::clip_segment(DVec3::new(50.0, 50.0, 0.2), DVec3::new(1e30, 50.0, 0.4), rect).unwrap();
        assert_eq!(a, DVec3::new(50.0, 50.0, 0.2));
        assert!((b.x - 100.0).abs() < 1e-9 && (b.y - 50.0).abs() < 1e-9, "{b}");
        assert!(raster::clip_segment(DVec3::new(-5.0, -5.0, 0.0), DVec3::new(-1.0, 200.0, 0.0), rect).is_none());
        let poly = [
            (DVec3::new(10.0, 10.0, 0.0), [1.0; 3]),
            (DVec3::new(1e30, 10.0, 0.0), [0.0; 3]),
            (DVec3::new(10.0, 90.0, 0.0), [1.0; 3]),
        ];
        let clipped = raster::clip_polygon(&poly, rect);
        assert!(clipped.len() >= 3);
        for (p, _) in &clipped {
            assert!((0.0..=100.0).contains(&p.x) && (0.0..=100.0).contains(&p.y), "{p} outside");
        }
        let beyond = poly.map(|(p, c)| (p + DVec3::new(500.0, 0.0, 0.0), c));
        assert!(raster::clip_polygon(&beyond, rect).is_empty());
    }

    #[test]
    fn points_behind_the_camera_are_not_drawn() {
        let mut g = square(0.0, [0.9, 0.1, 0.1]);
        for p in &mut g.positions {
            p.z = 6.0; // behind the eye at z = 5, looking toward −z
        }
        let img = render(&g, &head_on(80, 60));
        assert!((0..60).all(|y| (0..80).all(|x| is_background(&img, x, y))));
    }

    #[test]
    fn rendering_is_deterministic_and_flat_differs_from_smooth_on_a_curved_surface() {
        let (pos, tris) = SphereMesh::Uniform { level: 2 }.generate();
        let g =
            Geometry { colors: vec![PALETTE[1]; pos.len()], positions: pos, triangles: tris, ..Geometry::default() };
        let view = head_on(96, 72);
        let flat = render(&g, &view);
        assert_eq!(flat, render(&g, &view));
        let smooth = render(&g, &View { shading: Shading::Smooth, ..view });
        assert_ne!(flat.rgb, smooth.rgb);
    }

    #[test]
    fn default_framing_keeps_the_whole_body_in_the_picture() {
        // Automatic camera: the border of the picture must be sky all round.
        let g = square(0.0, [0.9, 0.1, 0.1]);
        let img = render(&g, &View { width: 100, height: 80, ..View::default() });
        for x in 0..100 {
            assert!(is_background(&img, x, 0) && is_background(&img, x, 79));
        }
        for y in 0..80 {
            assert!(is_background(&img, 0, y) && is_background(&img, 99, y));
        }
        assert!(!is_background(&img, 50, 40));
    }

    #[test]
    fn strain_colours_run_from_blue_through_white_to_red() {
        assert_eq!(strain_color(0.0), [1.0, 1.0, 1.0]);
        let red = strain_color(1.0);
        let blue = strain_color(-1.0);
        assert!(red[0] > red[1] && red[0] > red[2]);
        assert!(blue[2] > blue[0] && blue[2] > blue[1]);
        assert_eq!(strain_color(5.0), red, "saturates");
    }
}
