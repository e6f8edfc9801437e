//! `RunOptions::row_blocks` and `RunOptions::segment_blocks`: off, a row block's or a
//! segment block's phases run one after the other as kernels of their own (the native
//! counts say which way a block ran), with the same results; on (the default, unless
//! `EQFUSE_NO_ROWBLOCK` / `EQFUSE_NO_SEGBLOCK` is set), block by block.
//!
//! One test: the native counts are the process's, so nothing else may run beside it.
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cpu::{native_counts, run, NativeCounts, RunOptions};
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::plan::{Plan, Step};
use eqfuse_ir::value::Value;
use eqfuse_optimize::{optimize, OptimizeOptions};
use indexmap::IndexMap;
use ndarray::{ArrayD, IxDyn};

const SOFTMAX: &str = "input m : f32[r, c]
let mx = reduce max (-inf) m
let e = generate [r, c] (\\i j -> exp (m[i, j] - mx[i]))
let s = reduce (+) 0 e
output sm = generate [r, c] (\\i j -> e[i, j] / s[i])
";

const SCAN_MAP: &str = "input x : f32[n]
let s = scan (+) 0 x
output y = map (\\v -> v * 2.0) s
";

fn plan(src: &str) -> Plan {
    let checked = check(&parse(src).unwrap()).unwrap_or_else(|e| panic!("{e}\n{src}"));
    optimize(&checked, &OptimizeOptions::default()).unwrap().plan
}

fn f32s(shape: &[usize]) -> Value {
    let n: usize = shape.iter().product();
    Value::F32(
        ArrayD::from_shape_vec(IxDyn(shape), (0..n).map(|i| (i % 13) as f32 * 0.25).collect()).unwrap(),
    )
}

/// The single input `name` of shape `shape` (its sizes named `sizes`), and those sizes.
fn input(name: &str, shape: &[usize], sizes: &[&str]) -> (IndexMap<String, Value>, IndexMap<String, i64>) {
    let sizes = sizes.iter().zip(shape).map(|(s, &d)| (s.to_string(), d as i64)).collect();
    ([(name.to_string(), f32s(shape))].into_iter().collect(), sizes)
}

/// Runs `plan` on `ins` with `opts`: its outputs and how the native counts moved.
fn counted(
    plan: &Plan,
    ins: &(IndexMap<String, Value>, IndexMap<String, i64>),
    opts: &RunOptions,
) -> (Vec<Value>, NativeCounts) {
    let before = native_counts();
    let out = run(plan, &ins.0, &ins.1, opts).unwrap();
    let after = native_counts();
    let moved = NativeCounts {
        native: after.native - before.native,
        vm: after.vm - before.vm,
        segment_blocks: after.segment_blocks - before.segment_blocks,
        row_blocks: after.row_blocks - before.row_blocks,
    };
    (out.into_values().collect(), moved)
}

#[test]
fn block_switches_choose_between_blocks_and_phases() {
    let on = RunOptions { cache_dir: None, row_blocks: true, segment_blocks: true, ..RunOptions::default() };
    let inputs = input("m", &[64, 100], &["r", "c"]);

    // softmax: one row block of three phases
    let p = plan(SOFTMAX);
    let phases = p.steps.iter().find_map(|s| match s {
        Step::RowBlock { kernels, .. } => Some(kernels.len()),
        _ => None,
    });
    assert_eq!(phases, Some(3), "{:?}", p.steps);
    let (blocked, c) = counted(&p, &inputs, &on);
    assert_eq!((c.row_blocks, c.native, c.vm), (1, 3, 0), "block by block");
    let (phased, c) = counted(&p, &inputs, &RunOptions { row_blocks: false, ..on.clone() });
    assert_eq!((c.row_blocks, c.native, c.vm), (0, 3, 0), "phase by phase");
    assert_eq!(blocked, phased);

    // a scan and a map over it: one segment block
    let p = plan(SCAN_MAP);
    assert!(p.steps.iter().any(|s| matches!(s, Step::SegmentBlock { .. })), "{:?}", p.steps);
    let inputs = input("x", &[50_000], &["n"]);
    let (blocked, c) = counted(&p, &inputs, &on);
    assert_eq!(c.segment_blocks, 1, "{c:?}");
    let (phased, c) = counted(&p, &inputs, &RunOptions { segment_blocks: false, ..on.clone() });
    assert_eq!(c.segment_blocks, 0, "{c:?}");
    assert_eq!(c.native, 2, "{c:?}");
    assert_eq!(blocked, phased);
}
