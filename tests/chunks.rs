//! The split for data in chunks (`eqfuse::chunks`, what `eqfuse.dask` runs on Dask):
//! every conformance case that runs, split along each size name that leads an input and run
//! block by block ([`eqfuse::chunks::run_in_blocks`]) with blocks of several sizes, one row
//! included, must give its expected outputs; a case that cannot be split must be refused
//! with `E-INPUT` naming what crosses blocks. Then the shapes of named splits (how many
//! passes) and the refusals one by one.

mod common;

use common::project_cases;
use eqfuse::chunks::{run_in_blocks, split};
use eqfuse::{Arrays, Backend, Code, Dim, Type, Value};

fn checked(src: &str) -> eqfuse::Checked {
    eqfuse::check(&eqfuse::parse(src).unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}"))
}

/// Block sizes that cut `n` rows into 1, 2, 3 and 7 blocks, and single rows when `n` is small.
fn block_sizes(n: usize) -> Vec<usize> {
    let mut out: Vec<usize> = [1, 2, 3, 7].iter().map(|k| n.div_ceil(*k).max(1)).collect();
    if n <= 24 {
        out.push(1);
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[test]
fn conformance_cases_run_in_blocks() {
    let (mut split_runs, mut refused) = (0usize, Vec::new());
    let mut failures = Vec::new();
    for case in project_cases() {
        if case.spec.error.is_some() {
            continue;
        }
        let src = case.source().unwrap_or_else(|e| panic!("{e}"));
        let c = checked(&src);
        let inputs = case.inputs().unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let bound = eqfuse::ir::bind::bind_inputs(&c, &inputs, &Default::default())
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let mut axes: Vec<String> = c
            .inputs
            .values()
            .filter_map(|t| match t {
                Type::Array { shape, .. } => match shape.first() {
                    Some(Dim::Size(s)) => Some(s.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        axes.dedup();
        for axis in axes {
            match split(&c, &axis) {
                Ok(plan) => {
                    let n = bound.sizes.get(&axis).copied().unwrap_or(0) as usize;
                    for rows in block_sizes(n) {
                        let got = run_in_blocks(&c, &plan, &inputs, rows, Backend::Reference);
                        match got.map_err(|e| e.to_string()).and_then(|out| case.compare(&out)) {
                            Ok(()) => split_runs += 1,
                            Err(e) => {
                                failures.push(format!("{} along {axis}, {rows} rows a block: {e}", case.name))
                            }
                        }
                    }
                }
                Err(e) => {
                    assert_eq!(e.code, Code::Input, "{}: {e}", case.name);
                    assert!(e.message.contains("cannot be computed in blocks"), "{}: {e}", case.name);
                    refused.push(format!("{} along {axis}: {}", case.name, e.message));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} split runs differ:\n{}", failures.len(), failures.join("\n"));
    // most of the suite splits; what does not is named in the failure message
    eprintln!("{split_runs} split runs; refused:\n{}", refused.join("\n"));
    assert!(split_runs >= 60, "only {split_runs} split runs; refused: {refused:?}");
}

/// `(passes, has globals, has rows)` of a program's split along `n`.
fn shape_of(src: &str) -> (usize, bool, bool) {
    let p = split(&checked(src), "n").unwrap_or_else(|e| panic!("{e}"));
    (p.passes.len(), p.globals.is_some(), p.rows.is_some())
}

#[test]
fn splits_have_the_passes_their_reductions_need() {
    let ex = |f: &str| std::fs::read_to_string(format!("examples/{f}")).unwrap_or_else(|e| panic!("{e}"));
    // element-wise: no pass, rows only
    assert_eq!(shape_of(&ex("blackscholes.eqf")), (0, false, true));
    assert_eq!(shape_of(&ex("saxpy.eqf")), (0, false, true));
    // one reduction: one pass, a scalar from the globals
    assert_eq!(shape_of(&ex("dotp.eqf")), (1, true, false));
    // the variance needs the mean first: two passes
    assert_eq!(shape_of(&ex("variance.eqf")), (2, true, false));
    // a scan along the axis: its totals in one pass, then rows with carries
    assert_eq!(shape_of("input xs : i64[n]\noutput s = scan (+) 0 xs"), (1, false, true));
    // rows of a matrix reduced along the inner axis stay in their block
    assert_eq!(shape_of("input a : f32[n, m]\noutput r = reduce max (-inf) a"), (0, false, true));
    // a reduction over rows that are themselves reduced
    assert_eq!(shape_of("input a : f32[n, m]\noutput t = reduce (+) 0 (reduce (+) 0 a)"), (1, true, false));
}

#[test]
fn scans_and_reductions_in_blocks_match_the_whole_program() {
    let srcs = [
        "input xs : i64[n]\noutput s = scan (+) 0 xs\noutput e = scan_exclusive (+) 0 xs\noutput m = scan max (-100) xs",
        "input xs : f64[n]\nlet mean = reduce (+) 0 xs / f64 (length xs)\noutput c = map (\\x -> x - mean) xs\noutput s = scan (\\a b -> a + b) 0 (map (\\x -> x * mean) xs)",
        "input xs : i32[n]\ninput w : i32[k]\nlet add = \\a b -> a + b\nlet sw = reduce (+) 0 w\noutput t = reduce add 0 (map (\\x -> x * w[0]) xs)\noutput g = map (\\x -> x + sw) xs",
        "input a : i64[n, m]\noutput t = reduce (+) 0 (scan (+) 0 (reduce (+) 0 a))\noutput r = map (\\x -> x + 1) (reduce min 1000 a)",
        "input xs : f32[n]\noutput z = let d = map (\\x -> x * 2.0) xs in reduce (+) 0 d / f32 n",
        // rows numbered in the whole array: `iota`, and a generate's row index as a number
        "input xs : f64[n]\nlet i = iota n\noutput y = map (\\x j -> x * f64 j) xs i\noutput g = generate [n] (\\r -> xs[r] + f64 (r * 2))\noutput s = reduce (+) 0 (map (\\j -> f64 j) (iota n))",
        // a row-wise softmax: reductions of rows stay in the block
        "input a : f32[n, m]\nlet mx = reduce max (-inf) a\nlet e = generate [n, m] (\\i j -> exp (a[i, j] - mx[i]))\nlet s = reduce (+) 0 e\noutput p = generate [n, m] (\\i j -> e[i, j] / s[i])",
    ];
    for src in srcs {
        let c = checked(src);
        let plan = split(&c, "n").unwrap_or_else(|e| panic!("{src}: {e}"));
        let mut inputs = Arrays::new();
        for (name, ty) in &c.inputs {
            let v = match ty {
                Type::Array { elem, shape } => {
                    let dims: Vec<usize> =
                        shape.iter().map(|d| if *d == Dim::Size("n".into()) { 11 } else { 3 }).collect();
                    let len: usize = dims.iter().product();
                    let vals: Vec<i64> = (0..len as i64).map(|i| (i * 7 + 3) % 13 - 6).collect();
                    match elem {
                        eqfuse::ElemType::I64 => Value::from(
                            ndarray::ArrayD::from_shape_vec(dims, vals).unwrap_or_else(|e| panic!("{e}")),
                        ),
                        eqfuse::ElemType::I32 => Value::from(
                            ndarray::ArrayD::from_shape_vec(dims, vals.iter().map(|&v| v as i32).collect())
                                .unwrap_or_else(|e| panic!("{e}")),
                        ),
                        eqfuse::ElemType::F32 => Value::from(
                            ndarray::ArrayD::from_shape_vec(
                                dims,
                                vals.iter().map(|&v| v as f32 / 4.0).collect(),
                            )
                            .unwrap_or_else(|e| panic!("{e}")),
                        ),
                        _ => Value::from(
                            ndarray::ArrayD::from_shape_vec(
                                dims,
                                vals.iter().map(|&v| v as f64 / 4.0).collect(),
                            )
                            .unwrap_or_else(|e| panic!("{e}")),
                        ),
                    }
                }
                _ => panic!("{src}: scalar input"),
            };
            inputs.insert(name.clone(), v);
        }
        let whole = eqfuse::run(&c, Backend::Reference, &inputs).unwrap_or_else(|e| panic!("{src}: {e}"));
        for rows in [1, 2, 4, 11, 20] {
            for backend in [Backend::Reference, Backend::Cpu] {
                let out =
                    run_in_blocks(&c, &plan, &inputs, rows, backend).unwrap_or_else(|e| panic!("{src}: {e}"));
                assert_eq!(out.keys().collect::<Vec<_>>(), whole.keys().collect::<Vec<_>>(), "{src}");
                for (k, v) in &out {
                    let tol = eqfuse::ir::value::Tolerance { rtol: 1e-5, atol: 1e-6, mismatch_fraction: 0.0 };
                    eqfuse::ir::value::compare(v, &whole[k], &tol)
                        .unwrap_or_else(|e| panic!("{src}, {rows} rows a block, {backend}: `{k}`: {e}"));
                }
            }
        }
    }
}

#[test]
fn what_crosses_blocks_is_refused_by_name() {
    let refused = [
        ("input xs : f32[n]\ninput idx : i64[k]\noutput g = gather xs idx", "`gather` reads"),
        ("input xs : f32[n]\noutput r = reverse xs", "`reverse` moves rows"),
        ("input xs : f32[n]\noutput y = map (\\x -> x + xs[0]) xs", "at an index"),
        ("input xs : f32[n]\noutput y = generate [n] (\\i -> xs[clamp (i - 1) 0 (n - 1)])", "at an index"),
        ("input xs : f32[n]\ninput w : f32[m, n]\nlet t = transpose w\noutput y = map (\\x r -> x + r) xs (reduce (+) 0 t)", "`t` is made along `n`"),
        ("input xs : f32[n]\noutput f = filter (\\x -> x > 0.0) xs", "`filter` moves rows"),
        ("input xs : f32[n]\ninput s : f32\noutput t = reduce (\\a b -> a + b + s) 0 xs", "only constants and functions"),
        ("input xs : f32[n]\noutput t = map (\\x -> x + 1.0) (slice xs 1 2)", "`slice` moves rows"),
    ];
    for (src, why) in refused {
        let e = split(&checked(src), "n").expect_err(src);
        assert_eq!(e.code, Code::Input, "{src}: {e}");
        assert!(e.message.contains(why), "{src}: {e}");
        assert!(e.message.contains("give the chunked inputs as one chunk"), "{src}: {e}");
    }
    let e = split(&checked("input xs : f32[m]\noutput y = map (\\x -> x) xs"), "n").expect_err("no axis");
    assert!(e.message.contains("no input of the program has `n`"), "{e}");
}

mod props {
    //! On random well-typed programs (`eqfuse_ir::testgen`): split along each size name that
    //! leads an input, either the split is refused with `E-INPUT`, or run block by block it
    //! gives what the whole program gives (floats within a tolerance: partials reassociate
    //! the sums), or fails with a run-time error too (an error on values no output needs may
    //! go away, as in optimised plans).
    use eqfuse::chunks::{run_in_blocks, split};
    use eqfuse::{Backend, Code, Dim, Type};
    use eqfuse_ir::testgen::{program_and_inputs, GenConfig};
    use eqfuse_ir::value::{compare, Tolerance};
    use proptest::prelude::*;

    fn config() -> ProptestConfig {
        let cases = std::env::var("EQFUSE_PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(256);
        ProptestConfig {
            cases,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x5EED_0C4E),
            ..ProptestConfig::default()
        }
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn a_split_run_in_blocks_computes_what_the_program_computes(
            case in program_and_inputs(GenConfig { allow_runtime_errors: true, ..GenConfig::default() }),
            rows in 1usize..5,
        ) {
            let c = eqfuse::check(&case.program).map_err(|e| TestCaseError::fail(format!("{e}\n{}", case.text())))?;
            let whole = eqfuse::run(&c, Backend::Reference, &case.inputs);
            let mut axes: Vec<String> = c.inputs.values().filter_map(|t| match t {
                Type::Array { shape, .. } => match shape.first() { Some(Dim::Size(s)) => Some(s.clone()), _ => None },
                _ => None,
            }).collect();
            axes.sort();
            axes.dedup();
            for axis in axes {
                let plan = match split(&c, &axis) {
                    Ok(p) => p,
                    Err(e) => {
                        prop_assert_eq!(e.code, Code::Input, "{}\n{}", e, case.text());
                        continue;
                    }
                };
                let got = run_in_blocks(&c, &plan, &case.inputs, rows, Backend::Reference);
                match (&whole, got) {
                    (Ok(w), Ok(g)) => {
                        let tol = Tolerance { rtol: 1e-4, atol: 1e-4, mismatch_fraction: 0.0 };
                        for (k, v) in w {
                            let gv = g.get(k).ok_or_else(|| TestCaseError::fail(format!("no `{k}`")))?;
                            compare(gv, v, &tol).map_err(|m| TestCaseError::fail(format!(
                                "`{k}` along {axis}, {rows} rows a block: {m}\n{}\n{:#?}", case.text(), plan)))?;
                        }
                    }
                    // as for optimised plans (tests/optimizer_props.rs): an error on values
                    // no output needs may go away, and a run-time error stays one
                    (Err(_), Ok(_)) => {}
                    (Err(we), Err(ge)) => prop_assert!(
                        matches!(ge.code, Code::Index | Code::DivZero | Code::Shape),
                        "{} / {}\n{}", we, ge, case.text()),
                    (Ok(_), Err(ge)) => return Err(TestCaseError::fail(format!(
                        "the split failed: {ge}\nalong {axis}, {rows} rows a block\n{}\n{:#?}", case.text(), plan))),
                }
            }
        }
    }
}
