//! Issue 26: a run-time error says where in the program it happened, on every backend,
//! optimised or not — the plan interpreter, the CPU executor's VM and its native C kernels
//! (which rerun a failing kernel on the VM) — as the reference interpreter says it; and a
//! run-time `E-SHAPE` names both shapes with their size names, in the same words
//! everywhere. The snapshot holds the reference's error for each program; every backend
//! must point at the same line and column.

use eqfuse::{Arrays, Backend, Value};
use eqfuse_exec_cpu::{Codegen, RunOptions};
use ndarray::arr1;

fn f32s(v: &[f32]) -> Value {
    Value::from(arr1(v).into_dyn())
}

fn i64s(v: &[i64]) -> Value {
    Value::from(arr1(v).into_dyn())
}

fn inputs(list: &[(&str, Value)]) -> Arrays {
    list.iter().map(|(n, v)| (n.to_string(), v.clone())).collect()
}

/// The programs, each with inputs on which it fails at run time.
fn cases() -> Vec<(&'static str, &'static str, Arrays)> {
    let ten = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]);
    vec![
        (
            "a read past the end",
            "input xs : f32[n]\noutput d = generate [n] (\\i -> xs[i + 1] - xs[i])\n",
            inputs(&[("xs", ten.clone())]),
        ),
        (
            "a read past the end of a fused producer",
            "input xs : f32[n]\nlet sq = map (\\x -> x * x) xs\n\
             let d = generate [n] (\\i -> sq[i + 1] - sq[i])\noutput s = reduce (+) 0 d\n",
            inputs(&[("xs", ten.clone())]),
        ),
        (
            "integer division by zero",
            "input a : i64[n]\ninput b : i64[n]\noutput q = map (\\x y -> x / y) a b\n",
            inputs(&[("a", i64s(&[1, 2])), ("b", i64s(&[1, 0]))]),
        ),
        (
            "map over arrays of different sizes",
            "input xs : f32[n]\ninput ys : f32[m]\noutput s = map (\\x y -> x + y) xs ys\n",
            inputs(&[("xs", ten.clone()), ("ys", f32s(&[1.0; 12]))]),
        ),
        (
            "map over a filtered array",
            "input xs : f32[n]\ninput ys : f32[m]\nlet a = map (\\x -> x * 2) xs\n\
             let b = filter (\\y -> y > 5) ys\noutput s = map (\\x y -> x + y) a b\n",
            inputs(&[("xs", f32s(&[1.0, 2.0, 3.0])), ("ys", ten.clone())]),
        ),
        (
            "reshape to another element count",
            "input xs : f32[n]\noutput g = reshape [2, 5] xs\n",
            inputs(&[("xs", f32s(&[1.0; 12]))]),
        ),
        (
            "slice out of range",
            "input xs : f32[n]\ninput s : i64\noutput g = slice xs s 5\n",
            inputs(&[("xs", f32s(&[1.0; 4])), ("s", Value::from(ndarray::arr0(1i64).into_dyn()))]),
        ),
        (
            "gather out of bounds",
            "input xs : f32[n]\ninput idx : i64[k]\noutput g = gather xs idx\n",
            inputs(&[("xs", f32s(&[1.0, 2.0, 3.0])), ("idx", i64s(&[0, 5]))]),
        ),
        (
            "a negative size",
            "input xs : f32[n]\noutput g = generate [n - 20] (\\i -> xs[i])\n",
            inputs(&[("xs", ten.clone())]),
        ),
        (
            "size of an axis out of range",
            "input xs : f32[n]\ninput k : i64\noutput g = map (\\x -> x + f32 (size xs k)) xs\n",
            inputs(&[("xs", ten), ("k", Value::from(ndarray::arr0(3i64).into_dyn()))]),
        ),
    ]
}

fn vm() -> RunOptions {
    RunOptions { codegen: Codegen::Vm, ..RunOptions::default() }
}

#[test]
fn run_time_errors_point_into_the_program_on_every_backend() {
    let mut lines = Vec::new();
    for (name, src, ins) in cases() {
        let checked = eqfuse::check(&eqfuse::parse(src).expect("parses")).expect("checks");
        let reference = eqfuse::run(&checked, Backend::Reference, &ins).expect_err(name);
        let span = reference.span.unwrap_or_else(|| panic!("{name}: the reference gives no position"));
        let opt = eqfuse::optimize_checked(checked.clone(), &Default::default()).expect("optimises");
        let plans = [("optimised", &opt.result.plan), ("unfused", &opt.result.unfused_plan)];
        for (which, plan) in plans {
            let runs = [
                ("plan interpreter", Backend::Reference, RunOptions::default()),
                ("CPU VM", Backend::Cpu, vm()),
                ("CPU native C", Backend::Cpu, RunOptions::default()),
            ];
            for (how, backend, opts) in runs {
                let e = eqfuse::backend::run_plan_with(plan, &checked, backend, &ins, &opts)
                    .expect_err(&format!("{name}: {which} on {how}"));
                assert_eq!(e.code, reference.code, "{name}: {which} on {how}: {e}");
                let at = e.span.map(|s| (s.line, s.col));
                assert_eq!(at, Some((span.line, span.col)), "{name}: {which} on {how}: {e}");
                if e.code == eqfuse::Code::Shape {
                    assert_eq!(e.message, reference.message, "{name}: {which} on {how}");
                }
            }
        }
        lines.push(format!("{name}:\n  {reference}"));
    }
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn the_command_line_prints_the_position_on_every_backend() {
    let dir = std::env::temp_dir().join(format!("eqfuse-run-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let program = dir.join("d.eqf");
    std::fs::write(&program, "input xs : f32[n]\noutput d = generate [n] (\\i -> xs[i + 1] - xs[i])\n")
        .expect("write program");
    let want = "error[E-INDEX]: index 10 out of bounds for `xs` of length 10, in `generate` at element [9] \
                (line 2, column 32)";
    for extra in [
        &["--backend", "reference"][..],
        &["--backend", "cpu", "--cpu-codegen", "vm"],
        &["--backend", "cpu", "--cpu-codegen", "c"],
        &["--backend", "cpu", "--cpu-codegen", "vm", "--no-opt"],
        &["--backend", "cpu", "--cpu-codegen", "c", "--no-opt"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_eqfuse"))
            .arg("run")
            .arg(&program)
            .args(["--random-inputs", "1", "--size", "n=10"])
            .args(extra)
            .output()
            .expect("start eqfuse");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(err.lines().any(|l| l == want), "{extra:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
