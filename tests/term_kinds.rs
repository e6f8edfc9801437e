//! Lowering reads a kind for every node of the term it lowers
//! (`eqfuse_egraph::analysis::term_kinds`, computed node by node). Those kinds must be the
//! ones an e-graph of the term alone gives its classes, which is how lowering used to
//! compute them: checked on every example and conformance program, and on random programs,
//! for the source term and the optimised term.

mod common;

use egg::{EGraph, Id, Language, RecExpr};
use eqfuse::{optimize_checked, OptimizeOptions};
use eqfuse_egraph::analysis::{term_kinds, Facts, Kind, SymDim};
use eqfuse_egraph::ArrayLang;
use eqfuse_ir::testgen::{program_and_inputs, GenConfig};
use proptest::prelude::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The kinds an e-graph of `term` alone gives its nodes, a dimension known only as a class
/// named by the first node of that class (as [`term_kinds`] names it).
fn through_an_egraph(term: &RecExpr<ArrayLang>, facts: &Facts) -> Vec<Kind> {
    let mut eg: EGraph<ArrayLang, Facts> = EGraph::new(facts.clone());
    let mut ids: Vec<Id> = Vec::new();
    for n in term.as_ref() {
        let m = n.clone().map_children(|c| ids[usize::from(c)]);
        ids.push(eg.add(m));
    }
    let mut first: HashMap<Id, usize> = HashMap::new();
    for (i, id) in ids.iter().enumerate() {
        first.entry(eg.find(*id)).or_insert(i);
    }
    let rename = |d: &SymDim| match d {
        SymDim::Class(c) => first.get(&eg.find(*c)).map_or(SymDim::Dynamic, |i| SymDim::Class(Id::from(*i))),
        d => d.clone(),
    };
    ids.iter().map(|id| renamed(&eg[*id].data.kind, &rename)).collect()
}

fn renamed(k: &Kind, f: &impl Fn(&SymDim) -> SymDim) -> Kind {
    match k {
        Kind::Array { elem, shape } => Kind::Array { elem: *elem, shape: shape.iter().map(f).collect() },
        Kind::Shape(s) => Kind::Shape(s.iter().map(f).collect()),
        Kind::Func { arity, ret } => Kind::Func { arity: *arity, ret: Box::new(renamed(ret, f)) },
        Kind::Multi(ks) => Kind::Multi(ks.iter().map(|k| renamed(k, f)).collect()),
        k => k.clone(),
    }
}

/// Compares the two on the source and optimised terms of `src`; the first difference.
fn differences(src: &str) -> Result<(), String> {
    let Ok(checked) = eqfuse_ir::parse::parse(src).and_then(|p| eqfuse_ir::check::check(&p)) else {
        return Ok(());
    };
    let o = match optimize_checked(checked, &OptimizeOptions::default()) {
        // a program the optimiser does not compile yet has no term (it runs on the
        // reference interpreter): nothing to compare
        Err(e) if eqfuse_optimize::is_unsupported(&e) => return Ok(()),
        other => other.map_err(|e| format!("optimize: {e}"))?,
    };
    for (what, term) in [("source", &o.result.source.expr), ("optimised", &o.result.term.expr)] {
        let want = through_an_egraph(term, &o.result.facts);
        let got = term_kinds(term.as_ref(), &o.result.facts);
        if let Some(i) = (0..want.len()).find(|&i| want[i] != got[i]) {
            return Err(format!(
                "{what} term, node {i} ({}): {:?} through an e-graph, {:?} node by node\n{term}",
                term.as_ref()[i],
                want[i],
                got[i]
            ));
        }
    }
    Ok(())
}

fn programs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut v: Vec<PathBuf> = std::fs::read_dir(root.join("examples"))
        .expect("examples/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "eqf"))
        .collect();
    v.extend(common::project_cases().iter().map(|c| c.program()));
    v.sort();
    v
}

#[test]
fn every_example_and_conformance_program_has_the_egraphs_kinds() {
    let all = programs();
    assert!(all.len() > 40, "found only {} programs", all.len());
    for p in all {
        let src = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        if let Err(e) = differences(&src) {
            panic!("{}: {e}", p.display());
        }
    }
    // the row-block programs, whose optimised terms hold lanes and projections
    for src in [common::LAYERNORM, common::LOGSUMEXP] {
        differences(src).unwrap_or_else(|e| panic!("{e}"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5EED_0007),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_programs_have_the_egraphs_kinds(
        case in program_and_inputs(GenConfig { allow_runtime_errors: true, ..GenConfig::default() })
    ) {
        if let Err(e) = differences(&case.text()) {
            prop_assert!(false, "{}\n{}", e, case.text());
        }
    }
}
