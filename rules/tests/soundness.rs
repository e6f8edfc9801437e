//! Soundness of every rule of the catalogue (`eqfuse_rules::all_rules` with fast math on).
//!
//! Each rule is applied **alone** (after the few helper rules its template names, which
//! make its left-hand side visible: `fuse-reduce` to make a `redomap` for `fuse-read`, ...)
//! to the e-graph of a program, and every program that can be extracted to show what it
//! did is decoded, checked and run by the reference interpreter on random inputs:
//!
//! - *prefer new*: e-nodes the rule added cost 1 and the program's own e-nodes 100;
//! - *prefer old*: the reverse (this is the original program, or, where the rule merged two
//!   classes, the smaller side of the merge);
//! - *one rewrite at a time*: in every class the rule touched (it added an e-node to a class
//!   of the program, or merged two classes), each other e-node of the class in turn, the
//!   rest as in *prefer old*.
//!
//! Every rewritten program must compute what the **original** program computes:
//! bit-identical results ([`same_but_nan_bits`]: the sign of zero included, any NaN equal
//! to any NaN, as the rule policy says) for the default rules, and within `rtol = atol = 1e-3` for the fast-math rules. Where the
//! original fails at run time the rewritten program may fail or succeed (the optimiser may
//! remove errors of elements never read); where the original succeeds the rewritten one
//! must succeed too.
//!
//! The cases:
//!
//! 1. *Templates*: for every rule, hand-written programs whose left-hand side it matches,
//!    with holes filled by random scalar expressions and random element types, run on
//!    random inputs that include edge values (`0`, `-0.0`, NaN, infinities, subnormals,
//!    `MIN`, `MAX`, `-1`). The fast-math rules get tame data instead (floats in `[-2, 2]`,
//!    holes of `+ - *` only): they are claimed only where the computation is continuous.
//! 2. *Random programs* ([`program_and_inputs`]): every rule is run on each of them, with
//!    the generator's inputs and with edge-value inputs, to catch rules that misbehave on
//!    terms nobody wrote a template for. Fast-math rules are held to "checks, runs where
//!    the original runs, same types and shapes" there: a random program may feed a sum into
//!    `floor`, a comparison or a division by a near-zero value, where no tolerance holds.
//!
//! 3. *Fixed cases*: counterexamples found by earlier runs ([`fixed_cases`]), run every time.
//!
//! Every rule must **fire** at least once over its template cases, and its rewritten
//! programs must have been compared with a successful run of the original at least once
//! (except the rules of [`DECODES_TO_ORIGINAL`], whose rewritten terms decode back to the
//! original text): a rule added to the catalogue without a template here fails the test,
//! naming the rule.
//!
//! Not failures, but counted in the table the test prints (`--nocapture`): rewritten terms
//! with no `.eqf` form until other rules finish them ([`UNFINISHED`]), "one rewrite"
//! programs that force an e-node with free parameters into a use of its class in another
//! binder context, fast-math value differences on random programs, and runs where one
//! application of the rule hit the node limit (a warning naming the program).
//!
//! Environment: `EQFUSE_SOUNDNESS_CASES` (default 48) sets the number of instances of each
//! rule's templates and of random programs; `EQFUSE_SOUNDNESS_SEED` changes the seed;
//! `EQFUSE_SOUNDNESS_VERBOSE` reports slow runs and progress, `EQFUSE_SOUNDNESS_TRACE`
//! every run, `EQFUSE_SOUNDNESS_UNFIRED=<rule>` the template programs the rule did not fire on.
#![allow(clippy::unwrap_used)]

use egg::{CostFunction, Id, Language};
use eqfuse_egraph::{decode, encode, ArrayLang, Encoded, Kind, Literal, ParamSet};
use eqfuse_ir::check::{check, Checked};
use eqfuse_ir::interp::interpret;
use eqfuse_ir::parse::parse;
use eqfuse_ir::print::print_program;
use eqfuse_ir::testgen::{program_and_inputs, same_but_nan_bits, GenConfig};
use eqfuse_ir::types::{Dim, ElemType, Type};
use eqfuse_ir::value::{compare, Scalar, Tolerance, Value};
use eqfuse_rules::{all_rules, fast_math, Rewrite, RuleSets, EG};
use indexmap::IndexMap;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use ElemType::{Bool, F32, F64, I32, I64};

const NUM: [ElemType; 4] = [I32, I64, F32, F64];
const FLT: [ElemType; 2] = [F32, F64];
const INT: [ElemType; 2] = [I32, I64];

/// The rules whose rewritten programs decode to the original text by design: the fused
/// forms decode to their definitions (`scanomap op ne sh f` is `scan op ne (generate sh f)`)
/// and a `multi` to its separate operations. Their programs are checked to decode, check and
/// print as the original; `fuse-read` inside the fused forms is run on real rewrites.
const DECODES_TO_ORIGINAL: [&str; 7] = [
    "fuse-reduce",
    "fuse-scan",
    "fuse-scan-exclusive",
    "fuse-filter",
    "fuse-permute",
    "horizontal-fuse",
    "horizontal-diagonal",
];

/// Decoder refusals that only say the rule's right-hand side is not finished: a `proj` of
/// an `app` (the index function of a rank-2 `backpermute`) has no `.eqf` form until
/// `fuse-beta` and `fuse-proj-tuple` finish it (the `fuse-proj-tuple` templates check the
/// three together).
const UNFINISHED: [&str; 1] = ["`proj` of something that is not a `multi` or a tuple"];

/// Iterations of the rule under test, and of the helper rules before it.
const RULE_ITERS: usize = 3;
const PRE_ITERS: usize = 6;
const NODE_LIMIT: usize = 20_000;
/// Most "one rewrite at a time" programs per run.
const MAX_OVERRIDES: usize = 8;
/// Input sets per program.
const INPUT_SETS: usize = 4;

// ---------------------------------------------------------------- a seeded generator

/// xorshift64*: deterministic, seeded per rule and instance.
#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(mix(seed) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            ((self.next() >> 16) % n as u64) as usize
        }
    }

    fn chance(&mut self, num: u64, den: u64) -> bool {
        (self.next() >> 16) % den < num
    }

    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())].clone()
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// splitmix64's finaliser.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

// ---------------------------------------------------------------- random inputs

/// What input elements look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Data {
    /// Edge values mixed with ordinary ones.
    Edge,
    /// Floats in `[-2, 2]`, integers in `[-10, 10]`: for the fast-math rules.
    Tame,
}

fn float_edge(rng: &mut Rng, t: ElemType) -> f64 {
    let specials32 = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        2.0,
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::from(f32::MAX),
        f64::from(f32::MIN),
        f64::from(f32::MIN_POSITIVE),
        f64::from(f32::from_bits(1)),
        1e30,
        -3.0,
        0.1,
    ];
    let specials64 = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        2.0,
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        1e300,
        -3.0,
        0.1,
    ];
    match rng.below(10) {
        0..=3 => {
            if t == F32 {
                rng.pick(&specials32)
            } else {
                rng.pick(&specials64)
            }
        }
        4 => {
            // any finite value of the type, by its bits
            if t == F32 {
                let v = f32::from_bits(rng.next() as u32);
                if v.is_finite() {
                    f64::from(v)
                } else {
                    1.5
                }
            } else {
                let v = f64::from_bits(rng.next());
                if v.is_finite() {
                    v
                } else {
                    1.5
                }
            }
        }
        _ => ((rng.unit() * 20.0 - 10.0) * 1000.0).round() / 1000.0,
    }
}

fn scalar(rng: &mut Rng, t: ElemType, data: Data) -> Scalar {
    let small = |rng: &mut Rng| rng.below(21) as i64 - 10;
    match (t, data) {
        (Bool, _) => Scalar::Bool(rng.chance(1, 2)),
        (I32, Data::Tame) => Scalar::I32(small(rng) as i32),
        (I64, Data::Tame) => Scalar::I64(small(rng)),
        (F32, Data::Tame) => Scalar::F32((((rng.unit() * 4.0 - 2.0) * 1000.0).round() / 1000.0) as f32),
        (F64, Data::Tame) => Scalar::F64(((rng.unit() * 4.0 - 2.0) * 1000.0).round() / 1000.0),
        (I32, Data::Edge) => Scalar::I32(match rng.below(8) {
            0 => rng.pick(&[0, 1, -1, 2, i32::MIN, i32::MAX, i32::MIN + 1]),
            1 => rng.next() as i32,
            _ => small(rng) as i32,
        }),
        (I64, Data::Edge) => Scalar::I64(match rng.below(8) {
            0 => rng.pick(&[0, 1, -1, 2, i64::MIN, i64::MAX, i64::MIN + 1, i64::from(i32::MAX)]),
            1 => rng.next() as i64,
            _ => small(rng),
        }),
        (F32, Data::Edge) => {
            let v = float_edge(rng, F32);
            // keep the sign of NaN and of zero through the conversion
            Scalar::F32(if v.is_nan() { f32::NAN.copysign(v as f32) } else { v as f32 })
        }
        (F64, Data::Edge) => Scalar::F64(float_edge(rng, F64)),
        // the integer types of version 2: small values, or any bits at the edges
        (t, Data::Tame) => Scalar::from_i128_wrapping(t, i128::from(small(rng))),
        (t, Data::Edge) => Scalar::from_i128_wrapping(t, i128::from(rng.next())),
    }
}

/// Random inputs of the checked program's declared types, one size per size name.
fn random_inputs(checked: &Checked, rng: &mut Rng, data: Data) -> IndexMap<String, Value> {
    let mut sizes: HashMap<&str, usize> = HashMap::new();
    for s in &checked.sizes {
        sizes.insert(s, rng.pick(&[0, 1, 2, 3, 3, 4, 4, 5, 6, 7]));
    }
    let mut out = IndexMap::new();
    for (name, ty) in &checked.inputs {
        let v = match ty {
            Type::Scalar(t) => Value::scalar(scalar(rng, *t, data)),
            Type::Array { elem, shape } => {
                let dims: Vec<usize> = shape
                    .iter()
                    .map(|d| match d {
                        Dim::Known(k) => usize::try_from(*k).unwrap_or(0),
                        Dim::Size(s) => sizes.get(s.as_str()).copied().unwrap_or(0),
                        _ => 0,
                    })
                    .collect();
                let count: usize = dims.iter().product();
                let xs: Vec<Scalar> = (0..count).map(|_| scalar(rng, *elem, data)).collect();
                Value::from_scalars(*elem, &dims, &xs).unwrap()
            }
            other => panic!("input {name} of type {other}"),
        };
        out.insert(name.clone(), v);
    }
    out
}

fn show_inputs(inputs: &IndexMap<String, Value>) -> String {
    inputs
        .iter()
        .map(|(k, v)| {
            let xs: Vec<String> = v.to_scalars().iter().map(|s| format!("{s}")).collect();
            format!("  {k} {:?} = [{}]", v.shape(), xs.join(", "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------- template holes

type Vars = [(String, ElemType)];

/// The generator of template instances.
struct G {
    rng: Rng,
    /// Fast-math templates: `+ - *` and small literals only.
    tame: bool,
}

impl G {
    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        self.rng.pick(xs)
    }

    fn below(&mut self, n: usize) -> usize {
        self.rng.below(n)
    }

    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.rng.chance(num, den)
    }

    /// `1` (an integer literal also stands for a float).
    fn one(&mut self, t: ElemType) -> &'static str {
        if t.is_float() && self.chance(1, 2) {
            "1.0"
        } else {
            "1"
        }
    }

    fn lit(&mut self, t: ElemType) -> String {
        let s: &str = match t {
            Bool => self.pick(&["true", "false"]),
            I32 => self.pick(&["0", "1", "(-1)", "2", "3", "(-7)", "100", "2147483647", "(-2147483648)"]),
            I64 => self.pick(&[
                "0",
                "1",
                "(-1)",
                "2",
                "(-7)",
                "100",
                "4294967296",
                "9223372036854775807",
                "(-9223372036854775807)",
            ]),
            _ if self.tame => self.pick(&["0.5", "1.0", "2.0", "1.5", "(-1.0)", "0.25", "3.0", "(-0.75)"]),
            _ => self.pick(&[
                "0.0", "(-0.0)", "1.0", "(-1.0)", "0.5", "2.0", "3.5", "(-2.5)", "inf", "(-inf)", "1e30",
                "1e-40", "0.1", "100.0", "3",
            ]),
        };
        s.to_string()
    }

    /// A random expression of type `t` over `vars` (an atom or parenthesised).
    fn e(&mut self, t: ElemType, vars: &Vars) -> String {
        let depth = if self.tame { self.below(2) } else { self.below(3) } as u32;
        self.expr(t, vars, depth)
    }

    /// A condition that depends on a variable (so that it does not fold to a constant).
    fn cond(&mut self, vars: &Vars) -> String {
        let (x, u) = vars[self.below(vars.len())].clone();
        let c = match u {
            Bool => x,
            _ => {
                let op = self.pick(&["<", "<=", ">", ">=", "==", "!="]);
                format!("({x} {op} {})", self.expr(u, vars, 1))
            }
        };
        match self.below(4) {
            0 => format!("({c} && {})", self.expr(Bool, vars, 1)),
            1 => format!("({} || {c})", self.expr(Bool, vars, 1)),
            _ => c,
        }
    }

    fn leaf(&mut self, t: ElemType, vars: &Vars) -> String {
        let vs: Vec<&String> = vars.iter().filter(|(_, u)| *u == t).map(|(n, _)| n).collect();
        if !vs.is_empty() && self.chance(3, 4) {
            vs[self.below(vs.len())].clone()
        } else {
            self.lit(t)
        }
    }

    fn expr(&mut self, t: ElemType, vars: &Vars, depth: u32) -> String {
        if depth == 0 || self.chance(1, 4) {
            return self.leaf(t, vars);
        }
        let d = depth - 1;
        match t {
            Bool => match self.below(6) {
                0 | 1 => {
                    // a comparison over the type of some variable
                    let us: Vec<ElemType> = vars.iter().map(|(_, u)| *u).filter(|u| *u != Bool).collect();
                    let u = if us.is_empty() { I64 } else { us[self.below(us.len())] };
                    let op = self.pick(&["<", "<=", ">", ">=", "==", "!="]);
                    format!("({} {op} {})", self.expr(u, vars, d), self.expr(u, vars, d))
                }
                2 => format!("({} && {})", self.expr(Bool, vars, d), self.expr(Bool, vars, d)),
                3 => format!("({} || {})", self.expr(Bool, vars, d), self.expr(Bool, vars, d)),
                4 => format!("(!{})", self.expr(Bool, vars, d)),
                _ => self.leaf(Bool, vars),
            },
            I32 | I64 => match self.below(12) {
                0..=2 => {
                    let op = self.pick(&["+", "-", "*"]);
                    format!("({} {op} {})", self.expr(t, vars, d), self.expr(t, vars, d))
                }
                3 => format!("(-{})", self.expr(t, vars, d)),
                4 => format!("(min {} {})", self.expr(t, vars, d), self.expr(t, vars, d)),
                5 => format!("(max {} {})", self.expr(t, vars, d), self.expr(t, vars, d)),
                6 => format!("(abs {})", self.expr(t, vars, d)),
                7 => {
                    let op = self.pick(&["/", "%"]);
                    let b = self.expr(t, vars, d);
                    format!("({} {op} (if {b} == 0 then 1 else {b}))", self.expr(t, vars, d))
                }
                8 => format!(
                    "(if {} then {} else {})",
                    self.expr(Bool, vars, d),
                    self.expr(t, vars, d),
                    self.expr(t, vars, d)
                ),
                9 => {
                    let u = self.pick(&[I32, I64, F32, F64]);
                    format!("({} {})", t.name(), self.expr(u, vars, d))
                }
                10 => format!("(clamp {} (-5) 5)", self.expr(t, vars, d)),
                _ => self.leaf(t, vars),
            },
            _ if self.tame => match self.below(5) {
                0..=2 => {
                    let op = self.pick(&["+", "-", "*"]);
                    format!("({} {op} {})", self.expr(t, vars, d), self.expr(t, vars, d))
                }
                3 => format!("(-{})", self.expr(t, vars, d)),
                _ => self.leaf(t, vars),
            },
            _ => match self.below(14) {
                0..=3 => {
                    let op = self.pick(&["+", "-", "*", "/"]);
                    format!("({} {op} {})", self.expr(t, vars, d), self.expr(t, vars, d))
                }
                4 => format!("(-{})", self.expr(t, vars, d)),
                5 => {
                    let f = self.pick(&["min", "max", "pow", "atan2"]);
                    format!("({f} {} {})", self.expr(t, vars, d), self.expr(t, vars, d))
                }
                6 | 7 => {
                    let f =
                        self.pick(&["abs", "sqrt", "exp", "log", "sin", "floor", "round", "tanh", "ceil"]);
                    format!("({f} {})", self.expr(t, vars, d))
                }
                8 => format!(
                    "(if {} then {} else {})",
                    self.expr(Bool, vars, d),
                    self.expr(t, vars, d),
                    self.expr(t, vars, d)
                ),
                9 => {
                    let u = self.pick(&[I32, I64, F32, F64]);
                    format!("({} {})", t.name(), self.expr(u, vars, d))
                }
                10 => format!("(clamp {} (-1.0) 1.0)", self.expr(t, vars, d)),
                _ => self.leaf(t, vars),
            },
        }
    }
}

fn vars(vs: &[(&str, ElemType)]) -> Vec<(String, ElemType)> {
    vs.iter().map(|(n, t)| (n.to_string(), *t)).collect()
}

/// A program around a scalar expression of type `rt` made by `body` from variables of
/// type `t` (and one of another type): a map over one or two arrays, a top-level scalar,
/// a generate reading an array, a nested lambda, or a reduction of a map.
fn ctx(g: &mut G, t: ElemType, rt: ElemType, body: &dyn Fn(&mut G, &Vars) -> String) -> String {
    let u = g.pick(&[I32, I64, F32, F64, Bool]);
    let sh = if g.chance(1, 4) { "[n, m]" } else { "[n]" };
    let (tn, un) = (t.name(), u.name());
    match g.below(7) {
        0 => {
            let b = body(g, &vars(&[("x", t)]));
            format!("input xs : {tn}{sh}\noutput o = map (\\x -> {b}) xs")
        }
        1 => {
            let b = body(g, &vars(&[("x", t), ("y", u)]));
            format!("input xs : {tn}{sh}\ninput ys : {un}{sh}\noutput o = map (\\x y -> {b}) xs ys")
        }
        2 => {
            let b = body(g, &vars(&[("a", t), ("b", u)]));
            format!("input a : {tn}\ninput b : {un}\noutput o = {b}")
        }
        3 => {
            let b = body(g, &vars(&[("xs[i]", t), ("a", t), ("i", I64)]));
            format!("input xs : {tn}[n]\ninput a : {tn}\noutput o = generate [n] (\\i -> {b})")
        }
        4 if rt == t => {
            // inside a lambda inside a lambda
            let b = body(g, &vars(&[("x", t), ("y", t)]));
            format!("input xs : {tn}[n]\noutput o = map (\\x -> iterate 2 (\\y -> {b}) x) xs")
        }
        5 => {
            let b = body(g, &vars(&[("x", t)]));
            let (op, ne) = match rt {
                Bool => ("(&&)", "true"),
                I32 | I64 => ("(+)", "0"),
                _ => ("max", "(-inf)"),
            };
            format!("input xs : {tn}[n, m]\noutput o = reduce {op} {ne} (map (\\x -> {b}) xs)")
        }
        _ => {
            // a named function, called from a shared let and from a map
            let b = body(g, &vars(&[("p", t), ("q", t)]));
            format!(
                "input xs : {tn}[n]\nlet h = \\p q -> {b}\nlet ys = map (\\x -> h x x) xs\noutput o = ys\noutput o2 = map (\\y x -> h x y) xs (reverse xs)"
            )
        }
    }
}

// ---------------------------------------------------------------- the templates

/// Hand-written programs matching one rule's left-hand side.
struct Template {
    rule: &'static str,
    /// Helper rules run (to saturation, a few iterations) before the rule under test.
    pre: &'static [&'static str],
    gen: fn(&mut G) -> String,
}

fn tpl(rule: &'static str, gen: fn(&mut G) -> String) -> Template {
    Template { rule, pre: &[], gen }
}

fn tpl_pre(rule: &'static str, pre: &'static [&'static str], gen: fn(&mut G) -> String) -> Template {
    Template { rule, pre, gen }
}

/// A scalar template over the numeric types `ts`, result of type `t`.
fn sc(g: &mut G, ts: &[ElemType], f: fn(&mut G, ElemType, &Vars) -> String) -> String {
    let t = g.pick(ts);
    ctx(g, t, t, &|g, v| f(g, t, v))
}

/// A scalar template with a `bool` result over variables of a type from `ts`.
fn sc_bool(g: &mut G, ts: &[ElemType], f: fn(&mut G, ElemType, &Vars) -> String) -> String {
    let t = g.pick(ts);
    ctx(g, t, Bool, &|g, v| f(g, t, v))
}

/// A reduction operator and a neutral element for `t`.
fn op_ne(g: &mut G, t: ElemType) -> (String, String) {
    let (op, ne): (&str, &str) = match t {
        Bool => g.pick(&[("(&&)", "true"), ("(||)", "false"), ("(\\p q -> p && q)", "true")]),
        I32 => g.pick(&[
            ("(+)", "0"),
            ("(*)", "1"),
            ("min", "2147483647"),
            ("max", "(-2147483648)"),
            ("(\\p q -> q + p)", "0"),
        ]),
        I64 => g.pick(&[
            ("(+)", "0"),
            ("(*)", "1"),
            ("min", "9223372036854775807"),
            ("max", "(-9223372036854775807 - 1)"),
            ("(\\p q -> p * q)", "1"),
        ]),
        _ => g.pick(&[
            ("(+)", "0"),
            ("(+)", "(-0.0)"),
            ("(*)", "1.0"),
            ("min", "inf"),
            ("max", "(-inf)"),
            ("(\\p q -> p + q)", "0.0"),
            ("(\\p q -> min q p)", "inf"),
        ]),
    };
    (op.to_string(), ne.to_string())
}

/// An operator with a neutral element or, sometimes, one without (for the rules that do
/// not need it, and to see those that do refuse it).
fn op_any(g: &mut G, t: ElemType) -> (String, String) {
    if g.chance(1, 4) {
        let ne = match t {
            Bool => "false",
            I32 | I64 => "5",
            _ => "(-1.5)",
        };
        let op = if t == Bool { "(&&)" } else { "(+)" };
        (op.to_string(), ne.to_string())
    } else {
        op_ne(g, t)
    }
}

/// A provably in-bounds index into a dimension `d` from the index parameter `i` over `d`.
fn in_bounds_ix(g: &mut G, i: &str, d: &str) -> String {
    match g.below(6) {
        0 => format!("{d} - 1 - {i}"),
        1 => format!("clamp ({i} + 1) 0 ({d} - 1)"),
        2 => format!("clamp ({i} - 2) 0 ({d} - 1)"),
        3 if g.chance(1, 3) => "0".to_string(),
        _ => i.to_string(),
    }
}

fn templates() -> Vec<Template> {
    let mut v = vec![
        // ---------------------------------------------------------- scalar
        tpl("scalar-mul-one", |g| sc(g, &NUM, |g, t, v| format!("({} * {})", g.e(t, v), g.one(t)))),
        tpl("scalar-one-mul", |g| sc(g, &NUM, |g, t, v| format!("({} * {})", g.one(t), g.e(t, v)))),
        tpl("scalar-div-one", |g| sc(g, &NUM, |g, t, v| format!("({} / {})", g.e(t, v), g.one(t)))),
        tpl("scalar-add-zero", |g| {
            sc(g, &NUM, |g, t, v| {
                let z = if t.is_float() { "(-0.0)" } else { "0" };
                format!("({} + {z})", g.e(t, v))
            })
        }),
        tpl("scalar-zero-add", |g| {
            sc(g, &NUM, |g, t, v| {
                let z = if t.is_float() { "(-0.0)" } else { "0" };
                format!("({z} + {})", g.e(t, v))
            })
        }),
        tpl("scalar-sub-zero", |g| {
            sc(g, &NUM, |g, t, v| {
                let z = if t.is_float() { g.pick(&["0.0", "0"]) } else { "0" };
                format!("({} - {z})", g.e(t, v))
            })
        }),
        tpl("scalar-mul-zero", |g| sc(g, &INT, |g, t, v| format!("({} * 0)", g.e(t, v)))),
        tpl("scalar-zero-mul", |g| sc(g, &INT, |g, t, v| format!("(0 * {})", g.e(t, v)))),
        tpl("scalar-neg-neg", |g| {
            sc(g, &NUM, |g, t, v| {
                let e = g.e(t, v);
                let e = if e.starts_with('(') { e } else { format!("({e} + {e})") };
                format!("(-(-{e}))")
            })
        }),
        tpl("scalar-not-not", |g| sc_bool(g, &NUM, |g, _, v| format!("(!(!{}))", g.cond(v)))),
        tpl("scalar-abs-abs", |g| sc(g, &NUM, |g, t, v| format!("(abs (abs {}))", g.e(t, v)))),
        tpl("scalar-min-top", |g| {
            sc(g, &NUM, |g, t, v| {
                let top = match t {
                    I32 => "2147483647",
                    I64 => "9223372036854775807",
                    _ => "inf",
                };
                format!("(min {} {top})", g.e(t, v))
            })
        }),
        tpl("scalar-max-bottom", |g| {
            sc(g, &NUM, |g, t, v| {
                let bottom = match t {
                    I32 => "(-2147483648)",
                    I64 => "(-9223372036854775807 - 1)",
                    _ => "(-inf)",
                };
                format!("(max {} {bottom})", g.e(t, v))
            })
        }),
        tpl("scalar-min-self", |g| {
            sc(g, &NUM, |g, t, v| {
                let e = g.e(t, v);
                format!("(min {e} {e})")
            })
        }),
        tpl("scalar-max-self", |g| {
            sc(g, &NUM, |g, t, v| {
                let e = g.e(t, v);
                format!("(max {e} {e})")
            })
        }),
        tpl("scalar-and-true", |g| sc_bool(g, &NUM, |g, _, v| format!("({} && true)", g.cond(v)))),
        tpl("scalar-or-false", |g| sc_bool(g, &NUM, |g, _, v| format!("({} || false)", g.cond(v)))),
        tpl("scalar-if-true", |g| {
            sc(g, &NUM, |g, t, v| format!("(if true then {} else {})", g.e(t, v), g.e(t, v)))
        }),
        tpl("scalar-if-false", |g| {
            sc(g, &NUM, |g, t, v| format!("(if false then {} else {})", g.e(t, v), g.e(t, v)))
        }),
        tpl("scalar-if-same", |g| {
            sc(g, &NUM, |g, t, v| {
                let e = g.e(t, v);
                format!("(if {} then {e} else {e})", g.cond(v))
            })
        }),
        tpl("scalar-iterate-none", |g| {
            sc(g, &NUM, |g, t, v| {
                let n = g.pick(&["0", "(-1)", "(-7)"]);
                format!("(iterate {n} (\\y -> y * {}) {})", g.e(t, v), g.e(t, v))
            })
        }),
        tpl("scalar-iterate-const", |g| {
            sc(g, &NUM, |g, t, v| {
                let n = g.pick(&["1", "2", "7"]);
                let (a, b) = (g.lit(t), g.lit(t));
                format!("(iterate {n} (\\y -> {a} * {b}) {})", g.e(t, v))
            })
        }),
        tpl("scalar-if-not", |g| {
            sc(g, &NUM, |g, t, v| format!("(if (!{}) then {} else {})", g.cond(v), g.e(t, v), g.e(t, v)))
        }),
        tpl("fm-pow-two", |g| {
            sc(g, &FLT, |g, t, v| format!("(pow {} {})", g.e(t, v), g.pick(&["2.0", "2"])))
        }),
        tpl("scalar-div-pow2", |g| {
            sc(g, &FLT, |g, t, v| {
                let c = g.pick(&["2.0", "0.5", "4.0", "(-2.0)", "0.25", "1024.0", "(-0.125)", "2"]);
                format!("({} / {c})", g.e(t, v))
            })
        }),
        tpl("scalar-eq-self", |g| {
            sc_bool(g, &[I32, I64, Bool], |g, t, v| {
                let e = g.e(t, v);
                format!("({e} == {e})")
            })
        }),
        tpl("scalar-sub-self", |g| {
            sc(g, &INT, |g, t, v| {
                let e = g.e(t, v);
                format!("({e} - {e})")
            })
        }),
        tpl("scalar-sub-sub", |g| {
            sc(g, &INT, |g, t, v| {
                let a = g.e(t, v);
                format!("({a} - ({a} - {}))", g.e(t, v))
            })
        }),
        tpl("scalar-convert-same", |g| {
            sc(g, &NUM, |g, t, v| {
                let e = g.e(t, v);
                // a variable pins the type
                let e = if v.iter().any(|(n, u)| *u == t && e.contains(n.as_str())) {
                    e
                } else {
                    v.iter().find(|(_, u)| *u == t).map(|(n, _)| n.clone()).unwrap_or(e)
                };
                format!("({} {e})", t.name())
            })
        }),
        // ---------------------------------------------------------- index algebra
        tpl("idx-transpose-transpose", |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("x", t)]));
            match g.below(3) {
                0 => format!("input xs : {t}[n, m]\noutput o = transpose (transpose xs)"),
                1 => format!("input xs : {t}[n, m]\noutput o = map (\\x -> {e}) (transpose (transpose xs))"),
                _ => format!(
                    "input xs : {t}[n, m]\nlet a = map (\\x -> {e}) xs\noutput o = transpose (transpose a)\noutput p = a"
                ),
            }
        }),
        tpl("idx-reverse-reverse", |g| {
            let t = g.pick(&NUM);
            let sh = g.pick(&["[n]", "[n, m]"]);
            let e = g.e(t, &vars(&[("x", t)]));
            match g.below(3) {
                0 => format!("input xs : {t}{sh}\noutput o = reverse (reverse xs)"),
                1 => format!("input xs : {t}{sh}\noutput o = map (\\x -> {e}) (reverse (reverse xs))"),
                _ => format!("input xs : {t}{sh}\noutput o = reverse (reverse (map (\\x -> {e}) xs))"),
            }
        }),
        tpl("idx-slice-slice", |g| {
            let t = g.pick(&NUM);
            let l1 = g.below(6);
            let s2 = g.below(3);
            // mostly inside the inner slice, sometimes not
            let l2 = if g.chance(4, 5) { g.below(l1.saturating_sub(s2) + 1) } else { g.below(7) };
            let s1 = g.pick(&["0", "1", "2", "a", "n - 5", "(n / 2)"]);
            format!(
                "input xs : {t}[n]\ninput a : i64\noutput o = slice (slice xs ({s1}) {l1}) {s2} {l2}\noutput p = slice (slice (map (\\x -> x + x) xs) 1 {l1}) {s2} {l2}"
            )
        }),
        tpl("idx-backpermute-backpermute", |g| {
            let t = g.pick(&NUM);
            if g.chance(1, 3) {
                let f = g.pick(&["(i, m - 1 - j)", "(n - 1 - i, j)", "(i, j)"]);
                let g2 = g.pick(&["(j, i)", "(clamp (j + 1) 0 (n - 1), i)", "(n - 1 - j, m - 1 - i)"]);
                return format!(
                    "input xs : {t}[n, m]\noutput o = backpermute [m, n] (\\i j -> {g2}) (backpermute [n, m] (\\i j -> {f}) xs)"
                );
            }
            let f = in_bounds_ix(g, "i", "n");
            let h = in_bounds_ix(g, "i", "n");
            let f = if g.chance(1, 4) { "clamp (i * 2) 0 (n - 1)".to_string() } else { f };
            format!("input xs : {t}[n]\noutput o = backpermute [n] (\\i -> {h}) (backpermute [n] (\\i -> {f}) xs)")
        }),
        tpl("idx-reshape-reshape", |g| {
            let t = g.pick(&NUM);
            g.pick(&[
                format!("input xs : {t}[n, m]\noutput o = reshape [n * m] (reshape [m, n] xs)"),
                format!("input xs : {t}[n, m]\noutput o = reshape [n, m] (reshape [m, n] xs)"),
                format!("input xs : {t}[3, 2]\noutput o = reshape [6] (reshape [2, 3] xs)"),
                format!(
                    "input xs : {t}[3, 2]\noutput o = reshape [3, 2] (reshape [6] (map (\\x -> x * x) xs))"
                ),
                format!("input xs : {t}[n]\noutput o = reshape [1, n] (reshape [n, 1] xs)"),
                format!("input xs : {t}[n]\noutput o = reshape [n] (reshape [1, n] xs)"),
            ])
        }),
        tpl("idx-reshape-same", |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("x", t)]));
            g.pick(&[
                format!("input xs : {t}[n, m]\noutput o = reshape [n, m] xs"),
                format!("input xs : {t}[n]\noutput o = reshape [n] (map (\\x -> {e}) xs)"),
                format!("input xs : {t}[4, 2]\noutput o = reshape [4, 2] xs"),
                format!(
                    "input xs : {t}[n]\nlet a = map (\\x -> {e}) xs\noutput o = reshape [n] a\noutput p = a"
                ),
            ])
        }),
        tpl("idx-eta", |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("x", t)]));
            g.pick(&[
                format!("input xs : {t}[n]\noutput o = generate [n] (\\i -> xs[i])"),
                format!("input xs : {t}[n, m]\noutput o = generate [n, m] (\\i j -> xs[i, j])"),
                format!(
                    "input xs : {t}[n]\nlet a = map (\\x -> {e}) xs\noutput o = generate [n] (\\i -> a[i])\noutput p = a"
                ),
                format!("input xs : {t}[n, m]\noutput o = map (\\x -> {e}) (generate [n, m] (\\i j -> xs[i, j]))"),
            ])
        }),
        tpl("idx-size-known", |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("x", t)]));
            g.pick(&[
                format!("input xs : {t}[n]\noutput l = length xs"),
                format!("input xs : {t}[n, m]\noutput l = size xs 1 + length xs"),
                format!("input xs : {t}[n]\noutput o = map (\\x -> {e} + {t} (length xs)) xs"),
                format!("input xs : {t}[n, 3]\noutput l = length (map (\\x -> {e}) xs) * size xs 1"),
                format!("input xs : {t}[n]\noutput o = generate [length xs] (\\i -> xs[length xs - 1 - i])"),
            ])
        }),
        tpl_pre("idx-size-intro", &["recast-map", "recast-concat", "fuse-beta"], |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("x", t)]));
            g.pick(&[
                format!("input xs : {t}[n]\nlet c = concat xs xs\noutput o = map (\\x -> {e}) c\noutput l = n + n"),
                format!("input xs : {t}[n]\noutput o = generate [n + 1] (\\i -> {t} i)\noutput l = length o + (n + 1)"),
                format!("input xs : {t}[n, m]\noutput o = generate [n * 2, m] (\\i j -> xs[i / 2, j])\noutput l = size o 0"),
                format!("input xs : {t}[n]\ninput ys : {t}[m]\noutput o = map (\\x y -> x) xs ys\noutput l = length o"),
            ])
        }),
        // ---------------------------------------------------------- index forms
        tpl("recast-map", |g| {
            let (t, u) = (g.pick(&NUM), g.pick(&[I32, I64, F32, F64, Bool]));
            let sh = g.pick(&["[n]", "[n, m]", "[3]"]);
            match g.below(3) {
                0 => {
                    let e = g.e(t, &vars(&[("x", t)]));
                    format!("input xs : {t}{sh}\noutput o = map (\\x -> {e}) xs")
                }
                1 => {
                    let e = g.e(t, &vars(&[("x", t), ("y", u)]));
                    format!("input xs : {t}{sh}\ninput ys : {u}{sh}\noutput o = map (\\x y -> {e}) xs ys")
                }
                _ => {
                    let e = g.e(t, &vars(&[("x", t), ("y", u), ("z", t)]));
                    format!(
                        "input xs : {t}{sh}\ninput ys : {u}{sh}\nlet f = \\x y z -> {e}\noutput o = map f xs ys xs\noutput s = reduce (+) 0 (map (\\x -> x) xs)"
                    )
                }
            }
        }),
        tpl("recast-iota", |g| {
            g.pick(&[
                "input xs : f32[n]\noutput o = iota n".to_string(),
                "input xs : f32[n]\noutput o = map (\\k -> f32 k * 0.5) (iota n)".to_string(),
                "input xs : f32[n]\noutput s = reduce (+) 0 (iota (n + 2))".to_string(),
                "input xs : f32[n]\noutput o = map (\\k x -> x * f32 k) (iota n) xs".to_string(),
            ])
        }),
        tpl("recast-fill", |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("a", t)]));
            g.pick(&[
                format!("input xs : {t}[n]\ninput a : {t}\noutput o = fill [n] {e}"),
                format!("input xs : {t}[n, m]\ninput a : {t}\noutput o = map (\\x f -> x + f) xs (fill [n, m] {e})"),
                format!("input a : {t}\noutput o = fill [3] {e}"),
                format!("input xs : {t}[n]\ninput a : {t}\noutput s = reduce (+) 0 (fill [n, 2] {e})"),
            ])
        }),
        tpl("recast-backpermute", |g| {
            let t = g.pick(&NUM);
            let ix = in_bounds_ix(g, "i", "n");
            g.pick(&[
                format!("input xs : {t}[n]\noutput o = backpermute [n] (\\i -> {ix}) xs"),
                format!("input xs : {t}[n, m]\noutput o = backpermute [m, n] (\\i j -> (j, i)) xs"),
                format!("input xs : {t}[n, m]\noutput o = backpermute [n * m] (\\i -> (i / m, i % m)) xs"),
                format!("input xs : {t}[n]\ninput k : i64\noutput o = backpermute [n] (\\i -> i + k) xs"),
                format!("input xs : {t}[n]\noutput o = backpermute [n, 2] (\\i j -> i) xs"),
            ])
        }),
        tpl("recast-transpose", |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("x", t)]));
            g.pick(&[
                format!("input xs : {t}[n, m]\noutput o = transpose xs"),
                format!("input xs : {t}[n, m]\noutput o = transpose (map (\\x -> {e}) xs)"),
                format!("input xs : {t}[2, m]\noutput o = reduce (+) 0 (transpose xs)"),
            ])
        }),
        tpl("recast-reverse", |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("x", t)]));
            g.pick(&[
                format!("input xs : {t}[n]\noutput o = reverse xs"),
                format!("input xs : {t}[n, m]\noutput o = reverse xs"),
                format!("input xs : {t}[n]\noutput o = map (\\x -> {e}) (reverse xs)"),
            ])
        }),
        tpl("recast-slice", |g| {
            let t = g.pick(&NUM);
            let s = g.pick(&["0", "1", "2", "a", "n - 2"]);
            let l = g.pick(&["0", "1", "2", "3", "b", "n - 1"]);
            format!("input xs : {t}[n]\ninput a : i64\ninput b : i64\noutput o = slice xs ({s}) ({l})")
        }),
        tpl("recast-gather", |g| {
            let t = g.pick(&NUM);
            g.pick(&[
                format!("input xs : {t}[n]\ninput idx : i64[m]\noutput o = gather xs idx"),
                format!(
                    "input xs : {t}[n]\ninput idx : i64[m]\noutput o = gather xs (map (\\k -> clamp k 0 (n - 1)) idx)"
                ),
                format!(
                    "input xs : {t}[n]\ninput idx : i64[m, 2]\noutput o = gather xs (map (\\k -> clamp k 0 (n - 1)) idx)"
                ),
                format!("input xs : {t}[n]\noutput o = gather xs (reverse (iota n))"),
            ])
        }),
        tpl("recast-reshape", |g| {
            let t = g.pick(&NUM);
            g.pick(&[
                format!("input xs : {t}[n, m]\noutput o = reshape [m, n] xs"),
                format!("input xs : {t}[n]\noutput o = reshape [n, 1] xs"),
                format!("input xs : {t}[n]\noutput o = reshape [1, n] xs"),
                format!("input xs : {t}[6]\noutput o = reshape [2, 3] xs"),
                format!("input xs : {t}[2, 3]\noutput o = reshape [3, 2] xs"),
                format!("input xs : {t}[n, 2]\noutput o = reshape [2, n] xs"),
                format!("input xs : {t}[n, m]\noutput o = reshape [n * m] xs"),
            ])
        }),
        tpl("recast-concat", |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("x", t)]));
            g.pick(&[
                format!("input xs : {t}[n]\ninput ys : {t}[m]\noutput o = concat xs ys"),
                format!("input xs : {t}[n]\noutput o = concat xs (map (\\x -> {e}) xs)"),
                format!("input xs : {t}[n]\ninput ys : {t}[m]\noutput o = concat (concat xs ys) xs"),
            ])
        }),
        // ---------------------------------------------------------- fusion
        tpl("fuse-read", fuse_read_generate),
        tpl_pre("fuse-read", &["recast-map"], |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("x", t)]));
            let ix = in_bounds_ix(g, "i", "n");
            let c = g.e(t, &vars(&[("y", t), ("z", t)]));
            format!(
                "input xs : {t}[n]\nlet a = map (\\x -> {e}) xs\nlet c = \\y z -> {c}\noutput o = generate [n] (\\i -> c a[{ix}] xs[i])"
            )
        }),
        tpl_pre("fuse-read", &["fuse-reduce", "fuse-scan", "fuse-scan-exclusive", "fuse-filter"], |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("x", t), ("k", I64)]));
            let ix = in_bounds_ix(g, "i", "n");
            let (op, ne) = op_any(g, t);
            let consumer = match g.below(4) {
                0 => format!("reduce {op} {ne} (generate [n] (\\i -> a[{ix}]))"),
                1 => format!("scan {op} {ne} (generate [n] (\\i -> a[{ix}]))"),
                2 => format!("scan_exclusive {op} {ne} (generate [n] (\\i -> a[{ix}]))"),
                _ => format!("filter (\\v -> v > a[0]) (generate [n] (\\i -> a[{ix}]))"),
            };
            format!("input xs : {t}[n]\nlet a = generate [n] (\\k -> let x = xs[k] in {e})\noutput o = {consumer}")
        }),
        tpl_pre("fuse-read", &["fuse-permute"], |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("x", t)]));
            let ix = in_bounds_ix(g, "i", "n");
            let (op, ne) = op_ne(g, t);
            format!(
                "input xs : {t}[n]\ninput ys : {t}[m]\nlet a = generate [n] (\\k -> let x = xs[k] in {e})\noutput o = permute {op} (fill [m] {ne}) (\\i -> if m == 0 then -1 else clamp (i * 2) 0 (m - 1)) (generate [n] (\\i -> a[{ix}]))"
            )
        }),
        tpl_pre("fuse-read", &["recast-map", "fuse-permute"], |g| {
            // a permute's target reads a producer at the permute's own index, or another
            // in-bounds one (a compaction's `flags[i]`), over an input or a generate source
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("x", t)]));
            let ix = in_bounds_ix(g, "i", "n");
            let (op, ne) = op_ne(g, t);
            let src = g.pick(&["xs", "(generate [n] (\\j -> xs[j] + xs[n - 1 - j]))"]);
            format!(
                "input xs : {t}[n]\nlet a = map (\\x -> if {e} > x then 1 else 0) xs\nlet b = map (\\x -> {e}) xs\noutput o = permute {op} (fill [n] {ne}) (\\i -> if a[{ix}] == 1 then clamp (n - 1 - i) 0 (n - 1) else -1) {src}\noutput p = permute {op} (fill [n] {ne}) (\\i -> if b[i] > b[{ix}] then i else -1) xs"
            )
        }),
        tpl("fuse-beta", |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("p", t)]));
            let e2 = g.e(t, &vars(&[("p", t), ("q", t)]));
            let a = g.e(t, &vars(&[("x", t)]));
            let b = g.e(t, &vars(&[("x", t), ("y", t)]));
            g.pick(&[
                format!("input xs : {t}[n]\nlet f = \\p -> {e}\noutput o = map (\\x -> f {a}) xs"),
                format!("input xs : {t}[n]\nlet f = \\p -> {e}\noutput o = map (\\x -> f (f x)) xs"),
                format!("input xs : {t}[n]\nlet h = \\p q -> {e2}\noutput o = map (\\x -> h {a} x) xs"),
                format!(
                    "input xs : {t}[n]\nlet h = \\p q -> {e2}\noutput o = map (\\x -> iterate 2 (\\y -> h {b} x) x) xs"
                ),
                format!(
                    "input xs : {t}[n]\nlet h = \\p q -> iterate 2 (\\r -> {e2} + r) p\noutput o = map (\\x -> iterate 1 (\\y -> h y {a}) x) xs"
                ),
                format!("input a : {t}\nlet f = \\p -> {e}\noutput o = f (a + a)"),
                // one argument for two parameters used in a loop body: the parameters merge
                format!(
                    "input xs : {t}[n]\nlet h = \\p q -> iterate 2 (\\r -> {e2} + r) q\noutput o = map (\\x -> h {a} {a}) xs"
                ),
            ])
        }),
        tpl_pre("fuse-beta", &["recast-map"], |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("p", t), ("q", t)]));
            g.pick(&[
                format!("input xs : {t}[n]\nlet f = \\p q -> {e}\noutput o = map f xs xs"),
                format!("input xs : {t}[n]\ninput ys : {t}[n]\noutput o = map (\\p q -> {e}) xs ys"),
                format!("input xs : {t}[n, m]\ninput ys : {t}[n, m]\noutput o = map (\\p q -> {e}) xs ys"),
            ])
        }),
        tpl_pre("fuse-proj-tuple", &["recast-backpermute", "fuse-beta"], |g| {
            let t = g.pick(&NUM);
            g.pick(&[
                format!("input xs : {t}[n, m]\noutput o = backpermute [m, n] (\\i j -> (j, i)) xs"),
                format!("input xs : {t}[n, m]\noutput o = backpermute [n, m] (\\i j -> (i, m - 1 - j)) xs"),
                format!("input xs : {t}[n, m]\noutput o = backpermute [n * m] (\\k -> (k / m, k % m)) xs"),
                format!("input xs : {t}[n, m]\ninput a : i64\noutput o = backpermute [n] (\\k -> (k, a)) xs"),
            ])
        }),
        tpl_pre("fuse-proj-tuple", &["idx-backpermute-backpermute", "fuse-beta"], |g| {
            let t = g.pick(&NUM);
            format!(
                "input xs : {t}[n, m]\noutput o = backpermute [n, m] (\\i j -> (n - 1 - i, j)) (backpermute [n, m] (\\i j -> (i, m - 1 - j)) xs)"
            )
        }),
        tpl("fuse-reduce", |g| consumer_of_generate(g, "reduce")),
        tpl_pre("fuse-reduce", &["recast-map"], |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("x", t)]));
            let (op, ne) = op_any(g, t);
            format!("input xs : {t}[n]\noutput s = reduce {op} {ne} (map (\\x -> {e}) xs)")
        }),
        tpl("fuse-scan", |g| consumer_of_generate(g, "scan")),
        tpl("fuse-scan-exclusive", |g| consumer_of_generate(g, "scan_exclusive")),
        tpl("fuse-filter", |g| {
            let t = g.pick(&[I32, I64, F32, F64, Bool]);
            let e = g.e(t, &vars(&[("x", t), ("i", I64)]));
            let p = g.cond(&vars(&[("v", t)]));
            let src = if t == Bool { "input xs : bool[n]" } else { &format!("input xs : {t}[n]") };
            format!("{src}\noutput o = filter (\\v -> {p}) (generate [n] (\\i -> let x = xs[i] in {e}))")
        }),
        tpl("fuse-permute", |g| {
            let t = g.pick(&NUM);
            let e = g.e(t, &vars(&[("x", t), ("i", I64)]));
            let (op, ne) = op_ne(g, t);
            let dest = g.pick(&[format!("(fill [m] {ne})"), "ys".to_string()]);
            let target = g.pick(&[
                "if m == 0 then -1 else clamp (i * 2) 0 (m - 1)",
                "if m == 0 then -1 else m - 1 - clamp i 0 (m - 1)",
                "if i % 2 == 0 then -1 else i / 2",
            ]);
            format!(
                "input xs : {t}[n]\ninput ys : {t}[m]\noutput o = permute {op} {dest} (\\i -> {target}) (generate [n] (\\i -> let x = xs[i] in {e}))"
            )
        }),
        tpl("fuse-reduce-filter", |g| {
            let t = g.pick(&[I32, I64, F32, F64, Bool]);
            let p = g.cond(&vars(&[("v", t)]));
            let (op, ne) = op_any(g, t);
            let src = format!("input xs : {}[n]", t.name());
            g.pick(&[
                format!("{src}\noutput s = reduce {op} {ne} (filter (\\v -> {p}) xs)"),
                format!("{src}\nlet f = filter (\\v -> {p}) xs\noutput s = reduce {op} {ne} f\noutput c = f"),
            ])
        }),
        tpl("fuse-reduce-map-filter", |g| {
            let t = g.pick(&NUM);
            let u = if g.chance(1, 3) { g.pick(&[I32, I64, F32, F64, Bool]) } else { t };
            let p = g.cond(&vars(&[("v", t)]));
            let e = match u {
                Bool => g.cond(&vars(&[("x", t)])),
                u if u == t => g.e(t, &vars(&[("x", t)])),
                u => format!("({} {})", u.name(), g.e(t, &vars(&[("x", t)]))),
            };
            let (op, ne) = op_any(g, u);
            format!(
                "input xs : {t}[n]\noutput s = reduce {op} {ne} (map (\\x -> {e}) (filter (\\v -> {p}) xs))"
            )
        }),
        tpl("fuse-filter-filter", |g| {
            let t = g.pick(&[I32, I64, F32, F64, Bool]);
            let p = g.cond(&vars(&[("v", t)]));
            let q = g.cond(&vars(&[("w", t)]));
            let r = g.cond(&vars(&[("v", t)]));
            let src = format!("input xs : {}[n]", t.name());
            g.pick(&[
                format!("{src}\noutput o = filter (\\w -> {q}) (filter (\\v -> {p}) xs)"),
                format!("{src}\noutput o = filter (\\v -> {r}) (filter (\\w -> {q}) (filter (\\v -> {p}) xs))"),
                format!("{src}\nlet f = filter (\\v -> {p}) xs\noutput o = filter (\\w -> {q}) f\noutput l = length f"),
            ])
        }),
        // ---------------------------------------------------------- filters, selects, scans, hoist
        tpl("filter-length", |g| {
            let t = g.pick(&[I32, I64, F32, F64, Bool]);
            let p = g.cond(&vars(&[("v", t)]));
            let src = format!("input xs : {}[n]", t.name());
            g.pick(&[
                format!("{src}\noutput c = length (filter (\\v -> {p}) xs)"),
                format!("{src}\noutput c = size (filter (\\v -> {p}) xs) 0"),
                format!("{src}\nlet f = filter (\\v -> {p}) xs\noutput c = length f\noutput o = f"),
                format!("{src}\nlet f = filter (\\v -> {p}) xs\noutput s = reduce (+) 0 (map (\\v -> 1) f) + length f"),
            ])
        }),
        tpl("select-not", |g| {
            sc(g, &NUM, |g, t, v| format!("(if !({}) then {} else {})", g.cond(v), g.e(t, v), g.e(t, v)))
        }),
        tpl("scan-from-exclusive", |g| {
            let t = g.pick(&NUM);
            let (op, ne) = match (t.is_float(), g.below(4)) {
                (_, 0) => ("\\p q -> p + q", if t.is_float() { "0.0" } else { "0" }),
                (_, 1) => ("\\p q -> max p q", "3"),
                (true, 2) => ("\\p q -> p * q", "1.5"),
                (false, 2) => ("\\p q -> p * q + 1", "1"),
                _ => ("\\p q -> min q p", "7"),
            };
            let shape = g.pick(&["[n]", "[n, m]"]);
            let tn = t.name();
            g.pick(&[
                format!("input xs : {tn}{shape}\noutput o = map ({op}) (scan_exclusive ({op}) {ne} xs) xs"),
                format!("input xs : {tn}{shape}\nlet f = {op}\nlet e = scan_exclusive f {ne} xs\noutput o = map f e xs\noutput e2 = e"),
            ])
        }),
        tpl_pre("scan-triangular", &["fuse-reduce"], |g| {
            let t = g.pick(&NUM);
            let tn = t.name();
            let (op, ne) = match (t.is_float(), g.below(4)) {
                (true, 0) => ("(+)", "0.0"),
                (false, 0) => ("(+)", "0"),
                (true, 1) => ("max", "(-inf)"),
                (true, 2) => ("(*)", "1.0"),
                (false, 2) => ("(*)", "1"),
                (true, _) => ("min", "inf"),
                (false, _) => ("(+)", "0"),
            };
            let f = g.pick(&["xs[j]".to_string(), "xs[j] * xs[j]".to_string(), format!("({tn} j) + xs[j]")]);
            // the lower triangle (with or without its diagonal) as the `then` arm, as the
            // `else` arm of the opposite test, and the upper (the rule must not fire there)
            let test = g.pick(&[
                format!("if j <= i then {f} else {ne}"),
                format!("if j < i then {f} else {ne}"),
                format!("if i >= j then {f} else {ne}"),
                format!("if i > j then {f} else {ne}"),
                format!("if i < j then {ne} else {f}"),
                format!("if j > i then {ne} else {f}"),
                format!("if j >= i then {f} else {ne}"),
                format!("if i <= j then {ne} else {f}"),
                format!("if i < j then {f} else {ne}"),
            ]);
            format!("input xs : {tn}[n]\noutput o = reduce {op} {ne} (generate [n, n] (\\i j -> {test}))")
        }),
        tpl("hoist-unswitch", |g| {
            let t = g.pick(&FLT);
            let tn = t.name();
            let a = g.e(t, &vars(&[("x", t)]));
            let b = g.e(t, &vars(&[("x", t)]));
            // a condition no element changes: a scalar input, a comparison of two, a size
            let c = g.pick(&[
                "flag".to_string(),
                "s > 0.5".to_string(),
                "n > 3".to_string(),
                "flag && s < 2.0".to_string(),
            ]);
            let lets = format!("input xs : {tn}[n]\ninput flag : bool\ninput s : {tn}\ninput m : {tn}[n, k]");
            g.pick(&[
                format!("{lets}\noutput o = map (\\x -> if {c} then {a} else {b}) xs"),
                format!("{lets}\noutput o = map (\\x y -> if {c} then x + y else x * y) xs xs"),
                format!("{lets}\noutput o = generate [n, k] (\\i j -> if {c} then m[i, j] * 2.0 else m[i, j] - xs[i])"),
                format!("{lets}\noutput o = reduce (+) 0 (map (\\x -> if {c} then {a} else {b}) xs)"),
            ])
        }),
        tpl("hoist-invariant", |g| {
            let t = g.pick(&FLT);
            let tn = t.name();
            // `zz` stands for the read the sub-expression depends on (no builtin holds `zz`)
            let e = g.e(t, &vars(&[("zz", t)]));
            let dear = g.pick(&[
                format!("exp (({e}) * 0.125)"),
                format!("sqrt (abs ({e}))"),
                format!("(1.0 / ({e}))"),
                format!("cos ({e})"),
            ]);
            let lets = format!("input a : {tn}[m]\ninput b : {tn}[n, m]\ninput c : {tn}[n, m, k]");
            let with = |x: &str| dear.replace("zz", x);
            g.pick(&[
                format!("{lets}\noutput o = generate [n, m] (\\i j -> b[i, j] * {})", with("a[j]")),
                format!("{lets}\noutput o = reduce (+) 0 (generate [n, m] (\\i j -> b[i, j] + {}))", with("a[j]")),
                format!("{lets}\noutput o = reduce max (-inf) (generate [n, m, k] (\\i j p -> c[i, j, p] * {}))", with("b[i, j]")),
                format!("{lets}\noutput o = generate [n, m] (\\i j -> if b[i, j] > 0.5 then {} else b[i, j] + {})", with("a[j]"), with("a[j]")),
                format!("{lets}\noutput o = generate [n, m, k] (\\i j p -> c[i, j, p] - {} * b[i, j])", with("a[j]")),
            ])
        }),
        tpl("hoist-shared", |g| {
            let t = g.pick(&FLT);
            let tn = t.name();
            let e = g.e(t, &vars(&[("zz", t)]));
            let dear = g.pick(&[
                format!("exp (({e}) * 0.125)"),
                format!("sqrt (abs ({e}))"),
                format!("(1.0 / ({e}))"),
                format!("cos ({e})"),
            ]);
            // over every index: `a[i, j]`, or a row's value beside it
            let zz = g.pick(&["a[i, j]".to_string(), "(a[i, j] - r[i])".to_string()]);
            let d = dear.replace("zz", &zz);
            let lets = format!("input a : {tn}[n, m]\ninput b : {tn}[n, m]\ninput r : {tn}[n]\nlet e = generate [n, m] (\\i j -> {d})");
            g.pick(&[
                format!("{lets}\noutput s = reduce (+) 0 e\noutput o = generate [n, m] (\\i j -> {d} * b[i, j])"),
                format!("{lets}\noutput s = reduce max (-inf) e\noutput o = reduce (+) 0 (generate [n, m] (\\i j -> b[i, j] - {d}))"),
                format!("{lets}\noutput s = e\noutput o = generate [n, m] (\\i j -> b[i, j] - {d} * b[i, j])"),
            ])
        }),
        // ---------------------------------------------------------- horizontal
        tpl("horizontal-fuse", horizontal),
        tpl_pre("horizontal-fuse", &["fuse-reduce"], horizontal),
        tpl("horizontal-diagonal", diagonal),
        tpl("loop-chain", loop_chain),
        tpl("loop-join", loop_join),
        tpl_pre("horizontal-fuse", &["recast-map"], |g| {
            let t = g.pick(&NUM);
            let e1 = g.e(t, &vars(&[("x", t)]));
            let e2 = g.e(t, &vars(&[("x", t)]));
            format!("input xs : {t}[n]\noutput a = map (\\x -> {e1}) xs\noutput b = map (\\x -> {e2}) xs")
        }),
    ];
    // ---------------------------------------------------------- fast math (tame)
    v.extend([
        tpl("fm-add-assoc", |g| {
            sc(g, &FLT, |g, t, v| format!("(({} + {}) + {})", g.e(t, v), g.e(t, v), g.e(t, v)))
        }),
        tpl("fm-mul-assoc", |g| {
            sc(g, &FLT, |g, t, v| format!("(({} * {}) * {})", g.e(t, v), g.e(t, v), g.e(t, v)))
        }),
        tpl("fm-add-zero", |g| {
            sc(g, &FLT, |g, t, v| format!("({} + {})", g.e(t, v), g.pick(&["0.0", "0", "(-0.0)"])))
        }),
        tpl("fm-factor", |g| {
            sc(g, &FLT, |g, t, v| {
                let c = g.e(t, v);
                format!("(({} * {c}) + ({} * {c}))", g.e(t, v), g.e(t, v))
            })
        }),
        tpl("fm-sub-self", |g| {
            sc(g, &FLT, |g, t, v| {
                let e = g.e(t, v);
                format!("({e} - {e})")
            })
        }),
        tpl("fm-mul-zero", |g| {
            sc(g, &FLT, |g, t, v| format!("({} * {})", g.e(t, v), g.pick(&["0.0", "0", "(-0.0)"])))
        }),
        tpl("fm-div-const", |g| {
            sc(g, &FLT, |g, t, v| {
                format!(
                    "({} / {})",
                    g.e(t, v),
                    g.pick(&["3.0", "0.1", "7.0", "(-2.5)", "2.0", "(1.0 + 2.0)"])
                )
            })
        }),
    ]);
    v
}

/// `fuse-read` on `generate` consumers of `generate` producers.
fn fuse_read_generate(g: &mut G) -> String {
    let t = g.pick(&NUM);
    let e = g.e(t, &vars(&[("x", t), ("k", I64)]));
    let c = g.e(t, &vars(&[("y", t), ("z", t)]));
    let ix = in_bounds_ix(g, "i", "n");
    let prod = format!("let a = generate [n] (\\k -> let x = xs[k] in {e})");
    match g.below(7) {
        0 => format!("input xs : {t}[n]\n{prod}\nlet c = \\y z -> {c}\noutput o = generate [n] (\\i -> c a[{ix}] xs[i])"),
        1 => format!(
            "input xs : {t}[n]\n{prod}\nlet b = generate [n] (\\i -> a[{ix}] + a[i])\noutput o = generate [n] (\\j -> b[n - 1 - j] * a[j])"
        ),
        2 => format!(
            "input xs : {t}[n]\n{prod}\noutput o = generate [n] (\\i -> iterate 2 (\\y -> y + a[{ix}]) xs[i])\noutput p = a"
        ),
        3 => format!(
            "input xs : {t}[n]\n{prod}\noutput o = generate [n] (\\i -> if xs[i] > xs[0] then a[{ix}] else xs[i])"
        ),
        4 => format!(
            "input xs : {t}[n, m]\nlet a = generate [n, m] (\\k l -> let x = xs[k, l] in {})\noutput o = generate [m, n] (\\j i -> a[i, m - 1 - j])",
            g.e(t, &vars(&[("x", t), ("k", I64), ("l", I64)]))
        ),
        5 => format!(
            "input xs : {t}[n]\n{prod}\noutput o = generate [n, 2] (\\i j -> a[{ix}])\noutput p = generate [n] (\\i -> a[clamp (i + 1) 0 n])"
        ),
        // two producers, one under the other, read at the same element everywhere: the
        // forms that keep one producer, and the closed body merged with its fused form
        _ => format!(
            "input xs : {t}[n]\n{prod}\nlet b = generate [n] (\\i -> a[n - 1 - i] - a[i])\noutput o = generate [n] (\\i -> b[0] * a[0])"
        ),
    }
}

/// `reduce`/`scan`/`scan_exclusive` of a `generate`.
fn consumer_of_generate(g: &mut G, op_name: &str) -> String {
    let t = g.pick(&[I32, I64, F32, F64, Bool]);
    let (op, ne) = op_any(g, t);
    let src = format!("input xs : {}[n, m]", t.name());
    if g.chance(1, 3) {
        let e = g.e(t, &vars(&[("x", t), ("i", I64), ("j", I64)]));
        format!("{src}\noutput o = {op_name} {op} {ne} (generate [n, m] (\\i j -> let x = xs[i, j] in {e}))")
    } else {
        let e = g.e(t, &vars(&[("x", t), ("i", I64)]));
        format!("{src}\noutput o = {op_name} {op} {ne} (generate [m] (\\i -> let x = xs[0, i] in {e}))")
    }
}

/// Independent kernels over one shape (and one that depends on another).
fn horizontal(g: &mut G) -> String {
    let t = g.pick(&NUM);
    let e1 = g.e(t, &vars(&[("x", t), ("i", I64)]));
    let e2 = g.e(t, &vars(&[("x", t), ("i", I64)]));
    let e3 = g.e(t, &vars(&[("x", t), ("i", I64)]));
    let (op, ne) = op_any(g, t);
    let (op2, ne2) = op_ne(g, t);
    match g.below(4) {
        0 => format!(
            "input xs : {t}[n]\noutput a = generate [n] (\\i -> let x = xs[i] in {e1})\noutput b = generate [n] (\\i -> let x = xs[i] in {e2})"
        ),
        1 => format!(
            "input xs : {t}[n]\noutput a = generate [n] (\\i -> let x = xs[i] in {e1})\noutput b = generate [n] (\\i -> let x = a[i] in {e2})\noutput c = generate [n] (\\i -> let x = xs[n - 1 - i] in {e3})"
        ),
        2 => format!(
            "input xs : {t}[n]\noutput s = reduce {op} {ne} (generate [n] (\\i -> let x = xs[i] in {e1}))\noutput r = reduce {op2} {ne2} (generate [n] (\\i -> let x = xs[i] in {e2}))\noutput a = generate [n] (\\i -> let x = xs[i] in {e3})"
        ),
        _ => format!(
            "input xs : {t}[n, m]\noutput a = generate [n, m] (\\i j -> let x = xs[i, j] in {e1})\noutput b = generate [n, m] (\\i j -> let x = xs[i, j] in {e2})\noutput c = generate [n] (\\i -> let x = xs[i, 0] in {e3})"
        ),
    }
}

/// A function applied to itself a few times (some of them already a loop).
fn loop_chain(g: &mut G) -> String {
    let t = g.pick(&NUM);
    let body = g.e(t, &vars(&[("x", t)]));
    let k = 2 + g.below(4);
    let mut call = "x".to_string();
    for _ in 0..k {
        call = format!("f ({call})");
    }
    if g.below(2) == 0 {
        call = format!("f (iterate {} f x)", g.below(4));
    }
    format!("input xs : {t}[n]\nlet f = \\x -> {body}\noutput o = map (\\x -> {call}) xs")
}

/// A loop of a loop of one function.
fn loop_join(g: &mut G) -> String {
    let t = g.pick(&NUM);
    let body = g.e(t, &vars(&[("x", t)]));
    let (m, k) = (g.below(4), g.below(4));
    format!("input xs : {t}[n]\nlet f = \\x -> {body}\noutput o = map (\\x -> iterate {m} f (iterate {k} f x)) xs")
}

/// A producer reduced and also used elsewhere (softmax's `e`).
fn diagonal(g: &mut G) -> String {
    let t = g.pick(&NUM);
    let e1 = g.e(t, &vars(&[("x", t), ("i", I64)]));
    let e2 = g.e(t, &vars(&[("x", t), ("i", I64)]));
    let (op, ne) = op_any(g, t);
    match g.below(3) {
        0 => format!(
            "input xs : {t}[n]\nlet p = generate [n] (\\i -> let x = xs[i] in {e1})\noutput s = reduce {op} {ne} p\noutput q = p"
        ),
        1 => format!(
            "input xs : {t}[n]\nlet p = generate [n] (\\i -> let x = xs[i] in {e1})\noutput s = reduce {op} {ne} p\noutput q = generate [n] (\\i -> let x = p[i] in {e2})"
        ),
        _ => format!(
            "input xs : {t}[n, m]\nlet p = generate [n, m] (\\i j -> let x = xs[i, j] in {e1})\noutput s = reduce {op} {ne} p\noutput q = generate [n, m] (\\i j -> let x = p[i, j] in {e2})"
        ),
    }
}

// ---------------------------------------------------------------- fixed cases

/// A counterexample or a case found by an earlier run, kept so that every run checks it.
struct Fixed {
    rule: &'static str,
    pre: &'static [&'static str],
    text: &'static str,
    inputs: Vec<Vec<(&'static str, Value)>>,
}

fn f32s(xs: &[f32]) -> Value {
    Value::F32(ndarray::Array1::from(xs.to_vec()).into_dyn())
}

fn f64s(xs: &[f64]) -> Value {
    Value::F64(ndarray::Array1::from(xs.to_vec()).into_dyn())
}

fn fixed_cases() -> Vec<Fixed> {
    vec![
        // a `pow` that is not correctly rounded (glibc's, which the interpreter once called)
        // can make `pow x 2` differ from `x * x` in the last bit; eqfuse's own computes `x * x`
        Fixed {
            rule: "fm-pow-two",
            pre: &[],
            text: "input xs : f32[n]\noutput o = map (\\x -> pow x 2.0) xs",
            inputs: vec![vec![("xs", f32s(&[5.756]))]],
        },
        Fixed {
            rule: "fm-pow-two",
            pre: &[],
            text: "input xs : f64[n]\noutput o = map (\\x -> pow x 2.0) xs",
            inputs: vec![vec![("xs", f64s(&[-2.759, 7.964, -9.072]))]],
        },
        // once the consumer `generate` has become `a`'s own class, `fuse-read` in the
        // `redomap` picks that self-reading `generate` as the producer and unrolls it until
        // the substitution gives up at depth 20,000: a warning (node limit), not a failure
        Fixed {
            rule: "fuse-read",
            pre: &["fuse-reduce"],
            text: "input xs : f64[n]\nlet a = generate [n] (\\k -> f64 2.0)\noutput o = reduce (+) 0 (generate [n] (\\i -> a[clamp (i + 1) 0 (n - 1)]))",
            inputs: vec![vec![("xs", f64s(&[1.0, 2.0, 3.0]))]],
        },
    ]
}

// ---------------------------------------------------------------- running one rule

/// Extraction costs that prefer the program's own e-nodes (`old`) or the rule's (`new`).
struct Prefer<'a> {
    eg: &'a EG,
    old: &'a HashSet<ArrayLang>,
    old_cost: f64,
    new_cost: f64,
}

impl CostFunction<ArrayLang> for Prefer<'_> {
    type Cost = f64;

    fn cost<C>(&mut self, enode: &ArrayLang, mut costs: C) -> f64
    where
        C: FnMut(Id) -> f64,
    {
        // a NaN literal has no `.eqf` form: the class always has the term it was folded from
        let own = if matches!(enode, ArrayLang::Lit(l) if l.is_nan()) {
            1e12
        } else if self.old.contains(&enode.clone().map_children(|c| self.eg.find(c))) {
            self.old_cost
        } else {
            self.new_cost
        };
        enode.children().iter().fold(own, |acc, c| (acc + costs(*c)).min(1e300))
    }
}

/// The free parameters of one e-node (as the analysis computes a class's from its node).
fn node_free(eg: &EG, n: &ArrayLang) -> ParamSet {
    match n {
        ArrayLang::Param(p) => ParamSet::single(p.index),
        ArrayLang::Lam([ps, body]) => match eg[*ps].data.kind {
            Kind::Params(k) => eg[*body].data.free.under_binder(k),
            _ => eg[*body].data.free.clone(),
        },
        n => n.children().iter().fold(ParamSet::empty(), |mut acc, c| {
            acc.union_with(&eg[*c].data.free);
            acc
        }),
    }
}

/// How results are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmp {
    /// Bit for bit.
    Exact,
    /// Within the fast-math tolerance.
    Tolerance,
    /// Types and shapes only (fast-math rules on random programs).
    Shape,
}

const FAST_MATH_TOL: Tolerance = Tolerance { rtol: 1e-3, atol: 1e-3, mismatch_fraction: 0.0 };

/// A program ready for the rules: checked, encoded, with its inputs and original results.
struct Prog {
    text: String,
    checked: Checked,
    inputs: Vec<IndexMap<String, Value>>,
    orig: Vec<Result<IndexMap<String, Value>, String>>,
}

impl Prog {
    fn new(text: String, checked: Checked, inputs: Vec<IndexMap<String, Value>>) -> Prog {
        let orig = inputs.iter().map(|i| interpret(&checked, i).map_err(|e| e.to_string())).collect();
        Prog { text, checked, inputs, orig }
    }
}

/// What running one rule on one program found.
#[derive(Default)]
struct Outcome {
    /// How often the rule applied.
    applied: usize,
    /// Rewritten programs run and compared with a successful original run.
    compared: usize,
    /// Rewritten programs that printed as the original.
    same_text: usize,
    /// Value mismatches tolerated (fast-math rules on random programs).
    tolerated: usize,
    failures: Vec<String>,
    /// Runs that hit the node limit.
    blowups: Vec<String>,
    /// Rewritten terms with no `.eqf` form until other rules finish them.
    unfinished: usize,
    /// Open nodes forced into a use of their class outside their context.
    out_of_context: usize,
}

fn compare_outputs(
    orig: &IndexMap<String, Value>,
    got: &IndexMap<String, Value>,
    cmp: Cmp,
) -> Result<(), (String, bool)> {
    let keys_o: Vec<&String> = orig.keys().collect();
    let keys_g: Vec<&String> = got.keys().collect();
    if keys_o != keys_g {
        return Err((format!("outputs {keys_o:?} but rewritten {keys_g:?}"), false));
    }
    for (k, want) in orig {
        let have = &got[k];
        if have.elem_type() != want.elem_type() || have.shape() != want.shape() {
            return Err((
                format!(
                    "output {k}: {} {:?} but rewritten {} {:?}",
                    want.elem_type(),
                    want.shape(),
                    have.elem_type(),
                    have.shape()
                ),
                false,
            ));
        }
        let bad = match cmp {
            Cmp::Exact => (!same_but_nan_bits(have, want)).then(|| first_difference(want, have)),
            Cmp::Tolerance | Cmp::Shape => compare(have, want, &FAST_MATH_TOL).err(),
        };
        if let Some(m) = bad {
            return Err((format!("output {k}: {m}"), cmp == Cmp::Shape));
        }
    }
    Ok(())
}

fn first_difference(want: &Value, have: &Value) -> String {
    let (w, h) = (want.to_scalars(), have.to_scalars());
    let bits = |s: &Scalar| match s {
        Scalar::F32(v) => format!(" (bits {:#010x})", v.to_bits()),
        Scalar::F64(v) => format!(" (bits {:#018x})", v.to_bits()),
        _ => String::new(),
    };
    for (i, (a, b)) in w.iter().zip(&h).enumerate() {
        if !same_but_nan_bits(&Value::scalar(*a), &Value::scalar(*b)) {
            return format!(
                "not bit-identical: at flat index {i} the original gives {a}{} and the rewritten {b}{}",
                bits(a),
                bits(b)
            );
        }
    }
    "not bit-identical".to_string()
}

/// Applies `pre` then `rule` to `p`'s e-graph and checks every rewritten program.
fn exercise(rule: &Rewrite, pre: &[&Rewrite], p: &Prog, cmp: Cmp) -> Outcome {
    let t0 = std::time::Instant::now();
    if std::env::var("EQFUSE_SOUNDNESS_TRACE").is_ok() {
        eprintln!("start: {}\n{}", rule.name, p.text);
    }
    let o = exercise_inner(rule, pre, p, cmp);
    if std::env::var("EQFUSE_SOUNDNESS_VERBOSE").is_ok() && t0.elapsed().as_secs_f64() > 0.5 {
        eprintln!("slow: {} took {:.2}s on\n{}", rule.name, t0.elapsed().as_secs_f64(), p.text);
    }
    o
}

/// `eg` after the helper rules `pre` of a template (to saturation, a few iterations).
fn with_helpers(eg: EG, pre: &[&Rewrite]) -> EG {
    if pre.is_empty() {
        return eg;
    }
    egg::Runner::default()
        .with_egraph(eg)
        .with_scheduler(egg::SimpleScheduler)
        .with_iter_limit(PRE_ITERS)
        .with_node_limit(NODE_LIMIT)
        .run(pre.iter().copied())
        .egraph
}

fn exercise_inner(rule: &Rewrite, pre: &[&Rewrite], p: &Prog, cmp: Cmp) -> Outcome {
    let mut out = Outcome::default();
    let enc = match encode(&p.checked) {
        Ok(e) => e,
        // a version-2 form the e-graph does not have: no rule applies to it
        Err(e) if eqfuse_egraph::encode::is_unsupported(&e) => return out,
        Err(e) => {
            out.failures.push(format!("encode failed: {e}\n{}", p.text));
            return out;
        }
    };
    // a reduction, scan or `iterate` over a tuple, a segmented one: the decoder cannot write
    // it back as a program yet, and this check compares decoded programs; `fuse-read` into
    // a reduction or scan over a group is checked by running (tests/v2_groups.rs)
    if enc.egraph.classes().any(|c| {
        c.nodes.iter().any(|n| match n {
            ArrayLang::GReduce(_) | ArrayLang::GScan(_) | ArrayLang::SegCheck(_) => true,
            ArrayLang::Iterate([_, _, init]) => {
                enc.egraph[*init].nodes.iter().any(|m| matches!(m, ArrayLang::Tuple(_)))
            }
            _ => false,
        })
    }) {
        return out;
    }
    let eg = with_helpers(enc.egraph.clone(), pre);
    // the program's own e-nodes, the class each came from, and each class's free parameters
    let before: Vec<(Id, ArrayLang)> =
        eg.classes().flat_map(|c| c.nodes.iter().map(move |n| (c.id, n.clone()))).collect();
    let before_free: HashMap<Id, ParamSet> = eg.classes().map(|c| (c.id, c.data.free.clone())).collect();
    let baseline = {
        let all: HashSet<ArrayLang> = before.iter().map(|(_, n)| n.clone()).collect();
        let ex = egg::Extractor::new(&eg, Prefer { eg: &eg, old: &all, old_cost: 1.0, new_cost: 1.0 });
        let e2 = Encoded { egraph: eg.clone(), ..enc.clone() };
        decode(&e2, |id| ex.find_best_node(id).clone()).map(|p| print_program(&p)).unwrap_or_default()
    };
    let run = |eg: EG, iters: usize| {
        egg::Runner::default()
            .with_egraph(eg)
            .with_scheduler(egg::SimpleScheduler)
            .with_iter_limit(iters)
            .with_node_limit(NODE_LIMIT)
            .run([rule])
    };
    let mut runner = run(eg.clone(), RULE_ITERS);
    if let Some(egg::StopReason::NodeLimit(_)) = runner.stop_reason {
        // one rewrite blew the e-graph up: report it, and check what the iterations before
        // it did (extracting from the blown-up e-graph is not worth the time)
        out.blowups.push(format!(
            "{} applications of `{}` grew the e-graph from {} to {} e-nodes in {} iterations on\n{}",
            runner
                .iterations
                .iter()
                .map(|it| it.applied.get(&rule.name).copied().unwrap_or(0))
                .sum::<usize>(),
            rule.name,
            eg.total_number_of_nodes(),
            runner.egraph.total_number_of_nodes(),
            runner.iterations.len(),
            p.text
        ));
        let done = runner.iterations.len().saturating_sub(1);
        if done == 0 {
            return out;
        }
        runner = run(eg, done);
    }
    out.applied = runner.iterations.iter().map(|it| it.applied.get(&rule.name).copied().unwrap_or(0)).sum();
    if out.applied == 0 {
        return out;
    }
    let after = Encoded { egraph: runner.egraph, ..enc };
    let eg = &after.egraph;
    let old: HashSet<ArrayLang> =
        before.iter().map(|(_, n)| n.clone().map_children(|c| eg.find(c))).collect();
    let prefer_old = egg::Extractor::new(eg, Prefer { eg, old: &old, old_cost: 1.0, new_cost: 100.0 });
    let prefer_new = egg::Extractor::new(eg, Prefer { eg, old: &old, old_cost: 100.0, new_cost: 1.0 });

    // the classes the rule touched: merged program classes, program classes with new nodes
    let mut sources: HashMap<Id, BTreeSet<Id>> = HashMap::new();
    for (c, _) in &before {
        sources.entry(eg.find(*c)).or_default().insert(*c);
    }
    let mut overrides: Vec<(Id, ArrayLang)> = Vec::new();
    let mut touched: Vec<Id> = sources.keys().copied().collect();
    touched.sort();
    let mut later = Vec::new();
    for c in touched {
        let merged = sources[&c].len() > 1;
        let nodes: Vec<ArrayLang> =
            eg[c].nodes.iter().map(|n| n.clone().map_children(|k| eg.find(k))).collect();
        let has_new = nodes.iter().any(|n| !old.contains(n));
        if !merged && !has_new {
            continue;
        }
        let chosen = prefer_old.find_best_node(c).clone().map_children(|k| eg.find(k));
        // the parameters every original term of the class is free in: a node with others
        // (`x - x` merged with the `0` that is also a reduction's neutral element) cannot
        // stand for the class at all its uses
        let mut shared: Option<ParamSet> = None;
        for src in &sources[&c] {
            let f = &before_free[src];
            shared = Some(match shared {
                None => f.clone(),
                Some(s) => s.iter().filter(|i| f.contains(*i)).fold(ParamSet::empty(), |mut acc, i| {
                    acc.union_with(&ParamSet::single(i));
                    acc
                }),
            });
        }
        let shared = shared.unwrap_or_default();
        for n in nodes {
            if n == chosen || matches!(n, ArrayLang::Lit(l) if l.is_nan()) {
                continue;
            }
            if !node_free(eg, &n).iter().all(|i| shared.contains(i)) {
                continue;
            }
            // new nodes first: they are what the rule added
            if old.contains(&n) {
                later.push((c, n));
            } else {
                overrides.push((c, n));
            }
        }
    }
    overrides.extend(later);
    overrides.truncate(MAX_OVERRIDES);

    let mut seen: HashSet<String> = HashSet::new();
    let mut variants: Vec<(String, Result<eqfuse_ir::Program, String>)> = Vec::new();
    let dec = |choose: &dyn Fn(Id) -> ArrayLang| decode(&after, choose).map_err(|e| e.to_string());
    variants.push(("prefer new".into(), dec(&|id| prefer_new.find_best_node(id).clone())));
    variants.push(("prefer old".into(), dec(&|id| prefer_old.find_best_node(id).clone())));
    for (c, n) in &overrides {
        let r = dec(&|id| if eg.find(id) == *c { n.clone() } else { prefer_old.find_best_node(id).clone() });
        variants.push((format!("one rewrite ({n} in class {c})"), r));
    }
    // a node with free parameters forced into every use of its class may land under a
    // binder of another type, or none (`$0:i64 - $0:i64` merged with a `0:i64` that other
    // lambdas use too): such programs are not what any extraction that knows the context
    // would write, so they are counted, not failed
    let open_override = |how: &str| {
        how.starts_with("one rewrite")
            && overrides.iter().any(|(c, n)| {
                how == format!("one rewrite ({n} in class {c})") && !node_free(eg, n).is_empty()
            })
    };
    for (how, r) in variants {
        let program = match r {
            Ok(p) => p,
            Err(e) if e.contains("cycle") => continue,
            Err(e) if UNFINISHED.iter().any(|u| e.contains(u)) => {
                out.unfinished += 1;
                continue;
            }
            Err(_) if open_override(&how) => {
                out.out_of_context += 1;
                continue;
            }
            Err(e) => {
                out.failures
                    .push(format!("[{how}] the rewritten term does not decode: {e}\nprogram:\n{}", p.text));
                continue;
            }
        };
        let text = print_program(&program);
        if !seen.insert(text.clone()) {
            continue;
        }
        let checked = match check(&program) {
            Ok(c) => c,
            Err(_) if open_override(&how) => {
                out.out_of_context += 1;
                continue;
            }
            Err(e) => {
                out.failures.push(format!(
                    "[{how}] the rewritten program does not check: {e}\nprogram:\n{}\nrewritten:\n{text}",
                    p.text
                ));
                continue;
            }
        };
        if text == baseline {
            out.same_text += 1;
            continue;
        }
        for (inputs, orig) in p.inputs.iter().zip(&p.orig) {
            let Ok(orig) = orig else { continue };
            let got = interpret(&checked, inputs);
            let problem = match got {
                Err(e) => Some((format!("the original runs but the rewritten program fails: {e}"), false)),
                Ok(got) => compare_outputs(orig, &got, cmp).err(),
            };
            out.compared += 1;
            match problem {
                None => {}
                Some((_, true)) => out.tolerated += 1,
                Some((m, false)) => out.failures.push(format!(
                    "[{how}] {m}\nprogram:\n{}\nrewritten:\n{text}\ninputs:\n{}",
                    p.text,
                    show_inputs(inputs)
                )),
            }
        }
    }
    out
}

// ---------------------------------------------------------------- the test

/// What one rule's cases found.
#[derive(Default)]
struct Report {
    name: String,
    template_programs: usize,
    template_fired: usize,
    applied: usize,
    compared: usize,
    same_text: usize,
    random_fired: usize,
    random_compared: usize,
    tolerated: usize,
    failures: Vec<String>,
    failure_count: usize,
    blowups: Vec<String>,
    blowup_count: usize,
    unfinished: usize,
    out_of_context: usize,
}

impl Report {
    fn add(&mut self, o: Outcome, from_template: bool) {
        if o.applied > 0 {
            if from_template {
                self.template_fired += 1;
            } else {
                self.random_fired += 1;
            }
        }
        self.applied += o.applied;
        if from_template {
            self.compared += o.compared;
        } else {
            self.random_compared += o.compared;
        }
        self.same_text += o.same_text;
        self.tolerated += o.tolerated;
        self.unfinished += o.unfinished;
        self.out_of_context += o.out_of_context;
        self.failure_count += o.failures.len();
        self.blowup_count += o.blowups.len();
        for b in o.blowups {
            if self.blowups.len() < 2 {
                self.blowups.push(b);
            }
        }
        for f in o.failures {
            if self.failures.len() < 3 {
                self.failures.push(f);
            }
        }
    }
}

fn random_programs(count: usize, seed: u64) -> Vec<Prog> {
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let mut bytes = [0u8; 32];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (mix(seed ^ (i as u64 / 8)) >> ((i % 8) * 8)) as u8;
    }
    let mut runner =
        TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let configs = [
        GenConfig::default(),
        GenConfig { allow_runtime_errors: true, ..GenConfig::default() },
        GenConfig { max_expr_depth: 5, max_items: 8, ..GenConfig::default() },
    ];
    let mut rng = Rng::new(mix(seed) ^ 0x7e57);
    (0..count)
        .map(|k| {
            let case = program_and_inputs(configs[k % configs.len()].clone())
                .new_tree(&mut runner)
                .expect("a random program")
                .current();
            let checked = check(&case.program).expect("testgen programs check");
            let mut inputs = vec![case.inputs.clone()];
            inputs.push(random_inputs(&checked, &mut rng, Data::Edge));
            Prog::new(case.text(), checked, inputs)
        })
        .collect()
}

#[test]
fn every_rule_is_sound() {
    let started = std::time::Instant::now();
    let rules = all_rules(RuleSets { fast_math: true });
    let fast: HashSet<String> = fast_math::rules().iter().map(|r| r.name.to_string()).collect();
    let by_name: HashMap<String, &Rewrite> = rules.iter().map(|r| (r.name.to_string(), r)).collect();
    let templates = templates();
    let fixed = fixed_cases();
    let cases = env_usize("EQFUSE_SOUNDNESS_CASES", 48).max(1);
    let seed = env_usize("EQFUSE_SOUNDNESS_SEED", 0) as u64;

    let mut problems: Vec<String> = Vec::new();
    let named = templates.iter().map(|t| (t.rule, t.pre)).chain(fixed.iter().map(|f| (f.rule, f.pre)));
    for (rule, pre) in named {
        for name in std::iter::once(&rule).chain(pre) {
            if !by_name.contains_key(*name) {
                problems.push(format!("a template names `{name}`, which is not a rule of the catalogue"));
            }
        }
    }
    let randoms = random_programs(cases, seed);
    if std::env::var("EQFUSE_SOUNDNESS_VERBOSE").is_ok() {
        eprintln!("{} random programs made at {:.1}s", randoms.len(), started.elapsed().as_secs_f64());
    }

    let next = AtomicUsize::new(0);
    let reports: Mutex<Vec<Report>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).min(8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            // the rules, the extractor and the printer recurse over terms
            let b = std::thread::Builder::new().stack_size(256 << 20);
            b.spawn_scoped(s, || loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(rule) = rules.get(k) else { break };
                let name = rule.name.to_string();
                let is_fast = fast.contains(&name);
                let mut report = Report { name: name.clone(), ..Report::default() };
                let mine: Vec<&Template> = templates.iter().filter(|t| t.rule == name).collect();
                for (ti, t) in mine.iter().enumerate() {
                    let pre: Vec<&Rewrite> = t.pre.iter().filter_map(|n| by_name.get(*n).copied()).collect();
                    let per = cases.div_ceil(mine.len()).max(4);
                    for inst in 0..per {
                        let s = mix(mix(mix(seed) ^ fnv(&name)) ^ ti as u64) ^ inst as u64;
                        let mut g = G { rng: Rng::new(s), tame: is_fast };
                        let text = (t.gen)(&mut g);
                        let checked = match parse(&text).and_then(|p| check(&p)) {
                            Ok(c) => c,
                            Err(e) => {
                                report.failure_count += 1;
                                report.failures.push(format!(
                                    "template {ti} of {name} made a program that does not check: {e}\n{text}"
                                ));
                                continue;
                            }
                        };
                        let data = if is_fast { Data::Tame } else { Data::Edge };
                        let inputs =
                            (0..INPUT_SETS).map(|_| random_inputs(&checked, &mut g.rng, data)).collect();
                        let prog = Prog::new(text, checked, inputs);
                        report.template_programs += 1;
                        let cmp = if is_fast { Cmp::Tolerance } else { Cmp::Exact };
                        let o = exercise(rule, &pre, &prog, cmp);
                        if o.applied == 0
                            && std::env::var("EQFUSE_SOUNDNESS_UNFIRED").is_ok_and(|v| v == name)
                        {
                            eprintln!("did not fire: {name}\n{}\n", prog.text);
                        }
                        report.add(o, true);
                    }
                }
                for f in fixed.iter().filter(|f| f.rule == name) {
                    let pre: Vec<&Rewrite> = f.pre.iter().filter_map(|n| by_name.get(*n).copied()).collect();
                    let checked =
                        check(&parse(f.text).expect("a fixed case parses")).expect("a fixed case checks");
                    let inputs = f
                        .inputs
                        .iter()
                        .map(|vs| vs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
                        .collect();
                    let prog = Prog::new(f.text.to_string(), checked, inputs);
                    report.template_programs += 1;
                    let cmp = if is_fast { Cmp::Tolerance } else { Cmp::Exact };
                    report.add(exercise(rule, &pre, &prog, cmp), true);
                }
                let cmp = if is_fast { Cmp::Shape } else { Cmp::Exact };
                for prog in &randoms {
                    report.add(exercise(rule, &[], prog, cmp), false);
                }
                if std::env::var("EQFUSE_SOUNDNESS_VERBOSE").is_ok() {
                    eprintln!("done: {name} at {:.1}s", started.elapsed().as_secs_f64());
                }
                reports.lock().unwrap().push(report);
            })
            .expect("a worker thread");
        }
    });
    let mut reports = reports.into_inner().unwrap();
    reports.sort_by_key(|r| rules.iter().position(|x| x.name.as_str() == r.name));

    eprintln!(
        "{:<30} {:>9} {:>6} {:>8} {:>8} {:>6} {:>7} {:>8} {:>6}",
        "rule", "templates", "fired", "applied", "compared", "same", "random", "r.compar", "fails"
    );
    for r in &reports {
        eprintln!(
            "{:<30} {:>9} {:>6} {:>8} {:>8} {:>6} {:>7} {:>8} {:>6}",
            r.name,
            r.template_programs,
            r.template_fired,
            r.applied,
            r.compared,
            r.same_text,
            r.random_fired,
            r.random_compared,
            r.failure_count
        );
        for b in &r.blowups {
            eprintln!(
                "  warning ({} runs of {} hit the node limit of {NODE_LIMIT}): {b}",
                r.blowup_count, r.name
            );
        }
        if r.unfinished > 0 {
            eprintln!(
                "  ({}: {} rewritten terms have no .eqf form until other rules finish them)",
                r.name, r.unfinished
            );
        }
        if r.out_of_context > 0 {
            eprintln!(
                "  ({}: {} one-rewrite programs put an open e-node where its class is used in another context)",
                r.name, r.out_of_context
            );
        }
        if r.tolerated > 0 {
            eprintln!(
                "  ({}: {} value differences beyond the tolerance on random programs)",
                r.name, r.tolerated
            );
        }
    }
    eprintln!(
        "{} rules, {} template programs, {} random programs, {:.1} s",
        reports.len(),
        reports.iter().map(|r| r.template_programs).sum::<usize>(),
        randoms.len(),
        started.elapsed().as_secs_f64()
    );

    for r in &reports {
        if r.template_programs == 0 {
            problems.push(format!(
                "rule `{}` has no template in rules/tests/soundness.rs: add one whose program its left-hand side matches",
                r.name
            ));
        } else if r.template_fired == 0 {
            problems.push(format!(
                "rule `{}` never fired on its {} template programs: fix its template",
                r.name, r.template_programs
            ));
        } else if r.compared == 0 && !DECODES_TO_ORIGINAL.contains(&r.name.as_str()) {
            problems.push(format!(
                "rule `{}` fired but no rewritten program was compared with a successful run of the original",
                r.name
            ));
        }
        for f in &r.failures {
            problems.push(format!("rule `{}` ({} failures in all): {f}", r.name, r.failure_count));
        }
    }
    assert!(problems.is_empty(), "{} problems:\n\n{}", problems.len(), problems.join("\n\n"));
}

/// Instances tried per rule for its golden form.
const GOLDEN_TRIES: u64 = 48;

/// What one rule does to one program, in a form to read: the rule applied alone (one
/// iteration, after its helper rules) and the term extracted preferring what it added,
/// decoded to `.eqf` where that shows a change, else as the e-graph term of the outputs
/// (the fused forms decode back to their definitions). `None` when the rule did not fire.
fn golden_form(rule: &Rewrite, pre: &[&Rewrite], checked: &Checked) -> Option<String> {
    let enc = encode(checked).ok()?;
    let eg = with_helpers(enc.egraph.clone(), pre);
    let before: Vec<ArrayLang> = eg.classes().flat_map(|c| c.nodes.iter().cloned()).collect();
    let all: HashSet<ArrayLang> = before.iter().cloned().collect();
    let old_text = {
        let ex = egg::Extractor::new(&eg, Prefer { eg: &eg, old: &all, old_cost: 1.0, new_cost: 1.0 });
        let e2 = Encoded { egraph: eg.clone(), ..enc.clone() };
        decode(&e2, |id| ex.find_best_node(id).clone()).map(|p| print_program(&p)).ok()?
    };
    let runner = egg::Runner::default()
        .with_egraph(eg)
        .with_scheduler(egg::SimpleScheduler)
        .with_iter_limit(1)
        .with_node_limit(NODE_LIMIT)
        .run([rule]);
    let applied: usize =
        runner.iterations.iter().map(|it| it.applied.get(&rule.name).copied().unwrap_or(0)).sum();
    if applied == 0 {
        return None;
    }
    let after = Encoded { egraph: runner.egraph, ..enc };
    let eg = &after.egraph;
    let old: HashSet<ArrayLang> = before.iter().map(|n| n.clone().map_children(|c| eg.find(c))).collect();
    let ex = egg::Extractor::new(eg, Prefer { eg, old: &old, old_cost: 100.0, new_cost: 1.0 });
    let new_text = decode(&after, |id| ex.find_best_node(id).clone()).map(|p| print_program(&p));
    let body = |t: &str| t.lines().filter(|l| !l.starts_with("input ")).collect::<Vec<_>>().join("\n");
    if let Ok(t) = new_text {
        if body(&t) != body(&old_text) {
            return Some(format!("{}\n==>\n{}", old_text.trim_end(), body(&t)));
        }
    }
    // no visible change in the program (a fused form decodes to its definition, or the
    // cheaper term keeps the old nodes): the rewrite at its site, the class with a new e-node
    // whose old term is largest, as e-graph terms
    let smallest_old = egg::Extractor::new(eg, Prefer { eg, old: &old, old_cost: 1.0, new_cost: 1e6 });
    let mut site: Option<(usize, String, String)> = None;
    for c in eg.classes() {
        for n in &c.nodes {
            let canon = n.clone().map_children(|k| eg.find(k));
            if old.contains(&canon) {
                continue;
            }
            let (cost, lhs) = smallest_old.find_best(c.id);
            if cost >= 1e6 {
                continue;
            }
            let rhs = canon.build_recexpr(|k| smallest_old.find_best_node(k).clone());
            let size = lhs.as_ref().len();
            let key = (size, lhs.to_string(), rhs.to_string());
            if site.as_ref().is_none_or(|s| (s.0, &s.1, &s.2) < (key.0, &key.1, &key.2)) {
                site = Some(key);
            }
        }
    }
    let (_, lhs, rhs) = site?;
    Some(format!("{}\n==> at the rewritten class, as e-graph terms:\n{lhs}\n==>\n{rhs}", old_text.trim_end()))
}

/// A golden test per rule (`input ==> the form it produces`), beside the templates: for each
/// rule of the catalogue, the shortest of the first [`GOLDEN_TRIES`] instances of its
/// templates that it fires on, and what one application makes of it. The forms are one
/// snapshot (`rules/tests/snapshots/soundness__golden_forms.snap`); a rule that fires on
/// none of its instances fails the test, naming it.
#[test]
fn golden_forms() {
    let rules = all_rules(RuleSets { fast_math: true });
    let by_name: HashMap<String, &Rewrite> = rules.iter().map(|r| (r.name.to_string(), r)).collect();
    let fast: HashSet<String> = fast_math::rules().iter().map(|r| r.name.to_string()).collect();
    let templates = templates();
    let mut out = String::new();
    let mut missing = Vec::new();
    for rule in &rules {
        let name = rule.name.to_string();
        let mut best: Option<(usize, String)> = None;
        for (ti, t) in templates.iter().filter(|t| t.rule == name).enumerate() {
            let pre: Vec<&Rewrite> = t.pre.iter().filter_map(|n| by_name.get(*n).copied()).collect();
            for inst in 0..GOLDEN_TRIES {
                let mut g = G {
                    rng: Rng::new(mix(fnv(&name) ^ (ti as u64) << 32) ^ inst),
                    tame: fast.contains(&name),
                };
                let text = (t.gen)(&mut g);
                if best.as_ref().is_some_and(|(len, _)| text.len() >= *len) {
                    continue;
                }
                let Ok(checked) = parse(&text).and_then(|p| check(&p)) else { continue };
                if let Some(form) = golden_form(rule, &pre, &checked) {
                    best = Some((text.len(), form));
                }
            }
        }
        match best {
            Some((_, form)) => out.push_str(&format!("## {name}\n{form}\n\n")),
            None => missing.push(name),
        }
    }
    assert!(missing.is_empty(), "rules with no golden form (they fired on no instance): {missing:?}");
    insta::assert_snapshot!("golden_forms", out);
}

#[test]
fn the_random_generator_is_deterministic() {
    let mut a = Rng::new(7);
    let mut b = Rng::new(7);
    assert!((0..100).all(|_| a.next() == b.next()));
    assert!(Literal::F32(f32::NAN.to_bits()).is_nan());
}

/// The harness finds rules that are wrong: each of these fails on its program.
#[test]
fn the_harness_catches_unsound_rules() {
    use eqfuse_rules::cond::{is_pos_zero, on};
    type Wrong = (Rewrite, &'static str, Vec<(&'static str, Value)>);
    let wrong: Vec<Wrong> = vec![
        (
            // false for x = -0.0
            egg::rewrite!("wrong-add-pos-zero"; "(+ ?x ?c)" => "?x" if on("?c", is_pos_zero)),
            "input xs : f64[n]\noutput o = map (\\x -> x + 0.0) xs",
            vec![("xs", f64s(&[1.5, -0.0]))],
        ),
        (
            egg::rewrite!("wrong-reverse"; "(reverse ?a)" => "?a"),
            "input xs : f32[n]\noutput o = map (\\x -> x * 2.0) (reverse xs)",
            vec![("xs", f32s(&[1.0, 2.0]))],
        ),
        (
            // adds an error where the original has none
            egg::rewrite!("wrong-slice"; "(slice ?a ?s ?l)" => "(slice ?a (+ ?s 1:i64) ?l)"),
            "input xs : f32[n]\noutput o = slice xs 0 2",
            vec![("xs", f32s(&[1.0, 2.0]))],
        ),
        (
            // `min` on floats: NaN wins, so `min x (-inf)` is not `-inf`
            egg::rewrite!("wrong-min-bottom"; "(min ?x -inf:f64)" => "-inf:f64"),
            "input xs : f64[n]\noutput o = map (\\x -> min x (-inf)) xs",
            vec![("xs", f64s(&[1.0, f64::NAN]))],
        ),
    ];
    for (rule, text, inputs) in wrong {
        let checked = check(&parse(text).unwrap()).unwrap();
        let inputs = vec![inputs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()];
        let out = exercise(&rule, &[], &Prog::new(text.to_string(), checked, inputs), Cmp::Exact);
        assert!(out.applied > 0, "{} did not fire", rule.name);
        assert!(!out.failures.is_empty(), "{} was not caught", rule.name);
    }
}
