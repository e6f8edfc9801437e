//! The reference interpreter: a direct evaluator of checked programs, the oracle every
//! optimised plan is tested against. Clarity before speed.
//!
//! Top-level items are evaluated in order, each `let` once. Inside expressions, values are
//! `Val`s: scalars, arrays (row-major `Array`s shared by reference counting), tuples of
//! scalars, groups (tuples at array level: the arrays of a group, a loop's state) and
//! functions (lambdas with the values they captured, operator sections and scalar
//! builtins). Local names live on an environment stack that is searched innermost first,
//! then the program's bindings, then the size names, then the builtins (and `pi`): lambda
//! parameters and local `let`s may shadow anything.
//!
//! Semantics follow docs/language-reference.md exactly: see `scalar.rs` and `bits.rs` for the
//! scalar operations, `array.rs`, `prelude.rs` and `segments.rs` for the array operations,
//! `tuples.rs` for tuples and groups and `loops.rs` for loops (which stop with `E-LIMIT` at
//! the deadline [`interpret_until`] is given). Every array is checked against
//! [`Limits::max_array_bytes`] before it is allocated. The evaluation runs on a thread with a
//! large stack, so that the deepest program the checker accepts cannot overflow it.

mod array;
mod bits;
mod fail;
mod loops;
mod prelude;
pub mod scalar;
mod segments;
mod tuples;

use crate::ast::{Expr, ExprKind, Item, Limits, Lit};
use crate::bind::bind_inputs;
use crate::checked::Checked;
use crate::error::{Error, Result, Span};
use crate::types::{ElemType, Type};
use crate::value::{Scalar, Value};
use indexmap::IndexMap;
use ndarray::{ArrayD, IxDyn};
use scalar::{internal, ScalarFn};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;
use std::time::Instant;

/// Results inside the interpreter: the error is boxed so that the values every evaluation
/// step returns stay small.
pub(crate) type R<T> = std::result::Result<T, Box<Error>>;

/// Stack size of the evaluation thread: ample for the deepest nesting allowed (2000 levels)
/// in a debug build.
const EVAL_STACK_BYTES: usize = 256 << 20;

/// Runs a checked program on `inputs` (by name) with the default [`Limits`]; returns the
/// outputs in program order.
pub fn interpret(checked: &Checked, inputs: &IndexMap<String, Value>) -> Result<IndexMap<String, Value>> {
    interpret_with(checked, inputs, &Limits::default())
}

/// Runs a checked program under `limits`: binds the inputs ([`bind_inputs`]), then evaluates
/// the items in order. Scalars are returned as 0-dimensional values.
pub fn interpret_with(
    checked: &Checked,
    inputs: &IndexMap<String, Value>,
    limits: &Limits,
) -> Result<IndexMap<String, Value>> {
    interpret_until(checked, inputs, limits, None)
}

/// [`interpret_with`] that gives up with `E-LIMIT` once `deadline` has passed: checked at
/// every iteration of a `loop` (so that a `while` loop that never ends is stopped).
pub fn interpret_until(
    checked: &Checked,
    inputs: &IndexMap<String, Value>,
    limits: &Limits,
    deadline: Option<Instant>,
) -> Result<IndexMap<String, Value>> {
    let result = crate::stack::with_stack("eqfuse-interp", EVAL_STACK_BYTES, || {
        run(checked, inputs, limits, deadline)
    });
    result.map_err(|e| *e)
}

/// Binds the inputs and evaluates every item.
fn run(
    checked: &Checked,
    inputs: &IndexMap<String, Value>,
    limits: &Limits,
    deadline: Option<Instant>,
) -> R<IndexMap<String, Value>> {
    let bindings = bind_inputs(checked, inputs, limits)?;
    let mut interp = Interp { globals: HashMap::default(), sizes: bindings.sizes, limits, deadline };
    let mut outputs = IndexMap::new();
    for item in &checked.program.items {
        match item {
            Item::Input { name, span, .. } => {
                let value =
                    inputs.get(name).ok_or_else(|| Error::input(format!("missing input `{name}`")))?;
                let val = if value.shape().is_empty() {
                    Val::Scalar(value.get_flat(0).ok_or_else(|| internal(*span, "empty scalar input"))?)
                } else {
                    Val::Array(Rc::new(Array::from_value(value)))
                };
                interp.globals.insert(name, val);
            }
            Item::LetTuple { names, value, span } => {
                let val = interp.eval(value, &mut Vec::new())?;
                for (name, part) in names.iter().zip(tuples::parts(val, names.len(), *span)?) {
                    interp.globals.insert(name, part);
                }
            }
            Item::Let { name, value, .. } => {
                let val = interp.eval(value, &mut Vec::new())?;
                interp.globals.insert(name, val);
            }
            Item::Output { name, value, span } => {
                let val = match value {
                    Some(e) => interp.eval(e, &mut Vec::new())?,
                    None => interp
                        .lookup(name, &[])
                        .ok_or_else(|| internal(*span, format!("`{name}` unbound")))?,
                };
                outputs.insert(name.clone(), val.to_value(*span)?);
                interp.globals.insert(name, val);
            }
        }
    }
    Ok(outputs)
}

/// Elements of one type, row-major.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Buf {
    Bool(Vec<bool>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    /// `i8`
    I8(Vec<i8>),
    /// `i16`
    I16(Vec<i16>),
    /// `u8`
    U8(Vec<u8>),
    /// `u16`
    U16(Vec<u16>),
    /// `u32`
    U32(Vec<u32>),
    /// `u64`
    U64(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// Applies `$body` to the `Vec` inside a [`Buf`].
macro_rules! with_buf {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            Buf::Bool($v) => $body,
            Buf::I32($v) => $body,
            Buf::I64($v) => $body,
            Buf::I8($v) => $body,
            Buf::I16($v) => $body,
            Buf::U8($v) => $body,
            Buf::U16($v) => $body,
            Buf::U32($v) => $body,
            Buf::U64($v) => $body,
            Buf::F32($v) => $body,
            Buf::F64($v) => $body,
        }
    };
}
pub(crate) use with_buf;

impl Buf {
    /// An empty buffer of `elem` with room for `n` elements.
    pub(crate) fn with_capacity(elem: ElemType, n: usize) -> Buf {
        match elem {
            ElemType::Bool => Buf::Bool(Vec::with_capacity(n)),
            ElemType::I32 => Buf::I32(Vec::with_capacity(n)),
            ElemType::I64 => Buf::I64(Vec::with_capacity(n)),
            ElemType::I8 => Buf::I8(Vec::with_capacity(n)),
            ElemType::I16 => Buf::I16(Vec::with_capacity(n)),
            ElemType::U8 => Buf::U8(Vec::with_capacity(n)),
            ElemType::U16 => Buf::U16(Vec::with_capacity(n)),
            ElemType::U32 => Buf::U32(Vec::with_capacity(n)),
            ElemType::U64 => Buf::U64(Vec::with_capacity(n)),
            ElemType::F32 => Buf::F32(Vec::with_capacity(n)),
            ElemType::F64 => Buf::F64(Vec::with_capacity(n)),
        }
    }

    /// Its element type.
    pub(crate) fn elem(&self) -> ElemType {
        match self {
            Buf::Bool(_) => ElemType::Bool,
            Buf::I32(_) => ElemType::I32,
            Buf::I64(_) => ElemType::I64,
            Buf::I8(_) => ElemType::I8,
            Buf::I16(_) => ElemType::I16,
            Buf::U8(_) => ElemType::U8,
            Buf::U16(_) => ElemType::U16,
            Buf::U32(_) => ElemType::U32,
            Buf::U64(_) => ElemType::U64,
            Buf::F32(_) => ElemType::F32,
            Buf::F64(_) => ElemType::F64,
        }
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        with_buf!(self, v => v.len())
    }

    /// The element at `i`, if in range.
    pub(crate) fn get(&self, i: usize) -> Option<Scalar> {
        match self {
            Buf::Bool(v) => v.get(i).map(|x| Scalar::Bool(*x)),
            Buf::I32(v) => v.get(i).map(|x| Scalar::I32(*x)),
            Buf::I64(v) => v.get(i).map(|x| Scalar::I64(*x)),
            Buf::I8(v) => v.get(i).map(|x| Scalar::I8(*x)),
            Buf::I16(v) => v.get(i).map(|x| Scalar::I16(*x)),
            Buf::U8(v) => v.get(i).map(|x| Scalar::U8(*x)),
            Buf::U16(v) => v.get(i).map(|x| Scalar::U16(*x)),
            Buf::U32(v) => v.get(i).map(|x| Scalar::U32(*x)),
            Buf::U64(v) => v.get(i).map(|x| Scalar::U64(*x)),
            Buf::F32(v) => v.get(i).map(|x| Scalar::F32(*x)),
            Buf::F64(v) => v.get(i).map(|x| Scalar::F64(*x)),
        }
    }

    /// Appends `s`; `false` (and nothing appended) when its type is not the buffer's.
    pub(crate) fn push(&mut self, s: Scalar) -> bool {
        match (self, s) {
            (Buf::Bool(v), Scalar::Bool(x)) => v.push(x),
            (Buf::I32(v), Scalar::I32(x)) => v.push(x),
            (Buf::I64(v), Scalar::I64(x)) => v.push(x),
            (Buf::I8(v), Scalar::I8(x)) => v.push(x),
            (Buf::I16(v), Scalar::I16(x)) => v.push(x),
            (Buf::U8(v), Scalar::U8(x)) => v.push(x),
            (Buf::U16(v), Scalar::U16(x)) => v.push(x),
            (Buf::U32(v), Scalar::U32(x)) => v.push(x),
            (Buf::U64(v), Scalar::U64(x)) => v.push(x),
            (Buf::F32(v), Scalar::F32(x)) => v.push(x),
            (Buf::F64(v), Scalar::F64(x)) => v.push(x),
            _ => return false,
        }
        true
    }

    /// Overwrites the element at `i`; `false` when `i` is out of range or the type differs.
    pub(crate) fn set(&mut self, i: usize, s: Scalar) -> bool {
        let slot_set = match (self, s) {
            (Buf::Bool(v), Scalar::Bool(x)) => v.get_mut(i).map(|slot| *slot = x),
            (Buf::I32(v), Scalar::I32(x)) => v.get_mut(i).map(|slot| *slot = x),
            (Buf::I64(v), Scalar::I64(x)) => v.get_mut(i).map(|slot| *slot = x),
            (Buf::I8(v), Scalar::I8(x)) => v.get_mut(i).map(|slot| *slot = x),
            (Buf::I16(v), Scalar::I16(x)) => v.get_mut(i).map(|slot| *slot = x),
            (Buf::U8(v), Scalar::U8(x)) => v.get_mut(i).map(|slot| *slot = x),
            (Buf::U16(v), Scalar::U16(x)) => v.get_mut(i).map(|slot| *slot = x),
            (Buf::U32(v), Scalar::U32(x)) => v.get_mut(i).map(|slot| *slot = x),
            (Buf::U64(v), Scalar::U64(x)) => v.get_mut(i).map(|slot| *slot = x),
            (Buf::F32(v), Scalar::F32(x)) => v.get_mut(i).map(|slot| *slot = x),
            (Buf::F64(v), Scalar::F64(x)) => v.get_mut(i).map(|slot| *slot = x),
            _ => None,
        };
        slot_set.is_some()
    }
}

/// An array of rank >= 1 (or, transiently, 0) stored row-major.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Array {
    /// Dimensions, outermost first.
    pub(crate) shape: Vec<usize>,
    /// `shape.iter().product()` elements.
    pub(crate) buf: Buf,
}

impl Array {
    /// Copies a [`Value`] (of any memory layout) into row-major storage.
    pub(crate) fn from_value(v: &Value) -> Array {
        let shape = v.shape().to_vec();
        let buf = match v {
            Value::Bool(a) => Buf::Bool(a.iter().copied().collect()),
            Value::I32(a) => Buf::I32(a.iter().copied().collect()),
            Value::I64(a) => Buf::I64(a.iter().copied().collect()),
            Value::I8(a) => Buf::I8(a.iter().copied().collect()),
            Value::I16(a) => Buf::I16(a.iter().copied().collect()),
            Value::U8(a) => Buf::U8(a.iter().copied().collect()),
            Value::U16(a) => Buf::U16(a.iter().copied().collect()),
            Value::U32(a) => Buf::U32(a.iter().copied().collect()),
            Value::U64(a) => Buf::U64(a.iter().copied().collect()),
            Value::F32(a) => Buf::F32(a.iter().copied().collect()),
            Value::F64(a) => Buf::F64(a.iter().copied().collect()),
        };
        Array { shape, buf }
    }

    /// Converts to a [`Value`] of the same shape.
    pub(crate) fn to_value(&self, span: Span) -> R<Value> {
        let sh = IxDyn(&self.shape);
        let bad = |_| internal(span, "array shape and element count disagree");
        Ok(match &self.buf {
            Buf::Bool(v) => Value::Bool(ArrayD::from_shape_vec(sh, v.clone()).map_err(bad)?),
            Buf::I32(v) => Value::I32(ArrayD::from_shape_vec(sh, v.clone()).map_err(bad)?),
            Buf::I64(v) => Value::I64(ArrayD::from_shape_vec(sh, v.clone()).map_err(bad)?),
            Buf::I8(v) => Value::I8(ArrayD::from_shape_vec(sh, v.clone()).map_err(bad)?),
            Buf::I16(v) => Value::I16(ArrayD::from_shape_vec(sh, v.clone()).map_err(bad)?),
            Buf::U8(v) => Value::U8(ArrayD::from_shape_vec(sh, v.clone()).map_err(bad)?),
            Buf::U16(v) => Value::U16(ArrayD::from_shape_vec(sh, v.clone()).map_err(bad)?),
            Buf::U32(v) => Value::U32(ArrayD::from_shape_vec(sh, v.clone()).map_err(bad)?),
            Buf::U64(v) => Value::U64(ArrayD::from_shape_vec(sh, v.clone()).map_err(bad)?),
            Buf::F32(v) => Value::F32(ArrayD::from_shape_vec(sh, v.clone()).map_err(bad)?),
            Buf::F64(v) => Value::F64(ArrayD::from_shape_vec(sh, v.clone()).map_err(bad)?),
        })
    }

    /// Its element type.
    pub(crate) fn elem(&self) -> ElemType {
        self.buf.elem()
    }

    /// Its rank.
    pub(crate) fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }
}

/// A value during evaluation.
#[derive(Clone, Debug)]
pub(crate) enum Val<'p> {
    /// A scalar.
    Scalar(Scalar),
    /// An array (shared: `let`s and captured names hold references).
    Array(Rc<Array>),
    /// A tuple of scalars (the result of an index function, a lambda's tuple).
    Tuple(Vec<Scalar>),
    /// A tuple at array level (parts of which are arrays): a group or a loop's state.
    Group(Vec<Val<'p>>),
    /// A scalar function.
    Func(Rc<Func<'p>>),
}

impl Val<'_> {
    /// What kind of value it is, for messages.
    fn kind(&self) -> &'static str {
        match self {
            Val::Scalar(_) => "a scalar",
            Val::Array(_) => "an array",
            Val::Tuple(_) => "a tuple",
            Val::Group(_) => "a group",
            Val::Func(_) => "a function",
        }
    }

    /// The value as a program output: scalars become 0-dimensional values.
    fn to_value(&self, span: Span) -> R<Value> {
        match self {
            Val::Scalar(s) => Ok(Value::scalar(*s)),
            Val::Array(a) => a.to_value(span),
            other => Err(Box::new(internal(span, format!("an output is {}", other.kind())))),
        }
    }
}

/// A scalar function value.
#[derive(Debug)]
pub(crate) enum Func<'p> {
    /// `\params -> body`, with the local names in scope where the lambda was written.
    Lambda { params: &'p [String], body: &'p Expr, captured: Env<'p> },
    /// `(+)` etc.
    Section(crate::ast::BinOp),
    /// `min`, `max`, `exp`, ... used as a function value.
    Builtin(ScalarFn),
    /// A function applied to fewer arguments than it takes.
    Partial { func: Rc<Func<'p>>, bound: Vec<Val<'p>> },
}

impl Func<'_> {
    /// How many arguments it still takes.
    fn arity(&self) -> usize {
        match self {
            Func::Lambda { params, .. } => params.len(),
            Func::Section(_) => 2,
            Func::Builtin(f) => f.arity(),
            Func::Partial { func, bound } => func.arity().saturating_sub(bound.len()),
        }
    }
}

/// The local environment: names bound by lambdas and local `let`s, innermost last.
pub(crate) type Env<'p> = Vec<(&'p str, Val<'p>)>;

/// A function prepared to be called many times (once per element of a map, say).
pub(crate) enum Callable<'p> {
    /// A lambda: its environment holds the captured names then one slot per parameter.
    Lambda { body: &'p Expr, env: Env<'p>, base: usize, params: usize },
    /// An operator section.
    Section(crate::ast::BinOp, Span),
    /// A scalar builtin.
    Builtin(ScalarFn, Span),
    /// A partial application: `bound` arguments come first.
    Partial { inner: Box<Callable<'p>>, bound: Vec<Val<'p>>, args: Vec<Val<'p>> },
}

/// The interpreter's state: the program's bindings made so far, the size names, the limits.
pub(crate) struct Interp<'p> {
    /// Inputs, top-level `let`s and outputs evaluated so far.
    globals: HashMap<&'p str, Val<'p>, BuildHasherDefault<NameHasher>>,
    /// Size names bound from the inputs' shapes.
    sizes: IndexMap<String, i64>,
    /// Resource limits.
    limits: &'p Limits,
    /// When to stop with `E-LIMIT` (checked at every iteration of a loop).
    deadline: Option<Instant>,
}

/// FNV-1a, a fast hash for the short names of the program's bindings (looked up once per
/// element of every map that reads them).
#[derive(Default)]
struct NameHasher(u64);

impl Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// The element type the checker gave an expression.
pub(crate) fn elem_of(e: &Expr) -> R<ElemType> {
    Ok(e.ty
        .as_ref()
        .and_then(Type::elem)
        .ok_or_else(|| internal(e.span, "an expression has no checked element type"))?)
}

/// How an array expression is named in messages: `xs` for a name, else "the array".
pub(crate) fn describe(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Var(name) => format!("`{name}`"),
        _ => "the array".to_string(),
    }
}

/// Formats a shape as `[3, 4]`.
pub(crate) fn fmt_shape(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

impl<'p> Interp<'p> {
    /// Looks `name` up: the local environment, then the program's bindings, then the sizes,
    /// then the scalar builtins. `None` when unbound (or an array builtin).
    fn lookup(&self, name: &str, env: &[(&'p str, Val<'p>)]) -> Option<Val<'p>> {
        if let Some((_, v)) = env.iter().rev().find(|(n, _)| *n == name) {
            return Some(v.clone());
        }
        if let Some(v) = self.globals.get(name) {
            return Some(v.clone());
        }
        if let Some(n) = self.sizes.get(name) {
            return Some(Val::Scalar(Scalar::I64(*n)));
        }
        ScalarFn::from_name(name).map(|f| Val::Func(Rc::new(Func::Builtin(f))))
    }

    /// Whether `name` is bound by the program (locally, globally or as a size), so that it
    /// shadows a builtin of the same name.
    fn is_bound(&self, name: &str, env: &[(&'p str, Val<'p>)]) -> bool {
        env.iter().any(|(n, _)| *n == name)
            || self.globals.contains_key(name)
            || self.sizes.contains_key(name)
    }

    /// Evaluates `e` in the local environment `env` (which it leaves as it found it).
    pub(crate) fn eval(&self, e: &'p Expr, env: &mut Env<'p>) -> R<Val<'p>> {
        match &e.kind {
            ExprKind::Lit(lit) => Ok(Val::Scalar(literal(*lit, e)?)),
            ExprKind::Var(name) => match self.lookup(name, env) {
                Some(v) => Ok(v),
                None if name == "pi" => Ok(Val::Scalar(pi(e))),
                None => Err(Box::new(internal(e.span, format!("`{name}` is not a value here")))),
            },
            ExprKind::LetTuple { names, value, body } => {
                let v = self.eval(value, env)?;
                let depth = env.len();
                for (name, part) in names.iter().zip(tuples::parts(v, names.len(), e.span)?) {
                    env.push((name, part));
                }
                let r = self.eval(body, env);
                env.truncate(depth);
                r
            }
            ExprKind::Loop { pat, tuple, init, form, body } => {
                self.eval_loop(pat, *tuple, init, form, body, e.span, env)
            }
            ExprKind::Let { name, value, body } => {
                let v = self.eval(value, env)?;
                let depth = env.len();
                env.push((name, v));
                let r = self.eval(body, env);
                env.truncate(depth);
                r
            }
            ExprKind::If { cond, then_, else_ } => {
                if self.eval_bool(cond, env)? {
                    self.eval(then_, env)
                } else {
                    self.eval(else_, env)
                }
            }
            ExprKind::Lambda { params, body } => {
                Ok(Val::Func(Rc::new(Func::Lambda { params, body, captured: env.clone() })))
            }
            ExprKind::Binary { op, lhs, rhs } => {
                use crate::ast::BinOp;
                match op {
                    BinOp::And => {
                        Ok(Val::Scalar(Scalar::Bool(self.eval_bool(lhs, env)? && self.eval_bool(rhs, env)?)))
                    }
                    BinOp::Or => {
                        Ok(Val::Scalar(Scalar::Bool(self.eval_bool(lhs, env)? || self.eval_bool(rhs, env)?)))
                    }
                    _ => {
                        let a = self.eval_scalar(lhs, env)?;
                        let b = self.eval_scalar(rhs, env)?;
                        Ok(Val::Scalar(scalar::binary(*op, a, b, e.span)?))
                    }
                }
            }
            ExprKind::Unary { op, operand } => {
                let a = self.eval_scalar(operand, env)?;
                Ok(Val::Scalar(scalar::unary(*op, a, e.span)?))
            }
            ExprKind::Apply { func, args } => {
                if let ExprKind::Var(name) = &func.kind {
                    if !self.is_bound(name, env) {
                        if let Some(v) = self.apply_builtin(name, args, e, env)? {
                            return Ok(v);
                        }
                    }
                }
                let f = self.eval(func, env)?;
                let mut argv = Vec::with_capacity(args.len());
                for a in args {
                    argv.push(self.eval(a, env)?);
                }
                self.apply_value(f, &argv, e.span)
            }
            ExprKind::Index { array, indices } => {
                let a = self.eval_array(array, env)?;
                let mut ix = Vec::with_capacity(indices.len());
                for i in indices {
                    ix.push(self.eval_i64(i, env)?);
                }
                Ok(Val::Scalar(self.index(&a, &ix, array, e.span)?))
            }
            ExprKind::Tuple(es) => {
                let mut parts = Vec::with_capacity(es.len());
                for x in es {
                    parts.push(self.eval(x, env)?);
                }
                Ok(tuples::make_tuple(parts))
            }
            ExprKind::Section(op) => Ok(Val::Func(Rc::new(Func::Section(*op)))),
            ExprKind::Shape(_) => {
                Err(Box::new(internal(e.span, "a shape outside a builtin's shape argument")))
            }
        }
    }

    /// Evaluates a scalar expression.
    pub(crate) fn eval_scalar(&self, e: &'p Expr, env: &mut Env<'p>) -> R<Scalar> {
        match self.eval(e, env)? {
            Val::Scalar(s) => Ok(s),
            other => Err(Box::new(internal(e.span, format!("expected a scalar, found {}", other.kind())))),
        }
    }

    /// Evaluates a `bool` expression.
    pub(crate) fn eval_bool(&self, e: &'p Expr, env: &mut Env<'p>) -> R<bool> {
        match self.eval_scalar(e, env)? {
            Scalar::Bool(b) => Ok(b),
            other => Err(Box::new(internal(e.span, format!("expected a bool, found {}", other.elem_type())))),
        }
    }

    /// Evaluates an `i64` expression (an index, a size, a count).
    pub(crate) fn eval_i64(&self, e: &'p Expr, env: &mut Env<'p>) -> R<i64> {
        match self.eval_scalar(e, env)? {
            Scalar::I64(v) => Ok(v),
            Scalar::I32(v) => Ok(i64::from(v)),
            other => Err(Box::new(internal(e.span, format!("expected an i64, found {}", other.elem_type())))),
        }
    }

    /// Evaluates an array expression.
    pub(crate) fn eval_array(&self, e: &'p Expr, env: &mut Env<'p>) -> R<Rc<Array>> {
        match self.eval(e, env)? {
            Val::Array(a) => Ok(a),
            other => Err(Box::new(internal(e.span, format!("expected an array, found {}", other.kind())))),
        }
    }

    /// Evaluates a function argument and prepares it to be called.
    pub(crate) fn eval_callable(&self, e: &'p Expr, env: &mut Env<'p>) -> R<Callable<'p>> {
        match self.eval(e, env)? {
            Val::Func(f) => Ok(callable(&f, e.span)),
            other => Err(Box::new(internal(e.span, format!("expected a function, found {}", other.kind())))),
        }
    }

    /// Calls a prepared function on scalar or tuple arguments.
    pub(crate) fn call(&self, c: &mut Callable<'p>, args: &[Val<'p>]) -> R<Val<'p>> {
        match c {
            Callable::Lambda { body, env, base, params } => {
                if args.len() != *params {
                    return Err(Box::new(internal(
                        body.span,
                        format!("a lambda of {params} called with {}", args.len()),
                    )));
                }
                for (slot, a) in env.iter_mut().skip(*base).zip(args) {
                    slot.1 = a.clone();
                }
                let r = self.eval(body, env);
                env.truncate(*base + *params);
                r
            }
            Callable::Section(op, span) => match args {
                [Val::Scalar(a), Val::Scalar(b)] => Ok(Val::Scalar(scalar::binary(*op, *a, *b, *span)?)),
                _ => Err(Box::new(internal(*span, "a section called with other than 2 scalars"))),
            },
            Callable::Builtin(f, span) => {
                let mut argv = [Scalar::Bool(false); 3];
                if args.len() > argv.len() {
                    return Err(Box::new(internal(*span, "a builtin called with over 3 arguments")));
                }
                for (slot, a) in argv.iter_mut().zip(args) {
                    let Val::Scalar(s) = a else {
                        return Err(Box::new(internal(*span, format!("`{}` given {}", f.name(), a.kind()))));
                    };
                    *slot = *s;
                }
                Ok(Val::Scalar(f.apply(&argv[..args.len()], *span)?))
            }
            Callable::Partial { inner, bound, args: all } => {
                all.clear();
                all.extend_from_slice(bound);
                all.extend_from_slice(args);
                let full = std::mem::take(all);
                let r = self.call(inner, &full);
                *all = full;
                r
            }
        }
    }

    /// Calls a prepared function that must return a scalar.
    pub(crate) fn call_scalar(&self, c: &mut Callable<'p>, args: &[Val<'p>], span: Span) -> R<Scalar> {
        match self.call(c, args)? {
            Val::Scalar(s) => Ok(s),
            other => Err(Box::new(internal(span, format!("a function returned {}", other.kind())))),
        }
    }

    /// Applies a function value to arguments once: a full call, or a partial application
    /// when it is given fewer arguments than it takes.
    fn apply_value(&self, f: Val<'p>, args: &[Val<'p>], span: Span) -> R<Val<'p>> {
        let Val::Func(f) = f else {
            return Err(Box::new(internal(span, format!("applying {}", f.kind()))));
        };
        if args.len() < f.arity() {
            return Ok(Val::Func(Rc::new(Func::Partial { func: f, bound: args.to_vec() })));
        }
        let mut c = callable(&f, span);
        self.call(&mut c, args)
    }

    /// Reads `a[ix]`, checking the rank and the bounds.
    fn index(&self, a: &Array, ix: &[i64], array: &Expr, span: Span) -> R<Scalar> {
        match flat_index(&a.shape, ix) {
            Some(flat) => Ok(a.buf.get(flat).ok_or_else(|| internal(span, "index past the buffer"))?),
            None if ix.len() != a.rank() => Err(Box::new(internal(
                span,
                format!("{} of rank {} indexed with {} indices", describe(array), a.rank(), ix.len()),
            ))),
            None => {
                let shown = if ix.len() == 1 {
                    format!("index {}", ix[0])
                } else {
                    let parts: Vec<String> = ix.iter().map(|i| i.to_string()).collect();
                    format!("index [{}]", parts.join(", "))
                };
                let bounds = if a.rank() == 1 {
                    format!("of length {}", a.shape[0])
                } else {
                    format!("of shape {}", fmt_shape(&a.shape))
                };
                Err(Box::new(Error::index(
                    span,
                    format!("{shown} out of bounds for {} {bounds}", describe(array)),
                )))
            }
        }
    }
}

/// The row-major position of multi-index `ix` in an array of `shape`, or `None` when the
/// rank differs or an index is out of bounds.
pub(crate) fn flat_index(shape: &[usize], ix: &[i64]) -> Option<usize> {
    if shape.len() != ix.len() {
        return None;
    }
    let mut flat = 0usize;
    for (&d, &i) in shape.iter().zip(ix) {
        let i = usize::try_from(i).ok().filter(|&i| i < d)?;
        flat = flat * d + i;
    }
    Some(flat)
}

/// Prepares a function value to be called.
fn callable<'p>(f: &Rc<Func<'p>>, span: Span) -> Callable<'p> {
    match &**f {
        Func::Lambda { params, body, captured } => {
            let mut env = captured.clone();
            let base = env.len();
            env.extend(params.iter().map(|p| (p.as_str(), Val::Scalar(Scalar::Bool(false)))));
            Callable::Lambda { body, env, base, params: params.len() }
        }
        Func::Section(op) => Callable::Section(*op, span),
        Func::Builtin(b) => Callable::Builtin(*b, span),
        Func::Partial { func, bound } => Callable::Partial {
            inner: Box::new(callable(func, span)),
            bound: bound.clone(),
            args: Vec::new(),
        },
    }
}

/// `pi` in the float type the checker gave it (`f64` where nothing fixed it).
fn pi(e: &Expr) -> Scalar {
    match e.ty.as_ref().and_then(Type::elem) {
        Some(ElemType::F32) => Scalar::F32(std::f32::consts::PI),
        _ => Scalar::F64(std::f64::consts::PI),
    }
}

/// The value of a literal at the type the checker gave it.
fn literal(lit: Lit, e: &Expr) -> R<Scalar> {
    let ty = e.ty.as_ref().and_then(Type::elem);
    lit.value_at(ty).ok_or_else(|| Box::new(internal(e.span, format!("literal {lit:?} typed {ty:?}"))))
}

/// How a run-time `E-SHAPE` shows an array's shape: `[n, 3] = [10, 3]` when its shape before
/// the run is known as size names and constants (`symbolic`, one text per dimension) and
/// names a size, else just `actual`. The reference interpreter and the plan's checks both
/// word their messages with this.
///
/// ```
/// use eqfuse_ir::interp::named_shape;
/// assert_eq!(named_shape(Some(&["n".to_string()]), "[10]"), "[n] = [10]");
/// assert_eq!(named_shape(Some(&["4".to_string()]), "[4]"), "[4]");
/// assert_eq!(named_shape(None, "[7]"), "[7]");
/// ```
pub fn named_shape(symbolic: Option<&[String]>, actual: &str) -> String {
    match symbolic {
        Some(dims) if dims.iter().any(|d| d.parse::<i64>().is_err()) => {
            format!("[{}] = {actual}", dims.join(", "))
        }
        _ => actual.to_string(),
    }
}

/// The arrays of an array or a group.
pub(crate) fn group_arrays(v: Val<'_>, span: Span) -> R<Vec<Rc<Array>>> {
    match v {
        Val::Array(a) => Ok(vec![a]),
        Val::Group(g) => g
            .into_iter()
            .map(|p| match p {
                Val::Array(a) => Ok(a),
                other => Err(Box::new(internal(span, format!("a group holding {}", other.kind())))),
            })
            .collect(),
        other => {
            Err(Box::new(internal(span, format!("expected an array or a group, found {}", other.kind()))))
        }
    }
}
