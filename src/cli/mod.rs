//! Command-line arguments and dispatch. Every failure prints `error[E-CODE]: message` (with
//! the source snippet for errors in the program text) on stderr and exits with status 1.

mod bench;
mod calibrate;
mod check;
mod demo;
mod explain;
mod limits;
mod rules;
mod run;
mod show;

use clap::{Parser, Subcommand};
use eqfuse::Error;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `eqfuse --version`: the crate's version and the commit it was built from (`build.rs`).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("EQFUSE_COMMIT"), ")");

/// eqfuse: array programs made fast by equality saturation.
#[derive(Debug, Parser)]
#[command(name = "eqfuse", version = VERSION, about, long_about = None)]
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
    /// Measure this machine's cost-model parameters (the CPU's, or with `--backend cuda` the GPU's) and save them for the optimiser.
    Calibrate(calibrate::CalibrateArgs),
    /// Time the optimised plan, the unfused plan, a hand-written loop and a copy of the
    /// inputs for the benchmark programs.
    Bench(bench::BenchArgs),
    /// List the rewrite rules: name, theme, phases, whether each spends the fusion budget,
    /// and the identity it relies on.
    Rules(rules::RulesArgs),
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
        Command::Rules(a) => rules::rules(&a),
    };
    // the warnings come after the error, whose `error[E-CODE]` line stays the first of stderr
    let code = match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprint!("{}", failure.render());
            ExitCode::FAILURE
        }
    };
    if let Ok(mut w) = WARNINGS.lock() {
        eprint!("{}", std::mem::take(&mut *w));
    }
    code
}

/// The rendered warnings of the programs loaded, printed when the command ends.
static WARNINGS: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

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
        clip_lines(&text)
    }
}

/// The longest line of an error report, in characters: a message quoting a million-digit
/// literal or name is cut there.
const MAX_LINE_CHARS: usize = 1000;

/// `text` with every line longer than [`MAX_LINE_CHARS`] cut, saying how much was cut.
fn clip_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(64 << 10));
    for line in text.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        match body.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => {
                let more = body[cut..].chars().count();
                out.push_str(&body[..cut]);
                out.push_str(&format!(" ... ({more} more characters)"));
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => out.push_str(line),
        }
    }
    out
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure { error, source: None }
    }
}

/// Reads, parses and checks a program file under the default [`eqfuse::Limits`]; errors
/// carry the text for rendering.
pub fn load(path: &Path) -> std::result::Result<eqfuse::Checked, Failure> {
    load_with(path, &eqfuse::Limits::default())
}

/// [`load`] under `limits`: a file longer than `limits.max_program_bytes` is `E-LIMIT`
/// before it is read in full (it may be endless, as `/dev/zero` is).
pub fn load_with(path: &Path, limits: &eqfuse::Limits) -> std::result::Result<eqfuse::Checked, Failure> {
    use std::io::Read;
    let cannot =
        |e: std::io::Error| Error::input(format!("cannot read the program `{}`: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let cap = u64::try_from(limits.max_program_bytes).unwrap_or(u64::MAX).saturating_add(1);
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() > limits.max_program_bytes {
        return Err(Error::new(
            eqfuse::Code::Limit,
            format!(
                "the program `{}` is longer than the limit of {} bytes",
                path.display(),
                limits.max_program_bytes
            ),
        )
        .into());
    }
    let src = String::from_utf8(bytes).map_err(|_| {
        Error::new(eqfuse::Code::Parse, format!("the program `{}` is not UTF-8 text", path.display()))
    })?;
    let with_source =
        |error: Error| Failure { error, source: Some(Box::new((path.display().to_string(), src.clone()))) };
    let program = eqfuse::ir::parse::parse_with(&src, limits).map_err(with_source)?;
    let checked = eqfuse::ir::check::check_source(&program, limits).map_err(with_source)?;
    let color = std::io::stderr().is_terminal();
    for w in &checked.warnings {
        let mut text = match w.span {
            Some(_) => w.render(&path.display().to_string(), &src, color),
            None => w.to_string(),
        };
        if !text.ends_with('\n') {
            text.push('\n');
        }
        if let Ok(mut all) = WARNINGS.lock() {
            all.push_str(&clip_lines(&text));
        }
    }
    Ok(checked)
}

type CmdResult = std::result::Result<(), Failure>;
