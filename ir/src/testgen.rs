//! Random well-typed programs with matching inputs, for property tests of every stage
//! (checker, interpreter, optimiser, executors, fuzzing). Compiled only with the `testgen`
//! feature.
//!
//! [`program_and_inputs`] is a proptest [`Strategy`] of [`Case`]s: a [`Program`] that
//! [`crate::check::check`] always accepts, with inputs of the declared types and one
//! consistent size per size name. With [`GenConfig::allow_runtime_errors`] off (the default)
//! the reference interpreter runs every case without error: integer divisors are guarded
//! (`x / (if d == 0 then 1 else d)`), indices are clamped inside an `if` that tests for an
//! empty array, gather indices, backpermute index functions, permute targets and slices stay
//! in bounds for every size, including 0.
//!
//! # How it works, and shrinking
//!
//! A case is made from proptest-generated vectors of `u32` *choices*: one vector for the
//! inputs and named functions, one per top-level item, and one for the sizes and input
//! elements. A type-directed builder reads the choices one at a time (choice `c` among `k`
//! options is `c % k`); a choice of 0, and every choice past the end of a vector, takes the
//! simplest option (a leaf, a literal, the latest array, no further input). So proptest's
//! shrinking of the vectors (deleting an item's vector, removing choices, lowering them
//! toward 0) shrinks the program and its data while every intermediate program stays well
//! typed: failing cases shrink to small programs. Program choices and data choices are
//! separate, so shrinking the data never changes the program.
//!
//! # What it covers
//!
//! Every operation of docs/language-reference.md occurs across the distribution: arithmetic (`+ - * / %`),
//! comparisons, `&& || !`, unary `-`, on all five element types; `min max abs sqrt exp log
//! sin cos tan tanh floor ceil round pow atan2 clamp`, the conversions, `iterate`, lazy `if`,
//! local `let`, top-level named functions (called in lambdas, passed to `map`, used as a
//! reduction `op`), operator sections and `min`/`max` as reduction ops; `map` (1 to 3
//! arrays), `generate` (rank 1 and 2), `iota`, `fill`, `reduce` (to a scalar and to rows),
//! `scan`, `scan_exclusive`, `filter`, `gather`, `backpermute`, `permute`, `transpose`,
//! `reverse`, `reshape`, `slice`, `concat`, indexing, `length`, `size`; top-level scalar
//! `let`s read by later lambdas, shared `let`s with several consumers, chains of maps,
//! `output x` naming an earlier binding, array and scalar outputs. [`Ops`] switches families
//! off.
//!
//! Values are kept tame: float inputs in `[-2, 2]`, integer inputs in `[-10, 10]`, `exp` of
//! bounded arguments, `log` and `sqrt` of `abs x + 1`, `pow` of a positive base by a small
//! exponent, `tan` of a `tanh`. Reductions use associative operators with their true neutral
//! elements; float `+` and `*` reductions and float `permute` combine in an order that other
//! backends may change, so compare their results with a tolerance.
//!
//! ```
//! use eqfuse_ir::testgen::{program_and_inputs, GenConfig};
//! use proptest::strategy::{Strategy, ValueTree};
//! use proptest::test_runner::TestRunner;
//!
//! let mut runner = TestRunner::deterministic();
//! let case = program_and_inputs(GenConfig::default()).new_tree(&mut runner).unwrap().current();
//! let checked = eqfuse_ir::check::check(&case.program).unwrap();
//! assert!(eqfuse_ir::interp::interpret(&checked, &case.inputs).is_ok());
//! ```

use crate::ast::{BinOp, Expr, ExprKind, Item, Lit, Program, UnOp};
use crate::error::Span;
use crate::types::{Dim, ElemType, Type};
use crate::value::{compare, Scalar, Tolerance, Value};
use indexmap::IndexMap;
use proptest::prelude::*;
use std::fmt;

/// Families of operations the generator may use. `map`, literals, variables, arithmetic,
/// comparisons and logic are always on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ops {
    /// Float builtins (`sqrt exp log sin cos tan tanh floor ceil round pow atan2`), `abs`,
    /// `min`, `max`, `clamp` as scalar functions, and the conversions.
    pub math: bool,
    /// `if`, local `let ... in`, `iterate`.
    pub control: bool,
    /// Top-level named functions.
    pub functions: bool,
    /// `reduce`, `scan`, `scan_exclusive`.
    pub reductions: bool,
    /// `filter`.
    pub filter: bool,
    /// Indexing `a[i]`, `gather`, `backpermute`, `permute`.
    pub indexing: bool,
    /// `transpose`, `reverse`, `reshape`, `slice`, `concat`.
    pub reshaping: bool,
    /// `generate`, `iota`, `fill`.
    pub construct: bool,
}

impl Ops {
    /// Every family.
    pub const ALL: Ops = Ops {
        math: true,
        control: true,
        functions: true,
        reductions: true,
        filter: true,
        indexing: true,
        reshaping: true,
        construct: true,
    };

    /// Only the always-on core: `map`, arithmetic, comparisons, logic.
    pub const CORE: Ops = Ops {
        math: false,
        control: false,
        functions: false,
        reductions: false,
        filter: false,
        indexing: false,
        reshaping: false,
        construct: false,
    };
}

impl Default for Ops {
    fn default() -> Ops {
        Ops::ALL
    }
}

/// How big and how wild the generated cases are.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// Most top-level `let`/`output` items after the inputs (named functions not counted).
    pub max_items: usize,
    /// Depth budget of a scalar expression (lambda bodies and scalar items).
    pub max_expr_depth: u32,
    /// Largest value of a size name (array dimension); sizes range over `0..=max_size`.
    pub max_size: usize,
    /// Operation families to use.
    pub ops: Ops,
    /// When `true`, some divisions, indices, gathers, slices, backpermutes and permute
    /// targets are left unguarded, so runs may fail with `E-DIV-ZERO` / `E-INDEX` (but must
    /// never crash). When `false` every case interprets without error.
    pub allow_runtime_errors: bool,
    /// Length bound of each item's choice vector (more: bigger expressions, up to the
    /// depth budget).
    pub max_item_choices: usize,
}

impl Default for GenConfig {
    fn default() -> GenConfig {
        GenConfig {
            max_items: 6,
            max_expr_depth: 3,
            max_size: 6,
            ops: Ops::ALL,
            allow_runtime_errors: false,
            max_item_choices: 256,
        }
    }
}

/// A generated program with inputs for one run.
#[derive(Clone)]
pub struct Case {
    /// The program (unchecked: `Expr::ty` is `None`); `check` always accepts it.
    pub program: Program,
    /// A value for every input, by name, of its declared type and shape.
    pub inputs: IndexMap<String, Value>,
    /// The value given to each size name of the inputs' types.
    pub sizes: IndexMap<String, usize>,
}

impl Case {
    /// The program as `.eqf` text.
    pub fn text(&self) -> String {
        crate::print::print_program(&self.program)
    }
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Case {{ sizes: {:?}", self.sizes)?;
        for (name, v) in &self.inputs {
            let xs: Vec<String> = v.to_scalars().iter().map(|s| s.to_string()).collect();
            writeln!(f, "  input {name} {:?} = [{}]", v.shape(), xs.join(", "))?;
        }
        writeln!(f, "program:")?;
        write!(f, "{}}}", self.text())
    }
}

/// Cases: a random well-typed program and inputs for it (see the module documentation).
pub fn program_and_inputs(cfg: GenConfig) -> impl Strategy<Value = Case> {
    let per_item = prop::collection::vec(any::<u32>(), 0..=cfg.max_item_choices.max(1));
    (
        prop::collection::vec(per_item, 1..=cfg.max_items.max(1) + 1),
        prop::collection::vec(any::<u32>(), 0..=512),
    )
        .prop_map(move |(choices, data)| build_case(&cfg, &choices, &data))
}

/// Builds the case that `choices` (the program) and `data` (sizes and input elements)
/// decide. `choices[0]` decides the inputs and named functions, each further vector one
/// top-level item (and the named functions it may define first), so deleting a vector
/// deletes an item. Deterministic; any vectors, including empty ones, give a valid case.
pub fn build_case(cfg: &GenConfig, choices: &[Vec<u32>], data: &[u32]) -> Case {
    let mut g = Gen::new(cfg, choices);
    let program = g.program();
    let mut d = Src { c: data, pos: 0 };
    let mut sizes = IndexMap::new();
    for s in &g.size_names {
        let v = d.below(cfg.max_size + 1);
        sizes.insert(s.clone(), v);
    }
    let mut inputs = IndexMap::new();
    for (name, ty) in program.inputs() {
        let v = match ty {
            Type::Array { elem, shape } => {
                let dims: Vec<usize> = shape
                    .iter()
                    .map(|dim| match dim {
                        Dim::Known(k) => usize::try_from(*k).unwrap_or(0),
                        Dim::Size(s) => sizes.get(s).copied().unwrap_or(0),
                        _ => 0,
                    })
                    .collect();
                let count: usize = dims.iter().product();
                let elems: Vec<Scalar> = (0..count).map(|_| data_scalar(&mut d, *elem)).collect();
                Value::from_scalars(*elem, &dims, &elems)
            }
            Type::Scalar(t) => Some(Value::scalar(data_scalar(&mut d, *t))),
            _ => None,
        };
        if let Some(v) = v {
            inputs.insert(name.to_string(), v);
        }
    }
    Case { program, inputs, sizes }
}

/// Whether two values are identical: same element type and shape, and bit-identical
/// elements (so NaN equals NaN, `0.0` differs from `-0.0`).
pub fn identical(a: &Value, b: &Value) -> bool {
    a.elem_type() == b.elem_type()
        && a.shape() == b.shape()
        && a.to_scalars().iter().zip(b.to_scalars()).all(|(x, y)| match (*x, y) {
            (Scalar::F32(p), Scalar::F32(q)) => p.to_bits() == q.to_bits(),
            (Scalar::F64(p), Scalar::F64(q)) => p.to_bits() == q.to_bits(),
            (p, q) => p == q,
        })
}

/// Bit-identical but for the bits of NaNs: which NaN an operation on two NaNs returns (and
/// so its sign) is up to the compiler (it may commute `a * b`), here as in Rust generally.
pub fn same_but_nan_bits(a: &Value, b: &Value) -> bool {
    a.elem_type() == b.elem_type()
        && a.shape() == b.shape()
        && a.to_scalars().iter().zip(b.to_scalars()).all(|(x, y)| match (*x, y) {
            (Scalar::F32(p), Scalar::F32(q)) => p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()),
            (Scalar::F64(p), Scalar::F64(q)) => p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()),
            (p, q) => p == q,
        })
}

/// Whether an executor's outputs (`got`) agree with the plan interpreter's (`want`) for
/// `plan`: the same outputs, bit for bit (NaN bits aside), or the same error code. Only
/// the order of float folds may differ (elementwise code is exact whatever the blocks):
/// where the plan folds floats, floats agree up to rounding and values computed from them
/// (a comparison, a conversion) may differ. `Err` says what disagrees.
pub fn executor_agrees(
    want: &crate::error::Result<IndexMap<String, Value>>,
    got: &crate::error::Result<IndexMap<String, Value>>,
    plan: &crate::plan::Plan,
) -> Result<(), String> {
    match (want, got) {
        (Ok(w), Ok(g)) => {
            let (wk, gk): (Vec<&String>, Vec<&String>) = (w.keys().collect(), g.keys().collect());
            if wk != gk {
                return Err(format!("output names differ: {wk:?} vs {gk:?}"));
            }
            for (name, a) in w {
                let b = &g[name];
                if identical(a, b) || same_but_nan_bits(a, b) {
                    continue;
                }
                let tol = match a.elem_type() {
                    ElemType::F32 => Tolerance { rtol: 1e-4, atol: 1e-4, mismatch_fraction: 0.0 },
                    _ => Tolerance { rtol: 1e-9, atol: 1e-9, mismatch_fraction: 0.0 },
                };
                let close = compare(b, a, &tol);
                let float = matches!(a.elem_type(), ElemType::F32 | ElemType::F64);
                if !(plan.folds_floats() && (close.is_ok() || !float)) {
                    return Err(format!(
                        "output `{name}` differs ({close:?}): interpreter {a:?}, executor {b:?}"
                    ));
                }
            }
            Ok(())
        }
        (Err(a), Err(b)) if a.code == b.code => Ok(()),
        (Err(a), Err(b)) => Err(format!("interpreter fails with {a}, executor with {b}")),
        (Ok(_), Err(b)) => Err(format!("interpreter runs, executor fails: {b}")),
        (Err(a), Ok(_)) => Err(format!("interpreter fails with {a}, executor runs")),
    }
}

/// One input element from the data choices: floats in `[-2, 2]` (multiples of 0.001),
/// integers in `[-10, 10]`; a choice of 0 gives 0 / `false`.
fn data_scalar(d: &mut Src<'_>, t: ElemType) -> Scalar {
    let c = d.next();
    let signed = |k: u32| -> i64 {
        let half = i64::from(k / 2);
        if k.is_multiple_of(2) {
            half
        } else {
            -half - 1
        }
    };
    match t {
        ElemType::Bool => Scalar::Bool(c % 2 == 1),
        ElemType::I32 => Scalar::I32(i32::try_from(signed(c % 21)).unwrap_or(0)),
        ElemType::I64 => Scalar::I64(signed(c % 21)),
        ElemType::F32 => Scalar::F32((signed(c % 4001) as f64 / 1000.0) as f32),
        ElemType::F64 => Scalar::F64(signed(c % 4001) as f64 / 1000.0),
    }
}

/// A stream of choices; 0 past the end.
struct Src<'a> {
    c: &'a [u32],
    pos: usize,
}

impl Src<'_> {
    fn next(&mut self) -> u32 {
        let v = self.c.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        v
    }

    /// `0..n` (0 when `n == 0`).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.next() as usize % n
        }
    }

    /// True with probability `num / den`; false on a 0 choice.
    fn chance(&mut self, num: u32, den: u32) -> bool {
        self.next() % den >= den - num
    }

    /// An index into `weights`, proportionally; a 0 choice gives the first nonzero weight.
    fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u32 = weights.iter().sum();
        if total == 0 {
            return 0;
        }
        let mut r = self.next() % total;
        for (i, w) in weights.iter().enumerate() {
            if r < *w {
                return i;
            }
            r -= w;
        }
        0
    }
}

// ---------------------------------------------------------------- syntax helpers

fn mk(kind: ExprKind) -> Expr {
    Expr::new(kind, Span::default())
}

fn var(name: &str) -> Expr {
    mk(ExprKind::Var(name.to_string()))
}

fn int(v: i64) -> Expr {
    mk(ExprKind::Lit(Lit::Int(v)))
}

fn float(v: f64) -> Expr {
    mk(ExprKind::Lit(Lit::Float(v)))
}

fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
    mk(ExprKind::Binary { op, lhs: Box::new(l), rhs: Box::new(r) })
}

fn app(f: &str, args: Vec<Expr>) -> Expr {
    mk(ExprKind::Apply { func: Box::new(var(f)), args })
}

fn app_e(f: Expr, args: Vec<Expr>) -> Expr {
    mk(ExprKind::Apply { func: Box::new(f), args })
}

fn ifx(c: Expr, t: Expr, e: Expr) -> Expr {
    mk(ExprKind::If { cond: Box::new(c), then_: Box::new(t), else_: Box::new(e) })
}

fn lam(params: Vec<String>, body: Expr) -> Expr {
    mk(ExprKind::Lambda { params, body: Box::new(body) })
}

fn shape(dims: Vec<Expr>) -> Expr {
    mk(ExprKind::Shape(dims))
}

fn index(a: &str, ix: Vec<Expr>) -> Expr {
    mk(ExprKind::Index { array: Box::new(var(a)), indices: ix })
}

/// `-e`, folded into a literal as the parser folds it.
fn neg(e: Expr) -> Expr {
    match e.kind {
        ExprKind::Lit(Lit::Int(v)) => int(v.wrapping_neg()),
        ExprKind::Lit(Lit::Float(v)) => float(-v),
        _ => mk(ExprKind::Unary { op: UnOp::Neg, operand: Box::new(e) }),
    }
}

fn not(e: Expr) -> Expr {
    mk(ExprKind::Unary { op: UnOp::Not, operand: Box::new(e) })
}

/// `e - 1`
fn minus1(e: &Expr) -> Expr {
    bin(BinOp::Sub, e.clone(), int(1))
}

/// `clamp i 0 (len - 1)`
fn clamp_to(i: Expr, len: &Expr) -> Expr {
    app("clamp", vec![i, int(0), minus1(len)])
}

fn zero_of(t: ElemType) -> Expr {
    match t {
        ElemType::Bool => mk(ExprKind::Lit(Lit::Bool(false))),
        ElemType::F32 | ElemType::F64 => float(0.0),
        _ => int(0),
    }
}

fn one_of(t: ElemType) -> Expr {
    match t {
        ElemType::Bool => mk(ExprKind::Lit(Lit::Bool(true))),
        ElemType::F32 | ElemType::F64 => float(1.0),
        _ => int(1),
    }
}

// ---------------------------------------------------------------- the builder

/// A dimension: a key (equal keys are equal at run time) and an expression computing it
/// that is valid everywhere after its array is defined (it names only globals and sizes).
#[derive(Clone, Debug)]
struct D {
    key: String,
    e: Expr,
}

/// An array's element type and dimensions.
#[derive(Clone, Debug)]
struct ArrT {
    elem: ElemType,
    dims: Vec<D>,
}

impl ArrT {
    fn keys(&self) -> Vec<&str> {
        self.dims.iter().map(|d| d.key.as_str()).collect()
    }
}

/// A scalar generated for an intended type; `pinned` when the checker will certainly give
/// it that type (not only a literal whose type the context would decide).
struct S {
    e: Expr,
    pinned: bool,
}

/// A named scalar function.
#[derive(Clone)]
struct Func {
    name: String,
    params: Vec<ElemType>,
    ret: ElemType,
}

/// A reduction operator with its neutral element.
struct OpNe {
    op: Expr,
    ne: Expr,
}

const SIZE_NAMES: &[&str] = &["n", "m", "k"];

struct Gen<'a> {
    src: Src<'a>,
    streams: &'a [Vec<u32>],
    cfg: &'a GenConfig,
    items: Vec<Item>,
    size_names: Vec<String>,
    arrays: Vec<(String, ArrT)>,
    scalars: Vec<(String, ElemType)>,
    funcs: Vec<Func>,
    /// Named reduction operators already defined, by (form, element type).
    op_funcs: Vec<(usize, ElemType, String)>,
    /// Lambda parameters and local lets in scope: name, type, pinned.
    locals: Vec<(String, ElemType, bool)>,
    in_lambda: u32,
    fresh: usize,
    outputs: Vec<String>,
    let_names: Vec<String>,
}

impl<'a> Gen<'a> {
    fn new(cfg: &'a GenConfig, streams: &'a [Vec<u32>]) -> Gen<'a> {
        Gen {
            src: Src { c: streams.first().map_or(&[], |v| v.as_slice()), pos: 0 },
            streams,
            cfg,
            items: Vec::new(),
            size_names: Vec::new(),
            arrays: Vec::new(),
            scalars: Vec::new(),
            funcs: Vec::new(),
            op_funcs: Vec::new(),
            locals: Vec::new(),
            in_lambda: 0,
            fresh: 0,
            outputs: Vec::new(),
            let_names: Vec::new(),
        }
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    fn elem(&mut self) -> ElemType {
        // f32 first: a 0 choice gives the most common type
        [ElemType::F32, ElemType::I64, ElemType::F64, ElemType::I32, ElemType::Bool][self.src.below(5)]
    }

    fn ops(&self) -> Ops {
        self.cfg.ops
    }

    fn unguarded(&mut self) -> bool {
        self.cfg.allow_runtime_errors && self.src.chance(1, 4)
    }

    // ------------------------------------------------------------ program

    fn program(&mut self) -> Program {
        // Every "one more?" decision is false on a 0 choice, so shrinking removes inputs.
        self.inputs();
        if self.ops().functions {
            for _ in 0..2 {
                if !self.src.chance(1, 3) {
                    break;
                }
                self.named_function();
            }
        }
        let streams = self.streams;
        for stream in streams.iter().skip(1).take(self.cfg.max_items.max(1)) {
            self.src = Src { c: stream, pos: 0 };
            if self.ops().functions && self.src.chance(1, 10) {
                self.named_function();
            }
            let output = self.src.chance(2, 5);
            let scalar = self.src.chance(1, 4);
            let name = if output { self.fresh("o") } else { self.fresh("t") };
            let value = if scalar {
                let t = self.elem();
                let s = self.top_scalar(t);
                self.scalars.push((name.clone(), t));
                s
            } else {
                let (e, at) = self.top_array(&name);
                self.arrays.push((name.clone(), at));
                e
            };
            if output {
                self.outputs.push(name.clone());
                self.items.push(Item::Output { name, value: Some(value), span: Span::default() });
            } else {
                self.let_names.push(name.clone());
                self.items.push(Item::Let { name, value, span: Span::default() });
            }
        }
        // `output x` naming an earlier let; always when nothing else is output
        if let Some(last) = self.let_names.len().checked_sub(1) {
            if self.outputs.is_empty() || self.src.chance(1, 3) {
                let i = if self.outputs.is_empty() { last } else { self.src.below(last + 1) };
                let name = self.let_names[i].clone();
                self.items.push(Item::Output { name, value: None, span: Span::default() });
            }
        }
        Program { items: std::mem::take(&mut self.items) }
    }

    fn inputs(&mut self) {
        for i in 0..4 {
            if i > 0 && !self.src.chance(1, 2) {
                break;
            }
            let name = self.fresh("in");
            let elem = self.elem();
            let rank = if self.src.chance(1, 4) { 2 } else { 1 };
            let mut dims = Vec::new();
            let mut ds = Vec::new();
            for _ in 0..rank {
                let (dim, d) = match self.src.weighted(&[6, 3, 2, 1]) {
                    3 => {
                        let k = self.src.below(self.cfg.max_size.min(4) + 1) as i64;
                        (Dim::Known(k), D { key: k.to_string(), e: int(k) })
                    }
                    w => {
                        let s = SIZE_NAMES[w.min(2)].to_string();
                        if !self.size_names.contains(&s) {
                            self.size_names.push(s.clone());
                        }
                        (Dim::Size(s.clone()), D { key: s.clone(), e: var(&s) })
                    }
                };
                dims.push(dim);
                ds.push(d);
            }
            self.items.push(Item::Input {
                name: name.clone(),
                ty: Type::Array { elem, shape: dims },
                span: Span::default(),
            });
            self.arrays.push((name, ArrT { elem, dims: ds }));
        }
        for _ in 0..2 {
            if !self.src.chance(1, 3) {
                break;
            }
            let name = self.fresh("s");
            let t = self.elem();
            self.items.push(Item::Input { name: name.clone(), ty: Type::Scalar(t), span: Span::default() });
            self.scalars.push((name, t));
        }
    }

    /// A top-level `let f = \p.. -> body`.
    fn named_function(&mut self) {
        let name = self.fresh("g");
        let n = 1 + self.src.below(3);
        let params: Vec<ElemType> = (0..n).map(|_| self.elem()).collect();
        let ret = self.elem();
        let names: Vec<String> = (0..n).map(|_| self.fresh("p")).collect();
        let base = self.locals.len();
        for (p, t) in names.iter().zip(&params) {
            // a named function's parameter types are decided by its uses
            self.locals.push((p.clone(), *t, false));
        }
        self.in_lambda += 1;
        let depth = self.cfg.max_expr_depth;
        let body = self.sc(ret, depth);
        self.in_lambda -= 1;
        self.locals.truncate(base);
        let body = commit(ret, body);
        self.items.push(Item::Let { name: name.clone(), value: lam(names, body), span: Span::default() });
        self.funcs.push(Func { name, params, ret });
    }

    fn top_scalar(&mut self, t: ElemType) -> Expr {
        let depth = self.cfg.max_expr_depth;
        if self.ops().reductions && self.src.chance(1, 3) {
            if let Some(e) = self.reduce_scalar(t, depth) {
                return e;
            }
        }
        let s = self.sc(t, depth);
        commit(t, s)
    }

    // ------------------------------------------------------------ scalars

    /// A scalar expression of intended type `t` within a depth budget.
    fn sc(&mut self, t: ElemType, depth: u32) -> S {
        if depth == 0 {
            return self.leaf(t);
        }
        let ops = self.ops();
        let d = depth - 1;
        let arrays_of_t = self.arrays.iter().any(|(_, a)| a.elem == t);
        let funcs_to_t = self.funcs.iter().any(|f| f.ret == t);
        let top = self.in_lambda == 0;
        let w = |on: bool, w: u32| if on { w } else { 0 };
        if t == ElemType::Bool {
            let k = self.src.weighted(&[
                4,
                5,
                3,
                1,
                w(ops.control, 2),
                w(ops.control, 1),
                w(ops.indexing && arrays_of_t, 2),
                w(ops.functions && funcs_to_t, 2),
                w(ops.reductions && top, 1),
            ]);
            return match k {
                1 => {
                    let s = self.elem();
                    let ops_ok: &[BinOp] = if s == ElemType::Bool {
                        &[BinOp::Eq, BinOp::Ne]
                    } else {
                        &[BinOp::Lt, BinOp::Le, BinOp::Gt, BinOp::Ge, BinOp::Eq, BinOp::Ne]
                    };
                    let op = ops_ok[self.src.below(ops_ok.len())];
                    let (a, b) = (self.sc(s, d), self.sc(s, d));
                    S { e: bin(op, a.e, b.e), pinned: true }
                }
                2 => {
                    let op = if self.src.chance(1, 2) { BinOp::Or } else { BinOp::And };
                    let (a, b) = (self.sc(t, d), self.sc(t, d));
                    S { e: self.binary(op, a.e, b.e), pinned: true }
                }
                3 => S { e: not(self.sc(t, d).e), pinned: true },
                4 => self.if_sc(t, d),
                5 => self.let_sc(t, d),
                6 => self.index_sc(t, d),
                7 => self.call_sc(t, d),
                8 => match self.reduce_scalar(t, d) {
                    Some(e) => S { e, pinned: true },
                    None => self.leaf(t),
                },
                _ => self.leaf(t),
            };
        }
        let float = t.is_float();
        let k = self.src.weighted(&[
            4,
            6,
            2,
            1,
            w(ops.math, 2),
            w(ops.control, 2),
            w(ops.control, 1),
            w(ops.math, 1),
            w(ops.indexing && arrays_of_t, 2),
            w(ops.functions && funcs_to_t, 2),
            w(ops.control, 1),
            w(ops.math && float, 4),
            w(t == ElemType::I64, 1),
            w(ops.reductions && top, 1),
        ]);
        match k {
            1 => {
                let op = [BinOp::Add, BinOp::Sub, BinOp::Mul][self.src.below(3)];
                let (a, b) = (self.sc(t, d), self.sc(t, d));
                S { pinned: a.pinned || b.pinned, e: self.binary(op, a.e, b.e) }
            }
            2 => {
                let op = if self.src.chance(1, 2) { BinOp::Rem } else { BinOp::Div };
                let (a, b) = (self.sc(t, d), self.sc(t, d));
                let pinned = a.pinned || b.pinned;
                let divisor = if self.unguarded() {
                    b.e
                } else {
                    ifx(bin(BinOp::Eq, b.e.clone(), int(0)), one_of(t), b.e)
                };
                S { e: bin(op, a.e, divisor), pinned }
            }
            3 => {
                let a = self.sc(t, d);
                S { e: neg(a.e), pinned: a.pinned }
            }
            4 => {
                let f = ["min", "max", "abs", "clamp"][self.src.below(4)];
                let n = match f {
                    "abs" => 1,
                    "clamp" => 3,
                    _ => 2,
                };
                let args: Vec<S> = (0..n).map(|_| self.sc(t, d)).collect();
                let pinned = args.iter().any(|a| a.pinned);
                S { e: app(f, args.into_iter().map(|a| a.e).collect()), pinned }
            }
            5 => self.if_sc(t, d),
            6 => self.let_sc(t, d),
            7 => {
                // convert a local (a lambda's argument) of another type, or anything
                let s = if !self.locals.is_empty() && self.src.chance(1, 2) {
                    self.locals[self.src.below(self.locals.len())].1
                } else {
                    self.elem()
                };
                let a = self.sc(s, d);
                S { e: app(t.name(), vec![a.e]), pinned: true }
            }
            8 => self.index_sc(t, d),
            9 => self.call_sc(t, d),
            10 => self.iterate_sc(t, d),
            11 => self.float_math(t, d),
            12 => self.length_sc(),
            13 => match self.reduce_scalar(t, d) {
                Some(e) => S { e, pinned: true },
                None => self.leaf(t),
            },
            _ => self.leaf(t),
        }
    }

    /// `a op b`, sometimes written as an applied section `(op) a b`.
    fn binary(&mut self, op: BinOp, a: Expr, b: Expr) -> Expr {
        if self.src.chance(1, 12) {
            app_e(mk(ExprKind::Section(op)), vec![a, b])
        } else {
            bin(op, a, b)
        }
    }

    fn leaf(&mut self, t: ElemType) -> S {
        // lambda parameters and local lets first: lambdas should read their arguments
        let locals: Vec<(String, bool)> =
            self.locals.iter().filter(|l| l.1 == t).map(|l| (l.0.clone(), l.2)).collect();
        if !locals.is_empty() && self.src.chance(1, 2) {
            let (name, pinned) = locals[self.src.below(locals.len())].clone();
            return S { e: var(&name), pinned };
        }
        let mut cands: Vec<(String, bool)> =
            self.locals.iter().filter(|l| l.1 == t).map(|l| (l.0.clone(), l.2)).collect();
        cands.extend(self.scalars.iter().filter(|s| s.1 == t).map(|s| (s.0.clone(), true)));
        if t == ElemType::I64 {
            cands.extend(self.size_names.iter().map(|s| (s.clone(), true)));
        }
        if !cands.is_empty() && self.src.chance(2, 3) {
            let (name, pinned) = cands[self.src.below(cands.len())].clone();
            return S { e: var(&name), pinned };
        }
        self.literal(t)
    }

    fn literal(&mut self, t: ElemType) -> S {
        match t {
            ElemType::Bool => S { e: mk(ExprKind::Lit(Lit::Bool(self.src.chance(1, 2)))), pinned: true },
            ElemType::I32 | ElemType::I64 => {
                let v = [0, 1, 2, 3, -1, 5, 7, -3, 10][self.src.below(9)];
                S { e: int(v), pinned: t == ElemType::I64 }
            }
            ElemType::F32 | ElemType::F64 => {
                if self.src.chance(1, 6) {
                    // an integer literal where a float is expected
                    let v = [0, 1, 2, -1][self.src.below(4)];
                    return S { e: int(v), pinned: false };
                }
                let v = [0.0, 1.0, 0.5, 2.0, -1.5, 0.25, -0.75, 1.25, 3.0][self.src.below(9)];
                S { e: float(v), pinned: t == ElemType::F64 }
            }
        }
    }

    fn if_sc(&mut self, t: ElemType, d: u32) -> S {
        let c = self.sc(ElemType::Bool, d);
        let (a, b) = (self.sc(t, d), self.sc(t, d));
        S { pinned: a.pinned || b.pinned, e: ifx(c.e, a.e, b.e) }
    }

    fn let_sc(&mut self, t: ElemType, d: u32) -> S {
        let name = self.fresh("v");
        let vt = self.elem();
        let v = self.sc(vt, d);
        self.locals.push((name.clone(), vt, v.pinned));
        let body = self.sc(t, d);
        self.locals.pop();
        S { pinned: body.pinned, e: mk(ExprKind::Let { name, value: Box::new(v.e), body: Box::new(body.e) }) }
    }

    /// `a[i..]` of a global array with elements `t`, guarded against empty arrays.
    fn index_sc(&mut self, t: ElemType, d: u32) -> S {
        let cands: Vec<(String, ArrT)> = self.arrays.iter().filter(|(_, a)| a.elem == t).cloned().collect();
        if cands.is_empty() {
            return self.leaf(t);
        }
        let (name, at) = cands[self.src.below(cands.len())].clone();
        let raw: Vec<Expr> = at.dims.iter().map(|_| self.sc(ElemType::I64, d).e).collect();
        if self.unguarded() {
            return S { e: index(&name, raw), pinned: true };
        }
        let ix: Vec<Expr> = raw.into_iter().zip(&at.dims).map(|(i, dim)| clamp_to(i, &dim.e)).collect();
        let mut empty: Option<Expr> = None;
        for dim in &at.dims {
            let c = bin(BinOp::Eq, dim.e.clone(), int(0));
            empty = Some(match empty {
                None => c,
                Some(p) => bin(BinOp::Or, p, c),
            });
        }
        let fallback = self.leaf(t).e;
        let e = match empty {
            Some(c) => ifx(c, fallback, index(&name, ix)),
            None => index(&name, ix),
        };
        S { e, pinned: true }
    }

    fn call_sc(&mut self, t: ElemType, d: u32) -> S {
        let cands: Vec<Func> = self.funcs.iter().filter(|f| f.ret == t).cloned().collect();
        if cands.is_empty() {
            return self.leaf(t);
        }
        let f = cands[self.src.below(cands.len())].clone();
        let args: Vec<Expr> = f.params.iter().map(|p| self.sc(*p, d).e).collect();
        S { e: app(&f.name, args), pinned: true }
    }

    fn iterate_sc(&mut self, t: ElemType, d: u32) -> S {
        let count = [2, 0, 1, 3, -1][self.src.below(5)];
        let init = self.sc(t, d);
        let p = self.fresh("x");
        self.locals.push((p.clone(), t, init.pinned));
        self.in_lambda += 1;
        let body = self.sc(t, d);
        self.in_lambda -= 1;
        self.locals.pop();
        S {
            pinned: init.pinned || body.pinned,
            e: app("iterate", vec![int(count), lam(vec![p], body.e), init.e]),
        }
    }

    fn float_math(&mut self, t: ElemType, d: u32) -> S {
        let x = self.sc(t, d);
        let p = x.pinned;
        let abs1 = |x: Expr| bin(BinOp::Add, app("abs", vec![x]), float(1.0));
        let e = match self.src.below(13) {
            0 => app("sin", vec![x.e]),
            1 => app("sqrt", vec![abs1(x.e)]),
            2 => app("exp", vec![app(if self.src.chance(1, 2) { "sin" } else { "tanh" }, vec![x.e])]),
            3 => app("log", vec![abs1(x.e)]),
            4 => app("cos", vec![x.e]),
            5 => app("tan", vec![app("tanh", vec![x.e])]),
            6 => app("tanh", vec![x.e]),
            7 => app("floor", vec![x.e]),
            8 => app("ceil", vec![x.e]),
            9 => app("round", vec![x.e]),
            10 => {
                let y = if self.src.chance(1, 2) {
                    float([2.0, 0.5, 3.0, -1.0][self.src.below(4)])
                } else {
                    app("cos", vec![self.sc(t, d).e])
                };
                app("pow", vec![abs1(x.e), y])
            }
            11 => {
                let y = self.sc(t, d);
                return S { pinned: p || y.pinned, e: app("atan2", vec![x.e, y.e]) };
            }
            _ => app("clamp", vec![x.e, float(-1.0), float(1.0)]),
        };
        S { e, pinned: p }
    }

    fn length_sc(&mut self) -> S {
        if self.arrays.is_empty() {
            return self.leaf(ElemType::I64);
        }
        let i = self.src.below(self.arrays.len());
        let (name, at) = self.arrays[i].clone();
        let e = if self.src.chance(1, 2) {
            app("length", vec![var(&name)])
        } else {
            let k = self.src.below(at.dims.len());
            app("size", vec![var(&name), int(k as i64)])
        };
        S { e, pinned: true }
    }

    /// `reduce op ne a` of a rank-1 array with elements `t` (top level only).
    fn reduce_scalar(&mut self, t: ElemType, d: u32) -> Option<Expr> {
        if self.in_lambda > 0 {
            return None;
        }
        let (a, _) = self.arg_arr(d, |a| a.elem == t && a.dims.len() == 1)?;
        let OpNe { op, ne } = self.op_ne(t);
        Some(app("reduce", vec![op, ne, a]))
    }

    // ------------------------------------------------------------ reduction operators

    fn op_ne(&mut self, t: ElemType) -> OpNe {
        let use_fn = self.ops().functions && self.src.chance(1, 6);
        if t == ElemType::Bool {
            let and = self.src.chance(1, 2);
            let (op, ne) = if and { (BinOp::And, true) } else { (BinOp::Or, false) };
            let ne = mk(ExprKind::Lit(Lit::Bool(ne)));
            let opx = match self.src.below(2) {
                0 => mk(ExprKind::Section(op)),
                _ => self.op_lambda(usize::from(and), t, |a, b| bin(op, a, b), use_fn),
            };
            return OpNe { op: opx, ne };
        }
        let (lo, hi) = match t {
            ElemType::I32 => (int(i64::from(i32::MIN)), int(i64::from(i32::MAX))),
            ElemType::I64 => (int(i64::MIN), int(i64::MAX)),
            _ => (float(f64::NEG_INFINITY), float(f64::INFINITY)),
        };
        match self.src.below(4) {
            0 => {
                let op = if self.src.chance(1, 2) { BinOp::Mul } else { BinOp::Add };
                let ne = if op == BinOp::Add { zero_of(t) } else { one_of(t) };
                let opx = if self.src.chance(1, 3) {
                    self.op_lambda(2 + usize::from(op == BinOp::Mul), t, |a, b| bin(op, a, b), use_fn)
                } else {
                    mk(ExprKind::Section(op))
                };
                OpNe { op: opx, ne }
            }
            1 => OpNe { op: var("min"), ne: hi },
            2 => OpNe { op: var("max"), ne: lo },
            _ => {
                let is_max = self.src.chance(1, 2);
                let f = if is_max { "max" } else { "min" };
                let opx = self.op_lambda(4 + usize::from(is_max), t, |a, b| app(f, vec![a, b]), use_fn);
                OpNe { op: opx, ne: if is_max { lo } else { hi } }
            }
        }
    }

    /// An operator as a lambda `\a b -> body`, or as a named function defined on first use.
    fn op_lambda(
        &mut self,
        form: usize,
        t: ElemType,
        body: impl Fn(Expr, Expr) -> Expr,
        named: bool,
    ) -> Expr {
        let (a, b) = (self.fresh("x"), self.fresh("x"));
        let l = lam(vec![a.clone(), b.clone()], body(var(&a), var(&b)));
        if !named {
            return l;
        }
        if let Some((_, _, name)) = self.op_funcs.iter().find(|(f, e, _)| *f == form && *e == t) {
            return var(name);
        }
        let name = self.fresh("op");
        self.items.push(Item::Let { name: name.clone(), value: l, span: Span::default() });
        self.op_funcs.push((form, t, name.clone()));
        var(&name)
    }

    // ------------------------------------------------------------ arrays

    /// A dimension for a new array: a size name, a small literal, or a dimension of an
    /// existing array.
    fn dim(&mut self) -> D {
        match self.src.weighted(&[4, 2, 3]) {
            0 if !self.size_names.is_empty() => {
                let s = self.size_names[self.src.below(self.size_names.len())].clone();
                D { key: s.clone(), e: var(&s) }
            }
            2 if !self.arrays.is_empty() => {
                let i = self.src.below(self.arrays.len());
                let at = &self.arrays[i].1;
                let j = self.src.below(at.dims.len());
                at.dims[j].clone()
            }
            _ => {
                let k = self.src.below(4) as i64;
                D { key: k.to_string(), e: int(k) }
            }
        }
    }

    /// An array argument satisfying `pred`: a named array (the latest one half the time),
    /// sometimes wrapped in an operation that keeps its shape.
    fn arg_arr(&mut self, d: u32, pred: impl Fn(&ArrT) -> bool) -> Option<(Expr, ArrT)> {
        let cands: Vec<(String, ArrT)> = self.arrays.iter().filter(|(_, a)| pred(a)).cloned().collect();
        let last = cands.len().checked_sub(1)?;
        let i = if self.src.chance(1, 2) { last } else { self.src.below(cands.len()) };
        let (name, at) = cands[i].clone();
        let e = var(&name);
        if d > 0 && self.src.chance(1, 4) {
            return Some(self.wrap(e, at, d - 1));
        }
        Some((e, at))
    }

    /// An operation on `a` that keeps its element type and shape.
    fn wrap(&mut self, a: Expr, at: ArrT, d: u32) -> (Expr, ArrT) {
        let ops = self.ops();
        let w = |on: bool, w: u32| if on { w } else { 0 };
        let e = match self.src.weighted(&[3, w(ops.reshaping, 1), w(ops.reductions, 2)]) {
            1 => app("reverse", vec![a]),
            2 => {
                let OpNe { op, ne } = self.op_ne(at.elem);
                let f = if self.src.chance(1, 2) { "scan_exclusive" } else { "scan" };
                app(f, vec![op, ne, a])
            }
            _ => {
                let f = self.lambda(&[at.elem], at.elem, d);
                app("map", vec![f, a])
            }
        };
        (e, at)
    }

    /// A lambda (or sometimes a named function of that signature) taking `params` to `ret`.
    fn lambda(&mut self, params: &[ElemType], ret: ElemType, d: u32) -> Expr {
        if self.ops().functions && self.src.chance(1, 4) {
            let cands: Vec<String> = self
                .funcs
                .iter()
                .filter(|f| f.params == params && f.ret == ret)
                .map(|f| f.name.clone())
                .collect();
            if !cands.is_empty() {
                return var(&cands[self.src.below(cands.len())]);
            }
        }
        let names: Vec<String> = params.iter().map(|_| self.fresh("x")).collect();
        let base = self.locals.len();
        for (p, t) in names.iter().zip(params) {
            self.locals.push((p.clone(), *t, true));
        }
        self.in_lambda += 1;
        let body = self.sc(ret, d);
        self.in_lambda -= 1;
        self.locals.truncate(base);
        lam(names, commit(ret, body))
    }

    /// A lambda of index parameters whose body `body` builds from the parameter names.
    fn index_lambda(&mut self, rank: usize, body: impl FnOnce(&mut Self, &[String]) -> Expr) -> Expr {
        let names: Vec<String> = (0..rank).map(|_| self.fresh("j")).collect();
        let base = self.locals.len();
        for p in &names {
            self.locals.push((p.clone(), ElemType::I64, true));
        }
        self.in_lambda += 1;
        let b = body(self, &names);
        self.in_lambda -= 1;
        self.locals.truncate(base);
        lam(names, b)
    }

    /// The value of a top-level array item named `name`.
    fn top_array(&mut self, name: &str) -> (Expr, ArrT) {
        let d = self.cfg.max_expr_depth;
        for _ in 0..4 {
            if let Some(r) = self.array_op(name, d) {
                return r;
            }
        }
        // a map of the first input always works
        let (a, at) = (var(&self.arrays[0].0), self.arrays[0].1.clone());
        self.map_of(a, at, d)
    }

    fn map_of(&mut self, a: Expr, at: ArrT, d: u32) -> (Expr, ArrT) {
        let ret = if self.src.chance(1, 2) { at.elem } else { self.elem() };
        let f = self.lambda(&[at.elem], ret, d);
        (app("map", vec![f, a]), ArrT { elem: ret, dims: at.dims })
    }

    fn array_op(&mut self, name: &str, d: u32) -> Option<(Expr, ArrT)> {
        let ops = self.ops();
        let w = |on: bool, w: u32| if on { w } else { 0 };
        let has_rank = |g: &Gen<'_>, r: usize| g.arrays.iter().any(|(_, a)| a.dims.len() == r);
        let r1 = has_rank(self, 1);
        let r2 = has_rank(self, 2);
        let k = self.src.weighted(&[
            8,                          // 0 map
            w(ops.construct, 2),        // 1 generate
            w(ops.construct, 1),        // 2 iota
            w(ops.construct, 1),        // 3 fill
            w(ops.reductions && r2, 2), // 4 reduce rows
            w(ops.reductions, 2),       // 5 scan / scan_exclusive
            w(ops.filter && r1, 2),     // 6 filter
            w(ops.indexing && r1, 2),   // 7 gather
            w(ops.indexing, 2),         // 8 backpermute
            w(ops.indexing, 2),         // 9 permute
            w(ops.reshaping && r2, 1),  // 10 transpose
            w(ops.reshaping, 1),        // 11 reverse
            w(ops.reshaping, 1),        // 12 reshape
            w(ops.reshaping && r1, 1),  // 13 slice
            w(ops.reshaping && r1, 1),  // 14 concat
            w(ops.control, 1),          // 15 if
        ]);
        match k {
            0 => self.map_n(d),
            1 => {
                let rank = if self.src.chance(1, 3) { 2 } else { 1 };
                let dims: Vec<D> = (0..rank).map(|_| self.dim()).collect();
                let t = self.elem();
                let f = self.index_lambda(rank, |g, _| {
                    let s = g.sc(t, d);
                    commit(t, s)
                });
                let sh = shape(dims.iter().map(|x| x.e.clone()).collect());
                Some((app("generate", vec![sh, f]), ArrT { elem: t, dims }))
            }
            2 => {
                let dim = self.dim();
                Some((app("iota", vec![dim.e.clone()]), ArrT { elem: ElemType::I64, dims: vec![dim] }))
            }
            3 => {
                let rank = if self.src.chance(1, 3) { 2 } else { 1 };
                let dims: Vec<D> = (0..rank).map(|_| self.dim()).collect();
                let t = self.elem();
                let x = self.top_scalar(t);
                let sh = shape(dims.iter().map(|x| x.e.clone()).collect());
                Some((app("fill", vec![sh, x]), ArrT { elem: t, dims }))
            }
            4 => {
                let (a, at) = self.arg_arr(d, |a| a.dims.len() == 2)?;
                let OpNe { op, ne } = self.op_ne(at.elem);
                let dims = at.dims[..1].to_vec();
                Some((app("reduce", vec![op, ne, a]), ArrT { elem: at.elem, dims }))
            }
            5 => {
                let (a, at) = self.arg_arr(d, |_| true)?;
                let OpNe { op, ne } = self.op_ne(at.elem);
                let f = if self.src.chance(1, 2) { "scan_exclusive" } else { "scan" };
                Some((app(f, vec![op, ne, a]), at))
            }
            6 => {
                let (a, at) = self.arg_arr(d, |a| a.dims.len() == 1)?;
                let p = self.lambda(&[at.elem], ElemType::Bool, d);
                let key = self.fresh("#");
                let dims = vec![D { key, e: app("length", vec![var(name)]) }];
                Some((app("filter", vec![p, a]), ArrT { elem: at.elem, dims }))
            }
            7 => self.gather(d),
            8 => self.backpermute(d),
            9 => self.permute(d),
            10 => {
                let (a, at) = self.arg_arr(d, |a| a.dims.len() == 2)?;
                let dims = vec![at.dims[1].clone(), at.dims[0].clone()];
                Some((app("transpose", vec![a]), ArrT { elem: at.elem, dims }))
            }
            11 => {
                let (a, at) = self.arg_arr(d, |_| true)?;
                Some((app("reverse", vec![a]), at))
            }
            12 => {
                let (a, at) = self.arg_arr(d, |_| true)?;
                let dims = match at.dims.as_slice() {
                    [x, y] if self.src.chance(1, 2) => vec![y.clone(), x.clone()],
                    [x, y] => vec![product(x, y)],
                    [x] if self.src.chance(1, 2) => vec![x.clone(), D { key: "1".into(), e: int(1) }],
                    [x] => vec![D { key: "1".into(), e: int(1) }, x.clone()],
                    _ => return None,
                };
                let sh = shape(dims.iter().map(|x| x.e.clone()).collect());
                Some((app("reshape", vec![sh, a]), ArrT { elem: at.elem, dims }))
            }
            13 => {
                let (a, at) = self.arg_arr(d, |a| a.dims.len() == 1)?;
                let l = at.dims[0].e.clone();
                let (s0, l0) = (int(self.src.below(3) as i64), int(self.src.below(4) as i64));
                let (start, len) = if self.unguarded() {
                    (s0, l0)
                } else {
                    let start = app("min", vec![s0, l.clone()]);
                    let len = app("min", vec![l0, bin(BinOp::Sub, l, start.clone())]);
                    (start, len)
                };
                let key = self.fresh("#");
                let dims = vec![D { key, e: len.clone() }];
                Some((app("slice", vec![a, start, len]), ArrT { elem: at.elem, dims }))
            }
            14 => {
                let (a, at) = self.arg_arr(d, |a| a.dims.len() == 1)?;
                let (b, bt) = self.arg_arr(d, |b| b.dims.len() == 1 && b.elem == at.elem)?;
                let key = format!("({})+({})", at.dims[0].key, bt.dims[0].key);
                let dims = vec![D { key, e: bin(BinOp::Add, at.dims[0].e.clone(), bt.dims[0].e.clone()) }];
                Some((app("concat", vec![a, b]), ArrT { elem: at.elem, dims }))
            }
            15 => {
                let (a, at) = self.arg_arr(d, |_| true)?;
                let keys: Vec<String> = at.keys().iter().map(|k| k.to_string()).collect();
                let others: Vec<String> = self
                    .arrays
                    .iter()
                    .filter(|(_, b)| b.elem == at.elem && b.keys() == keys)
                    .map(|(n, _)| n.clone())
                    .collect();
                let other = if !others.is_empty() && self.src.chance(1, 2) {
                    var(&others[self.src.below(others.len())])
                } else {
                    app("reverse", vec![a.clone()])
                };
                let c = self.sc(ElemType::Bool, d);
                Some((ifx(c.e, a, other), at))
            }
            _ => None,
        }
    }

    /// `map f a1 .. ak` over 1 to 3 arrays of one shape.
    fn map_n(&mut self, d: u32) -> Option<(Expr, ArrT)> {
        let (a, at) = self.arg_arr(d, |_| true)?;
        let keys: Vec<String> = at.keys().iter().map(|k| k.to_string()).collect();
        let mut args = vec![a];
        let mut elems = vec![at.elem];
        for _ in 0..self.src.below(3) {
            let same: Vec<(String, ArrT)> =
                self.arrays.iter().filter(|(_, b)| b.keys() == keys).cloned().collect();
            if same.is_empty() {
                break;
            }
            let (n, bt) = same[self.src.below(same.len())].clone();
            args.push(var(&n));
            elems.push(bt.elem);
        }
        let ret = if self.src.chance(1, 2) { at.elem } else { self.elem() };
        let f = self.lambda(&elems, ret, d);
        args.insert(0, f);
        Some((app("map", args), ArrT { elem: ret, dims: at.dims }))
    }

    fn gather(&mut self, d: u32) -> Option<(Expr, ArrT)> {
        let (a, at) = self.arg_arr(d, |a| a.dims.len() == 1)?;
        let l = at.dims[0].clone();
        if self.unguarded() {
            if let Some((idx, it)) = self.arg_arr(d, |b| b.elem == ElemType::I64) {
                return Some((app("gather", vec![a, idx]), ArrT { elem: at.elem, dims: it.dims }));
            }
        }
        // indices whose outer dimension is `l`: never evaluated when `a` is empty
        let (idx, dims) = match self.src.below(4) {
            0 => (app("iota", vec![l.e.clone()]), vec![l.clone()]),
            1 => {
                let second = if self.src.chance(1, 3) { Some(self.dim()) } else { None };
                let rank = 1 + usize::from(second.is_some());
                let le = l.e.clone();
                let f = self.index_lambda(rank, |g, _| {
                    let h = g.sc(ElemType::I64, d).e;
                    in_range(g, h, &le)
                });
                let mut dims = vec![l.clone()];
                dims.extend(second);
                (app("generate", vec![shape(dims.iter().map(|x| x.e.clone()).collect()), f]), dims)
            }
            _ => {
                let same: Vec<(String, ArrT)> = self
                    .arrays
                    .iter()
                    .filter(|(_, b)| b.dims.first().is_some_and(|x| x.key == l.key))
                    .cloned()
                    .collect();
                if same.is_empty() {
                    (app("reverse", vec![app("iota", vec![l.e.clone()])]), vec![l.clone()])
                } else {
                    let (n, bt) = same[self.src.below(same.len())].clone();
                    let p = self.fresh("x");
                    self.locals.push((p.clone(), bt.elem, true));
                    self.in_lambda += 1;
                    let h = self.sc(ElemType::I64, d).e;
                    let body = in_range(self, h, &l.e);
                    self.in_lambda -= 1;
                    self.locals.pop();
                    (app("map", vec![lam(vec![p], body), var(&n)]), bt.dims)
                }
            }
        };
        Some((app("gather", vec![a, idx]), ArrT { elem: at.elem, dims }))
    }

    fn backpermute(&mut self, d: u32) -> Option<(Expr, ArrT)> {
        let (a, at) = self.arg_arr(d, |_| true)?;
        let (dims, f) = match at.dims.as_slice() {
            [l] if self.unguarded() => {
                let f = self.index_lambda(1, |_, p| bin(BinOp::Add, var(&p[0]), int(1)));
                (vec![l.clone()], f)
            }
            [l] => match self.src.below(4) {
                0 => {
                    let le = l.e.clone();
                    let f = self.index_lambda(1, |_, p| bin(BinOp::Sub, minus1(&le), var(&p[0])));
                    (vec![l.clone()], f)
                }
                1 => {
                    let c = int([1, -1, 2][self.src.below(3)]);
                    let le = l.e.clone();
                    let f = self.index_lambda(1, |_, p| clamp_to(bin(BinOp::Add, var(&p[0]), c), &le));
                    (vec![l.clone()], f)
                }
                2 => {
                    let second = self.dim();
                    let f = self.index_lambda(2, |_, p| var(&p[0]));
                    (vec![l.clone(), second], f)
                }
                _ => {
                    let le = l.e.clone();
                    let f = self.index_lambda(1, |g, p| {
                        let h = g.sc(ElemType::I64, d).e;
                        let h = bin(BinOp::Add, h, var(&p[0]));
                        in_range(g, h, &le)
                    });
                    (vec![l.clone()], f)
                }
            },
            [x, y] => match self.src.below(3) {
                0 => {
                    let f = self.index_lambda(2, |_, p| tuple(vec![var(&p[1]), var(&p[0])]));
                    (vec![y.clone(), x.clone()], f)
                }
                1 => {
                    let ye = y.e.clone();
                    let f = self.index_lambda(1, |_, p| {
                        tuple(vec![
                            bin(BinOp::Div, var(&p[0]), ye.clone()),
                            bin(BinOp::Rem, var(&p[0]), ye.clone()),
                        ])
                    });
                    (vec![product(x, y)], f)
                }
                _ => {
                    let ye = y.e.clone();
                    let f = self.index_lambda(2, |_, p| {
                        tuple(vec![var(&p[0]), bin(BinOp::Sub, minus1(&ye), var(&p[1]))])
                    });
                    (vec![x.clone(), y.clone()], f)
                }
            },
            _ => return None,
        };
        let sh = shape(dims.iter().map(|x| x.e.clone()).collect());
        Some((app("backpermute", vec![sh, f, a]), ArrT { elem: at.elem, dims }))
    }

    fn permute(&mut self, d: u32) -> Option<(Expr, ArrT)> {
        let (a, at) = self.arg_arr(d, |_| true)?;
        let OpNe { op, ne } = self.op_ne(at.elem);
        let rank = at.dims.len();
        if rank == 2 && self.src.chance(1, 3) {
            // a rank-2 destination of the source's shape
            let dest = app("fill", vec![shape(at.dims.iter().map(|x| x.e.clone()).collect()), ne]);
            let ye = at.dims[1].e.clone();
            let flip = self.src.chance(1, 2);
            let f = self.index_lambda(2, |_, p| {
                let j = if flip { bin(BinOp::Sub, minus1(&ye), var(&p[1])) } else { var(&p[1]) };
                tuple(vec![var(&p[0]), j])
            });
            return Some((app("permute", vec![op, dest, f, a]), at));
        }
        // a rank-1 destination
        let existing: Vec<(String, ArrT)> =
            self.arrays.iter().filter(|(_, b)| b.elem == at.elem && b.dims.len() == 1).cloned().collect();
        let (dest, dl) = if !existing.is_empty() && self.src.chance(1, 3) {
            let (n, bt) = existing[self.src.below(existing.len())].clone();
            (var(&n), bt.dims[0].clone())
        } else {
            let dl = self.dim();
            (app("fill", vec![shape(vec![dl.e.clone()]), ne]), dl)
        };
        let unguarded = self.unguarded();
        let le = dl.e.clone();
        let f = self.index_lambda(rank, |g, p| {
            let h = g.sc(ElemType::I64, d).e;
            let h = bin(BinOp::Add, h, var(&p[0]));
            if unguarded {
                return h;
            }
            let target = ifx(bin(BinOp::Eq, le.clone(), int(0)), int(-1), clamp_to(h, &le));
            if g.src.chance(1, 3) {
                let c = g.sc(ElemType::Bool, d).e;
                ifx(c, int(-1), target)
            } else {
                target
            }
        });
        Some((app("permute", vec![op, dest, f, a]), ArrT { elem: at.elem, dims: vec![dl] }))
    }
}

/// An index into an array of length `len` (> 0 wherever it is evaluated) from any `h`:
/// `clamp h 0 (len - 1)` or a non-negative remainder.
fn in_range(g: &mut Gen<'_>, h: Expr, len: &Expr) -> Expr {
    if g.src.chance(1, 2) {
        clamp_to(h, len)
    } else {
        // ((h % len) + len) % len
        bin(BinOp::Rem, bin(BinOp::Add, bin(BinOp::Rem, h, len.clone()), len.clone()), len.clone())
    }
}

fn tuple(es: Vec<Expr>) -> Expr {
    mk(ExprKind::Tuple(es))
}

fn product(x: &D, y: &D) -> D {
    D { key: format!("({})*({})", x.key, y.key), e: bin(BinOp::Mul, x.e.clone(), y.e.clone()) }
}

/// `s` as an expression certain to have type `t`: converted when only its literals would
/// decide its type.
fn commit(t: ElemType, s: S) -> Expr {
    // a bool expression has type bool whatever its literals
    if s.pinned || t == ElemType::Bool {
        s.e
    } else {
        app(t.name(), vec![s.e])
    }
}
