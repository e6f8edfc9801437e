//! The plan interpreter: runs a [`Plan`] step by step on the host. It is the oracle for
//! plans, as [`crate::interp`] is the oracle for programs: every executor's result is
//! compared with it, and it is compared with the reference interpreter.
//!
//! Semantics follow the doc comments of [`super`] exactly. Scalar operations go through
//! [`crate::interp::scalar`], so integer wrapping, `MIN / -1`, division by zero, NaN-propagating
//! `min`/`max` and conversions are the reference's; reductions and scans are sequential
//! left folds from the neutral element, so float results are bit-identical to the
//! reference interpreter's. Every array is sized with checked arithmetic and refused with
//! `E-LIMIT` before it is allocated when it would exceed the memory limit.
//!
//! Element functions are interpreted with an explicit frame stack (no recursion over
//! nested `if`/`loop` blocks). A malformed plan (a register read before it is written, a
//! value read before it is computed, a type that disagrees) is an `E-LIMIT` error whose
//! message starts with "internal error", never a panic.

mod folds;

use super::exec::{Executor, KernelId};
use super::{Block, Func, Inst, Kernel, Lane, LaneOp, Origin, PermuteDest, Plan, Reg, ValueId};
use crate::ast::Limits;
use crate::error::{Code, Error, Result, Span};
use crate::interp::scalar::{binary, unary};
use crate::types::ElemType;
use crate::value::{Scalar, Value};
use folds::folds;
use indexmap::IndexMap;

/// Runs `plan` on `inputs` (by name, as checked by [`crate::bind::bind_inputs`]) and the
/// size names bound from them, under the default memory limit. Returns the outputs in the
/// plan's order; scalars are 0-dimensional values.
pub fn eval(
    plan: &Plan,
    inputs: &IndexMap<String, Value>,
    sizes: &IndexMap<String, i64>,
) -> Result<IndexMap<String, Value>> {
    eval_with(plan, inputs, sizes, &Limits::default())
}

/// [`eval`] under `limits` (only [`Limits::max_array_bytes`] is used: the most bytes one
/// array of the plan may take, counted at the element type's size).
pub fn eval_with(
    plan: &Plan,
    inputs: &IndexMap<String, Value>,
    sizes: &IndexMap<String, i64>,
    limits: &Limits,
) -> Result<IndexMap<String, Value>> {
    let mut run = Interp { store: Store::new(plan, inputs, sizes)?, max_bytes: limits.max_array_bytes };
    super::exec::run_steps(plan, &mut run)?;
    let store = run.store;
    let mut out = IndexMap::new();
    for (name, id) in &plan.outputs {
        let arr = store.get(*id)?;
        let elem = store.elem(*id)?;
        let v = Value::from_scalars(elem, &arr.shape, &arr.data).ok_or_else(|| {
            internal(format!("output `{name}`: its elements are not all {elem} or do not fill its shape"))
        })?;
        out.insert(name.clone(), v);
    }
    Ok(out)
}

/// The interpreter as an [`Executor`]: the step walker ([`super::exec::run_steps`]) runs the
/// host steps; a block's phases run one after the other (the same results as block by
/// block: the default hooks).
struct Interp<'p> {
    store: Store<'p>,
    /// The most bytes one array may take ([`Limits::max_array_bytes`]).
    max_bytes: u64,
}

impl Executor for Interp<'_> {
    fn launch(&mut self, id: KernelId, k: &Kernel) -> Result<()> {
        let results = kernel(&self.store, k, id.index(), self.max_bytes).map_err(|e| e.or_at(k.span))?;
        for (lane, arr) in k.lanes.iter().zip(results) {
            self.store.put(lane.dst, arr)?;
        }
        Ok(())
    }

    fn host(&mut self, f: &Func) -> Result<Scalar> {
        Runner::new(f).call1(&self.store, &[])
    }

    fn load(&mut self, v: ValueId) -> Result<Scalar> {
        self.store.load(v)
    }

    fn put_scalar(&mut self, dst: ValueId, s: Scalar) -> Result<()> {
        self.store.put(dst, Arr { shape: Vec::new(), data: vec![s] })
    }

    fn alias(&mut self, dst: ValueId, src: ValueId) -> Result<()> {
        let arr = self.store.get(src)?.clone();
        self.store.put(dst, arr)
    }

    fn shape(&mut self, v: ValueId) -> Result<Vec<usize>> {
        Ok(self.store.get(v)?.shape.clone())
    }

    fn forget(&mut self, v: ValueId) -> Result<()> {
        if let Some(slot) = self.store.arrays.get_mut(v) {
            *slot = None;
        }
        Ok(())
    }

    fn rebind(&mut self, dst: &[ValueId], src: &[ValueId], _: bool) -> Result<()> {
        let got: Vec<Arr> = src.iter().map(|s| self.store.get(*s).cloned()).collect::<Result<_>>()?;
        for (d, a) in dst.iter().zip(got) {
            self.forget(*d)?;
            self.store.put(*d, a)?;
        }
        Ok(())
    }
}

/// An internal inconsistency of the plan (never the program's fault).
use crate::error::internal;

/// Errors of the scalar semantics: a type mismatch (`E-TYPE` there) is an internal error of
/// the plan here; run-time errors (`E-DIV-ZERO`) pass through.
fn scalar_err(mut e: Error) -> Error {
    if e.code == Code::Type {
        e.code = Code::Limit;
    }
    e
}

/// A materialised value: row-major elements and the shape.
#[derive(Clone, Debug)]
struct Arr {
    shape: Vec<usize>,
    data: Vec<Scalar>,
}

/// Formats a shape as `[3, 4]`.
pub fn fmt_shape(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Formats `i64`s as `[3, -4]`.
pub fn fmt_i64s(ix: &[i64]) -> String {
    let parts: Vec<String> = ix.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Formats indices as `5` or `[3, 7]`.
fn fmt_indices(ix: &[i64]) -> String {
    match ix {
        [i] => i.to_string(),
        _ => fmt_i64s(ix),
    }
}

/// The row-major position of `ix` in `shape` (`None`: rank differs or out of bounds).
pub fn flat_index(shape: &[usize], ix: &[i64]) -> Option<usize> {
    if shape.len() != ix.len() {
        return None;
    }
    let mut flat = 0usize;
    for (&d, &i) in shape.iter().zip(ix) {
        let i = usize::try_from(i).ok().filter(|&i| i < d)?;
        flat = flat.checked_mul(d)?.checked_add(i)?;
    }
    Some(flat)
}

/// Every value of the plan, materialised once computed (`None` before).
struct Store<'p> {
    plan: &'p Plan,
    arrays: Vec<Option<Arr>>,
}

impl<'p> Store<'p> {
    /// Loads the inputs and the sizes.
    fn new(
        plan: &'p Plan,
        inputs: &IndexMap<String, Value>,
        sizes: &IndexMap<String, i64>,
    ) -> Result<Store<'p>> {
        let mut arrays = Vec::with_capacity(plan.values.len());
        for info in &plan.values {
            let arr = match info.origin {
                Origin::Input => {
                    let name = &info.name;
                    let v =
                        inputs.get(name).ok_or_else(|| Error::input(format!("missing input `{name}`")))?;
                    if v.elem_type() != info.elem || v.shape().len() != info.rank {
                        return Err(Error::input(format!(
                            "input `{name}` is {} of rank {}, the plan expects {} of rank {}",
                            v.elem_type(),
                            v.shape().len(),
                            info.elem,
                            info.rank
                        )));
                    }
                    Some(Arr { shape: v.shape().to_vec(), data: v.to_scalars() })
                }
                Origin::Size => {
                    let name = &info.name;
                    let n = sizes
                        .get(name)
                        .ok_or_else(|| Error::input(format!("size `{name}` is not bound by the inputs")))?;
                    if info.elem != ElemType::I64 || info.rank != 0 {
                        return Err(internal(format!("size `{name}` is not a 0-d i64 value")));
                    }
                    Some(Arr { shape: Vec::new(), data: vec![Scalar::I64(*n)] })
                }
                Origin::Computed => None,
            };
            arrays.push(arr);
        }
        Ok(Store { plan, arrays })
    }

    /// The name of value `v`, for messages.
    fn name(&self, v: ValueId) -> String {
        match self.plan.values.get(v) {
            Some(info) => info.name.clone(),
            None => format!("v{v}"),
        }
    }

    /// The element type of value `v`.
    fn elem(&self, v: ValueId) -> Result<ElemType> {
        self.plan.values.get(v).map(|i| i.elem).ok_or_else(|| internal(format!("no value v{v}")))
    }

    /// The materialised value `v`.
    fn get(&self, v: ValueId) -> Result<&Arr> {
        match self.arrays.get(v) {
            Some(Some(a)) => Ok(a),
            Some(None) => Err(internal(format!("value `{}` read before it is computed", self.name(v)))),
            None => Err(internal(format!("no value v{v}"))),
        }
    }

    /// Stores a computed value, checking its rank and element type against the plan.
    fn put(&mut self, v: ValueId, arr: Arr) -> Result<()> {
        let name = self.name(v);
        let info = self.plan.values.get(v).ok_or_else(|| internal(format!("no value v{v}")))?;
        if info.origin != Origin::Computed {
            return Err(internal(format!("a step writes `{name}`, which is not a computed value")));
        }
        if info.rank != arr.shape.len() {
            return Err(internal(format!(
                "`{name}` is declared of rank {} but computed of shape {}",
                info.rank,
                fmt_shape(&arr.shape)
            )));
        }
        if let Some(bad) = arr.data.iter().find(|s| s.elem_type() != info.elem) {
            return Err(internal(format!(
                "`{name}` is declared {} but holds a {} element",
                info.elem,
                bad.elem_type()
            )));
        }
        match self.arrays.get_mut(v) {
            Some(slot @ None) => {
                *slot = Some(arr);
                Ok(())
            }
            Some(Some(_)) => Err(internal(format!("`{name}` is written twice"))),
            None => Err(internal(format!("no value v{v}"))),
        }
    }

    /// `array[ix]`.
    fn read(&self, v: ValueId, ix: &[i64]) -> Result<Scalar> {
        let a = self.get(v)?;
        if let Some(flat) = flat_index(&a.shape, ix) {
            return a.data.get(flat).copied().ok_or_else(|| internal("a read past the buffer"));
        }
        let name = self.name(v);
        if ix.len() != a.shape.len() {
            return Err(internal(format!(
                "`{name}` of rank {} read with {} indices",
                a.shape.len(),
                ix.len()
            )));
        }
        let shown = match ix {
            [i] => format!("index {i}"),
            _ => format!("index {}", fmt_i64s(ix)),
        };
        let bounds = match a.shape.as_slice() {
            [n] => format!("of length {n}"),
            _ => format!("of shape {}", fmt_shape(&a.shape)),
        };
        Err(Error::index(Span::default(), format!("{shown} out of bounds for `{name}` {bounds}")))
    }

    /// `size array axis`.
    fn dim(&self, v: ValueId, axis: i64) -> Result<Scalar> {
        let a = self.get(v)?;
        match usize::try_from(axis).ok().and_then(|k| a.shape.get(k)) {
            Some(&d) => {
                let d = i64::try_from(d).map_err(|_| Error::limit("a dimension overflows i64"))?;
                Ok(Scalar::I64(d))
            }
            None => Err(Error::index(
                Span::default(),
                format!(
                    "`size`: dimension {axis} out of bounds for `{}` of rank {} (shape {})",
                    self.name(v),
                    a.shape.len(),
                    fmt_shape(&a.shape)
                ),
            )),
        }
    }

    /// A 0-d value.
    fn load(&self, v: ValueId) -> Result<Scalar> {
        let a = self.get(v)?;
        match (a.shape.is_empty(), a.data.first()) {
            (true, Some(s)) => Ok(*s),
            _ => Err(internal(format!(
                "`{}` of shape {} loaded as a scalar",
                self.name(v),
                fmt_shape(&a.shape)
            ))),
        }
    }
}

/// What to do when a block ends.
enum Cont<'f> {
    /// The function's body: the call is done.
    Top,
    /// A branch of an `if`: `dst = ret`.
    If { dst: Reg, ret: Reg },
    /// A loop body: `vars = nexts`, then run again while iterations are left, else
    /// `dsts = vars`.
    Loop { dsts: &'f [Reg], vars: &'f [Reg], nexts: &'f [Reg], body: &'f Block, left: i64 },
}

/// A block being run.
struct Frame<'f> {
    block: &'f Block,
    pc: usize,
    cont: Cont<'f>,
}

/// Runs one [`Func`] many times, reusing its registers.
struct Runner<'f> {
    func: &'f Func,
    regs: Vec<Option<Scalar>>,
    stack: Vec<Frame<'f>>,
    scratch: Vec<Scalar>,
    ix: Vec<i64>,
}

impl<'f> Runner<'f> {
    fn new(func: &'f Func) -> Runner<'f> {
        Runner {
            func,
            regs: vec![None; func.reg_types.len()],
            stack: Vec::new(),
            scratch: Vec::new(),
            ix: Vec::new(),
        }
    }

    /// Register `r`'s value.
    fn get(&self, r: Reg) -> Result<Scalar> {
        match self.regs.get(r as usize) {
            Some(Some(s)) => Ok(*s),
            Some(None) => Err(internal(format!("register r{r} read before it is written"))),
            None => Err(internal(format!("register r{r} out of range ({} registers)", self.regs.len()))),
        }
    }

    /// Register `r`'s value as an `i64` (an index, an axis, a count).
    fn get_i64(&self, r: Reg) -> Result<i64> {
        match self.get(r)? {
            Scalar::I64(v) => Ok(v),
            Scalar::I32(v) => Ok(i64::from(v)),
            // an index of another integer type (`u64` beyond `i64::MAX` is out of every bound)
            other => match other.as_i128().filter(|_| other.elem_type().is_int()) {
                Some(v) => Ok(i64::try_from(v).unwrap_or(i64::MAX)),
                None => Err(internal(format!("register r{r} is {}, used as an i64", other.elem_type()))),
            },
        }
    }

    /// Writes register `r`, checking its type.
    fn set(&mut self, r: Reg, s: Scalar) -> Result<()> {
        let ty = self.func.reg_types.get(r as usize).copied();
        match (ty, self.regs.get_mut(r as usize)) {
            (Some(t), Some(slot)) if t == s.elem_type() => {
                *slot = Some(s);
                Ok(())
            }
            (Some(t), Some(_)) => {
                Err(internal(format!("register r{r} of type {t} assigned a {}", s.elem_type())))
            }
            _ => Err(internal(format!("register r{r} out of range ({} registers)", self.regs.len()))),
        }
    }

    /// Runs the function on `args`; the results are then in its `ret` registers.
    fn call(&mut self, store: &Store<'_>, args: &[Scalar]) -> Result<()> {
        let func = self.func;
        if args.len() != func.params.len() {
            return Err(internal(format!(
                "a function of {} parameters called with {} arguments",
                func.params.len(),
                args.len()
            )));
        }
        self.regs.iter_mut().for_each(|r| *r = None);
        for (k, (a, t)) in args.iter().zip(&func.params).enumerate() {
            if a.elem_type() != *t {
                return Err(internal(format!("parameter {k} of type {t} given a {}", a.elem_type())));
            }
            self.set(k as Reg, *a)?;
        }
        self.stack.clear();
        self.stack.push(Frame { block: &func.body, pc: 0, cont: Cont::Top });
        while let Some(top) = self.stack.last_mut() {
            let block: &'f Block = top.block;
            match block.insts.get(top.pc) {
                Some(inst) => {
                    top.pc += 1;
                    self.exec(inst, store)?;
                }
                None => {
                    if let Some(frame) = self.stack.pop() {
                        self.end_block(frame.cont)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs the function and returns its single result.
    fn call1(&mut self, store: &Store<'_>, args: &[Scalar]) -> Result<Scalar> {
        self.call(store, args)?;
        match self.func.ret.as_slice() {
            [r] => self.get(*r),
            rs => Err(internal(format!("a function with {} results used as a scalar function", rs.len()))),
        }
    }

    /// Runs the function and appends its results (an `i64` each) to `out`.
    fn call_indices(&mut self, store: &Store<'_>, args: &[Scalar], out: &mut Vec<i64>) -> Result<()> {
        self.call(store, args)?;
        out.clear();
        for &r in &self.func.ret {
            out.push(self.get_i64(r)?);
        }
        Ok(())
    }

    /// Runs the function and sets `out` to its results.
    fn call_all(&mut self, store: &Store<'_>, args: &[Scalar], out: &mut Vec<Scalar>) -> Result<()> {
        self.call(store, args)?;
        out.clear();
        for &r in &self.func.ret {
            out.push(self.get(r)?);
        }
        Ok(())
    }

    /// What happens when a block ends.
    fn end_block(&mut self, cont: Cont<'f>) -> Result<()> {
        match cont {
            Cont::Top => Ok(()),
            Cont::If { dst, ret } => {
                let v = self.get(ret)?;
                self.set(dst, v)
            }
            Cont::Loop { dsts, vars, nexts, body, left } => {
                self.assign(vars, nexts)?;
                if left > 1 {
                    let cont = Cont::Loop { dsts, vars, nexts, body, left: left - 1 };
                    self.stack.push(Frame { block: body, pc: 0, cont });
                    Ok(())
                } else {
                    self.assign(dsts, vars)
                }
            }
        }
    }

    /// `dsts = srcs`, all at once.
    fn assign(&mut self, dsts: &[Reg], srcs: &[Reg]) -> Result<()> {
        if dsts.len() != srcs.len() {
            return Err(internal(format!(
                "a loop assigns {} registers from {} registers",
                dsts.len(),
                srcs.len()
            )));
        }
        self.scratch.clear();
        for &r in srcs {
            let v = self.get(r)?;
            self.scratch.push(v);
        }
        for (k, &r) in dsts.iter().enumerate() {
            let v = self.scratch.get(k).copied().ok_or_else(|| internal("loop state lost"))?;
            self.set(r, v)?;
        }
        Ok(())
    }

    /// Runs one instruction (pushing a frame for an `if` or a `loop`); an error points at
    /// the instruction's position in the program text, when the function knows it.
    fn exec(&mut self, inst: &'f Inst, store: &Store<'_>) -> Result<()> {
        self.exec_here(inst, store).map_err(|e| match inst {
            Inst::Binary { dst, .. }
            | Inst::Call { dst, .. }
            | Inst::Read { dst, .. }
            | Inst::Dim { dst, .. } => e.or_at(self.func.span_of(*dst)),
            _ => e,
        })
    }

    fn exec_here(&mut self, inst: &'f Inst, store: &Store<'_>) -> Result<()> {
        let span = Span::default();
        match inst {
            Inst::Const { dst, value } => self.set(*dst, *value),
            Inst::Unary { dst, op, a } => {
                let v = unary(*op, self.get(*a)?, span).map_err(scalar_err)?;
                self.set(*dst, v)
            }
            Inst::Binary { dst, op, a, b } => {
                let v = binary(*op, self.get(*a)?, self.get(*b)?, span).map_err(scalar_err)?;
                self.set(*dst, v)
            }
            Inst::Call { dst, f, args } => {
                self.scratch.clear();
                for &r in args {
                    let v = self.get(r)?;
                    self.scratch.push(v);
                }
                let v = f.apply(&self.scratch, span).map_err(scalar_err)?;
                self.set(*dst, v)
            }
            Inst::Read { dst, array, index } => {
                self.ix.clear();
                for &r in index {
                    let i = self.get_i64(r)?;
                    self.ix.push(i);
                }
                let v = store.read(*array, &self.ix)?;
                self.set(*dst, v)
            }
            Inst::Dim { dst, array, axis } => {
                let v = store.dim(*array, self.get_i64(*axis)?)?;
                self.set(*dst, v)
            }
            Inst::Load { dst, value } => {
                let v = store.load(*value)?;
                self.set(*dst, v)
            }
            Inst::If { dst, cond, then_block, then_ret, else_block, else_ret } => {
                let (block, ret) = match self.get(*cond)? {
                    Scalar::Bool(true) => (then_block, *then_ret),
                    Scalar::Bool(false) => (else_block, *else_ret),
                    other => {
                        return Err(internal(format!(
                            "an `if` condition r{cond} is {}, not bool",
                            other.elem_type()
                        )))
                    }
                };
                self.stack.push(Frame { block, pc: 0, cont: Cont::If { dst: *dst, ret } });
                Ok(())
            }
            Inst::Loop { dsts, count, inits, vars, body, nexts } => {
                let n = self.get_i64(*count)?;
                if nexts.len() != vars.len() {
                    return Err(internal(format!(
                        "a loop of {} state registers with {} next registers",
                        vars.len(),
                        nexts.len()
                    )));
                }
                self.assign(vars, inits)?;
                if n <= 0 {
                    return self.assign(dsts, vars);
                }
                let cont = Cont::Loop { dsts, vars, nexts, body, left: n };
                self.stack.push(Frame { block: body, pc: 0, cont });
                Ok(())
            }
        }
    }
}

/// The multi-index of row-major position `flat` in `shape` (every executor names a failing
/// element by it).
pub fn unflatten(shape: &[usize], mut flat: usize) -> Vec<usize> {
    let mut ix = vec![0; shape.len()];
    for (slot, &d) in ix.iter_mut().zip(shape).rev() {
        if d > 0 {
            *slot = flat % d;
            flat /= d;
        }
    }
    ix
}

/// Adds "in `kind` at element [i, j]" to a run-time error raised at one element (the same
/// words on every executor).
pub fn at_element(mut err: Error, kind: &str, shape: &[usize], flat: usize) -> Error {
    if matches!(err.code, Code::DivZero | Code::Index) && !err.message.contains(" at element ") {
        err.message =
            format!("{}, in `{kind}` at element {}", err.message, fmt_shape(&unflatten(shape, flat)));
    }
    err
}

/// A row-major walk over an index space: the current index as `i64` scalar arguments.
struct Walk {
    shape: Vec<usize>,
    args: Vec<Scalar>,
}

impl Walk {
    fn new(shape: &[usize]) -> Walk {
        Walk { shape: shape.to_vec(), args: vec![Scalar::I64(0); shape.len()] }
    }

    /// Moves to the next index in row-major order.
    fn advance(&mut self) {
        for (a, &d) in self.args.iter_mut().zip(&self.shape).rev() {
            let Scalar::I64(i) = a else { return };
            *i += 1;
            if usize::try_from(*i).is_ok_and(|v| v < d) {
                return;
            }
            *i = 0;
        }
    }
}

/// Refuses an array of `count` elements of `elem` over the limit (before allocating).
fn check_alloc(kind: &str, elem: ElemType, count: usize, max_bytes: u64) -> Result<()> {
    if i64::try_from(count).is_err() {
        return Err(Error::limit(format!("`{kind}`: the array size overflows i64")));
    }
    let bytes = (count as u128) * (elem.size_bytes() as u128);
    if bytes > u128::from(max_bytes) {
        return Err(Error::limit(format!(
            "`{kind}` would allocate {count} elements of {elem} ({bytes} bytes), over the limit of {max_bytes} bytes"
        )));
    }
    Ok(())
}

/// The product of `dims`, checked (`E-LIMIT` when it overflows `i64`).
fn count(kind: &str, dims: &[usize]) -> Result<usize> {
    let mut n: i64 = 1;
    for &d in dims {
        n = i64::try_from(d).ok().and_then(|d| n.checked_mul(d)).ok_or_else(|| {
            Error::limit(format!("`{kind}`: the size of shape {} overflows i64", fmt_shape(dims)))
        })?;
    }
    usize::try_from(n).map_err(|_| Error::limit(format!("`{kind}`: size {n} does not fit in memory")))
}

/// Evaluates the kernel's space: `E-SHAPE` for a negative extent, `E-LIMIT` when the element
/// count overflows `i64`.
fn space(store: &Store<'_>, k: &Kernel) -> Result<(Vec<usize>, usize)> {
    k.shape(|v| store.load(v), |v| store.name(v))
}

/// Runs kernel number `kidx`: returns one array per lane, in lane order.
fn kernel(store: &Store<'_>, k: &Kernel, kidx: usize, max_bytes: u64) -> Result<Vec<Arr>> {
    let (shape, total) = space(store, k)?;
    if k.elem.ret.len() != k.lanes.len() {
        return Err(internal(format!(
            "kernel k{kidx}: an element function of {} results for {} lanes",
            k.elem.ret.len(),
            k.lanes.len()
        )));
    }
    if k.elem.params.len() != shape.len() {
        return Err(internal(format!(
            "kernel k{kidx}: an element function of {} parameters over a space of rank {}",
            k.elem.params.len(),
            shape.len()
        )));
    }
    match k.lanes.as_slice() {
        [] => Err(internal(format!("kernel k{kidx} has no lanes"))),
        [lane] => match &lane.op {
            LaneOp::Filter { pred } => Ok(vec![filter(store, k, lane, pred, &shape, total, max_bytes)?]),
            LaneOp::Permute { op, dest, target } => {
                Ok(vec![permute(store, k, lane, op, dest, target, &shape, total, max_bytes)?])
            }
            _ => folds(store, k, kidx, &shape, total, max_bytes),
        },
        _ => folds(store, k, kidx, &shape, total, max_bytes),
    }
}

/// A filter lane (1-d space): the elements whose predicate holds, in order.
fn filter(
    store: &Store<'_>,
    k: &Kernel,
    lane: &Lane,
    pred: &Func,
    shape: &[usize],
    total: usize,
    max_bytes: u64,
) -> Result<Arr> {
    let kind = k.kind.as_str();
    if shape.len() != 1 {
        return Err(internal(format!("a filter over a space of rank {}", shape.len())));
    }
    check_alloc(kind, store.elem(lane.dst)?, total, max_bytes)?;
    let mut f = Runner::new(&k.elem);
    let mut p = Runner::new(pred);
    let mut walk = Walk::new(shape);
    let mut data = Vec::new();
    for flat in 0..total {
        let x = f.call1(store, &walk.args).map_err(|e| at_element(e, kind, shape, flat))?;
        walk.advance();
        match p.call1(store, &[x]).map_err(|e| at_element(e, kind, shape, flat))? {
            Scalar::Bool(true) => data.push(x),
            Scalar::Bool(false) => {}
            other => return Err(internal(format!("a filter predicate returned {}", other.elem_type()))),
        }
    }
    Ok(Arr { shape: vec![data.len()], data })
}

/// A permute lane: a copy of `dest`, into which every element is combined at its target.
#[allow(clippy::too_many_arguments)]
fn permute(
    store: &Store<'_>,
    k: &Kernel,
    lane: &Lane,
    op: &Func,
    dest: &PermuteDest,
    target: &Func,
    shape: &[usize],
    total: usize,
    max_bytes: u64,
) -> Result<Arr> {
    let kind = k.kind.as_str();
    let mut out = match dest {
        PermuteDest::Array(v) => {
            let d = store.get(*v)?;
            check_alloc(kind, store.elem(lane.dst)?, d.data.len(), max_bytes)?;
            d.clone()
        }
        PermuteDest::Fill { shape, value, span } => {
            let (dshape, n) = PermuteDest::fill_shape(shape, *span, |v| store.load(v), |v| store.name(v))?;
            check_alloc(kind, store.elem(lane.dst)?, n, max_bytes)?;
            Arr { shape: dshape, data: vec![*value; n] }
        }
    };
    let mut f = Runner::new(&k.elem);
    let mut op = Runner::new(op);
    let mut tf = Runner::new(target);
    let mut walk = Walk::new(shape);
    let mut t = Vec::with_capacity(out.shape.len());
    let dst_name = store.name(lane.dst);
    for flat in 0..total {
        // The element first, then its target: as the reference computes the source array
        // before the targets, an element that fails fails even where it would be dropped.
        let x = f.call1(store, &walk.args).map_err(|e| at_element(e, kind, shape, flat))?;
        tf.call_indices(store, &walk.args, &mut t).map_err(|e| at_element(e, kind, shape, flat))?;
        walk.advance();
        if t.len() != out.shape.len() {
            return Err(internal(format!(
                "a permute target of {} indices into `{dst_name}` of rank {}",
                t.len(),
                out.shape.len()
            )));
        }
        if out.shape.len() == 1 && t.as_slice() == [-1] {
            continue;
        }
        let Some(slot) = flat_index(&out.shape, &t) else {
            return Err(Error::index(
                Span::default(),
                format!(
                    "permute: target {} out of bounds for `{dst_name}` of shape {} (from element {} of the source)",
                    fmt_indices(&t),
                    fmt_shape(&out.shape),
                    fmt_shape(&unflatten(shape, flat))
                ),
            ));
        };
        let old = out.data.get(slot).copied().ok_or_else(|| internal("permute: past the buffer"))?;
        let new = op.call1(store, &[old, x])?;
        if let Some(s) = out.data.get_mut(slot) {
            *s = new;
        }
    }
    Ok(out)
}
