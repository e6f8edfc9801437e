//! The Cranelift code of a loop: the frame's element loop around the body's iteration loop.

use super::{helpers, Region};
use crate::compile::{LoopOp, MulAdd, Op};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F32X4, F64, F64X2, I32, I64, I8};
use cranelift_codegen::ir::{AbiParam, Function, InstBuilder, MemFlagsData, Signature, Type, Value};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use eqfuse_ir::ast::{BinOp, UnOp};
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

/// A register type's Cranelift type (`bool`: a byte, 0 or 1).
fn cl(t: ElemType) -> Type {
    match t {
        ElemType::Bool => I8,
        ElemType::I32 => I32,
        ElemType::I64 => I64,
        ElemType::F32 => F32,
        ElemType::F64 => F64,
    }
}

struct Emit<'a, 'f> {
    b: FunctionBuilder<'f>,
    types: &'a [ElemType],
    regs: Vec<Option<Variable>>,
    /// The host's calling convention (of the helpers).
    cc: CallConv,
}

impl Emit<'_, '_> {
    fn ty(&self, r: usize) -> Option<ElemType> {
        self.types.get(r).copied()
    }

    fn var(&mut self, r: usize) -> Option<Variable> {
        let t = self.ty(r)?;
        let slot = self.regs.get_mut(r)?;
        if let Some(v) = *slot {
            return Some(v);
        }
        let v = self.b.declare_var(cl(t));
        *slot = Some(v);
        Some(v)
    }

    /// Register `r`'s value: `None` when nothing set it before (no source for it).
    fn get(&mut self, r: usize) -> Option<Value> {
        let v = (*self.regs.get(r)?)?;
        Some(self.b.use_var(v))
    }

    fn set(&mut self, r: usize, x: Value) -> Option<()> {
        let v = self.var(r)?;
        self.b.def_var(v, x);
        Some(())
    }

    /// A call of a helper at `addr` with `args` of type `t`, its result of type `t`.
    fn call(&mut self, addr: usize, t: ElemType, args: &[Value]) -> Value {
        let mut sig = Signature::new(self.cc);
        for _ in args {
            sig.params.push(AbiParam::new(cl(t)));
        }
        sig.returns.push(AbiParam::new(cl(t)));
        let sref = self.b.import_signature(sig);
        let callee = self.b.ins().iconst(I64, addr as i64);
        let call = self.b.ins().call_indirect(sref, callee, args);
        self.b.inst_results(call)[0]
    }

    /// One iteration: the body, then `vars = nexts` at once; the new state.
    fn step(&mut self, l: &LoopOp) -> Option<Vec<Value>> {
        self.block(&l.body.ops)?;
        let mut news = Vec::with_capacity(l.vars.len());
        for (&v, &nx) in l.vars.iter().zip(&l.nexts) {
            if self.ty(nx)? != self.ty(v)? {
                return None;
            }
            news.push(self.get(nx)?);
        }
        for (&v, &x) in l.vars.iter().zip(&news) {
            self.set(v, x)?;
        }
        Some(news)
    }

    /// Whether some bit differs between `olds` and `news` (of the same types): an `i8`.
    fn changed(&mut self, olds: &[Value], news: &[Value]) -> Option<Value> {
        // floats xor'd as bits in their own registers, then everything OR'd as an i64
        let (mut f64s, mut f32s, mut ints): (Option<Value>, Option<Value>, Option<Value>) =
            (None, None, None);
        for (&old, &new) in olds.iter().zip(news) {
            let t = self.b.func.dfg.value_type(old);
            let d = self.b.ins().bxor(old, new);
            let slot = if t == F64 {
                &mut f64s
            } else if t == F32 {
                &mut f32s
            } else {
                &mut ints
            };
            let d = if t == I8 || t == I32 { self.b.ins().uextend(I64, d) } else { d };
            *slot = Some(match *slot {
                Some(a) => self.b.ins().bor(a, d),
                None => d,
            });
        }
        if let Some(f) = f64s {
            let x = self.b.ins().bitcast(I64, MemFlagsData::new(), f);
            ints = Some(ints.map_or(x, |a| self.b.ins().bor(a, x)));
        }
        if let Some(f) = f32s {
            let x = self.b.ins().bitcast(I32, MemFlagsData::new(), f);
            let x = self.b.ins().uextend(I64, x);
            ints = Some(ints.map_or(x, |a| self.b.ins().bor(a, x)));
        }
        Some(self.b.ins().icmp_imm_s(IntCC::NotEqual, ints?, 0))
    }

    /// The constants of `block` (and of its branches), defined once per element.
    fn consts(&mut self, ops: &[Op]) -> Option<()> {
        for op in ops {
            match op {
                Op::Const { dst, value } => {
                    if self.ty(*dst)? != value.elem_type() {
                        return None;
                    }
                    let x = match *value {
                        Scalar::Bool(x) => self.b.ins().iconst(I8, i64::from(x)),
                        Scalar::I32(x) => self.b.ins().iconst(I32, i64::from(x as u32)),
                        Scalar::I64(x) => self.b.ins().iconst(I64, x),
                        Scalar::F32(x) => self.b.ins().f32const(x),
                        Scalar::F64(x) => self.b.ins().f64const(x),
                    };
                    self.set(*dst, x)?;
                }
                Op::If(i) => {
                    self.consts(&i.then_.block.ops)?;
                    self.consts(&i.else_.block.ops)?;
                }
                _ => {}
            }
        }
        Some(())
    }

    /// The body's code (constants excepted); `None` for an operation with no exact code.
    fn block(&mut self, ops: &[Op]) -> Option<()> {
        for op in ops {
            match op {
                Op::Const { .. } => {}
                Op::Unary { dst, op, a } => {
                    let t = self.ty(*a)?;
                    let x = self.get(*a)?;
                    let y = match (op, t) {
                        (UnOp::Not, ElemType::Bool) => self.b.ins().bxor_imm_u(x, 1),
                        (UnOp::Neg, ElemType::I32 | ElemType::I64) => self.b.ins().ineg(x),
                        (UnOp::Neg, ElemType::F32 | ElemType::F64) => self.b.ins().fneg(x),
                        _ => return None,
                    };
                    self.set(*dst, y)?;
                }
                Op::Binary { dst, op, a, b } => {
                    let t = self.ty(*a)?;
                    if self.ty(*b)? != t {
                        return None;
                    }
                    let (x, y) = (self.get(*a)?, self.get(*b)?);
                    let z = self.binary(*op, t, x, y)?;
                    self.set(*dst, z)?;
                }
                Op::Call { dst, f, args } => {
                    let t = self.ty(*args.first()?)?;
                    if args.len() != f.arity() || args.iter().any(|&r| self.ty(r) != Some(t)) {
                        return None;
                    }
                    let xs = args.iter().map(|&r| self.get(r)).collect::<Option<Vec<_>>>()?;
                    let out = self.ty(*dst)?;
                    let z = self.call_fn(*f, t, out, &xs)?;
                    self.set(*dst, z)?;
                }
                Op::If(i) => {
                    // both branches run, then a select (they cannot fail)
                    self.block(&i.then_.block.ops)?;
                    self.block(&i.else_.block.ops)?;
                    let t = self.ty(i.dst)?;
                    if self.ty(i.cond)? != ElemType::Bool
                        || self.ty(i.then_.ret)? != t
                        || self.ty(i.else_.ret)? != t
                    {
                        return None;
                    }
                    let c = self.get(i.cond)?;
                    let (x, y) = (self.get(i.then_.ret)?, self.get(i.else_.ret)?);
                    let z = self.b.ins().select(c, x, y);
                    self.set(i.dst, z)?;
                }
                Op::MulAdd { dst, a, b, c, form } => {
                    let t = self.ty(*dst)?;
                    if [*a, *b, *c].iter().any(|&r| self.ty(r) != Some(t)) {
                        return None;
                    }
                    let (p, q, r) = (self.get(*a)?, self.get(*b)?, self.get(*c)?);
                    // the product, rounded, then the sum (never a fused multiply-add)
                    let (m, add, sub): (Value, fn(_, _, _) -> _, fn(_, _, _) -> _) = if t.is_float() {
                        (self.b.ins().fmul(p, q), fadd, fsub)
                    } else if t.is_int() {
                        (self.b.ins().imul(p, q), iadd, isub)
                    } else {
                        return None;
                    };
                    let z = match form {
                        MulAdd::ProdPlus => add(&mut self.b, m, r),
                        MulAdd::PlusProd => add(&mut self.b, r, m),
                        MulAdd::ProdMinus => sub(&mut self.b, m, r),
                        MulAdd::MinusProd => sub(&mut self.b, r, m),
                    };
                    self.set(*dst, z)?;
                }
                // loaded with the sources (a prelude's contiguous reads only)
                Op::Read { dst, contiguous: true, .. }
                    if self.regs.get(*dst).is_some_and(Option::is_some) => {}
                Op::Read { .. } | Op::Dim { .. } | Op::Loop(_) => return None,
            }
        }
        Some(())
    }

    fn binary(&mut self, op: BinOp, t: ElemType, x: Value, y: Value) -> Option<Value> {
        let ins = self.b.ins();
        if op.is_comparison() {
            return Some(if t.is_float() {
                let cc = match op {
                    BinOp::Eq => FloatCC::Equal,
                    // `!=` holds when either is NaN
                    BinOp::Ne => FloatCC::NotEqual,
                    BinOp::Lt => FloatCC::LessThan,
                    BinOp::Le => FloatCC::LessThanOrEqual,
                    BinOp::Gt => FloatCC::GreaterThan,
                    BinOp::Ge => FloatCC::GreaterThanOrEqual,
                    _ => return None,
                };
                ins.fcmp(cc, x, y)
            } else {
                // bools order `false < true`: unsigned
                let signed = t != ElemType::Bool;
                let cc = match (op, signed) {
                    (BinOp::Eq, _) => IntCC::Equal,
                    (BinOp::Ne, _) => IntCC::NotEqual,
                    (BinOp::Lt, true) => IntCC::SignedLessThan,
                    (BinOp::Le, true) => IntCC::SignedLessThanOrEqual,
                    (BinOp::Gt, true) => IntCC::SignedGreaterThan,
                    (BinOp::Ge, true) => IntCC::SignedGreaterThanOrEqual,
                    (BinOp::Lt, false) => IntCC::UnsignedLessThan,
                    (BinOp::Le, false) => IntCC::UnsignedLessThanOrEqual,
                    (BinOp::Gt, false) => IntCC::UnsignedGreaterThan,
                    (BinOp::Ge, false) => IntCC::UnsignedGreaterThanOrEqual,
                    _ => return None,
                };
                ins.icmp(cc, x, y)
            });
        }
        Some(match (t, op) {
            (ElemType::Bool, BinOp::And) => ins.band(x, y),
            (ElemType::Bool, BinOp::Or) => ins.bor(x, y),
            (ElemType::I32 | ElemType::I64, BinOp::Add) => ins.iadd(x, y),
            (ElemType::I32 | ElemType::I64, BinOp::Sub) => ins.isub(x, y),
            (ElemType::I32 | ElemType::I64, BinOp::Mul) => ins.imul(x, y),
            (ElemType::F32 | ElemType::F64, BinOp::Add) => ins.fadd(x, y),
            (ElemType::F32 | ElemType::F64, BinOp::Sub) => ins.fsub(x, y),
            (ElemType::F32 | ElemType::F64, BinOp::Mul) => ins.fmul(x, y),
            (ElemType::F32 | ElemType::F64, BinOp::Div) => ins.fdiv(x, y),
            (ElemType::F32 | ElemType::F64, BinOp::Rem) => {
                let h = helpers::binary(t, None)?;
                self.call(h, t, &[x, y])
            }
            // integer division may fail: the lane groups refuse it too
            _ => return None,
        })
    }

    /// A call's code: arguments of type `t`, result of type `out`.
    fn call_fn(&mut self, f: ScalarFn, t: ElemType, out: ElemType, xs: &[Value]) -> Option<Value> {
        if let ScalarFn::Convert(to) = f {
            return if to == out { self.convert(t, to, *xs.first()?) } else { None };
        }
        if out != t {
            return None;
        }
        let x = *xs.first()?;
        let arg = |k: usize| xs.get(k).copied();
        Some(match t {
            ElemType::Bool => match f {
                ScalarFn::Min => self.b.ins().band(x, arg(1)?),
                ScalarFn::Max => self.b.ins().bor(x, arg(1)?),
                ScalarFn::Clamp => {
                    let lo = self.b.ins().bor(x, arg(1)?);
                    self.b.ins().band(lo, arg(2)?)
                }
                _ => return None,
            },
            ElemType::I32 | ElemType::I64 => match f {
                ScalarFn::Min => self.b.ins().smin(x, arg(1)?),
                ScalarFn::Max => self.b.ins().smax(x, arg(1)?),
                ScalarFn::Clamp => {
                    let lo = self.b.ins().smax(x, arg(1)?);
                    self.b.ins().smin(lo, arg(2)?)
                }
                ScalarFn::Abs => {
                    // wrapping: `abs MIN` is `MIN`
                    let neg = self.b.ins().ineg(x);
                    let lt = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, x, 0);
                    self.b.ins().select(lt, neg, x)
                }
                _ => return None,
            },
            ElemType::F32 | ElemType::F64 => match f {
                ScalarFn::Abs => self.b.ins().fabs(x),
                ScalarFn::Sqrt => self.b.ins().sqrt(x),
                ScalarFn::Min | ScalarFn::Max | ScalarFn::Pow | ScalarFn::Atan2 => {
                    let h = helpers::binary(t, Some(f))?;
                    self.call(h, t, &[x, arg(1)?])
                }
                ScalarFn::Clamp => {
                    let (hmax, hmin) =
                        (helpers::binary(t, Some(ScalarFn::Max))?, helpers::binary(t, Some(ScalarFn::Min))?);
                    let lo = self.call(hmax, t, &[x, arg(1)?]);
                    self.call(hmin, t, &[lo, arg(2)?])
                }
                _ => {
                    let h = helpers::unary(t, f)?;
                    self.call(h, t, &[x])
                }
            },
        })
    }

    /// Conversions, exactly Rust's `as` (the VM's table).
    fn convert(&mut self, from: ElemType, to: ElemType, x: Value) -> Option<Value> {
        use ElemType::{Bool as B, F32 as Fs, F64 as Fd, I32 as Is, I64 as Id};
        let ins = self.b.ins();
        Some(match (from, to) {
            (B, B) | (Is, Is) | (Id, Id) | (Fs, Fs) | (Fd, Fd) => x,
            (B, Is | Id) => ins.uextend(cl(to), x),
            (B, Fs | Fd) => {
                let w = ins.uextend(I32, x);
                self.b.ins().fcvt_from_sint(cl(to), w)
            }
            (Is | Id, B) => ins.icmp_imm_s(IntCC::NotEqual, x, 0),
            (Is, Id) => ins.sextend(I64, x),
            (Id, Is) => ins.ireduce(I32, x),
            (Is | Id, Fs | Fd) => ins.fcvt_from_sint(cl(to), x),
            (Fs | Fd, B) => {
                // `x != 0.0`: true for NaN
                let z = if from == Fs { ins.f32const(0.0) } else { ins.f64const(0.0) };
                self.b.ins().fcmp(FloatCC::NotEqual, x, z)
            }
            // saturating, NaN to 0
            (Fs | Fd, Is | Id) => ins.fcvt_to_sint_sat(cl(to), x),
            (Fs, Fd) => ins.fpromote(F64, x),
            (Fd, Fs) => ins.fdemote(F32, x),
        })
    }
}

fn fadd(b: &mut FunctionBuilder<'_>, x: Value, y: Value) -> Value {
    b.ins().fadd(x, y)
}
fn fsub(b: &mut FunctionBuilder<'_>, x: Value, y: Value) -> Value {
    b.ins().fsub(x, y)
}
fn iadd(b: &mut FunctionBuilder<'_>, x: Value, y: Value) -> Value {
    b.ins().iadd(x, y)
}
fn isub(b: &mut FunctionBuilder<'_>, x: Value, y: Value) -> Value {
    b.ins().isub(x, y)
}

/// Fills `func` (signature and body) with the region's code: see [`super::LoopFn`].
pub(super) fn function(
    func: &mut Function,
    cfg: TargetFrontendConfig,
    region: &Region<'_>,
    loads: &[usize],
) -> Option<()> {
    let (ptr, cc) = (cfg.pointer_type(), cfg.default_call_conv);
    let (types, l) = (region.types, region.l);
    func.signature.call_conv = cc;
    for t in [ptr, ptr, ptr, I64] {
        func.signature.params.push(AbiParam::new(t));
    }
    let mut fctx = FunctionBuilderContext::new();
    let b = FunctionBuilder::new(func, &mut fctx);
    let mut e = Emit { b, types, regs: vec![None; types.len()], cc };
    let flags = MemFlagsData::trusted();

    let entry = e.b.create_block();
    let head = e.b.create_block();
    let elem = e.b.create_block();
    let done = e.b.create_block();
    let exit = e.b.create_block();

    // entry: the sources' pointers and strides, the outputs' pointers
    e.b.append_block_params_for_function_params(entry);
    e.b.switch_to_block(entry);
    let params = e.b.block_params(entry).to_vec();
    let [p_ptrs, p_strides, p_outs, n] = params[..] else { return None };
    let mut srcs = Vec::with_capacity(loads.len());
    for k in 0..loads.len() {
        let off = i32::try_from(k * 8).ok()?;
        let base = e.b.ins().load(ptr, flags, p_ptrs, off);
        let stride = e.b.ins().load(I64, flags, p_strides, off);
        srcs.push((base, stride));
    }
    let mut outs = Vec::with_capacity(region.outs.len());
    for k in 0..region.outs.len() {
        let off = i32::try_from(k * 8).ok()?;
        outs.push(e.b.ins().load(ptr, flags, p_outs, off));
    }
    let iv = e.b.declare_var(I64);
    let zero = e.b.ins().iconst(I64, 0);
    e.b.def_var(iv, zero);
    match vector_type(region, loads) {
        Some((t, bcast)) => e.vector_loop(region, loads, &srcs, &outs, &bcast, t, iv, n, head)?,
        None => {
            e.b.ins().jump(head, &[]);
        }
    }

    // head: the next element, if any
    e.b.switch_to_block(head);
    let i = e.b.use_var(iv);
    let end = e.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, i, n);
    e.b.ins().brif(end, exit, &[], elem, &[]);

    // elem: its sources, the prelude, the count, the initial state
    e.b.switch_to_block(elem);
    let i = e.b.use_var(iv);
    for (&r, &(base, stride)) in loads.iter().zip(&srcs) {
        let t = cl(e.ty(r)?);
        let off = e.b.ins().imul(i, stride);
        let addr = e.b.ins().iadd(base, off);
        let x = e.b.ins().load(t, flags, addr, 0);
        e.set(r, x)?;
    }
    e.consts(region.prelude)?;
    e.block(region.prelude)?;
    match l {
        Some(l) => e.iterate(l, done)?,
        // a straight-line region: the outputs at once
        None => {
            e.b.ins().jump(done, &[]);
        }
    }

    // done: the element's outputs
    e.b.switch_to_block(done);
    let i = e.b.use_var(iv);
    for (&(r, from), &out) in region.outs.iter().zip(&outs) {
        let t = e.ty(r)?;
        if e.ty(from)? != t {
            return None;
        }
        let size = match t {
            ElemType::Bool => 1,
            ElemType::I32 | ElemType::F32 => 4,
            ElemType::I64 | ElemType::F64 => 8,
        };
        let x = e.get(from)?;
        let off = e.b.ins().imul_imm_s(i, size);
        let addr = e.b.ins().iadd(out, off);
        e.b.ins().store(flags, x, addr, 0);
    }
    let i1 = e.b.ins().iadd_imm_s(i, 1);
    e.b.def_var(iv, i1);
    e.b.ins().jump(head, &[]);

    e.b.switch_to_block(exit);
    e.b.ins().return_(&[]);
    e.b.seal_all_blocks();
    e.b.finalize(cfg);
    Some(())
}

impl Emit<'_, '_> {
    /// The loop `l` of one element, from the current block (its sources and prelude
    /// done): the count, the initial state, the iterations; then a jump to `done`.
    fn iterate(&mut self, l: &LoopOp, done: cranelift_codegen::ir::Block) -> Option<()> {
        let e = self;
        let first = e.b.create_block();
        let pair = e.b.create_block();
        let body2 = e.b.create_block();
        let tail = e.b.create_block();
        let body1 = e.b.create_block();
        let itv = e.b.declare_var(I64);
        let count = e.get(l.count)?;
        if e.ty(l.count)? != ElemType::I64 {
            return None;
        }
        let mut inits = Vec::with_capacity(l.inits.len());
        for (&v, &init) in l.vars.iter().zip(&l.inits) {
            if e.ty(init)? != e.ty(v)? {
                return None;
            }
            inits.push(e.get(init)?);
        }
        for (&v, &x) in l.vars.iter().zip(&inits) {
            e.set(v, x)?;
        }
        e.consts(&l.body.ops)?;
        let zero = e.b.ins().iconst(I64, 0);
        e.b.def_var(itv, zero);
        // no iteration when the count is 0 or less
        let none = e.b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, count, 0);
        e.b.ins().brif(none, done, &[], first, &[]);

        // first: one iteration and a check (a state that is already a fixed point costs one)
        e.b.switch_to_block(first);
        let olds = l.vars.iter().map(|&v| e.get(v)).collect::<Option<Vec<_>>>()?;
        let news = e.step(l)?;
        let changed = e.changed(&olds, &news)?;
        let one = e.b.ins().iconst(I64, 1);
        e.b.def_var(itv, one);
        e.b.ins().brif(changed, pair, &[], done, &[]);

        // pair: two iterations while the count allows them, then a check: the state after the
        // first is a fixed point when the second leaves every bit of it unchanged (each
        // iteration is a pure function of the state: the later ones would change nothing)
        e.b.switch_to_block(pair);
        let it = e.b.use_var(itv);
        let it1 = e.b.ins().iadd_imm_s(it, 1);
        let two = e.b.ins().icmp(IntCC::SignedLessThan, it1, count);
        e.b.ins().brif(two, body2, &[], tail, &[]);

        e.b.switch_to_block(body2);
        e.step(l)?;
        let mid = l.vars.iter().map(|&v| e.get(v)).collect::<Option<Vec<_>>>()?;
        let news = e.step(l)?;
        let changed = e.changed(&mid, &news)?;
        let it = e.b.use_var(itv);
        let it2 = e.b.ins().iadd_imm_s(it, 2);
        e.b.def_var(itv, it2);
        e.b.ins().brif(changed, pair, &[], done, &[]);

        // tail: the last iteration of an odd count
        e.b.switch_to_block(tail);
        let it = e.b.use_var(itv);
        let one = e.b.ins().icmp(IntCC::SignedLessThan, it, count);
        e.b.ins().brif(one, body1, &[], done, &[]);
        e.b.switch_to_block(body1);
        e.step(l)?;
        e.b.ins().jump(done, &[]);
        Some(())
    }
}

/// A straight-line region whose every register is of one float type, with only
/// operations that are exact lane by lane (`+ - * /`, negation, `abs`, `sqrt`, the
/// multiply-adds as a multiply then an add): that type, and per source whether it is
/// broadcast (a uniform register). Such a region runs on vectors of 128 bits (the scalar
/// loop does the last elements, or all of them when a source's stride is not the one
/// expected).
pub(super) fn vector_type(region: &Region<'_>, loads: &[usize]) -> Option<(ElemType, Vec<bool>)> {
    let uniform = region.uniform?;
    if region.l.is_some() {
        return None;
    }
    let is_uniform = |r: usize| uniform.get(r).copied().unwrap_or(false);
    let t = region.types.get(*region.outs.first().map(|(r, _)| r)?).copied()?;
    if !t.is_float() {
        return None;
    }
    let is_t = |r: usize| region.types.get(r) == Some(&t);
    let ok = |r: &usize| is_t(*r) || is_uniform(*r);
    for op in region.prelude {
        let dst = op.dst();
        // computed once, before the vectors (scalar code, splat)
        if dst.is_some_and(is_uniform) && !matches!(op, Op::Read { .. }) {
            continue;
        }
        let fine = match op {
            Op::Const { dst, value } => is_t(*dst) && value.elem_type() == t,
            Op::Unary { dst, op: UnOp::Neg, a } => [dst, a].into_iter().all(ok),
            Op::Binary { dst, op: BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div, a, b } => {
                [dst, a, b].into_iter().all(ok)
            }
            Op::Call { dst, f: ScalarFn::Abs | ScalarFn::Sqrt, args } => {
                args.len() == 1 && is_t(*dst) && args.iter().all(ok)
            }
            Op::MulAdd { dst, a, b, c, .. } => [dst, a, b, c].into_iter().all(ok),
            Op::Read { dst, contiguous: true, .. } => is_t(*dst),
            _ => false,
        };
        if !fine {
            return None;
        }
    }
    if !loads.iter().all(ok) || !region.outs.iter().all(|(r, _)| is_t(*r) && !is_uniform(*r)) {
        return None;
    }
    let bcast = loads.iter().map(|&r| uniform.get(r).copied()).collect::<Option<Vec<_>>>()?;
    Some((t, bcast))
}

impl Emit<'_, '_> {
    /// From the entry block: when every source has the stride expected (0 for a broadcast
    /// one), the elements by vectors while a whole vector is left; then (or else) a jump to
    /// `head`, the scalar loop, from element `iv`.
    #[allow(clippy::too_many_arguments)]
    fn vector_loop(
        &mut self,
        region: &Region<'_>,
        loads: &[usize],
        srcs: &[(Value, Value)],
        outs: &[Value],
        bcast: &[bool],
        t: ElemType,
        iv: Variable,
        n: Value,
        head: cranelift_codegen::ir::Block,
    ) -> Option<()> {
        let (vt, lanes, size): (Type, i64, i64) =
            if t == ElemType::F32 { (F32X4, 4, 4) } else { (F64X2, 2, 8) };
        let flags = MemFlagsData::trusted();
        // unaligned, vector loads and stores
        let vflags = MemFlagsData::new().with_notrap();
        let pre = self.b.create_block();
        let vhead = self.b.create_block();
        let vbody = self.b.create_block();
        let mut ok: Option<Value> = None;
        for (&(_, stride), &b) in srcs.iter().zip(bcast) {
            let c = self.b.ins().icmp_imm_s(IntCC::Equal, stride, if b { 0 } else { size });
            ok = Some(match ok {
                Some(o) => self.b.ins().band(o, c),
                None => c,
            });
        }
        let ok = ok?;
        self.b.ins().brif(ok, pre, &[], head, &[]);

        // pre: the broadcast sources, splat once
        self.b.switch_to_block(pre);
        let mut vals: Vec<Option<Value>> = vec![None; self.types.len()];
        let uniform = region.uniform?;
        let mut consts = Vec::new();
        for ((&r, &(base, _)), &b) in loads.iter().zip(srcs).zip(bcast) {
            if b {
                let rt = self.ty(r)?;
                let x = self.b.ins().load(cl(rt), flags, base, 0);
                self.set(r, x)?;
                if self.ty(r)? == t {
                    consts.push((r, self.b.ins().splat(vt, x)));
                }
            }
        }
        // the uniform instructions (constants among them), once
        for op in region.prelude {
            let Some(d) = op.dst().filter(|&d| uniform.get(d).copied().unwrap_or(false)) else { continue };
            if matches!(op, Op::Read { .. }) {
                continue;
            }
            self.consts(std::slice::from_ref(op))?;
            self.block(std::slice::from_ref(op))?;
            if self.ty(d)? == t {
                let x = self.get(d)?;
                consts.push((d, self.b.ins().splat(vt, x)));
            }
        }
        self.b.ins().jump(vhead, &[]);

        // vhead: a whole vector left?
        self.b.switch_to_block(vhead);
        let i = self.b.use_var(iv);
        let last = self.b.ins().iadd_imm_s(i, lanes);
        let past = self.b.ins().icmp(IntCC::SignedGreaterThan, last, n);
        self.b.ins().brif(past, head, &[], vbody, &[]);

        // vbody: the sources' vectors, the instructions, the outputs' vectors
        self.b.switch_to_block(vbody);
        let i = self.b.use_var(iv);
        let off = self.b.ins().imul_imm_s(i, size);
        for ((&r, &(base, _)), &b) in loads.iter().zip(srcs).zip(bcast) {
            if !b {
                let addr = self.b.ins().iadd(base, off);
                let v = self.b.ins().load(vt, vflags, addr, 0);
                *vals.get_mut(r)? = Some(v);
            }
        }
        for &(r, v) in &consts {
            *vals.get_mut(r)? = Some(v);
        }
        let get = |vals: &[Option<Value>], r: usize| vals.get(r).copied().flatten();
        for op in region.prelude {
            if op.dst().is_some_and(|d| uniform.get(d).copied().unwrap_or(false)) {
                continue;
            }
            let (dst, z) = match op {
                Op::Const { .. } | Op::Read { .. } => continue,
                Op::Unary { dst, a, .. } => (dst, self.b.ins().fneg(get(&vals, *a)?)),
                Op::Binary { dst, op, a, b } => {
                    let (x, y) = (get(&vals, *a)?, get(&vals, *b)?);
                    let ins = self.b.ins();
                    let z = match op {
                        BinOp::Add => ins.fadd(x, y),
                        BinOp::Sub => ins.fsub(x, y),
                        BinOp::Mul => ins.fmul(x, y),
                        BinOp::Div => ins.fdiv(x, y),
                        _ => return None,
                    };
                    (dst, z)
                }
                Op::Call { dst, f, args } => {
                    let x = get(&vals, *args.first()?)?;
                    let z = match f {
                        ScalarFn::Abs => self.b.ins().fabs(x),
                        ScalarFn::Sqrt => self.b.ins().sqrt(x),
                        _ => return None,
                    };
                    (dst, z)
                }
                Op::MulAdd { dst, a, b, c, form } => {
                    let (p, q, r) = (get(&vals, *a)?, get(&vals, *b)?, get(&vals, *c)?);
                    // the product, rounded, then the sum (never a fused multiply-add)
                    let m = self.b.ins().fmul(p, q);
                    let z = match form {
                        MulAdd::ProdPlus => self.b.ins().fadd(m, r),
                        MulAdd::PlusProd => self.b.ins().fadd(r, m),
                        MulAdd::ProdMinus => self.b.ins().fsub(m, r),
                        MulAdd::MinusProd => self.b.ins().fsub(r, m),
                    };
                    (dst, z)
                }
                _ => return None,
            };
            *vals.get_mut(*dst)? = Some(z);
        }
        for (&(_, from), &out) in region.outs.iter().zip(outs) {
            let x = get(&vals, from)?;
            let addr = self.b.ins().iadd(out, off);
            self.b.ins().store(vflags, x, addr, 0);
        }
        let next = self.b.ins().iadd_imm_s(i, lanes);
        self.b.def_var(iv, next);
        self.b.ins().jump(vhead, &[]);
        Some(())
    }
}
