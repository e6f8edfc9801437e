//! How errors look to a user: one snapshot of the rendered diagnostic (code, message,
//! file:line:column, the underlined snippet) for each kind of mistake in program text, and
//! for run-time errors on small inputs. Review changes with `cargo insta review`.

use eqfuse::{Arrays, Backend, Value};
use ndarray::{arr1, ArrayD, IxDyn};

/// Parse and check `src`; render the error the way the command line does.
fn diagnose(src: &str) -> String {
    match eqfuse::parse(src).and_then(|p| eqfuse::check(&p)) {
        Ok(_) => "ok\n".to_string(),
        Err(e) => e.render("program.eqf", src, false),
    }
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
