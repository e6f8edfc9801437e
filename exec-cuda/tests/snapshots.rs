//! Snapshots of the generated CUDA C for a few conformance programs (the kernels of their
//! optimised plans, each file without the shared prelude): what the skeletons look like
//! for a full reduction (dotp), row reductions and 2-d generates (softmax_rows, then its row
//! block as one kernel), a permute
//! with atomics (histogram), scans (scans) and a loop (iterate_builtin).
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cuda::{kernel_sources, CudaOptions};
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_optimize::{optimize, OptimizeOptions};
use std::path::Path;

/// The kernels of `name`'s optimised plan, each as its header and what follows the prelude.
fn sources(name: &str) -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance").join(name).join("program.eqf");
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
