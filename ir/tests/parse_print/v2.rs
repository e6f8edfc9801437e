//! Version 2 syntax: the bitwise operators and the precedence table, hexadecimal literals,
//! tuple patterns, loops, lambda tuple parameters, input types with all element types and
//! affine dimensions, builtin names as ordinary names; and a seeded round-trip property.

use super::*;
use eqfuse_ir::ast::BinOp;
use eqfuse_ir::types::{Dim, ElemType, Type};
use proptest::test_runner::{Config, RngSeed, TestRunner};

// ----- version 2: operators, hexadecimal literals, tuple patterns, loops, input types -----

#[test]
fn precedence_table_of_every_operator_pair() {
    for a in BinOp::ALL {
        for b in BinOp::ALL {
            let src = format!("x {} y {} z", a.symbol(), b.symbol());
            let (sa, sb) = (a.symbol(), b.symbol());
            // equal precedence: left-associative
            let want = if a.precedence() >= b.precedence() {
                format!("({sb} ({sa} x y) z)")
            } else {
                format!("({sa} x ({sb} y z))")
            };
            assert_eq!(p(&src), want, "{src}");
            assert_eq!(print_expr(&parse_expr(&src).unwrap()), src, "{src}");
        }
    }
}

#[test]
fn bitwise_precedence_follows_python() {
    assert_eq!(p("x & 1 == 0"), "(== (& x 1) 0)");
    assert_eq!(p("a | b ^ c & d << e + f * g"), "(| a (^ b (& c (<< d (+ e (* f g))))))");
    assert_eq!(p("x ^ x << 13"), "(^ x (<< x 13))");
    assert_eq!(p("x + s << 1"), "(<< (+ x s) 1)");
    assert_eq!(p("x << 8 | x >> 24"), "(| (<< x 8) (>> x 24))");
    assert_eq!(p("a || b | c"), "(|| a (| b c))");
    assert_eq!(p("a && b & c"), "(&& a (& b c))");
    assert_eq!(p("a < b | c"), "(< a (| b c))");
    assert_eq!(p("a >> b >> c"), "(>> (>> a b) c)");
    assert_eq!(p("a>>b<c"), "(< (>> a b) c)");
    assert_eq!(p("-x & !y"), "(& (-u x) (!u y))");
    assert_eq!(p("f x & g y"), "(& (app f x) (app g y))");
    for op in ["&", "|", "^", "<<", ">>"] {
        assert_eq!(p(&format!("reduce ({op}) 0 xs")), format!("(app reduce (section {op}) 0 xs)"));
    }
    let rt = |src: &str| print_expr(&parse_expr(src).unwrap());
    assert_eq!(rt("(x & 1) == 0"), "x & 1 == 0");
    assert_eq!(rt("(a | b) & c"), "(a | b) & c");
    assert_eq!(rt("a << (b << c)"), "a << (b << c)");
}

#[test]
fn hexadecimal_literals_parse_fold_and_print() {
    let lit = |src: &str| match parse_expr(src).unwrap().kind {
        ExprKind::Lit(l) => l,
        k => panic!("{src}: not a literal: {k:?}"),
    };
    assert_eq!(lit("0xFF"), Lit::Hex(255));
    assert_eq!(lit("0xff51afd7ed558ccd"), Lit::Hex(0xff51_afd7_ed55_8ccd));
    assert_eq!(lit("0xFFFFFFFFFFFFFFFF"), Lit::Hex(u64::MAX));
    assert_eq!(lit("-0xFF"), Lit::Int(-255));
    assert_eq!(lit("-0xFFFFFFFFFFFFFFFF"), Lit::Int(-i128::from(u64::MAX)));
    assert_eq!(lit("-0x8000000000000000"), Lit::Int(i64::MIN.into()));
    let rt = |src: &str| print_expr(&parse_expr(src).unwrap());
    assert_eq!(rt("0xFF"), "0xff");
    assert_eq!(rt("0x0000000F"), "0xf");
    assert_eq!(rt("-0xFF"), "(-255)");
    assert_eq!(rt("-0xFFFFFFFFFFFFFFFF"), "(-18446744073709551615)");
    // an integer above the i64 range prints in decimal, which reads back (to `u64::MAX`)
    let big = Expr::new(ExprKind::Lit(Lit::Int(1 << 63)), Default::default());
    assert_eq!(print_expr(&big), "9223372036854775808");
    assert_eq!(lit("0x8000000000000000").int_value(), Some(1 << 63));
    assert_eq!(rt("xs[0x3] & 0xF0"), "xs[0x3] & 0xf0");
    assert_eq!(p("- -0x1"), "(-u -1)");
    let e = prog_err("output y =\n  1 + 0x10000000000000000");
    assert_eq!((e.code, line_col(&e)), (Code::Parse, Some((2, 7))), "{e}");
    assert!(e.message.contains("integer literal too large"), "{e}");
    for (src, col) in [("output y = 0x", 12), ("output y = 0x1.5", 12), ("output y = 1 + 0xZ", 16)] {
        let e = prog_err(src);
        assert_eq!((e.code, line_col(&e)), (Code::Parse, Some((1, col))), "{src}: {e}");
        assert!(e.message.contains("malformed hexadecimal literal"), "{src}: {e}");
    }
}

#[test]
fn tuple_patterns_in_let_expressions_and_items() {
    assert_eq!(p("let (a, b) = f x in a + b"), "(let (a b) (app f x) (+ a b))");
    assert_eq!(
        p("let (m, i, k) = (1, 2, 3) in let (p, q) = m in p"),
        "(let (m i k) (tuple 1 2 3) (let (p q) m p))"
    );
    assert_eq!(p("1 + let (a, b) = c in a"), "(+ 1 (let (a b) c a))");
    let prog = parse("input xs : f32[n]\nlet (lo, hi) = map f xs\noutput lo\noutput hi").unwrap();
    let Item::LetTuple { names, value, .. } = &prog.items[1] else { panic!("{:?}", prog.items[1]) };
    assert_eq!(names, &["lo", "hi"]);
    assert_eq!(sexp(value), "(app map f xs)");
    assert_eq!(prog.items[1].names(), vec!["lo", "hi"]);
    assert_eq!(print_program(&prog), "input xs : f32[n]\nlet (lo, hi) = map f xs\noutput lo\noutput hi\n");
    assert_round_trip(&prog);
}

#[test]
fn tuple_pattern_errors() {
    let cases: &[(&str, &str, (u32, u32))] = &[
        ("let (a) = x", "a tuple pattern needs two or more names, found `(a)`", (1, 5)),
        ("let (a, a) = x", "`a` appears twice in the tuple pattern after `let`", (1, 9)),
        ("output y = let (p, q, p) = x in p", "`p` appears twice", (1, 23)),
        ("let (a, 1) = x", "expected a name in the tuple pattern after `let`, found `1`", (1, 9)),
        ("let (a, in) = x", "`in` is a keyword", (1, 9)),
        ("let (a b) = x", "expected `,` or `)` after a name of the tuple pattern", (1, 8)),
        ("let (a, b", "unclosed `(`", (1, 5)),
        ("let (a, b) x", "expected `=` after `let (a, b)`, found `x`", (1, 12)),
        ("output y = let (a, b) = x\noutput z = 1", "expected `in` after the value of `let (a, b)`", (2, 1)),
        ("let () = x", "expected a name in the tuple pattern after `let`, found `)`", (1, 6)),
    ];
    check_errors(cases);
}

#[test]
fn loops_parse() {
    assert_eq!(p("loop x = xs for i < 3 do map f x"), "(loop x xs for i 3 (app map f x))");
    assert_eq!(
        p("loop (t, k) = (t0, 0) for s < steps do (g t, k + 1)"),
        "(loop (t k) (tuple t0 0) for s steps (tuple (app g t) (+ k 1)))"
    );
    assert_eq!(
        p("loop (x, c) = (x0, true) while c && n > 0 do (f x, g x)"),
        "(loop (x c) (tuple x0 true) while (&& c (> n 0)) (tuple (app f x) (app g x)))"
    );
    // the initial state and the count end at the keywords; the body extends to the right
    assert_eq!(
        p("loop x = f a b for i < n + 1 do x + 1 + 2"),
        "(loop x (app f a b) for i (+ n 1) (+ (+ x 1) 2))"
    );
    assert_eq!(p("loop x = 1 for i < a < b do x"), "(loop x 1 for i (< a b) x)");
    assert_eq!(p("1 + loop x = 0 for i < 2 do x * 2"), "(+ 1 (loop x 0 for i 2 (* x 2)))");
    assert_eq!(
        p("loop x = let a = 1 in a for i < if c then 1 else 2 do x"),
        "(loop x (let a 1 a) for i (if c 1 2) x)"
    );
    // nested: the inner loop's body ends at the outer `for`
    assert_eq!(
        p("loop x = loop y = 1 for j < 2 do y for i < 3 do loop z = x while z do z"),
        "(loop x (loop y 1 for j 2 y) for i 3 (loop z x while z z))"
    );
    assert_eq!(
        p("let (a, b) = loop (p, q) = (1, 2) for i < n do (q, p) in a"),
        "(let (a b) (loop (p q) (tuple 1 2) for i n (tuple q p)) a)"
    );
    let rt = |src: &str| print_expr(&parse_expr(src).unwrap());
    assert_eq!(rt("loop x = let a = 1 in a for i < n do x"), "loop x = (let a = 1 in a) for i < n do x");
    assert_eq!(rt("(loop x = 1 while c do x) + 1"), "(loop x = 1 while c do x) + 1");
    assert_eq!(rt("loop (a, b) = (1, 2) for i < n do (b, a)"), "loop (a, b) = (1, 2) for i < n do (b, a)");
    assert_eq!(rt("f (loop x = 1 for i < 2 do x)"), "f (loop x = 1 for i < 2 do x)");
}

#[test]
fn loop_errors() {
    let cases: &[(&str, &str, (u32, u32))] = &[
        (
            "output y = loop x = e\noutput z = 1",
            "expected `for` or `while` after the loop's initial state (`loop x = init for i < n do ...` or",
            (2, 1),
        ),
        ("output y = loop x = e do x", "expected `for` or `while` after the loop's initial state", (1, 23)),
        (
            "output y = loop x = 0 for i < 3 then x",
            "expected `do` after the loop's count (`for i < count do body`), found `then`",
            (1, 33),
        ),
        ("output y = loop x = 0 for i 3 do x", "expected `<` after `for i`", (1, 29)),
        ("output y = loop x = 0 for 3 < 3 do x", "expected the loop variable after `for`", (1, 27)),
        ("output y = loop x = 0 while c then x", "expected `do` after the loop's condition", (1, 31)),
        (
            "output y = loop = 0 for i < 1 do 0",
            "expected a name or a tuple pattern `(a, b)` after `loop`",
            (1, 17),
        ),
        ("output y = loop (x) = 0 for i < 1 do 0", "a tuple pattern needs two or more names", (1, 17)),
        ("output y = loop x 0 for i < 1 do 0", "expected `=` after the loop's state", (1, 19)),
        ("output y = loop x = 0 for i < 3 do", "expected an expression after `do`", (1, 35)),
        ("output y = loop x = 0 for do < 3 do x", "`do` is a keyword", (1, 27)),
        (
            "output y = f loop x = 1 for i < 2 do x",
            "a loop used as an argument must be in parentheses: write `(loop ...)`",
            (1, 14),
        ),
        ("output y = f x if c then 1 else 2", "an `if` used as an argument must be in parentheses", (1, 16)),
        ("let for = 1", "`for` is a keyword", (1, 5)),
        ("input while : f32", "`while` is a keyword", (1, 7)),
        ("output y = \\loop -> 1", "`loop` is a keyword", (1, 13)),
    ];
    check_errors(cases);
}

#[test]
fn lambda_tuple_parameters_desugar() {
    let src = "\\(a, i) (b, j) -> if b < a then (b, j) else (a, i)";
    let e = parse_expr(src).unwrap();
    assert_eq!(
        sexp(&e),
        "(\\arg'0 arg'1 (let (a i) arg'0 (let (b j) arg'1 (if (< b a) (tuple b j) (tuple a i)))))"
    );
    let text = print_expr(&e);
    assert_eq!(
        text,
        "\\arg'0 arg'1 -> let (a, i) = arg'0 in let (b, j) = arg'1 in if b < a then (b, j) else (a, i)"
    );
    assert_eq!(parse_expr(&text).unwrap(), e);
    assert_eq!(p("fn (a, b) -> a"), "(\\arg'0 (let (a b) arg'0 a))");
    assert_eq!(p("\\x (a, b) y -> x"), "(\\x arg'0 y (let (a b) arg'0 x))");
    // names the lambda already uses are skipped
    assert_eq!(p("\\(a, b) -> a + arg'0"), "(\\arg'1 (let (a b) arg'1 (+ a arg'0)))");
    assert_eq!(p("\\arg'0 (a, b) -> a"), "(\\arg'0 arg'1 (let (a b) arg'1 a))");
    assert_eq!(p("\\(arg'0, b) (c, d) -> b"), "(\\arg'1 arg'2 (let (arg'0 b) arg'1 (let (c d) arg'2 b)))");
    // numbered per lambda: the inner one counts from 0, the outer skips the inner's name
    assert_eq!(
        p("\\(a, b) -> map (\\(c, d) -> c) a"),
        "(\\arg'1 (let (a b) arg'1 (app map (\\arg'0 (let (c d) arg'0 c)) a)))"
    );
    // only the lambda's own text counts: a name outside it does not
    assert_eq!(p("let arg'0 = 1 in \\(a, b) -> a"), "(let arg'0 1 (\\arg'0 (let (a b) arg'0 a)))");
    assert_eq!(
        p("\\(a, b) -> \\x -> \\(c, d) -> arg'0 + arg'2"),
        "(\\arg'3 (let (a b) arg'3 (\\x (\\arg'1 (let (c d) arg'1 (+ arg'0 arg'2))))))"
    );
    assert_eq!(p("\\(a, b) -> \\(c, d) -> c"), "(\\arg'1 (let (a b) arg'1 (\\arg'0 (let (c d) arg'0 c))))");
    let prog =
        parse("let op = \\(a, i) (b, j) -> (a + b, i)\nlet (s, k) = reduce op (0, 0) (xs, ys)").unwrap();
    assert_round_trip(&prog);
}

#[test]
fn lambda_tuple_parameter_errors() {
    let cases: &[(&str, &str, (u32, u32))] = &[
        ("output y = \\(a, a) -> a", "`a` appears twice in the tuple pattern of a lambda parameter", (1, 17)),
        (
            "output y = \\(a, b) (b, c) -> a",
            "the parameter `b` appears twice in the lambda's parameters",
            (1, 20),
        ),
        ("output y = \\x (x, y) -> x", "the parameter `x` appears twice", (1, 15)),
        ("output y = \\(a) -> a", "a tuple pattern needs two or more names, found `(a)`", (1, 13)),
        ("output y = \\(a, b -> a", "expected `,` or `)` after a name of the tuple pattern", (1, 19)),
        (
            "output y = \\(a, 2) -> a",
            "expected a name in the tuple pattern of a lambda parameter, found `2`",
            (1, 17),
        ),
        ("output y = map \\(a, b) -> a xs", "a lambda used as an argument must be in parentheses", (1, 16)),
    ];
    check_errors(cases);
}

#[test]
fn input_types_of_version_2() {
    let names = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64"];
    for t in names {
        let src = format!("input a : {t}\ninput b : {t}[n, 3]\n");
        let prog = parse(&src).unwrap_or_else(|e| panic!("{t}: {e}"));
        let want = ElemType::from_name(t).unwrap();
        assert_eq!(
            prog.items[0],
            Item::Input { name: "a".into(), ty: Type::Scalar(want), span: Default::default() }
        );
        assert_eq!(print_program(&prog), src);
    }
    let dims = |src: &str| -> Vec<Dim> {
        let prog = parse(&format!("input x : f32[{src}]")).unwrap_or_else(|e| panic!("{src}: {e}"));
        match &prog.items[0] {
            Item::Input { ty: Type::Array { shape, .. }, .. } => shape.clone(),
            i => panic!("{i:?}"),
        }
    };
    let aff = |name: &str, mul: i64, add: i64| Dim::Affine { name: name.into(), mul, add };
    assert_eq!(dims("m + 1"), vec![aff("m", 1, 1)]);
    assert_eq!(dims("2 * n"), vec![aff("n", 2, 0)]);
    assert_eq!(dims("k - 1, 4"), vec![aff("k", 1, -1), Dim::Known(4)]);
    assert_eq!(dims("3 * n + 2, 2 * n - 1"), vec![aff("n", 3, 2), aff("n", 2, -1)]);
    assert_eq!(
        dims("n + 0, 1 * m, n - 0"),
        vec![Dim::Size("n".into()), Dim::Size("m".into()), Dim::Size("n".into())]
    );
    assert_eq!(dims("n - 9223372036854775808"), vec![aff("n", 1, i64::MIN)]);
    assert_eq!(dims("0x10, 0x2 * n"), vec![Dim::Known(16), aff("n", 2, 0)]);
    let prog = parse("input o : i64[m + 1]\ninput p : f32[2 * n]\ninput w : f64[k - 1, 3 * k + 2]").unwrap();
    assert_eq!(
        print_program(&prog),
        "input o : i64[m + 1]\ninput p : f32[2 * n]\ninput w : f64[k - 1, 3 * k + 2]\n"
    );
    assert_round_trip(&prog);
}

#[test]
fn input_type_errors() {
    let cases: &[(&str, &str, (u32, u32))] = &[
        ("input x : f32[n * 2]", "a size's factor comes first: write `k * n`, not `n * k`", (1, 17)),
        ("input x : f32[0 * n]", "the factor of a size must be 1 or more, found `0`", (1, 15)),
        (
            "input x : f32[n + m]",
            "expected an integer (a dimension is `n + k`, `n - k` or `k * n`), found `m`",
            (1, 19),
        ),
        ("input x : f32[2 * 3]", "expected a size name after `*`", (1, 19)),
        ("input x : f32[n + 9223372036854775808]", "integer literal out of range", (1, 19)),
        ("input x : f32[n - 9223372036854775809]", "integer literal out of range", (1, 19)),
        ("input x : f32[n + ]", "expected an integer", (1, 19)),
        ("input x : f32[n 1]", "expected `,` or `]` after a dimension", (1, 17)),
        (
            "input x : float",
            "unknown element type `float` (expected bool, i8, i16, i32, i64, u8, u16, u32, u64, f32 or f64)",
            (1, 11),
        ),
        ("input x : i128", "unknown element type `i128`", (1, 11)),
    ];
    check_errors(cases);
}

#[test]
fn builtin_names_may_be_bound_anywhere() {
    let src = "input cos : f32\ninput sum : f32[n]\nlet pi = 3\nlet (dot, mean) = (1, 2)\n\
               output max = map (\\exp -> exp + cos) sum\noutput f32 = let map = 1 in map\n\
               output loops = loop iota = sum for argmin < 3 do iota\n";
    let prog = parse(src).unwrap();
    assert_eq!(print_program(&prog), src);
    assert_round_trip(&prog);
}

/// Checks that each program fails with `E-PARSE`, a message containing the text given, at
/// the line and column given.
fn check_errors(cases: &[(&str, &str, (u32, u32))]) {
    for (src, msg, pos) in cases {
        let e = prog_err(src);
        assert_eq!(e.code, Code::Parse, "{src}: {e}");
        assert!(e.message.contains(msg), "{src}: message {:?} lacks {msg:?}", e.message);
        assert_eq!(line_col(&e), Some(*pos), "{src}: {e}");
    }
}

// ----- limits -----

#[test]
fn deep_version_2_forms_are_limit_errors_not_stack_overflows() {
    let n = 100_000;
    let cases: Vec<String> = vec![
        format!("output y = {}x", "loop a = 1 for i < 1 do ".repeat(n)),
        format!("output y = {}x", "loop (a, b) = 1 while c do ".repeat(n)),
        format!("output y = {}x", "let (a, b) = 1 in ".repeat(n)),
        format!("output y = {}x", "\\(a, b) -> ".repeat(n)),
        format!("output y = {}x", "\\(a, b) (c, d) -> ".repeat(n)),
        format!("output y = {}1", "loop a = ".repeat(n)),
        format!("output y = 1{}", " & 1 << 1".repeat(n)),
    ];
    let errors = on_small_stack(move || cases.iter().map(|s| parse(s).err()).collect::<Vec<_>>());
    for e in errors {
        let e = e.expect("deep program parsed");
        assert_eq!(e.code, Code::Limit, "{e}");
        assert!(e.message.contains("nested deeper than 2000 levels"), "{e}");
    }
}

#[test]
fn version_2_forms_just_under_the_limit_parse_on_a_small_stack() {
    let ok = on_small_stack(|| {
        let loops = format!("{}x", "loop a = 1 for i < n do ".repeat(160));
        let whiles = format!("{}x", "loop (a, b) = (1, 2) while c do ".repeat(160));
        let lets = format!("{}x", "let (a, b) = 1 in ".repeat(240));
        let lambdas = format!("{}x", "\\(a, b) -> ".repeat(160));
        let inits = format!("{}1{}", "loop a = (".repeat(240), ") for i < 1 do a".repeat(240));
        [loops, whiles, lets, lambdas, inits]
            .iter()
            .map(|s| parse_expr(s).map(|e| e.depth))
            .collect::<Vec<_>>()
    });
    for r in ok {
        assert!(r.unwrap() <= 500);
    }
}

// ----- properties -----

/// A runner with a seed that is printed (and in every failure message), so a failure can be
/// replayed: the seed is `PROPTEST_RNG_SEED` when set, else taken from the clock.
fn seeded_runner(what: &str, cases: u32) -> (TestRunner, u64) {
    let seed =
        std::env::var("PROPTEST_RNG_SEED").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
    println!("{what}: seed {seed} (replay with PROPTEST_RNG_SEED={seed})");
    let config =
        Config { cases, rng_seed: RngSeed::Fixed(seed), failure_persistence: None, ..Config::default() };
    (TestRunner::new(config), seed)
}

#[test]
fn seeded_round_trip_of_programs_with_every_form() {
    let (mut runner, seed) = seeded_runner("round trip", 512);
    let result = runner.run(&gen_syntax::program(), |prog| {
        let text = print_program(&prog);
        let back = parse(&text);
        prop_assert!(back.is_ok(), "{:?}\n{}", back.err(), text);
        let back = back.unwrap();
        prop_assert_eq!(&back, &prog, "{}", text);
        prop_assert_eq!(print_program(&back), text);
        Ok(())
    });
    if let Err(e) = result {
        panic!("round trip failed with seed {seed} (replay with PROPTEST_RNG_SEED={seed}): {e}");
    }
}

/// A lambda's parameters: plain names and tuple patterns, every name distinct.
fn lambda_params() -> impl Strategy<Value = Vec<Vec<String>>> {
    (prop::sample::subsequence(gen_syntax::NAMES, 1..=9), prop::collection::vec(1usize..=3, 1..=4)).prop_map(
        |(names, sizes)| {
            let mut names = names.into_iter().map(str::to_string);
            let mut out = Vec::new();
            for k in sizes {
                let group: Vec<String> = names.by_ref().take(k).collect();
                // a group of one is a plain parameter; a leftover of one name too
                if !group.is_empty() {
                    out.push(group);
                }
            }
            out
        },
    )
}

#[test]
fn seeded_tuple_parameters_desugar_and_round_trip() {
    let (mut runner, seed) = seeded_runner("tuple parameters", 256);
    let result = runner.run(&(lambda_params(), gen_syntax::expr()), |(params, body)| {
        let written: Vec<String> = params
            .iter()
            .map(|g| if g.len() == 1 { g[0].clone() } else { format!("({})", g.join(", ")) })
            .collect();
        let text = format!("\\{} -> {}", written.join(" "), print_expr(&body));
        let e = parse_expr(&text);
        prop_assert!(e.is_ok(), "{:?}\n{}", e.err(), text);
        let e = e.unwrap();
        let ExprKind::Lambda { params: plain, body: mut inner } = e.kind.clone() else {
            return Err(TestCaseError::fail(format!("not a lambda: {text}")));
        };
        prop_assert_eq!(plain.len(), params.len());
        for (g, p) in params.iter().zip(&plain) {
            if g.len() == 1 {
                prop_assert_eq!(p, &g[0]);
                continue;
            }
            let fresh_is_unused =
                !print_expr(&body).contains(p.as_str()) && !params.iter().flatten().any(|n| n == p);
            prop_assert!(fresh_is_unused, "{} captures a name: {}", p, text);
            let ExprKind::LetTuple { names, value, body: next } = inner.kind else {
                return Err(TestCaseError::fail(format!("no `let` pattern for {g:?}: {text}")));
            };
            prop_assert_eq!(&names, g);
            prop_assert_eq!(value.kind, ExprKind::Var(p.clone()));
            inner = next;
        }
        prop_assert_eq!(&*inner, &body, "{}", text);
        let printed = print_expr(&e);
        let back = parse_expr(&printed);
        prop_assert!(back.as_ref().is_ok_and(|b| b == &e), "{}\n{:?}", printed, back);
        prop_assert_eq!(print_expr(&back.unwrap()), printed);
        Ok(())
    });
    if let Err(e) = result {
        panic!("tuple parameters failed with seed {seed} (replay with PROPTEST_RNG_SEED={seed}): {e}");
    }
}
