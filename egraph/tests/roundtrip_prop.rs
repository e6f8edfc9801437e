//! Random well-typed programs (testgen) survive encode → extract (AstSize) → decode: the
//! decoded program checks and interprets bit-identically to the original.

use eqfuse_ir::check::check;
use eqfuse_ir::interp::interpret;
use eqfuse_ir::parse::parse;
use eqfuse_ir::print::print_program;
use eqfuse_ir::testgen::{identical, program_and_inputs, GenConfig};
use proptest::prelude::*;

fn run_case(case: &eqfuse_ir::testgen::Case, cfg_errors: bool) -> Result<(), TestCaseError> {
    let checked = check(&case.program).map_err(|e| TestCaseError::fail(format!("original: {e}")))?;
    let decoded =
        eqfuse_egraph::roundtrip(&checked).map_err(|e| TestCaseError::fail(format!("roundtrip: {e}")))?;
    let text = print_program(&decoded);
    let reparsed = parse(&text).map_err(|e| TestCaseError::fail(format!("decoded text: {e}\n{text}")))?;
    let dchecked =
        check(&reparsed).map_err(|e| TestCaseError::fail(format!("decoded check: {e}\n{text}")))?;
    let orig = interpret(&checked, &case.inputs);
    let got = interpret(&dchecked, &case.inputs);
    match (orig, got) {
        (Ok(o), Ok(g)) => {
            prop_assert_eq!(o.len(), g.len());
            for ((k, a), (k2, b)) in o.iter().zip(&g) {
                prop_assert_eq!(k, k2);
                prop_assert!(identical(a, b), "output {} differs: {:?} vs {:?}\n{}", k, a, b, text);
            }
        }
        // a program that fails may fail differently (or not at all) once local lets are
        // substituted; only results of successful runs are compared
        (Err(_), _) if cfg_errors => {}
        (o, g) => prop_assert!(false, "original {:?}, decoded {:?}\n{}", o.err(), g.err(), text),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn roundtrip_is_identical(case in program_and_inputs(GenConfig::default())) {
        run_case(&case, false)?;
    }

    #[test]
    fn roundtrip_with_runtime_errors(
        case in program_and_inputs(GenConfig { allow_runtime_errors: true, ..GenConfig::default() })
    ) {
        run_case(&case, true)?;
    }

    #[test]
    fn roundtrip_of_bigger_programs(
        case in program_and_inputs(GenConfig {
            allow_runtime_errors: true,
            max_expr_depth: 6,
            max_items: 10,
            ..GenConfig::default()
        })
    ) {
        run_case(&case, true)?;
    }
}
