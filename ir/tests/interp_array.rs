//! Array operations of the reference interpreter on small hand-checked examples, empty
//! arrays included, and every run-time error with its message.
#![allow(clippy::unwrap_used)]

mod interp_common;

use eqfuse_ir::{Code, Limits, Scalar, Value};
use interp_common::*;

#[test]
fn map_generate_iota_fill() {
    let src = "input xs : f32[n]\ninput ys : f32[n]\n\
               output a = map (\\x y -> x * y + 1) xs ys\n\
               output g = generate [2, 3] (\\i j -> 10 * i + j)\n\
               output io = iota n\n\
               output f = fill [n, 2] 1.5\n\
               output e = iota 0";
    let outs = run(src, vec![("xs", f32s(&[1.0, 2.0, 3.0])), ("ys", f32s(&[4.0, 5.0, 6.0]))]).unwrap();
    assert_eq!(as_f32(&outs["a"]), vec![5.0, 11.0, 19.0]);
    assert_eq!(outs["g"].shape(), &[2, 3]);
    assert_eq!(as_i64(&outs["g"]), vec![0, 1, 2, 10, 11, 12]);
    assert_eq!(as_i64(&outs["io"]), vec![0, 1, 2]);
    assert_eq!(outs["f"].shape(), &[3, 2]);
    assert_eq!(as_f64(&outs["f"]), vec![1.5; 6]);
    assert_eq!(outs["e"].shape(), &[0]);
    // Outputs come back in program order.
    assert_eq!(outs.keys().collect::<Vec<_>>(), vec!["a", "g", "io", "f", "e"]);
}

#[test]
fn map_of_rank_2_and_empty() {
    let src = "input m : i64[r, c]\noutput y = map (\\x -> x * 2) m";
    let y = out(src, vec![("m", i64m(2, 2, &[1, 2, 3, 4]))], "y");
    assert_eq!(y.shape(), &[2, 2]);
    assert_eq!(as_i64(&y), vec![2, 4, 6, 8]);
    let y = out(src, vec![("m", i64m(0, 3, &[]))], "y");
    assert_eq!(y.shape(), &[0, 3]);
}

#[test]
fn map_shape_mismatch() {
    let src = "input xs : f32[n]\ninput ys : f32[m]\noutput z = map (\\a b -> a + b) xs ys";
    let e = err(src, vec![("xs", f32s(&[1.0; 4])), ("ys", f32s(&[1.0; 7]))], Code::Shape);
    assert!(e.message.contains("[4]") && e.message.contains("[7]"), "{e}");
    assert!(e.message.contains("`xs`") && e.message.contains("`ys`"), "{e}");
}

#[test]
fn reduce_rank_1_2_and_empty() {
    let src = "input xs : i64[n]\ninput m : i64[r, c]\n\
               output s = reduce (+) 0 xs\noutput p = reduce (*) 1 xs\n\
               output rows = reduce (+) 0 m\noutput mx = reduce max (-100) m\n\
               output l = reduce (\\a b -> a * 10 + b) 0 xs";
    let outs = run(src, vec![("xs", i64s(&[1, 2, 3])), ("m", i64m(2, 3, &[1, 2, 3, 4, 5, -6]))]).unwrap();
    assert_eq!(outs["s"].shape(), &[] as &[usize]);
    assert_eq!(as_i64(&outs["s"]), vec![6]);
    assert_eq!(as_i64(&outs["p"]), vec![6]);
    assert_eq!(as_i64(&outs["rows"]), vec![6, 3]);
    assert_eq!(as_i64(&outs["mx"]), vec![3, 5]);
    assert_eq!(as_i64(&outs["l"]), vec![123], "a left fold in order");
    let outs = run(src, vec![("xs", i64s(&[])), ("m", i64m(2, 0, &[]))]).unwrap();
    assert_eq!(as_i64(&outs["s"]), vec![0]);
    assert_eq!(as_i64(&outs["p"]), vec![1]);
    assert_eq!(as_i64(&outs["rows"]), vec![0, 0]);
    assert_eq!(as_i64(&outs["mx"]), vec![-100, -100]);
    let outs = run(src, vec![("xs", i64s(&[])), ("m", i64m(0, 4, &[]))]).unwrap();
    assert_eq!(outs["rows"].shape(), &[0]);
}

#[test]
fn reduce_bool_sections() {
    let src = "input xs : i64[n]\noutput all = reduce (&&) true (map (\\x -> x > 0) xs)\n\
               output any = reduce (||) false (map (\\x -> x > 2) xs)";
    let outs = run(src, vec![("xs", i64s(&[1, 2, 3]))]).unwrap();
    assert_eq!(as_bool(&outs["all"]), vec![true]);
    assert_eq!(as_bool(&outs["any"]), vec![true]);
}

#[test]
fn scans_inclusive_exclusive() {
    let src = "input xs : i64[n]\ninput m : i64[r, c]\n\
               output inc = scan (+) 0 xs\noutput exc = scan_exclusive (+) 0 xs\n\
               output minc = scan (+) 0 m\noutput mexc = scan_exclusive (+) 100 m\n\
               output rmax = scan max (-1000) xs";
    let outs = run(src, vec![("xs", i64s(&[3, 1, 4, 1, 5])), ("m", i64m(2, 2, &[1, 2, 3, 4]))]).unwrap();
    assert_eq!(as_i64(&outs["inc"]), vec![3, 4, 8, 9, 14]);
    assert_eq!(as_i64(&outs["exc"]), vec![0, 3, 4, 8, 9]);
    assert_eq!(as_i64(&outs["minc"]), vec![1, 3, 3, 7]);
    assert_eq!(outs["mexc"].shape(), &[2, 2]);
    assert_eq!(as_i64(&outs["mexc"]), vec![100, 101, 100, 103]);
    assert_eq!(as_i64(&outs["rmax"]), vec![3, 3, 4, 4, 5]);
    let outs = run(src, vec![("xs", i64s(&[])), ("m", i64m(3, 0, &[]))]).unwrap();
    assert_eq!(outs["inc"].shape(), &[0]);
    assert_eq!(outs["exc"].shape(), &[0]);
    assert_eq!(outs["minc"].shape(), &[3, 0]);
}

#[test]
fn filter_keeps_in_order() {
    let src = "input xs : f32[n]\nlet pos = filter (\\x -> x > 0) xs\noutput kept = pos\n\
               output count = length pos";
    let outs = run(src, vec![("xs", f32s(&[1.0, -2.0, 3.0, 0.0, 5.0]))]).unwrap();
    assert_eq!(as_f32(&outs["kept"]), vec![1.0, 3.0, 5.0]);
    assert_eq!(as_i64(&outs["count"]), vec![3]);
    let outs = run(src, vec![("xs", f32s(&[-1.0, -2.0]))]).unwrap();
    assert_eq!(outs["kept"].shape(), &[0]);
    assert_eq!(as_i64(&outs["count"]), vec![0]);
}

#[test]
fn gather_and_its_error() {
    let src = "input xs : f32[n]\ninput idx : i64[k]\noutput g = gather xs idx";
    let g = out(src, vec![("xs", f32s(&[10.0, 20.0, 30.0])), ("idx", i64s(&[2, 0, 2]))], "g");
    assert_eq!(as_f32(&g), vec![30.0, 10.0, 30.0]);
    let g = out(src, vec![("xs", f32s(&[10.0])), ("idx", i64s(&[]))], "g");
    assert_eq!(g.shape(), &[0]);
    let e = err(src, vec![("xs", f32s(&[0.0; 1000])), ("idx", i64s(&[0, 5, 1000]))], Code::Index);
    assert_eq!(e.message, "gather: index 1000 out of bounds for `xs` of length 1000 (at idx[2])");
    let e = err(src, vec![("xs", f32s(&[0.0; 3])), ("idx", i64s(&[-1]))], Code::Index);
    assert!(e.message.contains("index -1"), "{e}");
    // A rank-2 index array gives a rank-2 result.
    let src = "input xs : i64[n]\ninput idx : i64[a, b]\noutput g = gather xs idx";
    let g = out(src, vec![("xs", i64s(&[5, 6, 7])), ("idx", i64m(2, 2, &[0, 1, 2, 0]))], "g");
    assert_eq!(g.shape(), &[2, 2]);
    assert_eq!(as_i64(&g), vec![5, 6, 7, 5]);
}

#[test]
fn backpermute_and_its_error() {
    let src = "input xs : i64[n]\noutput rev = backpermute [n] (\\i -> n - 1 - i) xs\n\
               output two = backpermute [2, n] (\\i j -> j) xs";
    let outs = run(src, vec![("xs", i64s(&[1, 2, 3]))]).unwrap();
    assert_eq!(as_i64(&outs["rev"]), vec![3, 2, 1]);
    assert_eq!(as_i64(&outs["two"]), vec![1, 2, 3, 1, 2, 3]);
    let src = "input m : i64[r, c]\noutput t = backpermute [c, r] (\\i j -> (j, i)) m";
    let t = out(src, vec![("m", i64m(2, 3, &[1, 2, 3, 4, 5, 6]))], "t");
    assert_eq!(as_i64(&t), vec![1, 4, 2, 5, 3, 6]);
    let src = "input xs : i64[n]\noutput bad = backpermute [n] (\\i -> i + 1) xs";
    let e = err(src, vec![("xs", i64s(&[1, 2, 3]))], Code::Index);
    assert!(e.message.contains("index 3") && e.message.contains("`xs`"), "{e}");
}

#[test]
fn permute_histogram_drop_and_error() {
    let src = "input bins : i64[k]\noutput h = permute (+) (fill [4] 0) (\\i -> bins[i]) (fill [k] 1)";
    let h = out(src, vec![("bins", i64s(&[0, 3, 3, -1, 1, 3]))], "h");
    assert_eq!(as_i64(&h), vec![1, 1, 0, 3], "-1 drops an element");
    let e = err(src, vec![("bins", i64s(&[0, 4]))], Code::Index);
    assert!(e.message.contains("target 4"), "{e}");
    let e = err(src, vec![("bins", i64s(&[-2]))], Code::Index);
    assert!(e.message.contains("target -2"), "{e}");
    // The combining op sees the old value first.
    let src = "input xs : i64[k]\noutput h = permute (\\a b -> a * 10 + b) (fill [1] 0) (\\i -> 0) xs";
    assert_eq!(as_i64(&out(src, vec![("xs", i64s(&[1, 2, 3]))], "h")), vec![123]);
    // Rank-2 destination.
    let src = "input xs : i64[k]\noutput h = permute (+) (fill [2, 2] 0) (\\i -> (i % 2, 1)) xs";
    assert_eq!(as_i64(&out(src, vec![("xs", i64s(&[1, 2, 3]))], "h")), vec![0, 4, 0, 2]);
}

#[test]
fn transpose_reverse_reshape() {
    let src = "input m : i64[r, c]\noutput t = transpose m\noutput rv = reverse m\n\
               output rs = reshape [c, r] m\noutput flat = reshape [r * c] m";
    let outs = run(src, vec![("m", i64m(2, 3, &[1, 2, 3, 4, 5, 6]))]).unwrap();
    assert_eq!(outs["t"].shape(), &[3, 2]);
    assert_eq!(as_i64(&outs["t"]), vec![1, 4, 2, 5, 3, 6]);
    assert_eq!(as_i64(&outs["rv"]), vec![3, 2, 1, 6, 5, 4]);
    assert_eq!(outs["rs"].shape(), &[3, 2]);
    assert_eq!(as_i64(&outs["rs"]), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(outs["flat"].shape(), &[6]);
    let outs = run(src, vec![("m", i64m(0, 3, &[]))]).unwrap();
    assert_eq!(outs["t"].shape(), &[3, 0]);
    let rv = out("input xs : f32[n]\noutput r = reverse xs", vec![("xs", f32s(&[1.0, 2.0, 3.0]))], "r");
    assert_eq!(as_f32(&rv), vec![3.0, 2.0, 1.0]);
    let e = err(
        "input xs : f32[n]\ninput k : i64\noutput r = reshape [k, 2] xs",
        vec![("xs", f32s(&[1.0; 5])), ("k", s(Scalar::I64(2)))],
        Code::Shape,
    );
    assert!(e.message.contains("[2, 2]") && e.message.contains("[5]"), "{e}");
    let e = err(
        "input xs : f32[n]\ninput k : i64\noutput r = reshape [k] xs",
        vec![("xs", f32s(&[])), ("k", s(Scalar::I64(-1)))],
        Code::Shape,
    );
    assert!(e.message.contains("negative"), "{e}");
}

#[test]
fn slice_concat_and_errors() {
    let src = "input xs : i64[n]\ninput a : i64\ninput l : i64\noutput s = slice xs a l\n\
               output c = concat (slice xs 0 2) (reverse xs)";
    let outs =
        run(src, vec![("xs", i64s(&[1, 2, 3, 4])), ("a", s(Scalar::I64(1))), ("l", s(Scalar::I64(2)))])
            .unwrap();
    assert_eq!(as_i64(&outs["s"]), vec![2, 3]);
    assert_eq!(as_i64(&outs["c"]), vec![1, 2, 4, 3, 2, 1]);
    let outs =
        run(src, vec![("xs", i64s(&[1, 2, 3, 4])), ("a", s(Scalar::I64(4))), ("l", s(Scalar::I64(0)))])
            .unwrap();
    assert_eq!(outs["s"].shape(), &[0]);
    for (a, l) in [(3, 2), (-1, 1), (0, -1), (i64::MAX, 2)] {
        let e = err(
            src,
            vec![("xs", i64s(&[1, 2, 3, 4])), ("a", s(Scalar::I64(a))), ("l", s(Scalar::I64(l)))],
            Code::Index,
        );
        assert!(
            e.message.contains(&format!("start {a} and length {l}")) && e.message.contains("length 4"),
            "{e}"
        );
    }
}

#[test]
fn indexing_length_size_and_errors() {
    let src = "input m : f32[r, c]\ninput i : i64\ninput j : i64\noutput x = m[i, j]\n\
               output l = length m\noutput c2 = size m 1";
    let m = f32m(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let outs = run(src, vec![("m", m.clone()), ("i", s(Scalar::I64(1))), ("j", s(Scalar::I64(2)))]).unwrap();
    assert_eq!(as_f32(&outs["x"]), vec![6.0]);
    assert_eq!(as_i64(&outs["l"]), vec![2]);
    assert_eq!(as_i64(&outs["c2"]), vec![3]);
    let e = err(src, vec![("m", m.clone()), ("i", s(Scalar::I64(1))), ("j", s(Scalar::I64(3)))], Code::Index);
    assert_eq!(e.message, "index [1, 3] out of bounds for `m` of shape [2, 3]");
    let e =
        err(src, vec![("m", m.clone()), ("i", s(Scalar::I64(-1))), ("j", s(Scalar::I64(0)))], Code::Index);
    assert!(e.message.contains("[-1, 0]"), "{e}");
    let e = err(
        "input xs : f32[n]\noutput y = map (\\x -> xs[5]) xs",
        vec![("xs", f32s(&[1.0; 3]))],
        Code::Index,
    );
    assert!(e.message.contains("index 5 out of bounds for `xs` of length 3"), "{e}");
    assert!(e.message.contains("`map` at element [0]"), "{e}");
    let e = err(
        "input m : f32[r, c]\ninput k : i64\noutput s = size m k",
        vec![("m", m), ("k", s(Scalar::I64(2)))],
        Code::Index,
    );
    assert!(e.message.contains("dimension 2"), "{e}");
}

#[test]
fn generate_reads_arrays_and_scalars_in_scope() {
    let src = "input m : f32[r, c]\ninput v : f32[c]\nlet k = 2\n\
               output y = reduce (+) 0 (generate [r, c] (\\i j -> m[i, j] * v[j] * f32 k))";
    let y = out(src, vec![("m", f32m(2, 2, &[1.0, 2.0, 3.0, 4.0])), ("v", f32s(&[1.0, 10.0]))], "y");
    assert_eq!(as_f32(&y), vec![42.0, 86.0]);
}

#[test]
fn negative_sizes_are_shape_errors() {
    for src in [
        "input k : i64\noutput y = fill [k] 0",
        "input k : i64\noutput y = iota k",
        "input k : i64\noutput y = generate [2, k] (\\i j -> i + j)",
    ] {
        let e = err(src, vec![("k", s(Scalar::I64(-3)))], Code::Shape);
        assert!(e.message.contains("-3"), "{e}");
    }
}

#[test]
fn memory_limit_is_checked_before_allocating() {
    let e = err("output y = fill [1000000000000, 1000000000000] 0", vec![], Code::Limit);
    assert!(e.message.contains("overflows i64"), "{e}");
    let e = err("input k : i64\noutput y = iota k", vec![("k", s(Scalar::I64(1 << 60)))], Code::Limit);
    assert!(e.message.contains("`iota`"), "{e}");
    let limits = Limits { max_array_bytes: 1000, ..Limits::default() };
    let e = run_with("input k : i64\noutput y = fill [k, k] 1.0", vec![("k", s(Scalar::I64(12)))], &limits)
        .unwrap_err();
    assert_eq!(e.code, Code::Limit);
    assert!(e.message.contains("`fill`") && e.message.contains("1152 bytes"), "{e}");
    let ok = run_with("input k : i64\noutput y = fill [k, k] 1.0", vec![("k", s(Scalar::I64(11)))], &limits)
        .unwrap();
    assert_eq!(ok["y"].len(), 121);
    let e = run_with("input xs : f64[n]\noutput y = concat xs xs", vec![("xs", f64s(&[0.0; 100]))], &limits)
        .unwrap_err();
    assert_eq!(e.code, Code::Limit);
}

#[test]
fn lets_outputs_and_scalars() {
    let src = "input xs : f64[n]\nlet len = f64 (length xs)\nlet mean = reduce (+) 0 xs / len\n\
               output m = mean\noutput var = reduce (+) 0 (map (\\x -> (x - mean) * (x - mean)) xs) / len\n\
               output again = m";
    let outs = run(src, vec![("xs", f64s(&[1.0, 2.0, 3.0, 6.0]))]).unwrap();
    assert_eq!(outs["m"], Value::scalar(Scalar::F64(3.0)));
    assert_eq!(as_f64(&outs["var"]), vec![3.5]);
    assert_eq!(as_f64(&outs["again"]), vec![3.0]);
}
