//! Flattening a loop whose body cannot fail into the list of typed functions over
//! `W`-element arrays that [`crate::lanes`] runs on groups of elements (see there): each
//! register gets a slot in its type's bank, each instruction a function and its slots.
//! `None` wherever an instruction cannot run there (reads, dims, nested loops, a result
//! written over its own operand); the loop then runs on the blocked VM.

use crate::col::with_type;
use crate::lanes::{
    binary_fn, call_fn, mov, mul_add_fn, select, ty_index, unary_fn, update, Args, GroupLoop, LFn, UFn,
};
use crate::program::{Block, Op};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

/// Slot assignment while flattening.
struct Flat<'t> {
    types: &'t [ElemType],
    slot: Vec<Option<u32>>,
    sizes: [usize; crate::lanes::TYPES],
    consts: Vec<(u32, Scalar)>,
    ops: Vec<(LFn, Args)>,
}

impl Flat<'_> {
    fn ty(&self, r: usize) -> Option<ElemType> {
        self.types.get(r).copied()
    }

    /// Register `r`'s slot (made on first use).
    fn slot(&mut self, r: usize) -> Option<u32> {
        let t = self.ty(r)?;
        let s = self.slot.get_mut(r)?;
        if let Some(k) = *s {
            return Some(k);
        }
        let n = self.sizes.get_mut(ty_index(t))?;
        let k = u32::try_from(*n).ok()?;
        *n += 1;
        *s = Some(k);
        Some(k)
    }

    /// A fresh slot of type `t`.
    fn fresh(&mut self, t: ElemType) -> Option<u32> {
        let n = self.sizes.get_mut(ty_index(t))?;
        let k = u32::try_from(*n).ok()?;
        *n += 1;
        Some(k)
    }

    fn args(&mut self, d: usize, ops: &[usize]) -> Option<Args> {
        let mut a = Args { d: self.slot(d)?, ..Args::default() };
        let mut it = ops.iter();
        if let Some(&r) = it.next() {
            a.a = self.slot(r)?;
        }
        if let Some(&r) = it.next() {
            a.b = self.slot(r)?;
        }
        if let Some(&r) = it.next() {
            a.c = self.slot(r)?;
        }
        // an instruction's result never overwrites its operands here
        if ops.contains(&d) {
            return None;
        }
        Some(a)
    }

    /// Flattens `block`; `None` when some instruction cannot run here.
    fn block(&mut self, block: &Block) -> Option<()> {
        for op in &block.ops {
            match op {
                Op::Const { dst, value } => {
                    if self.ty(*dst)? != value.elem_type() {
                        return None;
                    }
                    let d = self.slot(*dst)?;
                    self.consts.push((d, *value));
                }
                Op::Unary { dst, op, a } => {
                    let f = unary_fn(*op, self.ty(*a)?)?;
                    let args = self.args(*dst, &[*a])?;
                    self.ops.push((f, args));
                }
                Op::Binary { dst, op, a, b } => {
                    let f = binary_fn(*op, self.ty(*a)?)?;
                    let args = self.args(*dst, &[*a, *b])?;
                    self.ops.push((f, args));
                }
                Op::Call { dst, f, args } => {
                    let a0 = *args.first()?;
                    let f = call_fn(*f, self.ty(a0)?, self.ty(*dst)?, args.len())?;
                    let args = self.args(*dst, args)?;
                    self.ops.push((f, args));
                }
                Op::If(i) => {
                    // both branches run, then a select (they cannot fail: checked here)
                    self.block(&i.then_.block)?;
                    self.block(&i.else_.block)?;
                    let t = self.ty(i.dst)?;
                    let f: LFn = with_type!(t, T => select::<T>);
                    let args = self.args(i.dst, &[i.then_.ret, i.else_.ret, i.cond])?;
                    self.ops.push((f, args));
                }
                Op::MulAdd { dst, a, b, c, form } => {
                    let f = mul_add_fn(*form, self.ty(*dst)?)?;
                    let args = self.args(*dst, &[*a, *b, *c])?;
                    self.ops.push((f, args));
                }
                Op::Read { .. } | Op::Dim { .. } | Op::Loop(_) => return None,
            }
        }
        Some(())
    }
}

/// Flattens a loop for groups, when its body cannot fail (see the module's comment).
/// `free`: the registers the body reads from outside (its state included).
pub(crate) fn flatten(
    types: &[ElemType],
    body: &Block,
    free: &[usize],
    vars: &[usize],
    nexts: &[usize],
) -> Option<Box<GroupLoop>> {
    if vars.is_empty() {
        return None;
    }
    let mut fl = Flat {
        types,
        slot: vec![None; types.len()],
        sizes: [0; crate::lanes::TYPES],
        consts: Vec::new(),
        ops: Vec::new(),
    };
    let mut loads = Vec::with_capacity(free.len());
    for &r in free {
        loads.push((r, fl.slot(r)?));
    }
    for &v in vars {
        if !free.contains(&v) {
            loads.push((v, fl.slot(v)?));
        }
    }
    fl.block(body)?;
    let mut moves = Vec::with_capacity(vars.len());
    let mut updates = Vec::with_capacity(vars.len());
    let mut var_slots = Vec::with_capacity(vars.len());
    // `vars = nexts` at once: through copies when some next value is itself a state
    // register (else straight from the next values)
    let through = nexts.iter().any(|nx| vars.contains(nx));
    for (&v, &nx) in vars.iter().zip(nexts) {
        let t = fl.ty(v)?;
        if fl.ty(nx)? != t {
            return None;
        }
        let (vs, ns) = (fl.slot(v)?, fl.slot(nx)?);
        let up: UFn = with_type!(t, T => update::<T>);
        if through {
            let tmp = fl.fresh(t)?;
            let mv: LFn = with_type!(t, T => mov::<T>);
            moves.push((mv, Args { d: tmp, a: ns, ..Args::default() }));
            updates.push((up, vs, tmp));
        } else {
            updates.push((up, vs, ns));
        }
        var_slots.push((v, vs));
    }
    Some(Box::new(GroupLoop {
        sizes: fl.sizes,
        loads,
        consts: fl.consts,
        ops: fl.ops,
        moves,
        updates,
        vars: var_slots,
    }))
}
