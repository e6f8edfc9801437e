//! Which reductions the C generator folds into independent accumulators (element `j` into
//! accumulator `j mod W`): only operators that commute on the elements they meet — a known
//! one, or a keyed selection (`argmin` over `(value, innermost index)`, also one that
//! skips NaNs from a neutral value that is no NaN); an operator that does not commute
//! folds in order. And the `bool` `if`s of an operator are `bool`
//! operators in the generated C. Read off the generated source.
#![allow(clippy::unwrap_used)]

use eqfuse_codegen::c::generate;
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::plan::fixtures::{argmin_op, group_affine, group_argmin};
use eqfuse_ir::plan::{Func, Inst, LaneOp, Plan, Step};
use eqfuse_ir::types::ElemType;
use eqfuse_optimize::{optimize, OptimizeOptions};

fn plan_of(src: &str) -> Plan {
    let checked = check(&parse(src).unwrap()).unwrap_or_else(|e| panic!("{e}\n{src}"));
    optimize(&checked, &OptimizeOptions::default()).unwrap().plan
}

/// `group_argmin(false)` with its operator replaced by `op` (and, with `key_is_value`, the
/// element's components swapped so that the index is no key).
fn argmin_with(op: Func, key_not_index: bool) -> Plan {
    let mut plan = group_argmin(false);
    let Step::Kernel(k) = &mut plan.steps[0] else { panic!("a kernel") };
    if let LaneOp::Reduce { op: o, .. } = &mut k.lanes[0].op {
        *o = op;
    }
    if key_not_index {
        // the key is the outer index: not distinct along a row
        k.elem.ret = vec![2, 0];
    }
    plan
}

/// `group_argmin(false)` over `i32` values, by `op`.
fn int_argmin(op: Func) -> Plan {
    let mut plan = argmin_with(op, false);
    plan.values[0].elem = ElemType::I32;
    plan.values[3].elem = ElemType::I32;
    let Step::Kernel(k) = &mut plan.steps[0] else { panic!("a kernel") };
    k.elem.reg_types[2] = ElemType::I32;
    if let LaneOp::Reduce { ne, .. } = &mut k.lanes[0].op {
        ne.reg_types[0] = ElemType::I32;
        ne.body.insts[0] = Inst::Const { dst: 0, value: eqfuse_ir::value::Scalar::I32(i32::MAX) };
    }
    plan
}

fn interleaved(plan: &Plan) -> bool {
    let code = generate(plan);
    assert!(code.kernels.iter().all(Result::is_ok), "{:?}", code.kernels);
    code.source.contains("acc0[w]")
}

#[test]
fn only_commuting_reductions_fold_into_independent_accumulators() {
    // the builtins (NaN smallest or largest, ties to the first index)
    assert!(interleaved(&plan_of("input d : f32[n]\noutput i = argmin d\n")), "argmin");
    assert!(interleaved(&plan_of("input d : f64[r, c]\noutput i = argmax d\n")), "argmax");
    // written by hand over integers (no NaN): ties to the first or to the last index
    assert!(interleaved(&int_argmin(argmin_op(ElemType::I32))), "i32 argmin");
    let mut last = argmin_op(ElemType::I32);
    if let Inst::Binary { ref mut a, ref mut b, .. } = last.body.insts[2] {
        std::mem::swap(a, b);
    }
    assert!(interleaved(&int_argmin(last)), "ties to the last index");
    // `<` on floats ignores NaN: `NaN op 1` keeps NaN, `1 op NaN` keeps 1. From a neutral
    // value that is no NaN (`inf`) no accumulator ever holds one and NaN elements change
    // none: independent accumulators fold what the in-order fold does
    assert!(interleaved(&group_argmin(false)), "argmin_op from inf skips NaNs");
    // from a NaN: in order
    let with_ne = |v: f32| {
        let mut plan = group_argmin(false);
        let Step::Kernel(k) = &mut plan.steps[0] else { panic!("a kernel") };
        if let LaneOp::Reduce { ne, .. } = &mut k.lanes[0].op {
            ne.body.insts[0] = Inst::Const { dst: 0, value: eqfuse_ir::value::Scalar::F32(v) };
        }
        plan
    };
    assert!(!interleaved(&with_ne(f32::NAN)), "argmin_op from NaN");
    assert!(interleaved(&with_ne(-0.0)), "argmin_op from -0.0");
    // the key is no innermost index: in order
    let builtin = plan_of("input d : f32[r, c]\noutput i = argmin d\n");
    let Step::Kernel(k) = &builtin.steps.iter().find(|s| matches!(s, Step::Kernel(_))).unwrap() else {
        panic!()
    };
    let LaneOp::Reduce { op: nan_aware, .. } = &k.lanes[0].op else { panic!("a reduction: {k:?}") };
    assert!(interleaved(&argmin_with(nan_aware.clone(), false)), "the builtin's operator");
    assert!(!interleaved(&argmin_with(nan_aware.clone(), true)), "a key that is no index");
    // ties by value go to the element whatever the keys: does not commute
    let mut later = argmin_op(ElemType::F32);
    if let Inst::If { ref mut then_ret, .. } = later.body.insts[3] {
        *then_ret = 5;
    }
    assert!(!interleaved(&argmin_with(later, false)));
    // keeps the accumulator whatever the element
    let mut keep = argmin_op(ElemType::F32);
    keep.ret = vec![0, 1];
    assert!(!interleaved(&argmin_with(keep, false)));
    // composition of affine maps: in order
    assert!(!interleaved(&group_affine(false, false)));
}

#[test]
fn bool_ifs_of_an_operator_are_bool_operators() {
    let code = generate(&group_argmin(false)).source;
    let op = &code[code.find("eq_k0_op0(").unwrap()..];
    let op = &op[..op.find("\n}").unwrap()];
    // `if b == a then j < i else b < a`: `(c && t) || (!c && e)`, no `bool` select left
    assert!(op.contains("&&") && op.contains("||"), "{op}");
    // (the float one by bit masks)
    assert_eq!(op.matches(" ? ").count(), 1, "only the two selects of values stay: {op}");
    assert_eq!(op.matches("eq_sel_f32(").count(), 1, "only the two selects of values stay: {op}");
}

/// NumPy's `argmin` (`max`: `argmax`) of one row: the first index of the smallest (largest)
/// element, the first NaN if there is one.
fn numpy_arg(row: &[f32], max: bool) -> i64 {
    if let Some(i) = row.iter().position(|x| x.is_nan()) {
        return i as i64;
    }
    let mut best = 0;
    for (i, &x) in row.iter().enumerate() {
        let better = if max { x > row[best] } else { x < row[best] };
        if better {
            best = i;
        }
    }
    best as i64
}

#[test]
fn interleaved_argmin_and_argmax_are_numpys() {
    use eqfuse_exec_cpu::{run, RunOptions};
    use eqfuse_ir::value::Value;
    use indexmap::IndexMap;
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
            | 1;
    eprintln!("interleaved_argmin: seed {seed}");
    let mut s = seed;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let pool = [3.0, -1.5, 0.0, -0.0, f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
    for max in [false, true] {
        let plan = plan_of(if max {
            "input d : f32[r, c]\noutput i = argmax d\n"
        } else {
            "input d : f32[r, c]\noutput i = argmin d\n"
        });
        assert!(interleaved(&plan));
        for (r, c) in [(1, 1), (3, 63), (2, 64), (5, 129), (1, 100_003), (40, 1000), (7, 20_001)] {
            // NaNs rare in some rows, none in others; ties everywhere
            let nan_rate = next() % 3;
            let data: Vec<f32> = (0..r * c)
                .map(|_| {
                    let x = next();
                    match x % 1000 {
                        0 if nan_rate > 0 => pool[4 + (x >> 20) as usize % 2],
                        1..=40 => pool[(x >> 20) as usize % 4],
                        41..=43 => pool[6 + (x >> 20) as usize % 2],
                        _ => ((x >> 24) % 64) as f32 - 32.0,
                    }
                })
                .collect();
            let want: Vec<i64> = data.chunks(c).map(|row| numpy_arg(row, max)).collect();
            let ins: IndexMap<String, Value> = [(
                "d".to_string(),
                Value::F32(ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[r, c]), data).unwrap()),
            )]
            .into_iter()
            .collect();
            let sizes: IndexMap<String, i64> =
                [("r".to_string(), r as i64), ("c".to_string(), c as i64)].into_iter().collect();
            for (block_size, threads) in [(8192, 2), (7, 3), (1000, 1)] {
                let o = RunOptions { block_size, threads, ..RunOptions::default() };
                let got = run(&plan, &ins, &sizes, &o).unwrap();
                let got: Vec<i64> =
                    got["i"].to_scalars().iter().map(|s| s.as_i128().unwrap() as i64).collect();
                assert_eq!(got, want, "max={max} [{r}, {c}] block {block_size}");
            }
        }
    }
}
