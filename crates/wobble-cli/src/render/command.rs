//! `wobble render SCENE|RUN_DIR --out DIR`.

use std::path::{Path, PathBuf};

use glam::DVec3;
use wobble_scene::{Scene, Source};

use super::camera::Camera;
use super::{Geometry, Image, Shading, View, ply, render, save_gif};

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

/// Renders frames of `geometries` (already computed) to PNG and, when asked, a GIF.
fn finish(frames: Vec<Geometry>, mut view: View, opts: &RenderOptions, dt_frame: f64) -> Result<usize, String> {
    std::fs::create_dir_all(&opts.out).map_err(|e| format!("cannot create {}: {e}", opts.out.display()))?;
    let (mut lo, mut hi) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
    for g in &frames {
        let (a, b) = g.bounds();
        lo = lo.min(a);
        hi = hi.max(b);
        if let Some(y) = g.floor {
            lo.y = lo.y.min(y);
        }
    }
    settle_camera(&mut view, lo, hi);
    for (k, g) in frames.iter().enumerate() {
        write_png(&opts.out, k, &render(g, &view))?;
    }
    if opts.gif {
        let stride = frames.len().div_ceil(GIF_MAX_FRAMES).max(1);
        let scale = GIF_WIDTH as f64 / view.width as f64;
        let small =
            View { width: GIF_WIDTH, height: ((view.height as f64 * scale).round() as usize).max(1), ..view.clone() };
        let images: Vec<Image> = frames.iter().step_by(stride).map(|g| render(g, &small)).collect();
        let delay = ((dt_frame * stride as f64 * 100.0).round() as u16).max(2);
        save_gif(&opts.out.join("animation.gif"), &images, delay)?;
    }
    Ok(frames.len())
}

/// Runs `scene` and renders every k-th step.
pub fn render_scene(scene: &Scene, opts: &RenderOptions) -> Result<usize, String> {
    let mut built = scene.build().map_err(|e| e.to_string())?;
    let world = &mut built.world;
    let dt = scene.simulation.dt;
    let steps = opts
        .steps
        .or_else(|| opts.duration.map(|d| (d / dt - 1e-9).ceil().max(0.0) as u64))
        .unwrap_or_else(|| scene.simulation.total_steps());
    let every = opts
        .every
        .or(scene.output.frame_every.filter(|&k| k > 0))
        .unwrap_or_else(|| ((1.0 / (25.0 * dt)).round() as u64).max(1));
    let view = view_for(Some(scene), opts);
    let mut frames = vec![Geometry::from_world(world, &view)];
    let mut failure = None;
    for k in 1..=steps {
        if let Err(e) = world.step() {
            failure = Some(e);
            break;
        }
        if k % every == 0 {
            frames.push(Geometry::from_world(world, &view));
        }
    }
    let n = finish(frames, view, opts, every as f64 * dt)?;
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
    let summary: Option<serde_json::Value> =
        std::fs::read_to_string(dir.join("summary.json")).ok().and_then(|s| serde_json::from_str(&s).ok());
    let scene = std::fs::read_to_string(dir.join("scene.toml")).ok().and_then(|text| {
        let base =
            summary.as_ref().and_then(|s| s["scene_dir"].as_str()).map_or_else(|| dir.to_path_buf(), PathBuf::from);
        Scene::parse(Source::new(dir.join("scene.toml").display().to_string(), text), base).ok()
    });
    let frame_dt = summary.as_ref().and_then(|s| Some(s["dt"].as_f64()? * s["frame_every"].as_f64()?)).unwrap_or(0.04);
    let view = view_for(scene.as_ref(), opts);
    let mut world = scene.as_ref().and_then(|s| s.build().ok()).map(|b| b.world);
    let mut geometries = Vec::new();
    for path in files.iter().step_by(every) {
        let frame = ply::read_with_lines(path)?;
        // Frames hold the particles, then the rigid bodies' posed surfaces in the
        // order `Geometry::from_world` appends them: take every vertex from the file.
        let from_world = world.as_mut().filter(|w| w.state.len() <= frame.vertices.len()).and_then(|w| {
            for (i, p) in frame.vertices.iter().take(w.state.len()).enumerate() {
                w.state.x.set(i, *p);
            }
            let mut g = Geometry::from_world(w, &view);
            (g.positions.len() == frame.vertices.len()).then(|| {
                g.positions.clone_from(&frame.vertices);
                g
            })
        });
        let g = match from_world {
            Some(g) => g,
            None => Geometry {
                colors: vec![super::PALETTE[0]; frame.vertices.len()],
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
        geometries.push(g);
    }
    finish(geometries, view, opts, frame_dt * every as f64)
}
