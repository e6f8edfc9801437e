//! Why an optimisation, or one of its phases, stopped: [`StopReason`], and for the time
//! limit the [`Stage`] of the pipeline it stopped.
//!
//! A stop reason prints (and `explain --json` serialises it) as the strings `explain --json` has always printed (docs/design-decisions.md):
//! `saturated`, `iteration limit`, `node limit`, `time limit`; it compares equal to them
//! too (`opt.stop_reason == "saturated"`).

use std::fmt;

/// A stage of the optimisation pipeline, all under one deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Equality saturation (a phase's rules).
    Saturation,
    /// Extraction and the search over what to materialise.
    Extraction,
    /// Choosing among the branches the phases kept (each lowered and priced).
    Choice,
    /// Lowering the chosen term to a plan: past the deadline the unfused plan is kept.
    Lowering,
    /// Loop rolling in the lowering: past the deadline the plan keeps its unrolled code.
    Rolling,
    /// Decoding the chosen term to a program: past the deadline the source program is kept
    /// (the same values; the plan is still the optimised one).
    Decoding,
}

impl Stage {
    /// The stage's name, as `explain` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Saturation => "saturation",
            Stage::Extraction => "extraction",
            Stage::Choice => "choice",
            Stage::Lowering => "lowering",
            Stage::Rolling => "rolling",
            Stage::Decoding => "decoding",
        }
    }
}

/// Why an optimisation (or a phase) stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Nothing left to rewrite.
    Saturated,
    /// The iteration limit.
    IterationLimit,
    /// The node limit.
    NodeLimit,
    /// The deadline passed in this stage; the best result found by then was kept.
    TimeLimit(Stage),
    /// Something else stopped the rewriting (egg's own reason).
    Other(String),
}

impl StopReason {
    /// The documented string: `saturated`, `iteration limit`, `node limit`, `time limit`.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::Saturated => "saturated",
            StopReason::IterationLimit => "iteration limit",
            StopReason::NodeLimit => "node limit",
            StopReason::TimeLimit(_) => "time limit",
            StopReason::Other(s) => s,
        }
    }

    /// The stage the deadline stopped, for the time limit.
    pub fn stage(&self) -> Option<Stage> {
        match self {
            StopReason::TimeLimit(s) => Some(*s),
            _ => None,
        }
    }

    /// Whether the run saturated.
    pub fn is_saturated(&self) -> bool {
        *self == StopReason::Saturated
    }
}

impl From<&egg::StopReason> for StopReason {
    fn from(r: &egg::StopReason) -> StopReason {
        match r {
            egg::StopReason::Saturated => StopReason::Saturated,
            egg::StopReason::IterationLimit(_) => StopReason::IterationLimit,
            egg::StopReason::NodeLimit(_) => StopReason::NodeLimit,
            egg::StopReason::TimeLimit(_) => StopReason::TimeLimit(Stage::Saturation),
            egg::StopReason::Other(s) => StopReason::Other(s.clone()),
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for StopReason {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for StopReason {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_print_and_compare_as_the_design_strings() {
        for (r, s) in [
            (StopReason::Saturated, "saturated"),
            (StopReason::IterationLimit, "iteration limit"),
            (StopReason::NodeLimit, "node limit"),
            (StopReason::TimeLimit(Stage::Extraction), "time limit"),
        ] {
            assert_eq!(r.to_string(), s);
            assert_eq!(r, s);
            assert!(r == *s);
        }
        assert_eq!(StopReason::TimeLimit(Stage::Choice).stage(), Some(Stage::Choice));
        for st in [Stage::Lowering, Stage::Rolling, Stage::Decoding] {
            assert_eq!(StopReason::TimeLimit(st), "time limit");
            assert!(!st.as_str().is_empty());
        }
        assert_eq!(StopReason::Saturated.stage(), None);
        assert!(StopReason::Saturated.is_saturated());
    }
}
