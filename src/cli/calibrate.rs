//! `eqfuse calibrate [--backend cpu|cuda] [--no-save] [--json]`: measures this machine's
//! cost parameters, the CPU's or the GPU's.

use super::CmdResult;
use clap::Args;
use eqfuse::calibrate::{human, human_seconds, rate_unit, Device};
use eqfuse::{Code, Error};
use std::time::Instant;

/// Arguments of `eqfuse calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Measure and print only: do not save the parameters.
    #[arg(long)]
    no_save: bool,
    /// Print the parameters as one JSON object (the fields of the cost model's parameters).
    #[arg(long)]
    json: bool,
    /// The backend to calibrate: `cpu`, or `cuda` (the GPU; stored beside the CPU's).
    #[arg(long, value_enum, default_value_t = CalibrateBackend::Cpu)]
    backend: CalibrateBackend,
}

/// Which backend `calibrate` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CalibrateBackend {
    /// The CPU backend (`cost-cpu.toml`).
    Cpu,
    /// The CUDA backend (`cost-cuda.toml`).
    Cuda,
}

/// Measures, prints, and saves unless told not to.
pub fn calibrate(a: &CalibrateArgs) -> CmdResult {
    let t0 = Instant::now();
    let (p, device) = match a.backend {
        CalibrateBackend::Cpu => (eqfuse::calibrate::measure(&mut |line| eprintln!("{line}")), Device::Cpu),
        CalibrateBackend::Cuda => {
            (eqfuse::calibrate::measure_cuda(&mut |line| eprintln!("{line}"))?, Device::Cuda)
        }
    };
    eprintln!("measured in {:.2} s", t0.elapsed().as_secs_f64());
    if a.json {
        let json = serde_json::to_string(&p)
            .map_err(|e| Error::new(Code::Input, format!("cannot print the parameters as JSON: {e}")))?;
        println!("{json}");
    } else {
        println!("{}", p.name);
        println!("{:<18} {:>12}  {:<8} ", "parameter", "value", "unit");
        let mut rows: Vec<(&str, f64, &str, String)> = vec![
            ("bandwidth", p.bandwidth, "B/s", human(p.bandwidth, "B/s")),
            ("launch", p.launch, "s", human_seconds(p.launch)),
        ];
        for (term, rate) in p.rates() {
            let unit = rate_unit(term);
            rows.push((term, rate, unit, human(rate, unit)));
        }
        rows.extend([
            ("code", p.code, "s/inst", human_seconds(p.code)),
            ("gemm", p.gemm, "flop/s", human(p.gemm, "flop/s")),
            ("cache", p.cache, "B", format!("{} KiB", p.cache as u64 >> 10)),
        ]);
        for (name, v, unit, h) in rows {
            println!("{name:<18} {v:>12.4e}  {unit:<8} ({h})");
        }
    }
    if !a.no_save {
        let path = eqfuse::calibrate::save_for(&p, device)?;
        if a.json {
            eprintln!("saved to {}", path.display());
        } else {
            println!("saved to {}", path.display());
        }
    }
    Ok(())
}
