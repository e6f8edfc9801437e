//! How errors look to a user: one snapshot of the rendered diagnostic (code, message,
//! file:line:column, the underlined snippet) for each kind of mistake in program text, and
//! for run-time errors on small inputs. Review changes with `cargo insta review`.

use eqfuse::{Arrays, Backend, Value};
use ndarray::{arr1, ArrayD, IxDyn};

/// Parse and check `src`; render the error, or the warnings and `ok`, the way the command
/// line does.
fn diagnose(src: &str) -> String {
    match eqfuse::parse(src).and_then(|p| eqfuse::check(&p)) {
        Ok(checked) => {
            let mut s: String =
                checked.warnings.iter().map(|w| w.render("program.eqf", src, false)).collect();
            s.push_str("ok\n");
            s
        }
        Err(e) => e.render("program.eqf", src, false),
    }
}

/// The snapshot text of `cases`: each case's name, then its diagnosis.
fn diagnose_all(cases: &[(&str, &str)]) -> String {
    let mut all = String::new();
    for (name, src) in cases {
        all.push_str(&format!("### {name}\n{}\n", diagnose(src)));
    }
    all
}

#[test]
fn static_errors_render_with_code_position_and_snippet() {
    let cases: &[(&str, &str)] = &[
        ("missing operand", "input xs : f32[n]\noutput y = map (\\x -> x + ) xs\n"),
        ("unclosed paren", "input xs : f32[n]\noutput y = map (\\x -> (x + 1) xs\n"),
        ("bad character", "input xs : f32[n]\noutput y = map (\\x -> x $ 1) xs\n"),
        ("keyword as name", "input in : f32[n]\n"),
        ("bool operator on floats", "input xs : f32[n]\noutput y = map (\\x -> x && true) xs\n"),
        ("unbound name", "input xs : f32[n]\noutput y = map (\\x -> x + z) xs\n"),
        ("duplicate name", "input xs : f32[n]\nlet xs = map (\\x -> x) xs\n"),
        ("builtin redefined", "input xs : f32[n]\nlet map = xs\n"),
        ("wrong arity", "input xs : f32[n]\noutput y = map (\\x y -> x + y) xs\n"),
        (
            "mixed element types",
            "input xs : f32[n]\ninput ys : f64[n]\noutput y = map (\\a b -> a + b) xs ys\n",
        ),
        ("float literal as integer", "input xs : i64[n]\noutput y = map (\\x -> x + 1.5) xs\n"),
        ("array op inside a lambda", "input xs : f32[n]\noutput y = map (\\x -> reduce (+) 0 xs) xs\n"),
        (
            "known shapes disagree",
            "input xs : f32[3]\ninput ys : f32[4]\noutput z = map (\\a b -> a + b) xs ys\n",
        ),
        ("function as output", "let f = \\x -> x + 1\noutput f\n"),
    ];
    let mut all = String::new();
    for (name, src) in cases {
        all.push_str(&format!("### {name}\n{}\n", diagnose(src)));
    }
    insta::assert_snapshot!(all);
}

fn run_err(src: &str, inputs: Arrays) -> String {
    let checked = eqfuse::check(&eqfuse::parse(src).expect("parses")).expect("checks");
    match eqfuse::run(&checked, Backend::Reference, &inputs) {
        Ok(out) => format!("unexpectedly ok: {out:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn run_time_errors_name_the_array_index_and_bounds() {
    let f32s = |v: &[f32]| Value::from(arr1(v).into_dyn());
    let i64s = |v: &[i64]| Value::from(arr1(v).into_dyn());
    let mut lines = Vec::new();
    let mut inputs = Arrays::new();
    inputs.insert("xs".into(), f32s(&[1.0, 2.0, 3.0]));
    inputs.insert("idx".into(), i64s(&[0, 5]));
    lines.push(run_err("input xs : f32[n]\ninput idx : i64[k]\noutput g = gather xs idx\n", inputs));
    let mut inputs = Arrays::new();
    inputs.insert("a".into(), i64s(&[1, 2]));
    inputs.insert("b".into(), i64s(&[1, 0]));
    lines.push(run_err("input a : i64[n]\ninput b : i64[n]\noutput q = map (\\x y -> x / y) a b\n", inputs));
    let mut inputs = Arrays::new();
    inputs.insert("xs".into(), f32s(&[1.0, 2.0, 3.0]));
    inputs.insert("ys".into(), f32s(&[1.0]));
    lines.push(run_err(
        "input xs : f32[n]\ninput ys : f32[m]\noutput z = map (\\a b -> a + b) xs ys\n",
        inputs,
    ));
    let mut inputs = Arrays::new();
    inputs.insert("xs".into(), f32s(&[1.0, 2.0, 3.0]));
    inputs.insert("ys".into(), f32s(&[1.0]));
    lines.push(run_err(
        "input xs : f32[n]\ninput ys : f32[n]\noutput z = map (\\a b -> a + b) xs ys\n",
        inputs,
    ));
    let mut inputs = Arrays::new();
    inputs.insert("xs".into(), Value::from(ArrayD::<i64>::zeros(IxDyn(&[2]))));
    lines.push(run_err("input xs : f32[n]\noutput y = map (\\x -> x * 2) xs\n", inputs));
    lines.push(run_err("output y = fill [1000000000000, 1000000000000] 0.0\n", Arrays::new()));
    insta::assert_snapshot!(lines.join("\n"));
}

/// Issue 26: each habit of a NumPy user gets the error and the `.eqf` way to write it.
#[test]
fn numpy_habits_get_the_eqf_way_to_write_them() {
    insta::assert_snapshot!(diagnose_all(&[
        ("elementwise product of arrays", "input xs : f32[n]\ninput ys : f32[n]\noutput z = xs * ys\n"),
        ("array plus scalar", "input xs : f32[n]\noutput y = xs + 1\n"),
        ("scalar times array", "input xs : f32[n]\noutput y = 2 * xs\n"),
        ("negated array", "input xs : f32[n]\noutput y = -xs\n"),
        ("power operator", "input x : f32\noutput y = x ** 2\n"),
        ("sum", "input xs : f32[n]\noutput s = sum xs\n"),
        ("mean of an expression", "input xs : f32[n]\noutput s = mean (map (\\x -> x * x) xs)\n"),
        ("len", "input xs : f32[n]\noutput s = len xs\n"),
        ("unapplied numpy name", "input xs : f32[n]\noutput s = map cumsum xs\n"),
        ("negative argument", "input xs : f32[n]\noutput s = reduce max -inf xs\n"),
        ("f32 divided by a size", "input xs : f32[n]\noutput mean = reduce (+) 0 xs / n\n"),
        ("i64 times f64", "input k : i64\ninput x : f64\noutput y = k * x\n"),
        ("broadcast a row", "input m : f32[r, c]\ninput v : f32[c]\noutput y = map (\\a b -> a + b) m v\n"),
        (
            "broadcast, smaller first",
            "input m : f32[r, c]\ninput v : f32[c]\nlet add = \\a b -> a + b\noutput y = map add v m\n"
        ),
    ]));
}

/// Issue 26: a built-in operator's constant neutral element must be its identity where a
/// wrong one makes results differ between backends; the identities are accepted.
#[test]
fn neutral_elements_of_builtin_operators() {
    insta::assert_snapshot!(diagnose_all(&[
        ("(+) with 1", "input xs : i64[n]\noutput s = reduce (+) 1 xs\n"),
        ("(+) with -2.5 on rows", "input m : f64[r, c]\noutput s = reduce (+) (-2.5) m\n"),
        ("(*) with 2 in a scan", "input xs : f32[n]\noutput s = scan (*) 2 xs\n"),
        (
            "(+) with a let constant",
            "input xs : f32[n]\nlet start = 10\noutput s = scan_exclusive (+) start xs\n"
        ),
        ("max with inf", "input xs : f32[n]\noutput s = reduce max inf xs\n"),
        ("min with i64 min", "input xs : i64[n]\noutput s = reduce min (-9223372036854775808) xs\n"),
        ("(&&) with false", "input bs : bool[n]\noutput s = reduce (&&) false bs\n"),
        ("(||) with true", "input bs : bool[n]\noutput s = scan (||) true bs\n"),
        (
            "identities are accepted",
            "input xs : f32[n]\ninput is : i64[n]\ninput bs : bool[n]\n\
             output a = reduce max (-inf) xs\noutput b = reduce min inf xs\noutput c = reduce (+) 0 xs\n\
             output d = reduce (+) 0.0 xs\noutput e = reduce (+) (-0.0) xs\noutput f = reduce (*) 1 xs\n\
             output g = scan (&&) true bs\noutput h = scan_exclusive (||) false bs\n\
             output i = reduce max (-9223372036854775808) is\noutput j = reduce min 9223372036854775807 is\n\
             output k = reduce (*) 1.0 xs\noutput l = scan (+) 0 is\n",
        ),
        (
            "a bound for an idempotent operator is accepted",
            "input a : i64[n]\noutput runmax = scan max (-1000000) a\noutput lo = reduce max 0 a\n",
        ),
        (
            "a neutral element that is not a constant is not judged",
            "input xs : f32[n]\ninput z : f32\noutput s = reduce (+) z xs\n"
        ),
    ]));
}

/// Issue 26: a lambda operator is sampled; a warning (not an error) when it is not
/// associative, when `ne` is not neutral, or when `permute`'s is not commutative.
#[test]
fn lambda_operators_are_sampled() {
    insta::assert_snapshot!(diagnose_all(&[
        ("subtraction", "input xs : i64[n]\noutput s = reduce (\\a b -> a - b) 0 xs\n"),
        ("average of two", "input xs : f64[n]\noutput s = scan (\\a b -> (a + b) / 2.0) 0.0 xs\n"),
        ("plus with ne 1", "input xs : f32[n]\noutput s = reduce (\\a b -> a + b) 1 xs\n"),
        ("named function with a wrong ne", "input xs : i32[n]\nlet mul = \\a b -> a * b\noutput s = reduce mul 0 xs\n"),
        ("bool operator", "input bs : bool[n]\noutput s = reduce (\\a b -> a || !b) false bs\n"),
        (
            "permute with subtraction",
            "input xs : i64[n]\noutput h = permute (\\a b -> a - b) (fill [4] 0) (\\i -> xs[i] % 4) xs\n",
        ),
        (
            "associative operators with their neutral elements",
            "input xs : f32[n]\ninput is : i64[n]\nlet add = \\a b -> a + b\n\
             output a = reduce add 0 xs\noutput b = scan (\\a b -> max a b) (-inf) xs\n\
             output c = reduce (\\a b -> a * b) 1 is\noutput d = scan_exclusive (\\a b -> min a b) 9223372036854775807 is\n\
             output e = permute (\\a b -> a + b) (fill [4] 0) (\\i -> is[i] % 4) is\n",
        ),
        ("an operator that reads an input is not sampled", "input xs : i64[n]\ninput k : i64\noutput s = reduce (\\a b -> a - b + k) 0 xs\n"),
        ("a sample that divides by zero proves nothing", "input xs : i64[n]\noutput s = reduce (\\a b -> a / b) 1 xs\n"),
    ]));
}

/// Issue 26: `check` warns when a `map` or a `generate` joins arrays whose sizes cannot be
/// proven equal; one size name, or a known size that fits, gives no warning.
#[test]
fn sizes_that_may_differ_are_warned_about() {
    insta::assert_snapshot!(diagnose_all(&[
        ("map over n and m", "input xs : f32[n]\ninput ys : f32[m]\noutput z = map (\\a b -> a + b) xs ys\n"),
        ("map over n and 3", "input xs : f32[n]\ninput ys : f32[3]\noutput z = map (\\a b -> a + b) xs ys\n"),
        (
            "generate over n reads m",
            "input xs : f32[n]\ninput ys : f32[m]\noutput g = generate [n] (\\i -> xs[i] + ys[i])\n"
        ),
        (
            "one size name, and a known size that fits",
            "input xs : f32[n]\ninput ys : f32[n]\ninput t : f32[8]\n\
             output z = map (\\a b -> a * b) xs ys\noutput g = generate [4] (\\i -> t[i])\n\
             output h = generate [n - 1] (\\i -> xs[i + 1] - xs[i])\n",
        ),
    ]));
}

/// Issue 26: `eqfuse run` with no inputs says how to give them; warnings follow the output.
#[test]
fn run_without_inputs_says_how_to_give_them() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_eqfuse"))
        .current_dir(root)
        .args(["run", "examples/dotp.eqf"])
        .output()
        .expect("start eqfuse");
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stderr));
}
