//! The builder API against the parser, the printer, the checker and the interpreter.
//!
//! Every non-error conformance program is written again with the builder. Each one must be
//! the parsed conformance program up to the names of lambda parameters (alpha-equivalence),
//! must survive print → parse unchanged, and must run (check + interpret) on the case's
//! inputs to the case's expected outputs. Several are also compared node for node with a
//! hand-written text that uses the builder's parameter names (`x0`, `x1`, `y0`, ...).

use eqfuse_ir::builder::{
    backpermute, concat, fill, filter, gather, generate, if_, inf, iota, iterate, let_in, lit, map1, map2,
    map3, map5, permute, reduce, reduce_rows, reverse, scan, scan_exclusive, slice, transpose, Arr, Builder,
    Op, Sc,
};
use eqfuse_ir::check::check;
use eqfuse_ir::interp::interpret;
use eqfuse_ir::parse::parse;
use eqfuse_ir::print::print_program;
use eqfuse_ir::value::{compare, Tolerance};
use eqfuse_ir::{Code, Dim, ElemType, Expr, ExprKind, Item, Limits, Program, Value};
use indexmap::IndexMap;
use ndarray::{arr1, arr2};
use std::path::PathBuf;

use ElemType::{F32, F64, I64};

// ---------------------------------------------------------------------------------------
// The conformance programs, built with the builder
// ---------------------------------------------------------------------------------------

fn dotp() -> Builder {
    let mut b = Builder::new();
    let xs = b.input_array("xs", F32, &["n"]);
    let ys = b.input_array("ys", F32, &["n"]);
    b.output("dot", &reduce(Op::Add, 0, &map2(|x, y| x * y, &xs, &ys)));
    b
}

fn saxpy() -> Builder {
    let mut b = Builder::new();
    let alpha = b.input_scalar("alpha", F32);
    let xs = b.input_array("xs", F32, &["n"]);
    let ys = b.input_array("ys", F32, &["n"]);
    b.output("zs", &map2(|x, y| &alpha * x + y, &xs, &ys));
    b
}

fn map_chain() -> Builder {
    let mut b = Builder::new();
    let xs = b.input_array("xs", F32, &["n"]);
    let a = b.let_arr("a", &map1(|x| x + 1, &xs));
    let bb = b.let_arr("b", &map1(|x| x * 2, &a));
    let c = b.let_arr("c", &map1(|x| x - 3, &bb));
    b.output("d", &map1(|x| x.abs().sqrt(), &c));
    b
}

fn matvec() -> Builder {
    let mut b = Builder::new();
    let m = b.input_array("m", F32, &["r", "c"]);
    let v = b.input_array("v", F32, &["c"]);
    let prods = generate([b.size("r"), b.size("c")], |ix| m.at(ix) * v.at1(&ix[1]));
    b.output("y", &reduce_rows(Op::Add, 0, &prods));
    b
}

fn blackscholes() -> Builder {
    let mut b = Builder::new();
    let s = b.input_array("s", F32, &["n"]);
    let x = b.input_array("x", F32, &["n"]);
    let t = b.input_array("t", F32, &["n"]);
    let cnd = b.let_fn1("cnd", |d| {
        let_in("k", 1.0 / (1.0 + 0.2316419 * d.abs()), |k| {
            let poly = &k
                * (0.31938153
                    + &k * (-lit(0.356563782)
                        + &k * (1.781477937 + &k * (-lit(1.821255978) + &k * 1.330274429))));
            let_in("w", 0.3989422804014327 * (-lit(0.5) * &d * &d).exp() * poly, |w| {
                if_(d.gt(0), 1.0 - &w, w)
            })
        })
    });
    let d1 = b.let_arr(
        "d1",
        &map3(|s, x, t| ((s / x).log() + (0.02 + lit(0.5) * 0.3 * 0.3) * &t) / (0.3 * t.sqrt()), &s, &x, &t),
    );
    let d2 = b.let_arr("d2", &map2(|d, t| d - 0.3 * t.sqrt(), &d1, &t));
    let call = map5(
        |s, x, t, a, bb| s * cnd.call(a) - x * (-lit(0.02) * t).exp() * cnd.call(bb),
        &s,
        &x,
        &t,
        &d1,
        &d2,
    );
    b.output("call", &call);
    let put = map5(
        |s, x, t, a, bb| x * (-lit(0.02) * t).exp() * (1.0 - cnd.call(bb)) - s * (1.0 - cnd.call(a)),
        &s,
        &x,
        &t,
        &d1,
        &d2,
    );
    b.output("put", &put);
    b
}

fn histogram() -> Builder {
    let mut b = Builder::new();
    let bins = b.input_array("bins", I64, &["k"]);
    let h = permute(Op::Add, &fill([16], 0), |ix| bins.at1(&ix[0]), &fill([b.size("k")], 1));
    b.output("h", &h);
    b
}

fn scans() -> Builder {
    let mut b = Builder::new();
    let a = b.input_array("a", I64, &["n"]);
    b.output("inc", &scan(Op::Add, 0, &a));
    b.output("exc", &scan_exclusive(Op::Add, 0, &a));
    b.output("runmax", &scan(Op::Max, -lit(1000000), &a));
    b
}

fn softmax_rows() -> Builder {
    let mut b = Builder::new();
    let m = b.input_array("m", F32, &["r", "c"]);
    let (r, c) = (b.size("r"), b.size("c"));
    let mx = b.let_arr("mx", &reduce_rows(Op::Max, -inf(), &m));
    let e = b.let_arr("e", &generate([&r, &c], |ix| (m.at(ix) - mx.at1(&ix[0])).exp()));
    let s = b.let_arr("s", &reduce_rows(Op::Add, 0, &e));
    b.output("sm", &generate([&r, &c], |ix| e.at(ix) / s.at1(&ix[0])));
    b
}

fn variance() -> Builder {
    let mut b = Builder::new();
    let xs = b.input_array("xs", F64, &["n"]);
    let len = b.let_sc("len", &xs.length().to_f64());
    let mean = b.let_sc("mean", &(reduce(Op::Add, 0, &xs) / &len));
    b.output("m", &mean);
    b.output("var", &(reduce(Op::Add, 0, &map1(|x| (&x - &mean) * (&x - &mean), &xs)) / &len));
    b
}

fn nbody() -> Builder {
    let mut b = Builder::new();
    let px = b.input_array("px", F32, &["n"]);
    let py = b.input_array("py", F32, &["n"]);
    let pz = b.input_array("pz", F32, &["n"]);
    let mass = b.input_array("mass", F32, &["n"]);
    let n = b.size("n");
    let cols_x = b.let_arr("cols_x", &generate([&n, &n], |ix| px.at1(&ix[1])));
    let rows_x = b.let_arr("rows_x", &generate([&n, &n], |ix| px.at1(&ix[0])));
    let dx = b.let_arr("dx", &map2(|a, c| a - c, &cols_x, &rows_x));
    let dy = b.let_arr("dy", &generate([&n, &n], |ix| py.at1(&ix[1]) - py.at1(&ix[0])));
    let dz = b.let_arr("dz", &generate([&n, &n], |ix| pz.at1(&ix[1]) - pz.at1(&ix[0])));
    let inv = map3(
        |a, bb, c| let_in("d2", &a * &a + &bb * &bb + &c * &c + 0.01, |d2| 1.0 / (&d2 * d2.sqrt())),
        &dx,
        &dy,
        &dz,
    );
    let inv = b.let_arr("inv", &inv);
    let w = b.let_arr("w", &generate([&n, &n], |ix| mass.at1(&ix[1]) * inv.at(ix)));
    for (name, d) in [("ax", &dx), ("ay", &dy), ("az", &dz)] {
        b.output(name, &reduce_rows(Op::Add, 0, &map2(|a, c| a * c, &w, d)));
    }
    b
}

fn filter_reduce() -> Builder {
    let mut b = Builder::new();
    let xs = b.input_array("xs", F32, &["n"]);
    let pos = b.let_arr("pos", &filter(|x| x.gt(0), &xs));
    b.output("total", &reduce(Op::Add, 0, &pos));
    b.output("count", &reduce(Op::Add, 0, &map1(|_| 1, &pos)));
    b.output("kept", &pos);
    b
}

fn gathers() -> Builder {
    let mut b = Builder::new();
    let xs = b.input_array("xs", F32, &["n"]);
    let idx = b.input_array("idx", I64, &["k"]);
    let n = b.size("n");
    b.output("g", &gather(&xs, &idx));
    b.output("rev", &backpermute([&n], |ix| &n - 1 - &ix[0], &xs));
    b.output("rev2", &reverse(&xs));
    b.output("mid", &slice(&xs, 10, 20));
    b.output("both", &concat(&slice(&xs, 0, 5), &reverse(&slice(&xs, 0, 5))));
    b
}

fn iterate_builtin() -> Builder {
    let mut b = Builder::new();
    let x0 = b.input_array("x0", F64, &["n"]);
    b.output("y", &map1(|x| iterate(40, |z| 0.5 * &z + 0.25 * z.sin(), x), &x0));
    b
}

fn mandelbrot() -> Builder {
    let mut b = Builder::new();
    let cr = b.input_array("cr", F64, &["h", "w"]);
    let ci = b.input_array("ci", F64, &["h", "w"]);
    let mut zr = b.let_arr("zr0", &cr);
    let mut zi = b.let_arr("zi0", &ci);
    let mut n = b.let_arr("n0", &fill([b.size("h"), b.size("w")], 0));
    for k in 0..24 {
        let esc = b.let_arr(&format!("esc{k}"), &map2(|a, c| (&a * &a + &c * &c).gt(4.0), &zr, &zi));
        let zr_next = eqfuse_ir::builder::map4(
            |e, a, bb, c| if_(e, a.clone(), &a * &a - &bb * &bb + c),
            &esc,
            &zr,
            &zi,
            &cr,
        );
        let zi_next = eqfuse_ir::builder::map4(
            |e, a, bb, c| if_(e, bb.clone(), 2.0 * a * &bb + c),
            &esc,
            &zr,
            &zi,
            &ci,
        );
        let n_next = map2(|e, m| if_(e, m.clone(), m + 1), &esc, &n);
        zr = b.let_arr(&format!("zr{}", k + 1), &zr_next);
        zi = b.let_arr(&format!("zi{}", k + 1), &zi_next);
        n = b.let_arr(&format!("n{}", k + 1), &n_next);
    }
    b.output("count", &n);
    b
}

fn stencil_twice() -> Builder {
    let mut b = Builder::new();
    let a = b.input_array("a", F32, &["n"]);
    let n = b.size("n");
    let blur = |src: &Arr| {
        generate([&n], |ix| {
            let i = &ix[0];
            (src.at1((i - 1).clamp(0, &n - 1)) + src.at1(i) + src.at1((i + 1).clamp(0, &n - 1))) / 3
        })
    };
    let bb = b.let_arr("b", &blur(&a));
    b.output("c", &blur(&bb));
    b
}

fn column_sums() -> Builder {
    let mut b = Builder::new();
    let m = b.input_array("m", F32, &["r", "c"]);
    b.output("rows", &reduce_rows(Op::Add, 0, &m));
    b.output("cols", &reduce_rows(Op::Add, 0, &transpose(&m)));
    b
}

fn shared_producer() -> Builder {
    let mut b = Builder::new();
    let xs = b.input_array("xs", F32, &["n"]);
    let e = b.let_arr("e", &map1(|x| x.exp(), &xs));
    b.output("y", &map1(|v| v + 1, &e));
    b.output("z", &map1(|v| v * 2, &e));
    b
}

fn sum_of_squares() -> Builder {
    let mut b = Builder::new();
    let n = b.input_scalar("n", I64);
    b.output("s", &reduce(Op::Add, 0, &map1(|x| &x * &x, &iota(&n))));
    b
}

fn iterated_map() -> Builder {
    let mut b = Builder::new();
    let mut x = b.input_array("x0", F32, &["n"]);
    for k in 1..=40 {
        x = b.let_arr(&format!("x{k}"), &map1(|x| 0.5 * &x + 0.25 * x.sin(), &x));
    }
    b.output("y", &x);
    b
}

/// Every non-error conformance case with its builder version.
fn cases() -> Vec<(&'static str, Builder)> {
    vec![
        ("dotp", dotp()),
        ("saxpy", saxpy()),
        ("map_chain", map_chain()),
        ("matvec", matvec()),
        ("blackscholes", blackscholes()),
        ("histogram", histogram()),
        ("scans", scans()),
        ("softmax_rows", softmax_rows()),
        ("variance", variance()),
        ("nbody", nbody()),
        ("filter_reduce", filter_reduce()),
        ("gathers", gathers()),
        ("iterate_builtin", iterate_builtin()),
        ("mandelbrot", mandelbrot()),
        ("stencil_twice", stencil_twice()),
        ("column_sums", column_sums()),
        ("shared_producer", shared_producer()),
        ("sum_of_squares", sum_of_squares()),
        ("iterated_map", iterated_map()),
    ]
}

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

fn case_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance").join(name)
}

fn conformance_program(name: &str) -> Program {
    let path = case_dir(name).join("program.eqf");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn built(b: Builder) -> Program {
    b.build().unwrap_or_else(|e| panic!("build failed: {e}"))
}

/// Structural equality up to the names of lambda parameters and local `let`s.
fn alpha_eq(a: &Expr, b: &Expr, env: &mut Vec<(String, String)>) -> bool {
    match (&a.kind, &b.kind) {
        (ExprKind::Var(x), ExprKind::Var(y)) => {
            let i = env.iter().rposition(|(l, _)| l == x);
            let j = env.iter().rposition(|(_, r)| r == y);
            match (i, j) {
                (None, None) => x == y,
                (i, j) => i == j,
            }
        }
        (ExprKind::Lambda { params: p, body: x }, ExprKind::Lambda { params: q, body: y }) => {
            if p.len() != q.len() {
                return false;
            }
            let mark = env.len();
            env.extend(p.iter().cloned().zip(q.iter().cloned()));
            let same = alpha_eq(x, y, env);
            env.truncate(mark);
            same
        }
        (ExprKind::Let { name: n, value: v, body: x }, ExprKind::Let { name: m, value: w, body: y }) => {
            if !alpha_eq(v, w, env) {
                return false;
            }
            env.push((n.clone(), m.clone()));
            let same = alpha_eq(x, y, env);
            env.pop();
            same
        }
        (ka, kb) => {
            let shallow = match (ka, kb) {
                (ExprKind::Lit(x), ExprKind::Lit(y)) => x == y,
                (ExprKind::Section(x), ExprKind::Section(y)) => x == y,
                (ExprKind::Binary { op: x, .. }, ExprKind::Binary { op: y, .. }) => x == y,
                (ExprKind::Unary { op: x, .. }, ExprKind::Unary { op: y, .. }) => x == y,
                (ExprKind::If { .. }, ExprKind::If { .. })
                | (ExprKind::Apply { .. }, ExprKind::Apply { .. })
                | (ExprKind::Index { .. }, ExprKind::Index { .. })
                | (ExprKind::Tuple(_), ExprKind::Tuple(_))
                | (ExprKind::Shape(_), ExprKind::Shape(_)) => true,
                _ => false,
            };
            let (ca, cb): (Vec<&Expr>, Vec<&Expr>) = (ka.children().collect(), kb.children().collect());
            shallow && ca.len() == cb.len() && ca.iter().zip(&cb).all(|(x, y)| alpha_eq(x, y, env))
        }
    }
}

fn alpha_eq_program(a: &Program, b: &Program) -> Result<(), String> {
    if a.items.len() != b.items.len() {
        return Err(format!("{} items against {}", a.items.len(), b.items.len()));
    }
    for (x, y) in a.items.iter().zip(&b.items) {
        let same = match (x, y) {
            (Item::Input { .. }, Item::Input { .. }) => x == y,
            (Item::Let { name: n, value: v, .. }, Item::Let { name: m, value: w, .. }) => {
                n == m && alpha_eq(v, w, &mut Vec::new())
            }
            (Item::Output { name: n, value: v, .. }, Item::Output { name: m, value: w, .. }) => {
                n == m
                    && match (v, w) {
                        (Some(v), Some(w)) => alpha_eq(v, w, &mut Vec::new()),
                        (None, None) => true,
                        _ => false,
                    }
            }
            _ => false,
        };
        if !same {
            return Err(format!("items differ:\n  {x:?}\n  {y:?}"));
        }
    }
    Ok(())
}

/// Checks and runs `p`; any error fails the test.
fn run(p: &Program, inputs: &IndexMap<String, Value>) -> IndexMap<String, Value> {
    let checked = check(p).unwrap_or_else(|e| panic!("check failed: {e}\n{}", print_program(p)));
    interpret(&checked, inputs).unwrap_or_else(|e| panic!("run failed: {e}\n{}", print_program(p)))
}

fn tolerance(name: &str) -> (f64, f64, f64) {
    let toml = std::fs::read_to_string(case_dir(name).join("case.toml")).unwrap_or_default();
    let get = |key: &str, default: f64| {
        toml.lines()
            .filter_map(|l| l.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(default)
    };
    (get("rtol", 1e-4), get("atol", 1e-5), get("mismatch_fraction", 0.0))
}

fn inputs(pairs: Vec<(&str, Value)>) -> IndexMap<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn f32s(v: &[f32]) -> Value {
    Value::F32(arr1(v).into_dyn())
}

fn scalars(v: &Value) -> Vec<f64> {
    v.to_scalars().into_iter().map(|s| s.as_f64()).collect()
}

// ---------------------------------------------------------------------------------------
// Tests: the same programs as the conformance texts
// ---------------------------------------------------------------------------------------

#[test]
fn every_conformance_program_is_built_up_to_parameter_names() {
    let mut failures = Vec::new();
    for (name, b) in cases() {
        if let Err(e) = alpha_eq_program(&built(b), &conformance_program(name)) {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn built_programs_survive_print_then_parse() {
    for (name, b) in cases() {
        let p = built(b);
        let text = print_program(&p);
        let back = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        assert_eq!(back, p, "{name}:\n{text}");
    }
}

#[test]
fn built_programs_match_the_conformance_outputs() {
    for (name, b) in cases() {
        let p = built(b);
        let dir = case_dir(name);
        let mut ins = IndexMap::new();
        for (input, _) in p.inputs() {
            let path = dir.join("inputs").join(format!("{input}.npy"));
            let v = eqfuse_ir::npy::read_value(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            ins.insert(input.to_string(), v);
        }
        let out = run(&p, &ins);
        let (rtol, atol, frac) = tolerance(name);
        for output in p.output_names() {
            let path = dir.join("expected").join(format!("{output}.npy"));
            let want = eqfuse_ir::npy::read_value(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            let got = out.get(output).unwrap_or_else(|| panic!("{name}: no output {output}"));
            if let Err(e) = compare(got, &want, &Tolerance { rtol, atol, mismatch_fraction: frac }) {
                panic!("{name}, output {output}: {e}");
            }
        }
    }
}

/// Node-for-node equality with hand-written texts that use the builder's parameter names.
fn assert_same(b: Builder, text: &str) {
    let p = built(b);
    let want = parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(p, want, "\nbuilt:\n{}\nwanted:\n{text}", print_program(&p));
}

#[test]
fn dotp_text() {
    assert_same(
        dotp(),
        "input xs : f32[n]\ninput ys : f32[n]\noutput dot = reduce (+) 0 (map (\\x0 x1 -> x0 * x1) xs ys)\n",
    );
}

#[test]
fn saxpy_text() {
    assert_same(
        saxpy(),
        "input alpha : f32\ninput xs : f32[n]\ninput ys : f32[n]\n\
         output zs = map (\\x0 x1 -> alpha * x0 + x1) xs ys\n",
    );
}

#[test]
fn map_chain_text() {
    assert_same(
        map_chain(),
        "input xs : f32[n]\n\
         let a = map (\\x0 -> x0 + 1) xs\n\
         let b = map (\\x0 -> x0 * 2) a\n\
         let c = map (\\x0 -> x0 - 3) b\n\
         output d = map (\\x0 -> sqrt (abs x0)) c\n",
    );
}

#[test]
fn matvec_text() {
    assert_same(
        matvec(),
        "input m : f32[r, c]\ninput v : f32[c]\n\
         output y = reduce (+) 0 (generate [r, c] (\\x0 x1 -> m[x0, x1] * v[x1]))\n",
    );
}

#[test]
fn blackscholes_text() {
    assert_same(
        blackscholes(),
        r"input s : f32[n]
input x : f32[n]
input t : f32[n]
let cnd = \x0 ->
  let k = 1.0 / (1.0 + 0.2316419 * abs x0) in
  let w = 0.3989422804014327 * exp (-0.5 * x0 * x0) *
          (k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))) in
  if x0 > 0 then 1.0 - w else w
let d1 = map (\x0 x1 x2 -> (log (x0 / x1) + (0.02 + 0.5 * 0.3 * 0.3) * x2) / (0.3 * sqrt x2)) s x t
let d2 = map (\x0 x1 -> x0 - 0.3 * sqrt x1) d1 t
output call = map (\x0 x1 x2 x3 x4 -> x0 * cnd x3 - x1 * exp (-0.02 * x2) * cnd x4) s x t d1 d2
output put = map (\x0 x1 x2 x3 x4 -> x1 * exp (-0.02 * x2) * (1.0 - cnd x4) - x0 * (1.0 - cnd x3)) s x t d1 d2
",
    );
}

#[test]
fn histogram_text() {
    assert_same(
        histogram(),
        "input bins : i64[k]\noutput h = permute (+) (fill [16] 0) (\\x0 -> bins[x0]) (fill [k] 1)\n",
    );
}

#[test]
fn scans_text() {
    assert_same(
        scans(),
        "input a : i64[n]\noutput inc = scan (+) 0 a\noutput exc = scan_exclusive (+) 0 a\n\
         output runmax = scan max (-1000000) a\n",
    );
}

#[test]
fn softmax_rows_text() {
    assert_same(
        softmax_rows(),
        "input m : f32[r, c]\n\
         let mx = reduce max (-inf) m\n\
         let e = generate [r, c] (\\x0 x1 -> exp (m[x0, x1] - mx[x0]))\n\
         let s = reduce (+) 0 e\n\
         output sm = generate [r, c] (\\x0 x1 -> e[x0, x1] / s[x0])\n",
    );
}

#[test]
fn variance_text() {
    assert_same(
        variance(),
        "input xs : f64[n]\nlet len = f64 (length xs)\nlet mean = reduce (+) 0 xs / len\noutput m = mean\n\
         output var = reduce (+) 0 (map (\\x0 -> (x0 - mean) * (x0 - mean)) xs) / len\n",
    );
}

#[test]
fn nbody_text() {
    let mut text = String::from(
        "input px : f32[n]\ninput py : f32[n]\ninput pz : f32[n]\ninput mass : f32[n]\n\
         let cols_x = generate [n, n] (\\x0 x1 -> px[x1])\n\
         let rows_x = generate [n, n] (\\x0 x1 -> px[x0])\n\
         let dx = map (\\x0 x1 -> x0 - x1) cols_x rows_x\n\
         let dy = generate [n, n] (\\x0 x1 -> py[x1] - py[x0])\n\
         let dz = generate [n, n] (\\x0 x1 -> pz[x1] - pz[x0])\n\
         let inv = map (\\x0 x1 x2 -> let d2 = x0 * x0 + x1 * x1 + x2 * x2 + 0.01 in 1.0 / (d2 * sqrt d2)) dx dy dz\n\
         let w = generate [n, n] (\\x0 x1 -> mass[x1] * inv[x0, x1])\n",
    );
    for (o, d) in [("ax", "dx"), ("ay", "dy"), ("az", "dz")] {
        text.push_str(&format!("output {o} = reduce (+) 0 (map (\\x0 x1 -> x0 * x1) w {d})\n"));
    }
    assert_same(nbody(), &text);
}

#[test]
fn parameters_avoid_an_input_of_the_same_name() {
    // The input is called `x0`, so the outer parameter becomes `x0_`; the nested lambda is
    // at depth 1 and is called `y0`.
    assert_same(
        iterate_builtin(),
        "input x0 : f64[n]\noutput y = map (\\x0_ -> iterate 40 (\\y0 -> 0.5 * y0 + 0.25 * sin y0) x0_) x0\n",
    );
}

#[test]
fn gathers_text() {
    assert_same(
        gathers(),
        "input xs : f32[n]\ninput idx : i64[k]\noutput g = gather xs idx\n\
         output rev = backpermute [n] (\\x0 -> n - 1 - x0) xs\noutput rev2 = reverse xs\n\
         output mid = slice xs 10 20\noutput both = concat (slice xs 0 5) (reverse (slice xs 0 5))\n",
    );
}

// ---------------------------------------------------------------------------------------
// Tests: runs on small inputs with hand-computed results
// ---------------------------------------------------------------------------------------

#[test]
fn dotp_runs() {
    let p = built(dotp());
    let ins = inputs(vec![("xs", f32s(&[1.0, 2.0, 3.0])), ("ys", f32s(&[4.0, 5.0, 6.0]))]);
    let out = run(&p, &ins);
    assert_eq!(out["dot"], Value::F32(ndarray::arr0(32.0).into_dyn()));
}

#[test]
fn saxpy_runs() {
    let p = built(saxpy());
    let ins = inputs(vec![
        ("alpha", Value::F32(ndarray::arr0(2.0).into_dyn())),
        ("xs", f32s(&[1.0, 2.0, 3.0])),
        ("ys", f32s(&[10.0, 20.0, 30.0])),
    ]);
    let out = run(&p, &ins);
    assert_eq!(out["zs"], f32s(&[12.0, 24.0, 36.0]));
}

#[test]
fn scans_run() {
    let p = built(scans());
    let ins = inputs(vec![("a", Value::I64(arr1(&[3, -1, 4, 1, 5]).into_dyn()))]);
    let out = run(&p, &ins);
    assert_eq!(scalars(&out["inc"]), [3.0, 2.0, 6.0, 7.0, 12.0]);
    assert_eq!(scalars(&out["exc"]), [0.0, 3.0, 2.0, 6.0, 7.0]);
    assert_eq!(scalars(&out["runmax"]), [3.0, 3.0, 4.0, 4.0, 5.0]);
}

#[test]
fn histogram_runs() {
    let p = built(histogram());
    let ins = inputs(vec![("bins", Value::I64(arr1(&[0, 3, 3, -1, 15, 3]).into_dyn()))]);
    let out = run(&p, &ins);
    let mut want = vec![0.0; 16];
    want[0] = 1.0;
    want[3] = 3.0;
    want[15] = 1.0;
    assert_eq!(scalars(&out["h"]), want);
}

#[test]
fn variance_runs() {
    let p = built(variance());
    let ins = inputs(vec![("xs", Value::F64(arr1(&[1.0, 2.0, 3.0, 4.0]).into_dyn()))]);
    let out = run(&p, &ins);
    assert_eq!(scalars(&out["m"]), [2.5]);
    assert_eq!(scalars(&out["var"]), [1.25]);
}

#[test]
fn matvec_runs() {
    let p = built(matvec());
    let m = Value::F32(arr2(&[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).into_dyn());
    let ins = inputs(vec![("m", m), ("v", f32s(&[10.0, 1.0]))]);
    let out = run(&p, &ins);
    assert_eq!(out["y"], f32s(&[12.0, 34.0, 56.0]));
}

#[test]
fn softmax_rows_runs() {
    let p = built(softmax_rows());
    let m = Value::F32(arr2(&[[0.0, 0.0], [1.0, 1.0]]).into_dyn());
    let out = run(&p, &inputs(vec![("m", m)]));
    assert_eq!(scalars(&out["sm"]), [0.5, 0.5, 0.5, 0.5]);
}

#[test]
fn filter_reduce_runs() {
    let p = built(filter_reduce());
    let ins = inputs(vec![("xs", f32s(&[-1.0, 2.0, 0.0, 3.5]))]);
    let out = run(&p, &ins);
    assert_eq!(scalars(&out["total"]), [5.5]);
    assert_eq!(scalars(&out["count"]), [2.0]);
    assert_eq!(out["kept"], f32s(&[2.0, 3.5]));
}

#[test]
fn sum_of_squares_runs() {
    let p = built(sum_of_squares());
    let ins = inputs(vec![("n", Value::I64(ndarray::arr0(4).into_dyn()))]);
    let out = run(&p, &ins);
    assert_eq!(out["s"], Value::I64(ndarray::arr0(14).into_dyn()));
}

#[test]
fn named_binary_function_as_an_operator() {
    let mut b = Builder::new();
    let xs = b.input_array("xs", F32, &["n"]);
    let larger = b.let_fn2("larger", |x, y| if_(x.gt(&y), x, y));
    b.output("top", &reduce(&larger, -inf(), &xs));
    b.output("twice", &eqfuse_ir::builder::map_fn(&larger, &[&xs, &xs]));
    let text = "input xs : f32[n]\nlet larger = \\x0 x1 -> if x0 > x1 then x0 else x1\n\
                output top = reduce larger (-inf) xs\noutput twice = map larger xs xs\n";
    let p = built(b);
    assert_eq!(p, parse(text).unwrap_or_else(|e| panic!("{e}")));
    let out = run(&p, &inputs(vec![("xs", f32s(&[1.0, 7.0, -2.0]))]));
    assert_eq!(scalars(&out["top"]), [7.0]);
}

#[test]
fn lambda_operator_and_tuple_index_function() {
    let mut b = Builder::new();
    let m = b.input_array("m", I64, [2, 3]);
    let t = eqfuse_ir::builder::backpermute([3, 2], |ix| vec![ix[1].clone(), ix[0].clone()], &m);
    b.output("t", &t);
    b.output("s", &reduce_rows(Op::lambda(|a, c| a + c), 0, &transpose(&m)));
    let text = "input m : i64[2, 3]\noutput t = backpermute [3, 2] (\\x0 x1 -> (x1, x0)) m\n\
                output s = reduce (\\x0 x1 -> x0 + x1) 0 (transpose m)\n";
    let p = built(b);
    assert_eq!(p, parse(text).unwrap_or_else(|e| panic!("{e}")));
    let m = Value::I64(arr2(&[[1, 2, 3], [4, 5, 6]]).into_dyn());
    let out = run(&p, &inputs(vec![("m", m)]));
    assert_eq!(scalars(&out["t"]), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    assert_eq!(scalars(&out["s"]), [5.0, 7.0, 9.0]);
}

#[test]
fn scalar_operators_parse_the_same() {
    let x = Sc::var("x");
    let y = Sc::var("y");
    let cases: Vec<(Sc, &str)> = vec![
        (&x + &y * 2 - 1.5, "x + y * 2 - 1.5"),
        ((&x + &y) * 2, "(x + y) * 2"),
        (2 * &x / &y % 3, "2 * x / y % 3"),
        (-&x + -lit(2.5), "-x + (-2.5)"),
        (!x.lt(&y).and(y.ge(0)).or(x.ne_(1)), "!(x < y && y >= 0 || x != 1)"),
        (x.eq_(&y).or(x.le(1.0).and(x.gt(-lit(1)))), "x == y || x <= 1.0 && x > -1"),
        (x.pow(2.0).atan2(y.tanh()).max(x.min(&y)), "max (atan2 (pow x 2.0) (tanh y)) (min x y)"),
        (x.clamp(0, 10).to_i32().to_f64().to_f32().to_i64(), "i64 (f32 (f64 (i32 (clamp x 0 10))))"),
        (x.floor() + x.ceil() + x.round() + x.cos() + x.tan(), "floor x + ceil x + round x + cos x + tan x"),
        (eqfuse_ir::builder::select(lit(true), 1, inf()), "if true then 1 else inf"),
        (-(-lit(3)), "-(-3)"),
    ];
    for (sc, text) in cases {
        let want = eqfuse_ir::parse::parse_expr(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(sc.to_expr().unwrap_or_else(|e| panic!("{e}")), want, "{text}");
    }
}

#[test]
fn array_helpers_parse_the_same() {
    let xs = Arr::var("xs");
    let n = Sc::var("n");
    let cases: Vec<(Arr, &str)> = vec![
        (iota(10), "iota 10"),
        (fill([&n, &n], 0.0), "fill [n, n] 0.0"),
        (eqfuse_ir::builder::reshape([2, 5], &iota(10)), "reshape [2, 5] (iota 10)"),
        (eqfuse_ir::builder::generate1(&n, |i| &i * &i), "generate [n] (\\x0 -> x0 * x0)"),
        (eqfuse_ir::builder::generate2(2, 3, |i, j| i + j), "generate [2, 3] (\\x0 x1 -> x0 + x1)"),
        (map1(|x| x + xs.length() + xs.size(0), &xs), "map (\\x0 -> x0 + length xs + size xs 0) xs"),
        (scan(Op::Mul, 1, &xs), "scan (*) 1 xs"),
        (scan(Op::Min, inf(), &xs), "scan min inf xs"),
        (scan_exclusive(Op::And, true, &xs), "scan_exclusive (&&) true xs"),
        (scan(Op::Or, false, &xs), "scan (||) false xs"),
        (
            eqfuse_ir::builder::map(|p| &p[0] + &p[1] + &p[2] + &p[3], &[&xs, &xs, &xs, &xs]),
            "map (\\x0 x1 x2 x3 -> x0 + x1 + x2 + x3) xs xs xs xs",
        ),
        (
            eqfuse_ir::builder::permute_rank(Op::Max, &fill([4], 0), 2, |ix| &ix[0] + &ix[1], &Arr::var("m")),
            "permute max (fill [4] 0) (\\x0 x1 -> x0 + x1) m",
        ),
    ];
    for (arr, text) in cases {
        let want = eqfuse_ir::parse::parse_expr(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(arr.to_expr().unwrap_or_else(|e| panic!("{e}")), want, "{text}");
    }
}

#[test]
fn literal_dimensions_and_output_binding() {
    let mut b = Builder::new();
    let m = b.input_array("m", F32, [Dim::Size("n".into()), Dim::Known(3)]);
    let k = b.input_array("k", F32, [4]);
    assert_eq!((m.rank(), k.rank()), (Some(2), Some(1)));
    b.let_arr("r", &reduce_rows(Op::Add, 0, &m));
    b.output_binding("r");
    let text = "input m : f32[n, 3]\ninput k : f32[4]\nlet r = reduce (+) 0 m\noutput r\n";
    assert_eq!(built(b), parse(text).unwrap_or_else(|e| panic!("{e}")));
}

#[test]
fn nested_lambdas_get_one_letter_per_depth() {
    let mut b = Builder::new();
    let xs = b.input_array("xs", I64, &["n"]);
    let f = b.let_fn1("f", |x| iterate(2, |y| iterate(3, |z| z + &y + &x, y.clone()), x.clone()));
    b.output("o", &map1(|x| f.call(x), &xs));
    let text = "input xs : i64[n]\n\
                let f = \\x0 -> iterate 2 (\\y0 -> iterate 3 (\\z0 -> z0 + y0 + x0) y0) x0\n\
                output o = map (\\x0 -> f x0) xs\n";
    let p = built(b);
    assert_eq!(p, parse(text).unwrap_or_else(|e| panic!("{e}")));
    let out = run(&p, &inputs(vec![("xs", Value::I64(arr1(&[1]).into_dyn()))]));
    // f 1: y = 1 -> iterate 3 (+ 1 + 1) from 1 = 7 -> iterate 3 (+ 7 + 1) from 7 = 31.
    assert_eq!(scalars(&out["o"]), [31.0]);
}

#[test]
fn names_are_deterministic_across_builders() {
    let a = print_program(&built(blackscholes()));
    let _ = built(nbody());
    let b = print_program(&built(blackscholes()));
    assert_eq!(a, b);
}

// ---------------------------------------------------------------------------------------
// Tests: errors
// ---------------------------------------------------------------------------------------

fn build_err(b: Builder) -> Code {
    match b.build() {
        Ok(p) => panic!("expected an error, built:\n{}", print_program(&p)),
        Err(e) => e.code,
    }
}

#[test]
fn duplicate_names_are_type_errors() {
    let mut b = Builder::new();
    let xs = b.input_array("xs", F32, &["n"]);
    b.output("xs", &xs);
    assert_eq!(build_err(b), Code::Type);

    let mut b = Builder::new();
    let xs = b.input_array("xs", F32, &["n"]);
    b.let_arr("a", &xs);
    b.let_arr("a", &xs);
    assert_eq!(build_err(b), Code::Type);
}

#[test]
fn keyword_and_malformed_names_are_type_errors() {
    for name in ["let", "inf", "loop", "do", "", "1x", "a-b", "x y"] {
        let mut b = Builder::new();
        b.input_scalar(name, F32);
        assert_eq!(build_err(b), Code::Type, "{name:?}");
    }
    // a builtin's name is not reserved (version 2): the program's input takes it
    for name in ["map", "exp", "f32", "sum", "pi"] {
        let mut b = Builder::new();
        let x = b.input_scalar(name, F32);
        b.output("y", &x);
        assert!(b.build().is_ok(), "{name:?}");
    }
    let mut b = Builder::new();
    b.input_array("xs", F32, &["in"]);
    assert_eq!(build_err(b), Code::Type);

    let mut b = Builder::new();
    b.input_array("xs", F32, [-1]);
    assert_eq!(build_err(b), Code::Type);

    let mut b = Builder::new();
    b.output("o", &let_in("then", 1, |t| t));
    assert_eq!(build_err(b), Code::Type);

    let mut b = Builder::new();
    b.output_binding("nothing");
    assert_eq!(build_err(b), Code::Type);
}

#[test]
fn nan_literal_is_a_type_error() {
    let mut b = Builder::new();
    b.output("o", &lit(f64::NAN));
    assert_eq!(build_err(b), Code::Type);
}

#[test]
fn escaped_lambda_parameter_is_a_type_error() {
    let mut b = Builder::new();
    let xs = b.input_array("xs", F32, &["n"]);
    let mut leaked = None;
    let m = map1(
        |x| {
            leaked = Some(x.clone());
            x
        },
        &xs,
    );
    b.output("m", &m);
    b.output("bad", &(leaked.unwrap_or_else(|| lit(0)) + 1));
    assert_eq!(build_err(b), Code::Type);
}

#[test]
fn too_deep_expression_is_a_limit_error() {
    let mut x = Sc::var("a");
    for _ in 0..2100 {
        x = x + 1;
    }
    let mut b = Builder::new();
    b.input_scalar("a", F32);
    b.output("o", &x);
    assert_eq!(build_err(b.clone()), Code::Limit);
    assert!(b.build_with(&Limits { max_depth: 3000, ..Limits::default() }).is_ok());
    assert_eq!(x.to_expr().map_err(|e| e.code).err(), Some(Code::Limit));
}

#[test]
fn unspellable_nodes_are_type_errors() {
    let xs = Arr::var("xs");
    let bad: Vec<Arr> = vec![
        eqfuse_ir::builder::map(|_| lit(1), &[]),
        fill(Vec::<Sc>::new(), 0),
        backpermute([3], |_| Vec::<Sc>::new(), &xs),
        map1(|_| xs.at(Vec::<Sc>::new()), &xs),
    ];
    for a in bad {
        let mut b = Builder::new();
        b.output("o", &a);
        assert_eq!(build_err(b), Code::Type);
    }
}
