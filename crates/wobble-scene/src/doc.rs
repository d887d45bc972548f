//! A typed walk over a parsed TOML document that keeps every span.
//!
//! [`Table`] hands out values by key and remembers which keys were read; calling
//! [`Table::finish`] then rejects any key nobody asked for, suggesting the nearest
//! valid one. Every error points at the offending key or value.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ops::Range;

use glam::DVec3;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::error::{SceneError, Source, nearest};

/// A value with its span.
pub type Value<'i> = Spanned<DeValue<'i>>;

/// A TOML table being read.
pub struct Table<'a, 'i> {
    src: &'a Source,
    table: &'a DeTable<'i>,
    span: Range<usize>,
    /// What this table is, for messages (`[simulation]`, `body "cloth"`).
    what: String,
    used: RefCell<BTreeSet<String>>,
}

/// The TOML type name of a value, for messages.
fn type_name(v: &DeValue<'_>) -> &'static str {
    v.type_str()
}

/// The type name with its article ("an integer", "a float").
fn with_article(name: &str) -> String {
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    format!("{article} {name}")
}

/// " (unit)" for a message, or nothing for a dimensionless value.
fn unit_note(unit: &str) -> String {
    if unit.is_empty() { String::new() } else { format!(" ({unit})") }
}

impl<'a, 'i> Table<'a, 'i> {
    /// Wraps a table.
    pub fn new(src: &'a Source, table: &'a DeTable<'i>, span: Range<usize>, what: impl Into<String>) -> Self {
        Self { src, table, span, what: what.into(), used: RefCell::new(BTreeSet::new()) }
    }

    /// The table's span.
    #[must_use]
    pub fn span(&self) -> Range<usize> {
        self.span.clone()
    }

    /// The source file.
    #[must_use]
    pub fn source(&self) -> &'a Source {
        self.src
    }

    /// What the table is.
    #[must_use]
    pub fn what(&self) -> &str {
        &self.what
    }

    /// An error at `span`.
    #[must_use]
    pub fn error(&self, span: Range<usize>, message: impl Into<String>) -> SceneError {
        SceneError::new(self.src, span, message)
    }

    /// The raw value of `key`, marking it used.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&'a Value<'i>> {
        self.used.borrow_mut().insert(key.to_owned());
        self.table.get(key)
    }

    /// The span of `key`'s value, or of the table when absent.
    #[must_use]
    pub fn span_of(&self, key: &str) -> Range<usize> {
        self.table.get(key).map_or(self.span.clone(), |v| v.span())
    }

    /// True when `key` is present (does not mark it used).
    #[must_use]
    pub fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    /// Rejects every key that was never asked for.
    pub fn finish(&self) -> Result<(), SceneError> {
        let used = self.used.borrow();
        for (key, _) in self.table.iter() {
            let name: &str = key.get_ref();
            if !used.contains(name) {
                let mut err = self.error(key.span(), format!("unknown key `{name}` in {}", self.what));
                let valid: Vec<&str> = used.iter().map(String::as_str).collect();
                err = match nearest(name, valid.iter().copied()) {
                    Some(s) => err.with_help(format!("did you mean `{s}`? valid keys here: {}", valid.join(", "))),
                    None => err.with_help(format!("valid keys here: {}", valid.join(", "))),
                };
                return Err(err);
            }
        }
        Ok(())
    }

    fn wrong_type(&self, key: &str, v: &Value<'_>, expected: &str) -> SceneError {
        self.error(v.span(), format!("`{key}` must be {expected}, found {}", with_article(type_name(v.get_ref()))))
    }

    /// A number (integer or float) at `key`.
    pub fn f64(&self, key: &str) -> Result<Option<f64>, SceneError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        number(v).map(Some).ok_or_else(|| self.wrong_type(key, v, "a number"))
    }

    /// A number at `key`, or `default`.
    pub fn f64_or(&self, key: &str, default: f64) -> Result<f64, SceneError> {
        Ok(self.f64(key)?.unwrap_or(default))
    }

    /// A positive, finite number at `key` (or `default`), with its unit for messages.
    pub fn positive(&self, key: &str, default: Option<f64>, unit: &str) -> Result<f64, SceneError> {
        let value = match (self.f64(key)?, default) {
            (Some(v), _) => v,
            (None, Some(d)) => return Ok(d),
            (None, None) => return Err(self.missing(key, &format!("a positive number{}", unit_note(unit)))),
        };
        if value.is_finite() && value > 0.0 {
            Ok(value)
        } else {
            Err(self.error(self.span_of(key), format!("`{key}` = {value} must be positive{}", unit_note(unit))))
        }
    }

    /// A positive, finite number at `key` if the key is there.
    pub fn positive_opt(&self, key: &str, unit: &str) -> Result<Option<f64>, SceneError> {
        if self.has(key) { self.positive(key, None, unit).map(Some) } else { Ok(None) }
    }

    /// A finite number ≥ 0 at `key` (or `default`).
    pub fn non_negative(&self, key: &str, default: f64, unit: &str) -> Result<f64, SceneError> {
        let value = self.f64_or(key, default)?;
        if value.is_finite() && value >= 0.0 {
            Ok(value)
        } else {
            Err(self.error(self.span_of(key), format!("`{key}` = {value} must be finite and ≥ 0{}", unit_note(unit))))
        }
    }

    /// A missing-key error.
    #[must_use]
    pub fn missing(&self, key: &str, expected: &str) -> SceneError {
        self.error(self.span.clone(), format!("{} needs `{key}`: {expected}", self.what))
    }

    /// A non-negative integer at `key`.
    pub fn usize(&self, key: &str) -> Result<Option<usize>, SceneError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        integer(v)
            .and_then(|i| usize::try_from(i).ok())
            .map(Some)
            .ok_or_else(|| self.wrong_type(key, v, "a non-negative integer"))
    }

    /// A non-negative integer at `key`, at least `min`, or `default`.
    pub fn count(&self, key: &str, default: Option<usize>, min: usize) -> Result<usize, SceneError> {
        let value = match (self.usize(key)?, default) {
            (Some(v), _) => v,
            (None, Some(d)) => return Ok(d),
            (None, None) => return Err(self.missing(key, &format!("an integer ≥ {min}"))),
        };
        if value < min {
            return Err(self.error(self.span_of(key), format!("`{key}` = {value} must be at least {min}")));
        }
        Ok(value)
    }

    /// A string at `key`.
    pub fn str(&self, key: &str) -> Result<Option<&'a str>, SceneError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        v.get_ref().as_str().map(Some).ok_or_else(|| self.wrong_type(key, v, "a string"))
    }

    /// A boolean at `key`.
    pub fn bool(&self, key: &str) -> Result<Option<bool>, SceneError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        v.get_ref().as_bool().map(Some).ok_or_else(|| self.wrong_type(key, v, "true or false"))
    }

    /// A 3-vector `[x, y, z]` at `key`.
    pub fn vec3(&self, key: &str) -> Result<Option<DVec3>, SceneError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        vec3(v).map(Some).ok_or_else(|| self.wrong_type(key, v, "an array of 3 numbers [x, y, z]"))
    }

    /// A 3-vector at `key`, or `default`.
    pub fn vec3_or(&self, key: &str, default: DVec3) -> Result<DVec3, SceneError> {
        Ok(self.vec3(key)?.unwrap_or(default))
    }

    /// A sub-table at `key`.
    pub fn table(&self, key: &str) -> Result<Option<Table<'a, 'i>>, SceneError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.get_ref() {
            DeValue::Table(t) => Ok(Some(Table::new(self.src, t, v.span(), format!("`{key}` of {}", self.what)))),
            _ => Err(self.wrong_type(key, v, "a table")),
        }
    }

    /// An array at `key`.
    pub fn array(&self, key: &str) -> Result<Option<&'a [Value<'i>]>, SceneError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.get_ref() {
            DeValue::Array(a) => Ok(Some(&a[..])),
            _ => Err(self.wrong_type(key, v, "an array")),
        }
    }

    /// An array of tables (`[[key]]`) at `key`.
    pub fn tables(&self, key: &str) -> Result<Vec<Table<'a, 'i>>, SceneError> {
        let Some(items) = self.array(key)? else {
            return Ok(Vec::new());
        };
        items
            .iter()
            .enumerate()
            .map(|(i, v)| match v.get_ref() {
                DeValue::Table(t) => Ok(Table::new(self.src, t, v.span(), format!("[[{key}]] #{}", i + 1))),
                _ => Err(self.error(v.span(), format!("each `{key}` entry must be a table"))),
            })
            .collect()
    }

    /// Renames the table in messages.
    pub fn rename(&mut self, what: impl Into<String>) {
        self.what = what.into();
    }

    /// Iterates over (key, key span, value).
    pub fn entries(&self) -> impl Iterator<Item = (&'a str, Range<usize>, &'a Value<'i>)> {
        self.table.iter().map(|(k, v)| (k.get_ref().as_ref(), k.span(), v))
    }

    /// Marks `key` used without reading it.
    pub fn mark_used(&self, key: &str) {
        self.used.borrow_mut().insert(key.to_owned());
    }
}

/// A TOML integer as i64 (decimal, hex, octal or binary, with underscores).
#[must_use]
pub fn integer(v: &Value<'_>) -> Option<i64> {
    let i = v.get_ref().as_integer()?;
    let digits: String = i.as_str().chars().filter(|c| *c != '_').collect();
    let (sign, body) = match digits.strip_prefix('-') {
        Some(rest) => (-1, rest.to_owned()),
        None => (1, digits.trim_start_matches('+').to_owned()),
    };
    let body = body.trim_start_matches("0x").trim_start_matches("0o").trim_start_matches("0b");
    i64::from_str_radix(body, i.radix()).ok().map(|x| sign * x)
}

/// A TOML number (integer or float) as f64.
#[must_use]
pub fn number(v: &Value<'_>) -> Option<f64> {
    match v.get_ref() {
        DeValue::Float(f) => {
            let s: String = f.as_str().chars().filter(|c| *c != '_').collect();
            match s.as_str() {
                "inf" | "+inf" => Some(f64::INFINITY),
                "-inf" => Some(f64::NEG_INFINITY),
                "nan" | "+nan" | "-nan" => Some(f64::NAN),
                other => other.parse().ok(),
            }
        }
        DeValue::Integer(_) => integer(v).map(|i| i as f64),
        _ => None,
    }
}

/// `[x, y, z]` as a vector.
#[must_use]
pub fn vec3(v: &Value<'_>) -> Option<DVec3> {
    let DeValue::Array(a) = v.get_ref() else {
        return None;
    };
    if a.len() != 3 {
        return None;
    }
    Some(DVec3::new(number(&a[0])?, number(&a[1])?, number(&a[2])?))
}

/// Deepest nesting of tables and arrays a scene may use (scenes need 4).
pub const MAX_DEPTH: usize = 32;

/// Rejects every number in `table` (at any depth) that is not finite or exceeds
/// [`MAX_MAGNITUDE`](crate::input::MAX_MAGNITUDE), naming its key and line: TOML
/// itself accepts `inf`, `nan` and `1e400` (which reads as infinity), and one such
/// value in a motion, velocity or camera would otherwise poison the run.
pub fn check_numbers(src: &Source, table: &DeTable<'_>) -> Result<(), SceneError> {
    for (key, value) in table.iter() {
        check_value(src, key.get_ref(), value, 1)?;
    }
    Ok(())
}

fn check_value(src: &Source, key: &str, v: &Value<'_>, depth: usize) -> Result<(), SceneError> {
    if depth > MAX_DEPTH {
        return Err(SceneError::new(src, v.span(), format!("`{key}` is nested deeper than {MAX_DEPTH} levels")));
    }
    match v.get_ref() {
        DeValue::Float(_) | DeValue::Integer(_) => {
            let Some(x) = number(v) else {
                return Err(SceneError::new(src, v.span(), format!("`{key}` holds a number that cannot be read")));
            };
            if !x.is_finite() {
                return Err(SceneError::new(src, v.span(), format!("`{key}` = {x} is not a finite number"))
                    .with_help("every number in a scene must be finite"));
            }
            if x.abs() > crate::input::MAX_MAGNITUDE {
                return Err(SceneError::new(
                    src,
                    v.span(),
                    format!(
                        "`{key}` = {x:e} is beyond ±{:e}, the largest magnitude a scene may use",
                        crate::input::MAX_MAGNITUDE
                    ),
                ));
            }
        }
        DeValue::Array(a) => {
            for item in a {
                check_value(src, key, item, depth + 1)?;
            }
        }
        DeValue::Table(t) => {
            for (k, item) in t.iter() {
                check_value(src, k.get_ref(), item, depth + 1)?;
            }
        }
        _ => {}
    }
    Ok(())
}
