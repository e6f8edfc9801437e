//! The `eqfuse bench` programs under criterion, one group per program with the same four
//! variants: the optimised plan, the unfused plan, the hand-written loop
//! (`benches/handwritten.rs`) and a copy of the input bytes. Sizes are `eqfuse bench`'s
//! scaled by `EQFUSE_BENCH_SCALE` (default 1/16, so `cargo bench` stays short).

use criterion::{criterion_group, criterion_main, Criterion};
use eqfuse::bench::{handwritten, setup, PROGRAMS};
use std::hint::black_box;

fn programs(c: &mut Criterion) {
    let scale: f64 =
        std::env::var("EQFUSE_BENCH_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0 / 16.0);
    for p in PROGRAMS {
        let prog = eqfuse::parse(p.source).expect("parses");
        let checked = eqfuse::check(&prog).expect("checks");
        let (inputs, _, hw) = setup(p.name, scale).expect("inputs");
        let opt = eqfuse::optimize_checked(checked.clone(), &eqfuse::OptimizeOptions::default())
            .expect("optimises");
        let bound = eqfuse::ir::bind::bind_inputs(&checked, &inputs, &eqfuse::Limits::default())
            .expect("binds the inputs");
        let ropts = eqfuse_exec_cpu::RunOptions::default();
        let bytes: usize = inputs.values().map(|v| v.len() * v.elem_type().size_bytes()).sum();
        let (src, mut dst) = (vec![1u8; bytes.max(1)], vec![0u8; bytes.max(1)]);
        let mut g = c.benchmark_group(p.name);
        g.sample_size(10);
        g.bench_function("fused", |b| {
            b.iter(|| eqfuse_exec_cpu::run(black_box(&opt.result.plan), &inputs, &bound.sizes, &ropts))
        });
        g.bench_function("unfused", |b| {
            b.iter(|| {
                eqfuse_exec_cpu::run(black_box(&opt.result.unfused_plan), &inputs, &bound.sizes, &ropts)
            })
        });
        g.bench_function("handwritten", |b| b.iter(&hw));
        g.bench_function("copy", |b| b.iter(|| handwritten::copy_floor(black_box(&src), &mut dst)));
        g.finish();
    }
}

criterion_group!(benches, programs);
criterion_main!(benches);
