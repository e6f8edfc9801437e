//! `eqfuse calibrate [--no-save] [--json]`: measures this machine's CPU cost parameters.

use super::CmdResult;
use clap::Args;
use eqfuse::calibrate::{human, human_seconds};
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
}

/// Measures, prints, and saves unless told not to.
pub fn calibrate(a: &CalibrateArgs) -> CmdResult {
    let t0 = Instant::now();
    let p = eqfuse::calibrate::measure(&mut |line| eprintln!("{line}"));
    eprintln!("measured in {:.2} s", t0.elapsed().as_secs_f64());
    if a.json {
        let json = serde_json::to_string(&p)
            .map_err(|e| Error::new(Code::Input, format!("cannot print the parameters as JSON: {e}")))?;
        println!("{json}");
    } else {
        println!("{}", p.name);
        println!("{:<16} {:>12}  {:<8} ", "parameter", "value", "unit");
        let rows: [(&str, f64, &str, String); 12] = [
            ("bandwidth", p.bandwidth, "B/s", human(p.bandwidth, "B/s")),
            ("launch", p.launch, "s", human_seconds(p.launch)),
            ("flop", p.flop, "op/s", human(p.flop, "op/s")),
            ("div", p.div, "op/s", human(p.div, "op/s")),
            ("sqrt", p.sqrt, "op/s", human(p.sqrt, "op/s")),
            ("transcendental", p.transcendental, "op/s", human(p.transcendental, "op/s")),
            ("int", p.int, "op/s", human(p.int, "op/s")),
            ("compare", p.compare, "op/s", human(p.compare, "op/s")),
            ("gather", p.gather, "elem/s", human(p.gather, "elem/s")),
            ("code", p.code, "s/inst", human_seconds(p.code)),
            ("gemm", p.gemm, "flop/s", human(p.gemm, "flop/s")),
            ("cache", p.cache, "B", format!("{} KiB", p.cache as u64 >> 10)),
        ];
        for (name, v, unit, h) in rows {
            println!("{name:<16} {v:>12.4e}  {unit:<8} ({h})");
        }
    }
    if !a.no_save {
        let path = eqfuse::calibrate::save(&p)?;
        if a.json {
            eprintln!("saved to {}", path.display());
        } else {
            println!("saved to {}", path.display());
        }
    }
    Ok(())
}
