//! `bool` `if`s evaluated eagerly in native code: the lowering writes `a && b` and `a || b`
//! as `if`s (their right operand is lazy), which the scalar emitter turns into `c ? t : e`
//! on `bool`s where both arms can be computed; gcc leaves a loop of those unvectorised (an
//! `argmin` folded into independent accumulators ran seven times slower). Where both arms
//! are pure and cheap (no read, no integer division, no loop, no call but `isnan`; at most
//! [`CHEAP`] instructions together), the `if` becomes `bool` operators on registers —
//! `(c && t) || (!c && e)`, or its shorter forms when an arm is a constant — which C
//! evaluates without a branch (operands that are registers have no side effect).

use eqfuse_ir::ast::{BinOp, UnOp};
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{Block, Func, Inst, Reg};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

/// `f` with every `bool` `if` whose arms are pure and cheap written as `bool` operators
/// (their arms' instructions hoisted before them, as the emitter does when it computes both
/// arms; registers are written once per function, so nothing is overwritten).
pub(crate) fn eager_bools(f: &Func) -> Func {
    let mut out = f.clone();
    let mut consts = Vec::new();
    constants(&f.body, &mut consts);
    let mut regs = std::mem::take(&mut out.reg_types);
    out.body = rewrite(&f.body, &consts, &mut regs);
    out.reg_types = regs;
    out
}

/// The registers every `bool` constant of `b` (nested blocks included) writes, with its value.
fn constants(b: &Block, out: &mut Vec<(Reg, bool)>) {
    for i in &b.insts {
        match i {
            Inst::Const { dst, value: Scalar::Bool(v) } => out.push((*dst, *v)),
            Inst::If { then_block, else_block, .. } => {
                constants(then_block, out);
                constants(else_block, out);
            }
            _ => {}
        }
    }
}

/// The most instructions the two arms of a `bool` `if` may hold together for it to be
/// evaluated eagerly (both arms are then computed every time).
const CHEAP: usize = 8;

/// The instructions of `b`, nested blocks included.
fn size(b: &Block) -> usize {
    b.insts
        .iter()
        .map(|i| match i {
            Inst::If { then_block, else_block, .. } => 1 + size(then_block) + size(else_block),
            _ => 1,
        })
        .sum()
}

/// Whether every instruction of `b` is pure (it cannot fail and writes nothing but its
/// register).
fn pure(b: &Block, regs: &[ElemType]) -> bool {
    b.insts.iter().all(|i| match i {
        Inst::Const { .. } | Inst::Unary { .. } => true,
        Inst::Binary { op, a, .. } => match op {
            BinOp::Div | BinOp::Rem => regs.get(*a as usize).is_some_and(|t| t.is_float()),
            BinOp::Shl | BinOp::Shr => false,
            _ => true,
        },
        Inst::Call { f: ScalarFn::IsNan, .. } => true,
        Inst::If { then_block, else_block, .. } => pure(then_block, regs) && pure(else_block, regs),
        _ => false,
    })
}

fn rewrite(b: &Block, consts: &[(Reg, bool)], regs: &mut Vec<ElemType>) -> Block {
    let mut out = Vec::with_capacity(b.insts.len());
    for i in &b.insts {
        let Inst::If { dst, cond, then_block, then_ret, else_block, else_ret } = i else {
            out.push(i.clone());
            continue;
        };
        let t = regs.get(*dst as usize).copied();
        let cheap = size(then_block) + size(else_block) <= CHEAP;
        if t != Some(ElemType::Bool) || !cheap || !pure(then_block, regs) || !pure(else_block, regs) {
            let then_block = rewrite(then_block, consts, regs);
            let else_block = rewrite(else_block, consts, regs);
            out.push(Inst::If {
                dst: *dst,
                cond: *cond,
                then_block,
                then_ret: *then_ret,
                else_block,
                else_ret: *else_ret,
            });
            continue;
        }
        out.extend(rewrite(then_block, consts, regs).insts);
        out.extend(rewrite(else_block, consts, regs).insts);
        let known = |r: Reg| consts.iter().find(|(c, _)| *c == r).map(|(_, v)| *v);
        let fresh = |regs: &mut Vec<ElemType>| {
            regs.push(ElemType::Bool);
            (regs.len() - 1) as Reg
        };
        let (c, th, el, d) = (*cond, *then_ret, *else_ret, *dst);
        let bin = |dst, op, a, b| Inst::Binary { dst, op, a, b };
        match (known(th), known(el)) {
            (Some(true), _) => out.push(bin(d, BinOp::Or, c, el)),
            (_, Some(false)) => out.push(bin(d, BinOp::And, c, th)),
            (Some(false), _) | (_, Some(true)) => {
                let n = fresh(regs);
                out.push(Inst::Unary { dst: n, op: UnOp::Not, a: c });
                out.push(match known(th) {
                    // `!c && e`
                    Some(false) => bin(d, BinOp::And, n, el),
                    // `!c || t`
                    _ => bin(d, BinOp::Or, n, th),
                });
            }
            _ => {
                let (n, p, q) = (fresh(regs), fresh(regs), fresh(regs));
                out.push(Inst::Unary { dst: n, op: UnOp::Not, a: c });
                out.push(bin(p, BinOp::And, c, th));
                out.push(bin(q, BinOp::And, n, el));
                out.push(bin(d, BinOp::Or, p, q));
            }
        }
    }
    Block { insts: out }
}
