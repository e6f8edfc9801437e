//! Long unrolled scalar recurrences (issue 44): an escape-time loop written as a chain of
//! `let`s of `if`s inside one `map` lambda. Lowering computes, for every `if` of the chain,
//! what both its branches compute (`lower/src/strict.rs`); done with one walk per set it was
//! quadratic or worse in the chain's length, and this 600-step chain took minutes to lower.
//! A 1000-step chain over tuple state rolls into one loop under the default limits, from a
//! caller on a small stack.

#![allow(clippy::unwrap_used)]

use eqfuse::ir::stack::{with_stack, REQUEST_STACK_BYTES};
use eqfuse::{Arrays, Backend, Limits, OptimizeOptions, Value};

/// An escape-time recurrence of `steps` steps over the state `(x, y, k)`, one scalar `let`
/// per component and step (so `3 * steps + 3` levels of nesting).
fn chain(steps: usize) -> String {
    let mut s = String::from(
        "input cr : f64[n]\ninput ci : f64[n]\noutput k = map (\\a b ->\n  \
         let x0 = 0.0 in let y0 = 0.0 in let k0 = 0 in\n",
    );
    for i in 1..=steps {
        let p = i - 1;
        let c = format!("x{p} * x{p} + y{p} * y{p} > 4.0");
        s.push_str(&format!(
            "  let x{i} = if {c} then x{p} else x{p} * x{p} - y{p} * y{p} + a in \
             let y{i} = if {c} then y{p} else 2.0 * x{p} * y{p} + b in \
             let k{i} = if {c} then k{p} else k{p} + 1 in\n"
        ));
    }
    s.push_str(&format!("  k{steps}) cr ci\n"));
    s
}

/// The recurrence computed directly: the step at which `(a, b)` escapes (`steps` if never).
fn escape(a: f64, b: f64, steps: usize) -> i64 {
    let (mut x, mut y, mut k) = (0.0f64, 0.0f64, 0i64);
    for _ in 0..steps {
        if x * x + y * y > 4.0 {
            break;
        }
        (x, y, k) = (x * x - y * y + a, 2.0 * x * y + b, k + 1);
    }
    k
}

#[test]
fn a_600_step_recurrence_lowers_and_runs() {
    const STEPS: usize = 600;
    let src = chain(STEPS);
    let limits = Limits { max_depth: 2000, ..Limits::default() };
    let cr = [-2.5, -1.0, -0.75, 0.0, 0.25, 0.3, 0.5];
    let ci = [0.0, 0.0, 0.1, 0.0, 0.0, 0.5, 0.5];
    let mut inputs = Arrays::new();
    inputs.insert("cr".into(), Value::from(ndarray::arr1(&cr).into_dyn()));
    inputs.insert("ci".into(), Value::from(ndarray::arr1(&ci).into_dyn()));
    // on the stack the command line gives a request: the passes recurse over the chain
    let got = with_stack("long-chain", REQUEST_STACK_BYTES, || {
        let program = eqfuse::ir::parse::parse_with(&src, &limits)?;
        let checked = eqfuse::ir::check::check_with(&program, &limits)?;
        let opts = OptimizeOptions { no_fusion: true, ..OptimizeOptions::default() };
        let opt = eqfuse::optimize_checked(checked, &opts)?;
        eqfuse::backend::run_plan(&opt.result.plan, opt.source(), Backend::Reference, &inputs)
    })
    .unwrap();
    let want: Vec<i64> = cr.iter().zip(&ci).map(|(&a, &b)| escape(a, b, STEPS)).collect();
    assert!(want.contains(&(STEPS as i64)) && want.iter().any(|&k| k < 5), "{want:?}");
    assert_eq!(got["k"], Value::from(ndarray::arr1(&want).into_dyn()));
}

/// The recurrence of [`chain`] with tuple state: one `let (x, y, k) = if .. then .. else ..`
/// per step (about `steps` levels of nesting).
fn tuple_chain(steps: usize) -> String {
    let mut s = String::from(
        "input cr : f64[n]\ninput ci : f64[n]\noutput k = map (\\a b ->\n  let (x0, y0, k0) = (0.0, 0.0, 0) in\n",
    );
    for i in 1..=steps {
        let p = i - 1;
        s.push_str(&format!(
            "  let (x{i}, y{i}, k{i}) = if x{p} * x{p} + y{p} * y{p} > 4.0 then (x{p}, y{p}, k{p}) \
             else (x{p} * x{p} - y{p} * y{p} + a, 2.0 * x{p} * y{p} + b, k{p} + 1) in\n"
        ));
    }
    s.push_str(&format!("  k{steps}) cr ci\n"));
    s
}

#[test]
fn a_1000_step_recurrence_rolls_under_the_default_limits_on_a_small_stack() {
    const STEPS: usize = 1000;
    let src = tuple_chain(STEPS);
    let cr = [-2.5, -1.0, -0.75, 0.0, 0.25, 0.3, 0.5];
    let ci = [0.0, 0.0, 0.1, 0.0, 0.0, 0.5, 0.5];
    // a caller's thread of 2 MiB: parsing, checking and optimising run on stacks of their own
    let (kernels, loops, got) = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let mut inputs = Arrays::new();
            inputs.insert("cr".into(), Value::from(ndarray::arr1(&cr).into_dyn()));
            inputs.insert("ci".into(), Value::from(ndarray::arr1(&ci).into_dyn()));
            let opt = eqfuse::optimize(&eqfuse::parse(&src).unwrap(), &OptimizeOptions::default()).unwrap();
            let loops: usize = opt.kernels.kernels.iter().map(|k| k.loops).sum();
            (opt.kernels.kernels.len(), loops, opt.run(Backend::Cpu, &inputs).unwrap())
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!((kernels, loops), (1, 1), "the chain did not roll into one kernel with a loop");
    let want: Vec<i64> = cr.iter().zip(&ci).map(|(&a, &b)| escape(a, b, STEPS)).collect();
    assert_eq!(got["k"], Value::from(ndarray::arr1(&want).into_dyn()));
}
