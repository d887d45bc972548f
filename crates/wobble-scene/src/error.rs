//! [`SceneError`]: what is wrong with a scene file, where, and what to do.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// A scene file's name and text, shared by every error that points into it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// Name to show (the path as given, or `<built-in default>`).
    pub name: String,
    /// Full text.
    pub text: Arc<str>,
}

impl Source {
    /// A source from a name and its text.
    #[must_use]
    pub fn new(name: impl Into<String>, text: impl Into<Arc<str>>) -> Self {
        Self { name: name.into(), text: text.into() }
    }

    /// 1-based line and column (in characters) of byte offset `at`.
    #[must_use]
    pub fn line_col(&self, at: usize) -> (usize, usize) {
        let at = at.min(self.text.len());
        let before = &self.text[..at];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = self.text[line_start..at].chars().count() + 1;
        (line, column)
    }
}

/// An error in a scene file. Its `Debug` form is its message with the place, not
/// the whole scene text it carries.
#[derive(Clone, PartialEq, Eq)]
pub struct SceneError {
    /// The file.
    pub source: Source,
    /// Byte range the error points at (empty when it concerns the whole file).
    pub span: Range<usize>,
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub help: Option<String>,
}

impl SceneError {
    /// An error at `span` of `source`.
    #[must_use]
    pub fn new(source: &Source, span: Range<usize>, message: impl Into<String>) -> Self {
        // Messages echo scene text (names, keys): never let it carry escape codes.
        Self { source: source.clone(), span, message: crate::input::printable(&message.into()), help: None }
    }

    /// Adds advice.
    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(crate::input::printable(&help.into()));
        self
    }

    /// 1-based line of the error.
    #[must_use]
    pub fn line(&self) -> usize {
        self.source.line_col(self.span.start).0
    }

    /// 1-based column of the error.
    #[must_use]
    pub fn column(&self) -> usize {
        self.source.line_col(self.span.start).1
    }
}

impl fmt::Display for SceneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (line, column) = self.source.line_col(self.span.start);
        write!(f, "{}:{line}:{column}: {}", self.source.name, self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for SceneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SceneError({:?})", self.to_string())
    }
}

impl std::error::Error for SceneError {}

/// Levenshtein distance between two short strings.
#[must_use]
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The candidate closest to `word`, if it is close enough to be a likely typo.
#[must_use]
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, c)| *d <= (c.len().max(word.len()) / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_is_the_message_not_the_scene_text() {
        let text = format!("[simulation]\ndt = -1\n{}", "# padding\n".repeat(1000));
        let e = SceneError::new(&Source::new("s.toml", text.as_str()), 18..20, "`dt` must be positive")
            .with_help("raise it");
        let debug = format!("{e:?}");
        assert_eq!(debug, "SceneError(\"s.toml:2:6: `dt` must be positive\\n  help: raise it\")");
    }
}
