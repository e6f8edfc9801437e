//! Permutes on the CPU backend (docs/cpu-backend.md, "Permutes"): a permute whose
//! destination is a constant `fill` makes it itself (no kernel of its own), and the native
//! skeleton writes one shared result from every thread where the operator allows it (an
//! operator that keeps one side, a known commutative one into a large destination) — each
//! path against the reference interpreter, on 1 to 3 threads and blocks small enough that
//! every thread has work.
#![allow(clippy::unwrap_used)]

use eqfuse::{Arrays, Backend, Code, OptimizeOptions, Value};
use eqfuse_exec_cpu::RunOptions;
use eqfuse_ir::plan::{KernelKind, LaneOp, PermuteDest};
use ndarray::{ArrayD, IxDyn};

/// Stream compaction with flags, an exclusive scan and a permute (issue 21).
const COMPACT: &str = "input x : f32[n]
let flags = map (\\v -> if v > 0.0 then 1 else 0) x
let pos = scan_exclusive (+) 0 flags
let total = reduce (+) 0 flags
output y = permute (\\a b -> b) (fill [total] 0.0) (\\i -> if flags[i] == 1 then pos[i] else -1) x
";

fn plan(src: &str) -> eqfuse_ir::plan::Plan {
    let prog = eqfuse::parse(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    eqfuse::optimize(&prog, &OptimizeOptions::default()).unwrap_or_else(|e| panic!("{e}\n{src}")).result.plan
}

#[test]
fn compaction_is_three_kernels_its_fill_made_by_the_permute() {
    let p = plan(COMPACT);
    let kernels = p.kernels();
    // before: the fill was a generate kernel of its own, between the scan and the permute
    assert!(kernels.len() <= 3, "{} kernels:\n{p}", kernels.len());
    assert!(kernels.iter().all(|k| k.kind != KernelKind::Generate), "{p}");
    let dest = kernels.iter().find_map(|k| match &k.lanes[0].op {
        LaneOp::Permute { dest, .. } => Some(dest.clone()),
        _ => None,
    });
    assert!(matches!(dest, Some(PermuteDest::Fill { .. })), "{dest:?}\n{p}");
    // every kernel runs as native code
    let report = eqfuse_exec_cpu::compile_plan(&p, &RunOptions::default());
    assert!(report.vm.is_empty(), "kernels on the VM: {:?}\n{p}", report.vm);
}

#[test]
fn a_fill_read_elsewhere_stays_a_kernel() {
    // `z` is an output too: the permute copies it, as before
    let src =
        "input ks : i64[n]\nlet z = fill [4] 0\noutput h = permute (+) z (\\i -> ks[i]) ks\noutput zz = z\n";
    let p = plan(src);
    assert!(p.kernels().iter().any(|k| k.kind == KernelKind::Generate), "{p}");
    let mut ins = Arrays::new();
    ins.insert("ks".into(), Value::I64(ArrayD::from_shape_vec(IxDyn(&[3]), vec![1, 3, 1]).unwrap()));
    let want = eqfuse::run(&eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap(), Backend::Reference, &ins);
    let got = eqfuse::run(&eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap(), Backend::Cpu, &ins);
    assert_eq!(want.unwrap(), got.unwrap());
}

/// The settings every program runs under: 1 to 3 threads, blocks of 1, 7 and 4096
/// elements.
fn settings() -> Vec<RunOptions> {
    let mut v = Vec::new();
    for threads in 1..=3 {
        for block_size in [1, 7, 4096] {
            v.push(RunOptions { threads, block_size, ..RunOptions::default() });
        }
    }
    v
}

/// How an executor's output must relate to the reference's.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Agree {
    /// Bit for bit.
    Exact,
    /// Each entry is the reference's (keeps the destination's entry) or one of the
    /// elements whose target it is: an operator that keeps one side, whose winner among
    /// elements with one target is unspecified on several threads.
    OneOf,
}

/// Runs `src` on the reference and the CPU backend under every setting; the reference's
/// result, or its error (which the CPU backend must give too, with the same code).
fn agree(src: &str, ins: &Arrays, how: Agree) -> Result<Arrays, eqfuse::Error> {
    let checked = eqfuse::check(&eqfuse::parse(src).unwrap_or_else(|e| panic!("{e}\n{src}"))).unwrap();
    let want = eqfuse::run(&checked, Backend::Reference, ins);
    for o in settings() {
        let got = eqfuse::backend::run_with(&checked, Backend::Cpu, ins, &OptimizeOptions::default(), &o);
        let at = format!("{} threads, block {}\n{src}", o.threads, o.block_size);
        match (&want, &got) {
            (Ok(w), Ok(g)) => {
                for (name, a) in w {
                    let b = &g[name];
                    match how {
                        Agree::Exact => assert!(same(a, b), "`{name}`: reference {a:?}, cpu {b:?}\n{at}"),
                        Agree::OneOf => one_of(src, ins, name, a, b, &at),
                    }
                }
            }
            // the same code; the messages may name arrays differently (the reference
            // interpreter says "the array" for an unnamed one)
            (Err(a), Err(b)) => assert_eq!(a.code, b.code, "reference: {a}\ncpu: {b}\n{at}"),
            _ => panic!("reference {want:?}\ncpu {got:?}\n{at}"),
        }
    }
    want
}

/// Bit for bit (NaNs by bits too: the programs here make none).
fn same(a: &Value, b: &Value) -> bool {
    a.shape() == b.shape()
        && a.to_scalars().iter().zip(b.to_scalars()).all(|(x, y)| format!("{x:?}") == format!("{y:?}"))
}

/// [`Agree::OneOf`] for the programs of [`keep_one_side_operators_write_one_shared_result`]:
/// output `name` is `permute op d (\i -> t[i]) xs` with inputs `t`, `xs` and the destination
/// `d` (its first entries are the reference's where no element lands).
fn one_of(src: &str, ins: &Arrays, name: &str, want: &Value, got: &Value, at: &str) {
    assert_eq!(want.shape(), got.shape(), "`{name}`\n{at}");
    let t = ins["t"].to_scalars();
    let xs = ins["xs"].to_scalars();
    let (w, g) = (want.to_scalars(), got.to_scalars());
    let keeps_old = src.contains("\\a b -> a)");
    for (slot, (w, g)) in w.iter().zip(&g).enumerate() {
        let landed: Vec<String> = t
            .iter()
            .zip(&xs)
            .filter(|(t, _)| t.as_f64() as i64 == slot as i64)
            .map(|(_, x)| format!("{x:?}"))
            .collect();
        let g = format!("{g:?}");
        if landed.is_empty() || keeps_old {
            assert_eq!(format!("{w:?}"), g, "`{name}`[{slot}]\n{at}");
        } else {
            assert!(landed.contains(&g), "`{name}`[{slot}]: {g} is none of {landed:?}\n{at}");
        }
    }
}

/// `n` values of `ty` from `f(i)` (an integer, converted).
fn column(ty: &str, n: usize, f: impl Fn(usize) -> i64) -> Value {
    let sh = IxDyn(&[n]);
    let v: Vec<i64> = (0..n).map(f).collect();
    match ty {
        "bool" => Value::Bool(ArrayD::from_shape_vec(sh, v.iter().map(|&x| x % 2 == 1).collect()).unwrap()),
        "i32" => Value::I32(ArrayD::from_shape_vec(sh, v.iter().map(|&x| x as i32).collect()).unwrap()),
        "i64" => Value::I64(ArrayD::from_shape_vec(sh, v).unwrap()),
        // quarters: every sum of these is exact, whatever the order of the additions
        "f32" => Value::F32(ArrayD::from_shape_vec(sh, v.iter().map(|&x| x as f32 / 4.0).collect()).unwrap()),
        _ => Value::F64(ArrayD::from_shape_vec(sh, v.iter().map(|&x| x as f64 / 4.0).collect()).unwrap()),
    }
}

/// A constant of `ty` as the language writes it.
fn konst(ty: &str, v: i64) -> String {
    match ty {
        "bool" => (v % 2 == 1).to_string(),
        "f32" | "f64" => format!("{}.0", v),
        _ => v.to_string(),
    }
}

/// `n` targets from `f(i)`.
fn targets(n: usize, f: impl Fn(usize) -> i64) -> Value {
    Value::I64(ArrayD::from_shape_vec(IxDyn(&[n]), (0..n).map(f).collect()).unwrap())
}

/// The destinations: a fill (tiny and large), an input array.
fn dests(ty: &str, dlen: usize) -> Vec<String> {
    vec![format!("(fill [{dlen}] {})", konst(ty, 3)), "d".to_string()]
}

fn inputs_for(ty: &str, n: usize, dlen: usize, t: Value) -> Arrays {
    let mut ins = Arrays::new();
    ins.insert("t".into(), t);
    ins.insert("xs".into(), column(ty, n, |i| (i % 13) as i64 + 1));
    ins.insert("d".into(), column(ty, dlen, |i| -(i as i64 % 5)));
    ins
}

const TYPES: [&str; 5] = ["bool", "i32", "i64", "f32", "f64"];

#[test]
fn keep_one_side_operators_write_one_shared_result() {
    // tiny and large destinations, targets with duplicates and -1 drops; and a permutation
    // (no duplicates), which every thread count computes exactly
    for ty in TYPES {
        for (n, dlen) in [(40, 4), (5000, 16), (3000, 4000)] {
            for d in dests(ty, dlen) {
                for op in ["(\\a b -> b)", "(\\a b -> a)"] {
                    let src = format!(
                        "input t : i64[n]\ninput xs : {ty}[n]\ninput d : {ty}[m]\n\
                         output y = permute {op} {d} (\\i -> t[i]) xs\n"
                    );
                    let dup = targets(n, |i| if i % 7 == 3 { -1 } else { ((i * 5) % dlen) as i64 });
                    agree(&src, &inputs_for(ty, n, dlen, dup), Agree::OneOf).unwrap();
                    let perm =
                        targets(n, |i| if i < dlen && i % 3 != 1 { (dlen - 1 - i) as i64 } else { -1 });
                    agree(&src, &inputs_for(ty, n, dlen, perm), Agree::Exact).unwrap();
                }
            }
        }
    }
}

#[test]
fn commutative_operators_agree_on_tiny_and_large_destinations() {
    for ty in TYPES {
        let ops: &[&str] =
            if ty == "bool" { &["(&&)", "(||)", "(\\a b -> a && b)"] } else { &["(+)", "(*)", "min", "max"] };
        for (n, dlen) in [(40, 4), (5000, 16), (3000, 4000), (3000, 3000)] {
            for d in dests(ty, dlen) {
                for op in ops {
                    let src = format!(
                        "input t : i64[n]\ninput xs : {ty}[n]\ninput d : {ty}[m]\n\
                         output y = permute {op} {d} (\\i -> t[i]) xs\n"
                    );
                    let t = targets(n, |i| if i % 7 == 3 { -1 } else { ((i * 5) % dlen) as i64 });
                    let ins = inputs_for(ty, n, dlen, t);
                    let ins = if *op == "(*)" && ty.starts_with('f') {
                        // factors 1 and a few 2s: every float product is a small power of
                        // two, exact in any order (integer products wrap, exact too)
                        let mut ins = ins;
                        ins.insert("xs".into(), column(ty, n, |i| if i % 97 == 5 { 8 } else { 4 }));
                        ins
                    } else {
                        ins
                    };
                    agree(&src, &ins, Agree::Exact).unwrap();
                }
            }
        }
    }
}

#[test]
fn out_of_bounds_targets_are_errors_on_every_path() {
    // the first element out of bounds (not -1) is reported, as the reference reports it
    for op in ["(\\a b -> b)", "(\\a b -> a)", "(+)", "max", "(\\a b -> a - b + b)"] {
        for (n, dlen) in [(40, 4), (5000, 4000)] {
            let src = format!(
                "input t : i64[n]\ninput xs : i64[n]\ninput d : i64[m]\n\
                 output y = permute {op} (fill [{dlen}] 0) (\\i -> t[i]) xs\n"
            );
            for bad in [dlen as i64, -2] {
                let t = targets(n, |i| {
                    if i == n / 2 {
                        bad
                    } else if i == n - 3 {
                        dlen as i64 + 7
                    } else {
                        (i % dlen) as i64
                    }
                });
                let err = agree(&src, &inputs_for("i64", n, dlen, t), Agree::Exact).unwrap_err();
                assert_eq!(err.code, Code::Index, "{err}");
                assert!(err.message.contains(&format!("[{}]", n / 2)), "{}", err.message);
            }
        }
    }
}

#[test]
fn a_fill_destination_of_two_dimensions_and_its_shape_errors() {
    let src = "input m : i64[r, c]\ninput k : i64\n\
               output g = permute (+) (fill [3, k] 0) (\\i j -> (m[i, j] % 3, (i + j) % 5)) m\n";
    let m = Value::I64(ArrayD::from_shape_fn(IxDyn(&[40, 70]), |ix| (ix[0] * 70 + ix[1]) as i64));
    let mut ins = Arrays::new();
    ins.insert("m".into(), m);
    ins.insert("k".into(), Value::I64(ArrayD::from_elem(IxDyn(&[]), 5)));
    let out = agree(src, &ins, Agree::Exact).unwrap();
    assert_eq!(out["g"].shape(), &[3, 5]);
    // a negative extent: the fill's E-SHAPE, as when it was a kernel of its own
    ins.insert("k".into(), Value::I64(ArrayD::from_elem(IxDyn(&[]), -2)));
    let err = agree(src, &ins, Agree::Exact).unwrap_err();
    assert_eq!(err.code, Code::Shape, "{err}");
    let checked = eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap();
    let cpu = eqfuse::run(&checked, Backend::Cpu, &ins).unwrap_err();
    assert_eq!(cpu.message, err.message, "the fill's error, as the reference words it");
}

#[test]
fn compaction_agrees_with_the_reference() {
    for n in [0usize, 1, 37, 5000] {
        let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 23) as f32 - 11.5).collect();
        let mut ins = Arrays::new();
        ins.insert("x".into(), Value::F32(ArrayD::from_shape_vec(IxDyn(&[n]), x.clone()).unwrap()));
        let out = agree(COMPACT, &ins, Agree::Exact).unwrap();
        let want: Vec<f32> = x.into_iter().filter(|&v| v > 0.0).collect();
        assert_eq!(out["y"], Value::F32(ArrayD::from_shape_vec(IxDyn(&[want.len()]), want).unwrap()));
    }
}

#[test]
fn plans_of_one_source_keep_their_own_fills() {
    // a fill's value is made by the host and is not in the generated C: programs whose
    // fills differ only in it compile to one source and share one loaded module in memory,
    // yet each runs with its own fill. The module once kept the first plan's: CI saw
    // `keep_one_side_operators_write_one_shared_result` get 0s, the fill of another test's
    // program run at the same time.
    let mut ins = Arrays::new();
    ins.insert("t".into(), targets(6, |i| [0, 2, -1, 1, 3, 0][i]));
    ins.insert("xs".into(), column("i64", 6, |i| i as i64 + 10));
    let no_disk = RunOptions { cache_dir: None, ..RunOptions::default() };
    for op in ["(\\a b -> a)", "(\\a b -> b)", "(+)"] {
        for (k, dest) in
            ["(fill [4] 3)", "(fill [4] 0)", "(fill [4] 5)", "(fill [4000] 5)", "(fill [4000] 7)"]
                .iter()
                .enumerate()
        {
            let src = format!(
                "input t : i64[n]\ninput xs : i64[n]\noutput y = permute {op} {dest} (\\i -> t[i]) xs\n"
            );
            if k == 1 || k == 2 || k == 4 {
                // the same source as the program before: its module comes from memory
                let report = eqfuse_exec_cpu::compile_plan(&plan(&src), &no_disk);
                assert!(report.cached && report.vm.is_empty(), "{report:?}\n{src}");
            }
            let how = if op == "(\\a b -> b)" { Agree::OneOf } else { Agree::Exact };
            agree(&src, &ins, how).unwrap();
        }
    }
}
