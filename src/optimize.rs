//! `optimize`: a program through the e-graph phases, and what `explain` says about it.

use crate::{Arrays, Backend, Program, Result};
use eqfuse_ir::check::Checked;
use eqfuse_lower::{summarize, KernelSummary};

pub use eqfuse_optimize::{OptimizeOptions, PhaseReport, Variant};

/// The CPU cost parameters: those `eqfuse calibrate` saved for this machine, else the
/// defaults.
pub fn cpu_cost_params() -> eqfuse_lower::model::CostParams {
    crate::calibrate::load_cpu()
}

/// The optimiser's options for the plan a program runs with on `backend`: `base` with the
/// backend's cost parameters (those `eqfuse calibrate` saved for the CPU, and `eqfuse
/// calibrate --backend cuda` for the GPU, else the defaults: an H100-class GPU's for CUDA)
/// and no sizes, so that the cost model takes its default for every size
/// name (2^20). The plan is chosen before any input is seen, as Python's `compile` must
/// choose it; `eqfuse run`, `eqfuse bench` (built-in programs and `bench PROGRAM`) and
/// Python all take their options from here, so the plan `bench` times is the plan `run`
/// runs (docs/explain.md, "The plan that runs"). `explain --size` is the way to see another.
pub fn plan_options(backend: Backend, base: OptimizeOptions) -> OptimizeOptions {
    let params = match backend {
        Backend::Cuda => crate::calibrate::load_gpu(),
        Backend::Cpu | Backend::Reference => cpu_cost_params(),
    };
    let cost = eqfuse_lower::dag::CostContext { params, sizes: Default::default(), ..base.cost };
    OptimizeOptions { cost, ..base }
}

/// The number of kernels of `plan`, the one count `explain` (text and `--json`: the length of
/// its `kernels` list), `bench` and Python's `explain()["kernels"]` report: every kernel the
/// plan numbers `k0`, `k1`, ... (both branches of an `if` included), each phase of a row
/// block or a segment block counted, though a block runs its phases in one pass over memory
/// (`passes` counts those). docs/explain.md, "Counting kernels".
pub fn kernel_count(plan: &eqfuse_ir::plan::Plan) -> usize {
    plan.kernels().len()
}

/// A short digest of `plan` (a hash of its text, as `explain` prints it): `run --timings`
/// and `bench PROGRAM --json` print it, so that two commands can be seen to run one plan.
pub fn plan_digest(plan: &eqfuse_ir::plan::Plan) -> String {
    use std::hash::{Hash, Hasher};
    // SipHash with fixed keys: the same text gives the same digest in every process
    let mut h = std::hash::DefaultHasher::new();
    plan.to_string().hash(&mut h);
    format!("{:016x}", h.finish())
}

/// An optimised program: the extracted term, its kernels, the decoded program and the
/// optimiser's report. Made by [`optimize`].
#[derive(Clone, Debug)]
pub struct Optimized {
    /// The optimiser's result (term, phases, rules fired, stop reason).
    pub result: eqfuse_optimize::Optimized,
    /// The kernels of the optimised term.
    pub kernels: KernelSummary,
    /// The kernels of the source program, unfused.
    pub unfused: KernelSummary,
    checked: Checked,
}

/// Optimises a program (checking it first): simplify, fuse, simplify, fuse horizontally.
///
/// ```
/// let p = eqfuse::parse("input xs : f32[n]\ninput ys : f32[n]\noutput dot = reduce (+) 0 (map (\\x y -> x * y) xs ys)")?;
/// let opt = eqfuse::optimize(&p, &eqfuse::OptimizeOptions::default())?;
/// assert_eq!(opt.kernels.kernels.len(), 1);      // the map fused into the reduction
/// assert_eq!(opt.unfused.kernels.len(), 2);
/// println!("{}", opt.explain());
/// # Ok::<(), eqfuse::Error>(())
/// ```
pub fn optimize(program: &Program, opts: &OptimizeOptions) -> Result<Optimized> {
    optimize_checked(crate::check(program)?, opts)
}

/// [`optimize`] for a program already checked. The passes recurse over the program (as
/// deep as [`eqfuse_ir::Limits::max_depth`] allows), so they run on a thread of their own
/// with [`eqfuse_ir::stack::REQUEST_STACK_BYTES`] of stack, whatever the caller's.
pub fn optimize_checked(checked: Checked, opts: &OptimizeOptions) -> Result<Optimized> {
    let result =
        eqfuse_ir::stack::with_stack("eqfuse-optimize", eqfuse_ir::stack::REQUEST_STACK_BYTES, || {
            eqfuse_optimize::optimize(&checked, opts)
        })?;
    let kernels = summarize(&result.plan, &result.cost);
    let unfused = summarize(&result.unfused_plan, &result.unfused_cost);
    Ok(Optimized { result, kernels, unfused, checked })
}

impl Optimized {
    /// The optimised program as `.eqf` (horizontally fused kernels are written as their
    /// separate operations).
    pub fn program(&self) -> &Program {
        &self.result.program
    }

    /// The checked source program.
    pub fn source(&self) -> &Checked {
        &self.checked
    }

    /// Runs the optimised program: its plan on the CPU, the decoded program on the reference
    /// interpreter (`crate::backend::run_optimized`).
    pub fn run(&self, backend: Backend, inputs: &Arrays) -> Result<Arrays> {
        crate::backend::run_optimized(self, backend, inputs)
    }

    /// `explain --json`: the object docs/design-decisions.md specifies (`optimize_ms`, `stop_reason`,
    /// `egraph`, `rules_fired`, `kernels`, `materialized`, `predicted_s`, `work`: the model's
    /// terms, `unfused`).
    ///
    /// ```
    /// let p = eqfuse::parse("input xs : f32[n]\nlet e = map (\\x -> exp x) xs\noutput y = map (\\v -> v + 1) e\noutput z = map (\\v -> v * 2) e")?;
    /// let j = eqfuse::optimize(&p, &Default::default())?.explain_json();
    /// assert_eq!(j["kernels"].as_array().map(Vec::len), Some(1));   // one pass writes y and z
    /// assert_eq!(j["kernels"][0]["writes"].as_array().map(Vec::len), Some(2));
    /// assert_eq!(j["materialized"].as_array().map(Vec::len), Some(0));  // e is never written
    /// assert_eq!(j["unfused"]["kernels"], 3);
    /// # Ok::<(), eqfuse::Error>(())
    /// ```
    pub fn explain_json(&self) -> serde_json::Value {
        let (nodes, classes, iterations) = self.result.egraph_size();
        let index = crate::origins::Origins::new(&self.checked, &self.result.plan);
        let kernels: Vec<serde_json::Value> = self
            .kernels
            .kernels
            .iter()
            .enumerate()
            .map(|(i, k)| {
                // where each value written comes from in the program, where known
                let origins: Vec<serde_json::Value> = k
                    .writes
                    .iter()
                    .filter_map(|w| {
                        let o = index.origin(index.value_id(w)?)?;
                        Some(serde_json::json!({
                            "value": w, "expr": o.expr, "line": o.line, "column": o.column,
                        }))
                    })
                    .collect();
                serde_json::json!({
                    "kind": k.kind, "reads": k.reads, "writes": k.writes, "loops": k.loops,
                    "space": k.space, "predicted_s": k.predicted_s, "origins": origins, "pass": k.pass,
                    "work": self.result.cost.kernels.get(i).map(|c| &c.work),
                })
            })
            .collect();
        let fired: serde_json::Map<String, serde_json::Value> =
            self.result.rules_fired.iter().map(|(k, v)| (k.clone(), serde_json::json!(v))).collect();
        serde_json::json!({
            "optimize_ms": (self.result.optimize_ms * 1000.0).round() / 1000.0,
            "stop_reason": self.result.stop_reason.as_str(),
            "egraph": { "nodes": nodes, "classes": classes, "iterations": iterations },
            "rules_fired": fired,
            "kernels": kernels,
            "passes": self.kernels.passes,
            "materialized": self.kernels.materialized,
            "kept": self.kernels.kept,
            "predicted_s": self.kernels.predicted_s,
            "work": self.result.cost.work,
            "kernel_count": kernel_count(&self.result.plan),
            "unfused": {
                "kernels": kernel_count(&self.result.unfused_plan),
                "predicted_s": self.unfused.predicted_s,
                "work": self.result.unfused_cost.work,
            },
        })
    }

    /// `explain`: kernels, what was materialised, rules fired, phases and the program
    /// (`docs/explain.md` reads one line by line).
    ///
    /// ```
    /// let p = eqfuse::parse("input xs : f32[n]\ninput ys : f32[n]\noutput dot = reduce (+) 0 (map (\\x y -> x * y) xs ys)")?;
    /// let text = eqfuse::optimize(&p, &Default::default())?.explain();
    /// assert!(text.contains("kernels: 1 (unfused: 2)"));
    /// assert!(text.contains("k0 reduce over [n]: reads xs, ys -> writes dot"));
    /// assert!(text.contains("materialized: none"));
    /// # Ok::<(), eqfuse::Error>(())
    /// ```
    pub fn explain(&self) -> String {
        self.explain_with(true)
    }

    /// `explain`; `timings` off gives output that does not change from run to run (for
    /// snapshots).
    pub fn explain_with(&self, timings: bool) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let (nodes, classes, iterations) = self.result.egraph_size();
        let time = if timings { format!(" in {:.1} ms", self.result.optimize_ms) } else { String::new() };
        // the time limit says which stage it stopped
        let stage =
            self.result.stop_reason.stage().map_or_else(String::new, |st| format!(" in {}", st.as_str()));
        let _ = writeln!(
            s,
            "optimised{time}: {}{stage} ({} nodes, {} classes, {} iterations)",
            self.result.stop_reason, nodes, classes, iterations
        );
        let _ = writeln!(s, "cost model: {}", self.result.cost_model);
        // the kernel count of docs/explain.md ([`kernel_count`]); a row block or a scan
        // block runs several kernels in one pass over memory
        let n = kernel_count(&self.result.plan);
        let passes = self.kernels.passes;
        let in_passes = if passes < n {
            let word = if passes == 1 { "pass" } else { "passes" };
            format!(" in {passes} {word} (a {} block is one pass)", self.kernels.blocks.join(" or "))
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "kernels: {n}{in_passes} (unfused: {}); predicted {:.3e} s (unfused {:.3e} s)",
            kernel_count(&self.result.unfused_plan),
            self.kernels.predicted_s,
            self.unfused.predicted_s
        );
        let index = crate::origins::Origins::new(&self.checked, &self.result.plan);
        for (i, k) in self.kernels.kernels.iter().enumerate() {
            let loops = if k.loops > 0 { format!(", {} loop(s)", k.loops) } else { String::new() };
            // an intermediate the program does not name is shown with what it computes
            let writes: Vec<String> = k
                .writes
                .iter()
                .map(|w| match index.value_id(w) {
                    Some(v) => index.describe(v),
                    None => w.clone(),
                })
                .collect();
            let _ = writeln!(
                s,
                "  k{i} {} over [{}]: reads {} -> writes {}{loops}; predicted {:.3e} s",
                k.kind,
                k.space,
                if k.reads.is_empty() { "nothing".to_string() } else { k.reads.join(", ") },
                writes.join(", "),
                k.predicted_s
            );
        }
        let m = &self.kernels.materialized;
        let _ = writeln!(s, "materialized: {}", if m.is_empty() { "none".to_string() } else { m.join(", ") });
        if !self.kernels.kept.is_empty() {
            let per = if self.kernels.blocks == ["scan"] { "segment" } else { "block" };
            let _ = writeln!(
                s,
                "kept per {} {per}, never in memory: {}",
                self.kernels.blocks.join(" or "),
                self.kernels.kept.join(", ")
            );
        }
        let fired: Vec<String> = self.result.rules_fired.iter().map(|(r, n)| format!("{r} {n}")).collect();
        let _ = writeln!(
            s,
            "rules fired: {}",
            if fired.is_empty() { "none".to_string() } else { fired.join(", ") }
        );
        let _ = writeln!(s, "phases:");
        for p in &self.result.phases {
            let t = if timings { format!(", {:.1} ms", p.seconds * 1e3) } else { String::new() };
            let _ = writeln!(
                s,
                "  {}: {}, {} iterations, {} nodes, {} classes{t}",
                p.name, p.stop_reason, p.iterations, p.nodes, p.classes
            );
        }
        let _ = writeln!(s, "plan:");
        for line in self.result.plan.to_string().lines() {
            let _ = writeln!(s, "  {line}");
        }
        let _ = writeln!(s, "optimised program:");
        for line in eqfuse_ir::print::print_program(self.program()).lines() {
            let _ = writeln!(s, "  {line}");
        }
        s
    }
}
