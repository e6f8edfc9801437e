//! Optimisation time against program size (docs/optimizer-growth.md): four shapes of
//! program at 1k, 4k and 16k array operations, each optimised to the end (the time limit
//! is set far beyond the run, so the deadline does not cap the growth it measures).
//!
//! - `chain`: `let a{k} = map (\x -> x + 1.0) a{k-1}`, the last one the output (rolled
//!   into one kernel with a loop before saturation, `optimize/src/preroll.rs`);
//! - `mixed`: the chain with `\x -> x * 1.0001 + c` and `c` cycling through seven values,
//!   so that nothing is rolled first and saturation fuses it all;
//! - `wide`: independent outputs `o{k} = map (\x -> x * k) a0` (horizontal fusion groups
//!   them);
//! - `nest`: the chain written as one expression of nested `let .. in` (scoping, not
//!   top-level names).
//!
//! `EQFUSE_GROWTH_SIZES=1000,2000` picks other sizes; `EQFUSE_GROWTH_SHAPES=chain` other
//! shapes. `scripts/optimizer_growth.py` plots criterion's estimates and fits the growth
//! exponent.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};
use eqfuse_ir::ast::Limits;
use std::hint::black_box;
use std::time::Duration;

/// The source of shape `shape` with `n` array operations.
fn program(shape: &str, n: usize) -> String {
    let mut s = String::from("input a0 : f32[n]\n");
    match shape {
        "chain" => {
            for k in 1..=n {
                s += &format!("let a{k} = map (\\x -> x + 1.0) a{}\n", k - 1);
            }
            s += &format!("output y = a{n}\n");
        }
        "mixed" => {
            for k in 1..=n {
                s += &format!("let a{k} = map (\\x -> x * 1.0001 + {}.5) a{}\n", k % 7, k - 1);
            }
            s += &format!("output y = a{n}\n");
        }
        "wide" => {
            for k in 1..=n {
                s += &format!("output o{k} = map (\\x -> x * {k}.0) a0\n");
            }
        }
        _ => {
            s += "output y =\n";
            for k in 1..=n {
                s += &format!("  let a{k} = map (\\x -> x + 1.0) a{} in\n", k - 1);
            }
            s += &format!("  a{n}\n");
        }
    }
    s
}

fn list(var: &str, default: &str) -> Vec<String> {
    std::env::var(var)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .map(|s| s.trim().to_string())
        .collect()
}

fn growth(c: &mut Criterion) {
    let sizes: Vec<usize> =
        list("EQFUSE_GROWTH_SIZES", "1000,4000,16000").iter().filter_map(|s| s.parse().ok()).collect();
    // deep nests parse, check and decode recursively: the decoder's depth limit, on a big stack
    let limits = Limits { max_depth: eqfuse_egraph::decode::DECODED_MAX_DEPTH, ..Limits::default() };
    let opts = eqfuse::OptimizeOptions { time_limit: Duration::from_secs(3600), ..Default::default() };
    for shape in list("EQFUSE_GROWTH_SHAPES", "chain,mixed,wide,nest") {
        let mut g = c.benchmark_group(format!("optimize/{shape}"));
        g.sampling_mode(SamplingMode::Flat).sample_size(10).warm_up_time(Duration::from_millis(1));
        g.measurement_time(Duration::from_secs(1));
        for &n in &sizes {
            let src = program(&shape, n);
            let checked = eqfuse_egraph::with_big_stack(|| {
                eqfuse_ir::check::check_with(
                    &eqfuse_ir::parse::parse_with(&src, &limits).expect("parse"),
                    &limits,
                )
            })
            .expect("check");
            g.bench_with_input(BenchmarkId::from_parameter(n), &checked, |b, checked| {
                b.iter(|| eqfuse_optimize::optimize(black_box(checked), &opts).expect("optimize"))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, growth);
criterion_main!(benches);
