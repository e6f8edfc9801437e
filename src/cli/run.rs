//! `eqfuse run PROGRAM [--inputs DIR] [--input NAME=FILE]... [--random-inputs SEED [--size NAME=N]...
//! [--save-inputs DIR]] [--out DIR] [--backend B] [--no-opt] [--timings] [LIMITS]` (`LIMITS`: see
//! [`super::limits::LimitArgs`])

use super::limits::LimitArgs;
use super::{load_with, show, CmdResult};
use clap::Args;
use eqfuse::backend::Timings;
use eqfuse::random_inputs::{self, RandomInputs};
use eqfuse::{files, Backend};
use std::path::PathBuf;
use std::time::{Duration, Instant};

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
    /// Fill every input with random data of its declared type instead of reading files
    /// (deterministic for a seed): floats uniform in [0, 1), integers in 0..16, random bools.
    #[arg(long, value_name = "SEED", conflicts_with_all = ["inputs", "input"])]
    random_inputs: Option<u64>,
    /// With `--random-inputs`: the value of a size name (repeatable; every size not given is
    /// 1000).
    #[arg(long = "size", value_name = "NAME=N", value_parser = parse_size, requires = "random_inputs")]
    size: Vec<(String, i64)>,
    /// With `--random-inputs`: also write each generated input to `DIR/NAME.npy` (what
    /// `--inputs DIR` reads back, and NumPy's `np.load`), before running.
    #[arg(long, value_name = "DIR", requires = "random_inputs")]
    save_inputs: Option<PathBuf>,
    /// Write each output to `DIR/NAME.npy` (otherwise print each as NumPy does: whole up to
    /// 1000 elements, else the first and last 3 entries of every long dimension).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Where to run: `auto` (the best present), `cpu`, `cuda`, or `reference` (the
    /// unoptimised reference interpreter).
    #[arg(long, default_value = "auto", value_parser = ["auto", "cpu", "cuda", "reference"])]
    backend: String,
    /// Run the unfused program (one kernel per operation) on the chosen backend.
    #[arg(long)]
    no_opt: bool,
    /// Print on stderr where the time went: parse and check, read inputs, optimise, compile
    /// native code, execute, write outputs.
    #[arg(long)]
    timings: bool,
    /// Resource limits.
    #[command(flatten)]
    limits: LimitArgs,
}

/// Loads, reads inputs, runs, writes or prints outputs.
pub fn run(a: &RunArgs) -> CmdResult {
    a.limits.start_watchdog();
    let limits = a.limits.limits();
    let start = Instant::now();
    let checked = load_with(&a.program, &limits)?;
    let load_time = start.elapsed();
    let backend: Backend = a.backend.parse()?;
    let start = Instant::now();
    if a.save_inputs.is_some() && a.random_inputs.is_none() {
        let e = "--save-inputs DIR writes the inputs `--random-inputs SEED` generates; inputs read from files are \
                 already saved";
        return Err(eqfuse::Error::input(e).into());
    }
    let inputs = match a.random_inputs {
        Some(seed) => {
            let mut opts = RandomInputs::new(seed);
            opts.max_array_bytes = limits.max_array_bytes;
            opts.sizes.extend(a.size.iter().cloned());
            let sizes = random_inputs::size_values(&checked, &opts)?;
            let sizes: Vec<String> = sizes.iter().map(|(n, v)| format!("{n} = {v}")).collect();
            let sizes = if sizes.is_empty() { String::new() } else { format!(", {}", sizes.join(", ")) };
            eprintln!("random inputs (seed {seed}{sizes})");
            let inputs = random_inputs::random_inputs(&checked, &opts)?;
            if let Some(dir) = &a.save_inputs {
                for path in files::write_outputs(dir, &inputs)? {
                    eprintln!("wrote {}", path.display());
                }
            }
            inputs
        }
        None if a.inputs.is_none() && a.input.is_empty() && !checked.inputs.is_empty() => {
            return Err(no_inputs(&a.program, &checked).into());
        }
        None => files::read_inputs_with(a.inputs.as_deref(), &a.input, limits.max_array_bytes)?,
    };
    // `--no-opt` runs the unfused plan (one kernel per operation) on the chosen executor; the
    // reference interpreter never fuses.
    let read_time = start.elapsed();
    // the plan `bench` times: one choice of options for both ([`eqfuse::plan_options`])
    let (optimize, run_opts) =
        (eqfuse::plan_options(backend, a.limits.optimize_options()), a.limits.run_options());
    let (outputs, timings) =
        eqfuse::backend::run_timed(&checked, backend, &inputs, &optimize, &run_opts, a.no_opt)?;
    let start = Instant::now();
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
    if a.timings {
        eprint!("{}", timings_table(load_time, read_time, &timings, start.elapsed()));
    }
    Ok(())
}

/// The `--timings` table.
fn timings_table(load: Duration, read: Duration, t: &Timings, write: Duration) -> String {
    let ms = |d: Duration| format!("{:>10.3} ms", d.as_secs_f64() * 1e3);
    let compile = match t.compile {
        Some((d, true)) => format!("{} (from the cache)", ms(d)),
        Some((d, false)) => ms(d),
        None => format!("{:>13}", "-"),
    };
    let total = load + read + t.optimise + t.compile.map_or(Duration::ZERO, |c| c.0) + t.execute + write;
    let mut s = String::from("timings:\n");
    for (what, text) in [
        ("parse and check", ms(load)),
        ("read inputs", ms(read)),
        ("optimise", ms(t.optimise)),
        ("compile", compile),
        ("execute", ms(t.execute)),
        ("write outputs", ms(write)),
        ("total", ms(total)),
    ] {
        s.push_str(&format!("  {what:<16}{text}\n"));
    }
    if let Some((kernels, digest)) = &t.plan {
        s.push_str(&format!("plan: {kernels} kernels, digest {digest}\n"));
    }
    s
}

/// `run` with no inputs given for a program that has some: the error says how to give them.
fn no_inputs(program: &std::path::Path, checked: &eqfuse::Checked) -> eqfuse::Error {
    let names: Vec<String> = checked.inputs.iter().map(|(n, t)| format!("`{n} : {t}`")).collect();
    let first = checked.inputs.keys().next().map_or("NAME", String::as_str);
    let p = program.display();
    eqfuse::Error::input(format!("the program has inputs ({}) but none were given", names.join(", ")))
        .with_note(format!(
            "help: read them from .npy files, one per input, named after it: `eqfuse run {p} --inputs DIR` or \
             `--input {first}=FILE.npy`"
        ))
        .with_note(format!("help: or generate them: `eqfuse run {p} --random-inputs 1`"))
}

/// Parses a `NAME=N` size.
pub(super) fn parse_size(s: &str) -> std::result::Result<(String, i64), String> {
    match s.split_once('=') {
        Some((name, n)) if !name.is_empty() => match n.trim().parse::<i64>() {
            Ok(v) if v >= 0 => Ok((name.to_string(), v)),
            _ => Err(format!("expected a non-negative integer size, got `{n}`")),
        },
        _ => Err(format!("expected NAME=N, got `{s}`")),
    }
}
