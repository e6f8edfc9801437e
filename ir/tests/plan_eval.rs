//! The plan interpreter (`eqfuse_ir::plan::eval`) on hand-built plans, checked against the
//! reference interpreter on the equivalent `.eqf` programs, plus the errors a plan raises
//! and the printed form of a plan.
#![allow(clippy::unwrap_used)]

use eqfuse_ir::bind::bind_inputs;
use eqfuse_ir::check::check;
use eqfuse_ir::interp::interpret;
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::parse::parse;
use eqfuse_ir::plan::eval::{eval, eval_with};
use eqfuse_ir::plan::{
    Arg, Block, Func, Inst, Kernel, Lane, LaneOp, Origin, PermuteDest, Plan, Reg, Step, ValueId, ValueInfo,
};
use eqfuse_ir::{BinOp, Code, ElemType, Error, Limits, Scalar, Value};
use indexmap::IndexMap;
use ndarray::{ArrayD, IxDyn};

use ElemType::{Bool, F32, F64, I64};

// ---------------------------------------------------------------- function builder

/// Builds a [`Func`]: registers are allocated in order, parameters first.
struct FB {
    params: Vec<ElemType>,
    reg_types: Vec<ElemType>,
    blocks: Vec<Vec<Inst>>,
}

impl FB {
    fn new(params: &[ElemType]) -> FB {
        FB { params: params.to_vec(), reg_types: params.to_vec(), blocks: vec![Vec::new()] }
    }

    fn emit(&mut self, t: ElemType, f: impl FnOnce(Reg) -> Inst) -> Reg {
        let r = self.reg_types.len() as Reg;
        self.reg_types.push(t);
        let inst = f(r);
        self.blocks.last_mut().unwrap().push(inst);
        r
    }

    fn ty(&self, r: Reg) -> ElemType {
        self.reg_types[r as usize]
    }

    fn c(&mut self, value: Scalar) -> Reg {
        self.emit(value.elem_type(), |dst| Inst::Const { dst, value })
    }

    fn bin(&mut self, op: BinOp, a: Reg, b: Reg) -> Reg {
        let t = if op.is_comparison() { Bool } else { self.ty(a) };
        self.emit(t, |dst| Inst::Binary { dst, op, a, b })
    }

    fn call(&mut self, f: ScalarFn, t: ElemType, args: &[Reg]) -> Reg {
        self.emit(t, |dst| Inst::Call { dst, f, args: args.to_vec() })
    }

    fn read(&mut self, array: ValueId, t: ElemType, index: &[Reg]) -> Reg {
        self.emit(t, |dst| Inst::Read { dst, array, index: index.to_vec() })
    }

    fn load(&mut self, value: ValueId, t: ElemType) -> Reg {
        self.emit(t, |dst| Inst::Load { dst, value })
    }

    fn dim(&mut self, array: ValueId, axis: Reg) -> Reg {
        self.emit(I64, |dst| Inst::Dim { dst, array, axis })
    }

    /// Runs `f` with a fresh current block and returns the block.
    fn block(&mut self, f: impl FnOnce(&mut FB) -> Vec<Reg>) -> (Block, Vec<Reg>) {
        self.blocks.push(Vec::new());
        let rets = f(self);
        let insts = self.blocks.pop().unwrap();
        (Block { insts }, rets)
    }

    fn if_(
        &mut self,
        t: ElemType,
        cond: Reg,
        then: impl FnOnce(&mut FB) -> Reg,
        els: impl FnOnce(&mut FB) -> Reg,
    ) -> Reg {
        let (then_block, tr) = self.block(|fb| vec![then(fb)]);
        let (else_block, er) = self.block(|fb| vec![els(fb)]);
        self.emit(t, |dst| Inst::If { dst, cond, then_block, then_ret: tr[0], else_block, else_ret: er[0] })
    }

    /// `iterate`: the body gets the state registers and returns the next state.
    fn loop_(
        &mut self,
        count: Reg,
        inits: &[Reg],
        body: impl FnOnce(&mut FB, &[Reg]) -> Vec<Reg>,
    ) -> Vec<Reg> {
        let vars: Vec<Reg> = inits
            .iter()
            .map(|&r| {
                let t = self.ty(r);
                let v = self.reg_types.len() as Reg;
                self.reg_types.push(t);
                v
            })
            .collect();
        let (body, nexts) = self.block(|fb| body(fb, &vars));
        let dsts: Vec<Reg> = inits
            .iter()
            .map(|&r| {
                let t = self.ty(r);
                let v = self.reg_types.len() as Reg;
                self.reg_types.push(t);
                v
            })
            .collect();
        self.blocks.last_mut().unwrap().push(Inst::Loop {
            dsts: dsts.clone(),
            count,
            inits: inits.to_vec(),
            vars,
            body,
            nexts,
        });
        dsts
    }

    fn done(mut self, ret: &[Reg]) -> Func {
        let insts = self.blocks.pop().unwrap();
        Func {
            params: self.params,
            reg_types: self.reg_types,
            body: Block { insts },
            ret: ret.to_vec(),
            spans: Vec::new(),
        }
    }
}

/// `(a, b) -> a op b` on `t`.
fn op_func(t: ElemType, op: BinOp) -> Func {
    let mut fb = FB::new(&[t, t]);
    let r = fb.bin(op, 0, 1);
    fb.done(&[r])
}

/// `(a, b) -> f(a, b)` on `t`.
fn call_func(t: ElemType, f: ScalarFn) -> Func {
    let mut fb = FB::new(&[t, t]);
    let r = fb.call(f, t, &[0, 1]);
    fb.done(&[r])
}

/// `() -> value`.
fn const_func(value: Scalar) -> Func {
    let mut fb = FB::new(&[]);
    let r = fb.c(value);
    fb.done(&[r])
}

// ---------------------------------------------------------------- plan builder

struct PB {
    plan: Plan,
}

impl PB {
    fn new() -> PB {
        PB { plan: Plan { values: Vec::new(), steps: Vec::new(), outputs: Vec::new() } }
    }

    fn value(&mut self, name: &str, elem: ElemType, rank: usize, origin: Origin) -> ValueId {
        self.plan.values.push(ValueInfo { name: name.to_string(), elem, rank, origin, span: None });
        self.plan.values.len() - 1
    }

    fn input(&mut self, name: &str, elem: ElemType, rank: usize) -> ValueId {
        self.value(name, elem, rank, Origin::Input)
    }

    fn size(&mut self, name: &str) -> ValueId {
        self.value(name, I64, 0, Origin::Size)
    }

    fn computed(&mut self, name: &str, elem: ElemType, rank: usize) -> ValueId {
        self.value(name, elem, rank, Origin::Computed)
    }

    fn scalar(&mut self, dst: ValueId, body: Func) {
        self.plan.steps.push(Step::Scalar { dst, body });
    }

    fn kernel(&mut self, kind: &'static str, space: Vec<Arg>, elem: Func, lanes: Vec<(ValueId, LaneOp)>) {
        let lanes = lanes.into_iter().map(|(dst, op)| Lane { dst, op }).collect();
        self.plan.steps.push(Step::Kernel(Kernel {
            kind: eqfuse_ir::plan::KernelKind::from_name(kind).expect("a kernel kind"),
            space,
            elem,
            lanes,
            span: None,
            contraction: None,
            view_of: None,
        }));
    }

    fn output(&mut self, name: &str, v: ValueId) {
        self.plan.outputs.push((name.to_string(), v));
    }
}

// ---------------------------------------------------------------- running both

fn arr<T: Clone>(shape: &[usize], v: &[T]) -> ArrayD<T> {
    ArrayD::from_shape_vec(IxDyn(shape), v.to_vec()).unwrap()
}
fn f32s(v: &[f32]) -> Value {
    Value::F32(arr(&[v.len()], v))
}
fn f64s(v: &[f64]) -> Value {
    Value::F64(arr(&[v.len()], v))
}
fn i64s(v: &[i64]) -> Value {
    Value::I64(arr(&[v.len()], v))
}

fn inputs(v: Vec<(&str, Value)>) -> IndexMap<String, Value> {
    v.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The reference interpreter's result on `src` and the sizes the inputs bind.
fn reference(
    src: &str,
    inputs: &IndexMap<String, Value>,
) -> (Result<IndexMap<String, Value>, Error>, IndexMap<String, i64>) {
    let prog = parse(src).unwrap_or_else(|e| panic!("parse: {e}\n{src}"));
    let checked = check(&prog).unwrap_or_else(|e| panic!("check: {e}\n{src}"));
    let sizes = bind_inputs(&checked, inputs, &Limits::default()).unwrap().sizes;
    (interpret(&checked, inputs), sizes)
}

/// Bitwise equality of two values (element type, shape, every element's bits).
fn assert_same(got: &Value, want: &Value, what: &str) {
    assert_eq!(got.elem_type(), want.elem_type(), "{what}: element type");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let bits = |s: &Scalar| match *s {
        Scalar::F32(x) => u64::from(x.to_bits()),
        Scalar::F64(x) => x.to_bits(),
        other => other.as_i128().map_or(0, |v| v as u64),
    };
    let (g, w) = (got.to_scalars(), want.to_scalars());
    let gb: Vec<u64> = g.iter().map(bits).collect();
    let wb: Vec<u64> = w.iter().map(bits).collect();
    assert_eq!(gb, wb, "{what}: elements {g:?} but the reference gives {w:?}");
}

/// Runs `plan` and the reference on `src`, requires identical outputs, returns them.
fn both(src: &str, plan: &Plan, ins: &IndexMap<String, Value>) -> IndexMap<String, Value> {
    let (want, sizes) = reference(src, ins);
    let want = want.unwrap_or_else(|e| panic!("reference failed: {e}\n{src}"));
    let got = eval(plan, ins, &sizes).unwrap_or_else(|e| panic!("plan failed: {e}\n{plan}"));
    assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>());
    for (name, w) in &want {
        assert_same(&got[name], w, name);
    }
    got
}

/// Runs both, requires both to fail with `code`; returns the plan's error.
fn both_err(src: &str, plan: &Plan, ins: &IndexMap<String, Value>, code: Code) -> Error {
    let (want, sizes) = reference(src, ins);
    match want {
        Ok(v) => panic!("the reference succeeded: {v:?}\n{src}"),
        Err(e) => assert_eq!(e.code, code, "reference: {e}"),
    }
    match eval(plan, ins, &sizes) {
        Ok(v) => panic!("the plan succeeded: {v:?}\n{plan}"),
        Err(e) => {
            assert_eq!(e.code, code, "plan: {e}");
            e
        }
    }
}

/// Runs the plan alone (sizes given), requiring an error of `code`.
fn plan_err(plan: &Plan, ins: &IndexMap<String, Value>, sizes: &[(&str, i64)], code: Code) -> Error {
    let sizes: IndexMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    match eval(plan, ins, &sizes) {
        Ok(v) => panic!("the plan succeeded: {v:?}\n{plan}"),
        Err(e) => {
            assert_eq!(e.code, code, "plan: {e}");
            e
        }
    }
}

// ---------------------------------------------------------------- plans

const DOTP: &str = "input xs : f32[n]\ninput ys : f32[n]\n\
                    output dot = reduce (+) 0 (map (\\x y -> x * y) xs ys)";

fn dotp_plan() -> Plan {
    let mut pb = PB::new();
    let xs = pb.input("xs", F32, 1);
    let ys = pb.input("ys", F32, 1);
    let n = pb.size("n");
    let dot = pb.computed("dot", F32, 0);
    let mut fb = FB::new(&[I64]);
    let a = fb.read(xs, F32, &[0]);
    let b = fb.read(ys, F32, &[0]);
    let p = fb.bin(BinOp::Mul, a, b);
    let elem = fb.done(&[p]);
    let op = LaneOp::Reduce { op: op_func(F32, BinOp::Add), ne: const_func(Scalar::F32(0.0)) };
    pb.kernel("reduce", vec![Arg::Value(n)], elem, vec![(dot, op)]);
    pb.output("dot", dot);
    pb.plan
}

#[test]
fn map_over_a_2d_space() {
    let src = "input m : f32[r, c]\noutput y = map (\\x -> x * 2.0 + 1.5) m";
    let mut pb = PB::new();
    let m = pb.input("m", F32, 2);
    let r = pb.size("r");
    let c = pb.size("c");
    let y = pb.computed("y", F32, 2);
    let mut fb = FB::new(&[I64, I64]);
    let x = fb.read(m, F32, &[0, 1]);
    let two = fb.c(Scalar::F32(2.0));
    let t = fb.bin(BinOp::Mul, x, two);
    let one = fb.c(Scalar::F32(1.5));
    let out = fb.bin(BinOp::Add, t, one);
    pb.kernel("map", vec![Arg::Value(r), Arg::Value(c)], fb.done(&[out]), vec![(y, LaneOp::Generate)]);
    pb.output("y", y);
    let plan = pb.plan;

    let m23 = Value::F32(arr(&[2, 3], &[1.0, -2.0, 0.25, 1e30, f32::INFINITY, 7.0]));
    let got = both(src, &plan, &inputs(vec![("m", m23)]));
    assert_eq!(got["y"].shape(), &[2, 3]);
    both(src, &plan, &inputs(vec![("m", Value::F32(arr(&[0, 3], &[])))]));
    both(src, &plan, &inputs(vec![("m", Value::F32(arr(&[3, 0], &[])))]));
}

#[test]
fn dotp_as_a_reduce_lane_is_bit_identical() {
    let plan = dotp_plan();
    // Sums whose value depends on the order of evaluation.
    let xs = f32s(&[1e8, 1.0, -1e8, 1.0, 0.1, 3.3, -7.7, 1e-3]);
    let ys = f32s(&[1.0, 1.0, 1.0, 3.0, 0.3, 0.7, 1.1, 5.0]);
    let got = both(DOTP, &plan, &inputs(vec![("xs", xs), ("ys", ys)]));
    assert!(got["dot"].shape().is_empty());
    // An empty reduction gives the neutral element.
    let got = both(DOTP, &plan, &inputs(vec![("xs", f32s(&[])), ("ys", f32s(&[]))]));
    assert_eq!(got["dot"].get_flat(0), Some(Scalar::F32(0.0)));
}

#[test]
fn reduce_rows_of_a_2d_space() {
    let src = "input m : i64[r, c]\noutput s = reduce (\\a b -> a * 10 + b) 0 m";
    let mut pb = PB::new();
    let m = pb.input("m", I64, 2);
    let r = pb.size("r");
    let c = pb.size("c");
    let s = pb.computed("s", I64, 1);
    let mut fb = FB::new(&[I64, I64]);
    let x = fb.read(m, I64, &[0, 1]);
    let elem = fb.done(&[x]);
    let mut ob = FB::new(&[I64, I64]);
    let ten = ob.c(Scalar::I64(10));
    let t = ob.bin(BinOp::Mul, 0, ten);
    let o = ob.bin(BinOp::Add, t, 1);
    let op = LaneOp::Reduce { op: ob.done(&[o]), ne: const_func(Scalar::I64(0)) };
    pb.kernel("reduce", vec![Arg::Value(r), Arg::Value(c)], elem, vec![(s, op)]);
    pb.output("s", s);
    let plan = pb.plan;
    let got = both(src, &plan, &inputs(vec![("m", Value::I64(arr(&[2, 3], &[1, 2, 3, 4, 5, 6])))]));
    assert_eq!(got["s"].to_scalars(), vec![Scalar::I64(123), Scalar::I64(456)]);
    // Empty rows give `ne`, no rows give an empty result.
    both(src, &plan, &inputs(vec![("m", Value::I64(arr(&[3, 0], &[])))]));
    both(src, &plan, &inputs(vec![("m", Value::I64(arr(&[0, 2], &[])))]));
}

#[test]
fn inclusive_and_exclusive_scans() {
    let src = "input m : f32[r, c]\ninput xs : i64[n]\n\
               output a = scan (+) 0 m\n\
               output b = scan_exclusive (\\p q -> p * 10 + q) 5 xs";
    let mut pb = PB::new();
    let m = pb.input("m", F32, 2);
    let xs = pb.input("xs", I64, 1);
    let r = pb.size("r");
    let c = pb.size("c");
    let n = pb.size("n");
    let a = pb.computed("a", F32, 2);
    let b = pb.computed("b", I64, 1);
    let mut fb = FB::new(&[I64, I64]);
    let x = fb.read(m, F32, &[0, 1]);
    let op =
        LaneOp::Scan { op: op_func(F32, BinOp::Add), ne: const_func(Scalar::F32(0.0)), exclusive: false };
    pb.kernel("scan", vec![Arg::Value(r), Arg::Value(c)], fb.done(&[x]), vec![(a, op)]);
    let mut fb = FB::new(&[I64]);
    let x = fb.read(xs, I64, &[0]);
    let mut ob = FB::new(&[I64, I64]);
    let ten = ob.c(Scalar::I64(10));
    let t = ob.bin(BinOp::Mul, 0, ten);
    let o = ob.bin(BinOp::Add, t, 1);
    let op = LaneOp::Scan { op: ob.done(&[o]), ne: const_func(Scalar::I64(5)), exclusive: true };
    pb.kernel("scan", vec![Arg::Value(n)], fb.done(&[x]), vec![(b, op)]);
    pb.output("a", a);
    pb.output("b", b);
    let plan = pb.plan;

    let mv = Value::F32(arr(&[2, 4], &[1e8, 1.0, -1e8, 1.0, 0.1, 0.2, 0.3, 0.4]));
    let got = both(src, &plan, &inputs(vec![("m", mv), ("xs", i64s(&[1, 2, 3]))]));
    assert_eq!(got["b"].to_scalars(), vec![Scalar::I64(5), Scalar::I64(51), Scalar::I64(512)]);
    let mv = Value::F32(arr(&[2, 0], &[]));
    both(src, &plan, &inputs(vec![("m", mv), ("xs", i64s(&[]))]));
}

#[test]
fn filter_of_a_fused_map() {
    let src = "input xs : i64[n]\noutput ys = filter (\\x -> x % 2 == 0) (map (\\x -> x * 3 + 1) xs)";
    let mut pb = PB::new();
    let xs = pb.input("xs", I64, 1);
    let n = pb.size("n");
    let ys = pb.computed("ys", I64, 1);
    let mut fb = FB::new(&[I64]);
    let x = fb.read(xs, I64, &[0]);
    let three = fb.c(Scalar::I64(3));
    let t = fb.bin(BinOp::Mul, x, three);
    let one = fb.c(Scalar::I64(1));
    let e = fb.bin(BinOp::Add, t, one);
    let mut pfb = FB::new(&[I64]);
    let two = pfb.c(Scalar::I64(2));
    let rem = pfb.bin(BinOp::Rem, 0, two);
    let zero = pfb.c(Scalar::I64(0));
    let p = pfb.bin(BinOp::Eq, rem, zero);
    let op = LaneOp::Filter { pred: pfb.done(&[p]) };
    pb.kernel("filter", vec![Arg::Value(n)], fb.done(&[e]), vec![(ys, op)]);
    pb.output("ys", ys);
    let plan = pb.plan;
    let got = both(src, &plan, &inputs(vec![("xs", i64s(&[1, 2, 3, 4, 5, -3, 0]))]));
    assert_eq!(
        got["ys"].to_scalars(),
        vec![Scalar::I64(4), Scalar::I64(10), Scalar::I64(16), Scalar::I64(-8)]
    );
    both(src, &plan, &inputs(vec![("xs", i64s(&[]))]));
    both(src, &plan, &inputs(vec![("xs", i64s(&[2, 4]))]));
}

/// `h = permute (+) zeros target ones` with `zeros` computed by its own kernel.
fn histogram_plan(guarded: bool) -> Plan {
    let mut pb = PB::new();
    let ks = pb.input("ks", I64, 1);
    let n = pb.size("n");
    let zeros = pb.computed("zeros", I64, 1);
    let h = pb.computed("h", I64, 1);
    let mut fb = FB::new(&[I64]);
    let z = fb.c(Scalar::I64(0));
    pb.kernel("generate", vec![Arg::Const(4)], fb.done(&[z]), vec![(zeros, LaneOp::Generate)]);
    let mut fb = FB::new(&[I64]);
    let one = fb.c(Scalar::I64(1));
    let elem = fb.done(&[one]);
    let mut tb = FB::new(&[I64]);
    let k = tb.read(ks, I64, &[0]);
    let t = if guarded {
        let four = tb.c(Scalar::I64(4));
        let lt = tb.bin(BinOp::Lt, k, four);
        tb.if_(I64, lt, |_| k, |fb| fb.c(Scalar::I64(-1)))
    } else {
        k
    };
    let op = LaneOp::Permute {
        op: op_func(I64, BinOp::Add),
        dest: PermuteDest::Array(zeros),
        target: tb.done(&[t]),
    };
    pb.kernel("permute", vec![Arg::Value(n)], elem, vec![(h, op)]);
    pb.output("h", h);
    pb.plan
}

#[test]
fn permute_histogram_with_drops() {
    let src = "input ks : i64[n]\n\
               output h = permute (+) (fill [4] 0) (\\i -> if ks[i] < 4 then ks[i] else -1) (fill [n] 1)";
    let plan = histogram_plan(true);
    let got = both(src, &plan, &inputs(vec![("ks", i64s(&[0, 3, 5, 1, 3, 9, 3]))]));
    assert_eq!(got["h"].to_scalars(), [1, 1, 0, 3].map(Scalar::I64).to_vec());
    both(src, &plan, &inputs(vec![("ks", i64s(&[]))]));
}

#[test]
fn permute_target_out_of_bounds() {
    let src = "input ks : i64[n]\noutput h = permute (+) (fill [4] 0) (\\i -> ks[i]) (fill [n] 1)";
    let plan = histogram_plan(false);
    // -1 drops the element in both.
    let got = both(src, &plan, &inputs(vec![("ks", i64s(&[0, -1, 2, -1]))]));
    assert_eq!(got["h"].to_scalars(), [1, 0, 1, 0].map(Scalar::I64).to_vec());
    let e = both_err(src, &plan, &inputs(vec![("ks", i64s(&[0, -1, 4, 1]))]), Code::Index);
    assert!(e.message.contains("`h`") && e.message.contains("target 4"), "{e}");
    assert!(e.message.contains("[4]") && e.message.contains("[2]"), "{e}");
    both_err(src, &plan, &inputs(vec![("ks", i64s(&[-2]))]), Code::Index);
}

#[test]
fn multi_lane_kernel_two_reductions_and_a_map_in_one_pass() {
    let src = "input xs : f64[n]\n\
               output s = reduce (+) 0 xs\n\
               output mx = reduce max (-inf) xs\n\
               output sq = map (\\x -> x * x) xs";
    let mut pb = PB::new();
    let xs = pb.input("xs", F64, 1);
    let n = pb.size("n");
    let s = pb.computed("s", F64, 0);
    let mx = pb.computed("mx", F64, 0);
    let sq = pb.computed("sq", F64, 1);
    let mut fb = FB::new(&[I64]);
    let x = fb.read(xs, F64, &[0]);
    let x2 = fb.bin(BinOp::Mul, x, x);
    let elem = fb.done(&[x, x, x2]);
    let lanes = vec![
        (s, LaneOp::Reduce { op: op_func(F64, BinOp::Add), ne: const_func(Scalar::F64(0.0)) }),
        (
            mx,
            LaneOp::Reduce {
                op: call_func(F64, ScalarFn::Max),
                ne: const_func(Scalar::F64(f64::NEG_INFINITY)),
            },
        ),
        (sq, LaneOp::Generate),
    ];
    pb.kernel("reduce", vec![Arg::Value(n)], elem, lanes);
    pb.output("s", s);
    pb.output("mx", mx);
    pb.output("sq", sq);
    let plan = pb.plan;
    let got = both(src, &plan, &inputs(vec![("xs", f64s(&[0.1, 0.2, 0.3, -5.0, 1e17, 1.0, -1e17]))]));
    assert_eq!(got["mx"].get_flat(0), Some(Scalar::F64(1e17)));
    let got = both(src, &plan, &inputs(vec![("xs", f64s(&[]))]));
    assert_eq!(got["mx"].get_flat(0), Some(Scalar::F64(f64::NEG_INFINITY)));
}

/// `d = generate [n - 1] (\i -> xs[i + 1] - xs[i])` with `n - 1` a host scalar.
fn diff_plan() -> Plan {
    let mut pb = PB::new();
    let xs = pb.input("xs", F32, 1);
    let n = pb.size("n");
    let m = pb.computed("t0", I64, 0);
    let d = pb.computed("d", F32, 1);
    let mut sb = FB::new(&[]);
    let rn = sb.load(n, I64);
    let one = sb.c(Scalar::I64(1));
    let r = sb.bin(BinOp::Sub, rn, one);
    pb.scalar(m, sb.done(&[r]));
    let mut fb = FB::new(&[I64]);
    let one = fb.c(Scalar::I64(1));
    let i1 = fb.bin(BinOp::Add, 0, one);
    let a = fb.read(xs, F32, &[i1]);
    let b = fb.read(xs, F32, &[0]);
    let e = fb.bin(BinOp::Sub, a, b);
    pb.kernel("generate", vec![Arg::Value(m)], fb.done(&[e]), vec![(d, LaneOp::Generate)]);
    pb.output("d", d);
    pb.plan
}

#[test]
fn host_scalar_step_sizes_a_kernel() {
    let src = "input xs : f32[n]\noutput d = generate [n - 1] (\\i -> xs[i + 1] - xs[i])";
    let plan = diff_plan();
    let got = both(src, &plan, &inputs(vec![("xs", f32s(&[1.0, 4.0, 9.0, 16.5]))]));
    assert_eq!(got["d"].shape(), &[3]);
    both(src, &plan, &inputs(vec![("xs", f32s(&[1.0]))]));
    // n = 0: the extent is -1.
    let e = both_err(src, &plan, &inputs(vec![("xs", f32s(&[]))]), Code::Shape);
    assert!(e.message.contains("-1"), "{e}");
}

#[test]
fn untaken_branch_is_not_evaluated() {
    let src = "input xs : f32[n]\noutput y = generate [n] (\\i -> if i + 1 < n then xs[i + 1] else 0.0)";
    let mut pb = PB::new();
    let xs = pb.input("xs", F32, 1);
    let n = pb.size("n");
    let y = pb.computed("y", F32, 1);
    let mut fb = FB::new(&[I64]);
    let one = fb.c(Scalar::I64(1));
    let i1 = fb.bin(BinOp::Add, 0, one);
    let rn = fb.load(n, I64);
    let lt = fb.bin(BinOp::Lt, i1, rn);
    let e = fb.if_(F32, lt, |fb| fb.read(xs, F32, &[i1]), |fb| fb.c(Scalar::F32(0.0)));
    pb.kernel("generate", vec![Arg::Value(n)], fb.done(&[e]), vec![(y, LaneOp::Generate)]);
    pb.output("y", y);
    let plan = pb.plan;
    let got = both(src, &plan, &inputs(vec![("xs", f32s(&[1.0, 2.0, 3.0]))]));
    assert_eq!(got["y"].to_scalars(), [2.0, 3.0, 0.0].map(Scalar::F32).to_vec());
}

#[test]
fn loop_iterates() {
    let src = "input xs : i64[n]\ninput k : i64\noutput y = map (\\x -> iterate k (\\v -> v * 3 + 1) x) xs";
    let mut pb = PB::new();
    let xs = pb.input("xs", I64, 1);
    let k = pb.input("k", I64, 0);
    let n = pb.size("n");
    let y = pb.computed("y", I64, 1);
    let mut fb = FB::new(&[I64]);
    let x = fb.read(xs, I64, &[0]);
    let rk = fb.load(k, I64);
    let out = fb.loop_(rk, &[x], |fb, vars| {
        let three = fb.c(Scalar::I64(3));
        let t = fb.bin(BinOp::Mul, vars[0], three);
        let one = fb.c(Scalar::I64(1));
        vec![fb.bin(BinOp::Add, t, one)]
    });
    pb.kernel("map", vec![Arg::Value(n)], fb.done(&out), vec![(y, LaneOp::Generate)]);
    pb.output("y", y);
    let plan = pb.plan;
    let xs_v = i64s(&[0, 1, -5, i64::MAX / 2]);
    for kv in [3, 0, -2, 1, 70] {
        let ins = inputs(vec![("xs", xs_v.clone()), ("k", Value::scalar(Scalar::I64(kv)))]);
        both(src, &plan, &ins);
    }
}

#[test]
fn loop_state_is_assigned_all_at_once() {
    // fib: (a, b) -> (b, a + b), ten times from (0, 1): a = 55. Sequential assignment
    // would give a different answer.
    let mut pb = PB::new();
    let f = pb.computed("f", I64, 0);
    let g = pb.computed("g", I64, 0);
    let mut sb = FB::new(&[]);
    let a0 = sb.c(Scalar::I64(0));
    let b0 = sb.c(Scalar::I64(1));
    let count = sb.c(Scalar::I64(10));
    let out = sb.loop_(count, &[a0, b0], |fb, v| {
        let s = fb.bin(BinOp::Add, v[0], v[1]);
        vec![v[1], s]
    });
    pb.scalar(f, sb.done(&[out[0]]));
    let mut sb = FB::new(&[]);
    let a0 = sb.c(Scalar::I64(7));
    let count = sb.c(Scalar::I64(-3));
    let out = sb.loop_(count, &[a0], |fb, v| vec![fb.bin(BinOp::Mul, v[0], v[0])]);
    pb.scalar(g, sb.done(&out));
    pb.output("f", f);
    pb.output("g", g);
    let got = eval(&pb.plan, &IndexMap::new(), &IndexMap::new()).unwrap();
    assert_eq!(got["f"].get_flat(0), Some(Scalar::I64(55)));
    assert_eq!(got["g"].get_flat(0), Some(Scalar::I64(7)), "a count <= 0 runs no iteration");
}

#[test]
fn integer_division_wraps_and_by_zero_fails() {
    let src = "input a : i64[n]\ninput b : i64[n]\noutput q = map (\\x y -> x / y) a b\n\
               output r = map (\\x y -> x % y) a b";
    let mut pb = PB::new();
    let a = pb.input("a", I64, 1);
    let b = pb.input("b", I64, 1);
    let n = pb.size("n");
    let q = pb.computed("q", I64, 1);
    let r = pb.computed("r", I64, 1);
    for (dst, op) in [(q, BinOp::Div), (r, BinOp::Rem)] {
        let mut fb = FB::new(&[I64]);
        let x = fb.read(a, I64, &[0]);
        let y = fb.read(b, I64, &[0]);
        let e = fb.bin(op, x, y);
        pb.kernel("map", vec![Arg::Value(n)], fb.done(&[e]), vec![(dst, LaneOp::Generate)]);
    }
    pb.output("q", q);
    pb.output("r", r);
    let plan = pb.plan;
    let got = both(src, &plan, &inputs(vec![("a", i64s(&[i64::MIN, 7, -7])), ("b", i64s(&[-1, 2, 2]))]));
    assert_eq!(got["q"].get_flat(0), Some(Scalar::I64(i64::MIN)));
    let e =
        both_err(src, &plan, &inputs(vec![("a", i64s(&[1, 2, 3])), ("b", i64s(&[1, 0, 1]))]), Code::DivZero);
    assert!(e.message.contains("[1]"), "names the element: {e}");
}

#[test]
fn read_out_of_bounds_names_the_array() {
    let src = "input xs : f32[n]\noutput y = generate [n + 1] (\\i -> xs[i])";
    let mut pb = PB::new();
    let xs = pb.input("xs", F32, 1);
    let n = pb.size("n");
    let m = pb.computed("t0", I64, 0);
    let y = pb.computed("y", F32, 1);
    let mut sb = FB::new(&[]);
    let rn = sb.load(n, I64);
    let one = sb.c(Scalar::I64(1));
    let s = sb.bin(BinOp::Add, rn, one);
    pb.scalar(m, sb.done(&[s]));
    let mut fb = FB::new(&[I64]);
    let x = fb.read(xs, F32, &[0]);
    pb.kernel("generate", vec![Arg::Value(m)], fb.done(&[x]), vec![(y, LaneOp::Generate)]);
    pb.output("y", y);
    let plan = pb.plan;
    let e = both_err(src, &plan, &inputs(vec![("xs", f32s(&[1.0, 2.0, 3.0]))]), Code::Index);
    assert!(e.message.contains("index 3 out of bounds for `xs` of length 3"), "{e}");

    // Rank 2: the message gives the shape.
    let src = "input m : f32[r, c]\noutput y = generate [r, c] (\\i j -> m[j, i])";
    let mut pb = PB::new();
    let mm = pb.input("m", F32, 2);
    let r = pb.size("r");
    let c = pb.size("c");
    let y = pb.computed("y", F32, 2);
    let mut fb = FB::new(&[I64, I64]);
    let x = fb.read(mm, F32, &[1, 0]);
    pb.kernel("generate", vec![Arg::Value(r), Arg::Value(c)], fb.done(&[x]), vec![(y, LaneOp::Generate)]);
    pb.output("y", y);
    let ins = inputs(vec![("m", Value::F32(arr(&[2, 3], &[0.0; 6])))]);
    let e = both_err(src, &pb.plan, &ins, Code::Index);
    assert!(e.message.contains("index [2, 0] out of bounds for `m` of shape [2, 3]"), "{e}");
}

#[test]
fn dim_and_conversions() {
    let src = "input m : i64[r, c]\noutput y = generate [size m 1] (\\j -> f32 (size m 0) / f32 (j + 1))";
    let mut pb = PB::new();
    let m = pb.input("m", I64, 2);
    pb.size("r");
    let c = pb.size("c");
    let y = pb.computed("y", F32, 1);
    let mut fb = FB::new(&[I64]);
    let zero = fb.c(Scalar::I64(0));
    let d0 = fb.dim(m, zero);
    let a = fb.call(ScalarFn::Convert(F32), F32, &[d0]);
    let one = fb.c(Scalar::I64(1));
    let j1 = fb.bin(BinOp::Add, 0, one);
    let b = fb.call(ScalarFn::Convert(F32), F32, &[j1]);
    let e = fb.bin(BinOp::Div, a, b);
    pb.kernel("generate", vec![Arg::Value(c)], fb.done(&[e]), vec![(y, LaneOp::Generate)]);
    pb.output("y", y);
    both(src, &pb.plan, &inputs(vec![("m", Value::I64(arr(&[3, 4], &[0; 12])))]));

    // An axis out of range is E-INDEX.
    let mut pb = PB::new();
    let m = pb.input("m", I64, 2);
    let t = pb.computed("t", I64, 0);
    let mut sb = FB::new(&[]);
    let two = sb.c(Scalar::I64(2));
    let d = sb.dim(m, two);
    pb.scalar(t, sb.done(&[d]));
    pb.output("t", t);
    let ins = inputs(vec![("m", Value::I64(arr(&[3, 4], &[0; 12])))]);
    let e = plan_err(&pb.plan, &ins, &[], Code::Index);
    assert!(e.message.contains("dimension 2") && e.message.contains("`m`"), "{e}");
}

#[test]
fn asserts_inputs_and_limits() {
    // An assert that fails gives its code and message.
    let mut pb = PB::new();
    let n = pb.size("n");
    let mut cb = FB::new(&[]);
    let rn = cb.load(n, I64);
    let three = cb.c(Scalar::I64(3));
    let eq = cb.bin(BinOp::Eq, rn, three);
    pb.plan.steps.push(Step::Assert {
        cond: cb.done(&[eq]),
        code: Code::Shape,
        message: "shapes differ".into(),
        shown: Vec::new(),
        span: None,
    });
    let t = pb.computed("t", I64, 0);
    pb.scalar(t, const_func(Scalar::I64(1)));
    pb.output("t", t);
    let e = plan_err(&pb.plan, &IndexMap::new(), &[("n", 4)], Code::Shape);
    assert_eq!(e.message, "shapes differ");
    let sizes: IndexMap<String, i64> = [("n".to_string(), 3)].into_iter().collect();
    assert!(eval(&pb.plan, &IndexMap::new(), &sizes).is_ok());
    // A missing size or input is E-INPUT.
    plan_err(&pb.plan, &IndexMap::new(), &[], Code::Input);
    plan_err(&dotp_plan(), &inputs(vec![("xs", f32s(&[1.0]))]), &[("n", 1)], Code::Input);

    // An element count that overflows i64, or an array over the memory limit: E-LIMIT.
    let mut pb = PB::new();
    let y = pb.computed("y", I64, 2);
    let mut fb = FB::new(&[I64, I64]);
    let z = fb.c(Scalar::I64(0));
    let space = vec![Arg::Const(1 << 62), Arg::Const(4)];
    pb.kernel("generate", space, fb.done(&[z]), vec![(y, LaneOp::Generate)]);
    pb.output("y", y);
    plan_err(&pb.plan, &IndexMap::new(), &[], Code::Limit);
    let mut small = dotp_plan();
    if let Step::Kernel(k) = &mut small.steps[0] {
        k.lanes[0].op = LaneOp::Generate;
    }
    small.values[3].rank = 1;
    let ins = inputs(vec![("xs", f32s(&[1.0; 8])), ("ys", f32s(&[1.0; 8]))]);
    let sizes: IndexMap<String, i64> = [("n".to_string(), 8)].into_iter().collect();
    assert!(eval_with(&small, &ins, &sizes, &Limits { max_array_bytes: 32, ..Limits::default() }).is_ok());
    let e =
        eval_with(&small, &ins, &sizes, &Limits { max_array_bytes: 31, ..Limits::default() }).unwrap_err();
    assert_eq!(e.code, Code::Limit, "{e}");
}

#[test]
fn malformed_plans_are_errors_not_panics() {
    // A register read before it is written.
    let mut pb = PB::new();
    let t = pb.computed("t", I64, 0);
    let body = Func {
        params: vec![],
        reg_types: vec![I64, I64],
        body: Block { insts: vec![Inst::Binary { dst: 1, op: BinOp::Add, a: 0, b: 0 }] },
        ret: vec![1],
        spans: Vec::new(),
    };
    pb.scalar(t, body);
    pb.output("t", t);
    let e = plan_err(&pb.plan, &IndexMap::new(), &[], Code::Internal);
    assert!(e.message.contains("internal error"), "{e}");
    // A value read before it is computed, a register out of range, a type mismatch.
    let mut pb = PB::new();
    let u = pb.computed("u", F32, 1);
    let t = pb.computed("t", F32, 0);
    let mut sb = FB::new(&[]);
    let z = sb.c(Scalar::I64(0));
    let r = sb.read(u, F32, &[z]);
    pb.scalar(t, sb.done(&[r]));
    pb.output("t", t);
    let e = plan_err(&pb.plan, &IndexMap::new(), &[], Code::Internal);
    assert!(e.message.contains("internal error") && e.message.contains("`u`"), "{e}");
    let mut pb = PB::new();
    let t = pb.computed("t", F32, 0);
    pb.scalar(
        t,
        Func { params: vec![], reg_types: vec![], body: Block::default(), ret: vec![7], spans: Vec::new() },
    );
    pb.output("t", t);
    plan_err(&pb.plan, &IndexMap::new(), &[], Code::Internal);
    let mut pb = PB::new();
    let t = pb.computed("t", F32, 0);
    let mut sb = FB::new(&[]);
    let a = sb.c(Scalar::I64(1));
    let b = sb.c(Scalar::F32(1.0));
    let s = sb.bin(BinOp::Add, a, b);
    pb.scalar(t, sb.done(&[s]));
    pb.output("t", t);
    plan_err(&pb.plan, &IndexMap::new(), &[], Code::Internal);
}

#[test]
fn display_of_a_plan() {
    let mut plan = dotp_plan();
    // Add a host scalar with an `if` and a loop, and a histogram-like permute.
    let t = plan.values.len();
    plan.values.push(ValueInfo {
        name: "t".into(),
        elem: I64,
        rank: 0,
        origin: Origin::Computed,
        span: None,
    });
    let mut sb = FB::new(&[]);
    let rn = sb.load(2, I64);
    let one = sb.c(Scalar::I64(1));
    let lt = sb.bin(BinOp::Lt, rn, one);
    let v = sb.if_(I64, lt, |fb| fb.c(Scalar::I64(-1)), |fb| fb.bin(BinOp::Sub, rn, one));
    let out = sb.loop_(rn, &[v], |fb, s| vec![fb.bin(BinOp::Add, s[0], one)]);
    plan.steps.push(Step::Scalar { dst: t, body: sb.done(&out) });
    plan.outputs.push(("m".into(), t));
    let want = "\
input xs: f32[_]
input ys: f32[_]
size n: i64
k0 reduce over [n] -> dot
  elem(r0) { r1 = xs[r0]; r2 = ys[r0]; r3 = r1 * r2 } -> r3
  dot: f32 = reduce r3
    op(r0, r1) { r2 = r0 + r1 } -> r2
    ne() { r0 = 0.0f32 } -> r0
s0 t: i64 = scalar() { r0 = load n; r1 = 1; r2 = r0 < r1; r5 = if r2 { r3 = -1 } -> r3 else { r4 = r0 - r1 } -> r4; \
r8 = loop r0 times (r6 = r5) { r7 = r6 + r1 } next r7 } -> r8
output dot
output m = t
";
    assert_eq!(plan.to_string(), want);
    let sizes: IndexMap<String, i64> = [("n".to_string(), 4)].into_iter().collect();
    let ins = inputs(vec![("xs", f32s(&[1.0; 4])), ("ys", f32s(&[2.0; 4]))]);
    let got = eval(&plan, &ins, &sizes).unwrap();
    assert_eq!(got["m"].get_flat(0), Some(Scalar::I64(7)));
    assert_eq!(got["dot"].get_flat(0), Some(Scalar::F32(8.0)));

    let plan = histogram_plan(true);
    let text = plan.to_string();
    assert!(text.contains("  h: i64[_] = permute r1 into zeros\n    target(r0) { r1 = ks[r0]; r2 = 4; r3 = r1 < r2; r5 = if r3 { } -> r1 else { r4 = -1 } -> r4 } -> r5\n    op(r0, r1) { r2 = r0 + r1 } -> r2\n"), "{text}");
    assert_eq!(format!("{}", op_func(I64, BinOp::Add)), "(r0, r1) { r2 = r0 + r1 } -> r2");
}

#[path = "plan_eval/groups.rs"]
mod groups;
