//! Native scans over long rows run in segments: each segment's elements are folded (and
//! kept in the outputs), the segments' carries prefixed, then each segment scanned from its
//! carry reading the kept elements back instead of computing them again. Checked against
//! the reference interpreter, with blocks small enough that every row has many segments,
//! at random lengths (the seed is printed). Operators and data are exact in any order
//! (`max`, integer `+`), so the results must be the reference's bits.

#![allow(clippy::unwrap_used)]

mod common;

use common::rng;
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
