//! `wobble render SCENE|RUN_DIR --out DIR`.

use std::path::{Path, PathBuf};

use glam::DVec3;
use wobble_scene::{Scene, Source};

use wobble_viz::render::camera::Camera;
use wobble_viz::render::{Geometry, Image, Shading, View, ply, render, save_gif};

/// Most frames in the animated GIF (longer runs are subsampled).
pub const GIF_MAX_FRAMES: usize = 60;
/// Width of the animated GIF, pixels.
pub const GIF_WIDTH: usize = 480;

/// Options of `wobble render`.
#[derive(Clone, Debug)]
pub struct RenderOptions {
    /// Output directory.
    pub out: PathBuf,
    /// Render every k-th step (scene) or frame file (run directory).
    pub every: Option<u64>,
    /// Image width, pixels (default: the scene's camera, else 800).
    pub width: Option<usize>,
    /// Image height, pixels (default: the scene's camera, else 600).
    pub height: Option<usize>,
    /// Also write `animation.gif`.
    pub gif: bool,
    /// Colour by spring strain.
    pub strain: bool,
    /// Draw springs.
    pub springs: bool,
    /// Flat shading instead of Gouraud.
    pub flat: bool,
    /// Simulated time for a scene, s.
    pub duration: Option<f64>,
    /// Steps for a scene.
    pub steps: Option<u64>,
}

/// The view a scene asks for, with command-line overrides.
fn view_for(scene: Option<&Scene>, opts: &RenderOptions) -> View {
    let cam = scene.and_then(|s| s.camera.clone());
    let mut view = View {
        width: opts.width.or(cam.as_ref().and_then(|c| c.width)).unwrap_or(800),
        height: opts.height.or(cam.as_ref().and_then(|c| c.height)).unwrap_or(600),
        strain: opts.strain,
        springs: opts.springs,
        shading: if opts.flat { Shading::Flat } else { Shading::Smooth },
        ..View::default()
    };
    view.camera = cam.map(|c| Camera { position: c.position, target: c.target, up: c.up, fov_deg: c.fov_deg });
    view
}

/// Fixes the camera for a whole animation: the scene's, or one framing the given
/// bounds (which include the floor, if any).
fn settle_camera(view: &mut View, lo: DVec3, hi: DVec3) {
    if view.camera.is_none() {
        view.camera = Some(Camera::fit(lo, hi, view.width as f64 / view.height as f64));
    }
}

fn write_png(dir: &Path, k: usize, img: &Image) -> Result<(), String> {
    let path = dir.join(format!("frame_{k:05}.png"));
    img.save_png(&path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Widens `lo`–`hi` to hold `g` (and its floor, if any).
fn grow(bounds: &mut (DVec3, DVec3), g: &Geometry) {
    let (a, b) = g.bounds();
    bounds.0 = bounds.0.min(a);
    bounds.1 = bounds.1.max(b);
    if let Some(y) = g.floor {
        bounds.0.y = bounds.0.y.min(y);
    }
}

/// Bounds nothing has widened yet.
const EMPTY: (DVec3, DVec3) = (DVec3::INFINITY, DVec3::NEG_INFINITY);

/// Where rendered frames go, one at a time: each is drawn, written as PNG and
/// dropped, so memory stays that of one frame (plus at most [`GIF_MAX_FRAMES`]
/// small GIF pictures) however long the run.
struct Sink<'a> {
    view: View,
    opts: &'a RenderOptions,
    /// GIF picture size and the stride between frames that go into it.
    gif: Option<(View, usize)>,
    gif_images: Vec<Image>,
    written: usize,
}

impl<'a> Sink<'a> {
    /// A sink for `expected` frames; the camera must be settled.
    fn new(view: View, opts: &'a RenderOptions, expected: usize) -> Result<Sink<'a>, String> {
        std::fs::create_dir_all(&opts.out).map_err(|e| format!("cannot create {}: {e}", opts.out.display()))?;
        let gif = opts.gif.then(|| {
            let stride = expected.div_ceil(GIF_MAX_FRAMES).max(1);
            let scale = GIF_WIDTH as f64 / view.width as f64;
            let small = View {
                width: GIF_WIDTH,
                height: ((view.height as f64 * scale).round() as usize).max(1),
                ..view.clone()
            };
            (small, stride)
        });
        Ok(Sink { view, opts, gif, gif_images: Vec::new(), written: 0 })
    }

    /// Draws and writes the next frame.
    fn push(&mut self, g: &Geometry) -> Result<(), String> {
        write_png(&self.opts.out, self.written, &render(g, &self.view))?;
        if let Some((small, stride)) = &self.gif
            && self.written.is_multiple_of(*stride)
        {
            self.gif_images.push(render(g, small));
        }
        self.written += 1;
        Ok(())
    }

    /// Writes the GIF, if asked; returns the number of frames written.
    fn finish(self, dt_frame: f64) -> Result<usize, String> {
        if let Some((_, stride)) = self.gif {
            let delay = ((dt_frame * stride as f64 * 100.0).round() as u16).max(2);
            save_gif(&self.opts.out.join("animation.gif"), &self.gif_images, delay)?;
        }
        Ok(self.written)
    }
}

/// Runs `scene` for `steps`, calling `frame` with the geometry of step 0 and of
/// every `every`-th step; stops at the first step error and returns it.
fn simulate(
    scene: &Scene,
    view: &View,
    steps: u64,
    every: u64,
    mut frame: impl FnMut(&Geometry) -> Result<(), String>,
) -> Result<Option<wobble::StepError>, String> {
    let mut built = scene.build().map_err(|e| e.to_string())?;
    let world = &mut built.world;
    frame(&Geometry::from_world(world, view))?;
    for k in 1..=steps {
        if let Err(e) = world.step() {
            return Ok(Some(e));
        }
        if k % every == 0 {
            frame(&Geometry::from_world(world, view))?;
        }
    }
    Ok(None)
}

/// Runs `scene` and renders every k-th step, streaming: without a `[camera]` the
/// run is simulated twice (it is deterministic), once to frame the whole motion
/// and once to draw it, so no frame is held in memory.
pub fn render_scene(scene: &Scene, opts: &RenderOptions) -> Result<usize, String> {
    let dt = scene.simulation.dt;
    let steps = opts
        .steps
        .or_else(|| opts.duration.map(|d| (d / dt - 1e-9).ceil().max(0.0) as u64))
        .unwrap_or_else(|| scene.simulation.total_steps());
    if steps > wobble_scene::input::MAX_STEPS {
        return Err(format!("{steps} steps exceed the limit of {} steps", wobble_scene::input::MAX_STEPS));
    }
    let every = opts
        .every
        .or(scene.output.frame_every.filter(|&k| k > 0))
        .unwrap_or_else(|| ((1.0 / (25.0 * dt)).round() as u64).max(1));
    let mut view = view_for(Some(scene), opts);
    if view.camera.is_none() {
        let mut bounds = EMPTY;
        simulate(scene, &view, steps, every, |g| {
            grow(&mut bounds, g);
            Ok(())
        })?;
        settle_camera(&mut view, bounds.0, bounds.1);
    }
    let expected = usize::try_from(steps / every + 1).unwrap_or(usize::MAX);
    let mut sink = Sink::new(view.clone(), opts, expected)?;
    let failure = simulate(scene, &view, steps, every, |g| sink.push(g))?;
    let n = sink.finish(every as f64 * dt)?;
    match failure {
        Some(e) => Err(format!("{e}\nthe {n} frames before the failure are in {}", opts.out.display())),
        None => Ok(n),
    }
}

/// Renders the PLY frames of a run directory written by `wobble run`.
pub fn render_run_dir(dir: &Path, opts: &RenderOptions) -> Result<usize, String> {
    let frames_dir = dir.join("frames");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&frames_dir)
        .map_err(|e| {
            format!(
                "{} is not a run directory (no frames/: {e}); run `wobble run SCENE --out DIR` first",
                dir.display()
            )
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("ply"))
        .filter(|p| !p.to_string_lossy().ends_with(".lines.ply"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("{} holds no PLY frames; run with `formats = [\"ply\"]`", frames_dir.display()));
    }
    let every = opts.every.unwrap_or(1).max(1) as usize;
    // The run's scene, when it can still be read, gives colours per body, colliders
    // and the camera; otherwise the frames alone are drawn.
    // Both are read under the scene reader's limits (regular files, size cap, UTF-8).
    let capped = |name: &str| wobble_scene::input::read_text(&dir.join(name), wobble_scene::input::MAX_SCENE_BYTES);
    let summary: Option<serde_json::Value> = capped("summary.json").ok().and_then(|s| serde_json::from_str(&s).ok());
    let scene = capped("scene.toml").ok().and_then(|text| {
        let base =
            summary.as_ref().and_then(|s| s["scene_dir"].as_str()).map_or_else(|| dir.to_path_buf(), PathBuf::from);
        Scene::parse(Source::new(dir.join("scene.toml").display().to_string(), text), base).ok()
    });
    let frame_dt = summary.as_ref().and_then(|s| Some(s["dt"].as_f64()? * s["frame_every"].as_f64()?)).unwrap_or(0.04);
    let view = view_for(scene.as_ref(), opts);
    let mut world = scene.as_ref().and_then(|s| s.build().ok()).map(|b| b.world);
    // Frame by frame: read, draw, write, drop. A first pass frames the whole run
    // when no camera is given, a second draws it.
    let base_view = view.clone();
    let mut geometry_of = |path: &PathBuf| -> Result<Geometry, String> {
        let frame = ply::read_with_lines(path)?;
        // Frames hold the particles, then the rigid bodies' posed surfaces in the
        // order `Geometry::from_world` appends them: take every vertex from the file.
        let from_world = world.as_mut().filter(|w| w.state.len() <= frame.vertices.len()).and_then(|w| {
            for (i, p) in frame.vertices.iter().take(w.state.len()).enumerate() {
                w.state.x.set(i, *p);
            }
            let mut g = Geometry::from_world(w, &base_view);
            (g.positions.len() == frame.vertices.len()).then(|| {
                g.positions.clone_from(&frame.vertices);
                g
            })
        });
        let g = match from_world {
            Some(g) => g,
            None => Geometry {
                colors: vec![wobble_viz::render::PALETTE[0]; frame.vertices.len()],
                dots: if frame.faces.is_empty() && frame.edges.is_empty() {
                    (0..frame.vertices.len() as u32).collect()
                } else {
                    Vec::new()
                },
                positions: frame.vertices,
                triangles: frame.faces,
                lines: frame.edges,
                ..Geometry::default()
            },
        };
        Ok(g)
    };
    let mut view = view;
    if view.camera.is_none() {
        let mut bounds = EMPTY;
        for path in files.iter().step_by(every) {
            grow(&mut bounds, &geometry_of(path)?);
        }
        settle_camera(&mut view, bounds.0, bounds.1);
    }
    let mut sink = Sink::new(view, opts, files.len().div_ceil(every))?;
    for path in files.iter().step_by(every) {
        sink.push(&geometry_of(path)?)?;
    }
    sink.finish(frame_dt * every as f64)
}
