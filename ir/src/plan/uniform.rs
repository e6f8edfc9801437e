//! What an element function computes the same way at every point of its space: the
//! registers that vary from point to point, and the `if`s that branch the same way at every
//! point (their condition varies nowhere).
//!
//! The native emitter and the cost model both read [`Func::uniform_ifs`], so that what the
//! model prices is what the code does: such an `if` is emitted as a branch, not as a select
//! of both arms, and the C compiler takes the branch out of the loop over elements (loop
//! unswitching: one loop per arm, each vectorised), so that only one arm runs at each point;
//! on a GPU every thread of a warp takes the same arm. The model then counts the dearer arm,
//! not both.

use super::{Block, ElemType, Func, Inst, Reg};
use std::collections::HashSet;

/// The most `if`s of one function emitted as branches for the compiler to unswitch: GCC
/// unswitches a loop on at most three conditions (`--param max-unswitch-level`); past them
/// a branch would stay in the loop and keep it from vectorising.
pub const UNIFORM_IF_LIMIT: usize = 3;

/// The most instructions a function may have for its uniform `if`s to be emitted as
/// branches: GCC unswitches a loop of at most 50 of its own instructions
/// (`--param max-unswitch-insns`), which a plan instruction, the loop's index and its
/// store fill a few at a time.
pub const UNIFORM_IF_MAX_INSTS: usize = 24;

impl Func {
    /// The registers whose value may differ from one point of the space to another: the
    /// parameters and whatever is computed from them (an array read at such an index, an
    /// `if` or a loop that uses one anywhere, [`Inst::uses`]). The others are the same at
    /// every point.
    pub fn varying(&self) -> HashSet<Reg> {
        self.flows_from((0..self.params.len() as Reg).collect(), |_| false)
    }

    /// `seed` and every register computed from it, or by an instruction `source` accepts
    /// ([`Inst::uses`]; an `if` or a loop that uses one anywhere; a loop variable whose
    /// start or next value is one).
    pub fn flows_from(&self, seed: HashSet<Reg>, source: impl Fn(&Inst) -> bool) -> HashSet<Reg> {
        fn visit(b: &Block, v: &mut HashSet<Reg>, uses: &mut Vec<Reg>, source: &dyn Fn(&Inst) -> bool) {
            for i in &b.insts {
                match i {
                    Inst::If { then_block, else_block, .. } => {
                        visit(then_block, v, uses, source);
                        visit(else_block, v, uses, source);
                    }
                    Inst::Loop { inits, vars, body, nexts, .. } => {
                        for (var, (init, next)) in vars.iter().zip(inits.iter().zip(nexts)) {
                            if v.contains(init) || v.contains(next) {
                                v.insert(*var);
                            }
                        }
                        visit(body, v, uses, source);
                    }
                    _ => {}
                }
                uses.clear();
                i.uses(uses);
                if source(i) || uses.iter().any(|r| v.contains(r)) {
                    v.extend(i.dsts());
                }
            }
        }
        let mut v = seed;
        let mut uses = Vec::new();
        // a loop's state feeds back into itself: until nothing more flows
        loop {
            let before = v.len();
            visit(&self.body, &mut v, &mut uses, &source);
            if v.len() == before {
                return v;
            }
        }
    }

    /// The `if`s (by the register they write) that branch the same way at every point and
    /// are emitted as branches: a condition that varies nowhere, a result that varies (one
    /// that does not is computed once, whatever its form), a result that is not a `bool`
    /// (`&&` and `||`, which native code evaluates as operators), in a function of at most
    /// [`UNIFORM_IF_MAX_INSTS`] instructions; the first [`UNIFORM_IF_LIMIT`] of them in the
    /// order of [`Block::all_insts`] (a block's own before those nested in it).
    pub fn uniform_ifs(&self) -> HashSet<Reg> {
        self.uniform_ifs_given(&self.varying())
    }

    /// [`Func::uniform_ifs`], for a caller that has [`Func::varying`] at hand already.
    pub fn uniform_ifs_given(&self, varies: &HashSet<Reg>) -> HashSet<Reg> {
        let insts = self.body.all_insts();
        if insts.len() > UNIFORM_IF_MAX_INSTS {
            return HashSet::new();
        }
        insts
            .into_iter()
            .filter_map(|i| match i {
                Inst::If { dst, cond, .. }
                    if !varies.contains(cond)
                        && varies.contains(dst)
                        && self.reg_types.get(*dst as usize) != Some(&ElemType::Bool) =>
                {
                    Some(*dst)
                }
                _ => None,
            })
            .take(UNIFORM_IF_LIMIT)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::BinOp;
    use crate::value::Scalar;

    /// `\x -> if c then x * 2 else x + 1` over one `f32` parameter, with `c` read at one
    /// index (`uniform`) or computed from `x` (`x > 0`).
    fn select(uniform: bool) -> Func {
        let cond = if uniform {
            Inst::Load { dst: 1, value: 0 }
        } else {
            Inst::Binary { dst: 1, op: BinOp::Gt, a: 0, b: 2 }
        };
        let then_block = Block { insts: vec![Inst::Binary { dst: 3, op: BinOp::Mul, a: 0, b: 2 }] };
        let else_block = Block { insts: vec![Inst::Binary { dst: 4, op: BinOp::Add, a: 0, b: 2 }] };
        Func {
            params: vec![ElemType::F32],
            reg_types: vec![
                ElemType::F32,
                ElemType::Bool,
                ElemType::F32,
                ElemType::F32,
                ElemType::F32,
                ElemType::F32,
            ],
            body: Block {
                insts: vec![
                    Inst::Const { dst: 2, value: Scalar::F32(2.0) },
                    cond,
                    Inst::If { dst: 5, cond: 1, then_block, then_ret: 3, else_block, else_ret: 4 },
                ],
            },
            ret: vec![5],
            spans: vec![],
        }
    }

    #[test]
    fn an_if_on_a_value_the_same_everywhere_is_uniform() {
        let f = select(true);
        assert!(!f.varying().contains(&1));
        assert_eq!(f.uniform_ifs(), HashSet::from([5]));
    }

    #[test]
    fn an_if_on_the_element_is_not() {
        assert!(select(false).uniform_ifs().is_empty());
    }

    #[test]
    fn a_long_function_keeps_its_selects() {
        let mut f = select(true);
        let pad = (0..UNIFORM_IF_MAX_INSTS).map(|_| Inst::Const { dst: 2, value: Scalar::F32(2.0) });
        f.body.insts.splice(0..0, pad);
        assert!(f.uniform_ifs().is_empty());
    }
}
