//! Command-line arguments and dispatch. Every failure prints `error[E-CODE]: message` (with
//! the source snippet for errors in the program text) on stderr and exits with status 1.

mod bench;
mod calibrate;
mod check;
mod demo;
mod explain;
mod run;
mod show;

use clap::{Parser, Subcommand};
use eqfuse::Error;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// eqfuse: array programs made fast by equality saturation.
#[derive(Debug, Parser)]
#[command(name = "eqfuse", version, about, long_about = None)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Parse and type-check a program; print its inputs and outputs with their types.
    Check {
        /// The `.eqf` program.
        program: PathBuf,
    },
    /// Run a program on `.npy` inputs; write or print its outputs.
    Run(run::RunArgs),
    /// Optimise a program and show its kernels, what fused, and which rules fired.
    Explain(explain::ExplainArgs),
    /// Run a few built-in programs on generated inputs and check their results.
    Demo,
    /// Measure this machine's CPU cost-model parameters and save them for the optimiser.
    Calibrate(calibrate::CalibrateArgs),
    /// Time the optimised plan, the unfused plan, a hand-written loop and a copy of the
    /// inputs for the benchmark programs.
    Bench(bench::BenchArgs),
}

/// Runs the command; maps any error to the `error[E-CODE]` report and exit status 1.
pub fn main(args: Args) -> ExitCode {
    let result = match args.command {
        Command::Check { program } => check::check(&program),
        Command::Run(a) => run::run(&a),
        Command::Explain(a) => explain::explain(&a),
        Command::Demo => demo::demo(),
        Command::Calibrate(a) => calibrate::calibrate(&a),
        Command::Bench(a) => bench::bench(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprint!("{}", failure.render());
            ExitCode::FAILURE
        }
    }
}

/// An error, with the program text it points into when there is one.
pub struct Failure {
    error: Error,
    /// The program's file name and text, boxed to keep results small.
    source: Option<Box<(String, String)>>,
}

impl Failure {
    fn render(&self) -> String {
        let color = std::io::stderr().is_terminal();
        let mut text = match (self.source.as_deref(), self.error.span) {
            (Some((file, src)), Some(_)) => self.error.render(file, src, color),
            _ => {
                let mut s = self.error.to_string();
                for n in &self.error.notes {
                    s.push_str("\n  = ");
                    s.push_str(n);
                }
                s
            }
        };
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure { error, source: None }
    }
}

/// Reads, parses and checks a program file; errors carry the text for rendering.
pub fn load(path: &Path) -> std::result::Result<eqfuse::Checked, Failure> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::input(format!("cannot read the program `{}`: {e}", path.display())))?;
    let src = String::from_utf8(bytes).map_err(|_| {
        Error::new(eqfuse::Code::Parse, format!("the program `{}` is not UTF-8 text", path.display()))
    })?;
    let with_source =
        |error: Error| Failure { error, source: Some(Box::new((path.display().to_string(), src.clone()))) };
    let program = eqfuse::parse(&src).map_err(with_source)?;
    eqfuse::check(&program).map_err(with_source)
}

type CmdResult = std::result::Result<(), Failure>;
