//! `eqfuse bench [--backend cpu|cuda] [--filter NAME] [--json]`: the optimised plan, the
//! unfused plan, a hand-written loop and the input-copy floor, timed in one run.
//! `--dump-inputs DIR` writes each chosen program's generated inputs instead
//! (`DIR/PROGRAM/INPUT.npy`, what `eqfuse run --inputs` reads), so that other tools
//! (`benches/peers/`) compute on exactly the benchmarked data.

use super::CmdResult;
use clap::Args;
use eqfuse::bench::{BenchOptions, Measurement, PROGRAMS};
use eqfuse::{Code, Error};
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `eqfuse bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The backend that runs the plans.
    #[arg(long, value_enum, default_value_t = BenchBackend::Cpu)]
    backend: BenchBackend,
    /// Only the programs whose name contains this.
    #[arg(long, value_name = "NAME")]
    filter: Option<String>,
    /// Print a JSON list of objects (docs/design-decisions.md) instead of a table.
    #[arg(long)]
    json: bool,
    /// Scale every size by this factor (1.0: the documented sizes).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Least time spent timing each variant, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 400)]
    min_time_ms: u64,
    /// Write each chosen program's inputs (at `--scale`) to `DIR/PROGRAM/INPUT.npy` and
    /// time nothing.
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
        ..BenchOptions::default()
    };
    let chosen: Vec<_> =
        PROGRAMS.iter().filter(|p| a.filter.as_deref().map_or(true, |f| p.name.contains(f))).collect();
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
        let m = eqfuse::bench::bench(p, &opts, backend)?;
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
            .map_err(|e| Error::new(Code::Limit, format!("internal error: JSON: {e}")))?;
        println!("{j}");
    }
    Ok(())
}
