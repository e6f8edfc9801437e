//! `EQFUSE_TRACE=1`: the optimiser's stages and their times on standard error, one line
//! each (`trace <phase> <what> <seconds> <details>`), for profiling its growth with the
//! program's size (docs/optimizer-growth.md). Off unless the variable is set.

use std::sync::OnceLock;
use std::time::Instant;

/// Whether tracing is on (`EQFUSE_TRACE` set, not `0`).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("EQFUSE_TRACE").is_some_and(|v| v != "0"))
}

/// Writes one trace line: the stage, what, the seconds since `since`, and details.
pub fn note(stage: &str, what: &str, since: Instant, details: impl FnOnce() -> String) {
    note_secs(stage, what, since.elapsed().as_secs_f64(), details);
}

/// [`note`] with the seconds given.
pub fn note_secs(stage: &str, what: &str, seconds: f64, details: impl FnOnce() -> String) {
    if enabled() {
        eprintln!("trace {stage} {what} {seconds:.3}s {}", details());
    }
}
