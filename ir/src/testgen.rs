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

mod arrays;
mod program;
mod scalars;
mod syntax;
mod v2;

use crate::ast::{Expr, Item, Program};
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
    /// Inputs of segment offsets (`i64[m + 1]`, an input dimension with size arithmetic) and
    /// `reduce_segments`, `scan_segments` over them.
    pub segments: bool,
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
        segments: true,
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
        segments: false,
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
    // `m + 1` offsets cannot run from 0 to a nonzero `n` when `m` is 0
    for seg in &g.segment_inputs {
        let n = sizes.get(&seg.len).copied().unwrap_or(0);
        if let Some(m) = sizes.get_mut(&seg.count) {
            if *m == 0 && n > 0 && seg.count != seg.len {
                *m = 1;
            }
        }
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
                        Dim::Affine { name, mul, add } => {
                            let v = sizes.get(name).copied().unwrap_or(0) as i64;
                            usize::try_from(mul * v + add).unwrap_or(0)
                        }
                        _ => 0,
                    })
                    .collect();
                let count: usize = dims.iter().product();
                let seg = g.segment_inputs.iter().find(|s| s.name == name);
                let elems: Vec<Scalar> = match seg {
                    Some(seg) => {
                        let n = sizes.get(&seg.len).copied().unwrap_or(0);
                        offsets(&mut d, count, n, cfg.allow_runtime_errors)
                    }
                    None => (0..count).map(|_| data_scalar(&mut d, *elem)).collect(),
                };
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

/// `count` segment offsets, non-decreasing from 0 to `n` (so `count >= 2` or `n == 0`);
/// with `bad`, now and then one that is out of order or past `n`.
fn offsets(d: &mut Src<'_>, count: usize, n: usize, bad: bool) -> Vec<Scalar> {
    let mut v: Vec<i64> = (0..count).map(|_| d.below(n + 1) as i64).collect();
    v.sort_unstable();
    if let Some(first) = v.first_mut() {
        *first = 0;
    }
    if let Some(last) = v.last_mut() {
        *last = n as i64;
    }
    if bad && count > 0 && d.chance(1, 8) {
        let i = d.below(count);
        v[i] = if d.chance(1, 2) { n as i64 + 1 } else { v[i] - 1 };
    }
    v.into_iter().map(Scalar::I64).collect()
}

/// One input element from the data choices: floats in `[-2, 2]` (multiples of 0.001),
/// integers in `[-10, 10]` (unsigned ones in `[0, 20]`); a choice of 0 gives 0 / `false`.
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
        t if t.is_unsigned() => Scalar::from_i128_wrapping(t, i128::from(c % 21)),
        t => Scalar::from_i128_wrapping(t, i128::from(signed(c % 21))),
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

/// An input of segment offsets, `name : i64[count + 1]`, for arrays of length `len` (both
/// size names).
struct SegInput {
    name: String,
    count: String,
    len: String,
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
    segment_inputs: Vec<SegInput>,
}
