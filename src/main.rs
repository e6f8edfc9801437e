//! The `eqfuse` command line. See `eqfuse --help`.

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    let worker = std::thread::Builder::new()
        .name("eqfuse".into())
        // passes over programs recurse: the stack every request runs on
        .stack_size(eqfuse::ir::stack::REQUEST_STACK_BYTES)
        .spawn(move || cli::main(args));
    match worker.map(|h| h.join()) {
        Ok(Ok(code)) => code,
        _ => {
            eprintln!("error[E-LIMIT]: eqfuse could not start or finish its worker thread");
            ExitCode::FAILURE
        }
    }
}
