//! Scene keys of the thesis's bodies (004): `pair` (1D), `ring` (2D),
//! `pressure-sphere` and `pressure-mesh` (3D), one or two layers, filled with gas.
//! Reading maps keys to the engine's builders ([`Pair`], [`Ring`],
//! [`PressureSphere`], [`PressureMesh`]); building reads OBJ files and reports
//! builder errors at the key they name. The format is in `scenes/README.md`.

use std::ops::Range;

use glam::DVec3;
use wobble::build::pair::Pair;
use wobble::build::ring::Ring;
use wobble::build::sphere::SphereMesh;
use wobble::build::twolayer::{
    DEFAULT_INNER_RATIO, Material, PressureMesh, PressureSphere, ResolvedMaterial, TwoLayerParams,
};
use wobble::build::{BuildError, WorldBuilder};
use wobble::constraint::containment::DEFAULT_MARGIN_FRACTION;
use wobble::force::{SpringKind, SpringParams};

use crate::doc::Table;
use crate::error::SceneError;
use crate::fields::read_springs;
pub use crate::spec::PressureMeshSpec;
use crate::spec::{BodyShape, BodySpec, Scene};

/// Default inward offset of an OBJ body's inner layer, as a fraction of the mean
/// distance of its vertices from their centroid (the spheres' 1 − 0.8).
pub const DEFAULT_THICKNESS_FRACTION: f64 = 1.0 - DEFAULT_INNER_RATIO;

/// Body types read here.
pub const TYPES: [&str; 4] = ["pair", "ring", "pressure-sphere", "pressure-mesh"];

/// Reads the body table `t` of type `kind` (one of [`TYPES`]); `origin` and
/// `particle_radius` are the common keys already read.
pub(crate) fn read(
    t: &Table<'_, '_>,
    kind: &str,
    origin: DVec3,
    particle_radius: f64,
) -> Result<BodyShape, SceneError> {
    if t.has("mass") && matches!(kind, "pair" | "ring") {
        return Err(t
            .error(t.span_of("mass"), format!("a `{kind}` body sets masses per particle, not a total `mass`"))
            .with_help(if kind == "pair" {
                "use `masses = [m1, m2]` (kg each; default 1, the thesis's MASS)"
            } else {
                "use `particle_mass` (kg per outer particle; default 1, the thesis's MASS) and `inner_particle_mass`"
            }));
    }
    if kind == "pair" {
        return read_pair(t, origin, particle_radius);
    }
    // Bodies built from material values bend, which holds their shape with one
    // layer; the thesis's per-particle bodies need two, and so does a body that
    // sets its inner layer or lining.
    let inner_keys = ["thickness", "inner_radius", "layer_stiffness", "layer_damping", "inner_pressure"];
    let default_layers = if material_mode(t, kind) && !inner_keys.iter().any(|k| t.has(k)) { 1 } else { 2 };
    let layers = match t.usize("layers")? {
        None => default_layers,
        Some(n @ (1 | 2)) => n as u32,
        Some(n) => {
            return Err(t.error(t.span_of("layers"), format!("`layers` = {n} must be 1 or 2")));
        }
    };
    let params = read_params(t, kind, layers, particle_radius)?;
    match kind {
        "ring" | "pressure-sphere" => {
            let center = t.vec3_or("center", origin)?;
            let radius = t.positive("radius", Some(wobble::build::twolayer::DEFAULT_RADIUS), "m")?;
            let inner_radius = read_inner_radius(t, layers, radius)?;
            if kind == "ring" {
                let count = t.count("count", Some(wobble::build::ring::DEFAULT_RING_COUNT), 3)?;
                Ok(BodyShape::Ring(Ring { center, radius, inner_radius, count, params }))
            } else {
                let mesh = read_sphere_mesh(t, SphereMesh::Uniform { level: 1 })?;
                Ok(BodyShape::PressureSphere(PressureSphere { center, radius, inner_radius, mesh, params }))
            }
        }
        _ => {
            let file = t.str("file")?.ok_or_else(|| t.missing("file", "the path of a closed OBJ surface"))?.to_owned();
            let thickness = match t.f64("thickness")? {
                None => None,
                Some(_) if layers == 1 => {
                    return Err(t
                        .error(t.span_of("thickness"), "`thickness` sets the inner layer, but `layers` = 1")
                        .with_help("remove `thickness`, or set `layers = 2`"));
                }
                Some(_) => Some(t.positive("thickness", None, "m")?),
            };
            Ok(BodyShape::PressureMesh(PressureMeshSpec {
                file,
                scale: t.positive("scale", Some(1.0), "")?,
                translate: origin,
                weld: t.positive_opt("weld", "file units")?,
                layers,
                thickness,
                params,
            }))
        }
    }
}

fn read_pair(t: &Table<'_, '_>, origin: DVec3, radius: f64) -> Result<BodyShape, SceneError> {
    let d = Pair::default();
    let springs = read_springs(t, &[(SpringKind::Structural, Some(d.structural))])?;
    let masses = match t.array("masses")? {
        None => d.masses,
        Some(items) => {
            let bad = || t.error(t.span_of("masses"), "`masses` must be [m1, m2], two positive numbers (kg)");
            if items.len() != 2 {
                return Err(bad());
            }
            let mut m = [0.0; 2];
            for (slot, v) in m.iter_mut().zip(items) {
                *slot = crate::doc::number(v).filter(|x| x.is_finite() && *x > 0.0).ok_or_else(bad)?;
            }
            m
        }
    };
    let start = t.vec3_or("start", origin)?;
    Ok(BodyShape::Pair(Pair {
        start,
        end: t.vec3_or("end", start + (d.end - d.start))?,
        masses,
        structural: springs[&SpringKind::Structural].ok_or_else(|| {
            t.error(t.span_of("springs"), "a pair needs its structural spring").with_help("remove `structural = false`")
        })?,
        radius,
    }))
}

fn read_inner_radius(t: &Table<'_, '_>, layers: u32, radius: f64) -> Result<Option<f64>, SceneError> {
    match (layers, t.has("inner_radius")) {
        (1, true) => Err(t
            .error(t.span_of("inner_radius"), "`inner_radius` sets the inner layer, but `layers` = 1")
            .with_help("remove `inner_radius`, or set `layers = 2`")),
        (1, false) => Ok(None),
        _ => Ok(Some(t.positive("inner_radius", Some(DEFAULT_INNER_RATIO * radius), "m")?)),
    }
}

/// `level`, or `slices` and `stacks`, as for a ball.
fn read_sphere_mesh(t: &Table<'_, '_>, default: SphereMesh) -> Result<SphereMesh, SceneError> {
    match (t.usize("level")?, t.usize("slices")?, t.usize("stacks")?) {
        (Some(level), None, None) => Ok(SphereMesh::Uniform { level: u32::try_from(level).unwrap_or(u32::MAX) }),
        (None, Some(slices), Some(stacks)) => Ok(SphereMesh::LatLong {
            slices: u32::try_from(slices).unwrap_or(u32::MAX),
            stacks: u32::try_from(stacks).unwrap_or(u32::MAX),
        }),
        (None, None, None) => Ok(default),
        _ => Err(t
            .error(t.span(), "a sphere takes either `level` (uniform) or `slices` and `stacks` (latitude-longitude)")
            .with_help("e.g. `level = 1`, or `slices = 12` with `stacks = 6`")),
    }
}

/// Keys of a body built from material values (`TwoLayerParams::material`).
const MATERIAL_KEYS: [&str; 9] = [
    "mass",
    "density",
    "over_pressure",
    "membrane_stiffness",
    "membrane_damping",
    "layer_stiffness",
    "layer_damping",
    "bending_stiffness",
    "bending_damping",
];
/// Keys of a body built from the thesis's per-particle values.
const PER_PARTICLE_KEYS: [&str; 6] =
    ["particle_mass", "inner_particle_mass", "inner_bottom_mass", "pressure", "springs", "normalise"];

/// Whether a body is built from material values: a `pressure-mesh` unless it
/// sets a per-particle value, a `pressure-sphere` when it sets a material value.
fn material_mode(t: &Table<'_, '_>, kind: &str) -> bool {
    match (MATERIAL_KEYS.iter().any(|k| t.has(k)), PER_PARTICLE_KEYS.iter().any(|k| t.has(k))) {
        (true, _) => kind != "ring",
        (false, true) => false,
        (false, false) => kind == "pressure-mesh",
    }
}

/// The material values of a body that has them ([`material_mode`]); never mixed
/// with per-particle values.
fn read_material(t: &Table<'_, '_>, kind: &str, layers: u32) -> Result<Option<Material>, SceneError> {
    let given = MATERIAL_KEYS.iter().find(|k| t.has(k));
    let per_particle = PER_PARTICLE_KEYS.iter().find(|k| t.has(k));
    let material = match (given, per_particle) {
        (Some(m), Some(p)) => {
            return Err(t
                .error(
                    t.span_of(p),
                    format!(
                        "`{p}` is a per-particle value (the thesis's), but `{m}` builds this body from material values"
                    ),
                )
                .with_help(
                    "use either per-particle values (particle_mass, springs, pressure) or material values \
                     (mass or density, membrane_stiffness, layer_stiffness, over_pressure, dampings)",
                ));
        }
        (Some(_), None) => true,
        (None, Some(_)) => false,
        (None, None) => kind == "pressure-mesh",
    };
    if !material {
        return Ok(None);
    }
    if t.has("mass") && t.has("density") {
        return Err(t
            .error(t.span_of("density"), "give `mass` or `density`, not both")
            .with_help("mass is the body's total, kg; density fills its enclosed volume, kg/m³"));
    }
    if layers == 1 {
        for key in ["layer_stiffness", "layer_damping"] {
            if t.has(key) {
                return Err(t
                    .error(t.span_of(key), format!("`{key}` sets the lining between two layers, but `layers` = 1"))
                    .with_help(format!("remove `{key}`, or set `layers = 2`")));
            }
        }
    }
    let opt = |key: &str, unit: &str| t.positive_opt(key, unit);
    let non_negative = |key: &str, unit: &str| -> Result<Option<f64>, SceneError> {
        if t.has(key) { t.non_negative(key, 0.0, unit).map(Some) } else { Ok(None) }
    };
    Ok(Some(Material {
        mass: opt("mass", "kg")?,
        density: opt("density", "kg/m³")?,
        over_pressure: non_negative("over_pressure", "Pa")?,
        membrane_stiffness: opt("membrane_stiffness", "N/m")?,
        membrane_damping: non_negative("membrane_damping", "N s/m")?,
        layer_stiffness: opt("layer_stiffness", "Pa")?,
        layer_damping: non_negative("layer_damping", "Pa s")?,
        bending_stiffness: non_negative("bending_stiffness", "J")?,
        bending_damping: non_negative("bending_damping", "J s")?,
    }))
}

/// Masses, springs, gas and containment of a layered body.
fn read_params(t: &Table<'_, '_>, kind: &str, layers: u32, particle_radius: f64) -> Result<TwoLayerParams, SceneError> {
    let d = TwoLayerParams::default();
    let two = layers == 2;
    if kind == "ring"
        && let Some(key) = MATERIAL_KEYS.iter().find(|k| t.has(k))
    {
        return Err(t
            .error(
                t.span_of(key),
                format!("`{key}` is a material value; a ring takes the thesis's per-particle values"),
            )
            .with_help("use particle_mass, springs and pressure"));
    }
    let material = read_material(t, kind, layers)?;
    for key in ["inner_particle_mass", "inner_bottom_mass", "inner_pressure"] {
        if !two && t.has(key) {
            return Err(t
                .error(t.span_of(key), format!("`{key}` sets the inner layer, but `layers` = 1"))
                .with_help(format!("remove `{key}`, or set `layers = 2`")));
        }
    }
    let mut kinds: Vec<(SpringKind, Option<SpringParams>)> = vec![(SpringKind::Structural, d.structural)];
    if two {
        kinds.extend([
            (SpringKind::Radius, d.radius),
            (SpringKind::ShearLeft, d.shear_left),
            (SpringKind::ShearRight, d.shear_right),
        ]);
    }
    let springs = read_springs(t, &kinds)?;
    let outer_mass = t.positive("particle_mass", Some(d.outer_mass), "kg")?;
    let containment = match t.bool("containment")? {
        Some(false) => None,
        _ => Some(t.non_negative("containment_margin", DEFAULT_MARGIN_FRACTION, "fraction of the layer gap")?),
    };
    if containment.is_some_and(|m| m >= 1.0) {
        return Err(t.error(t.span_of("containment_margin"), "`containment_margin` must lie in [0, 1)"));
    }
    Ok(TwoLayerParams {
        outer_mass,
        inner_mass: t.positive("inner_particle_mass", Some(outer_mass), "kg")?,
        inner_bottom_mass: if t.has("inner_bottom_mass") {
            Some(t.positive("inner_bottom_mass", None, "kg")?)
        } else {
            None
        },
        structural: springs[&SpringKind::Structural],
        radius: springs.get(&SpringKind::Radius).copied().flatten(),
        shear_left: springs.get(&SpringKind::ShearLeft).copied().flatten(),
        shear_right: springs.get(&SpringKind::ShearRight).copied().flatten(),
        pressure: t.non_negative("pressure", d.pressure, "nRT, J")?,
        inner_pressure: t.non_negative("inner_pressure", d.inner_pressure, "nRT, J")?,
        normalise: t.bool("normalise")?.unwrap_or(d.normalise),
        containment,
        particle_radius,
        material,
    })
}

/// Builds one of these bodies; returns its inner particles (empty for one layer)
/// and the material values it was built from, if any.
pub(crate) fn build(
    scene: &Scene,
    b: &mut WorldBuilder,
    spec: &BodySpec,
    at: &dyn Fn(BuildError) -> SceneError,
) -> Result<(Range<usize>, Option<ResolvedMaterial>), SceneError> {
    let name = &spec.name;
    let first = b.particle_count();
    let handle = match &spec.shape {
        BodyShape::Pair(p) => {
            p.build(b, name).map_err(at)?;
            return Ok((first..first, None));
        }
        BodyShape::Ring(r) => r.build(b, name).map_err(at)?,
        BodyShape::PressureSphere(s) => s.build(b, name).map_err(at)?,
        BodyShape::PressureMesh(m) => {
            let mesh = scene.load_body_mesh(spec, &m.file, m.weld)?;
            let thickness = (m.layers == 2).then(|| {
                m.thickness.unwrap_or_else(|| {
                    let n = mesh.vertices.len().max(1) as f64;
                    let c = mesh.vertices.iter().copied().sum::<DVec3>() / n;
                    let mean = mesh.vertices.iter().map(|v| v.distance(c)).sum::<f64>() / n;
                    DEFAULT_THICKNESS_FRACTION * mean * m.scale
                })
            });
            PressureMesh {
                mesh,
                scale: m.scale,
                translate: m.translate,
                thickness,
                fit_thickness: m.thickness.is_none(),
                params: m.params,
            }
            .build(b, name)
            .map_err(at)?
        }
        _ => unreachable!("only the thesis's body types are built here"),
    };
    Ok((handle.inner, handle.material))
}
