//! Properties of the random well-typed program generator (`eqfuse_ir::testgen`), and through
//! it of the checker, the interpreter and the printer.
//!
//! Each property runs a modest number of cases (see `CASES`); set `PROPTEST_CASES` to run
//! more, e.g. `PROPTEST_CASES=5000 cargo test --release -p eqfuse-ir --test testgen_props`, and
//! `EQFUSE_PROPTEST_SEED=N` (or `random`) to change the seed, which every property prints.

use eqfuse_ir::ast::{BinOp, Expr, ExprKind, Item, LoopForm, Program, UnOp, ARRAY_BUILTINS, SCALAR_BUILTINS};
use eqfuse_ir::check::{check, Checked};
use eqfuse_ir::interp::interpret;
use eqfuse_ir::parse::parse;
use eqfuse_ir::print::print_program;
use eqfuse_ir::testgen::{identical, program_and_inputs, Case, GenConfig, Ops};
use eqfuse_ir::types::{Dim, ElemType, Type};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use std::collections::BTreeSet;

/// Cases per property unless `PROPTEST_CASES` says otherwise.
const CASES: u32 = 128;

/// The seed unless `EQFUSE_PROPTEST_SEED` gives one (`random`: a new one each run).
const SEED: u64 = 0x5EED_0002;

/// The configuration of every property: its seed is printed (shown with a failure), so a
/// failing run can be repeated with `EQFUSE_PROPTEST_SEED=<seed>`.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(CASES);
    let seed = match std::env::var("EQFUSE_PROPTEST_SEED").ok().as_deref() {
        Some("random") => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(SEED, |d| d.as_nanos() as u64),
        Some(n) => n.parse().unwrap_or(SEED),
        None => SEED,
    };
    eprintln!("testgen_props: proptest seed {seed} ({cases} cases); rerun with EQFUSE_PROPTEST_SEED={seed}");
    ProptestConfig {
        cases,
        rng_seed: proptest::test_runner::RngSeed::Fixed(seed),
        ..ProptestConfig::default()
    }
}

fn checked(case: &Case) -> Result<Checked, TestCaseError> {
    check(&case.program).map_err(|e| TestCaseError::fail(format!("check failed: {e}\n{}", case.text())))
}

/// An error that is a bug in eqfuse rather than a property of the program.
fn is_internal(msg: &str) -> bool {
    msg.contains("internal") || msg.contains("bug in eqfuse")
}

proptest! {
    #![proptest_config(config())]

    /// The generator only makes programs the checker accepts.
    #[test]
    fn generated_programs_check(case in program_and_inputs(GenConfig::default())) {
        checked(&case)?;
    }

    /// With runtime errors off, every case interprets without error.
    #[test]
    fn generated_programs_interpret_without_error(case in program_and_inputs(GenConfig::default())) {
        let c = checked(&case)?;
        let out = interpret(&c, &case.inputs);
        prop_assert!(out.is_ok(), "interpretation failed: {}\n{:?}", out.err().map(|e| e.to_string()).unwrap_or_default(), case);
        let out = out.unwrap_or_default();
        prop_assert_eq!(out.len(), c.outputs.len());
    }

    /// With runtime errors on, interpretation may fail but only with an index or
    /// division error, never a crash or an internal error.
    #[test]
    fn runtime_errors_are_clean(
        case in program_and_inputs(GenConfig { allow_runtime_errors: true, ..GenConfig::default() })
    ) {
        let c = checked(&case)?;
        if let Err(e) = interpret(&c, &case.inputs) {
            let msg = e.to_string();
            prop_assert!(!is_internal(&msg), "internal error: {msg}\n{case:?}");
            prop_assert!(
                msg.contains("E-INDEX") || msg.contains("E-DIV-ZERO"),
                "unexpected error: {msg}\n{case:?}"
            );
        }
    }

    /// print → parse gives the same tree, and check → interpret of the reparsed program
    /// gives bit-identical outputs.
    #[test]
    fn printing_round_trips_semantically(case in program_and_inputs(GenConfig::default())) {
        let c = checked(&case)?;
        let text = print_program(&case.program);
        let reparsed = parse(&text).map_err(|e| TestCaseError::fail(format!("reparse failed: {e}\n{text}")))?;
        prop_assert!(reparsed == case.program, "parse(print(p)) != p\n{text}");
        let c2 = check(&reparsed).map_err(|e| TestCaseError::fail(format!("recheck failed: {e}\n{text}")))?;
        prop_assert_eq!(&c.outputs, &c2.outputs);
        let a = interpret(&c, &case.inputs).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let b = interpret(&c2, &case.inputs).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(a.len(), b.len());
        for ((na, va), (nb, vb)) in a.iter().zip(&b) {
            prop_assert_eq!(na, nb);
            prop_assert!(identical(va, vb), "output {na} differs: {va:?} vs {vb:?}\n{text}");
        }
    }

    /// Restricted operation families still give valid, error-free programs.
    #[test]
    fn core_only_programs_check_and_run(
        case in program_and_inputs(GenConfig { ops: Ops::CORE, max_size: 3, ..GenConfig::default() })
    ) {
        let c = checked(&case)?;
        let out = interpret(&c, &case.inputs);
        prop_assert!(out.is_ok(), "{:?}\n{case:?}", out.err());
    }
}

/// What a set of programs uses.
#[derive(Default)]
struct Seen {
    builtins: BTreeSet<String>,
    binops: BTreeSet<&'static str>,
    unops: BTreeSet<&'static str>,
    elems: BTreeSet<&'static str>,
    forms: BTreeSet<&'static str>,
}

impl Seen {
    fn expr(&mut self, e: &Expr) {
        if let Some(t) = &e.ty {
            if let Some(el) = t.elem() {
                self.elems.insert(el.name());
            }
        }
        match &e.kind {
            ExprKind::Var(n)
                if ARRAY_BUILTINS.contains(&n.as_str()) || SCALAR_BUILTINS.contains(&n.as_str()) =>
            {
                self.builtins.insert(n.clone());
            }
            ExprKind::Binary { op, .. } => {
                self.binops.insert(op.symbol());
            }
            ExprKind::Section(op) => {
                self.binops.insert(op.symbol());
                self.forms.insert("section");
            }
            ExprKind::Unary { op, .. } => {
                self.unops.insert(op.symbol());
            }
            ExprKind::Let { .. } => {
                self.forms.insert("local let");
            }
            ExprKind::If { .. } => {
                self.forms.insert("if");
            }
            ExprKind::Index { .. } => {
                self.forms.insert("index");
            }
            ExprKind::Tuple(_) => {
                self.forms.insert("tuple");
            }
            ExprKind::LetTuple { .. } => {
                self.forms.insert("local let tuple");
            }
            ExprKind::Loop { form, tuple, .. } => {
                self.forms.insert(match form {
                    LoopForm::For { .. } => "loop",
                    LoopForm::While { .. } => "while",
                });
                if *tuple {
                    self.forms.insert("loop tuple");
                }
            }
            ExprKind::Apply { func, args } => {
                if let ExprKind::Var(f) = &func.kind {
                    let tuple_arg =
                        |k: usize| args.get(k).is_some_and(|a| matches!(a.kind, ExprKind::Tuple(_)));
                    match f.as_str() {
                        "reduce" if tuple_arg(2) => {
                            self.forms.insert("group reduce");
                        }
                        "iterate" if tuple_arg(2) => {
                            self.forms.insert("iterate tuple");
                        }
                        "slice" if args.get(1).is_some_and(|a| matches!(a.kind, ExprKind::Shape(_))) => {
                            self.forms.insert("slice with shapes");
                        }
                        "map" | "filter" => {
                            if let Some(ExprKind::Var(g)) = args.first().map(|a| &a.kind) {
                                if SCALAR_BUILTINS.contains(&g.as_str()) {
                                    self.forms.insert("builtin as function");
                                }
                            }
                            if let Some(ExprKind::Lambda { body, .. }) = args.first().map(|a| &a.kind) {
                                if matches!(body.kind, ExprKind::Tuple(_)) {
                                    self.forms.insert("map to tuple");
                                }
                            }
                        }
                        "generate" => {
                            if let Some(ExprKind::Lambda { body, .. }) = args.get(1).map(|a| &a.kind) {
                                if matches!(body.kind, ExprKind::Tuple(_)) {
                                    self.forms.insert("generate to tuple");
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        for c in e.kind.children() {
            self.expr(c);
        }
    }

    fn program(&mut self, p: &Program) {
        for item in &p.items {
            match item {
                Item::Input { ty: Type::Scalar(t), .. } => {
                    self.elems.insert(t.name());
                }
                Item::Input { ty: Type::Array { elem, shape }, .. } => {
                    self.elems.insert(elem.name());
                    if shape.iter().any(|d| matches!(d, Dim::Affine { .. })) {
                        self.forms.insert("affine input dimension");
                    }
                }
                Item::Let { value, .. } => {
                    if matches!(value.kind, ExprKind::Lambda { .. }) {
                        self.forms.insert("named function");
                    }
                    self.expr(value);
                }
                Item::Output { value: Some(v), .. } => self.expr(v),
                Item::LetTuple { value: v, .. } => {
                    self.forms.insert("let tuple");
                    self.expr(v);
                }
                Item::Output { value: None, .. } => {
                    self.forms.insert("output alias");
                }
                Item::Input { .. } => {}
            }
        }
    }
}

/// Over a fixed-seed sample, the generator uses every builtin, operator and element type.
#[test]
fn generator_covers_the_language() {
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        proptest::test_runner::TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
    );
    let strategy = program_and_inputs(GenConfig::default());
    let mut seen = Seen::default();
    let mut checked_count = 0;
    for _ in 0..2000 {
        let Ok(tree) = strategy.new_tree(&mut runner) else { continue };
        let case = tree.current();
        let c = match check(&case.program) {
            Ok(c) => c,
            Err(e) => panic!("generated program does not check: {e}\n{}", case.text()),
        };
        checked_count += 1;
        seen.program(&c.program);
        for t in c.outputs.values() {
            if let Some(e) = t.elem() {
                seen.elems.insert(e.name());
            }
        }
    }
    assert_eq!(checked_count, 2000);
    let missing_builtins: Vec<&str> = ARRAY_BUILTINS
        .iter()
        .chain(SCALAR_BUILTINS)
        .copied()
        .filter(|b| !seen.builtins.contains(*b))
        .collect();
    assert!(missing_builtins.is_empty(), "builtins never generated: {missing_builtins:?}");
    let missing_ops: Vec<&str> =
        BinOp::ALL.iter().map(|o| o.symbol()).filter(|s| !seen.binops.contains(s)).collect();
    assert!(missing_ops.is_empty(), "binary operators never generated: {missing_ops:?}");
    for u in [UnOp::Neg, UnOp::Not] {
        assert!(seen.unops.contains(u.symbol()), "unary {} never generated", u.symbol());
    }
    let missing_elems: Vec<&str> =
        ElemType::ALL.iter().map(|t| t.name()).filter(|t| !seen.elems.contains(t)).collect();
    assert!(missing_elems.is_empty(), "element types never generated: {missing_elems:?}");
    for form in [
        "section",
        "local let",
        "if",
        "index",
        "tuple",
        "named function",
        "output alias",
        "let tuple",
        "local let tuple",
        "loop",
        "while",
        "loop tuple",
        "group reduce",
        "iterate tuple",
        "slice with shapes",
        "builtin as function",
        "map to tuple",
        "generate to tuple",
        "affine input dimension",
    ] {
        assert!(seen.forms.contains(form), "{form} never generated");
    }
}

/// Failing cases shrink: a property that fails on any program with a `filter` shrinks to a
/// small program.
#[test]
fn failing_cases_shrink_to_small_programs() {
    let mut runner = TestRunner::new_with_rng(
        Config { failure_persistence: None, ..Config::default() },
        proptest::test_runner::TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
    );
    let result = runner.run(&program_and_inputs(GenConfig::default()), |case| {
        prop_assert!(!case.text().contains("filter"));
        Ok(())
    });
    match result {
        Err(proptest::test_runner::TestError::Fail(_, case)) => {
            let text = case.text();
            let lines = text.lines().count();
            assert!(lines <= 4, "did not shrink to a small program ({lines} lines):\n{text}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}
