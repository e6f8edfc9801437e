//! The `eqfuse` command line. See `eqfuse --help`.

mod cli;

/// The allocator of the command line: mimalloc, which hands a freed block back to the next
/// request of its size for a while instead of returning it to the system at once. A plan
/// run again (`eqfuse bench`, a loop over batches) then writes its outputs into memory it
/// already has, where the system allocator gives it fresh pages that the kernel zeroes
/// before the plan overwrites them: map_chain over 2^24 `f32` took 2.85 ms against 4.6 ms
/// (docs/design-decisions.md, 12).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    quiet_on_closed_pipe();
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

/// A command line tool whose reader goes away (`eqfuse explain big.eqf | head`) stops
/// quietly, as `cat` does, instead of failing to print: Rust ignores `SIGPIPE`, which turns
/// the closed pipe into a write error on every `println!`. The default action ends the
/// process at the first write to the closed pipe.
#[allow(unsafe_code)]
fn quiet_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any other thread exists; `SIG_DFL` is a
    // valid disposition for `SIGPIPE`, and no signal handler of ours is replaced.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
