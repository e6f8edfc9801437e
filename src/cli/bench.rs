//! `eqfuse bench [--backend cpu|cuda] [--filter NAME] [--json]`: the optimised plan, the
//! unfused plan, a hand-written loop and the input-copy floor, timed in one run.
//! `eqfuse bench PROGRAM.eqf (--inputs DIR | --random-inputs SEED [--size NAME=N]...)`
//! times a program of one's own instead: its optimised and unfused plans (least, median
//! and greatest time), the compile time of their native code reported apart.
//! `--dump-inputs DIR` writes each chosen program's generated inputs instead
//! (`DIR/PROGRAM/INPUT.npy`, what `eqfuse run --inputs` reads), so that other tools
//! (`benches/peers/`) compute on exactly the benchmarked data; with PROGRAM, its inputs
//! (`DIR/INPUT.npy`, as `eqfuse run --save-inputs DIR` writes them). `--json` prints one
//! JSON object for PROGRAM, a list for the built-in programs. Every plan is chosen by
//! [`eqfuse::plan_options`], as `eqfuse run` chooses it.

use super::CmdResult;
use clap::Args;
use eqfuse::bench::{BenchOptions, Measurement, PROGRAMS};
use eqfuse::{Code, Error};
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `eqfuse bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Time this program instead of the built-in ones (its optimised and unfused plans;
    /// compile time reported apart).
    program: Option<PathBuf>,
    /// With PROGRAM: read every `DIR/NAME.npy` as input `NAME`.
    #[arg(long, value_name = "DIR", requires = "program")]
    inputs: Option<PathBuf>,
    /// With PROGRAM: random inputs of the declared types (as `eqfuse run --random-inputs`).
    #[arg(long, value_name = "SEED", requires = "program", conflicts_with = "inputs")]
    random_inputs: Option<u64>,
    /// With `--random-inputs`: the value of a size name (repeatable; others are 1000).
    #[arg(long = "size", value_name = "NAME=N", value_parser = super::run::parse_size, requires = "random_inputs")]
    size: Vec<(String, i64)>,
    /// How the CPU runs kernels (`c` or `vm`), as `eqfuse run --cpu-codegen`.
    #[arg(long, value_name = "HOW", default_value = "c", value_parser = ["c", "vm"])]
    cpu_codegen: String,
    /// The backend that runs the plans.
    #[arg(long, value_enum, default_value_t = BenchBackend::Cpu)]
    backend: BenchBackend,
    /// Only the programs whose name contains this.
    #[arg(long, value_name = "NAME")]
    filter: Option<String>,
    /// Print JSON instead of a table: a list of objects (docs/design-decisions.md) for the
    /// built-in programs, one object for PROGRAM.
    #[arg(long)]
    json: bool,
    /// Scale every size by this factor (1.0: the documented sizes).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Least time spent timing each variant, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 400)]
    min_time_ms: u64,
    /// Write each chosen program's inputs (at `--scale`) to `DIR/PROGRAM/INPUT.npy` and
    /// time nothing; with PROGRAM, its inputs to `DIR/INPUT.npy` (as `eqfuse run
    /// --save-inputs DIR`).
    #[arg(long, value_name = "DIR")]
    dump_inputs: Option<PathBuf>,
}

/// Which backend runs the plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchBackend {
    /// The CPU executor.
    Cpu,
    /// The CUDA executor.
    Cuda,
}

/// Runs the benchmarks.
pub fn bench(a: &BenchArgs) -> CmdResult {
    let backend = match a.backend {
        BenchBackend::Cpu => eqfuse::Backend::Cpu,
        BenchBackend::Cuda if eqfuse_exec_cuda::available() => eqfuse::Backend::Cuda,
        BenchBackend::Cuda => {
            return Err(Error::new(
                Code::Device,
                "bench --backend cuda: no CUDA driver or no GPU on this machine",
            )
            .into())
        }
    };
    if !(a.scale.is_finite() && a.scale > 0.0 && a.scale <= 16.0) {
        return Err(Error::new(Code::Limit, format!("--scale {} is not in (0, 16]", a.scale)).into());
    }
    let opts = BenchOptions {
        scale: a.scale,
        min_time: Duration::from_millis(a.min_time_ms),
        cpu_codegen: super::limits::codegen(&a.cpu_codegen),
        ..BenchOptions::default()
    };
    if let Some(program) = &a.program {
        return bench_program(a, program, &opts);
    }
    let chosen: Vec<_> =
        PROGRAMS.iter().filter(|p| a.filter.as_deref().is_none_or(|f| p.name.contains(f))).collect();
    if chosen.is_empty() {
        let names: Vec<&str> = PROGRAMS.iter().map(|p| p.name).collect();
        return Err(Error::new(
            Code::Input,
            format!(
                "no benchmark matches `{}`; they are {}",
                a.filter.as_deref().unwrap_or(""),
                names.join(", ")
            ),
        )
        .into());
    }
    if let Some(dir) = &a.dump_inputs {
        for p in chosen {
            let (inputs, _, _) = eqfuse::bench::setup(p.name, a.scale)?;
            for path in eqfuse::files::write_outputs(&dir.join(p.name), &inputs)? {
                println!("wrote {}", path.display());
            }
        }
        return Ok(());
    }
    let mut out: Vec<Measurement> = Vec::new();
    if !a.json {
        println!(
            "{:<15} {:>10} {:>12} {:>12} {:>12} {:>12} {:>9} {:>9}",
            "program", "elements", "fused", "unfused", "hand", "copy", "fused/hand", "unfused/fused"
        );
    }
    for p in chosen {
        eprintln!("bench: {} ...", p.name);
        let started = std::time::Instant::now();
        let m = eqfuse::bench::bench(p, &opts, backend)?;
        eprintln!("bench: {} took {:.1} s", p.name, started.elapsed().as_secs_f64());
        if !a.json {
            let ms = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |x| format!("{:.3}ms", x * 1e3));
            let ratio = m.handwritten_s.map_or_else(|| "-".to_string(), |h| format!("{:.2}x", m.fused_s / h));
            println!(
                "{:<15} {:>10} {:>12} {:>12} {:>12} {:>12} {:>9} {:>9.2}x",
                m.program,
                m.elements,
                ms(Some(m.fused_s)),
                ms(Some(m.unfused_s)),
                ms(m.handwritten_s),
                ms(m.copy_s),
                ratio,
                m.unfused_s / m.fused_s
            );
        }
        out.push(m);
    }
    if a.json {
        let j = serde_json::to_string_pretty(&out)
            .map_err(|e| eqfuse_ir::error::internal(format!("JSON: {e}")))?;
        println!("{j}");
    }
    Ok(())
}

/// One plan's row of `bench PROGRAM`.
struct Row {
    /// `optimised` or `unfused`.
    label: &'static str,
    /// [`eqfuse::kernel_count`].
    kernels: usize,
    /// [`eqfuse::plan_digest`].
    digest: String,
    /// Kernels run as native code (the CPU); `None` on the GPU.
    native: Option<usize>,
    /// The compile time in milliseconds, `None` when the code came from the cache.
    compile_ms: Option<f64>,
    /// Least, median and greatest time in seconds; or why the plan was not run.
    times: Result<(f64, f64, f64), String>,
}

impl Row {
    fn text(&self) -> String {
        let Row { label, kernels, native, compile_ms, times, .. } = self;
        let (lo, med, hi) = match times {
            Ok(t) => *t,
            Err(why) => return format!("{label:<10} {kernels:>8} not run: {why}"),
        };
        let native = native.map_or_else(|| "-".to_string(), |n| n.to_string());
        let compile = compile_ms.map_or_else(|| "cached".to_string(), |ms| format!("{ms:.1}ms"));
        format!(
            "{label:<10} {kernels:>8} {native:>8} {compile:>12} {:>10.3}ms {:>10.3}ms {:>10.3}ms",
            lo * 1e3,
            med * 1e3,
            hi * 1e3
        )
    }

    fn json(&self) -> serde_json::Value {
        let (t, why) = match &self.times {
            Ok((lo, med, hi)) => (Some([lo * 1e3, med * 1e3, hi * 1e3]), None),
            Err(why) => (None, Some(why.clone())),
        };
        serde_json::json!({
            "plan": self.label, "kernels": self.kernels, "digest": self.digest, "native": self.native,
            "compile_ms": self.compile_ms, "min_ms": t.map(|t| t[0]), "median_ms": t.map(|t| t[1]),
            "max_ms": t.map(|t| t[2]), "not_run": why,
        })
    }
}

/// One row of `bench PROGRAM --backend cuda` ([`eqfuse::bench::on_device`]: the first run,
/// which compiles the kernels, reported as `compile`).
fn bench_on_device(
    label: &'static str,
    plan: &eqfuse::ir::plan::Plan,
    inputs: &indexmap::IndexMap<String, eqfuse::ir::value::Value>,
    sizes: &indexmap::IndexMap<String, i64>,
    opts: &BenchOptions,
) -> std::result::Result<Row, Error> {
    let (kernels, digest) = (eqfuse::kernel_count(plan), eqfuse::plan_digest(plan));
    let row =
        |compile_ms, times| Row { label, kernels, digest: digest.clone(), native: None, compile_ms, times };
    match eqfuse::bench::on_device(plan, inputs, sizes, opts) {
        Ok((first, t)) => Ok(row(Some(first * 1e3), Ok(t))),
        // the unfused plan may not fit where the optimised one does (above)
        Err(e) if label != "optimised" => Ok(row(None, Err(e.to_string()))),
        Err(e) => Err(e),
    }
}

/// One row of `bench PROGRAM` on the CPU.
fn bench_on_cpu(
    label: &'static str,
    plan: &eqfuse::ir::plan::Plan,
    inputs: &indexmap::IndexMap<String, eqfuse::ir::value::Value>,
    sizes: &indexmap::IndexMap<String, i64>,
    opts: &BenchOptions,
) -> std::result::Result<Row, Error> {
    let ropts =
        eqfuse_exec_cpu::RunOptions { codegen: opts.cpu_codegen, ..eqfuse_exec_cpu::RunOptions::default() };
    let (kernels, digest) = (eqfuse::kernel_count(plan), eqfuse::plan_digest(plan));
    let report = eqfuse_exec_cpu::compile_plan(plan, &ropts);
    if let Some(why) = &report.failure {
        eprintln!("bench: {label}: no native code: {why}");
    }
    let native = Some(report.native.len());
    let compile_ms = (!report.cached).then_some(report.compile_seconds * 1e3);
    if let Err(e) = eqfuse_exec_cpu::run(plan, inputs, sizes, &ropts) {
        // the unfused plan may not fit where the optimised one does (a matrix product
        // materialises its n·m·k products): the optimised row stands on its own
        if label == "optimised" {
            return Err(e);
        }
        return Ok(Row { label, kernels, digest, native, compile_ms, times: Err(e.to_string()) });
    }
    let times = eqfuse::bench::spread(opts, || eqfuse_exec_cpu::run(plan, inputs, sizes, &ropts));
    Ok(Row { label, kernels, digest, native, compile_ms, times: Ok(times) })
}

/// `eqfuse bench PROGRAM`: the user's program, optimised and unfused, on the chosen backend.
fn bench_program(a: &BenchArgs, program: &std::path::Path, opts: &BenchOptions) -> CmdResult {
    use eqfuse::random_inputs::{self, RandomInputs};
    let backend = if a.backend == BenchBackend::Cuda { eqfuse::Backend::Cuda } else { eqfuse::Backend::Cpu };
    let limits = eqfuse::Limits::default();
    let checked = super::load_with(program, &limits)?;
    let inputs = match a.random_inputs {
        Some(seed) => {
            let mut ro = RandomInputs::new(seed);
            ro.sizes.extend(a.size.iter().cloned());
            random_inputs::random_inputs(&checked, &ro)?
        }
        None if a.inputs.is_some() => eqfuse::files::read_inputs(a.inputs.as_deref(), &[])?,
        None => {
            return Err(Error::new(
                Code::Input,
                "bench PROGRAM needs inputs: `--inputs DIR` or `--random-inputs SEED [--size NAME=N]...`",
            )
            .into())
        }
    };
    let bound = eqfuse::ir::bind::bind_inputs(&checked, &inputs, &limits)?;
    if let Some(dir) = &a.dump_inputs {
        for path in eqfuse::files::write_outputs(dir, &inputs)? {
            println!("wrote {}", path.display());
        }
        return Ok(());
    }
    // the plan `eqfuse run` runs: the same options, whatever the inputs' sizes
    let oopts = eqfuse::plan_options(backend, eqfuse::OptimizeOptions::default());
    let t0 = std::time::Instant::now();
    let opt = eqfuse::optimize_checked(checked.clone(), &oopts)?;
    let optimise_s = t0.elapsed().as_secs_f64();
    let mut rows = Vec::with_capacity(2);
    for (label, plan) in [("optimised", &opt.result.plan), ("unfused", &opt.result.unfused_plan)] {
        rows.push(if backend == eqfuse::Backend::Cuda {
            bench_on_device(label, plan, &inputs, &bound.sizes, opts)?
        } else {
            bench_on_cpu(label, plan, &inputs, &bound.sizes, opts)?
        });
    }
    if a.json {
        let j = serde_json::json!({
            "program": program.display().to_string(),
            "backend": backend.name(),
            "optimise_ms": optimise_s * 1e3,
            "plans": rows.iter().map(Row::json).collect::<Vec<_>>(),
        });
        println!("{j:#}");
        return Ok(());
    }
    println!("{}: optimised in {:.1} ms", program.display(), optimise_s * 1e3);
    println!(
        "{:<10} {:>8} {:>8} {:>12} {:>12} {:>12} {:>12}",
        "plan", "kernels", "native", "compile", "min", "median", "max"
    );
    for r in &rows {
        println!("{}", r.text());
    }
    Ok(())
}
