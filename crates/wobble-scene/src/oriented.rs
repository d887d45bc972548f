//! Scene keys of bodies made of oriented particles and generalized springs (001
//! §4): `rod`, `mobile` (a tree of bars, threads and weights), `jelly-cube`,
//! `sheet` (may hold a crease) and `generalized-mesh` (an OBJ file's edges).
//! Reading maps keys to the engine's builders; building reads OBJ files and reports
//! builder errors at the key they name. The format is in `scenes/README.md`.

use std::ops::Range;

use glam::DVec3;
use wobble::build::gmesh::GeneralizedMesh;
use wobble::build::jelly::JellyCube;
use wobble::build::mobile::{Hanging, Mobile, MobileBar, Pendant};
use wobble::build::rod::Rod;
use wobble::build::sheet::Sheet;
use wobble::build::{BuildError, WorldBuilder};
use wobble::force::{AngularLaw, GeneralizedParams};

use crate::doc::Table;
use crate::error::SceneError;
pub use crate::spec::OrientedSpec;
use crate::spec::{BodyShape, BodySpec, Scene};

/// Body types read here.
pub const TYPES: [&str; 5] = ["rod", "mobile", "jelly-cube", "sheet", "generalized-mesh"];

/// Reads generalized-spring constants from table `key` of `t` (absent: `default`).
/// Keys: `stretch` (N/m), `damping` (N s/m), `bend`, `bend_negative`, `bend_cubic`,
/// `twist`, `twist_negative`, `twist_cubic` (N m/rad, N m/rad³), `bend_damping`,
/// `twist_damping` (N m s/rad). `bend_negative` and `twist_negative` default to
/// `bend` and `twist` (symmetric resistance).
pub(crate) fn read_generalized(
    t: &Table<'_, '_>,
    key: &str,
    default: GeneralizedParams,
) -> Result<GeneralizedParams, SceneError> {
    let Some(s) = t.table(key)? else {
        return Ok(default);
    };
    let law = |name: &str, d: AngularLaw| -> Result<AngularLaw, SceneError> {
        let positive = s.non_negative(name, d.positive, "N m/rad")?;
        let negative_default = if s.has(name) { positive } else { d.negative };
        Ok(AngularLaw {
            positive,
            negative: s.non_negative(&format!("{name}_negative"), negative_default, "N m/rad")?,
            cubic: s.non_negative(&format!("{name}_cubic"), d.cubic, "N m/rad³")?,
        })
    };
    let p = GeneralizedParams {
        stretch: s.non_negative("stretch", default.stretch, "N/m")?,
        damping: s.non_negative("damping", default.damping, "N s/m")?,
        bend: law("bend", default.bend)?,
        twist: law("twist", default.twist)?,
        bend_damping: s.non_negative("bend_damping", default.bend_damping, "N m s/rad")?,
        twist_damping: s.non_negative("twist_damping", default.twist_damping, "N m s/rad")?,
    };
    s.finish()?;
    Ok(p)
}

/// `particle_radius` as read (0 when absent) or the builder's default.
fn radius_or(particle_radius: f64, default: f64) -> f64 {
    if particle_radius > 0.0 { particle_radius } else { default }
}

/// Reads the body table `t` of type `kind` (one of [`TYPES`]); `origin`, `mass` and
/// `particle_radius` are the common keys already read.
pub(crate) fn read(
    t: &Table<'_, '_>,
    kind: &str,
    origin: DVec3,
    mass: f64,
    particle_radius: f64,
) -> Result<BodyShape, SceneError> {
    let spec = match kind {
        "rod" => {
            let d = Rod::default();
            OrientedSpec::Rod(Rod {
                count: t.count("count", Some(d.count), 2)?,
                start: t.vec3_or("start", origin)?,
                end: t.vec3_or("end", origin + (d.end - d.start))?,
                mass,
                radius: radius_or(particle_radius, d.radius),
                springs: read_generalized(t, "springs", d.springs)?,
                across: t.vec3_or("across", d.across)?,
                tube_radius: t.non_negative("tube_radius", d.tube_radius, "m")?,
                initial_twist: t.f64_or("twist_degrees", 0.0)?.to_radians(),
            })
        }
        "jelly-cube" => {
            let d = JellyCube::default();
            OrientedSpec::JellyCube(JellyCube {
                n: read_n(t, d.n)?,
                spacing: t.positive("spacing", Some(d.spacing), "m")?,
                origin,
                mass,
                radius: radius_or(particle_radius, d.radius),
                springs: read_generalized(t, "springs", d.springs)?,
            })
        }
        "sheet" => {
            let d = Sheet::default();
            let nx = t.count("nx", Some(d.nx), 3)?;
            OrientedSpec::Sheet(Sheet {
                nx,
                nz: t.count("nz", Some(d.nz), 2)?,
                spacing: t.positive("spacing", Some(d.spacing), "m")?,
                origin,
                mass,
                radius: radius_or(particle_radius, d.radius),
                springs: read_generalized(t, "springs", d.springs)?,
                crease: t.count("crease", Some(nx / 2), 1)?,
                crease_angle: t.f64_or("crease_degrees", d.crease_angle.to_degrees())?.to_radians(),
                start_flat: t.bool("start_flat")?.unwrap_or(d.start_flat),
                thickness: t.non_negative("thickness", d.thickness, "m")?,
            })
        }
        "generalized-mesh" => {
            let file = t.str("file")?.ok_or_else(|| t.missing("file", "the path of an OBJ file"))?.to_owned();
            OrientedSpec::Mesh {
                file,
                scale: t.positive("scale", Some(1.0), "")?,
                translate: origin,
                mass,
                radius: radius_or(particle_radius, 0.02),
                springs: read_generalized(t, "springs", GeneralizedParams::new(2000.0, 1.0, 0.5, 0.5))?,
            }
        }
        "mobile" => {
            if t.has("mass") {
                return Err(t
                    .error(t.span_of("mass"), "a `mobile` sets the mass of each bar and weight, not a total `mass`")
                    .with_help("give `mass` in each `bar` table and `weight` (kg) in each pendant"));
            }
            let d = Mobile::default();
            let springs = t.table("springs")?;
            let (bar, thread) = match &springs {
                Some(s) => {
                    let bar = read_generalized(s, "bar", d.bar)?;
                    let thread = read_generalized(s, "thread", d.thread)?;
                    s.finish()?;
                    (bar, thread)
                }
                None => (d.bar, d.thread),
            };
            let top = Pendant {
                thread: t.positive("thread", Some(d.top.thread), "m")?,
                item: match t.table("bar")? {
                    Some(b) => Hanging::Bar(Box::new(read_bar(&b, 0)?)),
                    None => d.top.item.clone(),
                },
            };
            OrientedSpec::Mobile(Mobile {
                anchor: t.vec3_or("anchor", d.anchor)?,
                top,
                bar,
                thread,
                bar_segments: t.count("bar_segments", Some(d.bar_segments), 2)?,
                thread_segments: t.count("thread_segments", Some(d.thread_segments), 1)?,
                thread_particle_mass: t.positive("thread_particle_mass", Some(d.thread_particle_mass), "kg")?,
                radius: radius_or(particle_radius, d.radius),
            })
        }
        _ => unreachable!("only the oriented body types are read here"),
    };
    Ok(BodyShape::Oriented(spec))
}

/// `n = [nx, ny, nz]`, each an integer ≥ 2.
fn read_n(t: &Table<'_, '_>, default: [usize; 3]) -> Result<[usize; 3], SceneError> {
    let Some(items) = t.array("n")? else {
        return Ok(default);
    };
    let bad = || t.error(t.span_of("n"), "`n` must be [nx, ny, nz], each an integer ≥ 2");
    if items.len() != 3 {
        return Err(bad());
    }
    let mut n = [0usize; 3];
    for (slot, v) in n.iter_mut().zip(items) {
        *slot = crate::doc::integer(v).and_then(|i| usize::try_from(i).ok()).filter(|&i| i >= 2).ok_or_else(bad)?;
    }
    Ok(n)
}

/// Deepest mobile tree a scene may describe.
const MAX_DEPTH: usize = 16;

/// A bar table: `length` (m), `mass` (kg), `left` and `right` pendants.
fn read_bar(t: &Table<'_, '_>, depth: usize) -> Result<MobileBar, SceneError> {
    if depth >= MAX_DEPTH {
        return Err(t.error(t.span(), format!("the mobile is deeper than {MAX_DEPTH} bars")));
    }
    let left =
        t.table("left")?.ok_or_else(|| t.missing("left", "a pendant table (`thread`, and `weight` or `bar`)"))?;
    let right =
        t.table("right")?.ok_or_else(|| t.missing("right", "a pendant table (`thread`, and `weight` or `bar`)"))?;
    let bar = MobileBar {
        length: t.positive("length", None, "m")?,
        mass: t.positive("mass", None, "kg")?,
        left: read_pendant(&left, depth)?,
        right: read_pendant(&right, depth)?,
    };
    t.finish()?;
    Ok(bar)
}

/// A pendant table: `thread` (m) and either `weight` (kg) or `bar` (a bar table).
fn read_pendant(t: &Table<'_, '_>, depth: usize) -> Result<Pendant, SceneError> {
    let thread = t.positive("thread", None, "m")?;
    let item = match (t.has("weight"), t.table("bar")?) {
        (true, None) => Hanging::Weight(t.positive("weight", None, "kg")?),
        (false, Some(b)) => Hanging::Bar(Box::new(read_bar(&b, depth + 1)?)),
        _ => {
            return Err(t
                .error(t.span(), "a pendant hangs either a `weight` (kg) or a `bar` (table), exactly one")
                .with_help("e.g. `left = { thread = 0.25, weight = 0.1 }`"));
        }
    };
    t.finish()?;
    Ok(Pendant { thread, item })
}

/// Builds an oriented body; returns nothing the scene needs beyond the particles.
pub(crate) fn build(
    scene: &Scene,
    b: &mut WorldBuilder,
    spec: &BodySpec,
    at: &dyn Fn(BuildError) -> SceneError,
) -> Result<Range<usize>, SceneError> {
    let name = &spec.name;
    let first = b.particle_count();
    let BodyShape::Oriented(shape) = &spec.shape else {
        unreachable!("only oriented bodies are built here");
    };
    match shape {
        OrientedSpec::Rod(r) => {
            r.build(b, name).map_err(at)?;
        }
        OrientedSpec::Mobile(m) => {
            m.build(b, name).map_err(at)?;
        }
        OrientedSpec::JellyCube(j) => {
            j.build(b, name).map_err(at)?;
        }
        OrientedSpec::Sheet(s) => {
            s.build(b, name).map_err(at)?;
        }
        OrientedSpec::Mesh { file, scale, translate, mass, radius, springs } => {
            let span = spec.key_spans.get("file").cloned().unwrap_or(spec.span.clone());
            let mesh = scene.load_mesh(file, span)?;
            GeneralizedMesh {
                mesh,
                scale: *scale,
                translate: *translate,
                mass: *mass,
                radius: *radius,
                springs: *springs,
            }
            .build(b, name)
            .map_err(at)?;
        }
    }
    Ok(first..b.particle_count())
}
