//! `eqfuse bench --cpu-codegen vm` times the VM: the benchmark suite honours the choice of
//! code generator (it used to run native C whatever was asked). One test in its own binary:
//! it reads the process-wide count of kernels run as native code.

use eqfuse::bench::{bench, BenchOptions, PROGRAMS};
use std::time::Duration;

#[test]
fn the_suite_runs_the_code_generator_asked_for() {
    let p = PROGRAMS.iter().find(|p| p.name == "saxpy").expect("saxpy is a benchmark program");
    let tiny = |cpu_codegen| BenchOptions {
        scale: 0.001,
        min_time: Duration::from_millis(1),
        min_runs: 1,
        cpu_codegen,
    };
    let before = eqfuse_exec_cpu::native_counts().native;
    bench(p, &tiny(eqfuse_exec_cpu::Codegen::Vm), eqfuse::Backend::Cpu).expect("bench on the VM");
    assert_eq!(eqfuse_exec_cpu::native_counts().native, before, "--cpu-codegen vm ran native kernels");
    bench(p, &tiny(eqfuse_exec_cpu::Codegen::C), eqfuse::Backend::Cpu).expect("bench in C");
    assert!(eqfuse_exec_cpu::native_counts().native > before, "--cpu-codegen c ran no native kernel");
}
