//! Resource-limit options of `eqfuse run`: how deep and how long a program may be, how big an
//! array, how much the optimiser may explore, and how long the whole command may take.
//! Every default protects the machine; each limit hit is an `E-LIMIT` error (status 1).

use clap::Args;
use eqfuse::{Limits, OptimizeOptions};
use std::time::Duration;

/// The deepest `--max-depth` accepted: every recursive pass (parser, checker, interpreter,
/// optimiser, lowering) runs on a stack sized with room for this depth.
pub const MAX_DEPTH_CAP: u32 = 2000;

/// Resource-limit options (flattened into a command's arguments).
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// Deepest expression nesting the parser and checker accept (at most 2000).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_depth,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_DEPTH_CAP)))]
    max_depth: u32,
    /// Longest program text, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_program_bytes)]
    max_program_bytes: usize,
    /// Most bytes one array (input, intermediate or output) may take, refused before it is
    /// allocated [default: the machine's physical memory, or the cgroup's memory limit where
    /// smaller].
    #[arg(long, value_name = "BYTES")]
    max_array_bytes: Option<u64>,
    /// Most e-nodes per optimisation phase.
    #[arg(long, value_name = "N", default_value_t = OptimizeOptions::default().node_limit,
          value_parser = at_least_one)]
    node_limit: usize,
    /// Most iterations per optimisation phase.
    #[arg(long, value_name = "N", default_value_t = OptimizeOptions::default().iter_limit,
          value_parser = at_least_one)]
    iter_limit: usize,
    /// Time limit for optimising and compiling native code together, in milliseconds: the
    /// optimiser then stops rewriting and runs the best program found so far, and a C
    /// compiler still running is stopped, the kernels then running on the interpreter (a
    /// note on stderr says so).
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    time_limit_ms: u64,
    /// Stop the whole command with `E-LIMIT` after this many seconds (fractions allowed)
    /// [default: no limit].
    #[arg(long, value_name = "SECS", value_parser = parse_timeout)]
    timeout: Option<Duration>,
    /// How the CPU backend runs kernels: `c` (native code compiled by the system C
    /// compiler, `$CC` else `cc`; the VM where it cannot) or `vm` (the interpreter only).
    #[arg(long, value_name = "HOW", default_value = "c", value_parser = ["c", "vm"])]
    cpu_codegen: String,
    /// Compile native code without the on-disk cache (`$EQFUSE_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/eqfuse/cpu`, else `~/.cache/eqfuse/cpu`).
    #[arg(long)]
    no_cache: bool,
}

impl LimitArgs {
    /// The front end's and interpreter's limits.
    pub fn limits(&self) -> Limits {
        let d = Limits::default();
        Limits {
            max_depth: self.max_depth,
            max_program_bytes: self.max_program_bytes,
            max_array_bytes: self.max_array_bytes.unwrap_or(d.max_array_bytes),
        }
    }

    /// The optimiser's options (the rest at their defaults).
    pub fn optimize_options(&self) -> OptimizeOptions {
        OptimizeOptions {
            node_limit: self.node_limit,
            iter_limit: self.iter_limit,
            time_limit: Duration::from_millis(self.time_limit_ms.max(1)),
            ..OptimizeOptions::default()
        }
    }

    /// The executors' options (the rest at their defaults).
    pub fn run_options(&self) -> eqfuse_exec_cpu::RunOptions {
        let d = eqfuse_exec_cpu::RunOptions::default();
        eqfuse_exec_cpu::RunOptions {
            max_array_bytes: self.limits().max_array_bytes,
            codegen: codegen(&self.cpu_codegen),
            cache_dir: if self.no_cache { None } else { d.cache_dir.clone() },
            ..d
        }
    }

    /// With `--timeout`, starts a watchdog that ends the process with
    /// `error[E-LIMIT]: ... timed out` and status 1 when the time is up.
    pub fn start_watchdog(&self) {
        let Some(after) = self.timeout else { return };
        let watchdog = move || {
            std::thread::sleep(after);
            // no C compiler outlives the command, and none leaves its files behind
            eqfuse_exec_cpu::abort_compilers();
            eprintln!("error[E-LIMIT]: timed out after {} s (--timeout)", after.as_secs_f64());
            std::process::exit(1);
        };
        // a watchdog that cannot start must not let the command run unbounded
        if std::thread::Builder::new().name("eqfuse-timeout".into()).spawn(watchdog).is_err() {
            eprintln!("error[E-LIMIT]: cannot start the --timeout watchdog");
            std::process::exit(1);
        }
    }
}

/// A count of at least 1.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("expected a whole number of at least 1, got `{s}`")),
    }
}

/// A positive, finite number of seconds.
fn parse_timeout(s: &str) -> Result<Duration, String> {
    let secs: f64 = s.trim().parse().map_err(|_| format!("expected a number of seconds, got `{s}`"))?;
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(format!("expected a positive number of seconds, got `{s}`")),
    }
}

/// The code generator a `--cpu-codegen` value names (`c` or `vm`; clap admits no other).
pub fn codegen(how: &str) -> eqfuse_exec_cpu::Codegen {
    if how == "vm" {
        eqfuse_exec_cpu::Codegen::Vm
    } else {
        eqfuse_exec_cpu::Codegen::C
    }
}
