//! `eqfuse explain PROGRAM [--json] [--no-opt] [--fuse-gas N] [--fast-math] [--size NAME=N]..`

use super::{load, CmdResult};
use clap::Args;
use eqfuse::{Code, Error, OptimizeOptions};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `eqfuse explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The `.eqf` program.
    program: PathBuf,
    /// Print one JSON object (docs/design-decisions.md, "The JSON objects").
    #[arg(long)]
    json: bool,
    /// Simplify only: no fusion phases (the unfused plan).
    #[arg(long)]
    no_opt: bool,
    /// Fusion budget: apply at most N fusing rewrites (bisect a bad rewrite with it).
    #[arg(long, value_name = "N")]
    fuse_gas: Option<usize>,
    /// Allow rewrites that change float results (reassociation, x - x = 0, ...).
    #[arg(long)]
    fast_math: bool,
    /// A size the cost model assumes, e.g. `--size n=1000000` (default 2^20 each). It
    /// changes the predicted times, and can change what is worth materialising.
    #[arg(long = "size", value_name = "NAME=N", value_parser = parse_size)]
    sizes: Vec<(String, u64)>,
    /// Most e-nodes per phase.
    #[arg(long, default_value_t = OptimizeOptions::default().node_limit)]
    node_limit: usize,
    /// Most iterations per phase.
    #[arg(long, default_value_t = OptimizeOptions::default().iter_limit)]
    iter_limit: usize,
    /// Time limit for the whole command, in milliseconds, counted from its start: reading and
    /// checking the program count, and the optimiser stops early enough to leave printing
    /// the plan about as long as reading took; it stops with the best plan it has, at worst
    /// the unfused one.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    time_limit_ms: u64,
    /// The cost model's parameters: `cpu` (calibrated by `eqfuse calibrate`, else defaults)
    /// or `cuda` (an H100-class GPU).
    #[arg(long, value_enum, default_value_t = CostBackend::Cpu)]
    backend: CostBackend,
    /// Also write the plan as a Graphviz DOT file.
    #[arg(long, value_name = "FILE")]
    dot: Option<PathBuf>,
    /// Also write each kernel's CUDA C, as `DIR/<kernel>.cu`, and each row block's as one
    /// kernel, `DIR/k<first>_rowblock.cu` (each compiles under NVRTC on its own).
    #[arg(long, value_name = "DIR")]
    cuda_source: Option<PathBuf>,
    /// Search every materialisation choice up to 16 candidate arrays (the default does up to
    /// 6, and searches greedily above).
    #[arg(long)]
    exact: bool,
    /// Also compile the plan for the CPU backend (native C, from the cache where it is
    /// there) and report which kernels run as native code, which on the VM and why, and the
    /// compile time (a `native` object in `--json`).
    #[arg(long)]
    compile: bool,
}

/// Which parameter set the cost model uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CostBackend {
    /// The CPU.
    Cpu,
    /// An NVIDIA GPU.
    Cuda,
}

fn parse_size(s: &str) -> Result<(String, u64), String> {
    match s.split_once('=') {
        Some((n, v)) if !n.is_empty() => {
            v.parse().map(|v| (n.to_string(), v)).map_err(|_| format!("`{v}` is not a size in `{s}`"))
        }
        _ => Err(format!("expected NAME=N, got `{s}`")),
    }
}

/// Optimises and explains.
pub fn explain(a: &ExplainArgs) -> CmdResult {
    let started = std::time::Instant::now();
    let checked = load(&a.program)?;
    if a.node_limit == 0 || a.iter_limit == 0 {
        return Err(Error::new(Code::Limit, "--node-limit and --iter-limit must be at least 1").into());
    }
    let opts = OptimizeOptions {
        node_limit: a.node_limit,
        iter_limit: a.iter_limit,
        // one deadline for the whole command: what reading and checking took is spent, and
        // summarising and printing the plan afterwards (linear in the program, as reading
        // it is) gets about as long again, at most a quarter of the limit
        time_limit: {
            let limit = Duration::from_millis(a.time_limit_ms.max(1));
            let read = started.elapsed();
            limit.saturating_sub(read).saturating_sub(read.min(limit / 4)).max(Duration::from_millis(1))
        },
        fuse_gas: a.fuse_gas,
        fast_math: a.fast_math,
        no_fusion: a.no_opt,
        cost: eqfuse::CostContext {
            params: match a.backend {
                CostBackend::Cpu => eqfuse::cpu_cost_params(),
                CostBackend::Cuda => eqfuse::calibrate::load_gpu(),
            },
            sizes: a.sizes.iter().cloned().collect::<HashMap<String, u64>>(),
            search: if a.exact { eqfuse::Search::Exact(16) } else { eqfuse::Search::Greedy },
            ..Default::default()
        },
        ..Default::default()
    };
    let opt = match eqfuse::optimize_checked(checked, &opts) {
        Err(e) if eqfuse_optimize::is_unsupported(&e) => {
            // nothing to explain: no plan is made; say where the program runs and why
            let what = e.message.strip_prefix(eqfuse_optimize::UNSUPPORTED).unwrap_or(&e.message);
            if a.json {
                println!("{}", serde_json::json!({ "interpreted": what }));
            } else {
                println!("runs on the reference interpreter: {what} is not compiled yet");
            }
            return Ok(());
        }
        other => other?,
    };
    if let Some(path) = &a.dot {
        std::fs::write(path, eqfuse_ir::plan::dot::to_dot(&opt.result.plan)).map_err(|e| {
            Error::new(Code::Input, format!("cannot write the DOT file {}: {e}", path.display()))
        })?;
    }
    if let Some(dir) = &a.cuda_source {
        let fail = |e: std::io::Error| {
            Error::new(Code::Input, format!("cannot write CUDA sources to {}: {e}", dir.display()))
        };
        std::fs::create_dir_all(dir).map_err(fail)?;
        let opts = eqfuse_exec_cuda::CudaOptions { fast_math: a.fast_math, ..Default::default() };
        for (name, src) in eqfuse_exec_cuda::kernel_sources(&opt.result.plan, &opts) {
            std::fs::write(dir.join(name), src).map_err(fail)?;
        }
    }
    let native = a.compile.then(|| {
        let start = std::time::Instant::now();
        let report = eqfuse_exec_cpu::compile_plan(&opt.result.plan, &eqfuse_exec_cpu::RunOptions::default());
        (report, start.elapsed())
    });
    if a.json {
        let mut json = opt.explain_json();
        if let (Some((report, took)), Some(obj)) = (&native, json.as_object_mut()) {
            obj.insert("native".into(), native_json(report, *took));
        }
        println!("{json}");
    } else {
        print!("{}", opt.explain_with(true));
        if let Some((report, took)) = &native {
            print!("{}", native_text(report, *took));
        }
    }
    Ok(())
}

/// `--compile`'s report as text.
fn native_text(r: &eqfuse_exec_cpu::CompileReport, took: Duration) -> String {
    let how = if r.cached {
        format!("from the cache in {:.1} ms", took.as_secs_f64() * 1e3)
    } else {
        format!("compiled in {:.1} ms", r.compile_seconds * 1e3)
    };
    let mut s = format!(
        "\nnative code (CPU): {} of {} kernels, {how}\n",
        r.native.len(),
        r.native.len() + r.vm.len()
    );
    if let Some(why) = &r.failure {
        s.push_str(&format!("  no native code: {why}\n"));
    }
    for (k, why) in &r.vm {
        s.push_str(&format!("  k{k} runs on the VM: {why}\n"));
    }
    s
}

/// `--compile`'s report as JSON.
fn native_json(r: &eqfuse_exec_cpu::CompileReport, took: Duration) -> serde_json::Value {
    serde_json::json!({
        "kernels": r.native,
        "vm": r.vm.iter().map(|(k, why)| serde_json::json!({"kernel": k, "why": why})).collect::<Vec<_>>(),
        "cached": r.cached,
        "compile_ms": r.compile_seconds * 1e3,
        "prepare_ms": took.as_secs_f64() * 1e3,
        "failure": r.failure,
    })
}
