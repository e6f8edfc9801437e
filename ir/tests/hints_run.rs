//! Every hint is right: for each failing program of the table, the hint's fragment is
//! written in place of the expression it replaces, and the program then checks, runs on
//! the reference interpreter on random inputs (a fresh seed, printed), and gives what the
//! NumPy expression it replaces gives (computed here with ndarray). Every hint kind the
//! checker has appears in the table.

use eqfuse_ir::check::hints::{fragment, kind_of, HintKind};
use eqfuse_ir::value::{compare, Tolerance};
use eqfuse_ir::Value;
use indexmap::IndexMap;
use ndarray::{ArrayD, IxDyn};

/// Sizes every case uses.
const N: usize = 7;
const R: usize = 3;
const C: usize = 4;

type Inputs = IndexMap<String, Value>;

/// A failing program, the text its hint replaces (its last occurrence), and the expected
/// output `o`.
struct Case {
    kind: HintKind,
    program: &'static str,
    target: &'static str,
    want: fn(&Inputs) -> Value,
}

fn f64s(v: &Inputs, k: &str) -> ArrayD<f64> {
    match &v[k] {
        Value::F64(a) => a.clone(),
        other => panic!("{k}: {other:?}"),
    }
}

fn f32s(v: &Inputs, k: &str) -> ArrayD<f32> {
    match &v[k] {
        Value::F32(a) => a.clone(),
        other => panic!("{k}: {other:?}"),
    }
}

fn bools(v: &Inputs, k: &str) -> ArrayD<bool> {
    match &v[k] {
        Value::Bool(a) => a.clone(),
        other => panic!("{k}: {other:?}"),
    }
}

fn scalar_f64(v: &Inputs, k: &str) -> f64 {
    f64s(v, k).iter().next().copied().unwrap_or(f64::NAN)
}

fn d0<T>(x: T) -> ArrayD<T> {
    ndarray::arr0(x).into_dyn()
}

/// A SplitMix64 stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Random inputs for the program's declared inputs: floats in [-2, 2), bools, `i64` in 0..5.
fn inputs(src: &str, rng: &mut Rng) -> Inputs {
    let mut out = Inputs::new();
    for line in src.lines() {
        let Some(rest) = line.strip_prefix("input ") else { continue };
        let (name, ty) = rest.split_once(':').expect("input line");
        let ty = ty.trim();
        let (elem, dims) = match ty.split_once('[') {
            Some((e, d)) => (e, d.trim_end_matches(']')),
            None => (ty, ""),
        };
        let shape: Vec<usize> = dims
            .split(',')
            .filter(|d| !d.trim().is_empty())
            .map(|d| match d.trim() {
                "n" => N,
                "r" => R,
                "c" => C,
                other => other.parse().expect("size"),
            })
            .collect();
        let shape = IxDyn(&shape);
        let v = match elem {
            "f64" => Value::from(ArrayD::from_shape_fn(shape, |_| rng.unit() * 4.0 - 2.0)),
            "f32" => Value::from(ArrayD::from_shape_fn(shape, |_| (rng.unit() * 4.0 - 2.0) as f32)),
            "bool" => Value::from(ArrayD::from_shape_fn(shape, |_| rng.next().is_multiple_of(2))),
            "i64" => Value::from(ArrayD::from_shape_fn(shape, |_| (rng.next() % 5) as i64)),
            other => panic!("element type {other}"),
        };
        out.insert(name.trim().to_string(), v);
    }
    out
}

fn cases() -> Vec<Case> {
    use HintKind::*;
    vec![
        Case {
            kind: NumpyName,
            program: "input c : bool[n]\ninput a : f64[n]\ninput b : f64[n]\noutput o = where c a b",
            target: "where c a b",
            want: |v| {
                let (c, a, b) = (bools(v, "c"), f64s(v, "a"), f64s(v, "b"));
                Value::from(ArrayD::from_shape_fn(c.raw_dim(), |i| if c[&i] { a[&i] } else { b[&i] }))
            },
        },
        Case {
            kind: NumpyName,
            program: "input c : bool[n]\ninput a : f64[n]\noutput o = where c a 0.0",
            target: "where c a 0.0",
            want: |v| {
                let (c, a) = (bools(v, "c"), f64s(v, "a"));
                Value::from(ArrayD::from_shape_fn(c.raw_dim(), |i| if c[&i] { a[&i] } else { 0.0 }))
            },
        },
        Case {
            kind: NumpyName,
            program: "input a : f64[r, c]\ninput b : f64[r, c]\noutput o = maximum a b",
            target: "maximum a b",
            want: |v| {
                Value::from(
                    ndarray::Zip::from(&f64s(v, "a")).and(&f64s(v, "b")).map_collect(|x, y| x.max(*y)),
                )
            },
        },
        Case {
            kind: NumpyName,
            program: "input a : f64[n]\noutput o = minimum a 0.5",
            target: "minimum a 0.5",
            want: |v| Value::from(f64s(v, "a").mapv(|x| x.min(0.5))),
        },
        Case {
            kind: NumpyName,
            program: "input m : f64[r, c]\noutput o = amax m",
            target: "amax m",
            want: |v| Value::from(d0(f64s(v, "m").iter().copied().fold(f64::NEG_INFINITY, f64::max))),
        },
        Case {
            kind: NumpyName,
            program: "input a : f64[n]\noutput o = cumsum a",
            target: "cumsum a",
            want: |v| {
                let mut acc = 0.0;
                Value::from(f64s(v, "a").mapv(|x| {
                    acc += x;
                    acc
                }))
            },
        },
        Case {
            kind: NumpyName,
            program: "input a : f64[n]\noutput o = square a",
            target: "square a",
            want: |v| Value::from(f64s(v, "a").mapv(|x| x * x)),
        },
        Case {
            kind: NumpyName,
            program: "input a : f64[n]\noutput o = power a 2.0",
            target: "power a 2.0",
            want: |v| Value::from(f64s(v, "a").mapv(|x| x.powf(2.0))),
        },
        Case {
            kind: NumpyName,
            program: "input a : f32[n]\noutput o = float64 a",
            target: "float64 a",
            want: |v| Value::from(f32s(v, "a").mapv(f64::from)),
        },
        Case {
            kind: NumpyName,
            program: "input a : f64[n]\noutput o = product a",
            target: "product a",
            want: |v| Value::from(d0(f64s(v, "a").iter().product::<f64>())),
        },
        Case {
            kind: NumpyName,
            program: "output o = zeros 5",
            target: "zeros 5",
            want: |_| Value::from(ArrayD::<f64>::zeros(IxDyn(&[5]))),
        },
        Case {
            kind: NumpyName,
            program: "input a : f64[n]\noutput o = clip a (-1.0) 1.0",
            target: "clip a (-1.0) 1.0",
            want: |v| Value::from(f64s(v, "a").mapv(|x| x.clamp(-1.0, 1.0))),
        },
        Case {
            kind: DidYouMean,
            program:
                "input xs : f64[n]\nlet yss = map (\\x -> x + 1.0) xs\noutput o = map (\\x -> x * 2.0) ys",
            target: "ys",
            want: |v| Value::from(f64s(v, "xs").mapv(|x| (x + 1.0) * 2.0)),
        },
        Case {
            kind: DidYouMean,
            program: "input xs : f64[n]\noutput o = mapp (\\x -> x * 2.0) xs",
            target: "mapp",
            want: |v| Value::from(f64s(v, "xs").mapv(|x| x * 2.0)),
        },
        Case {
            kind: ArrayOperands,
            program: "input a : f64[r, c]\ninput b : f64[r, c]\noutput o = a * b",
            target: "a * b",
            want: |v| Value::from(&f64s(v, "a") * &f64s(v, "b")),
        },
        Case {
            kind: ArrayOperands,
            program: "input a : f64[n]\ninput t : f64\noutput o = a - t",
            target: "a - t",
            want: |v| Value::from(f64s(v, "a").mapv(|x| x - scalar_f64(v, "t"))),
        },
        Case {
            kind: Broadcast,
            program: "input m : f64[r, c]\ninput mu : f64[c]\noutput o = m - mu",
            target: "m - mu",
            want: |v| Value::from(&f64s(v, "m") - &f64s(v, "mu")),
        },
        Case {
            kind: Broadcast,
            program: "input m : f64[r, c]\ninput mu : f64[c]\noutput o = map (\\a b -> a / b) mu m",
            target: "map (\\a b -> a / b) mu m",
            want: |v| {
                let (m, mu) = (f64s(v, "m"), f64s(v, "mu"));
                Value::from(ArrayD::from_shape_fn(m.raw_dim(), |i| mu[[i[1]]] / m[&i]))
            },
        },
        Case {
            kind: ArrayOperand,
            program: "input a : f64[n]\noutput o = -a",
            target: "-a",
            want: |v| Value::from(f64s(v, "a").mapv(|x| -x)),
        },
        Case {
            kind: IntAndFloat,
            program: "input s : f64\ninput k : i64\noutput o = s * k",
            target: "s * k",
            want: |v| {
                let k = match &v["k"] {
                    Value::I64(a) => a.iter().next().copied().unwrap_or(0),
                    _ => 0,
                };
                Value::from(d0(scalar_f64(v, "s") * k as f64))
            },
        },
        Case {
            kind: NegativeArgument,
            program: "input a : f64[n]\noutput o = reduce max -inf a",
            target: "reduce max -inf a",
            want: |v| Value::from(d0(f64s(v, "a").iter().copied().fold(f64::NEG_INFINITY, f64::max))),
        },
        Case {
            kind: BroadcastInLambda,
            program: "input m : f64[r, c]\ninput mu : f64[c]\noutput o = map (\\x -> x - mu) m",
            target: "map (\\x -> x - mu) m",
            want: |v| Value::from(&f64s(v, "m") - &f64s(v, "mu")),
        },
        Case {
            kind: BroadcastInLambda,
            program: "input m : f64[r, c]\ninput s : f64[c]\noutput o = map (\\x -> sqrt (x * x + s)) m",
            target: "map (\\x -> sqrt (x * x + s)) m",
            want: |v| {
                let (m, s) = (f64s(v, "m"), f64s(v, "s"));
                Value::from(ArrayD::from_shape_fn(m.raw_dim(), |i| (m[&i] * m[&i] + s[[i[1]]]).sqrt()))
            },
        },
        Case {
            kind: ScalarFnOnArray,
            program: "input a : f64[n]\noutput o = sqrt a",
            target: "sqrt a",
            want: |v| Value::from(f64s(v, "a").mapv(f64::sqrt)),
        },
        Case {
            kind: ScalarFnOnArray,
            program: "input a : f64[n]\noutput o = max a 0.0",
            target: "max a 0.0",
            want: |v| Value::from(f64s(v, "a").mapv(|x| x.max(0.0))),
        },
        Case {
            kind: WholeReduction,
            program: "input m : f64[r, c]\noutput o = max m",
            target: "max m",
            want: |v| Value::from(d0(f64s(v, "m").iter().copied().fold(f64::NEG_INFINITY, f64::max))),
        },
        Case {
            kind: WholeReduction,
            program: "input a : f64[n]\noutput o = min a",
            target: "min a",
            want: |v| Value::from(d0(f64s(v, "a").iter().copied().fold(f64::INFINITY, f64::min))),
        },
        Case {
            kind: CountTrue,
            program: "input xs : f64[n]\ninput t : f64\noutput o = sum (xs > t)",
            target: "sum (xs > t)",
            want: |v| {
                let t = scalar_f64(v, "t");
                Value::from(d0(f64s(v, "xs").iter().filter(|x| **x > t).count() as i64))
            },
        },
        Case {
            kind: CountTrue,
            program: "input xs : f64[n]\ninput ys : f64[n]\noutput o = mean (xs < ys)",
            target: "mean (xs < ys)",
            want: |v| {
                let (x, y) = (f64s(v, "xs"), f64s(v, "ys"));
                let k = x.iter().zip(y.iter()).filter(|(a, b)| a < b).count();
                Value::from(d0(k as f64 / N as f64))
            },
        },
        Case {
            kind: NumpySlice,
            program: "input xs : f64[n]\noutput o = xs[0:5]",
            target: "xs[0:5]",
            want: |v| Value::from(f64s(v, "xs").slice(ndarray::s![0..5]).to_owned().into_dyn()),
        },
        Case {
            kind: NumpySlice,
            program: "input xs : f64[n]\noutput o = xs[2:n]",
            target: "xs[2:n]",
            want: |v| Value::from(f64s(v, "xs").slice(ndarray::s![2..N]).to_owned().into_dyn()),
        },
        Case {
            kind: NumpySlice,
            program: "input xs : f64[n]\noutput o = xs[3:]",
            target: "xs[3:]",
            want: |v| Value::from(f64s(v, "xs").slice(ndarray::s![3..]).to_owned().into_dyn()),
        },
    ]
}

/// The error's notes, from parsing then checking `src`.
fn notes(src: &str) -> Vec<String> {
    let program = match eqfuse_ir::parse::parse(src) {
        Ok(p) => p,
        Err(e) => return e.notes,
    };
    match eqfuse_ir::check::check(&program) {
        Ok(_) => panic!("the program checks:\n{src}"),
        Err(e) => e.notes,
    }
}

#[test]
fn every_hint_substituted_checks_runs_and_matches_numpy() {
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    println!("hints_run seed {seed}");
    let mut rng = Rng(seed);
    let tol = Tolerance { rtol: 1e-9, atol: 1e-12, mismatch_fraction: 0.0 };
    let mut failures = Vec::new();
    for case in cases() {
        let notes = notes(case.program);
        let Some(note) = notes.iter().find(|n| kind_of(n) == Some(case.kind)) else {
            failures.push(format!("{:?}: no such hint for\n{}\nnotes: {notes:?}", case.kind, case.program));
            continue;
        };
        let frag = fragment(note).unwrap_or_else(|| panic!("no fragment in {note}"));
        // the last occurrence: the target is in the last item (`ys` after `let yss`)
        let at = case.program.rfind(case.target).unwrap_or_else(|| panic!("{}", case.target));
        let fixed = format!("{}{frag}{}", &case.program[..at], &case.program[at + case.target.len()..]);
        let mut run = || -> Result<Value, String> {
            let p = eqfuse_ir::parse::parse(&fixed).map_err(|e| format!("{e} {:?}", e.notes))?;
            let checked = eqfuse_ir::check::check(&p).map_err(|e| format!("{e} {:?}", e.notes))?;
            let ins = inputs(case.program, &mut rng);
            let out = eqfuse_ir::interp::interpret(&checked, &ins).map_err(|e| e.to_string())?;
            let got = out.get("o").cloned().ok_or("no output o")?;
            compare(&got, &(case.want)(&ins), &tol).map(|_| got)
        };
        if let Err(e) = run() {
            failures.push(format!("{:?}: `{}` -> `{frag}`:\n{fixed}\n{e}", case.kind, case.target));
        }
    }
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n\n"));
}

#[test]
fn every_hint_kind_is_in_the_table() {
    let covered: std::collections::HashSet<HintKind> = cases().iter().map(|c| c.kind).collect();
    let missing: Vec<HintKind> = HintKind::ALL.iter().copied().filter(|k| !covered.contains(k)).collect();
    assert!(missing.is_empty(), "hint kinds no case runs: {missing:?}");
}
