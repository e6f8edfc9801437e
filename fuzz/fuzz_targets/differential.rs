//! Differential fuzzing: the fuzz bytes pick a random well-typed program with inputs
//! (`eqfuse_ir::testgen::build_case`, deterministic per input), which is optimised and run
//! three ways, all of which must agree:
//!
//! 1. the reference interpreter on the program as written (the oracle);
//! 2. the plan interpreter on the optimised and on the unfused plan: the same outputs bit for
//!    bit; where the oracle fails at run time the plan may succeed (the optimiser may drop
//!    work nobody reads) or fail with a run-time code; where the oracle succeeds, so must it;
//! 3. the CPU executor on both plans, with default and with tiny blocks on several threads:
//!    the plan interpreter's outputs bit for bit (NaN bits aside), or its error code; a plan
//!    that folds floats (reduce, scan, permute) may round differently, within a tolerance.
//!
//! The program's printed text must also parse back to the same program and check.
#![no_main]

use arbitrary::Arbitrary;
use eqfuse_exec_cpu::RunOptions;
use eqfuse_ir::error::Code;
use eqfuse_ir::testgen::{build_case, executor_agrees, identical, GenConfig};
use eqfuse_ir::value::Value;
use eqfuse_optimize::{optimize, OptimizeOptions};
use indexmap::IndexMap;
use libfuzzer_sys::fuzz_target;
use std::time::Duration;

/// What the fuzz bytes decide: the generator's knobs and its choice vectors.
#[derive(Arbitrary, Debug)]
struct Input {
    /// Leave some divisions and indices unguarded (run-time errors allowed).
    runtime_errors: bool,
    /// Bigger programs and sizes.
    bigger: bool,
    /// One vector for the inputs and functions, one per top-level item.
    choices: Vec<Vec<u32>>,
    /// Sizes and input elements.
    data: Vec<u32>,
}

type Outputs = IndexMap<String, Value>;

fuzz_target!(|input: Input| {
    let mut cfg = GenConfig { allow_runtime_errors: input.runtime_errors, ..GenConfig::default() };
    if input.bigger {
        cfg = GenConfig { max_expr_depth: 5, max_items: 10, max_size: 12, ..cfg };
    }
    if input.choices.is_empty() {
        return;
    }
    let mut choices = input.choices;
    choices.truncate(cfg.max_items + 1);
    for c in &mut choices {
        c.truncate(cfg.max_item_choices);
    }
    let mut data = input.data;
    data.truncate(512);
    let case = build_case(&cfg, &choices, &data);
    let text = case.text();

    let reparsed = eqfuse_ir::parse::parse(&text).expect("a generated program prints to parseable text");
    assert_eq!(reparsed, case.program, "print/parse changed the program:\n{text}");
    let checked = eqfuse_ir::check::check(&case.program).expect("a generated program checks");

    let oracle = eqfuse_ir::interp::interpret(&checked, &case.inputs);
    let opts = OptimizeOptions { time_limit: Duration::from_secs(3), ..OptimizeOptions::default() };
    let opt = optimize(&checked, &opts).unwrap_or_else(|e| panic!("optimize failed: {e}\n{text}"));
    let bound = eqfuse_ir::bind::bind_inputs(&checked, &case.inputs, &eqfuse_ir::Limits::default())
        .unwrap_or_else(|e| panic!("the generated inputs do not bind: {e}\n{text}"));

    let tiny = |block_size, threads| RunOptions { block_size, threads, ..RunOptions::default() };
    for (label, plan) in [("optimised", &opt.plan), ("unfused", &opt.unfused_plan)] {
        let want = eqfuse_ir::plan::eval::eval(plan, &case.inputs, &bound.sizes);
        plan_agrees(&oracle, &want, &format!("{label} plan\n{plan}\nprogram:\n{text}"));
        for ro in [tiny(2048, 1), tiny(7, 2), tiny(1, 2)] {
            let got = eqfuse_exec_cpu::run(plan, &case.inputs, &bound.sizes, &ro);
            let what = format!("{label} plan on the CPU, block {}\n{plan}\nprogram:\n{text}", ro.block_size);
            if let Err(e) = executor_agrees(&want, &got, plan) {
                panic!("{e}\n{what}");
            }
        }
    }
});

/// The plan interpreter (`got`) agrees with the reference interpreter (`oracle`).
fn plan_agrees(oracle: &eqfuse_ir::Result<Outputs>, got: &eqfuse_ir::Result<Outputs>, what: &str) {
    match (oracle, got) {
        (Ok(o), Ok(g)) => {
            assert_eq!(o.keys().collect::<Vec<_>>(), g.keys().collect::<Vec<_>>(), "output names: {what}");
            for (name, a) in o {
                assert!(identical(a, &g[name]), "output `{name}`: oracle {a:?}, plan {:?}\n{what}", g[name]);
            }
        }
        (Err(_), Ok(_)) => {}
        (Err(a), Err(b)) => {
            assert!(
                matches!(b.code, Code::Index | Code::DivZero | Code::Shape),
                "oracle fails with {a}, the plan with {b}\n{what}"
            );
        }
        (Ok(_), Err(b)) => panic!("the oracle runs, the plan fails with {b}\n{what}"),
    }
}
