//! Hand-made plans for the executors' tests: plans the optimiser does not make (a malformed
//! kernel at a chosen place), run alike by the plan interpreter and every executor.

use super::{
    Arg, Block, Func, Inst, Kernel, KernelKind, Lane, LaneOp, Origin, Plan, Step, ValueId, ValueInfo,
};
use crate::types::ElemType;
use crate::value::Scalar;

/// A host function returning the constant `s`.
fn constant(s: Scalar) -> Func {
    Func {
        params: vec![],
        reg_types: vec![s.elem_type()],
        body: Block { insts: vec![Inst::Const { dst: 0, value: s }] },
        ret: vec![0],
        spans: vec![],
    }
}

/// `if false then (k0 over [2]) else (k1 over [2], whose element function has two
/// results for its one lane: a malformed kernel)`.
pub fn malformed_else() -> Plan {
    let gen = |dst: ValueId, results: usize| Kernel {
        kind: KernelKind::Generate,
        space: vec![Arg::Const(2)],
        elem: Func {
            params: vec![ElemType::I64],
            reg_types: vec![ElemType::I64, ElemType::F64],
            body: Block { insts: vec![Inst::Const { dst: 1, value: Scalar::F64(1.0) }] },
            ret: vec![1; results],
            spans: vec![],
        },
        lanes: vec![Lane { dst, op: LaneOp::Generate }],
        span: None,
        contraction: None,
    };
    let v = |name: &str, elem, rank| ValueInfo {
        name: name.into(),
        elem,
        rank,
        origin: Origin::Computed,
        span: None,
    };
    Plan {
        values: vec![
            v("c", ElemType::Bool, 0),
            v("a", ElemType::F64, 1),
            v("b", ElemType::F64, 1),
            v("out", ElemType::F64, 1),
        ],
        steps: vec![
            Step::Scalar { dst: 0, body: constant(Scalar::Bool(false)) },
            Step::If {
                cond: 0,
                then_steps: vec![Step::Kernel(gen(1, 1))],
                then_value: 1,
                else_steps: vec![Step::Kernel(gen(2, 2))],
                else_value: 2,
                dst: 3,
            },
        ],
        outputs: vec![("out".into(), 3)],
    }
}
