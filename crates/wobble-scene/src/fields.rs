//! Reading the fields that several kinds of body share: spring groups and laws,
//! membranes, particle selections, references to other bodies, names.

use crate::doc::{Table, vec3};
use crate::error::{SceneError, nearest};
use crate::spec::Selection;
use glam::DVec3;
use std::collections::BTreeMap;
use wobble::force::{CubicLaw, Membrane, SpringKind, SpringLaw, SpringParams};

/// Checks a name read at `key` of `t` (see [`crate::input::check_name`]).
pub(crate) fn checked_name(t: &Table<'_, '_>, key: &str, name: String) -> Result<String, SceneError> {
    crate::input::check_name(&name).map_err(|why| t.error(t.span_of(key), format!("`{key}`: {why}")))?;
    Ok(name)
}

/// Reads `law` and its parameters (`a1`, `k1`, `a2`, `k2`, `jacobian_damping` for the
/// cubic law; K1 and K2 in N/m, kept as multiples of `stiffness`).
pub(crate) fn read_law(t: &Table<'_, '_>, stiffness: f64, default: SpringLaw) -> Result<SpringLaw, SceneError> {
    const CUBIC_KEYS: [&str; 5] = ["a1", "k1", "a2", "k2", "jacobian_damping"];
    let name = t.str("law")?;
    let law = match name {
        None => default,
        Some("linear") => SpringLaw::Linear,
        Some("stvk") => SpringLaw::StVK,
        Some("cubic") => {
            let a1 = t.f64("a1")?.ok_or_else(|| t.missing("a1", "the stretch ratio where the slope is k1 (> 1)"))?;
            let a2 =
                t.f64("a2")?.ok_or_else(|| t.missing("a2", "the compression ratio where the slope is k2 (< 1)"))?;
            let k1 = t.positive("k1", None, "N/m")?;
            let k2 = t.positive("k2", None, "N/m")?;
            let damping = t.f64_or("jacobian_damping", wobble::force::spring::DEFAULT_JACOBIAN_DAMPING)?;
            return CubicLaw::new(stiffness, a1, k1, a2, k2, damping)
                .map(SpringLaw::Cubic)
                .map_err(|e| t.error(t.span_of("law"), e.to_string()));
        }
        Some(other) => {
            return Err(t
                .error(t.span_of("law"), format!("unknown spring law `{other}`"))
                .with_help("choose from: linear, stvk, cubic"));
        }
    };
    if let Some(key) = CUBIC_KEYS.iter().find(|k| t.has(k)) {
        return Err(t
            .error(
                t.span_of(key),
                format!("`{key}` belongs to the cubic law, but this spring's law is `{}`", law.name()),
            )
            .with_help("add `law = \"cubic\"`"));
    }
    Ok(law)
}

/// Reads a cloth's `membrane = "stvk"` with `youngs_modulus` (N/m) and `poisson`, or
/// `lame_mu` and `lame_lambda` (N/m).
pub(crate) fn read_membrane(t: &Table<'_, '_>) -> Result<Option<Membrane>, SceneError> {
    const KEYS: [&str; 4] = ["youngs_modulus", "poisson", "lame_mu", "lame_lambda"];
    match t.str("membrane")? {
        None => {
            if let Some(key) = KEYS.iter().find(|k| t.has(k)) {
                return Err(t
                    .error(t.span_of(key), format!("`{key}` describes a membrane, but this cloth has none"))
                    .with_help("add `membrane = \"stvk\"`"));
            }
            Ok(None)
        }
        Some("stvk") => {
            let young = t.has("youngs_modulus") || t.has("poisson");
            let lame = t.has("lame_mu") || t.has("lame_lambda");
            if young && lame {
                return Err(t.error(
                    t.span_of("membrane"),
                    "give either `youngs_modulus` and `poisson`, or `lame_mu` and `lame_lambda`, not both",
                ));
            }
            if lame {
                let mu = t.non_negative("lame_mu", 0.0, "N/m")?;
                let lambda = t.non_negative("lame_lambda", 0.0, "N/m")?;
                return Ok(Some(Membrane { mu, lambda }));
            }
            let e = t.positive("youngs_modulus", None, "N/m")?;
            let nu = t.f64_or("poisson", 0.3)?;
            if !(0.0..0.5).contains(&nu) {
                return Err(t.error(t.span_of("poisson"), format!("`poisson` = {nu} must lie in [0, 0.5)")));
            }
            Ok(Some(Membrane::from_young(e, nu)))
        }
        Some(other) => Err(t
            .error(t.span_of("membrane"), format!("unknown membrane model `{other}`"))
            .with_help("choose `stvk`, or leave `membrane` out for springs")),
    }
}

/// Reads `{ stiffness, damping, law, ... }` for one spring kind.
pub(crate) fn read_spring(t: &Table<'_, '_>, default: SpringParams) -> Result<SpringParams, SceneError> {
    let stiffness = t.non_negative("stiffness", default.stiffness, "N/m")?;
    let damping = t.non_negative("damping", default.damping, "N s/m")?;
    let law = read_law(t, stiffness, default.law)?;
    t.finish()?;
    Ok(SpringParams { stiffness, damping, law })
}

/// Reads `[body.springs]`: one entry per kind the builder supports. Returns, per
/// kind, `Some(params)` (present), or the builder default; a kind given as `false`
/// is switched off.
pub(crate) fn read_springs(
    body: &Table<'_, '_>,
    kinds: &[(SpringKind, Option<SpringParams>)],
) -> Result<BTreeMap<SpringKind, Option<SpringParams>>, SceneError> {
    let mut out: BTreeMap<SpringKind, Option<SpringParams>> = kinds.iter().copied().collect();
    let Some(t) = body.table("springs")? else {
        return Ok(out);
    };
    for &(kind, default) in kinds {
        let key = kind.as_str();
        let Some(v) = t.get(key) else { continue };
        if let Some(false) = v.get_ref().as_bool() {
            out.insert(kind, None);
            continue;
        }
        let Some(sub) = t.table(key)? else { continue };
        let base = default.unwrap_or(SpringParams::linear(1000.0, 1.0));
        out.insert(kind, Some(read_spring(&sub, base)?));
    }
    t.finish()?;
    Ok(out)
}

pub(crate) fn read_points(t: &Table<'_, '_>, key: &str) -> Result<Vec<DVec3>, SceneError> {
    let Some(items) = t.array(key)? else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .map(|v| vec3(v).ok_or_else(|| t.error(v.span(), format!("each entry of `{key}` must be [x, y, z]"))))
        .collect()
}

pub(crate) fn read_selection(t: &Table<'_, '_>) -> Result<Selection, SceneError> {
    let mut s = Selection { span: t.span(), ..Selection::default() };
    s.all = t.bool("all")?.unwrap_or(false);
    if let Some(items) = t.array("indices")? {
        for v in items {
            let i = crate::doc::integer(v).and_then(|i| usize::try_from(i).ok());
            s.indices.push(i.ok_or_else(|| t.error(v.span(), "indices must be non-negative integers"))?);
        }
    }
    if let Some(items) = t.array("grid")? {
        for v in items {
            let coords = match v.get_ref() {
                toml::de::DeValue::Array(a) => a
                    .iter()
                    .map(|c| crate::doc::integer(c).and_then(|i| usize::try_from(i).ok()))
                    .collect::<Option<Vec<usize>>>(),
                _ => None,
            };
            s.grid.push(coords.ok_or_else(|| t.error(v.span(), "grid entries must be [i, j] or [i, j, k]"))?);
        }
    }
    s.near = read_points(t, "near")?;
    if let Some(items) = t.array("box")? {
        for v in items {
            let pair = match v.get_ref() {
                toml::de::DeValue::Array(a) if a.len() == 2 => vec3(&a[0]).zip(vec3(&a[1])),
                _ => None,
            };
            s.boxes.push(
                pair.ok_or_else(|| t.error(v.span(), "each box must be [[xmin, ymin, zmin], [xmax, ymax, zmax]]"))?,
            );
        }
    }
    if let Some(items) = t.array("edge")? {
        for v in items {
            let name = v.get_ref().as_str().ok_or_else(|| t.error(v.span(), "edges must be strings"))?;
            const EDGES: [&str; 6] = ["top", "bottom", "left", "right", "first", "last"];
            if !EDGES.contains(&name) {
                return Err(t
                    .error(v.span(), format!("unknown edge `{name}`"))
                    .with_help("cloth edges: top, bottom, left, right; chain ends: first, last"));
            }
            s.edges.push(name.to_owned());
        }
    }
    t.finish()?;
    if !s.all
        && s.indices.is_empty()
        && s.grid.is_empty()
        && s.near.is_empty()
        && s.boxes.is_empty()
        && s.edges.is_empty()
    {
        return Err(t
            .error(t.span(), "the selection is empty")
            .with_help("use any of: all = true, indices = [..], grid = [[i, j], ..], near = [[x, y, z], ..], box = [[min, max], ..], edge = [\"top\"]"));
    }
    Ok(s)
}

pub(crate) fn read_body_ref(t: &Table<'_, '_>, names: &[&str]) -> Result<String, SceneError> {
    let body = t.str("body")?.ok_or_else(|| t.missing("body", "the name of a body"))?;
    if !names.contains(&body) {
        let err = t.error(t.span_of("body"), format!("no body is named `{body}`"));
        return Err(match nearest(body, names.iter().copied()) {
            Some(s) => err.with_help(format!("did you mean `{s}`? bodies: {}", names.join(", "))),
            None => err.with_help(format!("bodies: {}", names.join(", "))),
        });
    }
    Ok(body.to_owned())
}

/// A box's edge lengths, m: `size = [x, y, z]`, or one number for a cube.
pub(crate) fn read_box_size(t: &Table<'_, '_>) -> Result<DVec3, SceneError> {
    let size = match t.get("size") {
        None => return Err(t.missing("size", "the edge lengths [x, y, z] in m, or one number for a cube")),
        Some(v) => match (crate::doc::number(v), crate::doc::vec3(v)) {
            (Some(a), _) => DVec3::splat(a),
            (None, Some(s)) => s,
            _ => return Err(t.error(v.span(), "`size` must be a number or [x, y, z] (m)")),
        },
    };
    if !(size.is_finite() && size.min_element() > 0.0) {
        return Err(t.error(t.span_of("size"), format!("every edge in `size` = {size} must be positive (m)")));
    }
    Ok(size)
}
