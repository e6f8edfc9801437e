//! Staged loops (`codegen/src/c/skeleton/staged.rs`): the native scan, filter and permute
//! entries compute a block's elements first, by a loop the C compiler vectorises, then
//! fold, compact or scatter them in order. Their generated C is a snapshot, and the first
//! loop must vectorise (`-fopt-info-vec`).
//!
//! Native scans over long rows run in segments: each segment's elements are folded (and
//! kept in the outputs), the segments' carries prefixed, then each segment scanned from its
//! carry reading the kept elements back instead of computing them again. Checked against
//! the reference interpreter, with blocks small enough that every row has many segments,
//! at random lengths (the seed is printed). Operators and data are exact in any order
//! (`max`, integer `+`), so the results must be the reference's bits.

#![allow(clippy::unwrap_used)]

mod common;

use common::{rng, vectorised_lines};
use eqfuse::{Arrays, Backend, OptimizeOptions, Value};

const PROGRAMS: &[&str] = &[
    // an element function worth computing once, inclusive and exclusive
    "input x : f64[n]\noutput o = scan max (0.0 - inf) (map (\\v -> exp (v * 0.5) - v) x)\n",
    "input x : f64[n]\noutput o = scan_exclusive max (0.0 - inf) (map (\\v -> exp (v * 0.5) - v) x)\n",
    // integers (wrapping `+` is exact in any order)
    "input k : i64[n]\noutput o = scan (+) 0 (map (\\v -> v * v - 3 * v) k)\n",
    "input k : i64[n]\noutput o = scan_exclusive (+) 0 (map (\\v -> v * v - 3 * v) k)\n",
    // a group: a running maximum with the index where it was reached
    "input x : f64[n]
let (m, i) = scan (\\(a, i) (b, j) -> if b > a || (b == a && j < i) then (b, j) else (a, i)) (0.0 - inf, n) (map (\\v -> v * v) x, iota n)
output om = m
output oi = i
",
    // rows of a matrix, each long enough for segments
    "input a : i64[r, n]\noutput o = scan (+) 0 (map (\\v -> v % 1000) a)\n",
];

fn inputs(src: &str, n: usize, next: &mut impl FnMut() -> u64) -> Arrays {
    let mut m = Arrays::new();
    if src.contains("input x") {
        let v: Vec<f64> = (0..n).map(|_| (next() % 4001) as f64 / 64.0 - 31.0).collect();
        m.insert("x".into(), Value::from(ndarray::Array1::from(v).into_dyn()));
    }
    if src.contains("input k") {
        let v: Vec<i64> = (0..n).map(|_| (next() % 2_000_001) as i64 - 1_000_000).collect();
        m.insert("k".into(), Value::from(ndarray::Array1::from(v).into_dyn()));
    }
    if src.contains("input a") {
        let v: Vec<i64> = (0..3 * n).map(|_| next() as i64).collect();
        m.insert("a".into(), Value::from(ndarray::Array2::from_shape_vec((3, n), v).unwrap().into_dyn()));
    }
    m
}

#[test]
fn segmented_scans_read_back_the_elements_their_fold_kept() {
    let (seed, mut next) = rng();
    let lengths = [1usize, 999, 1000, 1001, 5000, 1 + (next() % 60_000) as usize];
    let small = eqfuse_exec_cpu::RunOptions { block_size: 1000, ..Default::default() };
    for src in PROGRAMS {
        let checked = eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap();
        for &n in &lengths {
            let ins = inputs(src, n, &mut next);
            let want = eqfuse::run(&checked, Backend::Reference, &ins).unwrap();
            for opts in [&small, &eqfuse_exec_cpu::RunOptions::default()] {
                let got = eqfuse::backend::run_with(
                    &checked,
                    Backend::Cpu,
                    &ins,
                    &OptimizeOptions::default(),
                    opts,
                )
                .unwrap();
                assert_eq!(got, want, "seed {seed}, n {n}, block {}:\n{src}", opts.block_size);
            }
        }
    }
}

/// Entry `name` of kernel 0 in `source`, and the 1-based lines of `source` in it that hold
/// `needle`.
fn entry<'s>(source: &'s str, name: &str, needle: &str) -> (&'s str, Vec<usize>) {
    let head = format!("EQ_EXPORT int eq_k0_{name}(");
    let start = source.find(&head).unwrap();
    let end = start + source[start..].find("\n}\n").unwrap() + 2;
    let first = source[..start].lines().count();
    let lines = source[start..end]
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| first + i + 1)
        .collect();
    (&source[start..end], lines)
}

#[test]
fn a_scans_element_functions_run_staged_and_vectorised() {
    let p = eqfuse::parse(PROGRAMS[0]).unwrap();
    let plan = eqfuse::optimize(&p, &OptimizeOptions::default()).unwrap().result.plan;
    let code = eqfuse_codegen::c::generate(&plan);
    assert!(code.kernels.iter().all(Result::is_ok), "{:?}", code.kernels);
    let dir = common::scratch("staged_scan");
    let vec = vectorised_lines(&code.source, &dir);
    for name in ["fold", "scan"] {
        // the first loop of a staged block computes the elements
        let (text, lines) = entry(&code.source, name, "for (long long j = jb; j < je; ++j) {");
        insta::assert_snapshot!(format!("scan_{name}"), text);
        assert_eq!(lines.len(), 2, "{text}");
        assert!(vec.contains(&lines[0]), "{name}: the elements' loop is not vectorised ({vec:?})\n{text}");
    }
}

/// The generated C of `src`'s optimised plan and the lines the C compiler vectorises.
fn code_of(src: &str, scratch: &str) -> (String, Vec<usize>) {
    let plan =
        eqfuse::optimize(&eqfuse::parse(src).unwrap(), &OptimizeOptions::default()).unwrap().result.plan;
    let code = eqfuse_codegen::c::generate(&plan);
    assert!(code.kernels.iter().all(Result::is_ok), "{:?}", code.kernels);
    let vec = vectorised_lines(&code.source, &common::scratch(scratch));
    (code.source, vec)
}

#[test]
fn a_filters_compaction_and_a_permutes_scatter_come_after_a_vectorised_loop() {
    let filter = "input x : f32[n]\noutput o = filter (\\v -> v > 1.5) (map (\\v -> exp v) x)\n";
    let permute = "input x : f32[n]
output h = permute (+) (fill [16] 0) (\\i -> i64 (exp x[i] * 4.0) % 16) (fill [n] 1)
";
    for (src, name, what) in [(filter, "write", "filter"), (permute, "permute", "permute")] {
        let (source, vec) = code_of(src, &format!("staged_{what}"));
        let (text, lines) = entry(&source, name, "for (long long j = jb; j < je; ++j) {");
        insta::assert_snapshot!(format!("{what}_{name}"), text);
        assert_eq!(lines.len(), 2, "{text}");
        assert!(vec.contains(&lines[0]), "{what}: the elements' loop is not vectorised ({vec:?})\n{text}");
    }
    // and they agree with the reference, blocks partly filled
    let (seed, mut next) = rng();
    for n in [0usize, 1, 255, 256, 257, 1 + (next() % 100_000) as usize] {
        let v: Vec<f32> = (0..n).map(|_| (next() % 1024) as f32 / 512.0).collect();
        let mut ins = Arrays::new();
        ins.insert("x".into(), Value::from(ndarray::Array1::from(v).into_dyn()));
        for src in [filter, permute] {
            let checked = eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap();
            let want = eqfuse::run(&checked, Backend::Reference, &ins).unwrap();
            let got = eqfuse::run(&checked, Backend::Cpu, &ins).unwrap();
            assert_eq!(got, want, "seed {seed}, n {n}:\n{src}");
        }
    }
}
