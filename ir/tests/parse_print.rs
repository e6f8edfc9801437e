//! Parser and printer: the conformance programs, precedence and associativity, literal
//! folding, error messages and positions, resource limits, and property tests that
//! `parse(print(p)) == p`, that printing is idempotent and that no text makes the parser panic.

#![allow(clippy::unwrap_used)]

#[path = "common/gen_syntax.rs"]
mod gen_syntax;

use std::path::PathBuf;

use eqfuse_ir::ast::{Expr, ExprKind, Item, Limits, Lit, LoopForm, Program, UnOp};
use eqfuse_ir::error::{Code, Error};
use eqfuse_ir::parse::{parse, parse_expr, parse_expr_with, parse_with};
use eqfuse_ir::print::{print_expr, print_program};
use proptest::prelude::*;

// ----- helpers -----

/// A fully parenthesised S-expression of a tree, to state parses exactly.
fn sexp(e: &Expr) -> String {
    let list = |es: &[Expr]| es.iter().map(sexp).collect::<Vec<_>>().join(" ");
    match &e.kind {
        ExprKind::Lit(Lit::Int(v)) => v.to_string(),
        ExprKind::Lit(Lit::Float(f)) => format!("{f:?}"),
        ExprKind::Lit(Lit::Bool(b)) => b.to_string(),
        ExprKind::Lit(Lit::Hex(h)) => format!("{h:#x}"),
        ExprKind::Var(n) => n.clone(),
        ExprKind::Let { name, value, body } => format!("(let {name} {} {})", sexp(value), sexp(body)),
        ExprKind::LetTuple { names, value, body } => {
            format!("(let ({}) {} {})", names.join(" "), sexp(value), sexp(body))
        }
        ExprKind::Loop { pat, tuple, init, form, body } => {
            let pat = if *tuple { format!("({})", pat.join(" ")) } else { pat.join(" ") };
            let form = match form {
                LoopForm::For { var, count } => format!("for {var} {}", sexp(count)),
                LoopForm::While { cond } => format!("while {}", sexp(cond)),
            };
            format!("(loop {pat} {} {form} {})", sexp(init), sexp(body))
        }
        ExprKind::If { cond, then_, else_ } => format!("(if {} {} {})", sexp(cond), sexp(then_), sexp(else_)),
        ExprKind::Lambda { params, body } => format!("(\\{} {})", params.join(" "), sexp(body)),
        ExprKind::Binary { op, lhs, rhs } => format!("({} {} {})", op.symbol(), sexp(lhs), sexp(rhs)),
        ExprKind::Unary { op, operand } => format!("({}u {})", op.symbol(), sexp(operand)),
        ExprKind::Apply { func, args } => format!("(app {} {})", sexp(func), list(args)),
        ExprKind::Index { array, indices } => format!("(idx {} {})", sexp(array), list(indices)),
        ExprKind::Tuple(es) => format!("(tuple {})", list(es)),
        ExprKind::Section(op) => format!("(section {})", op.symbol()),
        ExprKind::Shape(es) => format!("(shape {})", list(es)),
    }
}

fn p(src: &str) -> String {
    match parse_expr(src) {
        Ok(e) => sexp(&e),
        Err(e) => panic!("parsing {src:?} failed: {e}"),
    }
}

fn expr_err(src: &str) -> Error {
    match parse_expr(src) {
        Ok(e) => panic!("parsing {src:?} should fail, got {}", sexp(&e)),
        Err(e) => e,
    }
}

fn prog_err(src: &str) -> Error {
    match parse(src) {
        Ok(p) => panic!("parsing {src:?} should fail, got {p:?}"),
        Err(e) => e,
    }
}

fn line_col(e: &Error) -> Option<(u32, u32)> {
    e.span.map(|s| (s.line, s.col))
}

/// Round-trips a program through the printer, checking equality and idempotence.
fn assert_round_trip(prog: &Program) {
    let text = print_program(prog);
    let back = match parse(&text) {
        Ok(b) => b,
        Err(e) => panic!("printed program does not parse: {e}\n{text}"),
    };
    assert_eq!(&back, prog, "printed:\n{text}");
    assert_eq!(print_program(&back), text);
}

/// The conformance cases: the project's copies in `tests/conformance` (version 1) and
/// `tests/conformance-v2` (version 2).
fn conformance_dir(which: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests").join(which)
}

/// The version 1 conformance programs.
fn conformance_programs() -> Vec<(String, String)> {
    programs_in("conformance")
}

/// The programs of one conformance directory, by case name.
fn programs_in(which: &str) -> Vec<(String, String)> {
    let dir = conformance_dir(which);
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let file = path.join("program.eqf");
        if file.is_file() {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            out.push((name, std::fs::read_to_string(&file).unwrap()));
        }
    }
    out.sort();
    out
}

/// Runs `f` on a thread with the default 2 MiB stack, so deep recursion would overflow.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new().stack_size(2 << 20).spawn(f).unwrap().join().unwrap()
}

// ----- conformance programs -----

#[test]
fn conformance_programs_parse_and_round_trip() {
    let progs = conformance_programs();
    assert!(progs.len() >= 20, "found only {} conformance programs", progs.len());
    for (name, src) in &progs {
        if name == "err_parse" {
            continue;
        }
        let prog = parse(src).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!prog.items.is_empty(), "{name}");
        assert_round_trip(&prog);
    }
}

#[test]
fn conformance_v2_programs_parse_and_round_trip() {
    let progs = programs_in("conformance-v2");
    assert!(progs.len() >= 30, "found only {} version 2 conformance programs", progs.len());
    for (name, src) in &progs {
        let prog = parse(src).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!prog.items.is_empty(), "{name}");
        assert_round_trip(&prog);
    }
}

#[test]
fn err_parse_is_a_parse_error_on_line_2() {
    let src = conformance_programs().into_iter().find(|(n, _)| n == "err_parse").map(|(_, s)| s).unwrap();
    let e = parse(&src).unwrap_err();
    assert_eq!(e.code, Code::Parse);
    assert_eq!(line_col(&e), Some((2, 27)), "{e}");
    assert_eq!(e.message, "expected an expression after `+`, found `)`");
    assert!(e.to_string().starts_with("error[E-PARSE]: "));
    assert!(e.to_string().ends_with("(line 2, column 27)"));
}

#[test]
fn blackscholes_structure() {
    let src = conformance_programs().into_iter().find(|(n, _)| n == "blackscholes").map(|(_, s)| s).unwrap();
    let prog = parse(&src).unwrap();
    let names: Vec<&str> = prog.items.iter().map(Item::name).collect();
    assert_eq!(names, vec!["s", "x", "t", "cnd", "d1", "d2", "call", "put"]);
    let Item::Let { value, .. } = &prog.items[3] else { panic!("cnd is not a let") };
    assert!(matches!(value.kind, ExprKind::Lambda { .. }));
    // `-0.5 * d * d` is `((-0.5) * d) * d`
    assert!(print_expr(value).contains("exp ((-0.5) * d * d)"), "{}", print_expr(value));
}

// ----- precedence and associativity -----

#[test]
fn binary_precedence_and_left_associativity() {
    assert_eq!(p("a || b && c"), "(|| a (&& b c))");
    assert_eq!(p("a && b || c"), "(|| (&& a b) c)");
    assert_eq!(p("a == b && c < d"), "(&& (== a b) (< c d))");
    assert_eq!(p("a + b * c"), "(+ a (* b c))");
    assert_eq!(p("a * b + c"), "(+ (* a b) c)");
    assert_eq!(p("a - b - c"), "(- (- a b) c)");
    assert_eq!(p("a - (b - c)"), "(- a (- b c))");
    assert_eq!(p("a / b % c * d"), "(* (% (/ a b) c) d)");
    assert_eq!(p("a < b < c"), "(< (< a b) c)");
    assert_eq!(p("a == b != c"), "(!= (== a b) c)");
    assert_eq!(p("a + b < c * d"), "(< (+ a b) (* c d))");
    assert_eq!(p("a <= b >= c > d"), "(> (>= (<= a b) c) d)");
}

#[test]
fn unary_application_and_indexing() {
    assert_eq!(p("-f x"), "(-u (app f x))");
    assert_eq!(p("- 2 * 3"), "(* -2 3)");
    assert_eq!(p("-x * y"), "(* (-u x) y)");
    assert_eq!(p("!a && b"), "(&& (!u a) b)");
    assert_eq!(p("- -x"), "(-u (-u x))");
    assert_eq!(p("-!x"), "(-u (!u x))");
    assert_eq!(p("f a b + g c"), "(+ (app f a b) (app g c))");
    assert_eq!(p("f x - 1"), "(- (app f x) 1)");
    assert_eq!(p("f (-1)"), "(app f -1)");
    assert_eq!(p("f a[i] b"), "(app f (idx a i) b)");
    assert_eq!(p("a[i, j][k]"), "(idx (idx a i j) k)");
    assert_eq!(p("(f x)[i]"), "(idx (app f x) i)");
    assert_eq!(p("a[clamp (i - 1) 0 (n - 1)]"), "(idx a (app clamp (- i 1) 0 (- n 1)))");
    assert_eq!(p("-2[0]"), "(-u (idx 2 0))");
    assert_eq!(p("-a[0]"), "(-u (idx a 0))");
}

#[test]
fn shapes_versus_indexing() {
    assert_eq!(p("generate [n, m] f"), "(app generate (shape n m) f)");
    assert_eq!(p("fill [16] 0"), "(app fill (shape 16) 0)");
    assert_eq!(p("f [n]"), "(app f (shape n))");
    assert_eq!(p("f[n]"), "(idx f n)");
    assert_eq!(p("xs -- comment\n[0]"), "(app xs (shape 0))");
    assert_eq!(p("[n][0]"), "(idx (shape n) 0)");
    assert_eq!(p("[n]"), "(shape n)");
}

#[test]
fn atoms_tuples_and_sections() {
    assert_eq!(p("(+)"), "(section +)");
    assert_eq!(p("(-)"), "(section -)");
    assert_eq!(p("( && )"), "(section &&)");
    assert_eq!(p("(<=)"), "(section <=)");
    assert_eq!(p("reduce (+) 0 xs"), "(app reduce (section +) 0 xs)");
    assert_eq!(p("()"), "(tuple )");
    assert_eq!(p("(a, b)"), "(tuple a b)");
    assert_eq!(p("(a,)"), "(tuple a)");
    assert_eq!(p("(i, n - 1 - j, 0)"), "(tuple i (- (- n 1) j) 0)");
    assert_eq!(p("((a))"), "a");
    assert_eq!(p("(-x)"), "(-u x)");
    assert_eq!(p("true && false"), "(&& true false)");
    assert_eq!(p("x' + _y"), "(+ x' _y)");
}

#[test]
fn open_forms_extend_right() {
    assert_eq!(p("1 + if c then 2 else 3 + 4"), "(+ 1 (if c 2 (+ 3 4)))");
    assert_eq!(p("\\x y -> x * y"), "(\\x y (* x y))");
    assert_eq!(p("fn x -> x + 1"), "(\\x (+ x 1))");
    assert_eq!(p("let k = 1 in k + 2"), "(let k 1 (+ k 2))");
    assert_eq!(p("let f = \\x -> x in f 3"), "(let f (\\x x) (app f 3))");
    assert_eq!(p("if a then b else if c then d else e"), "(if a b (if c d e))");
    assert_eq!(p("-if c then 1 else 2"), "(-u (if c 1 2))");
    assert_eq!(p("map (\\x -> x) xs"), "(app map (\\x x) xs)");
    assert_eq!(p("iterate 40 (\\z -> 0.5 * z) x"), "(app iterate 40 (\\z (* 0.5 z)) x)");
}

#[test]
fn top_level_let_ends_at_next_item() {
    let prog = parse("let a = f x\nlet b = let c = a in c\noutput o = a\noutput b").unwrap();
    let text = print_program(&prog);
    assert_eq!(text, "let a = f x\nlet b = let c = a in c\noutput o = a\noutput b\n");
    let prog = parse("input n : i64 output s = n let t = 1").unwrap();
    assert_eq!(prog.items.len(), 3);
}

// ----- literals -----

#[test]
fn negative_literals_fold() {
    let lit = |src: &str| match parse_expr(src).unwrap().kind {
        ExprKind::Lit(l) => l,
        k => panic!("{src}: not a literal: {k:?}"),
    };
    assert_eq!(lit("-5"), Lit::Int(-5));
    assert_eq!(lit("-(2)"), Lit::Int(-2));
    assert_eq!(lit("-9223372036854775808"), Lit::Int(i64::MIN.into()));
    assert_eq!(lit("9223372036854775807"), Lit::Int(i64::MAX.into()));
    assert_eq!(lit("-inf"), Lit::Float(f64::NEG_INFINITY));
    assert_eq!(lit("inf"), Lit::Float(f64::INFINITY));
    match lit("-0.0") {
        Lit::Float(f) => assert!(f == 0.0 && f.is_sign_negative()),
        l => panic!("{l:?}"),
    }
    assert_eq!(lit("1e-3"), Lit::Float(1e-3));
    assert_eq!(lit("2.0e8"), Lit::Float(2.0e8));
    assert_eq!(lit("1E5"), Lit::Float(1e5));
    assert_eq!(lit("-1.5"), Lit::Float(-1.5));
    assert_eq!(lit("007"), Lit::Int(7));
    // a minus before an already negative literal stays a negation
    assert_eq!(p("-(-5)"), "(-u -5)");
    assert_eq!(p("- -9223372036854775808"), "(-u -9223372036854775808)");
}

#[test]
fn literals_out_of_range() {
    // to `u64::MAX` a literal reads (its type decides whether it fits: the checker's
    // `E-TYPE`); beyond, the lexer refuses it
    for ok in ["9223372036854775808", "18446744073709551615", "-9223372036854775809", "-18446744073709551615"]
    {
        let e = parse_expr(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert_eq!(print_expr(&parse_expr(&print_expr(&e)).unwrap()), print_expr(&e), "{ok}");
    }
    let e = expr_err("1 + -(99999999999999999999)");
    assert_eq!(e.code, Code::Parse);
    assert!(e.message.contains("integer literal too large"), "{e}");
    assert_eq!(line_col(&e), Some((1, 7)));
    let e = prog_err("output x =\n  18446744073709551616 + 1");
    assert!(e.message.contains("too large"), "{e}");
    assert_eq!(line_col(&e), Some((2, 3)));
}

#[test]
fn printing_uses_minimal_parentheses() {
    let rt = |src: &str| print_expr(&parse_expr(src).unwrap());
    assert_eq!(rt("(a - b) - c"), "a - b - c");
    assert_eq!(rt("a - (b - c)"), "a - (b - c)");
    assert_eq!(rt("(a * b) + (c * d)"), "a * b + c * d");
    assert_eq!(rt("(a + b) * c"), "(a + b) * c");
    assert_eq!(rt("-5"), "(-5)");
    assert_eq!(rt("-inf"), "(-inf)");
    assert_eq!(rt("-0.0"), "(-0.0)");
    assert_eq!(rt("1"), "1");
    assert_eq!(rt("1.0"), "1.0");
    assert_eq!(rt("1e-7"), "1e-7");
    assert_eq!(rt("0.0000001"), "1e-7");
    assert_eq!(rt("f (g x) (y[i]) (-1)"), "f (g x) y[i] (-1)");
    assert_eq!(rt("1 + if c then 2 else 3"), "1 + (if c then 2 else 3)");
    assert_eq!(rt("- -x"), "- -x");
    assert_eq!(rt("a - -x"), "a - -x");
    assert_eq!(rt("-(-5)"), "-(-5)");
    assert_eq!(rt("(f x)[i, j]"), "(f x)[i, j]");
    assert_eq!(rt("generate [n, m] (\\i j -> (i, j))"), "generate [n, m] (\\i j -> (i, j))");
    assert_eq!(rt("fn x -> x"), "\\x -> x");
    assert_eq!(rt("-(f x)"), "-f x");
    assert_eq!(rt("(-f) x"), "(-f) x");
    assert_eq!(rt("(a,)"), "(a,)");
}

#[test]
fn builder_only_negation_of_a_literal_prints_but_folds() {
    let five = Expr::new(ExprKind::Lit(Lit::Int(5)), Default::default());
    let neg = Expr::new(ExprKind::Unary { op: UnOp::Neg, operand: Box::new(five) }, Default::default());
    assert_eq!(print_expr(&neg), "-(5)");
    assert_eq!(parse_expr("-(5)").unwrap().kind, ExprKind::Lit(Lit::Int(-5)));
}

#[test]
fn display_matches_printer() {
    let prog = parse("input xs : f32[n, 3]\ninput a : bool\noutput y = map (\\x -> x) xs").unwrap();
    assert_eq!(prog.to_string(), "input xs : f32[n, 3]\ninput a : bool\noutput y = map (\\x -> x) xs\n");
    let e = parse_expr("a+b").unwrap();
    assert_eq!(e.to_string(), "a + b");
    assert_eq!(print_program(&Program::default()), "");
}

// ----- errors -----

#[test]
fn error_messages_name_expected_and_found() {
    let cases: &[(&str, &str, (u32, u32))] = &[
        ("output y = (a + b", "unclosed `(`: expected `)` before the end of the program", (1, 12)),
        ("output y = (a + b c]", "expected `,` or `)` after the expression", (1, 20)),
        ("output y = \\x x", "expected `->` after lambda parameters, found the end of the program", (1, 16)),
        ("output y = \\x y + 1", "expected `->` after lambda parameters, found `+`", (1, 17)),
        ("output y = \\ -> 1", "expected a parameter name after `\\`, found `->`", (1, 14)),
        ("output y = \\x in -> x", "`in` is a keyword", (1, 15)),
        ("let in = 3", "`in` is a keyword", (1, 5)),
        ("input then : f32", "`then` is a keyword", (1, 7)),
        ("output y = let a = 1\noutput z = 2", "expected `in` after the value of `let a`", (2, 1)),
        ("output y = if a then b", "expected `else` after the `then` branch of `if`", (1, 23)),
        ("output y = if a b else c", "expected `then` after the condition of `if`, found `else`", (1, 19)),
        ("output y = fill [] 0", "empty shape `[]`", (1, 17)),
        ("output y = a[]", "expected an expression after `[`, found `]`", (1, 14)),
        ("output y = map \\x -> x xs", "a lambda used as an argument must be in parentheses", (1, 16)),
        ("input x f32", "expected `:` after the input name `x`, found `f32`", (1, 9)),
        ("input x : float", "unknown element type `float`", (1, 11)),
        ("input x : f32[n", "unclosed `[`", (1, 14)),
        ("input x : f32[]", "expected a dimension", (1, 15)),
        (
            "output y = 1 )",
            "expected an operator or a new item (`input`, `let`, `output`) after the value of `y`, found `)`",
            (1, 14),
        ),
        ("y = 1", "expected an item (`input`, `let` or `output`), found `y`", (1, 1)),
        ("output y = a $ b", "unexpected character `$`", (1, 14)),
        ("\n\n  output y = a\n    # b", "unexpected character `#`", (4, 5)),
        ("output y = 1.x", "unexpected character `.`", (1, 13)),
        ("output y = (a, b", "unclosed `(`", (1, 12)),
        ("output y = [a b)", "expected `,` or `]` after a dimension", (1, 16)),
        ("output = 1", "expected an output name after `output`, found `=`", (1, 8)),
        ("output y = ", "expected an expression after `=`, found the end of the program", (1, 12)),
        ("output y = é", "unexpected character `é`", (1, 12)),
    ];
    for (src, msg, pos) in cases {
        let e = prog_err(src);
        assert_eq!(e.code, Code::Parse, "{src}: {e}");
        assert!(e.message.contains(msg), "{src}: message {:?} lacks {msg:?}", e.message);
        assert_eq!(line_col(&e), Some(*pos), "{src}: {e}");
    }
}

#[test]
fn expression_errors() {
    let e = expr_err("a b )");
    assert_eq!(e.message, "expected an operator or the end of the expression, found `)`");
    let e = expr_err("");
    assert_eq!(e.message, "expected an expression, found the end of the program");
    let e = expr_err("1 +\n  * 2");
    assert_eq!(line_col(&e), Some((2, 3)));
}

// ----- limits -----

#[test]
fn program_size_limit() {
    let limits = Limits { max_program_bytes: 10, ..Limits::default() };
    let e = parse_with("output y = 12345", &limits).unwrap_err();
    assert_eq!(e.code, Code::Limit);
    assert!(parse_with("output y=1", &limits).is_ok());
}

#[test]
fn deep_nesting_is_a_limit_error_not_a_stack_overflow() {
    let n = 200_000;
    let cases: Vec<String> = vec![
        format!("output y = {}1{}", "(".repeat(n), ")".repeat(n)),
        format!("output y = {}1", "- ".repeat(n)),
        format!("output y = {}x", "!".repeat(n)),
        format!("output y = 1{}", "+1".repeat(n)),
        format!("output y = a{}", "[0]".repeat(n)),
        format!("output y = {}x", "let a = 1 in ".repeat(n)),
        format!("output y = {}x", "\\a -> ".repeat(n)),
        format!("output y = {}x{}", "f (".repeat(n), ")".repeat(n)),
        format!("output y = {}0", "if c then 1 else ".repeat(n)),
        format!("output y = {}1{}", "a - (".repeat(n), ")".repeat(n)),
        format!("output y = {}1{}", "[".repeat(n), "]".repeat(n)),
        format!("output y = 1{}", " * 1 + 1".repeat(n)),
    ];
    let errors = on_small_stack(move || cases.iter().map(|s| parse(s).err()).collect::<Vec<_>>());
    for e in errors {
        let e = e.expect("deep program parsed");
        assert_eq!(e.code, Code::Limit, "{e}");
        assert!(e.message.contains("nested deeper than 2000 levels"), "{e}");
        assert!(e.span.is_some());
    }
}

#[test]
fn nesting_just_under_the_limit_parses_on_a_small_stack() {
    // the parser runs a long text on a stack of its own, sized for the limit
    let ok = on_small_stack(|| {
        let parens = format!("{}1{}", "(".repeat(1990), ")".repeat(1990));
        let minus = format!("{}x", "- ".repeat(1990));
        let sub = format!("{}1{}", "a - (".repeat(990), ")".repeat(990));
        let lets = format!("{}x", "let a = 1 in ".repeat(1990));
        let chain = format!("1{}", "+1".repeat(1990));
        [parens, minus, sub, lets, chain].iter().map(|s| parse_expr(s).map(|e| e.depth)).collect::<Vec<_>>()
    });
    for r in ok {
        let depth = r.unwrap();
        assert!(depth <= 2000);
    }
}

#[test]
fn depth_limit_is_configurable() {
    let limits = Limits { max_depth: 10, ..Limits::default() };
    assert!(parse_expr_with("1+1+1+1+1+1+1+1+1", &limits).is_ok());
    let e = parse_expr_with("1+1+1+1+1+1+1+1+1+1+1", &limits).unwrap_err();
    assert_eq!(e.code, Code::Limit);
    assert_eq!(e.message, "expression nested deeper than 10 levels");
    assert!(parse_expr_with("((((((((((((1))))))))))))", &limits).is_err());
}

// ----- version 2 (in parse_print/v2.rs) -----

#[path = "parse_print/v2.rs"]
mod v2;

// ----- properties -----

proptest! {
    #[test]
    fn printed_programs_parse_back_equal(prog in gen_syntax::program()) {
        let text = print_program(&prog);
        let back = parse(&text);
        prop_assert!(back.is_ok(), "{:?}\n{}", back.err(), text);
        let back = back.unwrap();
        prop_assert_eq!(&back, &prog, "{}", text);
        prop_assert_eq!(print_program(&back), text);
    }

    #[test]
    fn printed_expressions_parse_back_equal(e in gen_syntax::expr()) {
        let text = print_expr(&e);
        prop_assert!(!text.contains('\n'));
        let back = parse_expr(&text);
        prop_assert!(back.is_ok(), "{:?}\n{}", back.err(), text);
        let back = back.unwrap();
        prop_assert_eq!(&back, &e, "{}", text);
        prop_assert_eq!(print_expr(&back), text);
    }

    #[test]
    fn token_soup_never_panics(toks in prop::collection::vec(prop::sample::select(SOUP.to_vec()), 0..60)) {
        let src = toks.join(" ");
        check_no_panic(&src)?;
        let tight: String = toks.concat();
        check_no_panic(&tight)?;
    }

    #[test]
    fn arbitrary_text_never_panics(src in ".{0,200}") {
        check_no_panic(&src)?;
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        check_no_panic(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn mutated_conformance_programs_never_panic(
        which in 0usize..128,
        edits in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(SOUP.to_vec()), any::<bool>()), 1..4),
    ) {
        let mut progs = conformance_programs();
        progs.extend(programs_in("conformance-v2"));
        let (_, src) = &progs[which % progs.len()];
        let mut chars: Vec<char> = src.chars().collect();
        for (at, tok, delete) in edits {
            let i = at.index(chars.len() + 1);
            if delete && i < chars.len() {
                chars.remove(i);
            } else {
                for (k, c) in tok.chars().enumerate() {
                    chars.insert(i + k, c);
                }
            }
        }
        let text: String = chars.into_iter().collect();
        check_no_panic(&text)?;
    }
}

/// Tokens (and near-tokens) for the soup tests.
const SOUP: &[&str] = &[
    "input",
    "output",
    "let",
    "in",
    "if",
    "then",
    "else",
    "fn",
    "true",
    "false",
    "inf",
    "x",
    "xs",
    "f32",
    "i64",
    "map",
    "0",
    "1",
    "42",
    "1.5",
    "1e-3",
    "9223372036854775808",
    "99999999999999999999",
    "+",
    "-",
    "*",
    "/",
    "%",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "&&",
    "||",
    "!",
    "=",
    "\\",
    "->",
    "(",
    ")",
    "[",
    "]",
    ",",
    ":",
    "--",
    "\n",
    "&",
    "|",
    "^",
    "<<",
    ">>",
    "loop",
    "for",
    "while",
    "do",
    "0xFF",
    "0x",
    "0x1.5",
    "0xffffffffffffffffff",
    "(a, b)",
    "u8",
    ".",
    "é",
    "\t",
    "'",
    "_",
];

fn check_no_panic(src: &str) -> Result<(), TestCaseError> {
    for limits in [Limits::default(), Limits { max_depth: 8, max_program_bytes: 64, ..Limits::default() }] {
        if let Err(e) = parse_with(src, &limits) {
            prop_assert!(matches!(e.code, Code::Parse | Code::Limit), "{}", e);
            if let Some(s) = e.span {
                prop_assert!(s.start <= s.end && s.end <= src.len() && s.line >= 1 && s.col >= 1, "{:?}", s);
            }
        }
        if let Ok(prog) = parse_with(src, &limits) {
            // Whatever parses also round-trips through the printer.
            let text = print_program(&prog);
            let back = parse(&text);
            prop_assert!(back.as_ref().is_ok_and(|b| b == &prog), "{}\n{:?}", text, back);
        }
        if let Err(e) = parse_expr_with(src, &limits) {
            prop_assert!(matches!(e.code, Code::Parse | Code::Limit), "{}", e);
        }
    }
    Ok(())
}
