//! Input binding: missing, unknown, wrongly typed or shaped inputs, and size names.
#![allow(clippy::unwrap_used)]

mod interp_common;

use eqfuse_ir::bind::bind_inputs;
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::{Code, Error, Limits, Scalar, Value};
use indexmap::IndexMap;
use interp_common::*;

fn bind(src: &str, inputs: Vec<(&str, Value)>) -> Result<IndexMap<String, i64>, Error> {
    let checked = check(&parse(src).unwrap()).unwrap();
    let inputs: IndexMap<String, Value> = inputs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    bind_inputs(&checked, &inputs, &Limits::default()).map(|b| b.sizes)
}

const TWO: &str = "input xs : f32[n]\ninput m : f32[n, k]\ninput a : i64\noutput y = reduce (+) 0 xs";

#[test]
fn binds_sizes() {
    let sizes =
        bind(TWO, vec![("xs", f32s(&[1.0; 2])), ("m", f32m(2, 3, &[0.0; 6])), ("a", s(Scalar::I64(1)))])
            .unwrap();
    assert_eq!(sizes.into_iter().collect::<Vec<_>>(), vec![("n".to_string(), 2), ("k".to_string(), 3)]);
}

#[test]
fn missing_input() {
    let e = bind(TWO, vec![("m", f32m(2, 3, &[0.0; 6])), ("a", s(Scalar::I64(1)))]).unwrap_err();
    assert_eq!(e.code, Code::Input);
    assert_eq!(e.message, "missing input `xs` (f32[n])");
}

#[test]
fn unknown_input() {
    let e = bind(
        TWO,
        vec![
            ("xs", f32s(&[1.0; 2])),
            ("m", f32m(2, 3, &[0.0; 6])),
            ("a", s(Scalar::I64(1))),
            ("foo", f32s(&[])),
        ],
    )
    .unwrap_err();
    assert_eq!(e.code, Code::Input);
    assert_eq!(e.message, "unknown input `foo`; the program's inputs are `xs`, `m`, `a`");
}

#[test]
fn wrong_element_type() {
    let e = bind(TWO, vec![("xs", i64s(&[1, 2])), ("m", f32m(2, 3, &[0.0; 6])), ("a", s(Scalar::I64(1)))])
        .unwrap_err();
    assert_eq!(e.code, Code::Input);
    assert_eq!(e.message, "input `xs` is i64, the program declares f32[n]");
    let e =
        bind(TWO, vec![("xs", f32s(&[1.0; 2])), ("m", f32m(2, 3, &[0.0; 6])), ("a", s(Scalar::F32(1.0)))])
            .unwrap_err();
    assert_eq!(e.code, Code::Input);
}

#[test]
fn wrong_rank() {
    let e = bind(
        TWO,
        vec![("xs", f32m(1, 2, &[1.0; 2])), ("m", f32m(2, 3, &[0.0; 6])), ("a", s(Scalar::I64(1)))],
    )
    .unwrap_err();
    assert_eq!(e.code, Code::Input);
    assert!(e.message.contains("rank 2") && e.message.contains("f32[n]"), "{e}");
    let e = bind(TWO, vec![("xs", f32s(&[1.0; 2])), ("m", f32m(2, 3, &[0.0; 6])), ("a", i64s(&[1]))])
        .unwrap_err();
    assert_eq!(e.code, Code::Input);
    let e =
        bind(TWO, vec![("xs", s(Scalar::F32(1.0))), ("m", f32m(2, 3, &[0.0; 6])), ("a", s(Scalar::I64(1)))])
            .unwrap_err();
    assert_eq!(e.code, Code::Input);
    assert!(e.message.contains("scalar"), "{e}");
}

#[test]
fn sizes_must_agree() {
    let e = bind(TWO, vec![("xs", f32s(&[1.0; 2])), ("m", f32m(3, 1, &[0.0; 3])), ("a", s(Scalar::I64(1)))])
        .unwrap_err();
    assert_eq!(e.code, Code::Shape);
    assert_eq!(e.message, "size `n` is 2 from `xs` but 3 from `m`");
    let src = "input xs : f32[n]\ninput ys : f32[n]\noutput z = map (\\a b -> a + b) xs ys";
    let e = bind(src, vec![("xs", f32s(&[1.0; 1000])), ("ys", f32s(&[1.0; 7]))]).unwrap_err();
    assert_eq!(e.message, "size `n` is 1000 from `xs` but 7 from `ys`");
}

#[test]
fn literal_dimensions_must_match() {
    let src = "input xs : f32[4]\noutput y = reduce (+) 0 xs";
    assert!(bind(src, vec![("xs", f32s(&[1.0; 4]))]).unwrap().is_empty());
    let e = bind(src, vec![("xs", f32s(&[1.0; 5]))]).unwrap_err();
    assert_eq!(e.code, Code::Shape);
    assert!(e.message.contains("`xs`") && e.message.contains("f32[4]") && e.message.contains("5"), "{e}");
}

#[test]
fn interpret_reports_bind_errors() {
    let e =
        err("input xs : f32[n]\noutput y = map (\\x -> x * 2) xs", vec![("xs", i64s(&[1, 2]))], Code::Input);
    assert!(e.message.contains("`xs`"), "{e}");
    let e = err("input xs : f32[n]\noutput y = map (\\x -> x * 2) xs", vec![], Code::Input);
    assert!(e.message.contains("missing input"), "{e}");
}

#[test]
fn oversized_input_hits_the_limit() {
    let checked = check(&parse("input xs : f64[n]\noutput y = xs").unwrap()).unwrap();
    let inputs: IndexMap<String, Value> = [("xs".to_string(), f64s(&[0.0; 200]))].into_iter().collect();
    let limits = Limits { max_array_bytes: 1000, ..Limits::default() };
    let e = bind_inputs(&checked, &inputs, &limits).unwrap_err();
    assert_eq!(e.code, Code::Limit);
}
