//! Hand-made plans for the executors' tests: plans the optimiser does not make (a malformed
//! kernel at a chosen place), run alike by the plan interpreter and every executor.

use super::{
    Arg, Block, Func, Inst, Kernel, KernelKind, Lane, LaneOp, Origin, Plan, Step, ValueId, ValueInfo,
};
use crate::ast::BinOp;
use crate::interp::scalar::ScalarFn;
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
        view_of: None,
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

/// The operator of an argmin over `(value, index)` groups of `t` values:
/// `\(a, i) (b, j) -> if (if b == a then j < i else b < a) then (b, j) else (a, i)`, with
/// `w = 2` results.
pub fn argmin_op(t: ElemType) -> Func {
    let (i, b) = (ElemType::I64, ElemType::Bool);
    let pick = |dst: u32, then_ret: u32, else_ret: u32| Inst::If {
        dst,
        cond: 7,
        then_block: Block { insts: vec![] },
        then_ret,
        else_block: Block { insts: vec![] },
        else_ret,
    };
    Func {
        params: vec![t, i, t, i],
        reg_types: vec![t, i, t, i, b, b, b, b, t, i],
        body: Block {
            insts: vec![
                Inst::Binary { dst: 4, op: BinOp::Lt, a: 2, b: 0 },
                Inst::Binary { dst: 5, op: BinOp::Eq, a: 2, b: 0 },
                Inst::Binary { dst: 6, op: BinOp::Lt, a: 3, b: 1 },
                Inst::If {
                    dst: 7,
                    cond: 5,
                    then_block: Block { insts: vec![] },
                    then_ret: 6,
                    else_block: Block { insts: vec![] },
                    else_ret: 4,
                },
                pick(8, 2, 0),
                pick(9, 3, 1),
            ],
        },
        ret: vec![8, 9],
        spans: vec![],
    }
}

/// `(inf, i64::MAX)`: the neutral element of [`argmin_op`] on `f32`.
pub fn argmin_ne() -> Func {
    Func {
        params: vec![],
        reg_types: vec![ElemType::F32, ElemType::I64],
        body: Block {
            insts: vec![
                Inst::Const { dst: 0, value: Scalar::F32(f32::INFINITY) },
                Inst::Const { dst: 1, value: Scalar::I64(i64::MAX) },
            ],
        },
        ret: vec![0, 1],
        spans: vec![],
    }
}

/// A plan over `xs : f32[r, c]` (sizes `r`, `c`) with one kernel over `[r, c]` of element
/// `(xs[p, q], q)` and two lanes: a group of two (the head lane `op` over [`argmin_op`],
/// [`argmin_ne`], and its [`LaneOp::Part`]) writing `val` and `idx`, each of rank 1 (per row).
/// `scan`: the lanes scan (`running` minimum and its index, rank 2) instead of reducing.
pub fn group_argmin(scan: bool) -> Plan {
    let v = |name: &str, elem, rank, origin| ValueInfo { name: name.into(), elem, rank, origin, span: None };
    let (op, ne) = (argmin_op(ElemType::F32), argmin_ne());
    let head = if scan { LaneOp::Scan { op, ne, exclusive: false } } else { LaneOp::Reduce { op, ne } };
    let rank = if scan { 2 } else { 1 };
    let elem = Func {
        params: vec![ElemType::I64, ElemType::I64],
        reg_types: vec![ElemType::I64, ElemType::I64, ElemType::F32],
        body: Block { insts: vec![Inst::Read { dst: 2, array: 0, index: vec![0, 1] }] },
        ret: vec![2, 1],
        spans: vec![],
    };
    Plan {
        values: vec![
            v("xs", ElemType::F32, 2, Origin::Input),
            v("r", ElemType::I64, 0, Origin::Size),
            v("c", ElemType::I64, 0, Origin::Size),
            v("val", ElemType::F32, rank, Origin::Computed),
            v("idx", ElemType::I64, rank, Origin::Computed),
        ],
        steps: vec![Step::Kernel(Kernel {
            kind: if scan { KernelKind::Scan } else { KernelKind::Reduce },
            space: vec![Arg::Value(1), Arg::Value(2)],
            elem,
            lanes: vec![Lane { dst: 3, op: head }, Lane { dst: 4, op: LaneOp::Part }],
            span: None,
            contraction: None,
            view_of: None,
        })],
        outputs: vec![("val".into(), 3), ("idx".into(), 4)],
    }
}

/// The composition of affine maps `x -> m x + c` over `(m, c)` groups of `i64` (wrapping):
/// `\(m1, c1) (m2, c2) -> (m1 * m2, c1 * m2 + c2)`, associative and not commutative, so a
/// fold that combines out of order gives another result.
pub fn affine_op() -> Func {
    use BinOp::{Add, Mul};
    let i = ElemType::I64;
    Func {
        params: vec![i; 4],
        reg_types: vec![i; 7],
        body: Block {
            insts: vec![
                Inst::Binary { dst: 4, op: Mul, a: 0, b: 2 },
                Inst::Binary { dst: 5, op: Mul, a: 1, b: 2 },
                Inst::Binary { dst: 6, op: Add, a: 5, b: 3 },
            ],
        },
        ret: vec![4, 6],
        spans: vec![],
    }
}

/// A plan over `a, b : i64[r, c]` with one kernel over `[r, c]` of element `(a[p, q],
/// b[p, q])` folded by [`affine_op`] from `(1, 0)` into `m` and `k`: per row (rank 1), or
/// scanned (`scan`, rank 2; `exclusive` for an exclusive scan).
pub fn group_affine(scan: bool, exclusive: bool) -> Plan {
    let v = |name: &str, elem, rank, origin| ValueInfo { name: name.into(), elem, rank, origin, span: None };
    let i = ElemType::I64;
    let ne = Func {
        params: vec![],
        reg_types: vec![i, i],
        body: Block {
            insts: vec![
                Inst::Const { dst: 0, value: Scalar::I64(1) },
                Inst::Const { dst: 1, value: Scalar::I64(0) },
            ],
        },
        ret: vec![0, 1],
        spans: vec![],
    };
    let op = affine_op();
    let head = if scan { LaneOp::Scan { op, ne, exclusive } } else { LaneOp::Reduce { op, ne } };
    let rank = if scan { 2 } else { 1 };
    let elem = Func {
        params: vec![i, i],
        reg_types: vec![i; 4],
        body: Block {
            insts: vec![
                Inst::Read { dst: 2, array: 0, index: vec![0, 1] },
                Inst::Read { dst: 3, array: 1, index: vec![0, 1] },
            ],
        },
        ret: vec![2, 3],
        spans: vec![],
    };
    Plan {
        values: vec![
            v("a", i, 2, Origin::Input),
            v("b", i, 2, Origin::Input),
            v("r", i, 0, Origin::Size),
            v("c", i, 0, Origin::Size),
            v("m", i, rank, Origin::Computed),
            v("k", i, rank, Origin::Computed),
        ],
        steps: vec![Step::Kernel(Kernel {
            kind: if scan { KernelKind::Scan } else { KernelKind::Reduce },
            space: vec![Arg::Value(2), Arg::Value(3)],
            elem,
            lanes: vec![Lane { dst: 4, op: head }, Lane { dst: 5, op: LaneOp::Part }],
            span: None,
            contraction: None,
            view_of: None,
        })],
        outputs: vec![("m".into(), 4), ("k".into(), 5)],
    }
}

/// A plan over `off : i64[m + 1]` and `xs : f64[n]` with one kernel over `[m]` whose point
/// `s` sums `xs[off[s] .. off[s + 1]]` in a loop of `off[s + 1] - off[s]` trips, into `y`
/// (a segmented sum, as `reduce_segments (+) 0 off xs` lowers; the size `m` is an input).
pub fn segment_sum() -> Plan {
    let v = |name: &str, elem, rank, origin| ValueInfo { name: name.into(), elem, rank, origin, span: None };
    let (i, f) = (ElemType::I64, ElemType::F64);
    let bin = |dst, op, a, b| Inst::Binary { dst, op, a, b };
    let elem = Func {
        params: vec![i],
        reg_types: vec![i, i, i, i, i, i, f, i, f, i, f, f, i, f],
        body: Block {
            insts: vec![
                Inst::Const { dst: 1, value: Scalar::I64(1) },
                bin(2, BinOp::Add, 0, 1),
                Inst::Read { dst: 3, array: 0, index: vec![2] },
                Inst::Read { dst: 4, array: 0, index: vec![0] },
                bin(5, BinOp::Sub, 3, 4),
                Inst::Const { dst: 6, value: Scalar::F64(0.0) },
                Inst::Loop {
                    dsts: vec![12, 13],
                    count: 5,
                    inits: vec![4, 6],
                    vars: vec![7, 8],
                    body: Block {
                        insts: vec![
                            bin(9, BinOp::Add, 7, 1),
                            Inst::Read { dst: 10, array: 1, index: vec![7] },
                            bin(11, BinOp::Add, 8, 10),
                        ],
                    },
                    nexts: vec![9, 11],
                },
            ],
        },
        ret: vec![13],
        spans: vec![],
    };
    Plan {
        values: vec![
            v("off", i, 1, Origin::Input),
            v("xs", f, 1, Origin::Input),
            v("m", i, 0, Origin::Size),
            v("y", f, 1, Origin::Computed),
        ],
        steps: vec![Step::Kernel(Kernel {
            kind: KernelKind::Generate,
            space: vec![Arg::Value(2)],
            elem,
            lanes: vec![Lane { dst: 3, op: LaneOp::Generate }],
            span: None,
            contraction: None,
            view_of: None,
        })],
        outputs: vec![("y".into(), 3)],
    }
}

/// An element function over `[h, w]` (parameters `i`, `j`; `h` is value 2, `w` value 3)
/// returning the edge tests of a stencil: `j == 0`, `j == w - 1` and `i == 0`
/// ([`Func::edge_split`]), and the space.
pub fn edge_stencil() -> (Func, Vec<Arg>) {
    let (i, b) = (ElemType::I64, ElemType::Bool);
    let bin = |dst, op, a, b| Inst::Binary { dst, op, a, b };
    let f = Func {
        params: vec![i, i],
        reg_types: vec![i, i, i, b, i, i, i, b, b],
        body: Block {
            insts: vec![
                Inst::Const { dst: 2, value: Scalar::I64(0) },
                bin(3, BinOp::Eq, 1, 2),
                Inst::Load { dst: 4, value: 3 },
                Inst::Const { dst: 5, value: Scalar::I64(1) },
                bin(6, BinOp::Sub, 4, 5),
                bin(7, BinOp::Eq, 6, 1),
                bin(8, BinOp::Eq, 0, 2),
            ],
        },
        ret: vec![3, 7, 8],
        spans: vec![],
    };
    (f, vec![Arg::Value(2), Arg::Value(3)])
}

/// An element function over `[p, q, r]` (values 1, 2 and 3) reading `f32` array 0 at the
/// point and returning `sqrt (0 - log x)` of it ([`Func::flat_reads`]), and the space.
pub fn flat_map() -> (Func, Vec<Arg>) {
    let (i, f) = (ElemType::I64, ElemType::F32);
    let f = Func {
        params: vec![i, i, i],
        reg_types: vec![i, i, i, f, f, f, f, f],
        body: Block {
            insts: vec![
                Inst::Read { dst: 3, array: 0, index: vec![0, 1, 2] },
                Inst::Const { dst: 4, value: Scalar::F32(0.0) },
                Inst::Call { dst: 5, f: ScalarFn::Log, args: vec![3] },
                Inst::Binary { dst: 6, op: BinOp::Sub, a: 4, b: 5 },
                Inst::Call { dst: 7, f: ScalarFn::Sqrt, args: vec![6] },
            ],
        },
        ret: vec![7],
        spans: vec![],
    };
    (f, vec![Arg::Value(1), Arg::Value(2), Arg::Value(3)])
}

/// An element function over `[c, r]` (parameters `j`, `i`) reading `f32` array 0 of shape
/// `[r, c]` across its rows, `a[i, j]` ([`Func::walks_columns`]): a column sum's element.
pub fn column_sum() -> Func {
    let (i, f) = (ElemType::I64, ElemType::F32);
    Func {
        params: vec![i, i],
        reg_types: vec![i, i, f],
        body: Block { insts: vec![Inst::Read { dst: 2, array: 0, index: vec![1, 0] }] },
        ret: vec![2],
        spans: vec![],
    }
}
