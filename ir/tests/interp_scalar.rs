//! Scalar semantics of the reference interpreter: wrapping integers, division, conversions,
//! NaN-propagating min/max, rounding, laziness of `if`, `&&` and `||`.
#![allow(clippy::unwrap_used)]

mod interp_common;

use eqfuse_ir::{Code, Scalar};
use interp_common::*;

const I64_OPS: &str = "input a : i64\ninput b : i64\n\
output add = a + b\noutput sub = a - b\noutput mul = a * b\noutput neg = -a\noutput absa = abs a";

fn i64_ops(a: i64, b: i64) -> Vec<i64> {
    let outs = run(I64_OPS, vec![("a", s(Scalar::I64(a))), ("b", s(Scalar::I64(b)))]).unwrap();
    outs.values().map(|v| as_i64(v)[0]).collect()
}

#[test]
fn i64_arithmetic_wraps() {
    let table: &[(i64, i64)] =
        &[(1, 2), (i64::MAX, 1), (i64::MIN, 1), (i64::MIN, -1), (i64::MAX, i64::MAX), (-5, 3)];
    for &(a, b) in table {
        let want =
            vec![a.wrapping_add(b), a.wrapping_sub(b), a.wrapping_mul(b), a.wrapping_neg(), a.wrapping_abs()];
        assert_eq!(i64_ops(a, b), want, "a = {a}, b = {b}");
    }
    assert_eq!(i64_ops(i64::MIN, 0)[3], i64::MIN, "-MIN wraps to MIN");
    assert_eq!(i64_ops(i64::MIN, 0)[4], i64::MIN, "abs MIN wraps to MIN");
}

#[test]
fn i32_arithmetic_wraps() {
    let src = "input a : i32\ninput b : i32\noutput add = a + b\noutput mul = a * b\noutput neg = -a";
    for &(a, b) in &[(i32::MAX, 1), (i32::MIN, -1), (65536, 65536), (-3, 7)] {
        let outs = run(src, vec![("a", s(Scalar::I32(a))), ("b", s(Scalar::I32(b)))]).unwrap();
        let got: Vec<Scalar> = outs.values().map(|v| v.get_flat(0).unwrap()).collect();
        assert_eq!(
            got,
            vec![
                Scalar::I32(a.wrapping_add(b)),
                Scalar::I32(a.wrapping_mul(b)),
                Scalar::I32(a.wrapping_neg())
            ]
        );
    }
}

const DIV: &str = "input a : i64\ninput b : i64\noutput q = a / b\noutput r = a % b";

fn div(a: i64, b: i64) -> (i64, i64) {
    let outs = run(DIV, vec![("a", s(Scalar::I64(a))), ("b", s(Scalar::I64(b)))]).unwrap();
    (as_i64(&outs["q"])[0], as_i64(&outs["r"])[0])
}

#[test]
fn integer_division_truncates_and_wraps() {
    assert_eq!(div(7, 2), (3, 1));
    assert_eq!(div(-7, 2), (-3, -1));
    assert_eq!(div(7, -2), (-3, 1));
    assert_eq!(div(-7, -2), (3, -1));
    assert_eq!(div(i64::MIN, -1), (i64::MIN, 0));
    assert_eq!(div(i64::MIN, 1), (i64::MIN, 0));
    let src = "input a : i32\ninput b : i32\noutput q = a / b\noutput r = a % b";
    let outs = run(src, vec![("a", s(Scalar::I32(i32::MIN))), ("b", s(Scalar::I32(-1)))]).unwrap();
    assert_eq!(outs["q"].get_flat(0), Some(Scalar::I32(i32::MIN)));
    assert_eq!(outs["r"].get_flat(0), Some(Scalar::I32(0)));
}

#[test]
fn division_by_zero_is_an_error() {
    let e = err(
        "input a : i64\ninput b : i64\noutput q = a / b",
        vec![("a", s(Scalar::I64(5))), ("b", s(Scalar::I64(0)))],
        Code::DivZero,
    );
    assert!(e.message.contains("division by zero"), "{e}");
    assert!(e.span.is_some(), "the error points at the expression: {e}");
    let e = err(
        "input a : i64\ninput b : i64\noutput q = a % b",
        vec![("a", s(Scalar::I64(5))), ("b", s(Scalar::I64(0)))],
        Code::DivZero,
    );
    assert!(e.message.contains("remainder by zero"), "{e}");
    // Inside a map, the element is named.
    let e = err(
        "input a : i64[n]\ninput b : i64[n]\noutput q = map (\\x y -> x / y) a b",
        vec![("a", i64s(&[1, 2, 3])), ("b", i64s(&[1, 1, 0]))],
        Code::DivZero,
    );
    assert!(e.message.contains("`map` at element [2]"), "{e}");
    // Float division by zero is IEEE.
    let outs = run("input a : f64\noutput q = a / 0.0", vec![("a", s(Scalar::F64(1.0)))]).unwrap();
    assert_eq!(as_f64(&outs["q"]), vec![f64::INFINITY]);
}

#[test]
fn float_to_int_conversions_truncate_and_saturate() {
    let src = "input x : f64\noutput a = i32 x\noutput b = i64 x\noutput c = f32 x";
    let table = [2.7, -2.7, 0.5, -0.0, 1e20, -1e20, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 3e38, 1e300];
    for x in table {
        let outs = run(src, vec![("x", s(Scalar::F64(x)))]).unwrap();
        assert_eq!(outs["a"].get_flat(0), Some(Scalar::I32(x as i32)), "i32 {x}");
        assert_eq!(outs["b"].get_flat(0), Some(Scalar::I64(x as i64)), "i64 {x}");
        let c = outs["c"].get_flat(0).unwrap();
        match c {
            Scalar::F32(c) => assert!(c.to_bits() == (x as f32).to_bits(), "f32 {x}: {c}"),
            other => panic!("{other:?}"),
        }
    }
    let outs = run("input x : f64\noutput a = i32 x", vec![("x", s(Scalar::F64(f64::NAN)))]).unwrap();
    assert_eq!(outs["a"].get_flat(0), Some(Scalar::I32(0)), "NaN becomes 0");
    let outs =
        run("input x : f32\noutput a = i64 x\noutput b = i32 x", vec![("x", s(Scalar::F32(-f32::INFINITY)))])
            .unwrap();
    assert_eq!(outs["a"].get_flat(0), Some(Scalar::I64(i64::MIN)));
    assert_eq!(outs["b"].get_flat(0), Some(Scalar::I32(i32::MIN)));
    let outs =
        run("input x : i64\noutput a = f32 x\noutput b = i32 x", vec![("x", s(Scalar::I64(16_777_217)))])
            .unwrap();
    assert_eq!(outs["a"].get_flat(0), Some(Scalar::F32(16_777_216.0)));
    assert_eq!(outs["b"].get_flat(0), Some(Scalar::I32(16_777_217)));
    let outs = run("input x : i64\noutput b = i32 x", vec![("x", s(Scalar::I64(1 << 33 | 5)))]).unwrap();
    assert_eq!(outs["b"].get_flat(0), Some(Scalar::I32(5)), "i64 to i32 keeps the low bits");
}

#[test]
fn min_max_propagate_nan() {
    let src = "input a : f64\ninput b : f64\noutput lo = min a b\noutput hi = max a b";
    let table =
        [(1.0, f64::NAN), (f64::NAN, 1.0), (f64::NAN, f64::NAN), (1.0, 2.0), (-1.0, f64::NEG_INFINITY)];
    for (a, b) in table {
        let outs = run(src, vec![("a", s(Scalar::F64(a))), ("b", s(Scalar::F64(b)))]).unwrap();
        let (lo, hi) = (as_f64(&outs["lo"])[0], as_f64(&outs["hi"])[0]);
        if a.is_nan() || b.is_nan() {
            assert!(lo.is_nan() && hi.is_nan(), "min/max {a} {b} = {lo} {hi}");
        } else {
            assert_eq!((lo, hi), (a.min(b), a.max(b)));
        }
    }
    let src = "input a : f32[n]\noutput lo = reduce min inf a\noutput hi = reduce max (-inf) a";
    let outs = run(src, vec![("a", f32s(&[1.0, f32::NAN, 3.0]))]).unwrap();
    assert!(as_f32(&outs["lo"])[0].is_nan() && as_f32(&outs["hi"])[0].is_nan());
    let outs = run(
        "input a : i64\ninput b : i64\noutput c = clamp a 0 b\noutput m = min a b",
        vec![("a", s(Scalar::I64(-5))), ("b", s(Scalar::I64(3)))],
    )
    .unwrap();
    assert_eq!(as_i64(&outs["c"]), vec![0]);
    assert_eq!(as_i64(&outs["m"]), vec![-5]);
}

#[test]
fn rounding_and_float_functions() {
    let src = "input x : f64[n]\noutput r = map (\\v -> round v) x\noutput f = map (\\v -> floor v) x\noutput c = map (\\v -> ceil v) x";
    let xs = [0.5, -0.5, 1.5, 2.5, -2.5, 2.4, -0.0];
    let outs = run(src, vec![("x", f64s(&xs))]).unwrap();
    assert_eq!(as_f64(&outs["r"]), vec![1.0, -1.0, 2.0, 3.0, -3.0, 2.0, -0.0]);
    assert_eq!(as_f64(&outs["f"]), xs.iter().map(|x| x.floor()).collect::<Vec<_>>());
    assert_eq!(as_f64(&outs["c"]), xs.iter().map(|x| x.ceil()).collect::<Vec<_>>());
    let src = "input a : f64\ninput b : f64\noutput p = pow a b\noutput t = atan2 a b\noutput m = a % b";
    let outs = run(src, vec![("a", s(Scalar::F64(-7.5))), ("b", s(Scalar::F64(2.0)))]).unwrap();
    assert_eq!(as_f64(&outs["p"]), vec![(-7.5f64).powf(2.0)]);
    assert_eq!(as_f64(&outs["t"]), vec![(-7.5f64).atan2(2.0)]);
    assert_eq!(as_f64(&outs["m"]), vec![-1.5]);
}

#[test]
fn f32_arithmetic_is_single_precision() {
    let src = "input a : f32\ninput b : f32\noutput c = a + b\noutput d = sqrt a";
    let outs = run(src, vec![("a", s(Scalar::F32(16_777_216.0))), ("b", s(Scalar::F32(1.0)))]).unwrap();
    assert_eq!(as_f32(&outs["c"]), vec![16_777_216.0]);
    assert_eq!(as_f32(&outs["d"]), vec![4096.0]);
    // 0.1 + 0.2 in f32 is not the f64 sum rounded... it is the f32 sum.
    let outs = run(src, vec![("a", s(Scalar::F32(0.1))), ("b", s(Scalar::F32(0.2)))]).unwrap();
    assert_eq!(as_f32(&outs["c"]), vec![0.1f32 + 0.2f32]);
}

#[test]
fn if_is_lazy() {
    let src = "input xs : f32[n]\ninput i : i64\noutput y = if i < n then xs[i] else 0";
    let y = out(src, vec![("xs", f32s(&[1.0, 2.0, 3.0])), ("i", s(Scalar::I64(5)))], "y");
    assert_eq!(as_f32(&y), vec![0.0]);
    let y = out(src, vec![("xs", f32s(&[1.0, 2.0, 3.0])), ("i", s(Scalar::I64(1)))], "y");
    assert_eq!(as_f32(&y), vec![2.0]);
    let src = "input a : i64[n]\ninput b : i64[n]\noutput q = map (\\x y -> if y == 0 then 0 else x / y) a b";
    let q = out(src, vec![("a", i64s(&[6, 7, 8])), ("b", i64s(&[2, 0, -4]))], "q");
    assert_eq!(as_i64(&q), vec![3, 0, -2]);
}

#[test]
fn and_or_short_circuit() {
    let src = "input xs : f32[n]\ninput i : i64\n\
               output a = i < n && xs[i] > 0\noutput b = i >= n || xs[i] > 0";
    let outs = run(src, vec![("xs", f32s(&[1.0, -2.0])), ("i", s(Scalar::I64(7)))]).unwrap();
    assert_eq!(as_bool(&outs["a"]), vec![false]);
    assert_eq!(as_bool(&outs["b"]), vec![true]);
    let outs = run(src, vec![("xs", f32s(&[1.0, -2.0])), ("i", s(Scalar::I64(1)))]).unwrap();
    assert_eq!(as_bool(&outs["a"]), vec![false]);
    assert_eq!(as_bool(&outs["b"]), vec![false]);
    let outs = run(
        "input a : i64\noutput t = a == 0 || 10 / a > 1\noutput u = !(a != 0 && 10 / a > 1)",
        vec![("a", s(Scalar::I64(0)))],
    )
    .unwrap();
    assert_eq!(as_bool(&outs["t"]), vec![true]);
    assert_eq!(as_bool(&outs["u"]), vec![true]);
}

#[test]
fn iterate_applies_n_times() {
    let src = "input k : i64\ninput x : i64\noutput y = iterate k (\\z -> 2 * z + 1) x";
    for (k, want) in [(0, 5), (-3, 5), (1, 11), (3, 47)] {
        let y = scalar_out(src, vec![("k", s(Scalar::I64(k))), ("x", s(Scalar::I64(5)))], "y");
        assert_eq!(y, Scalar::I64(want), "k = {k}");
    }
    // A lambda inside a map, capturing the map's parameter.
    let src = "input xs : f64[n]\noutput y = map (\\x -> iterate 3 (\\z -> z + x) 0.0) xs";
    assert_eq!(as_f64(&out(src, vec![("xs", f64s(&[1.0, 2.5]))], "y")), vec![3.0, 7.5]);
}

#[test]
fn names_shadow_builtins_and_globals() {
    let src = "input xs : i64[n]\nlet k = 10\n\
               output a = map (\\max -> max + 1) xs\n\
               output b = map (\\x -> let exp = 2 in exp * x) xs\n\
               output c = map (\\k -> k * k) xs\n\
               output d = map (\\x -> x + k + n) xs";
    let outs = run(src, vec![("xs", i64s(&[1, 2, 3]))]).unwrap();
    assert_eq!(as_i64(&outs["a"]), vec![2, 3, 4]);
    assert_eq!(as_i64(&outs["b"]), vec![2, 4, 6]);
    assert_eq!(as_i64(&outs["c"]), vec![1, 4, 9]);
    assert_eq!(as_i64(&outs["d"]), vec![14, 15, 16]);
}

#[test]
fn named_and_local_functions() {
    let src = "input xs : f64[n]\nlet sq = \\x -> x * x\nlet f = \\a b -> sq a + b\n\
               output y = map (\\x -> f x 1.0) xs\n\
               output z = map sq xs\n\
               output w = map (\\x -> let g = \\y -> y * x in g 3.0) xs";
    let outs = run(src, vec![("xs", f64s(&[1.0, 2.0, -3.0]))]).unwrap();
    assert_eq!(as_f64(&outs["y"]), vec![2.0, 5.0, 10.0]);
    assert_eq!(as_f64(&outs["z"]), vec![1.0, 4.0, 9.0]);
    assert_eq!(as_f64(&outs["w"]), vec![3.0, 6.0, -9.0]);
}

#[test]
fn deep_nesting_does_not_overflow() {
    // Built and parsed on a thread with room: the evaluation makes its own big stack.
    let handle = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(|| {
            let depth = 470;
            let mut e = String::from("x");
            for _ in 0..depth {
                e = format!("({e} + 1)");
            }
            let src = format!("input x : i64\noutput y = {e}");
            scalar_out(&src, vec![("x", s(Scalar::I64(1)))], "y")
        })
        .unwrap();
    assert_eq!(handle.join().unwrap(), Scalar::I64(471));
}

#[test]
fn deep_nesting_inside_a_lambda() {
    let handle = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(|| {
            let mut e = String::from("x");
            for i in 0..150 {
                e = format!("(let v{i} = {e} + 1 in if v{i} > 0 then v{i} else 0)");
            }
            let src = format!("input xs : i64[n]\noutput y = map (\\x -> {e}) xs");
            as_i64(&out(&src, vec![("xs", i64s(&[1, 2]))], "y"))
        })
        .unwrap();
    assert_eq!(handle.join().unwrap(), vec![151, 152]);
}
