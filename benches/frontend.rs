//! Front-end and reference-interpreter throughput on the conformance programs: how long
//! parsing, checking and interpreting take (the interpreter is the test oracle, so its
//! speed bounds how large the property tests can be).

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::path::Path;

fn cases() -> Vec<(String, String, eqfuse::Arrays)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut out = Vec::new();
    for name in ["blackscholes", "mandelbrot", "nbody", "softmax_rows", "iterated_map"] {
        let dir = root.join(name);
        let src = std::fs::read_to_string(dir.join("program.eqf")).expect("program");
        let inputs = eqfuse::files::read_inputs(Some(&dir.join("inputs")), &[]).expect("inputs");
        out.push((name.to_string(), src, inputs));
    }
    out
}

fn frontend(c: &mut Criterion) {
    let cases = cases();
    let mut g = c.benchmark_group("parse+check");
    for (name, src, _) in &cases {
        g.bench_function(name.as_str(), |b| {
            b.iter(|| eqfuse::check(&eqfuse::parse(black_box(src)).expect("parse")).expect("check"))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("reference");
    g.sample_size(10);
    for (name, src, inputs) in &cases {
        let checked = eqfuse::check(&eqfuse::parse(src).expect("parse")).expect("check");
        g.bench_function(name.as_str(), |b| {
            b.iter(|| eqfuse::run(&checked, eqfuse::Backend::Reference, black_box(inputs)).expect("run"))
        });
    }
    g.finish();
}

criterion_group!(benches, frontend);
criterion_main!(benches);
