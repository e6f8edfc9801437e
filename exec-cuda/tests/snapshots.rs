//! Snapshots of the generated CUDA C for a few conformance programs (the kernels of their
//! optimised plans, each file without the shared prelude): what the skeletons look like
//! for a full reduction (dotp), row reductions and 2-d generates (softmax_rows, then its row
//! block as one kernel), a permute
//! with atomics (histogram), scans (scans) and a loop (iterate_builtin); reductions and scans
//! over groups (version 2's `v2_group_argmin_reduce`, `v2_group_scan_runmax`).
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cuda::{kernel_sources, CudaOptions};
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_optimize::{optimize, OptimizeOptions};
use std::path::Path;

/// The kernels of `name`'s optimised plan, each as its header and what follows the prelude.
fn sources(name: &str) -> String {
    let dir = if name.starts_with("v2_") { "../tests/conformance-v2" } else { "../tests/conformance" };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir).join(name).join("program.eqf");
    let src = std::fs::read_to_string(path).unwrap();
    let checked = check(&parse(&src).unwrap()).unwrap();
    let plan = optimize(&checked, &OptimizeOptions::default()).unwrap().plan;
    let mut out = String::new();
    for (file, text) in kernel_sources(&plan, &CudaOptions::default()) {
        let (head, rest) = text.split_once("// ---- eqfuse prelude ----").unwrap();
        let (_, body) = rest.split_once("// ---- end of prelude ----\n").unwrap();
        out.push_str(&format!("===== {file}\n{head}// (prelude)\n{body}"));
    }
    out
}

#[test]
fn dotp() {
    insta::assert_snapshot!(sources("dotp"));
}

#[test]
fn softmax_rows() {
    insta::assert_snapshot!(sources("softmax_rows"));
}

#[test]
fn histogram() {
    insta::assert_snapshot!(sources("histogram"));
}

#[test]
fn scans() {
    insta::assert_snapshot!(sources("scans"));
}

#[test]
fn iterate_builtin() {
    insta::assert_snapshot!(sources("iterate_builtin"));
}

#[test]
fn v2_group_argmin_reduce() {
    insta::assert_snapshot!(sources("v2_group_argmin_reduce"));
}

#[test]
fn v2_group_scan_runmax() {
    insta::assert_snapshot!(sources("v2_group_scan_runmax"));
}

/// A map over `[a, b, c]` reading only at its own point: one flat run of 16-byte tiles,
/// index `(0, 0, f)` where the arrays have the space's extents, the flat index divided
/// otherwise.
#[test]
fn flat_map() {
    let src = "input p : f32[a, b, c]\noutput o = map (\\x -> sqrt (0.0 - log x)) p";
    let checked = check(&parse(src).unwrap()).unwrap();
    let plan = optimize(&checked, &OptimizeOptions::default()).unwrap().plan;
    let mut out = String::new();
    for (file, text) in kernel_sources(&plan, &CudaOptions::default()) {
        let (_, rest) = text.split_once("// ---- end of prelude ----\n").unwrap();
        out.push_str(&format!("===== {file}\n{rest}"));
    }
    insta::assert_snapshot!(out);
}
