//! The binary's modules import only downward, in the order docs/architecture.md draws: cli →
//! sweep/plan/latency → targets → compat → server → session → store/engine → dccp/hostinfo/multicast/admission/budget
//! → util (modules of one layer do not import each other). Reads every `crate::<module>` path
//! in native-peer/src and fails on one that points up or sideways (exceptions would be listed
//! below with their reason; there are none), and on sibling modules importing each other.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Each top-level module of native-peer and its layer (higher imports lower).
const LAYERS: &[(&str, u8)] = &[
    ("main", 8),
    // The crate root declares every module and re-exports the public surface (`in_process`).
    ("lib", 9),
    ("cli", 8),
    ("sweep", 7),
    ("plan", 7),
    ("latency", 7),
    ("targets", 6),
    ("compat", 5),
    ("server", 4),
    ("session", 3),
    ("store", 2),
    ("engine", 2),
    ("dccp", 1),
    ("hostinfo", 1),
    ("resolve", 1),
    ("multicast", 1),
    ("admission", 1),
    ("budget", 1),
    ("wifi", 1),
    ("util", 0),
    ("sys", 0),
];

/// Imports against the order that are known, each with why (none now: keep it that way, or
/// say here why one must stay).
const KNOWN: &[(&str, &str, &str)] = &[];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// The identifiers that follow `prefix` in a line of code (its comment cut off), each with
/// the text after it.
fn names_after<'a>(line: &'a str, prefix: &'a str) -> impl Iterator<Item = (String, &'a str)> {
    let code = line.split("//").next().unwrap_or("");
    code.split(prefix).skip(1).map(|part| {
        let name: String = part
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let rest = &part[name.len()..];
        (name, rest)
    })
}

/// Every top-level module a file's code names after `crate::`, with its line (from 1): in plain
/// paths (`crate::engine::x`) and in groups, over several lines too (`use crate::{engine::x,
/// util}` names engine and util). Comments are left out.
fn crate_targets(text: &str) -> Vec<(usize, String)> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let after = &code[at + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            // The group's items at depth 0, each naming its first module.
            let (mut depth, mut start) = (0usize, 0usize);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        found.push((line_of(at), ident(&group[start..i])));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.push((line_of(at), ident(&group[start..i])));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            found.push((line_of(at), ident(after)));
        }
    }
    found.retain(|(_, name)| !name.is_empty());
    found
}

#[test]
fn grouped_and_multi_line_imports_are_read() {
    let text = "use crate::{engine::x, util};\nuse crate::{\n    server::{a, b},\n    // cli::no\n    session,\n};\nlet v = crate::store::open(); // crate::cli\n";
    let names: Vec<(usize, String)> = crate_targets(text);
    let want = [
        (1, "engine"),
        (1, "util"),
        (2, "server"),
        (2, "session"),
        (7, "store"),
    ];
    assert_eq!(
        names,
        want.map(|(l, n)| (l, n.to_string())).to_vec(),
        "grouped, nested and multi-line paths are all read; comments are not"
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn native_peer_modules_import_only_downward() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../native-peer/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "found only {} files", files.len());
    let mut wrong = BTreeSet::new();
    let mut seen_known = BTreeSet::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let own = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        let own_layer =
            layer(&own).unwrap_or_else(|| panic!("{own} has no layer: add it to LAYERS"));
        let text = std::fs::read_to_string(file).unwrap();
        for (line, target) in crate_targets(&text) {
            let Some(target_layer) = layer(&target) else {
                continue;
            };
            if target == own || target_layer < own_layer {
                continue;
            }
            if KNOWN.iter().any(|(f, t, _)| *f == own && *t == target) {
                seen_known.insert((own.clone(), target));
                continue;
            }
            wrong.insert(format!(
                "{}:{line}: {own} (layer {own_layer}) uses {target} (layer {target_layer})",
                rel.display(),
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layer order:\n{}",
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
    // An exception that is gone must leave the list, so the list stays true.
    for (from, to, why) in KNOWN {
        assert!(
            seen_known.contains(&(from.to_string(), to.to_string())),
            "{from} → {to} is no longer used ({why}): remove it from KNOWN"
        );
    }
}

/// Sibling modules (files of one folder) must not import each other both ways: one of them is
/// then a helper of the other's, and belongs below it (as `cli/test.rs` and `cli/modes.rs`
/// were). Reads `super::<name>` paths between the files of each folder.
#[test]
fn sibling_modules_do_not_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../native-peer/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges = BTreeSet::new();
    for file in &files {
        let Some(dir) = file.parent() else { continue };
        let own = file.file_stem().unwrap().to_string_lossy().to_string();
        if own == "mod" {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for line in text.lines() {
            for (target, _) in names_after(line, "super::") {
                let sibling = dir.join(format!("{target}.rs")).exists()
                    || dir.join(&target).join("mod.rs").exists();
                if sibling && target != own {
                    edges.insert((dir.to_path_buf(), own.clone(), target));
                }
            }
        }
    }
    let both_ways: Vec<String> = edges
        .iter()
        .filter(|(dir, a, b)| a < b && edges.contains(&(dir.clone(), b.clone(), a.clone())))
        .map(|(dir, a, b)| {
            format!(
                "{}: {a} and {b} import each other",
                dir.strip_prefix(&src).unwrap_or(dir).display()
            )
        })
        .collect();
    assert!(both_ways.is_empty(), "{}", both_ways.join("\n"));
    assert!(
        edges.len() > 10,
        "found only {} sibling imports",
        edges.len()
    );
}

/// Calls into the C library live behind one seam, `native-peer/src/sys/` (constants such as
/// DCCP's option numbers may be named elsewhere; calls may not), and so does Windows' API.
#[test]
fn only_sys_calls_libc() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../native-peer/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut calls = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(src.join("sys"))) {
        let text = std::fs::read_to_string(file).unwrap();
        for (i, line) in text.lines().enumerate() {
            for (name, rest) in names_after(line, "libc::") {
                let called = rest.trim_start().starts_with('(');
                if called && name.starts_with(|c: char| c.is_ascii_lowercase()) {
                    calls.push(format!(
                        "{}:{}: libc::{name}",
                        file.strip_prefix(&src).unwrap().display(),
                        i + 1
                    ));
                }
            }
            // Windows' API is named only in sys/, at all.
            if line.contains("windows_sys::") {
                calls.push(format!(
                    "{}:{}: windows_sys",
                    file.strip_prefix(&src).unwrap().display(),
                    i + 1
                ));
            }
        }
    }
    assert!(
        calls.is_empty(),
        "system calls outside sys/:\n{}",
        calls.join("\n")
    );
}
