//! Renumbering a plan's values: every [`ValueId`] a step, a kernel, a function or a
//! contraction names, passed through one map. What puts plans together (a loop's body,
//! optimised as a program of its own, inside the plan of the program around it) moves
//! each part's values into one table with it.

use super::contract::{Contraction, Factor};
use super::{Arg, Block, Func, Inst, Kernel, LaneOp, LoopKind, PermuteDest, Step, ValueId};

/// Every value `steps` name, passed through `f` (nested steps, kernels and functions
/// included).
pub fn remap_steps(steps: &mut [Step], f: &mut dyn FnMut(ValueId) -> ValueId) {
    for s in steps {
        remap_step(s, f);
    }
}

fn remap_step(s: &mut Step, f: &mut dyn FnMut(ValueId) -> ValueId) {
    match s {
        Step::Scalar { dst, body } => {
            *dst = f(*dst);
            remap_func(body, f);
        }
        Step::Kernel(k) => remap_kernel(k, f),
        Step::RowBlock { kernels, local } | Step::SegmentBlock { kernels, local } => {
            kernels.iter_mut().for_each(|k| remap_kernel(k, f));
            local.iter_mut().for_each(|v| *v = f(*v));
        }
        Step::If { cond, then_steps, then_value, else_steps, else_value, dst } => {
            *cond = f(*cond);
            remap_steps(then_steps, f);
            remap_steps(else_steps, f);
            *then_value = f(*then_value);
            *else_value = f(*else_value);
            *dst = f(*dst);
        }
        Step::Assert { cond, shown, .. } => {
            remap_func(cond, f);
            shown.iter_mut().flatten().for_each(|a| remap_arg(a, f));
        }
        Step::Loop(l) => {
            for v in l.state.iter_mut().chain(&mut l.init).chain(&mut l.next).chain(&mut l.dst) {
                *v = f(*v);
            }
            match &mut l.form {
                LoopKind::For { count, counter } => {
                    *count = f(*count);
                    *counter = f(*counter);
                }
                LoopKind::While { steps, cond } => {
                    remap_steps(steps, f);
                    *cond = f(*cond);
                }
            }
            remap_steps(&mut l.body, f);
        }
    }
}

fn remap_arg(a: &mut Arg, f: &mut dyn FnMut(ValueId) -> ValueId) {
    if let Arg::Value(v) = a {
        *v = f(*v);
    }
}

fn remap_kernel(k: &mut Kernel, f: &mut dyn FnMut(ValueId) -> ValueId) {
    k.space.iter_mut().for_each(|a| remap_arg(a, f));
    remap_func(&mut k.elem, f);
    for lane in &mut k.lanes {
        lane.dst = f(lane.dst);
        match &mut lane.op {
            LaneOp::Generate | LaneOp::Part => {}
            LaneOp::Reduce { op, ne } | LaneOp::Scan { op, ne, .. } => {
                remap_func(op, f);
                remap_func(ne, f);
            }
            LaneOp::Filter { pred } => remap_func(pred, f),
            LaneOp::Permute { op, dest, target } => {
                remap_func(op, f);
                remap_func(target, f);
                match dest {
                    PermuteDest::Array(v) => *v = f(*v),
                    PermuteDest::Fill { shape, .. } => shape.iter_mut().for_each(|a| remap_arg(a, f)),
                }
            }
        }
    }
    if let Some(c) = &mut k.contraction {
        remap_contraction(c, f);
    }
    if let Some(v) = &mut k.view_of {
        *v = f(*v);
    }
}

fn remap_contraction(c: &mut Contraction, f: &mut dyn FnMut(ValueId) -> ValueId) {
    for op in [&mut c.a, &mut c.b] {
        op.array = f(op.array);
        for fac in op.offsets.iter_mut().flatten() {
            remap_factor(fac, f);
        }
    }
    c.scale.iter_mut().for_each(|fac| remap_factor(fac, f));
}

fn remap_factor(fac: &mut Factor, f: &mut dyn FnMut(ValueId) -> ValueId) {
    if let Factor::Value(v) = fac {
        *v = f(*v);
    }
}

/// Every value `func` reads, passed through `f`.
pub fn remap_func(func: &mut Func, f: &mut dyn FnMut(ValueId) -> ValueId) {
    remap_block(&mut func.body, f);
}

fn remap_block(b: &mut Block, f: &mut dyn FnMut(ValueId) -> ValueId) {
    for i in &mut b.insts {
        match i {
            Inst::Read { array, .. } | Inst::Dim { array, .. } => *array = f(*array),
            Inst::Load { value, .. } => *value = f(*value),
            Inst::If { then_block, else_block, .. } => {
                remap_block(then_block, f);
                remap_block(else_block, f);
            }
            Inst::Loop { body, .. } => remap_block(body, f),
            Inst::Const { .. } | Inst::Unary { .. } | Inst::Binary { .. } | Inst::Call { .. } => {}
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::plan::{Lane, LoopStep, Plan};

    /// A plan naming values in every place a step can: its renumbering moves every one.
    #[test]
    fn every_value_a_plan_names_is_renumbered() {
        let plan = crate::plan::fixtures::malformed_else();
        let mut steps = plan.steps.clone();
        let before = format!("{steps:?}");
        remap_steps(&mut steps, &mut |v| v + 100);
        remap_steps(&mut steps, &mut |v| v - 100);
        assert_eq!(format!("{steps:?}"), before);
        let mut seen = Vec::new();
        remap_steps(&mut steps, &mut |v| {
            seen.push(v);
            v
        });
        let mut want: Vec<ValueId> =
            plan.steps.iter().flat_map(|s| s.reads().into_iter().chain(s.writes())).collect();
        want.sort_unstable();
        want.dedup();
        seen.sort_unstable();
        seen.dedup();
        for v in want {
            assert!(seen.contains(&v), "v{v} not renumbered: {plan}");
        }
    }

    #[test]
    fn a_loop_step_is_renumbered_whole() {
        let k = Kernel {
            kind: crate::plan::KernelKind::Map,
            space: vec![Arg::Value(7)],
            elem: Func {
                params: vec![crate::types::ElemType::I64],
                reg_types: vec![crate::types::ElemType::I64; 2],
                body: Block { insts: vec![Inst::Read { dst: 1, array: 3, index: vec![0] }] },
                ret: vec![1],
                spans: vec![],
            },
            lanes: vec![Lane { dst: 4, op: LaneOp::Generate }],
            span: None,
            contraction: None,
            view_of: None,
        };
        let mut steps = vec![Step::Loop(Box::new(LoopStep {
            state: vec![3],
            names: vec!["x".into()],
            init: vec![0],
            form: LoopKind::For { count: 1, counter: 2 },
            body: vec![Step::Kernel(k)],
            next: vec![4],
            dst: vec![5],
            hoisted: vec![],
            span: None,
        }))];
        remap_steps(&mut steps, &mut |v| v * 10);
        let Step::Loop(l) = &steps[0] else { panic!() };
        assert_eq!((l.state[0], l.init[0], l.next[0], l.dst[0]), (30, 0, 40, 50));
        assert_eq!(l.form, LoopKind::For { count: 10, counter: 20 });
        let plan = Plan { values: vec![], steps: steps.clone(), outputs: vec![] };
        let Step::Kernel(k) = &l.body[0] else { panic!() };
        assert_eq!((k.space[0], k.lanes[0].dst), (Arg::Value(70), 40));
        assert_eq!(k.reads(), vec![70, 30]);
        assert_eq!(plan.kernels().len(), 1);
    }
}
