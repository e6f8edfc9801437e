//! Version-2 programs the random-program properties found failing on the CPU backend,
//! each its smallest form, against the reference interpreter.

#![allow(clippy::unwrap_used)]

use eqfuse::{Arrays, Backend, Value};

fn both(src: &str, inputs: &Arrays) {
    let checked = eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap();
    let want = eqfuse::run(&checked, Backend::Reference, inputs).unwrap();
    // compiled, not run on the interpreter because a piece failed to check
    if let Err(e) = eqfuse::optimize_checked(checked.clone(), &Default::default()) {
        panic!("not compiled: {e}\n{src}");
    }
    for unfused in [false, true] {
        let got = if unfused {
            eqfuse::backend::run_unfused(&checked, Backend::Cpu, inputs)
        } else {
            eqfuse::run(&checked, Backend::Cpu, inputs)
        };
        assert_eq!(
            got.unwrap_or_else(|e| panic!("unfused {unfused}: {e}\n{src}")),
            want,
            "unfused {unfused}\n{src}"
        );
    }
}

#[test]
fn an_input_dimension_with_size_arithmetic_binds_on_the_cpu() {
    // the optimiser names `m + 1` by a plain size the binding of inputs binds too
    let mut inputs = Arrays::new();
    inputs.insert("in1".into(), Value::from(ndarray::arr1(&[-1.93f32]).into_dyn()));
    inputs.insert("off4".into(), Value::from(ndarray::arr1(&[0i64, 0, 1]).into_dyn()));
    both(
        "input in1 : f32[n]\ninput off4 : i64[m + 1]\noutput o = map (\\x -> x + 1.0) in1\noutput r = m\n",
        &inputs,
    );
    both("input p : f32[2 * n]\noutput h = n\noutput s = reduce (+) 0 p\n", &{
        let mut i = Arrays::new();
        i.insert("p".into(), Value::from(ndarray::arr1(&[1.0f32, 2.0, 3.0, 4.0]).into_dyn()));
        i
    });
}

#[test]
fn a_folded_u64_constant_above_every_i64_reads_back() {
    let mut inputs = Arrays::new();
    inputs.insert("in1".into(), Value::from(ndarray::arr1(&[2.5f32, 3.0]).into_dyn()));
    both(
        "input in1 : f32[n]\noutput t4 = u64 (0 - 11)\noutput t5 = map (\\x -> u64 (-(10 + 1)) + u64 (i64 x)) in1\n",
        &inputs,
    );
}

#[test]
fn tuple_lets_nested_within_the_limit_compile_however_deep_their_rewriting() {
    // 260 lets of an 8-tuple: 262 levels as written, ~2100 once each is 8 `let`s (beyond the
    // default limit of 2000, which holds the text a person writes, not the rewriting)
    let names = |k: usize| (0..8).map(|c| format!("v{c}_{k}")).collect::<Vec<_>>().join(", ");
    let mut src = format!(
        "input xs : u64[n]\noutput o = map (\\x ->\n  let ({}) = ({}) in\n",
        names(0),
        ["x"; 8].join(", ")
    );
    for k in 0..260 {
        let next: Vec<String> =
            (1..8).map(|c| format!("v{c}_{k}")).chain([format!("v0_{k} + v1_{k}")]).collect();
        src.push_str(&format!("  let ({}) = ({}) in\n", names(k + 1), next.join(", ")));
    }
    src.push_str("  v0_260 + v7_260) xs\n");
    let mut inputs = Arrays::new();
    inputs.insert("xs".into(), Value::from(ndarray::arr1(&[1u64, 2, 3, 1 << 40]).into_dyn()));
    both(&src, &inputs);
}

#[test]
fn a_function_a_loop_calls_reads_what_it_reads_before_the_loop() {
    // found by `optimisation_is_confluent` on a fresh seed (211644653200620): `g` reads `t`,
    // the loop body calls `g`, and the piece before the loop did not keep `t` for it
    let mut inputs = Arrays::new();
    inputs.insert("xs".into(), Value::from(ndarray::arr1(&[-3i64, 7]).into_dyn()));
    both(
        "input xs : i64[n]\n\
         let (t, u) = iterate 2 (\\s -> let (a, b) = s in (a + 1.0, b)) (f32 0.0, f32 0.0)\n\
         let g = \\p -> t\n\
         let (ys, c) = loop (y, k) = (xs, 0) for i < 3 do (map (\\x -> let v = g x in x + i64 v) y, k + 1)\n\
         output ys\noutput c\n",
        &inputs,
    );
}

#[test]
fn a_function_a_loop_calls_may_call_another_that_reads_a_top_level_name() {
    // review of the fix above: the loop's own program took the called function's definition
    // along but not the definitions of the functions that one calls, which became inputs
    // with no type
    let mut inputs = Arrays::new();
    inputs.insert("xs".into(), Value::from(ndarray::arr1(&[-3i64, 7]).into_dyn()));
    both(
        "input xs : i64[n]\n\
         let (t, u) = iterate 2 (\\s -> let (a, b) = s in (a + 1.0, b)) (f32 0.0, f32 0.0)\n\
         let g = \\p -> t + p\n\
         let f = \\q -> g (q * 2.0)\n\
         let (ys, c) = loop (y, k) = (xs, 0) for i < 3 do (map (\\x -> let v = f (f32 x) in x + i64 v) y, k + 1)\n\
         output ys\noutput c\n",
        &inputs,
    );
}

#[test]
fn the_mean_over_rows_of_an_expression_is_the_mean_of_its_value() {
    // found by `optimisation_is_confluent` on fresh seeds (843815303734, 108151156196986): the
    // prelude's `mean` of rank 2 named its operand inside the divide's lambda
    let mut inputs = Arrays::new();
    inputs
        .insert("a".into(), Value::from(ndarray::arr2(&[[1.0f32, -2.0, 4.5], [0.5, 8.0, -1.0]]).into_dyn()));
    both("input a : f32[n, m]\noutput r = mean (reverse a)\noutput s = mean (map abs a)\n", &inputs);
}
