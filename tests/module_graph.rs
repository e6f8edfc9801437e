//! Imports go one way: inside every crate of the workspace, the graph of its top-level
//! modules (module `a` uses module `b` when `a`'s code, tests aside, names `crate::b`) has
//! no cycle. The test reads the sources, so a new cycle fails here naming its modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The source folders of the workspace's members (`members = [..]` in `Cargo.toml`).
fn crates(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let line = manifest.lines().find(|l| l.trim_start().starts_with("members")).expect("a members list");
    let list = &line[line.find('[').expect("[") + 1..line.find(']').expect("]")];
    list.split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| if m == "." { "src".to_string() } else { format!("{m}/src") })
        .collect()
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without its line comments and its `#[cfg(test)] mod tests`.
fn code(text: &str) -> String {
    let text = text.find("#[cfg(test)]\nmod tests").map_or(text, |i| &text[..i]);
    text.lines().map(|l| l.find("//").map_or(l, |i| &l[..i])).collect::<Vec<_>>().join("\n")
}

/// The module names after `crate::`, and inside `use crate::{a, b::c}`.
fn uses(code: &str) -> BTreeSet<String> {
    let ident =
        |s: &str| -> String { s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect() };
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            for item in inner.split(',') {
                out.insert(ident(item.trim()));
            }
        } else {
            out.insert(ident(rest));
        }
    }
    out
}

/// Each top-level module of the crate in `src` with the modules of the crate it uses.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(src).expect("under src");
        let first = rel.components().next().expect("a path").as_os_str().to_string_lossy().into_owned();
        let module = first.trim_end_matches(".rs").to_string();
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        g.entry(module).or_default().extend(uses(&code(&text)));
    }
    for root in ["lib", "main"] {
        g.remove(root);
    }
    let names: BTreeSet<String> = g.keys().cloned().collect();
    for (m, deps) in g.iter_mut() {
        deps.retain(|d| names.contains(d) && d != m);
    }
    g
}

/// A cycle of `g`, if it has one (depth-first search).
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        g: &BTreeMap<String, BTreeSet<String>>,
        m: &str,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(m) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let start = path.iter().position(|p| p == m).unwrap_or(0);
                let mut c = path[start..].to_vec();
                c.push(m.to_string());
                return Some(c);
            }
            None => {}
        }
        marks.insert(m.to_string(), Mark::Open);
        path.push(m.to_string());
        for d in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(g, d, marks, path) {
                return Some(c);
            }
        }
        path.pop();
        marks.insert(m.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    g.keys().find_map(|m| visit(g, m, &mut marks, &mut Vec::new()))
}

#[test]
fn no_crate_has_a_module_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    let crates = crates(root);
    assert!(crates.len() >= 9, "members: {crates:?}");
    for src in &crates {
        let dir = root.join(src);
        assert!(dir.join("lib.rs").exists() || dir.join("main.rs").exists(), "{src}: no crate root");
        let g = graph(&dir);
        if let Some(c) = cycle(&g) {
            found.push(format!("{src}: {}", c.join(" -> ")));
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.insert("a".into(), ["b".to_string()].into());
    g.insert("b".into(), ["c".to_string()].into());
    g.insert("c".into(), ["a".to_string()].into());
    g.insert("d".into(), ["a".to_string()].into());
    let c = cycle(&g).expect("a cycle");
    assert_eq!(c.first(), c.last());
    assert_eq!(c.len(), 4, "{c:?}");
    g.get_mut("c").expect("c").clear();
    assert_eq!(cycle(&g), None);
    assert_eq!(
        uses("use crate::{a::X, b};\nlet y = crate::c::f();"),
        ["a", "b", "c"].iter().map(|s| s.to_string()).collect()
    );
}
