//! A segmented reduction (a `generate` over CSR segments whose element loops over its
//! segment: `ir::plan::fixtures::segment_sum`) runs natively split by its work, not its
//! point count: results bit for bit the plan interpreter's on skewed offsets (giant
//! segments together at the start, empty ones, one segment, none), several block sizes and
//! thread counts, and no kernel falls back to the VM. Fresh seeds, printed.
//!
//! One test in this file, so that the process-wide native counts move only with it.
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cpu::{compile_plan, native_counts, run, Codegen, RunOptions};
use eqfuse_ir::plan::eval::eval;
use eqfuse_ir::plan::fixtures::segment_sum;
use eqfuse_ir::value::Value;
use indexmap::IndexMap;

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn skewed_segments_run_natively_split_by_work_and_match_the_interpreter() {
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
            | 1;
    eprintln!("seed {seed}");
    let mut s = seed;
    let plan = segment_sum();
    let report = compile_plan(&plan, &RunOptions::default());
    assert!(report.vm.is_empty() && report.failure.is_none(), "not native: {report:?}");
    for round in 0..12 {
        let m = match round {
            0 => 0,
            1 => 1,
            _ => (xorshift(&mut s) % 5000) as usize,
        };
        // lengths: a few giant ones first, then small and empty ones
        let mut lens: Vec<i64> = (0..m)
            .map(|_| match xorshift(&mut s) % 50 {
                0 => 3000 + (xorshift(&mut s) % 7000) as i64,
                1..=10 => 0,
                _ => (xorshift(&mut s) % 20) as i64,
            })
            .collect();
        lens.sort_unstable_by(|a, b| b.cmp(a));
        let mut off = vec![0i64];
        for l in &lens {
            off.push(off.last().unwrap() + l);
        }
        let n = *off.last().unwrap() as usize;
        let xs: Vec<f64> = (0..n).map(|_| (xorshift(&mut s) % 1_000_000) as f64 / 997.0).collect();
        let mut ins = IndexMap::new();
        ins.insert("off".to_string(), Value::from(ndarray::arr1(&off).into_dyn()));
        ins.insert("xs".to_string(), Value::from(ndarray::arr1(&xs).into_dyn()));
        let mut sizes = IndexMap::new();
        sizes.insert("m".to_string(), m as i64);
        let want = eval(&plan, &ins, &sizes).unwrap_or_else(|e| panic!("seed {seed}: interpreter: {e}"));
        let block = [1, 7, 8192][(xorshift(&mut s) % 3) as usize];
        let threads = [1, 2, 3][(xorshift(&mut s) % 3) as usize];
        let o = RunOptions { block_size: block, threads, codegen: Codegen::C, ..RunOptions::default() };
        let before = native_counts();
        let got = run(&plan, &ins, &sizes, &o).unwrap_or_else(|e| panic!("seed {seed}: {o:?}: {e}"));
        let after = native_counts();
        assert_eq!(after.vm, before.vm, "seed {seed}: m {m}: the kernel fell back to the VM");
        assert!(after.native > before.native, "seed {seed}: nothing ran natively");
        // each segment summed in order, as the interpreter does: the same bits
        assert_eq!(got["y"], want["y"], "seed {seed}: m {m}, block {block}, threads {threads}");
    }
}
