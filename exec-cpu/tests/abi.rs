//! The native entry points' ABI (`eqfuse_codegen::c::abi`): every entry point the skeletons
//! export, over the conformance programs and the examples (optimised and unfused plans,
//! which between them use every skeleton), opens with the header its declaration gives, so
//! the C the executor loads has the parameters of the Rust types it calls it through.
#![allow(clippy::unwrap_used)]

use eqfuse_codegen::c::abi::{EntryPoint, ALL};
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_optimize::{optimize, OptimizeOptions};
use std::collections::BTreeSet;
use std::path::Path;

/// The conformance programs' and the examples' sources.
fn sources() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut srcs: Vec<String> = eqfuse_ir::conformance::cases(&root.join("tests").join("conformance"))
        .unwrap()
        .iter()
        .map(|c| c.source().unwrap())
        .collect();
    let mut examples: Vec<_> = std::fs::read_dir(root.join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "eqf"))
        .collect();
    examples.sort();
    srcs.extend(examples.iter().map(|p| std::fs::read_to_string(p).unwrap()));
    srcs
}

/// The entry point a line `EQ_EXPORT int eq_k<i>_<name>(const EqArgs_k<i>* restrict A, ...) {`
/// declares, when its whole header is the declared one.
fn declared(line: &str) -> Option<&'static EntryPoint> {
    let rest = line.strip_prefix("EQ_EXPORT int eq_k")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let (prefix, args) = (format!("eq_k{digits}"), format!("EqArgs_k{digits}"));
    ALL.iter().find(|e| e.header(&prefix, &args) == line)
}

#[test]
fn every_exported_entry_point_has_its_declared_prototype() {
    let mut seen = BTreeSet::new();
    let mut plans = 0;
    for src in sources() {
        // a case whose expected outcome is a compile error has no plan
        let Ok(checked) = parse(&src).and_then(|p| check(&p)) else { continue };
        let opt = optimize(&checked, &OptimizeOptions::default()).unwrap();
        for plan in [&opt.plan, &opt.unfused_plan] {
            plans += 1;
            for line in eqfuse_codegen::c::generate(plan).source.lines().filter(|l| l.contains("EQ_EXPORT")) {
                if line.starts_with("#define EQ_EXPORT") {
                    continue;
                }
                let e = declared(line).unwrap_or_else(|| panic!("an undeclared prototype: {line}"));
                seen.insert(e.name);
            }
        }
    }
    assert!(plans > 50, "{plans} plans");
    let all: BTreeSet<&str> = ALL.iter().map(|e| e.name).collect();
    assert_eq!(seen, all, "every declared entry point is exported by some plan");
}
