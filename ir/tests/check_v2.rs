//! The checker on language version 2: element types and literals, bitwise operators, builtins
//! as functions and shadowed builtins, tuples and groups, loops, the new array builtins, size
//! arithmetic in input types, and the conformance-v2 programs.
#![allow(clippy::unwrap_used)]

use eqfuse_ir::check::{check, check_source, Checked};
use eqfuse_ir::parse::parse;
use eqfuse_ir::{Code, Error};
use std::path::Path;

fn checked(src: &str) -> Checked {
    let p = parse(src).unwrap_or_else(|e| panic!("parse failed: {e}\n{src}"));
    check(&p).unwrap_or_else(|e| panic!("check failed: {e}\n{src}"))
}

/// The type of output `name`, printed.
fn out(src: &str, name: &str) -> String {
    checked(src).outputs.get(name).unwrap_or_else(|| panic!("no output {name}\n{src}")).to_string()
}

/// Fails with `code` and a message containing every one of `parts`.
fn fails(src: &str, code: Code, parts: &[&str]) -> Error {
    let p = parse(src).unwrap_or_else(|e| panic!("parse failed: {e}\n{src}"));
    let e = match check(&p) {
        Ok(c) => panic!("expected {code}, but it checked: {:?}\n{src}", c.outputs),
        Err(e) => e,
    };
    assert_eq!(e.code, code, "wrong code: {e}\n{src}");
    for part in parts {
        assert!(e.message.contains(part), "message {:?} lacks {part:?}\n{src}", e.message);
    }
    e
}

fn type_error(src: &str, parts: &[&str]) -> Error {
    fails(src, Code::Type, parts)
}

#[test]
fn integer_types_and_literals() {
    assert_eq!(out("input a : u8\noutput y = a + 200", "y"), "u8");
    assert_eq!(out("input a : i16\noutput y = a * 2 - 1", "y"), "i16");
    assert_eq!(out("input a : u64\noutput y = a ^ 0xff51afd7ed558ccd", "y"), "u64");
    assert_eq!(out("output y = 0xff", "y"), "i64");
    assert_eq!(out("input a : f32\noutput y = a * 2", "y"), "f32");
    type_error("input a : u8\noutput y = a + 300", &["300", "does not fit", "u8"]);
    type_error("input a : i8\noutput y = a - 129", &["does not fit", "i8"]);
    type_error("output y = 0xff51afd7ed558ccd", &["does not fit", "i64"]);
    type_error("output y = 9223372036854775808", &["does not fit", "i64"]);
    assert_eq!(out("input a : u64\noutput y = a - 18446744073709551615", "y"), "u64");
    type_error("input a : f32\noutput y = a + 0xff", &["f32"]);
    type_error("input a : u32\noutput y = a + 1.5", &["float literal"]);
    type_error("input a : u32\ninput b : i32\noutput y = a + b", &["one type", "u32", "i32"]);
}

#[test]
fn bitwise_operators() {
    assert_eq!(out("input a : u32\noutput y = (a << 3) | (a >> 29) & 255", "y"), "u32");
    assert_eq!(out("input a : i64\noutput y = a & 1 == 0", "y"), "bool");
    assert_eq!(out("input a : u16\noutput y = !a", "y"), "u16");
    assert_eq!(out("input a : bool\noutput y = !a", "y"), "bool");
    type_error("input a : f32\noutput y = a & 1", &["`&` needs integer operands", "f32"]);
    type_error("input a : bool\ninput b : bool\noutput y = a | b", &["`|` needs integer operands", "bool"]);
    type_error(
        "input a : u32\ninput s : i32\noutput y = a << s",
        &["`<<` needs operands of one type", "u32", "i32"],
    );
    type_error("input a : f64\noutput y = !a", &["`!` needs a bool or integer operand", "f64"]);
    type_error("output y = 1.5 ^ 2", &["integer"]);
}

#[test]
fn scalar_functions_of_version_2() {
    assert_eq!(out("input a : u64\noutput y = popcount a", "y"), "i32");
    assert_eq!(out("input a : i8\noutput y = clz a", "y"), "i32");
    assert_eq!(out("input a : f32\noutput y = isnan a", "y"), "bool");
    assert_eq!(out("input a : f32\noutput y = lgamma (erf a) + log1p a", "y"), "f32");
    assert_eq!(out("input a : i16\noutput y = abs a", "y"), "i16");
    assert_eq!(out("input a : bool\noutput y = u8 a", "y"), "u8");
    assert_eq!(out("input a : f64\noutput y = u16 a", "y"), "u16");
    assert_eq!(out("output y = pi", "y"), "f64");
    assert_eq!(out("input a : f32\noutput y = a * pi", "y"), "f32");
    type_error("input a : f32\noutput y = popcount a", &["`popcount` needs integer arguments", "f32"]);
    type_error("input a : i32\noutput y = isinf a", &["`isinf` needs float arguments", "i32"]);
    type_error("input a : i32\noutput y = log2 a", &["`log2` needs float arguments"]);
    type_error("input a : i32\noutput y = a + pi", &["i32"]);
}

#[test]
fn builtins_passed_as_functions() {
    assert_eq!(out("input xs : f32[n]\noutput y = map sqrt xs", "y"), "f32[n]");
    assert_eq!(out("input xs : i64[n]\noutput y = map f32 xs", "y"), "f32[n]");
    assert_eq!(out("input xs : f32[n]\ninput ys : f32[n]\noutput y = map max xs ys", "y"), "f32[n]");
    assert_eq!(out("input xs : f64[n]\noutput y = reduce max (-inf) xs", "y"), "f64");
    assert_eq!(out("input xs : u32[n]\noutput y = map popcount xs", "y"), "i32[n]");
    assert_eq!(out("input xs : f32[n]\noutput y = map isnan xs", "y"), "bool[n]");
    assert_eq!(out("input xs : f32[n]\noutput y = iterate 3 sqrt 2.0", "y"), "f64");
    type_error("input xs : i64[n]\noutput y = map sqrt xs", &["`sqrt` needs float arguments", "i64"]);
    type_error("input xs : f32[n]\noutput y = map length xs", &["`length` cannot be passed as a function"]);
    type_error(
        "input xs : f32[n]\noutput y = map clamp xs xs",
        &["passes 2 arguments to `clamp`, which takes 3"],
    );
}

#[test]
fn builtin_names_may_be_shadowed() {
    assert_eq!(out("input xs : f32[n]\noutput dot = reduce (+) 0 xs", "dot"), "f32");
    assert_eq!(out("output cos = 1.5", "cos"), "f64");
    assert_eq!(out("input sum : f32[n]\nlet mean = reduce (+) 0 sum\noutput m = mean", "m"), "f32");
    assert_eq!(out("input xs : f32[n]\noutput y = map (\\max -> max + 1) xs", "y"), "f32[n]");
    assert_eq!(
        out("input xs : f32[n]\noutput y = let sqrt = 2.0 in map (\\x -> x * sqrt) xs", "y"),
        "f32[n]"
    );
    assert_eq!(out("input pi : i32\noutput y = pi + 1", "y"), "i32");
    type_error("input exp : f32\noutput y = exp exp", &["`exp` is shadowed"]);
    type_error("input xs : f32[n]\noutput y = map (\\abs -> abs abs) xs", &["`abs` is shadowed"]);
    type_error("input xs : f32[n]\nlet sqrt = 2.0\noutput y = map sqrt xs", &["`sqrt` is shadowed"]);
    // names stay unique among top-level items
    type_error("input cos : f32\noutput cos = 1", &["already defined"]);
}

#[test]
fn tuples_and_groups() {
    let src =
        "input xs : f32[n]\nlet (lo, hi) = map (\\x -> (min x 0.0, max x 0.0)) xs\noutput lo\noutput hi";
    let c = checked(src);
    assert_eq!(c.lets.get("lo").unwrap().to_string(), "f32[n]");
    assert_eq!(c.outputs.get("hi").unwrap().to_string(), "f32[n]");
    let src = "input d : f32[n]\nlet (m, i) = reduce (\\(a, i) (b, j) -> if b < a || (b == a && j < i) then (b, j) else (a, i)) (inf, n) (d, iota n)\noutput m\noutput i";
    let c = checked(src);
    assert_eq!(c.outputs.get("m").unwrap().to_string(), "f32");
    assert_eq!(c.outputs.get("i").unwrap().to_string(), "i64");
    // a named operator on tuples, over the rows of a matrix
    let src = "input dm : f32[r, c]\nlet op = \\(a, i) (b, j) -> if b < a then (b, j) else (a, i)\nlet (v, k) = reduce op (inf, c) (dm, generate [r, c] (\\p q -> q))\noutput v\noutput k";
    assert_eq!(checked(src).outputs.get("k").unwrap().to_string(), "i64[r]");
    // scans and if over tuples and groups, iterate carrying a tuple
    let src = "input xs : f32[n]\nlet (s, t) = scan (\\(a, b) (c, d) -> (a + c, max b d)) (0, -inf) (xs, xs)\noutput s";
    assert_eq!(out(src, "s"), "f32[n]");
    let src = "input xs : f32[n]\ninput b : bool\nlet (p, q) = if b then (xs, xs) else (xs, map (\\x -> -x) xs)\noutput p";
    assert_eq!(out(src, "p"), "f32[n]");
    let src = "input xs : f32[n]\noutput y = map (\\x -> let (a, b) = iterate 3 (\\(u, v) -> (v, u + v)) (x, 1.0) in a + b) xs";
    assert_eq!(out(src, "y"), "f32[n]");
    let src = "input a : i64\nlet (x, y) = (a, 2.5)\noutput x\noutput y";
    assert_eq!(out(src, "y"), "f64");
}

#[test]
fn tuple_errors() {
    type_error(
        "input xs : f32[n]\nlet (a, b) = map (\\x -> (x, x * 2.0, x * 3.0)) xs\noutput a",
        &["pattern (a, b) has 2 names", "3 parts"],
    );
    type_error("input xs : f32[n]\noutput y = map (\\x -> (x, x)) xs", &["never an output"]);
    type_error("input xs : f32[n]\noutput y = (xs, xs)", &["never an output"]);
    type_error("input a : f32\nlet p = (a, a)\noutput p", &["never an output"]);
    type_error(
        "input xs : f32[n]\nlet (a, b) = xs\noutput a",
        &["destructures a tuple or a group", "f32[n]"],
    );
    type_error("input xs : f32[n]\noutput y = map (\\x -> ((x, x), x)) xs", &["tuples do not nest"]);
    type_error(
        "input xs : f32[n]\noutput y = reduce (\\(a, i) (b, j) -> (a, i)) 0 (xs, iota n)",
        &["neutral element"],
    );
    type_error(
        "input xs : f32[n]\noutput y = let (s, t) = reduce (\\a b -> a + b) (0, 0) (xs, iota n) in s",
        &["must be a scalar", "tuple"],
    );
    type_error(
        "input xs : f32[n]\ninput b : bool\noutput y = if b then (xs, xs) else xs",
        &["branches of `if`"],
    );
    type_error("input a : f32\noutput y = (a, a) + 1", &["must be a scalar"]);
    type_error(
        "input xs : f32[n]\nlet (a, xs) = (xs, xs)\noutput a",
        &["`xs` is already defined", "input on line 1"],
    );
    // arrays of a group share a shape
    fails(
        "input xs : f32[3]\ninput ys : f32[4]\nlet (a, b) = reduce (\\(p, q) (r, s) -> (p + r, q + s)) (0, 0) (xs, ys)\noutput a",
        Code::Shape,
        &["one shape", "[3]", "[4]"],
    );
}

#[test]
fn loops() {
    let src = "input t0 : f32[r, c]\ninput steps : i64\nlet (t, k) = loop (t, k) = (t0, 0) for step < steps do\n  let t2 = generate [r, c] (\\i j -> 0.25 * t[i, j] + f32 step) in\n  (t2, k + 1)\noutput t\noutput k";
    let c = checked(src);
    assert_eq!(c.outputs.get("t").unwrap().to_string(), "f32[r, c]");
    assert_eq!(c.outputs.get("k").unwrap().to_string(), "i64");
    let src =
        "input x0 : f32[n]\noutput x = loop x = x0 while reduce (+) 0 x > 1.0 do map (\\a -> a * 0.5) x";
    assert_eq!(out(src, "x"), "f32[n]");
    let src = "input x0 : f32[n]\nlet (x, changed) = loop (x, changed) = (x0, true) while changed do\n  let y = map (\\a -> a * 0.5) x in\n  (y, reduce (||) false (map (\\a b -> a != b) x y))\noutput x";
    assert_eq!(out(src, "x"), "f32[n]");
    // nested loops, and a scalar state
    let src = "input x0 : f64[n]\noutput x = loop x = x0 for i < 3 do loop y = x for j < i do map (\\a -> a + 1.0) y";
    assert_eq!(out(src, "x"), "f64[n]");
    assert_eq!(out("output s = loop s = 1 for i < 10 do s * 2 + i", "s"), "i64");
    // the literal state takes its type from the body
    assert_eq!(out("input a : u8\noutput s = loop s = 0 for i < 3 do s + a", "s"), "u8");
}

#[test]
fn loop_errors() {
    type_error(
        "input xs : f32[n]\noutput y = map (\\x -> loop z = x for i < 3 do z * 2.0) xs",
        &["inside a lambda", "iterate"],
    );
    fails(
        "input xs : f32[n]\noutput y = loop x = xs for i < 3 do concat x (slice x 0 1)",
        Code::Shape,
        &["loop state `x`", "[n]", "[(n + 1)]"],
    );
    fails(
        "input xs : f32[n]\noutput y = loop x = xs for i < 3 do generate [n - 1] (\\i -> x[i])",
        Code::Shape,
        &["loop state `x`", "[n]"],
    );
    type_error(
        "input xs : f32[n]\noutput y = loop x = xs for i < 3 do map (\\a -> a > 0.0) x",
        &["loop state `x`"],
    );
    type_error("input xs : f32[n]\noutput y = loop x = xs for i < 2.5 do x", &["count of a `for` loop"]);
    type_error(
        "input xs : f32[n]\noutput y = loop x = xs while 1 do x",
        &["condition of a `while` loop must be bool"],
    );
    type_error(
        "input xs : f32[n]\nlet (a, b) = loop (a, b) = (xs, 0) for i < 3 do (a, b, 1)\noutput a",
        &["next state (a, b)"],
    );
    type_error("input xs : f32[n]\noutput y = loop x = xs for x < 3 do x", &["`x`"]);
    type_error(
        "input xs : f32[n]\noutput y = loop (a, b) = xs for i < 3 do (a, b)",
        &["destructures a tuple or a group"],
    );
    // the `for` variable is not in scope of the count, nor after the loop
    type_error("input xs : f32[n]\noutput y = loop x = xs for i < i do x", &["unbound name `i`"]);
}

#[test]
fn array_builtins_of_version_2() {
    let src = "input a : f32[r, c]\ninput v : f32[n]\ninput w : f32[n]\ninput bs : bool[r, c]\ninput us : u8[n]\n\
               output s = sum a\noutput p = prod v\noutput m = mean a\noutput al = all bs\noutput an = any bs\n\
               output d = dot v w\noutput i = argmin a\noutput j = argmax v\noutput su = sum us";
    let c = checked(src);
    let ty = |n: &str| c.outputs.get(n).unwrap().to_string();
    assert_eq!(ty("s"), "f32[r]");
    assert_eq!(ty("p"), "f32");
    assert_eq!(ty("m"), "f32[r]");
    assert_eq!(ty("al"), "bool[r]");
    assert_eq!(ty("an"), "bool[r]");
    assert_eq!(ty("d"), "f32");
    assert_eq!(ty("i"), "i64[r]");
    assert_eq!(ty("j"), "i64");
    assert_eq!(ty("su"), "u8");
    type_error("input v : i32[n]\noutput m = mean v", &["`mean` needs a float array", "i32"]);
    type_error("input v : f32[n]\noutput m = all v", &["`all` needs a bool array"]);
    type_error("input v : bool[n]\noutput m = sum v", &["`sum` needs a numeric array"]);
    type_error(
        "input v : f32[n]\ninput w : f64[n]\noutput d = dot v w",
        &["`dot` needs arrays of one element type"],
    );
    type_error(
        "input a : f32[r, c]\ninput w : f32[c]\noutput d = dot a w",
        &["`dot` needs arrays of rank 1"],
    );
    fails(
        "input v : f32[3]\ninput w : f32[4]\noutput d = dot v w",
        Code::Shape,
        &["one length", "[3]", "[4]"],
    );
    type_error("input xs : f32[n]\noutput y = map (\\x -> sum xs) xs", &["not allowed inside a lambda"]);
}

#[test]
fn slices_of_any_rank() {
    assert_eq!(out("input m : f32[r, c]\noutput s = slice m [1, 2] [3, 4]", "s"), "f32[3, 4]");
    assert_eq!(out("input m : f32[r, c, d]\noutput s = slice m [0, 0, 1] [r, c, 2]", "s"), "f32[r, c, 2]");
    assert_eq!(out("input v : f32[n]\noutput s = slice v [1] [2]", "s"), "f32[2]");
    assert_eq!(out("input v : f32[n]\noutput s = slice v 1 2", "s"), "f32[2]");
    type_error(
        "input m : f32[r, c]\noutput s = slice m [1] [3, 4]",
        &["rank 2 needs 2 starts and 2 lengths", "1 and 2"],
    );
    type_error("input m : f32[r, c]\noutput s = slice m [1, 2.0] [3, 4]", &["i64"]);
    type_error("input m : f32[r, c]\noutput s = slice m 1 3", &["rank 1"]);
}

#[test]
fn segmented_reductions_and_scans() {
    let src = "input offsets : i64[m + 1]\ninput vals : f32[nnz]\ninput x : f32[k]\ninput cols : i64[nnz]\n\
               output y = reduce_segments (+) 0 offsets (map (\\v j -> v * x[j]) vals cols)\n\
               output mx = reduce_segments max (-inf) offsets vals\n\
               output sc = scan_segments (+) 0 offsets vals\noutput rows = m";
    let c = checked(src);
    let ty = |n: &str| c.outputs.get(n).unwrap().to_string();
    assert_eq!(ty("y"), "f32[m]");
    assert_eq!(ty("mx"), "f32[m]");
    assert_eq!(ty("sc"), "f32[nnz]");
    assert_eq!(ty("rows"), "i64");
    assert_eq!(c.sizes, vec!["m", "nnz", "k"]);
    // the count of segments of a plain size, and of a group
    assert_eq!(
        out("input o : i64[s]\ninput v : f32[n]\noutput y = reduce_segments (+) 0 o v", "y"),
        "f32[(s - 1)]"
    );
    let src = "input o : i64[m + 1]\ninput v : f32[n]\nlet (a, b) = reduce_segments (\\(p, i) (q, j) -> if q < p then (q, j) else (p, i)) (inf, n) o (v, iota n)\noutput b";
    assert_eq!(out(src, "b"), "i64[m]");
    type_error(
        "input o : i32[s]\ninput v : f32[n]\noutput y = reduce_segments (+) 0 o v",
        &["offsets", "i64", "i32"],
    );
    type_error("input o : i64[s]\ninput v : f32[n, k]\noutput y = scan_segments (+) 0 o v", &["rank 1"]);
    type_error(
        "input o : i64[s]\ninput v : f32[n]\noutput y = reduce_segments (+) true o v",
        &["neutral element"],
    );
}

fn f32s(n: usize) -> eqfuse_ir::Value {
    let data = vec![eqfuse_ir::Scalar::F32(0.0); n];
    eqfuse_ir::Value::from_scalars(eqfuse_ir::ElemType::F32, &[n], &data).unwrap()
}

fn bind(src: &str, inputs: Vec<(&str, usize)>) -> Result<Vec<(String, i64)>, Error> {
    let c = checked(src);
    let inputs: indexmap::IndexMap<String, eqfuse_ir::Value> =
        inputs.into_iter().map(|(k, n)| (k.to_string(), f32s(n))).collect();
    eqfuse_ir::bind::bind_inputs(&c, &inputs, &eqfuse_ir::Limits::default())
        .map(|b| b.sizes.into_iter().collect())
}

#[test]
fn size_arithmetic_in_input_types() {
    let src = "input pairs : f32[2 * n]\noutput re = generate [n] (\\i -> pairs[2 * i])";
    assert_eq!(out(src, "re"), "f32[n]");
    // `n`, and the plain size that names the dimension `2 * n` for the optimiser's program
    // (`Dim::affine_stand_in`), bound to its extent
    assert_eq!(
        bind(src, vec![("pairs", 8)]).unwrap(),
        vec![("n".to_string(), 4), (eqfuse_ir::Dim::affine_stand_in("n", 2, 0), 8)]
    );
    let e = bind(src, vec![("pairs", 7)]).unwrap_err();
    assert_eq!(e.code, Code::Shape, "{e}");
    assert!(e.message.contains("2 * n") && e.message.contains('7'), "{e}");
    let src = "input a : f32[m + 1]\ninput b : f32[m]\ninput c : f32[k - 2]\noutput s = m + k";
    assert_eq!(out(src, "s"), "i64");
    assert_eq!(
        bind(src, vec![("a", 4), ("b", 3), ("c", 0)]).unwrap(),
        vec![
            ("m".to_string(), 3),
            ("k".to_string(), 2),
            (eqfuse_ir::Dim::affine_stand_in("m", 1, 1), 4),
            (eqfuse_ir::Dim::affine_stand_in("k", 1, -2), 0)
        ]
    );
    let e = bind(src, vec![("a", 4), ("b", 5), ("c", 0)]).unwrap_err();
    assert_eq!(e.code, Code::Shape, "{e}");
    assert!(e.message.contains("size `m` is 3 from `a` but 5 from `b`"), "{e}");
    // `m + 1` given no element: no non-negative m
    assert_eq!(bind(src, vec![("a", 0), ("b", 0), ("c", 0)]).unwrap_err().code, Code::Shape);
    // the shapes of inputs over one size name are comparable
    fails(
        "input a : f32[n + 1]\ninput b : f32[n]\noutput y = map (\\x y -> x + y) a b",
        Code::Shape,
        &["same shape"],
    );
    type_error("input a : f32[map + 1]\noutput y = a", &["builtin or keyword"]);
}

/// Every conformance-v2 program checks (with the checks of a program a person wrote), except the error cases whose code the contract gives
/// at check time; the run-time error cases check.
#[test]
fn conformance_v2_programs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance-v2");
    let cases = eqfuse_ir::conformance::cases(&root).unwrap();
    assert!(cases.len() >= 30, "too few cases under {}", root.display());
    let at_check_time =
        ["v2_err_loop_in_lambda", "v2_err_loop_shape", "v2_err_shift_types", "v2_err_tuple_arity"];
    let mut failures = Vec::new();
    for case in &cases {
        let src = case.source().unwrap();
        let result = parse(&src).and_then(|p| check_source(&p, &eqfuse_ir::Limits::default()));
        let name = case.name.as_str();
        match (at_check_time.contains(&name), &case.spec.error, result) {
            (true, Some(code), Err(e)) if e.code.as_str() == code => {}
            (true, code, r) => {
                failures.push(format!("{name}: expected {code:?} at check time, got {:?}", r.err()))
            }
            (false, _, Err(e)) => failures.push(format!("{name}: {e}")),
            (false, _, Ok(_)) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn programs_own_functions_named_as_builtins() {
    // `max` here is the program's function: no neutral-element rule of the builtin applies
    let src = "input xs : f32[n]\nlet max = \\a b -> a + b\noutput y = reduce max inf xs";
    let c = check_source(&parse(src).unwrap(), &eqfuse_ir::Limits::default()).unwrap();
    assert_eq!(c.outputs.get("y").unwrap().to_string(), "f32");
    // the builtin `max` with a constant that absorbs every value is refused
    let src = "input xs : f32[n]\noutput y = reduce max inf xs";
    assert_eq!(
        check_source(&parse(src).unwrap(), &eqfuse_ir::Limits::default()).unwrap_err().code,
        Code::Type
    );
}
