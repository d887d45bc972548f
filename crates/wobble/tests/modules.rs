//! The module graph of every crate in the workspace has no circle: a top-level module
//! (a file or folder under `src/`) that uses another (through `crate::…`, or
//! `super::…` from a module directly under the crate root) must not be used by it,
//! directly or through others. Test modules (`#[cfg(test)]` to the end of a file)
//! are left out: tests may use any builder.
//!
//! A circle that is known and scheduled to be cut is listed in [`KNOWN`] with the
//! exact modules it joins; the test fails if it grows, if a new one appears, or if
//! a known one disappears (then remove it from the list).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Circles known and scheduled to be cut, per crate (none today).
const KNOWN: &[(&str, &[&str])] = &[];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source folder") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to ("" for the crate root), and its depth
/// below the root (1 for `src/foo.rs` and `src/foo/mod.rs`).
fn module_of(src: &Path, file: &Path) -> (String, usize) {
    let rel = file.strip_prefix(src).expect("inside src");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs").to_owned();
    if !matches!(stem.as_str(), "mod" | "lib" | "main") {
        parts.push(stem);
    }
    (parts.first().cloned().unwrap_or_default(), parts.len())
}

/// Names of the top-level modules a piece of source refers to through `prefix`
/// (`crate::`, `super::` …), including grouped imports `prefix{a::…, b}`.
fn referenced(text: &str, prefix: &str, out: &mut BTreeSet<String>) {
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().last();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut start) = (0usize, 0usize);
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.insert(ident(group[start..k].trim_start()));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(ident(group[start..k].trim_start()));
                        start = k + 1;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(rest));
        }
    }
}

/// Strongly connected groups of more than one module.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for n in graph.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|m| (m, reach(m))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for m in graph.keys() {
        let group: BTreeSet<String> = graph
            .keys()
            .filter(|n| *n == m || (reachable[m].contains(*n) && reachable[*n].contains(m)))
            .cloned()
            .collect();
        if group.len() > 1 && !out.contains(&group) {
            out.push(group);
        }
    }
    out
}

#[test]
fn no_crate_has_a_circle_between_its_modules() {
    let crates = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut problems = Vec::new();
    let mut checked = 0;
    for entry in std::fs::read_dir(&crates).expect("crates folder") {
        let dir = entry.expect("entry").path();
        let src = dir.join("src");
        if !src.is_dir() {
            continue;
        }
        let name = dir.file_name().expect("name").to_string_lossy().into_owned();
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let modules: BTreeSet<String> = files.iter().map(|f| module_of(&src, f).0).filter(|m| !m.is_empty()).collect();
        let mut graph: BTreeMap<String, BTreeSet<String>> =
            modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
        for file in &files {
            let (module, depth) = module_of(&src, file);
            if module.is_empty() {
                continue;
            }
            let text = std::fs::read_to_string(file).expect("readable");
            let code: String = text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
            let code = code.split("#[cfg(test)]").next().unwrap_or("");
            let mut refs = BTreeSet::new();
            referenced(code, "crate::", &mut refs);
            let up = "super::".repeat(depth);
            referenced(code, &up, &mut refs);
            for r in refs {
                if r != module && modules.contains(&r) {
                    graph.get_mut(&module).expect("module").insert(r);
                }
            }
        }
        let known: Vec<BTreeSet<String>> = KNOWN
            .iter()
            .filter(|(c, _)| *c == name)
            .map(|(_, m)| m.iter().map(|s| (*s).to_owned()).collect())
            .collect();
        let found = circles(&graph);
        for c in &found {
            if !known.contains(c) {
                problems.push(format!("{name}: modules {c:?} use each other in a circle"));
            }
        }
        for k in &known {
            if !found.contains(k) {
                problems.push(format!("{name}: the known circle {k:?} is gone: remove it from KNOWN"));
            }
        }
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} crates found under {}", crates.display());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_circle_finder_finds_circles_and_grouped_imports() {
    let mut refs = BTreeSet::new();
    referenced("use crate::{force::{A, B}, model::State};\nlet x = crate::world::World::new();", "crate::", &mut refs);
    assert_eq!(refs, ["force", "model", "world"].iter().map(|s| (*s).to_owned()).collect());
    let graph: BTreeMap<String, BTreeSet<String>> = [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])]
        .iter()
        .map(|(m, d)| ((*m).to_owned(), d.iter().map(|s| (*s).to_owned()).collect()))
        .collect();
    let found = circles(&graph);
    assert_eq!(found, vec![["a", "b", "c"].iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>()]);
}
