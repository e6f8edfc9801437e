//! The checker on whole programs: every conformance program, the types of their results,
//! literal typing by unification, and a fully typed tree.
#![allow(clippy::unwrap_used)]

use eqfuse_ir::check::{check, check_with, Checked};
use eqfuse_ir::parse::parse;
use eqfuse_ir::{Code, Dim, ElemType, Expr, ExprKind, Item, Limits, Lit, Type};
use std::path::PathBuf;

fn checked(src: &str) -> Checked {
    let p = parse(src).unwrap_or_else(|e| panic!("parse failed: {e}\n{src}"));
    check(&p).unwrap_or_else(|e| panic!("check failed: {e}\n{src}"))
}

fn out_ty(c: &Checked, name: &str) -> String {
    c.outputs.get(name).unwrap_or_else(|| panic!("no output {name}")).to_string()
}

/// Visits every node of every item.
fn walk<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
    f(e);
    for c in e.kind.children() {
        walk(c, f);
    }
}

fn all_nodes(c: &Checked) -> Vec<&Expr> {
    let mut v = Vec::new();
    for item in &c.program.items {
        let e = match item {
            Item::Let { value, .. } => value,
            Item::Output { value: Some(value), .. } => value,
            _ => continue,
        };
        walk(e, &mut |n| v.push(n));
    }
    v
}

fn assert_fully_typed(c: &Checked) {
    for n in all_nodes(c) {
        assert!(n.ty.is_some(), "node without a type: {n:?}");
    }
}

/// The types of every literal, in source order, as (literal, type).
fn literal_types(c: &Checked) -> Vec<(String, String)> {
    all_nodes(c)
        .into_iter()
        .filter_map(|n| match &n.kind {
            ExprKind::Lit(Lit::Int(v)) => Some((v.to_string(), n.ty.as_ref().unwrap().to_string())),
            ExprKind::Lit(Lit::Float(v)) => Some((format!("{v:?}"), n.ty.as_ref().unwrap().to_string())),
            _ => None,
        })
        .collect()
}

fn lit_types_of(src: &str) -> Vec<String> {
    literal_types(&checked(src)).into_iter().map(|(_, t)| t).collect()
}

fn conformance_dir() -> PathBuf {
    // The project's own copy of the suite: always present, so a missing one fails the tests.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance")
}

fn conformance(name: &str) -> String {
    std::fs::read_to_string(conformance_dir().join(name).join("program.eqf")).unwrap()
}

#[test]
fn every_conformance_program_checks_or_fails_as_expected() {
    let mut seen = 0;
    for entry in std::fs::read_dir(conformance_dir()).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let Ok(src) = std::fs::read_to_string(dir.join("program.eqf")) else { continue };
        seen += 1;
        match name.as_str() {
            "err_parse" => assert_eq!(parse(&src).unwrap_err().code, Code::Parse),
            "err_type" => {
                let e = check(&parse(&src).unwrap()).unwrap_err();
                assert_eq!(e.code, Code::Type, "{e}");
                assert!(e.message.contains("&&") && e.message.contains("f32"), "{e}");
                assert!(e.span.is_some());
            }
            _ => {
                let c = checked(&src);
                assert_fully_typed(&c);
                assert_eq!(c.outputs.len(), c.program.output_names().count(), "{name}");
            }
        }
    }
    assert!(seen >= 20, "only {seen} conformance programs found");
}

#[test]
fn blackscholes_types() {
    let c = checked(&conformance("blackscholes"));
    assert_eq!(out_ty(&c, "call"), "f32[n]");
    assert_eq!(out_ty(&c, "put"), "f32[n]");
    assert_eq!(
        c.lets["cnd"],
        Type::Func { params: vec![Type::Scalar(ElemType::F32)], ret: Box::new(Type::Scalar(ElemType::F32)) }
    );
    // every literal, including those inside the named function, is f32
    for (l, t) in literal_types(&c) {
        assert_eq!(t, "f32", "literal {l}");
    }
    assert_eq!(c.sizes, vec!["n".to_string()]);
    assert_eq!(c.inputs["s"].to_string(), "f32[n]");
}

#[test]
fn conformance_summary_types() {
    let c = checked(&conformance("variance"));
    assert_eq!(out_ty(&c, "m"), "f64");
    assert_eq!(out_ty(&c, "var"), "f64");
    assert_eq!(c.lets["len"].to_string(), "f64");

    let c = checked(&conformance("mandelbrot"));
    assert_eq!(out_ty(&c, "count"), "i64[h, w]");
    assert_eq!(c.lets["n0"].to_string(), "i64[h, w]");
    assert_eq!(c.lets["esc0"].to_string(), "bool[h, w]");
    assert_eq!(c.sizes, vec!["h".to_string(), "w".to_string()]);

    let c = checked(&conformance("filter_reduce"));
    assert_eq!(out_ty(&c, "count"), "i64");
    assert_eq!(out_ty(&c, "total"), "f32");
    assert_eq!(out_ty(&c, "kept"), "f32[?]");
    assert_eq!(c.outputs["kept"], Type::Array { elem: ElemType::F32, shape: vec![Dim::Dynamic] });

    let c = checked(&conformance("sum_of_squares"));
    assert_eq!(out_ty(&c, "s"), "i64");
    assert!(c.sizes.is_empty());

    let c = checked(&conformance("scans"));
    for o in ["inc", "exc", "runmax"] {
        assert_eq!(out_ty(&c, o), "i64[n]");
    }
    assert!(literal_types(&c).iter().all(|(_, t)| t == "i64"));

    let c = checked(&conformance("softmax_rows"));
    assert_eq!(out_ty(&c, "sm"), "f32[r, c]");
    assert_eq!(c.lets["mx"].to_string(), "f32[r]");
    assert!(literal_types(&c).iter().all(|(_, t)| t == "f32"), "{:?}", literal_types(&c));

    let c = checked(&conformance("gathers"));
    assert_eq!(out_ty(&c, "g"), "f32[k]");
    assert_eq!(out_ty(&c, "rev"), "f32[n]");
    assert_eq!(out_ty(&c, "rev2"), "f32[n]");
    assert_eq!(out_ty(&c, "mid"), "f32[20]");
    assert_eq!(out_ty(&c, "both"), "f32[10]");

    let c = checked(&conformance("histogram"));
    assert_eq!(out_ty(&c, "h"), "i64[16]");

    let c = checked(&conformance("nbody"));
    for o in ["ax", "ay", "az"] {
        assert_eq!(out_ty(&c, o), "f32[n]");
    }

    let c = checked(&conformance("matvec"));
    assert_eq!(out_ty(&c, "y"), "f32[r]");

    let c = checked(&conformance("column_sums"));
    assert_eq!(out_ty(&c, "rows"), "f32[r]");
    assert_eq!(out_ty(&c, "cols"), "f32[c]");

    let c = checked(&conformance("iterate_builtin"));
    assert_eq!(out_ty(&c, "y"), "f64[n]");

    let c = checked(&conformance("stencil_twice"));
    assert_eq!(out_ty(&c, "c"), "f32[n]");

    let c = checked(&conformance("dotp"));
    assert_eq!(out_ty(&c, "dot"), "f32");

    let c = checked(&conformance("saxpy"));
    assert_eq!(out_ty(&c, "zs"), "f32[n]");

    let c = checked(&conformance("err_input_dtype"));
    assert_eq!(out_ty(&c, "y"), "f32[n]");
    let c = checked(&conformance("err_divzero"));
    assert_eq!(out_ty(&c, "q"), "i64[n]");
}

#[test]
fn run_time_shape_errors_are_accepted() {
    // n and m are unknown until run time: the interpreter reports E-SHAPE, not the checker.
    let c = checked(&conformance("err_shape"));
    assert_eq!(out_ty(&c, "z"), "f32[n]");
}

#[test]
fn literal_typing_by_unification() {
    // through permute's destination
    let src = "input xs : f32[k]\ninput f : i64[k]\noutput h = permute (+) (fill [k] 0.0) (\\i -> f[i]) xs";
    assert_eq!(lit_types_of(src), vec!["f32"]);
    // -inf as a neutral element
    assert_eq!(lit_types_of("input m : f32[n]\noutput r = reduce max (-inf) m"), vec!["f32"]);
    // negative integer neutral element
    assert_eq!(lit_types_of("input a : i64[n]\noutput r = scan max (-1000000) a"), vec!["i64"]);
    // int literal standing for a float
    assert_eq!(lit_types_of("input x : f64\noutput y = x * 2"), vec!["f64"]);
    // defaults
    assert_eq!(lit_types_of("output y = 1 + 2"), vec!["i64", "i64"]);
    assert_eq!(lit_types_of("output y = 1.5 * 2"), vec!["f64", "f64"]);
    assert_eq!(lit_types_of("output y = sqrt 2"), vec!["f64"]);
    // through a let and an array built by fill, decided later
    let src = "input xs : f32[n]\nlet z = fill [n] 0\noutput s = map (\\a b -> a + b) z xs";
    let c = checked(src);
    assert_eq!(c.lets["z"].to_string(), "f32[n]");
    assert_eq!(literal_types(&c), vec![("0".into(), "f32".into())]);
    // shape literals are i64
    let c = checked("output z = fill [3, 4] 1.5");
    assert_eq!(out_ty(&c, "z"), "f64[3, 4]");
    assert_eq!(literal_types(&c).iter().map(|x| x.1.as_str()).collect::<Vec<_>>(), vec!["i64", "i64", "f64"]);
    // i32 context
    assert_eq!(
        lit_types_of("input a : i32[n]\noutput s = reduce (+) 0 (map (\\x -> x * 3) a)"),
        vec!["i32", "i32"]
    );
    // a lambda parameter decided by its uses
    let c = checked("input a : f32[n]\nlet sq = \\d -> d * d + 1\noutput y = map sq a");
    assert_eq!(c.lets["sq"].to_string(), "f32 -> f32");
    assert_eq!(lit_types_of("input a : f32[n]\nlet sq = \\d -> d * d + 1\noutput y = map sq a"), vec!["f32"]);
    // conversions cut the chain
    assert_eq!(
        lit_types_of("input a : f32[n]\noutput y = map (\\x -> x + f32 (3 + 4)) a"),
        vec!["i64", "i64"]
    );
    // an unused function's parameters default
    let c = checked("let f = \\x y -> x == y\noutput o = 1");
    assert_eq!(c.lets["f"].to_string(), "i64 -> i64 -> bool");
}

#[test]
fn shapes_of_results() {
    let c = checked(
        "input a : f32[n, m]\ninput v : f32[7]\ninput k : i64\n\
         output t = transpose a\n\
         output r = reshape [m, n] a\n\
         output g = generate [n - 1] (\\i -> v[i])\n\
         output io = iota k\n\
         output s = slice v 1 k\n\
         output cc = concat v (slice v 0 k)\n\
         output bp = backpermute [m, n] (\\i j -> (j, i)) a\n\
         output cond = if k > 0 then v else fill [7] 0\n\
         output cond2 = if k > 0 then v else fill [k] 0\n\
         output red = reduce (+) 0 a\n\
         output sz = size a 1\n\
         output ln = length v\n\
         output mv = map (\\x y -> x + y) (fill [n] 1) (generate [n] (\\i -> f32 i))",
    );
    assert_eq!(out_ty(&c, "t"), "f32[m, n]");
    assert_eq!(out_ty(&c, "r"), "f32[m, n]");
    assert_eq!(out_ty(&c, "g"), "f32[(n - 1)]");
    assert_eq!(out_ty(&c, "io"), "i64[(k)]");
    assert_eq!(out_ty(&c, "s"), "f32[(k)]");
    assert_eq!(out_ty(&c, "cc"), "f32[(k + 7)]");
    assert_eq!(out_ty(&c, "bp"), "f32[m, n]");
    assert_eq!(out_ty(&c, "cond"), "f32[7]");
    assert_eq!(out_ty(&c, "cond2"), "f32[?]");
    assert_eq!(out_ty(&c, "red"), "f32[n]");
    assert_eq!(out_ty(&c, "sz"), "i64");
    assert_eq!(out_ty(&c, "ln"), "i64");
    assert_eq!(out_ty(&c, "mv"), "f32[n]");
    assert_fully_typed(&c);
}

#[test]
fn map_prefers_the_most_informative_dimension() {
    let c = checked(
        "input a : f32[n]\ninput b : f32[5]\noutput z = map (\\x y -> x + y) (filter (\\x -> x > 0) a) b",
    );
    assert_eq!(out_ty(&c, "z"), "f32[5]");
}

#[test]
fn node_types_in_the_tree() {
    let c = checked(
        "input xs : f32[n]\nlet sq = \\d -> d * d\n\
         output a = reduce (+) 0 (map sq xs)\n\
         output b = scan max 0 xs\n\
         output c = backpermute [n] (\\i -> n - 1 - i) xs\n\
         output d = (\\x -> x + 1) 2\n\
         output e = (+) 1 2.5\n\
         output f = map (\\x -> let g = \\y -> y * 2 in g x) xs",
    );
    assert_fully_typed(&c);
    let nodes = all_nodes(&c);
    let find_all = |pred: &dyn Fn(&ExprKind) -> bool| -> Vec<String> {
        nodes.iter().filter(|n| pred(&n.kind)).map(|n| n.ty.as_ref().unwrap().to_string()).collect()
    };
    // sections, min/max as op, named function names: functions
    assert_eq!(
        find_all(&|k| matches!(k, ExprKind::Section(_))),
        vec!["f32 -> f32 -> f32", "f64 -> f64 -> f64"]
    );
    assert_eq!(find_all(&|k| matches!(k, ExprKind::Var(v) if v == "max")), vec!["f32 -> f32 -> f32"]);
    assert_eq!(find_all(&|k| matches!(k, ExprKind::Var(v) if v == "sq")), vec!["f32 -> f32"]);
    // shape arguments
    assert_eq!(find_all(&|k| matches!(k, ExprKind::Shape(_))), vec!["shape of rank 1"]);
    // builtin heads: Func whose ret is the application's type
    assert_eq!(find_all(&|k| matches!(k, ExprKind::Var(v) if v == "reduce")), vec!["f32 -> f32 -> f32"]);
    assert_eq!(find_all(&|k| matches!(k, ExprKind::Var(v) if v == "backpermute")), vec!["f32 -> f32[n]"]);
    // lambdas
    let lams = find_all(&|k| matches!(k, ExprKind::Lambda { .. }));
    assert!(lams.contains(&"i64 -> i64".to_string()), "{lams:?}");
    assert!(lams.contains(&"f32 -> f32".to_string()), "{lams:?}");
    assert_eq!(out_ty(&c, "d"), "i64");
    assert_eq!(out_ty(&c, "e"), "f64");
    assert_eq!(out_ty(&c, "f"), "f32[n]");
}

#[test]
fn tuples_in_index_functions() {
    let c = checked(
        "input m : f32[r, c]\ninput dest : f32[c, r]\n\
         let swap = \\i j -> (j, i)\n\
         output t = backpermute [c, r] swap m\n\
         output p = permute (+) dest (\\i j -> if i > 0 then (j, i) else (0, 0)) m",
    );
    assert_fully_typed(&c);
    let tuples: Vec<String> = all_nodes(&c)
        .into_iter()
        .filter(|n| matches!(n.kind, ExprKind::Tuple(_)))
        .map(|n| n.ty.as_ref().unwrap().to_string())
        .collect();
    assert_eq!(tuples, vec!["(i64, i64)"; 3]);
    assert_eq!(c.lets["swap"].to_string(), "i64 -> i64 -> (i64, i64)");
}

#[test]
fn shadowing() {
    // lambda parameters and local lets may shadow builtins, sizes and top-level names
    let c = checked(
        "input xs : f32[n]\nlet k = 2\n\
         output a = map (\\max -> max + 1) xs\n\
         output b = map (\\n -> let k = n * 2 in k) xs\n\
         output c = let map = 3 in map + k",
    );
    assert_eq!(out_ty(&c, "a"), "f32[n]");
    assert_eq!(out_ty(&c, "b"), "f32[n]");
    assert_eq!(out_ty(&c, "c"), "i64");
    // past the scope that shadows it, a builtin is the builtin again
    let c = checked(
        "input xs : f32[n]\n\
         output d = (let map = 3 in map) + reduce (+) 0 (map (\\x -> 1) xs)\n\
         output e = map (\\v -> (\\map -> map * 2.0) v) (map (\\x -> x) xs)",
    );
    assert_eq!(out_ty(&c, "d"), "i64");
    assert_eq!(out_ty(&c, "e"), "f32[n]");
    // output of an input and of a let
    let c = checked("input xs : f32[n]\nlet y = 1.5\noutput xs\noutput y");
    assert_eq!(out_ty(&c, "xs"), "f32[n]");
    assert_eq!(out_ty(&c, "y"), "f64");
}

#[test]
fn deep_tree_hits_the_limit_not_the_stack() {
    // built by hand: the parser would refuse it first
    let mut e = Expr::var("x", Default::default());
    for _ in 0..200_000 {
        e = Expr::new(ExprKind::Unary { op: eqfuse_ir::UnOp::Neg, operand: Box::new(e) }, Default::default());
    }
    let p = eqfuse_ir::Program {
        items: vec![
            Item::Input { name: "x".into(), ty: Type::Scalar(ElemType::F32), span: Default::default() },
            Item::Output { name: "y".into(), value: Some(e), span: Default::default() },
        ],
    };
    let err = check(&p).unwrap_err();
    assert_eq!(err.code, Code::Limit, "{err}");
    // drop the deep tree without recursion
    let mut items = p.items;
    if let Some(Item::Output { value: Some(mut e), .. }) = items.pop() {
        while let ExprKind::Unary { operand, .. } = e.kind {
            e = *operand;
        }
    }
}

#[test]
fn trees_just_under_the_limit_check() {
    let limits = Limits::default();
    let depth = limits.max_depth as usize - 2;
    // nested lambdas applied in a chain: x + 1 + 1 + ... built as a deep left-leaning tree
    let src = format!("input x : f32\noutput y = {}x{}", "(".repeat(depth / 2), " + 1)".repeat(depth / 2));
    let p = parse(&src).unwrap();
    let c = check_with(&p, &limits).unwrap();
    assert_eq!(out_ty(&c, "y"), "f32");
    // a deep chain of lambdas inside maps is fine too, on a small stack
    let src = {
        let mut s = String::from("x");
        for _ in 0..(depth / 3) {
            s = format!("(\\v -> {s} + v) 1");
        }
        format!("input x : f64\noutput y = {s}")
    };
    let p = parse(&src).unwrap();
    let handle =
        std::thread::Builder::new().stack_size(1 << 20).spawn(move || check(&p).map(|c| out_ty(&c, "y")));
    assert_eq!(handle.unwrap().join().unwrap().unwrap(), "f64");
}
