//! Segment blocks (docs/fusion.md, "Segment blocks"): a scan and the kernels that read its
//! result at their own point — a compaction's permute, a map over the scan — and a filter
//! and the reductions of its input run as one pass, segment by segment, on the CPU backend;
//! which plans group them, that the CPU backend runs them natively, and random scan and
//! filter programs against the reference interpreter on 1 to 3 threads and segments of 1, 7
//! and 4096 elements.
//!
//! Every test here holds [`LOCK`]: the native counts are the process's, and a test that
//! compares them before and after a run must be the only one running.
#![allow(clippy::unwrap_used)]

mod common;

use eqfuse::{Arrays, Backend, OptimizeOptions, Value};
use eqfuse_exec_cpu::RunOptions;
use eqfuse_ir::plan::{Plan, Step};
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;
use std::sync::{Mutex, MutexGuard};

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Stream compaction with flags, an exclusive scan and a permute (issue 21).
const COMPACT: &str = "input x : f32[n]
let flags = map (\\v -> if v > 0.0 then 1 else 0) x
let pos = scan_exclusive (+) 0 flags
let total = reduce (+) 0 flags
output y = permute (\\a b -> b) (fill [total] 0.0) (\\i -> if flags[i] == 1 then pos[i] else -1) x
";

fn plan(src: &str) -> Plan {
    let prog = eqfuse::parse(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    eqfuse::optimize(&prog, &OptimizeOptions::default()).unwrap_or_else(|e| panic!("{e}\n{src}")).result.plan
}

/// The segment blocks of `p` (top level): each one's phases' kinds and the names it keeps.
fn blocks(p: &Plan) -> Vec<(Vec<&'static str>, Vec<String>)> {
    p.steps
        .iter()
        .filter_map(|s| match s {
            Step::SegmentBlock { kernels, local } => Some((
                kernels.iter().map(|k| k.kind.as_str()).collect(),
                local.iter().map(|v| p.values[*v].name.clone()).collect(),
            )),
            _ => None,
        })
        .collect()
}

fn f32s(v: Vec<f32>) -> Value {
    Value::F32(ArrayD::from_shape_vec(IxDyn(&[v.len()]), v).unwrap())
}

#[test]
fn compaction_is_a_reduction_and_one_scan_block_its_positions_never_in_memory() {
    let _g = lock();
    let p = plan(COMPACT);
    assert_eq!(blocks(&p), vec![(vec!["scan", "permute"], vec!["pos".to_string()])], "{p}");
    // the flags are computed where they are read, never written: two passes in all
    let passes = p.steps.iter().filter(|s| matches!(s, Step::Kernel(_) | Step::SegmentBlock { .. })).count();
    assert_eq!(passes, 2, "{p}");
    let o = eqfuse::optimize(&eqfuse::parse(COMPACT).unwrap(), &OptimizeOptions::default()).unwrap();
    let text = o.explain_with(false);
    assert!(text.contains("kernels: 3 in 2 passes (a scan block is one pass)"), "{text}");
    assert!(text.contains("materialized: none"), "{text}");
    assert!(text.contains("kept per scan segment, never in memory: pos"), "{text}");
}

#[test]
fn a_map_over_a_scan_runs_in_the_scans_pass() {
    let _g = lock();
    let src = "input x : f32[n]\nlet s = scan (+) 0.0 x\noutput y = map (\\v -> v * 2.0 + 1.0) s\n";
    let p = plan(src);
    assert_eq!(blocks(&p), vec![(vec!["scan", "map"], vec!["s".to_string()])], "{p}");
    // a scan that is also an output is written whole, and still shares the pass
    let p = plan(&format!("{src}output z = s\n"));
    assert_eq!(blocks(&p), vec![(vec!["scan", "map"], vec![])], "{p}");
}

/// The default run kept the slice `t2` and its bounds check, emitted between the scan and
/// the map that reads both; the check ended the group, so the plan where the slice was
/// fused (and its check gone) was a scan block and cheaper. A check that reads nothing the
/// group made now runs before it, as an independent kernel does, still ahead of what it
/// guards.
#[test]
fn a_bounds_check_between_a_scan_and_its_map_runs_before_the_block() {
    let _g = lock();
    let src = "input in1 : i64[n]\nlet t2 = slice in1 0 1\nlet t4 = scan (+) 0 in1\n\
        output t6 = map (\\x -> -(0 - t2[clamp x 0 0])) t4\n";
    let p = plan(src);
    assert_eq!(blocks(&p), vec![(vec!["scan", "map"], vec!["t4".to_string()])], "{p}");
    // the check still comes before the slice it guards
    let check = p.steps.iter().position(|s| matches!(s, Step::Assert { .. }));
    let slice = p.steps.iter().position(|s| matches!(s, Step::Kernel(k) if k.kind.as_str() == "gather"));
    assert!(check.is_some() && check < slice, "{p}");
    let mut ins = Arrays::new();
    ins.insert("in1".into(), Value::I64(ArrayD::from_shape_vec(IxDyn(&[3]), vec![4, -2, 7]).unwrap()));
    let out = eqfuse::backend::run_plan(
        &p,
        &eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap(),
        Backend::Cpu,
        &ins,
    )
    .unwrap();
    assert_eq!(out["t6"], Value::I64(ArrayD::from_shape_vec(IxDyn(&[3]), vec![4, 4, 4]).unwrap()));
}

#[test]
fn a_read_of_the_scan_at_another_point_ends_the_block() {
    let _g = lock();
    // `s[i - 1]` is the previous segment's last point at a segment's start
    let src = "input x : f32[n]\nlet s = scan (+) 0.0 x\noutput y = generate [n] (\\i -> if i > 0 then s[i - 1] else 0.0)\n";
    let p = plan(src);
    assert!(blocks(&p).is_empty(), "{p}");
    // a read of the scan in a permute's target at another point, likewise
    let src = "input x : f32[n]\nlet s = scan_exclusive (+) 0 (map (\\v -> if v > 0.0 then 1 else 0) x)\noutput y = permute (\\a b -> b) (fill [n] 0.0) (\\i -> s[n - 1 - i]) x\n";
    let p = plan(src);
    assert!(blocks(&p).is_empty(), "{p}");
}

#[test]
fn the_cpu_backend_runs_a_scan_block_segment_by_segment() {
    let _g = lock();
    let x: Vec<f32> = (0..50_000).map(|i| ((i * 7919) % 23) as f32 - 11.5).collect();
    let want: Vec<f32> = x.iter().copied().filter(|&v| v > 0.0).collect();
    let mut ins = Arrays::new();
    ins.insert("x".into(), f32s(x));
    let o = eqfuse::optimize(&eqfuse::parse(COMPACT).unwrap(), &OptimizeOptions::default()).unwrap();
    for block_size in [1000, 8192] {
        let before = eqfuse_exec_cpu::native_counts();
        let opts = RunOptions { threads: 2, block_size, ..RunOptions::default() };
        let out =
            eqfuse::backend::run_plan_with(&o.result.plan, o.source(), Backend::Cpu, &ins, &opts).unwrap();
        let after = eqfuse_exec_cpu::native_counts();
        assert_eq!(out["y"], f32s(want.clone()));
        assert_eq!(after.segment_blocks, before.segment_blocks + 1, "block {block_size}");
        assert_eq!(after.vm, before.vm, "block {block_size}");
    }
}

/// A filter with two reductions of its input and one of its result.
const FILTER_SUMS: &str = "input xs : i64[n]
let kept = filter (\\x -> x > 7) xs
output k = kept
output total = reduce (+) 0 xs
output top = reduce max (-1) xs
output count = length kept
";

#[test]
fn a_filter_and_the_reductions_of_its_input_are_one_filter_block() {
    let _g = lock();
    let p = plan(FILTER_SUMS);
    let b = blocks(&p);
    assert_eq!(b.len(), 1, "{p}");
    assert_eq!(b[0].0[0], "filter", "{p}");
    assert!(b[0].0[1..].iter().all(|k| *k == "reduce"), "{p}");
    let o = eqfuse::optimize(&eqfuse::parse(FILTER_SUMS).unwrap(), &OptimizeOptions::default()).unwrap();
    let text = o.explain_with(false);
    assert!(text.contains(" pass (a filter block is one pass)"), "{text}");
}

#[test]
fn the_cpu_backend_runs_a_filter_block_in_the_filters_counting_pass() {
    let _g = lock();
    let xs: Vec<i64> = (0..30_000).map(|i| (i * 7919) % 16).collect();
    let mut ins = Arrays::new();
    ins.insert("xs".into(), Value::I64(ArrayD::from_shape_vec(IxDyn(&[xs.len()]), xs.clone()).unwrap()));
    let o = eqfuse::optimize(&eqfuse::parse(FILTER_SUMS).unwrap(), &OptimizeOptions::default()).unwrap();
    let kept: Vec<i64> = xs.iter().copied().filter(|&x| x > 7).collect();
    for block_size in [1000, 8192, 100_000] {
        let before = eqfuse_exec_cpu::native_counts();
        let opts = RunOptions { threads: 2, block_size, ..RunOptions::default() };
        let out =
            eqfuse::backend::run_plan_with(&o.result.plan, o.source(), Backend::Cpu, &ins, &opts).unwrap();
        let after = eqfuse_exec_cpu::native_counts();
        assert_eq!(out["k"], Value::I64(ArrayD::from_shape_vec(IxDyn(&[kept.len()]), kept.clone()).unwrap()));
        assert_eq!(out["total"], Value::I64(ndarray::arr0(xs.iter().sum::<i64>()).into_dyn()));
        assert_eq!(out["top"], Value::I64(ndarray::arr0(15).into_dyn()));
        assert_eq!(after.segment_blocks, before.segment_blocks + 1, "block {block_size}");
        assert_eq!(after.vm, before.vm, "block {block_size}");
    }
}

/// The settings every program runs under.
fn settings() -> Vec<RunOptions> {
    let mut v = Vec::new();
    for threads in 1..=3 {
        for block_size in [1, 7, 4096] {
            v.push(RunOptions { threads, block_size, ..RunOptions::default() });
        }
    }
    v
}

/// A random scan program: flags (or small integers) from a threshold, their scan, and a
/// consumer of the scan at its own point.
#[derive(Clone, Debug)]
struct Spec {
    /// 0: compaction with `\a b -> b` into `fill [total]`; 1: a `(+)` scatter into
    /// `fill [n]` at the positions; 2: a map over the scan; 3: compaction whose positions
    /// are an output too.
    consumer: u8,
    exclusive: bool,
    /// The scanned values: 0/1 flags, or integers 0..4.
    counts: bool,
    f64: bool,
    n: usize,
    seed: u64,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0u8..4,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop_oneof![1 => Just(0usize), 6 => 1usize..60, 3 => 500usize..3000],
        any::<u64>(),
    )
        .prop_map(|(consumer, exclusive, counts, f64, n, seed)| Spec {
            consumer,
            exclusive,
            counts,
            f64,
            n,
            seed,
        })
}

impl Spec {
    fn program(&self) -> (String, Arrays) {
        let t = if self.f64 { "f64" } else { "f32" };
        let scan = if self.exclusive { "scan_exclusive" } else { "scan" };
        let flag = if self.counts {
            "if v > 0.25 then (if v > 0.5 then 2 else 1) else 0"
        } else {
            "if v > 0.25 then 1 else 0"
        };
        let mut src = format!(
            "input x : {t}[n]\nlet flags = map (\\v -> {flag}) x\nlet pos = {scan} (+) 0 flags\nlet total = reduce (+) 0 flags\n"
        );
        // an inclusive scan's positions start at 1; a count of 2 skips a slot
        let at = if self.exclusive { "pos[i]" } else { "pos[i] - 1" };
        match self.consumer {
            0 | 3 => {
                src.push_str(&format!(
                    "output y = permute (\\a b -> b) (fill [total] 0.0) (\\i -> if flags[i] > 0 then {at} else -1) x\n"
                ));
                if self.consumer == 3 {
                    src.push_str("output p = pos\n");
                }
            }
            1 => src.push_str(&format!(
                "output y = permute (+) (fill [n] 0) (\\i -> if flags[i] > 0 then clamp ({at}) 0 (n - 1) else -1) flags\n"
            )),
            _ => src.push_str("output y = map (\\p -> p * 3 - total) pos\n"),
        }
        let mut inputs = Arrays::new();
        inputs.insert("x".into(), common::uniform(&[self.n], self.f64, 0.0, self.seed));
        (src, inputs)
    }
}

/// A random filter program: a filter of an integer input and reductions of that input
/// beside it (a sum, a maximum, a count of the elements over a threshold), maybe a map of it.
#[derive(Clone, Debug)]
struct FilterSpec {
    threshold: i64,
    /// Which of the sum, maximum, count and map are outputs (at least one).
    sides: u8,
    n: usize,
    seed: u64,
}

fn filter_spec() -> impl Strategy<Value = FilterSpec> {
    (0i64..16, 1u8..16, prop_oneof![1 => Just(0usize), 6 => 1usize..60, 3 => 500usize..3000], any::<u64>())
        .prop_map(|(threshold, sides, n, seed)| FilterSpec { threshold, sides, n, seed })
}

impl FilterSpec {
    fn program(&self) -> (String, Arrays) {
        let mut src = format!("input xs : i64[n]\noutput k = filter (\\x -> x > {}) xs\n", self.threshold);
        let sides = [
            "output s = reduce (+) 0 xs\n",
            "output m = reduce max (-1) xs\n",
            "output c = reduce (+) 0 (map (\\x -> if x > 3 then 1 else 0) xs)\n",
            "output d = map (\\x -> x * 2 + 1) xs\n",
        ];
        for (i, s) in sides.iter().enumerate() {
            if self.sides & (1 << i) != 0 {
                src.push_str(s);
            }
        }
        let mut next = common::xorshift(self.seed);
        let data: Vec<i64> = (0..self.n).map(|_| (next() % 16) as i64).collect();
        let mut inputs = Arrays::new();
        inputs.insert("xs".into(), Value::I64(ArrayD::from_shape_vec(IxDyn(&[self.n]), data).unwrap()));
        (src, inputs)
    }
}

/// Runs `src` on `inputs`: the optimised plan, whose segment blocks `first` (the first
/// phase's kind of each) must be, through the plan interpreter and on the CPU backend under
/// every setting, and the unfused program on the CPU backend, each against the reference
/// interpreter, exactly.
fn agrees_everywhere(src: &str, inputs: &Arrays, first: &[&str]) -> Result<(), TestCaseError> {
    let checked = eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap();
    let want = eqfuse::run(&checked, Backend::Reference, inputs).unwrap();
    let opt = eqfuse::optimize(&eqfuse::parse(src).unwrap(), &OptimizeOptions::default()).unwrap();
    let kinds: Vec<&str> = blocks(&opt.result.plan).iter().map(|b| b.0[0]).collect();
    prop_assert_eq!(kinds, first, "{}", opt.result.plan);
    // the plan interpreter runs the phases one after the other
    let eval = eqfuse::backend::run_plan(&opt.result.plan, opt.source(), Backend::Reference, inputs).unwrap();
    for (k, w) in &want {
        prop_assert_eq!(&eval[k], w, "plan interpreter `{}`\n{}", k, src);
    }
    let unfused_opts = OptimizeOptions { no_fusion: true, ..OptimizeOptions::default() };
    for o in settings() {
        let got =
            eqfuse::backend::run_plan_with(&opt.result.plan, opt.source(), Backend::Cpu, inputs, &o).unwrap();
        let unfused = eqfuse::backend::run_with(&checked, Backend::Cpu, inputs, &unfused_opts, &o).unwrap();
        for (k, w) in &want {
            prop_assert_eq!(
                &got[k],
                w,
                "optimised `{}`, {} threads, block {}\n{}",
                k,
                o.threads,
                o.block_size,
                src
            );
            prop_assert_eq!(
                &unfused[k],
                w,
                "unfused `{}`, {} threads, block {}\n{}",
                k,
                o.threads,
                o.block_size,
                src
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5CA7_B10C), ..ProptestConfig::default() })]

    /// Random scan programs, optimised (their scan blocks segment by segment) and unfused,
    /// on the CPU backend under every setting, agree exactly with the reference
    /// interpreter (the scans and scatters are of integers; the compaction copies
    /// elements).
    #[test]
    fn random_scan_programs_agree_with_the_reference(s in spec()) {
        let _g = lock();
        let (src, inputs) = s.program();
        agrees_everywhere(&src, &inputs, &["scan"])?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, rng_seed: proptest::test_runner::RngSeed::Fixed(0xF1_17E2), ..ProptestConfig::default() })]

    /// Random filter programs with reductions of the filter's input beside it, optimised
    /// (one filter block) and unfused, on the CPU backend under every setting, agree exactly
    /// with the reference interpreter.
    #[test]
    fn random_filter_programs_agree_with_the_reference(s in filter_spec()) {
        let _g = lock();
        let (src, inputs) = s.program();
        agrees_everywhere(&src, &inputs, &["filter"])?;
    }
}
