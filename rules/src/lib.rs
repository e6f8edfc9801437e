//! # eqfuse-rules
//!
//! The rewrite rules of eqfuse, one file per theme, and the saturation of an e-graph with
//! them ([`saturate`]); the phases (simplify → fuse → loops → horizontal) are declared in
//! [`pipeline`] and run, extracting between phases, by the driver in `eqfuse-optimize`.
//!
//! Every rule is an entry of one table, [`catalogue`]: its name, identity, theme (the file
//! it lives in), phases, whether it spends the fusion budget, and the rewrite. `eqfuse rules`
//! prints it; `docs/rules.md` is generated from it.
//!
//! Legality (may this fire?) lives in [`legal`], the mechanics of substitution in [`subst`],
//! what the rules remember about the e-graph they run on in [`context`] (not in the
//! analysis, which holds facts about classes only), and the cost of a choice in the
//! extractor. The rule policy is in `rules/README.md`.
//!
//! ```
//! use eqfuse_rules::{all_rules, catalogue, RuleSets};
//! let table = catalogue::table(RuleSets { fast_math: false }, &eqfuse_rules::Gas::unlimited());
//! let fuse_reduce = table.iter().find(|r| r.name() == "fuse-reduce").unwrap();
//! assert_eq!(fuse_reduce.identity, "reduce op ne (generate sh f) == redomap op ne sh f");
//! assert_eq!(all_rules(RuleSets { fast_math: false }).len(), table.len());
//! ```

pub mod build;
pub mod catalogue;
pub mod cond;
pub mod context;
pub mod fast_math;
pub mod filters;
pub mod fusion;
pub mod hoist;
pub mod horizontal;
pub mod index;
pub mod legal;
pub mod loops;
pub mod node_rule;
pub mod phase;
pub mod pipeline;
pub mod rule;
pub mod saturate;
pub mod scalar;
pub mod scans;
pub mod schedule;
pub mod selects;
pub mod subst;

pub use fusion::Gas;

use eqfuse_egraph::{ArrayLang, Facts};
use std::sync::Arc;

/// The e-graph the rules work on.
pub type EG = egg::EGraph<ArrayLang, Facts>;

/// A rewrite rule.
pub type Rewrite = egg::Rewrite<ArrayLang, Facts>;

/// Wraps a rule so that each application spends one unit of `gas`.
pub(crate) fn gas_pattern(r: Rewrite, gas: &Gas) -> Rewrite {
    struct GasApplier {
        inner: Arc<dyn egg::Applier<ArrayLang, Facts> + Send + Sync>,
        gas: Gas,
    }
    impl egg::Applier<ArrayLang, Facts> for GasApplier {
        fn apply_one(
            &self,
            egraph: &mut EG,
            eclass: egg::Id,
            subst: &egg::Subst,
            ast: Option<&egg::PatternAst<ArrayLang>>,
            rule_name: egg::Symbol,
        ) -> Vec<egg::Id> {
            if self.gas.left() == Some(0) {
                return Vec::new();
            }
            let out = self.inner.apply_one(egraph, eclass, subst, ast, rule_name);
            if !out.is_empty() {
                self.gas.take();
            }
            out
        }
        fn vars(&self) -> Vec<egg::Var> {
            self.inner.vars()
        }
    }
    let applier = GasApplier { inner: r.applier.clone(), gas: gas.clone() };
    let mut out = r;
    out.applier = Arc::new(applier);
    out
}

/// Which rule sets a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleSets {
    /// Rules that change float results (reassociation, `x - x == 0` on floats, ...).
    pub fast_math: bool,
}

/// Every rule of the catalogue (for listing and for the soundness tests), the fusion rules
/// with an unlimited budget ([`catalogue::table`]).
pub fn all_rules(sets: RuleSets) -> Vec<Rewrite> {
    catalogue::table(sets, &Gas::unlimited()).into_iter().map(|r| r.rewrite).collect()
}
