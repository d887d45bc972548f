//! Overrides of scene values by dotted path: `wobble run --set KEY=VALUE` and the
//! Python bindings' `scene.set(key, value)`.
//!
//! A path names tables by their keys and the entries of an array of tables
//! (`[[body]]`, `[[collider]]`, …) by their `name` (a body without one is named by
//! its `type`) or by their 1-based position: `body.cloth.springs.structural.stiffness`,
//! `simulation.dt`, `collider.2.friction`. The value is a TOML value (`800`, `1e-3`,
//! `true`, `[0, 1, 0]`, `"implicit-euler"`); a bare word such as `implicit-euler` is
//! taken as a string.
//!
//! An override edits the scene's text: an existing value is replaced where it
//! stands, a missing key is added to the table that the path reaches (as a dotted
//! key after the table's header). The edited text is then read as any scene is, so an
//! overridden value meets exactly the checks and messages of the same value written
//! in the file; an error points into the edited text, whose name says it was edited.
//! The run folder keeps that text as its `scene.toml`, so the run stays reproducible.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

use crate::error::{SceneError, Source, nearest};

/// One `KEY=VALUE` override.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    /// Dotted path, e.g. `body.cloth.springs.structural.stiffness`.
    pub key: String,
    /// The value as TOML text (a bare word already quoted).
    pub value: String,
}

/// Keys made of these characters need no quotes in TOML.
fn is_bare(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A key as TOML writes it.
fn toml_key(key: &str) -> String {
    if is_bare(key) { key.to_owned() } else { quote(key) }
}

/// A basic TOML string holding `s`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Override {
    /// Reads `KEY=VALUE` (the form the command line takes).
    pub fn parse(arg: &str) -> Result<Self, SceneError> {
        let src = Source::new("--set", arg);
        let Some((key, value)) = arg.split_once('=') else {
            return Err(SceneError::new(&src, 0..arg.len(), "expected KEY=VALUE")
                .with_help("e.g. --set body.cloth.springs.structural.stiffness=800"));
        };
        Self::new(key.trim(), value.trim())
    }

    /// An override of `key` with `value` (TOML text, or a bare word taken as a string).
    pub fn new(key: &str, value: &str) -> Result<Self, SceneError> {
        let arg = format!("{key}={value}");
        let src = Source::new("--set", arg.as_str());
        if key.is_empty() {
            return Err(SceneError::new(&src, 0..0, "the key is empty")
                .with_help("name a value by its dotted path, e.g. simulation.dt"));
        }
        let mut at = 0;
        for seg in key.split('.') {
            if !is_bare(seg) {
                return Err(SceneError::new(&src, at..at + seg.len(), format!("`{seg}` is not a key of a path"))
                    .with_help("a path is keys of letters, digits, `_` and `-` joined by dots"));
            }
            at += seg.len() + 1;
        }
        let vspan = key.len() + 1..arg.len();
        if value.is_empty() {
            return Err(SceneError::new(&src, vspan, "the value is empty"));
        }
        if value.contains(['\n', '\r']) {
            return Err(SceneError::new(&src, vspan, "the value must be on one line"));
        }
        let value = if DeTable::parse(&format!("v = {value}")).is_ok() {
            value.to_owned()
        } else if value.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.+".contains(&b)) {
            quote(value)
        } else {
            return Err(SceneError::new(&src, vspan, format!("`{value}` is not a TOML value"))
                .with_help("write numbers as 800 or 1e-3, text as \"name\", vectors as [0, 1, 0]"));
        };
        Ok(Self { key: key.to_owned(), value })
    }
}

/// Applies `overrides` in order to the scene text of `source`; the result is
/// named after the file with the note that it was edited.
pub fn apply(source: &Source, overrides: &[Override]) -> Result<Source, SceneError> {
    if overrides.is_empty() {
        return Ok(source.clone());
    }
    let name = if source.name.ends_with("(with --set)") {
        source.name.clone()
    } else {
        format!("{} (with --set)", source.name)
    };
    let mut text = source.text.to_string();
    for o in overrides {
        text = apply_one(&Source::new(name.clone(), text.as_str()), o)?;
    }
    Ok(Source::new(name, text))
}

/// Where a key missing from the table a path reached is written.
enum Anchor {
    /// At the start of the file (keys of the root table).
    Root,
    /// After the header line of a `[table]` or `[[array]]` entry, at this offset.
    Line(usize),
    /// Before the closing brace (at this offset) of an inline table.
    Inline { close: usize, empty: bool },
}

fn apply_one(source: &Source, o: &Override) -> Result<String, SceneError> {
    let text: &str = &source.text;
    let doc = DeTable::parse(text).map_err(|e| {
        SceneError::new(source, e.span().unwrap_or(0..0), format!("invalid TOML: {}", e.message().trim()))
    })?;
    let arg = format!("{}={}", o.key, o.value);
    let set_src = Source::new("--set", arg.as_str());
    let segs: Vec<&str> = o.key.split('.').collect();
    // Byte range of segment `i` within `arg`, for errors about the path.
    let seg_span = |i: usize| -> Range<usize> {
        let start: usize = segs[..i].iter().map(|s| s.len() + 1).sum();
        start..start + segs[i].len()
    };
    let mut table: &DeTable<'_> = doc.get_ref();
    let mut anchor = Anchor::Root;
    let mut prefix: Vec<String> = Vec::new();
    let mut header: Vec<String> = Vec::new();
    let mut i = 0;
    while i < segs.len() {
        let seg = segs[i];
        let Some(value) = table.get(seg) else {
            let mut path: Vec<String> = prefix.clone();
            path.extend(segs[i..].iter().map(|s| (*s).to_owned()));
            let line = format!("{} = {}", path.iter().map(|k| toml_key(k)).collect::<Vec<_>>().join("."), o.value);
            return Ok(insert(text, &anchor, &line));
        };
        header.push(seg.to_owned());
        let path_so_far = segs[..=i].join(".");
        if i + 1 == segs.len() {
            if let DeValue::Table(_) = value.get_ref() {
                return Err(SceneError::new(&set_src, seg_span(i), format!("`{path_so_far}` is a table"))
                    .with_help("set one of its keys, e.g. `{path_so_far}.KEY=VALUE`"));
            }
            if is_table_array(value.get_ref()) {
                return Err(SceneError::new(&set_src, seg_span(i), format!("`{path_so_far}` is an array of tables"))
                    .with_help(format!("name one entry and a key in it, e.g. `{path_so_far}.1.KEY=VALUE`")));
            }
            let span = value.span();
            return Ok(format!("{}{}{}", &text[..span.start], o.value, &text[span.end..]));
        }
        match value.get_ref() {
            DeValue::Table(t) => {
                enter(text, value.span(), t, &header, seg, &mut anchor, &mut prefix);
                table = t;
            }
            DeValue::Array(items) if is_table_array(value.get_ref()) => {
                i += 1;
                let sel = segs[i];
                let names: Vec<String> = items.iter().map(|v| entry_name(v.get_ref())).collect();
                let index = match sel.parse::<usize>() {
                    Ok(n) if (1..=items.len()).contains(&n) => n - 1,
                    Ok(n) => {
                        return Err(SceneError::new(
                            &set_src,
                            seg_span(i),
                            format!("`{path_so_far}` has {} entries, so there is no entry {n}", items.len()),
                        )
                        .with_help("entries are counted from 1"));
                    }
                    Err(_) => names.iter().position(|n| n == sel).ok_or_else(|| {
                        let err =
                            SceneError::new(&set_src, seg_span(i), format!("no `{path_so_far}` is named `{sel}`"));
                        match nearest(sel, names.iter().map(String::as_str)) {
                            Some(s) => err.with_help(format!("did you mean `{s}`? names here: {}", names.join(", "))),
                            None => err.with_help(format!("names here: {} (or a 1-based position)", names.join(", "))),
                        }
                    })?,
                };
                let DeValue::Table(t) = items[index].get_ref() else { unreachable!("checked by is_table_array") };
                enter(text, items[index].span(), t, &header, seg, &mut anchor, &mut prefix);
                table = t;
            }
            other => {
                return Err(SceneError::new(
                    &set_src,
                    seg_span(i + 1),
                    format!("`{path_so_far}` is a {}, so it has no key `{}`", other.type_str(), segs[i + 1]),
                ));
            }
        }
        i += 1;
    }
    unreachable!("the loop returns at the last segment")
}

fn is_table_array(v: &DeValue<'_>) -> bool {
    matches!(v, DeValue::Array(items) if !items.is_empty() && items.iter().all(|v| matches!(v.get_ref(), DeValue::Table(_))))
}

/// The name an entry of an array of tables goes by: its `name`, else its `type`.
fn entry_name(v: &DeValue<'_>) -> String {
    let DeValue::Table(t) = v else { return String::new() };
    ["name", "type"]
        .iter()
        .find_map(|k| t.get(*k).and_then(|v| v.get_ref().as_str()).map(str::to_owned))
        .unwrap_or_default()
}

/// Steps into a table at `span`: a table with its own header or an inline table
/// becomes the anchor for missing keys; a table made by dotted keys or implied by a
/// deeper header keeps the anchor and extends the dotted prefix.
fn enter(
    text: &str,
    span: Range<usize>,
    table: &DeTable<'_>,
    header: &[String],
    key: &str,
    anchor: &mut Anchor,
    prefix: &mut Vec<String>,
) {
    let at = &text[span.start.min(text.len())..];
    if at.starts_with('{') && text[..span.end].ends_with('}') {
        *anchor = Anchor::Inline { close: span.end - 1, empty: table.is_empty() };
        prefix.clear();
    } else if let Some(path) = header_path(at)
        && path == header
    {
        let end = at.find('\n').map_or(text.len(), |n| span.start + n + 1);
        *anchor = Anchor::Line(end);
        prefix.clear();
    } else {
        prefix.push(key.to_owned());
    }
}

/// The dotted path of a `[a.b]` or `[[a.b]]` header at the start of `s`.
fn header_path(s: &str) -> Option<Vec<String>> {
    let line = s.lines().next()?;
    let inner = line
        .strip_prefix("[[")
        .and_then(|l| l.split("]]").next())
        .or_else(|| line.strip_prefix('[').and_then(|l| l.split(']').next()))?;
    Some(inner.split('.').map(|k| k.trim().trim_matches(['"', '\'']).to_owned()).collect())
}

fn insert(text: &str, anchor: &Anchor, line: &str) -> String {
    match *anchor {
        Anchor::Root => format!("{line}\n{text}"),
        Anchor::Line(at) if at >= text.len() && !text.ends_with('\n') => format!("{text}\n{line}\n"),
        Anchor::Line(at) => format!("{}{line}\n{}", &text[..at], &text[at..]),
        Anchor::Inline { close, empty } => {
            let sep = if empty { " " } else { ", " };
            format!("{}{sep}{line} {}", text[..close].trim_end(), &text[close..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENE: &str = r#"# a test scene
[simulation]
dt = 1e-3
steps = 10

[[body]]
type = "cloth"
nx = 8
ny = 8

[body.springs.structural]
stiffness = 500

[[body]]
name = "ball"
type = "pressure"
springs = { structural = { stiffness = 100 } }

[[collider]]
type = "plane"
normal = [0, 1, 0]
"#;

    fn set(key: &str, value: &str) -> Result<String, SceneError> {
        let src = Source::new("s.toml", SCENE);
        apply(&src, &[Override::new(key, value)?]).map(|s| s.text.to_string())
    }

    #[test]
    fn replaces_a_value_where_it_stands() {
        let out = set("simulation.dt", "2e-4").unwrap();
        assert!(out.contains("\ndt = 2e-4\n"), "{out}");
        assert_eq!(out.lines().count(), SCENE.lines().count());
        let out = set("body.cloth.springs.structural.stiffness", "800").unwrap();
        assert!(out.contains("[body.springs.structural]\nstiffness = 800\n"), "{out}");
        let out = set("body.ball.springs.structural.stiffness", "7").unwrap();
        assert!(out.contains("springs = { structural = { stiffness = 7 } }"), "{out}");
        let out = set("collider.1.normal", "[0, 0, 1]").unwrap();
        assert!(out.contains("normal = [0, 0, 1]"), "{out}");
    }

    #[test]
    fn adds_a_missing_key_to_the_table_the_path_reaches() {
        let out = set("simulation.integrator", "implicit-euler").unwrap();
        assert!(out.contains("[simulation]\nintegrator = \"implicit-euler\"\ndt"), "{out}");
        let out = set("body.cloth.mass", "2").unwrap();
        assert!(out.contains("type = \"cloth\"\n") && out.contains("[[body]]\nmass = 2\ntype = \"cloth\""), "{out}");
        let out = set("body.2.springs.shear.stiffness", "9").unwrap();
        assert!(
            out.contains("springs = { structural = { stiffness = 100 }, shear = { stiffness = 9 } }")
                || out.contains("springs = { structural = { stiffness = 100 }, shear.stiffness = 9 }"),
            "{out}"
        );
        let out = set("body.cloth.springs.bend.stiffness", "3").unwrap();
        assert!(
            out.contains("[body.springs.structural]\nstiffness = 500\n") && out.contains("springs.bend.stiffness = 3"),
            "{out}"
        );
        let out = set("output.frame_every", "5").unwrap();
        assert!(out.starts_with("output.frame_every = 5\n"), "{out}");
        for out in
            [set("body.cloth.springs.bend.stiffness", "3"), set("output.frame_every", "5"), set("body.cloth.mass", "2")]
        {
            let out = out.unwrap();
            DeTable::parse(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
        }
    }

    #[test]
    fn paths_that_lead_nowhere_are_errors_naming_the_segment() {
        let e = set("body.clth.mass", "2").unwrap_err();
        assert!(
            e.message.contains("no `body` is named `clth`") && e.help.as_deref().unwrap().contains("`cloth`"),
            "{e}"
        );
        assert_eq!(e.source.name, "--set");
        assert_eq!(&e.source.text[e.span.clone()], "clth");
        let e = set("body.3.mass", "2").unwrap_err();
        assert!(e.message.contains("has 2 entries"), "{e}");
        let e = set("simulation.dt.x", "2").unwrap_err();
        assert!(e.message.contains("`simulation.dt` is a float"), "{e}");
        let e = set("simulation", "2").unwrap_err();
        assert!(e.message.contains("is a table"), "{e}");
        let e = set("body", "2").unwrap_err();
        assert!(e.message.contains("array of tables"), "{e}");
        assert!(Override::parse("simulation.dt").unwrap_err().message.contains("KEY=VALUE"));
        assert!(Override::parse("simulation..dt=1").is_err());
        assert!(Override::parse("simulation.dt=").is_err());
        assert!(Override::parse("simulation.dt=[1,").is_err());
    }

    #[test]
    fn overridden_values_meet_the_checks_of_the_file() {
        let parse = |args: &[&str]| {
            let o: Vec<Override> = args.iter().map(|a| Override::parse(a).unwrap()).collect();
            // The first body of SCENE alone: a scene the reader accepts.
            let valid = SCENE.split("\n[[body]]\nname").next().unwrap();
            crate::Scene::parse_with(Source::new("s.toml", valid), ".".into(), &o)
        };
        let scene = parse(&["simulation.dt=2e-4", "body.cloth.nx=5", "simulation.integrator=rk4"]).unwrap();
        assert_eq!(scene.simulation.dt, 2e-4);
        assert_eq!(scene.source.name, "s.toml (with --set)");
        assert!(scene.source.text.contains("nx = 5"));
        let e = parse(&["simulation.dt=-1"]).unwrap_err();
        assert!(e.message.contains("dt"), "{e}");
        assert_eq!(&e.source.text[e.span.clone()], "-1");
        assert_eq!(e.line(), 3);
        let e = parse(&["body.cloth.springs.structural.stifness=5"]).unwrap_err();
        assert!(e.message.contains("unknown key `stifness`"), "{e}");
        assert!(e.help.as_deref().unwrap().contains("did you mean `stiffness`"), "{e}");
        let e = parse(&["simulation.dt=nan"]).unwrap_err();
        assert!(e.to_string().contains("not finite") || e.to_string().contains("finite"), "{e}");
    }

    #[test]
    fn bare_words_are_strings_and_toml_values_stay_as_written() {
        assert_eq!(Override::parse("simulation.integrator=rk4").unwrap().value, "\"rk4\"");
        assert_eq!(Override::parse("simulation.dt = 1e-3").unwrap().value, "1e-3");
        assert_eq!(Override::parse("a.b=nan").unwrap().value, "nan");
        assert_eq!(Override::parse("a.b=[0, 1, 0]").unwrap().value, "[0, 1, 0]");
    }
}
