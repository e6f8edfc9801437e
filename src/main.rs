//! The `eqfuse` command line. See `eqfuse --help`.

mod cli;

use clap::Parser;
use std::process::ExitCode;

/// Stack for the thread that runs a command: passes over programs recurse (their depth is
/// bounded by `Limits::max_depth`), and a generous stack keeps that bound far from danger.
const STACK_BYTES: usize = 256 << 20;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    let worker = std::thread::Builder::new()
        .name("eqfuse".into())
        .stack_size(STACK_BYTES)
        .spawn(move || cli::main(args));
    match worker.map(|h| h.join()) {
        Ok(Ok(code)) => code,
        _ => {
            eprintln!("error[E-LIMIT]: eqfuse could not start or finish its worker thread");
            ExitCode::FAILURE
        }
    }
}
