//! `eqfuse run PROGRAM [--inputs DIR] [--input NAME=FILE]... [--out DIR] [--backend B] [--no-opt]`

use super::{load, show, CmdResult};
use clap::Args;
use eqfuse::{files, Backend};
use std::path::PathBuf;

/// Arguments of `eqfuse run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The `.eqf` program.
    program: PathBuf,
    /// Read every `DIR/NAME.npy` as input `NAME`.
    #[arg(long, value_name = "DIR")]
    inputs: Option<PathBuf>,
    /// Read one input from a file (repeatable; overrides `--inputs`).
    #[arg(long = "input", value_name = "NAME=FILE", value_parser = files::parse_pair)]
    input: Vec<(String, PathBuf)>,
    /// Write each output to `DIR/NAME.npy` (otherwise print a summary of each).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Where to run: `auto` (the best present), `cpu`, `cuda`, or `reference` (the
    /// unoptimised reference interpreter).
    #[arg(long, default_value = "auto", value_parser = ["auto", "cpu", "cuda", "reference"])]
    backend: String,
    /// Run the unfused program (one kernel per operation) on the chosen backend.
    #[arg(long)]
    no_opt: bool,
}

/// Loads, reads inputs, runs, writes or prints outputs.
pub fn run(a: &RunArgs) -> CmdResult {
    let checked = load(&a.program)?;
    let backend: Backend = a.backend.parse()?;
    let inputs = files::read_inputs(a.inputs.as_deref(), &a.input)?;
    // `--no-opt` runs the unfused plan (one kernel per operation) on the chosen executor; the
    // reference interpreter never fuses.
    let outputs = if a.no_opt {
        eqfuse::backend::run_unfused(&checked, backend, &inputs)?
    } else {
        eqfuse::run(&checked, backend, &inputs)?
    };
    match &a.out {
        Some(dir) => {
            for path in files::write_outputs(dir, &outputs)? {
                println!("wrote {}", path.display());
            }
        }
        None => {
            for (name, value) in &outputs {
                println!("{name} = {}", show::summary(value));
            }
        }
    }
    Ok(())
}
