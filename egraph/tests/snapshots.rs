//! Snapshots of decoded conformance programs: they should read like the originals.

use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::print::print_program;
use std::path::Path;

fn decoded(case: &str) -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance").join(case).join("program.eqf");
    let src = std::fs::read_to_string(&path).expect("program");
    let checked = check(&parse(&src).expect("parse")).expect("check");
    print_program(&eqfuse_egraph::roundtrip(&checked).expect("roundtrip"))
}

#[test]
fn dotp() {
    insta::assert_snapshot!(decoded("dotp"));
}

#[test]
fn blackscholes() {
    insta::assert_snapshot!(decoded("blackscholes"));
}

#[test]
fn nbody() {
    insta::assert_snapshot!(decoded("nbody"));
}
