//! A loop's state is double-buffered: the number of result buffers its kernels allocate
//! does not grow with the number of iterations (its own test binary: the count is
//! per process).

#![allow(clippy::unwrap_used)]

use eqfuse::{Arrays, Backend, Value};

#[test]
fn no_iteration_after_the_first_allocates() {
    let src = "input t0 : f32[h, w]
input steps : i64
output t = loop t = t0 for s < steps do
  generate [h, w] (\\i j ->
    if i == 0 || j == 0 || i == h - 1 || j == w - 1 then t[i, j]
    else 0.25 * (t[i - 1, j] + t[i + 1, j] + t[i, j - 1] + t[i, j + 1]))
";
    let checked = eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap();
    let grid = ndarray::Array2::from_shape_fn((64, 80), |(i, j)| ((i * 7 + j * 3) % 11) as f32).into_dyn();
    let allocations = |steps: i64| {
        let mut inputs = Arrays::new();
        inputs.insert("t0".into(), Value::from(grid.clone()));
        inputs.insert("steps".into(), Value::from(ndarray::arr0(steps).into_dyn()));
        let before = eqfuse_exec_cpu::result_allocations();
        let out = eqfuse::run(&checked, Backend::Cpu, &inputs).unwrap();
        let used = eqfuse_exec_cpu::result_allocations() - before;
        let want = eqfuse::run(&checked, Backend::Reference, &inputs).unwrap();
        assert_eq!(out, want, "{steps} steps");
        used
    };
    let (few, many) = (allocations(3), allocations(40));
    // the first iteration makes the state's two buffers; the rest swap them
    assert!(few > 0, "no native kernel ran");
    assert_eq!(few, many, "3 iterations allocated {few} buffers, 40 allocated {many}");
}
