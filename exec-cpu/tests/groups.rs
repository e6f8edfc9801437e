//! Reductions and scans over groups (a head lane and its parts: `argmin` over
//! `(value, index)`, a Welford-like three-component fold) on the CPU executor, natively and
//! on the VM, against the plan interpreter, at sizes that cross blocks and thread chunks,
//! with NaNs and ties. The fixture kernels must compile natively.
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cpu::{compile_plan, run, Codegen, RunOptions};
use eqfuse_ir::plan::eval::eval;
use eqfuse_ir::plan::fixtures::group_argmin;
use eqfuse_ir::plan::Plan;
use eqfuse_ir::value::Value;
use indexmap::IndexMap;
use ndarray::{ArrayD, IxDyn};

type Named<T> = IndexMap<String, T>;

/// A small xorshift generator (seeded per test, the seed printed).
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
}

/// `r × c` values drawn from a few (ties) with NaNs and infinities among them.
fn argmin_input(rng: &mut Rng, r: usize, c: usize) -> Value {
    let pool = [3.0, -1.5, 0.0, -0.0, 7.25, f32::NAN, f32::INFINITY, -2.0, f32::NEG_INFINITY];
    let data: Vec<f32> = (0..r * c)
        .map(|_| {
            let x = rng.next();
            if x.is_multiple_of(5) {
                pool[(x >> 8) as usize % pool.len()]
            } else {
                ((x >> 16) % 1000) as f32 * 0.5 - 100.0
            }
        })
        .collect();
    Value::F32(ArrayD::from_shape_vec(IxDyn(&[r, c]), data).unwrap())
}

fn bits(v: &Value) -> Vec<u64> {
    v.to_scalars()
        .iter()
        .map(|s| match *s {
            eqfuse_ir::Scalar::F32(x) => u64::from(x.to_bits()),
            eqfuse_ir::Scalar::F64(x) => x.to_bits(),
            other => other.as_i128().map_or(0, |v| v as u64),
        })
        .collect()
}

/// The settings every plan runs with: native and VM, several block sizes and threads.
fn settings() -> Vec<RunOptions> {
    let mut v = Vec::new();
    for (block_size, threads) in [(8192, 4), (7, 3), (64, 1), (1000, 16)] {
        for codegen in [Codegen::C, Codegen::Vm] {
            v.push(RunOptions { block_size, threads, codegen, ..RunOptions::default() });
        }
    }
    v
}

/// Runs `plan` on every setting and requires the plan interpreter's outputs, bit for bit.
fn agree(plan: &Plan, ins: &Named<Value>, sizes: &Named<i64>, what: &str) {
    let want = eval(plan, ins, sizes).unwrap_or_else(|e| panic!("{what}: interpreter: {e}"));
    for o in settings() {
        let got = run(plan, ins, sizes, &o).unwrap_or_else(|e| panic!("{what} {o:?}: {e}"));
        for (name, w) in &want {
            assert_eq!(got[name].shape(), w.shape(), "{what}: {name} {o:?}");
            assert!(
                bits(&got[name]) == bits(w),
                "{what}: {name} differs on {:?} block {} threads {}",
                o.codegen,
                o.block_size,
                o.threads
            );
        }
    }
}

fn sizes(r: usize, c: usize) -> Named<i64> {
    [("r".to_string(), r as i64), ("c".to_string(), c as i64)].into_iter().collect()
}

#[test]
fn argmin_over_groups_matches_the_interpreter() {
    let mut rng = Rng::fresh("argmin_over_groups");
    for scan in [false, true] {
        let plan = group_argmin(scan);
        for (r, c) in [(3, 100_003), (1000, 7), (1, 1), (2, 0), (0, 5), (5, 8193)] {
            let ins: Named<Value> = [("xs".to_string(), argmin_input(&mut rng, r, c))].into_iter().collect();
            agree(&plan, &ins, &sizes(r, c), &format!("argmin scan={scan} [{r}, {c}]"));
        }
    }
}

/// `r × c` small odd multipliers and offsets (the products wrap, all bits matter).
fn affine_inputs(rng: &mut Rng, r: usize, c: usize) -> Named<Value> {
    let mut gen = |odd: bool| {
        let data: Vec<i64> = (0..r * c).map(|_| (rng.next() % 7) as i64 * 2 + i64::from(odd) - 6).collect();
        Value::I64(ArrayD::from_shape_vec(IxDyn(&[r, c]), data).unwrap())
    };
    let a = gen(true);
    let b = gen(false);
    [("a".to_string(), a), ("b".to_string(), b)].into_iter().collect()
}

#[test]
fn non_commutative_groups_combine_in_order() {
    let mut rng = Rng::fresh("non_commutative_groups");
    for (scan, exclusive) in [(false, false), (true, false), (true, true)] {
        let plan = eqfuse_ir::plan::fixtures::group_affine(scan, exclusive);
        for (r, c) in [(3, 100_003), (1000, 7), (2, 20_000), (1, 3)] {
            let ins = affine_inputs(&mut rng, r, c);
            agree(&plan, &ins, &sizes(r, c), &format!("affine scan={scan} excl={exclusive} [{r}, {c}]"));
        }
    }
}

#[test]
fn group_reductions_compile_natively() {
    let o = RunOptions::default();
    for plan in [group_argmin(false), eqfuse_ir::plan::fixtures::group_affine(false, false)] {
        let report = compile_plan(&plan, &o);
        assert_eq!(report.failure, None, "{report:?}");
        assert!(report.vm.is_empty(), "kernels left to the VM: {:?}", report.vm);
        assert_eq!(report.native, vec![0], "{report:?}");
    }
}
