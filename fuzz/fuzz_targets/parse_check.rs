//! Arbitrary bytes through parse, print→parse and check: nothing may panic, and printing a
//! parsed program must parse back to the same program.
#![no_main]

use eqfuse_ir::{check::check, parse::parse, print::print_program};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let Ok(program) = parse(src) else { return };
    let printed = print_program(&program);
    let again = parse(&printed).expect("printed program must parse");
    assert_eq!(again, program, "print/parse changed the program:\n{printed}");
    let _ = check(&program);
});
