//! The checker's errors: one test per kind, each with its code, its position and a message
//! that names what is wrong.
#![allow(clippy::unwrap_used)]

use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::{Code, Error};

fn fails(src: &str, code: Code) -> Error {
    let p = parse(src).unwrap_or_else(|e| panic!("parse failed: {e}\n{src}"));
    match check(&p) {
        Ok(c) => panic!("expected {code}, but it checked: {:?}\n{src}", c.outputs),
        Err(e) => {
            assert_eq!(e.code, code, "wrong code: {e}\n{src}");
            e
        }
    }
}

/// Fails with E-TYPE and a message containing every one of `parts`.
fn type_error(src: &str, parts: &[&str]) -> Error {
    let e = fails(src, Code::Type);
    for p in parts {
        assert!(e.message.contains(p), "message {:?} lacks {p:?}\n{src}", e.message);
    }
    e
}

#[test]
fn err_type_conformance_message() {
    let e = type_error(
        "input xs : f32[n]\noutput y = map (\\x -> x && true) xs",
        &["`&&` needs bool operands", "f32"],
    );
    assert!(e.message.contains("x && true"), "{}", e.message);
    let span = e.span.unwrap();
    assert_eq!((span.line, span.col), (2, 23));
}

#[test]
fn unbound_names() {
    type_error("output y = z + 1", &["unbound name `z`"]);
    type_error("input xs : f32[n]\noutput y = map (\\x -> x + q) xs", &["unbound name `q`"]);
    type_error("let a = b\nlet b = 1\noutput o = a", &["`b` is used before its definition on line 2"]);
    // a lambda parameter is not in scope outside it
    type_error("input xs : f32[n]\nlet f = \\x -> x\noutput y = x", &["`x`"]);
    // output naming something undefined
    type_error("output nothing", &["not defined"]);
}

#[test]
fn duplicate_names() {
    type_error("input a : f32\ninput a : f64\noutput o = a", &["`a` is already defined", "line 1"]);
    type_error("input a : f32\nlet a = 1\noutput o = a", &["already defined", "input on line 1"]);
    type_error("let a = 1\noutput a = 2", &["already defined", "let on line 1"]);
    type_error("input xs : f32[n]\nlet n = 3\noutput o = n", &["size name", "line 1"]);
    type_error("input xs : f32[n]\noutput n = 3", &["size name"]);
    type_error("input n : i64\ninput xs : f32[n]\noutput o = xs", &["size name"]);
    // the same name output twice
    type_error("input xs : f32[n]\noutput xs\noutput xs", &["output twice", "line 2"]);
    type_error("output y = 1\noutput y", &["output twice"]);
    // output of a size name
    type_error("input xs : f32[n]\noutput n", &["size name"]);
}

#[test]
fn builtin_redefinition() {
    // version 2: builtin names are not reserved, but a shadowed builtin cannot be applied
    type_error("let map = 1\noutput o = map (\\x -> x) map", &["`map` is shadowed"]);
    type_error("input exp : f32\noutput o = exp exp", &["`exp` is shadowed"]);
}

#[test]
fn arity() {
    type_error("input x : f32\noutput y = exp x x", &["`exp` takes 1 argument, given 2"]);
    type_error("input x : f32\noutput y = clamp x 0", &["`clamp` takes 3 arguments, given 2"]);
    type_error("input xs : f32[n]\noutput y = reduce (+) xs", &["`reduce` takes 3 arguments, given 2"]);
    type_error("input xs : f32[n]\noutput y = map xs", &["`map` takes at least 2"]);
    type_error("input xs : f32[n]\noutput y = map (\\x y -> x + y) xs", &["passes 1 argument", "takes 2"]);
    type_error(
        "input xs : f32[n]\nlet f = \\a b -> a + b\noutput y = map f xs",
        &["passes 1 argument to `f`", "takes 2"],
    );
    type_error("input x : f32\nlet f = \\a b -> a + b\noutput y = f x", &["`f`", "takes 2"]);
    type_error("input x : f32\noutput y = (\\a -> a) x x", &["passes 2 arguments", "takes 1"]);
    // a builtin used unapplied
    type_error("input x : f32\noutput y = exp", &["`exp` must be applied to 1 argument"]);
}

#[test]
fn scalar_operator_types() {
    type_error(
        "input a : f32\ninput b : f64\noutput y = a + b",
        &["`+` needs operands of one type", "f32", "f64"],
    );
    type_error("input a : bool\noutput y = a * 2", &["`*` needs numeric operands", "bool"]);
    type_error("input a : i64\noutput y = a || true", &["`||` needs bool operands", "i64"]);
    // version 2: `!` on an integer is its complement; on a float it is refused
    type_error("input a : f32\noutput y = !a", &["`!` needs a bool or integer operand", "f32"]);
    type_error("input a : bool\noutput y = -a", &["unary `-` needs a numeric operand", "bool"]);
    type_error("input a : f32\ninput b : i32\noutput y = a < b", &["`<` needs operands of one type"]);
    type_error("input xs : f32[n]\noutput y = xs + 1", &["the operands of `+` must be a scalar", "f32[n]"]);
}

#[test]
fn scalar_builtin_types() {
    type_error("input a : i64\noutput y = sqrt a", &["`sqrt` needs float arguments", "i64"]);
    type_error("input a : i32\noutput y = exp a", &["`exp` needs float arguments"]);
    type_error("input a : bool\noutput y = abs a", &["`abs` needs numeric arguments", "bool"]);
    type_error(
        "input a : f32\ninput b : f64\noutput y = max a b",
        &["`max` needs arguments of one type", "f32", "f64"],
    );
    type_error("input a : i64\noutput y = pow a a", &["`pow` needs float arguments"]);
    type_error("input a : f32\noutput y = clamp a 0 true", &["`clamp` needs numeric arguments", "bool"]);
    type_error("input xs : f32[n]\noutput y = exp xs", &["must be a scalar", "f32[n]"]);
    type_error("input x : f32\noutput y = length x", &["must be an array", "f32"]);
    type_error("input xs : f32[n]\noutput y = size xs 1.5", &["float literal where an integer is expected"]);
    type_error("input x : f64\noutput y = iterate 3 (\\z -> z > 0) x", &["`iterate`", "f64", "bool"]);
    type_error(
        "input x : f64\noutput y = iterate 2.5 (\\z -> z) x",
        &["float literal where an integer is expected"],
    );
    type_error("input x : f32\noutput y = i64 (if x > 0 then 1 else 2.5) + x", &["`+`"]);
    // an int literal argument of a float function is fine
    check(&parse("output y = sqrt 2 + exp 1").unwrap()).unwrap();
}

#[test]
fn if_and_index_types() {
    type_error("input a : f32\noutput y = if a then 1 else 2", &["condition of `if` must be bool", "f32"]);
    type_error(
        "input a : bool\noutput y = if a then 1 else true",
        &["branches of `if` have different types"],
    );
    type_error(
        "input a : bool\ninput xs : f32[n]\ninput m : f32[n, n]\noutput y = if a then xs else m",
        &["branches of `if`", "f32[n]", "f32[n, n]"],
    );
    type_error(
        "input m : f32[r, c]\noutput y = generate [r] (\\i -> m[i])",
        &["rank 2", "needs 2 indices, found 1"],
    );
    type_error("input xs : f32[n]\ninput f : f32\noutput y = xs[f]", &["an index must be i64", "f32"]);
    type_error("input xs : f32[n]\noutput y = xs[1.0]", &["float literal where an integer is expected"]);
    type_error("input x : f32\noutput y = x[0]", &["indexing needs an array", "f32"]);
}

#[test]
fn array_op_types() {
    type_error(
        "input xs : f32[n]\noutput y = reduce (+) true xs",
        &["neutral element of `reduce`", "f32", "bool"],
    );
    type_error(
        "input xs : i64[n]\noutput y = reduce (+) 0.5 xs",
        &["float literal where an integer is expected"],
    );
    type_error("input xs : f32[n]\noutput y = reduce (&&) 0 xs", &["`&&` needs bool operands", "f32"]);
    type_error(
        "input xs : f32[n]\noutput y = scan (\\a b -> a > b) 0 xs",
        &["op of `scan` must return", "bool"],
    );
    type_error(
        "input xs : f32[n]\noutput y = filter (\\x -> x + 1) xs",
        &["predicate of `filter` must return bool"],
    );
    type_error("input m : f32[r, c]\noutput y = filter (\\x -> x > 0) m", &["rank 1", "f32[r, c]"]);
    type_error(
        "input xs : f32[n]\ninput ix : i32[k]\noutput y = gather xs ix",
        &["indices of `gather` must be i64", "i32"],
    );
    type_error("input xs : f32[n]\noutput y = transpose xs", &["`transpose` needs an array of rank 2"]);
    type_error("input xs : f32[n]\noutput y = generate n (\\i -> xs[i])", &["must be a shape"]);
    type_error("input xs : f32[n]\noutput y = fill [2.0] 1", &["float literal where an integer is expected"]);
    type_error(
        "input xs : f32[n]\noutput y = map (\\x -> xs) xs",
        &["a lambda must return a scalar", "f32[n]"],
    );
    type_error(
        "input xs : f32[n]\ninput ys : i32[n]\noutput y = concat xs ys",
        &["`concat` needs arrays of one element type"],
    );
    type_error(
        "input xs : f32[n]\ninput d : i64[4]\noutput y = permute (+) d (\\i -> i) xs",
        &["source of `permute`", "i64", "f32"],
    );
    type_error(
        "input xs : f32[n]\noutput y = backpermute [n] (\\i -> 1.5) xs",
        &["float literal where an integer"],
    );
    type_error(
        "input m : f32[a, b]\noutput y = backpermute [b, a] (\\i j -> j) m",
        &["tuple of 2 i64 indices"],
    );
    type_error("input xs : f32[n]\noutput y = backpermute [n] (\\i -> (i, i)) xs", &["a single i64 index"]);
    // version 2: builtins are functions; given the wrong number of arguments they are refused
    type_error(
        "input xs : f32[n]\noutput y = reduce exp 0 xs",
        &["passes 2 arguments to `exp`, which takes 1"],
    );
    type_error("input xs : f32[n]\noutput y = map max xs", &["passes 1 argument to `max`, which takes 2"]);
    type_error("input xs : f32[n]\noutput y = map (+) xs xs", &["needs a function of 2 arguments"]);
    type_error("input xs : f32[n]\noutput y = map 3 xs", &["needs a function of 1 argument"]);
    type_error("input xs : f32[n]\noutput y = map xs xs", &["`xs` is not a function", "f32[n]"]);
}

#[test]
fn array_op_in_lambda() {
    type_error(
        "input xs : f32[n]\noutput y = map (\\x -> reduce (+) 0 xs) xs",
        &["array operations such as `reduce` are not allowed inside a lambda"],
    );
    type_error(
        "input xs : f32[n]\nlet f = \\i -> length (iota i)\noutput y = map f xs",
        &["not allowed inside a lambda"],
    );
    // length, size, indexing and iterate are scalar operations: fine
    check(
        &parse("input xs : f32[n]\noutput y = map (\\x -> x * f32 (length xs) + xs[size xs 0 - 1]) xs")
            .unwrap(),
    )
    .unwrap();
}

#[test]
fn tuple_misuse() {
    type_error("input xs : f32[n]\noutput y = (1, 2)", &["tuple"]);
    type_error("input xs : f32[n]\noutput y = map (\\x -> (x, x)) xs", &["never an output", "group"]);
    type_error("input xs : f32[n]\noutput y = map (\\x -> (x, x) + 1) xs", &["tuple"]);
    type_error("let f = \\i -> (i, i)\noutput y = f 1", &["tuple"]);
}

#[test]
fn function_as_value() {
    type_error("let f = \\x -> x + 1\noutput f", &["function", "output"]);
    type_error("output y = \\x -> x", &["lambda"]);
    type_error(
        "input a : bool\nlet f = \\x -> x\nlet g = \\x -> x\noutput y = if a then f else g",
        &["`f` is a function"],
    );
    type_error("let f = \\x -> x\nlet g = \\x -> x\noutput y = g f", &["`f` is a function"]);
    type_error("let f = \\x -> x\nlet g = f\noutput y = 1", &["`f` is a function"]);
    type_error("output y = (+)", &["operator section"]);
    type_error("input xs : f32[n]\noutput y = [n]", &["shape"]);
    type_error("input x : f32\noutput y = x 1", &["`x` is not a function"]);
    type_error("input xs : f32[n]\noutput y = n 1", &["size"]);
}

#[test]
fn certain_shape_mismatch_at_check_time() {
    let e = fails("input a : f32[3]\ninput b : f32[4]\noutput y = map (\\x y -> x + y) a b", Code::Shape);
    assert!(e.message.contains("f32[3]") && e.message.contains("f32[4]"), "{}", e.message);
    fails("input a : f32[n, 3]\ninput b : f32[n, 4]\noutput y = map (\\x y -> x + y) a b", Code::Shape);
    fails("input a : f32[n]\ninput b : f32[n, m]\noutput y = map (\\x y -> x + y) a b", Code::Shape);
    fails("input a : f32[4]\noutput y = reshape [2, 3] a", Code::Shape);
    // unknown until run time: accepted
    check(&parse("input a : f32[n]\ninput b : f32[m]\noutput y = map (\\x y -> x + y) a b").unwrap())
        .unwrap();
    check(&parse("input a : f32[n]\noutput y = reshape [2, 3] a").unwrap()).unwrap();
}

#[test]
fn float_literal_as_int() {
    type_error("input a : i64\noutput y = a + 1.5", &["float literal where an integer is expected", "i64"]);
    type_error(
        "input a : i64[n]\noutput y = map (\\x -> x * 0.5) a",
        &["float literal where an integer is expected"],
    );
    // through a let and a fill decided later
    type_error(
        "input a : i32[n]\nlet z = fill [n] 0.0\noutput y = map (\\p q -> p + q) z a",
        &["float literal where an integer is expected"],
    );
}

#[test]
fn int_literal_out_of_range() {
    let e = type_error("input a : i32\noutput y = a + 3000000000", &["3000000000", "i32"]);
    assert!(e.span.is_some());
    type_error("input a : i32[n]\noutput y = reduce max (-2147483649) a", &["-2147483649"]);
    // fits
    check(&parse("input a : i32\noutput y = a + 2147483647 + (-2147483648)").unwrap()).unwrap();
    check(&parse("input a : f32\noutput y = a + 3000000000").unwrap()).unwrap();
}

#[test]
fn size_dimension_out_of_rank() {
    type_error("input m : f32[r, c]\noutput y = size m 2", &["`size` dimension 2 is out of range", "rank 2"]);
    type_error("input m : f32[r, c]\noutput y = size m (-1)", &["out of range"]);
    check(&parse("input m : f32[r, c]\ninput k : i64\noutput y = size m k + size m 1").unwrap()).unwrap();
}

#[test]
fn named_function_at_two_types() {
    type_error(
        "input a : f32[n]\ninput b : f64[n]\nlet sq = \\x -> x * x\noutput p = map sq a\noutput q = map sq b",
        &["`sq`", "f32", "f64", "one type"],
    );
    type_error(
        "input a : f32\ninput b : i64\nlet f = \\x -> x + 1\noutput y = f a + f32 (f b)",
        &["`f`", "one type"],
    );
}

#[test]
fn lambda_parameter_names() {
    type_error("input xs : f32[n]\noutput y = map (\\x x -> x) xs xs", &["`x` appears twice"]);
}

#[test]
fn errors_carry_positions() {
    let e = type_error("input a : f32\n\noutput y = a +\n  true", &["`+`"]);
    assert_eq!(e.span.unwrap().line, 3);
}
