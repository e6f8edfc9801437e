//! `plan::dot::to_dot` on a hand-built two-kernel plan: `e = generate (exp xs)`, then
//! `s = reduce (+) 0 e`.

use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::dot::to_dot;
use eqfuse_ir::plan::{
    Arg, Block, Func, Inst, Kernel, KernelKind, Lane, LaneOp, Origin, Plan, Step, ValueInfo,
};
use eqfuse_ir::{BinOp, ElemType, Scalar};

use ElemType::{F32, I64};

fn value(name: &str, elem: ElemType, rank: usize, origin: Origin) -> ValueInfo {
    ValueInfo { name: name.into(), elem, rank, origin, span: None }
}

/// xs (0), n (1), e (2), s (3).
fn two_kernels() -> Plan {
    let values = vec![
        value("xs", F32, 1, Origin::Input),
        value("n", I64, 0, Origin::Size),
        value("e", F32, 1, Origin::Computed),
        value("s", F32, 0, Origin::Computed),
    ];
    // elem(r0) { r1 = xs[r0]; r2 = exp r1 } -> r2
    let gen = Kernel {
        kind: KernelKind::Generate,
        space: vec![Arg::Value(1)],
        elem: Func {
            params: vec![I64],
            reg_types: vec![I64, F32, F32],
            body: Block {
                insts: vec![
                    Inst::Read { dst: 1, array: 0, index: vec![0] },
                    Inst::Call { dst: 2, f: ScalarFn::Exp, args: vec![1] },
                ],
            },
            ret: vec![2],
            spans: Vec::new(),
        },
        lanes: vec![Lane { dst: 2, op: LaneOp::Generate }],
        span: None,
        contraction: None,
        view_of: None,
    };
    // elem(r0) { r1 = e[r0] } -> r1; reduce (+) 0
    let red = Kernel {
        kind: KernelKind::Reduce,
        space: vec![Arg::Value(1)],
        elem: Func {
            params: vec![I64],
            reg_types: vec![I64, F32],
            body: Block { insts: vec![Inst::Read { dst: 1, array: 2, index: vec![0] }] },
            ret: vec![1],
            spans: Vec::new(),
        },
        lanes: vec![Lane {
            dst: 3,
            op: LaneOp::Reduce {
                op: Func {
                    params: vec![F32, F32],
                    reg_types: vec![F32, F32, F32],
                    body: Block { insts: vec![Inst::Binary { dst: 2, op: BinOp::Add, a: 0, b: 1 }] },
                    ret: vec![2],
                    spans: Vec::new(),
                },
                ne: Func {
                    params: vec![],
                    reg_types: vec![F32],
                    body: Block { insts: vec![Inst::Const { dst: 0, value: Scalar::F32(0.0) }] },
                    ret: vec![0],
                    spans: Vec::new(),
                },
            },
        }],
        span: None,
        contraction: None,
        view_of: None,
    };
    Plan { values, steps: vec![Step::Kernel(gen), Step::Kernel(red)], outputs: vec![("s".into(), 3)] }
}

#[test]
fn two_kernel_plan_as_dot() {
    let dot = to_dot(&two_kernels());
    assert!(dot.starts_with("digraph"), "{dot}");
    assert!(dot.trim_end().ends_with('}'), "{dot}");
    let opens = dot.matches('{').count();
    let closes = dot.matches('}').count();
    assert_eq!(opens, closes, "unbalanced braces:\n{dot}");

    // the two kernels as boxes, with kind and extents
    assert!(dot.contains("k0 [label=\"k0 generate [n]\", shape=box]"), "{dot}");
    assert!(dot.contains("k1 [label=\"k1 reduce [n]\", shape=box]"), "{dot}");
    // the input, the output
    assert!(dot.contains("in0 [label=\"xs\", shape=ellipse]"), "{dot}");
    assert!(dot.contains("out0 [label=\"s\", shape=doublecircle]"), "{dot}");
    // edges: input -> generate, generate -> reduce (the intermediate e), reduce -> output
    assert!(dot.contains("in0 -> k0 [label=\"xs\"]"), "{dot}");
    assert!(dot.contains("k0 -> k1 [label=\"e\"]"), "{dot}");
    assert!(dot.contains("k1 -> out0 [label=\"s\"]"), "{dot}");
    // sizes are not nodes; nothing else reads xs
    assert!(!dot.contains("in0 -> k1"), "{dot}");
    assert_eq!(dot.matches(" -> ").count(), 3, "{dot}");
    // deterministic
    assert_eq!(dot, to_dot(&two_kernels()));
}

#[test]
fn labels_escape_quotes() {
    let mut plan = two_kernels();
    plan.values[0].name = "x\"s".into();
    plan.outputs[0].0 = "say \"hi\"".into();
    let dot = to_dot(&plan);
    assert!(dot.contains("[label=\"x\\\"s\", shape=ellipse]"), "{dot}");
    assert!(dot.contains("[label=\"say \\\"hi\\\"\", shape=doublecircle]"), "{dot}");
    assert!(dot.contains("in0 -> k0 [label=\"x\\\"s\"]"), "{dot}");
}

#[test]
fn host_scalars_are_small_ellipses() {
    let mut plan = two_kernels();
    // m = n (a host scalar), read by nothing but made an output
    plan.values.push(value("m", I64, 0, Origin::Computed));
    plan.steps.insert(
        0,
        Step::Scalar {
            dst: 4,
            body: Func {
                params: vec![],
                reg_types: vec![I64],
                body: Block { insts: vec![Inst::Load { dst: 0, value: 1 }] },
                ret: vec![0],
                spans: Vec::new(),
            },
        },
    );
    plan.outputs.push(("m".into(), 4));
    let dot = to_dot(&plan);
    assert!(dot.contains("s0 [label=\"s0 m\", shape=ellipse"), "{dot}");
    assert!(dot.contains("s0 -> out1 [label=\"m\"]"), "{dot}");
}

#[test]
fn an_if_draws_its_branches_as_clusters() {
    let mut plan = two_kernels();
    // c (4): a bool input; r (5): if c then e else xs
    plan.values.push(value("c", ElemType::Bool, 0, Origin::Input));
    plan.values.push(value("r", F32, 1, Origin::Computed));
    let Step::Kernel(gen) = plan.steps.remove(0) else { unreachable!() };
    plan.steps.insert(
        0,
        Step::If {
            cond: 4,
            then_steps: vec![Step::Kernel(gen)],
            then_value: 2,
            else_steps: vec![],
            else_value: 0,
            dst: 5,
        },
    );
    plan.outputs.push(("r".into(), 5));
    let dot = to_dot(&plan);
    assert_eq!(dot.matches('{').count(), dot.matches('}').count(), "{dot}");
    assert!(dot.contains("subgraph cluster_if0_then {"), "{dot}");
    assert!(dot.contains("subgraph cluster_if0_else {"), "{dot}");
    assert!(dot.contains("if0 [label=\"if0 r = if c\", shape=diamond]"), "{dot}");
    assert!(dot.contains("in4 -> if0 [label=\"c\"]"), "{dot}");
    assert!(dot.contains("k0 -> if0 [label=\"e\"]"), "{dot}");
    assert!(dot.contains("in0 -> if0 [label=\"xs\"]"), "{dot}");
    assert!(dot.contains("in0 -> k0 [label=\"xs\"]"), "{dot}");
    assert!(dot.contains("if0 -> out1 [label=\"r\"]"), "{dot}");
}
