//! The scene description: plain data that mirrors the builders, read from TOML.
//!
//! The format is documented in `scenes/README.md`. Reading checks types, ranges and
//! unknown keys; [`Scene::build`] then maps the description to builder calls and
//! reports builder errors at the line of the body that caused them.

use std::path::{Path, PathBuf};

use glam::DVec3;
use toml::de::DeTable;
use wobble::build::chain::Chain;
use wobble::build::cloth::Cloth;
use wobble::build::grid::{ElasticGrid, GridModel, GridShape};
use wobble::build::lattice::Lattice;
use wobble::build::sphere::{Ball, SphereMesh};
use wobble::constraint::collider::Surface;
use wobble::constraint::{Motion, Shape};
use wobble::force::{SpringKind, SpringParams};
use wobble::integrate::IntegratorKind;

use crate::doc::{Table, vec3};
use crate::error::{SceneError, Source, nearest};
use crate::fields::{checked_name, read_body_ref, read_box_size, read_membrane, read_selection, read_springs};
use crate::spec::*;

impl Scene {
    /// Reads a scene from a file: a regular UTF-8 file of at most
    /// [`MAX_SCENE_BYTES`](crate::input::MAX_SCENE_BYTES) (see [`crate::input`]).
    pub fn load(path: &Path) -> Result<Scene, SceneError> {
        Self::load_with(path, &[])
    }

    /// Reads a scene from a file with `overrides` applied (see [`crate::set`]).
    pub fn load_with(path: &Path, overrides: &[crate::Override]) -> Result<Scene, SceneError> {
        let name = crate::input::printable(&path.display().to_string());
        let text = crate::input::read_text(path, crate::input::MAX_SCENE_BYTES).map_err(|e| {
            let src = Source::new(name.clone(), "");
            match e {
                crate::input::ReadError::Io(why) => {
                    SceneError::new(&src, 0..0, format!("cannot read the scene file: {why}"))
                        .with_help("check the path; `wobble run` with no scene runs the built-in default")
                }
                other => SceneError::new(&src, 0..0, format!("not a scene file: {other}"))
                    .with_help("a scene is a TOML text file; see scenes/README.md"),
            }
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Scene::parse_with(Source::new(name, text), base, overrides)
    }

    /// Reads a scene from text with `overrides` applied (see [`crate::set`]).
    pub fn parse_with(source: Source, base_dir: PathBuf, overrides: &[crate::Override]) -> Result<Scene, SceneError> {
        Scene::parse(crate::set::apply(&source, overrides)?, base_dir)
    }

    /// Reads a scene from text; `base_dir` resolves relative mesh paths.
    ///
    /// Text that is neither TOML nor names any scene table (a file passed by
    /// mistake) is reported as "not a scene file" without quoting it.
    pub fn parse(source: Source, base_dir: PathBuf) -> Result<Scene, SceneError> {
        let text = source.text.clone();
        if text.len() as u64 > crate::input::MAX_SCENE_BYTES {
            return Err(SceneError::new(
                &Source::new(source.name.clone(), ""),
                0..0,
                "not a scene file: it is larger than the 16 MiB limit",
            ));
        }
        if let Some(at) = text.find('\0') {
            let line = source.line_col(at).0;
            return Err(not_a_scene(&source, format!("line {line} holds a NUL byte, so it is not text")));
        }
        let doc = DeTable::parse(&text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            if !looks_like_a_scene(&text) {
                let line = source.line_col(span.start).0;
                return not_a_scene(&source, format!("it is not TOML (line {line}) and names no scene table"));
            }
            SceneError::new(&source, span, format!("invalid TOML: {}", e.message().trim()))
        })?;
        let top: Vec<&str> = doc.get_ref().iter().map(|(k, _)| k.get_ref().as_ref()).collect();
        // A misspelt table (`[simulaton]`) is a scene with a typo, reported below.
        let scene_like = |k: &&str| SCENE_TABLES.contains(k) || nearest(k, SCENE_TABLES).is_some();
        if !top.is_empty() && !top.iter().any(scene_like) {
            return Err(not_a_scene(&source, "it is TOML, but none of its tables is a scene table".into()));
        }
        crate::doc::check_numbers(&source, doc.get_ref())?;
        let root = Table::new(&source, doc.get_ref(), doc.span(), "the scene");
        let simulation = match root.table("simulation")? {
            Some(t) => read_simulation(&t)?,
            None => read_simulation(&Table::new(&source, &DeTable::default(), 0..0, "[simulation]"))?,
        };
        let output = match root.table("output")? {
            Some(t) => read_output(&t)?,
            None => OutputSpec {
                frame_every: None,
                formats: vec![FrameFormat::Ply],
                metrics_every: None,
                checkpoint_every: None,
            },
        };
        let mut bodies = Vec::new();
        for mut t in root.tables("body")? {
            t.rename(format!("body #{}", bodies.len() + 1));
            let body = read_body(&t)?;
            if let Some(n) = body.shape.particle_count()
                && n > crate::input::MAX_PARTICLES
            {
                // Point at the first size the body states (the likely typo).
                const SIZES: [&str; 8] = ["nx", "ny", "nz", "n", "count", "level", "slices", "stacks"];
                let at = SIZES.iter().find(|k| t.has(k)).map_or_else(|| t.span_of("type"), |k| t.span_of(k));
                return Err(t
                    .error(
                        at,
                        format!(
                            "body `{}` would have {n} particles, more than the limit of {}",
                            body.name,
                            crate::input::MAX_PARTICLES
                        ),
                    )
                    .with_help("use fewer particles (nx, ny, n, count, level, slices, stacks)"));
            }
            if let Some(prev) = bodies.iter().find(|b: &&BodySpec| b.name == body.name) {
                let (line, _) = source.line_col(prev.span.start);
                return Err(t
                    .error(t.span_of("name"), format!("a body named `{}` already exists (line {line})", body.name))
                    .with_help("give every body a unique `name`"));
            }
            bodies.push(body);
        }
        if bodies.is_empty() {
            return Err(SceneError::new(&source, 0..0, "the scene has no bodies")
                .with_help("add a [[body]] table, e.g. `[[body]]\\ntype = \"cloth\"`; see scenes/README.md"));
        }
        let names: Vec<&str> = bodies.iter().map(|b| b.name.as_str()).collect();
        let mut drivers = Vec::new();
        for t in root.tables("driver")? {
            drivers.push(read_driver(&t, &names, drivers.len())?);
        }
        let mut colliders = Vec::new();
        for t in root.tables("collider")? {
            colliders.push(read_collider(&t, colliders.len())?);
        }
        let mut drags = Vec::new();
        for t in root.tables("drag")? {
            drags.push(read_drag(&t, &names)?);
        }
        let mut attachments = Vec::new();
        for t in root.tables("attach")? {
            attachments.push(crate::rigid::read_attach(&t, &bodies, attachments.len())?);
        }
        let camera = root.table("camera")?.map(|t| read_camera(&t)).transpose()?;
        let contact = match root.table("contact")? {
            Some(t) => read_contact(&t)?,
            None => wobble::contact::ContactSettings::default(),
        };
        root.finish()?;
        Ok(Scene {
            source,
            base_dir,
            simulation,
            output,
            bodies,
            drivers,
            colliders,
            drags,
            attachments,
            camera,
            contact,
        })
    }
}

/// Top-level tables of a scene, for telling a scene from another file.
const SCENE_TABLES: [&str; 9] =
    ["simulation", "output", "body", "driver", "collider", "drag", "attach", "camera", "contact"];

/// True when some line opens a scene table (`[simulation]`, `[[body]]`…): then a
/// TOML error is worth showing with its line; otherwise the file is likely not a
/// scene at all and is not quoted.
fn looks_like_a_scene(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with('[') && {
            let name = l.trim_start_matches('[').trim_start();
            SCENE_TABLES.iter().any(|t| name.starts_with(t))
        }
    })
}

/// "not a scene file", pointing at nothing so that no excerpt of the file is shown.
fn not_a_scene(source: &Source, why: String) -> SceneError {
    SceneError::new(
        &Source::new(source.name.clone(), ""),
        0..0,
        format!("not a scene file: {why}; its contents are not shown"),
    )
    .with_help("a scene is a TOML file with [simulation] and [[body]] tables; see scenes/README.md")
}

fn read_contact(t: &Table<'_, '_>) -> Result<wobble::contact::ContactSettings, SceneError> {
    let d = wobble::contact::ContactSettings::default();
    let restitution = t.f64_or("restitution", d.restitution)?;
    if !(0.0..=1.0).contains(&restitution) {
        return Err(t.error(t.span_of("restitution"), format!("`restitution` = {restitution} must lie in [0, 1]")));
    }
    let friction = t.non_negative("friction", d.friction, "")?;
    let iters = |key: &str, default: u32| -> Result<u32, SceneError> {
        Ok(u32::try_from(t.count(key, Some(default as usize), 1)?).unwrap_or(u32::MAX))
    };
    let s = wobble::contact::ContactSettings {
        restitution,
        friction,
        proximity_iterations: iters("proximity_iterations", d.proximity_iterations)?,
        ccd_iterations: iters("ccd_iterations", d.ccd_iterations)?,
        zone_iterations: iters("zone_iterations", d.zone_iterations)?,
    };
    t.finish()?;
    Ok(s)
}

fn read_simulation(t: &Table<'_, '_>) -> Result<Simulation, SceneError> {
    let integrator = match t.str("integrator")? {
        None => IntegratorKind::SymplecticEuler,
        Some(name) => name.parse::<IntegratorKind>().map_err(|e| {
            let names: Vec<&str> = IntegratorKind::ALL.iter().map(|k| k.name()).collect();
            let err = t.error(t.span_of("integrator"), e.to_string());
            match nearest(name, names.iter().copied()) {
                Some(s) => err.with_help(format!("did you mean `{s}`?")),
                None => err,
            }
        })?,
    };
    let dt = t.positive("dt", Some(wobble::world::DEFAULT_DT), "s")?;
    let duration = match t.f64("duration")? {
        Some(d) if d.is_finite() && d >= 0.0 => Some(d),
        Some(d) => {
            return Err(t.error(t.span_of("duration"), format!("`duration` = {d} must be ≥ 0 (s)")));
        }
        None => None,
    };
    let steps = t.usize("steps")?.map(|s| s as u64);
    if let Some(s) = steps
        && s > crate::input::MAX_STEPS
    {
        return Err(t
            .error(t.span_of("steps"), format!("`steps` = {s} exceeds the limit of {} steps", crate::input::MAX_STEPS))
            .with_help("split the run, or raise `dt`"));
    }
    let gravity = t.vec3_or("gravity", DVec3::new(0.0, -wobble::force::gravity::STANDARD_GRAVITY, 0.0))?;
    if !gravity.is_finite() {
        return Err(t.error(t.span_of("gravity"), "`gravity` must be finite"));
    }
    let air_drag = t.non_negative("air_drag", 0.0, "1/s")?;
    let verlet_drag = t.f64_or("verlet_drag", wobble::integrate::DEFAULT_VERLET_DRAG)?;
    if !(0.0..1.0).contains(&verlet_drag) {
        return Err(t.error(t.span_of("verlet_drag"), format!("`verlet_drag` = {verlet_drag} must lie in [0, 1)")));
    }
    let constraint_iterations = u32::try_from(t.count("constraint_iterations", Some(1), 1)?).unwrap_or(u32::MAX);
    let defaults = wobble::solve::CgSettings::default();
    let tolerance = t.positive("cg_tolerance", Some(defaults.tolerance), "")?;
    if tolerance >= 1.0 {
        return Err(t.error(t.span_of("cg_tolerance"), format!("`cg_tolerance` = {tolerance} must be below 1")));
    }
    let max_iterations =
        u32::try_from(t.count("cg_max_iterations", Some(defaults.max_iterations as usize), 1)?).unwrap_or(u32::MAX);
    let accept_unconverged = t.bool("cg_accept_unconverged")?.unwrap_or(false);
    let kind = match t.str("solver")? {
        None => defaults.solver,
        Some(name) => wobble::solve::SolverKind::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = wobble::solve::SolverKind::ALL.iter().map(|k| k.name()).collect();
            let err = t.error(
                t.span_of("solver"),
                format!("unknown linear solver `{name}`; choose one of: {}", names.join(", ")),
            );
            match nearest(name, names.iter().copied()) {
                Some(s) => err.with_help(format!("did you mean `{s}`?")),
                None => err,
            }
        })?,
    };
    let newton_iterations =
        u32::try_from(t.count("newton_iterations", Some(defaults.newton_iterations as usize), 1)?).unwrap_or(u32::MAX);
    let newton_tolerance = t.non_negative("newton_tolerance", defaults.newton_tolerance, "")?;
    if newton_tolerance >= 1.0 {
        return Err(t.error(
            t.span_of("newton_tolerance"),
            format!("`newton_tolerance` = {newton_tolerance} must be below 1 (a relative residual)"),
        ));
    }
    let most = wobble::solve::CgSettings::MAX_WARM_START_ORDER;
    let warm_start_order = t.count("warm_start_order", Some(usize::from(defaults.warm_start_order)), 0)?;
    if warm_start_order > usize::from(most) {
        return Err(t.error(
            t.span_of("warm_start_order"),
            format!("`warm_start_order` = {warm_start_order} must be at most {most}"),
        ));
    }
    let solver = wobble::solve::CgSettings {
        tolerance,
        max_iterations,
        accept_unconverged,
        solver: kind,
        newton_iterations,
        newton_tolerance,
        warm_start_order: warm_start_order as u8,
    };
    t.finish()?;
    if steps.is_none() {
        let planned = duration.unwrap_or(DEFAULT_DURATION) / dt;
        if planned > crate::input::MAX_STEPS as f64 {
            let at = if t.has("duration") { t.span_of("duration") } else { t.span_of("dt") };
            return Err(t
                .error(
                    at,
                    format!(
                        "`duration` / `dt` = {planned:.3e} steps exceeds the limit of {} steps",
                        crate::input::MAX_STEPS
                    ),
                )
                .with_help("split the run, or raise `dt`"));
        }
    }
    Ok(Simulation { integrator, dt, duration, steps, gravity, air_drag, verlet_drag, constraint_iterations, solver })
}

fn read_output(t: &Table<'_, '_>) -> Result<OutputSpec, SceneError> {
    let frame_every = t.usize("frame_every")?.map(|v| v as u64);
    let metrics_every = match t.usize("metrics_every")? {
        Some(0) => {
            return Err(t.error(t.span_of("metrics_every"), "`metrics_every` must be at least 1"));
        }
        v => v.map(|v| v as u64),
    };
    let checkpoint_every = match t.f64("checkpoint_every")? {
        Some(_) => Some(t.positive("checkpoint_every", None, "s of simulated time")?),
        None => None,
    };
    let mut formats = Vec::new();
    if let Some(items) = t.array("formats")? {
        for v in items {
            let name = v.get_ref().as_str().ok_or_else(|| t.error(v.span(), "each format must be a string"))?;
            let format = FrameFormat::ALL.iter().find(|(_, n)| *n == name).map(|(f, _)| *f).ok_or_else(|| {
                t.error(v.span(), format!("unknown frame format `{name}`")).with_help("choose from: ply, obj, vtk, vtu")
            })?;
            formats.push(format);
        }
    } else {
        formats.push(FrameFormat::Ply);
    }
    t.finish()?;
    Ok(OutputSpec { frame_every, formats, metrics_every, checkpoint_every })
}

fn read_body(t: &Table<'_, '_>) -> Result<BodySpec, SceneError> {
    let kind = t.str("type")?.ok_or_else(|| t.missing("type", &format!("one of {}", BODY_TYPES.join(", "))))?;
    let name = match t.str("name")? {
        Some(n) => checked_name(t, "name", n.to_owned())?,
        None => kind.to_owned(),
    };
    let velocity = t.vec3_or("velocity", DVec3::ZERO)?;
    let radius = t.non_negative("particle_radius", 0.0, "m")?;
    let mass = t.positive("mass", Some(1.0), "kg")?;
    let origin = t.vec3_or("origin", DVec3::ZERO)?;
    let pin = t.table("pin")?.map(|s| read_selection(&s)).transpose()?;
    let thickness = t.f64("thickness")?;
    if let Some(h) = thickness
        && !(h.is_finite() && h > 0.0)
    {
        return Err(t
            .error(t.span_of("thickness"), format!("`thickness` = {h} must be a positive contact distance (m)"))
            .with_help("leave it out for the default (a tenth of the surface's mean edge length)"));
    }
    let contact = wobble::contact::ContactOptions {
        collide: t.bool("collide")?,
        self_collide: t.bool("self_collide")?,
        thickness,
    };
    if contact.collide == Some(false) && contact.self_collide == Some(true) {
        return Err(t
            .error(t.span_of("self_collide"), "`self_collide = true` contradicts `collide = false`: a body that collides with nothing cannot collide with itself")
            .with_help("drop `collide = false` to let the body touch itself and others, or drop `self_collide`"));
    }
    let sticks = match t.array("sticks")? {
        Some(items) => read_kinds(t, "sticks", items)?,
        None => Vec::new(),
    };
    let stretch_limit = match t.table("stretch_limit")? {
        Some(l) => {
            let tau = l.non_negative("tau", wobble::constraint::stretch_limit::DEFAULT_STRETCH_LIMIT, "")?;
            let iterations =
                l.count("iterations", Some(wobble::constraint::stretch_limit::DEFAULT_LIMIT_ITERATIONS as usize), 1)?;
            let kinds = match l.array("kinds")? {
                Some(items) => read_kinds(&l, "kinds", items)?,
                None => SpringKind::ALL.to_vec(),
            };
            l.finish()?;
            Some(LimitSpec { tau, iterations: u32::try_from(iterations).unwrap_or(u32::MAX), kinds })
        }
        None => None,
    };
    let shape = match kind {
        "chain" => {
            let d = Chain::default();
            let springs = read_springs(t, &[(SpringKind::Structural, Some(d.structural)), (SpringKind::Bend, None)])?;
            BodyShape::Chain(Chain {
                count: t.count("count", Some(d.count), 2)?,
                start: t.vec3_or("start", origin)?,
                end: t.vec3_or("end", origin + (d.end - d.start))?,
                mass,
                structural: springs[&SpringKind::Structural].unwrap_or(d.structural),
                bend: springs[&SpringKind::Bend],
                radius,
            })
        }
        "cloth" => {
            let d = Cloth::default();
            let springs = read_springs(
                t,
                &[
                    (SpringKind::Structural, Some(d.structural)),
                    (SpringKind::Shear, d.shear),
                    (SpringKind::Bend, d.bend),
                ],
            )?;
            BodyShape::Cloth(Cloth {
                nx: t.count("nx", Some(d.nx), 2)?,
                ny: t.count("ny", Some(d.ny), 2)?,
                spacing: t.positive("spacing", Some(d.spacing), "m")?,
                origin,
                u: t.vec3_or("u", d.u)?,
                v: t.vec3_or("v", d.v)?,
                mass,
                structural: springs[&SpringKind::Structural].unwrap_or(d.structural),
                shear: springs[&SpringKind::Shear],
                bend: springs[&SpringKind::Bend],
                radius,
                membrane: read_membrane(t)?,
            })
        }
        "lattice" => {
            let d = Lattice::default();
            let n = match t.array("n")? {
                None => d.n,
                Some(items) => {
                    let bad = || t.error(t.span_of("n"), "`n` must be [nx, ny, nz], each an integer ≥ 2");
                    if items.len() != 3 {
                        return Err(bad());
                    }
                    let mut n = [0usize; 3];
                    for (slot, v) in n.iter_mut().zip(items) {
                        *slot = crate::doc::integer(v)
                            .and_then(|i| usize::try_from(i).ok())
                            .filter(|&i| i >= 2)
                            .ok_or_else(bad)?;
                    }
                    n
                }
            };
            let springs = read_springs(
                t,
                &[(SpringKind::Structural, Some(d.structural)), (SpringKind::Shear, d.shear), (SpringKind::Bend, None)],
            )?;
            BodyShape::Lattice(Lattice {
                n,
                spacing: t.positive("spacing", Some(d.spacing), "m")?,
                origin,
                mass,
                structural: springs[&SpringKind::Structural].unwrap_or(d.structural),
                shear: springs[&SpringKind::Shear],
                bend: springs[&SpringKind::Bend],
                radius,
            })
        }
        "mesh" => {
            let file = t.str("file")?.ok_or_else(|| t.missing("file", "the path of an OBJ file"))?.to_owned();
            let springs = read_springs(t, &[(SpringKind::Structural, Some(SpringParams::linear(1000.0, 1.0)))])?;
            BodyShape::Mesh {
                file,
                scale: t.positive("scale", Some(1.0), "")?,
                translate: origin,
                mass,
                structural: springs[&SpringKind::Structural].unwrap_or(SpringParams::linear(1000.0, 1.0)),
                radius,
                weld: t.positive_opt("weld", "file units")?,
            }
        }
        "ball" => {
            let d = Ball::default();
            let springs =
                read_springs(t, &[(SpringKind::Structural, Some(d.structural)), (SpringKind::Radius, Some(d.spokes))])?;
            let mesh = match (t.usize("level")?, t.usize("slices")?, t.usize("stacks")?) {
                (Some(level), None, None) => SphereMesh::Uniform { level: u32::try_from(level).unwrap_or(u32::MAX) },
                (None, Some(slices), Some(stacks)) => SphereMesh::LatLong {
                    slices: u32::try_from(slices).unwrap_or(u32::MAX),
                    stacks: u32::try_from(stacks).unwrap_or(u32::MAX),
                },
                (None, None, None) => d.mesh,
                _ => {
                    return Err(t
                        .error(t.span(), "a ball takes either `level` (uniform sphere) or `slices` and `stacks`")
                        .with_help("e.g. `level = 2`, or `slices = 16` with `stacks = 8`"));
                }
            };
            BodyShape::Ball(Ball {
                center: t.vec3_or("center", origin)?,
                radius: t.positive("radius", Some(d.radius), "m")?,
                mesh,
                mass,
                structural: springs[&SpringKind::Structural].unwrap_or(d.structural),
                spokes: springs[&SpringKind::Radius].unwrap_or(d.spokes),
                particle_radius: radius,
            })
        }
        "grid" => BodyShape::Grid(read_grid(t, origin, mass, radius)?),
        "pair" | "ring" | "pressure-sphere" | "pressure-mesh" => crate::twolayer::read(t, kind, origin, radius)?,
        k if crate::oriented::TYPES.contains(&k) => crate::oriented::read(t, kind, origin, mass, radius)?,
        "rigid" => crate::rigid::read(t, origin, mass)?,
        other => {
            let err = t.error(t.span_of("type"), format!("unknown body type `{other}`"));
            return Err(match nearest(other, BODY_TYPES) {
                Some(s) => err.with_help(format!("did you mean `{s}`? body types: {}", BODY_TYPES.join(", "))),
                None => err.with_help(format!("body types: {}", BODY_TYPES.join(", "))),
            });
        }
    };
    let key_spans = t.entries().map(|(k, _, v)| (k.to_owned(), v.span())).collect();
    t.finish()?;
    Ok(BodySpec { name, shape, pin, velocity, sticks, stretch_limit, contact, span: t.span(), key_spans })
}

fn read_camera(t: &Table<'_, '_>) -> Result<CameraSpec, SceneError> {
    let position = t.vec3("position")?.ok_or_else(|| t.missing("position", "[x, y, z] of the eye, m"))?;
    let target = t.vec3_or("target", DVec3::ZERO)?;
    if position == target || !position.is_finite() || !target.is_finite() {
        return Err(t.error(t.span_of("position"), "the camera must look from a point other than its target"));
    }
    let up = t.vec3_or("up", DVec3::Y)?;
    let fov_deg = t.positive("fov", Some(40.0), "degrees")?;
    if fov_deg >= 179.0 {
        return Err(t.error(t.span_of("fov"), "`fov` must be below 179 degrees"));
    }
    let width = t.usize("width")?;
    let height = t.usize("height")?;
    for (key, v) in [("width", width), ("height", height)] {
        if let Some(v) = v
            && !(16..=8192).contains(&v)
        {
            return Err(t.error(t.span_of(key), format!("`{key}` = {v} must lie in 16..=8192 pixels")));
        }
    }
    t.finish()?;
    Ok(CameraSpec { position, target, up, fov_deg, width, height })
}

/// Reads the keys of a `type = "grid"` body (002).
fn read_grid(t: &Table<'_, '_>, origin: DVec3, mass: f64, radius: f64) -> Result<ElasticGrid, SceneError> {
    let d = ElasticGrid::default();
    let n = match t.array("n")? {
        None => d.n,
        Some(items) => {
            let bad = || t.error(t.span_of("n"), "`n` must be [L, M, N] (N = 1 for a surface), integers with L, M ≥ 2");
            if items.len() != 3 {
                return Err(bad());
            }
            let mut n = [0usize; 3];
            for (slot, v) in n.iter_mut().zip(items) {
                *slot =
                    crate::doc::integer(v).and_then(|i| usize::try_from(i).ok()).filter(|&i| i >= 1).ok_or_else(bad)?;
            }
            n
        }
    };
    let spacing = match t.get("spacing") {
        None => d.spacing,
        Some(v) => match (crate::doc::number(v), vec3(v)) {
            (Some(h), _) => [h; 3],
            (None, Some(h)) => h.to_array(),
            _ => return Err(t.error(v.span(), "`spacing` must be a number or [h1, h2, h3] (m)")),
        },
    };
    if spacing.iter().any(|h| !(h.is_finite() && *h > 0.0)) {
        return Err(t.error(t.span_of("spacing"), "every grid spacing must be positive (m)"));
    }
    let shape = match t.str("shape")? {
        None | Some("box") => GridShape::Box,
        Some("ellipsoid") => GridShape::Ellipsoid,
        Some(other) => {
            return Err(t
                .error(t.span_of("shape"), format!("unknown grid shape `{other}`"))
                .with_help("shapes: box, ellipsoid"));
        }
    };
    let improved_flags = |t: &Table<'_, '_>| -> Result<GridModel, SceneError> {
        Ok(GridModel::Improved {
            sdm: t.bool("sdm")?.unwrap_or(true),
            pillar: t.bool("pillar")?.unwrap_or(true),
            pillar_metrix: t.bool("pillar_metrix")?.unwrap_or(false),
            squared: t.bool("squared")?.unwrap_or(false),
        })
    };
    let model = match t.str("model")? {
        None | Some("improved") => improved_flags(t)?,
        Some("original") => {
            for key in ["sdm", "pillar", "pillar_metrix", "squared"] {
                if t.has(key) {
                    return Err(t
                        .error(t.span_of(key), format!("`{key}` belongs to the improved model"))
                        .with_help("set `model = \"improved\"` or remove the key"));
                }
            }
            GridModel::Original
        }
        Some(other) => {
            return Err(t
                .error(t.span_of("model"), format!("unknown grid model `{other}`"))
                .with_help("models: original, improved"));
        }
    };
    let (mut eta_length, mut eta_angle, mut eta_sdm, mut eta_pillar) =
        (d.eta_length, d.eta_angle, d.eta_sdm, d.eta_pillar);
    if let Some(e) = t.table("eta")? {
        eta_length = e.non_negative("length", eta_length, "N m")?;
        eta_angle = e.non_negative("angle", eta_angle, "N m")?;
        eta_sdm = e.non_negative("sdm", eta_sdm, "N m")?;
        eta_pillar = e.non_negative("pillar", eta_pillar, "N m")?;
        e.finish()?;
    }
    let strength = t.non_negative("strength", 1.0, "")?;
    Ok(ElasticGrid {
        n,
        spacing,
        origin,
        shape,
        mass,
        model,
        eta_length,
        eta_angle,
        eta_sdm,
        eta_pillar,
        strength,
        radius,
    })
}

/// Reads an array of spring kind names.
fn read_kinds(
    t: &Table<'_, '_>,
    key: &str,
    items: &[toml::Spanned<toml::de::DeValue<'_>>],
) -> Result<Vec<SpringKind>, SceneError> {
    let names: Vec<&str> = SpringKind::ALL.iter().map(|k| k.as_str()).collect();
    items
        .iter()
        .map(|v| {
            let name = v
                .get_ref()
                .as_str()
                .ok_or_else(|| t.error(v.span(), format!("`{key}` lists spring kinds as strings")))?;
            SpringKind::ALL.into_iter().find(|k| k.as_str() == name).ok_or_else(|| {
                let err = t.error(v.span(), format!("unknown spring kind `{name}`"));
                match nearest(name, names.iter().copied()) {
                    Some(s) => err.with_help(format!("did you mean `{s}`? kinds: {}", names.join(", "))),
                    None => err.with_help(format!("kinds: {}", names.join(", "))),
                }
            })
        })
        .collect()
}

/// Reads a `motion = { type = ..., ... }` table.
fn read_motion(t: &Table<'_, '_>) -> Result<Motion, SceneError> {
    let Some(m) = t.table("motion")? else {
        return Ok(Motion::Static);
    };
    let motion = match m.str("type")? {
        Some("static") => Motion::Static,
        Some("linear") => Motion::Linear {
            velocity: m.vec3("velocity")?.ok_or_else(|| m.missing("velocity", "[vx, vy, vz] in m/s"))?,
            start: m.non_negative("start", 0.0, "s")?,
            stop: m.f64_or("stop", f64::INFINITY)?,
        },
        Some("rotate") => {
            let axis = m.vec3("axis")?.ok_or_else(|| m.missing("axis", "[x, y, z], the rotation axis"))?;
            if !(axis.is_finite() && axis.length() > 0.0) {
                return Err(m.error(m.span_of("axis"), "`axis` must be a non-zero vector"));
            }
            Motion::Rotate {
                center: m.vec3_or("center", DVec3::ZERO)?,
                axis: axis.normalize(),
                rate: m.f64("rate")?.ok_or_else(|| m.missing("rate", "angular speed in rad/s"))?,
                start: m.non_negative("start", 0.0, "s")?,
                stop: m.f64_or("stop", f64::INFINITY)?,
            }
        }
        Some("oscillate") => Motion::Oscillate {
            amplitude: m.vec3("amplitude")?.ok_or_else(|| m.missing("amplitude", "[ax, ay, az] in m"))?,
            frequency: m.positive("frequency", None, "Hz")?,
            phase: m.f64_or("phase", 0.0)?,
        },
        Some(other) => {
            return Err(m
                .error(m.span_of("type"), format!("unknown motion type `{other}`"))
                .with_help("motion types: static, linear, oscillate, rotate (drivers only)"));
        }
        None => return Err(m.missing("type", "static, linear or oscillate")),
    };
    m.finish()?;
    Ok(motion)
}

fn read_driver(t: &Table<'_, '_>, names: &[&str], index: usize) -> Result<DriverSpec, SceneError> {
    let body = read_body_ref(t, names)?;
    let select = t.table("select")?.ok_or_else(|| t.missing("select", "a particle selection"))?;
    let select = read_selection(&select)?;
    let motion = read_motion(t)?;
    let name = match t.str("name")? {
        Some(n) => checked_name(t, "name", n.to_owned())?,
        None => format!("driver-{}", index + 1),
    };
    t.finish()?;
    Ok(DriverSpec { name, body, select, motion, span: t.span() })
}

fn read_collider(t: &Table<'_, '_>, index: usize) -> Result<ColliderSpec, SceneError> {
    let kind = t.str("type")?.ok_or_else(|| t.missing("type", "plane, sphere, box, mesh or room"))?;
    let shape = match kind {
        "plane" => {
            let normal = t.vec3_or("normal", DVec3::Y)?;
            if !(normal.is_finite() && normal.length() > 0.0) {
                return Err(t.error(t.span_of("normal"), "`normal` must be a non-zero vector"));
            }
            ColliderShape::Single(Shape::Plane { point: t.vec3_or("point", DVec3::ZERO)?, normal: normal.normalize() })
        }
        "sphere" => ColliderShape::Single(Shape::Sphere {
            center: t.vec3_or("center", DVec3::ZERO)?,
            radius: t.positive("radius", None, "m")?,
        }),
        "box" => {
            let size = read_box_size(t)?;
            let deg = t.vec3_or("rotation", DVec3::ZERO)?;
            if !deg.is_finite() {
                return Err(t.error(t.span_of("rotation"), "`rotation` must be finite angles in degrees"));
            }
            let rotation = glam::DQuat::from_euler(
                glam::EulerRot::ZYX,
                deg.z.to_radians(),
                deg.y.to_radians(),
                deg.x.to_radians(),
            );
            ColliderShape::Single(Shape::Box { center: t.vec3_or("center", DVec3::ZERO)?, half: 0.5 * size, rotation })
        }
        "mesh" => {
            let file = t.str("file")?.ok_or_else(|| t.missing("file", "an OBJ file, relative to the scene"))?;
            ColliderShape::Mesh {
                file: file.to_owned(),
                scale: t.positive("scale", Some(1.0), "")?,
                offset: t.vec3_or("offset", DVec3::ZERO)?,
                thickness: t.positive("thickness", Some(0.005), "m")?,
                file_span: t.span_of("file"),
            }
        }
        "room" => {
            let min = t.vec3("min")?.ok_or_else(|| t.missing("min", "[x, y, z] of the lower corner"))?;
            let max = t.vec3("max")?.ok_or_else(|| t.missing("max", "[x, y, z] of the upper corner"))?;
            if !(min.cmplt(max).all()) {
                return Err(t.error(t.span_of("max"), "`max` must exceed `min` on every axis"));
            }
            ColliderShape::Room { min, max }
        }
        other => {
            return Err(t
                .error(t.span_of("type"), format!("unknown collider type `{other}`"))
                .with_help("collider types: plane, sphere, box, mesh, room"));
        }
    };
    let d = Surface::default();
    let restitution = t.f64_or("restitution", d.restitution)?;
    if !(0.0..=1.0).contains(&restitution) {
        return Err(t.error(t.span_of("restitution"), format!("`restitution` = {restitution} must lie in [0, 1]")));
    }
    let friction = t.non_negative("friction", d.friction, "")?;
    let motion = read_motion(t)?;
    if matches!(motion, Motion::Rotate { .. }) {
        return Err(t
            .error(t.span_of("motion"), "a collider cannot rotate: its motion moves it without turning it")
            .with_help(
                "collider motions: static, linear, oscillate; to turn a body, use a `[[driver]]` with `rotate`",
            ));
    }
    let name = match t.str("name")? {
        Some(n) => checked_name(t, "name", n.to_owned())?,
        None if kind == "room" => "room".to_owned(),
        None => format!("{kind}-{}", index + 1),
    };
    t.finish()?;
    Ok(ColliderSpec { name, shape, surface: Surface { restitution, friction }, motion, span: t.span() })
}

fn read_drag(t: &Table<'_, '_>, names: &[&str]) -> Result<DragSpec, SceneError> {
    let start = t.non_negative("start", 0.0, "s")?;
    let end = t.f64_or("end", f64::INFINITY)?;
    if end.is_nan() || end <= start {
        return Err(t.error(t.span_of("end"), format!("`end` = {end} must be after `start` = {start}")));
    }
    let pick = match (t.vec3("near")?, t.has("body")) {
        (Some(p), false) => DragPick::Near(p),
        (None, true) => {
            let body = read_body_ref(t, names)?;
            let index = t.usize("particle")?.ok_or_else(|| t.missing("particle", "a body-local particle index"))?;
            DragPick::Particle { body, index }
        }
        _ => {
            return Err(t
                .error(t.span(), "a drag needs `near = [x, y, z]` or `body` with `particle`")
                .with_help("`near` grabs the surface particle nearest to a point when the drag starts"));
        }
    };
    let target = match (t.vec3("to")?, t.vec3("by")?) {
        (Some(p), None) => wobble::interact::CursorTarget::To(p),
        (None, Some(d)) => wobble::interact::CursorTarget::By(d),
        _ => {
            return Err(t.error(t.span(), "a drag needs exactly one of `to = [x, y, z]` or `by = [dx, dy, dz]`"));
        }
    };
    let d = wobble::force::DragSpringParams::default();
    let spec = DragSpec {
        start,
        end,
        pick,
        target,
        ramp: t.non_negative("ramp", 0.0, "s")?,
        stiffness: t.non_negative("stiffness", d.stiffness, "N/m")?,
        damping: t.non_negative("damping", d.damping, "N s/m")?,
        span: t.span(),
    };
    t.finish()?;
    Ok(spec)
}
