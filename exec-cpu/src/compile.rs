//! Compiling a plan [`Func`] into a [`Program`] for the blocked VM.
//!
//! The compiler checks the function once (every register read is written before, by one
//! instruction of an enclosing block; every operand has the type its operator needs; every
//! result register has the type its instruction produces), so that the VM runs typed loops
//! with no per-element checks of its own. It also works out:
//!
//! - which registers are **uniform** — the same for every element of a block: constants,
//!   loaded 0-d values, and whatever is computed from uniform registers only. A uniform
//!   register holds one element, computed once per block, and its consumers broadcast it;
//! - the **free registers** of each nested block (read inside, written outside), which are
//!   gathered when the block runs on a compacted subset of the elements;
//! - which `if`s may run both branches on every element and select (**speculation**): both
//!   branches small and unable to fail (no reads, no integer division, no loops);
//! - which reads are **contiguous**: an index function reading `a[i0, .., ik]` at its own
//!   parameters from an array of the space's shape reads a slice of `a` per block; when
//!   only the function's own arithmetic uses that register, it is never written at all
//!   (**slice-backed**: the operands read the array in place). Other reads whose indices are
//!   all parameters (`v[j]`, `v[i]`, `m[j, i]`) read runs along the space's innermost
//!   dimension: slices, strided runs or repeats, bounds checked once per run. Parameters
//!   read only this way are never filled in.
//!
//! Loads of 0-d values become constants: their values are known before the kernel runs.

use crate::internal;
use crate::num::MulAdd;
use crate::program::{ArrInfo, Block, Branch, Env, IfOp, LoopOp, Op, Program};
use eqfuse_ir::ast::{BinOp, UnOp};
use eqfuse_ir::error::Result;
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{Block as PBlock, Func, Inst, Reg, ValueId};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

/// Most instructions in an `if`'s two branches together for it to be speculated.
const SPECULATE_MAX_OPS: usize = 24;

/// Compiles `func`. `space`: the kernel's shape when `func`'s parameters are the indices of
/// the kernel's space (an element or target function), for contiguous reads.
pub(crate) fn compile<'s>(func: &Func, env: &dyn Env<'s>, space: Option<&[usize]>) -> Result<Program<'s>> {
    let n = func.reg_types.len();
    if func.params.len() > n {
        return Err(internal(format!("a function of {} parameters and {n} registers", func.params.len())));
    }
    for (k, (p, t)) in func.params.iter().zip(&func.reg_types).enumerate() {
        if p != t {
            return Err(internal(format!("parameter {k} of type {p} in register r{k} of type {t}")));
        }
    }
    let mut c = Compiler {
        types: func.reg_types.clone(),
        uniform: vec![false; n],
        defined: vec![false; n],
        param_used: vec![false; func.params.len()],
        nparams: func.params.len(),
        arrays: Vec::new(),
        array_ids: Vec::new(),
        env,
        space: space.map(<[usize]>::to_vec),
        depth: 0,
        written: 0,
        uses: vec![0; n],
        hoisted: Vec::new(),
    };
    count_uses(&func.body, &mut c.uses);
    for &r in &func.ret {
        if let Some(u) = c.uses.get_mut(r as usize) {
            *u = u.saturating_add(1);
        }
    }
    for d in c.defined.iter_mut().take(func.params.len()) {
        *d = true;
    }
    let mut body = c.block(&func.body, 0)?;
    // after the `if`s' common instructions are hoisted (they compare unfused code)
    fuse_all(&mut body, &c.uses, &c.types);
    let mut ret = Vec::with_capacity(func.ret.len());
    for &r in &func.ret {
        ret.push(c.read(r)?);
    }
    let slice = slice_backed(&mut body, &ret, n);
    Ok(Program {
        types: c.types,
        uniform: c.uniform,
        nparams: c.nparams,
        param_used: c.param_used,
        body,
        ret,
        depth: c.depth,
        live: c.written + c.nparams,
        arrays: c.arrays,
        slice,
        space: c.space,
        spans: func.spans.iter().map(|&(r, s)| (r as usize, s)).collect(),
    })
}

/// Finds the contiguous reads of the function's own block whose registers are used only as
/// operands of that block's unary, binary, call, read (index) and dim instructions — never
/// by a nested block, an `if` or a loop, nor as a result — and removes them: those
/// instructions read the array's slice for the block instead of a copy.
fn slice_backed(body: &mut Block, ret: &[usize], nregs: usize) -> Vec<Option<usize>> {
    let mut slice: Vec<Option<usize>> = vec![None; nregs];
    for op in &body.ops {
        if let Op::Read { dst, arr, contiguous: true, .. } = op {
            if let Some(s) = slice.get_mut(*dst) {
                *s = Some(*arr);
            }
        }
    }
    if slice.iter().all(Option::is_none) {
        return slice;
    }
    let mut bad = vec![false; nregs];
    let mut mark = |r: usize| {
        if let Some(b) = bad.get_mut(r) {
            *b = true;
        }
    };
    ret.iter().for_each(|&r| mark(r));
    for op in &body.ops {
        if matches!(op, Op::If(_) | Op::Loop(_)) {
            visit_op_reads(op, &mut mark);
        }
    }
    for (s, b) in slice.iter_mut().zip(&bad) {
        if *b {
            *s = None;
        }
    }
    body.ops.retain(|op| match op {
        Op::Read { dst, .. } => !matches!(slice.get(*dst), Some(Some(_))),
        _ => true,
    });
    slice
}

struct Compiler<'e, 's> {
    types: Vec<ElemType>,
    uniform: Vec<bool>,
    defined: Vec<bool>,
    param_used: Vec<bool>,
    nparams: usize,
    arrays: Vec<ArrInfo<'s>>,
    array_ids: Vec<ValueId>,
    env: &'e dyn Env<'s>,
    space: Option<Vec<usize>>,
    depth: usize,
    written: usize,
    /// How many times the function reads each register (its results included).
    uses: Vec<u32>,
    /// Instructions hoisted out of the `if` being compiled, to run just before it.
    hoisted: Vec<Op>,
}

/// Bit-for-bit equality of two constants.
fn same_scalar(a: Scalar, b: Scalar) -> bool {
    match (a, b) {
        (Scalar::Bool(x), Scalar::Bool(y)) => x == y,
        (Scalar::I32(x), Scalar::I32(y)) => x == y,
        (Scalar::I64(x), Scalar::I64(y)) => x == y,
        (Scalar::F32(x), Scalar::F32(y)) => x.to_bits() == y.to_bits(),
        (Scalar::F64(x), Scalar::F64(y)) => x.to_bits() == y.to_bits(),
        _ => false,
    }
}

/// Moves the instructions that both branches of an `if` begin with — the same operations
/// on the same operands, up to the branches' own register names — out of the branches
/// (returned, to run before the `if`), when the else branch is then empty: its result
/// becomes the then branch's register of the same value. Only instructions that cannot fail
/// move (every element runs them in either branch anyway), so that a large `if` whose
/// branches differ only at the end becomes a small one.
fn hoist_common(then_: &mut Branch, else_: &mut Branch, types: &[ElemType]) -> Vec<Op> {
    let (t, e) = (&then_.block.ops, &else_.block.ops);
    if e.is_empty() || t.len() < e.len() {
        return Vec::new();
    }
    // else register -> then register of the same value
    let mut map: Vec<(usize, usize)> = Vec::new();
    let same = |tr: usize, er: usize, map: &[(usize, usize)]| match map.iter().find(|(x, _)| *x == er) {
        Some(&(_, y)) => y == tr,
        None => tr == er,
    };
    for (a, b) in t.iter().zip(e) {
        let pair = match (a, b) {
            (Op::Const { dst: d1, value: v1 }, Op::Const { dst: d2, value: v2 }) => {
                same_scalar(*v1, *v2).then_some((*d1, *d2))
            }
            (Op::Unary { dst: d1, op: o1, a: a1 }, Op::Unary { dst: d2, op: o2, a: a2 }) => {
                (o1 == o2 && same(*a1, *a2, &map)).then_some((*d1, *d2))
            }
            (Op::Binary { dst: d1, op: o1, a: a1, b: b1 }, Op::Binary { dst: d2, op: o2, a: a2, b: b2 }) => {
                let int_div =
                    matches!(o1, BinOp::Div | BinOp::Rem) && !types.get(*a1).is_some_and(|&t| float(t));
                (o1 == o2 && !int_div && same(*a1, *a2, &map) && same(*b1, *b2, &map)).then_some((*d1, *d2))
            }
            (Op::Call { dst: d1, f: f1, args: x1 }, Op::Call { dst: d2, f: f2, args: x2 }) => {
                (f1 == f2 && x1.len() == x2.len() && x1.iter().zip(x2).all(|(&p, &q)| same(p, q, &map)))
                    .then_some((*d1, *d2))
            }
            (
                Op::MulAdd { dst: d1, a: a1, b: b1, c: c1, form: f1 },
                Op::MulAdd { dst: d2, a: a2, b: b2, c: c2, form: f2 },
            ) => (f1 == f2 && same(*a1, *a2, &map) && same(*b1, *b2, &map) && same(*c1, *c2, &map))
                .then_some((*d1, *d2)),
            _ => None,
        };
        match pair {
            Some((d1, d2)) if types.get(d1) == types.get(d2) => map.push((d2, d1)),
            _ => return Vec::new(),
        }
    }
    // the whole else branch is the common part: its result is the then branch's
    let Some(&(_, ret)) = map.iter().find(|(x, _)| *x == else_.ret) else {
        return Vec::new();
    };
    let k = e.len();
    else_.block.ops.clear();
    else_.ret = ret;
    then_.block.ops.drain(..k).collect()
}

/// Counts the reads of each register in `b` and its nested blocks.
fn count_uses(b: &PBlock, uses: &mut [u32]) {
    let mut add = |r: Reg| {
        if let Some(u) = uses.get_mut(r as usize) {
            *u = u.saturating_add(1);
        }
    };
    let mut nested: Vec<&PBlock> = Vec::new();
    for inst in &b.insts {
        match inst {
            Inst::Const { .. } | Inst::Load { .. } => {}
            Inst::Unary { a, .. } => add(*a),
            Inst::Binary { a, b, .. } => {
                add(*a);
                add(*b);
            }
            Inst::Call { args, .. } => args.iter().for_each(|&r| add(r)),
            Inst::Read { index, .. } => index.iter().for_each(|&r| add(r)),
            Inst::Dim { axis, .. } => add(*axis),
            Inst::If { cond, then_block, then_ret, else_block, else_ret, .. } => {
                add(*cond);
                add(*then_ret);
                add(*else_ret);
                nested.push(then_block);
                nested.push(else_block);
            }
            Inst::Loop { count, inits, body, nexts, .. } => {
                add(*count);
                inits.iter().chain(nexts).for_each(|&r| add(r));
                nested.push(body);
            }
        }
    }
    for n in nested {
        count_uses(n, uses);
    }
}

/// Calls `f` on every register `op` writes, its nested blocks included.
fn visit_writes(op: &Op, f: &mut dyn FnMut(usize)) {
    if let Some(d) = op.dst() {
        f(d);
    }
    match op {
        Op::If(i) => {
            for o in i.then_.block.ops.iter().chain(&i.else_.block.ops) {
                visit_writes(o, f);
            }
        }
        Op::Loop(l) => {
            l.dsts.iter().chain(&l.vars).for_each(|&r| f(r));
            for o in &l.body.ops {
                visit_writes(o, f);
            }
        }
        _ => {}
    }
}

/// [`fuse_mul_add`] in `block` and every nested block; loops are flattened for groups again.
fn fuse_all(block: &mut Block, uses: &[u32], types: &[ElemType]) {
    for op in &mut block.ops {
        match op {
            Op::If(i) => {
                fuse_all(&mut i.then_.block, uses, types);
                fuse_all(&mut i.else_.block, uses, types);
            }
            Op::Loop(l) => {
                fuse_all(&mut l.body, uses, types);
                l.group = crate::group::flatten(types, &l.body, &l.free, &l.vars, &l.nexts);
            }
            _ => {}
        }
    }
    fuse_mul_add(&mut block.ops, uses, types);
}

/// Fuses each product that only one later addition or subtraction of the same block uses
/// into that instruction ([`Op::MulAdd`]), when neither factor is written in between.
fn fuse_mul_add(ops: &mut Vec<Op>, uses: &[u32], types: &[ElemType]) {
    let mut gone = vec![false; ops.len()];
    for j in 0..ops.len() {
        let Some(Op::Binary { dst, op: op @ (BinOp::Add | BinOp::Sub), a: x, b: y }) = ops.get(j) else {
            continue;
        };
        let (dst, op, x, y) = (*dst, *op, *x, *y);
        if !types.get(dst).copied().is_some_and(numeric) {
            continue;
        }
        // the product: one operand of this instruction, made by an earlier one of the block
        let found = (0..j).rev().find_map(|i| match ops.get(i) {
            Some(Op::Binary { dst: m, op: BinOp::Mul, a, b })
                if !gone.get(i).copied().unwrap_or(true)
                    && (*m == x || *m == y)
                    && x != y
                    && uses.get(*m).copied() == Some(1) =>
            {
                Some((i, *m, *a, *b))
            }
            _ => None,
        });
        let Some((i, m, a, b)) = found else { continue };
        let c = if m == x { y } else { x };
        if [a, b, c].contains(&dst) {
            continue;
        }
        let mut clobbered = false;
        for o in ops.get(i + 1..j).unwrap_or(&[]) {
            visit_writes(o, &mut |w| clobbered |= w == a || w == b);
        }
        if clobbered {
            continue;
        }
        let form = match (op, m == x) {
            (BinOp::Add, true) => MulAdd::ProdPlus,
            (BinOp::Add, false) => MulAdd::PlusProd,
            (BinOp::Sub, true) => MulAdd::ProdMinus,
            _ => MulAdd::MinusProd,
        };
        if let Some(slot) = ops.get_mut(j) {
            *slot = Op::MulAdd { dst, a, b, c, form };
        }
        if let Some(g) = gone.get_mut(i) {
            *g = true;
        }
    }
    if gone.iter().any(|&g| g) {
        let mut k = 0;
        ops.retain(|_| {
            let keep = !gone.get(k).copied().unwrap_or(false);
            k += 1;
            keep
        });
    }
}

/// Whether `t` is a number type.
fn numeric(t: ElemType) -> bool {
    !matches!(t, ElemType::Bool)
}

/// Whether `t` is a float type.
fn float(t: ElemType) -> bool {
    matches!(t, ElemType::F32 | ElemType::F64)
}

impl<'s> Compiler<'_, 's> {
    /// A register that is read: in range and written before.
    fn read(&mut self, r: Reg) -> Result<usize> {
        let r = self.read_unmarked(r)?;
        self.mark(r);
        Ok(r)
    }

    /// Records that register `r` is read (a parameter must then be filled).
    fn mark(&mut self, r: usize) {
        if let Some(u) = self.param_used.get_mut(r) {
            *u = true;
        }
    }

    /// [`Compiler::read`] without recording a parameter as used.
    fn read_unmarked(&mut self, r: Reg) -> Result<usize> {
        let r = r as usize;
        match self.defined.get(r) {
            Some(true) => Ok(r),
            Some(false) => Err(internal(format!("register r{r} read before it is written"))),
            None => Err(internal(format!("register r{r} out of range ({} registers)", self.types.len()))),
        }
    }

    fn ty(&self, r: usize) -> ElemType {
        self.types.get(r).copied().unwrap_or(ElemType::Bool)
    }

    fn uni(&self, r: usize) -> bool {
        self.uniform.get(r).copied().unwrap_or(false)
    }

    /// A register that is written, of type `want`, uniform or not.
    fn write(&mut self, r: Reg, want: ElemType, uniform: bool) -> Result<usize> {
        let ri = r as usize;
        let Some(&t) = self.types.get(ri) else {
            return Err(internal(format!("register r{r} out of range ({} registers)", self.types.len())));
        };
        if t != want {
            return Err(internal(format!("register r{r} of type {t} assigned a {want}")));
        }
        if ri < self.nparams {
            return Err(internal(format!("parameter r{r} is assigned")));
        }
        self.written += 1;
        if let Some(d) = self.defined.get_mut(ri) {
            *d = true;
        }
        if let Some(u) = self.uniform.get_mut(ri) {
            *u = uniform;
        }
        Ok(ri)
    }

    /// The slot of array `v`.
    fn array(&mut self, v: ValueId) -> Result<usize> {
        if let Some(k) = self.array_ids.iter().position(|&a| a == v) {
            return Ok(k);
        }
        let info = self.env.array(v)?;
        self.arrays.push(info);
        self.array_ids.push(v);
        Ok(self.arrays.len() - 1)
    }

    /// Compiles a block at frame depth `depth`; the registers it writes stay defined (the
    /// caller undefines them when the block is nested).
    fn block(&mut self, b: &PBlock, depth: usize) -> Result<Block> {
        self.depth = self.depth.max(depth);
        let mut ops = Vec::with_capacity(b.insts.len());
        for inst in &b.insts {
            let op = self.inst(inst, depth)?;
            // what an `if`'s two branches both begin with runs before it
            ops.append(&mut self.hoisted);
            ops.push(op);
        }
        Ok(Block::new(ops))
    }

    /// Compiles a nested block whose result is `ret`: the block's own registers are
    /// undefined again afterwards.
    fn nested(&mut self, b: &PBlock, depth: usize, ret: Reg) -> Result<Block> {
        let before = self.defined.clone();
        let block = self.block(b, depth)?;
        self.read(ret)?;
        self.defined = before;
        Ok(block)
    }

    /// Compiles one instruction, dispatching by family.
    fn inst(&mut self, inst: &Inst, depth: usize) -> Result<Op> {
        match inst {
            Inst::Const { dst, value } => {
                let dst = self.write(*dst, value.elem_type(), true)?;
                Ok(Op::Const { dst, value: *value })
            }
            Inst::Load { dst, value } => {
                let s = self.env.load(*value)?;
                let dst = self.write(*dst, s.elem_type(), true)?;
                Ok(Op::Const { dst, value: s })
            }
            Inst::Unary { dst, op, a } => self.unary(*dst, *op, *a),
            Inst::Binary { dst, op, a, b } => self.binary(*dst, *op, *a, *b),
            Inst::Call { dst, f, args } => self.call(*dst, *f, args),
            Inst::Read { dst, array, index } => self.read_array(*dst, *array, index, depth),
            Inst::Dim { dst, array, axis } => self.dim(*dst, *array, *axis),
            Inst::If { dst, cond, then_block, then_ret, else_block, else_ret } => {
                self.if_op(*dst, *cond, (then_block, *then_ret), (else_block, *else_ret), depth)
            }
            Inst::Loop { dsts, count, inits, vars, body, nexts } => {
                self.loop_op(dsts, *count, inits, vars, body, nexts, depth)
            }
        }
    }

    /// A unary operator: `-` on numbers, `!` on bools and integers (the bitwise complement);
    /// the result has the operand's type.
    fn unary(&mut self, dst: Reg, op: UnOp, a: Reg) -> Result<Op> {
        let a = self.read(a)?;
        let t = self.ty(a);
        let ok = match op {
            UnOp::Neg => numeric(t),
            UnOp::Not => t == ElemType::Bool || t.is_int(),
        };
        if !ok {
            return Err(internal(format!("`{}` on {t}", op.symbol())));
        }
        let dst = self.write(dst, t, self.uni(a))?;
        Ok(Op::Unary { dst, op, a })
    }

    /// A binary operator on two operands of one type: a comparison or a logical operator
    /// gives a bool, arithmetic the operands' (numeric) type.
    fn binary(&mut self, dst: Reg, op: BinOp, a: Reg, b: Reg) -> Result<Op> {
        let (a, b) = (self.read(a)?, self.read(b)?);
        let (ta, tb) = (self.ty(a), self.ty(b));
        if ta != tb {
            return Err(internal(format!("`{}` on {ta} and {tb}", op.symbol())));
        }
        let out = if op.is_comparison() {
            ElemType::Bool
        } else if op.is_logical() {
            if ta != ElemType::Bool {
                return Err(internal(format!("`{}` on {ta}", op.symbol())));
            }
            ElemType::Bool
        } else {
            if !numeric(ta) || (op.is_bitwise() && !ta.is_int()) {
                return Err(internal(format!("`{}` on {ta}", op.symbol())));
            }
            ta
        };
        let dst = self.write(dst, out, self.uni(a) && self.uni(b))?;
        Ok(Op::Binary { dst, op, a, b })
    }

    /// A call of a scalar function, its result type checked against its arguments'.
    fn call(&mut self, dst: Reg, f: ScalarFn, args: &[Reg]) -> Result<Op> {
        let mut regs = Vec::with_capacity(args.len());
        for &r in args {
            regs.push(self.read(r)?);
        }
        if regs.len() != f.arity() {
            return Err(internal(format!(
                "`{}` takes {} arguments, got {}",
                f.name(),
                f.arity(),
                regs.len()
            )));
        }
        let ts: Vec<ElemType> = regs.iter().map(|&r| self.ty(r)).collect();
        let t0 = ts.first().copied().unwrap_or(ElemType::Bool);
        let same = ts.iter().all(|&t| t == t0);
        let out = match f {
            ScalarFn::Convert(to) => Some(to),
            ScalarFn::Min | ScalarFn::Max | ScalarFn::Clamp if same => Some(t0),
            ScalarFn::Abs if numeric(t0) => Some(t0),
            ScalarFn::Pow | ScalarFn::Atan2 if same && float(t0) => Some(t0),
            ScalarFn::Popcount | ScalarFn::Clz if t0.is_int() => Some(ElemType::I32),
            ScalarFn::IsNan | ScalarFn::IsInf if float(t0) => Some(ElemType::Bool),
            ScalarFn::Sqrt
            | ScalarFn::Exp
            | ScalarFn::Log
            | ScalarFn::Sin
            | ScalarFn::Cos
            | ScalarFn::Tan
            | ScalarFn::Tanh
            | ScalarFn::Floor
            | ScalarFn::Ceil
            | ScalarFn::Round
            | ScalarFn::Log2
            | ScalarFn::Log10
            | ScalarFn::Exp2
            | ScalarFn::Expm1
            | ScalarFn::Log1p
            | ScalarFn::Erf
            | ScalarFn::Erfc
            | ScalarFn::Lgamma
                if float(t0) =>
            {
                Some(t0)
            }
            _ => None,
        };
        let Some(out) = out else {
            let names: Vec<String> = ts.iter().map(|t| t.to_string()).collect();
            return Err(internal(format!("`{}` on {}", f.name(), names.join(", "))));
        };
        let uniform = regs.iter().all(|&r| self.uni(r));
        let dst = self.write(dst, out, uniform)?;
        Ok(Op::Call { dst, f, args: regs })
    }

    /// A read of an array element; marks whether it reads the block's own slice
    /// (`contiguous`) or runs of slices indexed by the parameters (`params`).
    fn read_array(&mut self, dst: Reg, array: ValueId, index: &[Reg], depth: usize) -> Result<Op> {
        let arr = self.array(array)?;
        let (rank, ty, shape) = match self.arrays.get(arr) {
            Some(a) => (a.shape.len(), a.ty(), a.shape.clone()),
            None => return Err(internal("an array slot out of range")),
        };
        if index.len() != rank {
            return Err(internal(format!(
                "`{}` of rank {rank} read with {} indices",
                self.arrays.get(arr).map(|a| a.name.as_str()).unwrap_or("?"),
                index.len()
            )));
        }
        let mut regs = Vec::with_capacity(index.len());
        for &r in index {
            let r = self.read_unmarked(r)?;
            if self.ty(r) != ElemType::I64 {
                return Err(internal(format!("an index register r{r} of type {}", self.ty(r))));
            }
            regs.push(r);
        }
        let contiguous = !regs.is_empty()
            && regs.len() == self.nparams
            && regs.iter().enumerate().all(|(k, &r)| k == r)
            && self.space.as_deref() == Some(shape.as_slice());
        // a read of the function's own block indexed by its parameters reads slices
        // (or repeats) of the array: the parameters need not be filled for it (in a
        // nested block it may run compacted, and reads the parameters' registers)
        let params = depth == 0 && self.space.is_some() && regs.iter().all(|&r| r < self.nparams);
        if !params {
            for &r in &regs {
                self.mark(r);
            }
        }
        let uniform = regs.iter().all(|&r| self.uni(r));
        let dst = self.write(dst, ty, uniform)?;
        Ok(Op::Read { dst, arr, index: regs, contiguous, params })
    }

    /// The extent of an array along an axis.
    fn dim(&mut self, dst: Reg, array: ValueId, axis: Reg) -> Result<Op> {
        let arr = self.array(array)?;
        let axis = self.read(axis)?;
        if self.ty(axis) != ElemType::I64 {
            return Err(internal(format!("an axis register r{axis} of type {}", self.ty(axis))));
        }
        let dst = self.write(dst, ElemType::I64, self.uni(axis))?;
        Ok(Op::Dim { dst, arr, axis })
    }

    /// A lazy `if`: both branches compiled, what they both begin with hoisted before it,
    /// and speculated when both are small and cannot fail.
    fn if_op(
        &mut self,
        dst: Reg,
        cond: Reg,
        (then_block, then_ret): (&PBlock, Reg),
        (else_block, else_ret): (&PBlock, Reg),
        depth: usize,
    ) -> Result<Op> {
        let cond = self.read(cond)?;
        if self.ty(cond) != ElemType::Bool {
            return Err(internal(format!("an `if` condition r{cond} of type {}", self.ty(cond))));
        }
        let mut then_ = self.branch(then_block, then_ret, depth + 1)?;
        let mut else_ = self.branch(else_block, else_ret, depth + 1)?;
        let common = hoist_common(&mut then_, &mut else_, &self.types);
        if !common.is_empty() {
            for op in &common {
                visit_writes(op, &mut |r| {
                    if let Some(d) = self.defined.get_mut(r) {
                        *d = true;
                    }
                });
            }
            for br in [&mut then_, &mut else_] {
                br.free = free_regs(&br.block, &[br.ret], &self.defined, &[]);
            }
            self.hoisted.extend(common);
        }
        let t = self.ty(then_.ret);
        if self.ty(else_.ret) != t {
            return Err(internal(format!("an `if` of branches of types {t} and {}", self.ty(else_.ret))));
        }
        let speculate = safe(&then_.block, &self.types)
            && safe(&else_.block, &self.types)
            && size(&then_.block) + size(&else_.block) <= SPECULATE_MAX_OPS;
        let uniform = self.uni(cond) && self.uni(then_.ret) && self.uni(else_.ret);
        let dst = self.write(dst, t, uniform)?;
        Ok(Op::If(Box::new(IfOp { dst, cond, then_, else_, speculate })))
    }

    /// An `iterate` loop: its state registers written by the loop and varying, its next
    /// values checked against the state's types, and which of them can be swapped in.
    #[allow(clippy::too_many_arguments)]
    fn loop_op(
        &mut self,
        dsts: &[Reg],
        count: Reg,
        inits: &[Reg],
        vars: &[Reg],
        body: &PBlock,
        nexts: &[Reg],
        depth: usize,
    ) -> Result<Op> {
        let count = self.read(count)?;
        if self.ty(count) != ElemType::I64 {
            return Err(internal(format!("a loop count r{count} of type {}", self.ty(count))));
        }
        if inits.len() != vars.len() || nexts.len() != vars.len() || dsts.len() != vars.len() {
            return Err(internal(format!(
                "a loop of {} state registers with {} initial, {} next and {} final registers",
                vars.len(),
                inits.len(),
                nexts.len(),
                dsts.len()
            )));
        }
        let mut init_regs = Vec::with_capacity(inits.len());
        for &r in inits {
            init_regs.push(self.read(r)?);
        }
        // the state registers: written by the loop, varying
        let before = self.defined.clone();
        let mut var_regs = Vec::with_capacity(vars.len());
        for (&v, &i) in vars.iter().zip(&init_regs) {
            let t = self.ty(i);
            var_regs.push(self.write(v, t, false)?);
        }
        let block = self.block(body, depth + 1)?;
        let mut next_regs = Vec::with_capacity(nexts.len());
        for &r in nexts {
            next_regs.push(self.read(r)?);
        }
        for (&nx, &v) in next_regs.iter().zip(&var_regs) {
            if self.ty(nx) != self.ty(v) {
                return Err(internal(format!(
                    "loop state r{v} of type {} given a next value of type {}",
                    self.ty(v),
                    self.ty(nx)
                )));
            }
        }
        self.defined = before;
        let free = free_regs(&block, &next_regs, &self.defined, &var_regs);
        let swap = next_regs
            .iter()
            .map(|&nx| {
                !self.uni(nx)
                    && !free.contains(&nx)
                    && !var_regs.contains(&nx)
                    && next_regs.iter().filter(|&&o| o == nx).count() == 1
            })
            .collect();
        let mut dst_regs = Vec::with_capacity(dsts.len());
        for (&d, &v) in dsts.iter().zip(&var_regs) {
            let t = self.ty(v);
            dst_regs.push(self.write(d, t, false)?);
        }
        Ok(Op::Loop(Box::new(LoopOp {
            // flattened once the function is compiled (`fuse_all`)
            group: None,
            dsts: dst_regs,
            count,
            inits: init_regs,
            vars: var_regs,
            body: block,
            nexts: next_regs,
            free,
            swap,
        })))
    }

    /// Compiles one branch of an `if`.
    fn branch(&mut self, b: &PBlock, ret: Reg, depth: usize) -> Result<Branch> {
        let block = self.nested(b, depth, ret)?;
        let ret = ret as usize;
        let free = free_regs(&block, &[ret], &self.defined, &[]);
        Ok(Branch { block, ret, free })
    }
}

/// The registers a nested block reads (its instructions, nested blocks and `extra`) that
/// are defined outside it (`outer`; registers in `also` count as outside too: a loop's
/// state).
fn free_regs(block: &Block, extra: &[usize], outer: &[bool], also: &[usize]) -> Vec<usize> {
    let mut seen = vec![false; outer.len()];
    let mut out = Vec::new();
    let mut add = |r: usize| {
        let is_outer = outer.get(r).copied().unwrap_or(false) || also.contains(&r);
        if is_outer && !seen.get(r).copied().unwrap_or(true) {
            if let Some(s) = seen.get_mut(r) {
                *s = true;
            }
            out.push(r);
        }
    };
    visit_reads(block, &mut add);
    for &r in extra {
        add(r);
    }
    out
}

/// Calls `f` on every register `op` reads, its nested blocks included.
fn visit_op_reads(op: &Op, f: &mut dyn FnMut(usize)) {
    let block = Block::default();
    visit_reads_from(&block, Some(op), f);
}

/// Calls `f` on every register read in `block`, nested blocks included.
fn visit_reads(block: &Block, f: &mut dyn FnMut(usize)) {
    visit_reads_from(block, None, f);
}

fn visit_reads_from(block: &Block, first: Option<&Op>, f: &mut dyn FnMut(usize)) {
    let mut stack = vec![block];
    let mut pending: Vec<&Op> = first.into_iter().collect();
    loop {
        let ops: Vec<&Op> = if let Some(op) = pending.pop() {
            vec![op]
        } else if let Some(b) = stack.pop() {
            b.ops.iter().collect()
        } else {
            break;
        };
        for op in ops {
            match op {
                Op::Const { .. } => {}
                Op::Unary { a, .. } => f(*a),
                Op::Binary { a, b, .. } => {
                    f(*a);
                    f(*b);
                }
                Op::Call { args, .. } => args.iter().for_each(|&r| f(r)),
                Op::MulAdd { a, b, c, .. } => {
                    f(*a);
                    f(*b);
                    f(*c);
                }
                Op::Read { index, .. } => index.iter().for_each(|&r| f(r)),
                Op::Dim { axis, .. } => f(*axis),
                Op::If(i) => {
                    f(i.cond);
                    f(i.then_.ret);
                    f(i.else_.ret);
                    stack.push(&i.then_.block);
                    stack.push(&i.else_.block);
                }
                Op::Loop(l) => {
                    f(l.count);
                    l.inits.iter().chain(&l.nexts).for_each(|&r| f(r));
                    stack.push(&l.body);
                }
            }
        }
    }
}

/// A block that cannot fail on any element, so that running it on elements that do not
/// take it is harmless: no reads or dims (indices), no integer division, no loops.
fn safe(block: &Block, types: &[ElemType]) -> bool {
    block.ops.iter().all(|op| safe_op(op, types))
}

/// An instruction that cannot fail on any element (see [`safe`]).
fn safe_op(op: &Op, types: &[ElemType]) -> bool {
    match op {
        Op::Const { .. } | Op::Unary { .. } | Op::Call { .. } | Op::MulAdd { .. } => true,
        Op::Binary { op, a, .. } => {
            !matches!(op, BinOp::Div | BinOp::Rem) || types.get(*a).is_some_and(|&t| float(t))
        }
        Op::Read { .. } | Op::Dim { .. } | Op::Loop(_) => false,
        Op::If(i) => safe(&i.then_.block, types) && safe(&i.else_.block, types),
    }
}

/// Instructions in a block, nested ones included.
fn size(block: &Block) -> usize {
    block
        .ops
        .iter()
        .map(|op| match op {
            Op::If(i) => 1 + size(&i.then_.block) + size(&i.else_.block),
            Op::Loop(l) => 1 + size(&l.body),
            _ => 1,
        })
        .sum()
}
