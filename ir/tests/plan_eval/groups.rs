//! Reductions and scans over groups (`w > 1` components, a head lane and its parts) in the
//! plan interpreter, checked against values computed directly here.

use super::*;
use eqfuse_ir::plan::fixtures::group_argmin;

/// `argmin_op`'s semantics over `(value, index)` pairs: the smaller value, the smaller index
/// on a tie; a NaN never wins.
fn argmin_step((a, i): (f32, i64), (b, j): (f32, i64)) -> (f32, i64) {
    let take = if b == a { j < i } else { b < a };
    if take {
        (b, j)
    } else {
        (a, i)
    }
}

fn sizes(v: &[(&str, i64)]) -> IndexMap<String, i64> {
    v.iter().map(|(k, n)| (k.to_string(), *n)).collect()
}

fn bits(v: &Value) -> Vec<u64> {
    v.to_scalars()
        .iter()
        .map(|s| match *s {
            Scalar::F32(x) => u64::from(x.to_bits()),
            Scalar::F64(x) => x.to_bits(),
            other => other.as_i128().map_or(0, |v| v as u64),
        })
        .collect()
}

/// Rows with NaNs, ties, infinities, and a row of NaNs only.
fn argmin_rows() -> (usize, usize, Vec<f32>) {
    let nan = f32::NAN;
    #[rustfmt::skip]
    let xs = vec![
        3.0, 1.0, 2.0, 1.0, 5.0,
        nan, 4.0, nan, -2.0, -2.0,
        nan, nan, nan, nan, nan,
        f32::INFINITY, 7.0, f32::NEG_INFINITY, 0.0, -0.0,
    ];
    (4, 5, xs)
}

#[test]
fn group_argmin_reduce_per_row() {
    let (r, c, xs) = argmin_rows();
    let ins = inputs(vec![("xs", Value::F32(arr(&[r, c], &xs)))]);
    let got = eval(&group_argmin(false), &ins, &sizes(&[("r", r as i64), ("c", c as i64)])).unwrap();
    let mut val = Vec::new();
    let mut idx = Vec::new();
    for row in xs.chunks(c) {
        let mut acc = (f32::INFINITY, i64::MAX);
        for (q, &x) in row.iter().enumerate() {
            acc = argmin_step(acc, (x, q as i64));
        }
        val.push(acc.0);
        idx.push(acc.1);
    }
    assert_eq!(idx, vec![1, 3, i64::MAX, 2]);
    assert_eq!(bits(&got["val"]), bits(&Value::F32(arr(&[r], &val))));
    assert_eq!(got["idx"], Value::I64(arr(&[r], &idx)));
    // An empty row gives the neutral element.
    let ins = inputs(vec![("xs", Value::F32(arr(&[2, 0], &[])))]);
    let got = eval(&group_argmin(false), &ins, &sizes(&[("r", 2), ("c", 0)])).unwrap();
    assert_eq!(got["idx"], Value::I64(arr(&[2], &[i64::MAX, i64::MAX])));
}

#[test]
fn group_argmin_inclusive_scan() {
    let (r, c, xs) = argmin_rows();
    let ins = inputs(vec![("xs", Value::F32(arr(&[r, c], &xs)))]);
    let got = eval(&group_argmin(true), &ins, &sizes(&[("r", r as i64), ("c", c as i64)])).unwrap();
    let mut val = Vec::new();
    let mut idx = Vec::new();
    for row in xs.chunks(c) {
        let mut acc = (f32::INFINITY, i64::MAX);
        for (q, &x) in row.iter().enumerate() {
            acc = argmin_step(acc, (x, q as i64));
            val.push(acc.0);
            idx.push(acc.1);
        }
    }
    assert_eq!(&idx[..5], &[0, 1, 1, 1, 1]);
    assert_eq!(bits(&got["val"]), bits(&Value::F32(arr(&[r, c], &val))));
    assert_eq!(got["idx"], Value::I64(arr(&[r, c], &idx)));
}

/// Welford's merge of `(count, mean, m2)` with `(1, x, 0)`-shaped elements: three `f64`
/// components, in exactly the order [`welford_op`] computes them.
fn welford_merge(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    let n = a[0] + b[0];
    let d = b[1] - a[1];
    let mean = a[1] + d * b[0] / n;
    let m2 = (a[2] + b[2]) + d * d * a[0] * b[0] / n;
    [n, mean, m2]
}

fn welford_op() -> Func {
    let mut fb = FB::new(&[F64; 6]);
    let n = fb.bin(BinOp::Add, 0, 3);
    let d = fb.bin(BinOp::Sub, 4, 1);
    let t = fb.bin(BinOp::Mul, d, 3);
    let q = fb.bin(BinOp::Div, t, n);
    let mean = fb.bin(BinOp::Add, 1, q);
    let dd = fb.bin(BinOp::Mul, d, d);
    let p = fb.bin(BinOp::Mul, dd, 0);
    let p = fb.bin(BinOp::Mul, p, 3);
    let p = fb.bin(BinOp::Div, p, n);
    let s = fb.bin(BinOp::Add, 2, 5);
    let m2 = fb.bin(BinOp::Add, s, p);
    fb.done(&[n, mean, m2])
}

fn consts(vals: &[Scalar]) -> Func {
    let mut fb = FB::new(&[]);
    let rs: Vec<Reg> = vals.iter().map(|v| fb.c(*v)).collect();
    fb.done(&rs)
}

/// Over `m : f64[r, c]`: a generate `m * 2`, a welford group of three (count, mean, m2 per
/// row) and a plain sum per row, in one kernel.
fn welford_plan() -> Plan {
    let mut pb = PB::new();
    let m = pb.input("m", F64, 2);
    let r = pb.size("r");
    let c = pb.size("c");
    let twice = pb.computed("twice", F64, 2);
    let cnt = pb.computed("cnt", F64, 1);
    let mean = pb.computed("mean", F64, 1);
    let m2 = pb.computed("m2", F64, 1);
    let sum = pb.computed("sum", F64, 1);
    let mut fb = FB::new(&[I64, I64]);
    let x = fb.read(m, F64, &[0, 1]);
    let two = fb.c(Scalar::F64(2.0));
    let y = fb.bin(BinOp::Mul, x, two);
    let one = fb.c(Scalar::F64(1.0));
    let zero = fb.c(Scalar::F64(0.0));
    let elem = fb.done(&[y, one, x, zero, x]);
    let z = Scalar::F64(0.0);
    let w = LaneOp::Reduce { op: welford_op(), ne: consts(&[z, z, z]) };
    let s = LaneOp::Reduce { op: op_func(F64, BinOp::Add), ne: const_func(z) };
    let lanes = vec![(twice, LaneOp::Generate), (cnt, w), (mean, LaneOp::Part), (m2, LaneOp::Part), (sum, s)];
    pb.kernel("reduce", vec![Arg::Value(r), Arg::Value(c)], elem, lanes);
    for (name, v) in [("twice", twice), ("cnt", cnt), ("mean", mean), ("m2", m2), ("sum", sum)] {
        pb.output(name, v);
    }
    pb.plan
}

#[test]
fn welford_group_beside_generate_and_reduce() {
    let (r, c) = (3usize, 7usize);
    let xs: Vec<f64> = (0..r * c).map(|k| ((k * 37 % 11) as f64 - 4.5) * 1.3e3 + 0.1 * k as f64).collect();
    let ins = inputs(vec![("m", Value::F64(arr(&[r, c], &xs)))]);
    let got = eval(&welford_plan(), &ins, &sizes(&[("r", r as i64), ("c", c as i64)])).unwrap();
    let (mut cnt, mut mean, mut m2, mut sum) = (vec![], vec![], vec![], vec![]);
    for row in xs.chunks(c) {
        let mut acc = [0.0; 3];
        let mut s = 0.0;
        for &x in row {
            acc = welford_merge(acc, [1.0, x, 0.0]);
            s += x;
        }
        cnt.push(acc[0]);
        mean.push(acc[1]);
        m2.push(acc[2]);
        sum.push(s);
    }
    let twice: Vec<f64> = xs.iter().map(|x| x * 2.0).collect();
    for (name, want) in [("cnt", cnt), ("mean", mean), ("m2", m2), ("sum", sum)] {
        assert_eq!(bits(&got[name]), bits(&Value::F64(arr(&[r], &want))), "{name}");
    }
    assert_eq!(bits(&got["twice"]), bits(&Value::F64(arr(&[r, c], &twice))));
}

/// An exclusive scan of `(x, 1)` over `xs : f64[n]`: the running sum and count before
/// each element.
fn sum_count_scan(exclusive: bool) -> Plan {
    let mut pb = PB::new();
    let xs = pb.input("xs", F64, 1);
    let n = pb.size("n");
    let s = pb.computed("s", F64, 1);
    let k = pb.computed("k", I64, 1);
    let mut fb = FB::new(&[I64]);
    let x = fb.read(xs, F64, &[0]);
    let one = fb.c(Scalar::I64(1));
    let elem = fb.done(&[x, one]);
    let mut ob = FB::new(&[F64, I64, F64, I64]);
    let a = ob.bin(BinOp::Add, 0, 2);
    let b = ob.bin(BinOp::Add, 1, 3);
    let op = ob.done(&[a, b]);
    let ne = consts(&[Scalar::F64(0.0), Scalar::I64(0)]);
    let lanes = vec![(s, LaneOp::Scan { op, ne, exclusive }), (k, LaneOp::Part)];
    pb.kernel("scan", vec![Arg::Value(n)], elem, lanes);
    pb.output("s", s);
    pb.output("k", k);
    pb.plan
}

#[test]
fn exclusive_sum_count_scan() {
    let xs = [0.1, 1e16, -1e16, 2.5, 0.3, 7.0];
    let ins = inputs(vec![("xs", f64s(&xs))]);
    let got = eval(&sum_count_scan(true), &ins, &sizes(&[("n", xs.len() as i64)])).unwrap();
    let mut s = Vec::new();
    let mut acc = 0.0;
    for x in xs {
        s.push(acc);
        acc += x;
    }
    assert_eq!(bits(&got["s"]), bits(&f64s(&s)));
    assert_eq!(got["k"], i64s(&[0, 1, 2, 3, 4, 5]));
    let got = eval(&sum_count_scan(false), &ins, &sizes(&[("n", xs.len() as i64)])).unwrap();
    assert_eq!(got["k"], i64s(&[1, 2, 3, 4, 5, 6]));
}

#[test]
fn malformed_groups_are_internal_errors() {
    let ins = inputs(vec![("xs", f64s(&[1.0, 2.0]))]);
    let sz = [("n", 2)];
    // a part with no head before it
    let mut plan = sum_count_scan(false);
    let Step::Kernel(k) = &mut plan.steps[0] else { unreachable!() };
    k.lanes.swap(0, 1);
    let e = plan_err(&plan, &ins, &sz, Code::Internal);
    assert!(e.message.contains("internal error") && e.message.contains("part"), "{e}");
    // a scan over a group beside another lane
    let mut plan = sum_count_scan(false);
    let Step::Kernel(k) = &mut plan.steps[0] else { unreachable!() };
    k.lanes.push(Lane { dst: 2, op: LaneOp::Generate });
    k.elem.ret.push(k.elem.ret[0]);
    let e = plan_err(&plan, &ins, &sz, Code::Internal);
    assert!(e.message.contains("internal error"), "{e}");
    // a neutral element of the wrong width
    let mut plan = sum_count_scan(false);
    let Step::Kernel(k) = &mut plan.steps[0] else { unreachable!() };
    let LaneOp::Scan { ne, .. } = &mut k.lanes[0].op else { unreachable!() };
    ne.ret.pop();
    let e = plan_err(&plan, &ins, &sz, Code::Internal);
    assert!(e.message.contains("internal error") && e.message.contains("group of 2"), "{e}");
}
