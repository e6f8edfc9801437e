//! `eqfuse bench [--backend cpu|cuda] [--filter NAME] [--json]`: the optimised plan, the
//! unfused plan, a hand-written loop and the input-copy floor, timed in one run.
//! `eqfuse bench PROGRAM.eqf (--inputs DIR | --random-inputs SEED [--size NAME=N]...)`
//! times a program of one's own instead: its optimised and unfused plans (least, median
//! and greatest time), timed interleaved run by run ([`eqfuse::bench::interleaved`]), the
//! compile time of their native code reported apart. `eqfuse bench A.eqf B.eqf ...` times
//! several programs (phrasings of one computation), each with its own inputs: their
//! optimised plans, interleaved run by run, each with its time over the fastest's and its
//! plan digest, and whether they share one plan.
//! `--dump-inputs DIR` writes each chosen program's generated inputs instead
//! (`DIR/PROGRAM/INPUT.npy`, what `eqfuse run --inputs` reads), so that other tools
//! (`benches/peers/`) compute on exactly the benchmarked data; with PROGRAM, its inputs
//! (`DIR/INPUT.npy`, as `eqfuse run --save-inputs DIR` writes them). `--json` prints one
//! JSON object for PROGRAM, a list for several programs and for the built-in programs.
//! Every plan is chosen by [`eqfuse::plan_options`], as `eqfuse run` chooses it.

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
    /// compile time reported apart). Several programs (phrasings of one computation): their
    /// optimised plans, timed interleaved run by run, each with its own inputs.
    #[arg(value_name = "PROGRAM")]
    programs: Vec<PathBuf>,
    /// With PROGRAM: read every `DIR/NAME.npy` as input `NAME`.
    #[arg(long, value_name = "DIR", requires = "programs")]
    inputs: Option<PathBuf>,
    /// With PROGRAM: random inputs of the declared types (as `eqfuse run --random-inputs`).
    #[arg(long, value_name = "SEED", requires = "programs", conflicts_with = "inputs")]
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
    match a.programs.as_slice() {
        [] => {}
        [program] => return bench_program(a, program, &opts),
        programs => return bench_programs(a, programs, &opts),
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

/// A plan made ready to time: its row (times not yet filled), and what runs it once; no
/// runner where the plan failed its first run, the reason in the row.
type Runner<'a> = (Row, Option<Run<'a>>);

/// One run of a plan, its result discarded.
type Run<'a> = Box<dyn FnMut() + 'a>;

/// A plan of `bench PROGRAM` made ready to time on `backend`: compiled (its native code on
/// the CPU; on the GPU, the inputs uploaded once, as a peer's arrays live there, and a first
/// run, reported as `compile`, that compiles the kernels) and run once, whose error is
/// reported (the timed runs' results are not looked at). The optimised plan's failure is
/// the command's; another plan's is its row's (the unfused plan may not fit where the
/// optimised one does: a matrix product materialises its n·m·k products).
fn runner<'a>(
    label: &'static str,
    plan: &'a eqfuse::ir::plan::Plan,
    p: &'a Prepared,
    opts: &BenchOptions,
) -> std::result::Result<Runner<'a>, Error> {
    let (kernels, digest) = (eqfuse::kernel_count(plan), eqfuse::plan_digest(plan));
    let mut row = Row { label, kernels, digest, native: None, compile_ms: None, times: Err(String::new()) };
    let first: std::result::Result<Run<'a>, Error> = if p.backend == eqfuse::Backend::Cuda {
        eqfuse::bench::device_run(plan, &p.inputs, &p.sizes).map(|(first_s, run)| {
            row.compile_ms = Some(first_s * 1e3);
            run
        })
    } else {
        let ropts = eqfuse_exec_cpu::RunOptions {
            codegen: opts.cpu_codegen,
            ..eqfuse_exec_cpu::RunOptions::default()
        };
        let report = eqfuse_exec_cpu::compile_plan(plan, &ropts);
        if let Some(why) = &report.failure {
            eprintln!("bench: {}: {label}: no native code: {why}", p.path.display());
        }
        row.native = Some(report.native.len());
        row.compile_ms = (!report.cached).then_some(report.compile_seconds * 1e3);
        eqfuse_exec_cpu::run(plan, &p.inputs, &p.sizes, &ropts).map(|_| {
            Box::new(move || {
                let _ = std::hint::black_box(eqfuse_exec_cpu::run(plan, &p.inputs, &p.sizes, &ropts));
            }) as Run<'a>
        })
    };
    match first {
        Ok(run) => Ok((row, Some(run))),
        Err(e) if label == "optimised" => Err(e),
        Err(e) => {
            row.times = Err(e.to_string());
            Ok((row, None))
        }
    }
}

/// Times the runners that have a run, interleaved run by run ([`eqfuse::bench::interleaved`]),
/// and returns their rows with the times filled.
fn time_interleaved(runners: Vec<Runner<'_>>, opts: &BenchOptions) -> Vec<Row> {
    let (mut rows, mut runs): (Vec<Row>, Vec<Option<Run<'_>>>) = runners.into_iter().unzip();
    let mut fs: Vec<&mut dyn FnMut()> =
        runs.iter_mut().flatten().map(|f| &mut **f as &mut dyn FnMut()).collect();
    let mut times = eqfuse::bench::interleaved(opts, &mut fs).into_iter();
    for (row, run) in rows.iter_mut().zip(&runs) {
        if run.is_some() {
            if let Some(t) = times.next() {
                row.times = Ok(t);
            }
        }
    }
    rows
}

/// A program of one's own, ready to time: checked, its inputs made or read, optimised.
struct Prepared {
    path: PathBuf,
    backend: eqfuse::Backend,
    inputs: indexmap::IndexMap<String, eqfuse::ir::value::Value>,
    sizes: indexmap::IndexMap<String, i64>,
    opt: eqfuse::Optimized,
    optimise_s: f64,
}

/// The inputs of `program` (`--random-inputs` or `--inputs`), written to `--dump-inputs`
/// when given (then `None`: nothing is timed), and its plans as `eqfuse run` chooses them.
fn prepare(
    a: &BenchArgs,
    program: &std::path::Path,
) -> std::result::Result<Option<Prepared>, super::Failure> {
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
        return Ok(None);
    }
    // the plan `eqfuse run` runs: the same options, whatever the inputs' sizes
    let oopts = eqfuse::plan_options(backend, eqfuse::OptimizeOptions::default());
    let t0 = std::time::Instant::now();
    let opt = eqfuse::optimize_checked(checked, &oopts)?;
    let optimise_s = t0.elapsed().as_secs_f64();
    Ok(Some(Prepared { path: program.to_path_buf(), backend, inputs, sizes: bound.sizes, opt, optimise_s }))
}

/// `eqfuse bench PROGRAM`: the user's program, optimised and unfused, on the chosen backend.
fn bench_program(a: &BenchArgs, program: &std::path::Path, opts: &BenchOptions) -> CmdResult {
    let Some(p) = prepare(a, program)? else {
        return Ok(());
    };
    let (backend, optimise_s) = (p.backend, p.optimise_s);
    let runners = vec![
        runner("optimised", &p.opt.result.plan, &p, opts)?,
        runner("unfused", &p.opt.result.unfused_plan, &p, opts)?,
    ];
    let rows = time_interleaved(runners, opts);
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

/// `eqfuse bench PROGRAM PROGRAM...`: the programs' optimised plans, each with its own
/// inputs, timed interleaved run by run ([`eqfuse::bench::interleaved`]), so that a busy
/// period of the machine falls on all of them alike.
fn bench_programs(a: &BenchArgs, programs: &[PathBuf], opts: &BenchOptions) -> CmdResult {
    if a.dump_inputs.is_some() {
        return Err(Error::new(Code::Input, "bench --dump-inputs takes one PROGRAM").into());
    }
    let mut prepared = Vec::with_capacity(programs.len());
    for program in programs {
        let Some(p) = prepare(a, program)? else { return Ok(()) };
        prepared.push(p);
    }
    let mut runners = Vec::with_capacity(programs.len());
    for p in &prepared {
        runners.push(runner("optimised", &p.opt.result.plan, p, opts)?);
    }
    let rows = time_interleaved(runners, opts);
    if a.json {
        let list: Vec<serde_json::Value> = programs
            .iter()
            .zip(&prepared)
            .zip(&rows)
            .map(|((program, p), row)| {
                serde_json::json!({
                    "program": program.display().to_string(),
                    "backend": p.backend.name(),
                    "optimise_ms": p.optimise_s * 1e3,
                    "interleaved": true,
                    "plans": [row.json()],
                })
            })
            .collect();
        println!("{:#}", serde_json::Value::Array(list));
        return Ok(());
    }
    let fastest =
        rows.iter().filter_map(|r| r.times.as_ref().ok().map(|t| t.0)).fold(f64::INFINITY, f64::min);
    println!("the optimised plans, timed interleaved run by run:");
    println!(
        "{:<10} {:>8} {:>8} {:>12} {:>12} {:>12} {:>12} {:>9}  {:<8}  program",
        "plan", "kernels", "native", "compile", "min", "median", "max", "min/best", "digest"
    );
    for (program, row) in programs.iter().zip(&rows) {
        let ratio = row.times.as_ref().map_or(f64::NAN, |t| t.0 / fastest);
        let digest = row.digest.get(..8).unwrap_or(&row.digest);
        println!("{} {ratio:>8.2}x  {digest:<8}  {}", row.text(), program.display());
    }
    // the plan digest (`explain` prints it) hashes the plan's text, array names included
    let mut digests: Vec<&str> = rows.iter().map(|r| r.digest.as_str()).collect();
    digests.sort_unstable();
    digests.dedup();
    match digests.len() {
        1 => println!("one plan for all {} programs", rows.len()),
        n => println!(
            "{n} distinct plans (by digest: the same plan under other array names counts as another)"
        ),
    }
    Ok(())
}
