//! Property test: scans over groups (a head lane and its parts, widths 2 to 4, inclusive and
//! exclusive, associative operators that do not commute) run natively agree with the plan
//! interpreter bit for bit, at sizes 0, 1, odd and past one segment, on several segment
//! sizes and thread counts; and they do run natively (no kernel falls back to the VM). The
//! VM runs them too. Fresh seeds, printed.
//!
//! One test in this file, so that the process-wide native counts move only with it.
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cpu::{compile_plan, native_counts, run, Codegen, RunOptions};
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::plan::eval::eval;
use eqfuse_ir::plan::fixtures::{group_affine, group_argmin};
use eqfuse_ir::plan::{LaneOp, Plan, Step};
use eqfuse_ir::value::Value;
use eqfuse_optimize::{optimize, OptimizeOptions};
use indexmap::IndexMap;
use ndarray::{ArrayD, IxDyn};

type Named<T> = IndexMap<String, T>;

/// A xorshift generator from a fresh seed (printed).
struct Rng(u64);

impl Rng {
    fn fresh(what: &str) -> Rng {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            | 1;
        eprintln!("{what}: seed {seed}");
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A segmented composition of affine maps over `(flag, m, c)` (width 3: `bool`, `i64`,
/// `i64`): a set flag starts a new segment. Associative, not commutative.
const SEG_AFFINE: &str = "input fl : bool[n]
input a : i64[n]
input b : i64[n]
let (f, m, k) = SCAN (\\(f1, m1, c1) (f2, m2, c2) -> if f2 then (true, m2, c2) else (f1, m1 * m2, c1 * m2 + c2)) (false, 1, 0) (fl, a, b)
output f
output m
output k
";

/// A segmented running minimum with its first index and a count (width 4: `bool`, `f32`,
/// `i64`, `i64`).
const SEG_ARGMIN: &str = "input fl : bool[n]
input xs : f32[n]
let (f, v, i, k) = SCAN (\\(f1, v1, i1, k1) (f2, v2, i2, k2) -> if f2 then (true, v2, i2, k2) else (if v2 < v1 || (v2 == v1 && i2 < i1) then (f1, v2, i2, k1 + k2) else (f1, v1, i1, k1 + k2))) (false, inf, n, 0) (fl, xs, iota n, map (\\x -> 1) xs)
output f
output v
output i
output k
";

fn plan_of(src: &str, exclusive: bool) -> Plan {
    let src = src.replace("SCAN", if exclusive { "scan_exclusive" } else { "scan" });
    let checked = check(&parse(&src).unwrap()).unwrap_or_else(|e| panic!("{e}\n{src}"));
    optimize(&checked, &OptimizeOptions::default()).unwrap().plan
}

/// `plan` with every scan made exclusive or inclusive.
fn with_exclusive(mut plan: Plan, exclusive: bool) -> Plan {
    for s in &mut plan.steps {
        if let Step::Kernel(k) = s {
            for l in &mut k.lanes {
                if let LaneOp::Scan { exclusive: e, .. } = &mut l.op {
                    *e = exclusive;
                }
            }
        }
    }
    plan
}

/// Whether `plan` has a scan over a group of `w` lanes.
fn has_group_scan(plan: &Plan, w: usize) -> bool {
    plan.kernels()
        .iter()
        .any(|k| k.lanes.iter().any(|l| matches!(l.op, LaneOp::Scan { .. }) && l.op.width() == w))
}

fn f32s(rng: &mut Rng, shape: &[usize]) -> Value {
    let pool = [3.0, -1.5, 0.0, -0.0, 7.25, f32::INFINITY, -2.0, f32::NEG_INFINITY];
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n)
        .map(|_| {
            let x = rng.next();
            if x.is_multiple_of(4) {
                pool[(x >> 8) as usize % pool.len()]
            } else {
                ((x >> 16) % 200) as f32 * 0.5 - 50.0
            }
        })
        .collect();
    Value::F32(ArrayD::from_shape_vec(IxDyn(shape), data).unwrap())
}

fn i64s(rng: &mut Rng, shape: &[usize], odd: bool) -> Value {
    let n: usize = shape.iter().product();
    let data: Vec<i64> = (0..n).map(|_| (rng.below(7) as i64) * 2 + i64::from(odd) - 6).collect();
    Value::I64(ArrayD::from_shape_vec(IxDyn(shape), data).unwrap())
}

fn bools(rng: &mut Rng, shape: &[usize]) -> Value {
    let n: usize = shape.iter().product();
    let data: Vec<bool> = (0..n).map(|_| rng.below(97) == 0).collect();
    Value::Bool(ArrayD::from_shape_vec(IxDyn(shape), data).unwrap())
}

fn bits(v: &Value) -> Vec<u64> {
    v.to_scalars()
        .iter()
        .map(|s| match *s {
            eqfuse_ir::Scalar::F32(x) => u64::from(x.to_bits()),
            eqfuse_ir::Scalar::F64(x) => x.to_bits(),
            eqfuse_ir::Scalar::Bool(b) => u64::from(b),
            other => other.as_i128().map_or(0, |v| v as u64),
        })
        .collect()
}

/// One case: a plan, its inputs and sizes, and what it is.
struct Case {
    plan: Plan,
    ins: Named<Value>,
    sizes: Named<i64>,
    what: String,
}

/// A length: 0, 1, small odd, or past several segments of the largest segment size.
fn length(rng: &mut Rng) -> usize {
    match rng.below(4) {
        0 => 0,
        1 => 1,
        2 => (rng.below(500) * 2 + 3) as usize,
        _ => (rng.below(40_000) * 2 + 9_001) as usize,
    }
}

fn cases(rng: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    for exclusive in [false, true] {
        // width 2, rank 2 (rows, or long rows in segments): the fixtures
        for round in 0..3 {
            let (r, c) = match round {
                0 => (rng.below(4) as usize, length(rng)),
                1 => (rng.below(300) as usize + 1, rng.below(9) as usize + 1),
                _ => (1, length(rng)),
            };
            let sizes: Named<i64> = [("r".into(), r as i64), ("c".into(), c as i64)].into_iter().collect();
            let ins = [("xs".to_string(), f32s(rng, &[r, c]))].into_iter().collect();
            let plan = with_exclusive(group_argmin(true), exclusive);
            out.push(Case {
                plan,
                ins,
                sizes: sizes.clone(),
                what: format!("argmin excl={exclusive} [{r}, {c}]"),
            });
            let ins =
                [("a".to_string(), i64s(rng, &[r, c], true)), ("b".to_string(), i64s(rng, &[r, c], false))]
                    .into_iter()
                    .collect();
            let plan = group_affine(true, exclusive);
            out.push(Case { plan, ins, sizes, what: format!("affine excl={exclusive} [{r}, {c}]") });
        }
        // widths 3 and 4 from programs, rank 1
        for _ in 0..3 {
            let n = length(rng);
            let sizes: Named<i64> = [("n".to_string(), n as i64)].into_iter().collect();
            let ins = [
                ("fl".to_string(), bools(rng, &[n])),
                ("a".to_string(), i64s(rng, &[n], true)),
                ("b".to_string(), i64s(rng, &[n], false)),
            ]
            .into_iter()
            .collect();
            let plan = plan_of(SEG_AFFINE, exclusive);
            assert!(has_group_scan(&plan, 3), "{:?}", plan.steps);
            out.push(Case {
                plan,
                ins,
                sizes: sizes.clone(),
                what: format!("seg affine excl={exclusive} [{n}]"),
            });
            let ins = [("fl".to_string(), bools(rng, &[n])), ("xs".to_string(), f32s(rng, &[n]))]
                .into_iter()
                .collect();
            let plan = plan_of(SEG_ARGMIN, exclusive);
            assert!(has_group_scan(&plan, 4), "{:?}", plan.steps);
            out.push(Case { plan, ins, sizes, what: format!("seg argmin excl={exclusive} [{n}]") });
        }
    }
    out
}

#[test]
fn group_scans_run_natively_and_match_the_interpreter() {
    let mut rng = Rng::fresh("group_scans");
    for case in cases(&mut rng) {
        let Case { plan, ins, sizes, what } = case;
        let report = compile_plan(&plan, &RunOptions::default());
        assert!(report.vm.is_empty() && report.failure.is_none(), "{what}: not native: {report:?}");
        let want = eval(&plan, &ins, &sizes).unwrap_or_else(|e| panic!("{what}: interpreter: {e}"));
        let seg = [7, 64, 4096][rng.below(3) as usize];
        let threads = [1, 3][rng.below(2) as usize];
        for codegen in [Codegen::C, Codegen::Vm] {
            let o = RunOptions { block_size: seg, threads, codegen, ..RunOptions::default() };
            let before = native_counts();
            let got = run(&plan, &ins, &sizes, &o).unwrap_or_else(|e| panic!("{what} {o:?}: {e}"));
            let after = native_counts();
            if codegen == Codegen::C {
                assert_eq!(after.vm, before.vm, "{what}: a kernel fell back to the VM");
                assert!(after.native > before.native, "{what}: nothing ran natively");
            }
            for (name, w) in &want {
                assert_eq!(got[name].shape(), w.shape(), "{what}: {name} {o:?}");
                assert!(
                    bits(&got[name]) == bits(w),
                    "{what}: {name} differs, {codegen:?} segment {seg} threads {threads}"
                );
            }
        }
    }
}
