//! Version 2 of the language on the reference interpreter: integer types, tuples and groups,
//! loops, the prelude, segments and `slice` of any rank; and every conformance case of the
//! project (plus those of `EQFUSE_EXTRA_CONFORMANCE`, such as the version-2 suite) on the
//! interpreter alone.
#![allow(clippy::unwrap_used)]

use eqfuse_ir::check::check;
use eqfuse_ir::conformance::{project_cases, Case};
use eqfuse_ir::interp::interpret;
use eqfuse_ir::parse::parse;
use eqfuse_ir::{Result, Value};
use indexmap::IndexMap;
use std::path::Path;

/// Parses, checks and runs one case.
fn run_case(case: &Case) -> Result<IndexMap<String, Value>> {
    let src = case.source().unwrap();
    let checked = check(&parse(&src)?)?;
    interpret(&checked, &case.inputs()?)
}

#[test]
fn project_and_extra_conformance_cases() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let all = project_cases(&repo).unwrap();
    assert!(!all.is_empty());
    let mut failures = Vec::new();
    for case in &all {
        let name = &case.name;
        match (&case.spec.error, run_case(case)) {
            (Some(code), Err(e)) if e.code.as_str() == code => {}
            (Some(code), Err(e)) => failures.push(format!("{name}: expected {code}, got {e}")),
            (Some(code), Ok(_)) => failures.push(format!("{name}: expected {code}, but it ran")),
            (None, Err(e)) => failures.push(format!("{name}: {e}")),
            (None, Ok(outs)) => {
                if let Err(why) = case.compare(&outs) {
                    failures.push(format!("{name}: {why}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} failed:\n{}", failures.len(), all.len(), failures.join("\n"));
}

mod interp_common;
use eqfuse_ir::error::Code;
use eqfuse_ir::Scalar;
use interp_common::{err, f32m, f32s, f64s, i64s, out, run, s, scalar_out};
use ndarray::{ArrayD, IxDyn};

fn u8s(v: &[u8]) -> Value {
    Value::U8(ArrayD::from_shape_vec(IxDyn(&[v.len()]), v.to_vec()).unwrap())
}

fn u32s(v: &[u32]) -> Value {
    Value::U32(ArrayD::from_shape_vec(IxDyn(&[v.len()]), v.to_vec()).unwrap())
}

#[test]
fn small_integer_types_wrap_shift_and_divide() {
    let src = "input a : u8[n]\ninput b : u8[n]\n\
               output add = map (\\x y -> x + y) a b\n\
               output shl = map (\\x y -> x << y) a b\n\
               output shr = map (\\x y -> x >> y) a b\n\
               output quo = map (\\x y -> x / y) a b\n\
               output neg = map (\\x -> -x) a\n\
               output cpl = map (\\x -> !x) a";
    let ins = || vec![("a", u8s(&[200, 1, 0x80])), ("b", u8s(&[100, 9, 7]))];
    assert_eq!(out(src, ins(), "add"), u8s(&[44, 10, 0x87]));
    assert_eq!(out(src, ins(), "shl"), u8s(&[200 << 4, 2, 0]));
    assert_eq!(out(src, ins(), "shr"), u8s(&[200 >> 4, 0, 1]));
    assert_eq!(out(src, ins(), "quo"), u8s(&[2, 0, 18]));
    assert_eq!(out(src, ins(), "neg"), u8s(&[56, 255, 0x80]));
    assert_eq!(out(src, ins(), "cpl"), u8s(&[55, 254, 0x7F]));
    let e = err(src, vec![("a", u8s(&[1])), ("b", u8s(&[0]))], Code::DivZero);
    assert!(e.message.contains("u8"), "{e}");
}

#[test]
fn u32_hash_with_hex_constants_and_unsigned_compare() {
    let src = "input xs : u32[n]\n\
               output h = map (\\x -> (x ^ (x >> 16)) * 0x85EBCA6B) xs\n\
               output big = map (\\x -> x > 0x7FFFFFFF) xs";
    let f = |x: u32| (x ^ (x >> 16)).wrapping_mul(0x85EB_CA6B);
    let xs = [1u32, 0xDEAD_BEEF, 0x8000_0000];
    assert_eq!(out(src, vec![("xs", u32s(&xs))], "h"), u32s(&xs.map(f)));
    let big = Value::Bool(ArrayD::from_shape_vec(IxDyn(&[3]), vec![false, true, true]).unwrap());
    assert_eq!(out(src, vec![("xs", u32s(&xs))], "big"), big);
}

#[test]
fn builtins_as_functions_and_pi() {
    let src = "input xs : f32[n]\ninput ys : f32[n]\n\
               output mx = map max xs ys\n\
               output top = reduce max (-inf) xs\n\
               output r = map sqrt xs\n\
               output bytes = map u8 xs\n\
               output c32 = map (\\x -> pi * x) xs\n\
               output p64 = pi";
    let ins = || vec![("xs", f32s(&[4.0, 300.0, -1.0])), ("ys", f32s(&[5.0, f32::NAN, -2.0]))];
    let mx = out(src, ins(), "mx");
    let Value::F32(mx) = mx else { panic!() };
    assert_eq!(mx[[0]], 5.0);
    assert!(mx[[1]].is_nan());
    assert_eq!(scalar_out(src, ins(), "top"), Scalar::F32(300.0));
    assert_eq!(out(src, ins(), "bytes"), u8s(&[4, 255, 0]));
    assert_eq!(
        out(src, ins(), "c32"),
        f32s(&[4.0 * std::f32::consts::PI, 300.0 * std::f32::consts::PI, -std::f32::consts::PI])
    );
    assert_eq!(scalar_out(src, ins(), "p64"), Scalar::F64(std::f64::consts::PI));
}

#[test]
fn a_name_that_shadows_a_builtin_is_the_programs_value() {
    let src = "input sum : f64\ninput xs : f64[n]\n\
               let mean = map (\\x -> x + sum) xs\n\
               output dot = reduce (+) 0 mean";
    let v = scalar_out(src, vec![("sum", s(Scalar::F64(1.0))), ("xs", f64s(&[1.0, 2.0]))], "dot");
    assert_eq!(v, Scalar::F64(5.0));
}

#[test]
fn tuples_in_lambdas_groups_and_patterns() {
    let src = "input xs : f32[n]\ninput ys : f32[n]\n\
               let (lo, hi) = map (\\x -> (min x 0.0, max x 0.0)) xs\n\
               output lo\noutput hi\n\
               let (su, sv) = map (\\x y -> let (u, v) = (x + y, x - y) in (u * v, u + v)) xs ys\n\
               output su\n\
               let (m, i) = reduce (\\(a, i) (b, j) -> if b < a || (b == a && j < i) then (b, j) else (a, i)) (inf, n) (xs, iota n)\n\
               output m\noutput i\n\
               let (rs, rc) = scan (\\(a, p) (b, q) -> (a + b, p + q)) (0.0, 0) (xs, fill [n] 1)\n\
               output rs\noutput rc\n\
               let (fa, fb) = iterate 10 (\\(p, q) -> (q, p + q)) (0, 1)\n\
               output fb";
    let ins = || vec![("xs", f32s(&[2.0, -1.0, 3.0, -1.0])), ("ys", f32s(&[1.0, 1.0, 1.0, 1.0]))];
    assert_eq!(out(src, ins(), "lo"), f32s(&[0.0, -1.0, 0.0, -1.0]));
    assert_eq!(out(src, ins(), "hi"), f32s(&[2.0, 0.0, 3.0, 0.0]));
    assert_eq!(out(src, ins(), "su"), f32s(&[3.0, 0.0, 8.0, 0.0]));
    assert_eq!(scalar_out(src, ins(), "m"), Scalar::F32(-1.0));
    assert_eq!(scalar_out(src, ins(), "i"), Scalar::I64(1));
    assert_eq!(out(src, ins(), "rs"), f32s(&[2.0, 1.0, 4.0, 3.0]));
    assert_eq!(out(src, ins(), "rc"), i64s(&[1, 2, 3, 4]));
    assert_eq!(scalar_out(src, ins(), "fb"), Scalar::I64(89));
}

#[test]
fn loops_for_and_while() {
    let src = "input xs : f32[n]\ninput k : i64\n\
               let (ys, c) = loop (x, c) = (xs, 0) for i < k do (map (\\v -> v + f32 i) x, c + 1)\n\
               output ys\noutput c\n\
               let (hs, r) = loop (x, r) = (xs, 0) while reduce (||) false (map (\\v -> v >= 1.0) x) do\n\
                 (map (\\v -> if v >= 1.0 then v * 0.5 else v) x, r + 1)\n\
               output hs\noutput r";
    let ins = |k: i64| vec![("xs", f32s(&[4.0, 0.5])), ("k", s(Scalar::I64(k)))];
    assert_eq!(out(src, ins(3), "ys"), f32s(&[7.0, 3.5]));
    assert_eq!(scalar_out(src, ins(3), "c"), Scalar::I64(3));
    assert_eq!(out(src, ins(-2), "ys"), f32s(&[4.0, 0.5]));
    assert_eq!(scalar_out(src, ins(-2), "c"), Scalar::I64(0));
    assert_eq!(out(src, ins(0), "hs"), f32s(&[0.5, 0.5]));
    assert_eq!(scalar_out(src, ins(0), "r"), Scalar::I64(3));
}

#[test]
fn a_loop_state_that_changes_shape_at_run_time_is_a_shape_error() {
    let src = "input xs : f32[n]\n\
               output y = loop x = xs for i < 2 do filter (\\v -> v > 0.0) x";
    let e = err(src, vec![("xs", f32s(&[1.0, -1.0, 2.0]))], Code::Shape);
    assert!(e.message.contains("`x`") && e.message.contains("[3]") && e.message.contains("[2]"), "{e}");
    // a state that keeps its shape runs
    assert_eq!(out(src, vec![("xs", f32s(&[1.0, 2.0]))], "y"), f32s(&[1.0, 2.0]));
}

#[test]
fn a_while_loop_that_never_ends_stops_at_the_deadline() {
    let src = "input xs : f32[n]\noutput y = loop x = xs while true do map (\\v -> v + 1.0) x";
    let checked = check(&parse(src).unwrap()).unwrap();
    let inputs = IndexMap::from([("xs".to_string(), f32s(&[1.0]))]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(200);
    let e =
        eqfuse_ir::interp::interpret_until(&checked, &inputs, &eqfuse_ir::Limits::default(), Some(deadline))
            .unwrap_err();
    assert_eq!(e.code, Code::Limit, "{e}");
}

#[test]
fn prelude_sum_mean_argmin_dot() {
    let src = "input m : f32[r, c]\ninput e : f64[z]\ninput xs : f64[n]\n\
               output s = sum m\noutput mu = mean m\noutput me = mean e\n\
               output amin = argmin m\noutput amax = argmax m\noutput d = dot xs xs\n\
               output pr = prod xs";
    let nan = f32::NAN;
    let ins = || {
        vec![
            ("m", f32m(2, 3, &[3.0, -0.0, 0.0, 1.0, nan, nan])),
            ("e", f64s(&[])),
            ("xs", f64s(&[1.0, 2.0, 3.0])),
        ]
    };
    assert_eq!(out(src, ins(), "amin"), i64s(&[1, 1]));
    assert_eq!(out(src, ins(), "amax"), i64s(&[0, 1]));
    let Value::F32(mu) = out(src, ins(), "mu") else { panic!() };
    assert_eq!(mu[[0]], 1.0);
    assert!(mu[[1]].is_nan());
    let Scalar::F64(me) = scalar_out(src, ins(), "me") else { panic!() };
    assert!(me.is_nan());
    assert_eq!(scalar_out(src, ins(), "d"), Scalar::F64(14.0));
    assert_eq!(scalar_out(src, ins(), "pr"), Scalar::F64(6.0));
    let e = err("input xs : f32[n]\noutput i = argmax xs", vec![("xs", f32s(&[]))], Code::Shape);
    assert!(e.message.contains("argmax"), "{e}");
}

#[test]
fn segments_reduce_and_scan_with_empty_segments() {
    let src = "input offsets : i64[m + 1]\ninput xs : i64[n]\n\
               output r = reduce_segments (+) 0 offsets xs\n\
               output sc = scan_segments (+) 0 offsets xs\n\
               output mx = reduce_segments max (-100) offsets xs";
    let ins = |o: &[i64]| vec![("offsets", i64s(o)), ("xs", i64s(&[1, 2, 3, 4, 5]))];
    assert_eq!(out(src, ins(&[0, 0, 2, 2, 5, 5]), "r"), i64s(&[0, 3, 0, 12, 0]));
    assert_eq!(out(src, ins(&[0, 0, 2, 2, 5, 5]), "sc"), i64s(&[1, 3, 3, 7, 12]));
    assert_eq!(out(src, ins(&[0, 0, 2, 2, 5, 5]), "mx"), i64s(&[-100, 2, -100, 5, -100]));
    for (bad, pos) in [(&[1, 5][..], 0), (&[0, 3, 2, 5][..], 2), (&[0, 2, 4][..], 2), (&[0, 9, 5][..], 1)] {
        let e = err(src, ins(bad), Code::Index);
        assert!(e.message.contains(&format!("position {pos}")), "{bad:?}: {e}");
    }
}

#[test]
fn slice_of_any_rank() {
    let src = "input m : f32[r, c]\n\
               output b = slice m [1, 1] [2, 2]\n\
               output e = slice m [3, 0] [0, 3]";
    let m = || vec![("m", f32m(3, 3, &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]))];
    assert_eq!(out(src, m(), "b"), f32m(2, 2, &[4.0, 5.0, 7.0, 8.0]));
    assert_eq!(out(src, m(), "e").shape(), &[0, 3]);
    let bad = "input m : f32[r, c]\noutput b = slice m [1, 2] [2, 2]";
    let e = err(bad, m(), Code::Index);
    assert!(e.message.contains("dimension 1"), "{e}");
    assert!(run(bad, vec![("m", f32m(3, 4, &[0.0; 12]))]).is_ok());
}

#[test]
fn a_group_of_arrays_of_different_shapes_is_a_shape_error() {
    let src = "input xs : f32[n]\n\
               let (m, i) = reduce (\\(a, i) (b, j) -> if b < a then (b, j) else (a, i)) (inf, -1) (filter (\\x -> x > 0.0) xs, iota n)\n\
               output i";
    let e = err(src, vec![("xs", f32s(&[1.0, -1.0, 2.0]))], Code::Shape);
    assert!(e.message.contains("[2]") && e.message.contains("[3]"), "{e}");
    assert_eq!(scalar_out(src, vec![("xs", f32s(&[2.0, 1.0]))], "i"), Scalar::I64(1));
}
