//! Imports go one way at every depth of every crate of the workspace.
//!
//! The rule, precisely: for every module `m` of a crate (the crate root included), take the
//! graph whose nodes are `m`'s direct child modules, with an edge `a -> b` when code in `a` or
//! in any module below `a` names a path that resolves to `m::b` or to anything inside `m::b`
//! (`crate::m::b::f`, `super::b::T`, `use crate::m::{b::X, ..}`, at any depth of a use tree).
//! That graph has no cycle. So `check::expr` importing `check::builtins` while
//! `check::builtins` imports `check::expr` fails, and so does `a::x::p` importing `a::y::q`
//! while `a::y::r` imports `a::x`, naming the cycle and the module whose children it joins.
//!
//! What counts as code: the source of every `.rs` file under the crate's `src/`, without
//! comments (doc comments and their links included), string and character literals, and an
//! inline test module (`#[cfg(test)]` followed by `mod .. {`, which ends its file). Paths are
//! read from `crate::`, `$crate::`, `self::` and `super::` (repeated), resolved from the
//! module of the file that names them (`a.rs` and `a/mod.rs` are `a`; `lib.rs` and `main.rs`
//! the root). A child naming its parent's items (`super::f`) and a parent naming its children
//! are not edges among siblings and are allowed: the parent is their facade. A glob import of
//! the parent (`use super::*`) counts as naming the parent only. Files reached through a
//! `#[path]` outside `src/` are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path below its crate root: `["check", "expr"]` is `crate::check::expr`.
type ModPath = Vec<String>;

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

/// Every `.rs` file under `src`, as (path relative to `src` with `/` separators, text).
fn sources(src: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    files.sort();
    files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(src).expect("under src");
            let rel: Vec<String> =
                rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            (rel.join("/"), text)
        })
        .collect()
}

/// The module a file relative to `src` defines: `a/b.rs` and `a/b/mod.rs` are `a::b`,
/// `lib.rs` and `main.rs` the root.
fn module_of(rel: &str) -> ModPath {
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    if let Some(last) = parts.last_mut() {
        *last = last.trim_end_matches(".rs").to_string();
    }
    if parts.last().is_some_and(|l| l == "mod")
        || (parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main"))
    {
        parts.pop();
    }
    parts
}

/// A token of Rust source, as far as paths need: identifiers and the punctuation of paths.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Colons,
    Open,
    Close,
    Comma,
    Star,
    Other,
}

/// The tokens of `text`, with comments, string, byte-string, raw-string and character
/// literals dropped.
fn tokens(text: &str) -> Vec<Tok> {
    let s: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            i += 1;
            while i < s.len() && s[i] != '"' {
                i += if s[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < s.len() && s[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if s.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if is_ident(c) {
            let start = i;
            while i < s.len() && is_ident(s[i]) {
                i += 1;
            }
            let word: String = s[start..i].iter().collect();
            // A raw string (r"..", r#".."#, br#".."#) starts like an identifier.
            if (word == "r" || word == "br") && matches!(s.get(i), Some('"') | Some('#')) {
                let mut hashes = 0;
                while s.get(i) == Some(&'#') {
                    hashes += 1;
                    i += 1;
                }
                if s.get(i) == Some(&'"') {
                    i += 1;
                    while i < s.len() {
                        if s[i] == '"' && (1..=hashes).all(|k| s.get(i + k) == Some(&'#')) {
                            i += 1 + hashes;
                            break;
                        }
                        i += 1;
                    }
                }
                continue;
            }
            // A byte string b".." ends like a string; the literal is dropped with its prefix.
            if word == "b" && s.get(i) == Some(&'"') {
                continue;
            }
            out.push(Tok::Ident(word));
        } else if c == ':' && next == Some(':') {
            out.push(Tok::Colons);
            i += 2;
        } else {
            out.push(match c {
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                '*' => Tok::Star,
                _ => Tok::Other,
            });
            i += 1;
        }
    }
    out
}

/// The code of a file without its inline test module (`#[cfg(test)]`, other attributes, then
/// `mod name {`), which by the workspace's convention ends the file.
fn without_tests(text: &str) -> &str {
    let lines: Vec<&str> = text.lines().collect();
    let mut offset = 0;
    for (k, line) in lines.iter().enumerate() {
        if line.trim() == "#[cfg(test)]" {
            let after = lines[k + 1..].iter().map(|l| l.trim()).find(|l| !l.starts_with("#["));
            let is_inline_mod = after.is_some_and(|l| {
                let l = l.strip_prefix("pub ").unwrap_or(l);
                l.starts_with("mod ") && l.ends_with('{')
            });
            if is_inline_mod {
                return &text[..offset];
            }
        }
        offset += line.len() + 1;
    }
    text
}

/// The paths of a use tree starting at `toks[*i]`, below `prefix`; `self` names the prefix and
/// `super` its parent. Leaves `*i` after the tree.
fn use_tree(toks: &[Tok], i: &mut usize, prefix: ModPath, out: &mut Vec<ModPath>) {
    match toks.get(*i) {
        Some(Tok::Open) => {
            *i += 1;
            while *i < toks.len() {
                match toks[*i] {
                    Tok::Close => {
                        *i += 1;
                        return;
                    }
                    Tok::Comma => *i += 1,
                    _ => {
                        let before = *i;
                        use_tree(toks, i, prefix.clone(), out);
                        if *i == before {
                            *i += 1;
                        }
                    }
                }
            }
        }
        Some(Tok::Ident(seg)) => {
            let mut p = prefix;
            match seg.as_str() {
                "self" => {}
                "super" => {
                    p.pop();
                }
                _ => p.push(seg.clone()),
            }
            *i += 1;
            if toks.get(*i) == Some(&Tok::Colons) {
                *i += 1;
                use_tree(toks, i, p, out);
            } else {
                out.push(p);
            }
        }
        Some(Tok::Star) => {
            *i += 1;
            out.push(prefix);
        }
        _ => out.push(prefix),
    }
}

/// Every path the code of the module `at` names from `crate::`, `self::` or `super::`,
/// resolved to a path below the crate root.
fn paths(code: &str, at: &ModPath) -> Vec<ModPath> {
    let toks = tokens(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let start = match &toks[i] {
            Tok::Ident(w) if w == "crate" => Some(Vec::new()),
            Tok::Ident(w) if w == "self" => Some(at.clone()),
            Tok::Ident(w) if w == "super" => Some(at[..at.len().saturating_sub(1)].to_vec()),
            _ => None,
        };
        let after_colons = i > 0 && toks[i - 1] == Tok::Colons;
        match start {
            Some(prefix) if !after_colons && toks.get(i + 1) == Some(&Tok::Colons) => {
                i += 2;
                let before = i;
                use_tree(&toks, &mut i, prefix, &mut out);
                if i == before {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// For each module with child modules, the graph among its direct children: child `a` has an
/// edge to sibling `b` when code in `a` or below names a path into `b`.
type Graphs = BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>>;

/// The sibling graphs of the crate made of `files` (paths relative to `src`, texts).
fn graphs(files: &[(String, String)]) -> Graphs {
    let modules: Vec<(ModPath, Vec<ModPath>)> = files
        .iter()
        .map(|(rel, text)| {
            let m = module_of(rel);
            let named = paths(without_tests(text), &m);
            (m, named)
        })
        .collect();
    let mut g: Graphs = BTreeMap::new();
    for (m, _) in &modules {
        for depth in 0..m.len() {
            g.entry(m[..depth].to_vec()).or_default().entry(m[depth].clone()).or_default();
        }
    }
    for (m, named) in &modules {
        for depth in 0..m.len() {
            let parent = &m[..depth];
            let from = &m[depth];
            let Some(children) = g.get_mut(parent) else { continue };
            for p in named {
                if p.len() > depth
                    && p[..depth] == *parent
                    && p[depth] != *from
                    && children.contains_key(&p[depth])
                {
                    if let Some(edges) = children.get_mut(from) {
                        edges.insert(p[depth].clone());
                    }
                }
            }
        }
    }
    g
}

/// A cycle of `g`, if it has one (depth-first search), first node repeated at its end.
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

/// Every cycle among siblings in the crate made of `files`, one per parent module, written
/// `crate::parent::{a -> b -> a}`.
fn cycles(files: &[(String, String)]) -> Vec<String> {
    graphs(files)
        .iter()
        .filter_map(|(parent, children)| {
            let c = cycle(children)?;
            let at: String = parent.iter().map(|p| format!("::{p}")).collect();
            Some(format!("crate{at}::{{{}}}", c.join(" -> ")))
        })
        .collect()
}

#[test]
fn no_module_has_a_cycle_among_its_children() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    let crates = crates(root);
    assert!(crates.len() >= 9, "members: {crates:?}");
    let mut nested_edges = 0;
    for src in &crates {
        let dir = root.join(src);
        assert!(dir.join("lib.rs").exists() || dir.join("main.rs").exists(), "{src}: no crate root");
        let files = sources(&dir);
        nested_edges += graphs(&files)
            .iter()
            .filter(|(parent, _)| !parent.is_empty())
            .map(|(_, children)| children.values().map(BTreeSet::len).sum::<usize>())
            .sum::<usize>();
        found.extend(cycles(&files).into_iter().map(|c| format!("{src}: {c}")));
    }
    // The check reads below the top level: the workspace has sibling imports there
    // (`ir::check::expr` uses `ir::check::unify`, for one).
    assert!(nested_edges > 0, "no import among nested siblings found: the reader is broken");
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

#[test]
fn ir_check_siblings_are_read() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let g = graphs(&sources(&root.join("ir/src")));
    let check = g.get(&vec!["check".to_string()]).expect("ir's check module has children");
    assert!(check.get("expr").is_some_and(|d| d.contains("unify")), "{check:?}");
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
}

fn tree(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect()
}

#[test]
fn a_cycle_between_nested_siblings_is_found_and_named() {
    let files = tree(&[
        ("lib.rs", "mod a;\nmod d;\n"),
        ("a.rs", "mod b;\nmod c;\npub(crate) use b::X;\n"),
        ("a/b.rs", "use super::c::helper;\npub(crate) struct X;\n"),
        ("a/c/mod.rs", "mod deep;\npub(crate) fn helper() {}\n"),
        ("a/c/deep.rs", "fn f() -> crate::a::b::X { crate::a::b::X }\n"),
        ("d.rs", "use crate::a::X;\n"),
    ]);
    assert_eq!(cycles(&files), vec!["crate::a::{b -> c -> b}".to_string()]);
    let g = graphs(&files);
    assert_eq!(g[&Vec::<String>::new()]["d"], ["a".to_string()].into());
    assert!(g[&Vec::<String>::new()]["a"].is_empty(), "a parent naming its children is no sibling edge");
    // Without the import from below `c`, no cycle.
    let mut acyclic = files.clone();
    acyclic[4].1 = "fn f() {}\n".into();
    assert_eq!(cycles(&acyclic), Vec::<String>::new());
}

#[test]
fn a_cycle_at_depth_three_through_super_super_and_groups() {
    let files = tree(&[
        ("lib.rs", "mod x;\n"),
        ("x/mod.rs", "mod y;\n"),
        ("x/y/mod.rs", "mod p;\nmod q;\n"),
        ("x/y/p.rs", "use crate::{x::{y::{q::{self, Q}}}};\n"),
        ("x/y/q/mod.rs", "mod r;\npub struct Q;\n"),
        ("x/y/q/r.rs", "use super::super::p as parent;\n"),
    ]);
    assert_eq!(cycles(&files), vec!["crate::x::y::{p -> q -> p}".to_string()]);
}

#[test]
fn comments_strings_and_test_modules_name_nothing() {
    let text = r##"
// use crate::a::b;
/* crate::a::c /* nested */ crate::a::d */
/// [`crate::a::e`]
fn f() -> &'static str { let _c = '"'; let _l: &'static str = "crate::a::f"; r#"crate::a::g"# }
let x = self.crate_like; let y = super_thing::z;
use crate::a::h::I as J;
$crate::a::k!();
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::a::t;
}
"##;
    let named = paths(without_tests(text), &vec!["m".to_string()]);
    let want: Vec<ModPath> = vec![vec!["a".into(), "h".into(), "I".into()], vec!["a".into(), "k".into()]];
    assert_eq!(named, want);
    assert_eq!(module_of("lib.rs"), Vec::<String>::new());
    assert_eq!(module_of("a/b/mod.rs"), vec!["a".to_string(), "b".to_string()]);
    assert_eq!(paths("let v = self::q::R;", &vec!["m".to_string()]), vec![vec!["m", "q", "R"]]);
}
