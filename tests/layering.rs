//! The crate's layers point one way. Reads every file under `src/` and fails when a module
//! names a module of its own layer or one above it:
//!
//! ```text
//! debug → io → rapier → runtime → gpu → solver → collision → body, state → material → mesh → math
//! ```
//!
//! `gpu` mirrors the solvers and sits above them (it names their settings and uses them as its
//! oracle); the runtime drives both backends; rapier reaches the step through the runtime's
//! public hook. `error.rs` (the error every layer may return, wrapping every layer's own) and
//! `lib.rs` (the public API and its prelude) are the crate's facade and exempt. Test modules
//! (`#[cfg(test)] mod …`) may build whole scenes and are not checked; library code may not name
//! the prelude (it would hide which layer a name comes from).

use std::path::{Path, PathBuf};

/// Each top-level module and its layer: a module may name modules of lower layers only.
const LAYERS: &[(&str, u32)] = &[
    ("math", 0),
    ("mesh", 1),
    ("material", 2),
    ("body", 3),
    ("state", 3),
    ("collision", 4),
    ("solver", 5),
    ("gpu", 6),
    ("runtime", 7),
    ("rapier", 8),
    ("io", 9),
    ("debug", 10),
];

/// Modules every layer may name, and which may name every layer.
const FACADE: &[&str] = &["error"];

fn layer(module: &str) -> Option<u32> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|&(_, l)| l)
}

/// A forbidden reference: file, line, the module that names and the one named.
#[derive(Debug, PartialEq)]
struct Violation {
    file: String,
    line: usize,
    from: String,
    to: String,
}

/// The module path of a file under `src/` (`solver/vbd/mod.rs` → `["solver", "vbd"]`), or
/// `None` for the binaries, which use the crate's public API.
fn module_path(relative: &Path) -> Option<Vec<String>> {
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_owned());
    }
    Some(parts)
}

/// `source` with comments, string and character literals blanked (lines kept), so that only
/// code is searched.
fn code_only(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if rest.starts_with(b"/*") {
            while i < b.len() && !b[i..].starts_with(b"*/") {
                blank(&mut out, b[i]);
                i += 1;
            }
            out.extend_from_slice(b"  ");
            i += 2;
        } else if rest.starts_with(b"r#\"") || rest.starts_with(b"r\"") {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            i += 2 + hashes;
            out.extend(std::iter::repeat_n(b' ', 2 + hashes));
            while i < b.len() && !b[i..].starts_with(&close) {
                blank(&mut out, b[i]);
                i += 1;
            }
            out.extend(std::iter::repeat_n(b' ', close.len()));
            i += close.len();
        } else if b[i] == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    out.push(b' ');
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if b[i] == b'\'' && rest.len() >= 3 && (rest[2] == b'\'' || (rest[1] == b'\\' && rest.len() >= 4)) {
            // A character literal ('"', '\n'); lifetimes ('a) have no closing quote there.
            let len =
                if rest[1] == b'\\' { rest[2..].iter().position(|&c| c == b'\'').map_or(1, |p| p + 3) } else { 3 };
            out.extend(std::iter::repeat_n(b' ', len));
            i += len;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The first path segment after each `crate::` in `line` (each item of a `crate::{…}` group).
fn crate_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        let before_ok = rest[..at].chars().next_back().is_none_or(|c| !is_ident(c));
        let after = &rest[at + "crate::".len()..];
        if before_ok {
            if let Some(group) = after.strip_prefix('{') {
                let mut depth = 0;
                let mut item = String::new();
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            out.push(std::mem::take(&mut item));
                            continue;
                        }
                        _ => {}
                    }
                    if depth == 0 || !item.contains("::") {
                        item.push(c);
                    }
                }
                out.push(item);
            } else {
                out.push(after.to_owned());
            }
        }
        rest = after;
    }
    out.into_iter()
        .map(|s| s.trim_start().chars().take_while(|&c| is_ident(c)).collect::<String>())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The top-level modules a `super::` chain in `line` reaches from module `at`, where the chain
/// leaves `at`'s top-level module.
fn super_targets(line: &str, at: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(pos) = rest.find("super::") {
        let before_ok = rest[..pos].chars().next_back().is_none_or(|c| !is_ident(c));
        let mut tail = &rest[pos..];
        let mut ups = 0;
        while let Some(t) = tail.strip_prefix("super::") {
            ups += 1;
            tail = t;
        }
        if before_ok && ups >= at.len() {
            let name: String = tail.chars().take_while(|&c| is_ident(c)).collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
        rest = &rest[pos + 1..];
    }
    out
}

/// The modules a file declares test-only (`#[cfg(test)] mod name;`).
fn test_only_children(source: &str) -> Vec<String> {
    let code = code_only(source);
    let mut out = Vec::new();
    let mut test_attribute = false;
    for line in code.lines().map(str::trim) {
        if line.starts_with("#[") {
            test_attribute |= line.starts_with("#[cfg(test)]");
            continue;
        }
        if test_attribute && line.ends_with(';') {
            let words: Vec<&str> = line.split(|c: char| !is_ident(c)).filter(|w| !w.is_empty()).collect();
            if let Some(m) = words.iter().position(|w| *w == "mod")
                && let Some(name) = words.get(m + 1)
            {
                out.push((*name).to_owned());
            }
        }
        if !line.is_empty() {
            test_attribute = false;
        }
    }
    out
}

/// Every forbidden reference in one file's source; `relative` is its path under `src/`.
fn check_source(relative: &Path, source: &str) -> Vec<Violation> {
    let Some(base) = module_path(relative) else { return Vec::new() };
    let Some(top) = base.first().cloned() else { return Vec::new() };
    if FACADE.contains(&top.as_str()) {
        return Vec::new();
    }
    let own = layer(&top);
    let code = code_only(source);
    let mut out = Vec::new();
    // Inline modules open at brace depth `d`: (name, d, is a test module).
    let mut inline: Vec<(String, i64, bool)> = Vec::new();
    let mut depth = 0i64;
    let mut test_attribute = false;
    for (k, line) in code.lines().enumerate() {
        let trimmed = line.trim();
        let in_test = inline.iter().any(|m| m.2);
        if !in_test {
            let mut at = base.clone();
            at.extend(inline.iter().map(|m| m.0.clone()));
            let mut named = crate_targets(line);
            named.extend(super_targets(line, &at));
            for target in named {
                let forbidden = if target == "prelude" {
                    true
                } else if FACADE.contains(&target.as_str()) || target == top {
                    false
                } else {
                    match (own, layer(&target)) {
                        (Some(a), Some(b)) => b >= a,
                        _ => false,
                    }
                };
                if forbidden {
                    out.push(Violation {
                        file: relative.display().to_string(),
                        line: k + 1,
                        from: top.clone(),
                        to: target,
                    });
                }
            }
        }
        let words: Vec<&str> = trimmed.split(|c: char| !is_ident(c)).filter(|w| !w.is_empty()).collect();
        if let Some(m) = words.iter().position(|w| *w == "mod")
            && trimmed.ends_with('{')
            && words[..m].iter().all(|w| matches!(*w, "pub" | "crate" | "super" | "in" | "self"))
            && let Some(name) = words.get(m + 1)
        {
            inline.push(((*name).to_owned(), depth, test_attribute));
        }
        if trimmed.starts_with("#[") {
            test_attribute |= trimmed.starts_with("#[cfg(test)]") || trimmed.starts_with("#[cfg(all(test");
        } else if !trimmed.is_empty() {
            test_attribute = false;
        }
        depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
        while inline.last().is_some_and(|m| depth <= m.1) {
            inline.pop();
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_module_names_only_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    // Files of test-only modules are test code as a whole.
    let mut test_only: Vec<Vec<String>> = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(&src).expect("under src/");
        let Some(module) = module_path(relative) else { continue };
        let source = std::fs::read_to_string(path).expect("a readable file");
        for child in test_only_children(&source) {
            let mut m = module.clone();
            m.push(child);
            test_only.push(m);
        }
    }
    let mut tops: Vec<String> = Vec::new();
    let mut violations = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(&src).expect("under src/");
        if module_path(relative).is_some_and(|m| test_only.iter().any(|t| m.starts_with(t))) {
            continue;
        }
        if let Some(top) = module_path(relative).and_then(|m| m.first().cloned())
            && !tops.contains(&top)
        {
            tops.push(top);
        }
        let source = std::fs::read_to_string(path).expect("a readable file");
        violations.extend(check_source(relative, &source));
    }
    for top in &tops {
        assert!(
            layer(top).is_some() || FACADE.contains(&top.as_str()),
            "module `{top}` has no layer: add it to LAYERS in tests/layering.rs"
        );
    }
    let list: Vec<String> =
        violations.iter().map(|v| format!("{}:{}: `{}` names `{}`", v.file, v.line, v.from, v.to)).collect();
    assert!(list.is_empty(), "imports against the layers:\n{}", list.join("\n"));
}

/// The checker itself: each forbidden import of the issue that asked for this test is caught,
/// in every spelling, and allowed ones are not.
#[test]
fn the_checker_catches_imports_against_the_layers() {
    let caught = |file: &str, source: &str| -> Vec<String> {
        check_source(Path::new(file), source).into_iter().map(|v| v.to).collect()
    };
    assert_eq!(caught("gpu/step.rs", "use crate::runtime::World;\n"), ["runtime"]);
    assert_eq!(caught("material/mod.rs", "use crate::state::SimState;\n"), ["state"]);
    assert_eq!(caught("material/tet.rs", "fn f(b: &crate::body::SoftBody) {}\n"), ["body"]);
    assert_eq!(caught("mesh/embedding.rs", "use crate::collision::{Obstacle, ccd};\n"), ["collision"]);
    assert_eq!(caught("mesh/voxel.rs", "use crate::{math::Real, solver::al};\n"), ["solver"]);
    assert_eq!(caught("solver/vbd/mod.rs", "use super::super::runtime::StepConfig;\n"), ["runtime"]);
    assert_eq!(caught("solver/al/mod.rs", "let x = crate::rapier::RapierCoupling::default();\n"), ["rapier"]);
    assert_eq!(caught("collision/ccd.rs", "use crate::solver::vbd;\n"), ["solver"]);
    assert_eq!(caught("solver/mod.rs", "use crate::gpu::GpuContext;\n"), ["gpu"]);
    assert_eq!(caught("gpu/mod.rs", "use crate::prelude::*;\n"), ["prelude"]);
    // Allowed: lower layers, the module itself, the facade, comments, strings, test modules.
    assert!(caught("gpu/step.rs", "use crate::solver::vbd::VbdSettings;\nuse crate::error::PliantError;\n").is_empty());
    assert!(caught("runtime/world.rs", "use crate::gpu::GpuContext;\nuse super::config::StepConfig;\n").is_empty());
    assert!(caught("mesh/voxel.rs", "// see crate::runtime::World\nlet s = \"crate::runtime\";\n").is_empty());
    assert!(
        caught(
            "gpu/step.rs",
            "fn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::prelude::*;\n}\nuse crate::runtime::X;\n"
        ) == ["runtime"]
    );
}
