//! Stopping a run from outside: a flag another thread sets (Python's Ctrl-C handler, a
//! caller that gives up), polled by the executor between the plan's steps, between the VM's
//! blocks and between the calls of a native launch (each at most one block of elements), so
//! that a run stops within about one block's time of the flag being set.
//!
//! A stopped run ends with `E-LIMIT` and the message [`INTERRUPTED`]: the partial results
//! are dropped, and no later step reads them.

use eqfuse_ir::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The message of the error a cancelled run ends with (`E-LIMIT`).
pub const INTERRUPTED: &str = "interrupted";

/// A run's cancel flag ([`crate::RunOptions::cancel`]): cloned handles share one flag, so
/// the caller keeps a clone and calls [`Cancel::cancel`] while the run polls it. The
/// default handle has no flag (it never cancels, and polling it costs a branch).
///
/// ```
/// let c = eqfuse_exec_cpu::Cancel::new();
/// let seen_by_the_run = c.clone();
/// assert!(!seen_by_the_run.is_cancelled());
/// c.cancel();
/// assert!(seen_by_the_run.is_cancelled());
/// assert!(!eqfuse_exec_cpu::Cancel::default().is_cancelled());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Cancel(Option<Arc<AtomicBool>>);

impl Cancel {
    /// A flag, not set.
    pub fn new() -> Cancel {
        Cancel(Some(Arc::new(AtomicBool::new(false))))
    }

    /// Sets the flag: every run holding a clone stops at its next poll.
    pub fn cancel(&self) {
        if let Some(f) = &self.0 {
            f.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the flag is set.
    pub fn is_cancelled(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// `E-LIMIT: interrupted` when the flag is set: the poll between steps and blocks.
    pub(crate) fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::limit(INTERRUPTED))
        } else {
            Ok(())
        }
    }
}

/// Two handles are equal when they share one flag (or both have none): options compare
/// equal only when they stop together.
impl PartialEq for Cancel {
    fn eq(&self, other: &Cancel) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for Cancel {}

#[cfg(test)]
mod tests {
    use super::{Cancel, INTERRUPTED};
    use crate::{run, Codegen, RunOptions};
    use eqfuse_ir::error::Code;
    use eqfuse_ir::value::Value;
    use indexmap::IndexMap;
    use std::time::{Duration, Instant};

    /// One fused kernel (a reduction over a map of a 20-step loop): a single long native
    /// launch, or a long run of VM blocks, with no step boundary to stop at.
    const LONG: &str = "input x0 : f64[n]\n\
        output s = reduce (+) 0 (map (\\x -> iterate 20 (\\z -> 0.5 * z + 0.25 * sin z) x) x0)";

    fn plan_and_inputs(n: usize) -> (eqfuse_ir::plan::Plan, IndexMap<String, Value>, IndexMap<String, i64>) {
        let checked =
            eqfuse_ir::check::check(&eqfuse_ir::parse::parse(LONG).expect("parses")).expect("checks");
        let plan = eqfuse_optimize::optimize(&checked, &Default::default()).expect("optimises").plan;
        let mut inputs = IndexMap::new();
        inputs.insert("x0".to_string(), Value::F64(ndarray::Array1::from_elem(n, 0.5).into_dyn()));
        let sizes =
            eqfuse_ir::bind::bind_inputs(&checked, &inputs, &Default::default()).expect("binds").sizes;
        (plan, inputs, sizes)
    }

    fn opts(codegen: Codegen, cancel: &Cancel) -> RunOptions {
        RunOptions { codegen, cache_dir: None, cancel: cancel.clone(), ..RunOptions::default() }
    }

    fn is_interrupted(r: &eqfuse_ir::error::Result<IndexMap<String, Value>>) -> bool {
        matches!(r, Err(e) if e.code == Code::Limit && e.message == INTERRUPTED)
    }

    #[test]
    fn a_flag_set_before_the_run_stops_it_with_interrupted() {
        let (plan, inputs, sizes) = plan_and_inputs(1000);
        for codegen in [Codegen::Vm, Codegen::C] {
            let cancel = Cancel::new();
            assert!(run(&plan, &inputs, &sizes, &opts(codegen, &cancel)).is_ok(), "{codegen:?}");
            cancel.cancel();
            let r = run(&plan, &inputs, &sizes, &opts(codegen, &cancel));
            assert!(is_interrupted(&r), "{codegen:?}: {r:?}");
        }
    }

    /// Set while one kernel runs (several seconds to the end on two cores): the launch stops
    /// between its calls, the VM between its blocks.
    #[test]
    fn a_flag_set_during_one_long_kernel_stops_it_within_a_block() {
        let (plan, inputs, sizes) = plan_and_inputs(4_000_000);
        for codegen in [Codegen::C, Codegen::Vm] {
            // the native code is made before the clock starts
            let compiled = crate::CompiledPlan::new(plan.clone(), &opts(codegen, &Cancel::default()));
            let cancel = Cancel::new();
            let setter = {
                let cancel = cancel.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(300));
                    cancel.cancel();
                    Instant::now()
                })
            };
            let r = compiled.run_cancellable(&inputs, &sizes, &cancel);
            let stopped = Instant::now();
            let set = setter.join().expect("the setter thread");
            assert!(is_interrupted(&r), "{codegen:?}: {r:?}");
            let latency = stopped.saturating_duration_since(set);
            assert!(latency < Duration::from_millis(500), "{codegen:?}: stopped {latency:?} after the flag");
        }
    }
}
