//! A `reshape` of a materialised array is a view: its result shares the array's elements
//! (no kernel runs, no buffer is allocated), and gives what the reference interpreter gives.
//! Its own test binary: the allocation count is per process.

#![allow(clippy::unwrap_used)]

use eqfuse::{Arrays, Backend, Value};

/// Runs `src` on the CPU (native code) and on the reference interpreter: the result
/// buffers the CPU run allocated, after checking that both agree.
fn allocations(src: &str, inputs: &Arrays) -> usize {
    // the count is per process: one run at a time
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let checked = eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap();
    let before = eqfuse_exec_cpu::result_allocations();
    let out = eqfuse::run(&checked, Backend::Cpu, inputs);
    let used = eqfuse_exec_cpu::result_allocations() - before;
    let want = eqfuse::run(&checked, Backend::Reference, inputs);
    match (out, want) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{src}"),
        (Err(a), Err(b)) => assert_eq!((a.code, a.message), (b.code, b.message), "{src}"),
        (a, b) => panic!("{src}\nCPU: {a:?}\nreference: {b:?}"),
    }
    used
}

fn vector(n: usize) -> Arrays {
    let mut inputs = Arrays::new();
    let x = ndarray::Array1::from_shape_fn(n, |i| (i % 13) as f32 * 0.25 - 1.0).into_dyn();
    inputs.insert("x".into(), Value::from(x));
    inputs
}

#[test]
fn a_reshaped_result_shares_the_elements_of_the_array() {
    // one kernel computes the map; the reshape allocates nothing
    let one = "input x : f32[n]\noutput o = reshape [4, n / 4] (map (\\v -> exp v) x)\n";
    assert_eq!(allocations(one, &vector(4096)), 1);
    // the array is also reduced, and both it and its reshape are read afterwards
    let shared = "input x : f32[n]
let a = map (\\v -> v * 2.0 + 1.0) x  -- exact: any order of the sums gives the same
let b = reshape [8, n / 8] a
output s = reduce (+) 0.0 a
output o = reduce (+) 0.0 b
output c = b
";
    let n = allocations(shared, &vector(4096));
    let o = eqfuse::optimize(&eqfuse::parse(shared).unwrap(), &eqfuse::OptimizeOptions::default()).unwrap();
    let views = o.result.plan.kernels().iter().filter(|k| k.view_of.is_some()).count();
    assert!(views >= 1, "no reshape became a view:\n{}", o.result.plan);
    // one buffer per lane of every kernel but the views
    let lanes: usize =
        o.result.plan.kernels().iter().filter(|k| k.view_of.is_none()).map(|k| k.lanes.len()).sum();
    assert_eq!(n, lanes, "{}", o.result.plan);
}

#[test]
fn a_reshape_whose_counts_differ_is_the_same_error() {
    let src = "input x : f32[n]\noutput o = reshape [3, n / 3] (map (\\v -> v + 1.0) x)\n";
    allocations(src, &vector(100));
    // a negative extent: the kernel runs and reports it, as the reference does
    let neg = "input x : f32[n]\noutput o = reshape [0 - 2, 0 - n / 2] (map (\\v -> v + 1.0) x)\n";
    allocations(neg, &vector(100));
}

#[test]
fn a_loop_state_through_views_keeps_its_values() {
    // the state is reshaped to a vector and back each step: views of buffers the loop
    // double-buffers
    let src = "input t0 : f32[h, w]
input steps : i64
output t = loop t = t0 for s < steps do
  reshape [h, w] (map (\\v -> v * 0.5 + 1.0) (reshape [h * w] t))
";
    for steps in [0, 1, 2, 5] {
        let mut inputs = Arrays::new();
        let grid = ndarray::Array2::from_shape_fn((16, 24), |(i, j)| (i * 3 + j) as f32).into_dyn();
        inputs.insert("t0".into(), Value::from(grid));
        inputs.insert("steps".into(), Value::from(ndarray::arr0(steps as i64).into_dyn()));
        allocations(src, &inputs);
    }
}
