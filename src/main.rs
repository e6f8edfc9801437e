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
    stop_compilers_on_interrupt();
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
/// process at the first write to the closed pipe. A file grown past the size limit is an
/// error, not a signal that ends the process.
#[allow(unsafe_code)]
fn quiet_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any other thread exists; `SIG_DFL` is a
    // valid disposition for `SIGPIPE`, and no signal handler of ours is replaced.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    #[cfg(unix)]
    // SAFETY: as above; `SIG_IGN` is a valid disposition for `SIGXFSZ`. A write past the
    // file-size limit (`ulimit -f`) then fails with `EFBIG`, which `--out` reports as
    // `E-OUTPUT` with the old outputs left in place, instead of the signal killing the process
    // half way through writing them.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Ctrl-C (`SIGINT`), `SIGTERM` and `SIGHUP` end the command as their default actions would
/// (status 128 + the signal's number), but first kill the C compilers it has running and
/// remove their files: each compiler runs in a process group of its own (so that a deadline
/// can kill it with everything it started), which the terminal's Ctrl-C no longer reaches.
///
/// The signals are blocked in this thread before any other thread exists, so every thread
/// inherits the mask, and one thread takes them with `sigwait`: no code runs inside a signal
/// handler. Child processes start with an empty mask (the standard library resets it).
#[allow(unsafe_code)]
fn stop_compilers_on_interrupt() {
    #[cfg(unix)]
    {
        // SAFETY: `set` is a local `sigset_t` initialised by `sigemptyset` before any other
        // use; `pthread_sigmask` reads it and changes only this thread's mask.
        let set = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::sigaddset(&mut set, sig);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            set
        };
        let waiter = move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is an initialised signal set owned by this closure and `sig` a
            // local the call writes.
            if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
                eqfuse_exec_cpu::abort_compilers();
                std::process::exit(128 + sig);
            }
        };
        if std::thread::Builder::new().name("eqfuse-signals".into()).spawn(waiter).is_err() {
            // without the thread, the signals keep their default action
            // SAFETY: as above; unblocking restores the default behaviour.
            unsafe {
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            }
        }
    }
}
